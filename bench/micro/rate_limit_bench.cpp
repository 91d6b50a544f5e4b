// Rate limiter: the before hook's cost per request (client-address key, never refused), the
// bare consume(), the Hooks pair (fields added to the allowed answer), and a refusal (the 429 is
// built); one thread, and two threads on distinct keys and on the same key (one shard's mutex).

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <string>

#include "vela/middleware/rate_limit.hpp"

namespace {

// Never refuses: a billion tokens a second, a billion of burst.
vela::RateLimiter& open_limiter() {
    static vela::RateLimiter rl =
        vela::rate_limit({.rate = 1'000'000'000, .period = std::chrono::seconds(1)});
    return rl;
}

// A request from `ip`.
struct FakeRequest {
    vela::ConnectionInfo info;
    vela::Request req;
    explicit FakeRequest(std::string_view ip) {
        std::memcpy(info.ip, ip.data(), ip.size());
        info.ip_size = static_cast<std::uint8_t>(ip.size());
        req.set_connection(&info);
    }
};

// The address of benchmark thread `i` (distinct keys), or one address for all.
std::string address(const benchmark::State& s, bool same) {
    return same ? "203.0.113.1" : "203.0.113." + std::to_string(10 + s.thread_index());
}

void hook(benchmark::State& state, bool same) {
    const vela::RateLimiter& rl = open_limiter();
    FakeRequest r(address(state, same));
    for (auto _ : state) {
        std::optional<vela::Response> res = rl(r.req);
        benchmark::DoNotOptimize(res);
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_RateLimitHook(benchmark::State& s) { hook(s, false); }
void BM_RateLimitHookSameKey(benchmark::State& s) { hook(s, true); }

void BM_RateLimitConsume(benchmark::State& state) {
    const vela::RateLimiter& rl = open_limiter();
    const std::string key = address(state, false);
    for (auto _ : state) benchmark::DoNotOptimize(rl.consume(key));
    state.SetItemsProcessed(state.iterations());
}

void BM_RateLimitHookWithHeaders(benchmark::State& state) {
    static vela::RateLimiter rl =
        vela::rate_limit({.rate = 1'000'000'000, .period = std::chrono::seconds(1)});
    static const vela::Hooks hooks = rl;
    FakeRequest r(address(state, false));
    for (auto _ : state) {
        r.req.reset();
        std::optional<vela::Response> res = hooks.before(r.req);
        vela::Response out("ok");
        hooks.after(r.req, out);
        benchmark::DoNotOptimize(out);
    }
    state.SetItemsProcessed(state.iterations());
}

// Every request refused: the bucket never refills within the run.
void BM_RateLimitRefused(benchmark::State& state) {
    static vela::RateLimiter rl = vela::rate_limit({.rate = 1, .period = std::chrono::hours(24)});
    FakeRequest r(address(state, false));
    (void)rl(r.req);
    for (auto _ : state) {
        std::optional<vela::Response> res = rl(r.req);
        benchmark::DoNotOptimize(res);
    }
    state.SetItemsProcessed(state.iterations());
}

// The clock read the hook makes per request, for scale.
void BM_SteadyClockNow(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}

}  // namespace

BENCHMARK(BM_RateLimitHook)->Threads(1)->Threads(2);
BENCHMARK(BM_RateLimitHookSameKey)->Threads(2);
BENCHMARK(BM_RateLimitConsume)->Threads(1);
BENCHMARK(BM_RateLimitHookWithHeaders)->Threads(1);
BENCHMARK(BM_RateLimitRefused)->Threads(1);
BENCHMARK(BM_SteadyClockNow);
