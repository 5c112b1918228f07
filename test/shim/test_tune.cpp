// Online tuning's schedule and verdict (shim/modes/schedule.h), without MPI: the order candidates are tried in,
// warm-up calls that are not samples, declined candidates, and when a verdict separates a candidate from the
// policy's choice.
#include "test/support/catch.h"

#include <initializer_list>

#include "shim/modes/schedule.h"

using namespace arshim::tune;

namespace {
// Feeds `times[c]` to every call of candidate c until a decision point; returns the calls made.
int run_round(Exploration& ex, const float* times, uint8_t declines = 0) {
    int calls = 0;
    for (;;) {
        const int c = ex.next;
        ++calls;
        if (ex.record(c, times[c], declines >> c & 1u)) return calls;
        REQUIRE(calls < 100);
    }
}
}  // namespace

TEST_CASE("candidates take turns; each one's first call is a warm-up", "[tune]") {
    Exploration ex;
    ex.candidates = 2;
    const float times[] = {10, 20};
    // (1 warm-up + 3 samples) x 2 candidates, alternating
    CHECK(run_round(ex, times) == 8);
    float median = 0, spread = 0;
    ex.local(0, &median, &spread);
    CHECK(median == 10);
    CHECK(spread == 0);
    CHECK(ex.calls[0] == 4);
    CHECK(ex.calls[1] == 4);
}

TEST_CASE("the warm-up is not a sample: a slow first call does not count", "[tune]") {
    Exploration ex;
    ex.candidates = 2;
    ex.record(0, 5000, false);  // first call of candidate 0: builds its window
    CHECK(ex.next == 1);
    for (int i = 0; i < 7; ++i) ex.record(ex.next, ex.next == 0 ? 10 : 20, false);
    float median = 0, spread = 0;
    ex.local(0, &median, &spread);
    CHECK(median == 10);
}

TEST_CASE("one slow sample (a preempted call) does not widen the spread", "[tune]") {
    Exploration ex;
    ex.candidates = 1;
    ex.record(0, 1, false);  // warm-up
    for (float t : {100.f, 5000.f, 102.f}) ex.record(0, t, false);
    float median = 0, spread = 0;
    ex.local(0, &median, &spread);
    CHECK(median == 102);
    CHECK(spread == 1);  // half of 102 - 100: the 5000 us outlier is left out
    // A candidate 10x faster than this noisy policy choice wins at once.
    const float medians[] = {median, 10}, spreads[] = {spread, 0.5f};
    CHECK(verdict(medians, spreads, 2, 0, false) == 1);
}

TEST_CASE("the second stage keeps the winner's samples: only its neighbours make calls", "[tune]") {
    Exploration first;
    first.candidates = 3;
    const float times[] = {50, 40, 10};
    run_round(first, times);
    Exploration second = refinement(first, 2, 3);
    CHECK(second.calls[0] == first.calls[2]);
    CHECK(second.next == 1);  // the winner has its warm-up and samples already
    float median = 0, spread = 0;
    second.local(0, &median, &spread);
    CHECK(median == 10);
    int calls = 0;
    while (!second.record(second.next, second.next == 1 ? 20 : 5, false)) ++calls;
    CHECK(calls + 1 == 8);  // (1 warm-up + 3 samples) x 2 new candidates
    CHECK(second.calls[0] == first.calls[2]);
}

TEST_CASE("verdict: two candidates that both beat the policy but not each other get another round", "[tune]") {
    const float median[] = {100, 20, 22}, spread[] = {1, 3, 3};
    CHECK(verdict(median, spread, 3, 0, false) == -1);
    CHECK(verdict(median, spread, 3, 0, true) == 1);  // last round: the lower median
    const float clear[] = {100, 20, 40};
    CHECK(verdict(clear, spread, 3, 0, false) == 1);
    CHECK(verdict(median, spread, 3, 0b100, false) == 1);  // the runner-up declined: no contest
}

TEST_CASE("a candidate whose path declines is left out", "[tune]") {
    Exploration ex;
    ex.candidates = 3;
    const float times[] = {10, 20, 5};
    run_round(ex, times, /*declines=*/0b100);
    CHECK((ex.excluded & 0b100) != 0);
    const float median[] = {10, 20, 0}, spread[] = {0, 0, 0};
    // The declined candidate 2 would look fastest (0 us): never chosen.
    CHECK(verdict(median, spread, 3, ex.excluded, false) == 0);
}

