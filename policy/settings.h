// The settings every component of the shim reads, typed, made once from a Config (MPI-free): the one place that
// reads an option of the table (policy/config.h) for the shim. Two objects:
//  - Settings: what the ranks of a communicator agree on (at MPI_Init, or on the communicator when MPI_Init was not
//    intercepted); every path, mode and the router read a communicator's agreed Settings (ctx.settings).
//  - ProcessSettings: everything else the shim needs, made once per process from the agreed environment
//    (shim/core/settings.h makes it: world rank 0's ARSHIM_* pairs, broadcast), with the Settings agreed at MPI_Init.
// Nothing in shim/ but shim/core/settings.cpp names an option id or reads a Config (test/unit/check_settings.py).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "policy/config.h"
#include "policy/tune_candidates.h"

namespace arshim {

// ARSHIM_REPRODUCIBLE (docs/reproducible.md).
enum class ReproducibleMode : uint8_t { off, layout, any_np };
// ARSHIM_INTERNODE: how the latency and multi-leader paths' leaders reduce across nodes (shim/paths/internode.h).
enum class InternodeMode : uint8_t { automatic, library, ring, doubling, rabenseifner };
// ARSHIM_SHARP.
enum class SharpMode : uint8_t { automatic, on, off };

struct Settings {
    // modes
    ReproducibleMode reproducible = ReproducibleMode::off;
    policy::tune::Mode tune = policy::tune::Mode::guard;  // off when ARSHIM_PATH forces a path: the user's experiment
    uint32_t tune_after = 1;    // ARSHIM_TUNE_AFTER
    uint32_t verify_calls = 0;  // ARSHIM_VERIFY
    bool check_args = false;    // ARSHIM_CHECK_ARGS, or verify mode (which includes it: docs/verify.md)
    bool strict = false;        // ARSHIM_STRICT
    bool forced_path = false;   // ARSHIM_PATH names a path

    // paths
    InternodeMode internode = InternodeMode::automatic;
    uint64_t shm_max = 0;              // ARSHIM_SHM_MAX
    bool shm_reuse = true;             // ARSHIM_SHM_REUSE
    int64_t virtual_ppn = 0;           // ARSHIM_VIRTUAL_PPN
    uint64_t sharp_sat_threshold = 0;  // ARSHIM_SHARP_SAT_THRESHOLD
    SharpMode sharp = SharpMode::automatic;  // ARSHIM_SHARP (the library is loaded once per process: shim/sharp/lib.h)
    std::string sharp_mode_name = "auto";    // ARSHIM_SHARP as written
    std::string sharp_lib;                   // ARSHIM_SHARP_LIB
    int64_t max_comms = 0;             // ARSHIM_MAX_COMMS
    int64_t context_after = 1;         // ARSHIM_CONTEXT_AFTER
    std::string policy_file;           // ARSHIM_POLICY ("" = the built-in policy)

    static Settings from(const Config& config) {
        Settings s;
        s.reproducible = static_cast<ReproducibleMode>(config.number(OptionId::reproducible));  // choice order
        s.forced_path = config.text(OptionId::path) != "auto";
        s.tune = s.forced_path ? policy::tune::Mode::off
                               : static_cast<policy::tune::Mode>(config.number(OptionId::tune));  // choice order
        s.tune_after = static_cast<uint32_t>(config.number(OptionId::tune_after));
        s.verify_calls = static_cast<uint32_t>(config.number(OptionId::verify));
        s.check_args = config.flag(OptionId::check_args) || s.verify_calls > 0;
        s.strict = config.flag(OptionId::strict);
        s.internode = static_cast<InternodeMode>(config.number(OptionId::internode));  // choice order
        s.shm_max = static_cast<uint64_t>(config.number(OptionId::shm_max));
        s.shm_reuse = config.text(OptionId::shm_reuse) != "off";
        s.virtual_ppn = config.number(OptionId::virtual_ppn);
        s.sharp_sat_threshold = static_cast<uint64_t>(config.number(OptionId::sharp_sat_threshold));
        s.sharp_mode_name = config.text(OptionId::sharp);
        s.sharp = s.sharp_mode_name == "off" ? SharpMode::off
                  : s.sharp_mode_name == "on" ? SharpMode::on
                                              : SharpMode::automatic;
        s.sharp_lib = config.text(OptionId::sharp_lib);
        s.max_comms = config.number(OptionId::max_comms);
        s.context_after = config.number(OptionId::context_after);
        s.policy_file = config.text(OptionId::policy);
        return s;
    }
};

// What the process reads once, at start, beside the agreed Settings. Every field is the typed value of one option.
struct ProcessSettings {
    Config config;      // what they were made from: the pairs (broadcast, echoed), the digest, the policy's overrides
    Settings agreed;    // the communicators' Settings as agreed at MPI_Init (made from `config`)

