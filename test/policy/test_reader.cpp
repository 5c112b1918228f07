// The policy file reader: the format, and the exact one-line problems it reports.
#include "test/support/catch.h"

#include <string>
#include <vector>

#include "test/policy/decisions.h"
#include "policy/rules.h"

using namespace arshim;
using namespace arshim::policy;
using namespace arshim::policy::testing;

namespace {

Table read(const std::string& text) { return read_table(text, "p.toml"); }

// The problems of a table, for whole-list comparisons.
std::vector<std::string> problems(const std::string& text) { return read(text).problems; }

Interval buckets_of(const std::string& range) {
    const Table t = read("version = 1\n[[rule]]\nbytes = \"" + range + "\"\npath = \"native\"\n");
    REQUIRE(t.usable());
    REQUIRE(t.rules.size() == 1);
    return t.rules[0].match.dim[Box::bucket];
}

Interval counts_of(const std::string& value) {
    const Table t = read("version = 1\n[[rule]]\nppn = " + value + "\npath = \"native\"\n");
    INFO(value);
    REQUIRE(t.problems.empty());
    return t.rules[0].match.dim[Box::ppn];
}

}  // namespace

TEST_CASE("a complete rule: every key", "[reader]") {
    const Table t = read(R"(version = 1

[[rule]]
name = "big sums on many nodes"
mpi = "openmpi"
bytes = "64K..4M"
ppn = "2..=16"
nodes = "2.."
comm_size = "..1024"
dtype = ["float", "int"]
op = ["sum", "max"]
path = "multileader"
leaders = 4
pipeline_k = 2
kernel = "simd"
)");
    REQUIRE(t.problems.empty());
    REQUIRE(t.rules.size() == 1);
    const RuleSpec& r = t.rules[0];
    CHECK(r.line == 3);
    CHECK(r.number == 1);
    CHECK(r.name == "big sums on many nodes");
    CHECK(r.match.mpis == 1u << static_cast<int>(Flavor::openmpi));
    CHECK(r.match.dim[Box::bucket] == Interval{17, 23});  // [64K, 4M) = buckets 17..22
    CHECK(r.match.dim[Box::ppn] == Interval{2, 17});
    CHECK(r.match.dim[Box::nodes] == Interval{2, kUnbounded});
    CHECK(r.match.dim[Box::comm_size] == Interval{0, 1024});
    CHECK(r.match.dtypes == 0x3);
    CHECK(r.match.ops == ((1u << static_cast<int>(kernels::Op::sum)) | (1u << static_cast<int>(kernels::Op::max))));
    CHECK(r.action.path() == Path::multileader);
    CHECK(param(r.action, "leaders") == 4);
    CHECK(param(r.action, "pipeline_k") == 2);
    CHECK(r.action.kernel == KernelChoice::simd);
    CHECK(r.action.rule == -1);
}

TEST_CASE("each path's own keys; another path's keys warn and are ignored", "[reader]") {
    const Table sharp = read("version = 1\n[[rule]]\npath = \"sharp\"\nsharp_mode = \"sat\"\nsharp_leaders = \"socket\"\n");
    REQUIRE(sharp.problems.empty());
    CHECK(sharp.rules[0].action.get<SharpParams>().mode == SharpMode::sat);
    CHECK(sharp.rules[0].action.get<SharpParams>().leaders == SharpLeaders::socket);

    const Table mixed = read("version = 1\n[[rule]]\npath = \"multileader\"\nleaders = 2\nwindow = 16\n");
    CHECK(mixed.usable());
    CHECK(mixed.problems == std::vector<std::string>{
                                "p.toml:5: warning: rule 1: window is a parameter of pipelined, not of multileader: "
                                "ignored"});
    CHECK(param(mixed.rules[0].action, "leaders") == 2);
    CHECK(param(mixed.rules[0].action, "window") == -1);

    // A rule without a path: an error, and its parameters are not reported again.
    const Table pathless = read("version = 1\n[[rule]]\nleaders = 2\n");
    CHECK(pathless.problems == std::vector<std::string>{"p.toml:2: rule 1: no 'path'; allowed: native, pipelined, "
                                                        "multileader, sharp, reproducible, latency"});
}

