#include "policy/library_bugs.h"

#include <cctype>
#include <sstream>
#include <tuple>

namespace arshim::policy {

namespace {

constexpr uint32_t bit(vocab::Op op) { return 1u << static_cast<unsigned>(op); }
constexpr uint32_t kMinMax = bit(vocab::Op::min) | bit(vocab::Op::max);

LibraryVersion v(const char* library, int major, int minor, int patch) { return {library, major, minor, patch}; }

// Every entry was reproduced on this project's machines (test/kernels/test_kernels_mpi.cpp recognizes each one
// element by element; test/library_bugs/ checks the avoidance). Version ranges: the versions the upstream report
// and its fix name; where no fix is known, from the first release it can be in to the newest release measured wrong
// (measured_releases() below; a release newer than every measured one keeps the newest one's entries).
// Measured right: MPICH 4.2.1 and 5.0.2 (#6083 fixed), Open MPI 5.0.7 for MPI_UNSIGNED_LONG (#10525 fixed).
const std::vector<LibraryBug>& table() {
    static const std::vector<LibraryBug> bugs = {
        {"mpich-6083-unsigned-minmax", "mpich", v("mpich", 4, 0, 0), v("mpich", 4, 0, 99), kMinMax,
         "MPI_UNSIGNED_CHAR MPI_UNSIGNED_SHORT MPI_UNSIGNED MPI_UNSIGNED_LONG MPI_UNSIGNED_LONG_LONG MPI_UINT8_T "
         "MPI_UINT16_T MPI_UINT32_T MPI_UINT64_T",
         "MIN/MAX compare unsigned integers as signed (MIN(253, 4) = 253 for MPI_UINT8_T)", "pmodels/mpich#6083"},
        // Measured wrong in 4.1.4 and 5.0.7 (op/avx only: right with --mca op ^avx).
        {"ompi-8045-avx-small-int-sum", "openmpi", v("openmpi", 4, 1, 0), v("openmpi", 5, 0, 7),
         bit(vocab::Op::sum),
         "MPI_INT8_T MPI_UINT8_T MPI_SIGNED_CHAR MPI_UNSIGNED_CHAR MPI_SHORT MPI_UNSIGNED_SHORT MPI_INT16_T "
         "MPI_UINT16_T MPI_INTEGER1 MPI_INTEGER2",
         "op/avx SUM saturates 8- and 16-bit integers instead of wrapping (200 + 100 = 255 for MPI_UINT8_T)",
         "open-mpi/ompi#8045"},
        {"ompi-10525-unsigned-long-minmax", "openmpi", v("openmpi", 4, 1, 2), v("openmpi", 4, 1, 4), kMinMax,
         "MPI_UNSIGNED_LONG", "MIN/MAX compare MPI_UNSIGNED_LONG as signed long (MAX(2^64-1, 4) = 4)",
         "open-mpi/ompi#10525 (fixed by #10527, backport #10538)"},
        // Measured wrong in 4.1.4 (op/avx) and 5.0.7 (the base op too: also with --mca op ^avx).
        {"ompi-avx-offset-minmax", "openmpi", v("openmpi", 4, 1, 0), v("openmpi", 5, 0, 7), kMinMax, "MPI_OFFSET",
         "MIN/MAX compare the signed MPI_OFFSET as unsigned (MIN(-1, 5) = 5): op/avx in 4.1, every op module in 5.0",
         "found by test/kernels (no upstream issue)"},
    };
    return bugs;
}

}  // namespace

bool LibraryVersion::operator<(const LibraryVersion& o) const {
    return std::tie(major, minor, patch) < std::tie(o.major, o.minor, o.patch);
}

std::string LibraryVersion::text() const {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

LibraryVersion parse_library_version(const std::string& text) {
    LibraryVersion out;
    std::size_t at = std::string::npos;
    if (text.rfind("MPICH", 0) == 0) {
        out.library = "mpich";
        at = text.find("Version:");
        if (at != std::string::npos) at += 8;
    } else if (text.rfind("Open MPI", 0) == 0) {
        out.library = "openmpi";
        at = text.find(" v");
        if (at != std::string::npos) at += 2;
    }
    if (at == std::string::npos) return {};
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
    int* parts[3] = {&out.major, &out.minor, &out.patch};
    for (int i = 0; i < 3; ++i) {
        if (at >= text.size() || !std::isdigit(static_cast<unsigned char>(text[at]))) {
            if (i == 0) return {};  // no version number: recognize nothing
            break;
        }
        int value = 0;
        while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) && value < 100000)
            value = value * 10 + (text[at++] - '0');
        *parts[i] = value;
        if (at < text.size() && text[at] == '.') ++at;
        else break;
    }
    return out;
}

const std::vector<LibraryBug>& library_bugs() { return table(); }

const std::vector<LibraryVersion>& measured_releases() {
    // Debian 12 (MPICH 4.0.2, Open MPI 4.1.4), Debian 13 (MPICH 4.2.1, Open MPI 5.0.7), Debian forky (MPICH 5.0.2).
    static const std::vector<LibraryVersion> releases = {v("mpich", 4, 0, 2), v("mpich", 4, 2, 1), v("mpich", 5, 0, 2),
                                                         v("openmpi", 4, 1, 4), v("openmpi", 5, 0, 7)};
    return releases;
}

const LibraryVersion* newer_than_measured(const LibraryVersion& version) {
    const LibraryVersion* newest = nullptr;
    for (const LibraryVersion& r : measured_releases())
        if (r.library == version.library && (newest == nullptr || *newest < r)) newest = &r;
    return newest != nullptr && *newest < version ? newest : nullptr;
}

bool affects(const LibraryBug& bug, const LibraryVersion& version) {
    if (version.library != bug.library) return false;
    if (!(version < bug.first) && !(bug.last < version)) return true;
    const LibraryVersion* newest = newer_than_measured(version);
    return newest != nullptr && !(*newest < bug.first) && !(bug.last < *newest);
}

std::vector<std::string> bug_datatypes(const LibraryBug& bug) {
    std::vector<std::string> out;
    std::istringstream in(bug.datatypes);
    for (std::string name; in >> name;) out.push_back(name);
    return out;
}

}  // namespace arshim::policy
