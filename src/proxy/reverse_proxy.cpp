// The reverse proxy's handler: picks an upstream, sends the request through vela::http::Client
// with its body streamed from the client, and answers with the upstream's response, its body
// streamed back through stream_body (see reverse_proxy.hpp).

#include "vela/proxy/reverse_proxy.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <thread>

#include "proxy/fields.hpp"
#include "vela/async/when_all.hpp"
#include "vela/base/ascii.hpp"
#include "vela/base/base64.hpp"
#include "vela/base/log.hpp"
#include "vela/client/client.hpp"
#include "vela/http/response_writer.hpp"
#include "vela/reactor/block_on.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/server/stream.hpp"
#include "vela/server/tunnel.hpp"
#include "vela/server/websocket.hpp"
#include "vela/web/app.hpp"
#include "vela/web/http_error.hpp"

namespace vela {

namespace {

std::int64_t now_ms() noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// splitmix64's finaliser: spreads a hash over all bits (rendezvous scores).
std::uint64_t mix(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::uint64_t fnv1a(std::string_view s) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return h;
}

bool idempotent(Method m) noexcept {
    return m == Method::GET || m == Method::HEAD || m == Method::OPTIONS || m == Method::PUT ||
           m == Method::DELETE;
}

}  // namespace

/// One upstream server and what is known of it (shared by every loop: atomics).
struct Upstream {
    std::string text;       // as configured
    std::string origin;     // scheme://authority, to which the target is appended
    std::string base;       // the configured path without its trailing '/' ("" for none)
    std::string authority;  // its Host (unless preserve_host)
    std::uint64_t seed = 0;
    std::atomic<std::int64_t> active{0};
    std::atomic<std::uint64_t> requests{0}, failures{0};
    std::atomic<int> fails_in_row{0};
    std::atomic<std::int64_t> ejected_until{0};
    std::atomic<bool> probe_ok{true};
    int probe_good = 0, probe_bad = 0;  // the checker's thread only

    bool available(std::int64_t now) const noexcept {
        return probe_ok.load(std::memory_order_relaxed) &&
               ejected_until.load(std::memory_order_relaxed) <= now;
    }
};

struct ReverseProxy::State {
    explicit State(ReverseProxyOptions o);
    ~State();

    /// The upstream for `req` not in `tried` (indexes), or null when none is available.
    Upstream* pick(const Request& req, const std::vector<std::size_t>& tried);
    /// The target sent upstream: the request's, its prefix stripped and rewritten.
    std::string target(const Request& req) const;
    /// Counts a failure of `u` (passive ejection).
    void failed(Upstream& u);
    /// The position of `u` in ups.
    std::size_t index_of(const Upstream* u) const noexcept {
        std::size_t i = 0;
        while (i < ups.size() && ups[i].get() != u) ++i;
        return i;
    }
    /// The active health checks, on their own thread's loop.
    Task<void> check_forever();
    /// True when `req` asks for one protocol of options' `upgrades` (others go on as plain
    /// requests, their Upgrade field dropped as hop-by-hop).
    bool upgradable(const Request& req) const noexcept {
        return upgradable(ascii::trim_ows(req.header("upgrade")));
    }
    /// True when the protocol `want` is one of options' `upgrades`.
    bool upgradable(std::string_view want) const noexcept {
        for (const std::string& u : o.upgrades)
            if (ascii::iequals(want, u)) return true;
        return false;
    }
    /// Passes an Upgrade request on; a 101 from the upstream joins the two connections. With
    /// `h2_websocket`, `req` is an HTTP/2 extended CONNECT (RFC 8441): the upstream is asked
    /// for a WebSocket over HTTP/1.1 (a key of the proxy's own, its answer checked) and the
    /// client gets a 200 whose stream carries the frames.
    Task<Response> upgrade(Request& req, const std::string& target,
                           std::vector<http::Header> fields, std::shared_ptr<State> self,
                           bool h2_websocket = false);
    Task<void> probe(Upstream& u);

