// HTTP/2 end to end: real clients (curl, nghttp, and tests/e2e/h2/probe.py writing raw frames)
// against an App started in-process, over loopback. The same routes as HTTP/1.1 over h2c by
// prior knowledge and by Upgrade; the limits (413, 431, REFUSED_STREAM, flow control); the
// defences against floods and malformed frames, each followed by a check that the server
// still serves new connections; and a graceful stop with a stream in flight.
//
// The clients run as child processes under `timeout`, so a server that never answers fails
// a test instead of hanging it. probe.py prints "key=value" lines; the assertions are here.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "client.hpp"
#include "process.hpp"
#include "sound.hpp"
#include "support/curl.hpp"
#include "tls/certs.hpp"
#include "vela/vela.hpp"

#ifndef VELA_SOURCE_DIR
#error "tests/CMakeLists.txt defines VELA_SOURCE_DIR for every test binary"
#endif

namespace http2_e2e {

struct Item {
    std::string name;
    int version = 0;
};
VELA_REFLECT(Item, name, version)

}  // namespace http2_e2e

namespace vela::e2e {
namespace {

using http2_e2e::Item;

// RFC 9113 7: error codes.
constexpr int kNoError = 0;
constexpr int kProtocolError = 1;
constexpr int kInternalError = 2;
constexpr int kFlowControlError = 3;
constexpr int kStreamClosed = 5;
constexpr int kFrameSizeError = 6;
constexpr int kCancel = 8;
constexpr int kEnhanceYourCalm = 11;

constexpr std::size_t kStreamBig = 4 * 1024 * 1024;
constexpr std::size_t kDirectBig = 5 * 1024 * 1024;
constexpr std::size_t kUpload = 8 * 1024 * 1024;

const std::string kProbe = std::string(VELA_SOURCE_DIR) + "/tests/e2e/h2/probe.py";

// Byte i of every large body: not periodic in any power of two, so a lost or repeated
// frame shows.
char pattern(std::size_t i) { return static_cast<char>('a' + (i % 251) % 26); }

std::string pattern_string(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = pattern(i);
    return s;
}

std::uint64_t fnv1a(std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

// The Debian python3 carries python3-hpack/python3-h2; a python3 earlier on PATH (pyenv) may not.
std::string python() {
    static const std::string py =
        ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    return py;
}
bool have_probe() { return succeeds(python() + " -c 'import hpack'"); }
bool have_nghttp() { return have("nghttp"); }

using KV = std::map<std::string, std::string>;

// probe.py's "key=value" lines.
KV parse_kv(const std::string& out) {
    KV kv;
    std::size_t pos = 0;
    while (pos < out.size()) {
        std::size_t eol = out.find('\n', pos);
        if (eol == std::string::npos) eol = out.size();
        const std::string line = out.substr(pos, eol - pos);
        pos = eol + 1;
        const std::size_t eq = line.find('=');
        if (eq != std::string::npos) kv.emplace(line.substr(0, eq), line.substr(eq + 1));
    }
    return kv;
}

struct Probe {
    KV kv;
    std::string out;
    std::string get(const std::string& k) const {
        auto it = kv.find(k);
        return it == kv.end() ? "missing" : it->second;
    }
};

Probe probe(std::uint16_t port, const std::string& args, int seconds = 20) {
    Ran r = run_command("timeout " + std::to_string(seconds) + " " + python() + " " + kProbe + " " +
                        std::to_string(port) + " " + args + " 2>&1");
    // VELA_H2_TRACE=1 shows what each probe saw, for a test that passes as well.
    if (std::getenv("VELA_H2_TRACE"))
        std::fprintf(stderr, "probe %s:\n%s", args.c_str(), r.out.c_str());
    return Probe{parse_kv(r.out), r.out};
}

// probe.py "rules": the answers of each case, its lines being "case.key=value".
struct Rules {
    Probe p;
    std::string get(const std::string& name, const std::string& key) const {
        return p.get(name + "." + key);
    }
};

// ---- curl ----------------------------------------------------------------------------------

using Reply = test::CurlReply;

// The two ways to reach HTTP/2 on a plain port.
const std::vector<std::string> kModes = {"--http2-prior-knowledge", "--http2"};

Reply curl(std::uint16_t port, const std::string& mode, const std::string& args,
           const std::string& path) {
    Ran r = run_command("timeout 20 curl -s -i " + mode + " " + args +
                        " 'http://127.0.0.1:" + std::to_string(port) + path + "'");
    return test::parse_curl_i(r.out);
}

long rss_kb() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    return 0;
}

class Http2E2e : public ::testing::Test {
  protected:
    // Registers the routes, applies `tweak` to the options and starts the app.
    void start(const std::function<void(ServerOptions&)>& tweak = {}) {
        quick_options(app.options());
        if (tweak) tweak(app.options());
        add_basic_routes(app);
        app.get("/item", [] { return Item{"vela", 2}; });
        app.post("/item", [](Json<Item> it) {
            it->version += 1;
            return *it;
        });
        app.get("/async", [](Request&) -> Task<Response> {
            co_await vela::sleep(20ms);
            co_return "async done";
        });
        app.get("/slow/{ms}", [](Request& r) -> Task<Response> {
            const int ms = std::atoi(std::string(r.param("ms")).c_str());
            co_await vela::sleep(std::chrono::milliseconds(ms));
            co_return "slept";
        });
        auto mw = app.group("/mw");
        mw.use([](Request&, Next next) -> Task<Response> {
            Response res = co_await next();
            res.add_header("X-Mw", "onion");
            co_return res;
        });
        mw.get("/x", [] { return "through middleware"; });
        app.get("/many-headers", [] {
            // Past the Response's inline field index and inline header bytes, names in mixed
            // case, and HTTP/1.1 connection-specific fields HTTP/2 must not carry (RFC 9113
            // 8.2.2): nghttp2 in curl refuses a response with either.
            Response r("many");
            for (int i = 0; i < 20; ++i)
                r.add_header("X-Field-" + std::to_string(i), "value " + std::to_string(i));
            r.add_header("Keep-Alive", "timeout=5");
            r.add_header("Proxy-Connection", "keep-alive");
            r.add_header("Upgrade", "websocket");
            r.add_header("x-last", "lower");
            r.set_content_type("text/x-many");
            return r;
        });
        app.get("/throw", []() -> std::string { throw std::runtime_error("boom"); });
        app.get("/version", [](Request& r) { return std::to_string(r.version()); });
        app.get("/cookies", [](Request& r) { return std::string(r.header("cookie")); });
        app.get("/count", [this] {
            invocations.fetch_add(1);
            return "counted";
        });
        app.get("/stream-big", [] {
            Response r = Response::with_body(Status::OK, {}, mime::octet_stream);
            auto off = std::make_shared<std::size_t>(0);
            r.set_body_source([off]() -> std::optional<std::string> {
                if (*off >= kStreamBig) return std::nullopt;
                std::string piece(std::min<std::size_t>(64 * 1024, kStreamBig - *off), '\0');
                for (char& c : piece) c = pattern((*off)++);
                return piece;
            });
            return r;
        });
        app.get("/stream-fails", [] {
            Response r;
            auto n = std::make_shared<int>(0);
            r.set_body_source([n]() -> std::optional<std::string> {
                if ((*n)++ < 2) return std::string(1000, 'x');
                throw std::runtime_error("source failed");
            });
            return r;
        });
        app.get("/big-direct", [] {
            return Response::with_body(Status::OK, pattern_string(kDirectBig), mime::octet_stream);
        });
        app.get("/medium", [] {
            return Response::with_body(Status::OK, pattern_string(300 * 1000), mime::octet_stream);
        });
        app.post("/upload", [](Request& r) {
            return std::to_string(r.body().size()) + ":" + std::to_string(fnv1a(r.body()));
        });
        start_app_with_tls(app, with_tls);
        port = app.port();
        if (with_tls) tls_port = app.port(1);
    }

