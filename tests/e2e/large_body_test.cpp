// Large response bodies (at least ServerOptions::direct_body_min) are sent from the
// Response's own string after the head, not copied into the output buffer. Seen from the
// client nothing changes: the same bytes, the same framing, in order with pipelining, a
// slow reader that keeps reading is not timed out, and a graceful shutdown lets the body
// finish.

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "client.hpp"
#include "sound.hpp"
#include "support/http_response.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

using namespace std::chrono_literals;

// `n` bytes that are not all alike, so a byte lost or repeated shows.
std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
    return s;
}

// A connection whose receive buffer is small (set before connecting), so the server's
// writes block early.
Client small_window_client(std::uint16_t port) { return Client(connect_loopback(port, 16 * 1024)); }

class LargeBodyTest : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        app.options().direct_body_min = 64 * 1024;
        add_basic_routes(app);
        app.get("/bytes/{n:uint}", [](Request& r) {
            return Response::with_body(Status::OK, pattern(std::stoull(std::string(r.param("n")))),
                                       mime::octet_stream);
        });
        app.get("/created",
                [] { return Response::with_body(Status::Created, pattern(300000), mime::text); });
        app.get("/no-content", [] {
            Response r = Response::with_body(Status::NoContent, pattern(100000), mime::text);
            return r;
        });
        app.get("/async-big", []() -> Task<Response> {
            co_await vela::sleep(10ms);
            co_return Response::with_body(Status::OK, pattern(500000), mime::octet_stream);
        });
    }
    void start() { start_app(app); }
    App app;
};

TEST_F(LargeBodyTest, BodiesAroundTheThresholdArriveIntact) {
    start();
    Client c = Client::tcp(app.port());
    for (std::size_t n : {std::size_t{65535}, std::size_t{65536}, std::size_t{65537},
                          std::size_t{1} << 20, std::size_t{10} << 20}) {
        ASSERT_TRUE(c.send(get_request("/bytes/" + std::to_string(n))));
        c.set_timeout(Ms{20000});
        auto r = c.read_response();
        ASSERT_TRUE(r) << n << ": " << c.error();
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->header("Content-Length"), std::to_string(n));
        EXPECT_EQ(r->header("Content-Type"), "application/octet-stream");
        ASSERT_EQ(r->body.size(), n);
        EXPECT_TRUE(r->body == pattern(n)) << "body of " << n << " bytes differs";
    }
    // The connection is still good for small responses.
    ASSERT_TRUE(c.send(get_request("/hello")));
    auto h = c.read_response();
    ASSERT_TRUE(h);
    EXPECT_EQ(h->body, "Hello, World!");
}

TEST_F(LargeBodyTest, PipelinedResponsesAroundALargeBodyStayInOrder) {
    start();
    Client c = Client::tcp(app.port());
    c.set_timeout(Ms{20000});
    ASSERT_TRUE(c.send(get_request("/users/1") + get_request("/bytes/2000000") +
                       get_request("/users/2") + get_request("/bytes/100000") +
                       get_request("/bytes/100000") + get_request("/users/3")));
    auto a = c.read_response();
    auto b = c.read_response();
    auto d = c.read_response();
    auto e = c.read_response();
    auto f = c.read_response();
    auto g = c.read_response();
    ASSERT_TRUE(a && b && d && e && f && g) << c.error();
    EXPECT_EQ(a->body, "1");
    EXPECT_TRUE(b->body == pattern(2000000));
    EXPECT_EQ(d->body, "2");
    EXPECT_TRUE(e->body == pattern(100000));
    EXPECT_TRUE(f->body == pattern(100000));
    EXPECT_EQ(g->body, "3");
}

TEST_F(LargeBodyTest, HeadSendsTheLengthButNoBody) {
    start();
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("HEAD /bytes/300000 HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto r = c.read_response(true);
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("Content-Length"), "300000");
    EXPECT_TRUE(r->body.empty());
    ASSERT_TRUE(c.send(get_request("/hello")));
    auto next = c.read_response();
    ASSERT_TRUE(next) << "bytes of the HEAD body were sent after all";
    EXPECT_EQ(next->body, "Hello, World!");
}

TEST_F(LargeBodyTest, StatusesWithoutABodyStaySoAndOthersKeepTheirs) {
    start();
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/no-content") + get_request("/created")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 204);
    EXPECT_TRUE(r->body.empty());
    EXPECT_FALSE(r->has_header("Content-Length"));
    auto created = c.read_response();
    ASSERT_TRUE(created) << c.error();
    EXPECT_EQ(created->status, 201);
    EXPECT_TRUE(created->body == pattern(300000));
}

