// vela's side of the benchmark scenarios (docs/benchmarks.md), with the payloads of the
// public C++ framework comparisons.
//   vela_bench_app [--port N] [--threads N] [--host ADDR]   (ADDR: listen there only)
//                  [--tls-cert FILE --tls-key FILE [--tls-port N]] [--metrics]
// With --metrics, vela::metrics(app) is on (GET /metrics; bench/callgrind's hello-metrics).
// With a certificate and key the same routes are also served over TLS on --tls-port (h2 and
// http/1.1 through ALPN); the plain port also takes h2c with prior knowledge.
// A bad command line prints one line on stderr and exits 2; a port that cannot be opened
// is logged as one line and exits 1.
//
// The json and echo scenarios use vela's JSON: reflected structs serialized per request, and
// the echo body parsed into a struct (simdjson) and written back.
//
// The session scenario signs in once (POST /session/login) and reads GET /session/me with
// the cookie: sessions() with its memory store.
//
// bench/ws/run uses the rest: POST /api/echo/raw answers the body as it came (the HTTP
// baseline), /ws/echo sends every WebSocket message back, /ws/room broadcasts every message
// to the other members of one room; permessage-deflate is off on both, as for the peer.
//
// bench/memory/run holds idle streams on /sse/idle: a text/event-stream response that sends
// nothing after its head (no heartbeat) and ends when the client goes.

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <vela/vela.hpp>

#include "redis_routes.hpp"

namespace {

// One async middleware layer: sets a request attribute on the way in and adds a response
// header on the way out.
vela::Task<vela::Response> async_layer(vela::Request& req, vela::Next next) {
    req.set_attribute("layer", "async");
    vela::Response res = co_await next();
    res.add_header("X-Layer", "async");
    co_return res;
}

// GET /api/status: fixed strings, so string_view members (written, never copied).
struct Status {
    std::string_view status;
    std::string_view framework;
};
VELA_REFLECT(Status, status, framework)

// POST /api/echo: {"name":"Alice","age":30,"email":"alice@example.com"}.
struct Person {
    std::string name;
    int age = 0;
    std::string email;
};
VELA_REFLECT(Person, name, age, email)

// GET /session/me: what the session says of its visitor.
struct Me {
    std::string user;
    std::int64_t since = 0;
};
VELA_REFLECT(Me, user, since)

constexpr std::string_view kUsage =
    "usage: vela_bench_app [--port N] [--threads N] [--host ADDR]\n"
    "                      [--tls-cert FILE --tls-key FILE [--tls-port N]] [--metrics]\n"
    "                      [--redis URL]\n"
    "  --port N          port, 0 to 65535 (default 8080)\n"
    "  --threads N       event loops, 0 to 1024 (default 0: one per core)\n"
    "  --host ADDR       numeric address to listen on (default: all IPv4 interfaces)\n"
    "  --tls-cert FILE   TLS certificate chain (PEM); needs --tls-key\n"
    "  --tls-key FILE    TLS private key (PEM); needs --tls-cert\n"
    "  --tls-port N      HTTPS port (h2 and http/1.1), 0 to 65535 (default 8443)\n"
    "  --metrics         serve Prometheus metrics at /metrics (vela::metrics)\n"
    "  --redis URL       /ws/room spans every app given the same Redis (vela::RedisBackplane),\n"
    "                    GET /limited/redis is rate-limited there (vela::RedisRateLimiter) and\n"
    "                    GET /limited/local in process (vela::rate_limit), the same limit\n"
    "  -h, --help        print this text and exit\n";

// A command-line mistake: one line on stderr, exit code 2.
[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr, "vela_bench_app: %s (see --help)\n", message.c_str());
    std::exit(2);
}

