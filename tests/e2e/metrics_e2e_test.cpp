// /metrics and the stall watchdog end to end: a real App on loopback, requests from raw
// sockets (tests/e2e/client.hpp) and curl (HTTP/2 with prior knowledge), the scrape parsed by
// the Prometheus client's own text parser (tests/e2e/metrics/parse_prom.py, Debian
// python3-prometheus-client): request counts by route template / method / status summed over
// two loops, the 404 label, histogram buckets, bytes, connection gauges per protocol
// (HTTP/1.1, h2, WebSocket), SSE streams, loop lag, and a busy handler reported once by the
// watchdog.

// The test binary gets spdlog's headers but not its usage requirements (vela_base links it
// privately): the definitions Debian's spdlog::spdlog target would add.
#ifndef SPDLOG_FMT_EXTERNAL
#define SPDLOG_FMT_EXTERNAL
#endif
#ifndef SPDLOG_COMPILED_LIB
#define SPDLOG_COMPILED_LIB
#endif
#ifndef SPDLOG_SHARED_LIB
#define SPDLOG_SHARED_LIB
#endif

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "client.hpp"
#include "log_capture.hpp"
#include "process.hpp"
#include "vela/ops/metrics.hpp"
#include "vela/vela.hpp"

#ifndef VELA_SOURCE_DIR
#error "tests/CMakeLists.txt defines VELA_SOURCE_DIR for every test binary"
#endif

namespace vela::e2e {
namespace {

const std::string kParser = std::string(VELA_SOURCE_DIR) + "/tests/e2e/metrics/parse_prom.py";

bool in_ci() {
    const char* v = std::getenv("VELA_CI");
    return v && *v;
}

bool have_parser() {
    return run_command("/usr/bin/python3 -c 'import prometheus_client.parser' 2>/dev/null")
               .status == 0;
}

// Skips loudly by hand, fails in CI, when the Prometheus parser is not installed.
#define VELA_NEED_PROM_PARSER()                                                                   \
    do {                                                                                          \
        if (!have_parser()) {                                                                     \
            if (in_ci()) FAIL() << "python3-prometheus-client is missing (scripts/install-deps)"; \
            GTEST_SKIP() << "*** python3-prometheus-client is not installed: SKIPPED ***";        \
        }                                                                                         \
    } while (0)

// A scrape as the Prometheus parser reads it: sample "name{k="v",...}" (labels sorted) ->
// value, and family name -> type.
struct Scrape {
    std::map<std::string, double> samples;
    std::map<std::string, std::string> types;  // (counters named without _total)
    std::string text;

