// WebSocket end to end (RFC 6455, permessage-deflate RFC 7692), over real sockets against an
// App started in-process:
//
//  * a real client (python3-websockets, tests/e2e/ws/client.py, run under `timeout`) for
//    echo, large and fragmented messages, ping/pong, close codes both ways, compression,
//    subprotocols, and wss over TLS;
//  * the handshake with a raw client (tests/e2e/ws/ws_client.hpp): refusals and their
//    status codes, middleware, path parameters, frames glued to the handshake;
//  * the keep-alive and close timers, and a graceful stop with a session open.
//
// The framing violations are in websocket_framing_test.cpp; the server under test is
// tests/e2e/ws/ws_server.hpp. client.py prints "key=value" lines; the assertions are here.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>

#include "client.hpp"
#include "process.hpp"
#include "python.hpp"
#include "sound.hpp"
#include "tls/certs.hpp"
#include "vela/vela.hpp"
#include "vela/ws/deflate.hpp"
#include "ws/ws_client.hpp"
#include "ws/ws_server.hpp"

#ifndef VELA_SOURCE_DIR
#error "tests/CMakeLists.txt defines VELA_SOURCE_DIR for every test binary"
#endif

namespace vela::e2e {
namespace {

using ws::Opcode;
namespace cc = ws::close_code;

// ---- the real client -------------------------------------------------------------------------

const std::string kClientPy = std::string(VELA_SOURCE_DIR) + "/tests/e2e/ws/client.py";

bool have_websockets() {
    return succeeds(std::string(debian_python()) + " -c 'import websockets'");
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
    r.output = run_command(cmd).out;
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

// Every `key=value` in `want` was printed by client.py.
void expect_printed(const PyResult& r,
                    std::initializer_list<std::pair<const char*, std::string>> want) {
    for (const auto& [key, value] : want) EXPECT_EQ(r[key], value) << key << "\n" << r.output;
}

TEST_F(WebSocketE2eRealClient, EchoesTextBinaryLargeAndFragmentedMessagesAndPings) {
    expect_printed(py("/echo", "echo"), {{"text", "True"},
                                         {"binary", "True"},
                                         {"text_100k", "True"},
                                         {"binary_2m", "True"},
                                         {"binary_2m_len", std::to_string(2 * 1024 * 1024)},
                                         {"fragmented", "True"},
                                         {"pong", "True"},
                                         {"close_code", "1000"}});
    ASSERT_TRUE(seen.wait(2000ms));
    EXPECT_EQ(seen.code, 1000);
}

TEST_F(WebSocketE2eRealClient, ClientCloseCodeAndReasonReachTheHandler) {
    // The server echoes the client's code in its close frame.
    expect_printed(py("/echo", "close4001"), {{"close_code", "4001"}});
    ASSERT_TRUE(seen.wait(2000ms));
    EXPECT_EQ(seen.code, 4001);
    EXPECT_EQ(seen.reason, "client says bye");
}

TEST_F(WebSocketE2eRealClient, ServerCloseCodeAndReasonReachTheClient) {
    expect_printed(
        py("/close3000", "await_close"),
        {{"close_code", "3000"}, {"close_reason", "server done"}, {"unexpected", "<missing>"}});
}

TEST_F(WebSocketE2eRealClient, PermessageDeflateIsNegotiatedAndUsed) {
    PyResult r = py("/echo", "deflate");
    EXPECT_NE(r["extensions"].find("permessage-deflate"), std::string::npos) << r.output;
    expect_printed(r, {{"deflate_1m", "True"}});
}

TEST_F(WebSocketE2eRealClient, DeflateOffInOptionsIsNotNegotiated) {
    expect_printed(py("/plain", "plain"),
                   {{"connected", "True"}, {"extensions", ""}, {"text", "True"}});
}

// A coroutine that takes no request: the same session, with the request given back at once.
TEST_F(WebSocketE2eRealClient, SessionWithoutTheRequestEchoesDeflatesAndNegotiates) {
    expect_printed(py("/session-echo", "echo"), {{"text", "True"},
                                                 {"binary", "True"},
                                                 {"text_100k", "True"},
                                                 {"binary_2m", "True"},
                                                 {"fragmented", "True"},
                                                 {"pong", "True"},
                                                 {"close_code", "1000"}});
    const PyResult d = py("/session-echo", "deflate");
    EXPECT_NE(d["extensions"].find("permessage-deflate"), std::string::npos) << d.output;
    expect_printed(d, {{"deflate_1m", "True"}});
    expect_printed(py("/session-proto", "subproto"), {{"subprotocol", "b"}});
    expect_printed(py("/session-proto", "noproto"), {{"subprotocol", "None"}});
}

TEST_F(WebSocketE2eRealClient, SubprotocolIsTheFirstSupportedOneOffered) {
    expect_printed(py("/proto", "subproto"), {{"subprotocol", "b"}});
    expect_printed(py("/proto", "noproto"), {{"subprotocol", "None"}});
}

TEST_F(WebSocketE2eRealClient, RequiredSubprotocolNotOfferedIsRefusedWith400) {
    expect_printed(py("/proto-required", "noproto"),
                   {{"status", "400"}, {"connected", "<missing>"}});
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

// RFC 6455 4.1: an upgrade sent as HTTP/1.0 once got a 101.
TEST_F(WebSocketE2eHandshake, Http10UpgradeIs400) {
    std::string req = ws_upgrade_request("/echo");
    req.replace(req.find("HTTP/1.1"), 8, "HTTP/1.0");
    HttpResponse r = refused(req);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.body, "WebSocket needs HTTP/1.1\n");
    EXPECT_FALSE(r.has_header("Sec-WebSocket-Accept"));
    EXPECT_FALSE(r.has_header("Upgrade"));
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
    // A request without Origin does not come from a browser (which always sends one, and
    // which the check protects); such a client could send any Origin anyway: it is let in.
    {
        WsClient none = open("/origin", "");
        EXPECT_TRUE(none.open()) << none.error();
    }
    WsClient c = open("/origin", "Origin: " + kOrigin + "\r\n");
    EXPECT_TRUE(c.open());
}

TEST_F(WebSocketE2eHandshake, ConnectionHeaderListAndTokenCaseAreAccepted) {
    // As Firefox sends it: Connection is a list, and tokens are case-insensitive.
    WsClient c = WsClient::connect(app.port());
    auto r = c.handshake_raw(
        "GET /echo HTTP/1.1\r\nHost: localhost\r\nUpgrade: WebSocket\r\n"
        "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: " +
        std::string(kWsKey) + "\r\nSec-WebSocket-Version: 13\r\n\r\n");
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 101);
    EXPECT_TRUE(c.open()) << c.error();
}

TEST_F(WebSocketE2eHandshake, UpgradeAfterAPipelinedRequest) {
    WsClient c = WsClient::connect(app.port());
    auto first = c.handshake_raw(get_request("/hello") + ws_upgrade_request("/echo") +
                                 c.frame(Opcode::text, "after the upgrade"));
    ASSERT_TRUE(first) << c.error();
    EXPECT_EQ(first->status, 200);
    EXPECT_EQ(first->body, "Hello, World!");
    auto second = c.read_upgrade();
    ASSERT_TRUE(second) << c.error();
    EXPECT_EQ(second->status, 101);
    ASSERT_TRUE(c.open()) << c.error();
    auto m = c.read_message();
    ASSERT_TRUE(m) << c.error();
    EXPECT_EQ(m->payload, "after the upgrade");
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

// A frame behind the handshake is held while the handler waits before its next receive();
// reading must start once it is released (it had not started when the frame was parsed).
TEST_F(WebSocketE2eHandshake, HeldMessageFromTheHandshakePacketDoesNotStopReading) {
    WsClient c = WsClient::connect(app.port());
    auto r = c.handshake("/slow-echo", {}, c.frame(Opcode::text, "first"));
    ASSERT_TRUE(r && c.open()) << c.error();
    auto a = c.read_message();
    ASSERT_TRUE(a) << c.error();
    EXPECT_EQ(a->payload, "first");
    ASSERT_TRUE(c.send_text("second"));
    auto b = c.read_message();
    ASSERT_TRUE(b) << c.error();
    EXPECT_EQ(b->payload, "second");
}

// A handler that returns while holding a message: the server's close is answered and the
// connection ends at once, not after close_timeout.
TEST_F(WebSocketE2eHandshake, HandlerReturningWithAHeldMessageClosesPromptly) {
    WsClient c = open("/take-one");
    ASSERT_TRUE(c.send_text("kept"));
    auto close = c.read_close();
    ASSERT_TRUE(close) << c.error();
    EXPECT_EQ(close->close_code(), ws::close_code::normal);
    const auto t0 = SteadyClock::now();
    ASSERT_TRUE(c.send_close(ws::close_code::normal));
    EXPECT_TRUE(c.closed_by_peer(Ms{3000}));
    EXPECT_LT(ms_since(t0), 1000);  // close_timeout is 5 s here
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

// A client that keeps the 00 00 ff ff tail RFC 7692 7.2.1 says to strip (some do) once got
// 1007. Its messages, with context kept between them, are echoed.
TEST_F(WebSocketE2eHandshake, DeflatedMessageWithTheTailKeptIsInflated) {
    WsClient c = open("/echo", "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ws::DeflateParams client;  // the client's compressor: window 15, context kept
    client.server_no_context_takeover = false;
    ws::Deflater d(client, ws::DeflateOptions{});
    ws::DeflateParams server;  // the server's replies: no context kept between them
    server.client_no_context_takeover = true;
    ws::Inflater replies(server);
    for (int i = 0; i < 3; ++i) {
        const std::string msg = "message " + std::to_string(i) + std::string(300, 'k');
        std::string z;
        d.compress(msg, z);
        if (i != 1) z += std::string_view("\x00\x00\xff\xff", 4);
        ASSERT_TRUE(c.send_frame(ws::Opcode::text, z, true, true));
        auto f = c.read_frame();
        ASSERT_TRUE(f) << c.error();
        ASSERT_TRUE(f->is(ws::Opcode::text)) << int(f->opcode) << " " << f->close_code();
        std::string back = f->payload;
        if (f->rsv1) {
            back.clear();
            ASSERT_EQ(replies.inflate(f->payload, true, back, 1 << 20), 0);
        }
        EXPECT_EQ(back, msg);
    }
    expect_server_sound(app);
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
    expect_printed(run_client("wss://localhost:" + std::to_string(app.port()) + "/echo", "tls_echo",
                              test::test_certs().ca),
                   {{"text", "True"}, {"close_code", "1000"}});
}

}  // namespace
}  // namespace vela::e2e
