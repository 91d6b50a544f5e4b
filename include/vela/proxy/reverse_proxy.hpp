#pragma once
// A reverse proxy: requests below a prefix go to a set of upstream servers, answers come back
// streamed, as a route like any other (so authentication, rate limits, CORS and the access
// log run in front of it).
//
//     vela::App app;
//     app.use(vela::access_log());
//     vela::reverse_proxy(app, "/api", {.upstreams = {"http://10.0.0.1:8080",
//                                                      "http://10.0.0.2:8080"},
//                                       .health = {.path = "/healthz"}});
//     app.get("/", [] { return "served here"; });
//
// Semantics (RFC 9110 7.6): the hop-by-hop fields (Connection and those it names,
// Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-Authorization,
// Proxy-Authenticate) are removed both ways; Via is appended both ways; X-Forwarded-For,
// -Proto, -Host and Forwarded (RFC 7239) carry the client's address, scheme and host. Fields
// a client sent itself are kept and appended to only when the request came through a proxy
// we trust (vela::trusted_proxies took its report); otherwise they are
// replaced, so a client cannot claim an address. Host is the upstream's unless preserve_host.
//
// Bodies stream both ways in bounded memory: the request body as it arrives (the routes are
// App::streaming routes), the response body through stream_body's back-pressure (a slow
// client slows the upstream, the proxy never holds a large response). A response with a
// Content-Length up to buffer_below is passed whole, with its length.
//
// Failures: the upstream refused or could not be reached, or broke HTTP: 502; a timeout: 504;
// no upstream healthy: 503; each with the app's error body. A connect failure of an idempotent
// request is retried on another upstream (`retries`). An upstream failing max_fails times in a
// row is left out for fail_timeout (passive ejection); active health checks (health.path)
// probe each upstream from a thread of their own and take it out and back in.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/tls/client_context.hpp"

