// The typed settings the shim reads (policy/settings.h): every field is its option's value, defaults included, and
// each option is read once (ARSHIM_STRICT and ARSHIM_VIRTUAL_PPN only into the agreed Settings).
#include "test/support/catch.h"

#include <string>
#include <vector>

#include "policy/settings.h"

using namespace arshim;

namespace {

ProcessSettings settings_from(const EnvPairs& pairs) {
    std::vector<std::string> problems;
    ProcessSettings s = ProcessSettings::from(Config::from_pairs(pairs, &problems));
    REQUIRE(problems.empty());
    return s;
}

}  // namespace

TEST_CASE("process settings: the built-in defaults", "[settings]") {
    const ProcessSettings s = settings_from({});
    CHECK_FALSE(s.disable);
    CHECK(s.log_level == 2);  // warn
    CHECK(s.init_timeout_s == 30);
    CHECK(s.kernel == "auto");
    CHECK(s.avoid_library_bugs);
    CHECK(s.device_check);
    CHECK(s.policy_max_bytes == 1024 * 1024);
    CHECK(s.tune_cache.empty());
    CHECK(s.tune_name == "guard");
    CHECK(s.spin_us == 0);
    CHECK(s.sleep_after_us == 1000);
    CHECK_FALSE(s.phase_times);
    CHECK(s.stats.empty());
    CHECK(s.stats_summary == -1);
    CHECK(s.stats_callsites);
    CHECK(s.stats_depth == 1);
    CHECK(s.stats_python);
    CHECK(s.stats_sample == 64);
    CHECK_FALSE(s.stats_per_rank);
    CHECK_FALSE(s.follow_symlinks);
    CHECK(s.trace.empty());
    CHECK(s.agreed.sharp == SharpMode::automatic);
    CHECK(s.agreed.sharp_lib == "libsharp_coll.so");
    CHECK(s.agreed.policy_file.empty());
    CHECK(s.agreed.virtual_ppn == 0);
    CHECK_FALSE(s.agreed.strict);
    CHECK(s.agreed.shm_max == 64u * 1024 * 1024);
    CHECK(s.describe_set().empty());
}

TEST_CASE("process settings: every field from its variable", "[settings]") {
    const ProcessSettings s = settings_from({{"ARSHIM_DISABLE", "1"},
                                             {"ARSHIM_LOG", "debug"},
                                             {"ARSHIM_INIT_TIMEOUT", "7"},
                                             {"ARSHIM_KERNEL", "avx2"},
                                             {"ARSHIM_LIBRARY_BUGS", "ignore"},
                                             {"ARSHIM_DEVICE_CHECK", "off"},
                                             {"ARSHIM_POLICY", "/tmp/p.toml"},
                                             {"ARSHIM_POLICY_MAX_BYTES", "8K"},
                                             {"ARSHIM_TUNE", "online"},
                                             {"ARSHIM_TUNE_CACHE", "/tmp/c.toml"},
                                             {"ARSHIM_SPIN_US", "5"},
                                             {"ARSHIM_SLEEP_AFTER_US", "0"},
                                             {"ARSHIM_PHASE_TIMES", "1"},
                                             {"ARSHIM_SHARP", "off"},
                                             {"ARSHIM_SHARP_LIB", "/x/libs.so"},
                                             {"ARSHIM_SMPI_COPY_BYTES_PER_S", "100"},
                                             {"ARSHIM_SMPI_REDUCE_BYTES_PER_S", "200"},
                                             {"ARSHIM_STATS", "/tmp/s-%r.json"},
                                             {"ARSHIM_STATS_SUMMARY", "0"},
                                             {"ARSHIM_STATS_CALLSITES", "0"},
                                             {"ARSHIM_STATS_DEPTH", "3"},
                                             {"ARSHIM_STATS_PYTHON", "0"},
                                             {"ARSHIM_STATS_SAMPLE", "1"},
                                             {"ARSHIM_STATS_PER_RANK", "1"},
                                             {"ARSHIM_STATS_FOLLOW_SYMLINKS", "1"},
                                             {"ARSHIM_TRACE", "/tmp/t-%r"},
                                             {"ARSHIM_STRICT", "1"},
                                             {"ARSHIM_VIRTUAL_PPN", "4"}});
    CHECK(s.disable);
    CHECK(s.log_level == 4);
    CHECK(s.init_timeout_s == 7);
    CHECK(s.kernel == "avx2");
    CHECK_FALSE(s.avoid_library_bugs);
    CHECK_FALSE(s.device_check);
    CHECK(s.agreed.policy_file == "/tmp/p.toml");
    CHECK(s.policy_max_bytes == 8192);
    CHECK(s.tune_name == "online");
    CHECK(s.agreed.tune == policy::tune::Mode::online);
    CHECK(s.tune_cache == "/tmp/c.toml");
    CHECK(s.spin_us == 5);
    CHECK(s.sleep_after_us == 0);
    CHECK(s.phase_times);
    CHECK(s.agreed.sharp == SharpMode::off);
    CHECK(s.agreed.sharp_mode_name == "off");
    CHECK(s.agreed.sharp_lib == "/x/libs.so");
    CHECK(s.smpi_copy_bytes_per_s == 100);
    CHECK(s.smpi_reduce_bytes_per_s == 200);
    CHECK(s.stats == "/tmp/s-%r.json");
    CHECK(s.stats_summary == 0);
    CHECK_FALSE(s.stats_callsites);
    CHECK(s.stats_depth == 3);
    CHECK_FALSE(s.stats_python);
    CHECK(s.stats_sample == 1);
    CHECK(s.stats_per_rank);
    CHECK(s.follow_symlinks);
    CHECK(s.trace == "/tmp/t-%r");
    CHECK(s.agreed.strict);
    CHECK(s.agreed.virtual_ppn == 4);
    CHECK(s.pairs().size() == 28);
}

TEST_CASE("process settings: the sampling periods ARSHIM_STATS_SAMPLE allows", "[settings]") {
    CHECK_FALSE(ProcessSettings::sample_period_allowed(0));
    CHECK(ProcessSettings::sample_period_allowed(1));
    CHECK(ProcessSettings::sample_period_allowed(65536));
    CHECK_FALSE(ProcessSettings::sample_period_allowed(65537));
}

TEST_CASE("process settings: the echo lists every option with its source", "[settings]") {
    const ProcessSettings s = settings_from({{"ARSHIM_STATS_DEPTH", "2"}});
    std::size_t options = 0, from_environment = 0;
    s.for_each_option([&](const char* name, const std::string& value, bool set) {
        ++options;
        if (set) {
            ++from_environment;
            CHECK(std::string(name) == "ARSHIM_STATS_DEPTH");
            CHECK(value == "2");
        }
    });
    CHECK(options == kOptionCount);
    CHECK(from_environment == 1);
}