    // probe.py over h2c, or over TLS (h2 by ALPN) when `tls`; start() after with_tls = true.
    Probe probe_over(bool tls, const std::string& args) {
        return tls ? probe(tls_port, args + " --tls=" + test::test_certs().ca) : probe(port, args);
    }

    // Runs the cases named (with their expected code, unused here) of probe.py "rules".
    Rules run_rules(bool tls, const std::vector<std::pair<const char*, int>>& cases) {
        std::string args = "rules";
        for (const auto& c : cases) args += std::string(" ") + c.first;
        return Rules{probe_over(tls, args)};
    }

    // A fresh connection over HTTP/1.1 and another over h2c both get 200.
    void expect_sound() {
        expect_server_sound(app);
        if (have_probe()) {
            for (bool tls : {false, true}) {
                if (tls && !with_tls) break;
                Probe p = probe_over(tls, "request GET /hello");
                EXPECT_EQ(p.get("status"), "200") << p.out;
                EXPECT_EQ(p.get("body"), "Hello, World!") << p.out;
            }
        }
    }

    App app;
    std::uint16_t port = 0;
    bool with_tls = false;  // a TLS port beside the plain one (tls_port)
    std::uint16_t tls_port = 0;
    std::atomic<int> invocations{0};
};

#define REQUIRE_CURL() \
    if (!have_curl_h2()) GTEST_SKIP() << "curl with HTTP/2 support not installed"
#define REQUIRE_NGHTTP() \
    if (!have_nghttp()) GTEST_SKIP() << "nghttp (nghttp2-client) not installed"
#define REQUIRE_PROBE() \
    if (!have_probe())  \
    GTEST_SKIP() << "python3 with python3-hpack (a python3-h2 dependency) not installed"

// ---- 1. The same routes as HTTP/1.1 ----------------------------------------------------------

TEST_F(Http2E2e, PlainTextRouteOverPriorKnowledgeAndUpgrade) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) {
        Reply r = curl(port, mode, "", "/hello");
        EXPECT_EQ(r.version, "HTTP/2") << mode << "\n" << r.raw;
        EXPECT_EQ(r.status, 200) << mode;
        EXPECT_EQ(r.body, "Hello, World!") << mode;
        EXPECT_EQ(r.upgraded, mode == "--http2") << mode;
    }
}

TEST_F(Http2E2e, PathParameterRoute) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) {
        Reply r = curl(port, mode, "", "/users/42");
        EXPECT_EQ(r.version, "HTTP/2") << mode;
        EXPECT_EQ(r.status, 200) << mode;
        EXPECT_EQ(r.body, "42") << mode;
    }
}

TEST_F(Http2E2e, JsonRouteReturnsReflectedStruct) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) {
        Reply r = curl(port, mode, "", "/item");
        EXPECT_EQ(r.status, 200) << mode;
        EXPECT_EQ(r.headers["content-type"], "application/json") << mode;
        EXPECT_EQ(r.body, R"({"name":"vela","version":2})") << mode;
    }
}

TEST_F(Http2E2e, PostJsonBodyIsParsedAndBadJsonIs400Problem) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) {
        Reply ok =
            curl(port, mode, R"(-H 'content-type: application/json' -d '{"name":"x","version":6}')",
                 "/item");
        EXPECT_EQ(ok.version, "HTTP/2") << mode << "\n" << ok.raw;
        EXPECT_EQ(ok.status, 200) << mode;
        EXPECT_EQ(ok.body, R"({"name":"x","version":7})") << mode;
        Reply bad =
            curl(port, mode, R"(-H 'content-type: application/json' -d '{"name":')", "/item");
        EXPECT_EQ(bad.status, 400) << mode << "\n" << bad.raw;
        EXPECT_EQ(bad.headers["content-type"], "application/problem+json") << mode;
    }
}

TEST_F(Http2E2e, AsyncRouteCompletes) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) {
        Reply r = curl(port, mode, "", "/async");
        EXPECT_EQ(r.status, 200) << mode;
        EXPECT_EQ(r.body, "async done") << mode;
    }
}

TEST_F(Http2E2e, MiddlewareHeaderArrives) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) {
        Reply r = curl(port, mode, "", "/mw/x");
        EXPECT_EQ(r.status, 200) << mode;
        EXPECT_EQ(r.headers["x-mw"], "onion") << mode;
        EXPECT_EQ(r.body, "through middleware") << mode;
    }
}

