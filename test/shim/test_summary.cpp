// The finalize summary's one formatter (shim/stats/summary.h), MPI-free: its rows are the log document's numbers,
// its text says them, every division is guarded, and every string from the log is escaped. This is the test of the
// summary's sentences: the MPI tests (test/stats, test/sharp, test/verify) check only that a job printed exactly
// arshim-stats-summary's text of its own log, and take every count they decide on from the log (issue 55).
#include "test/support/catch.h"
#include <cfenv>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "shim/stats/summary.h"

namespace summary = arshim::stats::summary;
using json = nlohmann::ordered_json;

namespace {

// A log with every section the summary reads; the numbers are chosen so that each line's figures differ.
json full_log() {
    return json::parse(R"({
      "run": {"np": 3},
      "time": {"wall_s": {"avg": 2.0}},
      "totals": {"calls": 120, "bytes": 3145728, "time_s": 0.6, "timed_calls": 40, "time_s_error": 0.01,
                 "paused_calls": 7},
      "sampling": {"period": 5, "first_timed": 8},
      "paths": [
        {"path": "library", "calls": 0, "bytes": 0, "time_s": 0},
        {"path": "pipelined", "calls": 100, "bytes": 2097152, "time_s": 0.5, "call_min_us": 10.0,
         "call_max_us": 900.0, "per_rank": {"time_s": {"min": 0.1, "max": 0.25}}},
        {"path": "sharp", "calls": 20, "bytes": 1048576, "time_s": 0.1, "call_min_us": 1.5, "call_max_us": 99.0,
         "per_rank": {"time_s": {"min": 0.02, "max": 0.05}}}
      ],
      "fallbacks": [{"reason": "small", "calls": 11, "fallback": true}, {"reason": "unused", "calls": 0}],
      "library_bugs": {"mpich-minloc": 4, "none": 0},
      "sharp": {"llt": 13, "sat": 5, "host": 2, "host_no_sat": 2, "unavailable": 17, "groups": 6,
                "group_failures": 1, "disabled": 0},
      "verify": {"calls": 50, "mismatches": 3, "worst_relative_difference": 0.000125, "library_bug_calls": 4,
                 "library_bug_differences": 4, "unordered_elements": 2},
      "tuning": {"mode": "guard", "decisions": 9, "changed": 2, "exploration_calls": 30, "exploration_s": 0.25},
      "argument_check": {"calls": 60, "mismatches": 1},
      "callsites": {"sites": [
        {"time_s": 0.15, "frames": [{"function": "solve", "file": "/src/a/solver.c", "line": 42, "module": "app"}]},
        {"time_s": 0.45, "frames": [{"function": "", "offset": "0x1f0", "file": "", "line": 0, "module": "libx.so"}]},
        {"time_s": 0.0, "other": true, "frames": []}
      ]}
    })");
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

const std::string* line_starting(const std::vector<std::string>& lines, const std::string& prefix) {
    for (const std::string& line : lines)
        if (line.rfind(prefix, 0) == 0) return &line;
    return nullptr;
}

// Runs `body` with the floating-point traps the correctness issue found at MPI_Finalize enabled: a division by zero
// or an invalid operation in the summary's arithmetic kills the test with SIGFPE.
template <class Body>
void with_traps(Body body) {
    fenv_t saved;
    std::feholdexcept(&saved);
    feenableexcept(FE_DIVBYZERO | FE_INVALID);
    body();
    std::fesetenv(&saved);
}

}  // namespace

TEST_CASE("summary rows are the log's numbers") {
    const summary::Rows r = summary::rows_of(full_log());
    CHECK(r.calls == 120);
    CHECK(r.np == 3);
    CHECK(r.bytes == 3145728);
    CHECK(r.wall_share_pct == 100.0 * 0.6 / (2.0 * 3));
    CHECK_FALSE(r.every_call_timed);
    CHECK(r.sample_period == 5);
    CHECK(r.first_timed == 8);
    REQUIRE(r.paths.size() == 2);  // the path without calls is left out
    CHECK(r.paths[0].path == "pipelined");
    CHECK(r.paths[0].avg_us == 1e6 * 0.5 / 100);
    CHECK(r.native_because == summary::Counts{{"small", 11}});
    CHECK(r.library_bugs == summary::Counts{{"mpich-minloc", 4}});
    CHECK(r.sharp);
    CHECK(r.sharp_llt == 13);
    CHECK(r.sharp_sat == 5);
    CHECK(r.sharp_host == 2);
    CHECK(r.sharp_declined == 17);
    CHECK(r.sharp_host_reasons == summary::Counts{{"no_sat", 2}});
    CHECK(r.verify_mismatches == 3);
    REQUIRE(r.verify_worst.has_value());
    CHECK(*r.verify_worst == 0.000125);
    CHECK(r.argcheck_mismatches == 1);
    CHECK(r.paused == 7);
    CHECK(r.sites == 3);
    REQUIRE(r.top_sites.size() == 3);
    CHECK(r.top_sites[0].first == "libx.so+0x1f0");  // heaviest first
    CHECK(r.top_sites[1].first == "solve (solver.c:42)");
    CHECK(r.top_sites[2].first == "other");
}

