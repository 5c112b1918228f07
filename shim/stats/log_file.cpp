#include "shim/stats/log_file.h"

#include "policy/text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <random>

namespace arshim::stats {

namespace {

std::string directory_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string random_suffix() {
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::random_device device;
    std::string out;
    for (int i = 0; i < 12; ++i) out += chars[device() % (sizeof chars - 1)];
    return out;
}

int write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : EIO;
        done += static_cast<std::size_t>(n);
    }
    if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) return errno;
    return 0;
}

// Creates the new file's content in `dir` and gives it the name *temp (to be renamed over the target).
int create_temp(const std::string& dir, const std::string& base, const std::string& text, std::string* temp) {
    int fd = -1;
#ifdef O_TMPFILE
    // An unnamed file, linked under a random name only once it is complete: a run killed before leaves nothing.
    fd = open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0) {
        int error = fchmod(fd, 0644) == 0 ? write_all(fd, text) : errno;
        if (error == 0) {
            const std::string proc = "/proc/self/fd/" + std::to_string(fd);
            for (int attempt = 0; attempt < 8; ++attempt) {
                *temp = dir + "/." + base + "." + random_suffix();
                if (linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, temp->c_str(), AT_SYMLINK_FOLLOW) == 0) break;
                error = errno;
                temp->clear();
                if (error != EEXIST) break;
            }
            if (!temp->empty()) error = 0;
        }
        close(fd);
        if (error == 0) return 0;
        if (error != ENOENT && error != EPERM && error != EACCES) return error;  // else: /proc missing, try mkstemp
    } else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT) {
        return errno;
    }
#endif
    std::string pattern = dir + "/." + base + ".XXXXXX";
    fd = mkostemp(pattern.data(), O_CLOEXEC);  // O_CREAT | O_EXCL: never follows or reuses anything planted there
    if (fd < 0) return errno;
    *temp = pattern;
    int error = fchmod(fd, 0644) == 0 ? write_all(fd, text) : errno;
    if (close(fd) != 0 && error == 0) error = errno;
    if (error != 0) {
        unlink(temp->c_str());
        temp->clear();
    }
    return error;
}

}  // namespace

std::string WriteOutcome::describe() const { return !refused.empty() ? refused : std::strerror(error); }

bool is_own_log(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return errno == ENOENT;
    char head[128];
    const ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n < 0) return false;
    if (n == 0) return true;
    std::string compact;  // the start without white space: {"schema":"arshim-stats/...
    for (ssize_t i = 0; i < n; ++i)
        if (head[i] != ' ' && head[i] != '\n' && head[i] != '\t' && head[i] != '\r') compact += head[i];
    return compact.rfind("{\"schema\":\"arshim-stats/", 0) == 0;
}

WriteOutcome write_log_file(const std::string& path, const std::string& text, bool follow_symlinks, bool only_own_log) {
    WriteOutcome out;
    std::string target = path;
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            if (!follow_symlinks) {
                out.refused = "is a symbolic link (left alone; ARSHIM_STATS_FOLLOW_SYMLINKS=1 writes through it)";
                return out;
            }
            char resolved[PATH_MAX];
            if (realpath(path.c_str(), resolved) == nullptr) {
                out.refused = "is a symbolic link whose target cannot be resolved (" + std::string(strerror(errno)) +
                              ")";
                return out;
            }
            target = resolved;
            if (lstat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
                out.refused = std::string("is a symbolic link to ") + special_file_kind(st.st_mode) + " (left alone)";
                return out;
            }
        } else if (!S_ISREG(st.st_mode)) {
            out.refused = std::string("is ") + special_file_kind(st.st_mode) + " (left alone: the log is written only as a "
                                                                       "regular file)";
            return out;
        }
    } else if (errno != ENOENT) {
        out.error = errno;
        return out;
    }
    // A regular file that is there already is replaced only when it is ARShim's own log (or empty): a data file named
    // by mistake (or on purpose) in ARSHIM_STATS is left alone, as the tuning cache and the trace do.
    if (only_own_log && S_ISREG(st.st_mode) && !is_own_log(target)) {
        out.refused = "is a file that is not an ARShim statistics log (left alone: only an absent file, an empty one "
                      "or an earlier log is replaced)";
        return out;
    }
    const std::size_t slash = target.rfind('/');
    const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
    std::string temp;
    out.error = create_temp(directory_of(target), base, text, &temp);
    if (out.error != 0) return out;
    if (rename(temp.c_str(), target.c_str()) != 0) {
        out.error = errno;
        unlink(temp.c_str());
    }
    return out;
}

}  // namespace arshim::stats
