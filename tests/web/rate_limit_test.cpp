// Rate limiter: bucket math on a fake clock (burst, refill, Retry-After and reset rounding,
// cost), the keys (client address with IPv6 prefixes, header with its fallback, functions,
// long keys), the before hook's 429 and the after hook of the Hooks pair, the memory bound under a
// million distinct keys, and four threads on one limiter (run under TSan too).

#include "vela/middleware/rate_limit.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace vela {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A clock the test moves by hand (atomic: the threaded tests read it from four threads).
struct FakeClock {
    std::shared_ptr<std::atomic<std::int64_t>> ns =
        std::make_shared<std::atomic<std::int64_t>>(1'000'000'000);
    void advance(std::chrono::nanoseconds d) const { ns->fetch_add(d.count()); }
    std::function<Clock::time_point()> fn() const {
        return [n = ns] { return Clock::time_point(std::chrono::nanoseconds(n->load())); };
    }
};

RateLimitOptions opts(std::uint32_t rate, std::chrono::nanoseconds period, std::uint32_t burst,
                      const FakeClock& clock) {
    RateLimitOptions o;
    o.rate = rate;
    o.period = period;
    o.burst = burst;
    o.clock = clock.fn();
    return o;
}

// A request from `ip` with optional header fields (views into the strings given).
struct FakeRequest {
    ConnectionInfo info;
    Request req;
    explicit FakeRequest(std::string_view ip, std::vector<Header> headers = {}) {
        std::memcpy(info.ip, ip.data(), ip.size());
        info.ip_size = static_cast<std::uint8_t>(ip.size());
        req.set_connection(&info);
        req.mutable_headers() = std::move(headers);
    }
};

// ---- Bucket math ---------------------------------------------------------------------------

TEST(RateLimit, BurstThenRefusedWithRetryAfter) {
    FakeClock clock;
    const RateLimiter rl(opts(10, 1s, 10, clock));
    for (std::uint32_t i = 0; i < 10; ++i) {
        const RateLimitDecision d = rl.consume("k");
        ASSERT_TRUE(d.allowed) << i;
        EXPECT_EQ(d.remaining, 9 - i);
    }
    const RateLimitDecision d = rl.consume("k");
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.remaining, 0u);
    EXPECT_EQ(d.retry_after, 1u);  // 100 ms, rounded up
    EXPECT_EQ(d.reset, 1u);        // a full bucket in 1 s
}

TEST(RateLimit, RefillsAtTheRateAndCapsAtTheBurst) {
    FakeClock clock;
    const RateLimiter rl(opts(10, 1s, 10, clock));
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(rl.consume("k").allowed);
    ASSERT_FALSE(rl.consume("k").allowed);
    clock.advance(100ms);  // exactly one token
    EXPECT_TRUE(rl.consume("k").allowed);
    EXPECT_FALSE(rl.consume("k").allowed);
    clock.advance(350ms);  // three and a half
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(rl.consume("k").allowed) << i;
    EXPECT_FALSE(rl.consume("k").allowed);
    clock.advance(1h);  // refill stops at the burst
    const RateLimitDecision d = rl.consume("k");
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 9u);
}

TEST(RateLimit, BurstLargerThanRate) {
    FakeClock clock;
    const RateLimiter rl(opts(1, 1s, 5, clock));
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(rl.consume("k").allowed);
    RateLimitDecision d = rl.consume("k");
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after, 1u);
    EXPECT_EQ(d.reset, 5u);
    clock.advance(1s);
    EXPECT_TRUE(rl.consume("k").allowed);
    EXPECT_EQ(rl.policy(), "\"default\";q=5;w=5");
}

TEST(RateLimit, RetryAfterRoundsUpToWholeSeconds) {
    FakeClock clock;
    const RateLimiter rl(opts(1, 10s, 1, clock));
    ASSERT_TRUE(rl.consume("k").allowed);
    EXPECT_EQ(rl.consume("k").retry_after, 10u);  // exactly 10 s: not 11
    clock.advance(2500ms);
    EXPECT_EQ(rl.consume("k").retry_after, 8u);  // 7.5 s
    clock.advance(7s);
    EXPECT_EQ(rl.consume("k").retry_after, 1u);  // 0.5 s
    clock.advance(499ms);
    EXPECT_EQ(rl.consume("k").retry_after, 1u);  // 1 ms
    clock.advance(1ms);
    EXPECT_TRUE(rl.consume("k").allowed);

    const RateLimiter thirds(opts(3, 1s, 3, clock));  // 333.3 ms per token
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(thirds.consume("k").allowed);
    EXPECT_EQ(thirds.consume("k").retry_after, 1u);
    EXPECT_EQ(thirds.policy(), "\"default\";q=3;w=1");
}

