#pragma once
// Sockets: listening endpoints (IPv4, IPv6, Unix domain) and small fd helpers.

#include <cstdint>
#include <string>
#include <string_view>

namespace vela::net {

/// Where to listen: a TCP address and port, or a Unix domain socket path.
struct Endpoint {
    /// IPv4, IPv6, or a Unix domain socket path.
    enum class Kind : std::uint8_t { tcp4, tcp6, unix_path };
    /// Which kind of endpoint this is.
    Kind kind = Kind::tcp4;
    /// Numeric address (tcp4, tcp6).
    std::string host = "0.0.0.0";
    /// TCP port (tcp4, tcp6); 0 lets the kernel choose one.
    std::uint16_t port = 0;
    /// Socket path (unix_path).
    std::string path;

    /// All IPv4 interfaces on `port`.
    static Endpoint any(std::uint16_t port) { return Endpoint{Kind::tcp4, "0.0.0.0", port, {}}; }
    /// Parses "1.2.3.4:80", "[::1]:80", ":80", "80" or "unix:/path"; throws
    /// std::invalid_argument on a malformed port or IPv6 form.
    static Endpoint parse(std::string_view spec);
    /// Human-readable form, as accepted by parse().
    std::string to_string() const;
};

/// Settings for open_listener().
struct ListenOptions {
    /// listen(2) backlog.
    int backlog = 4096;
    /// SO_REUSEPORT: each loop opens its own listener and the kernel balances connections.
    bool reuse_port = true;
};

/// Opens a non-blocking listening socket (replacing a stale Unix socket file); throws
/// std::system_error on failure, std::invalid_argument on a bad address or path.
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
