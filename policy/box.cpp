#include "policy/box.h"

#include <algorithm>
#include <initializer_list>

namespace arshim::policy {

bool Box::empty() const {
    for (const Interval& i : dim)
        if (i.empty()) return true;
    return dtypes == 0 || ops == 0 || mpis == 0 || bugs == 0 || repros == 0;
}

bool Box::intersects(const Box& other) const {
    for (int d = 0; d < kIntervals; ++d)
        if (std::max(dim[d].lo, other.dim[d].lo) >= std::min(dim[d].hi, other.dim[d].hi)) return false;
    return (dtypes & other.dtypes) != 0 && (ops & other.ops) != 0 && (mpis & other.mpis) != 0 &&
           (bugs & other.bugs) != 0 && (repros & other.repros) != 0;
}

bool Box::covers(const Box& other) const {
    for (int d = 0; d < kIntervals; ++d)
        if (other.dim[d].lo < dim[d].lo || other.dim[d].hi > dim[d].hi) return false;
    return (other.dtypes & ~dtypes) == 0 && (other.ops & ~ops) == 0 && (other.mpis & ~mpis) == 0 &&
           (other.bugs & ~bugs) == 0 && (other.repros & ~repros) == 0;
}

Box Box::possible() const {
    Box out = *this;
    out.dim[bucket].hi = std::min<uint64_t>(out.dim[bucket].hi, kBucketCount);
    for (int d : {ppn, nodes, comm_size}) out.dim[d].lo = std::max<uint64_t>(out.dim[d].lo, 1);
    return out;
}

namespace {

// Appends piece \ cut (cut intersects piece) to `out` as disjoint boxes: at most two per interval dimension and
// one per set dimension.
void subtract(Box piece, const Box& cut, std::vector<Box>* out) {
    for (int d = 0; d < Box::kIntervals; ++d) {
        Interval& own = piece.dim[d];
        if (own.lo < cut.dim[d].lo) {
            Box below = piece;
            below.dim[d].hi = cut.dim[d].lo;
            out->push_back(below);
            own.lo = cut.dim[d].lo;
        }
        if (cut.dim[d].hi < own.hi) {
            Box above = piece;
            above.dim[d].lo = cut.dim[d].hi;
            out->push_back(above);
            own.hi = cut.dim[d].hi;
        }
    }
    for (uint32_t Box::*mask : {&Box::dtypes, &Box::ops, &Box::mpis, &Box::bugs, &Box::repros}) {
        const uint32_t outside = piece.*mask & ~(cut.*mask);
        if (outside != 0) {
            Box rest = piece;
            rest.*mask = outside;
            out->push_back(rest);
            piece.*mask &= cut.*mask;
        }
    }
    // What is left of `piece` lies inside `cut`: dropped.
}

// Policy tables hold tens of rules; this bounds the work for pathological (fuzzed) ones.
constexpr std::size_t kMaxPieces = 4096;

}  // namespace

std::vector<int> covering_boxes(const std::vector<Box>& boxes, std::size_t index, std::size_t* budget) {
    std::vector<Box> left{boxes[index].possible()};
    std::vector<int> used;
    if (left.front().empty()) return used;
    std::vector<Box> next;
    for (std::size_t i = 0; i < index && !left.empty(); ++i) {
        const Box& cut = boxes[i];
        if (cut.empty()) continue;
        bool touched = false;
        next.clear();
        for (const Box& piece : left) {
            if (budget != nullptr) {  // every test of a piece against a rule counts
                if (*budget == 0) return {};
                --*budget;
            }
            if (!piece.intersects(cut)) {
                next.push_back(piece);
                continue;
            }
            touched = true;
            subtract(piece, cut, &next);
            if (next.size() > kMaxPieces) return {};
        }
        if (touched) used.push_back(static_cast<int>(i));
        left.swap(next);
    }
    if (!left.empty()) used.clear();
    return used;
}

}  // namespace arshim::policy
