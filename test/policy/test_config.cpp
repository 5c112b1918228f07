// Config: the ARSHIM_* option table, value parsing and the exact problem messages users see.
#include "test/support/catch.h"

#include <set>
#include <string>
#include <vector>

#include "policy/config.h"

using namespace arshim;

namespace {

Config config_from(const EnvPairs& pairs, std::vector<std::string>* problems) {
    return Config::from_pairs(pairs, problems);
}

}  // namespace

TEST_CASE("parse_flag accepts the mimalloc words, any case", "[config]") {
    bool b = false;
    for (const char* yes : {"1", "true", "on", "yes", "TRUE", "On", " yes "}) {
        b = false;
        CHECK(parse_flag(yes, &b));
        CHECK(b);
    }
    for (const char* no : {"0", "false", "off", "no", "NO"}) {
        b = true;
        CHECK(parse_flag(no, &b));
        CHECK_FALSE(b);
    }
    for (const char* bad : {"", "2", "maybe", "auto", "y", "10"}) CHECK_FALSE(parse_flag(bad, &b));
}

TEST_CASE("parse_size reads binary K/M/G/T suffixes", "[config]") {
    int64_t v = -1;
    auto size = [&](const char* text) {
        v = -1;
        REQUIRE(parse_size(text, &v));
        return v;
    };
    CHECK(size("0") == 0);
    CHECK(size("4096") == 4096);
    CHECK(size("64K") == 65536);
    CHECK(size("64k") == 65536);
    CHECK(size("64KiB") == 65536);
    CHECK(size("64KB") == 65536);
    CHECK(size("4MiB") == 4 << 20);
    CHECK(size("4M") == 4 << 20);
    CHECK(size("1G") == int64_t{1} << 30);
    CHECK(size("2T") == int64_t{2} << 40);
    CHECK(size(" 8 K ") == 8192);
    CHECK(size("12b") == 12);
    for (const char* bad : {"", "K", "-1", "1.5M", "1X", "4 MiBs", "0x10", "99999999999999999999",
                            "9999999999999999T"})
        CHECK_FALSE(parse_size(bad, &v));
}

TEST_CASE("parse_integer is strict", "[config]") {
    int64_t v = 0;
    CHECK(parse_integer("42", &v));
    CHECK(v == 42);
    CHECK(parse_integer("-3", &v));
    CHECK(v == -3);
    for (const char* bad : {"", "4x", "1e3", "3.0", "99999999999999999999"}) CHECK_FALSE(parse_integer(bad, &v));
}

TEST_CASE("format_size uses the largest exact binary unit", "[config]") {
    CHECK(format_size(0) == "0");
    CHECK(format_size(1536) == "1536");
    CHECK(format_size(65536) == "64K");
    CHECK(format_size(int64_t{1} << 20) == "1M");
    CHECK(format_size(int64_t{3} << 30) == "3G");
    CHECK(format_size(int64_t{1} << 40) == "1T");
    CHECK(format_size(int64_t{1} << 50) == "1024T");
}

TEST_CASE("the option table is consistent", "[config]") {
    std::set<std::string> names;
    const auto& table = option_table();
    for (std::size_t i = 0; i < table.size(); ++i) {
        const OptionSpec& spec = table[i];
        INFO(spec.name);
        CHECK(static_cast<std::size_t>(spec.id) == i);
        CHECK(&option_spec(spec.id) == &spec);
        CHECK(std::string(spec.name).rfind("ARSHIM_", 0) == 0);
        CHECK(names.insert(spec.name).second);
        CHECK(std::string(spec.doc).size() > 10);
        if (spec.type == OptionType::choice) CHECK(spec.choices != nullptr);
        if (spec.type == OptionType::integer || spec.type == OptionType::size) CHECK(spec.min <= spec.max);
    }
}