    ReverseProxyOptions o;
    std::vector<std::unique_ptr<Upstream>> ups;
    std::unique_ptr<http::Client> client;
    std::unique_ptr<http::Client> probe_client;
    std::atomic<std::uint64_t> turn{0};
    std::atomic<bool> stopping{false};
    std::thread checker;
};

namespace {

http::ClientOptions client_options(const ReverseProxyOptions& o, bool probe) {
    http::ClientOptions c;
    c.connect_timeout = probe ? o.health.timeout : o.connect_timeout;
    c.tls_timeout = probe ? o.health.timeout : o.connect_timeout;
    c.head_timeout = probe ? o.health.timeout : o.response_timeout;
    c.request_timeout = probe ? o.health.timeout : o.request_timeout;
    c.max_body = probe ? 1 << 20 : 0;  // a proxied body streams: no limit of the client's
    c.max_connections_per_origin = probe ? 4 : o.max_connections_per_upstream;
    c.max_idle_per_origin = probe ? 1 : o.max_connections_per_upstream;
    c.follow_redirects = false;
    c.retries = 0;  // another upstream is tried instead (State::pick)
    c.decompress = false;
    c.proxy_from_env = false;
    c.user_agent = probe ? "vela-health-check" : "";
    c.tls = o.tls;
    c.http2 = o.http2;
    c.h2c = o.h2c && !probe;
    return c;
}

}  // namespace

ReverseProxy::State::State(ReverseProxyOptions opts) : o(std::move(opts)) {
    if (o.upstreams.empty())
        throw std::invalid_argument("reverse proxy: no upstream (ReverseProxyOptions::upstreams)");
    if (o.balance == Balance::hash && o.hash_header.empty() && o.hash_cookie.empty())
        throw std::invalid_argument(
            "reverse proxy: Balance::hash needs hash_header or hash_cookie to take the key from");
    if (o.retries < 0 || o.max_fails < 0 || o.health.unhealthy_after < 1 ||
        o.health.healthy_after < 1 || o.max_connections_per_upstream == 0)
        throw std::invalid_argument(
            "reverse proxy: retries and max_fails must be >= 0, health thresholds and "
            "max_connections_per_upstream >= 1");
    if (o.health.interval.count() <= 0 || o.health.timeout.count() <= 0 ||
        o.connect_timeout.count() <= 0 || o.response_timeout.count() <= 0 ||
        o.request_timeout.count() <= 0)
        throw std::invalid_argument(
            "reverse proxy: health.interval, health.timeout, connect_timeout, "
            "response_timeout and request_timeout must be positive");
    for (const std::string& u : o.upgrades)
        if (ascii::iequals(u, "h2c"))
            throw std::invalid_argument(
                "reverse proxy: h2c cannot be an upgrade through a proxy (it would hand the "
                "client a raw HTTP/2 connection past the routes); use the h2c option instead");
    for (const std::string& text : o.upstreams) {
        http::Url url;
        try {
            url = http::Url::parse(text);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("reverse proxy: upstream \"" + text + "\": " + e.what());
        }
        if (url.scheme == http::Scheme::ws || url.scheme == http::Scheme::wss)
            throw std::invalid_argument("reverse proxy: upstream \"" + text +
                                        "\": use http:// or https:// (upgrades are tunnelled)");
        if (url.target.find('?') != std::string::npos)
            throw std::invalid_argument("reverse proxy: upstream \"" + text +
                                        "\" has a query; give a path only");
        auto u = std::make_unique<Upstream>();
        u->text = text;
        std::string path = url.target;
        while (!path.empty() && path.back() == '/') path.pop_back();
        u->base = path;
        url.target = "/";
        u->origin = url.to_string();
        u->origin.pop_back();  // the '/' of the target
        u->authority = url.authority();
        u->seed = mix(fnv1a(text) + ups.size());
        ups.push_back(std::move(u));
    }
    client = std::make_unique<http::Client>(client_options(o, false));
    if (!o.health.path.empty()) {
        if (o.health.path.front() != '/')
            throw std::invalid_argument("reverse proxy: health.path must start with '/'");
        probe_client = std::make_unique<http::Client>(client_options(o, true));
        checker = std::thread([this] {
            try {
                block_on(check_forever());
            } catch (const std::exception& e) {
                log::error("reverse proxy: health checks stopped: {}", e.what());
            }
        });
    }
}

ReverseProxy::State::~State() {
    stopping = true;
    if (checker.joinable()) checker.join();
}

namespace {

std::size_t segments(std::string_view path) noexcept {
    std::size_t n = 0;
    for (const char c : path) n += c == '/';
    return n;
}

}  // namespace

std::string ReverseProxy::State::target(const Request& req) const {
    std::string_view t = req.target();
    if (t.empty() || t.front() != '/') {
        // The absolute form (RFC 9112 3.2.2): the path after the authority.
        const std::size_t scheme_end = t.find("://");
        const std::size_t path = scheme_end == std::string_view::npos
                                     ? std::string_view::npos
                                     : t.find_first_of("/?", scheme_end + 3);
        t = path == std::string_view::npos ? std::string_view("/") : t.substr(path);
    }
    std::string out;
    if (o.strip_prefix) {
        // What the route matched before its wildcard goes: as many segments of the target as
        // the decoded path has before the wildcard's part (a %2F inside the rest stays one
        // segment of the target).
        const std::string_view rest = req.param(kRest);
        const std::size_t all = segments(req.path());
        const std::size_t below = rest.empty() ? 0 : segments(rest) + 1;
        const std::size_t prefix_segments = all > below ? all - below : 0;
        const std::size_t query = t.find('?');
        std::string_view path = t.substr(0, query);
        for (std::size_t i = 0; i < prefix_segments && !path.empty(); ++i) {
            const std::size_t next = path.find('/', 1);
            path = next == std::string_view::npos ? std::string_view{} : path.substr(next);
        }
        out = path.empty() ? std::string("/") : std::string(path);
        if (query != std::string_view::npos) out += t.substr(query);
    } else {
        out = t;
    }
    if (o.rewrite) out = o.rewrite(out);
    if (out.empty() || out.front() != '/')
        throw std::runtime_error("reverse proxy: rewrite returned \"" + out +
                                 "\", which does not start with '/'");
    return out;
}

Upstream* ReverseProxy::State::pick(const Request& req, const std::vector<std::size_t>& tried) {
    const std::int64_t now = now_ms();
    const std::size_t n = ups.size();
    auto usable = [&](std::size_t i) {
        return ups[i]->available(now) && std::find(tried.begin(), tried.end(), i) == tried.end();
    };
    if (o.balance == Balance::hash) {
        std::string_view key;
        if (!o.hash_header.empty()) key = req.header(o.hash_header);
        if (key.empty() && !o.hash_cookie.empty()) key = req.cookie(o.hash_cookie).value_or("");
        if (!key.empty()) {
            // Rendezvous hashing: the highest score wins; an upstream that leaves moves only
            // its own keys.
            const std::uint64_t h = fnv1a(key);
            Upstream* best = nullptr;
            std::uint64_t best_score = 0;
            for (std::size_t i = 0; i < n; ++i) {
                if (!usable(i)) continue;
                const std::uint64_t score = mix(h ^ ups[i]->seed);
                if (!best || score > best_score) {
                    best = ups[i].get();
                    best_score = score;
                }
            }
            return best;
        }
    }
    const std::size_t start = turn.fetch_add(1, std::memory_order_relaxed) % n;
    if (o.balance == Balance::least_connections) {
        Upstream* best = nullptr;
        std::int64_t fewest = std::numeric_limits<std::int64_t>::max();
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t i = (start + k) % n;
            if (!usable(i)) continue;
            const std::int64_t a = ups[i]->active.load(std::memory_order_relaxed);
            if (a < fewest) {
                best = ups[i].get();
                fewest = a;
            }
        }
        return best;
    }
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = (start + k) % n;
        if (usable(i)) return ups[i].get();
    }
    return nullptr;
}

