// The effective policy: file and built-in rules for one MPI flavor, ARSHIM_* overrides applied once at load, so
// decide() is only a scan for the first matching box.
#include "policy/policy.h"

#include <algorithm>

#include "policy/rules.h"
#include "policy/text.h"

namespace arshim::policy {

namespace generated {
// policy/default.toml, embedded at build time by policy/embed_text.py (see policy/meson.build).
extern const char kDefaultToml[];
extern const std::size_t kDefaultTomlSize;
}  // namespace generated

const char* const kBuiltinPolicyName = "built-in default.toml";

namespace {

template <typename Enum>
bool parse(const vocab::Words& words, const std::string& name, Enum* out) {
    const int i = words.find(name);
    if (i < 0) return false;
    *out = static_cast<Enum>(i);
    return true;
}

const Table& builtin_table() {
    static const Table table = read_table(builtin_policy_text(), kBuiltinPolicyName);
    return table;
}

// ARSHIM_* variables beat the table: ARSHIM_PATH forces a path (the rule's parameters stay when it named that path,
// else the path's defaults), then every key of the decision's path with a variable set takes its value, then the op
// handed to MPI. Returns whether anything changed the decision.
bool apply_overrides(const Config& cfg, Decision* d) {
    const Decision before = *d;
    Path path = Path::native;
    if (cfg.text(OptionId::path) != "auto" && parse_path(cfg.text(OptionId::path), &path)) set_path(*d, path);
    std::vector<std::pair<int, int64_t>> values;
    KeyMask written = 0;
    int index = 0;
    for_each_key(*d, [&](const KeyView& k) {
        if (k.env != OptionId::count && cfg.number(k.env) > 0) {
            values.emplace_back(index, cfg.number(k.env));
            written |= 1u << index;
        }
        ++index;
    });
    for (const auto& [i, v] : values) set_key(*d, i, v);
    finish_keys(*d, written);
    const std::string& kernel = cfg.text(OptionId::kernel_for_mpi);
    if (kernel == "native" || kernel == "simd") d->kernel = kernel == "simd" ? KernelChoice::simd : KernelChoice::native;
    return !same_action(before, *d) || before.kernel != d->kernel;
}

// "NAME=value ..." of the variables that change decisions (for the policy's source line): ARSHIM_PATH, each
// parameter's variable that takes effect on its path (ARSHIM_SEGMENTS does not where ARSHIM_SEGMENT_BYTES wins), and
// ARSHIM_KERNEL_FOR_MPI.
std::string describe_overrides(const Config& cfg) {
    std::string applied;
    auto note = [&](OptionId id) {
        const std::string item = std::string(option_spec(id).name) + "=" + cfg.text(id);
        if (applied.find(item) == std::string::npos) applied += (applied.empty() ? "" : " ") + item;
    };
    Path path = Path::native;
    if (cfg.text(OptionId::path) != "auto" && parse_path(cfg.text(OptionId::path), &path)) note(OptionId::path);
    for (std::size_t p = 0; p < vocab::kPathCount; ++p) {
        Decision d = decision_for(static_cast<Path>(p));
        if (!apply_overrides(cfg, &d)) continue;
        for_each_key(d, [&](const KeyView& k) {
            if (k.env != OptionId::count && cfg.number(k.env) > 0 && k.value == cfg.number(k.env)) note(k.env);
        });
    }
    const std::string& kernel = cfg.text(OptionId::kernel_for_mpi);
    if (kernel == "native" || kernel == "simd") note(OptionId::kernel_for_mpi);
    return applied;
}

}  // namespace

// ---- names ----

bool parse_path(const std::string& name, Path* out) { return parse(kPathWords, name, out); }
bool parse_dtype_class(const std::string& name, DtypeClass* out) { return parse(kDtypeWords, name, out); }
bool parse_op(const std::string& name, vocab::Op* out) { return parse(kOpWords, name, out); }
bool parse_flavor(const std::string& name, Flavor* out) { return parse(kFlavorWords, name, out); }


// ---- text forms ----

namespace {
// format_size for the whole uint64 range (bucket 64 starts at 2^63).
std::string size_text(uint64_t bytes) {
    static const char* const units[] = {"", "K", "M", "G", "T"};
    int unit = 0;
    while (unit < 4 && bytes != 0 && bytes % 1024 == 0) bytes /= 1024, ++unit;
    return std::to_string(bytes) + units[unit];
}
}  // namespace

std::string format_bytes_range(const Interval& buckets) {
    if (buckets.any()) return "any";
    const auto lo = static_cast<uint32_t>(std::min<uint64_t>(buckets.lo, kBucketCount - 1));
    std::string out = lo == 0 ? "" : size_text(bucket_floor(lo));
    out += "..";
    if (buckets.hi < kBucketCount) out += size_text(bucket_floor(static_cast<uint32_t>(buckets.hi)));
    return out;
}

std::string format_count_range(const Interval& counts) {
    if (counts.any()) return "any";
    if (counts.hi != kUnbounded && counts.hi == counts.lo + 1) return std::to_string(counts.lo);
    std::string out = counts.lo == 0 ? "" : std::to_string(counts.lo);
    out += "..";
    if (counts.hi != kUnbounded) out += "=" + std::to_string(counts.hi - 1);
    return out;
}

namespace {
template <typename Enum>
std::string format_set(uint32_t mask, uint32_t all, std::size_t count, const char* (*name)(Enum)) {
    if ((mask & all) == all) return "any";
    std::string out;
    for (std::size_t i = 0; i < count; ++i)
        if (mask & (1u << i)) {
            if (!out.empty()) out += ',';
            out += name(static_cast<Enum>(i));
        }
    return out.empty() ? "none" : out;
}
}  // namespace

std::string format_dtypes(uint32_t mask) { return format_set(mask, kAllDtypes, vocab::kPolicyDtypeClassCount, dtype_class_name); }
std::string format_ops(uint32_t mask) { return format_set(mask, kAllOps, vocab::kOpCount, vocab::op_name); }
std::string format_flavors(uint32_t mask) { return format_set(mask, kAllFlavors, kFlavorCount, flavor_name); }
std::string format_library_bug(uint32_t mask) {
    return mask == kLibraryBug ? "yes" : mask == kNoLibraryBug ? "no" : "any";
}
std::string format_reproducible(uint32_t mask) {
    return mask == kReproducible ? "yes" : mask == kNotReproducible ? "no" : "any";
}

const std::string& builtin_policy_text() {
    static const std::string text(generated::kDefaultToml, generated::kDefaultTomlSize);
    return text;
}

// ---- Policy ----

Decision Policy::decide(const CallFacts& facts) const {
    Point p;
    p.bucket = bucket_of(facts.bytes);
    p.ppn = facts.ppn;
    p.nodes = facts.nodes;
    p.comm_size = facts.comm_size;
    const auto dclass = static_cast<unsigned>(facts.dclass);
    const auto op = static_cast<unsigned>(facts.op);
    // An out-of-range class or op (never made by the shim) matches no rule: native.
    p.dtype = dclass < vocab::kPolicyDtypeClassCount ? 1u << dclass : 0;
    p.op = op < vocab::kOpCount ? 1u << op : 0;
    p.mpi = flavor_bit_;
    p.bug = facts.library_bug ? kLibraryBug : kNoLibraryBug;
    p.repro = facts.reproducible ? kReproducible : kNotReproducible;
    for (const PolicyRule& rule : rules_)
        if (rule.match.contains(p)) return rule.decision;
    return fallback_;
}

std::string Policy::describe_rule(int rule) const {
    if (rule >= 0 && static_cast<std::size_t>(rule) < rules_.size()) return rules_[rule].where;
    return "no matching rule";
}

struct PolicyBuilder {
    static void add(Policy& policy, const Table& table, const Config& cfg) {
        for (const RuleSpec& spec : table.rules) {
            // Pruned once per flavor (like csel's per-communicator pruning), using the same Box as decide().
            if (policy.flavor_bit_ != 0 && (spec.match.mpis & policy.flavor_bit_) == 0) continue;
            PolicyRule rule;
            rule.match = spec.match;
            rule.decision = spec.action;
            const bool overridden = apply_overrides(cfg, &rule.decision);
            // A measured choice stays measured only as it was measured: an override changes what it decides.
            rule.decision.measured = spec.evidence.kind == EvidenceKind::measured && !overridden;
            rule.decision.rule = static_cast<int>(policy.rules_.size());
            rule.where = table.source + ":" + std::to_string(spec.line);
            rule.name = spec.name;
            rule.number = spec.number;
            rule.evidence = spec.evidence;
            policy.rules_.push_back(std::move(rule));
        }
    }

