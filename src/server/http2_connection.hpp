#pragma once
// The HTTP/2 connection driver (RFC 9113), with nghttp2 as the frame and HPACK codec.
//
// It reads like the protocol:
//
//   on_read       -> nghttp2 parses the frames; its callbacks collect each stream's header
//                    fields and body (on_header, on_data) and mark a stream ready when its
//                    request has ended (on_frame)
//   run_ready     -> after the whole read, every ready stream that was not reset meanwhile
//                    goes to the same HttpHandler as HTTP/1.1, with the same Request/Response
//   respond       -> the Response becomes HEADERS (+ DATA pulled under flow control)
//   flush         -> nghttp2's output is gathered and written in one go
//
// Handlers cannot tell it from HTTP/1.1: req.version() is 20, keep_alive() is true, fields are
// views into the stream's own storage (valid until its response is produced).
//
// Defences: nghttp2 checks framing, pseudo-headers, connection-specific fields and windows
// (PROTOCOL_ERROR / FLOW_CONTROL_ERROR), refuses streams over the concurrency limit
// (REFUSED_STREAM before the client acknowledged it, GOAWAY PROTOCOL_ERROR after), bounds
// CONTINUATION frames, queued ACKs (SETTINGS/PING floods from a client that does not read) and the
// reset rate (rapid reset). On top: the header list size (431), the body size (413), a budget of
// control frames between requests, a reset stream is never dispatched, a response that cannot
// move for send_timeout is reset, and the RFC 9113 rules nghttp2 1.52 leaves out (frames on closed
// streams, lower stream ids, CONTINUATION size, SETTINGS_INITIAL_WINDOW_SIZE overflowing a window,
// Host differing from :authority).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vela/base/buffer.hpp"
#include "vela/http/request_parser.hpp"
#include "vela/net/transport.hpp"
#include "vela/reactor/timer_wheel.hpp"
#include "vela/server/handler.hpp"
#include "vela/tls/stream.hpp"
#include "worker.hpp"

typedef struct nghttp2_session nghttp2_session;

namespace vela::detail {

/// The client connection preface (RFC 9113 3.4).
inline constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// True when `bytes` is the preface or starts with it, or is a beginning of it.
inline bool is_h2_preface_start(std::string_view bytes) noexcept {
    const std::size_t n = bytes.size() < kH2Preface.size() ? bytes.size() : kH2Preface.size();
    return n > 0 && bytes.substr(0, n) == kH2Preface.substr(0, n);
}

struct H2Stream;

/// The client's streams that closed last and how (RFC 9113 5.1: a frame on a closed stream is
/// an error or is ignored depending on who ended it). A fixed record per connection instead of
/// nghttp2's closed streams (up to max_concurrent_streams stream objects): a few hundred bytes,
/// and a frame on a stream that closed longer ago is treated as on a stream never opened, which
/// 5.1 allows ("MAY choose to limit the period").
class ClosedStreams {
  public:
    enum class How : std::uint8_t { unknown, ended, reset_by_client, reset_by_server };
    /// Records that stream `id` closed: `ended` after the client's END_STREAM, otherwise by
    /// the side that sent RST_STREAM.
    void remember(std::int32_t id, How how) noexcept {
        if (how == How::ended) {
            ended_[ended_next_++ % kEnded] = id;
        } else {
            resets_[resets_next_++ % kResets] = {id, how};
        }
    }
    /// How `id` closed, or `unknown` (never opened, or closed before the last ones recorded).
    How find(std::int32_t id) const noexcept {
        for (const Reset& r : resets_)
            if (r.id == id) return r.how;
        for (std::int32_t e : ended_)
            if (e == id) return How::ended;
        return How::unknown;
    }

  private:
    // Resets are rare and keep their own record, so that a burst of completed requests does not
    // push out a stream the server reset, whose late frames must be ignored.
    static constexpr std::size_t kEnded = 32;
    static constexpr std::size_t kResets = 16;
    struct Reset {
        std::int32_t id = 0;
        How how = How::unknown;
    };
    std::int32_t ended_[kEnded] = {};
    Reset resets_[kResets] = {};
    std::uint32_t ended_next_ = 0;
    std::uint32_t resets_next_ = 0;
};

class Http2Connection final : public Connection {
  public:
    /// Takes over a socket from the HTTP/1.1 driver: `unread` holds bytes already read (the
    /// preface and more); `upgraded` is the request of an "Upgrade: h2c" (answered on stream
    /// 1) and `settings` its decoded HTTP2-Settings.
    Http2Connection(ServerWorker& worker, net::Transport&& t, std::unique_ptr<Request> upgraded,
                    std::string settings, const ConnectionInfo& info = {});
    ~Http2Connection() override;