void ReverseProxy::State::failed(Upstream& u) {
    u.failures.fetch_add(1, std::memory_order_relaxed);
    if (o.max_fails == 0) return;
    if (u.fails_in_row.fetch_add(1, std::memory_order_relaxed) + 1 >= o.max_fails) {
        u.fails_in_row.store(0, std::memory_order_relaxed);
        u.ejected_until.store(now_ms() + o.fail_timeout.count(), std::memory_order_relaxed);
        log::warn("reverse proxy: upstream {} left out for {} ms after {} failures in a row",
                  u.text, o.fail_timeout.count(), o.max_fails);
    }
}

Task<void> ReverseProxy::State::probe(Upstream& u) {
    bool ok = false;
    try {
        http::ClientResponse r = co_await probe_client->get(u.origin + u.base + o.health.path);
        ok = r.status() >= 200 && r.status() < 400;
    } catch (const std::exception&) {
        ok = false;
    }
    if (ok) {
        u.probe_bad = 0;
        if (!u.probe_ok.load() && ++u.probe_good >= o.health.healthy_after) {
            u.probe_ok = true;
            log::info("reverse proxy: upstream {} is healthy again", u.text);
        }
    } else {
        u.probe_good = 0;
        if (u.probe_ok.load() && ++u.probe_bad >= o.health.unhealthy_after) {
            u.probe_ok = false;
            log::warn("reverse proxy: upstream {} failed {} health checks, left out", u.text,
                      o.health.unhealthy_after);
        }
    }
}