TEST_F(LargeBodyTest, AsynchronousHandlersMayReturnLargeBodies) {
    start();
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/async-big") + get_request("/users/9")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_TRUE(r->body == pattern(500000));
    auto next = c.read_response();
    ASSERT_TRUE(next) << c.error();
    EXPECT_EQ(next->body, "9");
}

TEST_F(LargeBodyTest, Http10CloseAfterALargeBody) {
    start();
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("GET /bytes/700000 HTTP/1.0\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_TRUE(r->body == pattern(700000));
    EXPECT_TRUE(c.closed_by_peer());
}

// Every response sent directly (threshold 1 byte) to a client that pipelines thousands of
// requests and reads as fast as it can: each body finishes within its write and the next
// request continues from a deferred call (process() no longer recurses through resume()).
TEST_F(LargeBodyTest, ManyPipelinedDirectBodiesAreAllAnswered) {
    app.options().direct_body_min = 1;
    start();
    Client c = Client::tcp(app.port());
    constexpr int kRequests = 60000;
    std::string batch;
    for (int i = 0; i < kRequests; ++i) batch += get_request("/users/7");
    std::size_t responses = 0;
    std::thread reader([&] {
        std::string tail;
        char buf[65536];
        while (responses < kRequests) {
            ssize_t n = ::recv(c.fd(), buf, sizeof buf, 0);
            if (n <= 0) return;
            tail.append(buf, static_cast<std::size_t>(n));
            std::size_t at = 0, hit;
            while ((hit = tail.find("\r\n\r\n7", at)) != std::string::npos) {
                ++responses;
                at = hit + 5;
            }
            tail.erase(0, at);
        }
    });
    c.set_timeout(Ms{30000});
    EXPECT_TRUE(c.send(batch));
    reader.join();
    EXPECT_EQ(responses, std::size_t{kRequests});
    expect_server_sound(app);
}

// Reading 8 MiB in small sips with pauses takes longer than the idle timeout; the reader
// makes progress all along, so the body must arrive whole.
TEST_F(LargeBodyTest, SlowButSteadyReaderIsNotCutOffByTheIdleTimeout) {
    app.options().idle_timeout = Ms{400};
    start();
    Client c = small_window_client(app.port());
    const std::size_t n = 8u << 20;
    ASSERT_TRUE(c.send(get_request("/bytes/" + std::to_string(n))));
    const auto t0 = std::chrono::steady_clock::now();
    std::string raw;
    char buf[32 * 1024];
    c.set_timeout(Ms{5000});
    while (true) {
        ssize_t got = ::recv(c.fd(), buf, sizeof buf, 0);
        ASSERT_GT(got, 0) << "connection closed after " << raw.size() << " bytes";
        raw.append(buf, static_cast<std::size_t>(got));
        const std::size_t head_end = raw.find("\r\n\r\n");
        if (head_end != std::string::npos && raw.size() - head_end - 4 >= n) break;
        std::this_thread::sleep_for(2ms);
    }
    EXPECT_GT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(400))
        << "the read was too fast to prove anything";
    EXPECT_TRUE(test::split_head(raw).second == pattern(n));
}

// A client that stops reading a large body is still closed by the idle timeout.
TEST_F(LargeBodyTest, StalledReaderIsClosedByTheIdleTimeout) {
    app.options().idle_timeout = Ms{300};
    start();
    Client c = small_window_client(app.port());
    ASSERT_TRUE(c.send(get_request("/bytes/" + std::to_string(32u << 20))));
    std::this_thread::sleep_for(1500ms);  // read nothing
    char buf[64 * 1024];
    c.set_timeout(Ms{5000});
    std::size_t total = 0;
    ssize_t got;
    while ((got = ::recv(c.fd(), buf, sizeof buf, 0)) > 0) total += static_cast<std::size_t>(got);
    EXPECT_LT(total, std::size_t{32} << 20) << "the whole body arrived: the stall was not noticed";
    expect_server_sound(app);
}

TEST_F(LargeBodyTest, GracefulShutdownLetsALargeBodyFinish) {
    app.options().shutdown_timeout = Ms{5000};
    start();
    Client c = small_window_client(app.port());
    const std::size_t n = 4u << 20;
    ASSERT_TRUE(c.send(get_request("/bytes/" + std::to_string(n))));
    std::this_thread::sleep_for(100ms);  // the head and some body are on their way
    app.stop();
    c.set_timeout(Ms{5000});
    auto r = c.read_response();
    ASSERT_TRUE(r) << "the body was cut by the shutdown: " << c.error();
    EXPECT_TRUE(r->body == pattern(n));
    EXPECT_EQ(app.wait(), 0);
}

}  // namespace
}  // namespace vela::e2e
