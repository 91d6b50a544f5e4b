#pragma once
// Configuration: a TOML file and VELA_* environment variables, checked at startup.
//
//     vela::App app;
//     vela::load_config(app, "vela.toml");               // server, limits, timeouts, TLS, log ...
//     auto mine = vela::config<MyConfig>(app, "myapp");  // [myapp] as a VELA_REFLECT struct
//     return app.run();                                  // listeners and threads from the file
//
// The file has vela's sections (server, limits, timeouts, http2, websocket, sse, log; every
// key is listed with its default in docs/operations.md) and the application's own tables,
// which vela::config<T>(app, name) reads with the JSON reader's rule: absent members keep their
// default, VELA_REQUIRED members must be present, unknown keys are errors.
//
// Environment variables override the file: a key's variable is "VELA_" and its dotted path
// upper-cased with '.' and '-' as '_' (server.threads: VELA_SERVER_THREADS, myapp.db.url:
// VELA_MYAPP_DB_URL). The value is converted to the key's type: text as it is for strings,
// digits or "30s" for durations and sizes, TOML syntax for the rest (true, 8080, [1, 2],
// {a = 1}). A variable that two keys of one section map to (myapp.db_url and myapp.db.url)
// is an error naming both; so is a VELA_<vela section>_... variable that names no key. Other
// VELA_ variables are left alone.
//
// Durations are an integer of milliseconds or a string with one unit: "250ms", "30s", "5m",
// "1h". Sizes are an integer of bytes or a string with a unit: "512B", "16KiB", "4MiB",
// "1GiB", "1TiB" (powers of 1024) or "10kB", "5MB", "1GB" (powers of 1000).
//
// Every mistake is a ConfigError whose what() is one line naming where and which key:
//     vela.toml:12: server.threads: expected an integer, got a string
//     VELA_LIMITS_MAX_BODY: limits.max_body: expected a size ("16MiB" or bytes), got "lots"
// App::run() logs it and returns 1, as it does for a port it cannot open.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vela/base/log.hpp"
#include "vela/json/codec.hpp"
#include "vela/net/socket.hpp"
#include "vela/server/server.hpp"
#include "vela/server/stream.hpp"
#include "vela/server/websocket.hpp"
#include "vela/tls/context.hpp"