Task<void> ReverseProxy::State::check_forever() {
    constexpr std::chrono::milliseconds kSlice{50};
    while (!stopping.load()) {
        std::vector<Task<void>> round;
        round.reserve(ups.size());
        for (auto& u : ups) round.push_back(probe(*u));
        co_await when_all(std::move(round));
        for (auto waited = std::chrono::milliseconds(0);
             waited < o.health.interval && !stopping.load(); waited += kSlice)
            co_await sleep(std::min(kSlice, o.health.interval - waited));
    }
}

namespace {

// Keeps an upstream's in-flight count up while its response is being passed on.
struct Active {
    explicit Active(Upstream& u) noexcept : u(u) { u.active.fetch_add(1); }
    ~Active() { u.active.fetch_sub(1); }
    Active(const Active&) = delete;
    Active& operator=(const Active&) = delete;
    Upstream& u;
};

// Puts Host first (RFC 9110 7.2): the one set_request_headers gave, else `host`.
void put_host(std::vector<http::Header>& h, std::string_view host) {
    for (auto it = h.begin(); it != h.end(); ++it) {
        if (it->first.size() == 4 && ascii::iequals(it->first, "host")) {
            std::rotate(h.begin(), it, it + 1);
            return;
        }
    }
    h.emplace(h.begin(), "Host", host);
}

std::optional<std::uint64_t> content_length(std::string_view v) noexcept {
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
    return n;
}

// The client's request body as the upstream request's body source: the pieces as they
// arrive, with a first piece read ahead (HTTP/2, to learn whether there is a body at all).
struct BodyFeed {
    explicit BodyFeed(BodyReader& r) noexcept : reader(r) {}
    Task<std::optional<std::string>> next() {
        if (!pending.empty()) co_return std::exchange(pending, std::string());
        if (ended) co_return std::nullopt;
        const BodyChunk c = co_await reader.read();
        if (c.error != Status::OK) throw HttpError(c.error, std::string());
        ended = c.end;
        if (c.data.empty()) co_return std::nullopt;  // only the last chunk may be empty
        co_return std::string(c.data);
    }
    BodyReader& reader;
    std::string pending;
    bool ended = false;
};

// The response going to the client: the upstream's status and fields, less the hop-by-hop
// ones and those the server writes itself (Date, Server, the framing), Via appended, then the
// options' removals and settings. `length` gets the upstream's Content-Length, if any.
Response response_head(const ResponseHead& head, bool http2, const ReverseProxyOptions& o,
                       std::optional<std::uint64_t>& length) {
    Response r(static_cast<Status>(head.status()));
    const bool switching = head.status() == 101;  // its Upgrade names the protocol switched to
    std::vector<std::string_view> connection;
    std::string via;
    head.for_each([&](std::string_view name, std::string_view value) {
        for (const std::string& removed : o.remove_response_headers)
            if (ascii::iequals(name, removed)) return;
        switch (proxy::classify(name)) {
            case proxy::FieldKind::connection:
                connection.push_back(value);
                return;
            case proxy::FieldKind::content_length:
                length = content_length(value);
                return;
            case proxy::FieldKind::content_type:
                r.set_content_type(value);
                return;
            case proxy::FieldKind::via:
                if (!via.empty()) via += ", ";
                via += value;
                return;
            case proxy::FieldKind::hop:
                if (switching && ascii::iequals(name, "upgrade")) break;
                return;
            case proxy::FieldKind::date:
            case proxy::FieldKind::server:
                return;
            default:
                break;
        }
        r.add_header(name, value);
    });
    // Fields the upstream's Connection named are its hop-by-hop ones (rare: a second pass).
    if (!connection.empty())
        head.for_each([&](std::string_view name, std::string_view) {
            if (proxy::named_by_connection(connection, name) &&
                !(switching && ascii::iequals(name, "upgrade")))
                r.remove_header(name);
        });
    if (!o.via.empty()) {
        if (!via.empty()) via += ", ";
        via += http2 ? "2 " : head.version_minor() == 0 ? "1.0 " : "1.1 ";
        via += o.via;
    }
    if (!via.empty()) r.add_header("Via", via);
    for (const auto& [name, value] : o.set_response_headers) r.set_header(name, value);
    return r;
}

// An upstream's trailer field that goes on to the client: one a trailer may carry (RFC 9110
// 6.5.1), not removed by the options, not named by the upstream's Connection.
bool passes_trailer(std::string_view name, std::string_view value, const ResponseHead& head,
                    const ReverseProxyOptions& o) {
    if (!trailer_field_allowed(name, value)) return false;
    for (const std::string& removed : o.remove_response_headers)
        if (ascii::iequals(name, removed)) return false;
    const std::vector<std::string_view> connection = head.header_values("connection");
    return connection.empty() || !proxy::named_by_connection(connection, name);
}

// `r` (its body read whole) sent with the upstream's trailer fields after it: streamed, as
// only a streamed body carries trailers here.
Response with_trailers(Response r, const http::ClientResponse& up, const ReverseProxyOptions& o) {
    auto trailers = std::make_shared<Response::TrailerFields>();
    for (const auto& [name, value] : up.trailers())
        if (passes_trailer(name, value, up.head(), o)) trailers->emplace_back(name, value);
    auto body = std::make_shared<std::string>(std::move(r.mutable_body()));
    r.set_body(std::string());
    r.set_trailers(std::move(trailers));
    r.set_body_source([body]() mutable -> std::optional<std::string> {
        if (!body || body->empty()) return std::nullopt;  // (an empty piece means "wait")
        std::string piece = std::move(*body);
        body.reset();
        return piece;
    });
    return r;
}

}  // namespace

