// Online tuning (ARSHIM_TUNE, docs/tuning.md): the running job measures its own calls and keeps, per key
// (communicator, size bucket, element type, op), the faster of the policy's choice and the alternatives, agreed by
// every rank (shim/modes/schedule.h). What it learned can be kept across runs (ARSHIM_TUNE_CACHE: policy rules with
// their measured times, read at the next start ahead of the policy).
#pragma once

#include "shim/stats/mode_counts.h"

#include <atomic>
#include <cstdint>
#include <string>

#include <vector>

#include "policy/policy.h"
#include "policy/settings.h"
#include "policy/tune_candidates.h"
#include "shim/modes/key_book.h"
#include "shim/paths/path_context.h"
#include "shim/stats/tuning_record.h"

namespace arshim::tune {

using Mode = policy::tune::Mode;  // ARSHIM_TUNE

// Its counts for the statistics are in shim/stats/mode_counts.h.

// Which calls explore and what they try: tune::eligible() and tune::pick() (shim/modes/schedule.h), used by the
// router (shim/core/router.h).

// What a key's candidates depend on (policy/tune_candidates.h): the call's size, the communicator's layout and the MPI
// flavor (the router adds whether the reduction's bits depend on its order).
policy::tune::KeyFacts key_facts(const PathContext& ctx, uint64_t bytes);

// After an exploration call. At a decision point this makes the one agreement (collective over ctx.comm: every rank
// reaches it on the same call). datatype, mpi_op and bytes name the key in the log, once per decision.
// The clock a candidate call is timed with, in seconds: the host's steady clock, or in the SMPI build simulated time
// (PMPI_Wtime): there the host's clocks see how long the simulator took to run every rank, not the call.
double candidate_clock();

void report(PathContext& ctx, KeyBook& book, int candidate, double seconds, bool declined,
            uint32_t bucket, vocab::DtypeClass dclass, kernels::Op op, MPI_Datatype datatype, MPI_Op mpi_op,
            uint64_t bytes);

// One decision as the statistics log and the tuning cache record it (rank 0's communicators).
using Learned = stats::TuningRecord;
// The decisions recorded so far (bounded), for finalize (a decision inside a call only stores numbers).
std::vector<Learned> learned();
// "multileader leaders=2 ...: 12.3 us (+-0.4); native: 20.1 us (+-1.2); ...": the candidates' figures as text.
std::string candidates_text(const Learned& l);

// ARSHIM_TUNE_CACHE (shim/modes/cache_file.h): at finalize rank 0 merges what was learned into this origin's cache
// file, under a lock. Notes: one line each (where the cache went, rules dropped to stay within the reader's limits);
// problem: one line when nothing could be written.
struct CacheWrite {
    bool written = false;
    std::string target;  // the file written
    std::size_t rules = 0, dropped = 0;
    std::vector<std::string> notes;
    std::string problem;
};
// `settings`: the process's settings; `library`: the MPI library's version line; `refused`: read_cache() left the file
// alone at start (said then).
CacheWrite write_cache(const ProcessSettings& settings, const std::string& library, bool refused);
// At start (rank 0): the text of this origin's cache when there is one, else "". *note: one line when the cache is
// not at the path named (another origin's cache is there) or the path holds something else (*warn: that is a problem
// for the user, the file was left untouched). *read_from: the file whose rules the text is (the path named, or the
// one beside it that holds this origin's cache), for the policy's source; empty when no text.
std::string read_cache(const ProcessSettings& settings, const std::string& library, std::string* note, bool* warn,
                       std::string* read_from);

}  // namespace arshim::tune
