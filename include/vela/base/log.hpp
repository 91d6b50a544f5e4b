#pragma once
// Logging facade. The implementation forwards to spdlog; headers stay free of it so the
// codec and reactor layers do not pull spdlog into every translation unit.
//
// Two line formats (set_format), chosen once at startup (config: log.format):
//   text: [2026-12-01 16:12:39.123] [info] todo: database ready route=/items ms=3
//   json: {"time":"2026-12-01T16:12:39.123Z","level":"info","logger":"vela",
//          "message":"todo: database ready","route":"/items","ms":3}
// A JSON line is one object on one line whatever the strings hold: quotes, backslashes and
// control bytes are escaped (RFC 8259 section 7), valid UTF-8 is kept, each byte of invalid
// UTF-8 becomes U+FFFD. Times are UTC (RFC 3339, milliseconds). Structured fields go in as
// write(level, message, {{"key", value}, ...}): JSON members, or key=value pairs in text.
// access_log() left on its default format follows the same switch (access_log.hpp).

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace spdlog::sinks {
class sink;
}

namespace vela::log {

/// Severities, lowest first; `off` (for set_level()) writes nothing.
enum class Level { debug, info, warn, error, off };

/// The shape of a line (see above).
enum class Format { text, json };

/// A structured field's value: a string, a number, a boolean or null.
class FieldValue {
  public:
    /// What the value holds.
    enum class Kind : std::uint8_t { string, int64, uint64, real, boolean, null };
    /// A string (viewed, not copied: it must outlive the write() call).
    FieldValue(std::string_view s) noexcept : kind_(Kind::string), s_(s) {}  // NOLINT
    /// A string (viewed, not copied: it must outlive the write() call).
    FieldValue(const std::string& s) noexcept : kind_(Kind::string), s_(s) {}  // NOLINT
    /// A string literal or C string (nullptr: null).
    FieldValue(const char* s) noexcept  // NOLINT
        : kind_(s ? Kind::string : Kind::null), s_(s ? std::string_view(s) : std::string_view()) {}
    /// A boolean.
    FieldValue(bool b) noexcept : kind_(Kind::boolean), b_(b) {}  // NOLINT
    /// null.
    FieldValue(std::nullptr_t) noexcept : kind_(Kind::null) {}  // NOLINT
    /// A floating-point number (NaN and infinities are written as null in JSON).
    FieldValue(double d) noexcept : kind_(Kind::real), d_(d) {}  // NOLINT
    /// Any integer type.
    template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
    FieldValue(I i) noexcept {  // NOLINT
        if constexpr (std::is_signed_v<I>) {
            kind_ = Kind::int64;
            i_ = static_cast<std::int64_t>(i);
        } else {
            kind_ = Kind::uint64;
            u_ = static_cast<std::uint64_t>(i);
        }
    }

    /// What the value holds.
    Kind kind() const noexcept { return kind_; }
    /// The string (Kind::string).
    std::string_view string() const noexcept { return s_; }
    /// The signed integer (Kind::int64).
    std::int64_t int64() const noexcept { return i_; }
    /// The unsigned integer (Kind::uint64).
    std::uint64_t uint64() const noexcept { return u_; }
    /// The number (Kind::real).
    double real() const noexcept { return d_; }
    /// The boolean (Kind::boolean).
    bool boolean() const noexcept { return b_; }

  private:
    Kind kind_ = Kind::null;
    std::string_view s_{};
    union {
        std::int64_t i_;
        std::uint64_t u_ = 0;
        double d_;
        bool b_;
    };
};

/// One structured field of a line: {"route", "/items/{id}"}.
struct Field {
    /// The member name (written escaped; "time", "level", "logger" and "message" are taken).
    std::string_view key;
    /// The value.
    FieldValue value;
};

/// Writes one line at `level` through spdlog's default logger.
void write(Level level, std::string_view message);
/// Writes one line at `level` with structured fields (JSON members, or key=value in text).
void write(Level level, std::string_view message, std::initializer_list<Field> fields);
/// Sets the minimum level written.
void set_level(Level level);
/// True when `level` would be written (skip formatting otherwise).
bool enabled(Level level) noexcept;
/// Sets the line format of vela's log (and of access logs left on their default format).
void set_format(Format format);
/// The line format in force.
Format format() noexcept;
/// Sends vela's log lines to `sink` instead of standard output (a file, syslog, a test's
/// capture), in the format in force.
void set_sink(std::shared_ptr<spdlog::sinks::sink> sink);
/// "debug", "info", "warn", "error" or "off" as a Level; nullopt for anything else.
std::optional<Level> parse_level(std::string_view name) noexcept;
/// "text" or "json" as a Format; nullopt for anything else.
std::optional<Format> parse_format(std::string_view name) noexcept;
/// Appends `s` as a JSON string (quoted; escapes as above, invalid UTF-8 as U+FFFD).
void append_json_string(std::string& out, std::string_view s);

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
