// The shim's logic without MPI and without mpirun: the fixed hash table, the routing rules and the replay memo, the
// node shared-memory arithmetic, the statistics row keys and the finalize report's field lists (a round trip
// through the same reduction MPI does). Everything tested here is what the MPI code calls; the MPI side of each
// seam is exercised by the MPI tests (test/mpi, test/stats).
#include "test/support/catch.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "policy/routing_words.h"
#include "policy/policy.h"
#include "shim/base/fixed_table.h"
#include "shim/core/layout.h"
#include "shim/core/router.h"
#include "shim/paths/shm_layout.h"
#include "shim/stats/counters.h"
#include "shim/stats/report_fields.h"

using namespace arshim;
using Catch::Approx;

// ---- FixedTable ---------------------------------------------------------------------------------------------------

TEST_CASE("FixedTable finds what it inserted and never grows", "[fixed_table]") {
    FixedTable<uint64_t, int, 64, 4> table;
    bool inserted = false;
    for (uint64_t k = 1; k <= 32; ++k) {
        int* v = table.find_or_insert(k, k, &inserted);
        if (v == nullptr) continue;  // probe window full: the caller's slow route
        CHECK(inserted);
        *v = static_cast<int>(k * 10);
    }
    std::size_t found = 0;
    for (uint64_t k = 1; k <= 32; ++k) {
        const int* v = table.find(k, k);
        if (v == nullptr) continue;
        ++found;
        CHECK(*v == static_cast<int>(k * 10));
        CHECK(table.find_or_insert(k, k, &inserted) == v);
        CHECK_FALSE(inserted);
    }
    CHECK(found == table.size());
    CHECK(found >= 24);  // half full with 4 probes: almost everything fits
    CHECK(table.find(999, 999) == nullptr);
    std::size_t visited = 0;
    table.for_each([&](const uint64_t& k, const int& v) {
        CHECK(v == static_cast<int>(k * 10));
        ++visited;
    });
    CHECK(visited == table.size());
}

TEST_CASE("FixedTable returns null when a key's probe window is full", "[fixed_table]") {
    FixedTable<uint64_t, int, 8, 2> table;
    // Every key hashes alike: the first two fill the window, the third has no room.
    CHECK(table.find_or_insert(1, 0) != nullptr);
    CHECK(table.find_or_insert(2, 0) != nullptr);
    CHECK(table.find_or_insert(3, 0) == nullptr);
    CHECK(table.find(3, 0) == nullptr);
    CHECK(table.size() == 2);
    CHECK(table.find(1, 0) != nullptr);
    CHECK(table.find(2, 0) != nullptr);
}

// ---- routing and replay ------------------------------------------------------------------------------------------

TEST_CASE("Routing sends unservable calls native with the first reason in docs/architecture.md's order", "[route]") {
    using vocab::Reason;
    route::Traits servable;
    servable.comm_size = 4;
    servable.count = 10;
    servable.predefined_type = true;
    servable.supported = true;
    CHECK(route::unservable(servable) == vocab::kServed);
    CHECK(route::replayable(servable));

    auto with = [&](auto change) {
        route::Traits t = servable;
        change(t);
        return route::unservable(t);
    };
    CHECK(with([](route::Traits& t) { t.intercommunicator = true; t.count = 0; }) == Reason::intercommunicator);
    CHECK(with([](route::Traits& t) { t.comm_size = 1; t.count = 0; }) == Reason::single_rank);
    CHECK(with([](route::Traits& t) { t.count = 0; t.predefined_type = false; }) == Reason::zero_count);
    CHECK(with([](route::Traits& t) { t.predefined_type = false; t.user_op = true; }) == Reason::derived_datatype);
    CHECK(with([](route::Traits& t) { t.user_op = true; }) == Reason::user_op);
    CHECK(with([](route::Traits& t) { t.user_op = true; t.commutative = false; }) == Reason::noncommutative_op);
    CHECK(with([](route::Traits& t) { t.supported = false; }) == Reason::unsupported_op_type);

    route::Traits derived = servable;
    derived.predefined_type = false;
    CHECK_FALSE(route::replayable(derived));
    route::Traits user = servable;
    user.user_op = true;
    CHECK_FALSE(route::replayable(user));
}

