#include "policy/rule_writer.h"

#include <cmath>
#include <sstream>

#include <toml++/toml.h>

#include "policy/config.h"

namespace arshim::policy {

namespace {

// Times are written to 0.01 us: what a measurement can tell, and short enough to read.
double hundredths(double v) { return std::round(v * 100.0) / 100.0; }

// A closed choice restricted to some of its words: one word as a string, several as an array.
void put_set(toml::table& out, const char* key, uint32_t mask, uint32_t all, const vocab::Words& words) {
    if ((mask & all) == all) return;
    toml::array names;
    for (std::size_t i = 0; i < words.count; ++i)
        if (mask >> i & 1u) names.push_back(words.words[i]);
    if (names.size() == 1) out.insert(key, *names.front().value<std::string>());
    else out.insert(key, std::move(names));
}

// A count range as the reader takes it: 8, "2..", "2..=8".
void put_counts(toml::table& out, const char* key, const Interval& counts) {
    if (counts.any()) return;
    if (counts.hi != kUnbounded && counts.hi == counts.lo + 1) out.insert(key, static_cast<int64_t>(counts.lo));
    else out.insert(key, format_count_range(counts));
}

void put_yes_no(toml::table& out, const char* key, uint32_t mask, uint32_t yes, uint32_t no) {
    if (mask == yes) out.insert(key, true);
    else if (mask == no) out.insert(key, false);
}

// Policy files are plain ASCII (docs/policy.md: the reader rejects anything else): other characters become '?'.
std::string plain(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    return out;
}

// The path, the op it hands MPI where it hands one, and the path's parameters (its key table: sizes as bytes,
// choices as names).
void put_decision(toml::table& out, const Decision& d) {
    out.insert("path", path_name(d.path()));
    if (traits_of(d.path()).hands_ops_to_library) out.insert("kernel", kernel_choice_name(d.kernel));
    for_each_key(d, [&](const KeyView& k) {
        if (!k.shown) return;
        if (k.kind == KeyKind::choice) out.insert(k.name, k.words->words[k.value]);
        else out.insert(k.name, k.value);
    });
}

toml::table rule_table(const RuleSpec& rule) {
    toml::table out;
    if (!rule.name.empty()) out.insert("name", plain(rule.name));
    const Box& m = rule.match;
    put_set(out, "mpi", m.mpis, kAllFlavors, kFlavorWords);
    if (!m.dim[Box::bucket].any()) out.insert("bytes", format_bytes_range(m.dim[Box::bucket]));
    put_counts(out, "ppn", m.dim[Box::ppn]);
    put_counts(out, "nodes", m.dim[Box::nodes]);
    put_counts(out, "comm_size", m.dim[Box::comm_size]);
    put_set(out, "dtype", m.dtypes, kAllDtypes, kDtypeWords);
    put_set(out, "op", m.ops, kAllOps, kOpWords);
    put_yes_no(out, "library_bug", m.bugs, kLibraryBug, kNoLibraryBug);
    put_yes_no(out, "reproducible", m.repros, kReproducible, kNotReproducible);
    put_decision(out, rule.action);
    if (rule.evidence.kind != EvidenceKind::none)
        out.insert("evidence", vocab::name_of(kEvidenceNames, rule.evidence.kind));
    if (rule.evidence.time_us >= 0) out.insert("time_us", hundredths(rule.evidence.time_us));
    if (rule.evidence.native_us >= 0) out.insert("native_us", hundredths(rule.evidence.native_us));
    if (!rule.note.empty()) out.insert("note", plain(rule.note));
    return out;
}

}  // namespace

std::string render_table(const std::vector<RuleSpec>& rules, const TableHeader& header, const std::string& preamble) {
    toml::table root;
    root.insert("version", kPolicyVersion);
    if (!header.origin.empty()) {
        toml::table origin;
        for (const auto& [key, value] : header.origin) origin.insert_or_assign(plain(key), plain(value));
        root.insert("origin", std::move(origin));
    }
    if (!header.model.empty()) {
        toml::table model;
        for (const auto& [key, value] : header.model)
            if (std::isfinite(value)) model.insert_or_assign(plain(key), value);
        root.insert("model", std::move(model));
    }
    toml::array list;
    for (const RuleSpec& rule : rules) list.push_back(rule_table(rule));
    if (!list.empty()) root.insert("rule", std::move(list));
    std::ostringstream out;
    // Relaxed precision: 4.95, not 4.9500000000000002 (times are written to 0.01 us anyway).
    out << preamble
        << toml::toml_formatter(root, toml::toml_formatter::default_flags | toml::format_flags::relaxed_float_precision)
        << '\n';
    return out.str();
}

}  // namespace arshim::policy
