// Online tuning (ARSHIM_TUNE, docs/tuning.md): the running job measures its own calls and keeps, per key
// (communicator, size bucket, element type, op), the faster of the policy's choice and the alternatives, agreed by
// every rank (shim/tune/schedule.h). What it learned can be kept across runs (ARSHIM_TUNE_CACHE: policy rules with
// their measured times, read at the next start ahead of the policy).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "policy/policy.h"
#include "policy/tune_candidates.h"
#include "shim/core/context.h"

namespace arshim {
struct Runtime;
}

namespace arshim::tune {

using Mode = policy::tune::Mode;  // ARSHIM_TUNE

// Process-wide counts for the statistics (section "tuning").
inline std::atomic<uint64_t> g_exploration_calls{0};
inline std::atomic<uint64_t> g_exploration_ns{0};  // time of those calls, this rank
inline std::atomic<uint64_t> g_decisions{0};       // keys decided on this rank
inline std::atomic<uint64_t> g_changed{0};         // ... for another choice than the policy's

// What a key's call runs with: the decision and, during exploration, which candidate it tries (then the caller
// times the call and reports it).
struct Pick {
    const policy::Decision* decision = nullptr;
    int candidate = -1;
};

// Whether a call the policy decided this way takes part in tuning at all (identical on every rank).
bool eligible(const Runtime& rt, const policy::Decision& policy_decision);

// The decision for this call of the key. `bytes`: the call's size, for the candidates.
// `order_sensitive`: a floating-point SUM or PROD, whose bits depend on the path's order (guard then keeps to
// candidates of the policy's fold order: policy/tune_candidates.h).
Pick pick(CommContext& ctx, CommContext::KeyBook& book, const policy::Decision& policy_decision, uint64_t bytes,
          Mode mode, bool order_sensitive);

// After an exploration call. At a decision point this makes the one agreement (collective over ctx.comm: every rank
// reaches it on the same call). datatype, mpi_op and bytes name the key in the log, once per decision.
void report(CommContext& ctx, CommContext::KeyBook& book, int candidate, double seconds, bool declined,
            uint32_t bucket, vocab::DtypeClass dclass, kernels::Op op, MPI_Datatype datatype, MPI_Op mpi_op,
            uint64_t bytes);

// One decision as the statistics log and the tuning cache record it (rank 0's communicators).
struct Learned {
    uint32_t bucket = 0;
    uint32_t ppn = 0, nodes = 0, comm_size = 0;
    vocab::DtypeClass dclass = vocab::DtypeClass::other;
    kernels::Op op = kernels::Op::sum;
    policy::Decision chosen;
    std::string policy_choice;      // describe_decision of the policy's choice
    float chosen_us = 0, policy_us = 0, native_us = -1;  // agreed medians (-1: not measured)
    std::string candidates;         // "multileader leaders=2 ...: 12.3 us (+-0.4); native: 20.1 us (+-1.2); ..."
};
// The decisions recorded so far (bounded), made into text here; for finalize (a decision only stores numbers).
std::vector<Learned> learned();

// ARSHIM_TUNE_CACHE (shim/tune/cache_file.h): at finalize rank 0 merges what was learned into this origin's cache
// file, under a lock. Notes: one line each (where the cache went, rules dropped to stay within the reader's limits);
// problem: one line when nothing could be written.
struct CacheWrite {
    std::vector<std::string> notes;
    std::string problem;
};
CacheWrite write_cache(const Runtime& rt);
// At start (rank 0): the text of this origin's cache when there is one, else "". *note: one line when the cache is
// not at the path named (another origin's cache is there) or the path holds something else (*warn: that is a problem
// for the user, the file was left untouched).
std::string read_cache(const Runtime& rt, std::string* note, bool* warn);

}  // namespace arshim::tune
