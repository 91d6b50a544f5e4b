#include "vela/ops/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <utility>

#include "metrics_state.hpp"
#include "vela/base/log.hpp"

namespace vela {

// ---- the text format ------------------------------------------------------------------------

namespace {
// HELP text: backslash and line feed escaped.
void append_help(std::string& out, std::string_view v) {
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
}

void append_double(std::string& out, double v) {
    if (std::isnan(v))
        out += "NaN";
    else if (std::isinf(v))
        out += v > 0 ? "+Inf" : "-Inf";
    else
        fmt::format_to(std::back_inserter(out), "{}", v);
}
}  // namespace

std::string PrometheusWriter::escape_label(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

void PrometheusWriter::family(std::string_view name, std::string_view help, std::string_view type) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    append_help(out_, help);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
}

void PrometheusWriter::labels(std::initializer_list<Label> labels, const Label* extra) {
    if (labels.size() == 0 && !extra) return;
    out_ += '{';
    bool first = true;
    auto one = [&](const Label& l) {
        if (!first) out_ += ',';
        first = false;
        out_ += l.first;
        out_ += "=\"";
        out_ += escape_label(l.second);
        out_ += '"';
    };
    for (const Label& l : labels) one(l);
    if (extra) one(*extra);
    out_ += '}';
}

void PrometheusWriter::sample(std::string_view name, std::initializer_list<Label> l,
                              std::uint64_t value) {
    out_ += name;
    labels(l, nullptr);
    fmt::format_to(std::back_inserter(out_), " {}\n", value);
}

void PrometheusWriter::sample(std::string_view name, std::initializer_list<Label> l, double value) {
    out_ += name;
    labels(l, nullptr);
    out_ += ' ';
    append_double(out_, value);
    out_ += '\n';
}

void PrometheusWriter::histogram(std::string_view name, std::initializer_list<Label> l,
                                 const double* bounds, const std::uint64_t* counts,
                                 std::size_t n_bounds, double sum) {
    std::string series(name);
    series += "_bucket";
    std::uint64_t cumulative = 0;
    std::string le;
    for (std::size_t i = 0; i <= n_bounds; ++i) {
        cumulative += counts[i];
        le.clear();
        if (i < n_bounds)
            append_double(le, bounds[i]);
        else
            le = "+Inf";
        const Label extra{"le", le};
        out_ += series;
        labels(l, &extra);
        fmt::format_to(std::back_inserter(out_), " {}\n", cumulative);
    }
    out_ += name;
    out_ += "_sum";
    labels(l, nullptr);
    out_ += ' ';
    append_double(out_, sum);
    out_ += '\n';
    out_ += name;
    out_ += "_count";
    labels(l, nullptr);
    fmt::format_to(std::back_inserter(out_), " {}\n", cumulative);
}

// ---- per-loop counting ----------------------------------------------------------------------

namespace detail {

namespace {
// The method label: its token, "other" for methods vela does not route (answered 501).
std::string_view method_label(Method m) {
    const std::string_view n = method_name(m);
    return n.empty() ? std::string_view("other") : n;
}

constexpr std::uint64_t to_ns(double seconds) {
    return static_cast<std::uint64_t>(seconds * 1e9 + 0.5);
}
template <std::size_t... I>
constexpr std::array<std::uint64_t, kLatencyBucketCount> bounds_ns(std::index_sequence<I...>) {
    return {to_ns(kLatencyBuckets[I])...};
}
constexpr std::array<std::uint64_t, kLatencyBucketCount> kBoundsNs =
    bounds_ns(std::make_index_sequence<kLatencyBucketCount>{});
}  // namespace

void RouteStats::record(Method m, int status, std::uint64_t ns) noexcept {
    const std::uint32_t k =
        (static_cast<std::uint32_t>(m) + 1) << 16 | static_cast<std::uint32_t>(status);
    std::size_t i = 0;
    for (; i < kCodes; ++i) {
        const std::uint32_t have = key[i].load(std::memory_order_relaxed);
        if (have == k) break;
        if (have == 0) {
            key[i].store(k, std::memory_order_relaxed);
            break;
        }
    }
    if (i < kCodes)
        count[i].add();
    else
        other.add();
    std::size_t b = 0;
    while (b < kLatencyBucketCount && ns > kBoundsNs[b]) ++b;
    buckets[b].add();
    sum_ns.add(ns);
}

LoopMetrics::LoopMetrics(const AppMetrics& o, std::size_t i, std::size_t n_routes,
                         std::size_t n_pools)
    : owner(&o), index(i) {
    if (n_routes) routes = std::make_unique<RouteStats[]>(n_routes);
    if (n_pools) pools = std::make_unique<PoolGauges[]>(n_pools);
}

AppMetrics::~AppMetrics() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (watcher_.joinable()) watcher_.join();
}

void AppMetrics::enable_metrics(MetricsOptions o) {
    metrics_on_ = true;
    options_ = std::move(o);
    if (options_.lag_interval.count() < 1) options_.lag_interval = std::chrono::milliseconds(1);
}

void AppMetrics::enable_watchdog(WatchdogOptions o) {
    if (o.threshold.count() < 1) o.threshold = std::chrono::milliseconds(1);
    watchdog_ = o;
}

void AppMetrics::set_routes(std::vector<std::string> routes) { labels_ = std::move(routes); }

LoopStats* AppMetrics::loop_started(std::size_t index, Loop& loop) {
    LoopMetrics* m;
    {
        std::lock_guard lock(mu_);
        if (loops_.size() <= index) loops_.resize(index + 1);
        if (!loops_[index])  // a restarted app keeps counting in the same block
            loops_[index] =
                std::make_unique<LoopMetrics>(*this, index, metrics_on_ ? labels_.size() + 1 : 0,
                                              metrics_on_ ? options_.pools.size() : 0);
        m = loops_[index].get();
        if (watchdog_ && !watcher_.joinable()) watcher_ = std::thread([this] { watch(); });
    }
    m->watch.since_ns.store(0, std::memory_order_relaxed);
    if (metrics_on_) {
        m->expected = std::chrono::steady_clock::now() + options_.lag_interval;
        loop.call_after(options_.lag_interval, [this, m, &loop] { tick(*m, loop); });
    }
    return m;
}

// The loop-lag timer: how late it ran is how long the loop was kept from its timers.
void AppMetrics::tick(LoopMetrics& m, Loop& loop) {
    const auto now = std::chrono::steady_clock::now();
    const auto late = std::chrono::duration_cast<std::chrono::nanoseconds>(now - m.expected);
    const std::uint64_t lag = late.count() > 0 ? static_cast<std::uint64_t>(late.count()) : 0;
    m.lag_ns.set(lag);
    if (lag > m.lag_max_ns.get()) m.lag_max_ns.set(lag);
    for (std::size_t i = 0; i < options_.pools.size(); ++i) {
        std::optional<PoolSample> s;
        try {
            s = options_.pools[i].sample();
        } catch (const std::exception& e) {
            log::warn("metrics: pool {}: {}", options_.pools[i].name, e.what());
        }
        PoolGauges& g = m.pools[i];
        g.connections.set(s ? s->connections : 0);
        g.busy.set(s ? s->busy : 0);
        g.waiting.set(s ? s->waiting : 0);
    }
    m.expected = now + options_.lag_interval;
    loop.call_after(options_.lag_interval, [this, &m, &loop] { tick(m, loop); });
}

// The watchdog thread: looks at every loop's dispatch slot a few times per threshold and logs
// a dispatch that has run longer, once.
void AppMetrics::watch() {
    const auto threshold = watchdog_->threshold;
    const auto period =
        std::clamp(threshold / 4, std::chrono::milliseconds(1), std::chrono::milliseconds(250));
    const auto limit_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(threshold).count());
    std::unique_lock lock(mu_);
    while (!stopping_) {
        wake_.wait_for(lock, period, [this] { return stopping_; });
        if (stopping_) break;
        // Nothing here allocates (the zero-allocation tests count every thread's allocations).
        const std::uint64_t now = steady_ns();
        for (std::size_t i = 0; i < loops_.size(); ++i) {
            if (!loops_[i]) continue;
            WatchSlot& w = loops_[i]->watch;
            const std::uint64_t since = w.since_ns.load(std::memory_order_relaxed);
            if (since == 0 || since == w.reported || now < since || now - since <= limit_ns)
                continue;
            const std::uint64_t what = w.what.load(std::memory_order_relaxed);
            if (w.since_ns.load(std::memory_order_relaxed) != since) continue;  // it moved on
            w.reported = since;
            stalls_.add();
            const auto slot = static_cast<std::size_t>(what >> 8);
            const std::string_view route = route_label(slot);
            const auto method = static_cast<Method>(what & 0xff);
            log::warn("stall: {} {} has held loop {} for {} ms (watchdog threshold {} ms)",
                      method_label(method), route, i, (now - since) / 1'000'000, threshold.count());
        }
    }
}

