// Finalize: this process's counters -> a report. The job report is built with reductions of fixed-size tables over
// MPI_COMM_WORLD (no gather of per-rank records, so it stays cheap at 10 000 ranks):
//   1. the ranks agree on a bounded set of communicator, row and call-site slots (agree_slots: a few allreduces
//      of fixed-size arrays of keys); whatever does not fit is folded into an "other" slot;
//   2. every rank fills fixed-size arrays in that slot order and four MPI_Reduce calls (sum, sum, min, max) give
//      rank 0 totals and min/avg/max over ranks; call-site names travel in one bitwise-or reduction.
// Files are written to a temporary name and renamed, so a run that dies never leaves a half-written log.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "policy/text.h"
#include "shim/stats/callsites.h"
#include "shim/base/log.h"
#include "shim/base/mpi_util.h"
#include "shim/stats/mode_counts.h"
#include "shim/stats/counters.h"
#include "shim/stats/log_file.h"
#include "shim/stats/report.h"
#include "shim/stats/summary.h"

namespace arshim::stats {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kJobComms = 64;
constexpr int kJobRows = 1024;
constexpr int kJobSites = 256;
constexpr int kAgreeRounds = 8;
constexpr long long kEmpty = LLONG_MIN;

// ---------------------------------------------------------------------------------------------------------------
// This process's counters

struct LocalComm {
    CommShape shape;
    uint64_t roots = 0;
    Cell cell;
};

struct LocalData {
    Cell total;
    Cell paths[kPathCount];
    Cell cells[kPathCount][kBucketCount];
    std::map<uint64_t, LocalComm> comms;
    std::map<std::pair<uint64_t, uint32_t>, Cell> rows;  // (comm id, packed key)
    Counts counts;
    std::vector<callsites::LocalSite> sites;
    double verify_relative = 0;
    Cell sites_dropped;
    bool sites_recorded = false;
    double wall = 0;
};

LocalData gather_local(bool with_sites, const RunFacts& run) {
    LocalData d;
    const double scale = seconds_per_tick();  // the thread tables hold clock ticks of the timed calls
    for_each_comm([&](uint64_t id, const CommShape& shape, uint64_t, uint64_t roots) {
        LocalComm& c = d.comms[id];
        c.shape = shape;
        c.roots = roots;
    });
    for_each_thread([&](const ThreadCounters& t) {
        t.rows.for_each([&](const RowId& id, const Cell& ticks) {
            if (ticks.calls == 0) return;
            const RowKey key = unpack(id.key);
            const Cell cell = ticks.estimated(scale);
            d.rows[{id.comm, id.key}].merge(cell);
            d.cells[static_cast<std::size_t>(key.path)][key.bucket].merge(cell);
            d.comms[id.comm].cell.merge(cell);
        });
        for (std::size_t p = 0; p < kPathCount; ++p)
            for (std::size_t b = 0; b < kBucketCount; ++b) d.cells[p][b].merge(t.overflow[p][b].estimated(scale));
        for (std::size_t r = 0; r < kReasonCount; ++r) d.counts.reasons[r] += t.reasons[r];
        d.counts.reentrant += t.reentrant;
        d.counts.paused += t.paused;
        d.counts.rows_dropped += t.overflow_calls;
    });
    for (std::size_t p = 0; p < kPathCount; ++p) {
        for (const Cell& cell : d.cells[p]) d.paths[p].merge(cell);
        d.total.merge(d.paths[p]);
    }
    for (std::size_t c = 0; c < kSharpCounters; ++c) d.counts.sharp[c] = sharp::read(static_cast<sharp::Counter>(c));
    for (std::size_t b = 0; b < bugs::kMaxEntries; ++b) d.counts.library_bugs[b] = bugs::calls(b);
    d.counts.verify_calls = verify::g_calls.load();
    d.counts.verify_mismatches = verify::g_mismatches.load();
    d.counts.verify_library_bug_calls = verify::g_library_bug_calls.load();
    d.counts.verify_library_bug_differences = verify::g_library_bug_differences.load();
    d.counts.verify_unordered = verify::g_unordered.load();
    d.counts.argcheck_calls = argcheck::g_checked.load();
    d.counts.argcheck_mismatches = argcheck::g_mismatched.load();
    d.counts.tune_exploration_calls = tune::g_exploration_calls.load();
    d.counts.tune_exploration_ns = tune::g_exploration_ns.load();
    d.counts.tune_decisions = tune::g_decisions.load();
    d.counts.tune_changed = tune::g_changed.load();
    d.verify_relative = verify::worst_relative();
    // Communicators registered but never used for a counted call (e.g. only while paused) make no row.
    for (auto it = d.comms.begin(); it != d.comms.end();)
        it = it->second.cell.calls ? std::next(it) : d.comms.erase(it);
    if (with_sites) {
        d.sites = callsites::collect(&d.sites_dropped);
        for (callsites::LocalSite& site : d.sites) site.cell = site.cell.estimated(scale);
        d.sites_dropped = d.sites_dropped.estimated(scale);
        d.sites_recorded = true;
    }
    d.wall = PMPI_Wtime() - run.init_time;
    return d;
}

// ---------------------------------------------------------------------------------------------------------------
// Report of one rank (its own file)

Report rank_report(const LocalData& d, int rank, int np) {
    Report r;
    r.job = false;
    r.rank = rank;
    r.np = np;
    r.total = Agg::of(d.total, true);
    for (std::size_t p = 0; p < kPathCount; ++p) {
        r.paths[p] = Agg::of(d.paths[p]);
        for (std::size_t b = 0; b < kBucketCount; ++b) r.cells[p][b] = Agg::of(d.cells[p][b]);
    }
    std::map<uint64_t, int> comm_index;
    for (const auto& [id, c] : d.comms) {
        comm_index[id] = static_cast<int>(r.comms.size());
        CommEntry e;
        e.id = id;
        e.size = c.shape.size;
        e.stride = c.shape.stride;
        e.first_world = c.shape.first_world;
        e.inter = c.shape.inter;
        e.instances = c.roots;
        e.agg = Agg::of(c.cell);
        r.comms.push_back(e);
    }
    for (const auto& [key, cell] : d.rows)
        r.rows.push_back({comm_index[key.first], unpack(key.second), false, Agg::of(cell)});
    for (const callsites::LocalSite& s : d.sites) r.sites.push_back({s.frames, false, Agg::of(s.cell)});
    r.callsites_recorded = d.sites_recorded;
    r.sites_dropped = Agg::of(d.sites_dropped);
    r.counts = d.counts;
    r.wall = {d.wall, d.wall, d.wall};
    const double share = d.wall > 0 ? d.total.seconds / d.wall : 0;
    r.share = {share, share, share};
    r.verify_relative = {d.verify_relative, d.verify_relative, d.verify_relative};
    return r;
}

// ---------------------------------------------------------------------------------------------------------------
// Agreement on slots

int probe_slot(long long key, int round, int slots) {
    const uint64_t salt = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(round + 1);
    return static_cast<int>(vocab::mix64(static_cast<uint64_t>(key) + salt) % static_cast<uint64_t>(slots));
}

// Collective over `comm`: the ranks agree on at most `slots` of their keys (every rank passes its own distinct
// keys, heaviest first; no key may be kEmpty). In round r each rank proposes each unplaced key for its r-th probe
// slot when that slot is free; an allreduce(MAX) of the proposals decides every contested slot the same way on
// all ranks. Returns each local key's slot (-1: did not fit, folded into "other"); `table` gets the agreed keys.
std::vector<int> agree_slots(const std::vector<long long>& keys, int slots, std::vector<long long>* table,
                             MPI_Comm comm) {
    table->assign(static_cast<std::size_t>(slots), kEmpty);
    std::vector<int> where(keys.size(), -1);
    std::vector<long long> proposal(static_cast<std::size_t>(slots) + 1);
    for (int round = 0; round < kAgreeRounds; ++round) {
        std::fill(proposal.begin(), proposal.end(), kEmpty);
        long long pending = 0;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            if (where[i] >= 0) continue;
            pending = 1;
            const auto s = static_cast<std::size_t>(probe_slot(keys[i], round, slots));
            if ((*table)[s] == kEmpty && proposal[s] == kEmpty) proposal[s] = keys[i];
        }
        proposal[static_cast<std::size_t>(slots)] = pending;
        PMPI_Allreduce(MPI_IN_PLACE, proposal.data(), slots + 1, MPI_LONG_LONG, MPI_MAX, comm);
        if (proposal[static_cast<std::size_t>(slots)] <= 0) break;  // nobody had anything left to place
        for (std::size_t s = 0; s < static_cast<std::size_t>(slots); ++s)
            if (proposal[s] != kEmpty) (*table)[s] = proposal[s];
        for (std::size_t i = 0; i < keys.size(); ++i) {
            if (where[i] >= 0) continue;
            const int s = probe_slot(keys[i], round, slots);
            if ((*table)[static_cast<std::size_t>(s)] == keys[i]) where[i] = s;
        }
    }
    return where;
}

