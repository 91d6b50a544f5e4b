#pragma once
// A raw, blocking WebSocket client for the end-to-end tests (RFC 6455 seen from the client).
//
// It does what a conforming client library refuses to: a handshake with any headers (or
// none of the required ones), frames with any bits set, frames glued to the handshake in one
// packet. Client frames are built with vela::ws::append_client_frame (masked); the server's
// frames are parsed here, independently of vela's FrameReader, so the tests check the
// server's bytes against this reading of the RFC and not against itself. Every read has a
// deadline: a server that never answers fails a test instead of hanging it.
//
//     WsClient c = WsClient::connect(app.port());
//     auto r = c.handshake("/echo");               // 101 and a correct Sec-WebSocket-Accept
//     ASSERT_TRUE(c.open()) << c.error();
//     c.send_text("hi");
//     auto f = c.read_frame();                     // one server frame
//     c.send_raw("\x81\x02hi");                    // an unmasked frame: a protocol error
//     auto close = c.read_close();                 // skips data frames, returns the close
//     EXPECT_EQ(close->close_code(), 1002);
//
// The HTTP part reuses e2e::Client (its response parser), then the socket is read here.

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "e2e/client.hpp"
#include "vela/server/websocket.hpp"
#include "vela/ws/frame.hpp"

namespace vela::e2e {

/// The key every WsClient handshake sends (the RFC 6455 1.3 example).
inline constexpr std::string_view kWsKey = "dGhlIHNhbXBsZSBub25jZQ==";
/// Its Sec-WebSocket-Accept (RFC 6455 1.3).
inline constexpr std::string_view kWsAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// One frame as the server sent it.
struct WsFrame {
    bool fin = false;
    bool rsv1 = false;
    bool rsv2 = false;
    bool rsv3 = false;
    bool masked = false;      // a server must never mask (RFC 6455 5.1)
    std::uint8_t opcode = 0;  // raw, so a bad opcode from the server shows as itself
    std::string payload;      // unmasked

    /// True when the frame's opcode is `op`.
    bool is(ws::Opcode op) const noexcept { return opcode == static_cast<std::uint8_t>(op); }
    /// A close frame's code; 1005 when the payload is empty, 0 when it is 1 byte long.
    std::uint16_t close_code() const noexcept {
        if (payload.empty()) return ws::close_code::no_status;
        if (payload.size() < 2) return 0;
        return static_cast<std::uint16_t>((static_cast<unsigned char>(payload[0]) << 8) |
                                          static_cast<unsigned char>(payload[1]));
    }
    /// A close frame's reason (after the 2-byte code).
    std::string close_reason() const { return payload.size() > 2 ? payload.substr(2) : ""; }
};

/// A whole message: the data frames of one message joined.
struct WsClientMessage {
    ws::Opcode opcode = ws::Opcode::text;
    std::string payload;
    int frames = 0;  // how many frames carried it
};

/// "GET <path>" with Host, Upgrade, Connection, and (when asked) Sec-WebSocket-Key (kWsKey)
/// and Sec-WebSocket-Version: 13, then `extra` header lines (each ending in CRLF).
inline std::string ws_upgrade_request(std::string_view path, std::string_view extra = {},
                                      bool with_key = true, bool with_version = true) {
    std::string r = "GET ";
    r += path;
    r += " HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
    if (with_key) {
        r += "Sec-WebSocket-Key: ";
        r += kWsKey;
        r += "\r\n";
    }
    if (with_version) r += "Sec-WebSocket-Version: 13\r\n";
    r += extra;
    r += "\r\n";
    return r;
}

/// A blocking WebSocket connection to the server under test. Move-only.
class WsClient {
  public:
    /// Connects to 127.0.0.1:port (check connected()).
    static WsClient connect(std::uint16_t port, Ms timeout = Client::kDefaultTimeout) {
        WsClient c;
        c.http_ = Client::tcp(port, timeout);
        c.timeout_ = timeout;
        return c;
    }

    bool connected() const noexcept { return http_.connected(); }
    /// True after a handshake answered 101 with the right Sec-WebSocket-Accept.
    bool open() const noexcept { return open_; }
    int fd() const noexcept { return http_.fd(); }
    /// Why the last call failed ("timeout", "eof", "reset", "malformed: ...", ...).
    const std::string& error() const noexcept { return error_; }
    /// Default deadline of every read.
    void set_timeout(Ms t) {
        timeout_ = t;
        http_.set_timeout(t);
    }

