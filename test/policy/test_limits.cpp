// Hostile policy input and echoed values: the reader's bounds before parsing, the bounded reachability check, the
// file reader's refusals, and the one escaping function (policy/text.h).
#include "test/support/catch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "policy/rules.h"
#include "policy/text.h"

using namespace arshim;
using namespace arshim::policy;

namespace {

std::string repeated(const std::string& part, int n, const std::string& sep) {
    std::string out;
    for (int i = 0; i < n; ++i) out += (i ? sep : "") + part;
    return out;
}

bool has_problem(const Table& t, const std::string& needle) {
    for (const std::string& p : t.problems)
        if (p.find(needle) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("Deep dotted keys, deep nesting and too many rules are rejected before parsing", "[limits]") {
    const Table deep = read_table("version = 1\n" + repeated("a", 40000, ".") + " = 1\n", "deep.toml");
    CHECK_FALSE(deep.usable());
    CHECK(has_problem(deep, "deep.toml:2: a key with more than 16 dotted parts"));

    const Table header = read_table("version = 1\n[" + repeated("t", 100, ".") + "]\n", "h.toml");
    CHECK(has_problem(header, "h.toml:2: a key with more than 16 dotted parts"));

    const Table inline_key = read_table("version = 1\nx = { " + repeated("k", 50, ".") + " = 1 }\n", "i.toml");
    CHECK(has_problem(inline_key, "i.toml:2: a key with more than 16 dotted parts"));

    const Table nested = read_table("version = 1\na = " + std::string(5000, '[') + std::string(5000, ']') + "\n",
                                    "n.toml");
    CHECK(has_problem(nested, "n.toml:2: arrays or inline tables nested more than 16 deep"));

    std::string many = "version = 1\n";
    for (int i = 0; i <= kMaxRules; ++i) many += "[[rule]]\npath = \"native\"\n";
    const Table rules = read_table(many, "many.toml");
    CHECK_FALSE(rules.usable());
    CHECK(has_problem(rules, "more than 4096 [[rule]] tables"));
}

TEST_CASE("Dots inside strings, numbers and values do not count as key parts", "[limits]") {
    std::string text = "version = 1 # a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s\n[[rule]]\n";
    text += "name = \"" + repeated("x", 40, ".") + "\"\n";
    text += "bytes = \"1K..4M\"\npath = \"native\"\n";
    const Table t = read_table(text, "ok.toml");
    CHECK(t.usable());
    CHECK(t.rules.size() == 1);
    // A float is a value: its dot is no key part (the rule is wrong for other reasons).
    const Table f = read_table("version = 1\n[[rule]]\npath = \"native\"\nwindow = [" + repeated("1.5", 40, ", ") + "]\n",
                               "f.toml");
    CHECK_FALSE(has_problem(f, "dotted parts"));
}

TEST_CASE("A table at the rule limit is read, and its reachability check is bounded", "[limits]") {
    std::string text = "version = 1\n";
    for (int i = 0; i < kMaxRules; ++i)
        text += "[[rule]]\nbytes = \"" + std::to_string(uint64_t{1} << (i % 40)) + "..\"\nppn = " +
                std::to_string(i % 50 + 1) + "\npath = \"native\"\n";
    const Table t = read_table(text, "big.toml");  // quadratic without the budget: minutes
    CHECK(t.usable());
    CHECK(t.rules.size() == static_cast<std::size_t>(kMaxRules));
    const Table unchecked = read_table(text, "big.toml", /*check_reachability=*/false);
    CHECK(unchecked.warnings == 0);
}

TEST_CASE("read_regular_file refuses what is not a small regular file, without blocking", "[limits]") {
    char dir[] = "/tmp/arshim-limits-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const std::string base = dir;
    std::string text, problem;

    const std::string fifo = base + "/fifo.toml";
    REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
    CHECK_FALSE(read_regular_file(fifo, 1 << 20, &text, &problem));
    CHECK(problem == "is a FIFO, not a regular file");

    CHECK_FALSE(read_regular_file("/dev/zero", 1 << 20, &text, &problem));
    CHECK(problem == "is a character device, not a regular file");
    CHECK_FALSE(read_regular_file(base, 1 << 20, &text, &problem));
    CHECK(problem == "is a directory, not a regular file");
    CHECK_FALSE(read_regular_file(base + "/none", 1 << 20, &text, &problem));
    CHECK(problem.rfind("cannot open:", 0) == 0);

    const std::string big = base + "/big.toml";
    std::ofstream(big) << std::string(5000, '#');
    CHECK_FALSE(read_regular_file(big, 4096, &text, &problem));
    CHECK(problem == "is 5000 bytes, more than the limit of 4096 (ARSHIM_POLICY_MAX_BYTES)");
    CHECK(read_regular_file(big, 5000, &text, &problem));
    CHECK(text.size() == 5000);

    std::remove(fifo.c_str());
    std::remove(big.c_str());
    rmdir(dir);
}

TEST_CASE("printable keeps a value on one short line", "[limits]") {
    CHECK(printable("plain") == "plain");
    CHECK(printable("a\nb\tc") == "a\\nb\\tc");
    CHECK(printable("bogus\x1b[31m") == "bogus\\x1b[31m");                 // a terminal escape sequence
    CHECK(printable("x\narshim[0] error: forged") == "x\\narshim[0] error: forged");
    // C1 controls (issue 56 item 5): U+009B is CSI, "ESC [" on terminals that honour C1; its UTF-8 bytes are escaped.
    CHECK(printable("lat\xc2\x9b" "2Jency") == "lat\\xc2\\x9b2Jency");
    CHECK(printable("\xc2\x80\xc2\x9f") == "\\xc2\\x80\\xc2\\x9f");
    CHECK(printable("caf\xc3\xa9 \xc2\xa0") == "caf\xc3\xa9 \xc2\xa0");  // letters and U+00A0 stay
    CHECK(printable("caf\xc3\xa9") == "caf\xc3\xa9");                       // valid UTF-8 kept
    CHECK(printable("bad\xff\xc3") == "bad\\xff\\xc3");                     // invalid UTF-8 escaped
    CHECK(printable("\"q\\", 100, true) == "\\\"q\\\\");
    CHECK(printable(std::string(100000, 'x'), 120) == std::string(120, 'x') + "...");
    CHECK(printable(std::string(100000, '\n'), 120).size() == 120 * 2 + 3);
    CHECK(printable("ab\xc3\xa9", 3) == "ab...");                           // never half a character
}