long long as_key(uint64_t value) {
    const auto key = static_cast<long long>(value);
    return key == kEmpty ? kEmpty + 1 : key;
}

// ---------------------------------------------------------------------------------------------------------------
// The job report: collective over MPI_COMM_WORLD; the result is meaningful on rank 0 only.

void nodes_and_ppn(const RunFacts& rt, Report* r) {
    // From the world's node map learned at MPI_Init when there is one (identical on every rank, no communication):
    // a split here, at finalize, could find no communicator id left (MPICH) in a program that keeps many.
    if (!rt.world_node.empty()) {
        std::map<int, int> ppn;
        for (int node : rt.world_node) ++ppn[node];
        r->nodes = static_cast<int>(ppn.size());
        r->ppn_max = 0;
        r->ppn_min = rt.world_size;
        for (const auto& [node, ranks] : ppn) {
            r->ppn_max = std::max(r->ppn_max, ranks);
            r->ppn_min = std::min(r->ppn_min, ranks);
        }
        return;
    }
    MPI_Comm node = MPI_COMM_NULL;
    {
        const ErrorsReturn errors_return(MPI_COMM_WORLD);  // a failed split counts every rank as its own node
        const int64_t virtual_ppn = rt.settings.agreed.virtual_ppn;
        if (virtual_ppn > 0)
            PMPI_Comm_split(MPI_COMM_WORLD, rt.world_rank / static_cast<int>(virtual_ppn), rt.world_rank, &node);
        else
            PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rt.world_rank, MPI_INFO_NULL, &node);
    }
    int node_rank = 0, node_size = 1;
    if (node != MPI_COMM_NULL) {
        PMPI_Comm_rank(node, &node_rank);
        PMPI_Comm_size(node, &node_size);
        PMPI_Comm_free(&node);
    }
    int in[3] = {node_rank == 0 ? 1 : 0, node_size, -node_size}, out[3] = {0, 0, 0};
    PMPI_Allreduce(in, out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(in + 1, out + 1, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    r->nodes = out[0];
    r->ppn_max = out[1];
    r->ppn_min = -out[2];
}

Report job_report(const LocalData& d, const RunFacts& rt, int name_bytes) {
    Report r;
    r.job = true;
    r.rank = rt.world_rank;
    r.np = rt.world_size;
    r.callsites_recorded = d.sites_recorded;
    nodes_and_ppn(rt, &r);

    // 1. communicators, heaviest first
    std::vector<std::pair<uint64_t, uint64_t>> by_calls;  // (calls, id)
    for (const auto& [id, c] : d.comms) by_calls.emplace_back(c.cell.calls, id);
    std::sort(by_calls.rbegin(), by_calls.rend());
    std::vector<long long> keys;
    for (const auto& entry : by_calls) keys.push_back(as_key(entry.second));
    std::vector<long long> comm_table;
    const std::vector<int> comm_slot = agree_slots(keys, kJobComms, &comm_table, MPI_COMM_WORLD);
    std::map<uint64_t, int> slot_of_comm;  // -1: other
    for (std::size_t i = 0; i < by_calls.size(); ++i) slot_of_comm[by_calls[i].second] = comm_slot[i];

    // 2. rows, keyed by (comm slot + 1, packed key); "other" communicators share comm slot -1
    std::map<long long, Cell> rows;
    for (const auto& [key, cell] : d.rows) {
        const long long comm_part = slot_of_comm.count(key.first) ? slot_of_comm[key.first] + 1 : 0;
        rows[(comm_part << kPackedBits) | key.second].merge(cell);
    }
    std::vector<std::pair<uint64_t, long long>> rows_by_calls;
    for (const auto& [key, cell] : rows) rows_by_calls.emplace_back(cell.calls, key);
    std::sort(rows_by_calls.rbegin(), rows_by_calls.rend());
    keys.clear();
    for (const auto& entry : rows_by_calls) keys.push_back(entry.second);
    std::vector<long long> row_table;
    const std::vector<int> row_slot = agree_slots(keys, kJobRows, &row_table, MPI_COMM_WORLD);

    // 3. call sites, by the hash of their symbolized key
    std::vector<std::size_t> site_order(d.sites.size());
    for (std::size_t i = 0; i < site_order.size(); ++i) site_order[i] = i;
    std::sort(site_order.begin(), site_order.end(),
              [&](std::size_t a, std::size_t b) { return d.sites[a].cell.calls > d.sites[b].cell.calls; });
    keys.clear();
    for (std::size_t i : site_order) keys.push_back(as_key(vocab::Fnv1a().text(d.sites[i].key).value()));
    std::vector<long long> site_table;
    std::vector<int> site_slot;
    if (d.sites_recorded) site_slot = agree_slots(keys, kJobSites, &site_table, MPI_COMM_WORLD);

    // 4. fixed-size arrays in slot order
    std::vector<Cell> comm_cells(kJobComms + 1), row_cells(kJobRows + 1), site_cells(kJobSites + 1);
    std::vector<const LocalComm*> comm_local(kJobComms, nullptr);
    for (const auto& [id, c] : d.comms) {
        const int s = slot_of_comm[id];
        comm_cells[s >= 0 ? static_cast<std::size_t>(s) : kJobComms].merge(c.cell);
        if (s >= 0) comm_local[static_cast<std::size_t>(s)] = &c;
    }
    for (std::size_t i = 0; i < rows_by_calls.size(); ++i) {
        const int s = row_slot[i];
        row_cells[s >= 0 ? static_cast<std::size_t>(s) : kJobRows].merge(rows[rows_by_calls[i].second]);
    }
    std::vector<const callsites::LocalSite*> site_local(kJobSites, nullptr);
    for (std::size_t k = 0; k < site_order.size() && d.sites_recorded; ++k) {
        const callsites::LocalSite& site = d.sites[site_order[k]];
        const int s = site_slot[k];
        site_cells[s >= 0 ? static_cast<std::size_t>(s) : kJobSites].merge(site.cell);
        if (s >= 0) site_local[static_cast<std::size_t>(s)] = &site;
    }

    // Every rank packs the same layout (shim/stats/report_fields.h); the unpacking below reads it in this order.
    Arrays mine;
    Agg::of_rank(d.total, true).pack(mine);
    for (std::size_t p = 0; p < kPathCount; ++p) {
        Agg::of_rank(d.paths[p]).pack(mine);
        for (const Cell& cell : d.cells[p]) Agg::of_rank(cell).pack(mine);
    }
    for (const Cell& cell : comm_cells) Agg::of_rank(cell).pack(mine);
    for (const LocalComm* c : comm_local) {  // a communicator's shape, from whichever ranks have it
        mine.push_count(c ? c->roots : 0);
        mine.push(Reduce::max, c ? c->shape.size : -kInf);
        mine.push(Reduce::max, c ? c->shape.stride : -kInf);
        mine.push(Reduce::max, c ? (c->shape.inter ? 1 : 0) : -kInf);
        mine.push(Reduce::min, c ? c->shape.first_world : kInf);
    }
    for (const Cell& cell : row_cells) Agg::of_rank(cell).pack(mine);
    for (const Cell& cell : site_cells) Agg::of_rank(cell).pack(mine);
    Agg::of_rank(d.sites_dropped).pack(mine);
    d.counts.pack(mine);
    Spread{}.pack(d.wall, mine);
    Spread{}.pack(d.wall > 0 ? d.total.seconds / d.wall : 0, mine);
    Spread{}.pack(d.verify_relative, mine);

    Arrays total = mine;
    const bool root = rt.world_rank == 0;
    auto reduce = [&](auto& in, auto& out, MPI_Datatype type, MPI_Op op) {
        PMPI_Reduce(in.data(), root ? out.data() : nullptr, static_cast<int>(in.size()), type, op, 0, MPI_COMM_WORLD);
    };
    // The seam: combine() in shim/stats/report_fields.h is the same reduction for the unit tests.
    reduce(mine.counts, total.counts, MPI_UNSIGNED_LONG_LONG, MPI_SUM);
    reduce(mine.sums, total.sums, MPI_DOUBLE, MPI_SUM);
    reduce(mine.mins, total.mins, MPI_DOUBLE, MPI_MIN);
    reduce(mine.maxs, total.maxs, MPI_DOUBLE, MPI_MAX);

    // 5. call-site names: each agreed slot's owners write the same text, everyone else zeros; bitwise OR (not MAX:
    // MPICH 4.0.2 compares unsigned types as signed, pmodels/mpich#6083).
    std::vector<int> used_sites;
    for (int s = 0; s < kJobSites && d.sites_recorded; ++s)
        if (site_table[static_cast<std::size_t>(s)] != kEmpty) used_sites.push_back(s);
    std::vector<unsigned char> names(used_sites.size() * static_cast<std::size_t>(name_bytes), 0);
    for (std::size_t u = 0; u < used_sites.size(); ++u) {
        const callsites::LocalSite* site = site_local[static_cast<std::size_t>(used_sites[u])];
        if (site == nullptr) continue;
        const std::string text = callsites::encode(site->frames);
        std::memcpy(&names[u * static_cast<std::size_t>(name_bytes)], text.data(),
                    std::min(text.size(), static_cast<std::size_t>(name_bytes - 1)));
    }
    std::vector<unsigned char> all_names(names.size(), 0);
    if (!names.empty())
        PMPI_Reduce(names.data(), root ? all_names.data() : nullptr, static_cast<int>(names.size()), MPI_BYTE, MPI_BOR,
                    0, MPI_COMM_WORLD);
    if (!root) return r;

    // 6. rank 0: unpack
    Cursor un(total);
    r.total = Agg::unpack(un);
    for (std::size_t p = 0; p < kPathCount; ++p) {
        r.paths[p] = Agg::unpack(un);
        for (std::size_t b = 0; b < kBucketCount; ++b) r.cells[p][b] = Agg::unpack(un);
    }
    std::vector<Agg> comm_aggs;
    for (int s = 0; s <= kJobComms; ++s) comm_aggs.push_back(Agg::unpack(un));
    std::vector<int> comm_index(kJobComms + 1, -1);
    for (int s = 0; s < kJobComms; ++s) {
        CommEntry e;
        e.instances = un.pop_count();
        // An unused slot holds -inf/+inf (the reductions' identities): converting those to int is undefined and
        // raises FE_INVALID, which a program that traps it dies of inside MPI_Finalize. Read as doubles, convert
        // only what a used slot holds (finite integers).
        const double size = un.pop(Reduce::max), stride = un.pop(Reduce::max), inter = un.pop(Reduce::max);
        const double first_world = un.pop(Reduce::min);
        e.agg = comm_aggs[static_cast<std::size_t>(s)];
        if (comm_table[static_cast<std::size_t>(s)] == kEmpty || e.agg.calls == 0) continue;
        if (!std::isfinite(size) || !std::isfinite(stride) || !std::isfinite(first_world)) continue;
        e.size = static_cast<int>(size);
        e.stride = static_cast<int>(stride);
        e.inter = inter > 0;
        e.first_world = static_cast<int>(first_world);
        e.id = static_cast<uint64_t>(comm_table[static_cast<std::size_t>(s)]);
        comm_index[static_cast<std::size_t>(s)] = static_cast<int>(r.comms.size());
        r.comms.push_back(e);
    }
    if (comm_aggs[kJobComms].calls > 0) {
        CommEntry other;
        other.other = true;
        other.agg = comm_aggs[kJobComms];
        comm_index[kJobComms] = static_cast<int>(r.comms.size());
        r.comms.push_back(other);
    }
    for (int s = 0; s <= kJobRows; ++s) {
        const Agg agg = Agg::unpack(un);
        if (agg.calls == 0) continue;
        RowEntry row;
        row.agg = agg;
        if (s == kJobRows) {
            row.other = true;
        } else {
            const long long key = row_table[static_cast<std::size_t>(s)];
            const long long comm_part = key >> kPackedBits;
            row.key = unpack(static_cast<uint32_t>(key & ((1ll << kPackedBits) - 1)));
            row.comm = comm_index[comm_part == 0 ? kJobComms : static_cast<std::size_t>(comm_part - 1)];
        }
        r.rows.push_back(row);
    }
    std::vector<Agg> site_aggs;
    for (int s = 0; s <= kJobSites; ++s) site_aggs.push_back(Agg::unpack(un));
    for (std::size_t u = 0; u < used_sites.size(); ++u) {
        const Agg& agg = site_aggs[static_cast<std::size_t>(used_sites[u])];
        if (agg.calls == 0) continue;
        const char* text = reinterpret_cast<const char*>(&all_names[u * static_cast<std::size_t>(name_bytes)]);
        r.sites.push_back({callsites::decode(std::string(text, strnlen(text, static_cast<std::size_t>(name_bytes)))),
                           false, agg});
    }
    if (site_aggs[kJobSites].calls > 0) r.sites.push_back({{}, true, site_aggs[kJobSites]});
    r.sites_dropped = Agg::unpack(un);
    r.counts = Counts::unpack(un);
    r.wall = Spread::unpack(un, r.np);
    r.share = Spread::unpack(un, r.np);
    r.verify_relative = Spread::unpack(un, r.np);
    return r;
}

// ---------------------------------------------------------------------------------------------------------------
// Files

// A job id from the launcher's environment, else "pid<N>" of the calling process. It becomes part of a file name
// (%j), so only [A-Za-z0-9._-] are kept (others become '_'), never "." or "..", at most 64 characters.
std::string job_id_from_environment() {
    for (const char* name : {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID", "COBALT_JOBID", "JOB_ID",
                             "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMI_KVSNAME"}) {
        const char* value = std::getenv(name);
        if (value == nullptr || *value == '\0') continue;
        std::string id(value, strnlen(value, 64));
        for (char& c : id)
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
        if (id == "." || id == "..") id = "_";
        return id;
    }
    return "pid" + std::to_string(getpid());
}

// %r -> `rank`, %j -> job id, %% -> %.
std::string expand(const std::string& pattern, const std::string& rank, const std::string& job_id) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size()) {
            const char c = pattern[i + 1];
            if (c == 'r' || c == 'j' || c == '%') {
                out += c == 'r' ? rank : c == 'j' ? job_id : "%";
                ++i;
                continue;
            }
        }
        out += pattern[i];
    }
    return out;
}