TEST(RateLimit, CostTakesSeveralTokens) {
    FakeClock clock;
    const RateLimiter rl(opts(5, 1s, 5, clock));
    RateLimitDecision d = rl.consume("k", 3);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 2u);
    d = rl.consume("k", 3);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.remaining, 2u);  // a refused request takes nothing
    EXPECT_EQ(d.retry_after, 1u);
    EXPECT_TRUE(rl.consume("k", 2).allowed);
    EXPECT_TRUE(rl.consume("k", 0).allowed);  // free: counted, never refused
    d = rl.consume("k", 6);                   // more than the bucket holds
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after, 0u);
}

TEST(RateLimit, CostFunctionAndItsRefusal) {
    FakeClock clock;
    RateLimitOptions o = opts(10, 1s, 10, clock);
    o.cost_of = [](const Request& r) -> std::uint32_t {
        return r.header("X-Heavy").empty() ? 1 : 20;
    };
    const RateLimiter rl(std::move(o));
    const std::string heavy = "1";
    FakeRequest light("10.0.0.1"), big("10.0.0.1", {{"X-Heavy", heavy}});
    EXPECT_FALSE(rl(light.req).has_value());
    const std::optional<Response> r = rl(big.req);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status(), Status::TooManyRequests);
    EXPECT_TRUE(r->header("Retry-After").empty());  // it would never fit
}

TEST(RateLimit, OptionsAreChecked) {
    const auto make = [](auto edit) {
        RateLimitOptions o;
        edit(o);
        return RateLimiter(std::move(o));
    };
    EXPECT_THROW(make([](RateLimitOptions& o) { o.rate = 0; }), std::invalid_argument);
    EXPECT_THROW(make([](RateLimitOptions& o) { o.period = 0s; }), std::invalid_argument);
    EXPECT_THROW(make([](RateLimitOptions& o) { o.cost = 61; }), std::invalid_argument);
    EXPECT_THROW(make([](RateLimitOptions& o) { o.max_keys = 0; }), std::invalid_argument);
    EXPECT_THROW(make([](RateLimitOptions& o) { o.name = "a b"; }), std::invalid_argument);
    EXPECT_THROW(make([](RateLimitOptions& o) { o.name = ""; }), std::invalid_argument);
    EXPECT_THROW(rate_limit_key::client_ip(0), std::invalid_argument);
    EXPECT_THROW(rate_limit_key::client_ip(129), std::invalid_argument);
    EXPECT_THROW(rate_limit_key::header(""), std::invalid_argument);
    EXPECT_NO_THROW(make([](RateLimitOptions& o) { o.cost = 60; }));
    try {
        make([](RateLimitOptions& o) { o.rate = 0; });
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
}

// ---- The hooks -----------------------------------------------------------------------------

TEST(RateLimit, HookAnswers429WithTheFields) {
    FakeClock clock;
    RateLimitOptions o = opts(2, 1min, 2, clock);
    o.name = "api";
    const RateLimiter rl(std::move(o));
    FakeRequest a("192.0.2.7");
    EXPECT_FALSE(rl(a.req).has_value());
    EXPECT_FALSE(rl(a.req).has_value());
    clock.advance(1s);
    const std::optional<Response> r = rl(a.req);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status(), Status::TooManyRequests);
    EXPECT_EQ(r->header("Retry-After"), "29");  // 30 s per token, 1 s gone
    EXPECT_EQ(r->header("RateLimit-Policy"), "\"api\";q=2;w=60");
    EXPECT_EQ(r->header("RateLimit"), "\"api\";r=0;t=59");
    EXPECT_EQ(r->content_type(), "application/problem+json");
    EXPECT_NE(r->body().find("\"status\":429"), std::string::npos) << r->body();
    EXPECT_NE(r->body().find("retry in 29 seconds"), std::string::npos) << r->body();
}

