// vela::http::Client against real servers on loopback: vela Apps (plain, TLS, Unix socket;
// HTTP/1.1 and HTTP/2), python3's http.server, and scripted raw-socket servers that misbehave
// on purpose (HTTP/2 ones with vela's h2::Session in the server role).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "e2e/client.hpp"
#include "e2e/example_process.hpp"
#include "e2e/raw_server.hpp"
#include "vela/async/when_all.hpp"
#include "vela/client/client.hpp"
#include "vela/client_metrics.hpp"
#include "vela/http/h2_session.hpp"
#include "vela/reactor/block_on.hpp"

namespace vela::e2e {
namespace {

using http::Client;
using http::ClientOptions;
using http::ClientRequest;
using http::ClientResponse;

struct Item {
    std::string name;
    int qty = 0;
};
VELA_REFLECT(Item, name, qty)

std::string base(const App& app, std::size_t index = 0) {
    return "http://127.0.0.1:" + std::to_string(app.port(index));
}

template <class T>
T run(Task<T> t) {
    return block_on(std::move(t));
}

class HttpClientTest : public ::testing::Test {
  protected:
    void SetUp() override {
        add_basic_routes(app);
        app.get("/json", [] { return Item{"pen", 3}; });
        app.post("/items", [](Json<Item> item) {
            Item out = item.value;
            out.qty += 1;
            return out;
        });
        app.get("/headers", [](Request& r) {
            std::string out;
            for (const char* n : {"host", "user-agent", "authorization", "cookie", "x-extra"})
                out += std::string(n) + "=" + std::string(r.header(n)) + "\n";
            return out;
        });
        app.get("/big", [](Request& r) {
            const auto n = std::stoul(r.query("n").value_or("0"));
            return std::string(n, 'x');
        });
        app.get("/chunks", [] {
            Response res;
            auto left = std::make_shared<int>(64);
            res.set_body_source([left]() -> std::optional<std::string> {
                if ((*left)-- == 0) return std::nullopt;
                return std::string(16 * 1024, static_cast<char>('a' + *left % 26));
            });
            return res;
        });
        app.get("/nocontent", [] { return Response(Status::NoContent); });
        app.get("/redirect/{code}", [](Request& r) {
            Response res(static_cast<Status>(std::stoi(std::string(r.param("code")))));
            res.add_header("Location", r.query("to").value_or(""));
            return res;
        });
        app.post("/redirect/{code}", [](Request& r) {
            Response res(static_cast<Status>(std::stoi(std::string(r.param("code")))));
            res.add_header("Location", r.query("to").value_or(""));
            return res;
        });
        app.get("/method", [](Request& r) { return "GET " + std::string(r.body()); });
        app.get("/login", [] {
            Response r("in");
            r.set_cookie({.name = "sid", .value = "42"});
            return r;
        });
        app.post("/method", [](Request& r) { return "POST " + std::string(r.body()); });
        start_app(app);
    }
    App app;
};

TEST_F(HttpClientTest, GetReadsStatusHeadersAndBody) {
    Client c;
    ClientResponse r = run(c.get(base(app) + "/hello"));
    EXPECT_EQ(r.status(), 200);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.text(), "Hello, World!");
    EXPECT_EQ(r.header("content-length"), "13");
    EXPECT_EQ(r.protocol(), "HTTP/1.1");
    EXPECT_EQ(r.url(), base(app) + "/hello");
    const ClientResponse missing = run(c.get(base(app) + "/nowhere"));
    EXPECT_EQ(missing.status(), 404);
}

TEST_F(HttpClientTest, KeepAliveReusesOneConnection) {
    Client c;
    auto many = [&]() -> Task<int> {
        int ok = 0;
        for (int i = 0; i < 20; ++i) {
            ClientResponse r = co_await c.get(base(app) + "/users/" + std::to_string(i));
            if (r.text() == std::to_string(i)) ++ok;
        }
        co_return ok;
    };
    EXPECT_EQ(run(many()), 20);
    const http::ClientStats s = c.stats();
    EXPECT_EQ(s.connections_opened, 1u);
    EXPECT_EQ(s.connections_reused, 19u);
    EXPECT_EQ(s.requests, 20u);
}

TEST_F(HttpClientTest, SendsHostUserAgentAndExtraHeaders) {
    Client c;
    std::vector<http::Header> h{{"X-Extra", "1"}};
    const ClientResponse r = run(c.get(base(app) + "/headers", h));
    EXPECT_NE(r.text().find("host=127.0.0.1:" + std::to_string(app.port())), std::string::npos);
    EXPECT_NE(r.text().find("user-agent=vela"), std::string::npos);
    EXPECT_NE(r.text().find("x-extra=1"), std::string::npos);
}

TEST_F(HttpClientTest, UserInfoBecomesBasicAuthorization) {
    Client c;
    const ClientResponse r =
        run(c.get("http://alice:s%3Acret@127.0.0.1:" + std::to_string(app.port()) + "/headers"));
    // base64("alice:s:cret")
    EXPECT_NE(r.text().find("authorization=Basic YWxpY2U6czpjcmV0"), std::string::npos);
}

TEST_F(HttpClientTest, PostAndJsonHelpers) {
    Client c;
    const ClientResponse echo = run(c.post(base(app) + "/echo", "payload", "text/plain"));
    EXPECT_EQ(echo.text(), "payload");
    const Item item = run(c.get_json<Item>(base(app) + "/json"));
    EXPECT_EQ(item.name, "pen");
    EXPECT_EQ(item.qty, 3);
    const ClientResponse created = run(c.post_json(base(app) + "/items", Item{"cup", 1}));
    EXPECT_EQ(created.status(), 200);
    EXPECT_EQ(created.json<Item>().qty, 2);
    EXPECT_EQ(created.json()["name"].as_string(), "cup");
    EXPECT_THROW(run(c.get_json<Item>(base(app) + "/nowhere")), std::runtime_error);
}

TEST_F(HttpClientTest, HeadAndNoContentHaveNoBody) {
    Client c;
    auto steps = [&]() -> Task<void> {
        const ClientResponse h = co_await c.head(base(app) + "/big?n=5000");
        EXPECT_EQ(h.status(), 200);
        EXPECT_EQ(h.header("content-length"), "5000");
        EXPECT_EQ(h.text(), "");
        const ClientResponse n = co_await c.get(base(app) + "/nocontent");
        EXPECT_EQ(n.status(), 204);
        // The connection stays usable after both.
        EXPECT_EQ((co_await c.get(base(app) + "/hello")).text(), "Hello, World!");
    };
    run(steps());
    EXPECT_EQ(c.stats().connections_opened, 1u);
}

TEST_F(HttpClientTest, LargeBodiesBufferedAndStreamed) {
    Client c;
    const ClientResponse big = run(c.get(base(app) + "/big?n=3000000"));
    EXPECT_EQ(big.text().size(), 3000000u);
    auto stream = [&]() -> Task<std::size_t> {
        ClientRequest req;
        req.url = base(app) + "/chunks";
        req.stream = true;
        ClientResponse r = co_await c.request(std::move(req));
        EXPECT_EQ(r.header("transfer-encoding"), "chunked");
        std::size_t total = 0, pieces = 0;
        while (auto piece = co_await r.body().read()) {
            total += piece->size();
            ++pieces;
        }
        EXPECT_GT(pieces, 1u);
        EXPECT_TRUE(r.body().done());
        // Read to the end, the connection went back to the pool.
        EXPECT_EQ(c.stats().idle, 1u);
        co_return total;
    };
    EXPECT_EQ(run(stream()), 64u * 16 * 1024);
}

TEST_F(HttpClientTest, StreamedRequestBody) {
    Client c;
    auto send = [&](bool with_length) -> Task<std::string> {
        ClientRequest req;
        req.method = "POST";
        req.url = base(app) + "/echo";
        auto n = std::make_shared<int>(0);
        req.body_source = [n]() -> Task<std::optional<std::string>> {
            if (*n == 5) co_return std::nullopt;
            ++*n;
            co_return std::string(1000, static_cast<char>('0' + *n));
        };
        if (with_length) req.content_length = 5000;
        ClientResponse r = co_await c.request(std::move(req));
        co_return r.text();
    };
    const std::string chunked = run(send(false));
    EXPECT_EQ(chunked.size(), 5000u);
    EXPECT_EQ(chunked.substr(0, 3), "111");
    EXPECT_EQ(chunked.substr(4000, 3), "555");
    EXPECT_EQ(run(send(true)).size(), 5000u);
}

TEST_F(HttpClientTest, AbandonedStreamClosesTheConnection) {
    Client c;
    auto half = [&]() -> Task<void> {
        ClientRequest req;
        req.url = base(app) + "/chunks";
        req.stream = true;
        ClientResponse r = co_await c.request(std::move(req));
        (void)co_await r.body().read();
    };  // the response dies half-read
    run(half());
    EXPECT_EQ(c.stats().idle, 0u);
    EXPECT_EQ(c.stats().open, 0u);
    EXPECT_EQ(run(c.get(base(app) + "/hello")).text(), "Hello, World!");
}

TEST_F(HttpClientTest, RedirectsFollowTheMethodRules) {
    Client c;
    const std::string b = base(app);
    // Relative Location, 302 after a GET: still GET.
    ClientResponse r = run(c.get(b + "/redirect/302?to=/hello"));
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.text(), "Hello, World!");
    EXPECT_EQ(r.redirects(), 1);
    EXPECT_EQ(r.url(), b + "/hello");
    // 303 after a POST: GET without the body; 307 and 308 keep both.
    EXPECT_EQ(run(c.post(b + "/redirect/303?to=/method", "x")).text(), "GET ");
    EXPECT_EQ(run(c.post(b + "/redirect/302?to=/method", "x")).text(), "GET ");
    EXPECT_EQ(run(c.post(b + "/redirect/307?to=/method", "x")).text(), "POST x");
    EXPECT_EQ(run(c.post(b + "/redirect/308?to=/method", "x")).text(), "POST x");
    // Not followed when asked not to.
    ClientRequest req;
    req.url = b + "/redirect/301?to=/hello";
    req.follow_redirects = false;
    EXPECT_EQ(run(c.request(std::move(req))).status(), 301);
}

