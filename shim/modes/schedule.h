// Online tuning's schedule and verdict (ARSHIM_TUNE, docs/tuning.md), MPI-free so that they are unit-tested without
// mpirun (test/shim/test_tune.cpp). shim/modes/online.cpp feeds them timings and makes the one agreement.
//
// A key (communicator, size bucket, element type, op) that explores tries its candidates in turn, call after call:
// candidate 0 is the policy's choice, the others native and the other host path (online's second stage: the
// winner and its neighbouring parameters); the others go before candidate 0 in a round, so that the round's last call,
// the one that also makes the agreement, is the policy's choice. The first call of every candidate is a
// warm-up, not a sample (a path's first call builds its shared-memory window and leader communicators); then each
// gets kSamplesPerRound timed calls, and the ranks agree once (one allreduce of every candidate's median and spread,
// the largest over the ranks). The verdict: the fastest candidate when its median beats the policy's choice by more
// than either's spread; the policy's choice when it is the fastest, or when after kMaxRounds rounds no candidate
// separated from it. Every step depends only on the call sequence and the agreed numbers, so every rank follows it
// alike; a rank's own clock never decides alone.
#pragma once

#include <algorithm>
#include <cstdint>

#include "policy/policy.h"
#include "policy/tune_candidates.h"

namespace arshim::tune {

using policy::tune::kMaxCandidates;
constexpr int kWarmupCalls = 1;
constexpr int kSamplesPerRound = 3;
constexpr int kMaxRounds = 2;
constexpr int kMaxSamples = kSamplesPerRound * kMaxRounds;
// A candidate this much slower than a round's fastest, beyond both spreads, is not sampled in later rounds
// (outpaced()): the margin is larger than what 3 samples each can order wrongly (verdict()), and the calls a later
// round would give such a candidate are the dearest of the exploration (the measured spreads and slowdowns:
// docs/tuning.md "`ARSHIM_TUNE` (`shim/tune/`)").
constexpr float kOutpacedRatio = 1.3f;

struct Exploration {
    uint8_t candidates = 0;  // how many (1..kMaxCandidates); 0 = not exploring
    uint8_t next = 0;        // the candidate the next call tries
    uint8_t round = 0;       // rounds completed
    uint8_t excluded = 0;    // bit per candidate whose path declined (a decline is agreed by every rank)
    uint8_t outpaced = 0;    // bit per candidate left out of later rounds (outpaced(): agreed figures only)
    uint8_t calls[kMaxCandidates] = {};  // calls made per candidate, warm-up included
    float samples[kMaxCandidates][kMaxSamples] = {};  // microseconds

    uint8_t inactive() const { return static_cast<uint8_t>(excluded | outpaced); }  // no more calls, no verdict
    bool active(int c) const { return c < candidates && !(inactive() >> c & 1u); }
    int wanted() const { return kWarmupCalls + (round + 1) * kSamplesPerRound; }
    // Whether every active candidate has its samples for this round: the point where the ranks agree.
    bool round_complete() const {
        for (int c = 0; c < candidates; ++c)
            if (active(c) && calls[c] < wanted()) return false;
        return true;
    }

    // Records the call the candidate `c` made (`micros` long; `declined`: its path declined and the call ran
    // native) and moves on to the next candidate that still needs samples. Returns true at a decision point.
    bool record(int c, float micros, bool declined) {
        if (declined) {
            excluded = static_cast<uint8_t>(excluded | (1u << c));
        } else {
            if (calls[c] >= kWarmupCalls && calls[c] - kWarmupCalls < kMaxSamples)
                samples[c][calls[c] - kWarmupCalls] = micros;
            ++calls[c];
        }
        if (round_complete()) return true;
        // Next: the active candidate that still needs the most calls; among equals the highest index. So a round
        // ends on candidate 0, the policy's choice: the call that carries the ranks' agreement (an allreduce) is
        // then the policy's path, not a trial of the library right after it (docs/paths.md "First calls").
        int pick = -1;
        for (int n = 0; n < candidates; ++n)
            if (active(n) && calls[n] < wanted() && (pick < 0 || calls[n] <= calls[pick])) pick = n;
        if (pick >= 0) next = static_cast<uint8_t>(pick);
        return false;
    }

