// vela::http::Client: connection pools, dialling, redirects and retries around Exchange.

#include "vela/client/client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "client/exchange.hpp"
#include "client/h2_exchange.hpp"
#include "client/pool.hpp"
#include "vela/base/ascii.hpp"
#include "vela/base/base64.hpp"
#include "vela/http/char_class.hpp"

namespace vela::http {

namespace detail {

namespace {

std::uint64_t deadline_after(Loop& loop, std::chrono::milliseconds d) {
    return d.count() > 0 ? loop.now_ms() + static_cast<std::uint64_t>(d.count()) : 0;
}

// Waits for a non-blocking connect to finish, or for its share of the connect timeout. The
// handle lives on the heap and is freed after the loop's current batch of events: a request
// cancelled while its connect is pending must not leave the backend a freed handle to look at.
class ConnectWait final : public IoSink {
  public:
    ConnectWait(Loop& loop, int fd, std::uint64_t ms) : loop_(loop), h_(new IoHandle), ms_(ms) {
        h_->fd = fd;
        h_->sink = this;
        h_->kind = IoHandle::await_write;
    }
    ~ConnectWait() override {
        if (h_->registered) loop_.io().remove(*h_);
        if (timer_) loop_.cancel(timer_);
        if (h_->fd >= 0) ::close(h_->fd);
        loop_.defer([h = h_] { delete h; });
    }
    ConnectWait(const ConnectWait&) = delete;
    ConnectWait& operator=(const ConnectWait&) = delete;

    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> co) {
        co_ = co;
        loop_.io().add(*h_);
        timer_ = loop_.call_after(std::chrono::milliseconds(ms_), [this] {
            timer_ = 0;
            timed_out = true;
            resume();
        });
    }
    void await_resume() {
        if (h_->registered) loop_.io().remove(*h_);
        if (timer_) loop_.cancel(timer_);
        timer_ = 0;
    }
    void on_ready() override { resume(); }
    // The connect's result (0 or an errno).
    int result() const {
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(h_->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
        return err;
    }
    int release_fd() noexcept { return std::exchange(h_->fd, -1); }

    bool timed_out = false;

  private:
    void resume() {
        if (co_) std::exchange(co_, {}).resume();
    }
    Loop& loop_;
    IoHandle* h_;
    std::uint64_t ms_;
    std::uint64_t timer_ = 0;
    std::coroutine_handle<> co_{};
};

// Waits for a connection slot of a pool that has max_connections_per_origin open.
class SlotWait {
  public:
    SlotWait(OriginPool& pool, std::uint64_t ms) : pool_(pool), ms_(ms) {}
    ~SlotWait() {
        pool_.dequeue(w_);
        if (timer_) pool_.owner.loop.cancel(timer_);
    }
    SlotWait(const SlotWait&) = delete;
    SlotWait& operator=(const SlotWait&) = delete;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> co) {
        w_.h = co;
        pool_.enqueue(w_);
        if (ms_) {
            timer_ = pool_.owner.loop.call_after(std::chrono::milliseconds(ms_), [this] {
                timer_ = 0;
                timed_out = true;
                pool_.dequeue(w_);
                w_.h.resume();
            });
        }
    }
    void await_resume() {
        if (timer_) pool_.owner.loop.cancel(timer_);
        timer_ = 0;
    }
    bool timed_out = false;

  private:
    OriginPool& pool_;
    std::uint64_t ms_;
    std::uint64_t timer_ = 0;
    SlotWaiter w_;
};

// A connection made but not handed to its pool's accounting (a failed handshake).
void destroy_unpooled(Connection* c) {
    c->pool = nullptr;
    c->close();
    Loop& loop = c->t.loop();
    loop.defer([c] { delete c; });
}

std::string address_text(const Address& a) {
    char buf[128] = "?";
    if (a.sa.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a.sa)->sin_addr, buf,
                    sizeof buf);
    else if (a.sa.ss_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&a.sa)->sin6_addr, buf,
                    sizeof buf);
    else
        return "the Unix socket";
    return buf;
}

// A connection made but not yet counted by its pool: closed on the way out of dial()
// unless it was handed over.
struct Unpooled {
    Connection* c = nullptr;
    ~Unpooled() {
        if (c) destroy_unpooled(c);
    }
    Connection* take() noexcept { return std::exchange(c, nullptr); }
};