TEST_F(HttpClientTest, RedirectLimitAndCrossOriginCredentials) {
    ClientOptions o;
    o.max_redirects = 2;
    Client c(o);
    const std::string b = base(app);
    // A loop of redirects ends with an error after the limit.
    const std::string loop =
        b + "/redirect/302?to=/redirect/302%3Fto%3D/redirect/302%3Fto%3D/hello";
    EXPECT_NO_THROW(run(c.get(b + "/redirect/302?to=/redirect/302%3Fto%3D/hello")));
    EXPECT_THROW(run(c.get(loop)), http::ProtocolError);
    // Authorization and Cookie survive a same-origin redirect, not a cross-origin one
    // (localhost and 127.0.0.1 are different origins).
    Client d;
    std::vector<http::Header> h{{"Authorization", "Bearer t"}, {"Cookie", "a=1"}};
    const std::string same = run(d.get(b + "/redirect/302?to=/headers", h)).text();
    EXPECT_NE(same.find("authorization=Bearer t"), std::string::npos);
    EXPECT_NE(same.find("cookie=a=1"), std::string::npos);
    const std::string other = "http://localhost:" + std::to_string(app.port()) + "/headers";
    const std::string cross = run(d.get(b + "/redirect/302?to=" + other, h)).text();
    EXPECT_NE(cross.find("authorization=\n"), std::string::npos);
    EXPECT_NE(cross.find("cookie=\n"), std::string::npos);
}

TEST_F(HttpClientTest, CookieJarKeepsASession) {
    ClientOptions o;
    o.cookies = true;
    Client c(o);
    auto steps = [&]() -> Task<std::string> {
        (void)co_await c.get(base(app) + "/login");
        co_return (co_await c.get(base(app) + "/headers")).text();
    };
    EXPECT_NE(run(steps()).find("cookie=sid=42"), std::string::npos);
    EXPECT_EQ(c.cookies_for(base(app) + "/"), "sid=42");
    // Another host (localhost is not 127.0.0.1) gets nothing.
    EXPECT_EQ(c.cookies_for("http://localhost:" + std::to_string(app.port()) + "/"), "");
    c.clear_cookies();
    EXPECT_EQ(c.cookies_for(base(app) + "/"), "");
    // Without the option nothing is kept.
    Client plain;
    (void)run(plain.get(base(app) + "/login"));
    EXPECT_EQ(plain.cookies_for(base(app) + "/"), "");
}

