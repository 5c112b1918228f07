// Reads a version-1 policy table from TOML (format: docs/policy.md). Every problem becomes one complete line naming
// the source, the line, the rule, the key, the bad value and what is allowed; reading goes on after a problem so a
// user sees all of them at once.
#include <algorithm>
#include <cctype>
#include <sstream>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "policy/rules.h"
#include "policy/text.h"

namespace arshim::policy {

namespace {

constexpr const char* kTopKeys[] = {"version", "origin", "model", "rule"};
constexpr std::size_t kMaxHeaderKeys = 64;  // [origin] and [model] entries
// The keys a rule may hold: what it matches, its path, the op it hands MPI, every path's parameters (from the paths'
// key tables, policy/decision.h), and the informational ones.
const std::vector<const char*>& rule_keys() {
    static const std::vector<const char*> keys = [] {
        std::vector<const char*> out{"name", "mpi", "bytes", "ppn", "nodes", "comm_size", "dtype", "op",
                                     "library_bug", "reproducible", "path", "kernel"};
        for (const char* k : all_key_names()) out.push_back(k);
        for (const char* k : {"evidence", "time_us", "native_us", "note"}) out.push_back(k);
        return out;
    }();
    return keys;
}

constexpr uint64_t kMaxCount = 0xFFFFFFFFull;  // CallFacts counts are 32-bit

// Bounds checked before the text reaches the TOML parser (bounded_structure) and on the reachability check's work.
constexpr int kMaxKeyParts = 16;
constexpr std::size_t kMaxNesting = 16;
constexpr std::size_t kReachabilityWork = 2000000;  // box tests for the whole table; beyond: not checked

template <typename Words>
std::string join(const Words& words) {
    std::string out;
    for (const char* w : words) {
        if (!out.empty()) out += ", ";
        out += w;
    }
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// Keeps a problem on one line (policy/text.h).
std::string escape(std::string_view s, std::size_t max, bool quoted = false) { return printable(s, max, quoted); }

const char* type_phrase(toml::node_type type) {
    switch (type) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
    }
    return "nothing";
}

// The value as the user wrote it (near enough), for messages.
std::string render(const toml::node& node) {
    switch (node.type()) {
    case toml::node_type::string: return "\"" + escape(node.as_string()->get(), 40, true) + "\"";
    case toml::node_type::integer: return std::to_string(node.as_integer()->get());
    case toml::node_type::boolean: return node.as_boolean()->get() ? "true" : "false";
    case toml::node_type::table: return "{...}";
    case toml::node_type::array: {
        std::string out = "[";
        for (const toml::node& element : *node.as_array()) {
            if (out.size() > 1) out += ", ";
            out += render(element);
            if (out.size() > 60) return out + ", ...]";
        }
        return out + "]";
    }
    default: {
        std::ostringstream os;
        node.visit([&os](const auto& value) { os << value; });
        return escape(os.str(), 40);
    }
    }
}

int line_of(const toml::source_region& region) { return static_cast<int>(std::max<uint32_t>(region.begin.line, 1)); }

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = up;
        }
    }
    return row[b.size()];
}

template <typename Words>
std::string did_you_mean(std::string_view key, const Words& words) {
    if (key.size() > 40) return "";
    const char* best = nullptr;
    std::size_t best_distance = 3;  // suggest only close misspellings
    for (const char* w : words) {
        const std::size_t d = edit_distance(key, w);
        if (d < best_distance && d < std::string_view(w).size()) best = w, best_distance = d;
    }
    return best ? std::string(" (did you mean '") + best + "'?)" : std::string();
}

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
uint64_t floor_power_of_two(uint64_t v) { return uint64_t{1} << (63 - __builtin_clzll(v)); }

