// Tests for src/web/config*.cpp: every key group read back from the options it sets, the
// environment over the file, user sections into reflected structs, and every error class with
// its exact one-line message (file and line, or the variable).
#include "vela/ops/config.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace vela {
namespace {

using namespace std::chrono_literals;

Config parse(std::string_view text, Environment env = {}) {
    return Config::parse(text, "vela.toml", std::move(env));
}

// The message parse() throws (empty when it does not throw).
std::string error_of(std::string_view text, Environment env = {}) {
    try {
        parse(text, std::move(env));
    } catch (const ConfigError& e) {
        return e.what();
    }
    return {};
}

TEST(ConfigValues, DurationsAndSizes) {
    EXPECT_EQ(parse_duration("250ms"), 250ms);
    EXPECT_EQ(parse_duration("30s"), 30s);
    EXPECT_EQ(parse_duration("5m"), 5min);
    EXPECT_EQ(parse_duration("1h"), 1h);
    for (std::string_view bad : {"", "30", "s", "1.5s", "-1s", "30 s", "1d", "99999999999999999h"})
        EXPECT_FALSE(parse_duration(bad)) << bad;
    EXPECT_EQ(parse_size("512"), 512u);
    EXPECT_EQ(parse_size("512B"), 512u);
    EXPECT_EQ(parse_size("16KiB"), 16u * 1024);
    EXPECT_EQ(parse_size("4MiB"), 4u << 20);
    EXPECT_EQ(parse_size("1GiB"), 1u << 30);
    EXPECT_EQ(parse_size("1TiB"), std::uint64_t{1} << 40);
    EXPECT_EQ(parse_size("10kB"), 10'000u);
    EXPECT_EQ(parse_size("5MB"), 5'000'000u);
    EXPECT_EQ(parse_size("1GB"), 1'000'000'000u);
    for (std::string_view bad : {"", "KiB", "16kib", "1.5MiB", "-1", "16 KiB", "99999999999TiB"})
        EXPECT_FALSE(parse_size(bad)) << bad;
}

// ServerOptions has no ==; the fields a test sets are compared one by one.
void expect_default_server(const ServerOptions& o) {
    const ServerOptions d;
    EXPECT_EQ(o.limits.max_request_line, d.limits.max_request_line);
    EXPECT_EQ(o.limits.max_header_bytes, d.limits.max_header_bytes);
    EXPECT_EQ(o.limits.max_headers, d.limits.max_headers);
    EXPECT_EQ(o.limits.max_body, d.limits.max_body);
    EXPECT_EQ(o.limits.max_streamed_body, d.limits.max_streamed_body);
    EXPECT_EQ(o.limits.max_ranges, d.limits.max_ranges);
    EXPECT_EQ(o.limits.max_chunk_line, d.limits.max_chunk_line);
    EXPECT_EQ(o.limits.require_length_for_body_methods, d.limits.require_length_for_body_methods);
    EXPECT_EQ(o.header_timeout, d.header_timeout);
    EXPECT_EQ(o.body_timeout, d.body_timeout);
    EXPECT_EQ(o.idle_timeout, d.idle_timeout);
    EXPECT_EQ(o.linger_timeout, d.linger_timeout);
    EXPECT_EQ(o.shutdown_timeout, d.shutdown_timeout);
    EXPECT_EQ(o.drain_delay, d.drain_delay);
    EXPECT_EQ(o.handshake_timeout, d.handshake_timeout);
    EXPECT_EQ(o.cancel_on_disconnect, d.cancel_on_disconnect);
    EXPECT_EQ(o.max_connections_per_loop, d.max_connections_per_loop);
    EXPECT_EQ(o.max_handshakes_per_loop, d.max_handshakes_per_loop);
    EXPECT_EQ(o.output_high_water, d.output_high_water);
    EXPECT_EQ(o.direct_body_min, d.direct_body_min);
    EXPECT_EQ(o.listen.backlog, d.listen.backlog);
    EXPECT_EQ(o.listen.share_port, d.listen.share_port);
    EXPECT_EQ(o.http2.h2c_prior_knowledge, d.http2.h2c_prior_knowledge);
    EXPECT_EQ(o.http2.h2c_upgrade, d.http2.h2c_upgrade);
    EXPECT_EQ(o.http2.max_concurrent_streams, d.http2.max_concurrent_streams);
    EXPECT_EQ(o.http2.stream_window, d.http2.stream_window);
    EXPECT_EQ(o.http2.connection_window, d.http2.connection_window);
    EXPECT_EQ(o.http2.max_frame_size, d.http2.max_frame_size);
    EXPECT_EQ(o.http2.max_header_list_size, d.http2.max_header_list_size);
    EXPECT_EQ(o.http2.send_timeout, d.http2.send_timeout);
    EXPECT_EQ(o.http2.max_control_frames, d.http2.max_control_frames);
    EXPECT_EQ(o.timer_tick_ms, d.timer_tick_ms);
    EXPECT_EQ(o.debug_errors, d.debug_errors);
}

// The documented file with every key at its default changes nothing.
TEST(Config, DocumentedDefaultsChangeNothing) {
    const Config c = Config::load(VELA_SOURCE_DIR "/tests/web/config_defaults.toml", {});
    ServerOptions changed;
    changed.limits.max_body = 1;  // a base the file must overwrite with the default
    expect_default_server(c.server_options(changed));
    const WsOptions ws = c.websocket(), dws;
    EXPECT_EQ(ws.max_frame, dws.max_frame);
    EXPECT_EQ(ws.max_message, dws.max_message);
    EXPECT_EQ(ws.ping_interval, dws.ping_interval);
    EXPECT_EQ(ws.pong_timeout, dws.pong_timeout);
    EXPECT_EQ(ws.close_timeout, dws.close_timeout);
    EXPECT_EQ(ws.send_queue_max, dws.send_queue_max);
    EXPECT_EQ(ws.slow_client, dws.slow_client);
    EXPECT_EQ(ws.deflate.enabled, dws.deflate.enabled);
    EXPECT_EQ(ws.deflate.server_no_context_takeover, dws.deflate.server_no_context_takeover);
    EXPECT_EQ(ws.deflate.server_max_window_bits, dws.deflate.server_max_window_bits);
    EXPECT_EQ(ws.deflate.client_max_window_bits, dws.deflate.client_max_window_bits);
    EXPECT_EQ(ws.deflate.level, dws.deflate.level);
    EXPECT_EQ(ws.deflate.mem_level, dws.deflate.mem_level);
    EXPECT_EQ(ws.deflate.min_size, dws.deflate.min_size);
    EXPECT_EQ(c.sse().heartbeat, SseOptions{}.heartbeat);
    EXPECT_FALSE(c.sse().retry);
    EXPECT_EQ(c.threads(), 0u);
    EXPECT_EQ(c.log_level(), log::Level::info);
    EXPECT_EQ(c.log_format(), log::Format::text);
    EXPECT_TRUE(c.listeners().empty());
}

TEST(Config, EmptyFileSetsNothing) {
    const Config c = parse("");
    ServerOptions base;
    base.limits.max_body = 7;
    EXPECT_EQ(c.server_options(base).limits.max_body, 7u);
    EXPECT_FALSE(c.threads());
    EXPECT_FALSE(c.log_level());
    EXPECT_FALSE(c.log_format());
}

TEST(Config, EveryServerKeyApplied) {
    const Config c = parse(R"(
[server]
threads = 3
backlog = 128
share_port = true
max_connections_per_loop = 1000
max_handshakes_per_loop = 16
output_high_water = "2MiB"
direct_body_min = 4096
timer_tick = "50ms"
debug_errors = true
cancel_on_disconnect = true
[timeouts]
header = "2s"
body = 3000
idle = "1m"
linger = 0
shutdown = "1h"
drain_delay = "3s"
handshake = "750ms"
[limits]
max_request_line = "4KiB"
max_header_bytes = "8KiB"
max_headers = 50
max_body = "1MB"
max_streamed_body = "2GiB"
max_ranges = 4
max_chunk_line = 256
require_length_for_body_methods = false
[http2]
h2c_prior_knowledge = false
h2c_upgrade = false
max_concurrent_streams = 10
stream_window = "64KiB"
connection_window = "1MiB"
max_frame_size = "32KiB"
max_header_list_size = "8KiB"
send_timeout = "5s"
max_control_frames = 100
)");
    const ServerOptions o = c.server_options();
    EXPECT_EQ(c.threads(), 3u);
    EXPECT_EQ(o.listen.backlog, 128);
    EXPECT_TRUE(o.listen.share_port);
    EXPECT_EQ(o.max_connections_per_loop, 1000u);
    EXPECT_EQ(o.max_handshakes_per_loop, 16u);
    EXPECT_EQ(o.output_high_water, 2u << 20);
    EXPECT_EQ(o.direct_body_min, 4096u);
    EXPECT_EQ(o.timer_tick_ms, 50u);
    EXPECT_TRUE(o.debug_errors);
    EXPECT_TRUE(o.cancel_on_disconnect);
    EXPECT_EQ(o.header_timeout, 2s);
    EXPECT_EQ(o.body_timeout, 3s);
    EXPECT_EQ(o.idle_timeout, 1min);
    EXPECT_EQ(o.linger_timeout, 0ms);
    EXPECT_EQ(o.shutdown_timeout, 1h);
    EXPECT_EQ(o.drain_delay, 3s);
    EXPECT_EQ(o.handshake_timeout, 750ms);
    EXPECT_EQ(o.limits.max_request_line, 4096u);
    EXPECT_EQ(o.limits.max_header_bytes, 8192u);
    EXPECT_EQ(o.limits.max_headers, 50u);
    EXPECT_EQ(o.limits.max_body, 1'000'000u);
    EXPECT_EQ(o.limits.max_streamed_body, std::uint64_t{2} << 30);
    EXPECT_EQ(o.limits.max_ranges, 4u);
    EXPECT_EQ(o.limits.max_chunk_line, 256u);
    EXPECT_FALSE(o.limits.require_length_for_body_methods);
    EXPECT_FALSE(o.http2.h2c_prior_knowledge);
    EXPECT_FALSE(o.http2.h2c_upgrade);
    EXPECT_EQ(o.http2.max_concurrent_streams, 10u);
    EXPECT_EQ(o.http2.stream_window, 65536u);
    EXPECT_EQ(o.http2.connection_window, 1u << 20);
    EXPECT_EQ(o.http2.max_frame_size, 32768u);
    EXPECT_EQ(o.http2.max_header_list_size, 8192u);
    EXPECT_EQ(o.http2.send_timeout, 5s);
    EXPECT_EQ(o.http2.max_control_frames, 100u);
}

TEST(Config, WebSocketSseAndLogKeysApplied) {
    const Config c = parse(R"(
[websocket]
max_frame = "64KiB"
max_message = "256KiB"
ping_interval = 0
pong_timeout = "2s"
close_timeout = "1s"
send_queue_max = "128KiB"
slow_client = "close"
[websocket.deflate]
enabled = false
server_no_context_takeover = false
server_max_window_bits = 10
client_max_window_bits = 9
level = 1
mem_level = 4
min_size = 1024
[sse]
heartbeat = "5s"
retry = "2s"
[log]
level = "warn"
format = "json"
)");
    const WsOptions ws = c.websocket();
    EXPECT_EQ(ws.max_frame, 65536u);
    EXPECT_EQ(ws.max_message, 262144u);
    EXPECT_EQ(ws.ping_interval, 0ms);
    EXPECT_EQ(ws.pong_timeout, 2s);
    EXPECT_EQ(ws.close_timeout, 1s);
    EXPECT_EQ(ws.send_queue_max, 131072u);
    EXPECT_EQ(ws.slow_client, SlowClient::close);
    EXPECT_FALSE(ws.deflate.enabled);
    EXPECT_FALSE(ws.deflate.server_no_context_takeover);
    EXPECT_EQ(ws.deflate.server_max_window_bits, 10);
    EXPECT_EQ(ws.deflate.client_max_window_bits, 9);
    EXPECT_EQ(ws.deflate.level, 1);
    EXPECT_EQ(ws.deflate.mem_level, 4);
    EXPECT_EQ(ws.deflate.min_size, 1024u);
    EXPECT_EQ(c.sse().heartbeat, 5s);
    EXPECT_EQ(c.sse().retry, 2s);
    EXPECT_EQ(c.log_level(), log::Level::warn);
    EXPECT_EQ(c.log_format(), log::Format::json);
    // The websocket keys leave the server options alone and the other way round.
    expect_default_server(c.server_options());
}

TEST(Config, Listeners) {
    const Config c = parse(R"(
[server]
listen = ["127.0.0.1:8080", 9090, "[::1]:8081", "unix:/run/app.sock"]
[[server.tls]]
listen = ":8443"
cert = "/etc/site.crt"
key = "/etc/site.key"
http2 = false
min_version = "1.3"
ticket_key_rotation = "2h"
[[server.tls.sni]]
cert = "/etc/api.crt"
key = "/etc/api.key"
ocsp_file = "/etc/api.ocsp"
[[server.tls]]
listen = 8444
cert = "b.crt"
key = "b.key"
)");
    const auto& l = c.listeners();
    ASSERT_EQ(l.size(), 6u);
    EXPECT_EQ(l[0].endpoint.to_string(), "127.0.0.1:8080");
    EXPECT_EQ(l[1].endpoint.to_string(), "0.0.0.0:9090");
    EXPECT_EQ(l[2].endpoint.to_string(), "[::1]:8081");
    EXPECT_EQ(l[3].endpoint.kind, net::Endpoint::Kind::unix_path);
    EXPECT_EQ(l[3].endpoint.path, "/run/app.sock");
    for (int i = 0; i < 4; ++i) EXPECT_FALSE(l[static_cast<std::size_t>(i)].tls);
    ASSERT_TRUE(l[4].tls);
    EXPECT_EQ(l[4].endpoint.port, 8443);
    EXPECT_EQ(l[4].tls->cert, "/etc/site.crt");
    EXPECT_EQ(l[4].tls->key, "/etc/site.key");
    EXPECT_FALSE(l[4].tls->http2);
    EXPECT_EQ(l[4].tls->min_version, "1.3");
    EXPECT_EQ(l[4].tls->ticket_key_rotation, 2h);
    EXPECT_EQ(l[4].tls->ciphers, TlsOptions{}.ciphers);
    ASSERT_EQ(l[4].tls->sni.size(), 1u);
    EXPECT_EQ(l[4].tls->sni[0].cert_file, "/etc/api.crt");
    EXPECT_EQ(l[4].tls->sni[0].key_file, "/etc/api.key");
    EXPECT_EQ(l[4].tls->sni[0].ocsp_file, "/etc/api.ocsp");
    ASSERT_TRUE(l[5].tls);
    EXPECT_EQ(l[5].endpoint.port, 8444);
    EXPECT_EQ(l[5].tls->cert, "b.crt");
    EXPECT_TRUE(l[5].tls->sni.empty());
    // One endpoint may be given without an array.
    EXPECT_EQ(parse("[server]\nlisten = \"unix:/tmp/x.sock\"").listeners().at(0).endpoint.path,
              "/tmp/x.sock");
}

// ---- The environment ---------------------------------------------------------------------

TEST(ConfigEnv, OverridesTheFile) {
    const Config c = parse("[server]\nthreads = 2\n[limits]\nmax_body = 100\nmax_headers = 7\n",
                           {{"VELA_SERVER_THREADS", "8"},
                            {"VELA_LIMITS_MAX_BODY", "1MiB"},
                            {"VELA_TIMEOUTS_IDLE", "5000"},
                            {"VELA_HTTP2_H2C_UPGRADE", "false"},
                            {"VELA_WEBSOCKET_DEFLATE_LEVEL", "3"},
                            {"VELA_WEBSOCKET_SLOW_CLIENT", "drop"},
                            {"VELA_LOG_LEVEL", "debug"},
                            {"VELA_SERVER_LISTEN", "127.0.0.1:9000"},
                            {"VELA_CI", "1"},  // not a section of vela's: left alone
                            {"VELA_H2_TRACE", "1"}});
    const ServerOptions o = c.server_options();
    EXPECT_EQ(c.threads(), 8u);
    EXPECT_EQ(o.limits.max_body, 1u << 20);
    EXPECT_EQ(o.limits.max_headers, 7u);  // from the file
    EXPECT_EQ(o.idle_timeout, 5s);
    EXPECT_FALSE(o.http2.h2c_upgrade);
    EXPECT_EQ(c.websocket().deflate.level, 3);
    EXPECT_EQ(c.websocket().slow_client, SlowClient::drop);
    EXPECT_EQ(c.log_level(), log::Level::debug);
    ASSERT_EQ(c.listeners().size(), 1u);
    EXPECT_EQ(c.listeners()[0].endpoint.to_string(), "127.0.0.1:9000");
}

TEST(ConfigEnv, ArraysAndTablesInTomlSyntax) {
    const Config c = Config::from_environment(
        {{"VELA_SERVER_LISTEN", R"(["127.0.0.1:1", 2])"},
         {"VELA_SERVER_TLS", R"([{listen = ":3", cert = "c.pem", key = "k.pem"}])"}});
    ASSERT_EQ(c.listeners().size(), 3u);
    EXPECT_EQ(c.listeners()[1].endpoint.port, 2);
    EXPECT_EQ(c.listeners()[2].tls->cert, "c.pem");
    EXPECT_EQ(c.name(), "<environment>");
}

TEST(ConfigEnv, Errors) {
    const std::map<std::pair<std::string, std::string>, std::string> cases = {
        {{"VELA_SERVER_THREADS", "abc"},
         "VELA_SERVER_THREADS: server.threads: expected an integer, got \"abc\""},
        {{"VELA_SERVER_THREADS", "5000"},
         "VELA_SERVER_THREADS: server.threads: expected an integer in [0, 4096], got 5000"},
        {{"VELA_SERVER_THREADS", "1\nbacklog = 3"},
         "VELA_SERVER_THREADS: server.threads: expected an integer, got \"1\\u000abacklog = 3\""},
        {{"VELA_LIMITS_MAX_BODY", "lots"},
         "VELA_LIMITS_MAX_BODY: limits.max_body: expected a size (\"16KiB\", \"4MiB\" or bytes), "
         "got \"lots\""},
        {{"VELA_HTTP2_H2C_UPGRADE", "yes"},
         "VELA_HTTP2_H2C_UPGRADE: http2.h2c_upgrade: expected true or false, got \"yes\""},
        {{"VELA_LOG_LEVEL", "loud"},
         "VELA_LOG_LEVEL: log.level: expected one of \"debug\", \"info\", \"warn\", \"error\", "
         "\"off\", got \"loud\""},
        {{"VELA_SERVER_LISTEN", "1.2.3.4:99999"},
         "VELA_SERVER_LISTEN: server.listen: invalid port '99999' (expected 0 to 65535)"},
        {{"VELA_SERVER_THRADS", "4"},
         "VELA_SERVER_THRADS: [server] has no key with this name (a key a.b of [server] is "
         "VELA_SERVER_A_B)"},
    };
    for (const auto& [var, expected] : cases) EXPECT_EQ(error_of("", {var}), expected) << var.first;
}

// ---- Errors in the file ------------------------------------------------------------------

TEST(ConfigErrors, OneLineNamingFileLineAndKey) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"[server]\nthreads = \"four\"",
         "vela.toml:2: server.threads: expected an integer, got a string"},
        {"[server]\n\nthreads = -1",
         "vela.toml:3: server.threads: expected an integer in [0, 4096], got -1"},
        {"[server]\nthread = 4", "vela.toml:2: server.thread: unknown key"},
        {"[server]\nlisten = 70000",
         "vela.toml:2: server.listen: expected a port in [0, 65535], got 70000"},
        {"[server]\nlisten = [\":80\", \"1.2.3.4:70000\"]",
         "vela.toml:2: server.listen[1]: invalid port '70000' (expected 0 to 65535)"},
        {"[server]\nlisten = [true]",
         "vela.toml:2: server.listen[0]: expected an endpoint (\"0.0.0.0:8080\", \"[::1]:8080\", "
         "\"unix:/path\"), got a boolean"},
        {"[timeouts]\nidle = -5", "vela.toml:2: timeouts.idle: expected a duration >= 0, got -5"},
        {"[timeouts]\nidle = \"5 minutes\"",
         "vela.toml:2: timeouts.idle: expected a duration (\"250ms\", \"30s\", \"5m\", \"1h\" or "
         "milliseconds), got \"5 minutes\""},
        {"[timeouts]\nheader = 0",
         "vela.toml:2: timeouts.header: expected a duration in [1ms, 604800000ms], got 0ms"},
        {"[limits]\nmax_body = 1.5",
         "vela.toml:2: limits.max_body: expected a size (\"16KiB\", "
         "\"4MiB\" or bytes), got a float"},
        {"[limits]\nmax_body = \"-1MiB\"",
         "vela.toml:2: limits.max_body: expected a size "
         "(\"16KiB\", \"4MiB\" or bytes), got \"-1MiB\""},
        {"[http2]\nmax_frame_size = 100",
         "vela.toml:2: http2.max_frame_size: expected a size in "
         "[16384, 16777215] bytes, got 100"},
        {"[log]\nlevel = \"verbose\"",
         "vela.toml:2: log.level: expected one of \"debug\", \"info\", \"warn\", \"error\", "
         "\"off\", got \"verbose\""},
        {"[log]\nformat = \"xml\"",
         "vela.toml:2: log.format: expected one of \"text\", \"json\", got \"xml\""},
        {"[server]\ndebug_errors = 1",
         "vela.toml:2: server.debug_errors: expected a boolean (true or false), got an integer"},
        {"[websocket.deflate]\nlevel = 10",
         "vela.toml:2: websocket.deflate.level: expected an integer in [1, 9], got 10"},
        {"[websocket]\ndeflate = 1",
         "vela.toml:2: websocket.deflate: expected a table, got an "
         "integer"},
        {"[websocket]\nslow_client = \"block\"",
         "vela.toml:2: websocket.slow_client: expected one of \"wait\", \"drop\", \"close\", got "
         "\"block\""},
        {"server = 3", "vela.toml:1: server: expected a table, got an integer"},
        {"threads = 3",
         "vela.toml:1: threads: unknown key (settings go in a table: [server], [myapp], ...)"},
        {"[[server.tls]]\nlisten = \":443\"\ncert = \"c\"",
         "vela.toml:1: server.tls[0]: missing required key key"},
        {"[[server.tls]]\ncert = \"c\"\nkey = \"k\"",
         "vela.toml:1: server.tls[0]: missing required key listen"},
        {"[[server.tls]]\nlisten = \"unix:/x\"\ncert = \"c\"\nkey = \"k\"",
         "vela.toml:1: server.tls[0]: TLS listeners are TCP endpoints, not Unix sockets"},
        {"[[server.tls]]\nlisten = 1\ncert = \"c\"\nkey = \"k\"\nhttp3 = true",
         "vela.toml:5: server.tls[0].http3: unknown key"},
        {"[[server.tls]]\nlisten = 1\ncert = \"c\"\nkey = \"k\"\nmin_version = \"1.1\"",
         "vela.toml:5: server.tls[0].min_version: expected one of \"1.2\", \"1.3\", got \"1.1\""},
        {"[[server.tls]]\nlisten = 1\ncert = \"c\"\nkey = \"k\"\n[[server.tls.sni]]\ncert = \"x\"",
         "vela.toml:5: server.tls[0].sni[0]: missing required key key"},
        {"[server]\ntls = 5",
         "vela.toml:2: server.tls: expected an array of tables ([[server.tls]]), got an integer"},
        // toml++'s own syntax errors keep its wording, with the line.
        {"[server]\nthreads = ",
         "vela.toml:2: Error while parsing key-value pair: encountered "
         "end-of-file"},
    };
    for (const auto& [text, expected] : cases) EXPECT_EQ(error_of(text), expected) << text;
}

