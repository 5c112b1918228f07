// The runtime, the communicator contexts and the modes on the fake MPI (test/fake_mpi): the ways a program starts
// MPI (C, Fortran, threads, not through ARShim at all), settings good and bad, a policy file, communicators made and
// freed, the argument check finding ranks that disagree, online tuning and its cache. Results against the test's own
// sums; what the shim decided from its query API and its statistics log.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fake_mpi_checks.h"
#include "fake_mpi_test.h"

namespace {

using fake_checks::check_many;
using nlohmann::json;


void sum_check(fake_mpi::Checks& c, MPI_Comm comm, std::size_t n, const std::string& what) {
    fake_checks::check_op<double>(c, comm, MPI_DOUBLE, MPI_SUM, n,
                                  [](int r, std::size_t i) { return r * 3.0 + static_cast<double>(i % 100); },
                                  [](double a, double b) { return a + b; }, what);
}

long long served() {
    long long n = 0;
    for (const char* path : {"pipelined", "multileader", "reproducible", "latency", "sharp"}) n += arshim_path_calls(path);
    return n;
}

}  // namespace

TEST_CASE("fake MPI: MPI_Init_thread, the Fortran f08 init and the large-count entry point", "[fake-mpi][runtime]") {
    run_world(2, {}, [](int rank, fake_mpi::Checks& c) {
        int provided = -1;
        c.equal(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), MPI_SUCCESS, "MPI_Init_thread");
        c.equal(provided, MPI_THREAD_FUNNELED, "provided");
        check_many(c, MPI_COMM_WORLD, 33);
        std::vector<long long> in(1000, rank + 1), out(1000, 0);
        c.equal(MPI_Allreduce_c(in.data(), out.data(), MPI_Count{1000}, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD),
                MPI_SUCCESS, "MPI_Allreduce_c");
        c.equal(out[999], 3LL, "MPI_Allreduce_c sum");
        c.equal(MPI_Allreduce(in.data(), out.data(), 0, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS, "count 0");
        c.equal(arshim_reason_calls("zero_count"), 1LL, "zero-count calls");
        sum_check(c, MPI_COMM_SELF, 10, "MPI_COMM_SELF");
        c.equal(arshim_reason_calls("single_rank"), 1LL, "single-rank calls");
        c.equal(arshim_path_calls("no such path"), -1LL, "unknown path name");
        c.equal(arshim_reason_calls("no such reason"), -1LL, "unknown reason name");
        c.equal(arshim_sharp_calls("no such counter"), -1LL, "unknown sharp counter");
        c.check(std::string(arshim_version()).size() > 0, "version");
        MPI_Finalize();
    });
    run_world(2, {}, [](int, fake_mpi::Checks& c) {
        MPI_Fint ierr = -1;
        mpi_init_f08_(&ierr);
        c.equal(ierr, MPI_Fint{MPI_SUCCESS}, "mpi_init_f08 ierror");
        sum_check(c, MPI_COMM_WORLD, 500, "after the Fortran init");
        c.check(arshim_startup_seconds("check") >= 0, "start-up check time");
        c.check(arshim_startup_seconds("nodes") >= 0, "node map time");
        c.equal(arshim_startup_seconds("other"), -1.0, "unknown stage");
        MPI_Finalize();
    });
    run_world(2, {}, [](int, fake_mpi::Checks& c) {
        MPI_Fint required = MPI_THREAD_SERIALIZED, provided = -1, ierr = -1;
        mpi_init_thread_f08_(&required, &provided, &ierr);
        c.equal(ierr, MPI_Fint{MPI_SUCCESS}, "mpi_init_thread_f08 ierror");
        c.equal(provided, MPI_Fint{MPI_THREAD_SERIALIZED}, "mpi_init_thread_f08 provided");
        sum_check(c, MPI_COMM_WORLD, 500, "after the Fortran init_thread");
        MPI_Finalize();
    });
}

TEST_CASE("fake MPI: MPI initialized without ARShim's MPI_Init: settings read by each rank, agreed per communicator",
          "[fake-mpi][runtime]") {
    run_world(4, {{"ARSHIM_LOG", "info"}}, [](int rank, fake_mpi::Checks& c) {
        PMPI_Init(nullptr, nullptr);  // the program's MPI_Init not intercepted
        if (rank == 0) setenv("ARSHIM_SEGMENTS", "4", 1);  // ranks that read different settings
        if (rank == 1) setenv("ARSHIM_PATH", "nonsense", 1);
        check_many(c, MPI_COMM_WORLD, 200);
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank / 2, -rank, &half);
        for (int i = 0; i < 10; ++i) sum_check(c, half, 3000, "half");
        MPI_Comm_free(&half);
        MPI_Finalize();
    });
}

