// The WebSocket client (vela::ws::connect) end to end:
//
//  * against the vela server of tests/e2e/ws/ws_server.hpp, over ws:// and wss://: echo of
//    text, binary, a 1 MB message, permessage-deflate, subprotocols, extra headers, pings
//    both ways, the closing handshake both ways;
//  * against raw-socket servers (tests/e2e/raw_server.hpp) that botch the handshake or the
//    framing on purpose, and that capture the bytes the client sends (masking, deflate);
//  * against a real third-party server: python3-websockets (tests/e2e/ws/echo_server.py).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "e2e/client.hpp"
#include "e2e/example_process.hpp"
#include "e2e/process.hpp"
#include "e2e/raw_server.hpp"
#include "e2e/ws/ws_server.hpp"
#include "tls/certs.hpp"
#include "vela/reactor/block_on.hpp"
#include "vela/ws/deflate.hpp"
#include "vela/wsclient/connect.hpp"

namespace vela::e2e {
namespace {

using ws::Opcode;
namespace cc = ws::close_code;

template <class T>
T run(Task<T> t) {
    return block_on(std::move(t));
}

// Lets the closing handshake finish (the server's close frame and its TCP close) before the
// test's loop ends.
Task<void> settle() { co_await vela::sleep(Ms{150}); }

class WsClientE2e : public WsServer {
  protected:
    virtual std::string url(std::string_view path) {
        return "ws://127.0.0.1:" + std::to_string(app.port()) + std::string(path);
    }
};

TEST_F(WsClientE2e, EchoesTextAndBinary) {
    run([&]() -> Task<void> {
        ws::Session s = co_await ws::connect(url("/echo"));
        EXPECT_TRUE(s->open());
        EXPECT_TRUE(s->compressed());
        EXPECT_TRUE(s->subprotocol().empty());
        EXPECT_TRUE(co_await s->send("hello"));
        WsMessage m = co_await s->receive();
        EXPECT_TRUE(m.is_text());
        EXPECT_EQ(m.data, "hello");
        std::string bin(256, '\0');
        for (std::size_t i = 0; i < bin.size(); ++i) bin[i] = static_cast<char>(i);
        EXPECT_TRUE(co_await s->send(bin, WsType::binary));
        m = co_await s->receive();
        EXPECT_TRUE(m.is_binary());
        EXPECT_EQ(m.data, bin);
        EXPECT_TRUE(co_await s->send(""));
        m = co_await s->receive();
        EXPECT_TRUE(m.is_text());
        EXPECT_TRUE(m.data.empty());
        s->close();
        m = co_await s->receive();
        EXPECT_TRUE(m.is_close());
        EXPECT_EQ(m.code, cc::normal);
        co_await settle();
    }());
}

TEST_F(WsClientE2e, OneMegabyteMessage) {
    std::string big(1 << 20, '\0');
    std::mt19937 rng(7);
    for (char& c : big) c = static_cast<char>(rng());
    run([&]() -> Task<void> {
        ws::Session s = co_await ws::connect(url("/plain"));
        EXPECT_FALSE(s->compressed());
        for (int i = 0; i < 3; ++i) {
            EXPECT_TRUE(co_await s->send(big, WsType::binary));
            WsMessage m = co_await s->receive();
            EXPECT_TRUE(m.is_binary());
            EXPECT_TRUE(m.data == big) << "message " << i << ": " << m.data.size() << " bytes";
        }
        s->close();
        co_await settle();
    }());
}

TEST_F(WsClientE2e, DeflateNegotiatedAndUsed) {
    std::string text;
    while (text.size() < 100 * 1024) text += "vela compresses this line again and again; ";
    run([&]() -> Task<void> {
        ws::Session s = co_await ws::connect(url("/echo"));
        EXPECT_TRUE(s->compressed());
        for (int i = 0; i < 3; ++i) {  // the contexts carry over between messages
            EXPECT_TRUE(co_await s->send(text));
            WsMessage m = co_await s->receive();
            EXPECT_TRUE(m.is_text());
            EXPECT_TRUE(m.data == text) << m.data.size();
        }
        s->close();
        co_await settle();
    }());
    run([&]() -> Task<void> {
        ws::ConnectOptions o;
        o.deflate = false;
        ws::Session s = co_await ws::connect(url("/echo"), o);
        EXPECT_FALSE(s->compressed());
        EXPECT_TRUE(co_await s->send(text));
        EXPECT_TRUE((co_await s->receive()).data == text);
        s->close();
        co_await settle();
    }());
}

TEST_F(WsClientE2e, SubprotocolNegotiated) {
    run([&]() -> Task<void> {
        ws::ConnectOptions o;
        o.subprotocols = {"a", "b"};
        ws::Session s = co_await ws::connect(url("/proto"), o);
        EXPECT_EQ(s->subprotocol(), "b");
        co_await s->send("x");
        EXPECT_EQ((co_await s->receive()).data, "x");
        s->close();
        co_await settle();
    }());
    run([&]() -> Task<void> {  // offered, not chosen: none
        ws::ConnectOptions o;
        o.subprotocols = {"a"};
        ws::Session s = co_await ws::connect(url("/echo"), o);
        EXPECT_TRUE(s->subprotocol().empty());
        s->close();
        co_await settle();
    }());
}

TEST_F(WsClientE2e, ExtraHeadersReachTheServer) {
    run([&]() -> Task<void> {
        ws::ConnectOptions o;
        o.headers = {{"X-Test", "from the client"}};
        ws::Session s = co_await ws::connect(url("/rooms/7?q=x"), o);
        WsMessage m = co_await s->receive();
        EXPECT_EQ(m.data, "7|from the client|x");
        s->close();
        co_await settle();
    }());
    ws::ConnectOptions bad;
    bad.headers = {{"Sec-WebSocket-Key", "mine"}};
    EXPECT_THROW(run(ws::connect(url("/echo"), bad)), std::invalid_argument);
    EXPECT_THROW(run(ws::connect("http://127.0.0.1:1/echo")), std::invalid_argument);
}

TEST_F(WsClientE2e, PingsAnsweredBothWays) {
    run([&]() -> Task<void> {
        // /timers pings every 200 ms and drops a client that does not answer within 200 ms;
        // the client pings every 100 ms and drops a server that does not answer in 300 ms.
        ws::ConnectOptions o;
        o.ping_interval = Ms{100};
        o.pong_timeout = Ms{300};
        ws::Session s = co_await ws::connect(url("/timers"), o);
        s->ping("hi");
        co_await vela::sleep(Ms{1000});
        EXPECT_TRUE(s->open());
        EXPECT_TRUE(co_await s->send("still here"));
        WsMessage m = co_await s->receive();
        EXPECT_EQ(m.data, "still here");
        s->close();
        co_await settle();
    }());
}

TEST_F(WsClientE2e, ClientClosesWithCodeAndReason) {
    run([&]() -> Task<void> {
        ws::Session s = co_await ws::connect(url("/echo"));
        s->close(4001, "client done");
        EXPECT_FALSE(s->open());
        WsMessage m = co_await s->receive();
        EXPECT_TRUE(m.is_close());
        EXPECT_EQ(m.code, 4001);
        EXPECT_EQ(m.data, "client done");
        EXPECT_FALSE(co_await s->send("late"));
        co_await settle();
    }());
    ASSERT_TRUE(seen.wait(Ms{2000}));
    EXPECT_EQ(seen.code, 4001);
    EXPECT_EQ(seen.reason, "client done");
}

TEST_F(WsClientE2e, ServerClosesWithCodeAndReason) {
    run([&]() -> Task<void> {
        ws::Session s = co_await ws::connect(url("/close3000"));
        WsMessage m = co_await s->receive();
        EXPECT_TRUE(m.is_close());
        EXPECT_EQ(m.code, 3000);
        EXPECT_EQ(m.data, "server done");
        EXPECT_FALSE(s->open());
        co_await settle();
    }());
}

TEST_F(WsClientE2e, MessageOverTheLimitCloses1009) {
    run([&]() -> Task<void> {
        ws::ConnectOptions o;
        o.max_message = 1000;
        ws::Session s = co_await ws::connect(url("/plain"), o);
        co_await s->send(std::string(999, 'k'));
        EXPECT_EQ((co_await s->receive()).data.size(), 999u);
        co_await s->send(std::string(2000, 'k'));  // its echo is too big for us
        WsMessage m = co_await s->receive();
        EXPECT_TRUE(m.is_close());
        EXPECT_EQ(m.code, cc::message_too_big);
        co_await settle();
    }());
}

TEST_F(WsClientE2e, DroppingTheSessionClosesIt) {
    run([&]() -> Task<void> {
        {
            ws::Session s = co_await ws::connect(url("/echo"));
            co_await s->send("one");
            EXPECT_EQ((co_await s->receive()).data, "one");
        }  // closed with 1000 here
        co_await settle();
    }());
    ASSERT_TRUE(seen.wait(Ms{2000}));
    EXPECT_EQ(seen.code, cc::normal);
}

// A handshake the server refuses or botches: the HandshakeError's failure and status.
void expect_refused(const std::string& url, const ws::ConnectOptions& o, ws::HandshakeFailure f,
                    int status) {
    try {
        run([&]() -> Task<void> {
            ws::Session s = co_await ws::connect(url, o);
            ADD_FAILURE() << "connected to " << url;
            s->close();
        }());
    } catch (const ws::HandshakeError& e) {
        EXPECT_EQ(e.failure(), f) << e.what();
        EXPECT_EQ(e.status(), status) << e.what();
        EXPECT_EQ(e.kind(), http::ErrorKind::protocol);
        EXPECT_NE(std::string(e.what()).find(url.substr(0, url.find('?'))), std::string::npos)
            << e.what();
    }
}

TEST_F(WsClientE2e, NotFoundIsAStatusError) {
    expect_refused(url("/nowhere"), {}, ws::HandshakeFailure::status, 404);
    ws::ConnectOptions o;  // /proto-required refuses a client offering none of its protocols
    o.subprotocols = {"zzz"};
    expect_refused(url("/proto-required"), o, ws::HandshakeFailure::status, 400);
}

class WsClientTls : public WsClientE2e {
  protected:
    void listen() override {
        TlsOptions tls;
        tls.cert = test::test_certs().server_ec_cert;
        tls.key = test::test_certs().server_ec_key;
        app.listen_tls("127.0.0.1:0", std::move(tls));
    }
    std::string url(std::string_view path) override {
        return "wss://localhost:" + std::to_string(app.port()) + std::string(path);
    }
};

TEST_F(WsClientTls, EchoesOverWss) {
    std::string big(1 << 20, 'w');
    run([&]() -> Task<void> {
        ws::ConnectOptions o;
        o.tls.ca_file = test::test_certs().ca;
        ws::Session s = co_await ws::connect(url("/echo"), o);
        EXPECT_TRUE(s->compressed());
        co_await s->send("secure");
        EXPECT_EQ((co_await s->receive()).data, "secure");
        co_await s->send(big, WsType::binary);
        WsMessage m = co_await s->receive();
        EXPECT_TRUE(m.is_binary());
        EXPECT_TRUE(m.data == big);
        s->close(4002, "tls done");
        co_await settle();
    }());
    ASSERT_TRUE(seen.wait(Ms{2000}));
    EXPECT_EQ(seen.code, 4002);
}

TEST_F(WsClientTls, UnknownCaIsATlsError) {
    EXPECT_THROW(run([&]() -> Task<void> { ws::Session s = co_await ws::connect(url("/echo")); }()),
                 http::TlsHandshakeError);
}

TEST_F(WsClientTls, WssThroughAProxyTunnel) {
    ForwardProxy proxy;
    http::ClientOptions co;
    co.proxy = proxy.url();
    co.tls.ca_file = test::test_certs().ca;
    http::Client client(co);
    run([&]() -> Task<void> {
        ws::ConnectOptions o;
        o.client = &client;
        ws::Session s = co_await ws::connect(url("/echo"), o);
        co_await s->send("tunnelled");
        EXPECT_EQ((co_await s->receive()).data, "tunnelled");
        s->close();
        co_await settle();
    }());
    ASSERT_EQ(proxy.lines().size(), 1u);
    EXPECT_EQ(proxy.lines()[0], "CONNECT localhost:" + std::to_string(app.port()) + " HTTP/1.1");
}

// ---- raw servers -----------------------------------------------------------------------------

// The Sec-WebSocket-Key of a request head.
std::string key_of(const std::string& head) {
    const std::string name = "Sec-WebSocket-Key: ";
    const std::size_t at = head.find(name);
    if (at == std::string::npos) return {};
    const std::size_t end = head.find("\r\n", at);
    return head.substr(at + name.size(), end - at - name.size());
}

// A 101 with `accept` and the `extra` fields.
std::string switching(const std::string& accept, std::string_view extra = {}) {
    return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Accept: " +
           accept + "\r\n" + std::string(extra) + "\r\n";
}

// Exactly `n` bytes from `fd` (fewer at the end of the stream or after 3 s of silence).
std::string read_n(int fd, std::size_t n) {
    std::string out;
    char buf[65536];
    while (out.size() < n) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 3000) <= 0) break;
        const ssize_t k = ::read(fd, buf, std::min(sizeof buf, n - out.size()));
        if (k <= 0) break;
        out.append(buf, static_cast<std::size_t>(k));
    }
    return out;
}

