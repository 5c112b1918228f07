// Every path of the shim on the fake MPI (test/fake_mpi), forced with ARSHIM_PATH, on one node and on several virtual
// nodes (ARSHIM_VIRTUAL_PPN), at sizes below and above the paths' limits; every result against the test's own fold,
// and the calls each path served as the shim counts them (arshim_path_calls).
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fake_mpi_checks.h"
#include "fake_mpi_test.h"

namespace {

using fake_checks::check_many;
using fake_checks::check_op;

// The calls of check_many at a few sizes on the world, the first size in place too.
void exercise(fake_mpi::Checks& c, std::initializer_list<std::size_t> sizes) {
    bool first = true;
    for (std::size_t n : sizes) {
        check_many(c, MPI_COMM_WORLD, n);
        if (first) check_many(c, MPI_COMM_WORLD, n, /*in_place=*/true);
        first = false;
    }
}

long long served_by(const char* path) { return arshim_path_calls(path); }

struct Layout {
    int ranks;
    const char* virtual_ppn;  // "" = every rank on one node
};

void forced(const char* path, Layout layout, std::initializer_list<std::size_t> sizes,
            std::map<std::string, std::string> more = {}) {
    std::map<std::string, std::string> env = {{"ARSHIM_PATH", path}, {"ARSHIM_SPIN_US", "0"}};
    if (*layout.virtual_ppn != '\0') env["ARSHIM_VIRTUAL_PPN"] = layout.virtual_ppn;
    for (const auto& [k, v] : more) env[k] = v;
    const std::string name = path;
    run_world(layout.ranks, env, [&](int, fake_mpi::Checks& c) {
        c.equal(MPI_Init(nullptr, nullptr), MPI_SUCCESS, "MPI_Init");
        exercise(c, sizes);
        c.check(served_by(name.c_str()) > 0, name + " served no call (native " +
                                                 std::to_string(served_by("native")) + ")");
        MPI_Finalize();
    });
}

}  // namespace

TEST_CASE("fake MPI: the pipelined path", "[fake-mpi][paths]") {
    forced("pipelined", {4, ""}, {8000, 1}, {{"ARSHIM_SEGMENT_BYTES", "4096"}, {"ARSHIM_WINDOW", "3"}});
    forced("pipelined", {3, ""}, {5000});
}

TEST_CASE("fake MPI: the multileader path, one node and 2 x 2", "[fake-mpi][paths]") {
    forced("multileader", {4, ""}, {12000});
    forced("multileader", {4, "2"}, {12000, 3}, {{"ARSHIM_LEADERS", "2"}, {"ARSHIM_PIPELINE_K", "2"}});
    forced("multileader", {4, "1"}, {12000}, {{"ARSHIM_INTERNODE", "ring"}});
    forced("multileader", {3, "2"}, {1000});  // nodes of 2 and 1: ppn not uniform
}

TEST_CASE("fake MPI: the latency path, one node, 2 x 2, 3 x 2 and 5 x 1", "[fake-mpi][paths]") {
    forced("latency", {4, ""}, {7, 1, 100});
    forced("latency", {4, "2"}, {7, 100});
    // ARShim's recursive doubling among the nodes' rank 0s: 3 nodes (one folded in and out), and one rank per node
    // on 5 (no node window), on 2 the library's allreduce forced
    forced("latency", {6, "2"}, {7, 100});
    forced("latency", {5, "1"}, {7, 1, 100});
    forced("latency", {2, "1"}, {7, 100}, {{"ARSHIM_INTERNODE", "library"}});
}

TEST_CASE("fake MPI: the reproducible path, one node, 2 x 2 and 3 + 1", "[fake-mpi][paths]") {
    forced("reproducible", {4, ""}, {100, 12000}, {{"ARSHIM_REPRODUCIBLE", "layout"}});
    forced("reproducible", {4, "2"}, {12000, 100}, {{"ARSHIM_REPRODUCIBLE", "any-np"}});
    forced("reproducible", {4, "3"}, {5000}, {{"ARSHIM_REPRODUCIBLE", "layout"}});
}