class Reporter {
public:
    explicit Reporter(const std::string& source) : source_(source) {}
    void error(int line, const std::string& text) { add(line, text), ++errors_; }
    void warning(int line, const std::string& text) { add(line, "warning: " + text), ++warnings_; }
    int errors() const { return errors_; }
    void finish(Table* table) {
        std::stable_sort(entries_.begin(), entries_.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (auto& entry : entries_) table->problems.push_back(std::move(entry.second));
        table->errors = errors_;
        table->warnings = warnings_;
    }

private:
    void add(int line, const std::string& text) {
        entries_.emplace_back(line, source_ + ":" + std::to_string(line) + ": " + text);
    }
    const std::string& source_;
    std::vector<std::pair<int, std::string>> entries_;
    int errors_ = 0;
    int warnings_ = 0;
};

// Reads one [[rule]] table.
class RuleReader {
public:
    RuleReader(Reporter& report, int number) : report_(report), prefix_("rule " + std::to_string(number) + ": ") {}

    bool read(const toml::table& table, RuleSpec* rule) {
        const int errors_before = report_.errors();
        // The path first: it says which parameters the rule's other keys set (the keys come in any order).
        const toml::node* path_node = table.get("path");
        bool have_path = false;
        if (path_node != nullptr) {
            line_ = line_of(path_node->source());
            key_ = "path";
            Path path = Path::native;
            have_path = read_choice(*path_node, kPathWords, &path);
            if (have_path) rule->action = decision_for(path);
        }
        KeyMask written = 0;
        for (auto&& [key, node] : table) {
            line_ = line_of(key.source());
            const std::string_view k = key.str();
            key_ = std::string(k);
            if (k == "path") continue;
            if (k == "name") read_name(node, &rule->name);
            else if (k == "note") read_note(node, &rule->note);
            else if (k == "mpi") read_set(node, "MPI flavor", kFlavorWords, &rule->match.mpis);
            else if (k == "dtype") read_set(node, "datatype class", kDtypeWords, &rule->match.dtypes);
            else if (k == "op") read_set(node, "op", kOpWords, &rule->match.ops);
            else if (k == "bytes") read_bytes(node, &rule->match.dim[Box::bucket]);
            else if (k == "ppn") read_counts(node, &rule->match.dim[Box::ppn]);
            else if (k == "nodes") read_counts(node, &rule->match.dim[Box::nodes]);
            else if (k == "comm_size") read_counts(node, &rule->match.dim[Box::comm_size]);
            else if (k == "library_bug") read_yes_no(node, &rule->match.bugs, kLibraryBug, kNoLibraryBug);
            else if (k == "reproducible") read_yes_no(node, &rule->match.repros, kReproducible, kNotReproducible);
            else if (k == "evidence") read_choice(node, kEvidenceWords, &rule->evidence.kind);
            else if (k == "time_us") read_micros(node, &rule->evidence.time_us);
            else if (k == "native_us") read_micros(node, &rule->evidence.native_us);
            else if (k == "kernel") read_choice(node, kKernelChoiceWords, &rule->action.kernel);
            else if (const int index = have_path ? key_index(rule->action.path(), k) : -1; index >= 0)
                read_parameter(node, index, rule, &written);
            else if (const uint32_t owners = paths_with_key(k); owners != 0) {
                if (have_path) {
                    // Another path's parameter: harmless (an earlier version of the rule, a path forced in a test),
                    // and unused.
                    report_.warning(line_, prefix_ + key_ + " is a parameter of " + path_list(owners) + ", not of " +
                                               path_name(rule->action.path()) + ": ignored");
                } else {
                    // No path (an error already): the value is still checked, so that one reading shows every
                    // problem.
                    RuleSpec scratch;
                    scratch.action = decision_for(static_cast<Path>(__builtin_ctz(owners)));
                    KeyMask ignored = 0;
                    read_parameter(node, key_index(scratch.action.path(), k), &scratch, &ignored);
                }
            } else {
                report_.error(line_, prefix_ + "unknown key '" + escape(k, 40) + "'" + did_you_mean(k, rule_keys()) +
                                         "; allowed: " + join(rule_keys()));
            }
        }
        line_ = rule->line;
        if (path_node == nullptr)
            report_.error(line_, prefix_ + "no 'path'; allowed: " + join(kPathWords));
        if (rule->action.path() == Path::pipelined && (written & 3u) == 3u)  // PipelinedParams' first two keys
            report_.warning(line_, prefix_ + "sets both segments and segment_bytes; segment_bytes wins");
        finish_keys(rule->action, written);
        return report_.errors() == errors_before;
    }

private:
    void bad(const toml::node& node, const std::string& what, const std::string& allowed) {
        report_.error(line_, prefix_ + key_ + " = " + render(node) + " " + what + "; allowed: " + allowed);
    }
    void wrong_type(const toml::node& node, const std::string& allowed) {
        bad(node, std::string("is ") + type_phrase(node.type()), allowed);
    }

