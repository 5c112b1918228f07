// The shim's one logging module: spdlog to stderr, every line "arshim[rank] level: message".
// Hot-path code never logs directly; it counts, and the counts are reported at finalize.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace arshim::log {

enum class Level { off, error, warn, info, debug };

// (Re)configures the logger; `rank` < 0 prints "arshim[?]".
void configure(Level level, int rank);
bool enabled(Level level);

spdlog::logger& logger();

// One line per distinct `key` for the whole run (rate limit for repeated warnings).
bool first_time(const std::string& key);

template <typename... Args>
void error(spdlog::format_string_t<Args...> fmt, Args&&... args) { logger().error(fmt, std::forward<Args>(args)...); }
template <typename... Args>
void warn(spdlog::format_string_t<Args...> fmt, Args&&... args) { logger().warn(fmt, std::forward<Args>(args)...); }
template <typename... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) { logger().info(fmt, std::forward<Args>(args)...); }
template <typename... Args>
void debug(spdlog::format_string_t<Args...> fmt, Args&&... args) { logger().debug(fmt, std::forward<Args>(args)...); }

}  // namespace arshim::log
