// arshim-policy: explain, check and show ARShim's selection policy, list the ARSHIM_* options, and predict call times
// with the cost model (`predict`, JSON).
// (`arshim policy ...` runs this program.) It uses the same library as the shim, so what it says is what the shim
// decides: ARSHIM_* variables are read from this program's own environment exactly as the shim reads them.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "policy/config.h"
#include "policy/policy.h"
#include "policy/rules.h"
#include "policy/text.h"
#include "policy/tuned_table.h"
#include "tools/policy/paths_cli.h"
#include "tools/policy/predict_cli.h"
#include "tools/policy/tune_table_cli.h"

extern char** environ;

namespace {

using namespace arshim;
using namespace arshim::policy;

const std::vector<std::string> kFlavors = {"mpich", "openmpi"};
const std::vector<std::string> kDtypes = {"float", "int", "other"};
const std::vector<std::string> kOps = {"sum", "prod", "min", "max", "land", "lor",
                                       "lxor", "band", "bor", "bxor", "minloc", "maxloc"};

const CLI::Validator kSize(
    [](std::string& text) {
        int64_t v = 0;
        return parse_size(text, &v) ? std::string() : "'" + text + "' is not a size; write e.g. 4096, 64K or 4MiB";
    },
    "SIZE");

// The same rules as the shim's (policy/text.h): a regular file of at most ARSHIM_POLICY_MAX_BYTES, opened without
// blocking. *problem says why not.
bool read_file(const std::string& path, const Config& cfg, std::string* text, std::string* problem) {
    return read_regular_file(path, static_cast<uint64_t>(cfg.number(OptionId::policy_max_bytes)), text, problem);
}

// The settings this program runs with: ARSHIM_* from its environment, as the shim would read them.
Config environment_config() {
    std::vector<std::string> problems;
    Config cfg = Config::from_pairs(Config::pairs_from_environ(environ), &problems);
    for (const std::string& p : problems) std::cerr << "arshim-policy: " << p << "\n";
    return cfg;
}

// Loads the policy the shim would use: --policy, else ARSHIM_POLICY, else the built-in table. Problems go to stderr.
// Returns false when a named file cannot be read.
bool load(const Config& cfg, const std::string& policy_option, const std::string& flavor, LoadResult* out) {
    const std::string file = policy_option.empty() ? cfg.text(OptionId::policy) : policy_option;
    std::string text, problem;
    if (!file.empty() && !read_file(file, cfg, &text, &problem)) {
        std::cerr << "arshim-policy: policy file " << printable(file, 200) << ": " << problem << "\n";
        return false;
    }
    *out = load_policy(cfg, file.empty() ? nullptr : &text, file, flavor);
    for (const std::string& p : out->problems) std::cerr << p << "\n";
    return true;
}

// ---- explain ----

struct ExplainArgs {
    std::string bytes;
    uint32_t ppn = 1;
    uint32_t nodes = 1;
    uint32_t comm_size = 0;
    std::string dtype = "float";
    std::string op = "sum";
    std::string policy;
    std::string mpi;
    bool library_bug = false;
    bool reproducible = false;
};

// "measured: 812.4 us, native 1004.1 us (1.24x)" for the rules of tuned tables and tuning caches; "" otherwise.
std::string evidence_text(const Evidence& e) {
    if (e.kind == EvidenceKind::none) return "";
    std::string out = std::string(kEvidenceNames[static_cast<int>(e.kind)]) +
                      (e.kind == EvidenceKind::measured ? " on this machine" : " by the cost model");
    char figures[128] = "";
    if (e.time_us > 0 && e.native_us > 0)
        std::snprintf(figures, sizeof figures, ": %.1f us, native %.1f us (%.2fx)", e.time_us, e.native_us,
                      e.native_us / e.time_us);
    else if (e.time_us > 0)
        std::snprintf(figures, sizeof figures, ": %.1f us", e.time_us);
    return out + figures;
}

// A tuned table carries its machine parameters ([model], docs/tuning.md): then every path's predicted time for the
// call, so a user sees how far apart the options are and what the table's choice rests on.
void print_predictions(const Config& cfg, const ExplainArgs& args, const CallFacts& facts) {
    const std::string file = args.policy.empty() ? cfg.text(OptionId::policy) : args.policy;
    std::string text, problem;
    if (file.empty() || !read_file(file, cfg, &text, &problem)) return;
    const Table table = read_table(text, file, false);
    if (table.model.empty()) return;
    const model::MachineParams params = tuned::params_from_keys(table.model);
    const model::Shape shape{facts.bytes, static_cast<int>(facts.ppn), static_cast<int>(facts.nodes)};
    std::vector<Decision> options;
    options.push_back(decision_for(Path::native));
    // The options `arshim tune` weighs (tools/tune/arshim_tune.py candidates): multi-leader with 1, 2, 4, 8 leaders,
    // at one rank per node one leader where that is ARShim's ring over the ranks; the whole message as one
    // non-blocking allreduce below 64 KiB; 64 KiB to 1 MiB segments from one segment.
    Decision d = decision_for(Path::multileader);
    auto& leaders = d.get<MultileaderParams>().leaders;
    for (uint32_t l = 1; l <= facts.ppn && l <= 8 && facts.ppn > 1; l *= 2) leaders = l, options.push_back(d);
    if (facts.ppn == 1 && model::internode_ring_auto(facts.nodes, facts.bytes)) leaders = 1, options.push_back(d);
    d = decision_for(Path::pipelined);
    auto& segments = d.get<PipelinedParams>();
    segments.window = 1;
    segments.segments = 1;
    segments.segment_bytes = 0;
    if (facts.bytes < (uint64_t{64} << 10)) options.push_back(d);
    segments.segments = 0;
    segments.window = 8;
    for (uint64_t seg : {uint64_t{64} << 10, uint64_t{256} << 10, uint64_t{1} << 20})
        if (facts.bytes >= seg) segments.segment_bytes = seg, options.push_back(d);
    for (const std::string& flavor : args.mpi.empty() ? kFlavors : std::vector<std::string>{args.mpi}) {
        Flavor f = Flavor::mpich;
        parse_flavor(flavor, &f);
        std::cout << "predicted (" << flavor << ", the table's model; a prediction, not a measurement):\n";
        for (const Decision& option : options) {
            char line[160];
            std::snprintf(line, sizeof line, "  %-52s %10.1f us\n", describe_decision(option).c_str(),
                          model::predict(params, shape, option, f) * 1e6);
            std::cout << line;
        }
    }
}

int run_explain(const ExplainArgs& args) {
    const Config cfg = environment_config();
    CallFacts facts;
    int64_t bytes = 0;
    parse_size(args.bytes, &bytes);  // checked by the option's validator
    facts.bytes = static_cast<uint64_t>(bytes);
    facts.ppn = args.ppn;
    facts.nodes = args.nodes;
    const uint64_t size = args.comm_size != 0 ? args.comm_size : uint64_t{args.ppn} * args.nodes;
    if (size > 0xFFFFFFFFull) {
        std::cerr << "arshim-policy: ppn x nodes does not fit a communicator size; give --comm-size\n";
        return 2;
    }
    facts.comm_size = static_cast<uint32_t>(size);
    parse_dtype_class(args.dtype, &facts.dclass);
    parse_op(args.op, &facts.op);
    facts.library_bug = args.library_bug;
    facts.reproducible = args.reproducible;

    const uint32_t bucket = bucket_of(facts.bytes);
    std::cout << "call:      " << format_size(bytes) << " bytes (size bucket " << bucket << ": "
              << (bucket == 0 ? std::string("0 bytes") : format_bytes_range(Interval{bucket, bucket + 1u}))
              << "), ppn " << facts.ppn << ", nodes " << facts.nodes << ", comm_size " << facts.comm_size
              << ", dtype " << args.dtype << ", op " << args.op
              << (args.library_bug ? ", a known wrong reduction of the library" : "")
              << (args.reproducible ? ", covered by ARSHIM_REPRODUCIBLE" : "") << "\n";

    // Without --mpi, both flavors: printed once when they agree.
    const std::vector<std::string> flavors = args.mpi.empty() ? kFlavors : std::vector<std::string>{args.mpi};
    struct Answer {
        std::string flavor, source, rule, decision, evidence;
    };
    std::vector<Answer> answers;
    for (const std::string& flavor : flavors) {
        LoadResult loaded;
        if (!load(cfg, args.policy, flavor, &loaded)) return 1;
        const Policy& policy = *loaded.policy;
        const Decision d = policy.decide(facts);
        Answer a{flavor, policy.source(), policy.describe_rule(d.rule), describe_decision(d), ""};
        if (d.rule >= 0) {
            const PolicyRule& rule = policy.rules()[static_cast<std::size_t>(d.rule)];
            a.evidence = evidence_text(rule.evidence);
            a.rule += " (rule " + std::to_string(rule.number) + (rule.name.empty() ? "" : ", \"" + rule.name + "\"") +
                      ")";
        } else {
            a.rule += " (native)";
        }
        if (!answers.empty() && answers.back().rule == a.rule && answers.back().decision == a.decision &&
            answers.back().source == a.source) {
            answers.back().flavor += ", " + flavor;
            continue;
        }
        answers.push_back(a);
    }
    for (const Answer& a : answers) {
        std::cout << "mpi:       " << a.flavor << "\n"
                  << "policy:    " << a.source << "\n"
                  << "rule:      " << a.rule << "\n"
                  << "decision:  " << a.decision << "\n";
        if (!a.evidence.empty()) std::cout << "evidence:  " << a.evidence << "\n";
    }
    print_predictions(cfg, args, facts);
    return 0;
}

// ---- check ----

int run_check(const std::vector<std::string>& files) {
    int status = 0;
    const Config cfg = environment_config();
    for (const std::string& file : files) {
        std::string text, problem;
        if (!read_file(file, cfg, &text, &problem)) {
            std::cout << printable(file, 200) << ": " << problem << "\n";
            status = 1;
            continue;
        }
        const Table table = read_table(text, file);
        for (const std::string& p : table.problems) std::cout << p << "\n";
        if (table.problems.empty()) {
            std::cout << file << ": OK, " << table.rules.size() << (table.rules.size() == 1 ? " rule" : " rules")
                      << "\n";
        } else {
            std::cout << file << ": " << table.errors << (table.errors == 1 ? " error, " : " errors, ")
                      << table.warnings << (table.warnings == 1 ? " warning" : " warnings")
                      << (table.usable() ? "" : "; ARShim would not use this file") << "\n";
            status = 1;
        }
    }
    return status;
}

// ---- show ----

void print_columns(const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width;
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) {
            if (width.size() <= i) width.push_back(0);
            width[i] = std::max(width[i], row[i].size());
        }
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i) {
            line += row[i];
            if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        std::cout << line << "\n";
    }
}