// The per-rank file of `rank`: the pattern's %r, or ".rank<N>" before the extension when it has none.
std::string per_rank_path(const std::string& pattern, int rank, const std::string& job_id) {
    if (pattern.find("%r") != std::string::npos) return expand(pattern, std::to_string(rank), job_id);
    std::string path = expand(pattern, "all", job_id);
    const std::size_t slash = path.rfind('/');
    const std::size_t dot = path.rfind('.');
    const std::string tag = ".rank" + std::to_string(rank);
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash + 1)) return path.insert(dot, tag);
    return path + tag;
}

void warn_unwritable(const std::string& pattern, const std::string& path, const WriteOutcome& outcome) {
    if (path == pattern)
        log::error("ARSHIM_STATS={}: {}; statistics not written", printable(pattern, 200),
                   outcome.refused.empty() ? "cannot write (" + outcome.describe() + ")" : outcome.refused);
    else
        log::error("ARSHIM_STATS={}: {} {}; statistics not written", printable(pattern, 200), printable(path, 200),
                   outcome.refused.empty() ? "cannot be written (" + outcome.describe() + ")" : outcome.refused);
}

// What a report says about how it was collected, alike in the job and the per-rank files.
void describe_run(const RunFacts& rt, const std::string& job_id, Report* r) {
    r->run = &rt;
    r->job_id = job_id;
    r->callsites_enabled = rt.settings.stats_callsites;
    r->depth = static_cast<int>(callsites::g_depth);
    r->sample_period = g_sample_period.load(std::memory_order_relaxed);
}