    /// Sends ws_upgrade_request(path, extra) followed in the same send by `then` (frames
    /// glued to the handshake), and reads the response. open() tells whether it upgraded.
    std::optional<HttpResponse> handshake(std::string_view path = "/", std::string_view extra = {},
                                          std::string_view then = {}) {
        return handshake_raw(ws_upgrade_request(path, extra) + std::string(then));
    }

    /// Sends `request` as is (any headers, or none) and reads the response. On 101 with
    /// Sec-WebSocket-Accept = kWsAccept the session is open; bytes after the response head
    /// are kept as the start of the frame stream. A refused handshake's response is whole
    /// (status, headers, body).
    std::optional<HttpResponse> handshake_raw(std::string_view request) {
        if (!http_.send(request)) {
            error_ = http_.error();
            return std::nullopt;
        }
        return read_upgrade();
    }

    /// Reads the next response on the connection (after pipelined requests, one at a time);
    /// a 101 with Sec-WebSocket-Accept = kWsAccept opens the session, as in handshake_raw().
    std::optional<HttpResponse> read_upgrade() {
        auto r = http_.read_response();
        if (!r) {
            error_ = "no handshake response: " + http_.error();
            return std::nullopt;
        }
        if (r->status == 101) {
            buf_ = http_.pending();
            if (r->header("Sec-WebSocket-Accept") == kWsAccept) {
                open_ = true;
            } else {
                error_ = "bad Sec-WebSocket-Accept: " + r->header("Sec-WebSocket-Accept");
            }
        }
        return r;
    }

    /// Sends bytes as they are.
    bool send_raw(std::string_view bytes) {
        if (http_.send(bytes)) return true;
        error_ = http_.error();
        return false;
    }
    /// Sends one masked frame.
    bool send_frame(ws::Opcode op, std::string_view payload, bool fin = true, bool rsv1 = false) {
        return send_raw(frame(op, payload, fin, rsv1));
    }
    bool send_text(std::string_view s) { return send_frame(ws::Opcode::text, s); }
    bool send_binary(std::string_view s) { return send_frame(ws::Opcode::binary, s); }
    bool send_ping(std::string_view s = {}) { return send_frame(ws::Opcode::ping, s); }
    bool send_pong(std::string_view s = {}) { return send_frame(ws::Opcode::pong, s); }
    /// Sends a close frame with ws::close_payload(code, reason) (1005: empty payload).
    bool send_close(std::uint16_t code = ws::close_code::normal, std::string_view reason = {}) {
        return send_frame(ws::Opcode::close, ws::close_payload(code, reason));
    }

    /// One masked client frame as bytes (to glue several into one send, or to the handshake).
    std::string frame(ws::Opcode op, std::string_view payload, bool fin = true, bool rsv1 = false) {
        std::string out;
        ws::append_client_frame(out, op, payload, next_mask(), fin, rsv1);
        return out;
    }

    /// Reads one server frame within `within` (default: the client's timeout).
    std::optional<WsFrame> read_frame(std::optional<Ms> within = std::nullopt) {
        const auto deadline = SteadyClock::now() + within.value_or(timeout_);
        error_.clear();
        for (;;) {
            WsFrame f;
            std::size_t used = parse_frame(f);
            if (used > 0) {
                buf_.erase(0, used);
                return f;
            }
            if (!error_.empty() && error_.starts_with("malformed")) return std::nullopt;
            if (!fill(deadline)) return std::nullopt;
        }
    }

    /// Reads frames until a close frame and returns it; data frames, pings and pongs before
    /// it are skipped (pings unanswered). nullopt when the connection ends first or on timeout.
    std::optional<WsFrame> read_close(std::optional<Ms> within = std::nullopt) {
        const auto deadline = SteadyClock::now() + within.value_or(timeout_);
        for (;;) {
            auto f = read_frame(left(deadline));
            if (!f || f->is(ws::Opcode::close)) return f;
        }
    }

    /// Reads one whole data message (fragments joined). Pings are answered with a pong
    /// carrying the same payload when `answer_pings`; pongs are skipped. A close frame or
    /// an error ends it with nullopt (the close is kept in last_close()).
    std::optional<WsClientMessage> read_message(std::optional<Ms> within = std::nullopt,
                                                bool answer_pings = true) {
        const auto deadline = SteadyClock::now() + within.value_or(timeout_);
        WsClientMessage m;
        for (;;) {
            auto f = read_frame(left(deadline));
            if (!f) return std::nullopt;
            if (f->is(ws::Opcode::ping)) {
                if (answer_pings) send_pong(f->payload);
                continue;
            }
            if (f->is(ws::Opcode::pong)) continue;
            if (f->is(ws::Opcode::close)) {
                last_close_ = std::move(f);
                error_ = "close";
                return std::nullopt;
            }
            if (m.frames == 0) m.opcode = static_cast<ws::Opcode>(f->opcode);
            ++m.frames;
            m.payload += f->payload;
            if (f->fin) return m;
        }
    }
    /// The close frame read_message() stopped at, if any.
    const std::optional<WsFrame>& last_close() const noexcept { return last_close_; }

