// WebSocket end to end (RFC 6455, permessage-deflate RFC 7692), over real sockets against an
// App started in-process:
//
//  * a real client (python3-websockets, tests/e2e/ws/client.py, run under `timeout`) for
//    echo, large and fragmented messages, ping/pong, close codes both ways, compression,
//    subprotocols, and wss over TLS;
//  * the handshake with a raw client (tests/e2e/ws/ws_client.hpp): refusals and their
//    status codes, middleware, path parameters, frames glued to the handshake;
//  * every framing violation as raw bytes, one table row each: the close code the server
//    answers with, then a check that the server still serves new connections;
//  * the keep-alive and close timers, and a graceful stop with a session open.
//
// client.py prints "key=value" lines; the assertions are here.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "client.hpp"
#include "sound.hpp"
#include "tls/certs.hpp"
#include "vela/vela.hpp"
#include "vela/ws/deflate.hpp"
#include "ws/ws_client.hpp"

#ifndef VELA_SOURCE_DIR
#error "tests/CMakeLists.txt defines VELA_SOURCE_DIR for every test binary"
#endif

namespace vela::e2e {
namespace {

using ws::Opcode;
namespace cc = ws::close_code;

// ---- the server under test ---------------------------------------------------------------

// What a handler saw when its session ended, for the test thread to wait on.
struct SeenClose {
    std::mutex mu;
    std::condition_variable cv;
    bool seen = false;
    std::uint16_t code = 0;
    std::string reason;

    void record(const WsMessage& m) {
        std::lock_guard lock(mu);
        seen = true;
        code = m.code;
        reason.assign(m.data);
        cv.notify_all();
    }
    bool wait(Ms within) {
        std::unique_lock lock(mu);
        return cv.wait_for(lock, within, [this] { return seen; });
    }
};

// Echoes every message until the session ends; records the close in `seen` when given.
WsHandler echo_handler(SeenClose* seen = nullptr) {
    return [seen](WebSocket& ws, Request&) -> Task<void> {
        for (;;) {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) {
                if (seen) seen->record(m);
                co_return;
            }
            co_await ws.send(m.data, m.type);
        }
    };
}

// Closes at once with `code`, then waits for the end of the session.
WsHandler closing_handler(std::uint16_t code, std::string reason) {
    return [code, reason](WebSocket& ws, Request&) -> Task<void> {
        ws.close(code, reason);
        while (!(co_await ws.receive()).is_close()) {
        }
    };
}

WsOptions with_limits(std::size_t max_frame, std::size_t max_message) {
    WsOptions o;
    o.max_frame = max_frame;
    o.max_message = max_message;
    return o;
}

constexpr std::size_t kBig = 4 * 1024 * 1024;
constexpr std::size_t kSmallFrame = 1024;
constexpr std::size_t kSmallMessage = 4096;
const std::string kOrigin = "https://good.example";

// One App with every endpoint the tests use, on 127.0.0.1:0 (plain) and, when asked, TLS.
class WsServer : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        add_basic_routes(app);
        app.ws("/echo", echo_handler(&seen), with_limits(kBig, kBig));
        WsOptions plain = with_limits(kBig, kBig);
        plain.deflate.enabled = false;
        app.ws("/plain", echo_handler(), plain);
        app.ws("/close3000", closing_handler(3000, "server done"));
        WsOptions proto;
        proto.subprotocols = {"b"};
        app.ws("/proto", echo_handler(), proto);
        proto.require_subprotocol = true;
        app.ws("/proto-required", echo_handler(), proto);
        WsOptions origin;
        origin.origins = {kOrigin};
        app.ws("/origin", echo_handler(), origin);
        app.ws("/small", echo_handler(), with_limits(kSmallFrame, kSmallMessage));
        app.ws("/rooms/{id}", [](WebSocket& ws, Request& req) -> Task<void> {
            const std::string hello = std::string(req.param("id")) + "|" +
                                      std::string(req.header("X-Test")) + "|" +
                                      req.query("q").value_or("?");
            co_await ws.send(hello);
            while (!(co_await ws.receive()).is_close()) {
            }
        });
        app.group("/private")
            .use([](Request& r) -> std::optional<Response> {
                if (r.header("Authorization") == "Bearer ok") return std::nullopt;
                return Response::text("no\n", Status::Unauthorized);
            })
            .ws("/ws", echo_handler());
        WsOptions timers;
        timers.ping_interval = Ms{200};
        timers.pong_timeout = Ms{200};
        app.ws("/timers", echo_handler(), timers);
        WsOptions slow_close;
        slow_close.close_timeout = Ms{300};
        app.ws("/close-timeout", closing_handler(1000, "bye"), slow_close);
        listen();
        app.start(1);
    }

    // Before start(): options set later are not used.
    virtual void listen() { app.listen("127.0.0.1:0"); }

    // A raw client that completed the handshake on `path`.
    WsClient open(std::string_view path, std::string_view extra = {}) {
        WsClient c = WsClient::connect(app.port());
        auto r = c.handshake(path, extra);
        EXPECT_TRUE(r && c.open()) << path << ": " << c.error();
        return c;
    }

    // The response to a handshake request sent as is.
    HttpResponse refused(std::string_view request) {
        WsClient c = WsClient::connect(app.port());
        auto r = c.handshake_raw(request);
        EXPECT_TRUE(r) << c.error();
        EXPECT_FALSE(c.open());
        return r.value_or(HttpResponse{});
    }

    App app;
    SeenClose seen;
};