TEST(RateLimit, HeadersOffKeepsRetryAfterOnly) {
    FakeClock clock;
    RateLimitOptions o = opts(1, 1min, 1, clock);
    o.headers = false;
    const RateLimiter rl(std::move(o));
    const Hooks hooks = rl;
    EXPECT_FALSE(hooks.after);  // nothing to add to allowed answers
    FakeRequest a("192.0.2.7");
    EXPECT_FALSE(hooks.before(a.req).has_value());
    const std::optional<Response> r = hooks.before(a.req);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->header("Retry-After"), "60");
    EXPECT_TRUE(r->header("RateLimit").empty());
    EXPECT_TRUE(r->header("RateLimit-Policy").empty());
}

TEST(RateLimit, AfterHookAddsTheFieldsToAllowedAnswers) {
    FakeClock clock;
    const RateLimiter rl(opts(3, 3s, 3, clock));
    FakeRequest a("192.0.2.7");
    EXPECT_FALSE(rl(a.req).has_value());  // not installed as Hooks yet: nothing recorded
    const Hooks hooks = rl;
    ASSERT_TRUE(hooks.before && hooks.after);
    Response before_install("hello");
    hooks.after(a.req, before_install);
    EXPECT_TRUE(before_install.header("RateLimit").empty());

    a.req.reset();
    EXPECT_FALSE(hooks.before(a.req).has_value());
    Response res("hello");
    hooks.after(a.req, res);
    EXPECT_EQ(res.header("RateLimit-Policy"), "\"default\";q=3;w=3");
    EXPECT_EQ(res.header("RateLimit"), "\"default\";r=1;t=2");

    // The after hook also runs on the before hook's own 429: no second set of fields.
    a.req.reset();
    EXPECT_FALSE(hooks.before(a.req).has_value());
    a.req.reset();
    std::optional<Response> refused = hooks.before(a.req);
    ASSERT_TRUE(refused.has_value());
    hooks.after(a.req, *refused);
    const std::string block(refused->header_block());
    EXPECT_EQ(block.find("RateLimit:"), block.rfind("RateLimit:")) << block;
    EXPECT_NE(block.find("RateLimit: \"default\";r=0;t=3"), std::string::npos) << block;

    // A request this limiter did not count gets nothing.
    FakeRequest other("192.0.2.8");
    Response plain("x");
    hooks.after(other.req, plain);
    EXPECT_TRUE(plain.header("RateLimit").empty());
}

TEST(RateLimit, TwoLimitersOnOneRequestKeepTheirOwnFields) {
    FakeClock clock;
    RateLimitOptions o1 = opts(10, 1s, 10, clock), o2 = opts(100, 1min, 100, clock);
    o1.name = "second";
    o2.name = "minute";
    const RateLimiter a(std::move(o1)), b(std::move(o2));
    const Hooks ha = a, hb = b;
    FakeRequest r("192.0.2.7");
    EXPECT_FALSE(ha.before(r.req).has_value());
    EXPECT_FALSE(hb.before(r.req).has_value());
    Response res;
    hb.after(r.req, res);
    ha.after(r.req, res);
    const std::string block(res.header_block());
    EXPECT_NE(block.find("RateLimit: \"second\";r=9;t=1"), std::string::npos) << block;
    EXPECT_NE(block.find("RateLimit: \"minute\";r=99;t=1"), std::string::npos) << block;
}

// ---- Keys ----------------------------------------------------------------------------------

// Allowed answers from `rl` for `req` until the first refusal (at most 100).
int passes(const RateLimiter& rl, Request& req) {
    int n = 0;
    while (n < 100 && !rl(req).has_value()) ++n;
    return n;
}

TEST(RateLimit, ClientAddressKeys) {
    FakeClock clock;
    const RateLimiter rl(opts(2, 1min, 2, clock));
    FakeRequest a("192.0.2.1"), b("192.0.2.2");
    EXPECT_EQ(passes(rl, a.req), 2);
    EXPECT_EQ(passes(rl, b.req), 2);  // another client is not affected

    // A trusted proxy's report (set_forwarded) is the client address.
    FakeRequest proxied("192.0.2.1");
    proxied.req.set_forwarded("198.51.100.9", "", "");
    EXPECT_EQ(passes(rl, proxied.req), 2);

    // No address at all (a Unix socket): not limited.
    Request unix_req;
    EXPECT_EQ(passes(rl, unix_req), 100);
    EXPECT_EQ(rl.size(), 3u);
}