// Regression: toml++ 3.3 reached __builtin_unreachable for U+0249 where whitespace may stand
// (found by fuzz_config; UBSan in the ASan build fails this test if it comes back).
TEST(ConfigErrors, NonAsciiWhereWhitespaceMayStandIsASyntaxError) {
    EXPECT_EQ(error_of("[\xc9\x89server]\n"),
              "vela.toml:1: Error while parsing key: expected bare key starting character or "
              "string delimiter, saw '\xc9\x89'");
    EXPECT_EQ(error_of("a = 1 \xe3\x80\x82\n"),
              "vela.toml:1: Error while parsing key-value pair: expected a comment or whitespace, "
              "saw '\xe3\x80\x82'");
}

TEST(ConfigErrors, MissingFileIsAnError) {
    try {
        Config::load("/nonexistent/vela.toml", {});
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "/nonexistent/vela.toml: cannot read the configuration file: No such file or "
                  "directory");
    }
}

// ---- User sections -----------------------------------------------------------------------

enum class Mode { fast, safe };
VELA_ENUM(Mode, fast, safe)

struct Pool {
    int size = 4;
    Duration timeout{std::chrono::seconds(5)};
};
VELA_REFLECT(Pool, size, timeout)

struct Replica {
    std::string host;
    int port = 5432;
};
VELA_REFLECT(Replica, VELA_REQUIRED(host), port)

