// RedisRateLimiter against a real Redis server (scripts/db-servers): one budget shared by
// limiters on different clients (as on different nodes), the 429 and its fields, and the
// policy when Redis cannot be reached.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "db/servers.hpp"
#include "e2e/client.hpp"
#include "redis/run.hpp"
#include "vela/redis_rate_limit.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;
using test::run_on_loop;

std::string unique_key(const char* what) {
    return std::string(what) + "-" + std::to_string(::getpid()) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

RedisRateLimitOptions five_a_minute() {
    RedisRateLimitOptions o;
    o.limit.rate = 5;
    o.limit.period = 1min;
    o.key_prefix = "test:rl:";
    return o;
}

TEST(RedisRateLimit, TwoNodesShareOneBudget) {
    VELA_NEED_REDIS(url);
    // Two clients: two nodes' worth of connections to the same server.
    RedisRateLimiter a(std::make_shared<redis::Client>(url), five_a_minute());
    RedisRateLimiter b(std::make_shared<redis::Client>(url), five_a_minute());
    const std::string key = unique_key("shared");
    run_on_loop([&]() -> Task<void> {
        int allowed = 0;
        for (int i = 0; i < 10; ++i) {
            const RateLimitDecision d = co_await (i % 2 ? a : b).consume(key);
            if (d.allowed) ++allowed;
            if (!d.allowed) {
                EXPECT_GE(d.retry_after, 1u);
                EXPECT_LE(d.retry_after, 12u);  // one token every 12 s
                EXPECT_EQ(d.remaining, 0u);
            }
        }
        EXPECT_EQ(allowed, 5);
        // Another key has its own bucket, full.
        const RateLimitDecision other = co_await a.consume(key + "-other");
        EXPECT_TRUE(other.allowed);
        EXPECT_EQ(other.remaining, 4u);
    }());
}

TEST(RedisRateLimit, ACostAboveTheBurstNeverFits) {
    VELA_NEED_REDIS(url);
    RedisRateLimiter a(std::make_shared<redis::Client>(url), five_a_minute());
    run_on_loop([&]() -> Task<void> {
        const RateLimitDecision d = co_await a.consume(unique_key("big"), 6);
        EXPECT_FALSE(d.allowed);
        EXPECT_EQ(d.retry_after, 0u);
    }());
}

TEST(RedisRateLimit, TheScriptsShaIsWhatRedisComputes) {
    VELA_NEED_REDIS(url);
    redis::Client c(url);
    const std::string sha = run_on_loop([&]() -> Task<std::string> {
        redis::Reply r = co_await c.command("SCRIPT", "LOAD", detail::redis_rate_limit::kGcra);
        co_return std::string(r.as_string());
    }());
    EXPECT_EQ(sha, detail::redis_rate_limit::kGcraSha);
}

TEST(RedisRateLimit, AServerThatForgotTheScriptStillCounts) {
    VELA_NEED_REDIS(url);
    auto client = std::make_shared<redis::Client>(url);
    RedisRateLimiter a(client, five_a_minute());
    const std::string key = unique_key("flush");
    run_on_loop([&]() -> Task<void> {
        co_await client->command("SCRIPT", "FLUSH");  // as after a restart: NOSCRIPT, then EVAL
        RateLimitDecision d = co_await a.consume(key);
        EXPECT_TRUE(d.allowed);
        EXPECT_EQ(d.remaining, 4u);
        d = co_await a.consume(key);  // EVALSHA now finds it
        EXPECT_EQ(d.remaining, 3u);
    }());
}

// The middleware on a real server: the fields of the in-process limiter, shared through Redis.
TEST(RedisRateLimit, MiddlewareAnswers429WithTheFields) {
    VELA_NEED_REDIS(url);
    RedisRateLimitOptions o = five_a_minute();
    o.limit.rate = 3;
    o.limit.key = rate_limit_key::header("X-Client");
    o.key_prefix = "test:rl:" + unique_key("mw") + ":";
    App app;
    app.use(RedisRateLimiter(std::make_shared<redis::Client>(url), o));
    app.get("/hello", [] { return "hi"; });
    e2e::start_app(app);
    e2e::Client c = e2e::Client::tcp(app.port());
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(c.send(e2e::get_request("/hello", "X-Client: alice\r\n")));
        const auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        EXPECT_TRUE(
            r->header("RateLimit").starts_with("\"default\";r=" + std::to_string(2 - i) + ";t="))
            << r->header("RateLimit");
        EXPECT_EQ(r->header("RateLimit-Policy"), "\"default\";q=3;w=60");
    }
    ASSERT_TRUE(c.send(e2e::get_request("/hello", "X-Client: alice\r\n")));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 429);
    EXPECT_FALSE(r->header("Retry-After").empty());
    EXPECT_EQ(r->header("RateLimit-Policy"), "\"default\";q=3;w=60");
    // Another client is not limited by alice's bucket.
    ASSERT_TRUE(c.send(e2e::get_request("/hello", "X-Client: bob\r\n")));
    r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    // Without the header: counted under the client's address, a bucket of its own.
    ASSERT_TRUE(c.send(e2e::get_request("/hello")));
    r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->header("RateLimit").starts_with("\"default\";r=2;")) << r->header("RateLimit");
}

// Redis away: requests pass (or get 503) as configured, and /metrics counts them.
TEST(RedisRateLimit, MiddlewarePolicyWhenRedisIsDown) {
    auto down = std::make_shared<redis::Client>("redis://127.0.0.1:1/0");
    for (const bool allow : {true, false}) {
        RedisRateLimitOptions o = five_a_minute();
        o.allow_when_down = allow;
        RedisRateLimiter limiter(down, o);
        App app;
        metrics(app, {.counters = {limiter.counter()}});
        app.use(limiter);
        app.get("/hello", [] { return "hi"; });
        e2e::start_app(app);
        e2e::Client c = e2e::Client::tcp(app.port());
        ASSERT_TRUE(c.send(e2e::get_request("/hello")));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, allow ? 200 : 503);
        EXPECT_EQ(limiter.unreachable(), 1u);
        ASSERT_TRUE(c.send(e2e::get_request("/metrics")));
        r = c.read_response();
        ASSERT_TRUE(r);
        if (allow) {  // (the refusing one refuses /metrics too: it is behind the limiter)
            // 2: /metrics itself went through the limiter first.
            EXPECT_NE(r->body.find("vela_rate_limit_redis_unreachable_total{limit=\"default\"} 2"),
                      std::string::npos)
                << r->body;
        }
    }
}

TEST(RedisRateLimit, UnreachableRedisFollowsThePolicy) {
    // Nothing listens on port 1: every round trip fails.
    auto down = std::make_shared<redis::Client>("redis://127.0.0.1:1/0");
    RedisRateLimiter open(down, five_a_minute());
    EXPECT_THROW(run_on_loop(open.consume("k")), std::exception);
}

}  // namespace
}  // namespace vela