    /// Registers the socket, sends SETTINGS and processes what was handed over.
    void start();
    /// Graceful shutdown: GOAWAY with the last stream id; streams in flight finish.
    void drain() override;
    /// Closes at once (shutdown deadline); suspended handlers are abandoned.
    void force_close() override;
    /// Processes `bytes` as if read from the socket (the fuzz target feeds frames this way).
    void receive(std::string_view bytes) {
        if (t_.closed()) return;
        read_buffer().append(bytes);
        on_read(static_cast<ssize_t>(bytes.size()));
    }

    // Used by the nghttp2 callbacks and the streams.
    int on_begin_headers(std::int32_t id);
    int on_header(std::int32_t id, std::string_view name, std::string_view value, bool trailer);
    int on_initial_window(std::uint32_t value);
    void settings_applied() noexcept { windows_noted_ = false; }
    int on_frame(std::uint8_t type, std::uint8_t flags, std::int32_t id, std::size_t length);
    int on_data(std::int32_t id, const std::uint8_t* data, std::size_t len);
    int on_stream_close(std::int32_t id, std::uint32_t error);
    int on_frame_sent(std::uint8_t type, std::uint8_t flags, std::int32_t id);
    void stream_completed(H2Stream& s, Response&& r);
    std::size_t write_body(H2Stream& s, std::uint8_t* buf, std::size_t length, bool& eof,
                           bool& deferred);
    std::size_t write_file_body(H2Stream& s, std::uint8_t* buf, std::size_t length, bool& eof);

  private:
    // IoSink / tls::StreamOwner
    Buffer& read_buffer() override;
    bool on_read(ssize_t n) override;
    void on_read_none() override;
    void on_write_ready() override;
    bool on_handshake(std::string_view) override { return true; }

    bool feed();
    bool deliver(const std::uint8_t* data, std::size_t len);
    bool check_frame(const std::uint8_t* head, const std::uint8_t* chunk, std::size_t& fed,
                     std::size_t start);
    bool frame_on_closed_stream(std::uint8_t type, std::int32_t id);
    void note_windows();
    bool connection_error(std::uint32_t error, const char* why);
    void run_ready();
    void dispatch(H2Stream& s);
    bool build_request(H2Stream& s);
    void respond(H2Stream& s, Response& r);
    void reject_stream(H2Stream& s, Status st);
    void flush();
    void close();
    void release_if_done() noexcept;
    void linger();
    void calm_down(std::uint32_t error);
    void free_stream(H2Stream* s) noexcept;
    void adopt_upgrade(std::unique_ptr<Request> req);
    void arm(std::uint64_t deadline);
    void on_timeout();
    static void timer_fired(TimerWheel::Entry* e);

    ServerWorker& worker_;
    net::Transport t_;  // socket, TLS transform, timer entry, buffers
    nghttp2_session* session_ = nullptr;
    RequestParser target_parser_;  // checks :path by the HTTP/1.1 target rules
    std::vector<H2Stream*> ready_;
    H2Stream* streams_ = nullptr;
    H2Stream* receiving_ = nullptr;  // the stream whose header block is being decoded  // every
                                     // stream object alive (open or awaiting a handler)
    std::size_t stream_count_ = 0;
    H2Stream* upgraded_ = nullptr;  // stream 1 of an upgrade, until start() opens it
    std::string upgrade_settings_;
    // RFC 9113 rules nghttp2 does not apply, checked on frame headers as they come in (see
    // feed): the bytes left of the preface or of the current frame's payload, a frame header
    // split between reads, the highest stream id the client opened, closed streams.
    std::uint32_t scan_left_ = static_cast<std::uint32_t>(kH2Preface.size());
    std::uint8_t scan_have_ = 0;
    std::uint8_t scan_head_[9] = {};
    std::int32_t max_client_id_ = 0;
    std::int32_t reset_by_client_ = 0;  // the stream of the RST_STREAM being received
    ClosedStreams closed_streams_;
    // A client SETTINGS frame is being received: the client's initial window size before it (and
    // each stream's window_before) are noted for on_initial_window.
    std::uint32_t initial_window_before_ = 0;
    bool windows_noted_ = false;
    std::uint64_t deadline_ms_ = 0;
    std::size_t control_frames_ = 0;
    bool released_ = false;  // handed back to the worker (connection_closed)
    bool draining_ = false;
    bool in_feed_ = false;
    bool paused_ = false;     // reading stopped: output above the high-water mark
    bool lingering_ = false;  // GOAWAY sent: discarding input until the client closes
};

}  // namespace vela::detail
