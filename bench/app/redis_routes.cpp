// vela_bench_app --redis: what sharing through Redis costs (bench/backplane/run). In a file of
// its own so that main.cpp, which holds the other scenarios' handlers, compiles as before
// (GCC's inlining limits are per translation unit).

#include <chrono>
#include <memory>
#include <string>

#include <vela/backplane/redis_backplane.hpp>
#include <vela/redis_rate_limit.hpp>
#include <vela/vela.hpp>

#include "redis_routes.hpp"

std::shared_ptr<void> attach_redis(vela::App& app, vela::Hub& hub, const std::string& url) {
    struct Held {
        std::unique_ptr<vela::RedisBackplane> backplane;
        std::shared_ptr<vela::redis::Client> redis;
    };
    auto held = std::make_shared<Held>();
    held->backplane = std::make_unique<vela::RedisBackplane>(hub, url);
    held->redis = std::make_shared<vela::redis::Client>(url);

    // The same limit, never reached (every request is counted and answered 200), in process
    // and in Redis.
    vela::RateLimitOptions never_reached;
    never_reached.rate = 1'000'000'000;
    never_reached.period = std::chrono::seconds(1);
    never_reached.key = vela::rate_limit_key::header("X-Client");
    app.group("/limited/local").use(vela::rate_limit(never_reached)).get("", [] { return "ok"; });
    vela::RedisRateLimitOptions ro;
    ro.limit = never_reached;
    app.group("/limited/redis").use(vela::RedisRateLimiter(held->redis, ro)).get("", [] {
        return "ok";
    });
    return held;
}