TEST_F(Http2E2e, ManyMixedCaseHeadersArriveLoweredWithoutConnectionFields) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) {
        Reply r = curl(port, mode, "", "/many-headers");
        ASSERT_EQ(r.status, 200) << mode << "\n" << r.raw;
        EXPECT_EQ(r.body, "many") << mode;
        for (int i = 0; i < 20; ++i)
            EXPECT_EQ(r.headers["x-field-" + std::to_string(i)], "value " + std::to_string(i))
                << mode;
        EXPECT_EQ(r.headers["x-last"], "lower") << mode;
        EXPECT_EQ(r.headers["content-type"], "text/x-many") << mode;
        EXPECT_FALSE(r.has("keep-alive")) << mode;
        EXPECT_FALSE(r.has("proxy-connection")) << mode;
        EXPECT_FALSE(r.has("upgrade")) << mode;
        EXPECT_EQ(r.raw.find("X-Field-"), std::string::npos) << mode << "\n" << r.raw;
        EXPECT_NE(r.raw.find("x-field-19: value 19"), std::string::npos) << mode << "\n" << r.raw;
    }
}

TEST_F(Http2E2e, NotFoundAndMethodNotAllowed) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) {
        EXPECT_EQ(curl(port, mode, "", "/nowhere").status, 404) << mode;
        Reply r = curl(port, mode, "-X DELETE", "/hello");
        EXPECT_EQ(r.status, 405) << mode;
        EXPECT_NE(r.headers["allow"].find("GET"), std::string::npos) << mode << "\n" << r.raw;
    }
}

TEST_F(Http2E2e, HeadHasContentLengthAndNoBody) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) {
        Reply r = curl(port, mode, "-I", "/hello");
        EXPECT_EQ(r.status, 200) << mode;
        EXPECT_EQ(r.headers["content-length"], "13") << mode << "\n" << r.raw;
        EXPECT_EQ(r.body, "") << mode;
    }
}

TEST_F(Http2E2e, ThrowingHandlerGives500) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) {
        Reply r = curl(port, mode, "", "/throw");
        EXPECT_EQ(r.status, 500) << mode;
        EXPECT_EQ(r.body.find("boom"), std::string::npos) << "debug_errors is off";
    }
    expect_sound();
}

// Headers are gone when a streamed body fails: the stream ends with RST_STREAM
// INTERNAL_ERROR (the client must not take the truncated body as complete) and the
// connection goes on.
TEST_F(Http2E2e, StreamedBodyThatFailsAfterHeadersIsResetInternalError) {
    REQUIRE_PROBE();
    start();
    Probe p = probe(port, "request GET /stream-fails");
    EXPECT_EQ(p.get("status"), "200") << p.out;
    EXPECT_EQ(p.get("rst"), std::to_string(kInternalError)) << p.out;
    expect_sound();
}

TEST_F(Http2E2e, HandlerSeesVersion20) {
    REQUIRE_CURL();
    start();
    for (const auto& mode : kModes) EXPECT_EQ(curl(port, mode, "", "/version").body, "20") << mode;
}

// RFC 9113 8.2.3: a client may split Cookie into several fields; the server joins them
// with "; " before handing them on as one.
TEST_F(Http2E2e, CookieFieldsArriveJoinedWithSemicolon) {
    REQUIRE_PROBE();
    start();
    Probe p = probe(port, "request GET /cookies cookie=a=1 cookie=b=2 cookie=c=3");
    EXPECT_EQ(p.get("status"), "200") << p.out;
    EXPECT_EQ(p.get("body"), "a=1; b=2; c=3") << p.out;
}

// Prior knowledge with curl. Over Upgrade with nghttp -u: curl 7.88 cannot take more than
// 32 KB of HTTP/2 frames in the read that carries the 101 ("connection buffer size is too
// small to store data following HTTP Upgrade response header"), and the server rightly
// sends a full initial window of DATA right after it.
TEST_F(Http2E2e, StreamedBodyOfSeveralMegabytesArrivesIntact) {
    REQUIRE_CURL();
    REQUIRE_NGHTTP();
    start();
    const std::string expected = pattern_string(kStreamBig);
    Reply r = curl(port, "--http2-prior-knowledge", "", "/stream-big");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body.size(), kStreamBig);
    EXPECT_TRUE(r.body == expected);
    Ran u = run_command("timeout 20 nghttp -u http://127.0.0.1:" + std::to_string(port) +
                        "/stream-big 2>/dev/null");
    EXPECT_EQ(u.status, 0);
    EXPECT_EQ(u.out.size(), kStreamBig);
    EXPECT_TRUE(u.out == expected);
}

TEST_F(Http2E2e, LargeDirectBodyArrivesIntactWithNghttp) {
    REQUIRE_NGHTTP();
    start();
    Ran r = run_command("timeout 20 nghttp http://127.0.0.1:" + std::to_string(port) +
                        "/big-direct 2>/dev/null");
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out.size(), kDirectBig);
    EXPECT_EQ(fnv1a(r.out), fnv1a(pattern_string(kDirectBig)));
}

TEST_F(Http2E2e, LargeUploadReachesHandlerIntact) {
    REQUIRE_NGHTTP();
    start();
    const std::string body = pattern_string(kUpload);
    const std::string file = ::testing::TempDir() + "/vela_h2_upload.bin";
    {
        std::ofstream f(file, std::ios::binary);
        f.write(body.data(), static_cast<std::streamsize>(body.size()));
    }
    Ran r = run_command("timeout 20 nghttp -d " + file +
                        " http://127.0.0.1:" + std::to_string(port) + "/upload 2>/dev/null");
    std::remove(file.c_str());
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, std::to_string(kUpload) + ":" + std::to_string(fnv1a(body)));
}

TEST_F(Http2E2e, HundredMultiplexedRequestsOnOneConnectionAllSucceed) {
    REQUIRE_NGHTTP();
    start();
    Ran r = run_command("timeout 20 nghttp -n -v -m 100 http://127.0.0.1:" + std::to_string(port) +
                        "/async 2>&1");
    EXPECT_EQ(r.status, 0);
    std::size_t ok = 0, streams = 0;
    for (std::size_t pos = 0; (pos = r.out.find(":status: 200", pos)) != std::string::npos; ++pos)
        ++ok;
    for (std::size_t pos = 0; (pos = r.out.find("send HEADERS frame", pos)) != std::string::npos;
         ++pos)
        ++streams;
    EXPECT_EQ(ok, 100u) << r.out.substr(0, 2000);
    EXPECT_EQ(streams, 100u);
}

// ---- 2. Limits -------------------------------------------------------------------------------