TEST_CASE("defaults for keys a rule leaves out", "[reader]") {
    const Table t = read("version = 1\n[[rule]]\npath = \"pipelined\"\n");
    REQUIRE(t.problems.empty());
    const RuleSpec& r = t.rules[0];
    CHECK(r.match.dim[Box::bucket].any());
    CHECK(r.match.dim[Box::ppn].any());
    CHECK(r.match.dtypes == kAllDtypes);
    CHECK(r.match.ops == kAllOps);
    CHECK(r.match.mpis == kAllFlavors);
    CHECK(param(r.action, "segment_bytes") == PipelinedParams::kDefaultSegmentBytes);
    CHECK(param(r.action, "segments") == 0);
    CHECK(param(r.action, "window") == PipelinedParams::kDefaultWindow);
    CHECK(r.action.kernel == KernelChoice::native);
    const Table m = read("version = 1\n[[rule]]\npath = \"multileader\"\n");
    CHECK(param(m.rules[0].action, "leaders") == 1);
    CHECK(param(m.rules[0].action, "pipeline_k") == 1);
    const Table sh = read("version = 1\n[[rule]]\npath = \"sharp\"\n");
    CHECK(sh.rules[0].action.get<SharpParams>().mode == SharpMode::automatic);
    CHECK(sh.rules[0].action.get<SharpParams>().leaders == SharpLeaders::node);
}

TEST_CASE("byte ranges are half-open and become size buckets", "[reader]") {
    CHECK(buckets_of("64K..4M") == Interval{17, 23});
    CHECK(buckets_of("4M..") == Interval{23, kUnbounded});
    CHECK(buckets_of("..64K") == Interval{0, 17});
    CHECK(buckets_of("0..1") == Interval{0, 1});  // exactly 0 bytes
    CHECK(buckets_of("1..") == Interval{1, kUnbounded});
    CHECK(buckets_of("..") == Interval{0, kUnbounded});
    CHECK(buckets_of(" 64 KiB .. 4 MiB ") == Interval{17, 23});
    CHECK(buckets_of("65536..4194304") == Interval{17, 23});
    CHECK(buckets_of("..=65535") == Interval{0, 17});  // 65535 included = below 64K
}

TEST_CASE("count ranges: exact, half-open, inclusive, open", "[reader]") {
    CHECK(counts_of("8") == Interval{8, 9});
    CHECK(counts_of("\"8\"") == Interval{8, 9});
    CHECK(counts_of("\"4..16\"") == Interval{4, 16});
    CHECK(counts_of("\"1..=8\"") == Interval{1, 9});
    CHECK(counts_of("\"2..\"") == Interval{2, kUnbounded});
    CHECK(counts_of("\"..=4\"") == Interval{0, 5});
    CHECK(counts_of("\"..\"") == Interval{0, kUnbounded});
    CHECK(counts_of("4294967295") == Interval{4294967295ull, 4294967296ull});
}