    bool has(const std::string& key) const { return samples.count(key) != 0; }
    std::string type_of(const std::string& family) const {
        auto it = types.find(family);
        return it == types.end() ? "" : it->second;
    }
    double at(const std::string& key) const {
        auto it = samples.find(key);
        return it == samples.end() ? -1 : it->second;
    }
};

Scrape parse(const std::string& text) {
    Scrape s;
    s.text = text;
    char path[] = "/tmp/vela-metrics.XXXXXX";
    const int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    { std::ofstream(path) << text; }
    ::close(fd);
    const Ran r = run_command("/usr/bin/python3 " + kParser + " " + path);
    ::unlink(path);
    EXPECT_EQ(r.status, 0) << "the Prometheus parser refused:\n" << text;
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("TYPE ", 0) == 0) {
            const auto sp = line.find(' ', 5);
            s.types[line.substr(5, sp - 5)] = line.substr(sp + 1);
            continue;
        }
        const auto sp = line.rfind(' ');
        s.samples[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
    }
    return s;
}

// GET /metrics over a fresh HTTP/1.1 connection; checks the Content-Type.
Scrape scrape(std::uint16_t port) {
    Client c = Client::tcp(port);
    c.send(get_request("/metrics"));
    auto r = c.read_response();
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    return parse(r->body);
}

std::string requests_key(const std::string& route, const std::string& method, int status) {
    return "vela_http_requests_total{method=\"" + method + "\",route=\"" + route + "\",status=\"" +
           std::to_string(status) + "\"}";
}

std::string conn_key(const std::string& proto, bool tls) {
    return "vela_open_connections{protocol=\"" + proto + "\",tls=\"" + (tls ? "true" : "false") +
           "\"}";
}

// Polls `cond` on fresh scrapes for up to 5 s.
template <class F>
Scrape scrape_until(std::uint16_t port, F cond) {
    Scrape s;
    for (int i = 0; i < 100; ++i) {
        s = scrape(port);
        if (cond(s)) return s;
        std::this_thread::sleep_for(50ms);
    }
    return s;
}

void busy_wait(Ms d) {
    const auto end = SteadyClock::now() + d;
    while (SteadyClock::now() < end) {
    }
}

TEST(MetricsE2E, CountsRequestsAcrossTwoLoops) {
    VELA_NEED_PROM_PARSER();
    App app;
    app.get("/items/{id:int}", [] {  // answers which loop it ran on
        return fmt::format("{}", static_cast<const void*>(Loop::current()));
    });
    app.post("/items", [](Request&) { return Response(Status::Created); });
    app.get("/async", [](Request&) -> Task<Response> {
        co_await vela::sleep(1ms);
        co_return "later";
    });
    vela::metrics(app);
    start_app(app, 2);
    const std::uint16_t port = app.port();

    constexpr int kN = 60;
    std::uint64_t sent = 0;
    std::set<std::string> loops;
    for (int i = 0; i < kN; ++i) {  // one connection each: SO_REUSEPORT spreads them
        Client c = Client::tcp(port);
        const std::string req = get_request("/items/" + std::to_string(i));
        sent += req.size();
        c.send(req);
        auto r = c.read_response();
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200);
        loops.insert(r->body);
    }
    EXPECT_EQ(loops.size(), 2u) << "SO_REUSEPORT gave every connection to one loop";
    {
        Client c = Client::tcp(port);  // keep-alive: several on one connection
        for (int i = 0; i < 5; ++i) {
            c.send(request_with_body("POST", "/items", "{}"));
            ASSERT_EQ(c.read_response()->status, 201);
            c.send(get_request("/async"));
            ASSERT_EQ(c.read_response()->status, 200);
        }
        c.send(get_request("/nope"));
        ASSERT_EQ(c.read_response()->status, 404);
        c.send(get_request("/items/abc"));  // the typed parameter does not match: 404
        ASSERT_EQ(c.read_response()->status, 404);
        c.send(request_with_body("PUT", "/items", "{}"));
        ASSERT_EQ(c.read_response()->status, 405);
        c.send("BREW /items HTTP/1.1\r\nHost: a\r\n\r\n");  // a method vela does not route
        ASSERT_EQ(c.read_response()->status, 501);
    }

    // The clients have closed their connections, but each loop sees its FINs in its own time:
    // scrape until the scrape's own connection is the one HTTP/1.1 connection still open.
    const Scrape s =
        scrape_until(port, [](const Scrape& x) { return x.at(conn_key("http1", false)) == 1; });
    EXPECT_EQ(s.at(requests_key("/items/{id:int}", "GET", 200)), kN) << s.text;
    EXPECT_EQ(s.at(requests_key("/items", "POST", 201)), 5) << s.text;
    EXPECT_EQ(s.at(requests_key("/async", "GET", 200)), 5) << s.text;
    EXPECT_EQ(s.at(requests_key("unmatched", "GET", 404)), 2) << s.text;
    EXPECT_EQ(s.at(requests_key("unmatched", "PUT", 405)), 1) << s.text;
    EXPECT_EQ(s.at(requests_key("unmatched", "other", 501)), 1) << s.text;
    EXPECT_EQ(s.type_of("vela_http_requests"), "counter");  // (the parser drops _total)
    EXPECT_EQ(s.type_of("vela_http_request_duration_seconds"), "histogram");
    EXPECT_EQ(s.type_of("vela_open_connections"), "gauge");