// Opens a CONNECT tunnel through the proxy the connection is dialled to (RFC 9110 9.3.6).
Task<void> open_tunnel(OriginPool& pool, Connection* c, const std::string& where) {
    const Url& o = pool.origin;
    std::string authority = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
    authority += ':';
    authority += std::to_string(o.port);
    std::string req = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n";
    if (!pool.proxy_auth.empty()) req += "Proxy-Authorization: " + pool.proxy_auth + "\r\n";
    req += "\r\n";
    H1Exchange x(pool, c, false, "proxy " + pool.dial_to.authority());
    x.hold = true;
    Loop& loop = pool.owner.loop;
    const std::uint64_t deadline = deadline_after(loop, pool.owner.impl.options.connect_timeout);
    ResponseHead head;
    try {
        co_await x.send(std::move(req), nullptr, false, deadline);
        co_await x.read_head("CONNECT", head, deadline, 0);
    } catch (const ClientError& e) {
        throw ConnectError("cannot open a tunnel to " + where + ": " + e.what());
    }
    if (head.status() < 200 || head.status() > 299)
        throw ConnectError("the proxy " + pool.dial_to.authority() + " refused the tunnel to " +
                           where + ": " + std::to_string(head.status()) + " " +
                           std::string(head.reason()));
    if (!c->t.in.empty())
        throw ConnectError("the proxy " + pool.dial_to.authority() +
                           " sent bytes after its answer to CONNECT");
}