TEST_F(Http2E2e, BodyAboveMaxBodyGets413AndConnectionStaysUsable) {
    REQUIRE_PROBE();
    start([](ServerOptions& o) { o.limits.max_body = 64 * 1024; });
    Probe p = probe(port, "maxbody 200000");
    EXPECT_EQ(p.get("status"), "413") << p.out;
    // RFC 9113 8.1: a complete response before the request ended: RST_STREAM NO_ERROR.
    EXPECT_EQ(p.get("rst"), std::to_string(kNoError)) << p.out;
    EXPECT_EQ(p.get("second_status"), "200") << p.out;
    expect_sound();
}

TEST_F(Http2E2e, HeaderListAboveMaxHeaderListSizeGets431) {
    REQUIRE_PROBE();
    start([](ServerOptions& o) { o.http2.max_header_list_size = 8 * 1024; });
    Probe p = probe(port, "headerlist 20 1000");  // ~21 KB decoded
    EXPECT_EQ(p.get("status"), "431") << p.out;
    EXPECT_EQ(p.get("second_status"), "200") << p.out;
    expect_sound();
}

// A client that exceeds max_concurrent_streams after acknowledging our SETTINGS breaks a
// limit it was told: RFC 9113 5.1.2 makes that a stream error (PROTOCOL_ERROR or
// REFUSED_STREAM) and 5.4.1 lets the server treat it as a connection error, which is what
// nghttp2 does (documented in Http2Options::max_concurrent_streams). Pinned: GOAWAY
// PROTOCOL_ERROR naming the limit, and no handler runs for the streams over it.
TEST_F(Http2E2e, StreamsAboveAcknowledgedLimitEndTheConnection) {
    REQUIRE_PROBE();
    start([](ServerOptions& o) { o.http2.max_concurrent_streams = 4; });
    Probe p = probe(port, "concurrency 10 /slow/300");
    EXPECT_EQ(p.get("max_concurrent"), "4") << p.out;
    EXPECT_EQ(p.get("goaway"), std::to_string(kProtocolError)) << p.out;
    EXPECT_NE(p.get("goaway_debug").find("max concurrent streams"), std::string::npos) << p.out;
    const int last = std::atoi(p.get("goaway_last").c_str());
    EXPECT_LE(last, 7) << p.out;  // streams 9..19 were never processed
    expect_sound();
}

// Streams opened before the client has acknowledged our SETTINGS: nghttp2 refuses the excess
// over the pending limit with REFUSED_STREAM and serves the rest.
TEST_F(Http2E2e, StreamsAboveLimitBeforeSettingsAckAreRefused) {
    REQUIRE_PROBE();
    start([](ServerOptions& o) { o.http2.max_concurrent_streams = 4; });
    Probe p = probe(port, "concurrency-early 10 /slow/300");
    EXPECT_EQ(p.get("ok"), "4") << p.out;
    EXPECT_EQ(p.get("refused"), "6") << p.out;
    EXPECT_EQ(p.get("unfinished"), "0") << p.out;
    EXPECT_EQ(p.get("goaway"), "none") << p.out;
    expect_sound();
}

TEST_F(Http2E2e, SmallClientWindowStillReceivesWholeResponse) {
    REQUIRE_PROBE();
    start();
    const std::string expected = pattern_string(300 * 1000);
    Probe p = probe(port, "flow 1000 /medium");
    EXPECT_EQ(p.get("status"), "200") << p.out;
    EXPECT_EQ(p.get("body_len"), "300000") << p.out;
    // No frame larger than the window: at least 300 DATA frames, each answered.
    EXPECT_GE(std::stoi(p.get("data_frames") == "missing" ? "0" : p.get("data_frames")), 300)
        << p.out;
    EXPECT_EQ(p.get("rst"), "none") << p.out;
}

// ---- 3. Defences -----------------------------------------------------------------------------

// CVE-2023-44487: HEADERS + RST_STREAM pairs cost the client nothing; the server must not
// run a handler for each, and must end the connection once the rate is abusive.
TEST_F(Http2E2e, RapidResetEndsConnectionAndSkipsHandlers) {
    REQUIRE_PROBE();
    start();
    constexpr int kPairs = 5000;
    Probe p = probe(port, "rapidreset " + std::to_string(kPairs));
    const std::string g = p.get("goaway");
    EXPECT_TRUE(g != "none" || p.get("closed") == "1") << p.out;
    if (g != "none") {
        EXPECT_NE(g, std::to_string(kNoError)) << p.out;
    }
    EXPECT_LT(invocations.load(), kPairs / 10) << p.out;
    expect_sound();
}

// CVE-2024-27316 style: a header block that never ends must not grow without bound.
TEST_F(Http2E2e, ContinuationFloodEndsConnectionWithBoundedMemory) {
    REQUIRE_PROBE();
    start();
    const long before = rss_kb();
    Probe p = probe(port, "continuation 5000");  // ~50 MB of header fields if all were read
    EXPECT_TRUE(p.get("goaway") != "none" || p.get("closed") == "1") << p.out;
    EXPECT_LT(rss_kb() - before, 32 * 1024) << "RSS grew (KB)";
    expect_sound();
}

// A 4000-byte field in the dynamic table, then 10000 one-byte references to it: 40 MB of
// decoded fields from 14 KB on the wire.
TEST_F(Http2E2e, HpackBombIsRejectedWithoutHugeAllocation) {
    REQUIRE_PROBE();
    start();
    const long before = rss_kb();
    Probe p = probe(port, "hpackbomb 10000 4000");
    const bool rejected =
        p.get("status") == "431" || p.get("rst") != "none" || p.get("goaway") != "none";
    EXPECT_TRUE(rejected) << p.out;
    EXPECT_NE(p.get("status"), "200") << p.out;
    EXPECT_LT(rss_kb() - before, 32 * 1024) << "RSS grew (KB)";
    expect_sound();
}

TEST_F(Http2E2e, SettingsFloodGetsEnhanceYourCalm) {
    REQUIRE_PROBE();
    start();
    Probe p = probe(port, "settingsflood 30000");
    EXPECT_TRUE(p.get("goaway") == std::to_string(kEnhanceYourCalm) || p.get("closed") == "1")
        << p.out;
    EXPECT_EQ(p.get("closed"), "1") << p.out;
    expect_sound();
}