    void read_name(const toml::node& node, std::string* out) {
        if (const auto* s = node.as_string()) *out = escape(s->get(), 60);
        else wrong_type(node, "a string");
    }

    // Informational text (the tuning cache lists the candidates it measured); kept on one line, bounded.
    void read_note(const toml::node& node, std::string* out) {
        if (const auto* s = node.as_string()) *out = escape(s->get(), 1000);
        else wrong_type(node, "a string");
    }

    template <typename Enum>
    bool read_choice(const toml::node& node, const vocab::Words& names, Enum* out) {
        const std::string allowed = join(names);
        const auto* s = node.as_string();
        if (s == nullptr) return wrong_type(node, allowed), false;
        const int index = names.find(s->get());
        if (index < 0) return bad(node, "is not recognized", allowed), false;
        *out = static_cast<Enum>(index);
        return true;
    }

    // A time in microseconds (evidence of a tuned rule): a non-negative number.
    void read_micros(const toml::node& node, double* out) {
        if (const auto* f = node.as_floating_point(); f != nullptr && f->get() >= 0 && f->get() < 1e15) *out = f->get();
        else if (const auto* i = node.as_integer(); i != nullptr && i->get() >= 0) *out = static_cast<double>(i->get());
        else bad(node, "is not a time", "a number of microseconds >= 0");
    }

    // A yes/no match key: true matches only the calls that have the property (library_bug: the call hits a known
    // wrong reduction of the library, policy/library_bugs.h; reproducible: ARSHIM_REPRODUCIBLE covers it), false
    // only the others.
    void read_yes_no(const toml::node& node, uint32_t* mask, uint32_t yes, uint32_t no) {
        if (const auto* b = node.as_boolean()) *mask = b->get() ? yes : no;
        else wrong_type(node, "true or false");
    }

    // A name or a list of names; bit i of *mask for names.words[i].
    void read_set(const toml::node& node, const char* what, const vocab::Words& names, uint32_t* mask) {
        const std::string allowed = join(names) + ", or a list of them";
        uint32_t bits = 0;
        auto add = [&](const toml::node& element) {
            const auto* s = element.as_string();
            const int index = s ? names.find(s->get()) : -1;
            if (index < 0) return false;
            bits |= 1u << index;
            return true;
        };
        if (node.is_string()) {
            if (!add(node)) return bad(node, std::string("is not a known ") + what, allowed);
        } else if (const auto* array = node.as_array()) {
            for (const toml::node& element : *array)
                if (!add(element)) {
                    const std::string problem = element.is_string()
                                                    ? "holds " + render(element) + ", not a known " + what
                                                    : "holds " + std::string(type_phrase(element.type()));
                    return bad(node, problem, allowed);
                }
            if (bits == 0) return bad(node, "matches nothing", allowed);
        } else {
            return wrong_type(node, allowed);
        }
        *mask = bits;
    }

    // Splits "lo..hi" / "lo..=hi"; false when there is no "..".
    static bool split_range(std::string_view text, std::string_view* lo, std::string_view* hi, bool* inclusive) {
        const std::size_t dots = text.find("..");
        if (dots == std::string_view::npos) return false;
        *lo = trim(text.substr(0, dots));
        std::string_view rest = text.substr(dots + 2);
        *inclusive = !rest.empty() && rest.front() == '=';
        if (*inclusive) rest.remove_prefix(1);
        *hi = trim(rest);
        return true;
    }

