// Streamed response bodies: chunked for HTTP/1.1, until close for HTTP/1.0, pulled only as
// fast as the client reads, and in order with pipelined requests.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "client.hpp"
#include "vela/client/client.hpp"
#include "vela/reactor/block_on.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

// A source producing `pieces` pieces "piece-0", "piece-1", ...
Response::BodySource counting_source(int pieces) {
    auto i = std::make_shared<int>(0);
    return [i, pieces]() -> std::optional<std::string> {
        if (*i >= pieces) return std::nullopt;
        return "piece-" + std::to_string((*i)++) + ";";
    };
}

std::string expected_body(int pieces) {
    std::string s;
    for (int i = 0; i < pieces; ++i) s += "piece-" + std::to_string(i) + ";";
    return s;
}

// Reads raw bytes until at least `n` have arrived; the count read, or 0 if the peer closed.
std::size_t read_at_least(Client& c, std::size_t n) {
    char buf[65536];
    std::size_t got = 0;
    while (got < n) {
        ssize_t r = ::recv(c.fd(), buf, sizeof buf, 0);
        if (r <= 0) return 0;
        got += static_cast<std::size_t>(r);
    }
    return got;
}

// Reads raw bytes until a chunked body's last chunk; the count read, or 0 if the peer
// closed first.
std::size_t read_to_last_chunk(Client& c) {
    char buf[65536];
    std::size_t total = 0;
    while (true) {
        ssize_t r = ::recv(c.fd(), buf, sizeof buf, 0);
        if (r <= 0) return 0;
        total += static_cast<std::size_t>(r);
        if (std::string_view(buf, static_cast<std::size_t>(r)).ends_with("0\r\n\r\n")) return total;
    }
}

class StreamingTest : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        app.options().output_high_water = 64 * 1024;
        add_basic_routes(app);
        app.get("/stream", [] {
            Response r;
            r.set_body_source(counting_source(50));
            return r;
        });
        app.get("/big", [this] {
            Response r = Response::with_body(Status::OK, {}, mime::octet_stream);
            auto sent = std::make_shared<std::size_t>(0);
            r.set_body_source([this, sent]() -> std::optional<std::string> {
                if (*sent >= kBig) return std::nullopt;
                *sent += kPiece;
                produced.store(*sent);
                return std::string(kPiece, 'x');
            });
            return r;
        });
        app.get("/broken", [] {
            Response r;
            auto n = std::make_shared<int>(0);
            r.set_body_source([n]() -> std::optional<std::string> {
                if (++*n > 3) throw std::runtime_error("source failed");
                return std::string("part");
            });
            return r;
        });
        // Streams that announce their length: right, short of it, past it.
        struct Sized {
            const char* path;
            std::uint64_t length;
        };
        for (const Sized& sized :
             {Sized{"/sized", 80}, Sized{"/sized-short", 120}, Sized{"/sized-long", 50}}) {
            const std::uint64_t length = sized.length;  // (clang 14 captures no bindings)
            app.get(sized.path, [length] {
                Response r;
                r.set_body_source(counting_source(10));  // 80 bytes
                r.set_body_length(length);
                return r;
            });
        }
        start_app(app);
    }

    static constexpr std::size_t kPiece = 64 * 1024;
    static constexpr std::size_t kBig = 64 * 1024 * 1024;
    std::atomic<std::size_t> produced{0};
    App app;
};

TEST_F(StreamingTest, AnnouncedLengthGoesAsContentLengthOverBothVersions) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/sized")));
    std::optional<HttpResponse> r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->header("Content-Length"), "80");
    EXPECT_FALSE(r->chunked);
    EXPECT_EQ(r->body, expected_body(10));
    // HTTP/1.0 with a length keeps its connection open.
    ASSERT_TRUE(c.send("GET /sized HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->header("Connection"), "keep-alive");
    EXPECT_EQ(r->body, expected_body(10));
    ASSERT_TRUE(c.send(get_request("/hello")));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
}

TEST_F(StreamingTest, ABodyThatMissesItsLengthClosesTheConnection) {
    for (const char* path : {"/sized-short", "/sized-long"}) {
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send(get_request(path)));
        // The head went out with the length; the connection ends before the body does.
        EXPECT_FALSE(c.read_response()) << path;
        EXPECT_TRUE(c.closed_by_peer()) << path;
    }
    Client c = Client::tcp(app.port());  // the server stays sound
    ASSERT_TRUE(c.send(get_request("/sized")));
    EXPECT_TRUE(c.read_response());
}

