// vela's configuration keys (docs/operations.md lists them with their defaults).

#include "ops/config_schema.hpp"

#include <algorithm>
#include <array>

namespace vela::config_schema {

namespace {

using std::chrono::milliseconds;
using T = Targets;
using V = Value;

constexpr std::uint64_t kTiB = std::uint64_t{1} << 40;
constexpr std::uint64_t kWeek = std::uint64_t{7} * 24 * 3'600'000;  // ms
constexpr std::uint64_t kU32 = 0xffff'ffffu;
constexpr std::uint64_t kI31 = 0x7fff'ffffu;  // RFC 9113 6.9.1: the largest window

milliseconds ms(const V& v) { return milliseconds(static_cast<milliseconds::rep>(v.n)); }

constexpr Key kKeys[] = {
    // [server]
    {"server.listen", Kind::listen},
    {"server.tls", Kind::tls},
    {"server.threads", Kind::count, 0, 4096},
    {"server.backlog",
     Kind::count,
     1,
     65535,
     {},
     [](T& t, const V& v) { t.server.listen.backlog = static_cast<int>(v.n); }},
    {"server.share_port",
     Kind::boolean,
     0,
     0,
     {},
     [](T& t, const V& v) { t.server.listen.share_port = v.b; }},
    {"server.max_connections_per_loop",
     Kind::count,
     1,
     10'000'000,
     {},
     [](T& t, const V& v) { t.server.max_connections_per_loop = v.n; }},
    {"server.max_handshakes_per_loop",
     Kind::count,
     1,
     1'000'000,
     {},
     [](T& t, const V& v) { t.server.max_handshakes_per_loop = v.n; }},
    {"server.output_high_water",
     Kind::size,
     1,
     kTiB,
     {},
     [](T& t, const V& v) { t.server.output_high_water = v.n; }},
    {"server.direct_body_min",
     Kind::size,
     0,
     kTiB,
     {},
     [](T& t, const V& v) { t.server.direct_body_min = v.n; }},
    {"server.timer_tick",
     Kind::duration,
     1,
     60'000,
     {},
     [](T& t, const V& v) { t.server.timer_tick_ms = v.n; }},
    {"server.debug_errors",
     Kind::boolean,
     0,
     0,
     {},
     [](T& t, const V& v) { t.server.debug_errors = v.b; }},
    {"server.cancel_on_disconnect",
     Kind::boolean,
     0,
     0,
     {},
     [](T& t, const V& v) { t.server.cancel_on_disconnect = v.b; }},
    // [timeouts]
    {"timeouts.header",
     Kind::duration,
     1,
     kWeek,
     {},
     [](T& t, const V& v) { t.server.header_timeout = ms(v); }},
    {"timeouts.body",
     Kind::duration,
     1,
     kWeek,
     {},
     [](T& t, const V& v) { t.server.body_timeout = ms(v); }},
    {"timeouts.idle",
     Kind::duration,
     1,
     kWeek,
     {},
     [](T& t, const V& v) { t.server.idle_timeout = ms(v); }},
    {"timeouts.linger",
     Kind::duration,
     0,
     kWeek,
     {},
     [](T& t, const V& v) { t.server.linger_timeout = ms(v); }},
    {"timeouts.shutdown",
     Kind::duration,
     0,
     kWeek,
     {},
     [](T& t, const V& v) { t.server.shutdown_timeout = ms(v); }},
    {"timeouts.drain_delay",
     Kind::duration,
     0,
     kWeek,
     {},
     [](T& t, const V& v) { t.server.drain_delay = ms(v); }},
    {"timeouts.handshake",
     Kind::duration,
     1,
     kWeek,
     {},
     [](T& t, const V& v) { t.server.handshake_timeout = ms(v); }},
    // [limits]
    {"limits.max_request_line",
     Kind::size,
     16,
     kU32,
     {},
     [](T& t, const V& v) { t.server.limits.max_request_line = v.n; }},
    {"limits.max_header_bytes",
     Kind::size,
     16,
     kU32,
     {},
     [](T& t, const V& v) { t.server.limits.max_header_bytes = v.n; }},
    {"limits.max_headers",
     Kind::count,
     1,
     1'000'000,
     {},
     [](T& t, const V& v) { t.server.limits.max_headers = v.n; }},
    {"limits.max_body",
     Kind::size,
     0,
     kTiB,
     {},
     [](T& t, const V& v) { t.server.limits.max_body = v.n; }},
    {"limits.max_streamed_body",
     Kind::size,
     0,
     std::uint64_t{1} << 62,
     {},
     [](T& t, const V& v) { t.server.limits.max_streamed_body = v.n; }},
    {"limits.max_ranges",
     Kind::count,
     0,
     10'000,
     {},
     [](T& t, const V& v) { t.server.limits.max_ranges = v.n; }},
    {"limits.max_chunk_line",
     Kind::size,
     3,
     1 << 20,
     {},
     [](T& t, const V& v) { t.server.limits.max_chunk_line = v.n; }},
    {"limits.require_length_for_body_methods",
     Kind::boolean,
     0,
     0,
     {},
     [](T& t, const V& v) { t.server.limits.require_length_for_body_methods = v.b; }},
    // [http2]
    {"http2.h2c_prior_knowledge",
     Kind::boolean,
     0,
     0,
     {},
     [](T& t, const V& v) { t.server.http2.h2c_prior_knowledge = v.b; }},
    {"http2.h2c_upgrade",
     Kind::boolean,
     0,
     0,
     {},
     [](T& t, const V& v) { t.server.http2.h2c_upgrade = v.b; }},
    {"http2.websocket",
     Kind::boolean,
     0,
     0,
     {},
     [](T& t, const V& v) { t.server.http2.websocket = v.b; }},
    {"http2.max_concurrent_streams",
     Kind::count,
     1,
     kI31,
     {},
     [](T& t, const V& v) {
         t.server.http2.max_concurrent_streams = static_cast<std::uint32_t>(v.n);
     }},
    {"http2.stream_window",
     Kind::size,
     1,
     kI31,
     {},
     [](T& t, const V& v) { t.server.http2.stream_window = static_cast<std::uint32_t>(v.n); }},
    {"http2.connection_window",
     Kind::size,
     65'535,
     kI31,
     {},
     [](T& t, const V& v) { t.server.http2.connection_window = static_cast<std::uint32_t>(v.n); }},
    {"http2.max_frame_size",
     Kind::size,
     16'384,
     16'777'215,
     {},  // RFC 9113 6.5.2
     [](T& t, const V& v) { t.server.http2.max_frame_size = static_cast<std::uint32_t>(v.n); }},
    {"http2.max_header_list_size",
     Kind::size,
     1,
     kU32,
     {},
     [](T& t, const V& v) {
         t.server.http2.max_header_list_size = static_cast<std::uint32_t>(v.n);
     }},
    {"http2.send_timeout",
     Kind::duration,
     1,
     kWeek,
     {},
     [](T& t, const V& v) { t.server.http2.send_timeout = ms(v); }},
    {"http2.max_control_frames",
     Kind::count,
     1,
     1'000'000'000,
     {},
     [](T& t, const V& v) { t.server.http2.max_control_frames = v.n; }},
    // [websocket]
    {"websocket.max_frame",
     Kind::size,
     125,
     kTiB,
     {},
     [](T& t, const V& v) { t.ws.max_frame = v.n; }},
    {"websocket.max_message",
     Kind::size,
     1,
     kTiB,
     {},
     [](T& t, const V& v) { t.ws.max_message = v.n; }},
    {"websocket.ping_interval",
     Kind::duration,
     0,
     kWeek,
     {},
     [](T& t, const V& v) { t.ws.ping_interval = ms(v); }},
    {"websocket.pong_timeout",
     Kind::duration,
     1,
     kWeek,
     {},
     [](T& t, const V& v) { t.ws.pong_timeout = ms(v); }},
    {"websocket.close_timeout",
     Kind::duration,
     1,
     kWeek,
     {},
     [](T& t, const V& v) { t.ws.close_timeout = ms(v); }},
    {"websocket.send_queue_max",
     Kind::size,
     1,
     kTiB,
     {},
     [](T& t, const V& v) { t.ws.send_queue_max = v.n; }},
    {"websocket.slow_client", Kind::choice, 0, 0, "wait drop close",
     [](T& t, const V& v) {
         t.ws.slow_client = v.s == "drop"    ? SlowClient::drop
                            : v.s == "close" ? SlowClient::close
                                             : SlowClient::wait;
     }},
    {"websocket.deflate.enabled",
     Kind::boolean,
     0,
     0,
     {},
     [](T& t, const V& v) { t.ws.deflate.enabled = v.b; }},
    {"websocket.deflate.server_no_context_takeover",
     Kind::boolean,
     0,
     0,
     {},
     [](T& t, const V& v) { t.ws.deflate.server_no_context_takeover = v.b; }},
    {"websocket.deflate.server_max_window_bits",
     Kind::count,
     8,
     15,
     {},
     [](T& t, const V& v) { t.ws.deflate.server_max_window_bits = static_cast<int>(v.n); }},
    {"websocket.deflate.client_max_window_bits",
     Kind::count,
     8,
     15,
     {},
     [](T& t, const V& v) { t.ws.deflate.client_max_window_bits = static_cast<int>(v.n); }},
    {"websocket.deflate.level",
     Kind::count,
     1,
     9,
     {},
     [](T& t, const V& v) { t.ws.deflate.level = static_cast<int>(v.n); }},
    {"websocket.deflate.mem_level",
     Kind::count,
     1,
     9,
     {},
     [](T& t, const V& v) { t.ws.deflate.mem_level = static_cast<int>(v.n); }},
    {"websocket.deflate.min_size",
     Kind::size,
     0,
     kTiB,
     {},
     [](T& t, const V& v) { t.ws.deflate.min_size = v.n; }},
    // [sse]
    {"sse.heartbeat",
     Kind::duration,
     0,
     kWeek,
     {},
     [](T& t, const V& v) { t.sse.heartbeat = ms(v); }},
    {"sse.retry", Kind::duration, 0, kWeek, {}, [](T& t, const V& v) { t.sse.retry = ms(v); }},
    // [log]
    {"log.level", Kind::choice, 0, 0, "debug info warn error off"},
    {"log.format", Kind::choice, 0, 0, "text json"},
};

constexpr std::string_view kSections[] = {"server",    "timeouts", "limits", "http2",
                                          "websocket", "sse",      "log"};
constexpr std::string_view kTables[] = {"websocket.deflate"};

}  // namespace

std::span<const Key> keys() noexcept { return kKeys; }

const Key* find_key(std::string_view path) noexcept {
    for (const Key& k : kKeys)
        if (k.path == path) return &k;
    return nullptr;
}

bool is_table(std::string_view path) noexcept {
    return std::find(std::begin(kTables), std::end(kTables), path) != std::end(kTables);
}

std::span<const std::string_view> sections() noexcept { return kSections; }

std::vector<detail::ConfigKey> env_keys(std::string_view section) {
    std::vector<detail::ConfigKey> out;
    for (const Key& k : kKeys) {
        if (k.path.size() <= section.size() || k.path.compare(0, section.size(), section) != 0 ||
            k.path[section.size()] != '.')
            continue;
        detail::ConfigKind kind = detail::ConfigKind::toml;
        switch (k.kind) {
            case Kind::boolean:
                kind = detail::ConfigKind::boolean;
                break;
            case Kind::count:
                kind = detail::ConfigKind::integer;
                break;
            case Kind::size:
            case Kind::duration:
                kind = detail::ConfigKind::quantity;
                break;
            case Kind::choice:
            case Kind::text:
                kind = detail::ConfigKind::string;
                break;
            case Kind::listen:
            case Kind::tls:
                break;
        }
        out.push_back({std::string(k.path.substr(section.size() + 1)), kind});
    }
    return out;
}

log::Level log_level(std::string_view name) noexcept {
    if (name == "debug") return log::Level::debug;
    if (name == "warn") return log::Level::warn;
    if (name == "error") return log::Level::error;
    if (name == "off") return log::Level::off;
    return log::Level::info;
}

}  // namespace vela::config_schema