// One frame as a client sent it.
struct RawFrame {
    std::uint8_t b0 = 0;
    bool masked = false;
    std::uint8_t key[4] = {};
    std::string payload;  // unmasked
};

std::optional<RawFrame> read_frame(int fd) {
    const std::string h = read_n(fd, 2);
    if (h.size() < 2) return std::nullopt;
    RawFrame f;
    f.b0 = static_cast<std::uint8_t>(h[0]);
    const auto b1 = static_cast<std::uint8_t>(h[1]);
    f.masked = (b1 & 0x80) != 0;
    std::uint64_t len = b1 & 0x7F;
    if (len >= 126) {
        const std::string ext = read_n(fd, len == 126 ? 2 : 8);
        len = 0;
        for (const char c : ext) len = len << 8 | static_cast<std::uint8_t>(c);
    }
    if (f.masked) {
        const std::string k = read_n(fd, 4);
        if (k.size() < 4) return std::nullopt;
        std::memcpy(f.key, k.data(), 4);
    }
    f.payload = read_n(fd, static_cast<std::size_t>(len));
    if (f.payload.size() != len) return std::nullopt;
    if (f.masked)
        for (std::size_t i = 0; i < f.payload.size(); ++i)
            f.payload[i] = static_cast<char>(f.payload[i] ^ f.key[i % 4]);
    return f;
}