TEST_F(Http2E2e, PingFloodGetsEnhanceYourCalm) {
    REQUIRE_PROBE();
    start();
    Probe p = probe(port, "pingflood 30000");
    EXPECT_TRUE(p.get("goaway") == std::to_string(kEnhanceYourCalm) || p.get("closed") == "1")
        << p.out;
    EXPECT_EQ(p.get("closed"), "1") << p.out;
    expect_sound();
}

// The GOAWAY of a connection error must reach the client even when more of its input is
// still unread. WINDOW_UPDATE with increment 0 on stream 0 (a connection error, RFC 9113 6.9)
// followed by 20000 PINGs in one burst: the server answers GOAWAY PROTOCOL_ERROR and closes
// with input unread, which the kernel turns into a TCP RST; the GOAWAY must still be the
// last thing the client reads (RFC 9113 5.4.1: GOAWAY first, then close).
TEST_F(Http2E2e, ConnectionErrorGoawayReachesClientWithInputUnread) {
    REQUIRE_PROBE();
    start();
    Probe p = probe(port, "backlog 20000");
    EXPECT_EQ(p.get("goaway"), std::to_string(kProtocolError)) << p.out;
    EXPECT_EQ(p.get("closed"), "1") << p.out;
    expect_sound();
}

// CVE-2019-9518: empty DATA frames without END_STREAM cost the server work and the client
// nothing.
TEST_F(Http2E2e, EmptyDataFloodGetsGoaway) {
    REQUIRE_PROBE();
    start();
    Probe p = probe(port, "emptydata 20000");
    EXPECT_EQ(p.get("goaway"), std::to_string(kEnhanceYourCalm)) << p.out;
    EXPECT_EQ(p.get("closed"), "1") << p.out;
    expect_sound();
}

// RFC 9113 6.9: an increment of 0 on a stream is a stream error PROTOCOL_ERROR; nghttp2
// escalates it to a connection error (GOAWAY PROTOCOL_ERROR), which 5.4.1 allows ("an
// endpoint MAY choose to treat a stream error as a connection error"). Either is accepted;
// the error code must be PROTOCOL_ERROR and other connections must be unaffected.
TEST_F(Http2E2e, WindowUpdateZeroOnStreamIsProtocolError) {
    REQUIRE_PROBE();
    start();
    Probe p = probe(port, "wu0 stream");
    const std::string pe = std::to_string(kProtocolError);
    if (p.get("rst") == pe) {
        EXPECT_EQ(p.get("second_status"), "200") << p.out;  // a stream error spares the rest
    } else {
        EXPECT_EQ(p.get("goaway"), pe) << p.out;
        EXPECT_EQ(p.get("closed"), "1") << p.out;
    }
    expect_sound();
}

TEST_F(Http2E2e, WindowUpdateZeroOnConnectionIsGoawayProtocolError) {
    REQUIRE_PROBE();
    start();
    Probe p = probe(port, "wu0 connection");
    EXPECT_EQ(p.get("goaway"), std::to_string(kProtocolError)) << p.out;
    EXPECT_EQ(p.get("closed"), "1") << p.out;
    expect_sound();
}

TEST_F(Http2E2e, StreamWhoseWindowNeverOpensIsCancelledAfterSendTimeout) {
    REQUIRE_PROBE();
    start([](ServerOptions& o) { o.http2.send_timeout = Ms{1000}; });
    Probe p = probe(port, "stall /medium");
    EXPECT_EQ(p.get("status"), "200") << p.out;  // HEADERS need no window
    EXPECT_EQ(p.get("body_len"), "0") << p.out;
    EXPECT_EQ(p.get("rst"), std::to_string(kCancel)) << p.out;
    const int ms = std::atoi(p.get("elapsed_ms").c_str());
    EXPECT_GE(ms, 900) << p.out;
    EXPECT_LE(ms, 4000) << p.out;
    EXPECT_EQ(p.get("second_status"), "200") << p.out;
    expect_sound();
}

// RFC 9113 8.3 and 8.2.2: malformed requests are stream errors of type PROTOCOL_ERROR.
TEST_F(Http2E2e, MalformedHeaderBlocksAreRstProtocolError) {
    REQUIRE_PROBE();
    start();
    for (const char* kind : {"missing-path", "unknown-pseudo", "uppercase", "pseudo-after-regular",
                             "connection", "te-gzip"}) {
        Probe p = probe(port, std::string("badheaders ") + kind);
        EXPECT_EQ(p.get("rst"), std::to_string(kProtocolError)) << kind << "\n" << p.out;
        EXPECT_EQ(p.get("status"), "none") << kind << "\n" << p.out;
        EXPECT_EQ(p.get("second_status"), "200") << kind << "\n" << p.out;
    }
    EXPECT_EQ(invocations.load(), 0);
    expect_sound();
}

// RFC 9113 5.3.2 deprecates the RFC 7540 priority scheme, yet PRIORITY frames are still
// parsed: they may name idle and closed streams (and HEADERS may carry a priority that
// depends on a closed stream) without harm, while 6.3 makes a PRIORITY frame on stream 0 a
// connection error PROTOCOL_ERROR and one of another length than 5 FRAME_SIZE_ERROR, and 5.3.1
// forbids a stream depending on itself (nghttp2 ends the connection, which 5.4.1 allows).
// They cost the server work without a request, so they also count against
// max_control_frames. (SETTINGS_NO_RFC7540_PRIORITIES = 1 would make nghttp2 1.52 skip all but
// the length check: this test is what keeps them.)
TEST_F(Http2E2e, PriorityFramesAreParsedCheckedAndCounted) {
    REQUIRE_PROBE();
    start();
    Probe valid = probe(port, "priority valid");
    for (const char* k : {"status1", "status3", "status5", "second_status"})
        EXPECT_EQ(valid.get(k), "200") << k << "\n" << valid.out;
    EXPECT_EQ(valid.get("goaway"), "none") << valid.out;

    Probe zero = probe(port, "priority stream0");
    EXPECT_EQ(zero.get("goaway"), std::to_string(kProtocolError)) << zero.out;
    EXPECT_EQ(zero.get("closed"), "1") << zero.out;

    Probe self = probe(port, "priority self");
    const std::string pe = std::to_string(kProtocolError);
    EXPECT_TRUE(self.get("rst") == pe || self.get("goaway") == pe) << self.out;

    Probe badlen = probe(port, "priority badlen");
    const std::string fse = std::to_string(kFrameSizeError);
    EXPECT_TRUE(badlen.get("rst") == fse || badlen.get("goaway") == fse) << badlen.out;

    Probe flood = probe(port, "priority flood 20000");
    EXPECT_EQ(flood.get("goaway"), std::to_string(kEnhanceYourCalm)) << flood.out;
    EXPECT_EQ(flood.get("closed"), "1") << flood.out;
    expect_sound();
}

