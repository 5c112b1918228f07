// libFuzzer target: the tuning cache's reader and writer (shim/modes/cache_file.h) on arbitrary file contents (issue
// 41: the cache must never destroy what it does not own, and must stay within what its reader accepts). Beyond "no
// crash, no sanitizer report" it checks: every reason is one line; a file is ours only when it carries the signature
// and this origin; and what the writer would make of an own cache (its rules kept within the limits and rendered) is
// read back as this origin's cache with the same rules, within the byte limit.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "shim/modes/cache_file.h"

using namespace arshim::tune::cache;

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
    std::fprintf(stderr, "fuzz_cache: invariant broken: %s: %s\n", what, detail.c_str());
    std::abort();
}

const Origin kMine{"mpich", "MPICH 4.0.2", "0.1.0"};
constexpr uint64_t kMaxBytes = 1 << 16;  // small, so that the limit is reached by fuzzed inputs

std::string scratch_file() {
    static const std::string path = [] {
        char name[] = "/tmp/fuzz-cache-XXXXXX";
        const int fd = mkstemp(name);
        if (fd < 0) fail("mkstemp", "");
        close(fd);
        static std::string made = name;
        std::atexit([] { unlink(made.c_str()); });
        return made;
    }();
    return path;
}

void write_file(const std::string& path, const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(text.data(), 1, text.size(), f) != text.size()) fail("write", path);
    std::fclose(f);
}

void check_one_line(const std::string& text) {
    if (text.find('\n') != std::string::npos) fail("a reason of several lines", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string path = scratch_file();
    const std::string text(reinterpret_cast<const char*>(data), size);
    write_file(path, text);
    const Inspection found = inspect(path, kMine, kMaxBytes);
    check_one_line(found.why);
    if (found.holds == Holds::nothing) fail("an existing file read as nothing", "");
    if (found.holds != Holds::ours) return 0;
    if (text.rfind(kSignature, 0) != 0) fail("ours without the signature", text.substr(0, 80));

    // What update() would write back, with nothing learned: the same rules, within the limits, read back as ours.
    const Limits limits{kMaxBytes, 64};
    std::size_t dropped = 0;
    const auto kept = within_limits(merged(found.table.rules, {}), kMine, "2026-11-29", limits, &dropped);
    if (kept.size() + dropped != found.table.rules.size()) fail("rules lost without being counted", "");
    if (kept.size() > limits.max_rules) fail("more rules than the limit", std::to_string(kept.size()));
    const std::string rendered = render(kept, kMine, "2026-11-29");
    if (!kept.empty() && rendered.size() > limits.max_bytes) fail("rendered beyond the byte limit", "");
    write_file(path, rendered);
    const Inspection again = inspect(path, kMine, kMaxBytes);
    if (again.holds != Holds::ours) fail("a cache ARShim wrote is not read as its own", again.why + "\n" + rendered);
    if (again.table.rules.size() != kept.size()) fail("rules changed in the round trip", rendered);
    return 0;
}
