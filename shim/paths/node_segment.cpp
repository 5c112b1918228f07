#include "shim/paths/node_segment.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "shim/base/log.h"
#include "shim/base/mpi_util.h"
#include "shim/paths/segment_file.h"

// Tests only (test/verify/kernel_fault.cpp, never installed): the name the owner creates, instead of a random one,
// so that a test can plant something there first. Null in the product.
extern "C" const char* arshim_test_segment_name() __attribute__((weak, visibility("hidden")));

namespace arshim {

namespace {

// What the owner tells the other ranks: the segment's name (empty: there is none) and its size.
struct Announcement {
    char name[64];
    uint64_t bytes;
};

std::size_t page_bytes() {
    const long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? static_cast<std::size_t>(page) : 4096;
}

std::size_t page_rounded(std::size_t bytes) { return (bytes + page_bytes() - 1) / page_bytes() * page_bytes(); }

// Maps every page of the window into this process now, in the call that creates the window, rather than on each
// page's first use: otherwise the first call that touches the second buffer set pays the page faults of its ranks,
// many times the bucket's median on the second call of a new window (docs/paths.md "First calls").
// MADV_POPULATE_WRITE (Linux 5.14) does it in one system call; elsewhere one read per page.
void prefault(char* mapping, std::size_t bytes) {
#if defined(MADV_POPULATE_WRITE)
    if (madvise(mapping, bytes, MADV_POPULATE_WRITE) == 0) return;
#endif
    for (std::size_t at = 0; at < bytes; at += page_bytes()) (void)*reinterpret_cast<volatile const char*>(mapping + at);
}

}  // namespace

char* allocate_shared(MPI_Comm comm, bool owner, std::size_t bytes, NodeSegment* segment, std::string* why) {
    std::string error;
    const std::size_t size = page_rounded(bytes == 0 ? 1 : bytes);
    Announcement said{};
    std::string name;
    int fd = -1;
    if (owner) {
        // A clash with a random name is a planted file or 2^-128 bad luck: one more try, then give up.
        const char* fixed = arshim_test_segment_name != nullptr ? arshim_test_segment_name() : nullptr;
        for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
            name = fixed != nullptr ? fixed : segment_file::random_name();
            if (name.empty() || name.size() >= sizeof said.name) {
                error = "no random name (getrandom failed)";
                break;
            }
            fd = segment_file::create(name, size, &error);
            if (fd < 0) error = "shared-memory object " + name + ": " + error;
        }
        if (fd >= 0) {
            std::memcpy(said.name, name.c_str(), name.size() + 1);
            said.bytes = size;
        }
    }
    bcast_twice(&said, static_cast<int>(sizeof said), MPI_BYTE, 0, comm);  // twice: shim/base/mpi_util.h
    said.name[sizeof said.name - 1] = '\0';

    void* mapping = nullptr;
    if (owner) {
        if (fd >= 0) mapping = segment_file::map(fd, size, &error);
    } else if (said.name[0] == '\0') {
        error = "rank 0 of the node could not make it";
    } else if (said.bytes != size) {
        error = "the ranks of the node asked for different sizes";
    } else if (const int attached = segment_file::open_checked(said.name, size, &error); attached >= 0) {
        mapping = segment_file::map(attached, size, &error);
    }
    if (!owner && mapping == nullptr && said.name[0] != '\0') error = std::string("shared-memory object ") + said.name + ": " + error;
    if (mapping == nullptr && !owner && said.name[0] != '\0' && log::first_time("segment-attach")) {
        // Only this rank knows; rank 0 reports the agreed outcome.
        log::warn("node shared memory not attached ({}): node paths decline to the library", error);
    }

    // Every rank has mapped it (or knows it failed) before the name goes.
    int ok = mapping != nullptr ? 1 : 0, all = 0;
    if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) all = 0;
    if (owner && said.name[0] != '\0') segment_file::remove(said.name);
    if (all == 0) {
        if (mapping != nullptr) munmap(mapping, size);
        if (why != nullptr) *why = error.empty() ? "another rank of the node could not attach to it" : error;
        return nullptr;
    }
    prefault(static_cast<char*>(mapping), size);
    segment->mapping = mapping;
    segment->bytes = size;
    return static_cast<char*>(mapping);
}

void release_shared(NodeSegment* segment) {
    if (segment->mapping != nullptr) munmap(segment->mapping, segment->bytes);
    segment->mapping = nullptr;
    segment->bytes = 0;
}

}  // namespace arshim
