// Rate limiting end to end: a real App on loopback, real sockets.
//
// The N+1-th request of a key gets 429 with Retry-After, the RateLimit fields and a
// problem+json body, while other keys go on; the bucket refills with time; a limiter on one
// group leaves other routes alone, and one limiter shared by two groups counts both; the
// default key is the peer address (IPv4 and IPv6 loopback are two clients); requests from
// several connections on two loops are counted exactly; curl reads the fields.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "client.hpp"
#include "process.hpp"
#include "vela/middleware/rate_limit.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

// One GET on `c` with an optional client key (X-Client), its response.
HttpResponse get(Client& c, std::string_view path, std::string_view client = {}) {
    std::string extra;
    if (!client.empty()) extra = "X-Client: " + std::string(client) + "\r\n";
    EXPECT_TRUE(c.send(get_request(path, extra)));
    std::optional<HttpResponse> r = c.read_response();
    EXPECT_TRUE(r.has_value()) << path;
    return r ? *r : HttpResponse{};
}

RateLimitOptions by_client(std::uint32_t rate, std::chrono::nanoseconds period) {
    RateLimitOptions o;
    o.rate = rate;
    o.period = period;
    o.key = rate_limit_key::header("X-Client");
    return o;
}

TEST(RateLimitE2E, NPlusOnethRequestGets429WithTheFields) {
    App app;
    quick_options(app.options());
    const RateLimiter limiter = rate_limit(by_client(3, std::chrono::minutes(1)));
    app.use(limiter);
    add_basic_routes(app);
    start_app(app);

    Client c = Client::tcp(app.port());
    for (int i = 0; i < 3; ++i) {
        const HttpResponse r = get(c, "/hello", "alice");
        ASSERT_EQ(r.status, 200) << i;
        EXPECT_EQ(r.body, "Hello, World!");
        EXPECT_EQ(r.header("RateLimit-Policy"), "\"default\";q=3;w=60");
        EXPECT_EQ(r.header("RateLimit").substr(0, 15),
                  "\"default\";r=" + std::to_string(2 - i) + ";t");
    }
    const HttpResponse refused = get(c, "/hello", "alice");
    EXPECT_EQ(refused.status, 429);
    EXPECT_EQ(refused.reason, "Too Many Requests");
    EXPECT_EQ(refused.header("Retry-After"), "20");  // one token every 20 s
    EXPECT_EQ(refused.header("RateLimit-Policy"), "\"default\";q=3;w=60");
    EXPECT_EQ(refused.header("RateLimit").substr(0, 15), "\"default\";r=0;t");
    EXPECT_EQ(refused.header("Content-Type"), "application/problem+json");
    EXPECT_NE(refused.body.find("\"status\":429"), std::string::npos) << refused.body;
    EXPECT_NE(refused.body.find("retry in 20 seconds"), std::string::npos) << refused.body;

    // The connection stays usable, and another client key is not affected.
    const HttpResponse bob = get(c, "/hello", "bob");
    EXPECT_EQ(bob.status, 200);
    EXPECT_EQ(bob.header("RateLimit").substr(0, 15), "\"default\";r=2;t");
    EXPECT_EQ(get(c, "/hello", "alice").status, 429);

    // A global limiter counts unrouted requests too (middleware runs for them).
    EXPECT_EQ(get(c, "/no-such-route", "alice").status, 429);
    EXPECT_EQ(get(c, "/no-such-route", "carol").status, 404);
}

TEST(RateLimitE2E, RefillsAfterThePeriod) {
    App app;
    quick_options(app.options());
    app.use(rate_limit(by_client(2, std::chrono::seconds(1))));
    add_basic_routes(app);
    start_app(app);

    Client c = Client::tcp(app.port());
    EXPECT_EQ(get(c, "/", "k").status, 200);
    EXPECT_EQ(get(c, "/", "k").status, 200);
    const HttpResponse refused = get(c, "/", "k");
    ASSERT_EQ(refused.status, 429);
    EXPECT_EQ(refused.header("Retry-After"), "1");
    std::this_thread::sleep_for(Ms{1100});  // a whole period: the bucket is full again
    EXPECT_EQ(get(c, "/", "k").status, 200);
    EXPECT_EQ(get(c, "/", "k").status, 200);
}

TEST(RateLimitE2E, GroupLimiterLeavesOtherRoutesAlone) {
    App app;
    quick_options(app.options());
    RateLimitOptions o = by_client(2, std::chrono::minutes(1));
    o.name = "login";
    app.group("/login").use(rate_limit(std::move(o))).post("", [] { return "welcome"; });
    add_basic_routes(app);
    start_app(app);

    Client c = Client::tcp(app.port());
    const std::string login = request_with_body("POST", "/login", "user=a", "X-Client: a\r\n");
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(c.send(login));
        std::optional<HttpResponse> r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, "welcome");
        EXPECT_EQ(r->header("RateLimit").substr(0, 11), "\"login\";r=" + std::to_string(1 - i));
    }
    ASSERT_TRUE(c.send(login));
    std::optional<HttpResponse> r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 429);
    EXPECT_EQ(r->header("RateLimit-Policy"), "\"login\";q=2;w=60");
    for (int i = 0; i < 10; ++i) {
        const HttpResponse other = get(c, "/hello", "a");
        EXPECT_EQ(other.status, 200);
        EXPECT_TRUE(other.header("RateLimit").empty());
    }
}