namespace vela {

/// A configuration mistake (see above): what() is one line naming the file and line, or the
/// environment variable, and the key.
class ConfigError : public std::runtime_error {
  public:
    /// `line` becomes what(), verbatim.
    using std::runtime_error::runtime_error;
};

/// Parses a duration: "250ms", "30s", "5m", "1h" (one unit, digits only); nullopt otherwise.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) noexcept;
/// Parses a size: "512B", "16KiB", "4MiB", "1GiB", "1TiB", "10kB", "5MB", "1GB" or plain
/// digits (bytes); nullopt otherwise (or when it overflows 64 bits).
std::optional<std::uint64_t> parse_size(std::string_view text) noexcept;

/// A duration member of a user section: an integer of milliseconds or "30s" (see above).
struct Duration {
    /// The duration.
    std::chrono::milliseconds value{0};
    /// The duration, for code that wants the chrono type.
    operator std::chrono::milliseconds() const noexcept { return value; }
    /// Equal durations.
    bool operator==(const Duration&) const = default;
};
/// A size member of a user section: an integer of bytes or "16KiB" (see above).
struct ByteSize {
    /// Bytes.
    std::uint64_t value = 0;
    /// Bytes, for code that wants the number.
    operator std::uint64_t() const noexcept { return value; }
    /// Equal sizes.
    bool operator==(const ByteSize&) const = default;
};
/// Reads a Duration from JSON (what vela::config<T> uses): milliseconds or "30s".
bool vela_json_read(json::Reader& r, Duration& d);
/// Writes a Duration as an integer of milliseconds.
void vela_json_write(json::Writer& w, const Duration& d);
/// Reads a ByteSize from JSON: bytes or "16KiB".
bool vela_json_read(json::Reader& r, ByteSize& s);
/// Writes a ByteSize as an integer of bytes.
void vela_json_write(json::Writer& w, const ByteSize& s);

/// Environment variables as name/value pairs (Config takes them explicitly so tests need no
/// setenv).
using Environment = std::vector<std::pair<std::string, std::string>>;
/// The VELA_* variables of this process.
Environment process_environment();

namespace detail {

/// How an environment variable's text becomes a value of a key (see the header comment).
enum class ConfigKind : std::uint8_t { string, integer, floating, boolean, quantity, table, toml };

/// One key a section accepts: its dotted path below the section, and its kind.
struct ConfigKey {
    std::string path;
    ConfigKind kind;
};

template <class T>
struct config_unwrap {
    using type = T;
};
template <class T>
struct config_unwrap<std::optional<T>> {
    using type = T;
};

// The keys of a reflected struct, nested structs included (their tables too).
template <class T>
void config_keys(const std::string& prefix, std::vector<ConfigKey>& out) {
    std::apply(
        [&](const auto&... f) {
            (
                [&] {
                    using M = typename config_unwrap<
                        typename std::remove_cvref_t<decltype(f)>::member_type>::type;
                    std::string path =
                        prefix.empty() ? std::string(f.name) : prefix + "." + std::string(f.name);
                    if constexpr (json::Reflected<M>) {
                        out.push_back({path, ConfigKind::table});
                        config_keys<M>(path, out);
                    } else if constexpr (std::is_same_v<M, std::string> || json::ReflectedEnum<M> ||
                                         json::detail::is_sys_time<M>::value) {
                        out.push_back({std::move(path), ConfigKind::string});
                    } else if constexpr (std::is_same_v<M, bool>) {
                        out.push_back({std::move(path), ConfigKind::boolean});
                    } else if constexpr (json::detail::is_integer_v<M>) {
                        out.push_back({std::move(path), ConfigKind::integer});
                    } else if constexpr (std::is_floating_point_v<M>) {
                        out.push_back({std::move(path), ConfigKind::floating});
                    } else if constexpr (std::is_same_v<M, Duration> ||
                                         std::is_same_v<M, ByteSize>) {
                        out.push_back({std::move(path), ConfigKind::quantity});
                    } else {
                        out.push_back({std::move(path), ConfigKind::toml});
                    }
                }(),
                ...);
        },
        json::fields_of<T>);
}

/// A user section as JSON text for the reader, with where each value came from.
struct SectionText {
    /// The section's name.
    std::string section;
    /// The table as a JSON object (with the environment's overrides).
    std::string json;
    /// One entry per value: its JSON pointer, its dotted key, where it came from
    /// ("vela.toml:12" or "VELA_MYAPP_PORT"), its TOML type ("a string") and, for a scalar,
    /// its value as messages show it.
    struct Origin {
        std::string pointer;
        std::string key;
        std::string where;
        std::string type;
        std::string text;
    };
    /// Entries in document order.
    std::vector<Origin> origins;
    /// Where the section itself is ("vela.toml:7", or "vela.toml" when it is absent).
    std::string where;
};

}  // namespace detail

/// A loaded configuration: vela's settings checked and converted, the user sections kept for
/// section<T>(). Cheap to move; immutable once loaded.
class Config {
  public:
    /// One listener: a plain or Unix endpoint, or a TLS one with its certificates.
    struct Listener {
        /// Where to listen.
        net::Endpoint endpoint;
        /// TLS settings (certificate, key, SNI, ...) when this is a TLS listener.
        std::optional<TlsOptions> tls;
    };

    /// Reads the file `path` with this process's VELA_* variables over it; throws ConfigError
    /// (also when the file cannot be read).
    static Config load(const std::string& path);
    /// Reads the file `path` with `env` over it; throws ConfigError.
    static Config load(const std::string& path, Environment env);
    /// Reads TOML `text` (named `name` in messages) with `env` over it; throws ConfigError.
    static Config parse(std::string_view text, std::string name, Environment env = {});
    /// No file: only the variables of `env`; throws ConfigError.
    static Config from_environment(Environment env = process_environment());