TEST_CASE("The replay memo matches only the same handles, generation and size bucket", "[route]") {
    const route::Memo memo{0x10, 0x20, 0x30, 7, 8, vocab::bucket_of(100 * 8)};
    CHECK(memo.matches(0x10, 0x20, 0x30, 7, 100, false));
    CHECK(memo.matches(0x10, 0x20, 0x30, 7, 127, false));       // same bucket: [512, 1024) bytes
    CHECK_FALSE(memo.matches(0x10, 0x20, 0x30, 7, 128, false));  // next bucket
    CHECK_FALSE(memo.matches(0x10, 0x20, 0x30, 8, 100, false));  // a context was freed since: handles may be reused
    CHECK_FALSE(memo.matches(0x11, 0x20, 0x30, 7, 100, false));
    CHECK_FALSE(memo.matches(0x10, 0x21, 0x30, 7, 100, false));
    CHECK_FALSE(memo.matches(0x10, 0x20, 0x31, 7, 100, false));
    CHECK_FALSE(memo.matches(0x10, 0x20, 0x30, 7, -1, false));   // erroneous: the library reports it
    CHECK_FALSE(memo.matches(0x10, 0x20, 0x30, 7, 100, true));   // aliased buffers: the library reports it
    const route::Memo empty{};
    CHECK_FALSE(empty.matches(0, 0, 0, 1, 0, false));  // generations start at 1
}

// ---- node shared memory ------------------------------------------------------------------------------------------

TEST_CASE("Leader partitions cover a chunk exactly once, on cache lines", "[shm]") {
    for (std::size_t element : {1, 2, 4, 8, 12, 16, 32}) {
        for (std::size_t elements : {0, 1, 7, 64, 100, 1000, 4097, 65536}) {
            for (int parts : {1, 2, 3, 4, 7, 64}) {
                std::vector<int> owner(elements, -1);
                std::size_t next = 0;
                for (int j = 0; j < parts; ++j) {
                    std::size_t first = 0, count = 0;
                    shm::partition(elements, element, parts, j, &first, &count);
                    if (count == 0) continue;
                    CHECK(first == next);  // contiguous, in leader order
                    const std::size_t unit = std::max<std::size_t>(1, shm::kCacheLine / element);
                    CHECK(first % unit == 0);  // starts on a cache line (of the chunk) where the element size allows
                    for (std::size_t i = first; i < first + count; ++i) {
                        REQUIRE(i < elements);
                        CHECK(owner[i] == -1);
                        owner[i] = j;
                    }
                    next = first + count;
                }
                CHECK(next == elements);
                CHECK(std::count(owner.begin(), owner.end(), -1) == 0);
            }
        }
    }
}

TEST_CASE("A call's chunk is its size as a power of two, within the domain's limits", "[shm]") {
    CHECK(shm::call_chunk_bytes(1, 128 << 10, 1 << 20) == shm::kMinChunk);
    CHECK(shm::call_chunk_bytes(5000, 128 << 10, 1 << 20) == 8192);
    CHECK(shm::call_chunk_bytes(1 << 20, 128 << 10, 1 << 20) == (128 << 10));   // the preferred chunk
    CHECK(shm::call_chunk_bytes(1 << 20, 1 << 20, 64 << 10) == (64 << 10));     // the window's capacity
    CHECK(shm::call_chunk_bytes(~uint64_t{0}, ~std::size_t{0}, ~std::size_t{0}) == std::size_t{1} << 40);
}

// ---- statistics keys ---------------------------------------------------------------------------------------------

