#include "config.h"

#include "kernels/vocabulary.h"
#include "policy/path_rows.h"
#include "policy/text.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>

namespace arshim {

namespace {

#define ARSHIM_PATH_CHOICE(name, Params) "|" #name

constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();
constexpr int64_t kTiB = int64_t{1} << 40;

// One row per ARSHIM_* variable. The README's variable table is checked against this table by a unit test.
const std::array<OptionSpec, kOptionCount> kOptions = {{
    {OptionId::disable, "ARSHIM_DISABLE", OptionType::flag, "0", nullptr, 0, 1,
     "1 makes the shim a pure pass-through to PMPI_Allreduce (nothing is intercepted or counted)."},
    {OptionId::log, "ARSHIM_LOG", OptionType::choice, "warn", "off|error|warn|info|debug", 0, 0,
     "Log level of the shim's messages on stderr, each prefixed 'arshim[rank]'. info prints one line at init."},
    {OptionId::strict, "ARSHIM_STRICT", OptionType::flag, "0", nullptr, 0, 1,
     "1 turns any configuration error into MPI_Abort instead of a warning and the built-in setting."},
    {OptionId::virtual_ppn, "ARSHIM_VIRTUAL_PPN", OptionType::integer, "0", nullptr, 0, 1 << 20,
     "Tests and emulation only: every k consecutive ranks of MPI_COMM_WORLD form one node (0 = real nodes)."},
    // The choices are "auto" and the path rows' names (policy/path_rows.h), joined at compile time.
    {OptionId::path, "ARSHIM_PATH", OptionType::choice, "auto", "auto" ARSHIM_PATH_ROWS(ARSHIM_PATH_CHOICE), 0, 0,
     "Force one path for every call it can serve (auto = follow the policy). Calls it cannot serve go native, "
     "counted."},
    {OptionId::segments, "ARSHIM_SEGMENTS", OptionType::integer, "0", nullptr, 0, 65536,
     "Pipelined path: fixed number of segments per call (0 = policy)."},
    {OptionId::segment_bytes, "ARSHIM_SEGMENT_BYTES", OptionType::size, "0", nullptr, 0, kTiB,
     "Pipelined path: fixed segment size, e.g. 256K (0 = policy). Wins over ARSHIM_SEGMENTS when both are set."},
    {OptionId::window, "ARSHIM_WINDOW", OptionType::integer, "0", nullptr, 0, 4096,
     "Pipelined path: most non-blocking requests in flight (0 = policy)."},
    {OptionId::leaders, "ARSHIM_LEADERS", OptionType::integer, "0", nullptr, 0, 4096,
     "Multi-leader path: leaders per node, clamped to 1..ppn (0 = policy)."},
    {OptionId::pipeline_k, "ARSHIM_PIPELINE_K", OptionType::integer, "0", nullptr, 0, 1024,
     "Multi-leader path: pieces each inter-node allreduce is pipelined in (0 = policy)."},
    {OptionId::internode, "ARSHIM_INTERNODE", OptionType::choice, "auto",
     "auto|library|ring|doubling|rabenseifner", 0, 0,
     "Latency and multi-leader paths across nodes: how each leader reduces its vector or partition with the other "
     "nodes' leaders. library: the MPI library's allreduce (k pieces with ARSHIM_PIPELINE_K); ring: ARShim's ring "
     "(reduce-scatter then allgather, 2(h-1) steps, every node sends 2(h-1)/h of the partition, ARShim's kernels); "
     "doubling: ARShim's recursive doubling (log2 h exchanges of the whole partition, ARShim's kernels); "
     "rabenseifner: ARShim's reduce-scatter by recursive halving then allgather by recursive doubling (2 log2 h "
     "exchanges, 2(h-1)/h of the partition, ARShim's kernels); auto: the ring where the node count is not a power of "
     "two and at most 7 and a partition holds at least 64 KiB, doubling where the node's leaders send at most 4 KiB "
     "per exchange in all, rabenseifner from 8 nodes where Open MPI's own rules would send the whole partition at "
     "every step and the node's leaders send at least 32 KiB, else the library (docs/cluster.md \"Three nodes\", "
     "docs/scale.md \"Small calls at hundreds of nodes\", \"Third pass\")."},
    {OptionId::kernel_for_mpi, "ARSHIM_KERNEL_FOR_MPI", OptionType::choice, "auto", "auto|native|simd", 0, 0,
     "Op handed to MPI by the paths: the predefined op (native) or ARShim's SIMD op (simd); auto = policy."},
    {OptionId::library_bugs, "ARSHIM_LIBRARY_BUGS", OptionType::choice, "avoid", "avoid|ignore", 0, 0,
     "avoid: calls that hit a known wrong reduction of this MPI library (docs/library-bugs.md) are computed with "
     "ARShim's kernels; ignore: left to the library, reproducing its results exactly."},
    {OptionId::verify, "ARSHIM_VERIFY", OptionType::integer, "0", nullptr, 0, 1 << 30,
     "Verify mode: the first N calls of each (communicator, size bucket, datatype, op) that an ARShim path serves are "
     "also computed by the library and compared (exactly, or within the reassociation bound for floating-point "
     "sums and products); mismatches are reported and counted; the result is never changed (0 = off). Includes the "
     "argument check (ARSHIM_CHECK_ARGS) on every call."},
    {OptionId::check_args, "ARSHIM_CHECK_ARGS", OptionType::flag, "0", nullptr, 0, 1,
     "1: before every call, one small allreduce checks that all ranks passed the same count, datatype signature, op "
     "and MPI_IN_PLACE use; a mismatch is reported on every rank and returns MPI_ERR_ARG instead of hanging."},
    {OptionId::reproducible, "ARSHIM_REPRODUCIBLE", OptionType::choice, "off", "off|layout|any-np", 0, 0,
     "layout: floating-point SUM and PROD are summed in communicator rank order on every path, layout, ISA and MPI "
     "(the same bits run after run); any-np: float and double SUM are exact before one rounding, the same bits for "
     "any number of ranks and any order (docs/reproducible.md)."},
    {OptionId::tune, "ARSHIM_TUNE", OptionType::choice, "guard", "off|guard|online", 0, 0,
     "guard: where the policy chose an ARShim path, a key's first calls alternate it with the library's allreduce "
     "and keep the faster (agreed by all ranks); online: also tries native, neighbouring leader counts and segment "
     "sizes and the other host path; off: the policy only (docs/tuning.md)."},
    {OptionId::tune_cache, "ARSHIM_TUNE_CACHE", OptionType::text, "", nullptr, 0, 0,
     "File where rank 0 keeps what online tuning learned (policy rules): read at start ahead of the policy, "
     "merged into at finalize under a lock; only an absent file or ARShim's own cache is written, another origin's "
     "cache is kept and this one lives beside it, anything else is left untouched; empty = not kept."},
    {OptionId::tune_after, "ARSHIM_TUNE_AFTER", OptionType::integer, "32", nullptr, 1, 1 << 20,
     "A key (communicator, size bucket, type, op) starts tuning at its Nth call; its calls before run the policy's "
     "choice, so a key with fewer calls is never explored and a short job pays nothing for the exploration "
     "(1 = from the first call; docs/tuning.md \"What the exploration costs\")."},
    {OptionId::kernel, "ARSHIM_KERNEL", OptionType::choice, "auto", "auto|scalar|avx2|avx512|neon|sve", 0, 0,
     "SIMD level of ARShim's reduction kernels; a level the CPU lacks falls back to the best available, "
     "with a warning."},
    {OptionId::policy, "ARSHIM_POLICY", OptionType::text, "", nullptr, 0, 0,
     "Policy file (TOML) read by rank 0 and broadcast; empty = the built-in table (policy/default.toml)."},
    {OptionId::policy_mode, "ARSHIM_POLICY_MODE", OptionType::choice, "replace", "replace|prepend", 0, 0,
     "replace: the file's rules replace the built-in table; prepend: they are tried before the built-in rules."},
    {OptionId::policy_max_bytes, "ARSHIM_POLICY_MAX_BYTES", OptionType::size, "1M", nullptr, 4096, int64_t{1} << 30,
     "Largest policy file rank 0 reads (a larger one, or anything but a regular file, is rejected: built-in table)."},
    {OptionId::shm_max, "ARSHIM_SHM_MAX", OptionType::size, "64M", nullptr, 64 * 1024, kTiB,
     "Multi-leader path: largest node shared-memory window per communicator; larger buffers go in chunks."},
    {OptionId::shm_reuse, "ARSHIM_SHM_REUSE", OptionType::choice, "on", "on|off", 0, 0,
     "on: a freed communicator's node window (up to 4 MiB) is kept, one per node group, and a later communicator of "
     "the same node ranks takes it over for one small allreduce instead of a new window (docs/paths.md \"Reused "
     "windows\"); off: every communicator makes its own."},
    {OptionId::spin_us, "ARSHIM_SPIN_US", OptionType::integer, "0", nullptr, 0, 1000000,
     "Node shared-memory protocol (multileader, reproducible, SHARP), where the node has a CPU for each rank: "
     "microseconds a waiting rank keeps polling, pausing, before it yields the CPU between polls (0 = 16 polls, "
     "~0.4 us). Where the node's ranks outnumber its CPUs, ranks yield after 64 polls whatever the setting."},
    {OptionId::sleep_after_us, "ARSHIM_SLEEP_AFTER_US", OptionType::integer, "1000", nullptr, 0, 10000000,
     "Node shared-memory protocol across nodes (multileader, SHARP): microseconds a waiting rank polls and yields "
     "before it sleeps until woken (a futex on the window's counter), so that long inter-node steps do not lose CPU "
     "time to waiting ranks; 0 = never sleeps (yields for as long as it waits)."},
    {OptionId::context_after, "ARSHIM_CONTEXT_AFTER", OptionType::integer, "8", nullptr, 1, 1 << 20,
     "A communicator's context is built at its Nth allreduce; the calls before go native, counted as "
     "cold_communicator, so short-lived communicators never pay for a path's set-up such as a node window (1 = at "
     "the first call; MPI_COMM_WORLD and forced paths always start at once)."},
    {OptionId::max_comms, "ARSHIM_MAX_COMMS", OptionType::integer, "64", nullptr, 1, 1 << 20,
     "Most communicators that hold ARShim's node windows and helper communicators at once, per process (each costs "
     "MPICH 2-5 of its 2048 communicator ids, which the program may need); calls on further communicators run "
     "native, counted as comm_limit (docs/paths.md \"Communicators ARShim makes\")."},
    {OptionId::stats, "ARSHIM_STATS", OptionType::text, "", nullptr, 0, 0,
     "Write the call-statistics log (JSON) to this path at finalize; %r = rank, %j = job id."},
    {OptionId::stats_summary, "ARSHIM_STATS_SUMMARY", OptionType::flag, "auto", nullptr, 0, 1,
     "Print a short summary table on stderr from rank 0 at finalize (default: on when ARSHIM_STATS is set)."},
    {OptionId::stats_callsites, "ARSHIM_STATS_CALLSITES", OptionType::flag, "1", nullptr, 0, 1,
     "Record call sites (caller addresses via libunwind) in the statistics."},
    {OptionId::stats_depth, "ARSHIM_STATS_DEPTH", OptionType::integer, "1", nullptr, 1, 16,
     "Stack frames used to tell call sites apart (1 = the caller of MPI_Allreduce)."},
    {OptionId::stats_python, "ARSHIM_STATS_PYTHON", OptionType::flag, "1", nullptr, 0, 1,
     "Calls made through mpi4py: the call site is the Python caller (function, file:line; the GIL is taken for it); "
     "0 records mpi4py's extension module instead."},
    {OptionId::stats_sample, "ARSHIM_STATS_SAMPLE", OptionType::integer, "64", nullptr, 1, 65536,
     "Time one call in N per statistics row, after each row's first 8 calls; every call is still counted (calls and "
     "bytes exact, times estimated from the timed calls, with their error). 1 times every call."},
    {OptionId::stats_per_rank, "ARSHIM_STATS_PER_RANK", OptionType::flag, "0", nullptr, 0, 1,
     "Also write one statistics file per rank."},
    {OptionId::stats_follow_symlinks, "ARSHIM_STATS_FOLLOW_SYMLINKS", OptionType::flag, "0", nullptr, 0, 1,
     "1 writes the statistics log through a symbolic link at its path; 0 refuses (docs/stats.md, 'Where the log "
     "goes')."},
    {OptionId::trace, "ARSHIM_TRACE", OptionType::text, "", nullptr, 0, 0,
     "Write what ARShim decided, one JSON object per line, as it happens (settings, configuration problems, the "
     "tuning cache, each key's route, tuning decisions, mismatches); %r = rank (one file per rank), else rank 0 only; "
     "empty = off (docs/stats.md \"The trace\")."},
    {OptionId::device_check, "ARSHIM_DEVICE_CHECK", OptionType::choice, "auto", "auto|off", 0, 0,
     "Device (GPU) buffers: auto classifies each served call's buffers through the CUDA, ROCm or Level Zero runtime "
     "when some rank had one loaded at MPI_Init, and sends calls with any device buffer to the library "
     "(device_memory); off never classifies (only for jobs that pass host buffers alone to MPI_Allreduce: a device "
     "buffer would then crash). docs/device.md."},
    {OptionId::init_timeout, "ARSHIM_INIT_TIMEOUT", OptionType::integer, "30", nullptr, 1, 3600,
     "Seconds a rank waits at MPI_Init for each rank it checks (its children in the start-up check's tree; each "
     "level above waits a step longer) to learn that every rank loaded the same ARShim; otherwise ARShim is "
     "disabled on every rank. Read from each rank's own environment."},
    {OptionId::sharp, "ARSHIM_SHARP", OptionType::choice, "auto", "auto|on|off", 0, 0,
     "SHARP in-network path: auto loads the library if present and a rule or ARSHIM_PATH can route calls to it, "
     "on warns when it cannot, off never loads it."},
    {OptionId::sharp_lib, "ARSHIM_SHARP_LIB", OptionType::text, "libsharp_coll.so", nullptr, 0, 0,
     "File name or path of the SHARP collective library to dlopen."},
    {OptionId::sharp_sat_threshold, "ARSHIM_SHARP_SAT_THRESHOLD", OptionType::size, "8K", nullptr, 0, kTiB,
     "SHARP: messages at or above this size use streaming aggregation (SAT), smaller ones low-latency (LLT)."},
    {OptionId::phase_times, "ARSHIM_PHASE_TIMES", OptionType::flag, "0", nullptr, 0, 1,
     "Debug: 1 times the phases of the node shared-memory protocol (multileader, reproducible: copy in, wait for "
     "inputs, reduce, inter-node step, wait for results, copy out) and prints each rank's sums at MPI_Finalize "
     "(docs/cluster.md \"Where the time goes\")."},
    {OptionId::smpi_copy_bytes_per_s, "ARSHIM_SMPI_COPY_BYTES_PER_S", OptionType::integer, "0", nullptr, 0,
     int64_t{1} << 50,
     "SMPI build only (arshim simulate sets it): simulated time charged for ARShim's node copies, in bytes copied "
     "per second on one rank of a node with all its ranks active; 0 charges nothing. Ignored by the real "
     "libraries. docs/scale.md \"Computation\"."},
    {OptionId::smpi_reduce_bytes_per_s, "ARSHIM_SMPI_REDUCE_BYTES_PER_S", OptionType::integer, "0", nullptr, 0,
     int64_t{1} << 50,
     "SMPI build only (arshim simulate sets it): simulated time charged for every reduction, ARShim's and the "
     "library's (through ARShim's op), in bytes reduced per second on one rank of a node with all its ranks "
     "active; 0 charges nothing. Ignored by the real libraries. docs/scale.md \"Computation\"."},
}};

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

// Index of `word` in "a|b|c", or -1.
int choice_index(const char* choices, std::string_view word) {
    int index = 0;
    std::string_view rest(choices);
    while (true) {
        std::size_t bar = rest.find('|');
        std::string_view candidate = rest.substr(0, bar);
        if (iequals(candidate, word)) return index;
        if (bar == std::string_view::npos) return -1;
        rest.remove_prefix(bar + 1);
        ++index;
    }
}

std::string choice_word(const char* choices, int index) {
    std::string_view rest(choices);
    for (int i = 0; i < index; ++i) rest.remove_prefix(rest.find('|') + 1);
    return std::string(rest.substr(0, rest.find('|')));
}

bool is_tristate(const OptionSpec& spec) {
    return spec.type == OptionType::flag && std::strcmp(spec.default_value, "auto") == 0;
}

}  // namespace

std::string allowed_values(const OptionSpec& spec) {
    switch (spec.type) {
    case OptionType::flag:
        return is_tristate(spec) ? "auto, 1/true/on/yes or 0/false/off/no" : "1/true/on/yes or 0/false/off/no";
    case OptionType::integer:
        return "an integer in [" + std::to_string(spec.min) + ", " + std::to_string(spec.max) + "]";
    case OptionType::size:
        return "a size in [" + format_size(spec.min) + ", " + format_size(spec.max) + "] such as 64K, 4MiB, 1G";
    case OptionType::choice: return std::string("one of ") + spec.choices;
    case OptionType::text: return "any text";
    }
    return "";
}

namespace {

// Parses `text` as a value of `spec`; false when it is not allowed.
bool parse_value(const OptionSpec& spec, std::string_view text, OptionValue* out) {
    text = trim(text);
    switch (spec.type) {
    case OptionType::flag: {
        bool b = false;
        if (is_tristate(spec) && iequals(text, "auto")) {  // tri-state flag: the consumer decides
            out->number = -1;
            out->text = "auto";
            return true;
        }
        if (!parse_flag(text, &b)) return false;
        out->number = b ? 1 : 0;
        out->text = b ? "1" : "0";
        return true;
    }
    case OptionType::integer: {
        int64_t v = 0;
        if (!parse_integer(text, &v) || v < spec.min || v > spec.max) return false;
        out->number = v;
        out->text = std::to_string(v);
        return true;
    }
    case OptionType::size: {
        int64_t v = 0;
        // 0 always means "not set, let the policy decide" where the default is 0.
        if (!parse_size(text, &v)) return false;
        bool zero_allowed = v == 0 && std::strcmp(spec.default_value, "0") == 0;
        if (!zero_allowed && (v < spec.min || v > spec.max)) return false;
        out->number = v;
        out->text = format_size(v);
        return true;
    }
    case OptionType::choice: {
        int index = choice_index(spec.choices, text);
        if (index < 0) return false;
        out->number = index;
        out->text = choice_word(spec.choices, index);
        return true;
    }
    case OptionType::text:
        out->number = 0;
        out->text = std::string(text);
        return true;
    }
    return false;
}

OptionValue default_value(const OptionSpec& spec) {
    OptionValue v;
    bool ok = parse_value(spec, spec.default_value, &v);
    (void)ok;  // the table's own defaults are checked by a unit test
    v.source = OptionSource::builtin;
    return v;
}

}  // namespace

const std::array<OptionSpec, kOptionCount>& option_table() { return kOptions; }

const OptionSpec& option_spec(OptionId id) { return kOptions[static_cast<std::size_t>(id)]; }

bool parse_flag(std::string_view text, bool* out) {
    text = trim(text);
    for (const char* word : {"1", "true", "on", "yes"})
        if (iequals(text, word)) return *out = true, true;
    for (const char* word : {"0", "false", "off", "no"})
        if (iequals(text, word)) return *out = false, true;
    return false;
}

bool parse_integer(std::string_view text, int64_t* out) {
    text = trim(text);
    if (text.empty() || text.size() > 20) return false;
    std::string copy(text);
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(copy.c_str(), &end, 10);
    if (errno != 0 || end != copy.c_str() + copy.size()) return false;
    *out = v;
    return true;
}

bool parse_size(std::string_view text, int64_t* out) {
    text = trim(text);
    std::size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    if (digits == 0 || digits > 19) return false;
    int64_t base = 0;
    if (!parse_integer(text.substr(0, digits), &base)) return false;
    std::string_view suffix = trim(text.substr(digits));
    int shift = 0;
    if (suffix.empty() || iequals(suffix, "b")) shift = 0;
    else if (iequals(suffix, "k") || iequals(suffix, "kb") || iequals(suffix, "kib")) shift = 10;
    else if (iequals(suffix, "m") || iequals(suffix, "mb") || iequals(suffix, "mib")) shift = 20;
    else if (iequals(suffix, "g") || iequals(suffix, "gb") || iequals(suffix, "gib")) shift = 30;
    else if (iequals(suffix, "t") || iequals(suffix, "tb") || iequals(suffix, "tib")) shift = 40;
    else return false;
    if (base > (std::numeric_limits<int64_t>::max() >> shift)) return false;
    *out = base << shift;
    return true;
}

std::string format_size(int64_t bytes) {
    static const char* const units[] = {"", "K", "M", "G", "T"};
    int unit = 0;
    while (unit < 4 && bytes != 0 && bytes % 1024 == 0) {
        bytes /= 1024;
        ++unit;
    }
    return std::to_string(bytes) + units[unit];
}

Config::Config() {
    for (const OptionSpec& spec : kOptions) values_[static_cast<std::size_t>(spec.id)] = default_value(spec);
}

namespace {

// ARSHIM_* variables that are not settings of the library and are not warned about: what package managers and
// environment modules set for every package (Spack's and sites' <NAME>_ROOT, _DIR, _HOME, _PREFIX: the Lmod
// template in tools/packaging sets ARSHIM_ROOT), and the launcher's and the tools' own (ARSHIM_SUMMARY_PROGRAM:
// `arshim report`'s summary formatter, set for the statistics tests, whose ranks inherit it).
constexpr const char* kNotSettings[] = {"ARSHIM_ROOT", "ARSHIM_DIR", "ARSHIM_HOME", "ARSHIM_PREFIX",
                                        "ARSHIM_LIB_DIR", "ARSHIM_BUILD_DIR", "ARSHIM_SUMMARY_PROGRAM"};

bool is_setting_name(const std::string& name) {
    if (name.rfind("ARSHIM_", 0) != 0) return false;
    for (const char* other : kNotSettings)
        if (name == other) return false;
    return true;
}

}  // namespace

Config Config::from_pairs(const EnvPairs& pairs, std::vector<std::string>* problems) {
    Config config;
    for (const auto& [name, text] : pairs) {
        if (!is_setting_name(name)) continue;
        config.pairs_.emplace_back(name, text);
        const OptionSpec* spec = nullptr;
        for (const OptionSpec& candidate : kOptions)
            if (name == candidate.name) spec = &candidate;
        if (spec == nullptr) {
            if (problems)
                problems->push_back(printable(name, 64) + ": unknown variable (ignored); the ARSHIM_* variables are listed by "
                                           "'arshim policy options' and in README.md");
            continue;
        }
        OptionValue value;
        if (!parse_value(*spec, text, &value)) {
            if (problems)
                problems->push_back(name + "=\"" + printable(text, 120, true) + "\": expected " + allowed_values(*spec) +
                                    "; using the default (" + spec->default_value + ")");
            continue;
        }
        value.source = OptionSource::environment;
        config.values_[static_cast<std::size_t>(spec->id)] = std::move(value);
    }
    return config;
}

EnvPairs Config::pairs_from_environ(char** envp) {
    EnvPairs pairs;
    for (char** entry = envp; entry != nullptr && *entry != nullptr; ++entry) {
        std::string_view kv(*entry);
        if (kv.rfind("ARSHIM_", 0) != 0) continue;
        std::size_t eq = kv.find('=');
        if (eq == std::string_view::npos) continue;
        pairs.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    }
    return pairs;
}

std::string Config::describe_set() const {
    std::string out;
    for (const OptionSpec& spec : kOptions) {
        const OptionValue& v = value(spec.id);
        if (v.source != OptionSource::environment) continue;
        if (!out.empty()) out += ' ';
        out += spec.name;
        out += '=';
        out += v.text;
    }
    return out;
}

uint64_t Config::digest() const {
    // Over the canonical values: identical effective settings give identical digests on every rank.
    vocab::Fnv1a h;
    for (const OptionValue& v : values_) h.number(v.number).text(v.text).bytes("", 1);
    return h.value();
}

std::string Config::serialize(const EnvPairs& pairs) {
    std::string blob;
    for (const auto& [name, text] : pairs) {
        blob += name;
        blob += '\0';
        blob += text;
        blob += '\0';
    }
    return blob;
}

EnvPairs Config::deserialize(std::string_view blob) {
    EnvPairs pairs;
    while (!blob.empty()) {
        std::size_t a = blob.find('\0');
        if (a == std::string_view::npos) break;
        std::size_t b = blob.find('\0', a + 1);
        if (b == std::string_view::npos) break;
        pairs.emplace_back(std::string(blob.substr(0, a)), std::string(blob.substr(a + 1, b - a - 1)));
        blob.remove_prefix(b + 1);
    }
    return pairs;
}

}  // namespace arshim
