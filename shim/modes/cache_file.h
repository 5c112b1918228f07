// The tuning cache's file (ARSHIM_TUNE_CACHE, docs/tuning.md "Where the cache lives"). The path comes from the
// user's environment and often names a file in a shared directory, so the cache must never destroy what it does not
// own:
//   - ARShim writes only a file that is absent or that it recognises as its own cache (first line "# ARShim tuning
//     cache", [origin] of this MPI flavor, library and ARShim version). A cache of another flavor, library or ARShim
//     version is left as it is, and this origin's cache lives beside it (aside_path()). Anything else (a data file,
//     a policy, a binary, a FIFO) is left untouched, and nothing is read or written.
//   - Writers take an exclusive lock on "<path>.lock", re-read the file, merge their rules into it and replace it
//     atomically (stats/log_file.h), so concurrent jobs keep each other's rules. Where the file system has no locks
//     (NFS without lockd) the write goes ahead unlocked: concurrent jobs may then lose each other's new rules, never
//     the file's integrity.
//   - The file stays within what the reader accepts (Limits): past them the least useful rules are dropped, and the
//     writer says so.
// MPI-free: unit-tested in test/shim/test_cache_file.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/rules.h"

namespace arshim::tune::cache {

// The first line of every cache ARShim writes: how a cache is told from any other file.
inline constexpr const char* kSignature = "# ARShim tuning cache";

// Who made a cache: the MPI flavor ("mpich"), the library ("MPICH 4.0.2") and the ARShim version.
struct Origin {
    std::string flavor, library, arshim;
    // "MPICH 4.0.2, ARShim 0.1.0": for messages.
    std::string describe() const;
};

// What a file at the cache's path holds.
enum class Holds : uint8_t { nothing, ours, other_cache, not_a_cache };
struct Inspection {
    Holds holds = Holds::nothing;
    policy::Table table;  // ours: the rules
    std::string text;     // ours: the text as read
    std::string why;      // other_cache: for whom it was made; not_a_cache: why it is not one (one line)
};
Inspection inspect(const std::string& path, const Origin& mine, uint64_t max_bytes);

// Where this origin keeps its cache when `path` holds another origin's: "<path>.<flavor>-<library>-arshim-<version>",
// each part reduced to letters, digits, '.', '-' and '_'.
std::string aside_path(const std::string& path, const Origin& mine);

// This origin's cache for the path the user named: the file to read and write (`target`, "" when there is none:
// `path` holds something that is not a cache of ours or anyone's, or the aside file does), what it holds now, and a
// one-line note when the target is not `path` itself or there is none.
struct Location {
    std::string target;
    Inspection found;
    std::string note;
    bool warn = false;  // the note reports a problem (a file left untouched), not a choice
};
Location locate(const std::string& path, const Origin& mine, uint64_t max_bytes);

struct Limits {
    uint64_t max_bytes = 1 << 20;  // the reader's limit (ARSHIM_POLICY_MAX_BYTES)
    std::size_t max_rules = 1024;  // well below the reader's kMaxRules
};

// The file's rules with what this run learned: a learned rule replaces the file's rule with the same match (it was
// measured later); the others are kept in order and the learned ones follow.
std::vector<policy::RuleSpec> merged(const std::vector<policy::RuleSpec>& kept,
                                     const std::vector<policy::RuleSpec>& learned);

// The cache's text: its header (signature, [origin] with `date`) and the rules.
std::string render(const std::vector<policy::RuleSpec>& rules, const Origin& mine, const std::string& date);

// `rules` cut to fit `limits` once rendered: the least useful go first (the smallest time saved against the library's
// allreduce; among equals the older, which come first). *dropped counts them.
std::vector<policy::RuleSpec> within_limits(std::vector<policy::RuleSpec> rules, const Origin& mine,
                                            const std::string& date, const Limits& limits, std::size_t* dropped);

struct Outcome {
    bool written = false;
    std::string target;    // the file written, when written
    std::size_t rules = 0;    // rules in it
    std::size_t dropped = 0;  // rules dropped to stay within the limits
    std::vector<std::string> notes;  // one line each: where the cache went, dropped rules, an unlocked write
    std::string problem;   // one line when nothing was written although there was something to write
};

// Under the lock: locate, merge `learned` into what the file holds now, keep within `limits`, write atomically.
// Nothing is written when `learned` is empty. `lock_timeout_ms`: how long to wait for another job's lock.
Outcome update(const std::string& path, const Origin& mine, const std::vector<policy::RuleSpec>& learned,
               const Limits& limits, bool follow_symlinks, const std::string& date, int lock_timeout_ms = 10000);

}  // namespace arshim::tune::cache