namespace {

// What a failed call to an upstream means for the answer, for the upstream's record and for
// a retry elsewhere.
struct Outcome {
    Status status;   // the answer when nothing else is tried
    bool counts;     // a failure of the upstream (passive ejection)
    bool unreached;  // nothing of the request reached it: another one may be tried
};

Outcome outcome(const http::ClientError& e) noexcept {
    switch (e.kind()) {
        case http::ErrorKind::connect:
        case http::ErrorKind::tls:
            return {Status::BadGateway, true, true};
        case http::ErrorKind::timeout:
            switch (static_cast<const http::TimeoutError&>(e).phase()) {
                case http::TimeoutError::Phase::pool:  // our own cap, not the upstream's fault
                    return {Status::ServiceUnavailable, false, true};
                case http::TimeoutError::Phase::connect:
                case http::TimeoutError::Phase::tls:
                    return {Status::GatewayTimeout, true, true};
                default:
                    return {Status::GatewayTimeout, true, false};
            }
        default:
            return {Status::BadGateway, true, false};
    }
}

}  // namespace

Task<Response> ReverseProxy::State::upgrade(Request& req, const std::string& target,
                                            std::vector<http::Header> fields,
                                            std::shared_ptr<State> self, bool h2_websocket) {
    const std::string protocol = h2_websocket ? "websocket" : std::string(req.header("upgrade"));
    fields.emplace_back("Connection", "Upgrade");
    fields.emplace_back("Upgrade", protocol);
    std::string key;  // an extended CONNECT has none: the proxy's own (RFC 6455 4.1)
    if (h2_websocket) {
        unsigned char raw[16];
        if (RAND_bytes(raw, sizeof raw) != 1) co_return Response(Status::InternalServerError);
        key = base64_encode(std::string_view(reinterpret_cast<const char*>(raw), sizeof raw));
        std::erase_if(fields, [](const http::Header& f) {
            return ascii::iequals(f.first, "sec-websocket-key");
        });
        fields.emplace_back("Sec-WebSocket-Key", key);
    }
    std::vector<std::size_t> tried;
    Status failure = Status::ServiceUnavailable;
    for (int attempt = 0;; ++attempt) {
        Upstream* u = pick(req, tried);
        if (!u) co_return Response(failure);
        tried.push_back(index_of(u));
        u->requests.fetch_add(1, std::memory_order_relaxed);
        const Active active(*u);
        http::Upgraded up;
        bool retry = false;
        std::vector<http::Header> with_host = fields;
        put_host(with_host, o.preserve_host && !req.host().empty()
                                ? req.host()
                                : std::string_view(u->authority));
        try {
            up = co_await client->upgrade(u->origin + u->base + target, with_host,
                                          o.response_timeout);
        } catch (const http::ClientError& e) {
            const Outcome f = outcome(e);
            if (f.counts) failed(*u);
            log::warn("reverse proxy: {}", e.what());
            failure = f.status;
            retry = f.unreached && attempt < o.retries;
        } catch (const std::invalid_argument& e) {
            log::warn("reverse proxy: {}", e.what());
            co_return Response(Status::BadRequest);  // a target no request line may carry
        }
        if (up.head.status() == 0) {
            if (retry) continue;
            co_return Response(failure);
        }
        u->fails_in_row.store(0, std::memory_order_relaxed);
        std::optional<std::uint64_t> length;
        Response r = response_head(up.head, false, o, length);
        if (up.head.status() != 101 || !up.transport) {
            // To an extended CONNECT a 2xx would say the WebSocket is open: only a refusal
            // (3xx-5xx) goes back as it is.
            if (h2_websocket && up.head.status() < 300) co_return Response(Status::BadGateway);
            co_return r;  // refused: its status and fields (its body is not passed on)
        }
        // The upstream must switch to what was asked for (RFC 9110 7.8), nothing else.
        if (!ascii::iequals(up.head.header("upgrade"), protocol)) {
            log::warn("reverse proxy: {} switched to \"{}\" when asked for \"{}\"", u->text,
                      up.head.header("upgrade"), protocol);
            co_return Response(Status::BadGateway);
        }
        if (h2_websocket && up.head.header("sec-websocket-accept") != ws_accept_key(key)) {
            log::warn(
                "reverse proxy: {} answered the WebSocket key with a wrong "
                "Sec-WebSocket-Accept",
                u->text);
            co_return Response(Status::BadGateway);
        }
        // The tunnel counts as one of the upstream's active connections (least connections)
        // for as long as it is open; it keeps the proxy's state alive for that.
        struct Hold {
            Hold(std::shared_ptr<State> s, Upstream& u) : self(std::move(s)), active(u) {}
            std::shared_ptr<State> self;
            Active active;
        };
        auto hold = std::make_shared<Hold>(self, *u);
        if (h2_websocket) {
            // RFC 8441 5: a 2xx opens the stream for the frames; no Upgrade, no Accept.
            r.set_status(Status::OK);
            r.remove_header("Upgrade");
            r.remove_header("Sec-WebSocket-Accept");
            r.set_upgrade(std::make_shared<TunnelUpgrade>(std::move(up.transport),
                                                          o.tunnel_idle_timeout, std::move(hold)));
            co_return r;
        }
        co_return tunnel(std::move(r), std::move(up.transport), o.tunnel_idle_timeout,
                         std::move(hold));
    }
}