struct Db {
    std::string url;
    Pool pool;
    std::vector<Replica> replicas;
};
VELA_REFLECT(Db, VELA_REQUIRED(url), pool, replicas)

struct MyConfig {
    std::string greeting = "hello";
    int workers = 2;
    double ratio = 0.5;
    bool beta = false;
    Mode mode = Mode::safe;
    ByteSize upload_limit{1 << 20};
    std::vector<std::string> admins;
    std::map<std::string, int> quotas;
    std::optional<int> seed;
    Db db;
};
VELA_REFLECT(MyConfig, greeting, workers, ratio, beta, mode, upload_limit, admins, quotas, seed,
             VELA_REQUIRED(db))

TEST(ConfigSection, DefaultsRequiredNestedArrays) {
    const Config c = parse(R"(
[myapp]
workers = 8
mode = "fast"
upload_limit = "10MiB"
admins = ["ann", "bob"]
quotas = { ann = 3 }
[myapp.db]
url = "postgres://db/app"
[myapp.db.pool]
timeout = "250ms"
[[myapp.db.replicas]]
host = "r1"
[[myapp.db.replicas]]
host = "r2"
port = 6000
)");
    const auto m = c.section<MyConfig>("myapp");
    EXPECT_EQ(m.greeting, "hello");  // absent: its default
    EXPECT_EQ(m.workers, 8);
    EXPECT_EQ(m.ratio, 0.5);
    EXPECT_EQ(m.mode, Mode::fast);
    EXPECT_EQ(m.upload_limit.value, 10u << 20);
    EXPECT_EQ(m.admins, (std::vector<std::string>{"ann", "bob"}));
    EXPECT_EQ(m.quotas.at("ann"), 3);
    EXPECT_FALSE(m.seed);
    EXPECT_EQ(m.db.url, "postgres://db/app");
    EXPECT_EQ(m.db.pool.size, 4);
    EXPECT_EQ(m.db.pool.timeout.value, 250ms);
    ASSERT_EQ(m.db.replicas.size(), 2u);
    EXPECT_EQ(m.db.replicas[0].port, 5432);
    EXPECT_EQ(m.db.replicas[1].host, "r2");
    EXPECT_EQ(m.db.replicas[1].port, 6000);
    EXPECT_TRUE(c.has_section("myapp"));
    ASSERT_EQ(c.user_sections().size(), 1u);
    EXPECT_EQ(c.user_sections()[0].first, "myapp");
    EXPECT_EQ(c.user_sections()[0].second, "vela.toml:2");
}

