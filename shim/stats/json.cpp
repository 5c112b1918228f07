// The statistics report as JSON ("arshim-stats/1", documented in docs/stats.md): the numbers, and nothing for people.
// The summary on stderr is made from this document (shim/stats/summary.h); pretty-printing beyond it, comparing and
// plotting are the report tool's (tools/arshim/report.py).
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "policy/text.h"
#include <string>
#include <string_view>

#include "arshim_config.h"
#include "kernels/kernels.h"
#include "shim/stats/report.h"
#include "policy/decision.h"
#include "shim/stats/trace.h"

namespace arshim::stats {

namespace {

using json = nlohmann::ordered_json;

json min_avg_max(double min, double avg, double max) { return json{{"min", min}, {"avg", avg}, {"max", max}}; }

double avg_per_rank(double sum, uint64_t ranks) { return ranks ? sum / static_cast<double>(ranks) : 0.0; }

double micros(double seconds) { return std::round(seconds * 1e9) / 1e3; }  // to the nanosecond

// The aggregate fields every table row carries (Agg::for_each_field), then what follows from them: the average
// call and the per-rank average.
void put_agg(json& row, const Agg& a) {
    Agg::for_each_field([&](auto member, Reduce, const char* key, Unit unit) {
        const double value = static_cast<double>(a.*member);
        json* at = &row;
        std::string path(key);
        for (std::size_t dot; (dot = path.find('.')) != std::string::npos; path.erase(0, dot + 1))
            at = &(*at)[path.substr(0, dot)];
        if (unit == Unit::micros)
            (*at)[path] = micros(value);
        else if (unit == Unit::std_error)
            (*at)[path] = std::sqrt(std::max(0.0, value));
        else
            (*at)[path] = a.*member;
    });
    row["avg_us"] = a.calls ? micros(a.seconds / static_cast<double>(a.calls)) : 0.0;
    row["per_rank"]["calls"]["avg"] = avg_per_rank(static_cast<double>(a.calls), a.ranks);
    row["per_rank"]["time_s"]["avg"] = avg_per_rank(a.seconds, a.ranks);
}

void put_bucket(json& row, uint32_t bucket) {
    row["bucket"] = bucket;
    row["bytes_min"] = vocab::bucket_floor(bucket);
    row["bytes_max"] = vocab::bucket_ceiling(bucket);
}

std::string hex(uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(v));
    return text;
}

std::string comm_label(const CommEntry& c, int np) {
    if (c.other) return "other";
    if (c.id == 0) return "none";
    if (c.inter) return "intercomm(local " + std::to_string(c.size) + ")";
    if (c.size == np && c.stride == 1 && c.first_world == 0) return "world";
    if (c.size == 1) return "self";
    if (c.stride > 0) return "size " + std::to_string(c.size) + " stride " + std::to_string(c.stride);
    return "size " + std::to_string(c.size) + " irregular";
}

std::string comm_ref(const CommEntry& c) { return c.other ? std::string("other") : hex(c.id); }

std::string iso_utc(std::time_t t) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

json command_line() {
    json args = json::array();
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string arg;
    while (std::getline(in, arg, '\0')) args.push_back(arg);
    return args;
}

json run_metadata(const Report& r) {
    const RunFacts& rt = *r.run;
    const std::time_t now = std::time(nullptr);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    struct utsname uts {};
    uname(&uts);
    json run;
    run["date"] = iso_utc(now);
    run["start"] = iso_utc(now - static_cast<std::time_t>(r.wall.max));
    run["job_id"] = r.job_id;
    run["hostname"] = host;
    run["machine"] = uts.machine;
    run["command"] = command_line();
    run["mpi"] = json{{"flavor", rt.flavor}, {"version", rt.mpi_version}};
    run["np"] = r.np;
    if (r.job && r.nodes > 0) {  // 0: unknown (the log of a job the start-up check disabled)
        run["nodes"] = r.nodes;
        run["ppn"] = json{{"min", r.ppn_min}, {"max", r.ppn_max}};
    }
    run["arshim_version"] = ARSHIM_VERSION;
    run["kernel_isa"] = kernels::isa_name(kernels::active().isa);
    run["policy_source"] = rt.policy_source;
    run["settings_agreed"] = rt.config_agreed;
    run["startup_check"] = trace::startup_check(rt.startup);
    json settings = json::object();
    rt.settings.for_each_option([&settings](const char* name, const std::string& value, bool from_environment) {
        settings[name] = json{{"value", value}, {"source", from_environment ? "environment" : "default"}};
    });
    run["settings"] = settings;
    return run;
}

// How the times were taken (ARSHIM_STATS_SAMPLE): exact when every counted call was timed, else estimated from the
// timed ones; call sites are recorded on timed calls only, so their counts are exact or estimated alike.
json sampling(const Report& r) {
    const bool exact = r.total.samples == r.total.calls;
    return json{{"period", r.sample_period},
                {"first_timed", kFirstTimed},
                {"timed_calls", r.total.samples},
                {"times", exact ? "exact" : "estimated"},
                {"callsite_counts", exact ? "exact" : "estimated"}};
}

}  // namespace

