// The shim's one logging module: spdlog to stderr, every line "arshim[rank] level: message", every value in it
// escaped (detail::safe).
// Hot-path code never logs directly; it counts, and the counts are reported at finalize.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "policy/text.h"

namespace arshim::log {

enum class Level { off, error, warn, info, debug };

// (Re)configures the logger; `rank` < 0 prints "arshim[?]".
void configure(Level level, int rank);
// The rank the logger prints: this process's rank in MPI_COMM_WORLD once init ran, -1 before.
int rank();
bool enabled(Level level);

spdlog::logger& logger();

// One line per distinct `key` for the whole run (rate limit for repeated warnings).
bool first_time(const std::string& key);

// Warnings and errors issued by this process so far, written or not at the level in force: the trace's "end" event
// carries them, so a test can check that a run warned (or did not) without reading the lines.
inline std::atomic<uint64_t> g_warnings{0};
inline std::atomic<uint64_t> g_errors{0};

namespace detail {
// Every value a message carries goes through printable() (policy/text.h): text from the user's environment, files,
// symbol tables and the MPI library may hold newlines that forge a line or escape sequences that drive the terminal.
// Numbers pass as they are. Longer than a message needs, shorter than a flood.
constexpr std::size_t kMaxValueBytes = 4096;
template <typename T>
auto safe(const T& value) {
    using V = std::decay_t<T>;
    constexpr bool c_string = std::is_same_v<V, const char*> || std::is_same_v<V, char*>;
    if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, std::string_view>)
        return printable(value, kMaxValueBytes);
    else if constexpr (c_string && std::is_array_v<T>)  // a literal or a char array: never null
        return printable(std::string_view(value), kMaxValueBytes);
    else if constexpr (c_string)
        return printable(value != nullptr ? std::string_view(value) : std::string_view("(null)"), kMaxValueBytes);
    else
        return value;
}

// The format string is checked at compile time against the caller's types; the values printed are their safe forms
// (strings stay strings, numbers stay numbers, so every format spec still applies).
template <typename... Args>
void write(spdlog::level::level_enum level, spdlog::format_string_t<Args...> fmt, Args&&... args) {
    if (level == spdlog::level::warn) g_warnings.fetch_add(1, std::memory_order_relaxed);
    if (level == spdlog::level::err) g_errors.fetch_add(1, std::memory_order_relaxed);
    spdlog::logger& out = logger();
    if (!out.should_log(level)) return;
    out.log(level, fmt::runtime(fmt::string_view(fmt)), safe(args)...);
}
}  // namespace detail

template <typename... Args>
void error(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    detail::write<Args...>(spdlog::level::err, fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    detail::write<Args...>(spdlog::level::warn, fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    detail::write<Args...>(spdlog::level::info, fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void debug(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    detail::write<Args...>(spdlog::level::debug, fmt, std::forward<Args>(args)...);
}

}  // namespace arshim::log
