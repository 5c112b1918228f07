#include "shim/core/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "arshim_config.h"
#include "kernels/kernels.h"
#include "policy/policy.h"
#include "policy/text.h"
#include "shim/core/context.h"
#include "shim/base/flavor.h"
#include "shim/base/guard.h"
#include "shim/core/handshake.h"
#include "shim/base/library_bugs.h"
#include "shim/base/log.h"
#include "shim/base/mpi_types.h"
#include "shim/core/world_nodes.h"
#include "shim/paths/node_shm.h"
#include "shim/paths/window_pool.h"
#include "shim/base/mpi_util.h"
#include "shim/base/sim_charge.h"
#include "shim/sharp/lib.h"
#include "shim/core/settings.h"
#include "shim/core/simd_ops.h"
#include "shim/stats/callsites.h"
#include "shim/stats/counters.h"
#include "shim/stats/report.h"
#include "shim/stats/trace.h"
#include "shim/modes/online.h"

// A test-only library (test/verify/kernel_fault.cpp, never installed) defines this to make some kernels wrong on
// purpose, so that the tests can show verify mode catching them. In the product the hidden weak reference stays
// null: only an object linked into the library itself could define it, a preloaded one cannot.
extern "C" void arshim_test_inject_kernel_fault() __attribute__((weak, visibility("hidden")));