// ---- the real client -------------------------------------------------------------------------

const std::string kClientPy = std::string(VELA_SOURCE_DIR) + "/tests/e2e/ws/client.py";

// The Debian python3 has python3-websockets; a pyenv python3 first on PATH may not.
const char* debian_python() {
    return ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

bool have_websockets() {
    const std::string check = std::string(debian_python()) + " -c 'import websockets' 2>/dev/null";
    return std::system(check.c_str()) == 0;
}

// client.py's key=value lines, and everything it printed (for failure messages).
struct PyResult {
    std::map<std::string, std::string> kv;
    std::string output;
    std::string operator[](const std::string& k) const {
        auto it = kv.find(k);
        return it == kv.end() ? "<missing>" : it->second;
    }
};

PyResult run_client(const std::string& uri, const std::string& scenario,
                    const std::string& ca = {}) {
    const std::string cmd = "timeout 20 " + std::string(debian_python()) + " " + kClientPy + " '" +
                            uri + "' " + scenario + (ca.empty() ? "" : " " + ca) + " 2>&1";
    PyResult r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
    ::pclose(p);
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
        const auto eq = line.find('=');
        if (eq != std::string::npos) r.kv[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return r;
}

class WebSocketE2eRealClient : public WsServer {
  protected:
    void SetUp() override {
        if (!have_websockets()) GTEST_SKIP() << "python3-websockets is not installed";
        WsServer::SetUp();
    }
    PyResult py(std::string_view path, const std::string& scenario) {
        return run_client("ws://127.0.0.1:" + std::to_string(app.port()) + std::string(path),
                          scenario);
    }
};

TEST_F(WebSocketE2eRealClient, EchoesTextBinaryLargeAndFragmentedMessagesAndPings) {
    PyResult r = py("/echo", "echo");
    EXPECT_EQ(r["text"], "True") << r.output;
    EXPECT_EQ(r["binary"], "True") << r.output;
    EXPECT_EQ(r["text_100k"], "True") << r.output;
    EXPECT_EQ(r["binary_2m"], "True") << r.output;
    EXPECT_EQ(r["binary_2m_len"], std::to_string(2 * 1024 * 1024)) << r.output;
    EXPECT_EQ(r["fragmented"], "True") << r.output;
    EXPECT_EQ(r["pong"], "True") << r.output;
    EXPECT_EQ(r["close_code"], "1000") << r.output;
    ASSERT_TRUE(seen.wait(2000ms));
    EXPECT_EQ(seen.code, 1000);
}

TEST_F(WebSocketE2eRealClient, ClientCloseCodeAndReasonReachTheHandler) {
    PyResult r = py("/echo", "close4001");
    EXPECT_EQ(r["close_code"], "4001") << r.output;  // the server echoes the client's code
    ASSERT_TRUE(seen.wait(2000ms)) << r.output;
    EXPECT_EQ(seen.code, 4001);
    EXPECT_EQ(seen.reason, "client says bye");
}

TEST_F(WebSocketE2eRealClient, ServerCloseCodeAndReasonReachTheClient) {
    PyResult r = py("/close3000", "await_close");
    EXPECT_EQ(r["close_code"], "3000") << r.output;
    EXPECT_EQ(r["close_reason"], "server done") << r.output;
    EXPECT_EQ(r["unexpected"], "<missing>") << r.output;
}

TEST_F(WebSocketE2eRealClient, PermessageDeflateIsNegotiatedAndUsed) {
    PyResult r = py("/echo", "deflate");
    EXPECT_NE(r["extensions"].find("permessage-deflate"), std::string::npos) << r.output;
    EXPECT_EQ(r["deflate_1m"], "True") << r.output;
}

TEST_F(WebSocketE2eRealClient, DeflateOffInOptionsIsNotNegotiated) {
    PyResult r = py("/plain", "plain");
    EXPECT_EQ(r["connected"], "True") << r.output;
    EXPECT_EQ(r["extensions"], "") << r.output;
    EXPECT_EQ(r["text"], "True") << r.output;
}

TEST_F(WebSocketE2eRealClient, SubprotocolIsTheFirstSupportedOneOffered) {
    PyResult r = py("/proto", "subproto");
    EXPECT_EQ(r["subprotocol"], "b") << r.output;
    r = py("/proto", "noproto");
    EXPECT_EQ(r["subprotocol"], "None") << r.output;
}

TEST_F(WebSocketE2eRealClient, RequiredSubprotocolNotOfferedIsRefusedWith400) {
    PyResult r = py("/proto-required", "noproto");
    EXPECT_EQ(r["status"], "400") << r.output;
    EXPECT_EQ(r["connected"], "<missing>") << r.output;
}

// ---- the handshake -----------------------------------------------------------------------

using WebSocketE2eHandshake = WsServer;

TEST_F(WebSocketE2eHandshake, AcceptKeyIsTheRfcExample) {
    EXPECT_EQ(ws_accept_key(kWsKey), kWsAccept);
    WsClient c = WsClient::connect(app.port());
    auto r = c.handshake("/echo");
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 101);
    EXPECT_EQ(r->header("Sec-WebSocket-Accept"), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    EXPECT_TRUE(iequal(r->header("Upgrade"), "websocket"));
    EXPECT_TRUE(icontains(r->header("Connection"), "upgrade"));
    EXPECT_FALSE(r->has_header("Sec-WebSocket-Extensions"));  // none offered
    EXPECT_TRUE(c.open()) << c.error();
}

TEST_F(WebSocketE2eHandshake, PathParametersQueryAndHeadersReachTheHandler) {
    WsClient c = open("/rooms/42?q=x", "X-Test: hello\r\n");
    auto m = c.read_message();
    ASSERT_TRUE(m) << c.error();
    EXPECT_EQ(m->payload, "42|hello|x");
}

TEST_F(WebSocketE2eHandshake, BeforeMiddlewareRefusesWithAnOrdinaryResponse) {
    HttpResponse r = refused(ws_upgrade_request("/private/ws"));
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(r.body, "no\n");
    EXPECT_FALSE(r.has_header("Sec-WebSocket-Accept"));
    WsClient ok = open("/private/ws", "Authorization: Bearer ok\r\n");
    ASSERT_TRUE(ok.send_text("in"));
    auto m = ok.read_message();
    ASSERT_TRUE(m) << ok.error();
    EXPECT_EQ(m->payload, "in");
}

TEST_F(WebSocketE2eHandshake, MissingMalformedOrRepeatedKeyIs400) {
    EXPECT_EQ(refused(ws_upgrade_request("/echo", {}, false)).status, 400);
    for (const char* bad : {"c2hvcnQ=", "dGhlIHNhbXBsZSBub25jZQ",
                            "dGhlIHNhbXBsZSBub25jZR==", "!GhlIHNhbXBsZSBub25jZQ=="}) {
        EXPECT_EQ(refused(ws_upgrade_request(
                              "/echo", "Sec-WebSocket-Key: " + std::string(bad) + "\r\n", false))
                      .status,
                  400)
            << bad;
    }
    EXPECT_EQ(
        refused(ws_upgrade_request("/echo", "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n"))
            .status,
        400);
    expect_server_sound(app);
}

TEST_F(WebSocketE2eHandshake, OtherVersionIs426NamingVersion13) {
    HttpResponse r =
        refused(ws_upgrade_request("/echo", "Sec-WebSocket-Version: 8\r\n", true, false));
    EXPECT_EQ(r.status, 426);
    EXPECT_EQ(r.header("Sec-WebSocket-Version"), "13");
}

TEST_F(WebSocketE2eHandshake, PlainGetIs426AndPostIsRefused) {
    HttpResponse r = refused(get_request("/echo"));
    EXPECT_EQ(r.status, 426);
    EXPECT_TRUE(iequal(r.header("Upgrade"), "websocket"));
    // A ws route is a GET route: the router answers a POST before ws_accept. ("/plain", not
    // "/echo": add_basic_routes has POST /echo.)
    r = refused(request_with_body("POST", "/plain", "x",
                                  "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                  "Sec-WebSocket-Version: 13\r\n"));
    EXPECT_EQ(r.status, 405);
    EXPECT_TRUE(icontains(r.header("Allow"), "GET"));
    expect_server_sound(app);
}

TEST_F(WebSocketE2eHandshake, OriginAllowList) {
    EXPECT_EQ(refused(ws_upgrade_request("/origin", "Origin: https://evil.example\r\n")).status,
              403);
    WsClient c = open("/origin", "Origin: " + kOrigin + "\r\n");
    EXPECT_TRUE(c.open());
}

TEST_F(WebSocketE2eHandshake, FramesInTheHandshakePacketAreProcessed) {
    WsClient c = WsClient::connect(app.port());
    const std::string frames = c.frame(Opcode::text, "first") + c.frame(Opcode::binary, "second");
    auto r = c.handshake("/echo", {}, frames);
    ASSERT_TRUE(r && c.open()) << c.error();
    auto a = c.read_message();
    auto b = c.read_message();
    ASSERT_TRUE(a && b) << c.error();
    EXPECT_EQ(a->payload, "first");
    EXPECT_EQ(a->opcode, Opcode::text);
    EXPECT_EQ(b->payload, "second");
    EXPECT_EQ(b->opcode, Opcode::binary);
}

TEST_F(WebSocketE2eHandshake, DeflatedRepliesCarryRsv1AndAreSmaller) {
    WsClient c = open("/echo", "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    const std::string msg(100'000, 'z');
    ASSERT_TRUE(c.send_text(msg));  // a client may send uncompressed under deflate
    auto f = c.read_frame();
    ASSERT_TRUE(f) << c.error();
    EXPECT_TRUE(f->rsv1);
    EXPECT_TRUE(f->fin);
    EXPECT_LT(f->payload.size(), msg.size() / 20);
    EXPECT_FALSE(f->masked);
}

// ---- framing violations --------------------------------------------------------------------

// A frame header written by hand: `b0` (FIN, RSV, opcode), the mask bit set, `len_bytes`
// (the 7-bit length and any extended length), a zero mask, then `payload` as is.
std::string hand_frame(std::uint8_t b0, std::string_view len_bytes, std::string_view payload) {
    std::string f(1, static_cast<char>(b0));
    f += static_cast<char>(static_cast<std::uint8_t>(len_bytes[0]) | 0x80);
    f += len_bytes.substr(1);
    f += std::string(4, '\0');  // mask 0: the payload goes as written
    f += payload;
    return f;
}

std::string deflated(std::string_view msg) {
    ws::Deflater d(ws::DeflateParams{}, ws::DeflateOptions{});
    std::string z;
    d.compress(msg, z);
    return z;
}

struct Violation {
    const char* name;
    std::uint16_t code;  // the close code the server must answer with
    const char* path;
    std::function<std::string(WsClient&)> bytes;
    const char* extra = "";  // handshake header lines
};

std::string with_rsv(WsClient& c, std::uint8_t bits) {
    std::string f = c.frame(Opcode::text, "x");
    f[0] = static_cast<char>(f[0] | bits);
    return f;
}

const Violation kViolations[] = {
    {"Unmasked", cc::protocol_error, "/echo", [](WsClient&) { return std::string("\x81\x02hi"); }},
    {"Rsv2", cc::protocol_error, "/echo", [](WsClient& c) { return with_rsv(c, 0x20); }},
    {"Rsv3", cc::protocol_error, "/echo", [](WsClient& c) { return with_rsv(c, 0x10); }},
    {"Rsv1WithoutDeflate", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::text, "x", true, true); }},
    {"Opcode3", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(static_cast<Opcode>(3), "x"); }},
    {"OpcodeB", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(static_cast<Opcode>(0xB), "x"); }},
    {"Ping126", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::ping, std::string(126, 'p')); }},
    {"FragmentedPing", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::ping, "p", false); }},
    {"ContinuationWithoutStart", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::continuation, "x"); }},
    {"TextInsideFragmentedMessage", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::text, "a", false) + c.frame(Opcode::text, "b"); }},
    {"Length64TopBit", cc::protocol_error, "/echo",
     [](WsClient&) { return hand_frame(0x82, std::string("\x7f\x80\0\0\0\0\0\0\x01", 9), ""); }},
    {"NonMinimalLength16", cc::protocol_error, "/echo",
     [](WsClient&) { return hand_frame(0x82, std::string("\x7e\0\x05", 3), "hello"); }},
    {"NonMinimalLength64", cc::protocol_error, "/echo",
     [](WsClient&) { return hand_frame(0x82, std::string("\x7f\0\0\0\0\0\0\0\x05", 9), "hello"); }},
    {"InvalidUtf8", cc::invalid_payload, "/echo",
     [](WsClient& c) { return c.frame(Opcode::text, "ok \xff\xfe"); }},
    {"InvalidUtf8AcrossFragments", cc::invalid_payload, "/echo",
     [](WsClient& c) {
         // U+20AC is E2 82 AC: the first fragment ends inside it, the next breaks it.
         return c.frame(Opcode::text, "euro \xe2\x82", false) +
                c.frame(Opcode::continuation, "\x28 end");
     }},
    {"InvalidUtf8InCloseReason", cc::invalid_payload, "/echo",
     [](WsClient& c) { return c.frame(Opcode::close, std::string("\x03\xe8\xc3\x28", 4)); }},
    {"ClosePayloadOneByte", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::close, "\x03"); }},
    {"CloseCode1005", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::close, "\x03\xed"); }},
    {"CloseCode999", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::close, "\x03\xe7"); }},
    {"CloseCode1006", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::close, "\x03\xee"); }},
    {"CloseCode2000", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::close, "\x07\xd0"); }},
    {"CloseCode5000", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::close, "\x13\x88"); }},
    {"TextAfterTheViolationIsNotEchoed", cc::protocol_error, "/echo",
     [](WsClient& c) { return std::string("\x81\x02hi") + c.frame(Opcode::text, "after"); }},
    {"FrameOverMaxFrame", cc::message_too_big, "/small",
     [](WsClient& c) { return c.frame(Opcode::binary, std::string(kSmallFrame + 1, 'f')); }},
    {"MessageOverMaxMessageInFragments", cc::message_too_big, "/small",
     [](WsClient& c) {
         std::string out = c.frame(Opcode::binary, std::string(1000, 'm'), false);
         for (int i = 0; i < 4; ++i)
             out += c.frame(Opcode::continuation, std::string(1000, 'm'), i == 3);
         return out;
     }},
    {"DecompressionBomb", cc::message_too_big, "/small",
     [](WsClient& c) {
         const std::string z = deflated(std::string(512 * 1024, '\0'));
         EXPECT_LE(z.size(), kSmallFrame) << "the bomb must pass the frame limit";
         return c.frame(Opcode::binary, z, true, true);
     },
     "Sec-WebSocket-Extensions: permessage-deflate\r\n"},
};