TEST_F(HttpClientTest, PoolCapHoldsConcurrentRequests) {
    ClientOptions o;
    o.max_connections_per_origin = 2;
    Client c(o);
    auto burst = [&]() -> Task<int> {
        std::vector<Task<ClientResponse>> tasks;
        for (int i = 0; i < 16; ++i)
            tasks.push_back(c.get(base(app) + "/users/" + std::to_string(i)));
        std::vector<ClientResponse> rs = co_await when_all(std::move(tasks));
        int ok = 0;
        for (std::size_t i = 0; i < rs.size(); ++i)
            if (rs[i].text() == std::to_string(i)) ++ok;
        co_return ok;
    };
    EXPECT_EQ(run(burst()), 16);
    EXPECT_LE(c.stats().connections_opened, 2u);
}

TEST_F(HttpClientTest, RefusedConnectIsAConnectError) {
    const std::uint16_t port = free_port();  // nobody listens there
    ClientOptions o;
    o.retries = 1;
    o.retry_backoff = std::chrono::milliseconds(1);
    Client c(o);
    try {
        run(c.get("http://127.0.0.1:" + std::to_string(port) + "/"));
        FAIL() << "no error";
    } catch (const http::ConnectError& e) {
        EXPECT_EQ(e.kind(), http::ErrorKind::connect);
        EXPECT_NE(std::string(e.what()).find("Connection refused"), std::string::npos) << e.what();
    }
    EXPECT_EQ(c.stats().retries, 1u);
    EXPECT_THROW(run(c.get("ftp://127.0.0.1/")), std::invalid_argument);
}

TEST_F(HttpClientTest, UnixSocket) {
    const std::string path =
        ::testing::TempDir() + "vela-client-" + std::to_string(::getpid()) + ".sock";
    App u;
    u.get("/where", [] { return "unix"; });
    u.listen("unix:" + path);
    u.start(1);
    Client c;
    std::string enc;
    for (char ch : path) enc += ch == '/' ? std::string("%2F") : std::string(1, ch);
    EXPECT_EQ(run(c.get("http+unix://" + enc + "/where")).text(), "unix");
    u.stop();
}

TEST(HttpClientLoops, OneClientServesSeveralLoops) {
    App upstream;
    upstream.get("/hello", [] { return "Hello, World!"; });
    start_app(upstream);
    Client http;  // shared by the gateway's two loops
    App gateway;
    const std::string up = base(upstream) + "/hello";
    gateway.get("/via", [&]() -> Task<std::string> { co_return (co_await http.get(up)).text(); });
    start_app(gateway, 2);
    Client driver;
    auto burst = [&]() -> Task<int> {
        std::vector<Task<ClientResponse>> tasks;
        for (int i = 0; i < 64; ++i) tasks.push_back(driver.get(base(gateway) + "/via"));
        std::vector<ClientResponse> rs = co_await when_all(std::move(tasks));
        int ok = 0;
        for (const ClientResponse& r : rs) ok += r.text() == "Hello, World!";
        co_return ok;
    };
    EXPECT_EQ(run(burst()), 64);
    EXPECT_EQ(http.stats().requests, 64u);
    EXPECT_EQ(http.stats().failures, 0u);
    gateway.stop();  // its loops end before the client they use
}

TEST(HttpClientMetrics, CountersReachTheMetricsPage) {
    Client c;
    App app;
    app.get("/hi", [] { return "hi"; });
    MetricsOptions m;
    m.clients.push_back(client_source("self", c));
    metrics(app, std::move(m));
    start_app(app);
    auto steps = [&]() -> Task<std::string> {
        (void)co_await c.get(base(app) + "/hi");
        (void)co_await c.get(base(app) + "/hi");
        co_return (co_await c.get(base(app) + "/metrics")).text();
    };
    const std::string page = run(steps());
    // The third request is in flight while the page is made.
    EXPECT_NE(page.find("vela_http_client_requests_total{client=\"self\"} 3"), std::string::npos)
        << page;
    EXPECT_NE(page.find("vela_http_client_connections_reused_total{client=\"self\"} 2"),
              std::string::npos);
    EXPECT_NE(page.find("vela_http_client_connections{client=\"self\"} 1"), std::string::npos);
    EXPECT_NE(page.find("vela_http_client_idle_connections{client=\"self\"} 0"), std::string::npos);
    EXPECT_NE(page.find("vela_http_client_tls_resumed_total{client=\"self\"} 0"),
              std::string::npos);
    EXPECT_NE(page.find(fmt::format("vela_http_client_dns_lookups_total{{client=\"self\"}} {}",
                                    c.stats().dns_lookups)),
              std::string::npos)
        << page;
}

// --- Misbehaving servers ---

TEST(HttpClientFaults, GarbageAnswerIsAProtocolError) {
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd, "SSH-2.0-OpenSSH\r\n\r\n");
    });
    Client c;
    EXPECT_THROW(run(c.get(s.url())), http::ProtocolError);
}

TEST(HttpClientFaults, ConflictingFramingIsAProtocolError) {
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd,
                  "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5\r\nhello\r\n0\r\n\r\n");
    });
    Client c;
    EXPECT_THROW(run(c.get(s.url())), http::ProtocolError);
}

TEST(HttpClientFaults, BadChunkSizeIsAProtocolError) {
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n");
    });
    Client c;
    EXPECT_THROW(run(c.get(s.url())), http::ProtocolError);
}

TEST(HttpClientFaults, CloseMidBodyIsAProtocolError) {
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part");
    });
    Client c;
    try {
        run(c.get(s.url()));
        FAIL();
    } catch (const http::ProtocolError& e) {
        EXPECT_NE(std::string(e.what()).find("reading the body"), std::string::npos) << e.what();
    }
}

TEST(HttpClientFaults, HugeHeadIsTooLarge) {
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd, "HTTP/1.1 200 OK\r\nX-Big: " + std::string(100000, 'a') + "\r\n\r\n");
    });
    Client c;
    EXPECT_THROW(run(c.get(s.url())), http::TooLargeError);
}

TEST(HttpClientFaults, BodyPastMaxBodyIsTooLarge) {
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n" + std::string(2000, 'b'));
    });
    ClientOptions o;
    o.max_body = 1000;
    Client c(o);
    EXPECT_THROW(run(c.get(s.url())), http::TooLargeError);
}

