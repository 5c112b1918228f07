// Every ARSHIM_* option in the library's option table is documented in README.md, with its default.
#include "test/support/catch.h"

#include <fstream>
#include <sstream>
#include <string>

#include "policy/config.h"

TEST_CASE("README documents every ARSHIM_ variable with its default") {
    std::ifstream in(ARSHIM_README);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    const std::string readme = text.str();
    for (const arshim::OptionSpec& spec : arshim::option_table()) {
        INFO(spec.name);
        const std::string row = std::string("| `") + spec.name + "` |";
        const auto at = readme.find(row);
        REQUIRE(at != std::string::npos);
        if (spec.default_value[0] != '\0') {
            const std::string line = readme.substr(at, readme.find('\n', at) - at);
            CHECK(line.find(std::string("`") + spec.default_value + "`") != std::string::npos);
        }
    }
}
