#include "shim/modes/online.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <atomic>
#include <vector>

#include "arshim_config.h"
#include "policy/rules.h"
#include "policy/text.h"
#include "shim/base/flavor.h"
#include "shim/base/log.h"
#include "shim/base/mpi_types.h"
#include "shim/modes/cache_file.h"
#include "shim/modes/schedule.h"
#include "shim/stats/trace.h"

// Tests only (test/verify/kernel_fault.cpp, never installed): skews this rank's measured times, so that the tests
// can show every rank deciding alike when the ranks see different timings, and make one leader count or one segment
// size slow (`leaders`: the candidate's multi-leader leader count, 0 for other paths; `segment_bytes`: its pipelined
// segment size, 0 for other paths). Null in the product.
extern "C" double arshim_test_skew_tune_time(double seconds, int world_rank, int native, int leaders,
                                             unsigned long long segment_bytes)
    __attribute__((weak, visibility("hidden")));

namespace arshim::tune {

namespace {

// Rank 0's decisions, at most kMaxLearned, kept as the numbers the decision point had: a decision is made inside a
// user's call (the key's last exploration call), so it only copies them into a slot claimed with one atomic
// increment, and the text (describe_decision, the candidates' figures) is made at finalize by learned(): no string,
// allocation or lock inside the user's call (docs/paths.md "First calls").
constexpr std::size_t kMaxLearned = 256;
struct Record {
    uint32_t bucket = 0, ppn = 0, nodes = 0, comm_size = 0;
    vocab::DtypeClass dclass = vocab::DtypeClass::other;
    kernels::Op op = kernels::Op::sum;
    uint8_t chosen = 0;                  // index into candidate
    bool refined = false;                // a second stage ran: first[] holds the first stage
    uint8_t count = 0, excluded = 0;     // the deciding stage
    uint8_t first_count = 0, first_excluded = 0;
    policy::Decision candidate[kMaxCandidates];
    float median[kMaxCandidates] = {}, spread[kMaxCandidates] = {};
    policy::Decision first[kMaxCandidates];
    float first_median[kMaxCandidates] = {}, first_spread[kMaxCandidates] = {};
};
Record g_records[kMaxLearned];
std::atomic<uint32_t> g_records_claimed{0};
std::atomic<bool> g_record_ready[kMaxLearned];

void add_candidates(Learned& l, const policy::Decision* candidate, const float* median, const float* spread, int from,
                    int n, uint8_t excluded, int stage) {
    for (int k = from; k < n; ++k)
        l.candidates.push_back({candidate[k], median[k], spread[k], static_cast<bool>(excluded >> k & 1u), stage});
}

// A recorded decision as data: the policy's choice and the library's allreduce come from the first stage.
Learned learned_from(const Record& rec) {
    const policy::Decision* first = rec.refined ? rec.first : rec.candidate;
    const float* first_median = rec.refined ? rec.first_median : rec.median;
    const int first_count = rec.refined ? rec.first_count : rec.count;
    const uint8_t first_excluded = rec.refined ? rec.first_excluded : rec.excluded;
    Learned l;
    l.bucket = rec.bucket;
    l.ppn = rec.ppn;
    l.nodes = rec.nodes;
    l.comm_size = rec.comm_size;
    l.dclass = rec.dclass;
    l.op = rec.op;
    l.chosen = rec.candidate[rec.chosen];
    l.policy_choice = first[0];
    l.chosen_us = rec.median[rec.chosen];
    l.policy_us = (first_excluded & 1u) ? -1 : first_median[0];
    for (int k = 0; k < first_count; ++k)
        if (first[k].path() == policy::Path::native && !(first_excluded >> k & 1u)) l.native_us = first_median[k];
    if (rec.refined) {
        add_candidates(l, rec.first, rec.first_median, rec.first_spread, 0, rec.first_count, rec.first_excluded, 0);
        add_candidates(l, rec.candidate, rec.median, rec.spread, 1, rec.count, rec.excluded, 1);
    } else {
        add_candidates(l, rec.candidate, rec.median, rec.spread, 0, rec.count, rec.excluded, 0);
    }
    return l;
}

}  // namespace

policy::tune::KeyFacts key_facts(const PathContext& ctx, uint64_t bytes) {
    policy::tune::KeyFacts f;
    f.bytes = bytes;
    f.ppn_min = ctx.ppn_min;
    f.ppn_max = ctx.ppn_max;
    f.nodes = ctx.node_count;
    f.flavor = policy_flavor();  // base/flavor.h (under SMPI the selector's, as for the policy's rules)
    return f;
}

double candidate_clock() {
#if defined(ARSHIM_FLAVOR_SMPI)
    return PMPI_Wtime();
#else
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
#endif
}

void report(PathContext& ctx, KeyBook& book, int c, double seconds, bool declined, uint32_t bucket,
            vocab::DtypeClass dclass, kernels::Op op, MPI_Datatype datatype, MPI_Op mpi_op, uint64_t bytes) {
    KeyTuning& t = book.tuning;
    Exploration& ex = t.exploration;
    if (arshim_test_skew_tune_time != nullptr) {
        const policy::Decision& d = t.candidate[c];
        seconds = arshim_test_skew_tune_time(
            seconds, log::rank(), d.path() == policy::Path::native ? 1 : 0,
            d.path() == policy::Path::multileader ? static_cast<int>(d.get<policy::MultileaderParams>().leaders) : 0,
            d.path() == policy::Path::pipelined ? d.get<policy::PipelinedParams>().segment_bytes : 0);
    }
    g_exploration_calls.fetch_add(1, std::memory_order_relaxed);
    g_exploration_ns.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
    if (!ex.record(c, static_cast<float>(seconds * 1e6), declined)) return;

    // The decision point: every rank's medians and spreads, the largest over the ranks, in one allreduce.
    const int n = ex.candidates;
    float agreed[2 * kMaxCandidates] = {};
    for (int k = 0; k < n; ++k) ex.local(k, &agreed[k], &agreed[kMaxCandidates + k]);
    PMPI_Allreduce(MPI_IN_PLACE, agreed, 2 * kMaxCandidates, MPI_FLOAT, MPI_MAX, ctx.comm);
    const float* median = agreed;
    const float* spread = agreed + kMaxCandidates;
    const int v = verdict(median, spread, n, ex.inactive(), ex.round + 1 >= kMaxRounds);
    if (v < 0) {
        ex.outpaced = static_cast<uint8_t>(ex.outpaced | outpaced(median, spread, n, ex.inactive()));
        ex.next_round();
        return;
    }
    // Online: the first stage found the direction; the second refines the winner's parameters. Both the winner and
    // its neighbours follow from agreed values, so every rank enters the second stage alike.
    if (t.stage == 0 && ctx.settings->tune == Mode::online) {
        policy::Decision next[kMaxCandidates];
        const int count = policy::tune::second_stage(t.candidate[v], key_facts(ctx, bytes), next);
        if (count >= 2) {
            t.first_count = static_cast<uint8_t>(n);
            t.first_excluded = ex.excluded;
            std::copy(t.candidate, t.candidate + kMaxCandidates, t.first);
            std::copy(median, median + kMaxCandidates, t.first_median);
            std::copy(spread, spread + kMaxCandidates, t.first_spread);
            t.exploration = refinement(ex, v, count);
            std::copy(next, next + kMaxCandidates, t.candidate);
            t.stage = 1;
            return;
        }
    }
    t.status = KeyTuning::decided;
    t.chosen = static_cast<uint8_t>(v);
    const bool refined = t.stage == 1;
    g_decisions.fetch_add(1, std::memory_order_relaxed);
    // The policy's choice is the first stage's candidate 0.
    if (!policy::same_action(t.candidate[v], refined ? t.first[0] : t.candidate[0]))
        g_changed.fetch_add(1, std::memory_order_relaxed);

    if (ctx.rank != 0 && !trace::on()) return;
    Record rec;
    rec.bucket = bucket;
    rec.ppn = static_cast<uint32_t>(ctx.ppn_max);
    rec.nodes = static_cast<uint32_t>(ctx.node_count);
    rec.comm_size = static_cast<uint32_t>(ctx.size);
    rec.dclass = dclass;
    rec.op = op;
    rec.chosen = static_cast<uint8_t>(v);
    rec.refined = refined;
    rec.count = static_cast<uint8_t>(n);
    rec.excluded = ex.excluded;
    std::copy(t.candidate, t.candidate + kMaxCandidates, rec.candidate);
    std::copy(median, median + kMaxCandidates, rec.median);
    std::copy(spread, spread + kMaxCandidates, rec.spread);
    if (refined) {
        rec.first_count = t.first_count;
        rec.first_excluded = t.first_excluded;
        std::copy(t.first, t.first + kMaxCandidates, rec.first);
        std::copy(t.first_median, t.first_median + kMaxCandidates, rec.first_median);
        std::copy(t.first_spread, t.first_spread + kMaxCandidates, rec.first_spread);
    }
    // The trace has every rank's decision (tests compare them); the statistics log and the cache rank 0's.
    if (trace::on()) {
        trace::json fields = trace::tuning(learned_from(rec));
        fields["communicator"] = ctx.stats_id;
        fields["mode"] = policy::tune::kModeNames[static_cast<std::size_t>(ctx.settings->tune)];
        trace::event("tuned", fields);
    }
    if (ctx.rank != 0) return;
    const uint32_t slot = g_records_claimed.fetch_add(1, std::memory_order_relaxed);
    if (slot < kMaxLearned) {
        g_records[slot] = rec;
        g_record_ready[slot].store(true, std::memory_order_release);
    }
    // The log line is made only when asked for (ARSHIM_LOG=info): then the user pays for the text.
    if (log::enabled(log::Level::info)) {
        const Learned l = learned_from(rec);
        log::info("tuned {} {}, {} B on a communicator of {} ranks ({} node(s) x {}): {} ({:.1f} us; policy's choice "
                  "{}: {}; candidates: {})",
                  datatype_name(datatype), mpi_op_name(mpi_op), bytes, ctx.size, ctx.node_count, ctx.ppn_max,
                  policy::describe_decision(l.chosen), l.chosen_us, policy::describe_decision(l.policy_choice),
                  l.policy_us < 0 ? std::string("declined") : fmt::format("{:.1f} us", l.policy_us), candidates_text(l));
    }
}

std::vector<Learned> learned() {
    std::vector<Learned> out;
    const uint32_t n = std::min<uint32_t>(g_records_claimed.load(std::memory_order_relaxed), kMaxLearned);
    for (uint32_t i = 0; i < n; ++i)
        if (g_record_ready[i].load(std::memory_order_acquire)) out.push_back(learned_from(g_records[i]));
    return out;
}

// ---- the tuning cache (the file's rules: shim/modes/cache_file.h) ----------------------------------------------

namespace {

cache::Origin this_origin(const std::string& library) {
    return {library_name(arshim::library()), printable(library, 100), ARSHIM_VERSION};
}

// A decision as a cache rule: it matches the key's layout, size bucket, element class and op, and carries the
// measured times and the candidates' figures.
policy::RuleSpec cache_rule(const Learned& l) {
    policy::RuleSpec rule;
    rule.name = "tuned: " + std::to_string(l.comm_size) + " ranks (" + std::to_string(l.nodes) + " node(s) x " +
                std::to_string(l.ppn) + "), " + format_size(static_cast<int64_t>(vocab::bucket_floor(l.bucket))) + ", " +
                vocab::dtype_class_name(l.dclass) + " " + vocab::op_name(l.op);
    rule.match.dim[policy::Box::nodes] = {l.nodes, uint64_t{l.nodes} + 1};
    rule.match.dim[policy::Box::ppn] = {l.ppn, uint64_t{l.ppn} + 1};
    rule.match.dim[policy::Box::bucket] = {l.bucket, uint64_t{l.bucket} + 1};
    rule.match.dtypes = 1u << static_cast<unsigned>(l.dclass);
    rule.match.ops = 1u << static_cast<unsigned>(l.op);
    rule.action = l.chosen;
    rule.evidence.kind = policy::EvidenceKind::measured;
    rule.evidence.time_us = l.chosen_us;
    rule.evidence.native_us = l.native_us;
    rule.note = "policy's choice " + policy::describe_decision(l.policy_choice) + "; measured: " +
                printable(candidates_text(l), 600);
    return rule;
}

std::string utc_now() {
    char date[32] = "";
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    return date;
}

}  // namespace

std::string candidates_text(const Learned& l) {
    std::string text;
    for (const stats::TunedCandidate& c : l.candidates) {
        if (!text.empty()) text += "; ";
        text += policy::describe_decision(c.decision) + ": ";
        if (c.declined) {
            text += "declined";
        } else {
            char figures[64];
            std::snprintf(figures, sizeof figures, "%.1f us (+-%.1f)", c.median_us, c.spread_us);
            text += figures;
        }
    }
    return text;
}

CacheWrite write_cache(const ProcessSettings& settings, const std::string& library, bool refused) {
    CacheWrite out;
    const std::string& path = settings.tune_cache;
    if (path.empty() || refused) return out;  // said once at start: the file is left alone
    std::vector<policy::RuleSpec> learned_rules;
    for (const Learned& l : learned()) learned_rules.push_back(cache_rule(l));
    cache::Limits limits;
    limits.max_bytes = settings.policy_max_bytes;
    const cache::Outcome outcome = cache::update(path, this_origin(library), learned_rules, limits,
                                                 settings.follow_symlinks, utc_now());
    out.written = outcome.written;
    out.target = outcome.target;
    out.rules = outcome.rules;
    out.dropped = outcome.dropped;
    out.notes = outcome.notes;
    out.problem = outcome.problem;
    return out;
}

std::string read_cache(const ProcessSettings& settings, const std::string& library, std::string* note, bool* warn,
                       std::string* read_from) {
    const std::string& path = settings.tune_cache;
    read_from->clear();
    if (path.empty()) return "";
    cache::Location loc = cache::locate(path, this_origin(library), settings.policy_max_bytes);
    *note = loc.note;
    *warn = loc.warn;
    if (loc.found.holds != cache::Holds::ours) return std::string();
    *read_from = loc.target;
    return std::move(loc.found.text);
}

}  // namespace arshim::tune
