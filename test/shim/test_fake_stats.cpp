// The statistics on the fake MPI (test/fake_mpi): counters, call sites, the finalize report, the JSON log and the
// trace, written by a world of forked ranks and read back here. Every count in the log is checked against the calls
// the test made; verify mode and the argument check run beside (their counts are in the same log).
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fake_mpi_checks.h"
#include "fake_mpi_test.h"

namespace {

using nlohmann::json;


long long calls_of(const json& array) {
    long long n = 0;
    for (const json& item : array) n += item.at("calls").get<long long>();
    return n;
}

// check_many's calls: 19 per size, of which the unsigned MIN/MAX (3) hit MPICH 4.0.2's known bug.
constexpr int kCallsPerCheck = 19;
constexpr int kUnsignedMinMaxPerCheck = 3;

}  // namespace

TEST_CASE("fake MPI: the statistics log, call sites, verify, the argument check and the trace", "[fake-mpi][stats]") {
    const std::string dir = temp_dir();
    const int ranks = 4, checks = 3, paused_checks = 1;
    run_world(ranks,
              {{"ARSHIM_STATS", dir + "/stats.json"}, {"ARSHIM_STATS_CALLSITES", "1"}, {"ARSHIM_STATS_SUMMARY", "1"},
               {"ARSHIM_STATS_PER_RANK", "1"}, {"ARSHIM_TRACE", dir + "/trace.%r.jsonl"}, {"ARSHIM_VERIFY", "2"},
               {"ARSHIM_CHECK_ARGS", "1"}, {"ARSHIM_PHASE_TIMES", "1"}},
              [&](int, fake_mpi::Checks& c) {
                  MPI_Init(nullptr, nullptr);
                  for (int i = 0; i < checks; ++i) fake_checks::check_many(c, MPI_COMM_WORLD, 100);
                  MPI_Pcontrol(0);
                  for (int i = 0; i < paused_checks; ++i) fake_checks::check_many(c, MPI_COMM_WORLD, 10);
                  MPI_Pcontrol(1);
                  c.equal(arshim_stats_set_timed(1), 1, "calls were timed");
                  c.equal(arshim_stats_set_callsites(1), 1, "call sites were recorded");
                  c.equal(arshim_stats_set_sample(0), -1, "a sampling period of 0 is refused");
                  MPI_Finalize();
              });
    const json log = json::parse(read_file(dir + "/stats.json"));
    CHECK(log.at("schema") == "arshim-stats/1");
    CHECK(log.at("scope") == "job");
    CHECK(log.at("run").at("np") == ranks);
    CHECK(log.at("run").at("nodes") == 1);
    CHECK(log.at("run").at("mpi").at("flavor") == "mpich");
    CHECK(log.at("run").at("mpi").at("version") == "MPICH 4.0.2");
    CHECK(log.at("run").at("settings").at("ARSHIM_VERIFY").at("value") == "2");
    const long long counted = ranks * checks * kCallsPerCheck;
    const long long paused = ranks * paused_checks * kCallsPerCheck;
    CHECK(log.at("totals").at("calls") == counted);
    CHECK(log.at("totals").at("paused_calls") == paused);
    CHECK(log.at("totals").at("ranks") == ranks);
    CHECK(calls_of(log.at("paths")) == counted);
    CHECK(calls_of(log.at("rows")) == counted);
    CHECK(calls_of(log.at("buckets")) == counted);
    CHECK(calls_of(log.at("communicators")) == counted);
    CHECK(log.at("communicators").at(0).at("label") == "world");
    CHECK(log.at("communicators").at(0).at("size") == ranks);
    // Every call: the argument check (paused calls too); the known MPICH bug on every unsigned MIN/MAX.
    CHECK(log.at("argument_check").at("calls") == counted + paused);
    CHECK(log.at("argument_check").at("mismatches").get<long long>() == 0);
    CHECK(log.at("library_bugs").at("mpich-6083-unsigned-minmax") ==
          ranks * (checks + paused_checks) * kUnsignedMinMaxPerCheck);
    CHECK(log.at("verify").at("enabled") == true);
    CHECK(log.at("verify").at("calls_per_key") == 2);
    CHECK(log.at("verify").at("calls").get<long long>() > 0);
    CHECK(log.at("verify").at("mismatches").get<long long>() == 0);
    // Call sites: this test's check_op, each a site with frames.
    const json& sites = log.at("callsites");
    CHECK(sites.at("enabled") == true);
    REQUIRE(!sites.at("sites").empty());
    CHECK(calls_of(sites.at("sites")) + sites.at("dropped_calls").get<long long>() == counted);
    bool found_check_op = false;
    for (const json& site : sites.at("sites"))
        for (const json& frame : site.at("frames"))
            found_check_op |= frame.at("function").get<std::string>().find("check_op") != std::string::npos;
    CHECK(found_check_op);
    // One file per rank too, each with that rank's calls.
    for (int r = 0; r < ranks; ++r) {
        std::string name = dir + "/stats.json." + std::to_string(r);
        if (access(name.c_str(), R_OK) != 0) name = dir + "/stats." + std::to_string(r) + ".json";
        INFO(name);
        const std::string text = read_file(name);
        if (text.empty()) continue;  // the per-rank file's name is checked by the MPI suite (docs/stats.md)
        const json mine = json::parse(text);
        CHECK(mine.at("scope") == "rank");
        CHECK(mine.at("totals").at("calls") == counted / ranks);
    }
    // The trace: a header line, then one JSON event a line; the end event has this rank's calls by path (those
    // counted: not the paused ones).
    for (int r = 0; r < ranks; ++r) {
        std::istringstream lines(read_file(dir + "/trace." + std::to_string(r) + ".jsonl"));
        std::string line;
        REQUIRE(std::getline(lines, line));
        const json header = json::parse(line);
        CHECK(header.at("trace") == "arshim-trace/1");
        CHECK(header.at("rank") == r);
        long long decisions = 0, end_calls = -1;
        while (std::getline(lines, line)) {
            const json event = json::parse(line);
            if (event.at("event") == "decision") ++decisions;
            if (event.at("event") == "end") {
                end_calls = 0;
                for (const auto& [path, n] : event.at("calls").items()) end_calls += n.get<long long>();
            }
        }
        CHECK(decisions > 0);
        CHECK(end_calls == counted / ranks);
    }
    remove_dir(dir);
}