struct Flat {
    int port = 80;
    std::string name = "x";
};
VELA_REFLECT(Flat, port, name)

TEST(ConfigSection, AbsentTableGivesDefaults) {
    const auto f = parse("").section<Flat>("web");
    EXPECT_EQ(f.port, 80);
    EXPECT_EQ(f.name, "x");
}

struct Times {
    std::chrono::system_clock::time_point at;
};
VELA_REFLECT(Times, at)

TEST(ConfigSection, DateTimesBecomeTimePoints) {
    const auto t = parse("[t]\nat = 1970-01-01T00:01:00Z").section<Times>("t");
    EXPECT_EQ(t.at.time_since_epoch(), std::chrono::minutes(1));
}

TEST(ConfigSection, EnvironmentOverridesAndConverts) {
    const Config c = parse("[myapp]\nworkers = 8\n[myapp.db]\nurl = \"file\"\n",
                           {{"VELA_MYAPP_DB_URL", "postgres://env/app"},
                            {"VELA_MYAPP_WORKERS", "16"},
                            {"VELA_MYAPP_BETA", "true"},
                            {"VELA_MYAPP_RATIO", "0.25"},
                            {"VELA_MYAPP_GREETING", "hi there"},
                            {"VELA_MYAPP_UPLOAD_LIMIT", "2048"},
                            {"VELA_MYAPP_ADMINS", R"(["eve"])"},
                            {"VELA_MYAPP_DB_POOL_TIMEOUT", "1s"},
                            {"VELA_MYAPP_DB_REPLICAS", R"([{host = "e1"}])"}});
    const auto m = c.section<MyConfig>("myapp");
    EXPECT_EQ(m.db.url, "postgres://env/app");
    EXPECT_EQ(m.workers, 16);
    EXPECT_TRUE(m.beta);
    EXPECT_EQ(m.ratio, 0.25);
    EXPECT_EQ(m.greeting, "hi there");
    EXPECT_EQ(m.upload_limit.value, 2048u);
    EXPECT_EQ(m.admins, std::vector<std::string>{"eve"});
    EXPECT_EQ(m.db.pool.timeout.value, 1s);
    ASSERT_EQ(m.db.replicas.size(), 1u);
    EXPECT_EQ(m.db.replicas[0].host, "e1");
    // The environment alone can supply a required table.
    const auto e = parse("", {{"VELA_MYAPP_DB_URL", "x"}}).section<MyConfig>("myapp");
    EXPECT_EQ(e.db.url, "x");
}