TEST_CASE("Statistics row keys round-trip every field at its extremes", "[stats]") {
    using stats::RowKey;
    std::vector<RowKey> keys;
    for (std::size_t p = 0; p < vocab::kPathCount; ++p)
        for (uint32_t b : {0u, 1u, 31u, 64u})
            for (std::size_t d = 0; d < vocab::kDtypeClassCount; ++d)
                for (uint8_t op : {uint8_t{0}, uint8_t{11}, vocab::kRowOpOther, vocab::kRowOpUser})
                    for (std::size_t r = 0; r <= vocab::kReasonCount; ++r)
                        for (auto s : {stats::SharpRun::none, stats::SharpRun::host_error})
                            keys.push_back({static_cast<vocab::Path>(p), b, static_cast<vocab::DtypeClass>(d), op,
                                            static_cast<vocab::Reason>(r), s});
    for (const RowKey& k : keys) {
        const uint32_t packed = stats::pack(k);
        CHECK(packed < (1u << stats::kPackedBits));
        const RowKey u = stats::unpack(packed);
        CHECK(u.path == k.path);
        CHECK(u.bucket == k.bucket);
        CHECK(u.dtype == k.dtype);
        CHECK(u.op == k.op);
        CHECK(u.reason == k.reason);
        CHECK(u.sharp == k.sharp);
    }
}

TEST_CASE("A full row table still counts every call in the overflow cells", "[stats]") {
    auto counters = std::make_unique<stats::ThreadCounters>();
    const std::size_t distinct = stats::kRowSlots * 2;
    for (std::size_t i = 0; i < distinct; ++i) {
        const stats::Call call{i + 1, 64, 1.0,
                               {vocab::Path::native, vocab::bucket_of(64), vocab::DtypeClass::integer, 0,
                                vocab::Reason::policy}};
        stats::record(*counters, call);
    }
    uint64_t in_rows = 0;
    counters->rows.for_each([&](const stats::RowId&, const stats::Cell& c) { in_rows += c.calls; });
    const uint64_t overflow = counters->overflow[0][vocab::bucket_of(64)].calls;
    CHECK(in_rows + overflow == distinct);
    CHECK(counters->overflow_calls == overflow);
    CHECK(overflow > 0);
    CHECK(counters->reasons[static_cast<std::size_t>(vocab::Reason::policy)] == distinct);
}

TEST_CASE("Sampled timing: a row times its first calls, then one in N, and counts every call", "[stats]") {
    const uint32_t saved = stats::g_sample_period.exchange(16);
    stats::Cell c;
    std::vector<uint64_t> timed;  // call indices that were timed
    const uint64_t calls = 8 + 16 * 10 + 5;  // the first 8, ten periods, 5 calls of the next period
    auto time_of = [](uint64_t i) { return 1.0 + static_cast<double>(i % 3); };  // 1, 2 or 3 ticks
    for (uint64_t i = 0; i < calls; ++i)
        if (stats::count_or_sample(c, 100, time_of(i), true) > 0) timed.push_back(i);
    CHECK(c.calls == calls);
    CHECK(c.bytes == calls * 100);  // counts and bytes stay exact
    CHECK(c.samples == 8 + 11);
    CHECK(c.exact == 8);
    REQUIRE(timed.size() == 19);
    for (uint64_t k = 0; k < 8; ++k) CHECK(timed[k] == k);
    for (uint64_t k = 0; k < 11; ++k) CHECK(timed[8 + k] == 8 + 16 * k);  // the first call of each period
    CHECK(c.min_seconds == 1.0);
    CHECK(c.max_seconds == 3.0);

    // The estimate: the first calls' own time, plus the sampled calls' mean times every other call; in seconds.
    double first = 0, sampled = 0;
    for (uint64_t k = 0; k < 19; ++k) (k < 8 ? first : sampled) += time_of(timed[k]);
    const stats::Cell e = c.estimated(0.5);
    CHECK(e.seconds == Approx((first + sampled / 11 * (calls - 8)) * 0.5));
    CHECK(e.calls == calls);
    CHECK(e.samples == 19);
    CHECK(e.min_seconds == 0.5);
    CHECK(e.max_seconds == 1.5);
    CHECK(e.variance > 0);  // sampled: the estimate has an error

    // A row of at most 8 calls is timed whole: exact, no error, whatever the period.
    stats::Cell small;
    for (int i = 0; i < 8; ++i) CHECK(stats::count_or_sample(small, 8, 2.0 + i, true) == 1);
    CHECK(small.estimated(1.0).seconds == Approx(2 + 3 + 4 + 5 + 6 + 7 + 8 + 9));
    CHECK(small.estimated(1.0).variance == 0);
    // Two more calls: the first is sampled (standing for itself and the next 15), the second is not timed; both are
    // estimated from the sampled one, not from the first 8 (the first call of a row carries its set-up).
    CHECK(stats::count_or_sample(small, 8, 100.0, true) == 16);
    CHECK(stats::count_or_sample(small, 8, 1.0, true) == 0);
    CHECK(small.samples == 9);
    CHECK(small.estimated(1.0).seconds == Approx(44 + 2 * 100.0));
    // With timing switched off for a while, calls without any sampled one fall back on the exact calls' mean.
    stats::Cell paused;
    for (int i = 0; i < 4; ++i) stats::count_or_sample(paused, 8, 2.0, true);
    for (int i = 0; i < 4; ++i) stats::count_or_sample(paused, 8, 0.0, false);
    CHECK(paused.estimated(1.0).seconds == Approx(16.0));

    // Untimed calls (no log wants times) are counted and do not move the countdown.
    stats::Cell untimed;
    for (int i = 0; i < 100; ++i) CHECK(stats::count_or_sample(untimed, 8, 1.0, false) == 0);
    CHECK(untimed.calls == 100);
    CHECK(untimed.samples == 0);
    CHECK(untimed.due());
    CHECK(untimed.estimated(1.0).seconds == 0);
    stats::g_sample_period = saved;
}