// RFC 9113 6.9.1: a sender must not exceed the window the receiver advertised. A stream
// window of 1000 and one DATA frame of 9000 bytes: nghttp2 (automatic WINDOW_UPDATE) checks
// each frame against the window, so this is caught at once. (A burst of 16 KB frames
// totalling more than a 64 KB window is not: nghttp2 reopens the window when it queues its
// own WINDOW_UPDATE, before the client can have seen it.)
TEST_F(Http2E2e, DataBeyondStreamWindowIsFlowControlError) {
    REQUIRE_PROBE();
    start([](ServerOptions& o) { o.http2.stream_window = 1000; });
    Probe p = probe(port, "dataoverwindow 8000");
    EXPECT_EQ(p.get("server_window"), "1000") << p.out;
    const bool flow_error = p.get("rst") == std::to_string(kFlowControlError) ||
                            p.get("goaway") == std::to_string(kFlowControlError);
    EXPECT_TRUE(flow_error) << p.out;
    expect_sound();
}

TEST_F(Http2E2e, GarbagePrefaceClosesConnection) {
    REQUIRE_PROBE();
    start();
    Probe bad = probe(port, "preface bad");
    EXPECT_EQ(bad.get("closed"), "1") << bad.out;
    // RFC 9113 3.4: the preface must be followed by SETTINGS; anything else is a
    // connection error PROTOCOL_ERROR.
    Probe nosettings = probe(port, "preface nosettings");
    EXPECT_EQ(nosettings.get("closed"), "1") << nosettings.out;
    EXPECT_EQ(nosettings.get("goaway"), std::to_string(kProtocolError)) << nosettings.out;
    expect_sound();
}

// ---- 4. Graceful shutdown --------------------------------------------------------------------

TEST_F(Http2E2e, GracefulStopSendsGoawayAndFinishesStreamInFlight) {
    REQUIRE_PROBE();
    start();
    const std::string cmd = "timeout 20 " + python() + " " + kProbe + " " + std::to_string(port) +
                            " shutdown /slow/800 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_TRUE(p);
    std::string out;
    char line[4096];
    while (std::fgets(line, sizeof line, p)) {
        out += line;
        if (std::string_view(line).starts_with("sent")) break;
    }
    std::this_thread::sleep_for(200ms);  // the request reaches its handler
    app.stop();
    for (std::size_t n; (n = std::fread(line, 1, sizeof line, p)) > 0;) out.append(line, n);
    ::pclose(p);
    KV kv = parse_kv(out);
    EXPECT_EQ(kv["goaway"], std::to_string(kNoError)) << out;
    EXPECT_GE(std::atoi(kv["goaway_last"].c_str()), 1) << out;
    EXPECT_EQ(kv["status"], "200") << out;
    EXPECT_EQ(kv["body"], "slept") << out;
    EXPECT_EQ(kv["rst"], "none") << out;
    EXPECT_EQ(kv["closed"], "1") << out;
}

// ---- 4. Stream states and frame sizes (RFC 9113 4.2, 5.1, 5.1.1), over h2c and TLS ----------

// Both sides ended stream 1 (request with END_STREAM, response complete): DATA or HEADERS on it
// is a connection error STREAM_CLOSED (5.1, "closed": "any frames after receiving a frame with
// the END_STREAM flag set").
TEST_F(Http2E2e, FrameOnStreamBothSidesEndedIsConnectionErrorStreamClosed) {
    REQUIRE_PROBE();
    with_tls = true;
    start();
    for (bool tls : {false, true}) {
        for (const char* kind : {"ended-data", "ended-headers"}) {
            Probe p = probe_over(tls, std::string("closed ") + kind);
            EXPECT_EQ(p.get("status"), "200") << kind << " tls=" << tls << "\n" << p.out;
            EXPECT_EQ(p.get("goaway"), std::to_string(kStreamClosed)) << kind << "\n" << p.out;
            EXPECT_EQ(p.get("goaway_last"), "1") << kind << "\n" << p.out;
            EXPECT_EQ(p.get("rst"), "none") << kind << "\n" << p.out;
        }
    }
    expect_sound();
}

// The client reset stream 1, then sends DATA or HEADERS on it: a stream error STREAM_CLOSED
// (5.1, "closed": "any frame other than PRIORITY after receiving a RST_STREAM"); the connection
// goes on.
TEST_F(Http2E2e, FrameAfterClientResetIsStreamErrorStreamClosed) {
    REQUIRE_PROBE();
    with_tls = true;
    start();
    for (bool tls : {false, true}) {
        for (const char* kind : {"client-reset-data", "client-reset-headers"}) {
            Probe p = probe_over(tls, std::string("closed ") + kind);
            EXPECT_EQ(p.get("rst"), std::to_string(kStreamClosed)) << kind << " tls=" << tls << "\n"
                                                                   << p.out;
            EXPECT_EQ(p.get("second_status"), "200") << kind << "\n" << p.out;
            EXPECT_EQ(p.get("goaway"), "none") << kind << "\n" << p.out;
        }
    }
    expect_sound();
}

// The server reset stream 1 (413, RST_STREAM NO_ERROR): DATA and trailers the client sent
// before it saw the reset are ignored (5.1, "closed": "MUST ignore frames that it receives on
// closed streams after it has sent a RST_STREAM frame"): no second RST_STREAM, no GOAWAY.
TEST_F(Http2E2e, FramesAfterServerResetAreIgnored) {
    REQUIRE_PROBE();
    with_tls = true;
    start([](ServerOptions& o) { o.limits.max_body = 16 * 1024; });
    for (bool tls : {false, true}) {
        Probe p = probe_over(tls, "closed server-reset");
        EXPECT_EQ(p.get("status"), "413") << "tls=" << tls << "\n" << p.out;
        EXPECT_EQ(p.get("first_rst"), std::to_string(kNoError)) << p.out;
        EXPECT_EQ(p.get("rst"), "none") << p.out;
        EXPECT_EQ(p.get("second_status"), "200") << p.out;
        EXPECT_EQ(p.get("goaway"), "none") << p.out;
    }
    expect_sound();
}