    void read_counts(const toml::node& node, Interval* out) {
        static const std::string allowed =
            "a count such as 8, or a range such as \"2..\", \"1..=8\" (8 included), \"4..16\" (16 excluded)";
        auto count = [](std::string_view text, uint64_t* v) {
            int64_t n = 0;
            if (!parse_integer(text, &n) || n < 0 || static_cast<uint64_t>(n) > kMaxCount) return false;
            *v = static_cast<uint64_t>(n);
            return true;
        };
        if (const auto* i = node.as_integer()) {
            if (i->get() < 0 || static_cast<uint64_t>(i->get()) > kMaxCount)
                return bad(node, "is out of range", allowed);
            *out = {static_cast<uint64_t>(i->get()), static_cast<uint64_t>(i->get()) + 1};
            return;
        }
        const auto* s = node.as_string();
        if (s == nullptr) return wrong_type(node, allowed);
        std::string_view lo_text, hi_text;
        bool inclusive = false;
        Interval range;
        if (!split_range(s->get(), &lo_text, &hi_text, &inclusive)) {
            if (!count(trim(s->get()), &range.lo)) return bad(node, "is not a count or a range", allowed);
            range.hi = range.lo + 1;
        } else {
            if (!lo_text.empty() && !count(lo_text, &range.lo)) return bad(node, "is not a range", allowed);
            if (hi_text.empty()) {
                if (inclusive) return bad(node, "is not a range", allowed);
            } else {
                if (!count(hi_text, &range.hi)) return bad(node, "is not a range", allowed);
                if (inclusive) ++range.hi;
            }
        }
        if (range.empty()) return bad(node, "is an empty range", allowed);
        *out = range;
    }

    // Byte ranges become ranges of size buckets; bounds that are not powers of two are rounded down to one (with a
    // warning) so that every size in a bucket gets the same rule.
    void read_bytes(const toml::node& node, Interval* buckets) {
        static const std::string allowed =
            "a size range such as \"64K..4M\" (64K included, 4M excluded), \"4M..\" or \"..64K\"; bounds are 0 or "
            "powers of two";
        const auto* s = node.as_string();
        if (s == nullptr) return wrong_type(node, allowed);
        std::string_view lo_text, hi_text;
        bool inclusive = false;
        if (!split_range(s->get(), &lo_text, &hi_text, &inclusive)) return bad(node, "is not a range", allowed);
        auto size = [](std::string_view text, uint64_t* v) {
            int64_t n = 0;
            if (!parse_size(text, &n)) return false;
            *v = static_cast<uint64_t>(n);
            return true;
        };
        Interval bytes;
        if (!lo_text.empty() && !size(lo_text, &bytes.lo)) return bad(node, "is not a range", allowed);
        if (hi_text.empty()) {
            if (inclusive) return bad(node, "is not a range", allowed);
        } else {
            if (!size(hi_text, &bytes.hi)) return bad(node, "is not a range", allowed);
            if (inclusive) ++bytes.hi;  // parse_size stays below 2^63: no overflow
        }
        if (bytes.empty()) return bad(node, "is an empty range", allowed);
        const Interval written = bytes;
        if (bytes.lo != 0 && !is_power_of_two(bytes.lo)) bytes.lo = floor_power_of_two(bytes.lo);
        if (bytes.hi != kUnbounded && !is_power_of_two(bytes.hi)) bytes.hi = floor_power_of_two(bytes.hi);
        Interval b{bucket_of(bytes.lo), bytes.hi == kUnbounded ? kUnbounded : bucket_of(bytes.hi)};
        if (!(bytes == written)) {
            if (bytes.empty())
                return bad(node, "is empty once its bounds are rounded down to powers of two", allowed);
            report_.warning(line_, prefix_ + key_ + " = " + render(node) +
                                       ": bounds must be 0 or powers of two (decisions are made per power-of-two "
                                       "size bucket); rounded down to \"" +
                                       format_bytes_range(b) + "\"");
        }
        *buckets = b;
    }

