#pragma once
// Rate limits shared by every node through Redis.
//
//     auto redis = std::make_shared<vela::redis::Client>("redis://127.0.0.1:6379/0");
//     app.use(vela::RedisRateLimiter(redis, {.limit = {.rate = 100,
//                                                      .period = std::chrono::minutes(1)}}));
//
// The same limit as vela::rate_limit (rate tokens per period, bursts up to burst, a cost per
// request, the same keys, 429s and RateLimit fields), counted in Redis so that every node
// sharing the server shares the budget: one EVALSHA per request runs GCRA (the generic cell
// rate algorithm, equivalent to a token bucket) on one key per client, which holds the
// theoretical arrival time in microseconds of Redis's own clock (TIME), so the nodes' clocks
// do not matter; the key expires once the bucket would be full again. When Redis cannot be
// reached the request is let through (allow_when_down) or refused with 503, and counted
// (unreachable(), and in /metrics through counter(): vela_rate_limit_redis_unreachable_total).
//
// Cost: one round trip to Redis per counted request. The client pipelines the commands a
// loop issues in one iteration into one write, so a busy loop pays one write and one read for
// all its requests of that iteration. EVALSHA sends the script's SHA-1 rather than the script;
// a server that does not know it yet (a new or restarted Redis, SCRIPT FLUSH) answers
// NOSCRIPT, and that one request is sent again with EVAL, which loads it.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "vela/middleware/rate_limit.hpp"
#include "vela/ops/metrics.hpp"
#include "vela/redis/client.hpp"
#include "vela/web/middleware.hpp"