// Makes a new connection to the pool's origin: resolves, connects (trying each address in
// turn within the connect timeout), opens a proxy tunnel when there is one, and runs the TLS
// handshake for https.
Task<Connection*> dial(OriginPool& pool) {
    Client::Impl& impl = pool.owner.impl;
    Loop& loop = pool.owner.loop;
    const Url& origin = pool.origin;
    const Url& to = pool.dial_to;
    const ClientOptions& o = impl.options;
    const std::vector<Address> addrs = co_await impl.resolver.resolve(to);
    const std::uint64_t connect_deadline = deadline_after(loop, o.connect_timeout);
    std::string failures;
    int fd = -1;
    for (std::size_t i = 0; i < addrs.size() && fd < 0; ++i) {
        const Address& a = addrs[i];
        const int s = ::socket(a.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s < 0) {
            failures += "; cannot create a socket: " + std::string(std::strerror(errno));
            continue;
        }
        if (a.sa.ss_family != AF_UNIX) {
            int one = 1;
            ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        if (::connect(s, reinterpret_cast<const sockaddr*>(&a.sa), a.len) == 0) {
            fd = s;
            break;
        }
        if (errno != EINPROGRESS) {
            failures += "; " + address_text(a) + ": " + std::strerror(errno);
            ::close(s);
            continue;
        }
        const std::uint64_t now = loop.now_ms();
        const std::uint64_t left = connect_deadline > now ? connect_deadline - now : 1;
        // Each address left gets an equal share of the time left (a dead IPv6 route must not
        // use up the time an IPv4 address would have answered in).
        ConnectWait w(loop, s, std::max<std::uint64_t>(left / (addrs.size() - i), 1));
        co_await w;
        if (w.timed_out) {
            failures += "; " + address_text(a) + ": timed out";
            continue;
        }
        if (const int err = w.result()) {
            failures += "; " + address_text(a) + ": " + std::strerror(err);
            continue;
        }
        fd = w.release_fd();
    }
    const std::string where = origin.scheme == Scheme::http_unix
                                  ? origin.host
                                  : origin.host + ":" + std::to_string(origin.port);
    const std::string via = &to == &origin || pool.absolute ? "" : " (through the proxy)";
    if (fd < 0) {
        impl.resolver.forget(to.host);
        const std::string target =
            to.scheme == Scheme::http_unix ? to.host : to.host + ":" + std::to_string(to.port);
        if (failures.find("timed out") != std::string::npos &&
            failures.find(": ", failures.find("timed out") + 1) == std::string::npos)
            throw TimeoutError(TimeoutError::Phase::connect,
                               "cannot connect to " + target + " within " +
                                   std::to_string(o.connect_timeout.count()) +
                                   " ms (connect_timeout)" + failures);
        throw ConnectError("cannot connect to " + target + failures);
    }
    Unpooled guard{new Connection(pool, loop, fd, nullptr)};
    Connection* c = guard.c;
    c->t.add();
    c->read_on();
    if (pool.tunnel) co_await open_tunnel(pool, c, where);
    if (!origin.secure() || pool.absolute) co_return guard.take();
    static constexpr std::string_view kAlpn[] = {"http/1.1"};
    static constexpr std::string_view kAlpnH2[] = {"h2", "http/1.1"};
    SSL* ssl = pool.h2_tls ? impl.tls().new_session(origin.host, origin.port, kAlpnH2)
                           : impl.tls().new_session(origin.host, origin.port, kAlpn);
    c->start_tls(std::make_unique<tls::Stream>(ssl, loop.buffers(), loop.io()));
    c->set_deadline(deadline_after(loop, o.tls_timeout));
    c->t.tls->start();
    c->read_on();
    while (!c->handshake_done && !c->error && !c->eof && !c->timed_out) co_await c->wait();
    if (c->handshake_done) {
        c->set_deadline(0);
        if (tls::session_resumed(c->t.tls->ssl()))
            impl.resumed.fetch_add(1, std::memory_order_relaxed);
        co_return guard.take();
    }
    auto [failure, why] = tls::handshake_failure(c->t.tls->ssl(), c->t.tls->last_error());
    if (!c->error && failure == tls::Failure::none) why = "the server closed the connection";
    if (c->timed_out)
        throw TimeoutError(TimeoutError::Phase::tls,
                           "TLS handshake with " + where + via + " timed out (tls_timeout)");
    throw TlsHandshakeError(failure, "TLS handshake with " + where + via + " failed: " + why);
}

// A connection for one request: an idle one (unless `fresh`), a new one while the pool has
// room, else the first to come free.
struct Lease {
    Connection* c;
    bool reused;
};

// Starts HTTP/2 on a connection just dialled when it was negotiated (ALPN h2, or h2c by
// prior knowledge); true when it was.
bool start_h2(OriginPool& pool, Connection* c) {
    const bool h2 = pool.h2c || (pool.h2_tls && c->alpn == "h2");
    if (!h2) {
        if (pool.h2_tls) pool.h1_only = true;  // this server does not speak h2
        return false;
    }
    c->h2 = std::make_unique<H2Conn>(*c, pool.owner.impl.options);
    c->h2->start();
    pool.share(c);
    return true;
}

Task<Lease> acquire(OriginPool& pool, bool fresh, std::uint64_t deadline) {
    Client::Impl& impl = pool.owner.impl;
    const bool maybe_h2 = (pool.h2_tls && !pool.h1_only) || pool.h2c;
    for (;;) {
        if (!fresh) {
            if (Connection* c = pool.take_shared()) co_return Lease{c, true};
        }
        // A connection being opened may be HTTP/2, with room for this request too; one just
        // opened tells its concurrency limit with its first SETTINGS.
        const bool await_dial = maybe_h2 && (pool.dialing > 0 || pool.h2_warming());
        if (!await_dial) {
            if (!fresh) {
                if (Connection* c = pool.take_idle()) co_return Lease{c, true};
            }
            if (pool.open < impl.options.max_connections_per_origin) {
                ++pool.open;
                ++pool.dialing;
                impl.open.fetch_add(1, std::memory_order_relaxed);
                Connection* c = nullptr;
                try {
                    c = co_await dial(pool);
                } catch (...) {
                    --pool.open;
                    --pool.dialing;
                    impl.open.fetch_sub(1, std::memory_order_relaxed);
                    if (maybe_h2)
                        pool.wake_all();
                    else
                        pool.wake_one();
                    throw;
                }
                --pool.dialing;
                impl.opened.fetch_add(1, std::memory_order_relaxed);
                if (start_h2(pool, c) || maybe_h2) pool.wake_all();
                co_return Lease{c, false};
            }
        }
        const std::uint64_t now = pool.owner.loop.now_ms();
        SlotWait w(pool, deadline ? (deadline > now ? deadline - now : 1) : 0);
        co_await w;
        if (w.timed_out)
            throw TimeoutError(TimeoutError::Phase::pool,
                               pool.origin.origin() +
                                   ": no connection came free in time (all "
                                   "max_connections_per_origin connections busy)");
        fresh = false;
    }
}

bool idempotent(std::string_view m) noexcept {
    return m == "GET" || m == "HEAD" || m == "PUT" || m == "DELETE" || m == "OPTIONS" ||
           m == "TRACE";
}

bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (const char c : s)
        if (!is_tchar(static_cast<unsigned char>(c))) return false;
    return true;
}