std::string ws_url(const RawServer& s, std::string_view path = "/") {
    std::string u = s.url(path);
    return "ws" + u.substr(4);
}

TEST(WsClientRaw, BadAcceptKeyIsRefused) {
    RawServer server([](int fd) {
        read_head(fd);
        write_all(fd, switching("dGhlIHNhbXBsZSBub25jZQ=="));
        read_n(fd, 1);
    });
    expect_refused(ws_url(server), {}, ws::HandshakeFailure::accept, 101);
}

TEST(WsClientRaw, MissingUpgradeIsRefused) {
    RawServer server([](int fd) {
        const std::string key = key_of(read_head(fd));
        write_all(fd,
                  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Accept: " +
                      ws_accept_key(key) + "\r\n\r\n");
        read_n(fd, 1);
    });
    expect_refused(ws_url(server), {}, ws::HandshakeFailure::upgrade, 101);
}

TEST(WsClientRaw, UnofferedSubprotocolIsRefused) {
    RawServer server([](int fd) {
        const std::string key = key_of(read_head(fd));
        write_all(fd, switching(ws_accept_key(key), "Sec-WebSocket-Protocol: evil\r\n"));
        read_n(fd, 1);
    });
    ws::ConnectOptions o;
    o.subprotocols = {"chat"};
    expect_refused(ws_url(server), o, ws::HandshakeFailure::subprotocol, 101);
    expect_refused(ws_url(server), {}, ws::HandshakeFailure::subprotocol, 101);
}

