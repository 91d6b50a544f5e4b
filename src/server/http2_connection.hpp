#pragma once
// The HTTP/2 connection driver (RFC 9113) over vela's own frame codec, HPACK and connection
// state machine (vela/http/h2_session.hpp).
//
// It reads like the protocol:
//
//   on_read       -> the session reads the frames; its calls collect each stream's header
//                    fields and body (on_field, on_data) and mark a stream ready when its
//                    request has ended (on_headers, on_data with END_STREAM)
//   run_ready     -> after the whole read, every ready stream that was not reset meanwhile
//                    goes to the same HttpHandler as HTTP/1.1, with the same Request/Response
//   respond       -> the Response's fields are HPACK-encoded straight into a HEADERS frame;
//                    its body goes out as DATA under flow control (send_body)
//   flush         -> bodies are pulled up to the output high-water mark and written in one go
//
// An extended CONNECT (RFC 8441) to a WebSocket route is dispatched at its HEADERS; the 200
// from ws_accept() makes the stream a WebSocket session's link (H2WsLink): DATA both ways
// under flow control, END_STREAM for the orderly end, RST_STREAM CANCEL for an abnormal one.
//
// Handlers cannot tell it from HTTP/1.1: req.version() is 20, keep_alive() is true, fields are
// views into the stream's own storage (valid until its response is produced).
//
// Defences: the session checks framing, stream states, pseudo-fields, connection-specific
// fields and windows, refuses streams over the concurrency limit, and bounds CONTINUATION
// frames, queued acknowledgements, control frames between requests and the reset rate (see
// h2_session.hpp). On top: the header list size and the field count (431), the body size
// (413), a reset stream is never dispatched, a response that cannot move for send_timeout is
// reset, a request body that does not arrive within body_timeout gets 408, and Host differing
// from :authority is malformed.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vela/base/buffer.hpp"
#include "vela/http/h2_session.hpp"
#include "vela/http/request_parser.hpp"
#include "vela/net/transport.hpp"
#include "vela/reactor/timer_wheel.hpp"
#include "vela/server/handler.hpp"
#include "vela/tls/stream.hpp"
#include "worker.hpp"

namespace vela::detail {

/// The client connection preface (RFC 9113 3.4).
inline constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// True when `bytes` is the preface or starts with it, or is a beginning of it.
inline bool is_h2_preface_start(std::string_view bytes) noexcept {
    const std::size_t n = bytes.size() < kH2Preface.size() ? bytes.size() : kH2Preface.size();
    return n > 0 && bytes.substr(0, n) == kH2Preface.substr(0, n);
}

struct H2Stream;
class H2WsLink;

class Http2Connection final : public Connection, private h2::SessionHandler {
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
        Buffer& in = read_buffer();
        in.append(bytes);
        on_read(static_cast<ssize_t>(bytes.size()));
    }

    /// A handler completed stream `s` (ResponseSink::complete).
    void stream_completed(H2Stream& s, Response&& r);
    /// A streaming route's handler used `n` body bytes of `s`: the client may send them again.
    void release_body(H2Stream& s, std::size_t n);

  private:
    friend class H2WsLink;

    // IoSink / tls::StreamOwner
    Buffer& read_buffer() override;
    bool on_read(ssize_t n) override;
    void on_read_none() override;
    void on_write_ready() override;
    bool on_handshake(std::string_view) override { return true; }

    // h2::SessionHandler
    void on_begin_headers(h2::Stream& st) override;
    void on_field(h2::Stream& st, const hpack::DecodedField& f) override;
    void on_headers(h2::Stream& st, const h2::HeadersEnd& end) override;
    void on_data(h2::Stream& st, std::string_view data, bool end_stream) override;
    void on_close(h2::Stream& st, h2::ErrorCode code, bool by_peer) override;
    void on_writable(h2::Stream& st) override;

    bool feed();
    void streamed_data(H2Stream& s, std::string_view data, bool end_stream);
    void wake_reader(H2Stream& s);
    void wake_readers();
    void run_ready();
    void dispatch(H2Stream& s);
    bool build_request(H2Stream& s);
    void respond(H2Stream& s, Response& r);
    void encode_fields(Response& r, std::string& block);
    bool send_trailers(H2Stream& s);
    void start_websocket(H2Stream& s, Response& r);
    void ws_output(H2Stream& s);
    void ws_ended(H2Stream& s) noexcept;
    void reject_stream(H2Stream& s, Status st);
    void reset_stream(H2Stream& s, h2::ErrorCode code);
    void send_body(H2Stream& s);
    void want_send(H2Stream& s);
    void produce(std::size_t high);
    void flush();
    void close();
    void release_if_done() noexcept;
    void linger();
    void free_stream(H2Stream* s) noexcept;
    void adopt_upgrade(std::unique_ptr<Request> req);
    void arm(std::uint64_t deadline);
    void on_timeout();
    static void timer_fired(TimerWheel::Entry* e);

    ServerWorker& worker_;
    net::Transport t_;  // socket, TLS transform, timer entry, buffers
    h2::Session session_;
    RequestParser target_parser_;  // checks :path by the HTTP/1.1 target rules
    std::vector<H2Stream*> ready_;
    std::vector<H2Stream*> sending_;  // streams with body bytes to send and a window to send
    std::vector<H2Stream*> wake_;     // streaming bodies to resume after this read
    H2Stream* streams_ = nullptr;     // every stream object alive (open or awaiting a handler)
    std::size_t stream_count_ = 0;
    H2Stream* upgraded_ = nullptr;  // stream 1 of an upgrade, until start() opens it
    std::string upgrade_settings_;
    std::uint64_t deadline_ms_ = 0;
    bool released_ = false;  // handed back to the worker (connection_closed)
    bool draining_ = false;
    bool in_feed_ = false;
    bool in_wake_ = false;
    bool in_run_ = false;     // run_ready() is dispatching
    bool in_flush_ = false;   // flush() is producing and writing
    bool paused_ = false;     // reading stopped: output above the high-water mark
    bool lingering_ = false;  // GOAWAY sent: discarding input until the client closes
};

}  // namespace vela::detail