TEST(HttpClientFaults, SilentServerTimesOutTheHead) {
    RawServer s([](int fd) {
        read_head(fd);
        ::usleep(1500 * 1000);
    });
    ClientOptions o;
    o.head_timeout = std::chrono::milliseconds(300);
    Client c(o);
    const auto t0 = std::chrono::steady_clock::now();
    try {
        run(c.get(s.url()));
        FAIL();
    } catch (const http::TimeoutError& e) {
        EXPECT_EQ(e.phase(), http::TimeoutError::Phase::head);
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1400));
}

TEST(HttpClientFaults, RequestTimeoutCoversASlowBody) {
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        ::usleep(1500 * 1000);
    });
    ClientOptions o;
    o.request_timeout = std::chrono::milliseconds(300);
    Client c(o);
    EXPECT_THROW(run(c.get(s.url())), http::TimeoutError);
}

TEST(HttpClientFaults, ServerClosingAKeptConnectionIsNotHandedOut) {
    // Answers one request per connection but claims keep-alive, then closes.
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        ::usleep(50 * 1000);
    });
    Client c;
    auto twice = [&]() -> Task<int> {
        int ok = 0;
        for (int i = 0; i < 3; ++i) {
            ClientResponse r = co_await c.get(s.url());
            ok += r.text() == "ok";
            co_await vela::sleep(std::chrono::milliseconds(150));  // the server has closed by now
        }
        co_return ok;
    };
    EXPECT_EQ(run(twice()), 3);
    EXPECT_EQ(s.accepted.load(), 3);
}

TEST(HttpClientFaults, StaleReusedConnectionIsRetriedOnce) {
    // The server answers, keeps the connection open, then reads the next request and closes
    // without an answer: the client sees a dead reused connection and sends it again.
    std::atomic<int> conns{0};
    RawServer s([&](int fd) {
        const int n = ++conns;
        read_head(fd);
        write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n" + std::to_string(n));
        if (n == 1) read_head(fd);  // the second request arrives: close without answering
    });
    Client c;
    auto two = [&]() -> Task<std::string> {
        std::string out = (co_await c.get(s.url())).text();
        out += (co_await c.get(s.url())).text();
        co_return out;
    };
    EXPECT_EQ(run(two()), "12");
    EXPECT_EQ(c.stats().retries, 1u);
    // A POST is not sent twice.
    conns = 0;
    auto posts = [&]() -> Task<void> {
        (void)co_await c.post(s.url(), "a");
        (void)co_await c.post(s.url(), "b");
    };
    EXPECT_THROW(run(posts()), http::ProtocolError);
}

TEST(HttpClientFaults, InterimResponsesAreSkipped) {
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd,
                  "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                  "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone");
    });
    Client c;
    const ClientResponse r = run(c.get(s.url()));
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.text(), "done");
}

TEST(HttpClientFaults, BodyUntilCloseAndHttp10) {
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd, "HTTP/1.0 200 OK\r\n\r\nto the end");
    });
    Client c;
    const ClientResponse r = run(c.get(s.url()));
    EXPECT_EQ(r.text(), "to the end");
    EXPECT_EQ(r.protocol(), "HTTP/1.0");
    EXPECT_EQ(c.stats().idle, 0u);
}

TEST(HttpClientFaults, BodyUntilCloseCutByAResetIsAnError) {
    // Only an orderly close (FIN) ends a body that runs until the close; a reset may have cut
    // it short.
    RawServer s([](int fd) {
        read_head(fd);
        write_all(fd, "HTTP/1.0 200 OK\r\n\r\nthe first half");
        ::usleep(500 * 1000);  // (a reset before the client read the head discards it)
        const linger reset{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);  // close() sends RST
    });
    Client c;
    try {
        const ClientResponse r = run(c.get(s.url()));
        FAIL() << "taken as complete: " << r.text();
    } catch (const http::ProtocolError& e) {
        EXPECT_NE(std::string(e.what()).find("reset"), std::string::npos) << e.what();
    }
}

// --- Through a forward proxy ---

TEST_F(HttpClientTest, HttpThroughAProxyInAbsoluteForm) {
    ForwardProxy proxy;
    ClientOptions o;
    o.proxy = "http://u:p@" + proxy.url().substr(7);
    Client c(o);
    EXPECT_EQ(run(c.get(base(app) + "/hello")).text(), "Hello, World!");
    ASSERT_EQ(proxy.lines().size(), 1u);
    EXPECT_EQ(proxy.lines()[0], "GET " + base(app) + "/hello HTTP/1.1");
    EXPECT_EQ(proxy.auths()[0], "Basic dTpw");  // base64("u:p")
    // NO_PROXY: straight to the server.
    o.no_proxy = "example.com, 127.0.0.1";
    Client direct(o);
    EXPECT_EQ(run(direct.get(base(app) + "/hello")).text(), "Hello, World!");
    EXPECT_EQ(proxy.lines().size(), 1u);
}

TEST_F(HttpClientTest, ProxiesFromTheEnvironmentSkipLoopback) {
    ForwardProxy proxy;
    ::setenv("http_proxy", proxy.url().c_str(), 1);
    Client c;
    ::unsetenv("http_proxy");
    EXPECT_EQ(run(c.get(base(app) + "/hello")).text(), "Hello, World!");
    EXPECT_TRUE(proxy.lines().empty());
    ClientOptions bad;
    bad.proxy = "socks5://127.0.0.1:1080";
    EXPECT_THROW(Client{bad}, std::invalid_argument);
}

// --- Compression ---

TEST(HttpClientCompression, DecodesWhatItOffered) {
    App app;
    app.use(compression());
    app.get("/text", [] { return std::string(50000, 'z'); });
    start_app(app);
    Client c;
    const ClientResponse r = run(c.get(base(app) + "/text"));
    EXPECT_FALSE(r.header("content-encoding").empty());
    EXPECT_EQ(r.text(), std::string(50000, 'z'));
    // A request with its own Accept-Encoding gets the bytes as sent.
    std::vector<http::Header> h{{"Accept-Encoding", "gzip"}};
    const ClientResponse raw = run(c.get(base(app) + "/text", h));
    EXPECT_EQ(raw.header("content-encoding"), "gzip");
    EXPECT_LT(raw.text().size(), 50000u);
    // A bomb stops at max_body.
    ClientOptions o;
    o.max_body = 10000;
    Client small(o);
    EXPECT_THROW(run(small.get(base(app) + "/text")), http::TooLargeError);
}