TEST(WsClientRaw, UnofferedExtensionIsRefused) {
    std::atomic<int> round{0};
    RawServer server([&](int fd) {
        const std::string key = key_of(read_head(fd));
        const char* ext[] = {"Sec-WebSocket-Extensions: permessage-deflate\r\n",
                             "Sec-WebSocket-Extensions: permessage-deflate; x=1\r\n",
                             "Sec-WebSocket-Extensions: x-webkit-deflate-frame\r\n"};
        write_all(fd, switching(ws_accept_key(key), ext[round++ % 3]));
        read_n(fd, 1);
    });
    ws::ConnectOptions off;
    off.deflate = false;
    expect_refused(ws_url(server), off, ws::HandshakeFailure::extension, 101);
    expect_refused(ws_url(server), {}, ws::HandshakeFailure::extension, 101);
    expect_refused(ws_url(server), {}, ws::HandshakeFailure::extension, 101);
}

TEST(WsClientRaw, FramesAreMaskedWithFreshKeys) {
    std::mutex mu;
    std::string head;
    std::vector<RawFrame> frames;
    RawServer server([&](int fd) {
        std::string h = read_head(fd);
        write_all(fd, switching(ws_accept_key(key_of(h))));
        std::vector<RawFrame> got;
        for (int i = 0; i < 4; ++i)
            if (auto f = read_frame(fd)) got.push_back(*f);
        std::string close;
        ws::append_frame(close, Opcode::close, ws::close_payload(cc::normal, "raw done"));
        write_all(fd, close);
        std::lock_guard lock(mu);
        head = std::move(h);
        frames = std::move(got);
    });
    run([&]() -> Task<void> {
        ws::ConnectOptions o;
        o.deflate = false;
        ws::Session s = co_await ws::connect(ws_url(server, "/m"), o);
        co_await s->send("one");
        co_await s->send("two");
        co_await s->send(std::string(70000, 'z'), WsType::binary);
        s->ping("p");
        WsMessage m = co_await s->receive();
        EXPECT_TRUE(m.is_close());
        EXPECT_EQ(m.code, cc::normal);
        EXPECT_EQ(m.data, "raw done");
        co_await settle();
    }());
    std::lock_guard lock(mu);
    EXPECT_NE(head.find("GET /m HTTP/1.1\r\n"), std::string::npos) << head;
    EXPECT_NE(head.find("Sec-WebSocket-Version: 13\r\n"), std::string::npos) << head;
    EXPECT_EQ(key_of(head).size(), 24u) << head;  // 16 bytes in base64
    EXPECT_EQ(head.find("Sec-WebSocket-Extensions"), std::string::npos) << head;
    ASSERT_EQ(frames.size(), 4u);
    EXPECT_EQ(frames[0].b0, 0x81);
    EXPECT_EQ(frames[0].payload, "one");
    EXPECT_EQ(frames[1].payload, "two");
    EXPECT_EQ(frames[2].b0, 0x82);
    EXPECT_EQ(frames[2].payload, std::string(70000, 'z'));
    EXPECT_EQ(frames[3].b0, 0x89);
    EXPECT_EQ(frames[3].payload, "p");
    for (std::size_t i = 0; i < frames.size(); ++i) {
        EXPECT_TRUE(frames[i].masked) << i;
        for (std::size_t j = 0; j < i; ++j)
            EXPECT_NE(std::memcmp(frames[i].key, frames[j].key, 4), 0) << i << " " << j;
    }
}

