#pragma once
// vela's own configuration keys: one table gives each key's type, range and the setting it
// writes, and drives reading the file, the environment names and the unknown-key check.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vela/ops/config.hpp"

namespace vela::config_schema {

/// What a key holds (how the file's value is checked and converted).
enum class Kind : std::uint8_t {
    boolean,   ///< true / false
    count,     ///< an integer in [lo, hi]
    size,      ///< bytes: an integer or "16KiB", in [lo, hi]
    duration,  ///< milliseconds: an integer or "30s", in [lo, hi]
    choice,    ///< one of the words of `choices`
    text,      ///< any string
    listen,    ///< server.listen: endpoints
    tls,       ///< server.tls: TLS listeners
};

/// A converted value: `b` for booleans, `n` for counts, sizes and durations (ms), `s` for text.
struct Value {
    bool b = false;
    std::uint64_t n = 0;
    std::string s;
};

/// What the setters write into.
struct Targets {
    ServerOptions& server;
    WsOptions& ws;
    SseOptions& sse;
};

/// One key of vela's sections.
struct Key {
    std::string_view path;  ///< dotted, with the section: "limits.max_body"
    Kind kind;
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    std::string_view choices = {};                  ///< for Kind::choice, space-separated
    void (*set)(Targets&, const Value&) = nullptr;  ///< null: read by the loader itself
};

/// Every key of vela's sections.
std::span<const Key> keys() noexcept;
/// The key at `path`, or nullptr.
const Key* find_key(std::string_view path) noexcept;
/// True when `path` is a table of keys ("websocket.deflate").
bool is_table(std::string_view path) noexcept;
/// vela's top-level sections.
std::span<const std::string_view> sections() noexcept;
/// The keys of `section` as the environment sees them (paths below the section).
std::vector<detail::ConfigKey> env_keys(std::string_view section);
/// The log level named `name` (one of Key "log.level"'s choices).
log::Level log_level(std::string_view name) noexcept;

}  // namespace vela::config_schema
