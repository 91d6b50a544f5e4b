#pragma once
// The WebSocket client: co_await vela::ws::connect(url, options) opens a session to a ws:// or
// wss:// URL (RFC 6455 4.1) and hands back the same vela::WebSocket a server route gets,
// with send, receive, ping, close, subprotocol() and compressed():
//
//     vela::ws::Session ws = co_await vela::ws::connect("wss://example.com/chat");
//     co_await ws->send("hello");
//     vela::WsMessage m = co_await ws->receive();   // the echo, or the close
//     ws->close();
//
// The handshake runs through vela::http::Client (a new connection from its dialler: DNS,
// connect timeout, TLS with its verification, SNI and ALPN http/1.1, a CONNECT tunnel through
// an HTTPS proxy). It checks the 101, Upgrade, Connection and Sec-WebSocket-Accept, and
// accepts only the extension and subprotocol it offered; anything else is a HandshakeError.
// Every frame the client sends is masked with a fresh key (RFC 6455 5.3); a masked frame
// from the server closes the session with 1002. On close the client waits for the server's
// close frame and TCP close (at most close_timeout). The session runs on the calling loop.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/client/client.hpp"
#include "vela/server/websocket.hpp"

namespace vela::ws {

/// Why an opening handshake was refused.
enum class HandshakeFailure : std::uint8_t {
    status,       ///< the answer was not 101 (status() says what it was)
    upgrade,      ///< Upgrade is not "websocket", or Connection lacks "upgrade"
    accept,       ///< Sec-WebSocket-Accept does not match the key sent
    extension,    ///< an extension or parameter that was not offered
    subprotocol,  ///< a subprotocol that was not offered
};

/// The server did not complete the opening handshake; what() names the URL and the reason.
class HandshakeError : public http::ClientError {
  public:
    /// A failure `f` after an answer with `status`, described by `what`.
    HandshakeError(HandshakeFailure f, int status, const std::string& what)
        : http::ClientError(http::ErrorKind::protocol, what), failure_(f), status_(status) {}
    /// Which check failed.
    HandshakeFailure failure() const noexcept { return failure_; }
    /// The status code the server answered with.
    int status() const noexcept { return status_; }

  private:
    HandshakeFailure failure_;
    int status_;
};

/// Settings of ws::connect.
struct ConnectOptions {
    /// Header fields added to the handshake request (Origin, Authorization, Cookie, ...);
    /// the handshake's own (Upgrade, Connection, Sec-WebSocket-*) are refused.
    std::vector<http::Header> headers;
    /// Subprotocols offered, in preference order (Sec-WebSocket-Protocol); the server's pick
    /// must be one of them. Empty: none offered.
    std::vector<std::string> subprotocols;
    /// Offer permessage-deflate (RFC 7692) and use it when the server accepts.
    bool deflate = true;
    /// zlib level of our compressor (1-9).
    int deflate_level = 6;
    /// Messages shorter than this are sent uncompressed.
    std::size_t deflate_min_size = 64;
    /// Largest frame payload the server may send (close 1009 above it).
    std::size_t max_frame = 16 << 20;
    /// Largest message the server may send, after decompression (close 1009 above it).
    std::size_t max_message = 16 << 20;
    /// Bytes queued for the server before `slow` applies.
    std::size_t send_queue_max = 4 << 20;
    /// What send() meets when the queue is full.
    SlowClient slow = SlowClient::wait;
    /// How long the TCP connect may take.
    std::chrono::milliseconds connect_timeout{10'000};
    /// How long the TLS handshake, and then the HTTP upgrade's answer, may take.
    std::chrono::milliseconds handshake_timeout{10'000};
    /// A ping is sent after this long without traffic from the server (0: never).
    std::chrono::milliseconds ping_interval{30'000};
    /// The session is dropped when nothing arrives this long after a ping.
    std::chrono::milliseconds pong_timeout{15'000};
    /// How long the closing handshake may take before the socket is closed.
    std::chrono::milliseconds close_timeout{5'000};
    /// TLS for wss:// (CA file, verification, client certificate).
    TlsClientOptions tls{};
    /// Dial through this client instead (its TLS context, proxies, DNS cache; `tls` and the
    /// connect timeout are then its own). Must outlive connect()'s handshake.
    http::Client* client = nullptr;
};

/// The owner of a session connect() opened: the WebSocket lives while the handle does, and
/// until its closing handshake ends. Destroying the handle closes it (1000) unless it was
/// closed. Move-only; used and destroyed on the loop it was made on, before that loop ends.
class Session {
  public:
    /// No session.
    Session() noexcept = default;
    /// Takes the session `ws` (made by connect()).
    explicit Session(WebSocket& ws) noexcept : ws_(&ws) {}
    /// Moves the ownership.
    Session(Session&& o) noexcept : ws_(std::exchange(o.ws_, nullptr)) {}
    /// Lets go of the current session and takes `o`'s.
    Session& operator=(Session&& o) noexcept {
        if (this != &o) {
            reset();
            ws_ = std::exchange(o.ws_, nullptr);
        }
        return *this;
    }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    /// Lets go of the session (see reset()).
    ~Session() { reset(); }

    /// The WebSocket.
    WebSocket& operator*() const noexcept { return *ws_; }
    /// The WebSocket's members.
    WebSocket* operator->() const noexcept { return ws_; }
    /// The WebSocket, or null.
    WebSocket* get() const noexcept { return ws_; }
    /// True while it holds a session.
    explicit operator bool() const noexcept { return ws_ != nullptr; }
    /// Lets go: the closing handshake starts (1000) unless it ran; the session is freed when
    /// its socket closes.
    void reset() noexcept;

  private:
    WebSocket* ws_ = nullptr;
};

/// Opens a WebSocket session to `url` (ws:// or wss://) on the calling loop. Throws
/// HandshakeError when the server refuses or botches the handshake, http::ClientError for
/// connect, TLS and timeout failures, std::invalid_argument for a bad URL or option. Name the
/// options before the co_await (`ws::ConnectOptions o; ... co_await ws::connect(url, o);`):
/// g++ 12 mishandles an aggregate temporary written inside a co_await expression.
Task<Session> connect(std::string url, ConnectOptions options);

/// connect() with the default ConnectOptions (no temporary at the caller's co_await).
Task<Session> connect(std::string url);

}  // namespace vela::ws