TEST_CASE("Sampled timing: the true total lies within a few standard errors of the estimate", "[stats]") {
    const uint32_t saved = stats::g_sample_period.exchange(64);
    stats::Cell c;
    double truth = 0;
    uint64_t state = 12345;
    for (int i = 0; i < 200000; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const double t = 1000.0 + static_cast<double>(state >> 54);  // 1000..2023 ticks
        truth += t;
        stats::count_or_sample(c, 8, t, true);
    }
    const stats::Cell e = c.estimated(1.0);
    const double error = std::sqrt(e.variance);
    CHECK(e.samples == 8 + (200000 - 8 + 63) / 64);
    CHECK(error > 0);
    CHECK(error < 0.01 * truth);
    CHECK(std::abs(e.seconds - truth) < 4 * error);
    stats::g_sample_period = saved;
}

TEST_CASE("Sampled timing with a period of 1 times every call: exact totals, no error", "[stats]") {
    const uint32_t saved = stats::g_sample_period.exchange(1);
    stats::Cell c;
    double sum = 0;
    for (int i = 0; i < 1000; ++i) {
        const double t = 1.0 + i % 7;
        sum += t;
        CHECK(stats::count_or_sample(c, 8, t, true) == 1);
    }
    CHECK(c.samples == 1000);
    const stats::Cell e = c.estimated(1.0);
    CHECK(e.seconds == Approx(sum));
    CHECK(e.variance == 0);
    CHECK(e.min_seconds == 1.0);
    CHECK(e.max_seconds == 7.0);
    // A call site from timed calls only: each sample counts its weight in calls and bytes.
    stats::Cell site;
    site.add({8, 2.0, 64});
    site.add({8, 4.0, 1});
    CHECK(site.calls == 65);
    CHECK(site.bytes == 65 * 8);
    CHECK(site.samples == 2);
    CHECK(site.exact == 1);
    CHECK(site.estimated(1.0).seconds == Approx(64 * 2.0 + 4.0));
    stats::g_sample_period = saved;
}

TEST_CASE("Policy, decision cache and statistics share one size bucket", "[stats][policy]") {
    // The statistics log writes each bucket as [bytes_min, bytes_max] from the vocabulary; the policy matches and
    // the shim caches decisions by vocab::bucket_of. One formula: the bounds of every bucket map back to it.
    for (uint32_t b = 0; b < vocab::kBucketCount; ++b) {
        CHECK(vocab::bucket_of(vocab::bucket_floor(b)) == b);
        CHECK(vocab::bucket_of(vocab::bucket_ceiling(b)) == b);
        if (b + 1 < vocab::kBucketCount) CHECK(vocab::bucket_ceiling(b) + 1 == vocab::bucket_floor(b + 1));
    }
    CHECK(policy::bucket_of(12345) == vocab::bucket_of(12345));
    CHECK(stats::bucket_of(12345) == vocab::bucket_of(12345));
    // The shipped policy decides alike at both ends of every bucket (what makes a per-bucket cache exact).
    const policy::LoadResult loaded = policy::load_policy(Config{}, nullptr, "", "mpich");
    for (uint32_t b = 0; b < vocab::kBucketCount; ++b)
        for (uint32_t ppn : {1u, 2u, 8u})
            for (uint32_t nodes : {1u, 4u}) {
                policy::CallFacts lo, hi;
                lo.bytes = vocab::bucket_floor(b);
                hi.bytes = vocab::bucket_ceiling(b);
                lo.ppn = hi.ppn = ppn;
                lo.nodes = hi.nodes = nodes;
                lo.comm_size = hi.comm_size = ppn * nodes;
                lo.dclass = hi.dclass = vocab::DtypeClass::floating;
                CHECK(loaded.policy->decide(lo).rule == loaded.policy->decide(hi).rule);
            }
}

