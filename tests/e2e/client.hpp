#pragma once
// A tiny blocking HTTP/1.1 client for the end-to-end tests, plus helpers to start an App.
//
// Everything the tests need to talk to a real vela server over a real socket, and nothing
// more: connect (TCP on loopback, IPv6 loopback or a Unix socket), send raw bytes (all at
// once, or trickled), read exactly one response (status line, headers, and a body framed by
// Content-Length, chunked or the end of the connection), and tell a closed connection from
// a silent one. Every blocking call is bounded: the socket carries SO_RCVTIMEO/SO_SNDTIMEO
// and each read_response() has an overall deadline, so a server that never answers makes a
// test fail, not hang.
//
// Responses are read by tests/support/http_response.hpp, independent of vela's own code.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "support/http_response.hpp"
#include "tls/certs.hpp"
#include "vela/net/socket.hpp"
#include "vela/server/server.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

using test::HttpResponse;
using test::icontains;
using test::iequal;
using test::lower_ascii;
using test::parse_response;
using test::ParseStatus;

inline long long ms_since(SteadyClock::time_point t0) {
    return std::chrono::duration_cast<Ms>(SteadyClock::now() - t0).count();
}

/// Creates a TCP socket to 127.0.0.1:port, optionally with a small receive buffer set before
/// connecting (so the advertised window stays small); -1 on failure.
inline int connect_loopback(std::uint16_t port, int rcvbuf = 0) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
        ::close(fd);
        return -1;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/// A blocking connection to the server under test. Move-only; closes its socket.
class Client {
  public:
    static constexpr Ms kDefaultTimeout{3000};

    Client() = default;
    /// Takes ownership of a connected socket (fd < 0: not connected).
    explicit Client(int fd, Ms timeout = kDefaultTimeout) : fd_(fd), timeout_(timeout) {
        if (fd_ >= 0) set_socket_timeout(SO_SNDTIMEO, timeout_);
    }
    /// Connects to 127.0.0.1:port.
    static Client tcp(std::uint16_t port, Ms timeout = kDefaultTimeout) {
        return Client(connect_loopback(port), timeout);
    }
    /// Connects to [::1]:port.
    static Client tcp6(std::uint16_t port, Ms timeout = kDefaultTimeout) {
        return Client(net::connect_tcp("::1", port), timeout);
    }
    /// Connects to a Unix domain socket.
    static Client unix_socket(std::string_view path, Ms timeout = kDefaultTimeout) {
        return Client(net::connect_unix(path), timeout);
    }

    ~Client() { close(); }
    Client(Client&& o) noexcept
        : fd_(std::exchange(o.fd_, -1)),
          timeout_(o.timeout_),
          buf_(std::move(o.buf_)),
          reads_(o.reads_),
          eof_(o.eof_),
          error_(std::move(o.error_)) {}
    Client& operator=(Client&& o) noexcept {
        if (this != &o) {
            close();
            fd_ = std::exchange(o.fd_, -1);
            timeout_ = o.timeout_;
            buf_ = std::move(o.buf_);
            reads_ = o.reads_;
            eof_ = o.eof_;
            error_ = std::move(o.error_);
        }
        return *this;
    }
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    bool connected() const noexcept { return fd_ >= 0; }
    int fd() const noexcept { return fd_; }
    /// Overall time allowed to each read_response() and to each blocked send.
    void set_timeout(Ms t) {
        timeout_ = t;
        if (fd_ >= 0) set_socket_timeout(SO_SNDTIMEO, timeout_);
    }
    /// Why the last call failed ("timeout", "eof", "reset", "malformed: ...").
    const std::string& error() const noexcept { return error_; }
    /// Number of read(2) calls that returned data.
    std::size_t reads() const noexcept { return reads_; }
    /// Bytes received and not yet returned as part of a response.
    const std::string& pending() const noexcept { return buf_; }