ReverseProxy::ReverseProxy(ReverseProxyOptions options)
    : state_(std::make_shared<State>(std::move(options))) {}

std::vector<UpstreamStatus> ReverseProxy::upstreams() const {
    std::vector<UpstreamStatus> out;
    const std::int64_t now = now_ms();
    for (const auto& u : state_->ups)
        out.push_back(UpstreamStatus{u->text, u->available(now), u->active.load(),
                                     u->requests.load(), u->failures.load()});
    return out;
}

Task<Response> ReverseProxy::operator()(Request& req) const {
    const std::shared_ptr<State> keep = state_;
    State& s = *keep;
    const ReverseProxyOptions& o = s.o;

    const std::string target = s.target(req);
    // A trusted proxy's report was taken (vela::trusted_proxies): client_ip() then points
    // into the request's own copy instead of the connection's address.
    const bool trusted = req.client_ip().data() != req.remote_ip().data() ||
                         req.scheme() != (req.secure() ? "https" : "http");
    const proxy::ClientInfo info{req.remote_ip(), req.secure() ? "https" : "http", req.host(),
                                 trusted};
    // The fields for `u`, Host first: set_request_headers', else the client's with
    // preserve_host, else the upstream's.
    auto upstream_fields = [&] {
        std::vector<http::Header> h = proxy::request_fields(req.headers(), info, req.version(), o);
        if (o.edit_request_headers) o.edit_request_headers(req, h);
        return h;
    };
    auto fields = [&](const Upstream& u) {
        std::vector<http::Header> h = upstream_fields();
        put_host(
            h, o.preserve_host && !req.host().empty() ? req.host() : std::string_view(u.authority));
        return h;
    };
    // An HTTP/2 client's WebSocket (an extended CONNECT, RFC 8441): tunnelled to the upstream
    // over an HTTP/1.1 upgrade. (Any other CONNECT is not proxied.)
    if (req.method() == Method::CONNECT) [[unlikely]] {
        if (req.version() != 20 || req.protocol() != "websocket" || !s.upgradable("websocket"))
            co_return Response(Status::NotImplemented);
        co_return co_await s.upgrade(req, target, upstream_fields(), keep, true);
    }
    // An HTTP/1.1 GET asking to switch protocols (a WebSocket): tunnelled to the upstream.
    if (req.version() == 11 && req.method() == Method::GET && req.has_header("upgrade") &&
        ascii::list_has(req.header("connection"), "upgrade") && s.upgradable(req)) {
        // An upgrade's request has no body (what follows the head is the new protocol's).
        if (req.has_header("transfer-encoding") ||
            (req.has_header("content-length") && req.header("content-length") != "0"))
            co_return Response(Status::BadRequest);
        co_return co_await s.upgrade(req, target, upstream_fields(), keep);
    }

    // The body: streamed as it arrives (a streaming route), else the buffered one.
    bool body_taken = false;
    const bool streamed = req.body_streamed();
    bool has_body = false;
    std::optional<std::uint64_t> length;
    std::shared_ptr<BodyFeed> feed;
    if (streamed) {
        const std::string_view cl = req.header("content-length");
        if (!cl.empty()) length = content_length(cl);
        // HTTP/1.1 has a body only with a length or chunked; HTTP/2 says so with END_STREAM
        // on its HEADERS, which the first read tells (it returns the end at once).
        has_body = length ? *length > 0 : req.has_header("transfer-encoding");
        feed = std::make_shared<BodyFeed>(req.body_stream());
        if (req.version() == 20 && !length) {
            const BodyChunk first = co_await req.body_stream().read();
            if (first.error != Status::OK) co_return Response(first.error);
            feed->pending = std::string(first.data);
            feed->ended = first.end;
            has_body = !(first.end && first.data.empty());
        }
    }
    // TE is hop-by-hop, but a client that takes trailers (gRPC's "te: trailers") is said to
    // take them on the upstream's hop too: the proxy passes them on.
    bool te_trailers = false;
    if (const std::string_view te = req.header("te"); !te.empty()) [[unlikely]]
        ascii::for_each_list_item(te, [&](std::string_view item) {
            te_trailers = te_trailers || ascii::iequals(item, "trailers");
        });
    // The request for the upstream, made again for a retry (each try gives its request away
    // rather than sending a copy).
    auto make_request = [&](const Upstream& u) {
        http::ClientRequest cr;
        cr.method = std::string(req.method_name());
        cr.headers = fields(u);
        cr.accept_trailers = te_trailers;
        cr.url.reserve(u.origin.size() + u.base.size() + target.size());
        cr.url += u.origin;
        cr.url += u.base;
        cr.url += target;
        cr.stream = true;
        cr.follow_redirects = false;
        if (!streamed) {
            cr.body = std::string(req.body());
        } else if (has_body) {
            cr.content_length = length;
            cr.body_source = [feed, &body_taken]() -> Task<std::optional<std::string>> {
                body_taken = true;
                co_return co_await feed->next();
            };
        }
        return cr;
    };

    std::vector<std::size_t> tried;
    Status failure = Status::ServiceUnavailable;
    for (int attempt = 0;; ++attempt) {
        Upstream* u = s.pick(req, tried);
        if (!u) {
            if (failure == Status::ServiceUnavailable)
                log::warn("reverse proxy: no upstream available for {} {}", req.method_name(),
                          req.path());
            co_return Response(failure);
        }
        http::ClientRequest cr = make_request(*u);
        u->requests.fetch_add(1, std::memory_order_relaxed);
        std::optional<Active> active;  // (a streamed body takes a count of its own)
        active.emplace(*u);
        bool retry = false;
        std::optional<http::ClientResponse> res;
        try {
            res.emplace(co_await s.client->request(std::move(cr)));
        } catch (const HttpError&) {
            throw;  // the client's body failed (413, 400, 408): its own answer
        } catch (const http::ClientError& e) {
            const Outcome f = outcome(e);
            if (f.counts) s.failed(*u);
            log::warn("reverse proxy: {}", e.what());
            failure = f.status;
            retry = f.unreached && !body_taken && idempotent(req.method()) && attempt < o.retries;
        } catch (const std::invalid_argument& e) {
            log::warn("reverse proxy: {}", e.what());
            co_return Response(Status::BadRequest);  // a target no request line may carry
        }
        if (!res) {
            if (retry) {
                tried.push_back(s.index_of(u));  // (only now: most requests never need it)
                continue;
            }
            co_return Response(failure);
        }
        u->fails_in_row.store(0, std::memory_order_relaxed);
        http::ClientResponse& up = *res;
        if (up.status() == 101) {
            log::warn("reverse proxy: {} answered 101 to a request that asked for no upgrade",
                      u->text);
            co_return Response(Status::BadGateway);
        }
        std::optional<std::uint64_t> length;
        Response r = response_head(up.head(), up.protocol() == "HTTP/2", o, length);
        const int code = up.status();
        const bool bodiless = req.method() == Method::HEAD || code == 204 || code == 304;
        if (bodiless) {
            if (req.method() != Method::HEAD || code == 204 || code == 304) co_return r;
            // A HEAD answer keeps the length a GET would have had: the server announces the
            // length of the body it would send, so a small one stands for it, a large one is
            // announced (set_body_length), and an unknown one is announced as streamed
            // (chunked), never as 0.
            if (length && *length <= o.buffer_below) {
                r.set_body(std::string(*length, ' '));
                co_return r;
            }
            Response none = stream_body(std::move(r), [](BodyWriter&) -> Task<void> { co_return; });
            if (length) none.set_body_length(*length);
            co_return none;
        }
        if (length && *length <= o.buffer_below) {
            try {
                r.set_body(co_await up.body().read_all(*length));
                // (An HTTP/2 upstream's; an HTTP/1.0 client takes none, so keeps the length.)
                if (!up.trailers().empty() && req.version() != 10) [[unlikely]]
                    co_return with_trailers(std::move(r), up, o);
            } catch (const http::TimeoutError& e) {
                s.failed(*u);
                log::warn("reverse proxy: {}", e.what());
                co_return Response(Status::GatewayTimeout);
            } catch (const http::ClientError& e) {
                s.failed(*u);
                log::warn("reverse proxy: {}", e.what());
                co_return Response(Status::BadGateway);
            }
            co_return r;
        }
        // Streamed: the upstream is read only as fast as the client takes the bytes.
        // One object whose members go in order: the response and the in-flight count before
        // the proxy's state they point into (a lambda's captures die in no set order).
        struct Held {
            std::shared_ptr<State> state;
            std::shared_ptr<Active> active;
            http::ClientResponse res;
        };
        auto held = std::make_shared<Held>();
        held->state = keep;
        held->active = std::make_shared<Active>(*u);
        active.reset();
        held->res = std::move(up);
        Response streamed = stream_body(
            std::move(r),
            [held](BodyWriter& w) -> Task<void> {
                for (;;) {
                    std::optional<std::string_view> piece;
                    try {
                        piece = co_await held->res.body().read();
                    } catch (const http::ClientError& e) {
                        log::warn("reverse proxy: response body cut: {}", e.what());
                        throw;  // ends the body early: the client sees it cut, not complete
                    }
                    if (!piece) {
                        for (const auto& [name, value] : held->res.trailers())
                            if (passes_trailer(name, value, held->res.head(), held->state->o))
                                w.trailer(name, value);
                        co_return;
                    }
                    if (!co_await w.write(*piece)) co_return;  // the client went away
                }
            },
            o.stream_high_water);
        // The upstream's length goes on (a download shows its progress); an upstream that
        // ends short of it cuts the client's body as well.
        if (length) streamed.set_body_length(*length);
        co_return streamed;
    }
}

