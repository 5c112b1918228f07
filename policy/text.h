// Text that ARShim echoes back in messages: values of ARSHIM_* variables, file names, policy file contents. They
// come from the user's environment and files, which may be hostile or careless (a 100 KB value, a newline that
// forges an "arshim[0] error:" line, terminal escape sequences), so every echoed value goes through printable().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace arshim {

// `s` on one line: control characters (C0, DEL and the C1 range U+0080..U+009F) and bytes that are not valid UTF-8
// become \n, \t or \xNN; text longer
// than `max` bytes is cut (at a UTF-8 boundary) and "..." appended, so the result is at most 4 * max + 3 bytes. `quoted`: the text goes between double quotes,
// so '"' and '\' are escaped too.
std::string printable(std::string_view s, std::size_t max = 200, bool quoted = false);

}  // namespace arshim

namespace arshim {

// Reads a small text file (a policy table) the way a library inside someone else's job must: opened without
// blocking and without following it into a FIFO's wait (a FIFO never stalls the reading rank), only a regular file,
// at most `max_bytes`. Returns false with a one-line reason ("is not a regular file (a FIFO)", "is 2.0 MiB, more
// than the limit of 1 MiB", "cannot open: No such file or directory") for the caller to prefix with the variable.
bool read_regular_file(const std::string& path, uint64_t max_bytes, std::string* text, std::string* problem);

// "a FIFO", "a character device", "a directory", ... for a file that is not a regular file (st_mode of stat(2)).
const char* special_file_kind(unsigned mode);

}  // namespace arshim
