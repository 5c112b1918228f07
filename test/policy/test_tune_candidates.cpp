// Online tuning's candidates (policy/tune_candidates.h), as rows: what guard and online try against the policy's
// choice, and the same-bits rule that keeps guard to the policy's fold order for floating-point sums.
#include "test/support/catch.h"

#include "policy/tune_candidates.h"
#include "test/policy/decisions.h"

using namespace arshim::policy;
using namespace arshim::policy::testing;
using tune::KeyFacts;
using tune::Mode;

namespace {

KeyFacts key(uint64_t bytes, int nodes, int ppn, Flavor flavor = Flavor::mpich, bool order_sensitive = false) {
    KeyFacts f;
    f.bytes = bytes;
    f.nodes = nodes;
    f.ppn_min = f.ppn_max = ppn;
    f.flavor = flavor;
    f.order_sensitive = order_sensitive;
    return f;
}

std::vector<std::string> texts(const Decision (&out)[tune::kMaxCandidates], int n) {
    std::vector<std::string> v;
    for (int i = 0; i < n; ++i) v.push_back(describe_decision(out[i]));
    return v;
}

}  // namespace

TEST_CASE("guard: the policy's choice, the library, half the leaders and small segments across nodes", "[tune]") {
    Decision out[tune::kMaxCandidates];
    const int n = tune::first_stage(multileader(4, 1), key(4 << 20, 2, 4), Mode::guard, out);
    CHECK(texts(out, n) == std::vector<std::string>{"multileader leaders=4 pipeline_k=1 kernel=native", "native",
                                                    "multileader leaders=2 pipeline_k=1 kernel=native",
                                                    "pipelined segment_bytes=32K window=8 kernel=native"});
    // Open MPI's small segments (its libnbc reduce-scatters from 64 KiB).
    const int o = tune::first_stage(multileader(4, 1), key(4 << 20, 2, 4, Flavor::openmpi), Mode::guard, out);
    CHECK(texts(out, o).back() == "pipelined segment_bytes=64K window=4 kernel=native");
    // One node: the policy against the library only.
    CHECK(tune::first_stage(multileader(2, 1), key(4 << 20, 1, 4), Mode::guard, out) == 2);
    // Leaders clamped to the smallest node before halving: 4 leaders on nodes of 2 are 2, half is 1.
    const int c = tune::first_stage(multileader(4, 1), key(1024, 2, 2), Mode::guard, out);
    CHECK(texts(out, c) == std::vector<std::string>{"multileader leaders=2 pipeline_k=1 kernel=native", "native",
                                                    "multileader leaders=1 pipeline_k=1 kernel=native"});
}

TEST_CASE("guard keeps an order-sensitive key to the policy's fold order", "[tune]") {
    Decision out[tune::kMaxCandidates];
    CHECK(tune::first_stage(multileader(4, 1), key(4 << 20, 2, 4, Flavor::mpich, true), Mode::guard, out) == 1);
    CHECK(tune::same_fold_order(out[0], multileader(4, 1)));
    CHECK_FALSE(tune::same_fold_order(multileader(4, 1), multileader(2, 1)));
    CHECK_FALSE(tune::same_fold_order(multileader(1, 1), decision_for(Path::native)));
    // Two decisions that both sum in rank order give the same bits.
    Decision gather = decision_for(Path::reproducible), node = decision_for(Path::reproducible);
    gather.get<ReproducibleParams>().algorithm = ReproAlgorithm::gather;
    node.get<ReproducibleParams>().algorithm = ReproAlgorithm::node;
    CHECK(tune::same_fold_order(gather, node));
    // Online explores it anyway (opt-in; docs/tuning.md says its bits may then differ run to run).
    CHECK(tune::first_stage(multileader(4, 1), key(4 << 20, 2, 4, Flavor::mpich, true), Mode::online, out) >= 2);
}

TEST_CASE("online: both host paths at the default table's parameters, then the winner's neighbours", "[tune]") {
    Decision out[tune::kMaxCandidates];
    const int n = tune::first_stage(pipelined(1024, 1), key(1 << 20, 1, 2), Mode::online, out);
    CHECK(texts(out, n) == std::vector<std::string>{"pipelined segment_bytes=1K window=1 kernel=native", "native",
                                                    "multileader leaders=2 pipeline_k=1 kernel=native",
                                                    "pipelined segment_bytes=256K window=8 kernel=native"});
    const int m = tune::second_stage(multileader(2, 1), key(1 << 20, 1, 4), out);
    CHECK(texts(out, m) == std::vector<std::string>{"multileader leaders=2 pipeline_k=1 kernel=native",
                                                    "multileader leaders=4 pipeline_k=1 kernel=native",
                                                    "multileader leaders=1 pipeline_k=1 kernel=native"});
    const int p = tune::second_stage(pipelined(256 << 10, 8), key(1 << 20, 1, 4), out);
    CHECK(texts(out, p) == std::vector<std::string>{"pipelined segment_bytes=256K window=8 kernel=native",
                                                    "pipelined segment_bytes=1M window=8 kernel=native",
                                                    "pipelined segment_bytes=64K window=8 kernel=native"});
    CHECK(tune::second_stage(decision_for(Path::native), key(1 << 20, 1, 4), out) == 1);  // nothing to refine
}

TEST_CASE("the candidate rows are named and say where they apply", "[tune]") {
    int count = 0;
    const tune::CandidateInfo* rows = tune::candidate_rows(&count);
    REQUIRE(count >= 5);
    for (int i = 0; i < count; ++i) {
        CHECK(std::string(rows[i].name).size() > 5);
        CHECK((rows[i].guard || rows[i].online));
    }
}