TEST_CASE("fake MPI: ARShim disabled, and ranks without ARShim", "[fake-mpi][runtime]") {
    run_world(3, {{"ARSHIM_DISABLE", "1"}}, [](int, fake_mpi::Checks& c) {
        MPI_Init(nullptr, nullptr);
        check_many(c, MPI_COMM_WORLD, 100);
        c.equal(served(), 0LL, "calls served while disabled");
        MPI_Finalize();
    });
    // Rank 2 starts MPI without ARShim (a partial preload): the start-up check finds it, and ARShim stays out of the
    // way on every rank; rank 0 still writes its log, saying which rank lacked ARShim.
    const std::string dir = temp_dir();
    run_world(3, {{"ARSHIM_INIT_TIMEOUT", "1"}, {"ARSHIM_STATS", dir + "/stats.json"}}, [](int rank, fake_mpi::Checks& c) {
        if (rank == 2) PMPI_Init(nullptr, nullptr);
        else MPI_Init(nullptr, nullptr);
        std::vector<int> in(10, rank), out(10);
        if (rank == 2) PMPI_Allreduce(in.data(), out.data(), 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        else MPI_Allreduce(in.data(), out.data(), 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        c.equal(out[9], 0 + 1 + 2, "sum");
        if (rank != 2) c.equal(served(), 0LL, "calls served with a rank lacking ARShim");
        MPI_Finalize();
    }, 90);
    const json log = json::parse(read_file(dir + "/stats.json"));
    const json& check = log.at("run").at("startup_check");
    CHECK(check.at("checked") == true);
    CHECK(check.at("all_loaded") == false);
    CHECK(check.at("ranks_without_arshim") == json::array({2}));
    remove_dir(dir);
}

TEST_CASE("fake MPI: bad settings are one warning and the built-in setting; under ARSHIM_STRICT=1 the job aborts",
          "[fake-mpi][runtime]") {
    const std::map<std::string, std::string> bad = {{"ARSHIM_PATH", "fastest"}, {"ARSHIM_SEGMENTS", "-3"},
                                                    {"ARSHIM_KERNEL", "mmx"}, {"ARSHIM_POLICY", "/nonexistent.toml"},
                                                    {"ARSHIM_LOG", "info"}};
    run_world(2, bad, [](int, fake_mpi::Checks& c) {
        MPI_Init(nullptr, nullptr);
        check_many(c, MPI_COMM_WORLD, 100);
        MPI_Finalize();
    });
    auto strict = bad;
    strict["ARSHIM_STRICT"] = "1";
    const auto outcomes = fake_mpi::run(2, strict, [](int, fake_mpi::Checks& c) {
        MPI_Init(nullptr, nullptr);
        c.check(false, "MPI_Init returned under ARSHIM_STRICT=1 with bad settings");
        MPI_Finalize();
    });
    for (const fake_mpi::Outcome& o : outcomes) {
        INFO(o.failures);
        CHECK(o.exit_status != 0);
        CHECK(o.failures.find("MPI_Abort") != std::string::npos);
        CHECK(o.failures.find("returned") == std::string::npos);
    }
}

TEST_CASE("fake MPI: a policy file routes calls; replace and prepend", "[fake-mpi][runtime]") {
    const std::string dir = temp_dir();
    write_file(dir + "/policy.toml",
               "version = 1\n\n[[rule]]\nname = \"small: pipelined\"\nbytes = \"..64K\"\npath = \"pipelined\"\n"
               "segments = 2\n\n[[rule]]\nname = \"the rest: library\"\npath = \"native\"\n");
    for (const char* mode : {"replace", "prepend"}) {
        run_world(4, {{"ARSHIM_POLICY", dir + "/policy.toml"}, {"ARSHIM_POLICY_MODE", mode}, {"ARSHIM_TUNE", "off"}},
                  [](int, fake_mpi::Checks& c) {
                      MPI_Init(nullptr, nullptr);
                      sum_check(c, MPI_COMM_WORLD, 1000, "8000 B");
                      c.equal(arshim_path_calls("pipelined"), 1LL, "pipelined calls by the file's rule");
                      MPI_Finalize();
                  });
    }
    write_file(dir + "/broken.toml", "version = 1\n[[rule]\npath = \"pipelined\"\n");
    run_world(2, {{"ARSHIM_POLICY", dir + "/broken.toml"}}, [](int, fake_mpi::Checks& c) {
        MPI_Init(nullptr, nullptr);
        sum_check(c, MPI_COMM_WORLD, 1000, "with a broken policy file");
        MPI_Finalize();
    });
    remove_dir(dir);
}

TEST_CASE("fake MPI: communicators made, used, duplicated and freed; contexts warm at ARSHIM_CONTEXT_AFTER",
          "[fake-mpi][runtime]") {
    run_world(4, {{"ARSHIM_CONTEXT_AFTER", "2"}, {"ARSHIM_MAX_COMMS", "2"}}, [](int rank, fake_mpi::Checks& c) {
        MPI_Init(nullptr, nullptr);
        for (int round = 0; round < 3; ++round) {  // freed handles come back for new communicators
            MPI_Comm odd_even, dup, pair;
            MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &odd_even);
            MPI_Comm_dup(MPI_COMM_WORLD, &dup);
            MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
            for (int i = 0; i < 3; ++i) {
                sum_check(c, odd_even, 100, "odd/even");
                sum_check(c, dup, 5000, "dup");
                sum_check(c, pair, 20000, "pair");
            }
            MPI_Comm_free(&pair);
            MPI_Comm_free(&dup);
            MPI_Comm_free(&odd_even);
        }
        c.check(arshim_reason_calls("cold_communicator") > 0, "cold calls counted");
        c.check(arshim_reason_calls("comm_limit") > 0, "calls beyond ARSHIM_MAX_COMMS counted");
        MPI_Finalize();
    });
}

TEST_CASE("fake MPI: the argument check finds ranks that passed different arguments", "[fake-mpi][modes]") {
    run_world(3, {{"ARSHIM_CHECK_ARGS", "1"}}, [](int rank, fake_mpi::Checks& c) {
        MPI_Init(nullptr, nullptr);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        std::vector<double> in(100, 1.0), out(100);
        check_many(c, MPI_COMM_WORLD, 50);  // agreeing ranks: no mismatch
        c.check(MPI_Allreduce(in.data(), out.data(), rank == 1 ? 99 : 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) ==
                    MPI_ERR_ARG, "different counts: MPI_ERR_ARG");
        c.check(MPI_Allreduce(in.data(), out.data(), 100, MPI_DOUBLE, rank == 2 ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD) ==
                    MPI_ERR_ARG, "different ops: MPI_ERR_ARG");
        c.check(MPI_Allreduce(in.data(), out.data(), rank == 0 ? 50 : 100, rank == 0 ? MPI_LONG_DOUBLE : MPI_DOUBLE,
                              MPI_SUM, MPI_COMM_WORLD) == MPI_ERR_ARG, "different datatypes: MPI_ERR_ARG");
        out = in;
        c.check(MPI_Allreduce(rank == 0 ? MPI_IN_PLACE : in.data(), out.data(), 100, MPI_DOUBLE, MPI_SUM,
                              MPI_COMM_WORLD) == MPI_ERR_ARG, "MPI_IN_PLACE on one rank: MPI_ERR_ARG");
        MPI_Datatype two, vec;  // the same signature from different constructors: no mismatch
        MPI_Type_contiguous(2, MPI_DOUBLE, &two);
        MPI_Type_vector(2, 1, 1, MPI_DOUBLE, &vec);
        c.equal(MPI_Allreduce(in.data(), out.data(), 50, rank == 0 ? vec : two, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS,
                "equal signatures");
        MPI_Type_free(&vec);
        MPI_Type_free(&two);
        sum_check(c, MPI_COMM_WORLD, 100, "after the mismatches");
        MPI_Finalize();
    });
}

TEST_CASE("fake MPI: online tuning decides from the ranks' agreed timings and keeps what it learned in its cache",
          "[fake-mpi][modes]") {
    const std::string dir = temp_dir();
    const std::map<std::string, std::string> env = {{"ARSHIM_TUNE", "online"}, {"ARSHIM_TUNE_AFTER", "1"},
                                                    {"ARSHIM_TUNE_CACHE", dir + "/cache.toml"},
                                                    {"ARSHIM_STATS", dir + "/stats.json"}, {"ARSHIM_VIRTUAL_PPN", "2"}};
    auto body = [](int, fake_mpi::Checks& c) {
        MPI_Init(nullptr, nullptr);
        for (int i = 0; i < 40; ++i) sum_check(c, MPI_COMM_WORLD, 8192, "64 KiB");
        for (int i = 0; i < 40; ++i) sum_check(c, MPI_COMM_WORLD, 16, "128 B");
        MPI_Finalize();
    };
    run_world(4, env, body, 120);
    const json log = json::parse(read_file(dir + "/stats.json"));
    CHECK(log.at("tuning").at("mode") == "online");
    CHECK(log.at("tuning").at("exploration_calls").get<long long>() > 0);
    CHECK(log.at("tuning").at("decisions").get<long long>() > 0);
    const std::string cache = read_file(dir + "/cache.toml");
    CHECK(cache.find("[[rule]]") != std::string::npos);
    // The next run starts from the cache.
    run_world(4, env, body, 120);
    const json again = json::parse(read_file(dir + "/stats.json"));
    CHECK(again.at("run").at("policy_source").get<std::string>().find("tuning cache") != std::string::npos);
    // guard: the policy's path against the library, the faster kept.
    run_world(2, {{"ARSHIM_TUNE", "guard"}, {"ARSHIM_TUNE_AFTER", "1"}, {"ARSHIM_PATH", "pipelined"}},
              [](int, fake_mpi::Checks& c) {
                  MPI_Init(nullptr, nullptr);
                  for (int i = 0; i < 30; ++i) sum_check(c, MPI_COMM_WORLD, 20000, "160 KB");
                  MPI_Finalize();
              });
    remove_dir(dir);
}
