#include "shim/paths/segment_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace arshim::segment_file {

namespace {

std::string errno_text(const char* what, int error) { return std::string(what) + ": " + std::strerror(error); }

}  // namespace

std::string random_name() {
    unsigned char random[16];
    std::size_t got = 0;
    while (got < sizeof random) {
        const ssize_t n = getrandom(random + got, sizeof random - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return {};
        got += static_cast<std::size_t>(n);
    }
    static const char hex[] = "0123456789abcdef";
    std::string name = "/arshim-";
    for (unsigned char byte : random) {
        name += hex[byte >> 4];
        name += hex[byte & 15];
    }
    return name;
}

int create(const std::string& name, std::size_t bytes, std::string* error) {
    // glibc's shm_open adds O_NOFOLLOW and O_CLOEXEC; O_EXCL fails on anything at the name, a link included.
    const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, S_IRUSR | S_IWUSR);
    if (fd < 0) {
        *error = errno_text("creating it", errno);
        return -1;
    }
    // The umask may have taken bits away (never added any): set the mode the attaching ranks check for.
    if (fchmod(fd, S_IRUSR | S_IWUSR) != 0) {
        *error = errno_text("setting its mode", errno);
    } else if (const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
        *error = errno_text("reserving its pages", rc);  // ENOSPC: /dev/shm is full or too small
    } else {
        return fd;
    }
    close(fd);
    shm_unlink(name.c_str());
    return -1;
}

std::string check(unsigned mode, unsigned owner_uid, long long size, unsigned uid, std::size_t bytes) {
    if (!S_ISREG(mode)) return "not a regular file";
    if (owner_uid != uid) return "owned by user " + std::to_string(owner_uid) + ", not " + std::to_string(uid);
    if ((mode & 07777) != (S_IRUSR | S_IWUSR))
        return "mode " + std::to_string((mode >> 6) & 7) + std::to_string((mode >> 3) & 7) + std::to_string(mode & 7) +
               " with set-id or sticky bits " + std::to_string((mode >> 9) & 7) + ", not 0600";
    if (size < 0 || static_cast<unsigned long long>(size) != bytes)
        return "size " + std::to_string(size) + " bytes, not " + std::to_string(bytes);
    return {};
}

int open_checked(const std::string& name, std::size_t bytes, std::string* error) {
    // No link followed, and a FIFO would not block the open (O_NONBLOCK; it fails the check right after).
    const int fd = shm_open(name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) {
        *error = errno_text("opening it", errno);
        return -1;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        *error = errno_text("checking it", errno);
    } else if (std::string why = check(st.st_mode, st.st_uid, st.st_size, geteuid(), bytes); !why.empty()) {
        *error = "refused: " + why;
    } else {
        return fd;
    }
    close(fd);
    return -1;
}

void* map(int fd, std::size_t bytes, std::string* error) {
    void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int saved = errno;
    close(fd);
    if (mapping == MAP_FAILED) {
        *error = errno_text("mapping it", saved);
        return nullptr;
    }
    return mapping;
}

void remove(const std::string& name) { shm_unlink(name.c_str()); }

}  // namespace arshim::segment_file