    // start-up
    bool disable = false;      // ARSHIM_DISABLE
    int log_level = 2;         // ARSHIM_LOG, in the order of log::Level (off, error, warn, info, debug)
    int init_timeout_s = 30;   // ARSHIM_INIT_TIMEOUT
    std::string kernel;        // ARSHIM_KERNEL ("auto" or an ISA)
    bool avoid_library_bugs = true;  // ARSHIM_LIBRARY_BUGS=avoid
    bool device_check = true;        // ARSHIM_DEVICE_CHECK=auto
    uint64_t policy_max_bytes = 0;   // ARSHIM_POLICY_MAX_BYTES (the policy file, and the tuning cache's)
    std::string tune_cache;          // ARSHIM_TUNE_CACHE ("" = none)
    std::string tune_name;           // ARSHIM_TUNE as written (the log's and the summary's tuning mode)
    // How the node protocol's ranks wait (shim/paths/path_context.h WaitPolicy, made from these and the node's CPUs).
    int64_t spin_us = 0;             // ARSHIM_SPIN_US
    int64_t sleep_after_us = 1000;   // ARSHIM_SLEEP_AFTER_US
    bool phase_times = false;        // ARSHIM_PHASE_TIMES (debug: the node protocol's phases timed)
    int64_t smpi_copy_bytes_per_s = 0;       // ARSHIM_SMPI_COPY_BYTES_PER_S
    int64_t smpi_reduce_bytes_per_s = 0;     // ARSHIM_SMPI_REDUCE_BYTES_PER_S

    // statistics and trace
    std::string stats;               // ARSHIM_STATS ("" = no log file)
    int stats_summary = -1;          // ARSHIM_STATS_SUMMARY: -1 auto, 0, 1
    bool stats_callsites = true;     // ARSHIM_STATS_CALLSITES
    int64_t stats_depth = 1;         // ARSHIM_STATS_DEPTH
    bool stats_python = true;        // ARSHIM_STATS_PYTHON
    uint32_t stats_sample = 64;      // ARSHIM_STATS_SAMPLE
    bool stats_per_rank = false;     // ARSHIM_STATS_PER_RANK
    bool follow_symlinks = false;    // ARSHIM_STATS_FOLLOW_SYMLINKS (the log, the trace, the tuning cache)
    std::string trace;               // ARSHIM_TRACE ("" = none)

    static ProcessSettings from(Config made) {
        ProcessSettings p;
        p.config = std::move(made);
        const Config& config = p.config;
        p.agreed = Settings::from(config);
        p.disable = config.flag(OptionId::disable);
        p.log_level = static_cast<int>(config.number(OptionId::log));  // choice order
        p.init_timeout_s = static_cast<int>(config.number(OptionId::init_timeout));
        p.kernel = config.text(OptionId::kernel);
        p.avoid_library_bugs = config.text(OptionId::library_bugs) == "avoid";
        p.device_check = config.text(OptionId::device_check) != "off";
        p.policy_max_bytes = static_cast<uint64_t>(config.number(OptionId::policy_max_bytes));
        p.tune_cache = config.text(OptionId::tune_cache);
        p.tune_name = config.text(OptionId::tune);
        p.spin_us = config.number(OptionId::spin_us);
        p.sleep_after_us = config.number(OptionId::sleep_after_us);
        p.phase_times = config.flag(OptionId::phase_times);
        p.smpi_copy_bytes_per_s = config.number(OptionId::smpi_copy_bytes_per_s);
        p.smpi_reduce_bytes_per_s = config.number(OptionId::smpi_reduce_bytes_per_s);
        p.stats = config.text(OptionId::stats);
        p.stats_summary = static_cast<int>(config.number(OptionId::stats_summary));  // -1 = auto
        p.stats_callsites = config.flag(OptionId::stats_callsites);
        p.stats_depth = config.number(OptionId::stats_depth);
        p.stats_python = config.flag(OptionId::stats_python);
        p.stats_sample = static_cast<uint32_t>(config.number(OptionId::stats_sample));
        p.stats_per_rank = config.flag(OptionId::stats_per_rank);
        p.follow_symlinks = config.flag(OptionId::stats_follow_symlinks);
        p.trace = config.text(OptionId::trace);
        return p;
    }

    // The pairs the settings were made from (what is broadcast, and echoed at start), and those set, as
    // "ARSHIM_X=value ..." ("" when none).
    const EnvPairs& pairs() const { return config.pairs(); }
    std::string describe_set() const { return config.describe_set(); }
    // Every option of the table, in display order, with its value's text and whether the environment set it (the
    // statistics log's echo of the settings).
    template <typename Fn>
    void for_each_option(Fn&& fn) const {
        for (const OptionSpec& spec : option_table()) {
            const OptionValue& v = config.value(spec.id);
            fn(spec.name, v.text, v.source == OptionSource::environment);
        }
    }

    // Whether `n` is a sampling period ARSHIM_STATS_SAMPLE allows (arshim_stats_set_sample changes it at run time).
    static bool sample_period_allowed(int64_t n) {
        const OptionSpec& spec = option_spec(OptionId::stats_sample);
        return n >= spec.min && n <= spec.max;
    }
};

}  // namespace arshim