    // The histogram: cumulative buckets, +Inf = count = requests; the async route waited >= 1
    // ms, so none of its requests is in the 0.5 ms bucket.
    const std::string items = "route=\"/items/{id:int}\"";
    EXPECT_EQ(s.at("vela_http_request_duration_seconds_count{" + items + "}"), kN);
    EXPECT_EQ(s.at("vela_http_request_duration_seconds_bucket{le=\"+Inf\"," + items + "}"), kN);
    double prev = 0;
    for (double b : kLatencyBuckets) {
        const std::string key = "vela_http_request_duration_seconds_bucket{le=\"" +
                                fmt::format("{}", b) + "\"," + items + "}";
        ASSERT_TRUE(s.has(key)) << key << "\n" << s.text;
        EXPECT_GE(s.at(key), prev);
        prev = s.at(key);
    }
    EXPECT_EQ(s.at("vela_http_request_duration_seconds_bucket{le=\"0.0005\",route=\"/async\"}"), 0);
    EXPECT_GE(s.at("vela_http_request_duration_seconds_sum{route=\"/async\"}"), 0.005);
    EXPECT_EQ(s.at("vela_http_request_duration_seconds_count{route=\"/async\"}"), 5);

    // Both loops report their lag; bytes in cover at least what the GETs sent.
    EXPECT_TRUE(s.has("vela_loop_lag_seconds{loop=\"0\"}")) << s.text;
    EXPECT_TRUE(s.has("vela_loop_lag_seconds{loop=\"1\"}")) << s.text;
    EXPECT_TRUE(s.has("vela_loop_lag_max_seconds{loop=\"1\"}")) << s.text;
    EXPECT_GE(s.at("vela_http_received_bytes_total"), static_cast<double>(sent));
    EXPECT_GT(s.at("vela_http_sent_bytes_total"), 60.0 * kN);
    // The scrape's own connection is the one HTTP/1.1 connection open (the others closed).
    EXPECT_EQ(s.at(conn_key("http1", false)), 1) << s.text;
    EXPECT_EQ(s.at(conn_key("h2", false)), 0);
    app.stop();
    app.wait();
}

TEST(MetricsE2E, Http2CountsAndConnectionGauge) {
    VELA_NEED_PROM_PARSER();
    if (!have_curl_h2()) {
        if (in_ci()) FAIL() << "curl without HTTP/2";
        GTEST_SKIP() << "*** curl without HTTP/2: SKIPPED ***";
    }
    App app;
    app.get("/hello", [] { return "hello"; });
    vela::metrics(app);
    start_app(app, 2);
    const std::string base = "http://127.0.0.1:" + std::to_string(app.port());
    // Three requests over h2 (one connection each: curl 7.88 sends nothing for a second URL
    // on a reused prior-knowledge connection), then the scrape on another h2 connection: it
    // sees itself open.
    for (int i = 0; i < 3; ++i) {
        const Ran r = run_command(
            "curl -s --http2-prior-knowledge -o /dev/null -w '%{http_version} "
            "%{http_code}' " +
            base + "/hello");
        EXPECT_EQ(r.out, "2 200");
    }
    const Ran m = run_command("curl -s --http2-prior-knowledge " + base + "/metrics");
    const Scrape s = parse(m.out);
    EXPECT_EQ(s.at(requests_key("/hello", "GET", 200)), 3) << s.text;
    EXPECT_EQ(s.at(conn_key("h2", false)), 1) << s.text;
    EXPECT_EQ(s.at(conn_key("http1", false)), 0) << s.text;
    // And over HTTP/1.1 afterwards: the h2 connections are gone.
    const Scrape after =
        scrape_until(app.port(), [](const Scrape& x) { return x.at(conn_key("h2", false)) == 0; });
    EXPECT_EQ(after.at(conn_key("h2", false)), 0) << after.text;
    EXPECT_EQ(after.at(requests_key("/metrics", "GET", 200)), 1) << after.text;
    app.stop();
    app.wait();
}