// ---- the finalize report's field lists ---------------------------------------------------------------------------

namespace {

// A finalized cell (Cell::estimated) of which every call was timed.
stats::Cell cell(uint64_t calls, uint64_t bytes, double seconds, double min, double max) {
    stats::Cell c;
    c.calls = calls;
    c.bytes = bytes;
    c.samples = calls;
    c.exact = calls;
    c.seconds = seconds;
    c.min_seconds = min;
    c.max_seconds = max;
    return c;
}

}  // namespace

TEST_CASE("Report fields pack, reduce and unpack to the aggregate over ranks", "[stats][report]") {
    // Three ranks; the second has no calls in the cell (a row of a sub-communicator).
    stats::Cell cells[3] = {cell(10, 1000, 2.0, 0.1, 0.5), cell(0, 0, 0, 0, 0), cell(30, 3000, 6.0, 0.05, 0.9)};
    cells[0].variance = 0.04;  // sampled estimates: their variances add up over ranks
    cells[2].variance = 0.05;
    cells[2].samples = 12;
    stats::Counts counts[3];
    for (int r = 0; r < 3; ++r) {
        counts[r].reasons[static_cast<std::size_t>(vocab::Reason::user_op)] = 1 + r;
        counts[r].paused = 5;
        counts[r].sharp[static_cast<std::size_t>(sharp::Counter::sat)] = 100;
    }
    const double walls[3] = {10.0, 12.0, 11.0};

    std::vector<stats::Arrays> ranks(3);
    for (int r = 0; r < 3; ++r) {
        stats::Agg::of_rank(cells[r]).pack(ranks[r]);
        stats::Agg::of_rank(stats::Cell{}).pack(ranks[r]);  // a cell no rank has
        counts[r].pack(ranks[r]);
        stats::Spread{}.pack(walls[r], ranks[r]);
    }
    stats::Arrays total = ranks[0];
    stats::combine(total, ranks[1]);
    stats::combine(total, ranks[2]);

    stats::Cursor cursor(total);
    const stats::Agg a = stats::Agg::unpack(cursor);
    CHECK(a.calls == 40);
    CHECK(a.bytes == 4000);
    CHECK(a.ranks == 2);  // the rank without calls does not count, nor dilute the per-rank figures
    CHECK(a.seconds == Approx(8.0));
    CHECK(a.samples == 22);
    CHECK(a.variance == Approx(0.09));
    CHECK(a.call_min == Approx(0.05));
    CHECK(a.call_max == Approx(0.9));
    CHECK(a.rank_calls_min == Approx(10));
    CHECK(a.rank_calls_max == Approx(30));
    CHECK(a.rank_seconds_min == Approx(2.0));
    CHECK(a.rank_seconds_max == Approx(6.0));

    const stats::Agg none = stats::Agg::unpack(cursor);
    CHECK(none.calls == 0);
    CHECK(none.ranks == 0);
    CHECK(none.call_min == 0);  // neutral elements read as 0
    CHECK(none.rank_seconds_max == 0);

    const stats::Counts c = stats::Counts::unpack(cursor);
    CHECK(c.reasons[static_cast<std::size_t>(vocab::Reason::user_op)] == 6);
    CHECK(c.paused == 15);
    CHECK(c.sharp[static_cast<std::size_t>(sharp::Counter::sat)] == 300);

    const stats::Spread wall = stats::Spread::unpack(cursor, 3);
    CHECK(wall.min == 10.0);
    CHECK(wall.max == 12.0);
    CHECK(wall.avg == Approx(11.0));
    CHECK(cursor.at_end());  // packing and unpacking read the same layout
}

