// WebSocket over HTTP/2 (RFC 8441) end to end: the same App::ws routes reached by an extended
// CONNECT on an HTTP/2 stream, from a real client stack (tests/e2e/ws/h2_client.py:
// python3-h2 for HTTP/2, python3-wsproto for the WebSocket protocol on the stream), over h2c
// and over TLS with ALPN h2. The server is tests/e2e/ws/ws_server.hpp plus a room shared with
// an HTTP/1.1 session. h2_client.py prints "key=value" lines; the assertions are here.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "client.hpp"
#include "process.hpp"
#include "python.hpp"
#include "tls/certs.hpp"
#include "vela/proxy/reverse_proxy.hpp"
#include "vela/vela.hpp"
#include "ws/ws_client.hpp"
#include "ws/ws_server.hpp"

#ifndef VELA_SOURCE_DIR
#error "tests/CMakeLists.txt defines VELA_SOURCE_DIR for every test binary"
#endif

namespace vela::e2e {
namespace {

using namespace std::chrono_literals;
using ws::Opcode;
namespace cc = ws::close_code;

const std::string kH2ClientPy = std::string(VELA_SOURCE_DIR) + "/tests/e2e/ws/h2_client.py";

bool have_client() { return succeeds(std::string(debian_python()) + " -c 'import h2, wsproto'"); }

struct PyResult {
    std::map<std::string, std::string> kv;
    std::string output;
    std::string operator[](const std::string& k) const {
        auto it = kv.find(k);
        return it == kv.end() ? "<missing>" : it->second;
    }
};

PyResult run_h2_client(std::uint16_t port, const std::string& scenario, const std::string& path,
                       const std::string& ca = {}) {
    const std::string cmd = "timeout 30 " + std::string(debian_python()) + " " + kH2ClientPy + " " +
                            std::to_string(port) + " " + scenario + " '" + path + "'" +
                            (ca.empty() ? "" : " --tls=" + ca) + " 2>&1";
    PyResult r;
    r.output = run_command(cmd).out;
    if (std::getenv("VELA_H2_TRACE"))
        std::fprintf(stderr, "%s:\n%s", cmd.c_str(), r.output.c_str());
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
        const auto eq = line.find('=');
        if (eq != std::string::npos) r.kv[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return r;
}

void expect_printed(const PyResult& r,
                    std::initializer_list<std::pair<const char*, std::string>> want) {
    for (const auto& [k, v] : want) EXPECT_EQ(r[k], v) << "key " << k << "\n" << r.output;
}

// What the "echo" scenario prints when every message came back and the close was answered:
// 200, not 101, and no Sec-WebSocket-Accept (RFC 8441 5).
void expect_echoed_everything(const PyResult& r) {
    expect_printed(r, {{"status", "200"},
                       {"accept_header", "False"},
                       {"text", "True"},
                       {"binary", "True"},
                       {"text_200k", "True"},
                       {"binary_3m", "True"},
                       {"fragmented", "True"},
                       {"pong", "True"},
                       {"close_code", "1000"}});
}

// The WebSocket test server, plus a room: every message is broadcast to every member (the
// sender too), whichever protocol each member came over.
class WsOverH2 : public WsServer {
  protected:
    void SetUp() override {
        if (!have_client()) GTEST_SKIP() << "python3-h2 or python3-wsproto is not installed";
        app.ws("/room", [](WebSocket& ws, Request&) -> Task<void> {
            Hub::Room& room = hub().room("r");
            room.join(ws);
            for (;;) {
                WsMessage m = co_await ws.receive();
                if (m.is_close()) break;
                room.broadcast(m.data, m.type);
            }
            room.leave(ws);
        });
        WsServer::SetUp();
    }
    PyResult py(const std::string& scenario, const std::string& path = "/echo") {
        return run_h2_client(app.port(), scenario, path);
    }
    // A Hub outlives the servers whose sessions join it (the fixture's App is a member of
    // the base class, destroyed after this one's members).
    static Hub& hub() {
        static Hub h;
        return h;
    }
};

TEST_F(WsOverH2, TheServerAnnouncesExtendedConnect) {
    expect_printed(py("settings"), {{"enable_connect_protocol", "1"}});
}

TEST_F(WsOverH2, EchoesTextBinaryLargeAndFragmentedMessagesAndPings) {
    const PyResult r = py("echo");
    // 200, not 101; no Sec-WebSocket-Accept (RFC 8441 5). The 3 MB message crosses both
    // flow-control windows (the client's 64 KB, the server's 1 MB stream window) each way.
    expect_echoed_everything(r);
    expect_printed(r, {{"end_stream", "1"}});
    // The client had not ended its side: the closing handshake done, the server asks it to
    // stop with RST_STREAM NO_ERROR (RFC 9113 8.1), never CANCEL.
    EXPECT_TRUE(r["reset"] == "none" || r["reset"] == "0") << r.output;
    ASSERT_TRUE(seen.wait(3s));
    EXPECT_EQ(seen.code, 1000);
    EXPECT_EQ(seen.reason, "bye");
}

TEST_F(WsOverH2, PermessageDeflateIsNegotiatedAndUsed) {
    const PyResult r = py("deflate");
    expect_printed(
        r,
        {{"status", "200"}, {"text_1m", "True"}, {"wire_smaller", "True"}, {"close_code", "1000"}});
    EXPECT_NE(r["extensions"].find("permessage-deflate"), std::string::npos) << r.output;
}

TEST_F(WsOverH2, SubprotocolIsTheFirstSupportedOneOffered) {
    expect_printed(py("subproto", "/proto"),
                   {{"status", "200"}, {"subprotocol", "b"}, {"text", "True"}});
}

TEST_F(WsOverH2, RefusalsAreOrdinaryResponsesOnASoundConnection) {
    // No route: 404. Another :protocol: 400. No sec-websocket-version: 426. A plain GET over
    // HTTP/2: 400. Middleware refuses as it does an HTTP/1.1 upgrade. Each time a GET on the
    // same connection still works.
    expect_printed(py("status", "/nothing"), {{"status", "404"}, {"after", "200"}});
    expect_printed(py("badproto", "/echo"), {{"status", "400"}, {"after", "200"}});
    expect_printed(py("noversion", "/echo"), {{"status", "426"}, {"after", "200"}});
    expect_printed(py("get", "/echo"), {{"status", "400"}});
    expect_printed(py("status", "/private/ws"), {{"status", "401"}, {"after", "200"}});
    expect_printed(py("subproto", "/proto-required"), {{"status", "200"}, {"subprotocol", "b"}});
    expect_printed(py("status", "/proto-required"), {{"status", "400"}, {"after", "200"}});
}

TEST_F(WsOverH2, ServerCloseWaitsForTheClientsAnswerThenTheStreamEnds) {
    // The server's closing frame, its side still open (RFC 6455 7.1.1: the server ends the
    // connection after the client's answer); the answer and the client's END_STREAM end the
    // stream, with our END_STREAM and no reset.
    expect_printed(py("server_close", "/close3000"), {{"status", "200"},
                                                      {"close_code", "3000"},
                                                      {"close_reason", "server done"},
                                                      {"server_ended", "0"},
                                                      {"reset_before_answer", "none"},
                                                      {"end_after_answer", "1"},
                                                      {"reset", "none"},
                                                      {"after", "200"}});
}

TEST_F(WsOverH2, ProtocolErrorsCloseTheSessionAndTheConnectionStaysSound) {
    // The framing rules are the same code as over a socket (websocket_framing_test.cpp has
    // each): an unmasked frame is 1002, a message past max_message is 1009; the server's
    // side ends behind its closing frame, the connection's other streams go on.
    expect_printed(
        py("unmasked"),
        {{"status", "200"}, {"close_code", "1002"}, {"server_ended", "1"}, {"after", "200"}});
    expect_printed(
        py("too_big", "/small"),
        {{"status", "200"}, {"close_code", "1009"}, {"server_ended", "1"}, {"after", "200"}});
}

TEST_F(WsOverH2, AMessageSentWithTheConnectIsTheSessionsFirst) {
    // DATA that arrives before the 200 is kept and parsed once the session starts.
    expect_printed(
        py("early"),
        {{"status", "200"}, {"got", "early bird"}, {"text", "True"}, {"close_code", "1000"}});
}

TEST_F(WsOverH2, SessionsAndRequestsShareOneConnection) {
    expect_printed(py("many"), {{"statuses", "200,200,200"}, {"echoed", "3"}, {"get", "200"}});
}

TEST_F(WsOverH2, ClientResetEndsTheSessionWith1006) {
    const PyResult r = py("reset");
    expect_printed(
        r,
        {{"first", "True"}, {"second_status", "200"}, {"second", "True"}, {"close_code", "1000"}});
    ASSERT_TRUE(seen.wait(3s)) << r.output;
    EXPECT_EQ(seen.code, cc::abnormal);
}

TEST_F(WsOverH2, EndStreamWithoutAClosingFrameIs1006AndTheStreamIsCancelled) {
    // RFC 8441 5: an end without the closing handshake is an abnormal closure; the server
    // resets its side with CANCEL.
    const PyResult r = py("end");
    expect_printed(r, {{"first", "True"}, {"reset", "8"}, {"after", "200"}});
    ASSERT_TRUE(seen.wait(3s)) << r.output;
    EXPECT_EQ(seen.code, cc::abnormal);
}

TEST_F(WsOverH2, HeldMessagesHoldTheClientBackAndAllArrive) {
    // 3.75 MB sent at once to a handler that holds each message 20 ms: what arrives while
    // one is held stays counted in the stream window, so the client waits; nothing is lost
    // or reordered.
    expect_printed(py("held", "/slow-echo"), {{"echoed", "60"}, {"close_code", "1000"}});
}

TEST_F(WsOverH2, ARoomSpansHttp1AndHttp2Sessions) {
    WsClient c1 = WsClient::connect(app.port());
    ASSERT_TRUE(c1.connected());
    auto resp = c1.handshake("/room");
    ASSERT_TRUE(resp && c1.open());
    for (int i = 0; i < 100 && hub().room("r").count() < 1; ++i) std::this_thread::sleep_for(10ms);
    const PyResult r = py("hello", "/room");
    expect_printed(r, {{"status", "200"}, {"got", "from-h2"}, {"close_code", "1000"}});
    auto f = c1.read_frame(3000ms);
    ASSERT_TRUE(f.has_value()) << c1.error();
    EXPECT_TRUE(f->is(Opcode::text));
    EXPECT_EQ(f->payload, "from-h2");
    // And the other way: the HTTP/1.1 member's message reaches itself (the h2 one has left).
    ASSERT_TRUE(c1.send_frame(Opcode::text, "from-h1"));
    f = c1.read_frame(3000ms);
    ASSERT_TRUE(f.has_value()) << c1.error();
    EXPECT_EQ(f->payload, "from-h1");
}

TEST_F(WsOverH2, GracefulStopClosesSessionsWith1001) {
    auto client = std::async(std::launch::async, [this] { return py("await_close"); });
    // The session is open once the handler saw it: give the client time to get there.
    std::this_thread::sleep_for(700ms);
    app.stop();
    auto waited = std::async(std::launch::async, [this] { return app.wait(); });
    ASSERT_EQ(waited.wait_for(5s), std::future_status::ready);
    const PyResult r = client.get();
    expect_printed(r, {{"status", "200"},
                       {"text", "True"},
                       {"close_code", "1001"},
                       {"close_reason", "server shutting down"}});
}

class WsOverH2ShortIdle : public WsOverH2 {
  protected:
    void listen() override {
        app.options().idle_timeout = Ms{500};
        WsOverH2::listen();
    }
};

TEST_F(WsOverH2ShortIdle, AnOpenSessionKeepsItsConnectionPastTheIdleTimeout) {
    // The connection's idle timeout counts time without streams; a session's own timers
    // (ping_interval, pong_timeout) watch a silent session.
    expect_printed(
        py("idle"),
        {{"status", "200"}, {"before", "True"}, {"after", "True"}, {"close_code", "1000"}});
}

class WsOverH2Tls : public WsOverH2 {
  protected:
    void SetUp() override {
        app.get("/page", [this] {
            return Response::html(
                "<html><body><div id=out>pending</div><script>"
                "const ws = new WebSocket('wss://localhost:" +
                std::to_string(app.port()) +
                "/which');"
                "ws.onopen = () => ws.send('hi');"
                "const report = r => fetch('/report?r=' + encodeURIComponent(r));"
                "ws.onmessage = e => { report('got:' + e.data); ws.close(); };"
                "ws.onerror = () => report('error');"
                "</script></body></html>");
        });
        app.get("/report", [this](Request& req) {
            {
                std::lock_guard lock(report_mu_);
                report_ = std::string(req.query("r").value_or("<none>"));
            }
            report_cv_.notify_all();
            return "ok";
        });
        app.ws("/which", [](WebSocket& ws, Request& req) -> Task<void> {
            WsMessage m = co_await ws.receive();
            if (m.is_close()) co_return;
            co_await ws.send("version " + std::to_string(req.version()) + " echo " +
                             std::string(m.data));
            while (!(co_await ws.receive()).is_close()) {
            }
        });
        WsOverH2::SetUp();
    }
    void listen() override {
        TlsOptions tls;
        tls.cert = test::test_certs().server_ec_cert;
        tls.key = test::test_certs().server_ec_key;
        app.listen_tls("127.0.0.1:0", std::move(tls));
    }
    // What the page reported, once it did, or nullopt after `timeout`.
    std::optional<std::string> wait_report(std::chrono::seconds timeout) {
        std::unique_lock lock(report_mu_);
        report_cv_.wait_for(lock, timeout, [this] { return report_.has_value(); });
        return report_;
    }

  private:
    std::mutex report_mu_;
    std::condition_variable report_cv_;
    std::optional<std::string> report_;
};

// A browser: Chromium loads a page over h2 (ALPN) and opens a WebSocket to the same origin,
// which it runs as an extended CONNECT on that connection when the server announced it. The
// route answers with the HTTP version the session came over.
TEST_F(WsOverH2Tls, ChromiumRunsItsWebSocketOverTheH2Connection) {
    if (run_command("command -v chromium >/dev/null").status != 0) {
        if (std::getenv("VELA_CI")) FAIL() << "chromium is missing: run scripts/install-deps";
        GTEST_SKIP() << "chromium is missing: run scripts/install-deps";
    }
    const std::string url = "https://localhost:" + std::to_string(app.port()) + "/page";
    // The page reports what the WebSocket answered with a request of its own, and the browser
    // runs until it did (at most 60 s): --dump-dom printed the page as soon as headless
    // Chromium's virtual time ran out, which on a loaded machine came before the answer.
    char dir[] = "/tmp/vela-chromium-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    const std::string profile = dir;
    const std::string cmd =
        "exec chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage "
        "--no-first-run --no-default-browser-check --disable-extensions "
        "--disable-background-networking --ignore-certificate-errors --user-data-dir='" +
        profile + "' '" + url + "' >/dev/null 2>&1";
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::setpgid(0, 0);
        ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::setpgid(pid, pid);
    const std::optional<std::string> report = wait_report(60s);
    ::kill(-pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    run_command("rm -rf '" + profile + "'");
    ASSERT_TRUE(report.has_value()) << "the page reported nothing in 60 s";
    EXPECT_EQ(*report, "got:version 20 echo hi");
}

TEST_F(WsOverH2Tls, EchoesOverH2WithTls) {
    const PyResult r = run_h2_client(app.port(), "echo", "/echo", test::test_certs().ca);
    expect_printed(
        r, {{"alpn", "h2"}, {"status", "200"}, {"binary_3m", "True"}, {"close_code", "1000"}});
}

class WsOverH2Off : public WsOverH2 {
  protected:
    void listen() override {
        app.options().http2.websocket = false;
        WsOverH2::listen();
    }
};

TEST_F(WsOverH2Off, TheOptionOffAnnouncesNothing) {
    expect_printed(py("settings"), {{"enable_connect_protocol", "0"}});
}

// WebSockets over HTTP/2 through vela's reverse proxy: the gateway answers the extended
// CONNECT itself and tunnels the stream's bytes to the WebSocket server over an HTTP/1.1
// upgrade (a key of its own, the server's Sec-WebSocket-Accept checked).
class WsOverH2ThroughProxy : public WsServer {
  protected:
    void SetUp() override {
        if (!have_client()) GTEST_SKIP() << "python3-h2 or python3-wsproto is not installed";
        WsServer::SetUp();
        quick_options(gw.options());
        ReverseProxyOptions o;
        o.upstreams = {"http://127.0.0.1:" + std::to_string(app.port())};
        reverse_proxy(gw, "/", std::move(o));
        start_app(gw);
    }
    void TearDown() override { gw.stop(); }
    PyResult py(const std::string& scenario, const std::string& path = "/echo") {
        return run_h2_client(gw.port(), scenario, path);
    }
    App gw;
};

TEST_F(WsOverH2ThroughProxy, TheGatewayOffersExtendedConnect) {
    expect_printed(py("settings"), {{"enable_connect_protocol", "1"}});
}

TEST_F(WsOverH2ThroughProxy, EchoesEveryKindOfMessageThroughTheTunnel) {
    const PyResult r = py("echo");
    expect_echoed_everything(r);
    // The WebSocket server saw the client's own closing frame, passed through.
    ASSERT_TRUE(seen.wait(3s)) << r.output;
    EXPECT_EQ(seen.code, 1000);
    EXPECT_EQ(seen.reason, "bye");
}

TEST_F(WsOverH2ThroughProxy, ExtensionsAndSubprotocolsAreTheEndsBusiness) {
    const PyResult d = py("deflate");
    expect_printed(
        d,
        {{"status", "200"}, {"text_1m", "True"}, {"wire_smaller", "True"}, {"close_code", "1000"}});
    EXPECT_NE(d["extensions"].find("permessage-deflate"), std::string::npos) << d.output;
    expect_printed(py("subproto", "/proto"),
                   {{"status", "200"}, {"subprotocol", "b"}, {"text", "True"}});
}

TEST_F(WsOverH2ThroughProxy, UpstreamRefusalsComeBackAsTheirStatus) {
    expect_printed(py("status", "/nothing"), {{"status", "404"}, {"after", "200"}});
    expect_printed(py("status", "/proto-required"), {{"status", "400"}, {"after", "200"}});
    expect_printed(py("badproto", "/echo"), {{"status", "501"}, {"after", "200"}});
}

TEST_F(WsOverH2ThroughProxy, ServerCloseAndClientResetCrossTheTunnel) {
    expect_printed(py("server_close", "/close3000"), {{"status", "200"},
                                                      {"close_code", "3000"},
                                                      {"close_reason", "server done"},
                                                      {"after", "200"}});
    const PyResult r = py("reset");
    expect_printed(
        r,
        {{"first", "True"}, {"second_status", "200"}, {"second", "True"}, {"close_code", "1000"}});
    // The reset stream's upstream connection was closed: that session ended abnormally.
    ASSERT_TRUE(seen.wait(3s)) << r.output;
    EXPECT_EQ(seen.code, cc::abnormal);
}

TEST_F(WsOverH2ThroughProxy, SessionsShareTheClientsConnectionAndBackPressureHolds) {
    expect_printed(py("many"), {{"statuses", "200,200,200"}, {"echoed", "3"}, {"get", "200"}});
    expect_printed(py("early"), {{"status", "200"}, {"got", "early bird"}, {"close_code", "1000"}});
    expect_printed(py("held", "/slow-echo"), {{"echoed", "60"}, {"close_code", "1000"}});
}

// ReverseProxyOptions::edit_request_headers applies to the HTTP/1.1 upgrade the gateway sends
// for an extended CONNECT as well: the WebSocket server sees the fields the hook added from the
// request (its path and :protocol).
TEST(WsOverH2ThroughProxyHook, EditRequestHeadersReachTheWebSocketServer) {
    if (!have_client()) GTEST_SKIP() << "python3-h2 or python3-wsproto is not installed";
    App who;
    who.ws("/who", [](WebSocket& ws, Request& req) -> Task<void> {
        co_await ws.send(std::string(req.header("x-path")) + " " +
                         std::string(req.header("x-protocol")));
        while (!(co_await ws.receive()).is_close()) {
        }
    });
    quick_options(who.options());
    start_app(who);
    App gw;
    quick_options(gw.options());
    ReverseProxyOptions o;
    o.upstreams = {"http://127.0.0.1:" + std::to_string(who.port())};
    o.edit_request_headers = [](const Request& req,
                                std::vector<std::pair<std::string, std::string>>& fields) {
        fields.emplace_back("X-Path", std::string(req.path()));
        fields.emplace_back("X-Protocol", std::string(req.protocol()));
    };
    reverse_proxy(gw, "/", std::move(o));
    start_app(gw);
    // "hello": opens the session, sends a message, prints the first one received, closes.
    expect_printed(run_h2_client(gw.port(), "hello", "/who"),
                   {{"status", "200"}, {"got", "/who websocket"}, {"close_code", "1000"}});
}

}  // namespace
}  // namespace vela::e2e
