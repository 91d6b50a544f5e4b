// Trailer fields end to end (RFC 9110 6.5): a streamed response's trailers on the wire over
// HTTP/1.1 (chunked) and HTTP/2 (trailing HEADERS), read by curl, nghttp and vela's client,
// kept by the client from servers that send them, and passed on by the reverse proxy.

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "e2e/client.hpp"
#include "e2e/process.hpp"
#include "e2e/raw_server.hpp"
#include "vela/client/client.hpp"
#include "vela/proxy/reverse_proxy.hpp"
#include "vela/reactor/block_on.hpp"

namespace vela::e2e {
namespace {

using http::ClientRequest;
using http::ClientResponse;

std::string base(const App& app) { return "http://127.0.0.1:" + std::to_string(app.port()); }

template <class T>
T run(Task<T> t) {
    return block_on(std::move(t));
}

// Everything a raw socket receives until the peer closes or `until` has arrived.
std::string read_until(Client& c, std::string_view until) {
    std::string got;
    char buf[4096];
    while (got.find(until) == std::string::npos) {
        pollfd p{c.fd(), POLLIN, 0};
        if (::poll(&p, 1, 3000) <= 0) break;
        const ssize_t n = ::recv(c.fd(), buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<std::size_t>(n));
    }
    return got;
}

// Routes whose streamed bodies end with trailers: allowed ones, ones trailers may not carry
// and malformed ones (the last two kinds are never sent).
void trailer_routes(App& app) {
    app.get("/t", [] {
        Response r;
        r.set_content_type("text/plain");
        return stream_body(std::move(r), [](BodyWriter& w) -> Task<void> {
            co_await w.write("hello ");
            co_await w.write("world");
            w.trailer("X-Checksum", "abc123");
            w.trailer("Server-Timing", "db;dur=53");
            w.trailer("Content-Length", "99");       // framing: refused
            w.trailer("Set-Cookie", "a=b");          // refused
            w.trailer("Bad Name", "x");              // not a token
            w.trailer("X-Split", "a\r\nX-Evil: 1");  // would end the field
        });
    });
    app.get("/none", [] {
        return stream_body(Response(), [](BodyWriter& w) -> Task<void> { co_await w.write("x"); });
    });
    app.get("/only-refused", [] {
        return stream_body(Response(), [](BodyWriter& w) -> Task<void> {
            co_await w.write("y");
            w.trailer("Content-Type", "text/html");
        });
    });
    app.get("/te", [](Request& r) { return std::string(r.header("te")); });
    app.get("/padded", [] {
        return stream_body(Response(), [](BodyWriter& w) -> Task<void> {
            co_await w.write("p");
            w.trailer("X-Padded", " \tv \t");  // edge whitespace: trimmed (RFC 9113 8.2.1)
        });
    });
    app.get("/t204", [] {
        return stream_body(Response(Status::NoContent), [](BodyWriter& w) -> Task<void> {
            co_await w.write("never");
            w.trailer("X-Checksum", "never");
        });
    });
}

class TrailersTest : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        trailer_routes(app);
        start_app(app);
    }
    App app;
};

TEST_F(TrailersTest, Http11SendsAllowedTrailersAfterTheLastChunk) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/t")));
    const std::string all = read_until(c, "dur=53\r\n\r\n");
    const std::size_t last = all.find("\r\n0\r\n");
    ASSERT_NE(last, std::string::npos) << all;
    EXPECT_EQ(all.substr(last + 2), "0\r\nX-Checksum: abc123\r\nServer-Timing: db;dur=53\r\n\r\n");
    EXPECT_NE(all.find("hello "), std::string::npos);
    // The connection goes on with the next request.
    ASSERT_TRUE(c.send(get_request("/none")));
    const std::string next = read_until(c, "0\r\n\r\n");
    EXPECT_NE(next.find("HTTP/1.1 200"), std::string::npos) << next;
    EXPECT_TRUE(next.ends_with("\r\n0\r\n\r\n")) << next;
    // Only refused ones: an empty trailer section.
    ASSERT_TRUE(c.send(get_request("/only-refused")));
    EXPECT_TRUE(read_until(c, "0\r\n\r\n").ends_with("y\r\n0\r\n\r\n"));
}

TEST_F(TrailersTest, Http10GetsNoTrailers) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("GET /t HTTP/1.0\r\nHost: x\r\n\r\n"));
    const std::string all = read_until(c, "\x01never");  // until the close
    EXPECT_TRUE(all.ends_with("\r\n\r\nhello world")) << all;
    EXPECT_EQ(all.find("X-Checksum"), std::string::npos);
}

TEST_F(TrailersTest, CurlReadsTheTrailerSection) {
    // --raw keeps the chunked framing, trailers included, in what curl prints.
    const Ran r = run_command("timeout 20 curl -sS --raw " + base(app) + "/t 2>&1");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("0\r\nX-Checksum: abc123\r\nServer-Timing: db;dur=53\r\n\r\n"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("Set-Cookie"), std::string::npos);
}