TEST_CASE("fake MPI: reproducible sums, rank order (layout) and the same bits on every layout (any-np)",
          "[fake-mpi][paths]") {
    // Doubles whose sum depends on the order of the additions.
    auto value = [](int rank, std::size_t i) { return (rank % 2 ? 1e16 : 1.0) + 0.1 * static_cast<double>(i + rank); };
    auto digest_of = [&](const char* mode, const char* ppn) {
        std::map<std::string, std::string> env = {{"ARSHIM_REPRODUCIBLE", mode}, {"ARSHIM_SPIN_US", "0"}};
        if (*ppn != '\0') env["ARSHIM_VIRTUAL_PPN"] = ppn;
        const std::string layout_mode = mode;
        const auto outcomes = fake_mpi::run(4, env, [&](int rank, fake_mpi::Checks& c) {
            MPI_Init(nullptr, nullptr);
            std::vector<double> in(3000), out(3000);
            for (std::size_t i = 0; i < in.size(); ++i) in[i] = value(rank, i);
            c.equal(MPI_Allreduce(in.data(), out.data(), 3000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS, "rc");
            if (layout_mode == "layout") {  // the left fold in rank order, as the test computes it
                std::size_t wrong = 0;
                for (std::size_t i = 0; i < in.size(); ++i) {
                    double acc = value(0, i);
                    for (int r = 1; r < 4; ++r) acc += value(r, i);
                    wrong += out[i] != acc;
                }
                c.equal(wrong, std::size_t{0}, "elements differing from the rank-order sum");
            }
            c.equal(arshim_path_calls("reproducible"), 1LL, "calls served by the reproducible path");
            uint64_t h = 1469598103934665603ull;
            for (double v : out) {
                uint64_t b;
                std::memcpy(&b, &v, sizeof b);
                h = (h ^ b) * 1099511628211ull;
            }
            c.note(std::to_string(h));
            MPI_Finalize();
        });
        INFO(fake_mpi::summary(outcomes));
        CHECK(fake_mpi::summary(outcomes).empty());
        for (const auto& o : outcomes) CHECK(o.notes == outcomes[0].notes);  // the same bits on every rank
        return outcomes[0].notes;
    };
    const std::string layout_one_node = digest_of("layout", "");
    CHECK(!layout_one_node.empty());
    CHECK(digest_of("layout", "2") == layout_one_node);
    const std::string any_np_one_node = digest_of("any-np", "");
    CHECK(digest_of("any-np", "2") == any_np_one_node);
    CHECK(digest_of("any-np", "1") == any_np_one_node);
}

TEST_CASE("fake MPI: the sharp path on the SHARP test double", "[fake-mpi][paths][sharp]") {
    const char* lib = std::getenv("FAKE_SHARP_LIB_PATH");
    REQUIRE(lib != nullptr);
    struct stat st {};
    INFO(std::string("the SHARP test double (test/sharp) is missing: ") + lib);
    REQUIRE(stat(lib, &st) == 0);
    const std::map<std::string, std::string> sharp = {{"ARSHIM_SHARP", "on"}, {"ARSHIM_SHARP_LIB", lib}};
    forced("sharp", {4, "2"}, {20000, 1}, sharp);
    forced("sharp", {3, "1"}, {100, 20000}, sharp);
    auto with = [&](std::map<std::string, std::string> more) {
        for (const auto& kv : sharp) more.insert(kv);
        return more;
    };
    forced("sharp", {4, "2"}, {100}, with({{"ARSHIM_SHARP_SAT_THRESHOLD", "0"}}));
    // Socket-level leaders: two emulated sockets per node (one node of 4, 2 nodes of 2), and the sockets this machine
    // has (shim/sharp/topology.cpp) on one real node.
    const std::string socket_policy = std::string(ARSHIM_SOURCE_ROOT) + "/test/sharp/socket.toml";
    forced("sharp", {4, "4"}, {100, 20000}, with({{"ARSHIM_POLICY", socket_policy}}));
    forced("sharp", {4, "2"}, {100}, with({{"ARSHIM_POLICY", socket_policy}}));
    // (Served or not as this machine's sockets allow: one socket holds every rank here, and the calls go native.)
    run_world(4, with({{"ARSHIM_POLICY", socket_policy}, {"ARSHIM_PATH", "sharp"}}), [](int, fake_mpi::Checks& c) {
        MPI_Init(nullptr, nullptr);
        exercise(c, {100});
        MPI_Finalize();
    });
    // Faults of the double: the calls then go to the library, and the sums stay right.
    for (const auto& fault : std::vector<std::map<std::string, std::string>>{
             {{"FAKE_SHARP_FAIL_ALLREDUCE_N", "5"}, {"FAKE_SHARP_FAIL_RANK", "1"}},
             {{"FAKE_SHARP_FAIL_INIT", "1"}},
             {{"FAKE_SHARP_NO_SAT", "1"}},
             {{"FAKE_SHARP_FAIL_REG", "1"}},
             {{"FAKE_SHARP_REFUSE_SAT_LOCK", "1"}}}) {
        std::map<std::string, std::string> env = with(fault);
        env["ARSHIM_PATH"] = "sharp";
        env["ARSHIM_VIRTUAL_PPN"] = "2";
        env["ARSHIM_LOG"] = "error";  // each fault's warning is expected
        run_world(4, env, [](int, fake_mpi::Checks& c) {
            MPI_Init(nullptr, nullptr);
            exercise(c, {20000});
            MPI_Finalize();
        });
    }
    // Not loadable: one warning, every call to the library.
    run_world(2, {{"ARSHIM_PATH", "sharp"}, {"ARSHIM_SHARP", "on"}, {"ARSHIM_SHARP_LIB", "/nonexistent/libsharp_coll.so"}},
              [](int, fake_mpi::Checks& c) {
                  MPI_Init(nullptr, nullptr);
                  exercise(c, {100});
                  c.equal(arshim_path_calls("sharp"), 0LL, "sharp calls without the library");
                  MPI_Finalize();
              });
}