int run_show(const std::string& policy_option, const std::string& mpi) {
    const Config cfg = environment_config();
    LoadResult loaded;
    if (!load(cfg, policy_option, mpi, &loaded)) return 1;
    const Policy& policy = *loaded.policy;
    std::cout << "policy:    " << policy.source() << "\n"
              << "mpi:       " << (mpi.empty() ? "any (give --mpi to see one flavor's rules only)" : mpi) << "\n"
              << "overrides: " << (policy.overrides().empty() ? "none" : policy.overrides()) << "\n\n";
    std::vector<std::vector<std::string>> rows = {
        {"#", "where", "mpi", "bytes", "ppn", "nodes", "comm_size", "dtype", "op", "bug", "repro", "decision", "name"}};
    for (const PolicyRule& rule : policy.rules()) {
        const Box& m = rule.match;
        rows.push_back({std::to_string(rule.decision.rule + 1), rule.where, format_flavors(m.mpis),
                        format_bytes_range(m.dim[Box::bucket]), format_count_range(m.dim[Box::ppn]),
                        format_count_range(m.dim[Box::nodes]), format_count_range(m.dim[Box::comm_size]),
                        format_dtypes(m.dtypes), format_ops(m.ops), format_library_bug(m.bugs),
                        format_reproducible(m.repros), describe_decision(rule.decision), rule.name});
    }
    rows.push_back(
        {"-", "(no rule matches)", "", "", "", "", "", "", "", "", "", describe_decision(policy.fallback()), ""});
    print_columns(rows);
    return 0;
}