class WebSocketE2eFraming : public WsServer, public ::testing::WithParamInterface<Violation> {};

TEST_P(WebSocketE2eFraming, AnswersWithCloseCodeAndStaysSound) {
    const Violation& v = GetParam();
    WsClient c = open(v.path, v.extra);
    ASSERT_TRUE(c.open());
    ASSERT_TRUE(c.send_raw(v.bytes(c)));
    auto f = c.read_frame();  // the close comes first: nothing of the bad input is echoed
    ASSERT_TRUE(f) << "no close frame: " << c.error();
    ASSERT_TRUE(f->is(Opcode::close)) << "opcode " << int(f->opcode) << ": " << f->payload;
    EXPECT_EQ(f->close_code(), v.code) << "reason: " << f->close_reason();
    EXPECT_FALSE(f->masked);
    c.send_close(f->close_code());
    EXPECT_TRUE(c.closed_by_peer(2000ms));
    expect_server_sound(app);
}

INSTANTIATE_TEST_SUITE_P(Rfc6455, WebSocketE2eFraming, ::testing::ValuesIn(kViolations),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(WebSocketE2eHandshake, CharacterSplitAcrossFragmentsIsValid) {
    WsClient c = open("/echo");
    ASSERT_TRUE(c.send_raw(c.frame(Opcode::text, "euro \xe2\x82", false) +
                           c.frame(Opcode::continuation, "\xac end")));
    auto m = c.read_message();
    ASSERT_TRUE(m) << c.error();
    EXPECT_EQ(m->payload, "euro \xe2\x82\xac end");
}

TEST_F(WebSocketE2eHandshake, PingInsideFragmentedMessageIsAnsweredAtOnce) {
    WsClient c = open("/echo");
    ASSERT_TRUE(c.send_raw(c.frame(Opcode::text, "frag", false) +
                           c.frame(Opcode::ping, "between fragments")));
    auto pong = c.read_frame();
    ASSERT_TRUE(pong) << c.error();
    EXPECT_TRUE(pong->is(Opcode::pong));
    EXPECT_EQ(pong->payload, "between fragments");
    ASSERT_TRUE(c.send_frame(Opcode::continuation, "ment"));
    auto m = c.read_message();
    ASSERT_TRUE(m) << c.error();
    EXPECT_EQ(m->payload, "fragment");
}

// ---- timers ----------------------------------------------------------------------------------

using WebSocketE2eTimers = WsServer;

TEST_F(WebSocketE2eTimers, ClientThatNeverAnswersPingsIsDropped) {
    WsClient c = open("/timers");
    const auto t0 = SteadyClock::now();
    auto ping = c.read_frame(1000ms);
    ASSERT_TRUE(ping) << c.error();
    EXPECT_TRUE(ping->is(Opcode::ping));
    EXPECT_TRUE(c.closed_by_peer(2000ms)) << "still open without pongs";
    EXPECT_LT(ms_since(t0), 1500);
}

TEST_F(WebSocketE2eTimers, ClientThatAnswersPingsStaysConnected) {
    WsClient c = open("/timers");
    const auto t0 = SteadyClock::now();
    int pings = 0;
    while (ms_since(t0) < 1200) {
        auto f = c.read_frame(500ms);
        ASSERT_TRUE(f) << "after " << ms_since(t0) << " ms: " << c.error();
        ASSERT_TRUE(f->is(Opcode::ping));
        ++pings;
        ASSERT_TRUE(c.send_pong(f->payload));
    }
    EXPECT_GE(pings, 3);
    ASSERT_TRUE(c.send_text("still here"));
    auto m = c.read_message();
    ASSERT_TRUE(m) << c.error();
    EXPECT_EQ(m->payload, "still here");
}

TEST_F(WebSocketE2eTimers, CloseNotAnsweredEndsWithinCloseTimeout) {
    WsClient c = open("/close-timeout");
    auto f = c.read_close();
    ASSERT_TRUE(f) << c.error();
    EXPECT_EQ(f->close_code(), 1000);
    EXPECT_EQ(f->close_reason(), "bye");
    const auto t0 = SteadyClock::now();
    EXPECT_TRUE(c.closed_by_peer(2000ms));
    EXPECT_GE(ms_since(t0), 200);  // close_timeout is 300 ms
    EXPECT_LT(ms_since(t0), 1000);
}

// ---- graceful stop ----------------------------------------------------------------------------

// A short shutdown deadline, to see that a client ignoring the close cannot hold the stop.
class WebSocketE2eStop : public WsServer {
  protected:
    static constexpr Ms kShutdown{400};
    void listen() override {
        app.options().shutdown_timeout = kShutdown;
        WsServer::listen();
    }
};

TEST_F(WebSocketE2eStop, OpenSessionGetsGoingAwayAndStopCompletes) {
    WsClient c = open("/echo");
    ASSERT_TRUE(c.send_text("before stop"));
    ASSERT_TRUE(c.read_message()) << c.error();
    const auto t0 = SteadyClock::now();
    app.stop();
    auto f = c.read_close();
    ASSERT_TRUE(f) << c.error();
    EXPECT_EQ(f->close_code(), cc::going_away);
    ASSERT_TRUE(c.send_close(cc::going_away));
    EXPECT_TRUE(c.closed_by_peer(2000ms));
    auto waited = std::async(std::launch::async, [this] { return app.wait(); });
    ASSERT_EQ(waited.wait_for(3s), std::future_status::ready) << "stop did not complete";
    EXPECT_EQ(waited.get(), 0);
    EXPECT_LT(ms_since(t0), kShutdown.count()) << "the stop waited for the shutdown deadline";
    ASSERT_TRUE(seen.wait(1000ms));
    EXPECT_EQ(seen.code, cc::going_away);
}

TEST_F(WebSocketE2eStop, ClientThatIgnoresTheCloseDoesNotHoldTheStop) {
    WsClient c = open("/echo");
    const auto t0 = SteadyClock::now();
    app.stop();
    auto f = c.read_close();
    ASSERT_TRUE(f) << c.error();
    EXPECT_EQ(f->close_code(), cc::going_away);
    auto waited = std::async(std::launch::async, [this] { return app.wait(); });
    ASSERT_EQ(waited.wait_for(3s), std::future_status::ready)
        << "a client that never answers the close held the stop past shutdown_timeout";
    EXPECT_LT(ms_since(t0), 2000);
    EXPECT_TRUE(c.closed_by_peer(1000ms));
}

// ---- wss ---------------------------------------------------------------------------------------

class WebSocketE2eTls : public WebSocketE2eRealClient {
  protected:
    void listen() override {
        TlsOptions tls;
        tls.cert = test::test_certs().server_ec_cert;
        tls.key = test::test_certs().server_ec_key;
        app.listen_tls("127.0.0.1:0", std::move(tls));
    }
};

TEST_F(WebSocketE2eTls, EchoesOverWss) {
    PyResult r = run_client("wss://localhost:" + std::to_string(app.port()) + "/echo", "tls_echo",
                            test::test_certs().ca);
    EXPECT_EQ(r["text"], "True") << r.output;
    EXPECT_EQ(r["close_code"], "1000") << r.output;
}

}  // namespace
}  // namespace vela::e2e