TEST(RateLimit, Ipv6AddressesGroupByPrefix) {
    FakeClock clock;
    const RateLimiter by64(opts(2, 1min, 2, clock));
    FakeRequest a("2001:db8:1:2::1"), b("2001:db8:1:2:ffff::9"), c("2001:db8:1:3::1");
    EXPECT_EQ(passes(by64, a.req), 2);
    EXPECT_EQ(passes(by64, b.req), 0);  // same /64
    EXPECT_EQ(passes(by64, c.req), 2);  // another /64

    RateLimitOptions o = opts(2, 1min, 2, clock);
    o.key = rate_limit_key::client_ip(128);
    const RateLimiter by128(std::move(o));
    EXPECT_EQ(passes(by128, a.req), 2);
    EXPECT_EQ(passes(by128, b.req), 2);

    // IPv4-mapped addresses (a proxy may report them) are their IPv4 address, not one /64
    // shared by every IPv4 client.
    FakeRequest m1("::ffff:192.0.2.1"), m2("::ffff:192.0.2.2"), v4("192.0.2.1");
    EXPECT_EQ(passes(by64, m1.req), 2);
    EXPECT_EQ(passes(by64, m2.req), 2);
    EXPECT_EQ(passes(by64, v4.req), 0);

    // Spellings of one address are one key.
    FakeRequest long_form("2001:0db8:0001:0002:0000:0000:0000:0001");
    EXPECT_EQ(passes(by128, long_form.req), 0);
}

TEST(RateLimit, HeaderKeyFallsBackToTheAddress) {
    FakeClock clock;
    RateLimitOptions o = opts(2, 1min, 2, clock);
    o.key = rate_limit_key::header("X-Api-Key");
    const RateLimiter rl(std::move(o));
    const std::string k1 = "alpha", k2 = "beta", ip_text = "192.0.2.1";
    FakeRequest a("192.0.2.1", {{"x-api-key", k1}}), b("192.0.2.1", {{"X-Api-Key", k2}});
    EXPECT_EQ(passes(rl, a.req), 2);
    EXPECT_EQ(passes(rl, b.req), 2);  // same address, another key
    FakeRequest none("192.0.2.1");
    EXPECT_EQ(passes(rl, none.req), 2);  // no header: its address's own bucket
    EXPECT_EQ(passes(rl, none.req), 0);
    FakeRequest spoof("192.0.2.50", {{"X-Api-Key", ip_text}});  // a header that looks like it
    EXPECT_EQ(passes(rl, spoof.req), 2);
}

TEST(RateLimit, FunctionKeysAndEmptyMeansUnlimited) {
    FakeClock clock;
    RateLimitOptions o = opts(1, 1min, 1, clock);
    o.key = [](const Request& r) { return std::string(r.header("X-User")); };
    const RateLimiter rl(std::move(o));
    const std::string alice = "alice", bob = "bob";
    FakeRequest a("192.0.2.1", {{"X-User", alice}}), b("192.0.2.1", {{"X-User", bob}}),
        anon("192.0.2.1");
    EXPECT_EQ(passes(rl, a.req), 1);
    EXPECT_EQ(passes(rl, b.req), 1);
    EXPECT_EQ(passes(rl, anon.req), 100);
    EXPECT_EQ(rl.size(), 2u);
}

TEST(RateLimit, LongKeysAreHashedNotTruncated) {
    FakeClock clock;
    RateLimitOptions o = opts(1, 1min, 1, clock);
    o.key = rate_limit_key::header("X-Api-Key");
    const RateLimiter rl(std::move(o));
    const std::string k1(5000, 'x');
    std::string k2 = k1;
    k2.back() = 'y';
    FakeRequest a("192.0.2.1", {{"X-Api-Key", k1}}), b("192.0.2.1", {{"X-Api-Key", k2}});
    EXPECT_EQ(passes(rl, a.req), 1);
    EXPECT_EQ(passes(rl, b.req), 1);
    EXPECT_EQ(passes(rl, a.req), 0);
}

