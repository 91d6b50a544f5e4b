// Malformed and hostile requests over a real socket (docs/guide.md, "Limits and timeouts"): each
// gets its precise status and a closed connection, nothing after it on the connection is answered,
// and the server keeps serving fresh connections.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e/client.hpp"
#include "e2e/sound.hpp"

namespace vela::e2e {
namespace {

using namespace std::string_literals;

enum class After {
    close,     // the framing of what follows is unknowable (or the request is refused): close
    may_stay,  // the framing is intact; if the connection stays open it must stay in sync
};

struct BadCase {
    const char* name;
    std::string raw;
    int status;
    After after = After::close;
};

std::string many_headers(int n) {
    std::string r = "GET / HTTP/1.1\r\nHost: localhost\r\n";
    for (int i = 0; i < n; ++i) r += "X-H" + std::to_string(i) + ": v\r\n";
    return r + "\r\n";
}

std::vector<BadCase> bad_cases() {
    const std::string host = "Host: localhost\r\n";
    return {
        // Request smuggling: conflicting or ambiguous framing (RFC 9112 6.1, 6.3).
        {"cl_and_te",
         "POST /echo HTTP/1.1\r\n" + host +
             "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
         400},
        {"te_and_cl",
         "POST /echo HTTP/1.1\r\n" + host +
             "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
         400},
        {"duplicate_cl_same",
         "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
         400},
        {"duplicate_cl_different",
         "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
         400},
        {"cl_comma_list", "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 5, 5\r\n\r\nhello",
         400},
        {"cl_plus_sign", "POST /echo HTTP/1.1\r\n" + host + "Content-Length: +5\r\n\r\nhello", 400},
        {"cl_negative", "POST /echo HTTP/1.1\r\n" + host + "Content-Length: -1\r\n\r\n", 400},
        {"cl_hex", "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 0x5\r\n\r\nhello", 400},
        {"te_chunked_not_last",
         "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
         400},
        {"te_chunked_twice",
         "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
         400},
        {"te_gzip_chunked",
         "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
         501},
        {"te_in_http10",
         "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400},
        // Field syntax (RFC 9112 5).
        {"obs_fold", "GET / HTTP/1.1\r\n" + host + "X-A: one\r\n two\r\n\r\n", 400},
        {"bare_lf_request_line", "GET / HTTP/1.1\n" + host + "\r\n", 400},
        {"bare_lf_header", "GET / HTTP/1.1\r\nHost: localhost\n\r\n", 400},
        {"bare_lf_end_of_head", "GET / HTTP/1.1\r\n" + host + "\n", 400},
        {"bare_cr_header", "GET / HTTP/1.1\r\n" + host + "X-A: a\rb\r\n\r\n", 400},
        {"bare_cr_request_line", "GET /\r HTTP/1.1\r\n" + host + "\r\n", 400},
        {"nul_in_header_value", "GET / HTTP/1.1\r\n" + host + "X-A: a\0b\r\n\r\n"s, 400},
        {"nul_in_header_name", "GET / HTTP/1.1\r\n" + host + "X\0A: b\r\n\r\n"s, 400},
        {"space_before_colon", "GET / HTTP/1.1\r\nHost : localhost\r\n\r\n", 400},
        {"empty_header_name", "GET / HTTP/1.1\r\n" + host + ": value\r\n\r\n", 400},
        {"header_without_colon", "GET / HTTP/1.1\r\n" + host + "X-A value\r\n\r\n", 400},
        // Limits.
        {"too_many_headers", many_headers(101), 431},
        {"header_too_large",
         "GET / HTTP/1.1\r\n" + host + "X-Big: " + std::string(17 * 1024, 'a') + "\r\n\r\n", 431},
        {"request_line_too_long",
         "GET /" + std::string(9 * 1024, 'a') + " HTTP/1.1\r\n" + host + "\r\n", 414},
        {"body_too_large", "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 16777217\r\n\r\n",
         413},
        {"chunked_body_too_large",
         "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n1000001\r\n", 413},
        {"post_without_length", "POST /echo HTTP/1.1\r\n" + host + "\r\n", 411},
        {"put_without_length", "PUT /echo HTTP/1.1\r\n" + host + "\r\n", 411},
        // Request line (RFC 9112 3).
        {"http20_version", "GET / HTTP/2.0\r\n" + host + "\r\n", 505},
        {"http30_version", "GET / HTTP/3.0\r\n" + host + "\r\n", 505},
        {"lowercase_version", "GET / http/1.1\r\n" + host + "\r\n", 400},
        {"no_version", "GET /\r\n" + host + "\r\n", 400},
        {"two_spaces", "GET  / HTTP/1.1\r\n" + host + "\r\n", 400},
        {"space_in_target", "GET /a b HTTP/1.1\r\n" + host + "\r\n", 400},
        {"fragment_in_target", "GET /a#b HTTP/1.1\r\n" + host + "\r\n", 400},
        {"asterisk_for_get", "GET * HTTP/1.1\r\n" + host + "\r\n", 400},
        {"unknown_method", "FOO / HTTP/1.1\r\n" + host + "\r\n", 501, After::may_stay},
        {"connect", "CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n", 501},
        {"expect_foo", "GET / HTTP/1.1\r\n" + host + "Expect: foo\r\n\r\n", 417},
        // Chunked framing (RFC 9112 7.1).
        {"invalid_chunk_size",
         "POST /echo HTTP/1.1\r\n" + host +
             "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
         400},
        {"chunk_size_overflow",
         "POST /echo HTTP/1.1\r\n" + host +
             "Transfer-Encoding: chunked\r\n\r\n10000000000000000\r\nhello\r\n0\r\n\r\n",
         400},
        {"chunk_data_too_long",
         "POST /echo HTTP/1.1\r\n" + host +
             "Transfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n",
         400},
        {"chunk_bare_lf",
         "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n",
         400},
        {"chunk_trailer_obs_fold",
         "POST /echo HTTP/1.1\r\n" + host +
             "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: a\r\n b\r\n\r\n",
         400},
        // Target (RFC 3986) and Host (RFC 9112 3.2).
        {"dot_segment", "GET /a/../b HTTP/1.1\r\n" + host + "\r\n", 400},
        {"dot_segment_single", "GET /./a HTTP/1.1\r\n" + host + "\r\n", 400},
        {"dot_segment_encoded", "GET /a/%2e%2E/b HTTP/1.1\r\n" + host + "\r\n", 400},
        {"bad_percent", "GET /a%zz HTTP/1.1\r\n" + host + "\r\n", 400},
        {"truncated_percent", "GET /a%2 HTTP/1.1\r\n" + host + "\r\n", 400},
        {"encoded_nul", "GET /a%00b HTTP/1.1\r\n" + host + "\r\n", 400},
        {"missing_host", "GET / HTTP/1.1\r\n\r\n", 400},
        {"missing_host_unknown_path", "GET /no/such/route HTTP/1.1\r\n\r\n", 400},
        {"duplicate_host", "GET / HTTP/1.1\r\n" + host + host + "\r\n", 400},
        {"invalid_host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
        {"host_with_slash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
    };
}

class BadInputTest : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        add_basic_routes(app);
        start_app(app);
    }

    // A fresh connection still gets 200 on GET /: the server is sound.
    void expect_server_sound() { e2e::expect_server_sound(app); }

    App app;
};

TEST_F(BadInputTest, TableOfMalformedRequests) {
    for (const BadCase& bc : bad_cases()) {
        SCOPED_TRACE(bc.name);
        {
            Client c = Client::tcp(app.port());
            ASSERT_TRUE(c.connected());
            ASSERT_TRUE(c.send(bc.raw)) << c.error();
            auto r = c.read_response();
            ASSERT_TRUE(r) << "no response: " << c.error();
            EXPECT_EQ(r->status, bc.status) << "body: " << r->body;
            if (bc.after == After::close) {
                EXPECT_TRUE(r->announces_close()) << "no Connection: close";
                EXPECT_TRUE(c.closed_by_peer()) << "connection left open; pending: " << c.pending();
            } else if (!r->announces_close()) {
                ASSERT_TRUE(c.send(get_request("/users/1")));
                auto next = c.read_response();
                ASSERT_TRUE(next) << c.error();
                EXPECT_EQ(next->status, 200);
                EXPECT_EQ(next->body, "1");
            }
        }
        expect_server_sound();
    }
}

TEST_F(BadInputTest, BadInputSentOneBytePerWrite) {
    // The same verdicts when the bytes trickle in (the parser is incremental).
    const char* pick[] = {"cl_and_te",      "obs_fold",    "bare_lf_header", "nul_in_header_value",
                          "http20_version", "dot_segment", "missing_host",   "invalid_chunk_size"};
    for (const BadCase& bc : bad_cases()) {
        bool chosen = false;
        for (const char* p : pick) chosen = chosen || std::string_view(p) == bc.name;
        if (!chosen) continue;
        SCOPED_TRACE(bc.name);
        Client c = Client::tcp(app.port());
        // Stop at the first failed write: the server may close after its verdict.
        c.send_in_pieces(bc.raw, 1, 0ms);
        auto r = c.read_response();
        ASSERT_TRUE(r) << "no response: " << c.error();
        EXPECT_EQ(r->status, bc.status);
        EXPECT_TRUE(c.closed_by_peer());
    }
    expect_server_sound();
}

TEST_F(BadInputTest, PipelinedRequestsAfterABadOneAreNotAnswered) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/users/1") + "GET /users/2 HTTP/1.1\nHost: localhost\r\n\r\n" +
                       get_request("/users/3") + get_request("/users/4")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "1");
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 400);
    EXPECT_TRUE(r->announces_close());
    EXPECT_EQ(c.wait_end(2s), Client::End::eof) << "answered after the error: " << c.pending();
    expect_server_sound();
}

