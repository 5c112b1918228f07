// The engine, the communicator contexts and the runtime on the fake MPI (test/fake_mpi): MPI_Init and MPI_Allreduce
// through the shim's entry points on a world of forked ranks, every result checked against sums the test computes.
#include <cmath>
#include <cstdint>
#include <vector>

#include "fake_mpi_test.h"

namespace {

// Rank r's element i: exact in every type used here.
double value(int rank, std::size_t i) { return static_cast<double>(rank * 1000 + static_cast<int>(i % 997)); }
double sum_over(int ranks, std::size_t i) {
    double s = 0;
    for (int r = 0; r < ranks; ++r) s += value(r, i);
    return s;
}

// Allreduce of `n` doubles (sum) on `comm`, checked against the test's own sum.
void check_double_sum(fake_mpi::Checks& c, MPI_Comm comm, std::size_t n, bool in_place, const std::string& what) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    std::vector<double> in(n), out(n, -1.0);
    for (std::size_t i = 0; i < n; ++i) in[i] = value(rank, i);
    int rc;
    if (in_place) {
        out = in;
        rc = MPI_Allreduce(MPI_IN_PLACE, out.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm);
    } else {
        rc = MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm);
    }
    c.equal(rc, MPI_SUCCESS, what + ": return code");
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += out[i] != sum_over(size, i);
    c.equal(wrong, std::size_t{0}, what + ": wrong elements of " + std::to_string(n));
    if (!in_place)
        for (std::size_t i = 0; i < n; ++i)
            if (in[i] != value(rank, i)) {
                c.check(false, what + ": sendbuf written");
                break;
            }
}

}  // namespace

TEST_CASE("fake MPI: sums through the shim's MPI_Allreduce on 4 ranks, default policy", "[fake-mpi][engine]") {
    run_world(4, {}, [](int rank, fake_mpi::Checks& c) {
        c.equal(MPI_Init(nullptr, nullptr), MPI_SUCCESS, "MPI_Init");
        for (std::size_t n : {1u, 3u, 8u, 100u, 1000u, 5000u, 70000u})
            for (bool in_place : {false, true})
                for (int repeat = 0; repeat < 3; ++repeat)
                    check_double_sum(c, MPI_COMM_WORLD, n, in_place,
                                     std::to_string(n) + (in_place ? " in place" : "") + " #" + std::to_string(repeat));
        c.check(std::string(arshim_mpi_flavor()) == "mpich", "flavor");
        c.check(arshim_startup_seconds("total") >= 0, "startup seconds");
        long long served = 0;
        for (const char* path : {"pipelined", "multileader", "reproducible", "latency", "sharp"})
            served += arshim_path_calls(path);
        c.check(served > 0, "some calls served by an ARShim path, native " + std::to_string(arshim_path_calls("native")));
        c.note("rank " + std::to_string(rank) + " native " + std::to_string(arshim_path_calls("native")));
        MPI_Finalize();
    });
}