TEST(MetricsE2E, WebSocketAndSseGauges) {
    VELA_NEED_PROM_PARSER();
    App app;
    app.ws("/ws", [](WebSocket& ws, Request&) -> Task<void> {
        for (;;) {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) co_return;
        }
    });
    app.get("/events", [](const Request& req) {
        return sse(req, [](SseStream& s) -> Task<void> {
            while (co_await s.send({.data = "tick"})) co_await vela::sleep(20ms);
        });
    });
    vela::metrics(app);
    start_app(app, 1);
    const std::uint16_t port = app.port();

    Client ws = Client::tcp(port);
    ws.send(
        "GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
    auto up = ws.read_response(true);
    ASSERT_TRUE(up);
    ASSERT_EQ(up->status, 101);

    Client ev = Client::tcp(port);
    ev.send(get_request("/events"));
    ASSERT_TRUE(ev.readable_within(2000ms));

    Scrape s = scrape_until(port, [](const Scrape& x) {
        return x.at("vela_sse_streams") == 1 && x.at("vela_websocket_connections") == 1;
    });
    EXPECT_EQ(s.at("vela_websocket_connections"), 1) << s.text;
    EXPECT_EQ(s.at(conn_key("ws", false)), 1) << s.text;
    EXPECT_EQ(s.at("vela_sse_streams"), 1) << s.text;
    // The SSE connection and the scrape's are HTTP/1.1; the upgraded one is not any more.
    EXPECT_EQ(s.at(conn_key("http1", false)), 2) << s.text;
    EXPECT_EQ(s.at(requests_key("/ws", "GET", 101)), 1) << s.text;

    ws.close();
    ev.close();
    s = scrape_until(port, [](const Scrape& x) {
        return x.at("vela_sse_streams") == 0 && x.at("vela_websocket_connections") == 0;
    });
    EXPECT_EQ(s.at("vela_websocket_connections"), 0) << s.text;
    EXPECT_EQ(s.at("vela_sse_streams"), 0) << s.text;
    EXPECT_EQ(s.at(conn_key("http1", false)), 1) << s.text;
    app.stop();
    app.wait();
}

TEST(MetricsE2E, LoopLagShowsABusyLoop) {
    VELA_NEED_PROM_PARSER();
    App app;
    app.get("/busy", [] {
        busy_wait(200ms);
        return "done";
    });
    MetricsOptions o;
    o.lag_interval = 10ms;
    vela::metrics(app, std::move(o));
    start_app(app, 1);
    std::this_thread::sleep_for(50ms);
    Scrape s = scrape(app.port());
    EXPECT_LT(s.at("vela_loop_lag_max_seconds{loop=\"0\"}"), 0.15) << s.text;  // idle so far
    Client c = Client::tcp(app.port());
    c.send(get_request("/busy"));
    ASSERT_EQ(c.read_response()->status, 200);
    s = scrape_until(app.port(), [](const Scrape& x) {
        return x.at("vela_loop_lag_max_seconds{loop=\"0\"}") >= 0.15;
    });
    EXPECT_GE(s.at("vela_loop_lag_max_seconds{loop=\"0\"}"), 0.15) << s.text;
    EXPECT_GE(s.at("vela_loop_lag_seconds{loop=\"0\"}"), 0) << s.text;
    EXPECT_EQ(s.at("vela_http_request_duration_seconds_bucket{le=\"0.1\",route=\"/busy\"}"), 0);
    EXPECT_EQ(s.at("vela_http_request_duration_seconds_bucket{le=\"0.25\",route=\"/busy\"}"), 1);
    app.stop();
    app.wait();
}