TEST_F(TrailersTest, NghttpSeesTrailingHeadersOverHttp2) {
    if (!succeeds("command -v nghttp >/dev/null 2>&1"))
        GTEST_SKIP() << "nghttp (nghttp2-client) not installed";
    const Ran r = run_command("timeout 20 nghttp -v " + base(app) + "/t 2>&1");
    ASSERT_EQ(r.status, 0) << r.out;
    // The response HEADERS, the DATA, then a second HEADERS with END_STREAM.
    const std::size_t trailer = r.out.find("x-checksum: abc123");
    ASSERT_NE(trailer, std::string::npos) << r.out;
    EXPECT_NE(r.out.find("server-timing: db;dur=53"), std::string::npos);
    EXPECT_EQ(r.out.find("set-cookie"), std::string::npos);
    EXPECT_EQ(r.out.find("x-split"), std::string::npos);
    EXPECT_LT(r.out.find("world"), trailer) << r.out;
    const std::string after = r.out.substr(trailer);
    EXPECT_NE(after.find("END_STREAM"), std::string::npos);
}

TEST_F(TrailersTest, ClientKeepsTrailersOverBothProtocols) {
    for (const bool h2c : {false, true}) {
        http::ClientOptions o;
        o.h2c = h2c;
        http::Client client(o);
        const ClientResponse r = run(client.get(base(app) + "/t"));
        EXPECT_EQ(r.text(), "hello world");
        EXPECT_EQ(r.trailer("x-checksum"), "abc123") << h2c;
        EXPECT_EQ(r.trailer("server-timing"), "db;dur=53");
        EXPECT_EQ(r.trailers().size(), 2u);
        EXPECT_TRUE(run(client.get(base(app) + "/none")).trailers().empty());
        // A streamed body has them once read to its end.
        auto streamed = [&]() -> Task<std::string> {
            ClientRequest req;
            req.url = base(app) + "/t";
            req.stream = true;
            ClientResponse res = co_await client.request(std::move(req));
            std::string seen = res.trailers().empty() ? "none-yet;" : "early;";
            while (co_await res.body().read()) {
            }
            co_return seen + std::string(res.trailer("X-Checksum"));
        };
        EXPECT_EQ(run(streamed()), "none-yet;abc123");
    }
}

TEST_F(TrailersTest, AcceptTrailersSendsTe) {
    for (const bool h2c : {false, true}) {
        http::ClientOptions o;
        o.h2c = h2c;
        http::Client client(o);
        ClientRequest req;
        req.url = base(app) + "/te";
        req.accept_trailers = true;
        EXPECT_EQ(run(client.request(std::move(req))).text(), "trailers") << h2c;
        EXPECT_EQ(run(client.get(base(app) + "/te")).text(), "");
    }
}

TEST_F(TrailersTest, EdgeWhitespaceIsTrimmedOverBothProtocols) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/padded")));
    EXPECT_TRUE(read_until(c, "0\r\nX-Padded: v\r\n\r\n").ends_with("0\r\nX-Padded: v\r\n\r\n"));
    // Over HTTP/2 a value with edge whitespace would make the whole response malformed.
    http::ClientOptions o;
    o.h2c = true;
    http::Client client(o);
    const ClientResponse r = run(client.get(base(app) + "/padded"));
    EXPECT_EQ(r.text(), "p");
    EXPECT_EQ(r.trailer("x-padded"), "v");
}

TEST_F(TrailersTest, BodilessStatusesStreamNothing) {
    // A 204 has no body: neither the producer's bytes nor a trailer section may follow its
    // head, or the next response on the connection would start with them.
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/t204") + get_request("/none")));
    const std::string all = read_until(c, "\r\n1\r\nx\r\n0\r\n\r\n");
    EXPECT_TRUE(all.starts_with("HTTP/1.1 204")) << all;
    EXPECT_EQ(all.find("never"), std::string::npos) << all;
    const std::size_t second = all.find("HTTP/1.1 200");
    ASSERT_NE(second, std::string::npos) << all;
    EXPECT_EQ(all.substr(0, second).find("\r\n\r\n"), second - 4) << all;
}

// --- The client against servers that send trailers of their own ---