TEST_CASE("summary text says each row") {
    const auto lines = lines_of(summary::text(summary::rows_of(full_log()), "/tmp/run.json"));
    REQUIRE(lines.size() == 13);
    CHECK(lines[0] ==
          "arshim[0] summary: 120 MPI_Allreduce calls on 3 ranks, 3.0 MiB, 0.600 s in allreduce (sum over ranks and "
          "their threads; 10.0% of the ranks' wall time since MPI_Init, more where threads call at once; times "
          "sampled 1 in 5 per row after its first 8: 40 calls timed, +-0.01 s)");
    CHECK(lines[1].rfind("arshim[0] path ", 0) == 0);
    CHECK(lines[2] == "arshim[0] pipelined           100     2.0 MiB     0.5000    5000.00        10.00       "
                      "900.00    0.100..0.250   ");
    CHECK(lines[3].rfind("arshim[0] sharp                20     1.0 MiB ", 0) == 0);
    CHECK(lines[4] == "arshim[0] native because: small=11");
    CHECK(lines[5] ==
          "arshim[0] computed with ARShim's kernels (the library's own reduction is wrong): library_bug:mpich-minloc=4");
    CHECK(lines[6] ==
          "arshim[0] sharp: llt=13 sat=5 host=2 (no_sat=2) declined=17; groups created=6 failed=1 disabled=0");
    CHECK(lines[7] ==
          "arshim[0] verify: 50 calls compared with the library's result (summed over ranks): 3 mismatches; worst "
          "relative difference 0.000125; 4 of 4 calls hitting a known library bug differed as expected; 2 elements "
          "outside any bound (NaN, overflow, underflow)");
    CHECK(lines[8] == "arshim[0] tuning (guard): 9 keys decided (summed over ranks), 2 of them for another choice "
                      "than the policy's; 30 exploration calls (0.250 s)");
    CHECK(lines[9] == "arshim[0] argument check: 60 calls checked (summed over ranks), 1 with arguments that differ "
                      "across ranks");
    CHECK(lines[10] == "arshim[0] not counted: 7 calls made while MPI_Pcontrol(0) paused collection");
    CHECK(lines[11] == "arshim[0] 3 call sites; most time: libx.so+0x1f0 75%, solve (solver.c:42) 25%, other 0%");
    CHECK(lines[12] == "arshim[0] statistics written to /tmp/run.json (arshim report /tmp/run.json)");
}

TEST_CASE("summary of a log that timed every call, with no optional section") {
    json log = full_log();
    log["totals"]["timed_calls"] = 120;
    for (const char* section : {"sharp", "verify", "tuning", "argument_check", "callsites", "library_bugs"})
        log.erase(section);
    log["totals"]["paused_calls"] = 0;
    log["fallbacks"] = json::array();
    const auto lines = lines_of(summary::text(summary::rows_of(log), ""));
    REQUIRE(lines.size() == 4);  // summary, header, two paths: nothing else, no "written" line
    CHECK(lines[0].find("; every call timed)") != std::string::npos);
    CHECK(line_starting(lines, "arshim[0] sharp:") == nullptr);
    CHECK(line_starting(lines, "arshim[0] verify:") == nullptr);
}

TEST_CASE("summary: an infinite worst difference is said as inf") {
    json log = full_log();
    log["verify"]["worst_relative_difference"] = nullptr;  // the log's null: infinite
    const auto lines = lines_of(summary::text(summary::rows_of(log), ""));
    const std::string* verify = line_starting(lines, "arshim[0] verify:");
    REQUIRE(verify != nullptr);
    CHECK(verify->find("worst relative difference inf;") != std::string::npos);
}

TEST_CASE("summary arithmetic traps nothing on an empty or zero-time log") {
    json log = full_log();
    log["totals"] = json{{"calls", 0}, {"bytes", 0}, {"time_s", 0.0}};
    log["time"]["wall_s"]["avg"] = 0.0;
    log["run"]["np"] = 0;
    for (auto& p : log["paths"]) p["time_s"] = 0.0;
    for (auto& s : log["callsites"]["sites"]) s["time_s"] = 0.0;
    with_traps([&] {
        const summary::Rows r = summary::rows_of(log);
        CHECK(r.wall_share_pct == 0.0);
        REQUIRE(r.top_sites.size() == 3);
        CHECK(r.top_sites[0].second == 0.0);  // no share of a zero total
        const auto lines = lines_of(summary::text(r, ""));
        CHECK(lines[0].rfind("arshim[0] summary: 0 MPI_Allreduce calls on 0 ranks, 0 B, 0.000 s", 0) == 0);
    });
}

TEST_CASE("summary escapes every string from the log") {
    json log = full_log();
    log["paths"][1]["path"] = "pipe\x1b[31m";
    log["fallbacks"][0]["reason"] = "sm\nall";
    log["callsites"]["sites"][1]["frames"][0]["module"] = "lib\rx.so";
    log["tuning"]["mode"] = "gu\x07rd";
    const std::string text = summary::text(summary::rows_of(log), "/tmp/a\nb.json");
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        CHECK((c == '\n' || (u >= 0x20 && u != 0x7f)));
    }
    CHECK(lines_of(text).size() == 13);  // a newline in a value makes no line of its own
}

TEST_CASE("summary of a document that is no statistics log throws") {
    CHECK_THROWS(summary::rows_of(json::array()));
    CHECK_THROWS(summary::rows_of(json::object()));
    json log = full_log();
    log["totals"]["calls"] = "many";
    CHECK_THROWS(summary::rows_of(log));
}