void AppMetrics::prepare(App& app) {
    std::vector<std::string> labels;
    for (const openapi::RouteDoc& d : route_docs(app)) labels.push_back(d.pattern);
    set_routes(std::move(labels));
    app.options().on_loop_start = [this](std::size_t index, Loop& loop) {
        return loop_started(index, loop);
    };
}

void AppMetrics::on_request(Observation& o, const Request& req, std::int32_t route) noexcept {
    LoopMetrics* loop = current();
    if (!loop) return;
    o.context = loop;
    o.route = route < 0 ? unmatched_slot() : static_cast<std::uint32_t>(route);
    o.start_ns = steady_ns();
    loop->watch.what.store(std::uint64_t{o.route} << 8 | static_cast<std::uint8_t>(req.method()),
                           std::memory_order_relaxed);
    loop->watch.since_ns.store(o.start_ns, std::memory_order_relaxed);
}

void AppMetrics::on_suspend(Observation& o) noexcept {
    if (o.context)
        static_cast<LoopMetrics*>(o.context)->watch.since_ns.store(0, std::memory_order_relaxed);
}

void AppMetrics::on_response(Observation& o, const Request& req, const Response& r) noexcept {
    auto* loop = static_cast<LoopMetrics*>(o.context);
    if (!loop) return;
    loop->watch.since_ns.store(0, std::memory_order_relaxed);
    if (loop->routes)
        loop->routes[o.route].record(req.method(), static_cast<int>(r.status()),
                                     steady_ns() - o.start_ns);
}

