// The tuning cache never destroys what it does not own, keeps other origins' caches, stays within the reader's limits
// and keeps concurrent jobs' rules (shim/modes/cache_file.h). No MPI needed. Each case fails on the writer before
// issue 41 (which replaced any file it could not use with its own rules, and rewrote the cache from the rules read at
// start).
#include "test/support/catch.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test/policy/decisions.h"
#include "policy/rule_writer.h"
#include "shim/modes/cache_file.h"

namespace cache = arshim::tune::cache;
using arshim::policy::RuleSpec;
using namespace arshim::policy::testing;
using Catch::Approx;

namespace {

struct TempDir {
    std::string path;
    TempDir() {
        char pattern[] = "/tmp/arshim-cache-XXXXXX";
        REQUIRE(mkdtemp(pattern) != nullptr);
        path = pattern;
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
    std::string operator/(const std::string& name) const { return path + "/" + name; }
};

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

const cache::Origin kMpich{"mpich", "MPICH 4.0.2", "0.1.0"};
const cache::Origin kOpenmpi{"openmpi", "Open MPI v4.1.4", "0.1.0"};
const cache::Origin kOlderMpich{"mpich", "MPICH 4.0.2", "0.0.9"};

// A learned rule for (nodes, ppn, size bucket), float sum, multileader with `leaders`.
RuleSpec learned(uint32_t nodes, uint32_t ppn, uint32_t bucket, uint32_t leaders = 2, double time_us = 5,
                 double native_us = 9) {
    RuleSpec r;
    r.name = "tuned: " + std::to_string(nodes) + "x" + std::to_string(ppn) + " bucket " + std::to_string(bucket);
    r.match.dim[arshim::policy::Box::nodes] = {nodes, nodes + 1ull};
    r.match.dim[arshim::policy::Box::ppn] = {ppn, ppn + 1ull};
    r.match.dim[arshim::policy::Box::bucket] = {bucket, bucket + 1ull};
    r.match.dtypes = 1u << static_cast<unsigned>(arshim::vocab::DtypeClass::floating);
    r.match.ops = 1u << static_cast<unsigned>(arshim::vocab::Op::sum);
    set_path(r.action, arshim::vocab::Path::multileader);
    set_param(r.action, "leaders", leaders);
    r.evidence.kind = arshim::policy::EvidenceKind::measured;
    r.evidence.time_us = time_us;
    r.evidence.native_us = native_us;
    r.note = "measured: multileader 5.0 us; native 9.0 us";
    return r;
}

cache::Outcome update(const std::string& path, const cache::Origin& origin, const std::vector<RuleSpec>& rules,
                      cache::Limits limits = {}) {
    return cache::update(path, origin, rules, limits, false, "2026-11-29T00:00:00Z", 2000);
}

std::size_t rules_in(const std::string& path, const cache::Origin& origin) {
    const cache::Inspection found = cache::inspect(path, origin, 1 << 20);
    REQUIRE(found.holds == cache::Holds::ours);
    return found.table.rules.size();
}

}  // namespace

TEST_CASE("The cache's text reads back as the same rules", "[cache]") {
    const std::vector<RuleSpec> rules{learned(1, 2, 14), learned(2, 4, 20, 4, 12.345, 20)};
    const std::string text = cache::render(rules, kMpich, "2026-11-29T00:00:00Z");
    const arshim::policy::Table table = arshim::policy::read_table(text, "cache", true);
    INFO(text);
    REQUIRE(table.usable());
    CHECK(table.warnings == 0);
    REQUIRE(table.rules.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const RuleSpec& a = rules[i];
        const RuleSpec& b = table.rules[i];
        CHECK(b.name == a.name);
        CHECK(b.note == a.note);
        for (int d = 0; d < arshim::policy::Box::kIntervals; ++d) {
            CHECK(b.match.dim[d].lo == a.match.dim[d].lo);
            CHECK(b.match.dim[d].hi == a.match.dim[d].hi);
        }
        CHECK(b.match.dtypes == a.match.dtypes);
        CHECK(b.match.ops == a.match.ops);
        CHECK(b.action.path() == a.action.path());
        CHECK(param(b.action, "leaders") == param(a.action, "leaders"));
        CHECK(b.evidence.kind == a.evidence.kind);
        CHECK(b.evidence.time_us == Approx(a.evidence.time_us).margin(0.006));
        CHECK(b.evidence.native_us == Approx(a.evidence.native_us));
    }
    CHECK(text.rfind(cache::kSignature, 0) == 0);
}

TEST_CASE("A file that is not a cache is left untouched and nothing is written", "[cache]") {
    TempDir dir;
    std::string numbers;
    for (int i = 1; i <= 100000; ++i) numbers += std::to_string(i) + "\n";  // seq 1 100000 > data.txt
    const std::string policy = "version = 1\n[[rule]]\nname = \"mine\"\npath = \"native\"\n";
    std::string binary(4096, '\0');
    for (std::size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 7);
    for (const auto& [name, content] : std::vector<std::pair<std::string, std::string>>{
             {"data.txt", numbers}, {"policy.toml", policy}, {"blob.bin", binary}, {"empty", ""}}) {
        INFO(name);
        const std::string path = dir / name;
        write(path, content);
        const cache::Location loc = cache::locate(path, kMpich, 1 << 20);
        CHECK(loc.target.empty());
        CHECK(loc.warn);
        CHECK(loc.note.find("left untouched") != std::string::npos);
        const cache::Outcome out = update(path, kMpich, {learned(1, 2, 14)});
        CHECK_FALSE(out.written);
        CHECK_FALSE(out.problem.empty());
        CHECK(read_all(path) == content);
        CHECK(access(cache::aside_path(path, kMpich).c_str(), F_OK) != 0);
        CHECK(access((path + ".lock").c_str(), F_OK) != 0);  // nothing beside it either
    }
}

TEST_CASE("A FIFO or a directory at the cache's path is left alone without blocking", "[cache]") {
    TempDir dir;
    REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
    REQUIRE(mkdir((dir / "dir").c_str(), 0700) == 0);
    for (const char* name : {"fifo", "dir"}) {
        INFO(name);
        const cache::Outcome out = update(dir / name, kMpich, {learned(1, 2, 14)});
        CHECK_FALSE(out.written);
        CHECK(out.problem.find("left untouched") != std::string::npos);
    }
}

TEST_CASE("Another flavor's or version's cache is kept and this origin's lives beside it", "[cache]") {
    TempDir dir;
    const std::string path = dir / "cache.toml";
    REQUIRE(update(path, kOpenmpi, {learned(1, 2, 14), learned(1, 2, 15)}).written);
    const std::string openmpi_cache = read_all(path);

    const cache::Outcome out = update(path, kMpich, {learned(1, 2, 16)});
    REQUIRE(out.written);
    CHECK(out.target == cache::aside_path(path, kMpich));
    CHECK(read_all(path) == openmpi_cache);  // untouched
    CHECK(rules_in(out.target, kMpich) == 1);
    // The next MPICH job reads its own cache from beside it and merges into it; Open MPI's stays whole.
    const cache::Location loc = cache::locate(path, kMpich, 1 << 20);
    CHECK(loc.target == out.target);
    CHECK(loc.found.holds == cache::Holds::ours);
    CHECK_FALSE(loc.warn);
    REQUIRE(update(path, kMpich, {learned(1, 2, 17)}).written);
    CHECK(rules_in(out.target, kMpich) == 2);
    CHECK(rules_in(path, kOpenmpi) == 2);
    // Open MPI still finds and grows its own.
    REQUIRE(update(path, kOpenmpi, {learned(1, 2, 18)}).written);
    CHECK(rules_in(path, kOpenmpi) == 3);

    // Another ARShim version of the same library: kept too.
    const std::string older = dir / "older.toml";
    REQUIRE(update(older, kOlderMpich, {learned(1, 2, 14)}).written);
    const std::string older_text = read_all(older);
    const cache::Outcome newer = update(older, kMpich, {learned(1, 2, 14)});
    REQUIRE(newer.written);
    CHECK(read_all(older) == older_text);
    CHECK(newer.target == cache::aside_path(older, kMpich));
}

TEST_CASE("A cache this version cannot read is kept aside, never rewritten", "[cache]") {
    TempDir dir;
    const std::string path = dir / "cache.toml";
    const std::string future = std::string(cache::kSignature) + " of a later version\nversion = 7\n";
    write(path, future);
    const cache::Outcome out = update(path, kMpich, {learned(1, 2, 14)});
    REQUIRE(out.written);
    CHECK(read_all(path) == future);
    CHECK(out.target == cache::aside_path(path, kMpich));
}

TEST_CASE("Learned rules replace the file's rule with the same match and the others are kept", "[cache]") {
    TempDir dir;
    const std::string path = dir / "cache.toml";
    REQUIRE(update(path, kMpich, {learned(1, 2, 14, 1), learned(1, 2, 15, 1)}).written);
    REQUIRE(update(path, kMpich, {learned(1, 2, 15, 2), learned(1, 2, 16, 2)}).written);
    const cache::Inspection found = cache::inspect(path, kMpich, 1 << 20);
    REQUIRE(found.holds == cache::Holds::ours);
    REQUIRE(found.table.rules.size() == 3);
    CHECK(found.table.rules[0].match.dim[arshim::policy::Box::bucket].lo == 14);
    CHECK(param(found.table.rules[0].action, "leaders") == 1);
    CHECK(found.table.rules[1].match.dim[arshim::policy::Box::bucket].lo == 15);
    CHECK(param(found.table.rules[1].action, "leaders") == 2);  // measured later: replaced
    CHECK(found.table.rules[2].match.dim[arshim::policy::Box::bucket].lo == 16);
}

TEST_CASE("The cache stays within the reader's limits: the least useful rules go, and it says so", "[cache]") {
    TempDir dir;
    const std::string path = dir / "cache.toml";
    cache::Limits limits;
    limits.max_bytes = 64 * 1024;
    limits.max_rules = 4096;
    std::vector<RuleSpec> many;
    for (uint32_t i = 0; i < 600; ++i)  // savings 0..599 us: the first rules are the least useful
        many.push_back(learned(1 + i / 40, 2, 3 + i % 40, 2, 10, 10 + i));
    const cache::Outcome out = update(path, kMpich, many, limits);
    REQUIRE(out.written);
    CHECK(out.dropped > 0);
    CHECK(out.rules + out.dropped == many.size());
    bool said = false;
    for (const std::string& note : out.notes) said |= note.find("least useful rules dropped") != std::string::npos;
    CHECK(said);
    const std::string text = read_all(path);
    CHECK(text.size() <= limits.max_bytes);
    const cache::Inspection found = cache::inspect(path, kMpich, limits.max_bytes);
    REQUIRE(found.holds == cache::Holds::ours);
    // The survivors are the most useful: every dropped saving is below every kept one.
    double least_kept = 1e30;
    for (const RuleSpec& r : found.table.rules) least_kept = std::min(least_kept, r.evidence.native_us - r.evidence.time_us);
    CHECK(least_kept >= static_cast<double>(out.dropped) - 1);

    // A run that learns more keeps the file readable by the next one, however often it is repeated.
    for (int round = 0; round < 3; ++round) {
        std::vector<RuleSpec> more;
        for (uint32_t i = 0; i < 200; ++i) more.push_back(learned(100 + round, 2, 3 + i % 40, 1, 5, 6 + i));
        REQUIRE(update(path, kMpich, more, limits).written);
        CHECK(read_all(path).size() <= limits.max_bytes);
        CHECK(cache::inspect(path, kMpich, limits.max_bytes).holds == cache::Holds::ours);
    }

    cache::Limits few;
    few.max_rules = 10;
    REQUIRE(update(dir / "few.toml", kMpich, many, few).written);
    CHECK(rules_in(dir / "few.toml", kMpich) == 10);
}

TEST_CASE("Concurrent jobs keep each other's rules", "[cache]") {
    TempDir dir;
    const std::string path = dir / "cache.toml";
    constexpr int kJobs = 4;
    std::vector<pid_t> children;
    for (int job = 0; job < kJobs; ++job) {
        const pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            // Each job writes several times, so that the writes interleave.
            bool ok = true;
            for (uint32_t i = 0; i < 5; ++i)
                ok &= cache::update(path, kMpich, {learned(1, 2, 10 + static_cast<uint32_t>(job) * 5 + i)}, {}, false,
                                    "2026-11-29T00:00:00Z", 20000)
                          .written;
            _exit(ok ? 0 : 1);
        }
        children.push_back(pid);
    }
    for (const pid_t pid : children) {
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    CHECK(rules_in(path, kMpich) == kJobs * 5);
}

TEST_CASE("A planted symlink or FIFO as the lock file stops the write", "[cache]") {
    TempDir dir;
    const std::string path = dir / "cache.toml";
    write(dir / "victim", "precious\n");
    REQUIRE(symlink((dir / "victim").c_str(), (path + ".lock").c_str()) == 0);
    const cache::Outcome out = update(path, kMpich, {learned(1, 2, 14)});
    CHECK_FALSE(out.written);
    CHECK(out.problem.find("lock file") != std::string::npos);
    CHECK(read_all(dir / "victim") == "precious\n");
    CHECK(access(path.c_str(), F_OK) != 0);

    const std::string other = dir / "other.toml";
    REQUIRE(mkfifo((other + ".lock").c_str(), 0600) == 0);
    const cache::Outcome fifo = update(other, kMpich, {learned(1, 2, 14)});
    CHECK_FALSE(fifo.written);
    CHECK(fifo.problem.find("FIFO") != std::string::npos);
}

TEST_CASE("Nothing learned, nothing written", "[cache]") {
    TempDir dir;
    const cache::Outcome out = update(dir / "cache.toml", kMpich, {});
    CHECK_FALSE(out.written);
    CHECK(out.problem.empty());
    CHECK(access((dir / "cache.toml").c_str(), F_OK) != 0);
    CHECK(access((dir / "cache.toml.lock").c_str(), F_OK) != 0);
}
