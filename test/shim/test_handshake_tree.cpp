// The start-up check's tree (shim/core/handshake_tree.h) without MPI: the edges cover every rank exactly once, the
// depth is logarithmic, the timeouts nest (a parent outwaits its children, a child outwaits its parent's verdict),
// and a report lists the lowest ranks and counts all of them, whatever a peer sends.
#include "test/support/catch.h"

#include <cmath>
#include <vector>

#include "shim/core/handshake_tree.h"

namespace tree = arshim::handshake_tree;

TEST_CASE("handshake tree: every rank but 0 is the child of exactly one rank, its parent") {
    for (int size : {1, 2, 3, 4, 5, 6, 17, 21, 22, 64, 85, 86, 1000, 1024, 4097}) {
        std::vector<int> seen(static_cast<std::size_t>(size), 0);
        for (int r = 0; r < size; ++r) {
            const int first = static_cast<int>(tree::first_child(r));
            for (int c = 0; c < tree::child_count(r, size); ++c) {
                REQUIRE(first + c < size);
                REQUIRE(tree::parent(first + c) == r);
                ++seen[static_cast<std::size_t>(first + c)];
            }
        }
        CHECK(seen[0] == 0);
        for (int r = 1; r < size; ++r) CHECK(seen[static_cast<std::size_t>(r)] == 1);
    }
}

TEST_CASE("handshake tree: depth and height are logarithmic and consistent") {
    CHECK(tree::parent(0) == -1);
    CHECK(tree::depth(0) == 0);
    CHECK(tree::height(0, 1) == 0);
    CHECK(tree::height(0, 2) == 1);
    CHECK(tree::height(0, 5) == 1);   // 0 -> 1..4
    CHECK(tree::height(0, 6) == 2);   // 1 -> 5
    CHECK(tree::height(1, 6) == 1);
    CHECK(tree::height(2, 6) == 0);
    CHECK(tree::depth(5) == 2);
    for (int size : {2, 64, 1024, 10000, 1 << 20}) {
        int deepest = 0;
        for (int r = 0; r < size; r += (size > 5000 ? 97 : 1)) deepest = std::max(deepest, tree::depth(r));
        deepest = std::max(deepest, tree::depth(size - 1));
        CHECK(tree::height(0, size) == deepest);
        CHECK(deepest <= static_cast<int>(std::ceil(std::log(size) / std::log(tree::kFanOut))) + 1);
    }
    CHECK(tree::height(0, 1024) == 5);
}

TEST_CASE("handshake tree: the timeouts nest") {
    for (int timeout : {1, 2, 30, 3600})
        for (int size : {2, 6, 64, 1024, 100000}) {
            const double step = tree::level_step_s(timeout);
            CHECK(step >= 2.0);
            for (int r : {1, 2, 5, 21, 85, size / 2, size - 1}) {
                if (r <= 0 || r >= size) continue;
                const int p = tree::parent(r);
                // A parent gives up on a child no sooner than the child gives up on its own children, plus a step.
                if (tree::child_count(r, size) > 0)
                    CHECK(tree::children_wait_s(p, size, timeout) >= tree::children_wait_s(r, size, timeout) + step);
                // A child waits for the verdict longer than its parent does, by a step, and longer than rank 0 waits.
                CHECK(tree::verdict_wait_s(r, size, timeout) >= tree::children_wait_s(0, size, timeout) + timeout);
                if (p > 0) CHECK(tree::verdict_wait_s(r, size, timeout) >= tree::verdict_wait_s(p, size, timeout) + step);
            }
            CHECK(tree::children_wait_s(0, size, timeout) >= timeout);
        }
}

TEST_CASE("handshake tree: a report keeps the lowest ranks in order and counts all") {
    tree::Report root = tree::fresh_report(42);
    CHECK(root[tree::kIdentity] == 42);
    tree::add_missing(root, 9);
    tree::add_missing(root, 3);
    tree::Report child = tree::fresh_report(42);
    for (int r : {100, 7, 50, 1, 2, 60, 70, 80, 90, 5}) tree::add_missing(child, r);
    tree::add_foreign(child, 11);
    tree::merge(root, child);
    CHECK(root[tree::kMissingCount] == 12);
    const std::vector<uint64_t> listed(root.begin() + tree::kMissingList, root.begin() + tree::kMissingList + tree::kListed);
    CHECK(listed == std::vector<uint64_t>{1, 2, 3, 5, 7, 9, 50, 60});
    CHECK(root[tree::kForeignCount] == 1);
    CHECK(root[tree::kForeignList] == 11);
    CHECK(root[tree::kIdentity] == 42);
}

TEST_CASE("handshake tree: a broken report cannot overflow the lists or the counts") {
    tree::Report root = tree::fresh_report(1);
    tree::Report broken{};
    broken.fill(~uint64_t{0});
    broken[tree::kMissingList] = 4;  // unsorted listed ranks are sorted before they are merged
    tree::merge(root, broken);
    tree::merge(root, broken);
    CHECK(root[tree::kMissingCount] == 2 * (uint64_t{1} << 40));
    CHECK(root[tree::kMissingList] == 4);
    CHECK(root[tree::kMissingList + 1] == 4);
    CHECK(root[tree::kIdentity] == 1);
}