TEST_CASE("text forms round-trip", "[reader]") {
    CHECK(format_bytes_range(Interval{17, 23}) == "64K..4M");
    CHECK(format_bytes_range(Interval{23, kUnbounded}) == "4M..");
    CHECK(format_bytes_range(Interval{0, 17}) == "..64K");
    CHECK(format_bytes_range(Interval{0, kUnbounded}) == "any");
    CHECK(format_bytes_range(Interval{64, 65}) == "8388608T..");
    for (const char* r : {"64K..4M", "4M..", "..64K", "1..2", "0..1"}) {
        INFO(r);
        const std::string text = format_bytes_range(buckets_of(r));
        CHECK(buckets_of(text) == buckets_of(r));
    }
    CHECK(format_count_range(Interval{8, 9}) == "8");
    CHECK(format_count_range(Interval{1, 9}) == "1..=8");
    CHECK(format_count_range(Interval{2, kUnbounded}) == "2..");
    CHECK(format_count_range(Interval{0, 5}) == "..=4");
    CHECK(format_count_range(Interval{0, kUnbounded}) == "any");
    CHECK(format_dtypes(kAllDtypes) == "any");
    CHECK(format_dtypes(0x5) == "float,other");
    CHECK(format_ops(1u << static_cast<int>(kernels::Op::bxor)) == "bxor");
    CHECK(format_flavors(0x2) == "openmpi");
}

TEST_CASE("unknown keys are errors that name the key, the rule and what is allowed", "[reader][messages]") {
    CHECK(problems("version = 1\n[[rule]]\npath = \"pipelined\"\n[[rule]]\npath = \"pipelined\"\nsegmnts = 4\n") ==
          std::vector<std::string>{
              "p.toml:6: rule 2: unknown key 'segmnts' (did you mean 'segments'?); allowed: "
              "name, mpi, bytes, ppn, nodes, comm_size, dtype, op, library_bug, reproducible, path, kernel, segment_bytes, "
              "segments, window, leaders, pipeline_k, sharp_mode, sharp_leaders, algorithm, evidence, time_us, native_us, "
              "note"});
    CHECK(problems("version = 1\nrules = []\n[[rule]]\npath = \"native\"\n") ==
          std::vector<std::string>{"p.toml:2: unknown top-level key 'rules' (did you mean 'rule'?); allowed: "
                                   "version, origin, model, rule (rules are [[rule]] tables)"});
    CHECK(problems("version = 1\n[[rule]]\npath = \"native\"\ncolour = \"red\"\n") ==
          std::vector<std::string>{"p.toml:4: rule 1: unknown key 'colour'; allowed: "
              "name, mpi, bytes, ppn, nodes, comm_size, dtype, op, library_bug, reproducible, path, kernel, segment_bytes, "
              "segments, window, leaders, pipeline_k, sharp_mode, sharp_leaders, algorithm, evidence, time_us, native_us, "
              "note"});
}

TEST_CASE("bad values: type, range, choice, syntax", "[reader][messages]") {
    const std::vector<std::string> expected = {
        "p.toml:3: rule 1: path = \"pipelind\" is not recognized; allowed: native, pipelined, multileader, sharp, reproducible, latency",
        "p.toml:4: rule 1: window = 0 is out of range; allowed: an integer in [1, 4096]",
        "p.toml:5: rule 1: leaders = \"4\" is a string; allowed: an integer in [1, 4096]",
        "p.toml:6: rule 1: bytes = \"64K-4M\" is not a range; allowed: a size range such as \"64K..4M\" (64K "
        "included, 4M excluded), \"4M..\" or \"..64K\"; bounds are 0 or powers of two",
        "p.toml:7: rule 1: ppn = \"8..4\" is an empty range; allowed: a count such as 8, or a range such as "
        "\"2..\", \"1..=8\" (8 included), \"4..16\" (16 excluded)",
        "p.toml:8: rule 1: dtype = [\"float\", \"double\"] holds \"double\", not a known datatype class; allowed: "
        "float, int, other, or a list of them",
        "p.toml:9: rule 1: op = [] matches nothing; allowed: sum, prod, min, max, land, lor, lxor, band, bor, bxor, "
        "minloc, maxloc, or a list of them",
        "p.toml:10: rule 1: mpi = \"intel\" is not a known MPI flavor; allowed: mpich, openmpi, or a list of them",
        "p.toml:11: rule 1: kernel = 3 is an integer; allowed: native, simd",
        "p.toml:12: rule 1: segment_bytes = 1.5 is a float; allowed: a size in [1, 1T] such as 256K or 1M",
        "p.toml:13: rule 1: pipeline_k = 1025 is out of range; allowed: an integer in [1, 1024]",
        "p.toml:14: rule 1: nodes = -1 is out of range; allowed: a count such as 8, or a range such as \"2..\", "
        "\"1..=8\" (8 included), \"4..16\" (16 excluded)",
        "p.toml:15: rule 1: sharp_mode = \"fast\" is not recognized; allowed: auto, llt, sat",
        "p.toml:16: rule 1: name = 7 is an integer; allowed: a string",
        "p.toml:17: rule 1: library_bug = \"yes\" is a string; allowed: true or false",
    };
    const Table t = read(R"(version = 1
[[rule]]
path = "pipelind"
window = 0
leaders = "4"
bytes = "64K-4M"
ppn = "8..4"
dtype = ["float", "double"]
op = []
mpi = "intel"
kernel = 3
segment_bytes = 1.5
pipeline_k = 1025
nodes = -1
sharp_mode = "fast"
name = 7
library_bug = "yes"
)");
    CHECK(t.problems == expected);
    CHECK(t.errors == static_cast<int>(expected.size()));
    CHECK_FALSE(t.usable());
    CHECK(t.rules.empty());
}

