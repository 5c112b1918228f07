// The file side of ARShim's node segments (node_segment.h), without MPI: creating, opening, checking, mapping and
// unlinking a POSIX shared-memory object safely in a directory (/dev/shm) that every local user can write.
#pragma once

#include <cstddef>
#include <string>

namespace arshim::segment_file {

// A name no other user can guess: "/arshim-" and 32 lowercase hex digits from the kernel's random source. Empty when
// the system gives no randomness (then no segment is made).
std::string random_name();

// Creates `name` exclusively (O_CREAT|O_EXCL, never through a link: whatever exists at the name, even a dangling
// symlink, makes it fail), mode 0600 whatever the umask, with `bytes` reserved (posix_fallocate). Returns the open
// descriptor, or -1 with *error set (the name is removed again if it was made).
int create(const std::string& name, std::size_t bytes, std::string* error);

// Opens `name` to attach to it: no link followed, no blocking open (a FIFO), and checked (check() below) before it is
// used. Returns the descriptor, or -1 with *error set.
int open_checked(const std::string& name, std::size_t bytes, std::string* error);

// What an attaching rank requires of the object it opened: a regular file owned by `uid`, mode exactly 0600 (no
// other permission, set-id or sticky bit), of `bytes` bytes. Empty when it passes, else the reason.
std::string check(unsigned mode, unsigned owner_uid, long long size, unsigned uid, std::size_t bytes);

// Maps `bytes` of `fd` shared, read-write, and closes `fd` (either way). nullptr with *error set on failure.
void* map(int fd, std::size_t bytes, std::string* error);

// Removes the name (the mappings stay). Errors are ignored: the owner is the only one to remove it.
void remove(const std::string& name);

}  // namespace arshim::segment_file
