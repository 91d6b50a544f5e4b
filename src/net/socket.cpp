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

namespace vela::net {

namespace {

std::uint16_t parse_port(std::string_view s) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || v > 65535)
        throw std::invalid_argument("invalid port: " + std::string(s));
    return static_cast<std::uint16_t>(v);
}

[[noreturn]] void fail(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

// True when `sa` names a socket file nobody listens on (connecting is refused). The probe
// does not block: a listener with a full queue (EAGAIN) counts as alive.
bool stale_unix_socket(const sockaddr_un& sa) {
    struct stat st {};
    if (::lstat(sa.sun_path, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (probe < 0) return false;
    const bool refused = ::connect(probe, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) < 0 &&
                         errno == ECONNREFUSED;
    ::close(probe);
    return refused;
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

int open_listener(const Endpoint& ep, const ListenOptions& opts) {
    int family = ep.kind == Endpoint::Kind::tcp4   ? AF_INET
                 : ep.kind == Endpoint::Kind::tcp6 ? AF_INET6
                                                   : AF_UNIX;
    int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket");
    int one = 1;
    try {
        if (family == AF_UNIX) {
            sockaddr_un sa{};
            sa.sun_family = AF_UNIX;
            if (ep.path.size() >= sizeof sa.sun_path)
                throw std::invalid_argument("unix path too long");
            std::memcpy(sa.sun_path, ep.path.c_str(), ep.path.size() + 1);
            // A stale socket file from a previous run is replaced; a socket some server still
            // listens on, or any other file, is left alone (bind then fails: EADDRINUSE).
            if (stale_unix_socket(sa)) ::unlink(ep.path.c_str());
            if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) fail("bind");
        } else {
            ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (opts.reuse_port && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
                fail("SO_REUSEPORT");
            if (family == AF_INET) {
                sockaddr_in sa{};
                sa.sin_family = AF_INET;
                sa.sin_port = htons(ep.port);
                if (::inet_pton(AF_INET, ep.host.c_str(), &sa.sin_addr) != 1)
                    throw std::invalid_argument("invalid IPv4 address: " + ep.host);
                if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) fail("bind");
            } else {
                ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
                sockaddr_in6 sa{};
                sa.sin6_family = AF_INET6;
                sa.sin6_port = htons(ep.port);
                if (::inet_pton(AF_INET6, ep.host.c_str(), &sa.sin6_addr) != 1)
                    throw std::invalid_argument("invalid IPv6 address: " + ep.host);
                if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) fail("bind");
            }
        }
        if (::listen(fd, opts.backlog) < 0) fail("listen");
    } catch (...) {
        ::close(fd);
        throw;
    }
    return fd;
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