TEST_CASE("library_bug: rules for the calls the library computes wrong, or for the others", "[reader]") {
    const Table t = read("version = 1\n[[rule]]\nlibrary_bug = true\npath = \"multileader\"\n"
                         "[[rule]]\nlibrary_bug = false\nbytes = \"64K..\"\npath = \"pipelined\"\n"
                         "[[rule]]\npath = \"native\"\n");
    REQUIRE(t.problems.empty());
    REQUIRE(t.rules.size() == 3);
    CHECK(t.rules[0].match.bugs == kLibraryBug);
    CHECK(t.rules[1].match.bugs == kNoLibraryBug);
    CHECK(t.rules[2].match.bugs == kAnyLibraryBug);
    CHECK(format_library_bug(t.rules[0].match.bugs) == "yes");
    CHECK(format_library_bug(t.rules[1].match.bugs) == "no");
    CHECK(format_library_bug(t.rules[2].match.bugs) == "any");
    // Together, library_bug = true and = false cover every call: a rule after them is unreachable, and is reported.
    const Table hidden = read("version = 1\n[[rule]]\nlibrary_bug = true\npath = \"multileader\"\n"
                              "[[rule]]\nlibrary_bug = false\npath = \"pipelined\"\n[[rule]]\npath = \"native\"\n");
    CHECK(hidden.warnings == 1);
}

TEST_CASE("file-level errors", "[reader][messages]") {
    CHECK(problems("[[rule]]\npath = \"native\"\n") ==
          std::vector<std::string>{"p.toml:1: missing 'version = 1' (the policy format version) before the first "
                                   "[[rule]]"});
    CHECK(problems("version = 2\n[[rule]]\npath = \"native\"\n") ==
          std::vector<std::string>{"p.toml:1: version = 2 is not supported; allowed: 1 (this ARShim reads policy "
                                   "format version 1)"});
    CHECK(problems("version = \"1\"\n[[rule]]\npath = \"native\"\n") ==
          std::vector<std::string>{"p.toml:1: version = \"1\" is a string; allowed: 1"});
    CHECK(problems("version = 1\n[rule]\npath = \"native\"\n") ==
          std::vector<std::string>{
              "p.toml:2: 'rule' is a table; write each rule as a [[rule]] table (an array of tables)"});
    CHECK(problems("version = 1\nrule = [1]\n") ==
          std::vector<std::string>{
              "p.toml:2: rule 1 is an integer; write each rule as a [[rule]] table (an array of tables)"});
    CHECK(problems("version = 1\n[[rule]]\nbytes = \"4M..\"\n") ==
          std::vector<std::string>{"p.toml:2: rule 1: no 'path'; allowed: native, pipelined, multileader, sharp, reproducible, latency"});
    CHECK(problems("version = 1\n[[rule]]\npath = \"native\"\n[[rule]\n") ==
          std::vector<std::string>{"p.toml:4: TOML syntax error at column 8: Error while parsing table header: "
                                   "expected ']', saw '\\n'"});
    CHECK(problems("version = 1\nversion = 1\n") ==
          std::vector<std::string>{"p.toml:2: TOML syntax error at column 11: Error while parsing key-value pair: "
                                   "cannot redefine existing integer 'version'"});
    CHECK(problems("version = 1\n") ==
          std::vector<std::string>{"p.toml:1: warning: no [[rule]] tables: no call matches this table"});
}