TEST(WsClientRaw, DeflateOnTheWire) {
    std::mutex mu;
    std::string head;
    std::optional<RawFrame> frame;
    RawServer server([&](int fd) {
        std::string h = read_head(fd);
        write_all(fd, switching(ws_accept_key(key_of(h)),
                                "Sec-WebSocket-Extensions: permessage-deflate; "
                                "server_no_context_takeover; client_max_window_bits=10\r\n"));
        auto f = read_frame(fd);
        std::string close;
        ws::append_frame(close, Opcode::close, ws::close_payload(cc::normal, {}));
        write_all(fd, close);
        std::lock_guard lock(mu);
        head = std::move(h);
        frame = std::move(f);
    });
    const std::string text(100 * 1024, 'a');
    run([&]() -> Task<void> {
        ws::Session s = co_await ws::connect(ws_url(server));
        EXPECT_TRUE(s->compressed());
        co_await s->send(text);
        EXPECT_TRUE((co_await s->receive()).is_close());
        co_await settle();
    }());
    std::lock_guard lock(mu);
    EXPECT_NE(head.find("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"),
              std::string::npos)
        << head;
    ASSERT_TRUE(frame);
    EXPECT_EQ(frame->b0, 0xC1);  // FIN, RSV1 (compressed), text
    EXPECT_LT(frame->payload.size(), 2000u);
    ws::DeflateParams p;
    p.client_max_window_bits = 10;
    ws::Inflater inflater(p);
    std::string out;
    EXPECT_EQ(inflater.inflate(frame->payload, true, out, 1 << 20), 0);
    EXPECT_TRUE(out == text) << out.size();
}

