// What a policy rule matches, as a box in call space: intervals over size bucket, processes per node, node count
// and communicator size, and sets (bit masks) of datatype classes, ops and MPI flavors.
//
// One predicate evaluator (the MPICH csel lesson: pruning and searching kept two copies of the predicate
// code and they drifted apart): the same Box answers "does this call match?" (Policy::decide) and "do earlier rules
// hide this one?" (the unreachable-rule check in the reader).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "policy/routing_words.h"

namespace arshim::policy {

// Size buckets (policy/routing_words.h): the unit the shim caches decisions in. Rule byte boundaries are powers of
// two, so every size in a bucket gets the same rule.
using vocab::bucket_floor;
using vocab::bucket_of;
using vocab::kBucketCount;

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

// Half-open interval [lo, hi); hi == kUnbounded means no upper bound.
struct Interval {
    uint64_t lo = 0;
    uint64_t hi = kUnbounded;
    bool contains(uint64_t v) const { return v >= lo && v < hi; }
    bool empty() const { return lo >= hi; }
    bool any() const { return lo == 0 && hi == kUnbounded; }
    bool operator==(const Interval& o) const { return lo == o.lo && hi == o.hi; }
};

// MPI flavors a rule can be restricted to.
enum class Flavor : uint8_t { mpich, openmpi, count };
constexpr std::size_t kFlavorCount = static_cast<std::size_t>(Flavor::count);
// kAllDtypes, kAllOps: policy/path_spec.h (a path's Applies uses them too).
constexpr uint32_t kAllFlavors = (1u << kFlavorCount) - 1;      // bit per Flavor
// Whether a call hits a known wrong reduction of the MPI library that ARShim routes around (policy/library_bugs.h):
// bit 0 = no, bit 1 = yes.
constexpr uint32_t kNoLibraryBug = 1, kLibraryBug = 2, kAnyLibraryBug = kNoLibraryBug | kLibraryBug;
// Whether ARSHIM_REPRODUCIBLE covers a call (it must then be summed in rank order): bit 0 = no, bit 1 = yes.
constexpr uint32_t kNotReproducible = 1, kReproducible = 2, kAnyReproducible = kNotReproducible | kReproducible;

// One call as the matcher sees it. `mpi` is a Flavor bit, or 0 when the flavor is unknown (rules restricted to a
// flavor then never match).
struct Point {
    uint64_t bucket = 0;
    uint64_t ppn = 1;
    uint64_t nodes = 1;
    uint64_t comm_size = 1;
    uint32_t dtype = 0;
    uint32_t op = 0;
    uint32_t mpi = 0;
    uint32_t bug = kNoLibraryBug;
    uint32_t repro = kNotReproducible;
};

struct Box {
    enum Dim { bucket, ppn, nodes, comm_size, kIntervals };
    Interval dim[kIntervals];
    uint32_t dtypes = kAllDtypes;
    uint32_t ops = kAllOps;
    uint32_t mpis = kAllFlavors;
    uint32_t bugs = kAnyLibraryBug;
    uint32_t repros = kAnyReproducible;

    bool contains(const Point& p) const {
        return dim[bucket].contains(p.bucket) && dim[ppn].contains(p.ppn) && dim[nodes].contains(p.nodes) &&
               dim[comm_size].contains(p.comm_size) && (dtypes & p.dtype) != 0 && (ops & p.op) != 0 &&
               (mpis & p.mpi) != 0 && (bugs & p.bug) != 0 && (repros & p.repro) != 0;
    }
    bool empty() const;
    bool intersects(const Box& other) const;
    // Every call `other` matches, this box matches too.
    bool covers(const Box& other) const;
    // This box without the calls that cannot happen: ppn, nodes and comm_size are at least 1, buckets at most 64.
    Box possible() const;
};

// Indices of the boxes among boxes[0, index) that together cover boxes[index] (in increasing order), or an empty
// vector when some call boxes[index] matches is matched by none of them. Exact for unions, within a work limit per
// box and `*budget` piece-against-rule tests in all (decremented; shared by the calls for one table), beyond which the box
// is taken as reachable (no false warnings).
std::vector<int> covering_boxes(const std::vector<Box>& boxes, std::size_t index, std::size_t* budget = nullptr);

}  // namespace arshim::policy