// ---- Memory --------------------------------------------------------------------------------

TEST(RateLimit, MillionDistinctKeysStayWithinTheBound) {
    FakeClock clock;
    RateLimitOptions o = opts(10, 1min, 10, clock);
    o.max_keys = 10000;
    const RateLimiter rl(std::move(o));
    ASSERT_LE(rl.capacity(), 10000u + 63u);
    ASSERT_GE(rl.capacity(), 10000u);
    std::size_t peak = 0;
    char key[32] = "spray-";
    for (int i = 0; i < 1'000'000; ++i) {
        const char* end = std::to_chars(key + 6, key + sizeof key, i).ptr;
        rl.consume(std::string_view(key, static_cast<std::size_t>(end - key)));  // never stale
        if (i % 1000 == 0) peak = std::max(peak, rl.size());
    }
    peak = std::max(peak, rl.size());
    EXPECT_LE(peak, rl.capacity());
    EXPECT_GE(peak, 9000u);  // the table is used, not cleared
}

TEST(RateLimit, FullAgainBucketsAreForgottenFirst) {
    FakeClock clock;
    RateLimitOptions o = opts(10, 1s, 10, clock);
    o.max_keys = 1000;
    const RateLimiter rl(std::move(o));
    for (int i = 0; i < 1000; ++i) rl.consume(fmt::format("old-{}", i));
    const std::size_t before = rl.size();
    clock.advance(1s);  // every old bucket is full again
    for (int i = 0; i < 100; ++i) rl.consume(fmt::format("new-{}", i));
    EXPECT_LE(rl.size(), before - 150) << "stale buckets are swept as new keys arrive";
}

TEST(RateLimit, WhenFullTheLeastRecentlyUsedGoes) {
    FakeClock clock;
    RateLimitOptions o = opts(1, 1h, 1, clock);
    o.max_keys = 64;
    o.shards = 1;
    const RateLimiter rl(std::move(o));
    ASSERT_EQ(rl.capacity(), 64u);
    for (int i = 0; i < 64; ++i) ASSERT_TRUE(rl.consume(fmt::format("k{}", i)).allowed);
    EXPECT_FALSE(rl.consume("k0").allowed);  // k0 is now the most recently used
    EXPECT_TRUE(rl.consume("k64").allowed);  // makes room: k1 goes
    EXPECT_EQ(rl.size(), 64u);
    EXPECT_FALSE(rl.consume("k0").allowed);  // remembered
    EXPECT_TRUE(rl.consume("k1").allowed);   // forgotten: a full bucket again (k2 goes)
    EXPECT_TRUE(rl.consume("k2").allowed);
}

// ---- Threads -------------------------------------------------------------------------------

TEST(RateLimit, FourThreadsOnOneKeyShareOneBucket) {
    FakeClock clock;  // frozen: no refill while the threads run
    const RateLimiter rl(opts(1000, 1h, 1000, clock));
    std::atomic<int> allowed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 1000; ++i)
                if (rl.consume("hot").allowed) allowed.fetch_add(1, std::memory_order_relaxed);
        });
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(allowed.load(), 1000);
}

TEST(RateLimit, FourThreadsOnDistinctKeysWithEvictionAndAClock) {
    FakeClock clock;
    RateLimitOptions o = opts(5, 1s, 5, clock);
    o.max_keys = 256;
    const RateLimiter rl(std::move(o));
    const Hooks hooks = rl;
    std::atomic<int> refused{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            FakeRequest req(fmt::format("10.0.0.{}", t + 1));
            for (int i = 0; i < 20000; ++i) {
                if (i % 100 == 0) clock.advance(1ms);
                rl.consume(fmt::format("t{}-{}", t, i % 500));
                req.req.reset();
                if (std::optional<Response> r = hooks.before(req.req)) {
                    refused.fetch_add(1, std::memory_order_relaxed);
                } else {
                    Response res;
                    hooks.after(req.req, res);
                }
                if (i % 1000 == 0) (void)rl.size();
            }
        });
    for (std::thread& th : threads) th.join();
    EXPECT_LE(rl.size(), rl.capacity());
    EXPECT_GT(refused.load(), 0);
}

}  // namespace
}  // namespace vela