// --- TLS ---

class HttpClientTls : public ::testing::Test {
  protected:
    void serve(const std::string& cert, const std::string& key) {
        app.get("/hello", [] { return "secure"; });
        TlsOptions t;
        t.cert = cert;
        t.key = key;
        app.listen_tls("127.0.0.1:0", std::move(t));
        app.start(1);
    }
    std::string url(std::string_view host = "localhost") const {
        return "https://" + std::string(host) + ":" + std::to_string(app.port()) + "/hello";
    }
    // The handshake fails, for the reason `want`.
    void expect_failure(Client& c, tls::Failure want) {
        try {
            run(c.get(url()));
            ADD_FAILURE() << "no error";
        } catch (const http::TlsHandshakeError& e) {
            EXPECT_EQ(e.failure(), want) << e.what();
        }
    }
    static ClientOptions trusting() {
        ClientOptions o;
        o.tls.ca_file = test::test_certs().ca;
        return o;
    }
    App app;
};

TEST_F(HttpClientTls, VerifiedHandshakeByNameAndAddress) {
    serve(test::test_certs().server_ec_cert, test::test_certs().server_ec_key);
    Client c(trusting());
    EXPECT_EQ(run(c.get(url())).text(), "secure");
    EXPECT_EQ(run(c.get(url("127.0.0.1"))).text(), "secure");
}

TEST_F(HttpClientTls, UnknownCaIsRefused) {
    serve(test::test_certs().server_ec_cert, test::test_certs().server_ec_key);
    Client c;  // the system store does not know the test CA
    expect_failure(c, tls::Failure::unknown_ca);
}

TEST_F(HttpClientTls, WrongHostIsRefused) {
    serve(test::test_certs().sni_a_cert, test::test_certs().sni_a_key);  // for a.test only
    Client c(trusting());
    expect_failure(c, tls::Failure::wrong_host);
}

TEST_F(HttpClientTls, ExpiredCertificateIsRefused) {
    serve(test::test_certs().expired_cert, test::test_certs().expired_key);
    Client c(trusting());
    expect_failure(c, tls::Failure::expired);
}

TEST_F(HttpClientTls, SelfSignedCertificateIsRefused) {
    serve(test::test_certs().self_signed_cert, test::test_certs().self_signed_key);
    Client c(trusting());
    expect_failure(c, tls::Failure::self_signed);
}

TEST_F(HttpClientTls, VerificationOffAcceptsAnything) {
    serve(test::test_certs().sni_a_cert, test::test_certs().sni_a_key);
    ClientOptions o;
    o.tls.verify = false;
    Client c(o);
    EXPECT_EQ(run(c.get(url())).text(), "secure");
}

TEST_F(HttpClientTls, ABadCaFileIsAStartupError) {
    ClientOptions o;
    o.tls.ca_file = "/nonexistent/ca.pem";
    try {
        Client c(o);
        FAIL();
    } catch (const TlsError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/ca.pem"), std::string::npos);
    }
}

TEST_F(HttpClientTls, HttpsThroughAProxyTunnel) {
    serve(test::test_certs().server_ec_cert, test::test_certs().server_ec_key);
    ForwardProxy proxy;
    ClientOptions o = trusting();
    o.proxy = proxy.url();
    Client c(o);
    auto twice = [&]() -> Task<std::string> {
        std::string a = (co_await c.get(url())).text();
        co_return a + (co_await c.get(url())).text();
    };
    EXPECT_EQ(run(twice()), "securesecure");
    ASSERT_EQ(proxy.lines().size(), 1u);  // one tunnel, kept alive
    EXPECT_EQ(proxy.lines()[0], "CONNECT localhost:" + std::to_string(app.port()) + " HTTP/1.1");
}

TEST_F(HttpClientTls, AProxyRefusingTheTunnelIsAConnectError) {
    serve(test::test_certs().server_ec_cert, test::test_certs().server_ec_key);
    ForwardProxy proxy(true);
    ClientOptions o = trusting();
    o.proxy = proxy.url();
    o.retries = 0;
    Client c(o);
    try {
        run(c.get(url()));
        FAIL();
    } catch (const http::ConnectError& e) {
        EXPECT_NE(std::string(e.what()).find("407"), std::string::npos) << e.what();
    }
}

TEST_F(HttpClientTls, KeepAliveOverTls) {
    serve(test::test_certs().server_ec_cert, test::test_certs().server_ec_key);
    Client c(trusting());
    auto many = [&]() -> Task<int> {
        int ok = 0;
        for (int i = 0; i < 5; ++i) ok += (co_await c.get(url())).text() == "secure";
        co_return ok;
    };
    EXPECT_EQ(run(many()), 5);
    EXPECT_EQ(c.stats().connections_opened, 1u);
    EXPECT_EQ(c.stats().tls_resumed, 0u);
    // Another loop's new connection resumes the session (TLS 1.3 ticket).
    EXPECT_EQ(run(c.get(url())).text(), "secure");
    EXPECT_EQ(c.stats().connections_opened, 2u);
    EXPECT_EQ(c.stats().tls_resumed, 1u);
}

// --- A real server that is not vela ---