TEST(RateLimitE2E, OneLimiterSharedByTwoGroups) {
    App app;
    quick_options(app.options());
    const RateLimiter shared = rate_limit(by_client(3, std::chrono::minutes(1)));
    app.group("/v1").use(shared).get("/items", [] { return "v1"; });
    app.group("/v2").use(shared).get("/items", [] { return "v2"; });
    app.get("/free", [] { return "free"; });
    start_app(app);

    Client c = Client::tcp(app.port());
    EXPECT_EQ(get(c, "/v1/items", "k").body, "v1");
    EXPECT_EQ(get(c, "/v2/items", "k").body, "v2");
    EXPECT_EQ(get(c, "/v1/items", "k").body, "v1");
    EXPECT_EQ(get(c, "/v2/items", "k").status, 429);  // one bucket for both groups
    EXPECT_EQ(get(c, "/v1/items", "k").status, 429);
    EXPECT_EQ(get(c, "/free", "k").status, 200);
    EXPECT_EQ(get(c, "/v2/items", "other").status, 200);
}

bool ipv6_loopback_available() {
    int fd = net::connect_tcp("::1", 9);  // refused (not "unreachable") when ::1 exists
    if (fd >= 0) {
        ::close(fd);
        return true;
    }
    return errno == ECONNREFUSED;
}

TEST(RateLimitE2E, DefaultKeyIsThePeerAddress) {
    App app;
    quick_options(app.options());
    RateLimitOptions o;
    o.rate = 2;
    app.use(rate_limit(std::move(o)));
    add_basic_routes(app);
    const bool v6 = ipv6_loopback_available();
    app.listen("127.0.0.1:0");
    if (v6) app.listen("[::1]:0");
    app.start(1);

    Client a = Client::tcp(app.port(0));
    EXPECT_EQ(get(a, "/").status, 200);
    Client a2 = Client::tcp(app.port(0));  // a new connection from the same address
    EXPECT_EQ(get(a2, "/").status, 200);
    EXPECT_EQ(get(a, "/").status, 429);
    EXPECT_EQ(get(a2, "/", "anything").status, 429);  // headers do not matter to this key
    if (!v6) GTEST_SKIP() << "no IPv6 loopback here: one address only";
    Client b = Client::tcp6(app.port(1));
    EXPECT_EQ(get(b, "/").status, 200);  // ::1 is another client
}

TEST(RateLimitE2E, ExactCountAcrossLoopsAndConnections) {
    App app;
    quick_options(app.options());
    app.use(rate_limit(by_client(50, std::chrono::hours(1))));
    add_basic_routes(app);
    start_app(app, 2);

    std::atomic<int> ok{0}, refused{0}, other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int conn = 0; conn < 3; ++conn) {  // several connections, spread over the loops
                Client c = Client::tcp(app.port());
                for (int i = 0; i < 10; ++i) {
                    if (!c.send(get_request("/", "X-Client: shared\r\n"))) break;
                    std::optional<HttpResponse> r = c.read_response();
                    if (!r) break;
                    (r->status == 200 ? ok : r->status == 429 ? refused : other).fetch_add(1);
                }
            }
        });
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(ok.load(), 50);
    EXPECT_EQ(refused.load(), 70);
    EXPECT_EQ(other.load(), 0);
}

TEST(RateLimitE2E, CurlSeesTheFields) {
    if (!have("curl")) GTEST_SKIP() << "needs curl";
    App app;
    quick_options(app.options());
    RateLimitOptions o;
    o.rate = 1;
    o.period = std::chrono::seconds(30);
    const RateLimiter limiter = rate_limit(std::move(o));
    app.use(limiter);
    add_basic_routes(app);
    start_app(app);

    const std::string url = "http://127.0.0.1:" + std::to_string(app.port()) + "/hello";
    // Two requests in one curl run: one connection, the second refused.
    const std::string out = shell("curl -s -i " + url + " " + url + " 2>&1");
    EXPECT_NE(out.find("HTTP/1.1 200"), std::string::npos) << out;
    EXPECT_NE(out.find("RateLimit: \"default\";r=0;t=30"), std::string::npos) << out;
    EXPECT_NE(out.find("HTTP/1.1 429"), std::string::npos) << out;
    EXPECT_NE(out.find("Retry-After: 30"), std::string::npos) << out;
    EXPECT_NE(out.find("RateLimit-Policy: \"default\";q=1;w=30"), std::string::npos) << out;
}

}  // namespace
}  // namespace vela::e2e