TEST_CASE("verdict: a candidate wins only by more than the spread", "[tune]") {
    const float spread_small[] = {1, 1}, spread_large[] = {1, 60};
    const float faster[] = {100, 50};
    CHECK(verdict(faster, spread_small, 2, 0, false) == 1);
    CHECK(verdict(faster, spread_large, 2, 0, false) == -1);  // within the noise: another round
    CHECK(verdict(faster, spread_large, 2, 0, true) == 0);    // last round: the policy's choice stands
    const float slower[] = {50, 100};
    CHECK(verdict(slower, spread_large, 2, 0, false) == 0);   // the policy's choice is the fastest
    // The policy's own path declined: the fastest of the rest, at once.
    const float declined[] = {0, 70, 60};
    const float none[] = {0, 0, 0};
    CHECK(verdict(declined, none, 3, 0b001, false) == 2);
}

TEST_CASE("rounds restart with the first active candidate and add samples", "[tune]") {
    Exploration ex;
    ex.candidates = 2;
    const float times[] = {10, 11};
    run_round(ex, times);
    ex.next_round();
    CHECK(ex.round == 1);
    CHECK(ex.next == 0);
    CHECK(run_round(ex, times) == 6);  // 3 more samples each
    CHECK(ex.calls[0] == 1 + 2 * kSamplesPerRound);
}

TEST_CASE("every round ends on the policy's choice: the agreement rides on its call, not on a trial", "[tune]") {
    for (int n = 2; n <= 4; ++n) {
        Exploration ex;
        ex.candidates = static_cast<uint8_t>(n);
        CHECK(ex.next == 0);  // the key's first call is the policy's choice (its warm-up builds the path's state)
        const float times[] = {10, 11, 12, 13};
        int last = -1;
        for (int round = 0; round < kMaxRounds; ++round) {
            if (round > 0) ex.next_round();
            for (int calls = 0;; ++calls) {
                REQUIRE(calls < 100);
                last = ex.next;
                if (ex.record(last, times[last], false)) break;
            }
            CHECK(last == 0);
            for (int c = 0; c < n; ++c) CHECK(ex.calls[c] == ex.wanted());
        }
    }
    // With the policy's choice declined, the round ends on another candidate, after every active one had its calls.
    Exploration ex;
    ex.candidates = 3;
    const float times[] = {10, 11, 12};
    run_round(ex, times, /*declines=*/0b001);
    CHECK(ex.calls[1] == ex.wanted());
    CHECK(ex.calls[2] == ex.wanted());
}

TEST_CASE("a candidate outpaced beyond the noise is not sampled in later rounds", "[tune]") {
    // Candidate 1 (say, one leader) beats the policy's choice within the noise, so the verdict wants another round;
    // candidates 2 and 3 (the library, small segments) are 2x and 1.5x slower than it, well beyond the spreads.
    const float median[] = {100, 95, 190, 150}, spread[] = {6, 6, 5, 5};
    REQUIRE(verdict(median, spread, 4, 0, false) == -1);
    CHECK(outpaced(median, spread, 4, 0) == 0b1100);
    // Never the policy's choice, never the fastest, and not a candidate within kOutpacedRatio or within the noise.
    const float slow_policy[] = {300, 100, 120, 125}, wide[] = {1, 1, 1, 40};
    CHECK(outpaced(slow_policy, wide, 4, 0) == 0);
    CHECK(outpaced(median, spread, 4, 0b0100) == 0b1000);  // an inactive candidate is left alone

    // The schedule: the next round samples only candidates 0 and 1.
    Exploration ex;
    ex.candidates = 4;
    const float times[] = {100, 95, 190, 150};
    run_round(ex, times);
    ex.outpaced = outpaced(median, spread, 4, ex.excluded);
    ex.next_round();
    CHECK(run_round(ex, times) == 2 * kSamplesPerRound);
    CHECK(ex.calls[2] == kWarmupCalls + kSamplesPerRound);
    CHECK(ex.calls[3] == kWarmupCalls + kSamplesPerRound);
    // Left out of the verdict too: an outpaced candidate never wins, whatever its old median says.
    const float later[] = {100, 80, 50, 150};
    CHECK(verdict(later, spread, 4, ex.inactive(), true) == 1);
    CHECK(verdict(later, spread, 4, ex.excluded, true) == 2);
}