TEST(HttpClientPeers, PythonHttpServer) {
    PythonHttpServer py("served by python");
    Client c;
    std::string body;
    for (int i = 0; i < 50 && body.empty(); ++i) {
        try {
            body = run(c.get(py.url() + "/file.txt")).text();
        } catch (const http::ConnectError&) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    EXPECT_EQ(body, "served by python");
}

// --- HTTP/2 ---

// A vela App serving HTTP/2 over TLS (ALPN h2, port 1) and h2c (port 0).
class Http2Client : public ::testing::Test {
  protected:
    void SetUp() override {
        add_basic_routes(app);
        app.get("/big", [](Request& r) {
            const auto n = std::stoul(r.query("n").value_or("0"));
            std::string out(n, 'x');
            for (std::size_t i = 0; i < n; i += 4096)
                out[i] = static_cast<char>('a' + i / 4096 % 26);
            return out;
        });
        app.get("/slow", [](Request&) -> Task<Response> {
            co_await vela::sleep(std::chrono::milliseconds(1500));
            co_return "slow";
        });
        app.streaming(Method::POST, "/count", [](Request& req) -> Task<Response> {
            std::uint64_t total = 0, sum = 0;
            for (;;) {
                BodyChunk c = co_await req.body_stream().read();
                if (c.error != Status::OK) co_return Response(c.error);
                for (const unsigned char ch : c.data) sum += ch;
                total += c.data.size();
                if (c.end) break;
            }
            co_return Response::text(std::to_string(total) + " " + std::to_string(sum));
        });
        app.get("/go", [] {
            Response r(Status::Found);
            r.add_header("Location", "/login");
            return r;
        });
        app.get("/login", [] {
            Response r("in");
            r.set_cookie({.name = "sid", .value = "42"});
            return r;
        });
        app.get("/cookie", [](Request& r) { return std::string(r.header("cookie")); });
        app.get("/fat", [] {
            Response r("fat");
            r.add_header("X-Fat", std::string(8000, 'f'));
            return r;
        });
        app.options().limits.max_streamed_body = std::uint64_t{1} << 30;
        start_app_with_tls(app, true);
    }
    std::string h2c(std::string_view path) const { return base(app) + std::string(path); }
    std::string tls(std::string_view path) const {
        return "https://localhost:" + std::to_string(app.port(1)) + std::string(path);
    }
    static ClientOptions options(bool h2c) {
        ClientOptions o;
        o.tls.ca_file = test::test_certs().ca;
        o.h2c = h2c;
        return o;
    }
    App app;
};

TEST_F(Http2Client, AlpnAndPriorKnowledgeSpeakHttp2) {
    Client c(options(true));
    const ClientResponse a = run(c.get(tls("/hello")));
    EXPECT_EQ(a.protocol(), "HTTP/2");
    EXPECT_EQ(a.text(), "Hello, World!");
    EXPECT_EQ(a.url(), tls("/hello"));
    const ClientResponse b = run(c.get(h2c("/users/7")));
    EXPECT_EQ(b.protocol(), "HTTP/2");
    EXPECT_EQ(b.text(), "7");
    EXPECT_EQ(run(c.post(h2c("/echo"), "posted")).text(), "posted");
    EXPECT_EQ(run(c.get(h2c("/nowhere"))).status(), 404);
    // Without h2c, the plain port is HTTP/1.1.
    Client plain(options(false));
    EXPECT_EQ(run(plain.get(h2c("/hello"))).protocol(), "HTTP/1.1");
}

TEST_F(Http2Client, FiftyConcurrentRequestsShareOneConnection) {
    for (const bool secure : {false, true}) {
        Client c(options(true));
        auto burst = [&]() -> Task<int> {
            std::vector<Task<ClientResponse>> tasks;
            for (int i = 0; i < 50; ++i) {
                const std::string path = "/users/" + std::to_string(i);
                tasks.push_back(c.get(secure ? tls(path) : h2c(path)));
            }
            std::vector<ClientResponse> rs = co_await when_all(std::move(tasks));
            int ok = 0;
            for (std::size_t i = 0; i < rs.size(); ++i)
                if (rs[i].text() == std::to_string(i) && rs[i].protocol() == "HTTP/2") ++ok;
            co_return ok;
        };
        EXPECT_EQ(run(burst()), 50);
        const http::ClientStats s = c.stats();
        EXPECT_EQ(s.connections_opened, 1u) << secure;
        EXPECT_EQ(s.connections_reused, 49u) << secure;
        EXPECT_EQ(s.requests, 50u) << secure;
    }
}

TEST_F(Http2Client, LargeResponsesBufferedAndStreamed) {
    Client c(options(true));
    const std::size_t n = 5u << 20;  // far past the 64 KiB initial window
    const ClientResponse whole = run(c.get(h2c("/big?n=" + std::to_string(n))));
    ASSERT_EQ(whole.text().size(), n);
    EXPECT_EQ(whole.text()[4096], 'b');
    auto streamed = [&]() -> Task<std::size_t> {
        ClientRequest req;
        req.url = tls("/big?n=" + std::to_string(n));
        req.stream = true;
        ClientResponse r = co_await c.request(std::move(req));
        std::size_t got = 0, pieces = 0;
        while (auto piece = co_await r.body().read()) {
            got += piece->size();
            ++pieces;
        }
        EXPECT_GT(pieces, 1u);
        EXPECT_TRUE(r.body().done());
        co_return got;
    };
    EXPECT_EQ(run(streamed()), n);
    // A streamed response abandoned half-read resets its stream; the connection goes on.
    auto half = [&]() -> Task<std::string> {
        {
            ClientRequest req;
            req.url = h2c("/big?n=" + std::to_string(n));
            req.stream = true;
            ClientResponse r = co_await c.request(std::move(req));
            (void)co_await r.body().read();
        }
        co_return (co_await c.get(h2c("/hello"))).text();
    };
    const std::uint64_t before = c.stats().connections_opened;
    EXPECT_EQ(run(half()), "Hello, World!");
    EXPECT_EQ(c.stats().connections_opened, before + 1);  // a new loop: one connection
}

TEST_F(Http2Client, StreamedUploadRespectsTheWindows) {
    Client c(options(true));
    auto send = [&](std::string url, bool with_length) -> Task<std::string> {
        ClientRequest req;
        req.method = "POST";
        req.url = std::move(url);
        auto left = std::make_shared<int>(64);
        req.body_source = [left]() -> Task<std::optional<std::string>> {
            if (*left == 0) co_return std::nullopt;
            --*left;
            co_return std::string(32 * 1024, 'u');
        };
        if (with_length) req.content_length = 64 * 32 * 1024;
        ClientResponse r = co_await c.request(std::move(req));
        EXPECT_EQ(r.protocol(), "HTTP/2");
        co_return r.text();
    };
    const std::string want =
        std::to_string(64 * 32 * 1024) + " " + std::to_string(std::uint64_t{64} * 32 * 1024 * 'u');
    EXPECT_EQ(run(send(h2c("/count"), false)), want);
    EXPECT_EQ(run(send(tls("/count"), true)), want);
    const std::string big(3u << 20, 'b');
    EXPECT_EQ(run(c.post(h2c("/echo"), big)).text().size(), big.size());
}

TEST_F(Http2Client, StreamTimeoutLeavesTheConnectionUsable) {
    Client c(options(true));
    auto both = [&]() -> Task<int> {
        int ok = (co_await c.get(h2c("/hello"))).text() == "Hello, World!";
        ClientRequest slow;
        slow.url = h2c("/slow");
        slow.timeout = std::chrono::milliseconds(200);
        try {
            (void)co_await c.request(std::move(slow));
        } catch (const http::TimeoutError& e) {
            ok += e.phase() == http::TimeoutError::Phase::request;
        }
        ok += (co_await c.get(h2c("/users/3"))).text() == "3";
        co_return ok;
    };
    EXPECT_EQ(run(both()), 3);
    EXPECT_EQ(c.stats().connections_opened, 1u);
}

TEST_F(Http2Client, HeadersTooLargeIsTooLarge) {
    ClientOptions o = options(true);
    o.head_limits.max_head_bytes = 4096;
    Client c(o);
    EXPECT_THROW(run(c.get(h2c("/fat"))), http::TooLargeError);
    EXPECT_EQ(run(c.get(h2c("/hello"))).text(), "Hello, World!");
}

TEST_F(Http2Client, RedirectsAndCookies) {
    ClientOptions o = options(true);
    o.cookies = true;
    Client c(o);
    auto go = [&]() -> Task<std::string> {
        const ClientResponse r = co_await c.get(h2c("/go"));
        EXPECT_EQ(r.redirects(), 1);
        EXPECT_EQ(r.url(), h2c("/login"));
        EXPECT_EQ(r.protocol(), "HTTP/2");
        co_return (co_await c.get(h2c("/cookie"))).text();
    };
    EXPECT_EQ(run(go()), "sid=42");
}

TEST_F(Http2Client, StalledStreamDoesNotBlockTheOthers) {
    Client c(options(true));
    auto go = [&]() -> Task<std::size_t> {
        ClientRequest req;
        req.url = h2c("/big?n=" + std::to_string(4u << 20));
        req.stream = true;
        ClientResponse big = co_await c.request(std::move(req));
        std::size_t got = (co_await big.body().read())->size();
        // The big stream is not read (its window fills up): the others go on beside it.
        for (int i = 0; i < 10; ++i)
            if ((co_await c.get(h2c("/users/" + std::to_string(i)))).text() != std::to_string(i))
                co_return 0;
        while (auto piece = co_await big.body().read()) got += piece->size();
        co_return got;
    };
    EXPECT_EQ(run(go()), 4u << 20);
    EXPECT_EQ(c.stats().connections_opened, 1u);
}

TEST(Http2ClientLimits, ServerConcurrencyLimitIsHonoured) {
    App app;
    app.options().http2.max_concurrent_streams = 4;
    app.get("/wait", [](Request&) -> Task<Response> {
        co_await vela::sleep(std::chrono::milliseconds(20));
        co_return "done";
    });
    start_app(app);
    ClientOptions o;
    o.h2c = true;
    o.max_connections_per_origin = 1;
    Client c(o);
    auto burst = [&]() -> Task<int> {
        std::vector<Task<ClientResponse>> tasks;
        for (int i = 0; i < 20; ++i) tasks.push_back(c.get(base(app) + "/wait"));
        int ok = 0;
        for (const ClientResponse& r : co_await when_all(std::move(tasks)))
            ok += r.text() == "done";
        co_return ok;
    };
    EXPECT_EQ(run(burst()), 20);
    EXPECT_EQ(c.stats().connections_opened, 1u);
    EXPECT_EQ(c.stats().retries, 0u);  // no stream was refused
}

TEST(Http2ClientCompression, HeadAndDecoding) {
    App app;
    app.use(compression());
    app.get("/text", [] { return std::string(50000, 'z'); });
    start_app_with_tls(app, true);
    ClientOptions o;
    o.tls.ca_file = test::test_certs().ca;
    o.h2c = true;
    Client c(o);
    const ClientResponse h = run(c.head(base(app) + "/text"));
    EXPECT_EQ(h.status(), 200);
    EXPECT_EQ(h.protocol(), "HTTP/2");
    EXPECT_TRUE(h.text().empty());
    const ClientResponse r = run(c.get(base(app) + "/text"));
    EXPECT_FALSE(r.header("content-encoding").empty());
    EXPECT_EQ(r.text(), std::string(50000, 'z'));
    std::vector<http::Header> raw{{"Accept-Encoding", "gzip"}};
    const ClientResponse g =
        run(c.get("https://localhost:" + std::to_string(app.port(1)) + "/text", raw));
    EXPECT_EQ(g.protocol(), "HTTP/2");
    EXPECT_EQ(g.header("content-encoding"), "gzip");
    EXPECT_LT(g.text().size(), 50000u);
}

TEST(Http2ClientAlpn, FallsBackToHttp11WhenTheServerOffersNoH2) {
    App app;
    app.get("/hello", [] { return "secure"; });
    TlsOptions t;
    t.cert = test::test_certs().server_ec_cert;
    t.key = test::test_certs().server_ec_key;
    t.http2 = false;
    app.listen_tls("127.0.0.1:0", std::move(t));
    app.start(1);
    ClientOptions o;
    o.tls.ca_file = test::test_certs().ca;
    Client c(o);
    const std::string url = "https://localhost:" + std::to_string(app.port()) + "/hello";
    auto twice = [&]() -> Task<std::string> {
        const ClientResponse r = co_await c.get(url);
        EXPECT_EQ(r.text(), "secure");
        co_return std::string((co_await c.get(url)).protocol());
    };
    EXPECT_EQ(run(twice()), "HTTP/1.1");
    EXPECT_EQ(c.stats().connections_reused, 1u);
    o.http2 = false;
    Client h1(o);
    EXPECT_EQ(run(h1.get(url)).protocol(), "HTTP/1.1");
}

// An h2c server on one raw socket (a RawServer script), with vela's h2::Session in the server
// role: `answer` decides what each request gets.
class H2Script final : public h2::SessionHandler {
  public:
    enum class Answer : std::uint8_t { ok, interim, goaway, refuse, fat_head, bad_frame };
    explicit H2Script(Answer a) : answer_(a) {}
    void serve(int fd) {
        session_.start();
        char buf[16384];
        std::string in;
        for (;;) {
            write_all(fd, session_.output());
            session_.output().clear();
            if (closing_ || session_.closed()) break;
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 500) <= 0) break;
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n <= 0) break;
            in.append(buf, static_cast<std::size_t>(n));
            in.erase(0, session_.receive(in));
        }
        // Wait for the client to close (it reads what was sent first).
        pollfd p{fd, POLLIN, 0};
        while (::poll(&p, 1, 500) > 0 && ::read(fd, buf, sizeof buf) > 0) {
        }
    }
    void on_begin_headers(h2::Stream&) override {}
    void on_field(h2::Stream&, const hpack::DecodedField&) override {}
    void on_headers(h2::Stream& s, const h2::HeadersEnd&) override {
        std::string& out = session_.output();
        switch (answer_) {
            case Answer::ok: {
                const hpack::EncoderField f[] = {{":status", "200"}, {"content-length", "2"}};
                session_.send_headers(s, f, false);
                session_.send_data(s, "ok", true);
                break;
            }
            case Answer::interim: {  // 103 Early Hints, then the answer with trailers
                const hpack::EncoderField hints[] = {{":status", "103"}, {"link", "</a.css>"}};
                session_.send_headers(s, hints, false);
                const hpack::EncoderField f[] = {{":status", "200"}};
                session_.send_headers(s, f, false);
                session_.send_data(s, "ok", false);
                const hpack::EncoderField trailers[] = {{"x-checksum", "1"}};
                session_.send_headers(s, trailers, true);
                break;
            }
            case Answer::goaway:  // nothing processed: the request goes elsewhere
                h2::append_goaway(out, 0, h2::ErrorCode::no_error, "");
                closing_ = true;
                break;
            case Answer::refuse:
                session_.reset(s, h2::ErrorCode::refused_stream);
                break;
            case Answer::fat_head: {  // 40 fields of 3,000 bytes: past the 64 KiB list limit
                const std::string fat(3000, 'f');
                std::vector<hpack::EncoderField> f{{":status", "200"}};
                std::vector<std::string> names;
                for (int i = 0; i < 40; ++i) names.push_back("x-fat-" + std::to_string(i));
                for (const std::string& n : names) f.push_back({n, fat});
                session_.send_headers(s, f, true);
                break;
            }
            case Answer::bad_frame:  // DATA on stream 0: a connection error
                h2::append_data(out, 0, "junk", false);
                break;
        }
    }
    void on_data(h2::Stream& s, std::string_view d, bool) override {
        session_.consume(s, d.size());
    }
    void on_close(h2::Stream&, h2::ErrorCode, bool) override {}

  private:
    Answer answer_;
    h2::Session session_{*this};
    bool closing_ = false;
};