TEST(WsClientRaw, MaskedServerFrameFails1002) {
    std::mutex mu;
    std::optional<RawFrame> answer;
    RawServer server([&](int fd) {
        write_all(fd, switching(ws_accept_key(key_of(read_head(fd)))));
        std::string frame;
        ws::append_client_frame(frame, Opcode::text, "masked", 0x01020304);
        write_all(fd, frame);
        auto f = read_frame(fd);
        std::lock_guard lock(mu);
        answer = std::move(f);
    });
    run([&]() -> Task<void> {
        ws::ConnectOptions o;
        o.close_timeout = Ms{300};
        ws::Session s = co_await ws::connect(ws_url(server), o);
        WsMessage m = co_await s->receive();
        EXPECT_TRUE(m.is_close());
        EXPECT_EQ(m.code, cc::protocol_error);
        co_await settle();
    }());
    std::lock_guard lock(mu);
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->b0, 0x88);
    EXPECT_TRUE(answer->masked);
    ASSERT_GE(answer->payload.size(), 2u);
    EXPECT_EQ(static_cast<std::uint8_t>(answer->payload[0]) << 8 |
                  static_cast<std::uint8_t>(answer->payload[1]),
              cc::protocol_error);
}

TEST(WsClientRaw, CloseTimeoutEndsASilentServer) {
    std::atomic<long> eof_after{-1};
    RawServer server([&](int fd) {
        write_all(fd, switching(ws_accept_key(key_of(read_head(fd)))));
        read_frame(fd);  // the client's close, never answered
        const auto t0 = SteadyClock::now();
        if (read_n(fd, 1).empty())  // until the client gives up
            eof_after = std::chrono::duration_cast<Ms>(SteadyClock::now() - t0).count();
    });
    run([&]() -> Task<void> {
        ws::ConnectOptions o;
        o.close_timeout = Ms{200};
        ws::Session s = co_await ws::connect(ws_url(server), o);
        s->close(1000, "bye");
        co_await vela::sleep(Ms{800});  // the loop outlives the timeout
    }());
    for (int i = 0; i < 100 && eof_after < 0; ++i) std::this_thread::sleep_for(Ms{20});
    EXPECT_GE(eof_after, 100);
    EXPECT_LT(eof_after, 700);
}

// ---- a third-party server ----------------------------------------------------------------------

bool have_python_websockets() {
    return ::access("/usr/bin/python3", X_OK) == 0 &&
           succeeds("/usr/bin/python3 -c 'import websockets'");
}

TEST(WsClientPeers, PythonWebsocketsServer) {
    if (!have_python_websockets()) GTEST_SKIP() << "python3-websockets is not installed";
    const std::uint16_t port = free_port();
    const std::string script = std::string(VELA_SOURCE_DIR) + "/tests/e2e/ws/echo_server.py";
    const pid_t py = ::fork();
    if (py == 0) {
        const std::string p = std::to_string(port);
        ::execl("/usr/bin/python3", "python3", script.c_str(), p.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    bool up = false;
    for (int i = 0; i < 100 && !up; ++i) {
        up = Client::tcp(port).connected();
        if (!up) std::this_thread::sleep_for(Ms{100});
    }
    ASSERT_TRUE(up) << "echo_server.py did not start";
    std::string big(1 << 20, '\0');
    std::mt19937 rng(3);
    for (char& c : big) c = static_cast<char>(rng());
    std::string text;
    while (text.size() < 100 * 1024) text += "python and vela agree on deflate; ";
    run([&]() -> Task<void> {
        ws::ConnectOptions o;
        o.subprotocols = {"superchat", "chat"};
        o.headers = {{"X-Test", "from vela"}};
        ws::Session s = co_await ws::connect("ws://127.0.0.1:" + std::to_string(port) + "/", o);
        EXPECT_EQ(s->subprotocol(), "chat");
        EXPECT_TRUE(s->compressed());
        co_await s->send("hello python");
        WsMessage m = co_await s->receive();
        EXPECT_TRUE(m.is_text());
        EXPECT_EQ(m.data, "hello python");
        co_await s->send(big, WsType::binary);
        m = co_await s->receive();
        EXPECT_TRUE(m.is_binary());
        EXPECT_TRUE(m.data == big) << m.data.size();
        co_await s->send(text);
        m = co_await s->receive();
        EXPECT_TRUE(m.data == text) << m.data.size();
        co_await s->send("fragments");
        EXPECT_EQ((co_await s->receive()).data, "abcdef");
        co_await s->send("headers");
        EXPECT_EQ((co_await s->receive()).data, "from vela");
        s->close(4003, "bye python");
        m = co_await s->receive();
        EXPECT_TRUE(m.is_close());
        co_await settle();
    }());
    ::kill(py, SIGTERM);
    ::waitpid(py, nullptr, 0);
}

}  // namespace
}  // namespace vela::e2e
