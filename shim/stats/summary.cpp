#include "shim/stats/summary.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "policy/text.h"
#include "shim/stats/callsites.h"

namespace arshim {

namespace callsites {

// The human form of a frame, here with the summary's formatter so that the log writer (shim/stats/json.cpp), the
// finalize summary and arshim-stats-summary name a frame alike.
std::string describe(const Frame& f) {
    auto base_name = [](const std::string& path) {
        const std::size_t slash = path.rfind('/');
        return slash == std::string::npos ? path : path.substr(slash + 1);
    };
    std::string out;
    if (!f.function.empty()) {
        out = f.function;
        if (!f.file.empty()) {
            out += " (" + base_name(f.file) + ":" + std::to_string(f.line) + ")";
        } else {
            char offset[32];
            std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(f.function_offset));
            out += offset;
            out += " [" + f.module + "]";
        }
    } else {
        char offset[32];
        std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(f.offset));
        out = f.module + offset;
        if (!f.file.empty()) out += " (" + base_name(f.file) + ":" + std::to_string(f.line) + ")";
    }
    return out;
}

}  // namespace callsites

namespace stats::summary {

namespace {

using json = nlohmann::ordered_json;

uint64_t count(const json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() ? 0 : it->get<uint64_t>();
}

double number(const json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? 0.0 : it->get<double>();
}

const json& object_or_empty(const json& log, const char* key) {
    static const json empty = json::object();
    const auto it = log.find(key);
    return it == log.end() || !it->is_object() ? empty : *it;
}

uint64_t hex(const json& frame, const char* key) {
    const auto it = frame.find(key);
    return it == frame.end() ? 0 : std::strtoull(it->get<std::string>().c_str(), nullptr, 16);
}

callsites::Frame frame_of(const json& f) {
    callsites::Frame frame;
    frame.function = f.at("function").get<std::string>();
    frame.function_offset = hex(f, "function_offset");
    frame.file = f.at("file").get<std::string>();
    frame.line = f.at("line").get<int>();
    frame.module = f.at("module").get<std::string>();
    frame.offset = hex(f, "offset");
    if (f.contains("binding")) frame.binding = f.at("binding").get<std::string>();
    return frame;
}

std::string human_bytes(double bytes) {
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (bytes >= 1024 && unit < 4) {
        bytes /= 1024;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
    return text;
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
    char text[1024];
    va_list args;
    va_start(args, fmt);
    const int n = std::vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    return std::string(text, static_cast<std::size_t>(std::clamp(n, 0, static_cast<int>(sizeof text) - 1)));
}

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

}  // namespace

Rows rows_of(const json& log) {
    if (!log.is_object()) throw std::runtime_error("not a statistics log");
    Rows r;
    const json& totals = log.at("totals");
    r.calls = count(totals, "calls");
    r.bytes = count(totals, "bytes");
    r.time_s = number(totals, "time_s");
    r.np = log.at("run").at("np").get<int64_t>();
    const double wall_sum = number(log.at("time").at("wall_s"), "avg") * static_cast<double>(r.np);
    r.wall_share_pct = wall_sum > 0 ? 100.0 * r.time_s / wall_sum : 0.0;
    // Times are estimated from the timed calls unless every call was timed (ARSHIM_STATS_SAMPLE; docs/stats.md). A
    // log written before sampling timed every call.
    r.timed_calls = totals.contains("timed_calls") ? count(totals, "timed_calls") : r.calls;
    r.every_call_timed = r.timed_calls == r.calls;
    const json& sampling = object_or_empty(log, "sampling");
    r.sample_period = count(sampling, "period");
    r.first_timed = count(sampling, "first_timed");
    r.time_error_s = number(totals, "time_s_error");

    for (const json& p : log.at("paths")) {
        PathRow row;
        row.path = p.at("path").get<std::string>();
        row.calls = count(p, "calls");
        if (row.calls == 0) continue;
        row.bytes = count(p, "bytes");
        row.time_s = number(p, "time_s");
        row.avg_us = 1e6 * row.time_s / static_cast<double>(row.calls);
        row.timed_min_us = number(p, "call_min_us");
        row.timed_max_us = number(p, "call_max_us");
        const json& per_rank = p.at("per_rank").at("time_s");
        row.rank_s_min = number(per_rank, "min");
        row.rank_s_max = number(per_rank, "max");
        r.paths.push_back(row);
    }
    for (const json& f : log.at("fallbacks"))
        if (count(f, "calls") > 0) r.native_because.emplace_back(f.at("reason").get<std::string>(), count(f, "calls"));
    for (const auto& [id, calls] : object_or_empty(log, "library_bugs").items())
        if (calls.get<uint64_t>() > 0) r.library_bugs.emplace_back(id, calls.get<uint64_t>());

    const json& sharp = object_or_empty(log, "sharp");
    r.sharp_llt = count(sharp, "llt");
    r.sharp_sat = count(sharp, "sat");
    r.sharp_host = count(sharp, "host");
    r.sharp_declined = count(sharp, "unavailable");
    r.sharp = r.sharp_llt + r.sharp_sat + r.sharp_host + r.sharp_declined > 0;
    for (const char* reason : {"host_unsupported", "host_no_sat", "host_no_llt", "host_sat_lock", "host_error"})
        if (count(sharp, reason) > 0) r.sharp_host_reasons.emplace_back(reason + 5, count(sharp, reason));
    r.sharp_groups = count(sharp, "groups");
    r.sharp_group_failures = count(sharp, "group_failures");
    r.sharp_disabled = count(sharp, "disabled");

    const json& verify = object_or_empty(log, "verify");
    r.verify_calls = count(verify, "calls");
    r.verify = r.verify_calls > 0;
    r.verify_mismatches = count(verify, "mismatches");
    r.verify_library_bug_calls = count(verify, "library_bug_calls");
    r.verify_library_bug_differences = count(verify, "library_bug_differences");
    r.verify_unordered = count(verify, "unordered_elements");
    const auto worst = verify.find("worst_relative_difference");  // null: infinite
    if (worst != verify.end() && !worst->is_null()) r.verify_worst = worst->get<double>();

    const json& tuning = object_or_empty(log, "tuning");
    r.tune_exploration_calls = count(tuning, "exploration_calls");
    r.tune_decisions = count(tuning, "decisions");
    r.tuning = r.tune_exploration_calls > 0 || r.tune_decisions > 0;
    r.tuning_mode = tuning.contains("mode") ? tuning.at("mode").get<std::string>() : std::string();
    r.tune_changed = count(tuning, "changed");
    r.tune_exploration_s = number(tuning, "exploration_s");

    const json& argcheck = object_or_empty(log, "argument_check");
    r.argcheck_calls = count(argcheck, "calls");
    r.argcheck_mismatches = count(argcheck, "mismatches");
    r.paused = count(totals, "paused_calls");

    // The three sites with the most time (sorted as the log lists them, heaviest first by time).
    const json& sites = object_or_empty(log, "callsites").contains("sites") ? log.at("callsites").at("sites")
                                                                             : json::array();
    r.sites = sites.size();
    std::vector<const json*> order;
    for (const json& s : sites) order.push_back(&s);
    std::sort(order.begin(), order.end(),
              [](const json* a, const json* b) { return number(*a, "time_s") > number(*b, "time_s"); });
    for (std::size_t i = 0; i < order.size() && i < 3; ++i) {
        const json& s = *order[i];
        const json& frames = s.at("frames");
        const bool other = s.value("other", false) || frames.empty();
        r.top_sites.emplace_back(other ? std::string("other") : callsites::describe(frame_of(frames.front())),
                                 r.time_s > 0 ? 100.0 * number(s, "time_s") / r.time_s : 0.0);
    }
    return r;
}

std::string text(const Rows& r, const std::string& written) {
    std::string out;
    const std::string sampled =
        r.every_call_timed
            ? std::string("every call timed")
            : format("times sampled 1 in %llu per row after its first %llu: %llu calls timed, +-%.2g s",
                     ull(r.sample_period), ull(r.first_timed), ull(r.timed_calls), r.time_error_s);
    out += format("arshim[0] summary: %llu MPI_Allreduce calls on %lld ranks, %s, %.3f s in allreduce (sum over ranks "
                  "and their threads; %.1f%% of the ranks' wall time since MPI_Init, more where threads call at once; "
                  "%s)\n",
                  ull(r.calls), static_cast<long long>(r.np), human_bytes(static_cast<double>(r.bytes)).c_str(),
                  r.time_s, r.wall_share_pct, sampled.c_str());
    // The extremes are over the timed calls.
    out += format("arshim[0] %-12s %10s %11s %10s %10s %12s %12s %17s\n", "path", "calls", "bytes", "time_s", "avg_us",
                  "timed_min_us", "timed_max_us", "rank_s min..max");
    for (const PathRow& p : r.paths)
        out += format("arshim[0] %-12s %10llu %11s %10.4f %10.2f %12.2f %12.2f %8.3f..%-8.3f\n",
                      printable(p.path, 12).c_str(), ull(p.calls), human_bytes(static_cast<double>(p.bytes)).c_str(),
                      p.time_s, p.avg_us, p.timed_min_us, p.timed_max_us, p.rank_s_min, p.rank_s_max);
    std::string reasons;
    for (const auto& [reason, calls] : r.native_because) reasons += " " + reason + "=" + std::to_string(calls);
    if (!reasons.empty()) out += "arshim[0] native because:" + printable(reasons, 2000) + "\n";
    std::string bug_calls;
    for (const auto& [id, calls] : r.library_bugs) bug_calls += " library_bug:" + id + "=" + std::to_string(calls);
    if (!bug_calls.empty())
        out += "arshim[0] computed with ARShim's kernels (the library's own reduction is wrong):" +
               printable(bug_calls, 2000) + "\n";
    if (r.sharp) {
        // Counts are summed over ranks, like every count of the summary.
        std::string host_reasons;
        for (const auto& [reason, calls] : r.sharp_host_reasons)
            host_reasons += (host_reasons.empty() ? " (" : " ") + reason + "=" + std::to_string(calls);
        if (!host_reasons.empty()) host_reasons += ')';
        out += format("arshim[0] sharp: llt=%llu sat=%llu host=%llu%s declined=%llu; groups created=%llu failed=%llu "
                      "disabled=%llu\n",
                      ull(r.sharp_llt), ull(r.sharp_sat), ull(r.sharp_host), host_reasons.c_str(),
                      ull(r.sharp_declined), ull(r.sharp_groups), ull(r.sharp_group_failures), ull(r.sharp_disabled));
    }
    if (r.verify) {
        out += format("arshim[0] verify: %llu calls compared with the library's result (summed over ranks): %llu "
                      "mismatches; worst relative difference %s",
                      ull(r.verify_calls), ull(r.verify_mismatches),
                      r.verify_worst ? format("%.3g", *r.verify_worst).c_str() : "inf");
        if (r.verify_library_bug_calls > 0)
            out += format("; %llu of %llu calls hitting a known library bug differed as expected",
                          ull(r.verify_library_bug_differences), ull(r.verify_library_bug_calls));
        if (r.verify_unordered > 0)
            out += format("; %llu elements outside any bound (NaN, overflow, underflow)", ull(r.verify_unordered));
        out += '\n';
    }
    if (r.tuning)
        out += format("arshim[0] tuning (%s): %llu keys decided (summed over ranks), %llu of them for another choice "
                      "than the policy's; %llu exploration calls (%.3f s)\n",
                      printable(r.tuning_mode, 40).c_str(), ull(r.tune_decisions), ull(r.tune_changed),
                      ull(r.tune_exploration_calls), r.tune_exploration_s);
    if (r.argcheck_calls > 0)
        out += format("arshim[0] argument check: %llu calls checked (summed over ranks), %llu with arguments that "
                      "differ across ranks\n",
                      ull(r.argcheck_calls), ull(r.argcheck_mismatches));
    if (r.paused > 0)
        out += format("arshim[0] not counted: %llu calls made while MPI_Pcontrol(0) paused collection\n", ull(r.paused));
    if (r.sites > 0) {
        std::string top;
        for (const auto& [site, share] : r.top_sites) {
            if (!top.empty()) top += ", ";
            top += site + format(" %.0f%%", share);
        }
        out += format("arshim[0] %zu call sites; most time: ", r.sites) + printable(top, 600) + "\n";
    }
    if (!written.empty()) {
        // The path comes from ARSHIM_STATS: escaped like every value a message carries (shim/base/log.h).
        const std::string path = printable(written, 400);
        out += "arshim[0] statistics written to " + path + " (arshim report " + path + ")\n";
    }
    return out;
}

}  // namespace stats::summary

}  // namespace arshim