nlohmann::ordered_json to_document(const Report& r) {
    json doc;
    doc["schema"] = kSchema;
    doc["scope"] = r.job ? "job" : "rank";
    if (!r.job) doc["rank"] = r.rank;
    doc["run"] = run_metadata(r);

    json time;
    time["wall_s"] = min_avg_max(r.wall.min, r.wall.avg, r.wall.max);
    time["allreduce_s"] = json{{"total", r.total.seconds},
                               {"per_rank", min_avg_max(r.total.rank_seconds_min,
                                                        avg_per_rank(r.total.seconds, r.total.ranks),
                                                        r.total.rank_seconds_max)}};
    const double wall_sum = r.wall.avg * (r.job ? r.np : 1);
    time["allreduce_share"] = json{{"overall", wall_sum > 0 ? r.total.seconds / wall_sum : 0.0},
                                   {"per_rank", min_avg_max(r.share.min, r.share.avg, r.share.max)}};
    doc["time"] = time;
    doc["sampling"] = sampling(r);

    json totals;
    put_agg(totals, r.total);
    json sharp = json::object();  // the SHARP path's counters by their arshim_sharp_calls() names, summed over ranks
    json fallbacks = json::array();
    // Calls that hit each known library bug in force for this library (and these settings), by entry id: an entry
    // that does not affect this library's version, or every entry under ARSHIM_LIBRARY_BUGS=ignore, is absent.
    json library_bugs = json::object();
    json verify = json::object();        // verify mode (docs/verify.md), summed over ranks
    json argument_check = json::object();
    json tuning = json::object();
    Counts::for_each_field(r.counts, [&](uint64_t calls, const char* section, const char* key) {
        if (section == std::string("tuning")) {
            if (key == std::string("exploration_ns")) tuning["exploration_s"] = static_cast<double>(calls) * 1e-9;
            else tuning[key] = calls;
        } else if (section == std::string("verify")) {
            verify[key] = calls;
        } else if (section == std::string("argument_check")) {
            argument_check[key] = calls;
        } else if (section == std::string("totals")) {
            totals[key] = calls;
        } else if (section == std::string("sharp")) {
            sharp[key] = calls;
        } else if (section == std::string("library_bugs")) {
            if (*key != '\0' && bugs::in_force(key)) library_bugs[key] = calls;
        } else if (calls != 0) {  // reasons
            fallbacks.push_back(json{{"reason", key}, {"calls", calls}, {"fallback", key != std::string("policy")}});
        }
    });
    doc["totals"] = totals;

    json paths = json::array(), buckets = json::array();
    for (std::size_t p = 0; p < kPathCount; ++p) {
        const char* name = vocab::path_name(static_cast<vocab::Path>(p));
        if (r.paths[p].calls) {
            json row{{"path", name}};
            put_agg(row, r.paths[p]);
            paths.push_back(row);
        }
        for (uint32_t b = 0; b < kBucketCount; ++b) {
            if (!r.cells[p][b].calls) continue;
            json row{{"path", name}};
            put_bucket(row, b);
            put_agg(row, r.cells[p][b]);
            buckets.push_back(row);
        }
    }
    doc["paths"] = paths;
    doc["buckets"] = buckets;

    json comms = json::array();
    for (const CommEntry& c : r.comms) {
        json row{{"id", comm_ref(c)}, {"label", comm_label(c, r.np)}};
        if (!c.other) {
            row["size"] = c.size;
            row["stride"] = c.stride;
            row["first_world_rank"] = c.first_world;
            row["inter"] = c.inter;
            row["instances"] = c.instances;
        }
        put_agg(row, c.agg);
        comms.push_back(row);
    }
    doc["communicators"] = comms;

    json rows = json::array();
    for (const RowEntry& e : r.rows) {
        json row;
        if (e.other) {
            row["other"] = true;
        } else {
            row["communicator"] = e.comm >= 0 ? comm_ref(r.comms[static_cast<std::size_t>(e.comm)]) : "other";
            row["path"] = vocab::path_name(e.key.path);
            put_bucket(row, e.key.bucket);
            row["datatype"] = vocab::dtype_class_name(e.key.dtype);
            row["op"] = vocab::row_op_name(e.key.op);
            row["reason"] = reason_name(e.key.reason);
            if (e.key.sharp != SharpRun::none) row["sharp"] = sharp_run_name(e.key.sharp);
        }
        put_agg(row, e.agg);
        rows.push_back(row);
    }
    doc["rows"] = rows;

    doc["fallbacks"] = fallbacks;
    doc["sharp"] = sharp;
    doc["library_bugs"] = library_bugs;
    verify["enabled"] = r.run->verify_calls > 0;
    verify["calls_per_key"] = r.run->verify_calls;
    // A difference from a library result of 0 is infinitely relative; JSON has no infinity: null (the schema says so).
    const double worst = r.verify_relative.max;
    verify["worst_relative_difference"] = std::isfinite(worst) ? json(worst) : json(nullptr);
    doc["verify"] = verify;
    argument_check["enabled"] = r.run->check_args;
    doc["argument_check"] = argument_check;
    tuning["mode"] = r.run->settings.tune_name;
    json learned = json::array();  // rank 0's communicators
    for (const TuningRecord& l : r.run->tuning) learned.push_back(trace::tuning(l));
    tuning["decided"] = learned;
    doc["tuning"] = tuning;

    json sites = json::array();
    for (const SiteEntry& s : r.sites) {
        json row;
        if (s.other) {
            row["site"] = "other";
            row["other"] = true;
            row["frames"] = json::array();
        } else {
            std::string text;
            json frames = json::array();
            for (const callsites::Frame& f : s.frames) {
                if (!text.empty()) text += " < ";
                text += callsites::describe(f);
                char offset[24];
                std::snprintf(offset, sizeof offset, "0x%llx", static_cast<unsigned long long>(f.offset));
                char function_offset[24];
                std::snprintf(function_offset, sizeof function_offset, "0x%llx",
                              static_cast<unsigned long long>(f.function_offset));
                json frame{{"function", f.function}, {"function_offset", function_offset}, {"file", f.file},
                           {"line", f.line}, {"module", f.module}, {"offset", offset}};
                if (!f.binding.empty()) frame["binding"] = f.binding;
                frames.push_back(frame);
            }
            row["site"] = text;
            row["frames"] = frames;
        }
        put_agg(row, s.agg);
        sites.push_back(row);
    }
    json callsites{{"enabled", r.callsites_enabled}, {"recorded", r.callsites_recorded}, {"depth", r.depth},
                   {"sites", sites}, {"dropped_calls", r.sites_dropped.calls}};
    doc["callsites"] = callsites;
    return doc;
}

std::string to_json(const nlohmann::ordered_json& document) { return document.dump(1) + "\n"; }

}  // namespace arshim::stats
