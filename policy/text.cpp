#include "policy/text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace arshim {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one (overlong forms, surrogates and
// code points above U+10FFFF are invalid).
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    uint32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) n = 2, cp = b0 & 0x1Fu;
    else if (b0 >= 0xE0 && b0 <= 0xEF) n = 3, cp = b0 & 0x0Fu;
    else if (b0 >= 0xF0 && b0 <= 0xF4) n = 4, cp = b0 & 0x07u;
    else return 0;
    if (i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (b & 0x3Fu);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

}  // namespace

std::string printable(std::string_view s, std::size_t max, bool quoted) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size() < max ? s.size() : max);
    std::size_t i = 0;
    for (; i < s.size() && i < max;) {  // `max` bytes of input at most: the output stays within 4 * max
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            const std::size_t n = utf8_length(s, i);
            // A C1 control character (U+0080..U+009F, encoded C2 80..C2 9F) is a control too: U+009B is CSI ("ESC ["
            // on terminals that honour C1). Its two bytes are escaped like the others below.
            const bool c1 = n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F;
            if (n > 0 && !c1) {
                if (i + n > max) break;  // never half a character
                out.append(s.substr(i, n));
                i += n;
                continue;
            }
        }
        if (quoted && (c == '"' || c == '\\')) {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7F || c >= 0x80) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
        ++i;
    }
    if (i < s.size()) out += "...";
    return out;
}

}  // namespace arshim

namespace arshim {

const char* special_file_kind(unsigned mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

bool read_regular_file(const std::string& path, uint64_t max_bytes, std::string* text, std::string* problem) {
    // O_NONBLOCK: opening a FIFO without a writer would otherwise block here while the other ranks wait in the
    // broadcast (a hung job); for a regular file it changes nothing.
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        *problem = std::string("cannot open: ") + std::strerror(errno);
        return false;
    }
    struct stat st {};
    bool ok = fstat(fd, &st) == 0;
    if (!ok) {
        *problem = std::string("cannot stat: ") + std::strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
        *problem = std::string("is ") + special_file_kind(st.st_mode) + ", not a regular file";
        ok = false;
    } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
        *problem = "is " + std::to_string(st.st_size) + " bytes, more than the limit of " + std::to_string(max_bytes) +
                   " (ARSHIM_POLICY_MAX_BYTES)";
        ok = false;
    }
    if (ok) {
        // Read at most max_bytes + 1: a file that grows while it is read is still caught.
        text->clear();
        char buffer[65536];
        for (;;) {
            const ssize_t n = read(fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                *problem = std::string("cannot read: ") + std::strerror(errno);
                ok = false;
                break;
            }
            if (n == 0) break;
            text->append(buffer, static_cast<std::size_t>(n));
            if (text->size() > max_bytes) {
                *problem = "grew beyond the limit of " + std::to_string(max_bytes) + " bytes while it was read";
                ok = false;
                break;
            }
        }
    }
    close(fd);
    if (!ok) text->clear();
    return ok;
}

}  // namespace arshim
