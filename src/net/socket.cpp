#include "vela/net/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace vela::net {

namespace {

std::uint16_t parse_port(std::string_view s) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || v > 65535)
        throw std::invalid_argument("invalid port '" + std::string(s) + "' (expected 0 to 65535)");
    return static_cast<std::uint16_t>(v);
}

[[noreturn]] void fail(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

// Listening fds opened so far; closed unless handed over with release(), so that a failure
// half-way through leaves nothing open.
class FdSet {
  public:
    FdSet() = default;
    FdSet(const FdSet&) = delete;
    FdSet& operator=(const FdSet&) = delete;
    ~FdSet() {
        for (int fd : fds_) ::close(fd);
    }
    void add(int fd) {
        try {
            fds_.push_back(fd);
        } catch (...) {
            ::close(fd);
            throw;
        }
    }
    int front() const { return fds_.front(); }
    std::vector<int> release() { return std::exchange(fds_, {}); }

  private:
    std::vector<int> fds_;
};

[[noreturn]] void refuse(const Endpoint& ep, int err, std::string_view reason) {
    throw ListenError(std::error_code(err, std::generic_category()),
                      "cannot listen on " + ep.to_string() + ": " + std::string(reason));
}

// strerror's text with a lower-case first letter, to read as the tail of our sentence.
std::string errno_text(int err) {
    std::string m = std::generic_category().message(err);
    if (!m.empty() && m[0] >= 'A' && m[0] <= 'Z') m[0] = static_cast<char>(m[0] - 'A' + 'a');
    return m;
}

// Why bind(2)/listen(2) on a TCP endpoint failed, in words that say what to do about it.
[[noreturn]] void refuse_tcp(const Endpoint& ep, int err) {
    switch (err) {
        case EADDRINUSE:
            refuse(ep, err, "address already in use (another process holds it; pick another port)");
        case EACCES:
            if (ep.port != 0 && ep.port < 1024)
                refuse(ep, err,
                       "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)");
            refuse(ep, err, "permission denied");
        case EADDRNOTAVAIL:
            refuse(ep, err,
                   "address not available (" + ep.host + " is not an address of this machine)");
        case EAFNOSUPPORT:
            refuse(ep, err, "IPv6 is not available on this machine");
        default:
            refuse(ep, err, errno_text(err));
    }
}

// Why bind(2)/listen(2) on a Unix socket path failed.
[[noreturn]] void refuse_unix(const Endpoint& ep, int err) {
    std::string dir = ep.path.substr(0, ep.path.rfind('/'));
    if (ep.path.find('/') == std::string::npos) dir = ".";
    if (dir.empty()) dir = "/";
    switch (err) {
        case ENOENT:
            refuse(ep, err, "directory " + dir + " does not exist");
        case ENOTDIR:
            refuse(ep, err, "a component of the path is not a directory");
        case EACCES:
        case EPERM:
            refuse(ep, err, "permission denied (cannot create a socket file in " + dir + ")");
        case EADDRINUSE:
            refuse(ep, err, "another socket took the path");
        case EROFS:
            refuse(ep, err, "read-only file system");
        default:
            refuse(ep, err, errno_text(err));
    }
}

enum class UnixPath : std::uint8_t { free, stale, live, unknown, not_a_socket };

// What sits at `sa`'s path. A socket file nobody listens on (connecting is refused) is stale.
// The probe does not block: a listener with a full queue (EAGAIN) counts as live.
UnixPath inspect_unix_path(const sockaddr_un& sa) {
    struct stat st {};
    if (::lstat(sa.sun_path, &st) != 0) return UnixPath::free;
    if (!S_ISSOCK(st.st_mode)) return UnixPath::not_a_socket;
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (probe < 0) return UnixPath::unknown;
    const int rc = ::connect(probe, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
    const int err = errno;
    ::close(probe);
    if (rc == 0 || err == EAGAIN) return UnixPath::live;
    return err == ECONNREFUSED ? UnixPath::stale : UnixPath::unknown;
}

std::vector<int> open_unix(const Endpoint& ep, std::size_t count, const ListenOptions& opts) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (ep.path.empty()) refuse(ep, EINVAL, "empty socket path");
    if (ep.path.size() >= sizeof sa.sun_path)
        refuse(ep, ENAMETOOLONG,
               "socket path is " + std::to_string(ep.path.size()) + " bytes long; the limit is " +
                   std::to_string(sizeof sa.sun_path - 1));
    std::memcpy(sa.sun_path, ep.path.c_str(), ep.path.size() + 1);
    // A stale socket file from a previous run is replaced; a socket some server still listens
    // on, or any other file, is left alone.
    switch (inspect_unix_path(sa)) {
        case UnixPath::free:
        case UnixPath::unknown:  // bind() says why
            break;
        case UnixPath::stale:
            ::unlink(ep.path.c_str());
            break;
        case UnixPath::live:
            refuse(ep, EADDRINUSE, "a server is already listening on this socket");
        case UnixPath::not_a_socket:
            refuse(ep, EEXIST,
                   ep.path + " exists and is not a socket (remove it or pick another path)");
    }
    FdSet fds;
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) refuse(ep, errno, errno_text(errno));
    fds.add(fd);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) refuse_unix(ep, errno);
    if (::listen(fd, opts.backlog) < 0) {
        const int err = errno;
        ::unlink(ep.path.c_str());  // the file is ours: bind just made it
        refuse(ep, err, errno_text(err));
    }
    // One socket cannot be split SO_REUSEPORT-style: every loop watches the same one.
    for (std::size_t i = 1; i < count; ++i) {
        const int d = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (d < 0) refuse(ep, errno, errno_text(errno));
        fds.add(d);
    }
    return fds.release();
}