TEST_F(StreamingTest, AnnouncedLengthOverHttp2AndAResetWhenMissed) {
    http::ClientOptions o;
    o.h2c = true;
    http::Client client(o);
    const std::string base = "http://127.0.0.1:" + std::to_string(app.port());
    const http::ClientResponse r = block_on(client.get(base + "/sized"));
    EXPECT_EQ(r.protocol(), "HTTP/2");
    EXPECT_EQ(r.header("content-length"), "80");
    EXPECT_EQ(r.text(), expected_body(10));
    // Short of its length, or past it: the stream is reset, the client sees an error.
    EXPECT_THROW(block_on(client.get(base + "/sized-short")), http::ClientError);
    EXPECT_THROW(block_on(client.get(base + "/sized-long")), http::ClientError);
    EXPECT_EQ(block_on(client.get(base + "/sized")).text(), expected_body(10));
}

TEST_F(StreamingTest, Http11StreamIsChunkedAndConnectionStaysOpen) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/stream")));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->chunked);
    EXPECT_FALSE(r->has_header("Content-Length"));
    EXPECT_EQ(r->body, expected_body(50));
    ASSERT_TRUE(c.send(get_request("/hello")));
    auto next = c.read_response();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "Hello, World!");
}

TEST_F(StreamingTest, PipelinedRequestsAfterAStreamAreAnsweredInOrder) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/users/1") + get_request("/stream") + get_request("/users/2") +
                       get_request("/stream") + get_request("/users/3")));
    auto a = c.read_response();
    auto b = c.read_response();
    auto d = c.read_response();
    auto e = c.read_response();
    auto f = c.read_response();
    ASSERT_TRUE(a && b && d && e && f);
    EXPECT_EQ(a->body, "1");
    EXPECT_EQ(b->body, expected_body(50));
    EXPECT_EQ(d->body, "2");
    EXPECT_EQ(e->body, expected_body(50));
    EXPECT_EQ(f->body, "3");
}

TEST_F(StreamingTest, Http10StreamIsDelimitedByClose) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_FALSE(r->chunked);
    EXPECT_FALSE(r->has_header("Content-Length"));
    EXPECT_TRUE(r->announces_close());
    EXPECT_EQ(r->body, expected_body(50));
    EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(StreamingTest, HeadOfAStreamedRouteSendsNoBody) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto r = c.read_response(true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->body.empty());
    ASSERT_TRUE(c.send(get_request("/hello")));
    auto next = c.read_response();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "Hello, World!");
}

TEST_F(StreamingTest, ProductionFollowsTheReaderNotAhead) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/big")));
    // Read the head and a little body, then stop reading for a while.
    const std::size_t got = read_at_least(c, 1024 * 1024);
    ASSERT_GT(got, 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    // Produced beyond what was read: at most the high-water mark plus what the kernel's
    // socket buffers hold (a few MiB on loopback), never the whole 64 MiB.
    EXPECT_LT(produced.load(), got + 16u * 1024 * 1024);
    EXPECT_LT(produced.load(), kBig);
    // Then everything arrives.
    c.set_timeout(Ms{10000});
    const std::size_t rest = read_to_last_chunk(c);
    ASSERT_GT(rest, 0u);
    EXPECT_GE(got + rest, kBig);
    EXPECT_EQ(produced.load(), kBig);
}

// A graceful shutdown waits for a stream in progress (it is not an idle connection even
// when its output buffer is momentarily empty).
TEST_F(StreamingTest, GracefulShutdownLetsAStreamFinish) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/big")));
    const std::size_t got = read_at_least(c, 1024 * 1024);
    ASSERT_GT(got, 0u);
    app.stop();
    c.set_timeout(Ms{10000});
    const std::size_t rest = read_to_last_chunk(c);
    ASSERT_GT(rest, 0u) << "the stream was cut by the shutdown after " << got << "+ bytes";
    const std::size_t total = got + rest;
    EXPECT_GE(total, kBig);
    EXPECT_EQ(produced.load(), kBig);
    EXPECT_EQ(app.wait(), 0);
}

TEST_F(StreamingTest, FailingSourceCutsTheConnectionAndServerStaysSound) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/broken")));
    EXPECT_TRUE(c.closed_by_peer());  // no final chunk: the client sees an incomplete body
    Client d = Client::tcp(app.port());
    ASSERT_TRUE(d.send(get_request("/hello")));
    auto r = d.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
}

}  // namespace
}  // namespace vela::e2e