// 5.1.1: after stream 5, a HEADERS frame opening stream 3 is a connection error PROTOCOL_ERROR
// (GOAWAY naming stream 5, the last one processed); DATA on stream 3 (closed implicitly when 5
// opened) is a stream error STREAM_CLOSED (6.1) and the connection goes on.
TEST_F(Http2E2e, LowerStreamIdIsProtocolErrorAndItsDataStreamClosed) {
    REQUIRE_PROBE();
    with_tls = true;
    start();
    for (bool tls : {false, true}) {
        Probe h = probe_over(tls, "lowerid headers");
        EXPECT_EQ(h.get("status5"), "200") << "tls=" << tls << "\n" << h.out;
        EXPECT_EQ(h.get("goaway"), std::to_string(kProtocolError)) << h.out;
        EXPECT_EQ(h.get("goaway_last"), "5") << h.out;
        EXPECT_EQ(h.get("status3"), "none") << h.out;
        Probe d = probe_over(tls, "lowerid data");
        EXPECT_EQ(d.get("rst"), std::to_string(kStreamClosed)) << "tls=" << tls << "\n" << d.out;
        EXPECT_EQ(d.get("second_status"), "200") << d.out;
        EXPECT_EQ(d.get("goaway"), "none") << d.out;
    }
    expect_sound();
}

// 4.2: a field block frame longer than the SETTINGS_MAX_FRAME_SIZE the server advertised
// (16384) is a connection error FRAME_SIZE_ERROR, whichever frame carries it: HEADERS alone,
// the CONTINUATION of a request, of trailers, or of a block nghttp2 skips (trailers on a stream
// the server reset). A CONTINUATION of exactly 16384 bytes is served.
TEST_F(Http2E2e, FieldBlockFrameOverMaxFrameSizeIsFrameSizeError) {
    REQUIRE_PROBE();
    with_tls = true;
    start([](ServerOptions& o) { o.limits.max_body = 16 * 1024; });
    for (bool tls : {false, true}) {
        for (const char* kind : {"headers", "request", "trailers", "ignored"}) {
            Probe p = probe_over(tls, std::string("bigcont ") + kind + " 16385");
            EXPECT_EQ(p.get("max_frame"), "16384") << p.out;
            EXPECT_EQ(p.get("block_len"), "16385") << p.out;
            EXPECT_EQ(p.get("goaway"), std::to_string(kFrameSizeError))
                << kind << " tls=" << tls << "\n"
                << p.out;
            if (std::string(kind) != "ignored") {
                EXPECT_EQ(p.get("status"), "none") << p.out;
            }
        }
        for (const char* kind : {"request", "trailers"}) {
            Probe p = probe_over(tls, std::string("bigcont ") + kind + " 16384");
            EXPECT_EQ(p.get("status"), "200") << kind << " tls=" << tls << "\n" << p.out;
            EXPECT_EQ(p.get("goaway"), "none") << kind << "\n" << p.out;
        }
    }
    expect_sound();
}

// ---- 5. RFC 9113 sections 4-8, rule by rule (probe.py "rules": one connection per case) ------

// Frame-level violations nghttp2 answers with GOAWAY and the exact code (RFC 9113 5.4.1):
// 4.2 frame size, 4.3 HPACK and field block interleaving, 5.1 idle streams and half-closed
// (remote) (a stream error STREAM_CLOSED that nghttp2 escalates, as 5.4.1 allows), 5.1.1 even
// stream ids, 6.x each frame type's stream id and length rules, 6.5.2 setting values, 6.6
// PUSH_PROMISE from a client, 6.9.1 a connection window over 2^31-1, 5.5 an unknown frame inside
// a field block. No request is served and the server goes on.
TEST_F(Http2E2e, FrameRuleViolationsAreConnectionErrorsWithTheirCode) {
    REQUIRE_PROBE();
    start();
    constexpr int kCompressionError = 9;
    const std::vector<std::pair<const char*, int>> cases = {
        {"unknown-in-block", kProtocolError},
        {"data-too-big", kFrameSizeError},
        {"hpack-bad-index", kCompressionError},
        {"hpack-late-size-update", kCompressionError},
        {"hpack-size-update-too-big", kCompressionError},
        {"interleaved-data", kProtocolError},
        {"continuation-other-stream", kProtocolError},
        {"continuation-alone", kProtocolError},
        {"continuation-after-end", kProtocolError},
        {"data-idle", kProtocolError},
        {"rst-idle", kProtocolError},
        {"wu-idle", kProtocolError},
        {"half-closed-data", kStreamClosed},
        {"half-closed-headers", kStreamClosed},
        {"even-id", kProtocolError},
        {"wu-overflow-conn", kFlowControlError},
        {"data-stream0", kProtocolError},
        {"headers-stream0", kProtocolError},
        {"data-bad-padding", kProtocolError},
        {"headers-bad-padding", kProtocolError},
        {"rst-stream0", kProtocolError},
        {"rst-badlen", kFrameSizeError},
        {"settings-on-stream", kProtocolError},
        {"settings-badlen", kFrameSizeError},
        {"settings-ack-payload", kFrameSizeError},
        {"settings-enable-push-2", kProtocolError},
        {"settings-window-too-big", kFlowControlError},
        {"settings-frame-size-small", kProtocolError},
        {"settings-frame-size-big", kProtocolError},
        {"push-promise", kProtocolError},
        {"ping-badlen", kFrameSizeError},
        {"ping-on-stream", kProtocolError},
        {"goaway-on-stream", kProtocolError},
        {"wu-badlen", kFrameSizeError},
    };
    Rules r = run_rules(false, cases);
    for (const auto& [name, code] : cases) {
        EXPECT_EQ(r.get(name, "goaway"), std::to_string(code)) << name << "\n" << r.p.out;
        EXPECT_EQ(r.get(name, "closed"), "1") << name;
        EXPECT_EQ(r.get(name, "status"), "none") << name;
    }
    expect_sound();
}