// sockaddr_in or sockaddr_in6 for a TCP endpoint.
struct TcpAddress {
    sockaddr_storage ss{};
    socklen_t len = 0;

    void set_port(std::uint16_t port) {
        if (ss.ss_family == AF_INET)
            reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(port);
        else
            reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(port);
    }
    const sockaddr* addr() const { return reinterpret_cast<const sockaddr*>(&ss); }
};

TcpAddress tcp_address(const Endpoint& ep) {
    TcpAddress a;
    if (ep.kind == Endpoint::Kind::tcp4) {
        auto* sa = reinterpret_cast<sockaddr_in*>(&a.ss);
        sa->sin_family = AF_INET;
        if (::inet_pton(AF_INET, ep.host.c_str(), &sa->sin_addr) != 1)
            refuse(
                ep, EINVAL,
                "'" + ep.host + "' is not a numeric IPv4 address (host names are not looked up)");
        a.len = sizeof(sockaddr_in);
    } else {
        auto* sa = reinterpret_cast<sockaddr_in6*>(&a.ss);
        sa->sin6_family = AF_INET6;
        if (::inet_pton(AF_INET6, ep.host.c_str(), &sa->sin6_addr) != 1)
            refuse(ep, EINVAL, "'" + ep.host + "' is not a numeric IPv6 address");
        a.len = sizeof(sockaddr_in6);
    }
    a.set_port(ep.port);
    return a;
}

// A bound, listening TCP socket; SO_REUSEPORT when `reuse_port`.
int tcp_listener(const Endpoint& ep, const TcpAddress& a, bool reuse_port, int backlog,
                 FdSet& fds) {
    const int fd = ::socket(a.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) refuse_tcp(ep, errno);
    fds.add(fd);
    int one = 1;
    // SO_REUSEADDR: connections of an earlier run still in TIME_WAIT do not block a restart.
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuse_port && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
        refuse_tcp(ep, errno);
    if (a.ss.ss_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(fd, a.addr(), a.len) < 0) refuse_tcp(ep, errno);
    if (::listen(fd, backlog) < 0) refuse_tcp(ep, errno);
    return fd;
}

