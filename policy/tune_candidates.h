// Online tuning's candidates (ARSHIM_TUNE, docs/tuning.md), MPI-free: what a key's first calls try against the
// policy's choice, made from the rows every path's spec offers (candidate_rows, policy/paths/<path>.h), in their
// places, and in online mode's second stage the winner's neighbours from its path's spec (tune_neighbours). Nothing
// here names a path. Every input is identical on every rank of the communicator, so every rank tries the same
// candidates in the same order.
#pragma once

#include <cstdint>

#include "policy/box.h"
#include "policy/decision.h"

namespace arshim::policy::tune {

enum class Mode : uint8_t { off, guard, online };  // ARSHIM_TUNE, in choice order
inline constexpr const char* kModeNames[] = {"off", "guard", "online"};

constexpr int kMaxCandidates = 5;

// What the candidates may depend on (policy/path_spec.h): the key's size and layout, the library, whether its bits
// depend on the order of the reduction.
using KeyFacts = TuneFacts;

// Whether two decisions reduce every element in the same order, so that they give the same bits: the same action, or
// two paths that both sum in communicator rank order (PathTraits::sums_in_rank_order).
bool same_fold_order(const Decision& a, const Decision& b);

// A key's first-stage candidates, the policy's choice first; returns how many (1: nothing to explore). Under guard,
// an order-sensitive key keeps only candidates with the policy's fold order: the default's results must not depend on
// which candidate timing noise favoured (same job, same bits; docs/reproducible.md). Online tries them all.
int first_stage(const Decision& chosen, const KeyFacts& facts, Mode mode, Decision (&out)[kMaxCandidates]);

// Online's second stage: the first stage's winner, then its path's neighbours (fewer than 2: nothing to refine).
int second_stage(const Decision& winner, const KeyFacts& facts, Decision (&out)[kMaxCandidates]);

// Every path's candidate rows in their places, for the docs and `arshim policy explain`: name and the modes they apply in.
struct CandidateInfo {
    const char* name;
    bool guard, online;
};
const CandidateInfo* candidate_rows(int* count);

}  // namespace arshim::policy::tune