struct Ambiguous {
    std::string db_url;
    struct Db {
        std::string url;
    } db;
};
VELA_REFLECT(Ambiguous::Db, url)
VELA_REFLECT(Ambiguous, db_url, db)

template <class T>
std::string section_error(std::string_view text, std::string_view name, Environment env = {}) {
    try {
        parse(text, std::move(env)).section<T>(name);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return {};
}

TEST(ConfigSection, Errors) {
    const char* db = "[myapp.db]\nurl = \"u\"\n";
    EXPECT_EQ(section_error<MyConfig>(std::string("[myapp]\nworkers = \"many\"\n") + db, "myapp"),
              "vela.toml:2: myapp.workers: expected an integer, got a string");
    EXPECT_EQ(
        section_error<MyConfig>(std::string("[myapp]\nworkers = 1\nwokers = 2\n") + db, "myapp"),
        "vela.toml:3: myapp.wokers: unknown key");
    EXPECT_EQ(section_error<MyConfig>(std::string(db) + "pool = { sise = 1 }\n", "myapp"),
              "vela.toml:3: myapp.db.pool.sise: unknown key");
    EXPECT_EQ(section_error<MyConfig>("[myapp]\nworkers = 1\n\n[myapp.db]\npool = {}\n", "myapp"),
              "vela.toml:4: myapp.db.url: missing required key");
    EXPECT_EQ(section_error<MyConfig>("", "myapp"), "vela.toml: myapp.db: missing required key");
    EXPECT_EQ(
        section_error<MyConfig>(std::string(db) + "[[myapp.db.replicas]]\nport = 1\n", "myapp"),
        "vela.toml:3: myapp.db.replicas[0].host: missing required key");
    EXPECT_EQ(section_error<MyConfig>(std::string("[myapp]\nworkers = 3000000000\n") + db, "myapp"),
              "vela.toml:2: myapp.workers: expected an integer in [-2147483648, 2147483647], got "
              "3000000000");
    EXPECT_EQ(section_error<MyConfig>(std::string("[myapp]\nmode = \"slow\"\n") + db, "myapp"),
              "vela.toml:2: myapp.mode: expected one of \"fast\", \"safe\", got \"slow\"");
    EXPECT_EQ(
        section_error<MyConfig>(std::string("[myapp]\nupload_limit = \"big\"\n") + db, "myapp"),
        "vela.toml:2: myapp.upload_limit: expected a size (\"16KiB\", \"4MiB\" or bytes), "
        "got \"big\"");
    EXPECT_EQ(section_error<MyConfig>(std::string("[myapp]\nratio = nan\n") + db, "myapp"),
              "vela.toml:2: myapp.ratio: expected a finite number, got nan");
    EXPECT_EQ(section_error<MyConfig>(std::string("[myapp]\nadmins = \"ann\"\n") + db, "myapp"),
              "vela.toml:2: myapp.admins: expected an array, got a string");
    EXPECT_EQ(section_error<Flat>("myapp = 3", "myapp"),
              "vela.toml:1: myapp: unknown key (settings go in a table: [server], [myapp], ...)");
    EXPECT_EQ(section_error<Flat>("", "server"),
              "vela.toml: [server] is vela's own section; read it with Config::server_options() "
              "and the like");
    // The environment: conversion, unknown names, ambiguity, each naming the variable.
    EXPECT_EQ(section_error<MyConfig>(db, "myapp", {{"VELA_MYAPP_WORKERS", "x"}}),
              "VELA_MYAPP_WORKERS: myapp.workers: expected an integer, got \"x\"");
    EXPECT_EQ(section_error<MyConfig>(db, "myapp", {{"VELA_MYAPP_WORKERS", "9999999999"}}),
              "VELA_MYAPP_WORKERS: myapp.workers: expected an integer in [-2147483648, "
              "2147483647], got 9999999999");
    EXPECT_EQ(section_error<MyConfig>(db, "myapp", {{"VELA_MYAPP_WORKER", "1"}}),
              "VELA_MYAPP_WORKER: [myapp] has no key with this name (a key a.b of [myapp] is "
              "VELA_MYAPP_A_B)");
    EXPECT_EQ(section_error<Ambiguous>("", "amb", {{"VELA_AMB_DB_URL", "x"}}),
              "VELA_AMB_DB_URL: ambiguous: it names both amb.db_url and amb.db.url");
    EXPECT_EQ(section_error<MyConfig>("[myapp]\ndb = 3\n", "myapp", {{"VELA_MYAPP_DB_URL", "x"}}),
              "VELA_MYAPP_DB_URL: myapp.db.url: cannot be set: myapp.db is an integer "
              "(vela.toml:2)");
}

}  // namespace
}  // namespace vela