ClientOptions h2c_only() {
    ClientOptions o;
    o.h2c = true;
    o.retries = 0;
    return o;
}

TEST(Http2ClientFaults, GoawayAndRefusedStreamAreRetriedOnANewConnection) {
    for (const auto first : {H2Script::Answer::goaway, H2Script::Answer::refuse}) {
        std::atomic<int> n{0};
        RawServer server(
            [&](int fd) { H2Script(n++ == 0 ? first : H2Script::Answer::ok).serve(fd); });
        Client c(h2c_only());
        // A POST: the server said it did not process it, so it may go again.
        const ClientResponse r = run(c.post(server.url("/x"), "body"));
        EXPECT_EQ(r.text(), "ok");
        EXPECT_EQ(r.protocol(), "HTTP/2");
        EXPECT_EQ(c.stats().connections_opened, 2u);
        EXPECT_EQ(c.stats().retries, 1u);
    }
}

TEST(Http2ClientFaults, InterimResponsesAndTrailersAreSkipped) {
    RawServer server([](int fd) { H2Script(H2Script::Answer::interim).serve(fd); });
    Client c(h2c_only());
    const ClientResponse r = run(c.get(server.url()));
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.text(), "ok");
    EXPECT_FALSE(r.has_header("link"));
    EXPECT_FALSE(r.has_header("x-checksum"));
}

