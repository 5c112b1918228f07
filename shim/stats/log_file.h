// Writing the statistics log safely. The log's path comes from ARSHIM_STATS, often in a shared directory, and the
// job often runs as root, so the write must never touch anything but a regular file of its own making:
//   - the target may be absent, empty, or an earlier statistics log (its first key "schema": "arshim-stats/..."); any
//     other regular file is left alone (issue 56 item 7: a data file named in ARSHIM_STATS was replaced by the log;
//     only_own_log below);
//   - a device, FIFO, socket or directory there is left alone, and so
//     is a symbolic link unless following links was asked for (then the link's target must be a regular file or
//     absent);
//   - the text goes to a new file with an unpredictable name in the target's directory, created exclusively
//     (O_TMPFILE where the file system has it, so a killed run leaves nothing; else mkstemp), mode 0644, fsync'ed,
//     then renamed over the target: readers see the old file or the whole new one, never half of it;
//   - every error path removes what it created.
// MPI-free; unit-tested in test/shim/test_log_file.cpp.
#pragma once

#include <string>

namespace arshim::stats {

struct WriteOutcome {
    int error = 0;        // an errno when the write failed
    std::string refused;  // why the target was left alone ("is a character device", ...); empty otherwise
    bool ok() const { return error == 0 && refused.empty(); }
    std::string describe() const;  // one line: the refusal, or strerror(error)
};

// `only_own_log`: an existing regular file is replaced only when is_own_log() says it is the statistics log's (the
// log's rule); the tuning cache, which recognises its own file itself (shim/modes/cache_file.h), passes false.
WriteOutcome write_log_file(const std::string& path, const std::string& text, bool follow_symlinks,
                            bool only_own_log = false);

// Whether `path` is absent, empty, or starts as ARShim's statistics log does (read without following a link or
// blocking on a FIFO).
bool is_own_log(const std::string& path);

}  // namespace arshim::stats
