// Slow and silent clients over a real socket: header, body and idle timeouts.
//
// The timeouts are 300 ms with a 20 ms wheel tick, so every test finishes in about a second;
// the lower bounds on elapsed time leave room for the coarse clock, the upper bounds for a
// loaded machine.

#include <gtest/gtest.h>

#include <string>

#include "e2e/client.hpp"

namespace vela::e2e {
namespace {

constexpr Ms kTimeout{300};
constexpr long long kEarliest = 250;  // ms: a timeout must not fire much before 300 ms
constexpr long long kLatest = 2500;   // ms: and must fire

void start_timeout_app(App& app, Ms header = kTimeout, Ms body = kTimeout, Ms idle = kTimeout) {
    quick_options(app.options());
    app.options().header_timeout = header;
    app.options().body_timeout = body;
    app.options().idle_timeout = idle;
    app.options().linger_timeout = Ms{300};
    add_basic_routes(app);
    start_app(app);
}

// Sends `bytes` one per `pause` until the server says something (or closes), at most 3 s.
void trickle_until_answered(Client& c, const std::string& bytes, Ms pause) {
    const auto t0 = SteadyClock::now();
    std::size_t i = 0;
    while (!c.readable_within(pause) && ms_since(t0) < 3000) {
        if (i < bytes.size() && !c.send(bytes.substr(i++, 1))) break;
    }
}

TEST(TimeoutTest, HeadersTrickledSlowerThanHeaderTimeoutGet408AndClose) {
    App app;
    start_timeout_app(app);
    const auto t0 = SteadyClock::now();
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("GET /hello HTTP/1.1\r\n"));
    // One byte every 50 ms keeps the connection busy but never finishes the head: the
    // deadline runs from the request's start and is not pushed back by each byte.
    trickle_until_answered(c, "Host: localhost\r\nX-Slow: " + std::string(100, 'a'), 50ms);
    const long long elapsed = ms_since(t0);
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(r->announces_close());
    EXPECT_GE(elapsed, kEarliest);
    EXPECT_LT(elapsed, kLatest);
    EXPECT_TRUE(c.closed_by_peer()) << "pending: " << c.pending();
}

TEST(TimeoutTest, ConnectionThatSendsNothingIsClosedSilently) {
    App app;
    start_timeout_app(app);
    const auto t0 = SteadyClock::now();
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.connected());
    EXPECT_EQ(c.wait_end(3s), Client::End::eof) << "pending: " << c.pending();
    const long long elapsed = ms_since(t0);
    EXPECT_TRUE(c.pending().empty()) << "no request, so no 408 expected";
    EXPECT_GE(elapsed, kEarliest);
    EXPECT_LT(elapsed, kLatest);
}

TEST(TimeoutTest, BodySlowerThanBodyTimeoutGets408AndClose) {
    App app;
    start_timeout_app(app);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n"));
    const auto t0 = SteadyClock::now();
    trickle_until_answered(c, std::string(99, 'b'), 50ms);
    const long long elapsed = ms_since(t0);
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(r->announces_close());
    EXPECT_GE(elapsed, kEarliest - 50);
    EXPECT_LT(elapsed, kLatest);
    EXPECT_TRUE(c.closed_by_peer()) << "pending: " << c.pending();
}

TEST(TimeoutTest, StalledChunkedBodyGets408) {
    App app;
    start_timeout_app(app);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(
        c.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
               "\r\n5\r\nhel"));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(c.closed_by_peer());
}

TEST(TimeoutTest, IdleKeepAliveConnectionIsClosed) {
    App app;
    start_timeout_app(app);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/hello")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_FALSE(r->announces_close());
    const auto t0 = SteadyClock::now();
    EXPECT_EQ(c.wait_end(3s), Client::End::eof) << "pending: " << c.pending();
    const long long elapsed = ms_since(t0);
    EXPECT_TRUE(c.pending().empty()) << "idle close must be silent";
    EXPECT_GE(elapsed, kEarliest);
    EXPECT_LT(elapsed, kLatest);
}

TEST(TimeoutTest, ActiveKeepAliveConnectionOutlivesIdleTimeout) {
    App app;
    start_timeout_app(app);
    Client c = Client::tcp(app.port());
    const auto t0 = SteadyClock::now();
    int i = 0;
    while (ms_since(t0) < 900) {  // three idle timeouts, never idle for more than ~60 ms
        ASSERT_TRUE(c.send(get_request("/users/" + std::to_string(i))));
        auto r = c.read_response();
        ASSERT_TRUE(r) << "after " << ms_since(t0) << " ms: " << c.error();
        EXPECT_EQ(r->body, std::to_string(i));
        ++i;
        std::this_thread::sleep_for(60ms);
    }
}

TEST(TimeoutTest, HeaderTimeoutRunsFromTheRequestsFirstByte) {
    // A second request on a keep-alive connection gets its own header_timeout, counted from
    // its first byte, not from the connection's start or the previous request.
    App app;
    start_timeout_app(app, kTimeout, kTimeout, /*idle=*/Ms{3000});
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/users/1")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    std::this_thread::sleep_for(450ms);  // longer than header_timeout, shorter than idle
    ASSERT_TRUE(c.send_in_pieces(get_request("/users/2"), 10, 20ms));  // ~80 ms in all
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "2");
}

TEST(TimeoutTest, ServerStaysSoundAfterTimeouts) {
    App app;
    start_timeout_app(app);
    {
        Client silent = Client::tcp(app.port());
        Client slow = Client::tcp(app.port());
        ASSERT_TRUE(slow.send("GET / HTTP/1.1\r\n"));
        EXPECT_TRUE(silent.closed_by_peer(3s));
        auto r = slow.read_response();
        ASSERT_TRUE(r) << slow.error();
        EXPECT_EQ(r->status, 408);
    }
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
}

}  // namespace
}  // namespace vela::e2e