    // This rank's median and spread of candidate c's samples so far. The spread is half the range without the
    // slowest sample: noise on a shared machine only ever adds time (a preempted rank, a page fault), so one
    // outlier must not mask a large difference between two candidates (docs/tuning.md "`ARSHIM_TUNE` (`shim/tune/`)").
    void local(int c, float* median, float* spread) const {
        const int n = std::clamp(calls[c] - kWarmupCalls, 0, kMaxSamples);
        float sorted[kMaxSamples];
        for (int i = 0; i < n; ++i) {  // insertion sort: at most kMaxSamples values
            int j = i;
            for (; j > 0 && sorted[j - 1] > samples[c][i]; --j) sorted[j] = sorted[j - 1];
            sorted[j] = samples[c][i];
        }
        *median = n == 0 ? 0 : (n % 2 ? sorted[n / 2] : 0.5f * (sorted[n / 2 - 1] + sorted[n / 2]));
        *spread = n < 2 ? 0 : 0.5f * (sorted[n - 2] - sorted[0]);
    }

    // After the agreement: the next round starts with candidate 0 (or the first active one).
    void next_round() {
        ++round;
        next = 0;
        while (next < candidates && !active(next)) ++next;
    }
};

// The verdict from the agreed medians and spreads (the largest over the ranks): the chosen candidate, or -1 to run
// another round. Excluded candidates never win; when the policy's choice itself declined, the fastest of the others
// is taken at once (what remains of the policy's choice is the library's allreduce).
inline int verdict(const float* median, const float* spread, int candidates, uint8_t excluded, bool last_round) {
    int best = -1;
    for (int c = 0; c < candidates; ++c)
        if (!(excluded >> c & 1u) && (best < 0 || median[c] < median[best])) best = c;
    if (best < 0) return 0;
    if (excluded & 1u) return best;
    if (best == 0) return 0;
    const float margin = std::max(spread[0], spread[best]);
    if (median[0] - median[best] <= margin) return last_round ? 0 : -1;
    // The best beats the policy's choice. When another candidate that beats it too is within the noise of the best,
    // one more round tells them apart (a few samples each can order a close difference wrongly); the last round decides
    // on the medians.
    if (!last_round)
        for (int c = 1; c < candidates; ++c)
            if (c != best && !(excluded >> c & 1u) && median[c] - median[best] <= std::max(spread[c], spread[best]))
                return -1;
    return best;
}

// After a round without a verdict: the candidates later rounds leave out, as a bit mask over `candidates` (those in
// `inactive` are left alone). Never the policy's choice (the verdict measures everything against it) and never the
// round's fastest; any other candidate slower than the fastest by more than either's spread and by kOutpacedRatio
// cannot win the next round's verdict unless its 3 samples were far off, and the verdict leaves it out.
inline uint8_t outpaced(const float* median, const float* spread, int candidates, uint8_t inactive) {
    int best = -1;
    for (int c = 0; c < candidates; ++c)
        if (!(inactive >> c & 1u) && (best < 0 || median[c] < median[best])) best = c;
    uint8_t out = 0;
    if (best < 0) return out;
    for (int c = 1; c < candidates; ++c) {
        if (c == best || inactive >> c & 1u) continue;
        if (median[c] - median[best] > std::max(spread[c], spread[best]) &&
            median[c] > kOutpacedRatio * median[best])
            out = static_cast<uint8_t>(out | (1u << c));
    }
    return out;
}

// Starts the second stage of online tuning (docs/tuning.md): candidate 0 is the first stage's winner `c` of `from`
// and keeps the samples it has (its warm-up done), so only the new candidates (1..candidates-1) make calls.
inline Exploration refinement(const Exploration& from, int c, int candidates) {
    Exploration ex;
    ex.candidates = static_cast<uint8_t>(candidates);
    ex.calls[0] = from.calls[c];
    std::copy(from.samples[c], from.samples[c] + kMaxSamples, ex.samples[0]);
    ex.next = ex.calls[0] >= ex.wanted() ? 1 : 0;
    return ex;
}

// A key's tuning state (kept in its communicator's KeyBook, shim/core/context.h).
struct KeyTuning {
    enum Status : uint8_t { untouched, waiting, exploring, decided };  // waiting: ARSHIM_TUNE_AFTER
    uint8_t status = untouched;
    uint32_t waited = 0;  // calls made on the policy's choice before exploring (ARSHIM_TUNE_AFTER)
    uint8_t chosen = 0;
    // Online tuning runs in two stages, direction then location: first the policy's choice, the library's allreduce
    // and the other host path; then the winner against its neighbouring parameters (leader counts, segment sizes).
    uint8_t stage = 0;
    Exploration exploration;
    policy::Decision candidate[kMaxCandidates];
    // The first stage, kept for the report when a second stage runs: its candidates and agreed figures.
    uint8_t first_count = 0, first_excluded = 0;
    policy::Decision first[kMaxCandidates];
    float first_median[kMaxCandidates] = {}, first_spread[kMaxCandidates] = {};
};

// Whether a call the policy decided this way takes part in tuning at all (identical on every rank): not under
// ARSHIM_TUNE=off (also off when ARSHIM_PATH forces a path: policy/settings.h), not a choice measured on this machine
// already, never the reproducible path; guard only where the policy chose one of ARShim's paths.
inline bool eligible(policy::tune::Mode mode, const policy::Decision& d) {
    using policy::tune::Mode;
    if (mode == Mode::off || d.measured || d.path() == policy::Path::reproducible) return false;
    return mode == Mode::online || d.path() != policy::Path::native;
}

// What a key's call runs with: the decision and, during exploration, which candidate it tries (then the caller times
// the call and reports it, shim/modes/online.h).
struct Pick {
    const policy::Decision* decision = nullptr;
    int candidate = -1;
    bool settled = true;  // false while the key counts its calls before exploring: its route must not be replayed
};

// The decision for this call of the key: the policy's when the key shares the overflow entry, the one decided, the
// policy's for the key's first `explore_after` - 1 calls, or (exploring) the next candidate. Waiting bounds what the
// exploration costs a job: a key with fewer calls is never explored, and a key that is has already made
// `explore_after` - 1 calls on the policy's choice, against which the exploration's few calls are weighed
// (docs/tuning.md "What the exploration costs"). The call count is the same on every rank (MPI orders a
// communicator's collectives), so the ranks start exploring at the same call without agreeing on it. The key's first
// call makes its candidates (policy/tune_candidates.h); fewer than two means nothing to explore, and the key is
// decided at once.
inline Pick pick(KeyTuning& t, bool overflow, const policy::Decision& policy_decision,
                 const policy::tune::KeyFacts& facts, policy::tune::Mode mode, uint32_t explore_after = 1) {
    if (overflow) return {&policy_decision, -1};  // shared by many keys: the policy decides
    if (t.status == KeyTuning::decided) return {&t.candidate[t.chosen], -1};
    if (t.status == KeyTuning::untouched) {
        t.exploration = Exploration{};
        const int n = policy::tune::first_stage(policy_decision, facts, mode, t.candidate);
        if (n < 2) {
            t.status = KeyTuning::decided;
            t.chosen = 0;
            return {&t.candidate[0], -1};
        }
        t.exploration.candidates = static_cast<uint8_t>(n);
        t.status = KeyTuning::waiting;
    }
    if (t.status == KeyTuning::waiting) {
        if (t.waited + 1 < explore_after) {
            ++t.waited;
            return {&t.candidate[0], -1, false};  // candidate 0 is the policy's choice
        }
        t.status = KeyTuning::exploring;
    }
    const int c = t.exploration.next;
    return {&t.candidate[c], c};
}

}  // namespace arshim::tune