    static LoadResult load(const Config& cfg, const std::string* file_text, const std::string& file_name,
                           const std::string& mpi_flavor, bool check_reachability, const std::string* cache_text,
                           const std::string& cache_name) {
        LoadResult result;
        auto policy = std::make_shared<Policy>();
        const std::string name = file_name.empty() ? "policy file" : printable(file_name, 200);

        if (!mpi_flavor.empty()) {
            Flavor flavor = Flavor::mpich;
            if (parse_flavor(mpi_flavor, &flavor)) policy->flavor_bit_ = 1u << static_cast<unsigned>(flavor);
            else
                result.problems.push_back("policy: unknown MPI flavor '" + printable(mpi_flavor, 40) +
                                          "'; allowed: mpich, openmpi (rules restricted by 'mpi' never match)");
        }
        policy->flavor_ = mpi_flavor;

        const Table& builtin = builtin_table();
        result.problems.insert(result.problems.end(), builtin.problems.begin(), builtin.problems.end());

        Table file;
        if (file_text != nullptr) {
            file = read_table(*file_text, name, check_reachability);
            result.problems.insert(result.problems.end(), file.problems.begin(), file.problems.end());
            if (file.usable()) {
                result.file_used = true;
            } else {
                result.problems.push_back(name + ": " + std::to_string(file.errors) +
                                          (file.errors == 1 ? " error" : " errors") +
                                          "; the file is not used, every decision comes from the " +
                                          kBuiltinPolicyName);
            }
        }
        // The tuning cache (ARSHIM_TUNE_CACHE): measured here before, so ahead of every other rule. A cache with an
        // error is left out whole, like a policy file.
        bool cache_used = false;
        if (cache_text != nullptr) {
            const Table cache = read_table(*cache_text, cache_name, false);
            if (cache.usable()) {
                add(*policy, cache, cfg);
                cache_used = !cache.rules.empty();
            } else {
                result.problems.push_back(cache_name + ": " + std::to_string(cache.errors) + " error(s) (first: " +
                                          (cache.problems.empty() ? std::string("?") : cache.problems.front()) +
                                          "); the tuning cache is not used");
            }
        }
        const bool prepend = cfg.text(OptionId::policy_mode) == "prepend";
        if (result.file_used) add(*policy, file, cfg);
        if (!result.file_used || prepend) add(*policy, builtin, cfg);

        policy->fallback_ = decision_for(Path::native);  // no rule matched
        apply_overrides(cfg, &policy->fallback_);
        policy->overrides_ = describe_overrides(cfg);
        policy->file_used_ = result.file_used;
        if (file_text == nullptr) policy->source_ = kBuiltinPolicyName;
        else if (!result.file_used) policy->source_ = std::string(kBuiltinPolicyName) + " (" + name + " rejected)";
        else if (prepend) policy->source_ = name + ", then " + kBuiltinPolicyName;
        else policy->source_ = name;
        if (cache_used) policy->source_ = cache_name + ", then " + policy->source_;
        if (!policy->overrides_.empty()) policy->source_ += "; overrides: " + policy->overrides_;
        result.policy = std::move(policy);
        return result;
    }
};

LoadResult load_policy(const Config& cfg, const std::string* file_text, const std::string& file_name,
                       const std::string& mpi_flavor, bool check_reachability, const std::string* cache_text,
                       const std::string& cache_name) {
    return PolicyBuilder::load(cfg, file_text, file_name, mpi_flavor, check_reachability, cache_text, cache_name);
}

}  // namespace arshim::policy
