// The shim with the test hooks of test/verify/kernel_fault.cpp linked in (a wrong SUM kernel on purpose, node shared
// memory that cannot be made, tuning timings skewed), on the fake MPI (test/fake_mpi): verify mode must count the
// wrong sums and accept a legitimate reassociation, paths must decline without node memory, online tuning must
// decide alike on ranks that time differently. Results against the test's own arithmetic; counts from the log.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fake_mpi_checks.h"
#include "fake_mpi_test.h"

namespace {

using nlohmann::json;

json read_log(const std::string& path) { return json::parse(read_file(path)); }

// n int32 sums through the shim; returns how many elements differ from the test's sum (the fault's count).
std::size_t wrong_int_sums(fake_mpi::Checks& c, std::size_t n) {
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> in(n), out(n);
    for (std::size_t i = 0; i < n; ++i) in[i] = rank * 100 + static_cast<int>(i % 100);
    c.equal(MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS,
            "return code");
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
        int want = 0;
        for (int r = 0; r < size; ++r) want += r * 100 + static_cast<int>(i % 100);
        wrong += out[i] != want;
    }
    return wrong;
}

}  // namespace

TEST_CASE("fake MPI, faulty kernels: verify mode counts every wrong sum and accepts a reassociation",
          "[fake-mpi][faults]") {
    const std::string dir = temp_dir();
    for (const char* fault : {"off-by-one", "reverse"}) {
        const std::string mode = fault;
        run_world(4, {{"ARSHIMTEST_KERNEL_FAULT", fault}, {"ARSHIM_VERIFY", "3"}, {"ARSHIM_PATH", "multileader"},
                      {"ARSHIM_STATS", dir + "/" + mode + ".json"}, {"ARSHIM_LOG", "error"}},
                  [&](int, fake_mpi::Checks& c) {
                      MPI_Init(nullptr, nullptr);
                      for (int i = 0; i < 4; ++i) {
                          // Verify never changes a result: the off-by-one kernel's wrong elements stay (one in the
                          // middle of each piece the kernel reduced); a reversed order sums integers exactly.
                          const std::size_t wrong = wrong_int_sums(c, 4001);
                          if (mode == "off-by-one") c.check(wrong > 0, mode + ": no wrong element");
                          else c.equal(wrong, std::size_t{0}, mode + ": wrong elements");
                      }
                      MPI_Finalize();
                  });
    }
    const json wrong = read_log(dir + "/off-by-one.json").at("verify");
    CHECK(wrong.at("calls") == 4 * 3);  // ARSHIM_VERIFY=3: the key's first three calls, on 4 ranks
    CHECK(wrong.at("mismatches") == 4 * 3);  // every call compared was wrong
    const json reassociated = read_log(dir + "/reverse.json").at("verify");
    CHECK(reassociated.at("calls").get<long long>() > 0);
    CHECK(reassociated.at("mismatches").get<long long>() == 0);
    remove_dir(dir);
}

TEST_CASE("fake MPI, faults: without a node shared-memory window the multileader path declines and the library sums",
          "[fake-mpi][faults]") {
    for (const char* path : {"multileader"})
        run_world(4, {{"ARSHIMTEST_KERNEL_FAULT", "none"}, {"ARSHIMTEST_FAIL_SHM", "1"}, {"ARSHIM_PATH", path},
                      {"ARSHIM_LOG", "error"}},
                  [&](int, fake_mpi::Checks& c) {
                      MPI_Init(nullptr, nullptr);
                      c.equal(wrong_int_sums(c, 100), std::size_t{0}, "wrong elements");
                      c.equal(wrong_int_sums(c, 5000), std::size_t{0}, "wrong elements");
                      c.check(arshim_reason_calls("shm_unavailable") > 0,
                              std::string(path) + ": calls declined for node shared memory");
                      MPI_Finalize();
                  });
}

TEST_CASE("fake MPI, faults: online tuning decides alike when one rank times the library 100x faster",
          "[fake-mpi][faults]") {
    const std::string dir = temp_dir();
    for (const char* skew : {"ARSHIMTEST_TUNE_SKEW_RANK", "ARSHIMTEST_TUNE_SLOW_NATIVE"}) {
        run_world(4, {{"ARSHIMTEST_KERNEL_FAULT", "none"}, {skew, "1"}, {"ARSHIM_TUNE", "online"},
                      {"ARSHIM_TUNE_AFTER", "1"}, {"ARSHIM_STATS", dir + "/stats.json"}, {"ARSHIM_VIRTUAL_PPN", "2"}},
                  [](int, fake_mpi::Checks& c) {
                      MPI_Init(nullptr, nullptr);
                      for (int i = 0; i < 40; ++i) c.equal(wrong_int_sums(c, 16384), std::size_t{0}, "wrong elements");
                      MPI_Finalize();
                  }, 120);
        const json tuning = read_log(dir + "/stats.json").at("tuning");
        CHECK(tuning.at("decisions").get<long long>() > 0);
    }
    remove_dir(dir);
}