namespace vela {

/// Settings of a RedisRateLimiter.
struct RedisRateLimitOptions {
    /// The limit (rate, period, burst, key, cost, cost_of, name, headers; max_keys, shards
    /// and clock are not used).
    RateLimitOptions limit{};
    /// Put before each key (keeps the limiter's keys apart from other data).
    std::string key_prefix = "vela:rl:";
    /// Redis unreachable or failing: let requests through (true) or answer 503 (false).
    bool allow_when_down = true;
};

namespace detail::redis_rate_limit {

// KEYS[1]: the bucket. ARGV: emission interval (us per token), burst, cost. Returns
// {allowed (0/1), tokens left, microseconds until the cost fits (refused), microseconds until
// full}. TAT (theoretical arrival time) starts at now: a new key is a full bucket. It is stored
// with string.format: Lua's own number-to-string keeps 14 digits, too few for microseconds.
inline constexpr std::string_view kGcra = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + interval * cost
local allow_at = new_tat - interval * burst
if allow_at > now then
  local left = math.floor((now - (tat - interval * burst)) / interval)
  return {0, left, allow_at - now, tat - now}
end
redis.call('SET', KEYS[1], string.format('%.3f', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
return {1, math.floor((now - allow_at) / interval), 0, new_tat - now}
)lua";

// SHA-1 of kGcra (tests/redis/redis_rate_limit_test.cpp checks it against SCRIPT LOAD).
inline constexpr std::string_view kGcraSha = "e0080643cf66f57b9afb9b1182b193d17baae9b3";

inline std::uint32_t seconds_up(std::int64_t us) {
    return us <= 0 ? 0 : static_cast<std::uint32_t>((us + 999'999) / 1'000'000);
}

}  // namespace detail::redis_rate_limit

/// A rate limit kept in Redis (see above): onion middleware for App::use / Group::use.
class RedisRateLimiter {
  public:
    /// Uses `client` (shared; it must outlive the app's run). Throws std::invalid_argument for
    /// the options rate_limit() refuses, or without a client.
    RedisRateLimiter(std::shared_ptr<redis::Client> client, RedisRateLimitOptions options)
        : state_(std::make_shared<State>(std::move(client), std::move(options))) {}

    /// Takes `cost` tokens of `key`'s bucket in Redis if it holds them. Throws the client's
    /// errors (redis::Error and its kinds) when Redis cannot answer.
    Task<RateLimitDecision> consume(std::string key, std::uint32_t cost = 1) const {
        return state_->consume(state_, std::move(key), cost);
    }

    /// As middleware: counts the request under its key, refuses with 429 (or 503 when Redis
    /// is down and allow_when_down is false), else adds the RateLimit fields to the answer.
    Task<Response> operator()(Request& req, Next next) const {
        const std::shared_ptr<State> s = state_;
        char buf[RateLimitKey::kBufferSize];
        const std::size_t n = s->options.limit.key.extract(req, buf);
        if (n == 0) co_return co_await next();
        const std::uint32_t cost =
            s->options.limit.cost_of ? s->options.limit.cost_of(req) : s->options.limit.cost;
        RateLimitDecision d;
        bool down = false;
        try {
            d = co_await s->consume(s, std::string(buf, n), cost);
        } catch (const std::exception&) {
            down = true;
        }
        if (down) {
            s->unreachable.fetch_add(1, std::memory_order_relaxed);
            if (!s->options.allow_when_down) co_return Response(Status::ServiceUnavailable);
            co_return co_await next();
        }
        if (!d.allowed) co_return s->local.refusal(d);
        Response res = co_await next();
        if (s->options.limit.headers) {
            res.add_header("RateLimit-Policy", s->local.policy());
            res.add_header("RateLimit", "\"" + s->options.limit.name +
                                            "\";r=" + std::to_string(d.remaining) +
                                            ";t=" + std::to_string(d.reset));
        }
        co_return res;
    }

    /// Requests that met Redis unreachable (let through or refused by the policy).
    std::uint64_t unreachable() const noexcept {
        return state_->unreachable.load(std::memory_order_relaxed);
    }

    /// unreachable() for vela::metrics, as
    /// vela_rate_limit_redis_unreachable_total{limit="<options.limit.name>"}:
    ///     vela::metrics(app, {.counters = {limiter.counter()}});
    CounterSource counter() const {
        return CounterSource{
            "vela_rate_limit_redis_unreachable_total",
            "Requests a Redis rate limit could not count because Redis was unreachable.", "limit",
            state_->options.limit.name,
            [s = state_] { return s->unreachable.load(std::memory_order_relaxed); }};
    }

  private:
    struct State {
        State(std::shared_ptr<redis::Client> c, RedisRateLimitOptions o)
            : client(std::move(c)), options(std::move(o)), local(options.limit) {
            if (!client) throw std::invalid_argument("RedisRateLimiter needs a redis::Client");
            const std::uint32_t burst =
                options.limit.burst ? options.limit.burst : options.limit.rate;
            interval_us = std::chrono::duration<double, std::micro>(options.limit.period).count() /
                          options.limit.rate;
            this->burst = burst;
        }
        // EVALSHA, then EVAL when the server does not know the script (yet, or any more).
        Task<RateLimitDecision> consume(std::shared_ptr<State> self, std::string key,
                                        std::uint32_t cost) {
            std::string full = options.key_prefix + key;
            const std::string interval = std::to_string(interval_us);  // fractional: any rate
            const std::string b = std::to_string(burst), c = std::to_string(cost);
            redis::Reply r;
            bool unknown_script = false;
            try {
                r = co_await client->command("EVALSHA", detail::redis_rate_limit::kGcraSha, "1",
                                             full, interval, b, c);
            } catch (const redis::ServerError& e) {
                if (e.code() != "NOSCRIPT") throw;
                unknown_script = true;
            }
            if (unknown_script)
                r = co_await client->command("EVAL", detail::redis_rate_limit::kGcra, "1", full,
                                             interval, b, c);
            const std::vector<redis::Reply>& a = r.as_array();
            if (a.size() != 4) throw std::runtime_error("rate limit script: unexpected reply");
            RateLimitDecision d;
            d.allowed = a[0].as_integer() == 1;
            const std::int64_t left = a[1].as_integer();
            d.remaining = left < 0 ? 0 : static_cast<std::uint32_t>(left);
            d.reset = detail::redis_rate_limit::seconds_up(a[3].as_integer());
            if (!d.allowed) {
                d.retry_after =
                    cost > burst ? 0
                                 : std::max<std::uint32_t>(
                                       1, detail::redis_rate_limit::seconds_up(a[2].as_integer()));
            }
            (void)self;  // keeps the state alive across the round trip
            co_return d;
        }

        std::shared_ptr<redis::Client> client;
        RedisRateLimitOptions options;
        RateLimiter local;  // validates the options and formats refusals and the policy
        double interval_us = 0;
        std::uint32_t burst = 0;
        std::atomic<std::uint64_t> unreachable{0};
    };
    std::shared_ptr<State> state_;
};

}  // namespace vela
