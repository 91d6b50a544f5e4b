#pragma once
// vela::http::Client: outgoing HTTP requests from coroutines on vela's loops.
//
//     vela::http::Client http;                                   // once, e.g. beside the App
//     ...                                                        // in a handler:
//     auto r = co_await http.get("https://api.example.com/items/1");
//     if (r.status() == 200) Item item = r.json<Item>();
//     auto created = co_await http.post_json("http://svc:8080/items", Item{.name = "pen"});
//
// Threads and loops. One Client serves every loop of a process. Each loop that sends a
// request through it gets its own connection pools, one per origin (scheme, host, port),
// made on that loop and used only by it: a request takes no lock beyond finding its loop's
// pools. All I/O runs on the loop (non-blocking connect, TLS as a transform, the loop's
// buffers and timing wheel); only name resolution runs off the loop (c-ares on the blocking
// pool: the hosts file, then DNS), and its answers are cached for their records' TTL.
//
// Connections. A pool keeps idle connections alive for reuse (keep-alive) up to
// idle_timeout, opens at most max_connections_per_origin at once (more requests wait for
// one, within their timeout), and notices idle connections the server closed. A request
// that finds its reused connection dead before any byte of the response arrived is sent
// again once on a new connection when its method is idempotent (RFC 9110 9.2.2). A
// connection is returned to its pool only when its response was read to the end; anything
// else (an error, a timeout, a body left unread, an abandoned request) closes it, so a pool
// never hands out a connection with a half-read response on it. HTTP/2 (ALPN h2 over TLS,
// ClientOptions::h2c over TCP) shares one connection per origin and loop between concurrent
// requests, one stream each; a request that ends early resets only its stream.
//
// Errors are typed (see ClientError): the connection could not be made, TLS failed (with
// the reason: expired, wrong host, unknown CA, self-signed...), a timeout (which phase), the
// server broke the protocol, or an answer exceeded a limit. An HTTP error status is not an
// exception: check status().
//
// Cancellation: destroying the coroutine that awaits a request (a handler abandoned at
// shutdown, a when_all sibling's failure, a timeout of the caller's own) cancels the request:
// its connection is closed, never reused half-read.
//
// Lifetime: the Client must outlive every request made through it; destroy it after the
// loops that used it stopped (idle connections are then closed), or on a loop once no
// request is in flight.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/client/url.hpp"
#include "vela/http/response_parser.hpp"
#include "vela/json/codec.hpp"
#include "vela/json/value.hpp"
#include "vela/net/transport.hpp"
#include "vela/tls/client_context.hpp"

namespace vela::http {

/// The kinds of failure a request can end with.
enum class ErrorKind : std::uint8_t {
    connect,    ///< name resolution or the TCP connect failed
    tls,        ///< the TLS handshake failed (see TlsHandshakeError::failure())
    timeout,    ///< a timeout ran out (see TimeoutError::phase())
    protocol,   ///< the server's answer broke HTTP (malformed, conflicting framing, cut short)
    too_large,  ///< the response head or body exceeded a limit
};

/// Base of the client's errors: what() is one line naming the URL and what went wrong.
class ClientError : public std::runtime_error {
  public:
    /// An error of `kind` with the one-line message `what`.
    ClientError(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
    /// Which kind of failure this is.
    ErrorKind kind() const noexcept { return kind_; }

  private:
    ErrorKind kind_;
};

/// The connection could not be made (no such host, refused, unreachable).
class ConnectError : public ClientError {
  public:
    /// A connect error with the message `what`.
    explicit ConnectError(const std::string& what) : ClientError(ErrorKind::connect, what) {}
};

/// The TLS handshake failed; failure() says why.
class TlsHandshakeError : public ClientError {
  public:
    /// A handshake failure of category `f` with the message `what`.
    TlsHandshakeError(tls::Failure f, const std::string& what)
        : ClientError(ErrorKind::tls, what), failure_(f) {}
    /// Why: expired, not yet valid, wrong host, unknown CA, self-signed, protocol, other.
    tls::Failure failure() const noexcept { return failure_; }

  private:
    tls::Failure failure_;
};

/// A timeout ran out.
class TimeoutError : public ClientError {
  public:
    /// Which timeout.
    enum class Phase : std::uint8_t { connect, tls, head, request, pool };
    /// A timeout of `p` with the message `what`.
    TimeoutError(Phase p, const std::string& what)
        : ClientError(ErrorKind::timeout, what), phase_(p) {}
    /// Which timeout ran out.
    Phase phase() const noexcept { return phase_; }