TEST_CASE("problems stay on one line whatever the input holds", "[reader][messages]") {
    const Table t = read("version = 1\n[[rule]]\npath = \"\"\"na\ntive\"\"\"\n\"a\\nb\" = 1\n");
    REQUIRE(t.problems.size() == 2);
    CHECK(t.problems[0] == "p.toml:3: rule 1: path = \"na\\ntive\" is not recognized; allowed: native, pipelined, "
                           "multileader, sharp, reproducible, latency");
    CHECK(t.problems[1].find("unknown key 'a\\nb'") != std::string::npos);
    for (const std::string& p : t.problems) CHECK(p.find('\n') == std::string::npos);

    CHECK(problems("version = 1\n# \xff\n") ==
          std::vector<std::string>{"p.toml:2: non-ASCII byte 0xff at column 3; policy files must be plain ASCII, "
                                   "comments included"});
}

TEST_CASE("policy files are ASCII: toml++ 3.3 has undefined behaviour on some non-ASCII text", "[reader][messages]") {
    // Inputs that reach __builtin_unreachable in toml++ 3.3 (marzer/tomlplusplus#190, #295, and one from our fuzzer).
    CHECK(problems("s = \"\"\"\\\n\xc2\xa7\"\"\"\n") ==
          std::vector<std::string>{"p.toml:2: non-ASCII byte 0xc2 at column 1; policy files must be plain ASCII, "
                                   "comments included"});
    CHECK(problems("\xcc\xaa") == std::vector<std::string>{"p.toml:1: non-ASCII byte 0xcc at column 1; policy files "
                                                           "must be plain ASCII, comments included"});
    CHECK(problems("ve={\xef\xbb\xbehar# ") ==
          std::vector<std::string>{"p.toml:1: non-ASCII byte 0xef at column 5; policy files must be plain ASCII, "
                                   "comments included"});
    CHECK(problems("version = 1\n[[rule]]\nname = \"caf\xc3\xa9\"\npath = \"native\"\n") ==
          std::vector<std::string>{"p.toml:3: non-ASCII byte 0xc3 at column 12; policy files must be plain ASCII, "
                                   "comments included"});
    // A leading byte-order mark is fine.
    CHECK(problems("\xef\xbb\xbfversion = 1\n[[rule]]\npath = \"native\"\n").empty());
}

TEST_CASE("warnings keep the table usable", "[reader][messages]") {
    const Table t = read(R"(version = 1
[[rule]]
bytes = "3000..4M"
path = "native"
[[rule]]
bytes = "..=4M"
path = "pipelined"
segments = 4
segment_bytes = "64K"
)");
    const std::vector<std::string> expected = {
        "p.toml:3: warning: rule 1: bytes = \"3000..4M\": bounds must be 0 or powers of two (decisions are made per "
        "power-of-two size bucket); rounded down to \"2K..4M\"",
        "p.toml:5: warning: rule 2: sets both segments and segment_bytes; segment_bytes wins",
        "p.toml:6: warning: rule 2: bytes = \"..=4M\": bounds must be 0 or powers of two (decisions are made per "
        "power-of-two size bucket); rounded down to \"..4M\"",
    };
    CHECK(t.problems == expected);
    CHECK(t.usable());
    CHECK(t.warnings == 3);
    REQUIRE(t.rules.size() == 2);
    CHECK(t.rules[0].match.dim[Box::bucket] == Interval{12, 23});
    CHECK(param(t.rules[1].action, "segments") == 0);  // segment_bytes wins
    CHECK(param(t.rules[1].action, "segment_bytes") == 64 * 1024);

    CHECK(problems("version = 1\n[[rule]]\nbytes = \"3000..4000\"\npath = \"native\"\n") ==
          std::vector<std::string>{
              "p.toml:3: rule 1: bytes = \"3000..4000\" is empty once its bounds are rounded down to powers of two; "
              "allowed: a size range such as \"64K..4M\" (64K included, 4M excluded), \"4M..\" or \"..64K\"; bounds "
              "are 0 or powers of two"});
}

