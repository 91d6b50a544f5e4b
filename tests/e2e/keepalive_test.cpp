// Persistent connections over a real socket: keep-alive, close rules, pipelining, HEAD.

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "e2e/client.hpp"

namespace vela::e2e {
namespace {

class KeepAliveTest : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        add_basic_routes(app);
        app.get("/async/{id}", [](Request& r) -> Task<Response> {
            co_await vela::sleep(20ms);
            co_return "async " + std::string(r.param("id"));
        });
        app.get("/block", [this] {
            // Holds the (single) loop so that bytes for other connections pile up meanwhile.
            blocking = true;
            std::this_thread::sleep_for(300ms);
            return "unblocked";
        });
        start_app(app);
    }
    std::atomic<bool> blocking{false};
    App app;
};

TEST_F(KeepAliveTest, SeveralRequestsShareOneConnection) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.connected());
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(c.send(get_request("/users/" + std::to_string(i))));
        auto r = c.read_response();
        ASSERT_TRUE(r) << "request " << i << ": " << c.error();
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, std::to_string(i));
        EXPECT_FALSE(r->announces_close());
    }
    // Still open: nothing arrives and the connection is not closed.
    EXPECT_FALSE(c.readable_within(100ms));
}

TEST_F(KeepAliveTest, Http10WithoutKeepAliveClosesAfterResponse) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("GET /hello HTTP/1.0\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "Hello, World!");
    EXPECT_TRUE(r->announces_close());
    EXPECT_EQ(c.wait_end(2s), Client::End::eof);
}

TEST_F(KeepAliveTest, Http10WithKeepAliveStaysOpen) {
    Client c = Client::tcp(app.port());
    const std::string req = "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    ASSERT_TRUE(c.send(req));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(icontains(r->header("Connection"), "keep-alive"));
    ASSERT_TRUE(c.send(req));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "Hello, World!");
}

TEST_F(KeepAliveTest, ConnectionCloseClosesAfterResponse) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/hello", "Connection: close\r\n")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "Hello, World!");
    EXPECT_TRUE(r->announces_close());
    EXPECT_EQ(c.wait_end(2s), Client::End::eof);
}

TEST_F(KeepAliveTest, RequestsAfterConnectionCloseAreNotAnswered) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/users/1", "Connection: close\r\n") + get_request("/users/2")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "1");
    EXPECT_EQ(c.wait_end(2s), Client::End::eof) << "unexpected bytes: " << c.pending();
}

TEST_F(KeepAliveTest, SixteenPipelinedRequestsAnsweredInOrder) {
    Client c = Client::tcp(app.port());
    std::string batch;
    for (int i = 0; i < 16; ++i) batch += get_request("/users/" + std::to_string(i));
    ASSERT_TRUE(c.send(batch));  // one write
    for (int i = 0; i < 16; ++i) {
        auto r = c.read_response();
        ASSERT_TRUE(r) << "response " << i << ": " << c.error();
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, std::to_string(i)) << "responses out of order";
    }
    EXPECT_TRUE(c.pending().empty());
    // The server parses every request of one read and flushes all responses with one
    // write, so they arrive together; allow one split for scheduling on a loaded machine.
    EXPECT_LE(c.reads(), 2u);
    // The connection is still usable afterwards.
    ASSERT_TRUE(c.send(get_request("/users/99")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "99");
}

TEST_F(KeepAliveTest, ThousandPipelinedRequestsInOneWrite) {
    // ~40 KB of requests: more than one read buffer, so parsing continues across reads and
    // buffer growth.
    constexpr int kCount = 1000;
    Client c = Client::tcp(app.port(), 5000ms);
    std::string batch;
    for (int i = 0; i < kCount; ++i) batch += get_request("/users/" + std::to_string(i));
    ASSERT_TRUE(c.send(batch));
    for (int i = 0; i < kCount; ++i) {
        auto r = c.read_response();
        ASSERT_TRUE(r) << "response " << i << ": " << c.error();
        ASSERT_EQ(r->body, std::to_string(i));
    }
}