TEST(ClientTrailers, ParsesTrailerLinesAndRejectsBadOnes) {
    RawServer server([](int fd) {
        for (;;) {
            const std::string head = read_head(fd);
            if (head.empty()) return;
            if (head.find("/good") != std::string::npos) {
                write_all(fd,
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-A\r\n\r\n"
                          "3\r\nabc\r\n0\r\nX-A: 1\r\nX-B:  two words \r\nX-A:3\r\n\r\n");
            } else if (head.find("/fold") != std::string::npos) {
                write_all(fd,
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "3\r\nabc\r\n0\r\nX-A: 1\r\n folded\r\n\r\n");
                return;
            } else {  // a trailer section past the client's 64 KiB bound
                write_all(fd,
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n");
                for (int i = 0; i < 80; ++i)
                    write_all(
                        fd, "X-Pad-" + std::to_string(i) + ": " + std::string(1000, 'p') + "\r\n");
                write_all(fd, "\r\n");
                return;
            }
        }
    });
    http::Client client;
    // Two requests from one loop (pools are per loop): the second reuses the connection.
    auto twice = [&]() -> Task<std::pair<ClientResponse, ClientResponse>> {
        ClientResponse a = co_await client.get(server.url() + "/good");
        ClientResponse b = co_await client.get(server.url() + "/good");
        co_return std::make_pair(std::move(a), std::move(b));
    };
    const auto [r, again] = run(twice());
    EXPECT_EQ(r.text(), "abc");
    ASSERT_EQ(r.trailers().size(), 3u);
    EXPECT_EQ(r.trailers()[0], (http::Header{"X-A", "1"}));
    EXPECT_EQ(r.trailers()[1], (http::Header{"X-B", "two words"}));
    EXPECT_EQ(r.trailer("x-a"), "1");
    // The connection went back to the pool clean and served the next request (its own
    // trailers only).
    EXPECT_EQ(again.trailer("X-B"), "two words");
    EXPECT_EQ(again.trailers().size(), 3u);
    EXPECT_EQ(client.stats().connections_opened, 1u);
    EXPECT_THROW(run(client.get(server.url() + "/fold")), http::ProtocolError);
    EXPECT_THROW(run(client.get(server.url() + "/huge")), http::TooLargeError);
}

// --- Through the reverse proxy ---

// An upstream with the trailer routes, and a gateway the test sets up.
class ProxyTrailers : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(up.options());
        trailer_routes(up);
        start_app(up);
        quick_options(gw.options());
    }
    void TearDown() override {
        gw.stop();
        up.stop();
    }
    App up;
    App gw;
};

TEST_F(ProxyTrailers, UpstreamTrailersReachTheClient) {
    ReverseProxyOptions plain;
    plain.upstreams = {base(up)};
    reverse_proxy(gw, "/", std::move(plain));
    ReverseProxyOptions over_h2;
    over_h2.upstreams = {base(up)};
    over_h2.h2c = true;
    over_h2.strip_prefix = true;
    reverse_proxy(gw, "/h2", std::move(over_h2));
    start_app(gw);
    for (const bool client_h2 : {false, true}) {
        http::ClientOptions o;
        o.h2c = client_h2;
        http::Client client(o);
        for (const std::string path : {"/t", "/h2/t"}) {
            const ClientResponse r = run(client.get(base(gw) + path));
            EXPECT_EQ(r.text(), "hello world") << path;
            EXPECT_EQ(r.trailer("X-Checksum"), "abc123") << path << " h2 client " << client_h2;
            EXPECT_EQ(r.trailer("Server-Timing"), "db;dur=53");
            EXPECT_EQ(r.trailers().size(), 2u);
        }
        // TE: trailers reaches the upstream only when the client sent it.
        ClientRequest req;
        req.url = base(gw) + "/te";
        req.accept_trailers = true;
        EXPECT_EQ(run(client.request(std::move(req))).text(), "trailers");
        EXPECT_EQ(run(client.get(base(gw) + "/h2/te")).text(), "");
    }
    // curl through the proxy sees the trailer section on the wire.
    const Ran r = run_command("timeout 20 curl -sS --raw " + base(gw) + "/t");
    EXPECT_NE(r.out.find("0\r\nX-Checksum: abc123\r\n"), std::string::npos) << r.out;
}

TEST_F(ProxyTrailers, RemovedFieldsGoFromTrailersToo) {
    ReverseProxyOptions o;
    o.upstreams = {base(up)};
    o.remove_response_headers = {"server-timing"};
    reverse_proxy(gw, "/", std::move(o));
    start_app(gw);
    http::Client client;
    const ClientResponse r = run(client.get(base(gw) + "/t"));
    ASSERT_EQ(r.trailers().size(), 1u);
    EXPECT_EQ(r.trailer("X-Checksum"), "abc123");
}

TEST_F(ProxyTrailers, RefusedUpstreamTrailersAreDropped) {
    RawServer raw([](int fd) {
        read_head(fd);
        write_all(fd,
                  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "2\r\nok\r\n0\r\nSet-Cookie: s=1\r\nContent-Length: 7\r\nX-Ok: yes\r\n\r\n");
    });
    ReverseProxyOptions o;
    o.upstreams = {raw.url()};
    reverse_proxy(gw, "/", std::move(o));
    start_app(gw);
    http::Client client;
    const ClientResponse r = run(client.get(base(gw) + "/x"));
    EXPECT_EQ(r.text(), "ok");
    ASSERT_EQ(r.trailers().size(), 1u);
    EXPECT_EQ(r.trailer("x-ok"), "yes");
}

}  // namespace
}  // namespace vela::e2e
