// The policy table: ordered rules, first match wins, keyed on message size x processes per node x node count
// (plus communicator size, datatype class, op, MPI flavor). Parsed once into an immutable Policy; the shim
// caches each Decision per communicator, so decide() runs once per (communicator, size bucket, datatype, op).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <iterator>

#include "kernels/kernels.h"
#include "policy/box.h"
#include "policy/config.h"
#include "policy/decision.h"

namespace arshim::policy {

// Datatype classes and ops are the kernels' vocabulary (kernels/vocabulary.h); paths and reasons the routing words
// (policy/routing_words.h); the rest is the policy's own.
using vocab::DtypeClass;
using vocab::dtype_class_name;
inline constexpr const char* kFlavorNames[] = {"mpich", "openmpi"};
static_assert(std::size(kFlavorNames) == kFlavorCount, "one name per flavor");
// The names a policy file may use for each closed choice (a derived datatype never reaches the policy).
inline constexpr vocab::Words kPathWords{vocab::kPathNames};
inline constexpr vocab::Words kDtypeWords{vocab::kDtypeClassNames, vocab::kPolicyDtypeClassCount};
inline constexpr vocab::Words kOpWords{vocab::kOpNames};
inline constexpr vocab::Words kFlavorWords{kFlavorNames};

// Everything a decision may depend on. All fields are identical on every rank of a communicator for the same
// call (the shim guarantees that), so every rank decides the same.
struct CallFacts {
    uint64_t bytes = 0;          // count * datatype size
    uint32_t ppn = 1;            // processes per node (the largest node when ppn is not uniform)
    uint32_t nodes = 1;
    uint32_t comm_size = 1;
    bool ppn_uniform = true;
    DtypeClass dclass = DtypeClass::other;
    vocab::Op op = vocab::Op::sum;
    bool library_bug = false;    // the library computes this (datatype, op) wrong and ARShim routes around it
    bool reproducible = false;   // ARSHIM_REPRODUCIBLE covers this call: it must be summed in rank order
};

// Names as the policy file, the tools and the logs spell them.
inline const char* flavor_name(Flavor flavor) { return vocab::name_of(kFlavorNames, flavor); }
bool parse_path(const std::string& name, Path* out);
bool parse_dtype_class(const std::string& name, DtypeClass* out);
bool parse_op(const std::string& name, vocab::Op* out);
bool parse_flavor(const std::string& name, Flavor* out);

// What a rule's choice rests on, as a tuned table or the tuning cache records it (docs/tuning.md): measured here, or
// predicted by the cost model, with the times. Informational for everything but `measured` (Decision::measured).
enum class EvidenceKind : uint8_t { none, measured, predicted };
inline constexpr const char* kEvidenceNames[] = {"none", "measured", "predicted"};
inline constexpr vocab::Words kEvidenceWords{kEvidenceNames};
struct Evidence {
    EvidenceKind kind = EvidenceKind::none;
    double time_us = -1;    // the choice's time at the rule's sizes, when recorded
    double native_us = -1;  // the library's allreduce at the same sizes
};

// One rule of an effective table (file rules, built-in rules, or both), its parameters already overridden by the
// environment.
struct PolicyRule {
    Box match;
    Decision decision;   // decision.rule is this rule's index in Policy::rules()
    std::string where;   // "policy.toml:12" or "built-in default.toml:30" (the line of its [[rule]] header)
    std::string name;    // the rule's optional `name`
    int number = 0;      // 1-based position in its own file
    Evidence evidence;   // what the rule's choice rests on (tuned tables, the tuning cache)
};

// An immutable, effective policy: the rules for one MPI flavor, in order, with ARSHIM_* overrides applied.
// decide() is pure, thread-safe and allocation-free; every rank that loads the same text with the same settings
// decides the same. Decisions are constant within a size bucket (size_bucket() in box.h): rule byte bounds are
// powers of two, so the shim may cache one decision per (communicator, bucket, datatype, op).
class Policy {
public:
    // First rule that matches wins; when none does, the fallback (native, rule -1, overrides applied).
    Decision decide(const CallFacts& facts) const;

    // Where rule `rule` came from ("policy.toml:12", "built-in default.toml:30"); for -1 "no matching rule".
    std::string describe_rule(int rule) const;

    // The table in use, for the log and the stats: "built-in default.toml", "policy.toml",
    // "policy.toml, then built-in default.toml" (prepend), "built-in default.toml (policy.toml rejected)", followed
    // by "; overrides: ARSHIM_WINDOW=4" when ARSHIM_* variables change decisions.
    std::string source() const { return source_; }

    const std::vector<PolicyRule>& rules() const { return rules_; }
    const Decision& fallback() const { return fallback_; }
    const std::string& flavor() const { return flavor_; }  // "" when loaded without a flavor
    const std::string& overrides() const { return overrides_; }  // "ARSHIM_WINDOW=4 ...", "" when none
    bool file_used() const { return file_used_; }

private:
    friend struct PolicyBuilder;
    std::vector<PolicyRule> rules_;
    Decision fallback_;
    uint32_t flavor_bit_ = 0;
    std::string flavor_;
    std::string source_;
    std::string overrides_;
    bool file_used_ = false;
};

struct LoadResult {
    std::shared_ptr<const Policy> policy;  // never null
    std::vector<std::string> problems;     // complete one-line messages, "<file>:<line>: ..."
    bool file_used = false;                // false when there was no file or it was rejected
};

// Builds the effective policy. file_text == nullptr: the built-in table only. Otherwise the file's rules replace
// the built-in ones (ARSHIM_POLICY_MODE=replace) or are tried before them (prepend); a file with any error is not
// used at all (the built-in table is, and `problems` says so), warnings keep it. mpi_flavor: "mpich" or
// "openmpi" keeps the rules for that flavor; "" keeps all rules, and flavor-restricted ones never match.
// `check_reachability`: warn about rules that earlier rules hide (read_table; only one rank needs to).
// `cache_text`: the tuning cache's rules (ARSHIM_TUNE_CACHE, docs/tuning.md), tried before all others; a cache with
// an error is left out (one problem line).
LoadResult load_policy(const Config& cfg, const std::string* file_text, const std::string& file_name,
                       const std::string& mpi_flavor, bool check_reachability = true,
                       const std::string* cache_text = nullptr, const std::string& cache_name = "tuning cache");

// The compiled-in policy/default.toml, byte for byte, and the name problems and describe_rule() give it.
const std::string& builtin_policy_text();
extern const char* const kBuiltinPolicyName;  // "built-in default.toml"

}  // namespace arshim::policy