// Exclusive unless opts.share_port, without a window for another process to slip in: the
// first socket binds and listens WITHOUT SO_REUSEPORT, and listen(2) re-checks the port under
// the kernel's bind lock, failing with EADDRINUSE if any other socket listens there, with or
// without SO_REUSEPORT (two such sockets that both got through bind: the second listen
// fails). Only once it is listening, and so holds the port, does it turn SO_REUSEPORT on,
// which lets this process's per-loop sockets join it. (A probe socket bound beside the real
// ones would not do: two processes' probes can both bind, since neither listens, and then
// both join one SO_REUSEPORT group.) Two openers that collide exactly may both be refused
// (the loser's listen(2) shows its socket as listening for a moment), never both let in.
std::vector<int> open_tcp(const Endpoint& ep, std::size_t count, const ListenOptions& opts) {
    TcpAddress a = tcp_address(ep);
    FdSet fds;
    const int first = tcp_listener(ep, a, opts.share_port, opts.backlog, fds);
    Endpoint bound = ep;
    if (ep.port == 0) {
        bound.port = local_port(first);
        a.set_port(bound.port);
    }
    int one = 1;
    if (count > 1 && !opts.share_port &&
        ::setsockopt(first, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
        refuse_tcp(bound, errno);
    for (std::size_t i = 1; i < count; ++i) tcp_listener(bound, a, true, opts.backlog, fds);
    return fds.release();
}

}  // namespace

Endpoint Endpoint::parse(std::string_view spec) {
    Endpoint ep;
    if (spec.substr(0, 5) == "unix:") {
        ep.kind = Kind::unix_path;
        ep.path = std::string(spec.substr(5));
        return ep;
    }
    if (!spec.empty() && spec[0] == '[') {
        std::size_t close = spec.find(']');
        if (close == std::string_view::npos || close + 1 >= spec.size() || spec[close + 1] != ':')
            throw std::invalid_argument("invalid IPv6 endpoint: " + std::string(spec));
        ep.kind = Kind::tcp6;
        ep.host = std::string(spec.substr(1, close - 1));
        ep.port = parse_port(spec.substr(close + 2));
        return ep;
    }
    std::size_t colon = spec.rfind(':');
    if (colon == std::string_view::npos) {
        ep.port = parse_port(spec);
        return ep;
    }
    if (colon > 0) ep.host = std::string(spec.substr(0, colon));
    if (ep.host.find(':') != std::string::npos)  // "::1:80": IPv6 needs brackets
        throw std::invalid_argument("IPv6 endpoints are written [address]:port: " +
                                    std::string(spec));
    ep.port = parse_port(spec.substr(colon + 1));
    return ep;
}

std::string Endpoint::to_string() const {
    switch (kind) {
        case Kind::unix_path:
            return "unix:" + path;
        case Kind::tcp6:
            return "[" + host + "]:" + std::to_string(port);
        case Kind::tcp4:
            break;
    }
    return host + ":" + std::to_string(port);
}

std::vector<int> open_listeners(const Endpoint& ep, std::size_t count, const ListenOptions& opts) {
    if (count == 0) return {};
    if (ep.kind == Endpoint::Kind::unix_path) return open_unix(ep, count, opts);
    return open_tcp(ep, count, opts);
}

int open_listener(const Endpoint& ep, const ListenOptions& opts) {
    return open_listeners(ep, 1, opts).front();
}

std::uint16_t local_port(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0) fail("getsockname");
    if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
    return 0;
}

void set_nodelay(int fd) noexcept {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int connect_tcp(std::string_view host, std::uint16_t port) {
    std::string h(host);
    bool v6 = h.find(':') != std::string::npos;
    int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int rc;
    if (v6) {
        sockaddr_in6 sa{};
        sa.sin6_family = AF_INET6;
        sa.sin6_port = htons(port);
        if (::inet_pton(AF_INET6, h.c_str(), &sa.sin6_addr) != 1) {
            ::close(fd);
            return -1;
        }
        rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    } else {
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(port);
        if (::inet_pton(AF_INET, h.c_str(), &sa.sin_addr) != 1) {
            ::close(fd);
            return -1;
        }
        rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    }
    if (rc < 0) {
        ::close(fd);
        return -1;
    }
    set_nodelay(fd);
    return fd;
}

int connect_unix(std::string_view path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (path.size() >= sizeof sa.sun_path) {
        ::close(fd);
        return -1;
    }
    std::memcpy(sa.sun_path, path.data(), path.size());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace vela::net