// Header fields a request may not set: the client writes the framing and owns the connection.
bool refused_field(std::string_view name) noexcept {
    switch (name.size()) {  // most names are none of these lengths
        case 2:
            return ascii::iequals(name, "te");
        case 7:
            return ascii::iequals(name, "upgrade");
        case 10:
            return ascii::iequals(name, "connection") || ascii::iequals(name, "keep-alive");
        case 14:
            return ascii::iequals(name, "content-length");
        case 16:
            return ascii::iequals(name, "proxy-connection");
        case 17:
            return ascii::iequals(name, "transfer-encoding");
        default:
            return false;
    }
}

// True when `v` holds CR, LF or NUL (the bytes that would end or cut the field).
bool breaks_field(std::string_view v) noexcept {
    for (const char c : v)
        if (static_cast<unsigned char>(c) <= '\r' && (c == '\r' || c == '\n' || c == '\0'))
            return true;
    return false;
}

void check_field(std::string_view name, std::string_view value) {
    if (!is_token(name))
        throw std::invalid_argument("bad header name \"" + std::string(name) + "\"");
    // Eight bytes at a time for the usual value; only one with a control byte is looked at
    // byte by byte (other controls than CR, LF and NUL pass, as they always did).
    if (!is_field_value(value.data(), value.size()) && breaks_field(value))
        throw std::invalid_argument("CR, LF or NUL in the value of header " + std::string(name));
    if (refused_field(name))
        throw std::invalid_argument("header " + std::string(name) +
                                    " is set by the client, not by a request");
}

bool has_field(const std::vector<Header>& h, std::string_view name) noexcept {
    for (const auto& [n, v] : h)
        if (ascii::iequals(n, name)) return true;
    return false;
}

void remove_field(std::vector<Header>& h, std::string_view name) {
    std::erase_if(h, [&](const Header& f) { return ascii::iequals(f.first, name); });
}

// The request head (and a body in memory) as HTTP/1.1 bytes (RFC 9112 3).
std::string serialize(const ClientRequest& req, const Url& url, const ClientOptions& o,
                      const OriginPool& pool, bool offer_codings, bool chunked,
                      const std::string& jar_cookies) {
    // One pass over the fields: their size, and which of ours they replace.
    std::size_t fields_size = 0;
    bool has_host = false, has_agent = false, has_authorization = false;
    for (const auto& [n, v] : req.headers) {
        fields_size += n.size() + v.size() + 4;
        switch (n.size()) {
            case 4:
                has_host = has_host || ascii::iequals(n, "host");
                break;
            case 10:
                has_agent = has_agent || ascii::iequals(n, "user-agent");
                break;
            case 13:
                has_authorization = has_authorization || ascii::iequals(n, "authorization");
                break;
        }
    }
    std::string out;
    out.reserve(256 + url.target.size() + fields_size + req.body.size());
    out += req.method;
    out += ' ';
    if (pool.absolute)
        out += url.to_string();  // RFC 9112 3.2.2: absolute-form to a proxy
    else
        out += url.target;
    out += " HTTP/1.1\r\n";
    if (pool.absolute && !pool.proxy_auth.empty()) {
        out += "Proxy-Authorization: ";
        out += pool.proxy_auth;
        out += "\r\n";
    }
    if (!has_host) {
        out += "Host: ";
        out += url.authority();
        out += "\r\n";
    }
    if (!o.user_agent.empty() && !has_agent) {
        out += "User-Agent: ";
        out += o.user_agent;
        out += "\r\n";
    }
    if (offer_codings) out += "Accept-Encoding: gzip, br, zstd\r\n";
    if (req.accept_trailers) out += "TE: trailers\r\nConnection: TE\r\n";  // RFC 9110 10.1.4
    if (!jar_cookies.empty()) {
        out += "Cookie: ";
        out += jar_cookies;
        out += "\r\n";
    }
    if (url.has_userinfo && !has_authorization) {
        out += "Authorization: Basic ";
        out += base64_encode(url.user + ":" + url.password);
        out += "\r\n";
    }
    for (const auto& [n, v] : req.headers) {
        out.append(n);
        out.append(": ", 2);
        out.append(v);
        out.append("\r\n", 2);
    }
    if (req.body_source) {
        if (chunked) {
            out += "Transfer-Encoding: chunked\r\n";
        } else {
            out += "Content-Length: ";
            out += std::to_string(*req.content_length);
            out += "\r\n";
        }
    } else if (!req.body.empty() || req.method == "POST" || req.method == "PUT" ||
               req.method == "PATCH") {
        out += "Content-Length: ";
        out += std::to_string(req.body.size());
        out += "\r\n";
    }
    out += "\r\n";
    if (!req.body_source) out += req.body;
    return out;
}

