#pragma once
// Sockets: listening endpoints (IPv4, IPv6, Unix domain) and small fd helpers.

#include <cstdint>
#include <string>
#include <string_view>

namespace vela::net {

/// Where to listen: a TCP address and port, or a Unix domain socket path.
struct Endpoint {
    enum class Kind : std::uint8_t { tcp4, tcp6, unix_path };
    Kind kind = Kind::tcp4;
    std::string host = "0.0.0.0";  // numeric address for tcp4/tcp6
    std::uint16_t port = 0;
    std::string path;  // for unix_path

    /// All IPv4 interfaces on `port`.
    static Endpoint any(std::uint16_t port) { return Endpoint{Kind::tcp4, "0.0.0.0", port, {}}; }
    /// Parses "1.2.3.4:80", "[::1]:80", ":80", "80" or "unix:/path".
    static Endpoint parse(std::string_view spec);
    /// Human-readable form, as accepted by parse().
    std::string to_string() const;
};

struct ListenOptions {
    /// listen(2) backlog.
    int backlog = 4096;
    /// SO_REUSEPORT: each loop opens its own listener and the kernel balances connections.
    bool reuse_port = true;
};

/// Opens a non-blocking listening socket; throws std::system_error on failure.
int open_listener(const Endpoint& ep, const ListenOptions& opts);
/// The TCP port a socket is bound to (to find the port chosen for port 0).
std::uint16_t local_port(int fd);
/// Sets TCP_NODELAY (ignored for non-TCP sockets).
void set_nodelay(int fd) noexcept;
/// Blocking TCP connect to a numeric address (used by tests and tools); -1 on failure.
int connect_tcp(std::string_view host, std::uint16_t port);
/// Blocking connect to a Unix domain socket; -1 on failure.
int connect_unix(std::string_view path);

}  // namespace vela::net