    // A parameter of the rule's path, by its key table: a count or a size within the key's limits, or one of its
    // names.
    void read_parameter(const toml::node& node, int index, RuleSpec* rule, KeyMask* written) {
        KeyView key{};
        int i = 0;
        for_each_key(rule->action, [&](const KeyView& k) {
            if (i++ == index) key = k;
        });
        int64_t v = 0;
        switch (key.kind) {
        case KeyKind::choice: {
            const std::string allowed = join(*key.words);
            const auto* s = node.as_string();
            if (s == nullptr) return wrong_type(node, allowed);
            v = key.words->find(s->get());
            if (v < 0) return bad(node, "is not recognized", allowed);
            break;
        }
        case KeyKind::size: {
            const std::string allowed = "a size in [" + format_size(key.min) + ", " + format_size(key.max) +
                                        "] such as 256K or 1M";
            if (const auto* n = node.as_integer()) v = n->get();
            else if (const auto* s = node.as_string()) {
                if (!parse_size(s->get(), &v)) return bad(node, "is not a size", allowed);
            } else return wrong_type(node, allowed);
            if (v < key.min || v > key.max) return bad(node, "is out of range", allowed);
            break;
        }
        case KeyKind::count: {
            const std::string allowed = "an integer in [" + std::to_string(key.min) + ", " + std::to_string(key.max) + "]";
            const auto* n = node.as_integer();
            if (n == nullptr) return wrong_type(node, allowed);
            v = n->get();
            if (v < key.min || v > key.max) return bad(node, "is out of range", allowed);
            break;
        }
        }
        set_key(rule->action, index, v);
        *written |= 1u << index;
    }

    static std::string path_list(uint32_t paths) {
        std::string out;
        for (std::size_t p = 0; p < vocab::kPathCount; ++p)
            if (paths >> p & 1u) out += (out.empty() ? "" : ", ") + std::string(vocab::kPathNames[p]);
        return out;
    }

    Reporter& report_;
    std::string prefix_;
    std::string key_;
    int line_ = 1;
};

std::string rule_list(const std::vector<int>& indices) {
    std::string out = indices.size() == 1 ? "rule " : "rules ";
    for (std::size_t i = 0; i < indices.size(); ++i) {
        if (i > 0) out += i + 1 == indices.size() ? " and " : ", ";
        out += std::to_string(indices[i] + 1);
    }
    return out;
}

// [origin] (who made a generated table: strings or numbers, kept as text) and [model] (the cost model's fitted
// parameters: numbers), docs/tuning.md. Informational for decisions; the tuning cache checks its origin.
void read_header_table(std::string_view name, const toml::node& node, int line, Reporter& report, Table* table) {
    const auto* entries = node.as_table();
    const bool model = name == "model";
    if (entries == nullptr) {
        report.error(line, std::string(name) + " is " + type_phrase(node.type()) + "; allowed: a table of " +
                               (model ? "numbers" : "strings or numbers"));
        return;
    }
    for (auto&& [key, value] : *entries) {
        const int at = line_of(key.source());
        if (table->origin.size() + table->model.size() >= kMaxHeaderKeys) {
            report.error(at, std::string(name) + ": more than " + std::to_string(kMaxHeaderKeys) + " entries");
            return;
        }
        const std::string k = escape(key.str(), 60);
        if (const auto* f = value.as_floating_point()) {
            if (model) table->model.emplace_back(k, f->get());
            else table->origin.emplace_back(k, render(value));
        } else if (const auto* i = value.as_integer()) {
            if (model) table->model.emplace_back(k, static_cast<double>(i->get()));
            else table->origin.emplace_back(k, std::to_string(i->get()));
        } else if (const auto* s = value.as_string(); s != nullptr && !model) {
            table->origin.emplace_back(k, escape(s->get(), 200));
        } else {
            report.error(at, std::string(name) + "." + k + " = " + render(value) + " is " +
                                 type_phrase(value.type()) + "; allowed: " + (model ? "a number" : "a string or a number"));
        }
    }
}

void read_document(const toml::table& root, Reporter& report, Table* table, bool check_reachability) {
    bool have_version = false;
    const toml::node* rules = nullptr;
    int rules_line = 1;
    for (auto&& [key, node] : root) {
        const int line = line_of(key.source());
        if (key.str() == "version") {
            have_version = true;
            const auto* i = node.as_integer();
            if (i == nullptr)
                report.error(line, "version = " + render(node) + " is " + type_phrase(node.type()) + "; allowed: 1");
            else if (i->get() != kPolicyVersion)
                report.error(line, "version = " + render(node) + " is not supported; allowed: 1 (this ARShim reads "
                                   "policy format version 1)");
        } else if (key.str() == "rule") {
            rules = &node;
            rules_line = line;
        } else if (key.str() == "origin" || key.str() == "model") {
            read_header_table(key.str(), node, line, report, table);
        } else {
            report.error(line, "unknown top-level key '" + escape(key.str(), 40) + "'" +
                                   did_you_mean(key.str(), kTopKeys) + "; allowed: " + join(kTopKeys) +
                                   " (rules are [[rule]] tables)");
        }
    }
    if (!have_version) report.error(1, "missing 'version = 1' (the policy format version) before the first [[rule]]");

    const toml::array* array = rules ? rules->as_array() : nullptr;
    if (rules != nullptr && array == nullptr) {
        report.error(rules_line, std::string("'rule' is ") + type_phrase(rules->type()) +
                                     "; write each rule as a [[rule]] table (an array of tables)");
        return;
    }
    if (array == nullptr || array->empty()) {
        report.warning(rules_line, "no [[rule]] tables: no call matches this table");
        return;
    }
    int number = 0;
    bool all_read = true;
    for (const toml::node& element : *array) {
        ++number;
        const auto* rule_table = element.as_table();
        if (rule_table == nullptr) {
            report.error(line_of(element.source()), "rule " + std::to_string(number) + " is " +
                                                         type_phrase(element.type()) +
                                                         "; write each rule as a [[rule]] table (an array of tables)");
            all_read = false;
            continue;
        }
        RuleSpec rule;
        rule.line = line_of(rule_table->source());
        rule.number = number;
        if (RuleReader(report, number).read(*rule_table, &rule)) table->rules.push_back(std::move(rule));
        else all_read = false;
    }
    if (!all_read || !check_reachability) return;  // the unreachable check needs every rule

    std::size_t work = kReachabilityWork;  // shared by all rules: a 20 000-rule file costs bounded time
    std::vector<Box> boxes;
    for (const RuleSpec& rule : table->rules) boxes.push_back(rule.match);
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        if (boxes[i].possible().empty()) {
            report.warning(table->rules[i].line, "rule " + std::to_string(i + 1) +
                                                     " can never match: ppn, nodes and comm_size are at least 1");
            continue;
        }
        const std::vector<int> hiding = covering_boxes(boxes, i, &work);
        if (!hiding.empty())
            report.warning(table->rules[i].line, "rule " + std::to_string(i + 1) +
                                                     " can never match: every call it matches is matched first by " +
                                                     rule_list(hiding));
    }
}

