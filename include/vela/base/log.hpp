#pragma once
// Logging facade. The implementation forwards to spdlog; headers stay free of it so the
// codec and reactor layers do not pull spdlog into every translation unit.

#include <fmt/format.h>

#include <string_view>
#include <utility>

namespace vela::log {

/// Severities, lowest first; `off` (for set_level()) writes nothing.
enum class Level { debug, info, warn, error, off };

/// Writes one line at `level` through spdlog's default logger.
void write(Level level, std::string_view message);
/// Sets the minimum level written.
void set_level(Level level);
/// True when `level` would be written (skip formatting otherwise).
bool enabled(Level level) noexcept;

/// Writes a line at Level::error, formatted with fmt only when that level is enabled.
template <class... A>
void error(fmt::format_string<A...> f, A&&... a) {
    if (enabled(Level::error)) write(Level::error, fmt::format(f, std::forward<A>(a)...));
}
/// Writes a line at Level::warn, formatted with fmt only when that level is enabled.
template <class... A>
void warn(fmt::format_string<A...> f, A&&... a) {
    if (enabled(Level::warn)) write(Level::warn, fmt::format(f, std::forward<A>(a)...));
}
/// Writes a line at Level::info, formatted with fmt only when that level is enabled.
template <class... A>
void info(fmt::format_string<A...> f, A&&... a) {
    if (enabled(Level::info)) write(Level::info, fmt::format(f, std::forward<A>(a)...));
}
/// Writes a line at Level::debug, formatted with fmt only when that level is enabled.
template <class... A>
void debug(fmt::format_string<A...> f, A&&... a) {
    if (enabled(Level::debug)) write(Level::debug, fmt::format(f, std::forward<A>(a)...));
}

}  // namespace vela::log
