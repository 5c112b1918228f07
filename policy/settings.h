// The settings every component of the shim reads, typed, made once from a Config (MPI-free). The one source of
// per-communicator settings: a communicator's ranks agree on their Config (at MPI_Init, or on the communicator when
// MPI_Init was not intercepted) and every path, mode and the router read that agreement's Settings, never a
// process-wide copy.
#pragma once

#include <cstdint>

#include "policy/config.h"
#include "policy/tune_candidates.h"

namespace arshim {

// ARSHIM_REPRODUCIBLE (docs/reproducible.md).
enum class ReproducibleMode : uint8_t { off, layout, any_np };
// ARSHIM_INTERNODE: how the multi-leader path's leaders reduce across nodes.
enum class InternodeMode : uint8_t { automatic, library, ring };

struct Settings {
    const Config* config = nullptr;  // what the settings were made from (its pairs, its digest, the rarely read)

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
    int64_t max_comms = 0;             // ARSHIM_MAX_COMMS
    int64_t context_after = 1;         // ARSHIM_CONTEXT_AFTER

    // `config` must outlive the settings.
    static Settings from(const Config& config) {
        Settings s;
        s.config = &config;
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
        s.max_comms = config.number(OptionId::max_comms);
        s.context_after = config.number(OptionId::context_after);
        return s;
    }
};

}  // namespace arshim
