// ARShim configuration: one table of ARSHIM_* options, parsed once into an immutable Config.
//
// The table (kOptions in config.cpp) is the single source of truth: names, types, defaults, allowed values and
// the documentation the README lists. Config never calls getenv itself: the shim reads the environment on rank 0,
// broadcasts the NAME=VALUE pairs, and every rank builds the same Config from the same pairs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arshim {

enum class OptionId : uint8_t {
    disable,
    log,
    strict,
    virtual_ppn,
    path,
    segments,
    segment_bytes,
    window,
    leaders,
    pipeline_k,
    internode,
    kernel_for_mpi,
    library_bugs,
    verify,
    check_args,
    reproducible,
    tune,
    tune_cache,
    tune_after,
    kernel,
    policy,
    policy_mode,
    policy_max_bytes,
    shm_max,
    shm_reuse,
    spin_us,
    sleep_after_us,
    context_after,
    max_comms,
    stats,
    stats_summary,
    stats_callsites,
    stats_depth,
    stats_python,
    stats_sample,
    stats_per_rank,
    stats_follow_symlinks,
    trace,
    device_check,
    init_timeout,
    sharp,
    sharp_lib,
    sharp_sat_threshold,
    phase_times,
    smpi_copy_bytes_per_s,
    smpi_reduce_bytes_per_s,
    count
};
constexpr std::size_t kOptionCount = static_cast<std::size_t>(OptionId::count);

enum class OptionType : uint8_t {
    flag,     // 1/true/on/yes or 0/false/off/no
    integer,  // decimal, within [min, max]
    size,     // bytes with optional K/M/G suffix (binary: 64K = 64KiB = 65536)
    choice,   // one of the '|'-separated words in `choices`
    text,     // free text (paths)
};

struct OptionSpec {
    OptionId id;
    const char* name;           // full variable name, e.g. "ARSHIM_PATH"
    OptionType type;
    const char* default_value;  // as a user would write it; "" for unset text
    const char* choices;        // for choice: "a|b|c"; otherwise nullptr
    int64_t min;                // for integer/size
    int64_t max;
    const char* doc;
};

// The option table, in display order.
const std::array<OptionSpec, kOptionCount>& option_table();
const OptionSpec& option_spec(OptionId id);

enum class OptionSource : uint8_t { builtin, environment };

struct OptionValue {
    int64_t number = 0;  // flag (0/1), integer, size, choice index
    std::string text;    // canonical text form (the chosen word for choice, the path for text)
    OptionSource source = OptionSource::builtin;
};

using EnvPairs = std::vector<std::pair<std::string, std::string>>;

// Parse helpers, exposed for tests and for the policy file parser (same size syntax everywhere).
bool parse_flag(std::string_view text, bool* out);
bool parse_size(std::string_view text, int64_t* out);
bool parse_integer(std::string_view text, int64_t* out);
std::string format_size(int64_t bytes);
// What `spec` accepts, in words ("one of auto|native|...", "an integer in [0, 64]", ...), for messages and docs.
std::string allowed_values(const OptionSpec& spec);

class Config {
public:
    // Built-in defaults only.
    Config();

    // Builds a Config from ARSHIM_* pairs. Every problem (unknown variable, bad value) appends one
    // self-contained line to `problems` naming the variable, the bad value and what is allowed; the option then
    // keeps its default. Pairs whose name does not start with ARSHIM_ are ignored.
    static Config from_pairs(const EnvPairs& pairs, std::vector<std::string>* problems);

    // The ARSHIM_* pairs of an environment block (envp-style, NULL-terminated).
    static EnvPairs pairs_from_environ(char** envp);

    const OptionValue& value(OptionId id) const { return values_[static_cast<std::size_t>(id)]; }
    bool flag(OptionId id) const { return value(id).number != 0; }
    int64_t number(OptionId id) const { return value(id).number; }
    const std::string& text(OptionId id) const { return value(id).text; }
    bool is_set(OptionId id) const { return value(id).source == OptionSource::environment; }

    // The raw pairs this Config was built from (what the shim broadcasts).
    const EnvPairs& pairs() const { return pairs_; }

    // "ARSHIM_X=value" for every option set from the environment, space separated ("" when none).
    std::string describe_set() const;

    // Stable digest of the effective values, used to prove that all ranks of a communicator agree.
    uint64_t digest() const;

    // Serialization of the pairs for broadcast: NAME\0VALUE\0NAME\0VALUE\0...
    static std::string serialize(const EnvPairs& pairs);
    static EnvPairs deserialize(std::string_view blob);

private:
    std::array<OptionValue, kOptionCount> values_;
    EnvPairs pairs_;
};

}  // namespace arshim
