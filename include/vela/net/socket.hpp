#pragma once
// Sockets: listening endpoints (IPv4, IPv6, Unix domain) and small fd helpers.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

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

/// Settings for open_listener() and open_listeners().
struct ListenOptions {
    /// listen(2) backlog.
    int backlog = 4096;
    /// Lets other processes listen on the same TCP port (SO_REUSEPORT on every socket; the
    /// kernel spreads connections over all of them, e.g. for a zero-downtime restart). Off, a
    /// port some other process listens on is refused with "address already in use" instead of
    /// being silently shared. Off cannot keep out a later process that turns it on while this
    /// one listens with several loops: its sockets must carry SO_REUSEPORT to share among
    /// themselves, and the kernel lets any same-user SO_REUSEPORT socket join them.
    bool share_port = false;
};

/// Opening a listener failed. what() is one line meant for a person, e.g. "cannot listen on
/// 0.0.0.0:8080: address already in use (another process holds it; pick another port)";
/// code() is the errno behind it (std::errc::invalid_argument for a malformed address).
class ListenError : public std::system_error {
  public:
    /// `line` becomes what(), verbatim.
    ListenError(std::error_code code, const std::string& line)
        : std::system_error(code, line), line_(line) {}
    /// The one-line message (system_error's own would append strerror a second time).
    const char* what() const noexcept override { return line_.what(); }

  private:
    std::runtime_error line_;  // holds the string so that copying stays noexcept
};

/// Opens `count` non-blocking listening sockets on `ep`, one per loop; throws ListenError.
/// TCP: `count` sockets in one SO_REUSEPORT group, all on the port the first one got (the
/// real port when ep.port is 0). Unix: one socket (a stale socket file from an earlier run is
/// replaced; a live one or any other file is not) and count - 1 dups of it. Nothing stays
/// open when it throws.
std::vector<int> open_listeners(const Endpoint& ep, std::size_t count, const ListenOptions& opts);
/// Opens one listening socket: open_listeners(ep, 1, opts).front().
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
