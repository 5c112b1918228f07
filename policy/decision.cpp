#include "policy/decision.h"

#include <cstring>
#include <vector>

namespace arshim::policy {

namespace {

// Runs f(P&) on the decision's parameters (never std::monostate).
template <typename F>
void with_params(Decision& d, F&& f) {
    std::visit(
        [&](auto& p) {
            if constexpr (!std::is_same_v<std::decay_t<decltype(p)>, std::monostate>) f(p);
        },
        d.params);
}

Params default_params(Path path) {
    switch (path) {
#define ARSHIM_PATH_DEFAULT(name, P) \
    case Path::name: return P{};
        ARSHIM_PATH_ROWS(ARSHIM_PATH_DEFAULT)
#undef ARSHIM_PATH_DEFAULT
    case Path::count: break;
    }
    return NativeParams{};
}

template <typename P, typename = void>
struct HasFinish : std::false_type {};
template <typename P>
struct HasFinish<P, std::void_t<decltype(P::finish(std::declval<P&>(), KeyMask{}))>> : std::true_type {};

}  // namespace

Decision decision_for(Path path) {
    Decision d;
    d.params = default_params(path);
    return d;
}

void set_path(Decision& d, Path path) {
    if (d.path() != path) d.params = default_params(path);
}

bool same_action(const Decision& a, const Decision& b) {
    if (a.path() != b.path()) return false;
    if (traits_of(a.path()).hands_ops_to_library && a.kernel != b.kernel) return false;
    bool same = true;
    std::vector<int64_t> values;
    for_each_key(a, [&](const KeyView& k) { values.push_back(k.value); });
    std::size_t i = 0;
    for_each_key(b, [&](const KeyView& k) { same = same && values[i++] == k.value; });
    return same;
}

std::string describe_decision(const Decision& d) {
    std::string out = path_name(d.path());
    for_each_key(d, [&](const KeyView& k) {
        if (!k.shown) return;
        out += ' ';
        out += k.name;
        out += '=';
        switch (k.kind) {
        case KeyKind::count: out += std::to_string(k.value); break;
        case KeyKind::size: out += format_size(k.value); break;
        case KeyKind::choice:
            out += k.value >= 0 && static_cast<std::size_t>(k.value) < k.words->count ? k.words->words[k.value] : "?";
            break;
        }
    });
    if (traits_of(d.path()).hands_ops_to_library) out += std::string(" kernel=") + kernel_choice_name(d.kernel);
    return out;
}

int key_index(Path path, std::string_view name) {
    const Decision d = decision_for(path);
    int index = -1, i = 0;
    for_each_key(d, [&](const KeyView& k) {
        if (index < 0 && name == k.name) index = i;
        ++i;
    });
    return index;
}

void set_key(Decision& d, int index, int64_t value) {
    with_params(d, [&](auto& p) {
        using P = std::decay_t<decltype(p)>;
        if (index >= 0 && static_cast<std::size_t>(index) < P::kKeys.size()) P::kKeys[index].set(p, value);
    });
}

void finish_keys(Decision& d, KeyMask written) {
    with_params(d, [&](auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (HasFinish<P>::value) P::finish(p, written);
    });
}

uint32_t paths_with_key(std::string_view name) {
    uint32_t paths = 0;
    for (std::size_t p = 0; p < vocab::kPathCount; ++p)
        if (key_index(static_cast<Path>(p), name) >= 0) paths |= 1u << p;
    return paths;
}

const std::vector<const char*>& all_key_names() {
    static const std::vector<const char*> names = [] {
        std::vector<const char*> out;
        for (std::size_t p = 0; p < vocab::kPathCount; ++p)
            for_each_key(decision_for(static_cast<Path>(p)), [&](const KeyView& k) {
                for (const char* n : out)
                    if (std::strcmp(n, k.name) == 0) return;
                out.push_back(k.name);
            });
        return out;
    }();
    return names;
}

PathTraits traits_of(Path path) {
    switch (path) {
#define ARSHIM_PATH_TRAITS(name, P) \
    case Path::name: return P::kTraits;
        ARSHIM_PATH_ROWS(ARSHIM_PATH_TRAITS)
#undef ARSHIM_PATH_TRAITS
    case Path::count: break;
    }
    return {};
}

}  // namespace arshim::policy