    /// Moves.
    Config(Config&&) noexcept;
    /// Moves.
    Config& operator=(Config&&) noexcept;
    /// Frees the document.
    ~Config();

    /// `base` with every server, limits, timeouts and http2 key the configuration sets.
    ServerOptions server_options(ServerOptions base = {}) const;
    /// `base` with every websocket key the configuration sets.
    WsOptions websocket(WsOptions base = {}) const;
    /// `base` with every sse key the configuration sets.
    SseOptions sse(SseOptions base = {}) const;
    /// The listeners of server.listen then server.tls, in order (empty when none is set).
    const std::vector<Listener>& listeners() const noexcept;
    /// server.threads, when set (0: one per core).
    std::optional<unsigned> threads() const noexcept;
    /// log.level, when set.
    std::optional<log::Level> log_level() const noexcept;
    /// log.format, when set.
    std::optional<log::Format> log_format() const noexcept;
    /// The file's name as messages give it ("vela.toml", "<environment>").
    const std::string& name() const noexcept;

    /// The table `name` read into a reflected struct, with its VELA_<NAME>_... variables over
    /// it: absent members keep their defaults, VELA_REQUIRED ones must be present (an absent
    /// table is read as an empty one), unknown keys are errors. Throws ConfigError.
    template <json::Reflected T>
    T section(std::string_view name) const {
        std::vector<detail::ConfigKey> keys;
        detail::config_keys<T>({}, keys);
        const detail::SectionText text = section_text(name, keys);
        T out{};
        json::ParseOptions opts;
        opts.reject_unknown_fields = true;
        if (json::Error e = json::read(text.json, out, opts)) throw section_error(text, e);
        return out;
    }
    /// True when the file has a table `name` (vela's or the application's).
    bool has_section(std::string_view name) const noexcept;
    /// The application's top-level tables (those that are not vela's), each with where it
    /// starts ("vela.toml:30").
    std::vector<std::pair<std::string, std::string>> user_sections() const;

    /// The loaded document and settings (defined in config.cpp).
    struct Impl;

  private:
    explicit Config(std::unique_ptr<Impl> impl) noexcept;
    detail::SectionText section_text(std::string_view name,
                                     const std::vector<detail::ConfigKey>& keys) const;
    static ConfigError section_error(const detail::SectionText& text, const json::Error& e);

    std::unique_ptr<Impl> impl_;
};

class App;  // vela/web/app.hpp

/// Reads the TOML file `path` with the VELA_* environment variables over it and applies it to
/// `app` (apply_config). Throws ConfigError (one line: file, line, key); before run()/start().
App& load_config(App& app, const std::string& path);
/// Applies `config` to `app`: its server, limits, timeouts and http2 keys over app.options(),
/// its listeners instead of earlier listen() calls (when it names any), server.threads for
/// run(0)/start(0), the log level and format. Keeps it for config<T>(); before run()/start().
App& apply_config(App& app, Config config);
/// The configuration applied to `app`; nullptr before load_config()/apply_config().
const Config* config(const App& app) noexcept;

namespace detail {
/// The applied configuration (from the environment alone when none was), with `section`
/// noted as read by the application.
const Config& claim_section(App& app, std::string_view section);
}  // namespace detail

/// The table `section` of the configuration applied to `app` read into T, with
/// VELA_<SECTION>_... variables over it (without one: the variables alone). Absent members
/// keep their defaults, VELA_REQUIRED ones must be present, unknown keys are errors: throws
/// ConfigError. Tables nobody reads make run()/start() fail, so a misspelt one is caught.
template <json::Reflected T>
T config(App& app, std::string_view section) {
    return detail::claim_section(app, section).template section<T>(section);
}

}  // namespace vela
