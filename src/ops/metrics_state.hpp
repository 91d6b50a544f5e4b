#pragma once
// The App's metrics and watchdog state (include/vela/ops/metrics.hpp says what is counted).
//
// Per loop, a LoopMetrics block (made on the loop's thread when it starts, freed with the
// App): the server's LoopStats it derives from, one RouteStats per route plus one for
// unmatched requests, the loop-lag gauges, the pools' gauges and the watchdog's slot. Only
// the loop writes its block (LoopCounter: relaxed load + store); a scrape or the watchdog
// thread reads with relaxed loads.

#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "vela/base/loop_counter.hpp"
#include "vela/http/method.hpp"
#include "vela/ops/metrics.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/server/stats.hpp"
#include "vela/web/app.hpp"

namespace vela::detail {

class AppMetrics;

/// One route's counters on one loop.
struct RouteStats {
    static constexpr std::size_t kCodes = 12;  // (method, status) pairs kept per route
    /// (method + 1) << 16 | status, 0 = free; set once by the loop.
    std::atomic<std::uint32_t> key[kCodes] = {};
    LoopCounter count[kCodes];
    LoopCounter other;  // requests whose pair found no free entry
    LoopCounter buckets[kLatencyBucketCount + 1];
    LoopCounter sum_ns;

    void record(Method m, int status, std::uint64_t ns) noexcept;
};

/// One pool's gauges on one loop.
struct PoolGauges {
    LoopCounter connections, busy, waiting;
};

/// What the watchdog reads of one loop: when the dispatch in progress began (0: none) and
/// what it is (route slot << 8 | method).
struct WatchSlot {
    std::atomic<std::uint64_t> since_ns{0};
    std::atomic<std::uint64_t> what{0};
    std::uint64_t reported = 0;  // the since_ns last logged; the watchdog thread's alone
};

/// One loop's block (see above).
struct LoopMetrics : LoopStats {
    LoopMetrics(const AppMetrics& owner, std::size_t index, std::size_t routes, std::size_t pools);
    const AppMetrics* owner;
    std::size_t index;
    std::unique_ptr<RouteStats[]> routes;  // routes + 1 (unmatched); null: metrics off
    LoopCounter lag_ns, lag_max_ns;
    std::unique_ptr<PoolGauges[]> pools;
    WatchSlot watch;
    // Loop thread only: the lag timer's schedule.
    std::chrono::steady_clock::time_point expected{};
};

/// Nanoseconds on the steady clock (CLOCK_MONOTONIC, as std::chrono::steady_clock), read
/// directly: two reads per observed request, and libstdc++'s out-of-line now() costs each
/// a call more.
inline std::uint64_t steady_ns() noexcept {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

/// An App's metrics and watchdog (vela::metrics, vela::stall_watchdog): the App's extension
/// (prepare: the route labels and the loops' blocks) and its observer (each request's counts).
class AppMetrics final : public Observer, public Extension {
  public:
    AppMetrics() = default;
    ~AppMetrics() override;
    AppMetrics(const AppMetrics&) = delete;
    AppMetrics& operator=(const AppMetrics&) = delete;

    /// Turns metrics on.
    void enable_metrics(MetricsOptions o);
    /// Turns the watchdog on.
    void enable_watchdog(WatchdogOptions o);
    bool metrics_on() const noexcept { return metrics_on_; }

    /// Fixes the route labels (the app freezes): `routes[i]` for endpoint i.
    void set_routes(std::vector<std::string> routes);
    /// The slot of requests no route took.
    std::uint32_t unmatched_slot() const noexcept {
        return static_cast<std::uint32_t>(labels_.size());
    }
    /// The route label of a slot: its template, or "unmatched" (a view of labels_ or a literal,
    /// never of a temporary).
    std::string_view route_label(std::size_t slot) const noexcept {
        return slot < labels_.size() ? std::string_view(labels_[slot]) : "unmatched";
    }
    /// ServerOptions::on_loop_start: makes the loop's block, starts its lag timer (and the
    /// watchdog thread).
    LoopStats* loop_started(std::size_t index, Loop& loop);
    /// This loop's block of this app, or nullptr (not on one of its server loops).
    LoopMetrics* current() const noexcept {
        auto* s = static_cast<LoopMetrics*>(current_loop_stats());
        return s && s->owner == this ? s : nullptr;
    }
    /// The text exposition of everything counted so far.
    std::string render() const;

    /// The route labels (endpoint i is route i, its slot; fallbacks come after) and
    /// ServerOptions::on_loop_start.
    void prepare(App& app) override;
    /// The route's slot, the start time, and the watchdog's slot while the handler holds
    /// the loop; not observed off this app's server loops (the test client).
    void on_request(Observation& o, const Request& req, std::int32_t route) noexcept override;
    void on_suspend(Observation& o) noexcept override;
    void on_response(Observation& o, const Request& req, const Response& r) noexcept override;

  private:
    void tick(LoopMetrics& m, Loop& loop);
    void watch();

    bool metrics_on_ = false;
    MetricsOptions options_;
    std::optional<WatchdogOptions> watchdog_;
    std::vector<std::string> labels_;
    mutable std::mutex mu_;  // guards loops_ (the blocks themselves are lock-free)
    std::vector<std::unique_ptr<LoopMetrics>> loops_;
    LoopCounter stalls_;  // written by the watchdog thread only
    std::thread watcher_;
    std::condition_variable wake_;
    bool stopping_ = false;  // under mu_
};

}  // namespace vela::detail
