#include "shim/core/settings.h"

#include <functional>

#include "shim/base/mpi_util.h"

extern char** environ;

namespace arshim::settings {

ProcessSettings own() { return ProcessSettings::from(Config::from_pairs(Config::pairs_from_environ(environ), nullptr)); }

ProcessSettings agreed_at_init(bool collective, int world_rank, std::vector<std::string>* problems) {
    // World rank 0's environment, broadcast, so ranks started with different environments still agree.
    EnvPairs pairs = Config::pairs_from_environ(environ);
    if (collective) {
        std::string blob = world_rank == 0 ? Config::serialize(pairs) : std::string();
        bcast_string(blob, 0, MPI_COMM_WORLD);
        pairs = Config::deserialize(blob);
    }
    return ProcessSettings::from(Config::from_pairs(pairs, problems));
}

std::unique_ptr<ProcessSettings> agree_over(const ProcessSettings& mine, std::string* policy_text,
                                            bool* have_policy_file, MPI_Comm comm) {
    const uint64_t digest = mine.config.digest() ^ std::hash<std::string>{}(*policy_text);
    const long long value = static_cast<long long>(digest);
    if (same_on_all_ranks(&value, 1, comm)) return nullptr;
    std::string blob = Config::serialize(mine.config.pairs());
    bcast_string(blob, 0, comm);
    bcast_optional_string(*policy_text, have_policy_file, 0, comm);
    return std::make_unique<ProcessSettings>(
        ProcessSettings::from(Config::from_pairs(Config::deserialize(blob), nullptr)));
}

}  // namespace arshim::settings