std::string AppMetrics::render() const {
    std::lock_guard lock(mu_);
    PrometheusWriter w;
    const std::size_t n_routes = labels_.size() + 1;
    std::vector<const LoopMetrics*> loops;
    for (const auto& l : loops_)
        if (l) loops.push_back(l.get());

    if (metrics_on_) {
        w.family("vela_http_requests_total",
                 "HTTP requests answered, by route template, method and status.", "counter");
        for (std::size_t r = 0; r < n_routes; ++r) {
            const std::string_view route = route_label(r);
            // Sum each (method, status) over loops; a loop may have filled its entries in
            // another order.
            std::vector<std::pair<std::uint32_t, std::uint64_t>> sums;
            std::uint64_t other = 0;
            for (const LoopMetrics* l : loops) {
                const RouteStats& s = l->routes[r];
                for (std::size_t i = 0; i < RouteStats::kCodes; ++i) {
                    const std::uint32_t k = s.key[i].load(std::memory_order_relaxed);
                    if (k == 0) break;
                    auto it = std::find_if(sums.begin(), sums.end(),
                                           [k](const auto& p) { return p.first == k; });
                    if (it == sums.end())
                        sums.emplace_back(k, s.count[i].get());
                    else
                        it->second += s.count[i].get();
                }
                other += s.other.get();
            }
            std::sort(sums.begin(), sums.end());
            for (const auto& [k, n] : sums) {
                const auto method = static_cast<Method>((k >> 16) - 1);
                const std::string status = std::to_string(k & 0xffff);
                w.sample("vela_http_requests_total",
                         {{"route", route}, {"method", method_label(method)}, {"status", status}},
                         n);
            }
            if (other)
                w.sample("vela_http_requests_total",
                         {{"route", route}, {"method", "other"}, {"status", "other"}}, other);
        }

        w.family("vela_http_request_duration_seconds",
                 "Time from dispatch to the handler's response, by route template.", "histogram");
        for (std::size_t r = 0; r < n_routes; ++r) {
            std::uint64_t counts[kLatencyBucketCount + 1] = {};
            std::uint64_t sum_ns = 0, total = 0;
            for (const LoopMetrics* l : loops) {
                const RouteStats& s = l->routes[r];
                for (std::size_t b = 0; b <= kLatencyBucketCount; ++b) {
                    counts[b] += s.buckets[b].get();
                    total += s.buckets[b].get();
                }
                sum_ns += s.sum_ns.get();
            }
            if (total == 0) continue;
            const std::string_view route = route_label(r);
            w.histogram("vela_http_request_duration_seconds", {{"route", route}}, kLatencyBuckets,
                        counts, kLatencyBucketCount, static_cast<double>(sum_ns) / 1e9);
        }

        std::uint64_t in = 0, out = 0, sse = 0;
        std::uint64_t conns[kConnectionProtocols][2] = {};
        for (const LoopMetrics* l : loops) {
            in += l->io.read.get();
            out += l->io.written.get();
            sse += l->sse_streams.get();
            for (std::size_t p = 0; p < kConnectionProtocols; ++p)
                for (std::size_t t = 0; t < 2; ++t) conns[p][t] += l->connections[p][t].get();
        }
        w.family("vela_http_received_bytes_total",
                 "Bytes read from client connections (TLS: as encrypted).", "counter");
        w.sample("vela_http_received_bytes_total", {}, in);
        w.family("vela_http_sent_bytes_total",
                 "Bytes written to client connections (TLS: as encrypted).", "counter");
        w.sample("vela_http_sent_bytes_total", {}, out);

        static constexpr std::string_view kProto[kConnectionProtocols] = {"http1", "h2", "ws"};
        w.family("vela_open_connections", "Client connections open, by protocol and TLS.", "gauge");
        for (std::size_t p = 0; p < kConnectionProtocols; ++p)
            for (std::size_t t = 0; t < 2; ++t)
                w.sample("vela_open_connections",
                         {{"protocol", kProto[p]}, {"tls", t ? "true" : "false"}}, conns[p][t]);
        w.family("vela_websocket_connections", "WebSocket sessions open.", "gauge");
        w.sample("vela_websocket_connections", {},
                 conns[static_cast<std::size_t>(ConnectionProtocol::websocket)][0] +
                     conns[static_cast<std::size_t>(ConnectionProtocol::websocket)][1]);
        w.family("vela_sse_streams", "Server-sent event streams open.", "gauge");
        w.sample("vela_sse_streams", {}, sse);

        w.family("vela_loop_lag_seconds",
                 "How late the loop's last lag timer ran (time the loop was kept busy).", "gauge");
        for (const LoopMetrics* l : loops)
            w.sample("vela_loop_lag_seconds", {{"loop", std::to_string(l->index)}},
                     static_cast<double>(l->lag_ns.get()) / 1e9);
        w.family("vela_loop_lag_max_seconds", "The largest loop lag measured since start.",
                 "gauge");
        for (const LoopMetrics* l : loops)
            w.sample("vela_loop_lag_max_seconds", {{"loop", std::to_string(l->index)}},
                     static_cast<double>(l->lag_max_ns.get()) / 1e9);

        if (!options_.pools.empty()) {
            static constexpr std::string_view kPool[3][2] = {
                {"vela_db_pool_connections", "Database pool connections open or opening."},
                {"vela_db_pool_busy", "Database pool connections in use."},
                {"vela_db_pool_waiting", "Work waiting for a database pool connection."}};
            for (std::size_t g = 0; g < 3; ++g) {
                w.family(kPool[g][0], kPool[g][1], "gauge");
                for (std::size_t p = 0; p < options_.pools.size(); ++p) {
                    std::uint64_t v = 0;
                    for (const LoopMetrics* l : loops) {
                        const PoolGauges& pg = l->pools[p];
                        v += g == 0   ? pg.connections.get()
                             : g == 1 ? pg.busy.get()
                                      : pg.waiting.get();
                    }
                    w.sample(kPool[g][0], {{"pool", options_.pools[p].name}}, v);
                }
            }
        }
    }
    if (metrics_on_ && !options_.clients.empty()) {
        std::vector<ClientSample> cs;
        for (const ClientSource& c : options_.clients) cs.push_back(c.sample());
        using Field = std::uint64_t ClientSample::*;
        static constexpr struct {
            const char* name;
            const char* help;
            const char* type;
            Field field;
        } kClient[] = {
            {"vela_http_client_requests_total", "Requests sent by the HTTP client.", "counter",
             &ClientSample::requests},
            {"vela_http_client_failures_total", "HTTP client requests that ended with an error.",
             "counter", &ClientSample::failures},
            {"vela_http_client_retries_total", "HTTP client requests sent again.", "counter",
             &ClientSample::retries},
            {"vela_http_client_connections_opened_total", "HTTP client connections opened.",
             "counter", &ClientSample::connections_opened},
            {"vela_http_client_connections_reused_total",
             "HTTP client requests sent on a kept-alive connection.", "counter",
             &ClientSample::connections_reused},
            {"vela_http_client_connections", "HTTP client connections open.", "gauge",
             &ClientSample::open},
            {"vela_http_client_idle_connections", "HTTP client connections idle in a pool.",
             "gauge", &ClientSample::idle},
            {"vela_http_client_tls_resumed_total",
             "HTTP client TLS handshakes that resumed a session.", "counter",
             &ClientSample::tls_resumed},
            {"vela_http_client_dns_lookups_total",
             "Host names the HTTP client looked up (cache hits excluded).", "counter",
             &ClientSample::dns_lookups},
        };
        for (const auto& f : kClient) {
            w.family(f.name, f.help, f.type);
            for (std::size_t i = 0; i < cs.size(); ++i)
                w.sample(f.name, {{"client", options_.clients[i].name}}, cs[i].*f.field);
        }
    }
    if (metrics_on_) {
        std::vector<bool> done(options_.counters.size(), false);
        for (std::size_t i = 0; i < options_.counters.size(); ++i) {
            if (done[i]) continue;
            const CounterSource& first = options_.counters[i];
            w.family(first.family, first.help, "counter");
            for (std::size_t j = i; j < options_.counters.size(); ++j) {
                const CounterSource& c = options_.counters[j];
                if (done[j] || c.family != first.family) continue;
                done[j] = true;
                const std::uint64_t v = c.sample ? c.sample() : 0;
                if (c.label.empty())
                    w.sample(c.family, {}, v);
                else
                    w.sample(c.family, {{c.label, c.value}}, v);
            }
        }
    }
    if (watchdog_) {
        w.family("vela_stalls_total", "Handlers the stall watchdog reported.", "counter");
        w.sample("vela_stalls_total", {}, stalls_.get());
    }
    return w.take();
}

}  // namespace detail

// ---- installing on an App -------------------------------------------------------------------

void metrics(App& app, MetricsOptions options) {
    detail::AppMetrics& m = detail::extension<detail::AppMetrics>(app, "metrics");
    detail::observe(app, m, "metrics");
    const std::string path = options.path;
    m.enable_metrics(std::move(options));
    if (!path.empty())
        app.get(path,
                [&m](const Request&) {
                    Response r(m.render());
                    r.set_content_type(PrometheusWriter::content_type);
                    return r;
                })
            .hidden();  // an operations endpoint, not part of the API's document
}

void stall_watchdog(App& app, WatchdogOptions options) {
    detail::AppMetrics& m = detail::extension<detail::AppMetrics>(app, "the stall watchdog");
    detail::observe(app, m, "the stall watchdog");
    m.enable_watchdog(options);
}

std::string metrics_text(const App& app) {
    const detail::AppMetrics* m = detail::find_extension<detail::AppMetrics>(app);
    return m && m->metrics_on() ? m->render() : std::string();
}

}  // namespace vela