TEST(Http2ClientFaults, AlwaysRefusedFailsAfterOneRetry) {
    RawServer server([](int fd) { H2Script(H2Script::Answer::refuse).serve(fd); });
    Client c(h2c_only());
    EXPECT_THROW(run(c.get(server.url())), http::ProtocolError);
    EXPECT_EQ(c.stats().retries, 1u);
}

TEST(Http2ClientFaults, RandomFramesNeverCrash) {
    // Each connection: the server's SETTINGS, then frames of random types, flags, streams and
    // payloads (a deterministic generator per connection). Any ClientError is a fine ending.
    std::atomic<std::uint32_t> seed{1};
    RawServer server([&](int fd) {
        std::uint32_t x = seed++ * 2654435761u;
        auto next = [&x] {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            return x;
        };
        char buf[4096];
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 1000) > 0) (void)::read(fd, buf, sizeof buf);  // preface, request
        std::string out;
        h2::append_settings(out, {});
        for (int i = 0; i < 8; ++i) {
            const std::uint32_t len = next() % 48;
            h2::append_frame_header(out, len, static_cast<h2::FrameType>(next() % 11),
                                    static_cast<std::uint8_t>(next()), next() % 4);
            for (std::uint32_t k = 0; k < len; ++k) out += static_cast<char>(next());
        }
        write_all(fd, out);
        while (::poll(&p, 1, 300) > 0 && ::read(fd, buf, sizeof buf) > 0) {
        }
    });
    ClientOptions o = h2c_only();
    o.request_timeout = std::chrono::milliseconds(400);
    Client c(o);
    int errors = 0;
    for (int i = 0; i < 200; ++i) {
        try {
            (void)run(c.get(server.url()));
        } catch (const http::ClientError&) {
            ++errors;
        }
    }
    EXPECT_GT(errors, 150);
}

TEST(Http2ClientFaults, HostileServersGiveTypedErrors) {
    {
        RawServer server([](int fd) { H2Script(H2Script::Answer::bad_frame).serve(fd); });
        Client c(h2c_only());
        EXPECT_THROW(run(c.get(server.url())), http::ProtocolError);
    }
    {
        RawServer server([](int fd) { H2Script(H2Script::Answer::fat_head).serve(fd); });
        Client c(h2c_only());
        EXPECT_THROW(run(c.get(server.url())), http::TooLargeError);
    }
    {
        RawServer server([](int fd) {
            (void)read_head(fd);
            write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        });
        Client c(h2c_only());
        EXPECT_THROW(run(c.get(server.url())), http::ProtocolError);
    }
    {
        RawServer server([](int fd) { ::shutdown(fd, SHUT_RDWR); });
        Client c(h2c_only());
        EXPECT_THROW(run(c.get(server.url())), http::ProtocolError);
    }
}

}  // namespace
}  // namespace vela::e2e
