// Request bodies over a real socket: chunked (with extensions, trailers, split writes),
// Expect: 100-continue, a 10 MB body, and a request trickled one byte per write.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "e2e/client.hpp"

namespace vela::e2e {
namespace {

class BodyTest : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        app.options().limits.max_body = 16 * 1024 * 1024;
        add_basic_routes(app);
        start_app(app);
    }
    App app;
};

const std::string kChunkedHead =
    "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n";
// Two chunks with extensions (one quoted), then the last chunk with two trailer fields.
const std::string kChunkedBody =
    "5;name=value\r\nhello\r\n"
    "6;quoted=\"a b\";flag\r\n world\r\n"
    "0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n";

TEST_F(BodyTest, ChunkedBodyWithExtensionsAndTrailersIsEchoed) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(kChunkedHead + kChunkedBody));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello world");
    // The chunked framing was consumed exactly: the next request is answered normally.
    ASSERT_TRUE(c.send(get_request("/users/5")));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "5");
}

TEST_F(BodyTest, ChunkedBodySplitAcrossWrites) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(kChunkedHead));
    // Cut the body inside a size line, inside an extension, inside data, between CR and LF
    // and inside a trailer.
    const std::string b = kChunkedBody;
    const std::size_t cuts[] = {1, 4, 9, 13, 16, 20, 30, 36, 40, 50, 60, 75, b.size()};
    std::size_t from = 0;
    for (std::size_t cut : cuts) {
        ASSERT_TRUE(c.send(b.substr(from, cut - from)));
        from = cut;
        std::this_thread::sleep_for(5ms);
    }
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello world");
}

TEST_F(BodyTest, ChunkedBodyOneBytePerWriteThenPipelinedRequest) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send_in_pieces(kChunkedHead + kChunkedBody + get_request("/users/3"), 1, 1ms));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "hello world");
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "3");
}

TEST_F(BodyTest, ManyChunkedRequestsPipelined) {
    Client c = Client::tcp(app.port());
    std::string batch;
    for (int i = 0; i < 8; ++i) {
        std::string payload = "chunk-" + std::to_string(i);
        char size[8];
        std::snprintf(size, sizeof size, "%zx", payload.size());
        batch += kChunkedHead + size + "\r\n" + payload + "\r\n0\r\n\r\n";
    }
    ASSERT_TRUE(c.send(batch));
    for (int i = 0; i < 8; ++i) {
        auto r = c.read_response();
        ASSERT_TRUE(r) << i << ": " << c.error();
        EXPECT_EQ(r->body, "chunk-" + std::to_string(i));
    }
}

TEST_F(BodyTest, ExpectContinueGets100BeforeTheBody) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(
        c.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 11\r\n"
               "Expect: 100-continue\r\n\r\n"));
    auto interim = c.read_response();
    ASSERT_TRUE(interim) << "no 100 Continue before the body was sent: " << c.error();
    EXPECT_EQ(interim->status, 100);
    EXPECT_EQ(interim->version, "HTTP/1.1");
    EXPECT_TRUE(interim->body.empty());
    EXPECT_TRUE(c.pending().empty()) << "final response sent before the body";
    ASSERT_TRUE(c.send("hello world"));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello world");
    // Exactly one interim response, and the connection goes on.
    ASSERT_TRUE(c.send(get_request("/users/8")));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "8");
}

TEST_F(BodyTest, ExpectContinueWithChunkedBody) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(
        c.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
               "Expect: 100-continue\r\n\r\n"));
    auto interim = c.read_response();
    ASSERT_TRUE(interim) << c.error();
    EXPECT_EQ(interim->status, 100);
    ASSERT_TRUE(c.send("3\r\nabc\r\n"));
    ASSERT_TRUE(c.send("0\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "abc");
}

TEST_F(BodyTest, ExpectContinueOverMaxBodyGets413Without100) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(
        c.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 16777217\r\n"
               "Expect: 100-continue\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 413) << "got " << r->status << " instead of 413 (no 100 expected)";
    EXPECT_TRUE(r->announces_close());
    EXPECT_TRUE(c.closed_by_peer()) << "unexpected bytes: " << c.pending();
}

TEST_F(BodyTest, TenMegabyteBodyIsEchoed) {
    std::string body(10 * 1024 * 1024, '\0');
    for (std::size_t i = 0; i < body.size(); ++i)
        body[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
    Client c = Client::tcp(app.port(), 8000ms);
    ASSERT_TRUE(c.send(request_with_body("POST", "/echo", body)));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    ASSERT_EQ(r->body.size(), body.size());
    EXPECT_TRUE(r->body == body) << "echoed body differs";
    // And the connection is still in sync.
    ASSERT_TRUE(c.send(get_request("/users/10")));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "10");
}

TEST_F(BodyTest, ChunkedBodiesLargerThanTheReadBuffer) {
    // The connection's read buffer starts at 16 KiB and grows (and may move) as a body
    // arrives; the chunked decoding done so far must survive the move.
    for (std::size_t size : {20u * 1024, 64u * 1024, 256u * 1024, 1024u * 1024}) {
        SCOPED_TRACE("body of " + std::to_string(size) + " bytes");
        const std::string body(size, 'q');
        char line[32];
        std::snprintf(line, sizeof line, "%zx\r\n", size / 2);
        // Two chunks, one write.
        std::string req = kChunkedHead + line + body.substr(0, size / 2) + "\r\n" + line +
                          body.substr(size / 2) + "\r\n0\r\n\r\n";
        Client c = Client::tcp(app.port(), 5000ms);
        ASSERT_TRUE(c.send(req));
        auto r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body.size(), size);
    }
}

TEST_F(BodyTest, LargeChunkedBodyIsEchoed) {
    // 4 MiB in 64 KiB chunks: the read buffer grows and moves many times while the chunked
    // decoder works in place.
    std::string body(4 * 1024 * 1024, '\0');
    for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('A' + (i / 3) % 26);
    Client c = Client::tcp(app.port(), 8000ms);
    ASSERT_TRUE(c.send(kChunkedHead));
    constexpr std::size_t kChunk = 64 * 1024;
    for (std::size_t off = 0; off < body.size(); off += kChunk) {
        char size[16];
        std::snprintf(size, sizeof size, "%zx\r\n", kChunk);
        ASSERT_TRUE(c.send(size + body.substr(off, kChunk) + "\r\n"));
    }
    ASSERT_TRUE(c.send("0\r\n\r\n" + get_request("/users/4")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    ASSERT_EQ(r->body.size(), body.size());
    EXPECT_TRUE(r->body == body) << "echoed body differs";
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "4");
}

TEST_F(BodyTest, RequestSentOneBytePerWrite) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send_in_pieces(request_with_body("POST", "/echo", "payload-bytes"), 1, 1ms));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "payload-bytes");
    ASSERT_TRUE(c.send_in_pieces(get_request("/users/42"), 1, 0ms));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "42");
}

}  // namespace
}  // namespace vela::e2e
