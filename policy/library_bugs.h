// Known wrong reductions of MPI libraries, as data (docs/library-bugs.md): which library and versions, which
// predefined ops on which predefined datatypes, what goes wrong, and the upstream reference. Matched once at
// MPI_Init against MPI_Get_library_version; calls that hit an entry are computed with ARShim's kernels (its SIMD
// op handed to the library, or a host path) unless ARSHIM_LIBRARY_BUGS=ignore. A new entry is one row below and a
// test case in test/library_bugs. MPI-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/vocabulary.h"

namespace arshim::policy {

struct LibraryVersion {
    std::string library;  // "mpich" or "openmpi"; "" when not recognized
    int major = 0, minor = 0, patch = 0;
    bool operator<(const LibraryVersion& o) const;
    std::string text() const;  // "4.0.2"
};

// "MPICH Version:\t4.0.2\n..." or "Open MPI v4.1.4, package: ..." (MPI_Get_library_version) -> library and version.
// Unrecognized text gives library "" (no entry matches: nothing is routed around).
LibraryVersion parse_library_version(const std::string& text);

struct LibraryBug {
    const char* id;         // names the entry in messages and statistics ("library_bug:<id>")
    const char* library;    // "mpich" or "openmpi"
    LibraryVersion first;   // versions known to be affected, inclusive
    LibraryVersion last;
    uint32_t ops;           // bit per vocab::Op
    const char* datatypes;  // the MPI datatype names affected, separated by spaces
    const char* symptom;
    const char* reference;  // upstream issue, or how it was found
};

const std::vector<LibraryBug>& library_bugs();

// The releases of each library this project has measured (test/kernels/test_kernels_mpi.cpp run natively against
// each), oldest first.
const std::vector<LibraryVersion>& measured_releases();

// The newest release of `version`'s library that was measured, when `version` is newer than every measured one
// (then the entries still wrong in that release are assumed to hold for it too, until it is measured itself);
// otherwise nullptr.
const LibraryVersion* newer_than_measured(const LibraryVersion& version);

// Whether `bug` affects this library and version: a version in the entry's range, or a version newer than every
// measured release while the entry covers the newest measured one.
bool affects(const LibraryBug& bug, const LibraryVersion& version);

// The datatype names of an entry, one by one.
std::vector<std::string> bug_datatypes(const LibraryBug& bug);

}  // namespace arshim::policy
