// arshim-stats-summary: the summary ARShim prints at MPI_Finalize, from a statistics log (`arshim report` runs it).
//
//   arshim-stats-summary LOG [--written PATH]
//
// The same rows (shim/stats/summary.h, made from the log's numbers) and the same formatter as the preloaded
// library's, so the text is the one the job printed (without "statistics written to" unless --written names it).
// MPI-free. A file that is no statistics log: one line on stderr, exit status 2.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "policy/text.h"
#include "shim/stats/summary.h"

namespace {

constexpr uint64_t kMaxLogBytes = uint64_t{64} << 20;  // as the report tool reads logs (tools/arshim/statslog.py)

int usage() {
    std::fputs("usage: arshim-stats-summary LOG [--written PATH]\n", stderr);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string log, written;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--written") == 0 && i + 1 < argc)
            written = argv[++i];
        else if (argv[i][0] != '-' && log.empty())
            log = argv[i];
        else
            return usage();
    }
    if (log.empty()) return usage();
    std::string text, problem;
    if (!arshim::read_regular_file(log, kMaxLogBytes, &text, &problem)) {
        std::fprintf(stderr, "arshim-stats-summary: %s: %s\n", arshim::printable(log, 200).c_str(), problem.c_str());
        return 2;
    }
    try {
        const auto document = nlohmann::ordered_json::parse(text);
        const std::string summary =
            arshim::stats::summary::text(arshim::stats::summary::rows_of(document), written);
        std::fputs(summary.c_str(), stdout);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "arshim-stats-summary: %s: not a statistics log (%s)\n",
                     arshim::printable(log, 200).c_str(), arshim::printable(e.what(), 200).c_str());
        return 2;
    }
    return std::fflush(stdout) == 0 ? 0 : 2;
}