TEST_F(BadInputTest, SmugglingAttemptDoesNotReachTheNextRequest) {
    // A classic CL.TE desync attempt: whatever a front end thought, vela rejects the request
    // and never parses the smuggled "GET /users/666" as a request of its own.
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(
        c.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\n"
               "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
               get_request("/users/666")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(c.wait_end(2s), Client::End::eof) << "answered the smuggled request: " << c.pending();
    expect_server_sound();
}

TEST_F(BadInputTest, RejectedUploadStillDeliversTheErrorResponse) {
    // The client keeps sending a body the server refused. The server lingers (reads and
    // discards) so the client receives the 413 instead of a connection reset.
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(
        c.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 20000000\r\n\r\n"));
    const std::string block(64 * 1024, 'x');
    for (int i = 0; i < 32; ++i)  // 2 MiB more; stop quietly if the server has gone
        if (!c.send(block)) break;
    auto r = c.read_response();
    ASSERT_TRUE(r) << "413 lost: " << c.error();
    EXPECT_EQ(r->status, 413);
    EXPECT_TRUE(r->announces_close());
    expect_server_sound();
}

TEST(BadInputLimitsTest, EveryLimitIsASetting) {
    App app;
    quick_options(app.options());
    app.options().limits.max_request_line = 64;
    app.options().limits.max_headers = 4;
    app.options().limits.max_header_bytes = 256;
    app.options().limits.max_body = 10;
    app.options().limits.max_chunk_line = 16;
    add_basic_routes(app);
    start_app(app);
    struct Case {
        const char* name;
        std::string raw;
        int status;
    };
    const std::string host = "Host: localhost\r\n";
    const Case cases[] = {
        {"request line at the limit",
         "GET /" + std::string(50, 'a') + " HTTP/1.1\r\n" + host + "\r\n", 404},
        {"request line over the limit",
         "GET /" + std::string(60, 'a') + " HTTP/1.1\r\n" + host + "\r\n", 414},
        {"4 headers", "GET / HTTP/1.1\r\n" + host + "A: 1\r\nB: 2\r\nC: 3\r\n\r\n", 200},
        {"5 headers", "GET / HTTP/1.1\r\n" + host + "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", 431},
        {"header bytes", "GET / HTTP/1.1\r\n" + host + "A: " + std::string(300, 'v') + "\r\n\r\n",
         431},
        {"body at the limit", request_with_body("POST", "/echo", "0123456789"), 200},
        {"body over the limit", request_with_body("POST", "/echo", "0123456789a"), 413},
        {"chunked over the limit",
         "POST /echo HTTP/1.1\r\n" + host +
             "Transfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n5\r\nghijk\r\n0\r\n\r\n",
         413},
        {"chunk line over the limit",
         "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n1;" +
             std::string(20, 'e') + "\r\na\r\n0\r\n\r\n",
         400},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(k.name);
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send(k.raw));
        auto r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        EXPECT_EQ(r->status, k.status) << r->body;
        if (k.status >= 400 && k.status != 404) {
            EXPECT_TRUE(c.closed_by_peer());
        }
    }
}

TEST_F(BadInputTest, GarbageAndEarlyCloseDoNotHurtTheServer) {
    {
        Client c = Client::tcp(app.port());
        // The start of a TLS ClientHello, then line ends: not an HTTP/1.1 request line.
        ASSERT_TRUE(
            c.send(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15)));
        auto r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        EXPECT_EQ(r->status, 400);
    }
    {
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: loc"));
        c.close();  // gone mid-head
    }
    {
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(
            c.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\nab"));
        c.close();  // gone mid-body
    }
    expect_server_sound();
}

}  // namespace
}  // namespace vela::e2e