// Malformed requests (8.1.1: a stream error PROTOCOL_ERROR, the connection goes on): missing,
// duplicate and response pseudo-headers, bad :path for the method, connection-specific fields
// (8.2.2), TE other than "trailers", forbidden characters in names and values (8.2.1), a body
// whose DATA does not add up to content-length (8.1.1), trailers with a pseudo-header or
// without END_STREAM (8.1), CONNECT with :path or without :authority and extended CONNECT
// (8.5, RFC 8441 not offered). A window update over 2^31-1 on a stream is its own stream error
// (6.9.1, FLOW_CONTROL_ERROR). Cases already in MalformedHeaderBlocksAreRstProtocolError are not
// repeated.
TEST_F(Http2E2e, MalformedRequestsAreStreamErrorsAndTheConnectionGoesOn) {
    REQUIRE_PROBE();
    start();
    std::vector<std::pair<const char*, int>> cases;
    for (const char* name : {"missing-method",
                             "missing-scheme",
                             "duplicate-path",
                             "status-in-request",
                             "empty-path",
                             "asterisk-get",
                             "relative-path",
                             "no-authority",
                             "keep-alive",
                             "proxy-connection",
                             "transfer-encoding",
                             "upgrade",
                             "te-trailers-gzip",
                             "value-nul",
                             "value-lf",
                             "value-leading-space",
                             "value-trailing-tab",
                             "name-space",
                             "name-colon",
                             "name-empty",
                             "content-length-short",
                             "content-length-long",
                             "content-length-no-data",
                             "content-length-bad",
                             "content-length-double",
                             "trailers-pseudo",
                             "trailers-no-end-stream",
                             "connect-with-path",
                             "connect-no-authority"})
        cases.push_back({name, kProtocolError});
    cases.push_back({"wu-overflow-stream", kFlowControlError});
    Rules r = run_rules(false, cases);
    for (const auto& [name, code] : cases) {
        EXPECT_EQ(r.get(name, "rst"), std::to_string(code)) << name << "\n" << r.p.out;
        EXPECT_EQ(r.get(name, "status"), "none") << name;
        EXPECT_EQ(r.get(name, "second_status"), "200") << name;
        EXPECT_EQ(r.get(name, "goaway"), "none") << name;
    }
    expect_sound();
}

// What the rules allow is served: unknown frame types and settings are ignored (4.1, 6.5.2),
// WINDOW_UPDATE and RST_STREAM on a stream both sides ended are no error (5.1), "te: trailers"
// (8.2.2), trailers (8.1), OPTIONS "*" (8.3.1), Host alone (8.3.1), CONNECT (8.5: 501, this
// server is no proxy), an extended CONNECT (RFC 8441: routed by its :path), and a client
// GOAWAY lets the stream in flight finish (6.8).
TEST_F(Http2E2e, WhatTheRulesAllowIsServed) {
    REQUIRE_PROBE();
    start();
    const std::vector<std::pair<const char*, int>> cases = {
        {"unknown-type", 200},     {"settings-unknown", 200}, {"closed-wu-rst", 200},
        {"te-trailers", 200},      {"trailers-ok", 200},      {"options-asterisk", 204},
        {"host-only", 200},        {"connect", 501},          {"client-goaway", 200},
        {"extended-connect", 405},  // RFC 8441, announced: routed, and "/" takes GET only
    };
    Rules r = run_rules(false, cases);
    for (const auto& [name, code] : cases) {
        EXPECT_EQ(r.get(name, "status"), std::to_string(code)) << name << "\n" << r.p.out;
        EXPECT_EQ(r.get(name, "rst"), "none") << name;
        EXPECT_EQ(r.get(name, "goaway"), "none") << name;
        if (std::string(name) != "client-goaway") {
            EXPECT_EQ(r.get(name, "second_status"), "200") << name;
        }
    }
    EXPECT_EQ(r.get("trailers-ok", "body"), "abc");
    EXPECT_EQ(r.get("client-goaway", "body"), "slept");
    EXPECT_EQ(r.get("client-goaway", "closed"), "1");  // once the stream in flight is done
    expect_sound();
}

// 6.9.2: a SETTINGS_INITIAL_WINDOW_SIZE that takes an open stream's window over 2^31-1 is a
// connection error FLOW_CONTROL_ERROR (nghttp2 alone resets only that stream), also when the
// frame arrives in two reads; a window brought to exactly 2^31-1 (two entries in one frame) is
// fine and the request is served.
TEST_F(Http2E2e, InitialWindowSizeTakingAWindowOver2To31IsConnectionFlowControlError) {
    REQUIRE_PROBE();
    with_tls = true;
    start();
    for (bool tls : {false, true}) {
        Rules r = run_rules(tls, {{"settings-window-overflow", 0},
                                  {"settings-window-split", 0},
                                  {"settings-window-max", 0}});
        for (const char* name : {"settings-window-overflow", "settings-window-split"}) {
            EXPECT_EQ(r.get(name, "goaway"), std::to_string(kFlowControlError))
                << name << " tls=" << tls << "\n"
                << r.p.out;
            EXPECT_EQ(r.get(name, "closed"), "1") << name;
            EXPECT_EQ(r.get(name, "status"), "none") << name;
        }
        EXPECT_EQ(r.get("settings-window-max", "status"), "200") << "tls=" << tls << "\n"
                                                                 << r.p.out;
        EXPECT_EQ(r.get("settings-window-max", "body"), "max");
        EXPECT_EQ(r.get("settings-window-max", "goaway"), "none");
    }
    expect_sound();
}

// 8.3.1: a Host naming another origin than :authority makes the request malformed: a stream
// error PROTOCOL_ERROR, no handler sees it, and the connection goes on. The same origin
// written differently (case, the scheme's default port) is served.
TEST_F(Http2E2e, HostDifferingFromAuthorityIsStreamProtocolError) {
    REQUIRE_PROBE();
    with_tls = true;
    start();
    for (bool tls : {false, true}) {
        Rules r = run_rules(tls, {{"host-mismatch", 0}, {"host-default-port", 0}});
        EXPECT_EQ(r.get("host-mismatch", "rst"), std::to_string(kProtocolError))
            << "tls=" << tls << "\n"
            << r.p.out;
        EXPECT_EQ(r.get("host-mismatch", "status"), "none");
        EXPECT_EQ(r.get("host-mismatch", "second_status"), "200");
        EXPECT_EQ(r.get("host-mismatch", "goaway"), "none");
        EXPECT_EQ(r.get("host-default-port", "status"), "200") << r.p.out;
    }
    expect_sound();
}

}  // namespace
}  // namespace vela::e2e