TEST_CASE("Every report field has a JSON key, and one rank's report is its own cell", "[stats][report]") {
    std::vector<std::string> keys;
    stats::Agg::for_each_field([&](auto, stats::Reduce, const char* key, stats::Unit) { keys.push_back(key); });
    std::vector<std::string> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
    CHECK(keys.size() == 12);

    const stats::Agg mine = stats::Agg::of(cell(3, 30, 0.3, 0.05, 0.2));
    CHECK(mine.ranks == 1);
    CHECK(mine.call_min == 0.05);
    CHECK(mine.rank_calls_max == 3);
    const stats::Agg empty = stats::Agg::of(stats::Cell{});
    CHECK(empty.ranks == 0);
    CHECK(empty.call_min == 0);

    std::size_t counters = 0;
    stats::Counts all;
    stats::Counts::for_each_field(all, [&](uint64_t&, const char* section, const char* key) {
        CHECK(std::string(key) != "?");
        CHECK((std::string(section) == "reasons" || std::string(section) == "totals" ||
               std::string(section) == "sharp" || std::string(section) == "library_bugs" ||
               std::string(section) == "verify" || std::string(section) == "argument_check" ||
               std::string(section) == "tuning"));
        ++counters;
    });
    // reasons, 3 totals, SHARP counters, library bugs, 5 verify mode, 2 argument check and 4 tuning counters
    CHECK(counters == vocab::kReasonCount + 3 + stats::kSharpCounters + arshim::bugs::kMaxEntries + 5 + 2 + 4);
}

TEST_CASE("a communicator's layout from its members' node ids", "[layout]") {
    using arshim::layout_from_node_ids;
    SECTION("two nodes, interleaved, numbered by their lowest rank") {
        const std::vector<int> ids{7, 7, 3, 3, 3, 7};
        const auto l = layout_from_node_ids(ids, 3);
        CHECK(l.node_of_rank == std::vector<int>{0, 0, 1, 1, 1, 0});
        CHECK(l.node_sizes == std::vector<int>{3, 3});
        CHECK(l.node_index == 1);
        CHECK(l.node_count == 2);
        CHECK(l.node_rank == 1);
        CHECK(l.node_size == 3);
        CHECK(l.ppn_uniform);
        CHECK_FALSE(l.nodes_contiguous);
        const auto last = layout_from_node_ids(ids, 5);
        CHECK(last.node_index == 0);
        CHECK(last.node_rank == 2);
    }
    SECTION("uneven and contiguous") {
        const std::vector<int> ids{0, 0, 0, 4, 5, 5};
        const auto l = layout_from_node_ids(ids, 4);
        CHECK(l.node_of_rank == std::vector<int>{0, 0, 0, 1, 2, 2});
        CHECK(l.node_count == 3);
        CHECK(l.ppn_min == 1);
        CHECK(l.ppn_max == 3);
        CHECK_FALSE(l.ppn_uniform);
        CHECK(l.nodes_contiguous);
        CHECK(l.node_rank == 0);
        CHECK(l.node_size == 2);
    }
    SECTION("one rank") {
        const auto l = layout_from_node_ids({42}, 0);
        CHECK(l.node_count == 1);
        CHECK(l.node_size == 1);
        CHECK(l.ppn_max == 1);
    }
}

TEST_CASE("memory sized for a call holds its whole bucket", "[layout]") {
    using arshim::vocab::bucket_of;
    using arshim::vocab::bucket_room;
    for (uint64_t bytes : {1ull, 2ull, 3ull, 4096ull, 4097ull, 8191ull, (1ull << 40) + 5}) {
        const uint64_t ceiling = arshim::vocab::bucket_ceiling(bucket_of(bytes));
        CHECK(bucket_room(bytes) > ceiling);
        CHECK(bucket_room(bytes) <= 2 * bytes);
    }
    CHECK(bucket_room(0) == 0);
    CHECK(bucket_room(~0ull) == ~0ull);
}
