#pragma once
// One HTTP/2 stream of the server driver (http2_connection.cpp): its request as received, its
// response while it is sent, a streaming route's body reader, and the WebSocket link that may
// run on it (http2_websocket.cpp, RFC 8441). Private to the driver's two files.

#include <coroutine>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http2_connection.hpp"
#include "vela/http/body_reader.hpp"
#include "vela/http/file_cursor.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/server/body_pipe.hpp"
#include "vela/server/handler.hpp"

namespace vela::detail {

struct H2Stream;
class H2WsLink;
class WsConnection;

// A streaming route's request body on an HTTP/2 stream (App::streaming): DATA is kept in the
// stream's `body` without giving its bytes back to the client's window; read() hands out all
// that arrived, and the next read() releases it (WINDOW_UPDATE). So the client sends at most
// a window ahead of the handler (SETTINGS_INITIAL_WINDOW_SIZE, options().http2.stream_window)
// and flow control follows the handler's reads.
class H2RequestBody final : public BodyReader {
  public:
    explicit H2RequestBody(H2Stream& s) noexcept : s_(s) {}
    std::uint64_t received() const noexcept override { return received_; }
    /// Resumes a handler waiting in read() (after the connection's read: not from inside the
    /// session).
    void wake() {
        if (waiter_) std::exchange(waiter_, {}).resume();
    }
    bool waiting() const noexcept { return static_cast<bool>(waiter_); }
    /// The body ends with this error (the client reset the stream, a limit, a timeout).
    void fail(Status st) noexcept {
        if (error_ == Status::OK) error_ = st;
    }
    /// A chunk handed out is still in use (new bytes must not move it).
    bool chunk_out() const noexcept { return taken_ != 0; }
    void reset() noexcept {
        waiter_ = {};
        taken_ = 0;
        received_ = 0;
        error_ = Status::OK;
        ended_ = false;
    }

  protected:
    bool ready() override;
    void wait(std::coroutine_handle<> h) override { waiter_ = h; }
    BodyChunk take() override;

  private:
    void release();

    H2Stream& s_;
    std::coroutine_handle<> waiter_;
    std::size_t taken_ = 0;  // bytes of the last chunk, released by the next read()
    std::uint64_t received_ = 0;
    Status error_ = Status::OK;
    bool ended_ = false;
};

// One stream: its request as received (fields stored back to back in `raw`, so the Request's
// views stay valid however many arrive), its response while it is being sent, and the
// handler's completion.
struct H2Stream final : ResponseSink {
    struct Field {
        std::uint32_t name, name_len, value, value_len;
    };
    Http2Connection* conn = nullptr;
    h2::Stream* st = nullptr;  // the session's stream while it is open
    std::uint32_t id = 0;
    H2Stream* prev = nullptr;
    H2Stream* next = nullptr;
    std::string raw;
    std::vector<Field> fields;  // the regular fields; the pseudo-fields' values are below
    struct Span {
        std::uint32_t off = 0, len = 0;
    };
    Span method, scheme, authority, path, protocol;  // in `raw`; len 0: absent
    std::string cookies;  // RFC 9113 8.2.3: cookie fields joined with "; "
    std::string body;
    std::unique_ptr<Request> req;
    // The response's body while it is being sent: a string (sent from body_off), a streamed
    // source (its current piece) or a file.
    std::string out_body;
    std::size_t body_off = 0;
    Response::BodySource source;
    std::shared_ptr<Response::TrailerFields> trailers;  // sent after source's end
    std::int64_t stream_left = -1;  // bytes source still owes its content-length (-1: none)
    std::unique_ptr<FileCursor> file;
    std::string piece;
    std::size_t piece_off = 0;
    std::uint64_t stalled_since = 0;  // when the response last could not move (0: it moves)
    std::uint64_t opened_ms = 0;
    std::coroutine_handle<> work;
    Response* inline_result = nullptr;
    Status early = Status::OK;  // an answer decided while receiving (431, 413)
    bool queued = false;        // in the ready list
    bool request_done = false;  // END_STREAM received
    bool busy = false;          // an asynchronous handler owns the request
    bool dispatching = false;
    bool completed_inline = false;
    bool responding = false;     // a response was sent or is being sent
    bool body_pending = false;   // body bytes (or the end of the stream) remain to send
    bool sending = false;        // in the connection's sending list
    bool producer_wait = false;  // a coroutine producer has nothing yet (not a stall)
    bool prebuilt = false;       // the Request is filled already (an upgraded HTTP/1.1 request)