  private:
    Phase phase_;
};

/// The server's answer broke HTTP.
class ProtocolError : public ClientError {
  public:
    /// A protocol error with the message `what`.
    explicit ProtocolError(const std::string& what) : ClientError(ErrorKind::protocol, what) {}
};

/// The response head or body was larger than the client's limits.
class TooLargeError : public ClientError {
  public:
    /// A too-large error with the message `what`.
    explicit TooLargeError(const std::string& what) : ClientError(ErrorKind::too_large, what) {}
};

/// Settings of a Client.
struct ClientOptions {
    /// How long a TCP connect may take (each address tried shares it).
    std::chrono::milliseconds connect_timeout{10'000};
    /// How long the TLS handshake may take.
    std::chrono::milliseconds tls_timeout{10'000};
    /// How long after the request was sent the response head may take.
    std::chrono::milliseconds head_timeout{30'000};
    /// The whole request, from the first connect to the last byte of a buffered body
    /// (0: no limit). A streamed body's reads each get head_timeout.
    std::chrono::milliseconds request_timeout{60'000};
    /// An idle pooled connection is closed after this long.
    std::chrono::milliseconds idle_timeout{60'000};
    /// Connections open at once per origin and loop; more requests wait for one.
    std::size_t max_connections_per_origin = 64;
    /// Idle connections kept per origin and loop (the rest are closed when released).
    std::size_t max_idle_per_origin = 64;
    /// Limits of a response head.
    ResponseLimits head_limits{};
    /// The largest body a buffered request reads (after decompression).
    std::uint64_t max_body = 64ull << 20;
    /// Follow 301, 302, 303, 307 and 308 (RFC 9110 15.4), at most max_redirects times.
    bool follow_redirects = true;
    /// How many redirects one request follows before it fails.
    int max_redirects = 10;
    /// Send an idempotent request again after a connect failure, a dead connection or a
    /// reset before any response byte, this many times, waiting retry_backoff (doubling)
    /// between tries.
    int retries = 2;
    /// The first wait before a retry.
    std::chrono::milliseconds retry_backoff{50};
    /// Offer gzip, br and zstd (Accept-Encoding) and decode the body (bounded by max_body)
    /// when the request sets no Accept-Encoding of its own.
    bool decompress = true;
    /// The longest resolved addresses are reused: a DNS answer is kept for its records' TTL
    /// (the smallest of them; 0: not kept) up to this, a hosts-file name this long.
    std::chrono::seconds dns_ttl{60};
    /// The name servers to ask ("10.0.0.2", "127.0.0.1:5353", "[::1]:53"), in order, instead
    /// of /etc/resolv.conf's; the hosts file is read first either way. A lookup takes at most
    /// connect_timeout.
    std::vector<std::string> dns_servers;
    /// TLS: trust store, verification, client certificate, resumption.
    TlsClientOptions tls{};
    /// An HTTP proxy for every request ("http://[user:password@]host:port"): https:// goes
    /// through a CONNECT tunnel, http:// is sent to the proxy in absolute form. Empty: none,
    /// or the environment's when proxy_from_env.
    std::string proxy;
    /// Hosts reached directly: comma-separated names (a name also covers its subdomains; a
    /// leading dot is ignored), IP addresses, or "*" for all (the NO_PROXY convention).
    std::string no_proxy;
    /// With `proxy` empty, use http_proxy (lower case only, as curl does: HTTP_PROXY can be
    /// set by a CGI request's Proxy header) for http://, HTTPS_PROXY or https_proxy for
    /// https://, and NO_PROXY or no_proxy. Loopback hosts never go through a proxy taken
    /// from the environment.
    bool proxy_from_env = true;
    /// Keep the cookies responses set (RFC 6265: Domain, Path, Secure, Expires, Max-Age) and
    /// send them with later requests that do not set Cookie themselves; shared by every loop.
    bool cookies = false;
    /// The User-Agent sent when a request has none (empty: none).
    std::string user_agent = "vela";
    /// HTTP/2 over TLS: offer ALPN "h2" before "http/1.1" and speak HTTP/2 when the server
    /// picks it (one multiplexed connection per origin and loop; see docs/client.md).
    bool http2 = true;
    /// HTTP/2 over cleartext with prior knowledge (RFC 9113 3.3) for every http:// and
    /// http+unix:// origin reached directly (not through a proxy): for servers known to
    /// speak h2c; one that does not fails the request with a ProtocolError.
    bool h2c = false;
};

/// One header field of a request.
using Header = std::pair<std::string, std::string>;

/// A request to send (see Client::request()).
struct ClientRequest {
    /// The method (any token; "GET" by default).
    std::string method = "GET";
    /// The absolute URL (http, https, http+unix).
    std::string url;
    /// Header fields to send, in order. Host, Content-Length and Transfer-Encoding are the
    /// client's; Connection, Keep-Alive, TE, Upgrade and Proxy-Connection are refused
    /// (std::invalid_argument), as are CR, LF and NUL anywhere.
    std::vector<Header> headers{};
    /// The body (sent with Content-Length).
    std::string body{};
    /// A streamed body instead of `body`: called for each piece until it returns nullopt;
    /// sent chunked, or with Content-Length when content_length is set.
    std::function<Task<std::optional<std::string>>()> body_source{};
    /// The length of the streamed body, when known.
    std::optional<std::uint64_t> content_length{};
    /// Return once the head is in; read the body with res.body().read().
    bool stream = false;
    /// This request's whole-request timeout (0: the client's request_timeout).
    std::chrono::milliseconds timeout{0};
    /// Follow redirects for this request (nullopt: ClientOptions::follow_redirects).
    std::optional<bool> follow_redirects{};
    /// Tell the server that trailer fields are welcome ("TE: trailers"; gRPC servers ask for
    /// it). Trailers that come are kept either way.
    bool accept_trailers = false;
};

namespace detail {
class Exchange;
}

/// A response body read as it arrives.
class ResponseBody {
  public:
    /// No body.
    ResponseBody() noexcept;
    /// Closes the connection when the body was not read to the end.
    ~ResponseBody();
    /// Move-only.
    ResponseBody(ResponseBody&&) noexcept;
    /// Move-only.
    ResponseBody& operator=(ResponseBody&&) noexcept;

    /// The next piece of the body, decoded (chunked framing and content coding removed);
    /// nullopt at its end. The view stays valid until the next call. Reading is what lets the
    /// server send more (back-pressure). Throws ClientError.
    Task<std::optional<std::string_view>> read();
    /// The rest of the body as one string; TooLargeError past `limit` bytes.
    Task<std::string> read_all(std::uint64_t limit = 64ull << 20);
    /// True once the end of the body was read (or there was none).
    bool done() const noexcept;
    /// The trailer fields that followed the body (names as sent), once done(); they are
    /// not checked against the fields trailers may not carry (RFC 9110 6.5.1).
    const std::vector<Header>& trailers() const noexcept;

  private:
    friend class Client;
    explicit ResponseBody(std::unique_ptr<detail::Exchange> x) noexcept;
    std::unique_ptr<detail::Exchange> x_;  // (which keeps the trailers, when any came)
};

/// A response: status, header fields and the body.
class ClientResponse {
  public:
    /// The status code.
    int status() const noexcept { return head_.status(); }
    /// The reason phrase.
    std::string_view reason() const noexcept { return head_.reason(); }
    /// True for a 2xx status.
    bool ok() const noexcept { return status() >= 200 && status() < 300; }
    /// The first header field named `name` (case-insensitive); empty when absent.
    std::string_view header(std::string_view name) const noexcept { return head_.header(name); }
    /// Every header field named `name`, in order.
    std::vector<std::string_view> header_values(std::string_view name) const {
        return head_.header_values(name);
    }
    /// True when a header field named `name` is present.
    bool has_header(std::string_view name) const noexcept { return head_.has_header(name); }
    /// The whole head.
    const ResponseHead& head() const noexcept { return head_; }
    /// The body of a buffered request (decoded); empty for a streamed one.
    const std::string& text() const noexcept { return text_; }
    /// The body to read as it arrives (a streamed request), or the rest of it.
    ResponseBody& body() noexcept { return body_; }
    /// The trailer fields that followed the body (a streamed one: once it was read to its
    /// end), in order, names as sent.
    const std::vector<Header>& trailers() const noexcept { return body_.trailers(); }
    /// The first trailer field named `name` (case-insensitive); empty when absent.
    std::string_view trailer(std::string_view name) const noexcept;
    /// The body parsed as JSON into a T (json::ParseError when it does not fit).
    template <class T>
    T json() const {
        return json::parse<T>(text_);
    }
    /// The body parsed as a JSON value.
    json::Value json() const { return json::parse<json::Value>(text_); }
    /// The URL that answered (the last one after redirects).
    const std::string& url() const noexcept { return url_; }
    /// "HTTP/1.1", "HTTP/1.0" or "HTTP/2".
    std::string_view protocol() const noexcept { return protocol_; }
    /// How many redirects were followed.
    int redirects() const noexcept { return redirects_; }

  private:
    friend class Client;
    ResponseHead head_;
    std::string text_;
    ResponseBody body_;
    std::string url_;
    std::string_view protocol_ = "HTTP/1.1";
    int redirects_ = 0;
};

/// Counters of one Client over every loop (for /metrics and tests).
struct ClientStats {
    /// Requests sent (each try and each redirect counts).
    std::uint64_t requests = 0;
    /// Requests that ended with an error.
    std::uint64_t failures = 0;
    /// Connections opened.
    std::uint64_t connections_opened = 0;
    /// Requests sent on a reused connection.
    std::uint64_t connections_reused = 0;
    /// Requests sent again (dead reused connection, retry).
    std::uint64_t retries = 0;
    /// TLS handshakes that resumed an earlier session (an abbreviated handshake).
    std::uint64_t tls_resumed = 0;
    /// Connections open now (busy and idle).
    std::uint64_t open = 0;
    /// Idle connections in the pools now.
    std::uint64_t idle = 0;
    /// Host names looked up (the hosts file or DNS; answers from the cache do not count).
    std::uint64_t dns_lookups = 0;
};

/// The answer to Client::upgrade(): its head and, on 101, the connection it switched.
struct Upgraded {
    /// The server's answer (a 101, or whatever it sent instead; its body is not read).
    ResponseHead head;
    /// On 101: the connection (its TLS transform, and the bytes that followed the head in
    /// its input), detached for the next protocol's driver to attach; null otherwise.
    std::unique_ptr<net::Transport> transport;
};

/// An HTTP client with per-loop connection pools (see above).
class Client {
  public:
    /// A client with `options`. Throws TlsError when the TLS settings cannot be loaded.
    explicit Client(ClientOptions options = {});
    /// Closes the idle connections (see Lifetime above).
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    /// Sends `req` and returns the response (its body read unless req.stream). Throws
    /// ClientError, or std::invalid_argument for a malformed URL or header.
    Task<ClientResponse> request(ClientRequest req);
    /// Asks `url` (http, https, ws, wss) to switch protocols: a GET with `headers` (here they
    /// may carry Connection and Upgrade) on a new connection (dialled, proxied and TLS as for
    /// requests, ALPN http/1.1), its head within `timeout` (0: head_timeout). What
    /// vela::ws::connect runs its handshake with. Throws ClientError.
    Task<Upgraded> upgrade(std::string url, std::vector<Header> headers,
                           std::chrono::milliseconds timeout = {});
    /// GET `url`.
    Task<ClientResponse> get(std::string url, std::vector<Header> headers = {});
    /// HEAD `url`.
    Task<ClientResponse> head(std::string url, std::vector<Header> headers = {});
    /// DELETE `url`.
    Task<ClientResponse> del(std::string url, std::vector<Header> headers = {});
    /// POST `body` to `url` with Content-Type `content_type`.
    Task<ClientResponse> post(std::string url, std::string body,
                              std::string content_type = "application/octet-stream");
    /// PUT `body` to `url` with Content-Type `content_type`.
    Task<ClientResponse> put(std::string url, std::string body,
                             std::string content_type = "application/octet-stream");
    /// PATCH `body` to `url` with Content-Type `content_type`.
    Task<ClientResponse> patch(std::string url, std::string body,
                               std::string content_type = "application/octet-stream");

    /// GET `url` and parse its JSON body as a T. A status other than 2xx throws
    /// std::runtime_error naming it (so a 404's error body is never read as a T).
    template <class T>
    Task<T> get_json(std::string url) {
        ClientResponse r = co_await get(std::move(url), json_accept());
        check_json_status(r);
        co_return r.json<T>();
    }
    /// POST `value` as JSON to `url`.
    template <class T>
    Task<ClientResponse> post_json(std::string url, const T& value) {
        return post(std::move(url), json::write(value), "application/json");
    }
    /// PUT `value` as JSON to `url`.
    template <class T>
    Task<ClientResponse> put_json(std::string url, const T& value) {
        return put(std::move(url), json::write(value), "application/json");
    }
    /// PATCH `value` as JSON to `url`.
    template <class T>
    Task<ClientResponse> patch_json(std::string url, const T& value) {
        return patch(std::move(url), json::write(value), "application/json");
    }

    /// The options this client was made with.
    const ClientOptions& options() const noexcept;
    /// The Cookie value the jar would send to `url` now (empty without ClientOptions::cookies).
    std::string cookies_for(std::string_view url) const;
    /// Empties the cookie jar.
    void clear_cookies();
    /// Counters summed over every loop (open and idle are read without stopping the loops,
    /// so they are approximate while requests run).
    ClientStats stats() const;

    struct Impl;

  private:
    static std::vector<Header> json_accept();
    static void check_json_status(const ClientResponse& r);
    static bool idempotent_or_fresh(const ClientRequest& req, bool stale_retried);
    Task<void> send_once(ClientRequest& req, const Url& url, int attempt, ClientResponse& res);
    std::unique_ptr<Impl> impl_;
};

}  // namespace vela::http