TEST_CASE("rules that earlier rules hide are reported; ordinary overlaps are not", "[reader][messages]") {
    // One earlier rule covers it.
    CHECK(problems("version = 1\n[[rule]]\npath = \"native\"\n[[rule]]\nbytes = \"1K..2K\"\npath = \"sharp\"\n") ==
          std::vector<std::string>{
              "p.toml:4: warning: rule 2 can never match: every call it matches is matched first by rule 1"});
    // Together, earlier rules cover it (nodes is at least 1).
    CHECK(problems(R"(version = 1
[[rule]]
nodes = 1
path = "native"
[[rule]]
nodes = "2.."
dtype = ["float", "int"]
path = "pipelined"
[[rule]]
nodes = "2.."
dtype = "other"
path = "native"
[[rule]]
bytes = "4M.."
path = "multileader"
)") == std::vector<std::string>{"p.toml:13: warning: rule 4 can never match: every call it matches is matched "
                                 "first by rules 1, 2 and 3"});
    // Specific before general, and crossing ranges: both fine.
    CHECK(problems(R"(version = 1
[[rule]]
nodes = 1
path = "native"
[[rule]]
bytes = "4M.."
path = "pipelined"
[[rule]]
bytes = "1M.."
ppn = "..=8"
path = "multileader"
[[rule]]
path = "native"
)").empty());
    // No call has 0 nodes.
    CHECK(problems("version = 1\n[[rule]]\nnodes = 0\npath = \"native\"\n[[rule]]\npath = \"native\"\n") ==
          std::vector<std::string>{
              "p.toml:2: warning: rule 1 can never match: ppn, nodes and comm_size are at least 1"});
    // A rule for one MPI does not hide a later rule for both.
    CHECK(problems("version = 1\n[[rule]]\nmpi = \"mpich\"\npath = \"native\"\n[[rule]]\npath = \"pipelined\"\n")
              .empty());
    CHECK(problems("version = 1\n[[rule]]\nmpi = \"mpich\"\npath = \"native\"\n[[rule]]\nmpi = \"openmpi\"\npath = "
                   "\"native\"\n[[rule]]\npath = \"pipelined\"\n") ==
          std::vector<std::string>{
              "p.toml:8: warning: rule 3 can never match: every call it matches is matched first by rules 1 and 2"});
}

TEST_CASE("covering_boxes is exact on unions", "[reader]") {
    Box all;
    Box low = all, high = all, middle = all;
    low.dim[Box::bucket] = {0, 10};
    high.dim[Box::bucket] = {11, kUnbounded};
    middle.dim[Box::bucket] = {5, 20};
    CHECK(covering_boxes({low, high, middle}, 2).empty());  // bucket 10 is left
    Box ten = all;
    ten.dim[Box::bucket] = {10, 11};
    CHECK(covering_boxes({low, high, ten, middle}, 3) == std::vector<int>{0, 1, 2});
    Box empty = all;
    empty.ops = 0;
    CHECK(covering_boxes({all, empty}, 1).empty());  // an empty box is not reported as hidden
}
