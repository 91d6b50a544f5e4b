#pragma once
// Metrics in the Prometheus text format, and the stall watchdog (docs/operations.md).
//
//     vela::App app;
//     vela::metrics(app);                                // GET /metrics, opt-in
//     vela::stall_watchdog(app, {.threshold = 200ms});   // logs handlers that hold a loop too long
//
// Every loop counts in its own memory: plain single-writer counters (vela::LoopCounter),
// no shared atomic read-modify-write and no allocation on the request path; the route's
// counters are found by the endpoint number the router returns, so no string is hashed
// per request. A scrape reads every loop's counters (relaxed loads) and sums them.
//
// Metrics (all summed over loops unless labelled with `loop`):
//   vela_http_requests_total{route,method,status}       counter
//   vela_http_request_duration_seconds{route}           histogram (kLatencyBuckets)
//   vela_http_received_bytes_total / _sent_bytes_total  counter (socket bytes; TLS: encrypted)
//   vela_open_connections{protocol,tls}                 gauge (http1, h2, ws)
//   vela_websocket_connections, vela_sse_streams        gauge
//   vela_loop_lag_seconds{loop}, vela_loop_lag_max_seconds{loop}   gauge
//   vela_db_pool_{connections,busy,waiting}{pool}       gauge (MetricsOptions::pools)
//   vela_stalls_total                                   counter (the watchdog's reports)
// `route` is the pattern as registered ("/items/{id:int}"), or "unmatched" for requests no
// route took (404, 405, automatic OPTIONS).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vela {

class App;

/// The upper bounds (seconds) of the request latency histogram's buckets (+Inf follows).
inline constexpr double kLatencyBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                             0.1,    0.25,  0.5,    1.0,   2.5,  5.0,   10.0};
/// Number of finite latency buckets.
inline constexpr std::size_t kLatencyBucketCount = std::size(kLatencyBuckets);

/// What a connection pool reports (one loop's pool; a scrape sums the loops).
struct PoolSample {
    /// Connections open or being opened.
    std::size_t connections = 0;
    /// Of those, in use (running statements or held by a transaction).
    std::size_t busy = 0;
    /// Work waiting for a connection.
    std::size_t waiting = 0;
};

/// A pool to report as vela_db_pool_*{pool="name"}: `sample` is called on each loop (at each
/// loop-lag tick) and returns that loop's figures, or nullopt when it has none.
/// vela/pg_metrics.hpp makes one for a PostgreSQL vela::db::Database.
struct PoolSource {
    /// The `pool` label.
    std::string name;
    /// This loop's figures (called on the loop's thread).
    std::function<std::optional<PoolSample>()> sample;
};

/// What an outgoing HTTP client reports, summed over every loop (vela/client_metrics.hpp
/// makes one for a vela::http::Client).
struct ClientSample {
    /// Requests sent (each try and redirect counts).
    std::uint64_t requests = 0;
    /// Requests that ended with an error.
    std::uint64_t failures = 0;
    /// Requests sent again after a dead connection or a failed connect.
    std::uint64_t retries = 0;
    /// Connections opened.
    std::uint64_t connections_opened = 0;
    /// Requests sent on a kept-alive connection.
    std::uint64_t connections_reused = 0;
    /// Connections open now.
    std::uint64_t open = 0;
    /// Of those, idle in a pool.
    std::uint64_t idle = 0;
    /// TLS handshakes that resumed an earlier session.
    std::uint64_t tls_resumed = 0;
    /// Host names looked up (cache hits do not count).
    std::uint64_t dns_lookups = 0;
};

/// A client to report as vela_http_client_*{client="name"}: `sample` is called by the thread
/// that renders the metrics and must be thread-safe.
struct ClientSource {
    /// The `client` label.
    std::string name;
    /// The client's figures now.
    std::function<ClientSample()> sample;
};

/// A counter kept elsewhere (the Redis rate limit, the Hub's backplane...), reported as
/// family{label="value"} (no label when label is empty); sources of one family are written
/// together under one HELP and TYPE.
struct CounterSource {
    /// The family's name, e.g. "vela_rate_limit_redis_unreachable_total".
    std::string family;
    /// Its HELP text.
    std::string help;
    /// The label's name (empty: none) and value.
    std::string label, value;
    /// The count now; called by the thread that renders the metrics (must be thread-safe).
    std::function<std::uint64_t()> sample;
};

/// Settings of vela::metrics.
struct MetricsOptions {
    /// Where the metrics are served (GET); empty: not routed (vela::metrics_text() only).
    std::string path = "/metrics";
    /// How often each loop measures its lag (a timer's scheduled vs actual time) and samples
    /// the pools.
    std::chrono::milliseconds lag_interval{500};
    /// Connection pools to report.
    std::vector<PoolSource> pools{};
    /// Outgoing HTTP clients to report.
    std::vector<ClientSource> clients{};
    /// Counters of other parts to report.
    std::vector<CounterSource> counters{};
};

/// Settings of vela::stall_watchdog.
struct WatchdogOptions {
    /// A handler that holds its loop longer than this is logged (once per request).
    std::chrono::milliseconds threshold{500};
};

/// Serves `app`'s metrics in the Prometheus text format at options.path (GET; listed above):
/// requests per route, latency histograms, bytes, connections, loop lag, pools. Off unless
/// called; with it off the request path is unchanged. Before run(); throws std::logic_error
/// after.
void metrics(App& app, MetricsOptions options = {});
/// Logs (log::warn, once) every handler that holds its loop longer than options.threshold,
/// with its route template, method and the time held. Before run(); throws std::logic_error
/// after.
void stall_watchdog(App& app, WatchdogOptions options = {});
/// The metrics text now (what GET /metrics answers); empty when metrics are off.
std::string metrics_text(const App& app);

/// Writes the Prometheus text exposition format 0.0.4: families with their HELP and TYPE
/// lines, samples with escaped label values.
class PrometheusWriter {
  public:
    /// One label of a sample.
    using Label = std::pair<std::string_view, std::string_view>;

    /// Starts a family: "# HELP name help" (escaped) and "# TYPE name type" ("counter",
    /// "gauge", "histogram", "summary" or "untyped").
    void family(std::string_view name, std::string_view help, std::string_view type);
    /// One sample line with an integer value.
    void sample(std::string_view name, std::initializer_list<Label> labels, std::uint64_t value);
    /// One sample line with a floating-point value (NaN, +Inf, -Inf spelled as the format says).
    void sample(std::string_view name, std::initializer_list<Label> labels, double value);
    /// The histogram samples of `name`: name_bucket{...,le="b"} (cumulative, then +Inf),
    /// name_sum and name_count; `counts` holds one count per bound plus the +Inf one, not
    /// cumulative; the count written is their total.
    void histogram(std::string_view name, std::initializer_list<Label> labels, const double* bounds,
                   const std::uint64_t* counts, std::size_t n_bounds, double sum);
    /// The text written so far.
    const std::string& text() const noexcept { return out_; }
    /// Takes the text written so far.
    std::string take() noexcept { return std::move(out_); }

    /// `v` escaped for a label value (backslash, double quote, line feed).
    static std::string escape_label(std::string_view v);
    /// The Content-Type of the format.
    static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

  private:
    void labels(std::initializer_list<Label> labels, const Label* extra);
    std::string out_;
};

}  // namespace vela