// ---- options ----


const char* type_name(OptionType type) {
    switch (type) {
    case OptionType::flag: return "flag";
    case OptionType::integer: return "integer";
    case OptionType::size: return "size";
    case OptionType::choice: return "choice";
    case OptionType::text: return "text";
    }
    return "";
}

std::string markdown_cell(std::string text) {
    std::string out;
    for (char c : text) {
        if (c == '|') out += "\\|";
        else out += c;
    }
    return out;
}

int run_options(bool markdown) {
    if (markdown) {
        std::cout << "| Variable | Type | Default | Allowed | Description |\n"
                  << "|---|---|---|---|---|\n";
        for (const OptionSpec& spec : option_table()) {
            const std::string def = spec.default_value[0] ? "`" + std::string(spec.default_value) + "`" : "(unset)";
            std::cout << "| `" << spec.name << "` | " << type_name(spec.type) << " | " << def << " | "
                      << markdown_cell(allowed_values(spec)) << " | " << markdown_cell(spec.doc) << " |\n";
        }
        return 0;
    }
    for (const OptionSpec& spec : option_table()) {
        std::cout << spec.name << " (" << type_name(spec.type) << ", default "
                  << (spec.default_value[0] ? spec.default_value : "unset") << "; " << allowed_values(spec) << ")\n    "
                  << spec.doc << "\n";
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Explain, check and show ARShim's allreduce selection policy; list the ARSHIM_* options.\n"
                 "ARSHIM_* variables in this program's environment apply as they would in the shim.",
                 "arshim-policy"};
    app.require_subcommand(1);
    app.footer("Run `arshim-policy COMMAND --help` for each command's options. The policy format: docs/policy.md.");

    ExplainArgs ex;
    CLI::App* explain = app.add_subcommand(
        "explain", "Which path and parameters a call gets, and the rule (file:line) that decides it");
    explain->add_option("--bytes", ex.bytes, "Message size (count x datatype size), e.g. 4096, 64K, 4MiB")
        ->required()
        ->check(kSize);
    explain->add_option("--ppn", ex.ppn, "Processes per node")->required()->check(CLI::Range(1u, 0xFFFFFFFFu));
    explain->add_option("--nodes", ex.nodes, "Node count")->required()->check(CLI::Range(1u, 0xFFFFFFFFu));
    explain->add_option("--comm-size", ex.comm_size, "Communicator size (default: ppn x nodes)")
        ->check(CLI::Range(1u, 0xFFFFFFFFu));
    explain->add_option("--dtype", ex.dtype, "Datatype class")->check(CLI::IsMember(kDtypes))->capture_default_str();
    explain->add_option("--op", ex.op, "Reduction op")->check(CLI::IsMember(kOps))->capture_default_str();
    explain->add_flag("--library-bug", ex.library_bug,
                      "The call hits a known wrong reduction of the library (docs/library-bugs.md)");
    explain->add_flag("--reproducible", ex.reproducible,
                      "The call is covered by ARSHIM_REPRODUCIBLE: a floating-point SUM or PROD (docs/reproducible.md)");
    explain->add_option("--policy", ex.policy, "Policy file (default: $ARSHIM_POLICY, else the built-in table)");
    explain->add_option("--mpi", ex.mpi, "MPI flavor (default: both, printed once when they agree)")
        ->check(CLI::IsMember(kFlavors));

    std::vector<std::string> check_files;
    CLI::App* check = app.add_subcommand(
        "check", "Validate policy files: exit 0 when clean, 1 with every problem listed (file:line)");
    check->add_option("files", check_files, "Policy files (TOML)")->required();

    std::string show_policy, show_mpi;
    CLI::App* show = app.add_subcommand("show", "The effective rule table, after ARSHIM_* overrides");
    show->add_option("--policy", show_policy, "Policy file (default: $ARSHIM_POLICY, else the built-in table)");
    show->add_option("--mpi", show_mpi, "Keep only the rules that apply to this MPI flavor")
        ->check(CLI::IsMember(kFlavors));

    bool markdown = false;
    CLI::App* options = app.add_subcommand("options", "The ARSHIM_* environment variables: type, default, meaning");
    options->add_flag("--markdown", markdown, "As a Markdown table (the README's variable list)");

    CLI::App* builtin = app.add_subcommand("default", "Print the built-in policy (policy/default.toml)");

    std::string tune_samples;
    bool tune_crossovers = false;
    CLI::App* tune_table = app.add_subcommand(
        "tune-table", "For `arshim tune`: fit the cost model to its measurements (JSON) and print the tuned table");
    tune_table->add_option("--samples", tune_samples, "The tuner's measurements (JSON)")->required();
    tune_table->add_flag("--crossovers", tune_crossovers,
                         "Print the fitted parameters and the sizes where the model's ranking changes (JSON) instead");

    PredictArgs pr;
    CLI::App* predict = app.add_subcommand(
        "predict", "The cost model's predicted times for a list of call shapes, as JSON: the library's allreduce, the "
                   "built-in table's decision, a policy file's, and every path as ARSHIM_PATH forces it");
    predict->add_option("--layout", pr.layouts, "NODESxPPN, e.g. 64x16 (repeat or separate with commas)")
        ->delimiter(',');
    predict->add_option("--sizes", pr.sizes, "Message sizes for every layout, e.g. 8,64K,4M");
    predict->add_option("--shapes", pr.shapes_file,
                        "JSON file (- for stdin): {\"shapes\": [{\"nodes\", \"ppn\", \"bytes\", \"params\": {...}}]}");
    predict->add_option("--param", pr.params,
                        "Machine parameter NAME=VALUE in SI units (copy_bw, intra_latency, gamma, alpha, net_bw, "
                        "stream_gain); beats the policy file's [model]");
    predict->add_option("--policy", pr.policy,
                        "Policy file (default: $ARSHIM_POLICY): its decisions, and its [model] parameters");
    predict->add_option("--mpi", pr.flavors, "Library whose algorithms are costed (default: both)")
        ->check(CLI::IsMember(kFlavors));
    predict->add_option("--decide-as", pr.decide_as,
                        "Flavor whose rules decide (default: each costed flavor's own)")
        ->check(CLI::IsMember(kFlavors));

    CLI::App* paths = app.add_subcommand(
        "paths", "Where each path applies, as its spec says (kApplies), as JSON: tools/arshim/path_limits.json");

    CLI11_PARSE(app, argc, argv);

    if (*explain) return run_explain(ex);
    if (*check) return run_check(check_files);
    if (*show) return run_show(show_policy, show_mpi);
    if (*options) return run_options(markdown);
    if (*tune_table) return run_tune_table(tune_samples, tune_crossovers);
    if (*predict) return run_predict(pr);
    if (*paths) return run_paths();
    if (*builtin) {
        std::cout << builtin_policy_text();
        return 0;
    }
    return 2;
}
