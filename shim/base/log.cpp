#include "shim/base/log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <memory>
#include <mutex>
#include <set>

namespace arshim::log {

namespace {

std::mutex g_mutex;
Level g_level = Level::warn;
int g_rank = -1;

std::shared_ptr<spdlog::logger> make_logger() {
    // A private logger (not registered in spdlog's registry) so an application that also uses spdlog keeps its own
    // default logger and levels.
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto logger = std::make_shared<spdlog::logger>("arshim", sink);
    logger->set_pattern("arshim[?] %l: %v");
    logger->set_level(spdlog::level::warn);
    logger->flush_on(spdlog::level::trace);
    return logger;
}

spdlog::level::level_enum to_spdlog(Level level) {
    switch (level) {
    case Level::off: return spdlog::level::off;
    case Level::error: return spdlog::level::err;
    case Level::warn: return spdlog::level::warn;
    case Level::info: return spdlog::level::info;
    case Level::debug: return spdlog::level::debug;
    }
    return spdlog::level::warn;
}

}  // namespace

spdlog::logger& logger() {
    static std::shared_ptr<spdlog::logger> instance = make_logger();
    return *instance;
}

void configure(Level level, int rank) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_level = level;
    g_rank = rank;
    std::string prefix = rank < 0 ? "?" : std::to_string(rank);
    logger().set_pattern("arshim[" + prefix + "] %l: %v");
    logger().set_level(to_spdlog(level));
}


int rank() { return g_rank; }

bool enabled(Level l) { return l != Level::off && static_cast<int>(l) <= static_cast<int>(g_level); }

bool first_time(const std::string& key) {
    static std::set<std::string> seen;
    std::lock_guard<std::mutex> lock(g_mutex);
    return seen.insert(key).second;
}

}  // namespace arshim::log