// toml++ 3.3 has undefined behaviour on some non-ASCII input: is_non_ascii_horizontal_whitespace() reaches
// __builtin_unreachable for code points such as U+00A7 or U+FEFE in some parser states (marzer/tomlplusplus#190,
// #295; found again by test/fuzz). Policy files hold keys, numbers and names, so they are required to be ASCII and
// such text never reaches the parser. Returns false (with the problem) at the first other byte.
bool plain_ascii(std::string_view* text, Reporter& report) {
    if (text->substr(0, 3) == "\xEF\xBB\xBF") text->remove_prefix(3);  // a UTF-8 byte-order mark, as editors write
    int line = 1;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < text->size(); ++i) {
        const auto c = static_cast<unsigned char>((*text)[i]);
        if (c == '\n') {
            ++line;
            line_start = i + 1;
        } else if (c >= 0x80) {
            static const char hex[] = "0123456789abcdef";
            report.error(line, "non-ASCII byte 0x" + std::string{hex[c >> 4], hex[c & 15]} + " at column " +
                                   std::to_string(i - line_start + 1) +
                                   "; policy files must be plain ASCII, comments included");
            return false;
        }
    }
    return true;
}

// toml++ parses dotted keys, tables, arrays and inline tables recursively, so a deeply dotted or deeply nested input
// overflows the stack (an 80 KB file holding one 40 000-part dotted key crashed every rank in MPI_Init). Before
// parsing, a scanner that knows only TOML's quoting and brackets bounds the key depth, the nesting and the number
// of [[rule]] tables. Returns false (with the problem) at the first excess.
bool bounded_structure(std::string_view text, Reporter& report) {
    std::vector<char> open;  // containers of the value being read: '[' array, '{' inline table
    bool in_key = true;      // reading a key (line start at top level, after '{' or ',' in an inline table)
    int parts = 1, line = 1, rules = 0;
    auto fail = [&](const std::string& what) {
        report.error(line, what + "; the policy file was not parsed");
        return false;
    };
    auto key_part = [&]() {
        if (++parts > kMaxKeyParts)
            return fail("a key with more than " + std::to_string(kMaxKeyParts) +
                        " dotted parts (policy keys have at most 2)");
        return true;
    };
    // Skips a string starting at text[i] (a quote); returns the index of its last character.
    auto skip_string = [&](std::size_t i) {
        const char q = text[i];
        const bool multi = text.substr(i, 3) == std::string(3, q);
        std::size_t j = i + (multi ? 3 : 1);
        for (; j < text.size(); ++j) {
            if (text[j] == '\\' && q == '"') {
                ++j;
                if (j < text.size() && text[j] == '\n') ++line;
                continue;
            }
            if (text[j] == '\n') {
                ++line;
                if (!multi) return j - 1;  // unterminated: the parser reports it
            }
            if (text[j] == q && (!multi || text.substr(j, 3) == std::string(3, q))) return multi ? j + 2 : j;
        }
        return text.size() - 1;
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '"' || c == '\'') {
            i = skip_string(i);
        } else if (c == '#') {
            while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
        } else if (c == '\n') {
            ++line;
            if (open.empty()) in_key = true, parts = 1;
        } else if (in_key && open.empty() && c == '[') {  // a table header: [a.b] or [[rule]]
            if (text.substr(i, 6) == "[[rule") ++rules;
            if (rules > kMaxRules)
                return fail("more than " + std::to_string(kMaxRules) + " [[rule]] tables");
            for (; i < text.size() && text[i] != ']' && text[i] != '\n'; ++i) {
                if (text[i] == '"' || text[i] == '\'') i = skip_string(i);
                else if (text[i] == '.' && !key_part()) return false;
            }
            if (i < text.size() && text[i] == '\n') --i;  // the newline ends the header's line above
            parts = 1;
        } else if (in_key) {
            if (c == '.' && !key_part()) return false;
            if (c == '=') in_key = false, parts = 1;
            if (c == '}' && !open.empty()) open.pop_back(), in_key = false;  // an empty inline table
        } else if (c == '[' || c == '{') {
            open.push_back(c);
            if (open.size() > kMaxNesting)
                return fail("arrays or inline tables nested more than " + std::to_string(kMaxNesting) + " deep");
            if (c == '{') in_key = true, parts = 1;
        } else if ((c == ']' || c == '}') && !open.empty()) {
            open.pop_back();
        } else if (c == ',' && !open.empty() && open.back() == '{') {
            in_key = true, parts = 1;
        }
    }
    return true;
}

}  // namespace

Table read_table(std::string_view text, const std::string& source, bool check_reachability) {
    Table table;
    table.source = source;
    Reporter report(table.source);
    if (!plain_ascii(&text, report) || !bounded_structure(text, report)) {
        report.finish(&table);
        return table;
    }
#if TOML_EXCEPTIONS
    try {
        const toml::table root = toml::parse(text);
        read_document(root, report, &table, check_reachability);
    } catch (const toml::parse_error& error) {
        report.error(line_of(error.source()), "TOML syntax error at column " +
                                                  std::to_string(error.source().begin.column) + ": " +
                                                  escape(error.description(), 200));
    }
#else
    toml::parse_result parsed = toml::parse(text);
    if (parsed) {
        read_document(parsed.table(), report, &table, check_reachability);
    } else {
        const toml::parse_error& error = parsed.error();
        report.error(line_of(error.source()), "TOML syntax error at column " +
                                                  std::to_string(error.source().begin.column) + ": " +
                                                  escape(error.description(), 200));
    }
#endif
    if (report.errors() > 0) table.rules.clear();
    report.finish(&table);
    return table;
}

}  // namespace arshim::policy