    /// Waits up to `within` for the server to end the TCP connection; frames that arrive
    /// meanwhile are dropped. True on EOF or reset, false on timeout.
    bool closed_by_peer(Ms within = Ms{2000}) {
        const auto deadline = SteadyClock::now() + within;
        buf_.clear();
        while (fill(deadline)) buf_.clear();
        return eof_;
    }

    /// Bytes received and not yet parsed as frames.
    const std::string& pending() const noexcept { return buf_; }
    /// Half-closes: the server sees end of input.
    void shutdown_write() { http_.shutdown_write(); }
    void close() {
        http_.close();
        open_ = false;
    }

  private:
    static Ms left(SteadyClock::time_point deadline) {
        auto l = std::chrono::duration_cast<Ms>(deadline - SteadyClock::now());
        return l.count() > 0 ? l : Ms{0};
    }

    std::uint32_t next_mask() {
        mask_ = mask_ * 1664525u + 1013904223u;  // any mask will do; not zero, not constant
        return mask_ | 1u;
    }

    // Parses one frame at the front of buf_; returns its size, 0 when incomplete (or
    // malformed: error_ says so).
    std::size_t parse_frame(WsFrame& f) {
        const auto* p = reinterpret_cast<const unsigned char*>(buf_.data());
        const std::size_t n = buf_.size();
        if (n < 2) return 0;
        f.fin = (p[0] & 0x80) != 0;
        f.rsv1 = (p[0] & 0x40) != 0;
        f.rsv2 = (p[0] & 0x20) != 0;
        f.rsv3 = (p[0] & 0x10) != 0;
        f.opcode = p[0] & 0x0F;
        f.masked = (p[1] & 0x80) != 0;
        std::uint64_t len = p[1] & 0x7F;
        std::size_t pos = 2;
        if (len >= 126) {
            const std::size_t ext = len == 126 ? 2 : 8;
            if (n < pos + ext) return 0;
            len = 0;
            for (std::size_t i = 0; i < ext; ++i) len = (len << 8) | p[pos + i];
            pos += ext;
        }
        if (len > (std::uint64_t{1} << 32)) {
            error_ = "malformed: server frame length " + std::to_string(len);
            return 0;
        }
        unsigned char mask[4] = {};
        if (f.masked) {
            if (n < pos + 4) return 0;
            std::memcpy(mask, p + pos, 4);
            pos += 4;
        }
        if (n < pos + len) return 0;
        f.payload.assign(buf_, pos, static_cast<std::size_t>(len));
        if (f.masked)
            for (std::size_t i = 0; i < f.payload.size(); ++i) f.payload[i] ^= char(mask[i % 4]);
        return pos + static_cast<std::size_t>(len);
    }

    // One recv into buf_ before `deadline`; false on timeout, end or error (error_ says).
    bool fill(SteadyClock::time_point deadline) {
        if (eof_) {
            error_ = "eof";
            return false;
        }
        for (;;) {
            const Ms l = left(deadline);
            pollfd pfd{fd(), POLLIN, 0};
            int pr = ::poll(&pfd, 1, static_cast<int>(l.count()));
            if (pr < 0 && errno == EINTR) continue;
            if (pr <= 0) {
                error_ = "timeout";
                return false;
            }
            char tmp[64 * 1024];
            ssize_t r = ::recv(fd(), tmp, sizeof tmp, MSG_DONTWAIT);
            if (r > 0) {
                buf_.append(tmp, static_cast<std::size_t>(r));
                return true;
            }
            if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
            eof_ = true;
            error_ = r == 0 ? "eof" : (errno == ECONNRESET ? "reset" : std::strerror(errno));
            return false;
        }
    }

    Client http_;
    Ms timeout_ = Client::kDefaultTimeout;
    std::string buf_;
    std::string error_;
    std::optional<WsFrame> last_close_;
    std::uint32_t mask_ = 0x5a5a1234u;
    bool open_ = false;
    bool eof_ = false;
};

}  // namespace vela::e2e
