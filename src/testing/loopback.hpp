#pragma once
// The socket side of vela::testing::Client: a non-blocking TCP connection to the loopback
// server, read and written from coroutines on the client's loop.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vela/async/task.hpp"

namespace vela::testing::detail {

/// The key every client WebSocket handshake sends (the RFC 6455 1.3 example).
inline constexpr std::string_view kWsKey = "dGhlIHNhbXBsZSBub25jZQ==";
/// Its Sec-WebSocket-Accept (RFC 6455 1.3).
inline constexpr std::string_view kWsAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// An owned, connected, non-blocking socket.
class Socket {
  public:
    /// Connects to 127.0.0.1:`port`; throws std::runtime_error when it cannot.
    static Socket connect(std::uint16_t port);
    /// Not connected.
    Socket() noexcept = default;
    /// Closes the socket.
    ~Socket();
    /// Move-only.
    Socket(Socket&& o) noexcept;
    Socket& operator=(Socket&& o) noexcept;
    /// The descriptor (-1 when not connected).
    int fd() const noexcept { return fd_; }
    /// Gives up the descriptor without closing it.
    int release() noexcept;

  private:
    explicit Socket(int fd) noexcept : fd_(fd) {}
    int fd_ = -1;
};

/// Sends all of `bytes` on `fd`, waiting for room on the loop; throws std::runtime_error.
Task<void> send_all(int fd, std::string bytes);
/// Appends what one read of `fd` gives to `into`, waiting on the loop until there is some;
/// false at the end of the connection (or a reset).
Task<bool> receive(int fd, std::string& into);

/// The connections a loopback client keeps open between requests.
struct ConnectionSlot {
    /// Idle kept-alive connections.
    std::vector<Socket> idle;
};

}  // namespace vela::testing::detail