// The request's fields for HTTP/2 (RFC 9113 8.3.1): pseudo-fields first, names in lower
// case, Host as :authority.
std::vector<Header> h2_fields(const ClientRequest& req, const Url& url, const ClientOptions& o,
                              bool offer_codings, const std::string& jar_cookies) {
    std::vector<Header> f;
    f.reserve(8 + req.headers.size());
    f.emplace_back(":method", req.method);
    f.emplace_back(":scheme", url.secure() ? "https" : "http");
    std::string authority = url.authority();
    for (const auto& [n, v] : req.headers)
        if (ascii::iequals(n, "host")) authority = v;
    f.emplace_back(":authority", std::move(authority));
    f.emplace_back(":path", url.target);
    if (!o.user_agent.empty() && !has_field(req.headers, "user-agent"))
        f.emplace_back("user-agent", o.user_agent);
    if (offer_codings) f.emplace_back("accept-encoding", "gzip, br, zstd");
    if (req.accept_trailers) f.emplace_back("te", "trailers");  // the one TE HTTP/2 allows
    if (!jar_cookies.empty()) f.emplace_back("cookie", jar_cookies);
    if (url.has_userinfo && !has_field(req.headers, "authorization"))
        f.emplace_back("authorization", "Basic " + base64_encode(url.user + ":" + url.password));
    for (const auto& [n, v] : req.headers) {
        if (ascii::iequals(n, "host")) continue;
        std::string name = n;
        for (char& ch : name) ch = ascii::lower(ch);
        f.emplace_back(std::move(name), v);
    }
    if (req.body_source) {
        if (req.content_length)
            f.emplace_back("content-length", std::to_string(*req.content_length));
    } else if (!req.body.empty() || req.method == "POST" || req.method == "PUT" ||
               req.method == "PATCH") {
        f.emplace_back("content-length", std::to_string(req.body.size()));
    }
    return f;
}

bool is_redirect(int s) noexcept {
    return s == 301 || s == 302 || s == 303 || s == 307 || s == 308;
}

}  // namespace

}  // namespace detail

// --- ResponseBody ---

ResponseBody::ResponseBody() noexcept = default;
ResponseBody::~ResponseBody() = default;
ResponseBody::ResponseBody(ResponseBody&&) noexcept = default;
ResponseBody& ResponseBody::operator=(ResponseBody&&) noexcept = default;
ResponseBody::ResponseBody(std::unique_ptr<detail::Exchange> x) noexcept : x_(std::move(x)) {}

Task<std::optional<std::string_view>> ResponseBody::read() {
    if (!x_) co_return std::nullopt;
    Loop* loop = Loop::current();
    const std::uint64_t deadline = loop ? loop->now_ms() + x_->read_timeout_ms : 0;
    std::optional<std::string_view> piece = co_await x_->read(deadline);

    co_return piece;
}

Task<std::string> ResponseBody::read_all(std::uint64_t limit) {
    std::string out;
    if (!x_) co_return out;
    Loop* loop = Loop::current();
    const std::uint64_t deadline = loop ? loop->now_ms() + x_->read_timeout_ms : 0;
    co_await x_->read_all(out, limit, deadline);
    co_return out;
}

bool ResponseBody::done() const noexcept { return !x_ || x_->done(); }

const std::vector<Header>& ResponseBody::trailers() const noexcept {
    static const std::vector<Header> none;
    return x_ ? x_->trailers() : none;
}

std::string_view ClientResponse::trailer(std::string_view name) const noexcept {
    for (const auto& [n, v] : body_.trailers())
        if (ascii::iequals(n, name)) return v;
    return {};
}