namespace {

template <class Owner>
ReverseProxy install(Owner& owner, std::string_view prefix, ReverseProxyOptions options) {
    std::string mount(prefix);
    while (mount.size() > 1 && mount.back() == '/') mount.pop_back();
    if (mount.empty() || mount.front() != '/')
        throw std::invalid_argument("reverse proxy: the prefix \"" + std::string(prefix) +
                                    "\" must start with '/'");
    const bool websocket =
        std::any_of(options.upgrades.begin(), options.upgrades.end(),
                    [](const std::string& u) { return ascii::iequals(u, "websocket"); });
    ReverseProxy handler(std::move(options));
    const std::string wildcard =
        (mount == "/" ? std::string() : mount) + "/{*" + std::string(ReverseProxy::kRest) + "}";
    for (const Method m : {Method::GET, Method::HEAD, Method::POST, Method::PUT, Method::PATCH,
                           Method::DELETE, Method::OPTIONS}) {
        owner.streaming(m, wildcard, handler);
        if (mount != "/") owner.streaming(m, mount, handler);
    }
    // An HTTP/2 WebSocket's extended CONNECT (not a streaming route: DATA that comes before
    // the answer is kept for the tunnel).
    if (websocket) {
        owner.route(Method::CONNECT, wildcard, handler);
        if (mount != "/") owner.route(Method::CONNECT, mount, handler);
    }
    return handler;
}

}  // namespace

ReverseProxy reverse_proxy(App& app, std::string_view prefix, ReverseProxyOptions options) {
    return install(app, prefix, std::move(options));
}

ReverseProxy reverse_proxy(Group& group, std::string_view prefix, ReverseProxyOptions options) {
    return install(group, prefix, std::move(options));
}

}  // namespace vela