namespace vela {

class App;
class Group;

/// How a request picks its upstream.
enum class Balance : std::uint8_t {
    round_robin,        ///< in turn
    least_connections,  ///< the fewest requests in flight and tunnels open (ties: in turn)
    hash,  ///< the same key always reaches the same upstream while the set stays (rendezvous)
};

/// Active health checks (see ReverseProxyOptions::health).
struct HealthCheck {
    /// The path probed with GET on each upstream ("/healthz"); empty: no active checks.
    std::string path{};
    /// Time between two probes of one upstream.
    std::chrono::milliseconds interval{5'000};
    /// How long a probe may take.
    std::chrono::milliseconds timeout{2'000};
    /// Consecutive failed probes (no answer, or a status other than 2xx/3xx) that take an
    /// upstream out.
    int unhealthy_after = 2;
    /// Consecutive good probes that bring it back.
    int healthy_after = 2;
};

/// Settings of a reverse proxy.
struct ReverseProxyOptions {
    /// The upstream servers: "http://host:port", "https://host:port",
    /// "http+unix://%2Frun%2Fapp.sock"; a path ("http://host:8080/v2") is put before each request's
    /// path.
    std::vector<std::string> upstreams{};
    /// How a request picks its upstream.
    Balance balance = Balance::round_robin;
    /// Balance::hash: the request header whose value is the key ("X-User")...
    std::string hash_header{};
    /// ...or the cookie whose value is; a request without the key goes round robin.
    std::string hash_cookie{};
    /// Active health checks.
    HealthCheck health{};
    /// Passive ejection: this many failures in a row (no connection, a protocol error, a
    /// timeout) take an upstream out for fail_timeout (0: never).
    int max_fails = 3;
    /// How long an ejected upstream stays out.
    std::chrono::milliseconds fail_timeout{10'000};
    /// An idempotent request whose upstream could not be reached is sent to another one, at
    /// most this many times.
    int retries = 1;
    /// How long connecting to an upstream may take.
    std::chrono::milliseconds connect_timeout{5'000};
    /// How long the upstream may take to answer (the head), and between two body reads.
    std::chrono::milliseconds response_timeout{60'000};
    /// The upload and the wait for the response head together, including the wait for a free
    /// connection (past max_connections_per_upstream: 503); a streamed response's reads each
    /// get response_timeout instead.
    std::chrono::milliseconds request_timeout{300'000};
    /// The protocols a client may switch to through the proxy (Upgrade, one token); a request
    /// asking for another goes on as a plain request. h2c is refused (it would hand the client
    /// a raw HTTP/2 connection past the routes). With "websocket", an HTTP/2 client's
    /// WebSocket (an extended CONNECT, RFC 8441) is tunnelled too, over an HTTP/1.1 upgrade
    /// to the upstream.
    std::vector<std::string> upgrades{"websocket"};
    /// A WebSocket (or other upgraded) tunnel silent both ways this long is closed.
    std::chrono::milliseconds tunnel_idle_timeout{600'000};
    /// Connections open at once to one upstream, per loop; more requests wait for one.
    std::size_t max_connections_per_upstream = 256;
    /// Send only the part of the path below the route's prefix (/api/users -> /users): what
    /// the route's {*proxied_path} wildcard matched (see ReverseProxy::kRest).
    bool strip_prefix = false;
    /// Rewrites the target sent upstream (path and query, after strip_prefix); unset: kept.
    std::function<std::string(std::string_view target)> rewrite{};
    /// Send the client's Host instead of the upstream's.
    bool preserve_host = false;
    /// Append X-Forwarded-For, set X-Forwarded-Proto and X-Forwarded-Host.
    bool x_forwarded = true;
    /// Append an RFC 7239 Forwarded element (for, proto, host).
    bool forwarded = false;
    /// The pseudonym in the Via fields ("1.1 vela"); empty: no Via.
    std::string via = "vela";
    /// Fields set on the request sent upstream (replacing the client's of that name).
    std::vector<std::pair<std::string, std::string>> set_request_headers{};
    /// Fields removed from the request sent upstream.
    std::vector<std::string> remove_request_headers{};
    /// Called per request, on its loop, with the fields going upstream once the options above
    /// are applied: adds, changes or removes fields from what the request carries (a verified
    /// token's subject as X-User-Id, say). Unset: nothing.
    std::function<void(const Request& req,
                       std::vector<std::pair<std::string, std::string>>& fields)>
        edit_request_headers{};
    /// Fields set on the response sent to the client.
    std::vector<std::pair<std::string, std::string>> set_response_headers{};
    /// Fields removed from the response sent to the client (any, Content-Type and Via too).
    std::vector<std::string> remove_response_headers{};
    /// A response with a Content-Length up to this is read whole and sent with its length;
    /// larger or unknown ones stream (chunked to HTTP/1.1 clients).
    std::size_t buffer_below = 64 * 1024;
    /// Queued bytes of a streamed response above which reading from the upstream pauses.
    std::size_t stream_high_water = 256 * 1024;
    /// TLS toward https upstreams (trust store, verification, client certificate).
    TlsClientOptions tls{};
    /// Offer HTTP/2 to https upstreams through ALPN (one multiplexed connection per upstream
    /// and loop when they pick it); off: HTTP/1.1 with a pool of keep-alive connections.
    bool http2 = true;
    /// Speak HTTP/2 with prior knowledge (h2c) to http:// upstreams known to take it.
    bool h2c = false;
};

/// What an upstream looks like now (ReverseProxy::upstreams()).
struct UpstreamStatus {
    /// The upstream's URL as configured.
    std::string url;
    /// False while it is out (health checks or passive ejection).
    bool healthy = true;
    /// Requests in flight to it and tunnels open to it (every loop).
    std::int64_t active = 0;
    /// Requests sent to it.
    std::uint64_t requests = 0;
    /// Requests that failed on it (connect, protocol, timeout).
    std::uint64_t failures = 0;
};

/// A reverse-proxy handler (see above): `Task<Response>(Request&)`, usable on any streaming
/// route; reverse_proxy() registers it for a prefix. Cheap to copy (copies share the state).
class ReverseProxy {
  public:
    /// The name of the wildcard whose part of the path strip_prefix keeps: a route made by
    /// hand ends in "{*proxied_path}" (a route without it sends "/" with strip_prefix).
    static constexpr std::string_view kRest = "proxied_path";
    /// A proxy to options.upstreams. Throws std::invalid_argument (one line) for no
    /// upstream, a malformed upstream URL or a bad option, TlsError for TLS settings that
    /// cannot be loaded.
    explicit ReverseProxy(ReverseProxyOptions options);
    /// Sends `req` upstream and answers with what comes back (see above).
    Task<Response> operator()(Request& req) const;
    /// Each upstream's state, in configuration order.
    std::vector<UpstreamStatus> upstreams() const;

    struct State;

  private:
    std::shared_ptr<State> state_;
};

/// Forwards every request below `prefix` ("/api": /api and /api/...; "/": everything not
/// routed otherwise) to the upstreams (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, and an
/// HTTP/2 WebSocket's extended CONNECT when "websocket" is in `upgrades`), and returns the
/// handler (for its upstreams()). Before run().
ReverseProxy reverse_proxy(App& app, std::string_view prefix, ReverseProxyOptions options);
/// The same below `prefix` of a group (its middleware runs first).
ReverseProxy reverse_proxy(Group& group, std::string_view prefix, ReverseProxyOptions options);

namespace proxy {

/// One header field of a request going upstream.
using Field = std::pair<std::string, std::string>;

/// What forwarding headers say of the client (see request_fields).
struct ClientInfo {
    /// The peer's address (empty for a Unix socket).
    std::string_view ip;
    /// "http" or "https": how the client reached us.
    std::string_view scheme;
    /// The Host the client asked for.
    std::string_view host;
    /// The client's own X-Forwarded-* and Forwarded fields are believed (a trusted proxy's).
    bool trusted = false;
};

/// The fields to send upstream for a request with `fields` (as received, HTTP/1.1 or
/// HTTP/2): hop-by-hop fields and those Connection names removed, Host, Content-Length and
/// Expect left to the client, forwarding fields and Via added per `o`, then
/// remove_request_headers and set_request_headers applied. `version` is the request's
/// (11, 10, 20). Pure: the fuzz target drives it.
std::vector<Field> request_fields(const std::vector<Header>& fields, const ClientInfo& client,
                                  int version, const ReverseProxyOptions& o);
/// True when `name` is a hop-by-hop field (RFC 9110 7.6.1: Connection, Keep-Alive,
/// Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade) or a proxy credential
/// (Proxy-Authorization, Proxy-Authenticate).
bool hop_by_hop(std::string_view name) noexcept;
/// True when the Connection field values `connection` (every Connection field) name `name`.
bool named_by_connection(const std::vector<std::string_view>& connection,
                         std::string_view name) noexcept;

}  // namespace proxy

}  // namespace vela