// --- Client ---

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
    if (!impl_->options.tls.ca_file.empty() || !impl_->options.tls.cert_file.empty())
        impl_->tls();  // a bad TLS file is a startup error, not a first-request one
}

Client::~Client() = default;

const ClientOptions& Client::options() const noexcept { return impl_->options; }

std::string Client::cookies_for(std::string_view url) const {
    return impl_->jar.header_for(Url::parse(url), std::time(nullptr));
}

void Client::clear_cookies() { impl_->jar.clear(); }

ClientStats Client::stats() const {
    ClientStats s;
    s.requests = impl_->requests.load(std::memory_order_relaxed);
    s.failures = impl_->failures.load(std::memory_order_relaxed);
    s.connections_opened = impl_->opened.load(std::memory_order_relaxed);
    s.connections_reused = impl_->reused.load(std::memory_order_relaxed);
    s.retries = impl_->retries.load(std::memory_order_relaxed);
    s.tls_resumed = impl_->resumed.load(std::memory_order_relaxed);
    s.open = static_cast<std::uint64_t>(std::max<std::int64_t>(0, impl_->open.load()));
    s.idle = static_cast<std::uint64_t>(std::max<std::int64_t>(0, impl_->idle.load()));
    s.dns_lookups = impl_->resolver.lookups();
    return s;
}

std::vector<Header> Client::json_accept() { return {{"Accept", "application/json"}}; }

void Client::check_json_status(const ClientResponse& r) {
    if (!r.ok())
        throw std::runtime_error(r.url() + " answered " + std::to_string(r.status()) +
                                 (r.reason().empty() ? "" : " " + std::string(r.reason())) +
                                 " instead of JSON");
}

// Fills `res` (a fresh one) in place: a response is moved as few times as it can be.
Task<void> Client::send_once(ClientRequest& req, const Url& url, int attempt, ClientResponse& res) {
    Impl& impl = *impl_;
    const ClientOptions& o = impl.options;
    detail::LoopPools& lp = impl.here();
    Loop& loop = lp.loop;
    detail::OriginPool& pool = lp.pool_for(url);
    const std::uint64_t deadline =
        detail::deadline_after(loop, req.timeout.count() > 0 ? req.timeout : o.request_timeout);
    const bool offer = o.decompress && !detail::has_field(req.headers, "accept-encoding");
    const bool chunked = req.body_source && !req.content_length;
    const std::int64_t now_s = o.cookies ? std::time(nullptr) : 0;  // (the jar's clock only)
    const std::string jar_cookies = o.cookies && !detail::has_field(req.headers, "cookie")
                                        ? impl.jar.header_for(url, now_s)
                                        : std::string();
    detail::Lease lease = co_await detail::acquire(pool, attempt < 0, deadline);
    impl.requests.fetch_add(1, std::memory_order_relaxed);
    if (lease.reused) impl.reused.fetch_add(1, std::memory_order_relaxed);
    const detail::BodySource* source = req.body_source ? &req.body_source : nullptr;
    std::unique_ptr<detail::Exchange> x;
    if (lease.c->h2) {
        auto h2 =
            std::make_unique<detail::H2Exchange>(pool, lease.c, lease.reused, url.to_string());
        // Named first: g++ 12 mishandles a temporary of a conditional in a co_await.
        std::vector<Header> fields = detail::h2_fields(req, url, o, offer, jar_cookies);
        std::string body;
        if (!source) body = req.body;
        co_await h2->send(std::move(fields), std::move(body), source, deadline);
        x = std::move(h2);
    } else {
        auto h1 =
            std::make_unique<detail::H1Exchange>(pool, lease.c, lease.reused, url.to_string());
        std::string bytes = detail::serialize(req, url, o, pool, offer, chunked, jar_cookies);
        co_await h1->send(std::move(bytes), source, chunked, deadline);
        x = std::move(h1);
    }
    x->read_timeout_ms = static_cast<std::uint64_t>(o.head_timeout.count());
    co_await x->read_head(req.method, res.head_, detail::deadline_after(loop, o.head_timeout),
                          deadline);
    res.protocol_ = x->protocol();
    if (o.cookies)
        for (const std::string_view v : res.head_.header_values("set-cookie"))
            impl.jar.store(url, v, now_s);
    compress::Coding coding = compress::Coding::identity;
    if (offer && res.has_header("content-encoding")) {
        const std::string_view ce = res.header("content-encoding");
        if (res.head_.header_values("content-encoding").size() == 1 &&
            ce.find(',') == std::string_view::npos) {
            if (auto c = compress::parse_coding(ascii::trim_ows(ce))) coding = *c;
        }
    }
    x->decode(coding, o.max_body);
    if (req.stream) {
        res.url_ = x->url();
        res.body_ = ResponseBody(std::move(x));
        co_return;
    }
    co_await x->read_all(res.text_, o.max_body, deadline);
    res.url_ = x->take_url();
    // The exchange (its connection back in the pool) stays with the response only to keep
    // the trailers that came.
    if (x->has_trailers()) [[unlikely]]
        res.body_ = ResponseBody(std::move(x));
}