TEST_CASE("every option's default, written explicitly, parses to the built-in value", "[config]") {
    const Config builtin;
    for (const OptionSpec& spec : option_table()) {
        INFO(spec.name << "=" << spec.default_value);
        // The tri-state flags ("auto" = decided from other options) hold -1 until set.
        if (spec.type == OptionType::flag && std::string(spec.default_value) == "auto") {
            CHECK(builtin.value(spec.id).number == -1);
            CHECK(builtin.text(spec.id) == "auto");
        }
        std::vector<std::string> problems;
        const Config c = config_from({{spec.name, spec.default_value}}, &problems);
        CHECK(problems.empty());
        CHECK(c.number(spec.id) == builtin.number(spec.id));
        CHECK(c.text(spec.id) == builtin.text(spec.id));
        CHECK(c.is_set(spec.id));
        CHECK_FALSE(builtin.is_set(spec.id));
    }
}

TEST_CASE("typed values from the environment", "[config]") {
    std::vector<std::string> problems;
    const Config c = config_from({{"ARSHIM_PATH", "Pipelined"},
                                  {"ARSHIM_SEGMENT_BYTES", "256KiB"},
                                  {"ARSHIM_WINDOW", " 4 "},
                                  {"ARSHIM_STRICT", "on"},
                                  {"ARSHIM_POLICY", "/tmp/p.toml"},
                                  {"HOME", "/root"},
                                  {"OMPI_ARSHIM_X", "1"}},
                                 &problems);
    CHECK(problems.empty());
    CHECK(c.text(OptionId::path) == "pipelined");
    CHECK(c.number(OptionId::path) == 2);
    CHECK(c.number(OptionId::segment_bytes) == 256 * 1024);
    CHECK(c.text(OptionId::segment_bytes) == "256K");
    CHECK(c.number(OptionId::window) == 4);
    CHECK(c.flag(OptionId::strict));
    CHECK(c.text(OptionId::policy) == "/tmp/p.toml");
    CHECK(c.pairs().size() == 5);  // only ARSHIM_* pairs are kept
    CHECK(c.describe_set() == "ARSHIM_STRICT=1 ARSHIM_PATH=pipelined ARSHIM_SEGMENT_BYTES=256K ARSHIM_WINDOW=4 "
                              "ARSHIM_POLICY=/tmp/p.toml");
}

TEST_CASE("bad values: one exact line each, and the default stays", "[config]") {
    std::vector<std::string> problems;
    const Config c = config_from({{"ARSHIM_WINDOW", "abc"},
                                  {"ARSHIM_WINDOW", "5000"},
                                  {"ARSHIM_SEGMENT_BYTES", "12Q"},
                                  {"ARSHIM_PATH", "fast"},
                                  {"ARSHIM_STRICT", "maybe"},
                                  {"ARSHIM_SHM_MAX", "1K"},
                                  {"ARSHIM_SEGMNTS", "4"},
                                  {"ARSHIM_ROOT", "/opt/arshim"},  // set by environment modules: not a setting
                                  {"ARSHIM_LIB_DIR", "/opt/arshim/lib"},
                                  {"ARSHIM_SUMMARY_PROGRAM", "/opt/arshim/bin/arshim-stats-summary"}},  // a tool's
                                 &problems);
    const std::vector<std::string> expected = {
        "ARSHIM_WINDOW=\"abc\": expected an integer in [0, 4096]; using the default (0)",
        "ARSHIM_WINDOW=\"5000\": expected an integer in [0, 4096]; using the default (0)",
        "ARSHIM_SEGMENT_BYTES=\"12Q\": expected a size in [0, 1T] such as 64K, 4MiB, 1G; using the default (0)",
        "ARSHIM_PATH=\"fast\": expected one of auto|native|pipelined|multileader|sharp|reproducible|latency; using the default (auto)",
        "ARSHIM_STRICT=\"maybe\": expected 1/true/on/yes or 0/false/off/no; using the default (0)",
        "ARSHIM_SHM_MAX=\"1K\": expected a size in [64K, 1T] such as 64K, 4MiB, 1G; using the default (64M)",
        "ARSHIM_SEGMNTS: unknown variable (ignored); the ARSHIM_* variables are listed by 'arshim policy options' and "
        "in README.md",
    };
    CHECK(problems == expected);
    CHECK(c.number(OptionId::window) == 0);
    CHECK_FALSE(c.is_set(OptionId::window));
    CHECK(c.text(OptionId::path) == "auto");
    CHECK(c.number(OptionId::shm_max) == 64 << 20);
    CHECK(c.describe_set().empty());
}