namespace arshim {

namespace {

std::once_flag g_once;
std::atomic<Runtime*> g_runtime{nullptr};

log::Level level_from(const ProcessSettings& settings) {
    return static_cast<log::Level>(settings.log_level);  // choice order matches log::Level
}

// "MPICH Version:\t4.0.2\n..." -> "MPICH 4.0.2"; "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4".
std::string short_library_version(const char* text) {
    std::string line(text);
    line = line.substr(0, line.find_first_of(",\n"));
    const std::string label = "Version:";
    if (std::size_t at = line.find(label); at != std::string::npos) line.erase(at, label.size());
    std::string out;
    for (char c : line) {
        const bool space = c == ' ' || c == '\t' || c == '\r';
        if (space && (out.empty() || out.back() == ' ')) continue;
        out += space ? ' ' : c;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

// Reads the policy file named by ARSHIM_POLICY (a regular file of at most ARSHIM_POLICY_MAX_BYTES, opened without
// blocking: policy/text.h). Returns false with a one-line problem when it cannot.
bool read_policy_file(const ProcessSettings& settings, std::string* text, std::string* problem) {
    const std::string& path = settings.agreed.policy_file;
    if (read_regular_file(path, settings.policy_max_bytes, text, problem)) return true;
    *problem = "ARSHIM_POLICY=" + printable(path, 200) + ": " + *problem + "; using the built-in policy";
    return false;
}

// ARSHIM_SHARP=auto loads the SHARP library only when a call can be routed to the sharp path (a policy rule or
// ARSHIM_PATH=sharp): loading runs the library's constructors and searches LD_LIBRARY_PATH in every rank.
bool may_route_to_sharp(const policy::Policy& policy) {
    if (policy.fallback().path() == policy::Path::sharp) return true;
    for (const policy::PolicyRule& rule : policy.rules())
        if (rule.decision.path() == policy::Path::sharp) return true;
    return false;
}

void load_sharp(const Runtime& rt, bool collective) {
    const std::string& mode = rt.settings.agreed.sharp_mode_name;
    const SharpMode sharp_mode = rt.settings.agreed.sharp;
    const bool attempt = sharp_mode == SharpMode::on ||
                         (sharp_mode == SharpMode::automatic && rt.policy && may_route_to_sharp(*rt.policy));
    const bool loaded = attempt && sharp::load_at_init(rt.settings.agreed, rt.world_rank);
    if (!log::enabled(log::Level::info)) return;
    if (!attempt) {
        if (rt.world_rank == 0)
            log::info("SHARP library not loaded: ARSHIM_SHARP={}{}", mode,
                      sharp_mode == SharpMode::off ? "" : " and no policy rule or ARSHIM_PATH routes calls to the sharp path");
        return;
    }
    // Which ranks loaded it (the log level is agreed, so every rank is here).
    int counts[2] = {loaded ? 1 : 0, loaded ? rt.world_size : rt.world_rank};  // loaded; first rank without
    if (collective) {
        PMPI_Allreduce(MPI_IN_PLACE, &counts[0], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        PMPI_Allreduce(MPI_IN_PLACE, &counts[1], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
    if (rt.world_rank == 0 || !collective)
        log::info("SHARP library {} loaded on {} of {} ranks{}", printable(rt.settings.agreed.sharp_lib, 200),
                  counts[0], collective ? rt.world_size : 1,
                  counts[0] < (collective ? rt.world_size : 1)
                      ? " (first without it: rank " + std::to_string(counts[1]) + ")"
                      : std::string());
}

// Called from MPI_Finalize through the delete callback of an attribute on MPI_COMM_SELF: MPI deletes
// MPI_COMM_SELF's attributes first thing in MPI_Finalize, while every MPI function still works, and this also fires
// for a Fortran MPI_FINALIZE that calls PMPI_Finalize directly (Open MPI).
// Runs once (finalize_now may have run it already), and only where the hook was installed.
bool g_finalize_pending = false;
int finalize_callback(MPI_Comm, int, void*, void*) {
    if (!g_finalize_pending) return MPI_SUCCESS;
    g_finalize_pending = false;
    ReentryGuard guard;
    const Runtime& rt = runtime();
    stats::RunFacts facts{rt.settings};
    facts.world_rank = rt.world_rank;
    facts.world_size = rt.world_size;
    facts.world_node = rt.world_node;
    facts.config_agreed = rt.config_agreed;
    facts.init_time = rt.init_time;
    facts.flavor = mpi_flavor();
    facts.mpi_version = rt.mpi_version;
    facts.policy_source = rt.policy ? rt.policy->source() : std::string("none");
    facts.startup = rt.startup;
    if (rt.disabled) {
        // Only the start-up check installs the hook on a disabled runtime (not every rank loaded ARShim): rank 0
        // records what it found, with no collective call and nothing else set up to release.
        stats::finalize_disabled_report(facts);
        trace::stop();
        return MPI_SUCCESS;
    }
    facts.verify_calls = rt.settings.agreed.verify_calls;
    facts.check_args = rt.settings.agreed.check_args;
    facts.tuning = tune::learned();
    stats::finalize_report(facts);
    if (rt.world_rank == 0 || !rt.config_agreed) {
        const tune::CacheWrite cache = tune::write_cache(rt.settings, rt.mpi_version, rt.tune_cache_refused);
        if (!rt.settings.tune_cache.empty())
            trace::event("cache", {{"stage", "write"}, {"written", cache.written}, {"target", cache.target},
                                   {"rules", cache.rules}, {"dropped", cache.dropped}, {"notes", cache.notes},
                                   {"problem", cache.problem}});
        for (const std::string& note : cache.notes) log::info("{}", note);
        if (!cache.problem.empty()) log::warn("{}", cache.problem);
    }
    report_phase_times(rt.world_rank);
    if (trace::on()) {
        const stats::PathTotals totals = stats::path_totals();
        trace::json calls = trace::json::object(), reasons = trace::json::object();
        for (std::size_t p = 0; p < vocab::kPathCount; ++p)
            calls[vocab::kPathNames[p]] = totals.calls[p];
        for (std::size_t r = 0; r < vocab::kReasonCount; ++r)
            if (totals.reasons[r] > 0) reasons[vocab::kReasonNames[r]] = totals.reasons[r];
        trace::event("end", {{"calls", calls}, {"library_reasons", reasons},
                             {"warnings", log::g_warnings.load(std::memory_order_relaxed)},
                             {"errors", log::g_errors.load(std::memory_order_relaxed)}});
        trace::stop();
    }
    // Kept windows first (token order), then the live contexts' (creation order), whose offers are refused now:
    // the same order on every rank (shim/paths/window_pool.h).
    window_pool::release_all();
    CommContext::release_all();
    free_simd_ops();
    return MPI_SUCCESS;
}

void install_finalize_hook() {
    int keyval = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_callback, &keyval, nullptr) != MPI_SUCCESS) return;
    PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
    g_finalize_pending = true;
}

// How the node protocol's ranks wait (shim/paths/node_shm.h WaitPolicy): pausing polls where this node has an online
// CPU for each of its world ranks. Under ARSHIM_VIRTUAL_PPN the virtual nodes share this machine, so every world rank
// counts; without MPI_Init intercepted the node is unknown and the ranks yield early, as when oversubscribed.
void set_wait_policy(Runtime& rt, bool collective) {
    rt.wait.budget = std::chrono::microseconds(rt.settings.spin_us);
    rt.wait.sleep_after = std::chrono::microseconds(rt.settings.sleep_after_us);
    rt.wait.phase_times = rt.settings.phase_times;
    if (!collective || rt.world_node.empty()) return;
    const int my_node = rt.world_node[static_cast<std::size_t>(rt.world_rank)];
    int ranks_here = rt.world_size;
    if (rt.settings.agreed.virtual_ppn == 0)
        ranks_here = static_cast<int>(std::count(rt.world_node.begin(), rt.world_node.end(), my_node));
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    rt.wait.pause = cpus > 0 && ranks_here <= cpus;
}

// Statistics switches and tools, once, before the first call: time calls only when a log or summary reports
// times (one in ARSHIM_STATS_SAMPLE per row), capture call sites only when a log lists them (docs/stats.md
// "Overhead").
void start_statistics(const Runtime& rt) {
    stats::start_clock();
    const bool file = !rt.settings.stats.empty();
    const bool sites = file && rt.settings.stats_callsites;
    const std::string no_python = callsites::warm_up(rt.settings.stats_depth, sites && rt.settings.stats_python);
    if (!no_python.empty() && rt.world_rank == 0)
        log::info("mpi4py call sites name mpi4py's module, not Python lines: {}", no_python);
    stats::g_sample_period.store(rt.settings.stats_sample, std::memory_order_relaxed);
    stats::set_timed(file || stats::summary_wanted(rt.settings));
    stats::set_callsites(sites);
}

// Device buffers (shim/base/device.h): whether any rank has a GPU runtime loaded now, after the library's own
// initialization (a GPU-aware MPI loads its runtime there). Agreed over the world so that every rank classifies the
// same calls; read locally when MPI_Init was not intercepted (communicators then agree when their layout is made).
void find_device_runtime(Runtime& rt, bool collective) {
    if (!rt.settings.device_check) return;
    rt.device_runtime = device::lookup();
    int any = rt.device_runtime != device::Runtime::none ? 1 : 0;
    if (collective) PMPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    device::g_job_has_runtime = any != 0;
    if (rt.world_rank == 0 && any)
        log::info("device check active ({}, on rank 0): calls with device buffers go to the library (docs/device.md)",
                  *device::found() != '\0' ? device::found() : "a GPU runtime on another rank");
    else if (rt.world_rank == 0 && *device::found() != '\0')
        log::info("device check inactive ({}, on rank 0): every call is served as on a host without a GPU "
                  "(docs/device.md)", device::found());
}

// Everything ARShim sets up, in one place and once (runtime() / after_mpi_init() below): settings, logging,
// kernels, MPI handle tables, SIMD ops, the context keyval, statistics, the SHARP library, the finalize hook.
void initialize(bool collective) {
    ReentryGuard guard;
    auto* rt = new Runtime;  // lives until process exit: attribute callbacks may run during MPI_Finalize
    const double started = PMPI_Wtime();
    PMPI_Comm_rank(MPI_COMM_WORLD, &rt->world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &rt->world_size);
    rt->config_agreed = collective;

    // Settings: world rank 0's environment, broadcast, so ranks started with different environments still agree
    // (shim/core/settings.h). First, every rank must have ARShim, or the broadcast would never be matched
    // (shim/core/handshake.h).
    if (collective) {
        ProcessSettings local = settings::own();
        log::configure(level_from(local), rt->world_rank);
        const Handshake handshake =
            check_every_rank_loaded(rt->world_rank, rt->world_size, local.init_timeout_s);
        rt->check_seconds = PMPI_Wtime() - started;
        rt->startup = handshake.found;
        if (!handshake.all_loaded) {
            if (!handshake.problem.empty()) log::warn("{}", handshake.problem);
            rt->settings = std::move(local);
            rt->disabled = true;
            rt->config_agreed = false;
            rt->startup_seconds = rt->check_seconds;
            rt->init_time = PMPI_Wtime();
            char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
            int length = 0;
            PMPI_Get_library_version(version, &length);
            rt->mpi_version = short_library_version(version);  // for the log rank 0 writes at finalize
            // What the check found, as data: this rank's trace (its own ARSHIM_TRACE) and, at finalize, rank 0's
            // statistics log (its own ARSHIM_STATS). Nothing collective: ranks without ARShim never join.
            if (const std::string trace_problem =
                    trace::start(rt->settings.trace, rt->world_rank, rt->settings.follow_symlinks);
                !trace_problem.empty())
                log::warn("{}", trace_problem);  // read from this rank's own environment: each rank says so
            trace::event("startup_check", trace::startup_check(rt->startup));
            if (rt->world_rank == 0 && !rt->settings.stats.empty()) install_finalize_hook();
            g_runtime.store(rt, std::memory_order_release);
            return;
        }
    }
    std::vector<std::string> problems;
    rt->settings = settings::agreed_at_init(collective, rt->world_rank, &problems);
    log::configure(level_from(rt->settings), rt->world_rank);
    if (const std::string trace_problem =
            trace::start(rt->settings.trace, rt->world_rank, rt->settings.follow_symlinks);
        !trace_problem.empty())
        problems.push_back(trace_problem);
    trace::event("startup_check", trace::startup_check(rt->startup));  // checked: false without MPI_Init
    rt->disabled = rt->settings.disable;
#if defined(ARSHIM_FLAVOR_ABI)
    // The same library on every rank: every rank decides alike.
    if (std::string why; !rt->disabled && !abi_version_matches(&why)) {
        if (rt->world_rank == 0) log::warn("{}", why);
        rt->disabled = true;
    }
#endif

    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    PMPI_Get_library_version(version, &length);
    rt->mpi_version = short_library_version(version);
    rt->mpi_version_full = version;

    if (!rt->disabled) {
        std::string isa_warning;
        kernels::select_isa(rt->settings.kernel, &isa_warning);
        if (arshim_test_inject_kernel_fault != nullptr) arshim_test_inject_kernel_fault();
        if (!isa_warning.empty()) problems.push_back("ARSHIM_KERNEL: " + isa_warning);
        build_type_map();
        create_simd_ops();
        if (rt->settings.avoid_library_bugs) {
            rt->library_bugs = bugs::activate(rt->mpi_version_full);
            rt->avoid_library_bugs = !rt->library_bugs.empty();
        }
        CommContext::create_keyval();
        start_statistics(*rt);
        // The SMPI build's charges for computation (shim/base/sim_charge.h); nothing in the real build.
        charge::configure(rt->settings.smpi_copy_bytes_per_s, rt->settings.smpi_reduce_bytes_per_s);
        // Checked calls are never replayed. With settings read locally (MPI_Init not intercepted) whether a call is
        // checked is its communicator's agreed setting, which the replay would not consult: no replay either.
        if (rt->settings.agreed.check_args || !rt->config_agreed) stats::set_no_replay();

        // Policy: rank 0 reads the file and broadcasts its text; every rank parses the identical text.
        const std::string& policy_path = rt->settings.agreed.policy_file;
        rt->policy_name = policy_path;
        int have_file = 0;
        if (!policy_path.empty() && (!collective || rt->world_rank == 0)) {
            std::string problem;
            if (read_policy_file(rt->settings, &rt->policy_text, &problem))
                have_file = 1;
            else
                problems.push_back(problem);
        }
        if (collective) {
            bool present = have_file != 0;
            bcast_optional_string(rt->policy_text, &present, 0, MPI_COMM_WORLD);
            have_file = present ? 1 : 0;
        }
        rt->have_policy_file = have_file != 0;
        // The tuning cache (ARSHIM_TUNE_CACHE): rank 0 reads and checks it, every rank parses the same text.
        std::string cache_text, cache_path;  // cache_path: the file the rules come from (maybe the one beside it)
        if (!collective || rt->world_rank == 0) {
            std::string note;
            bool warn = false;
            cache_text = tune::read_cache(rt->settings, rt->mpi_version, &note, &warn, &cache_path);
            rt->tune_cache_refused = warn;
            if (!rt->settings.tune_cache.empty())
                trace::event("cache", {{"stage", "read"}, {"path", rt->settings.tune_cache},
                                       {"used", !cache_text.empty()}, {"left_untouched", warn}, {"note", note}});
            if (warn) problems.push_back(note);
            else if (!note.empty()) log::info("{}", note);
        }
        if (collective && !rt->settings.tune_cache.empty()) {
            bcast_string(cache_text, 0, MPI_COMM_WORLD);
            bcast_string(cache_path, 0, MPI_COMM_WORLD);
        }
        policy::LoadResult loaded = policy::load_policy(
            rt->settings.config, rt->have_policy_file ? &rt->policy_text : nullptr, policy_path, mpi_flavor(),
            /*check_reachability=*/rt->world_rank == 0 || !collective, cache_text.empty() ? nullptr : &cache_text,
            "tuning cache " + printable(cache_path.empty() ? rt->settings.tune_cache : cache_path, 260));
        rt->policy = loaded.policy;
        problems.insert(problems.end(), loaded.problems.begin(), loaded.problems.end());
        if (collective) {
            const double nodes_started = PMPI_Wtime();
            rt->world_node = probe_world_nodes(rt->settings.agreed.virtual_ppn, rt->world_rank, rt->world_size);
            rt->nodes_seconds = PMPI_Wtime() - nodes_started;
        }
        find_device_runtime(*rt, collective);
        set_wait_policy(*rt, collective);
    }

    for (const std::string& problem : problems) {
        report_config_problem(*rt, problem);
        trace::event("config_problem", {{"message", problem}});
    }
    if (rt->settings.agreed.strict) abort_if_any_problem(!problems.empty(), collective);
    // The SHARP library is loaded now, not on the first sharp-routed call, so that a missing library under
    // ARSHIM_SHARP=on is reported once at start (shim/sharp/lib.h); off never loads it, auto only when a call can be
    // routed to it.
    if (!rt->disabled) load_sharp(*rt, collective);

    if (!rt->disabled) install_finalize_hook();
    if (trace::on()) {
        trace::json settings = trace::json::object();
        for (const auto& [name, value] : rt->settings.pairs()) settings[name] = value;
        trace::event("start", {{"arshim", ARSHIM_VERSION}, {"flavor", mpi_flavor()}, {"library", rt->mpi_version},
                               {"ranks", rt->world_size}, {"settings_agreed", collective}, {"disabled", rt->disabled},
                               {"device_runtime", device::kRuntimeNames[static_cast<int>(rt->device_runtime)]},
                               {"device_check", device::g_job_has_runtime}, {"device_found", device::found()},
                               {"policy_source", rt->policy ? rt->policy->source() : std::string("none")},
                               {"settings", settings}});
    }
    rt->init_time = PMPI_Wtime();
    rt->startup_seconds = rt->init_time - started;

    if (rt->world_rank == 0 && log::enabled(log::Level::info)) {
        std::string settings = rt->settings.describe_set();
        log::info("ARShim {} on {} ({}), {} ranks, kernel {}, policy {}{}{}; settings: {}", ARSHIM_VERSION,
                  rt->mpi_version, mpi_flavor(), rt->world_size, kernels::isa_name(kernels::active().isa),
                  rt->policy ? rt->policy->source() : std::string("none"), rt->disabled ? ", DISABLED" : "",
                  collective ? "" : " (settings read locally: MPI_Init was not intercepted)",
                  settings.empty() ? "defaults" : settings);
        if (rt->avoid_library_bugs)
            log::info("known wrong reductions of {} computed with ARShim's kernels instead: {} (docs/library-bugs.md)",
                      rt->mpi_version, rt->library_bugs);
        const policy::LibraryVersion version = policy::parse_library_version(rt->mpi_version_full);
        if (const policy::LibraryVersion* newest = policy::newer_than_measured(version))
            log::info("{} {} is newer than any release measured ({}): the wrong reductions known in {} are routed "
                      "around until it is measured itself (docs/library-bugs.md)",
                      version.library, version.text(), newest->text(), newest->text());
    }
    g_runtime.store(rt, std::memory_order_release);
}

}  // namespace

const char* mpi_flavor() {
    // shim/base/flavor.h (libarshim-abi.so: the library behind the ABI; SMPI: the collective selector's)
    return policy::flavor_name(policy_flavor());
}

void finalize_now() { finalize_callback(MPI_COMM_SELF, MPI_KEYVAL_INVALID, nullptr, nullptr); }

const Runtime& runtime() {
    Runtime* rt = g_runtime.load(std::memory_order_acquire);
    if (rt != nullptr) return *rt;
    std::call_once(g_once, [] { initialize(false); });
    return *g_runtime.load(std::memory_order_acquire);
}

const Runtime* runtime_if_started() { return g_runtime.load(std::memory_order_acquire); }

void after_mpi_init() {
    std::call_once(g_once, [] { initialize(true); });
}

void report_config_problem(const Runtime& rt, const std::string& message) {
    const bool strict = rt.settings.agreed.strict;
    // Settings are identical on all ranks, so rank 0 speaks for everyone; when they were read locally every rank
    // may have its own problem, and each says so once.
    if (rt.world_rank == 0 || !rt.config_agreed) {
        if (strict)
            log::error("{} (ARSHIM_STRICT=1: aborting)", message);
        else
            log::warn("{}", message);
    }
}

void abort_if_any_problem(bool have_problem, bool collective) {
    int any = have_problem ? 1 : 0;
    if (collective) {
        // Ranks can differ (only rank 0 reads the policy file; nodes can differ in ISA), so agree first. The
        // barrier makes sure every line is written before the first abort: Hydra kills the other ranks the moment
        // one aborts, and a rank killed before it logged left CI with an empty output.
        PMPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
            PMPI_Barrier(MPI_COMM_WORLD);
            // Hydra drops the output it has not forwarded yet when a rank aborts (seen in CI: an empty output
            // even with the barrier); give the launcher time to forward the line. This is the path to an abort.
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
        }
    }
    if (any) PMPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace arshim