// A whole decimal number in [0, max]; a sign, spaces or trailing junk are refused.
unsigned parse_number(std::string_view option, std::string_view value, unsigned max) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || v > max)
        usage_error("invalid value '" + std::string(value) + "' for " + std::string(option) +
                    " (expected 0 to " + std::to_string(max) + ")");
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    unsigned port = 8080, threads = 0, tls_port = 8443;
    std::string host, tls_cert, tls_key, redis_url;
    bool metrics = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::fputs(kUsage.data(), stdout);
            return 0;
        }
        if (arg == "--metrics") {
            metrics = true;
            continue;
        }
        if (arg != "--port" && arg != "--threads" && arg != "--host" && arg != "--tls-cert" &&
            arg != "--tls-key" && arg != "--tls-port" && arg != "--redis")
            usage_error("unknown option '" + std::string(arg) + "'");
        if (i + 1 >= argc) usage_error("missing value for " + std::string(arg));
        const std::string_view value = argv[++i];
        if (arg == "--port") port = parse_number(arg, value, 65535);
        if (arg == "--threads") threads = parse_number(arg, value, 1024);
        if (arg == "--host") {
            if (value.empty()) usage_error("empty address for --host");
            host = std::string(value);
        }
        if (arg == "--tls-port") tls_port = parse_number(arg, value, 65535);
        if (arg == "--redis") redis_url = std::string(value);
        if (arg == "--tls-cert" || arg == "--tls-key") {
            if (value.empty()) usage_error("empty file name for " + std::string(arg));
            (arg == "--tls-cert" ? tls_cert : tls_key) = std::string(value);
        }
    }
    if (tls_cert.empty() != tls_key.empty())
        usage_error(tls_cert.empty() ? "--tls-key needs --tls-cert" : "--tls-cert needs --tls-key");
    vela::log::set_level(vela::log::Level::warn);

    vela::Hub hub;                // made before the app, so it outlives the server
    std::shared_ptr<void> redis;  // with --redis: a backplane and rate limits (outlives app)
    vela::App app;
    if (!redis_url.empty()) {
        try {
            redis = attach_redis(app, hub, redis_url);
        } catch (const std::exception& e) {
            usage_error(std::string("--redis: ") + e.what());
        }
    }

    app.get("/", [] { return "Hello, World!"; });

    app.get("/api/status", [] { return Status{"running", "vela"}; });

    app.post("/api/echo", [](vela::Json<Person> body) { return body; });

    // The session scenario: POST /session/login signs a visitor in (sets the cookie), GET
    // /session/me reads it back as JSON (the memory store; a read leaves the session unsaved).
    auto sessions = app.group("/session");
    sessions.use(vela::sessions());
    sessions.post("/login", [](vela::Request& req) {
        vela::Session& s = vela::session(req);
        s.regenerate();
        s.set("user", std::string("bench"));
        s.set("since", std::int64_t{1764547200});
        return "signed in";
    });
    sessions.get("/me", [](vela::Request& req) -> vela::Response {
        vela::Session& s = vela::session(req);
        std::optional<std::string> user = s.get<std::string>("user");
        if (!user) return vela::Status::Unauthorized;
        return vela::json_response(Me{std::move(*user), s.get<std::int64_t>("since").value_or(0)});
    });

    app.post("/api/echo/raw", [](vela::Request& req) {
        return vela::Response::with_body(vela::Status::OK, std::string(req.body()),
                                         "application/octet-stream");
    });

    vela::WsOptions ws_options;
    ws_options.deflate.enabled = false;
    app.ws(
        "/ws/echo",
        [](vela::WebSocket& ws) -> vela::Task<void> {
            for (;;) {
                vela::WsMessage m = co_await ws.receive();
                if (m.is_close()) co_return;
                co_await ws.send(m.data, m.type);
            }
        },
        ws_options);
    app.ws(
        "/ws/room",
        [&hub](vela::WebSocket& ws, vela::Request&) -> vela::Task<void> {
            vela::Hub::Room& room = hub.room("bench");
            room.join(ws);
            for (;;) {
                vela::WsMessage m = co_await ws.receive();
                if (m.is_close()) break;
                room.broadcast(m.data, m.type, &ws);
            }
            room.leave(ws);
        },
        ws_options);

    // An idle event stream: the head, then nothing until the client goes (open() turns
    // false; the producer looks once a second).
    app.get("/sse/idle", [](const vela::Request& req) {
        vela::SseOptions quiet;
        quiet.heartbeat = std::chrono::milliseconds(0);
        return vela::sse(
            req,
            [](vela::SseStream& s) -> vela::Task<void> {
                while (s.open()) co_await vela::sleep(std::chrono::seconds(1));
            },
            quiet);
    });

    // Eight response header fields in the case applications write them (bench/callgrind's
    // headers and h2c-headers: HTTP/1.1 copies the block, HTTP/2 lowers and indexes it).
    app.get("/headers", [] {
        vela::Response r("headers");
        r.add_header("Cache-Control", "no-store");
        r.add_header("X-Request-Id", "4f9c1c2e-8a51-4d6b-9b7e-2f3a6c1d0e42");
        r.add_header("X-Frame-Options", "DENY");
        r.add_header("X-Content-Type-Options", "nosniff");
        r.add_header("Referrer-Policy", "no-referrer");
        r.add_header("Vary", "Accept-Encoding");
        r.add_header("ETag", "\"5e1f-2a\"");
        r.add_header("Set-Cookie", "sid=8c1d4e; Path=/; HttpOnly");
        return r;
    });

    app.get("/users/{id}", [](vela::Request& req) {
        std::string_view id = req.param("id");
        std::string out;
        out.reserve(40 + 2 * id.size());
        out += "{\"userId\":\"";
        out += id;
        out += "\",\"name\":\"User ";
        out += id;
        out += "\"}";
        return vela::Response::json(std::move(out));
    });

    app.get("/middleware/0", [] { return vela::Response::json("{\"middleware_count\":0}"); });
    for (int n : {3, 10}) {
        auto g = app.group("/middleware/" + std::to_string(n));
        for (int i = 0; i < n; ++i) g.use(async_layer);
        std::string body = "{\"middleware_count\":" + std::to_string(n) + "}";
        g.get("", [body] { return vela::Response::json(body); });
    }
    for (int n : {3, 10}) {
        auto g = app.group("/sync-filter/" + std::to_string(n));
        for (int i = 0; i < n; ++i) {
            g.use([](vela::Request& req) { req.set_attribute("layer", "sync"); });
            g.use([](vela::Request&, vela::Response& res) { res.add_header("X-Layer", "sync"); });
        }
        std::string body = "{\"middleware_count\":" + std::to_string(n) + ",\"type\":\"sync\"}";
        g.get("", [body] { return vela::Response::json(body); });
    }

    // An IPv6 address needs brackets in an endpoint spec.
    const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
    const std::string addr = v6 ? "[" + host + "]" : host;
    if (host.empty()) {
        app.listen(static_cast<std::uint16_t>(port));
    } else {
        app.listen(addr + ":" + std::to_string(port));
    }
    if (!tls_cert.empty()) {
        // The same routes over TLS, HTTP/2 offered through ALPN.
        vela::TlsOptions tls;
        tls.cert = tls_cert;
        tls.key = tls_key;
        if (host.empty()) {
            app.listen_tls(static_cast<std::uint16_t>(tls_port), std::move(tls));
        } else {
            app.listen_tls(addr + ":" + std::to_string(tls_port), std::move(tls));
        }
    }
    if (metrics) vela::metrics(app);
    return app.run(threads);
}
