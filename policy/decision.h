// A decision: which path serves a call, with which op handed to the library, its parameters (the path's own typed
// struct, policy/paths/<path>.h), and where it came from. Everything that reads, writes, names, overrides or
// compares a decision's parameters goes through the path's key table, so no list of parameters is written twice.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "policy/routing_words.h"

namespace arshim::policy {

using vocab::Path;
using vocab::path_name;

enum class KernelChoice : uint8_t { native, simd };  // the op a path hands MPI: the predefined one or ARShim's
inline constexpr const char* kKernelChoiceNames[] = {"native", "simd"};
inline constexpr vocab::Words kKernelChoiceWords{kKernelChoiceNames};
inline const char* kernel_choice_name(KernelChoice k) { return vocab::name_of(kKernelChoiceNames, k); }

// The parameters of whichever path a decision names; the alternative's index is the path's code.
using Params = std::variant<
#define ARSHIM_PATH_PARAMS(name, P) P,
    ARSHIM_PATH_ROWS(ARSHIM_PATH_PARAMS)
#undef ARSHIM_PATH_PARAMS
    std::monostate>;  // never held: closes the list the rows open

struct Decision {
    KernelChoice kernel = KernelChoice::native;  // used where the path hands ops to the library (PathTraits)
    Params params{NativeParams{}};  // the path's own parameters: which alternative it holds says the path
    bool measured = false;  // the rule's choice was measured on this machine (evidence = "measured"): online tuning
                            // does not explore it again
    int rule = -1;          // index of the rule that matched, -1 when none (built-in fallback: native)

    Path path() const { return static_cast<Path>(params.index()); }

    // The path's parameters; only for the path the decision names.
    template <typename P>
    const P& get() const { return std::get<P>(params); }
    template <typename P>
    P& get() { return std::get<P>(params); }
};

// A decision for `path` with that path's default parameters.
Decision decision_for(Path path);
// Changes the decision's path; the parameters become that path's defaults unless it already was that path.
void set_path(Decision& d, Path path);

// Two decisions act alike: same path, same parameters, and the same kernel where the path uses one.
bool same_action(const Decision& a, const Decision& b);

// "pipelined segment_bytes=1M window=8 kernel=native": the path and the parameters that path uses.
std::string describe_decision(const Decision& d);

// ---- the parameters as keys, for the reader, the writer, the overrides and the tools ----------------------------

// One parameter of a decision, as its path's key table describes it.
struct KeyView {
    const char* name;
    KeyKind kind;
    int64_t min, max;
    OptionId env;
    const vocab::Words* words;
    int64_t value;
    bool shown;  // the text form names it
};

// Calls f(const KeyView&) for each parameter of the decision's path, in key-table order.
template <typename F>
void for_each_key(const Decision& d, F&& f) {
    std::visit(
        [&](const auto& p) {
            using P = std::decay_t<decltype(p)>;
            if constexpr (!std::is_same_v<P, std::monostate>)
                for (const auto& k : P::kKeys)
                    f(KeyView{k.name, k.kind, k.min, k.max, k.env, k.words, k.get(p), k.shown == nullptr || k.shown(p)});
        },
        d.params);
}

// The index of `name` in `path`'s key table, or -1.
int key_index(Path path, std::string_view name);
// Sets key `index` of the decision's path to `value` (already checked against the key's limits).
void set_key(Decision& d, int index, int64_t value);
// After keys were set (a rule's, the environment's): the path's own rules for keys that interact. `written` has a
// bit per key index that was set.
void finish_keys(Decision& d, KeyMask written);
// The paths whose key tables have `name` (a bit per Path), for "is a parameter of ..." messages.
uint32_t paths_with_key(std::string_view name);
// Every key name of every path, without repeats, in row order: what a rule may set.
const std::vector<const char*>& all_key_names();

// A path's properties (policy/path_spec.h).
PathTraits traits_of(Path path);

}  // namespace arshim::policy