    /// Sends all of `bytes`; false on error or send timeout.
    bool send(std::string_view bytes) {
        while (!bytes.empty()) {
            ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR) continue;
                error_ = std::string("send: ") + std::strerror(errno);
                return false;
            }
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

    /// Sends `bytes` in pieces of `piece` bytes, one send(2) each, pausing between them.
    bool send_in_pieces(std::string_view bytes, std::size_t piece, Ms pause) {
        while (!bytes.empty()) {
            std::size_t n = std::min(piece, bytes.size());
            if (!send(bytes.substr(0, n))) return false;
            bytes.remove_prefix(n);
            if (!bytes.empty() && pause.count() > 0) std::this_thread::sleep_for(pause);
        }
        return true;
    }

    /// Half-closes: no more bytes from us (the server sees end of input).
    void shutdown_write() {
        if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
    }

    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

    /// Reads one complete response (an interim 1xx counts as one). nullopt on timeout, end
    /// of connection before a complete response, or malformed bytes; see error().
    std::optional<HttpResponse> read_response(bool head_request = false) {
        const auto deadline = SteadyClock::now() + timeout_;
        for (;;) {
            HttpResponse r;
            std::size_t used = 0;
            std::string why;
            switch (parse_response(buf_, head_request, eof_, r, used, why)) {
                case ParseStatus::complete:
                    buf_.erase(0, used);
                    return r;
                case ParseStatus::malformed:
                    error_ = "malformed: " + why;
                    return std::nullopt;
                case ParseStatus::incomplete:
                    break;
            }
            if (eof_) {
                error_ = buf_.empty() ? "eof" : "eof inside a response";
                return std::nullopt;
            }
            // At end of file, parse once more: a body delimited by close is complete now.
            if (fill(deadline) == Fill::failed && !eof_) return std::nullopt;
        }
    }

    /// Reads the final response, skipping interim (1xx) ones; `interim` counts them.
    std::optional<HttpResponse> read_final_response(int* interim = nullptr) {
        for (;;) {
            auto r = read_response();
            if (!r || r->status >= 200) return r;
            if (interim) ++*interim;
        }
    }

    /// How a wait for the end of the connection ended.
    enum class End { eof, reset, timeout, data };

    /// Waits up to `within` for the server to close. `data`: bytes arrived first (they are
    /// kept in pending()); eof/reset: closed with nothing unread pending.
    End wait_end(Ms within) {
        if (!buf_.empty()) return End::data;
        if (eof_) return End::eof;
        const auto deadline = SteadyClock::now() + within;
        Fill f = fill(deadline);
        if (f == Fill::got_data) return End::data;
        if (eof_) return End::eof;
        return error_ == "timeout" ? End::timeout : End::reset;
    }
    /// True when the server closed the connection (FIN or RST) within `within` without
    /// sending anything more.
    bool closed_by_peer(Ms within = Ms{2000}) {
        End e = wait_end(within);
        return e == End::eof || e == End::reset;
    }
    /// True when at least one byte (or the end of the connection) arrives within `within`.
    bool readable_within(Ms within) {
        if (!buf_.empty() || eof_) return true;
        pollfd p{fd_, POLLIN, 0};
        return ::poll(&p, 1, static_cast<int>(within.count())) > 0;
    }

  private:
    enum class Fill { got_data, failed };

    void set_socket_timeout(int opt, Ms t) {
        if (t.count() <= 0) t = Ms{1};
        timeval tv{};
        tv.tv_sec = static_cast<time_t>(t.count() / 1000);
        tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
        ::setsockopt(fd_, SOL_SOCKET, opt, &tv, sizeof tv);
    }

