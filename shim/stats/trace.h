// ARSHIM_TRACE=file (docs/stats.md "The trace"): what ARShim decided, as data, one JSON object per line, written as it
// happens (a job that hangs or aborts still leaves its trace): the start with the settings in force, configuration
// problems, the tuning cache, each key's route on each communicator, every tuning decision with its candidates'
// figures, verify mismatches, argument mismatches, and the end. For programs and tests that must not read log
// sentences. "%r" in the name is replaced by the rank (one file per rank); without it only rank 0 writes.
//
// The file is treated like every file ARShim writes: created new (exclusively, mode 0644, never through a symbolic
// link), or replacing an earlier ARShim trace (its first line says so); anything else at the path is left untouched
// and nothing is traced. Events come from cold paths only (a key's first route, a decision point, init, finalize):
// the hot path pays one predictable branch when the trace is off.
#pragma once

#include <atomic>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/decision.h"
#include "shim/stats/startup_check.h"
#include "shim/stats/tuning_record.h"

namespace arshim::trace {

using json = nlohmann::ordered_json;

inline std::atomic<bool> g_on{false};
inline bool on() { return g_on.load(std::memory_order_relaxed); }

// Opens this rank's trace (at init). Returns "" or a one-line problem (the file was left alone; nothing is traced).
std::string start(const std::string& pattern, int world_rank, bool follow_symlinks);

// Appends one event: `fields` gets "event" and "rank" first. Thread-safe; one write per line.
void event(const char* name, const json& fields);

// Closes the trace (at finalize).
void stop();

// A decision as data: path, the op it hands MPI where the path hands one, its parameters by their policy keys, and
// its text form (as describe_decision() and the policy file spell it). Shared with the statistics log.
json decision(const policy::Decision& d);

// One decision of online tuning: its key, the choice and the policy's as text (for readers) and as data (for
// programs), and every candidate's agreed figures. Shared with the statistics log's "tuning" section.
json tuning(const stats::TuningRecord& record);

// What the start-up check found (shim/stats/startup_check.h): {"checked": false} when it did not run; else
// "all_loaded", "timeout_s", and on world rank 0 the ranks without ARShim and with another build (the lowest listed,
// and their counts), on the other ranks "parent" and "parent_answered". Shared with the statistics log's
// "run"."startup_check".
json startup_check(const stats::StartupCheck& check);

}  // namespace arshim::trace