TEST(MetricsE2E, MetricsPathCanMoveAndLabelsAreEscaped) {
    VELA_NEED_PROM_PARSER();
    App app;
    app.get("/q\"uote/{name}", [](Request& r) { return std::string(r.param("name")); });
    MetricsOptions o;
    o.path = "/internal/metrics";
    vela::metrics(app, std::move(o));
    start_app(app, 1);
    Client c = Client::tcp(app.port());
    c.send(get_request("/q%22uote/x"));
    ASSERT_EQ(c.read_response()->status, 200);
    c.send(get_request("/metrics"));
    ASSERT_EQ(c.read_response()->status, 404);
    c.send(get_request("/internal/metrics"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_NE(r->body.find("route=\"/q\\\"uote/{name}\""), std::string::npos) << r->body;
    const Scrape s = parse(r->body);
    EXPECT_EQ(s.at(requests_key("/q\"uote/{name}", "GET", 200)), 1) << s.text;
    EXPECT_EQ(s.at(requests_key("unmatched", "GET", 404)), 1) << s.text;
    app.stop();
    app.wait();
}

TEST(StallWatchdogE2E, BusyHandlerIsLoggedOnceWithItsRoute) {
    std::string log;
    {
        test::LogCapture capture;
        App app;
        app.get("/spin/{n:int}", [] {
            busy_wait(400ms);
            return "done";
        });
        app.get("/quick", [] { return "ok"; });
        vela::stall_watchdog(app, {.threshold = 100ms});
        vela::metrics(app);
        start_app(app, 1);
        Client c = Client::tcp(app.port());
        c.send(get_request("/quick"));
        ASSERT_EQ(c.read_response()->status, 200);
        c.send(get_request("/spin/7"));
        ASSERT_EQ(c.read_response()->status, 200);
        c.send(get_request("/quick"));
        ASSERT_EQ(c.read_response()->status, 200);
        std::this_thread::sleep_for(150ms);  // the watchdog looks again: nothing new
        c.send(get_request("/metrics"));
        auto m = c.read_response();
        ASSERT_TRUE(m);
        EXPECT_NE(m->body.find("\nvela_stalls_total 1\n"), std::string::npos) << m->body;
        app.stop();
        app.wait();
        log = capture.text();
    }
    const auto first = log.find("stall: GET /spin/{n:int} has held loop 0 for ");
    ASSERT_NE(first, std::string::npos) << log;
    EXPECT_EQ(log.find("stall:", first + 1), std::string::npos) << "logged twice:\n" << log;
    EXPECT_EQ(log.find("/quick"), std::string::npos) << log;
    // The time held when it was seen: past the threshold, not past the whole wait.
    const auto ms_at =
        first + std::string_view("stall: GET /spin/{n:int} has held loop 0 for ").size();
    const int ms = std::stoi(log.substr(ms_at));
    EXPECT_GE(ms, 100) << log;
    EXPECT_LE(ms, 400) << log;
}

TEST(StallWatchdogE2E, OffLogsNothingAndServesNoStallCount) {
    std::string log;
    {
        test::LogCapture capture;
        App app;
        app.get("/spin", [] {
            busy_wait(150ms);
            return "done";
        });
        vela::metrics(app);
        start_app(app, 1);
        Client c = Client::tcp(app.port());
        c.send(get_request("/spin"));
        ASSERT_EQ(c.read_response()->status, 200);
        c.send(get_request("/metrics"));
        auto m = c.read_response();
        ASSERT_TRUE(m);
        EXPECT_EQ(m->body.find("vela_stalls_total"), std::string::npos);
        app.stop();
        app.wait();
        log = capture.text();
    }
    EXPECT_EQ(log.find("stall:"), std::string::npos) << log;
}

}  // namespace
}  // namespace vela::e2e