    // One read(2), waiting at most until `deadline` (SO_RCVTIMEO carries the remaining time).
    Fill fill(SteadyClock::time_point deadline) {
        if (fd_ < 0) {
            error_ = "not connected";
            return Fill::failed;
        }
        for (;;) {
            auto left = std::chrono::duration_cast<Ms>(deadline - SteadyClock::now());
            if (left.count() <= 0) {
                error_ = "timeout";
                return Fill::failed;
            }
            set_socket_timeout(SO_RCVTIMEO, left);
            char tmp[64 * 1024];
            ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
            if (n > 0) {
                buf_.append(tmp, static_cast<std::size_t>(n));
                ++reads_;
                return Fill::got_data;
            }
            if (n == 0) {
                eof_ = true;
                error_ = "eof";
                return Fill::failed;
            }
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) continue;  // re-check the deadline
            eof_ = true;
            error_ = errno == ECONNRESET ? "reset" : std::string("recv: ") + std::strerror(errno);
            return Fill::failed;
        }
    }

    int fd_ = -1;
    Ms timeout_ = kDefaultTimeout;
    std::string buf_;
    std::size_t reads_ = 0;
    bool eof_ = false;
    std::string error_;
};

inline std::ostream& operator<<(std::ostream& os, Client::End e) {
    switch (e) {
        case Client::End::eof:
            return os << "eof";
        case Client::End::reset:
            return os << "reset";
        case Client::End::timeout:
            return os << "timeout (still open)";
        case Client::End::data:
            return os << "data";
    }
    return os;
}

// ---- Requests -------------------------------------------------------------------------

/// "GET <path> HTTP/1.1" with a Host and `extra` header lines (each ending in CRLF).
inline std::string get_request(std::string_view path, std::string_view extra = {}) {
    std::string r = "GET ";
    r += path;
    r += " HTTP/1.1\r\nHost: localhost\r\n";
    r += extra;
    r += "\r\n";
    return r;
}

/// A request with a Content-Length body.
inline std::string request_with_body(std::string_view method, std::string_view path,
                                     std::string_view body, std::string_view extra = {}) {
    std::string r(method);
    r += ' ';
    r += path;
    r += " HTTP/1.1\r\nHost: localhost\r\nContent-Length: ";
    r += std::to_string(body.size());
    r += "\r\n";
    r += extra;
    r += "\r\n";
    r += body;
    return r;
}

// ---- Servers --------------------------------------------------------------------------

/// Timeouts short enough that a test waiting on one stays well under a second or two, long
/// enough that a loaded two-core machine never trips them by accident.
inline void quick_options(ServerOptions& o) {
    o.header_timeout = Ms{3000};
    o.body_timeout = Ms{3000};
    o.idle_timeout = Ms{5000};
    o.linger_timeout = Ms{500};
    o.shutdown_timeout = Ms{3000};
    o.timer_tick_ms = 20;
}

/// The routes most tests use: "/" and "/hello" (fixed text), "/users/{id}" (echoes the id),
/// POST and PUT "/echo" (echo the request body).
inline void add_basic_routes(App& app) {
    app.get("/", [] { return "Hello, World!"; });
    app.get("/hello", [] { return "Hello, World!"; });
    app.get("/users/{id}", [](Request& r) { return std::string(r.param("id")); });
    app.post("/echo", [](Request& r) { return std::string(r.body()); });
    app.put("/echo", [](Request& r) { return std::string(r.body()); });
}

/// Starts `app` on `endpoint` with `threads` loops (the App's destructor stops it).
inline void start_app(App& app, unsigned threads = 1, std::string_view endpoint = "127.0.0.1:0") {
    app.listen(endpoint);
    app.start(threads);
}

/// Starts `app` on one loop with a plain loopback port (index 0) and, when `tls`, a TLS port
/// (index 1) with the test EC certificate (clients trust test::test_certs().ca).
inline void start_app_with_tls(App& app, bool tls) {
    app.listen("127.0.0.1:0");
    if (tls) {
        TlsOptions t;
        t.cert = test::test_certs().server_ec_cert;
        t.key = test::test_certs().server_ec_key;
        app.listen_tls("127.0.0.1:0", std::move(t));
    }
    app.start(1);
}

}  // namespace vela::e2e