TEST_CASE("ARSHIM_STATS_SAMPLE: 1..65536, anything else one line and the default 64", "[config]") {
    for (const char* bad : {"0", "-1", "-64", "abc", "1e3", "65537", "99999999999999999999", ""}) {
        std::vector<std::string> problems;
        const Config c = config_from({{"ARSHIM_STATS_SAMPLE", bad}}, &problems);
        INFO(bad);
        REQUIRE(problems.size() == 1);
        CHECK(problems[0] == std::string("ARSHIM_STATS_SAMPLE=\"") + bad +
                                 "\": expected an integer in [1, 65536]; using the default (64)");
        CHECK(c.number(OptionId::stats_sample) == 64);
        CHECK_FALSE(c.is_set(OptionId::stats_sample));
    }
    for (const auto& [text, value] : std::vector<std::pair<std::string, int64_t>>{{"1", 1}, {" 8 ", 8}, {"65536", 65536}}) {
        std::vector<std::string> problems;
        const Config c = config_from({{"ARSHIM_STATS_SAMPLE", text}}, &problems);
        CHECK(problems.empty());
        CHECK(c.number(OptionId::stats_sample) == value);
    }
    CHECK(Config{}.number(OptionId::stats_sample) == 64);
}

TEST_CASE("zero means 'policy decides' for sizes whose default is 0", "[config]") {
    std::vector<std::string> problems;
    const Config c = config_from({{"ARSHIM_SEGMENT_BYTES", "0"}, {"ARSHIM_SHM_MAX", "0"}}, &problems);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] ==
          "ARSHIM_SHM_MAX=\"0\": expected a size in [64K, 1T] such as 64K, 4MiB, 1G; using the default (64M)");
    CHECK(c.number(OptionId::segment_bytes) == 0);
}

TEST_CASE("pairs travel between ranks unchanged", "[config]") {
    const EnvPairs pairs = {{"ARSHIM_PATH", "native"}, {"ARSHIM_POLICY", ""}, {"ARSHIM_STATS", "a b=c"}};
    CHECK(Config::deserialize(Config::serialize(pairs)) == pairs);
    CHECK(Config::deserialize(std::string("ARSHIM_X\0", 9)).empty());  // truncated blob: nothing half-read

    std::vector<std::string> problems;
    const Config a = config_from(pairs, &problems);
    const Config b = config_from(Config::deserialize(Config::serialize(pairs)), &problems);
    CHECK(a.digest() == b.digest());
    CHECK(a.digest() != Config().digest());
    CHECK(Config().digest() == Config().digest());
}

TEST_CASE("pairs_from_environ keeps ARSHIM_* only", "[config]") {
    char a[] = "ARSHIM_PATH=native";
    char b[] = "PATH=/usr/bin";
    char c[] = "ARSHIM_STATS=x=y";
    char d[] = "ARSHIM_BROKEN";
    char* envp[] = {a, b, c, d, nullptr};
    const EnvPairs pairs = Config::pairs_from_environ(envp);
    const EnvPairs expected = {{"ARSHIM_PATH", "native"}, {"ARSHIM_STATS", "x=y"}};
    CHECK(pairs == expected);
    CHECK(Config::pairs_from_environ(nullptr).empty());
}