// The summary on stderr (rank 0), from the log's document; `written`: the log file, "" when none. A document the
// summary cannot read (a bug) costs the summary, never the job.
void print_summary(const nlohmann::ordered_json& document, const std::string& written) {
    std::string text;
    try {
        text = summary::text(summary::rows_of(document), written);
    } catch (const std::exception& e) {
        log::error("statistics summary not printed ({})", printable(e.what(), 200));
        return;
    }
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
}

}  // namespace

bool summary_wanted(const ProcessSettings& settings) {
    const int summary = settings.stats_summary;  // -1 = auto
    if (summary >= 0) return summary == 1;
    return !settings.stats.empty() || log::enabled(log::Level::info);
}


void finalize_report(const RunFacts& rt) {
    const std::string& pattern = rt.settings.stats;
    const bool file = !pattern.empty();
    const bool per_rank = file && rt.settings.stats_per_rank;
    const bool summary = summary_wanted(rt.settings);
    // Settings are rank 0's on every rank when MPI_Init was intercepted, so every rank takes the same branches
    // (the collective calls below match). Otherwise ranks may disagree: no collective, per-rank output only.
    const bool collective = rt.config_agreed;
    if (!file && !summary) return;
    const bool sites = file && rt.settings.stats_callsites;
    const bool follow = rt.settings.follow_symlinks;
    const LocalData local = gather_local(sites, rt);

    std::string job_id = rt.world_rank == 0 || !collective ? job_id_from_environment() : std::string();
    if (collective && pattern.find("%j") != std::string::npos) bcast_string(job_id, 0, MPI_COMM_WORLD);

    if (per_rank || (!collective && file)) {
        Report mine = rank_report(local, rt.world_rank, rt.world_size);
        describe_run(rt, job_id, &mine);
        const std::string path = per_rank_path(pattern, rt.world_rank, job_id);
        const WriteOutcome outcome = write_log_file(path, to_json(to_document(mine)), follow, /*only_own_log=*/true);
        // A refusal has no errno of its own: EPERM stands for it in the one-line report of rank 0.
        const int error = outcome.ok() ? 0 : outcome.error != 0 ? outcome.error : EPERM;
        if (!collective) {
            if (error) warn_unwritable(pattern, path, outcome);
            if (rt.world_rank == 0 || error == 0)
                log::warn("ARSHIM_STATS: MPI_Init was not intercepted, so the ranks could not aggregate; each rank "
                          "wrote its own file ({})", printable(path, 200));
        } else {
            // One line for all ranks: how many failed, and the first one's error.
            long long in[2] = {error ? 1 : 0, error ? static_cast<long long>(rt.world_rank) * 4096 + error : LLONG_MAX};
            long long failed = 0, first = LLONG_MAX;
            PMPI_Reduce(&in[0], &failed, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
            PMPI_Reduce(&in[1], &first, 1, MPI_LONG_LONG, MPI_MIN, 0, MPI_COMM_WORLD);
            if (rt.world_rank == 0 && failed > 0) {
                const int first_rank = static_cast<int>(first / 4096);
                log::error("ARSHIM_STATS={}: {} of {} ranks could not write their per-rank file (rank {}: {} ({})); "
                           "per-rank statistics incomplete",
                           printable(pattern, 200), failed, rt.world_size, first_rank,
                           printable(per_rank_path(pattern, first_rank, job_id), 200),
                           std::strerror(static_cast<int>(first % 4096)));
            }
        }
    }
    if (!collective) return;

    const int name_bytes = std::min(4096, 320 * static_cast<int>(callsites::g_depth));
    Report job = job_report(local, rt, name_bytes);
    if (rt.world_rank != 0) return;
    describe_run(rt, job_id, &job);
    // One document: the log's numbers, and the summary's rows made from them (shim/stats/summary.h), so that the
    // summary says what the log holds and `arshim report` prints the same text from the file.
    const nlohmann::ordered_json document = to_document(job);
    std::string written;
    if (file) {
        const std::string path = expand(pattern, "all", job_id);
        const WriteOutcome outcome = write_log_file(path, to_json(document), follow, /*only_own_log=*/true);
        if (!outcome.ok())
            warn_unwritable(pattern, path, outcome);
        else
            written = path;
    }
    if (summary) print_summary(document, written);
}

void finalize_disabled_report(const RunFacts& rt) {
    const std::string& pattern = rt.settings.stats;
    if (rt.world_rank != 0 || pattern.empty()) return;
    Report job;
    job.np = rt.world_size;
    const double wall = PMPI_Wtime() - rt.init_time;  // rank 0's own: the other ranks' are not known here
    job.wall = {wall, wall, wall};
    const std::string job_id = job_id_from_environment();
    describe_run(rt, job_id, &job);
    const std::string path = expand(pattern, "all", job_id);
    const WriteOutcome outcome = write_log_file(path, to_json(to_document(job)), rt.settings.follow_symlinks,
                                                /*only_own_log=*/true);
    if (!outcome.ok()) warn_unwritable(pattern, path, outcome);
}

}  // namespace arshim::stats