TEST_F(KeepAliveTest, PipelinedBodiesSpanningReadBuffers) {
    // Content-Length bodies that straddle read-buffer boundaries, all in one write.
    constexpr int kCount = 100;
    Client c = Client::tcp(app.port(), 5000ms);
    std::string batch;
    for (int i = 0; i < kCount; ++i) {
        std::string body(1000 + static_cast<std::size_t>(i) * 37, static_cast<char>('a' + i % 26));
        body.replace(0, std::to_string(i).size(), std::to_string(i));
        batch += request_with_body("POST", "/echo", body);
    }
    ASSERT_TRUE(c.send(batch));
    for (int i = 0; i < kCount; ++i) {
        auto r = c.read_response();
        ASSERT_TRUE(r) << "response " << i << ": " << c.error();
        ASSERT_EQ(r->status, 200);
        ASSERT_EQ(r->body.size(), 1000 + static_cast<std::size_t>(i) * 37);
        ASSERT_EQ(r->body.substr(0, std::to_string(i).size()), std::to_string(i));
    }
}

TEST_F(KeepAliveTest, ResponsesCarryDateAndServer) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/hello")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->version, "HTTP/1.1");
    EXPECT_EQ(r->reason, "OK");
    EXPECT_EQ(r->header_count("Date"), 1u);
    EXPECT_EQ(r->header("Date").size(), 29u) << r->header("Date");  // IMF-fixdate
    EXPECT_TRUE(r->header("Date").ends_with(" GMT")) << r->header("Date");
    EXPECT_EQ(r->header_count("Content-Length"), 1u);
    EXPECT_FALSE(r->has_header("Transfer-Encoding"));
}

TEST_F(KeepAliveTest, HeadOnGetRouteHasLengthButNoBody) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("HEAD /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    auto r = c.read_response(/*head_request=*/true);
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("Content-Length"), "13");
    EXPECT_TRUE(r->body.empty());
    // No stray body bytes follow: the next response starts right after the head.
    EXPECT_FALSE(c.readable_within(100ms)) << "stray bytes after HEAD response";
    ASSERT_TRUE(c.send(get_request("/hello")));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "Hello, World!");
    EXPECT_TRUE(c.pending().empty());
}

TEST_F(KeepAliveTest, PipelinedHeadThenGet) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(
        c.send("HEAD /hello HTTP/1.1\r\nHost: localhost\r\n\r\n" + get_request("/users/7")));
    auto r = c.read_response(true);
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "7");
}

TEST_F(KeepAliveTest, HalfClosedClientGetsItsResponse) {
    // A client may send its request and then shut down its sending side (RFC 9112 9.6
    // leaves this legal): a clean half-close is not an abort, the response still goes out.
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/users/1") + get_request("/users/2")));
    c.shutdown_write();
    for (const char* want : {"1", "2"}) {
        auto r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, want);
    }
}

TEST_F(KeepAliveTest, FinArrivingTogetherWithARequestIsNoticed) {
    // The last request and the client's FIN reach the socket together (here: while the
    // loop is held by another connection's handler). The server must see the end of input
    // and close after answering, not keep the connection until idle_timeout.
    Client a = Client::tcp(app.port());
    ASSERT_TRUE(a.send(get_request("/users/0")));
    auto r = a.read_response();  // accepted and idle now
    ASSERT_TRUE(r) << a.error();
    Client b = Client::tcp(app.port());
    ASSERT_TRUE(b.send(get_request("/block")));
    const auto t0 = SteadyClock::now();
    while (!blocking && ms_since(t0) < 2000) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(blocking);
    ASSERT_TRUE(a.send(get_request("/users/1")));
    a.shutdown_write();
    r = a.read_response();
    ASSERT_TRUE(r) << a.error();
    EXPECT_EQ(r->body, "1");
    EXPECT_EQ(a.wait_end(1500ms), Client::End::eof)
        << "the server missed the FIN that came with the request (connection kept open)";
    r = b.read_response();
    ASSERT_TRUE(r) << b.error();
    EXPECT_EQ(r->body, "unblocked");
}

TEST_F(KeepAliveTest, HalfClosedClientGetsItsAsyncResponse) {
    // Same as above with an asynchronous handler: the FIN arrives while the handler runs.
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/async/7")));
    c.shutdown_write();
    auto r = c.read_response();
    ASSERT_TRUE(r) << "response dropped after the client's clean half-close: " << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "async 7");
}

TEST_F(KeepAliveTest, ClientGoneDuringAsyncHandlerLeavesServerSound) {
    {
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send(get_request("/async/1") + get_request("/async/2")));
    }  // closed while the handler sleeps
    std::this_thread::sleep_for(60ms);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/async/3")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "async 3");
}

}  // namespace
}  // namespace vela::e2e