namespace {

// A connection held past its exchange (an upgrade): discarded unless taken.
struct Held {
    detail::OriginPool& pool;
    detail::Connection* c;
    ~Held() {
        if (c) pool.discard(c);
    }
};

}  // namespace

Task<Upgraded> Client::upgrade(std::string url_text, std::vector<Header> headers,
                               std::chrono::milliseconds timeout) {
    Impl& impl = *impl_;
    const ClientOptions& o = impl.options;
    for (const auto& [n, v] : headers) {
        if (n.empty() || !detail::is_token(n) ||
            v.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
            throw std::invalid_argument("bad header field \"" + n + "\"");
    }
    const Url url = Url::parse(url_text);
    detail::LoopPools& lp = impl.here();
    Loop& loop = lp.loop;
    detail::OriginPool& pool = lp.pool_for(url, true);
    if (pool.absolute)
        throw ConnectError(url.to_string() +
                           ": an upgrade through an HTTP proxy needs a tunnel (wss:// has one)");
    ClientRequest req;
    req.headers = std::move(headers);
    std::string bytes = detail::serialize(req, url, o, pool, false, false, {});
    const std::uint64_t deadline =
        detail::deadline_after(loop, timeout.count() > 0 ? timeout : o.head_timeout);
    detail::Lease lease = co_await detail::acquire(pool, true, deadline);
    impl.requests.fetch_add(1, std::memory_order_relaxed);
    Held held{pool, lease.c};
    Upgraded out;
    {
        detail::H1Exchange x(pool, lease.c, false, url.to_string());
        x.hold = true;  // kept whatever the answer: a 101 hands it over, anything else closes it
        co_await x.send(std::move(bytes), nullptr, false, deadline);
        co_await x.read_head("GET", out.head, deadline, deadline);
    }
    if (out.head.status() == 101) {
        detail::Connection* c = std::exchange(held.c, nullptr);
        c->set_deadline(0);
        c->t.detach();
        out.transport = std::make_unique<net::Transport>(std::move(c->t));
        pool.discard(c);  // the pool forgets it; the object goes, the socket lives on
    }
    co_return out;
}

Task<ClientResponse> Client::request(ClientRequest req) {
    Impl& impl = *impl_;
    const ClientOptions& o = impl.options;
    if (!detail::is_token(req.method))
        throw std::invalid_argument("bad method \"" + req.method + "\"");
    for (const auto& [n, v] : req.headers) detail::check_field(n, v);
    if (req.content_length && !req.body_source)
        throw std::invalid_argument("content_length is for a streamed body (body_source)");
    Url url = Url::parse(req.url);
    if (url.scheme == Scheme::ws || url.scheme == Scheme::wss)
        throw std::invalid_argument("ws:// and wss:// URLs are for vela::ws::connect");
    const bool follow = req.follow_redirects.value_or(o.follow_redirects);
    int redirects = 0;
    for (;;) {
        // Retries: a stale reused connection once at once; a failed connect with backoff.
        int attempt = 0;
        bool stale_retried = false;
        std::optional<ClientResponse> res;
        for (;;) {
            std::exception_ptr error;
            bool again = false;
            bool done = false;
            try {
                co_await send_once(req, url, stale_retried ? -1 : attempt, res.emplace());
                done = true;
            } catch (const detail::Unprocessed&) {
                // Not processed by the server (HTTP/2 GOAWAY, REFUSED_STREAM): safe to send
                // again whatever the method, unless a streamed body was taken already.
                if (stale_retried || req.body_source) {
                    error = std::current_exception();
                } else {
                    stale_retried = true;
                    again = true;
                }
            } catch (const detail::StaleConnection&) {
                if (!idempotent_or_fresh(req, stale_retried)) {
                    error = std::current_exception();
                } else {
                    stale_retried = true;
                    again = true;
                }
            } catch (const ConnectError&) {
                error = std::current_exception();
                again = detail::idempotent(req.method) && attempt < o.retries;
            } catch (...) {
                error = std::current_exception();
            }
            if (done) break;
            res.reset();
            if (!again) {
                impl.failures.fetch_add(1, std::memory_order_relaxed);
                std::rethrow_exception(error);
            }
            impl.retries.fetch_add(1, std::memory_order_relaxed);
            if (error) {
                co_await vela::sleep(o.retry_backoff * (1 << std::min(attempt, 10)));
                ++attempt;
            }
        }
        res->redirects_ = redirects;
        const int status = res->status();
        if (!follow || !detail::is_redirect(status) || !res->has_header("location"))
            co_return std::move(*res);
        Url next;
        try {
            next = url.resolve(res->header("location"));
        } catch (const std::invalid_argument&) {
            co_return std::move(*res);  // a Location we cannot follow: the caller sees the 3xx
        }
        if (next.scheme == Scheme::ws || next.scheme == Scheme::wss) co_return std::move(*res);
        if (redirects >= o.max_redirects)
            throw ProtocolError(url.to_string() + ": more than " + std::to_string(o.max_redirects) +
                                " redirects (max_redirects)");
        // RFC 9110 15.4: 303 turns anything but HEAD into GET; 301 and 302 turn POST into GET
        // (what every user agent does); 307 and 308 keep the method and the body.
        const bool to_get = (status == 303 && req.method != "HEAD") ||
                            ((status == 301 || status == 302) && req.method == "POST");
        if (to_get) {
            req.method = "GET";
            req.body.clear();
            req.body_source = nullptr;
            req.content_length.reset();
            detail::remove_field(req.headers, "content-type");
        } else if (req.body_source) {
            co_return std::move(*res);  // a streamed body cannot be sent a second time
        }
        // Credentials go only to the origin they were given for.
        if (next.origin() != url.origin()) {
            detail::remove_field(req.headers, "authorization");
            detail::remove_field(req.headers, "proxy-authorization");
            detail::remove_field(req.headers, "cookie");
            next.has_userinfo = false;
        } else if (url.has_userinfo && !next.has_userinfo) {
            next.user = url.user;
            next.password = url.password;
            next.has_userinfo = true;
        }
        url = std::move(next);
        ++redirects;
    }
}

bool Client::idempotent_or_fresh(const ClientRequest& req, bool stale_retried) {
    return !stale_retried && !req.body_source && detail::idempotent(req.method);
}

namespace {
ClientRequest make(std::string method, std::string url, std::vector<Header> headers,
                   std::string body = {}, std::string content_type = {}) {
    ClientRequest r;
    r.method = std::move(method);
    r.url = std::move(url);
    r.headers = std::move(headers);
    r.body = std::move(body);
    if (!content_type.empty()) r.headers.emplace_back("Content-Type", std::move(content_type));
    return r;
}
}  // namespace

Task<ClientResponse> Client::get(std::string url, std::vector<Header> headers) {
    return request(make("GET", std::move(url), std::move(headers)));
}

Task<ClientResponse> Client::head(std::string url, std::vector<Header> headers) {
    return request(make("HEAD", std::move(url), std::move(headers)));
}

Task<ClientResponse> Client::del(std::string url, std::vector<Header> headers) {
    return request(make("DELETE", std::move(url), std::move(headers)));
}

Task<ClientResponse> Client::post(std::string url, std::string body, std::string content_type) {
    return request(make("POST", std::move(url), {}, std::move(body), std::move(content_type)));
}

Task<ClientResponse> Client::put(std::string url, std::string body, std::string content_type) {
    return request(make("PUT", std::move(url), {}, std::move(body), std::move(content_type)));
}

Task<ClientResponse> Client::patch(std::string url, std::string body, std::string content_type) {
    return request(make("PATCH", std::move(url), {}, std::move(body), std::move(content_type)));
}

}  // namespace vela::http