    bool streaming = false;          // the handler reads the body as it arrives (body_reader)
    bool wake_queued = false;        // in the connection's list of readers to resume
    std::uint64_t last_data_ms = 0;  // streaming: when DATA last arrived or was read
    std::uint64_t answered_ms = 0;   // answered, the rest of the body awaited: since when
    std::uint64_t streamed_total = 0;
    std::string more;  // streaming: bytes that arrived while a chunk is out
    H2RequestBody body_reader{*this};
    // A WebSocket session runs on this stream (RFC 8441) until its link is destroyed; the
    // stream is `busy` meanwhile, and `streaming`: DATA goes to the link.
    H2WsLink* ws = nullptr;

    bool open() const noexcept { return st != nullptr; }
    void complete(Response&& r) override {
        if (dispatching) {
            *inline_result = std::move(r);
            completed_inline = true;
            return;
        }
        if (!conn) {  // its connection is gone (see ~Http2Connection)
            delete this;
            return;
        }
        conn->stream_completed(*this, std::move(r));
    }
    void pending(std::coroutine_handle<> w) override {
        if (!completed_inline) work = w;
    }
    std::string_view at(std::uint32_t off, std::uint32_t len) const {
        return std::string_view(raw).substr(off, len);
    }
    std::string_view at(Span v) const { return at(v.off, v.len); }
    // Where a request pseudo-field's value goes. The session lets only these five through
    // (RFC 9113 8.3.1, RFC 8441 4), so the length tells them apart, and ":method" from
    // ":scheme" their second character.
    Span* pseudo(std::string_view name) noexcept {
        switch (name.size()) {
            case 5:
                return &path;
            case 7:
                return name[1] == 'm' ? &method : &scheme;
            case 9:
                return &protocol;
            case 10:
                return &authority;
            default:
                return nullptr;
        }
    }
    // Makes a finished stream ready for the next one, keeping its buffers' capacity (a
    // steady stream of small requests then allocates nothing here).
    void recycle() noexcept {
        constexpr std::size_t kKeep = 16 * 1024;
        raw.clear();
        fields.clear();
        method = scheme = authority = path = protocol = {};
        cookies.clear();
        if (body.capacity() > kKeep) std::string().swap(body);
        body.clear();
        std::string().swap(out_body);
        body_off = 0;
        body_dropped(source);  // a producer learns that its stream has ended
        source = nullptr;
        trailers.reset();
        stream_left = -1;
        file.reset();
        std::string().swap(piece);
        piece_off = 0;
        stalled_since = opened_ms = 0;
        work = {};
        inline_result = nullptr;
        early = Status::OK;
        st = nullptr;
        id = 0;
        queued = request_done = busy = dispatching = completed_inline = responding = body_pending =
            sending = producer_wait = prebuilt = streaming = false;
        last_data_ms = answered_ms = streamed_total = 0;
        wake_queued = false;
        std::string().swap(more);
        body_reader.reset();
        ws = nullptr;
        prev = next = nullptr;
    }
};

// The WebSocket link's parts the connection's hot file calls (http2_websocket.cpp keeps the
// rest, so a server without WebSocket sessions runs none of it).
/// DATA for the session on `link` (inside the connection's frame processing).
void ws_link_received(H2WsLink& link, Http2Connection& c, std::string_view data, bool end_stream);
/// The client ended its side (END_STREAM on a HEADERS frame).
void ws_link_peer_ended(H2WsLink& link);
/// The stream is gone: ended both ways (`reset` false), reset, or the connection closed.
void ws_link_stream_closed(H2WsLink& link, bool reset);
/// Moves the session's frames into DATA on `st`; false when the link no longer pulls (it
/// closed, its last bytes went to the stream's `out_body`). Sets s.body_pending.
bool ws_link_pull(H2WsLink& link, H2Stream& s, h2::Session& session, h2::Stream& st);
/// The driver on `link`, a WebSocket session or a proxied WebSocket's tunnel (null once
/// it is gone).
Connection* ws_link_session(H2WsLink& link) noexcept;

}  // namespace vela::detail