TEST_CASE("fake MPI: the log's rows by communicator, datatype, op and the reasons calls went to the library",
          "[fake-mpi][stats]") {
    const std::string dir = temp_dir();
    run_world(4, {{"ARSHIM_STATS", dir + "/stats.json"}, {"ARSHIM_CONTEXT_AFTER", "3"}, {"ARSHIM_STATS_SAMPLE", "2"}},
              [](int rank, fake_mpi::Checks& c) {
                  MPI_Init(nullptr, nullptr);
                  // A derived datatype and a user-defined op: the library's, for a reason the log names.
                  MPI_Datatype pair;
                  MPI_Type_contiguous(2, MPI_INT, &pair);
                  MPI_Type_commit(&pair);
                  std::vector<int> in(20, rank + 1), out(20, 0);
                  c.equal(MPI_Allreduce(in.data(), out.data(), 10, pair, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS, "derived");
                  c.equal(out[19], 1 + 2 + 3 + 4, "derived sum");
                  MPI_Type_free(&pair);
                  MPI_Op op;
                  MPI_Op_create(fake_checks::user_sum, 1, &op);
                  c.equal(MPI_Allreduce(in.data(), out.data(), 20, MPI_INT, op, MPI_COMM_WORLD), MPI_SUCCESS, "user op");
                  c.equal(out[0], 10, "user op sum");
                  MPI_Op_free(&op);
                  // A communicator of two: its first calls go to the library (cold), then it is served.
                  MPI_Comm half;
                  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
                  for (int i = 0; i < 6; ++i)
                      fake_checks::check_op<double>(c, half, MPI_DOUBLE, MPI_SUM, 64,
                                                    [](int r, std::size_t j) { return r + 0.25 * static_cast<double>(j); },
                                                    [](double a, double b) { return a + b; }, "half sum");
                  MPI_Comm_free(&half);
                  MPI_Finalize();
              });
    const json log = json::parse(read_file(dir + "/stats.json"));
    CHECK(log.at("totals").at("calls") == 4 * (2 + 6));
    std::map<std::string, long long> reasons;
    for (const json& row : log.at("rows"))
        if (!row.contains("other")) reasons[row.at("reason").get<std::string>()] += row.at("calls").get<long long>();
    CHECK(reasons["derived_datatype"] == 4);
    CHECK(reasons["user_op"] == 4);
    CHECK(reasons["cold_communicator"] == 4 * 2);  // ARSHIM_CONTEXT_AFTER=3: the third call warms it
    CHECK(reasons["served"] == 4 * 4);
    CHECK(log.at("communicators").size() == 2);  // the world and the halves (one shape: one id)
    CHECK(log.at("sampling").at("period") == 2);
    remove_dir(dir);
}

TEST_CASE("fake MPI: where the log and the trace go: an earlier run's replaced, anyone else's file left alone",
          "[fake-mpi][stats]") {
    const std::string dir = temp_dir();
    auto body = [](int, fake_mpi::Checks& c) {
        MPI_Init(nullptr, nullptr);
        fake_checks::check_many(c, MPI_COMM_WORLD, 20);
        MPI_Finalize();
    };
    const std::map<std::string, std::string> files = {{"ARSHIM_STATS", dir + "/stats.json"},
                                                      {"ARSHIM_TRACE", dir + "/trace.%r.jsonl"}};
    run_world(2, files, body);
    run_world(2, files, body);  // the same names again: replaced whole, not appended to
    for (int r = 0; r < 2; ++r) {
        std::istringstream lines(read_file(dir + "/trace." + std::to_string(r) + ".jsonl"));
        std::string line;
        int headers = 0;
        while (std::getline(lines, line)) headers += json::parse(line).contains("trace");
        CHECK(headers == 1);
    }
    CHECK(json::parse(read_file(dir + "/stats.json")).at("totals").at("calls") == 2 * kCallsPerCheck);
    // Files that are not ARShim's, a directory that does not exist, a trace in one file: the job runs, the sums
    // are right, the files are as they were.
    {
        std::ofstream(dir + "/data.json") << "precious\n";
        std::ofstream(dir + "/data.0.jsonl") << "precious\n";
    }
    run_world(2, {{"ARSHIM_STATS", dir + "/data.json"}, {"ARSHIM_TRACE", dir + "/data.%r.jsonl"}}, body);
    CHECK(read_file(dir + "/data.json") == "precious\n");
    CHECK(read_file(dir + "/data.0.jsonl") == "precious\n");
    run_world(2, {{"ARSHIM_STATS", dir + "/no/such/dir/stats.json"}, {"ARSHIM_TRACE", dir + "/one-trace.jsonl"},
                  {"ARSHIM_STATS_SUMMARY", "1"}, {"ARSHIM_STATS_DEPTH", "1"}, {"ARSHIM_STATS_CALLSITES", "1"}},
              body);
    CHECK(access((dir + "/no").c_str(), F_OK) != 0);
    std::istringstream one(read_file(dir + "/one-trace.jsonl"));  // rank 0's alone
    std::string first;
    REQUIRE(std::getline(one, first));
    CHECK(json::parse(first).at("rank").get<int>() == 0);
    run_world(2, {{"ARSHIM_STATS_SUMMARY", "1"}}, body);  // the summary without a log
    remove_dir(dir);
}
