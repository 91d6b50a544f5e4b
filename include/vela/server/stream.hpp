#pragma once
// Streamed responses written from a coroutine, and server-sent events on top.
//
//     app.get("/log", [](vela::Request&) {
//         vela::Response r;
//         r.set_content_type("text/plain");
//         return vela::stream_body(std::move(r), [](vela::BodyWriter& w) -> vela::Task<void> {
//             for (int i = 0; i < 100; ++i)
//                 if (!co_await w.write(fmt::format("line {}\n", i))) co_return;  // client gone
//         });
//     });
//
// The producer starts on the connection's loop once the head is on its way. write() copies
// the chunk into a queue the connection drains as fast as the client reads; when more than
// the high-water mark waits, write() suspends (back-pressure). It returns false once the
// client has gone, so long work can stop. HTTP/1.1 sends chunks (HTTP/1.0: until close),
// HTTP/2 DATA frames under flow control; handlers do not see the difference.

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vela/async/task.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {

namespace detail {
struct BodyPipe;
}

/// Writes a streamed response body from a coroutine (see above).
class BodyWriter {
  public:
    /// What co_await write() uses.
    struct WriteAwaiter {
        /// The pipe to the connection.
        detail::BodyPipe& pipe;
        /// The chunk (the caller's bytes stay alive across the co_await).
        std::string_view chunk;
        /// 1 queued, 0 waiting, -1 the client has gone.
        int state = 0;
        /// Queues at once unless the queue is over its high-water mark.
        bool await_ready() noexcept;
        /// Waits until the connection has taken enough.
        void await_suspend(std::coroutine_handle<> h) noexcept;
        /// True when the chunk was queued; false once the client has gone.
        bool await_resume() const noexcept { return state > 0; }
    };

    /// Queues `chunk` (copied; empty chunks are ignored) and returns true, suspending while
    /// the client is behind; false when the client has gone.
    WriteAwaiter write(std::string_view chunk) noexcept { return {*pipe_, chunk, 0}; }
    /// True once the client has gone (writes return false).
    bool closed() const noexcept;
    /// True once the server is shutting down gracefully: a stream without a natural end
    /// (events, logs) should finish now.
    bool draining() const noexcept;
    /// Bytes queued and not yet taken by the connection.
    std::size_t queued() const noexcept;
    /// Adds a trailer field, sent after the body's end (HTTP/1.1 chunked, HTTP/2; see
    /// Response::set_trailers for what is dropped). Call before the producer returns.
    void trailer(std::string_view name, std::string_view value);

    /// Made by stream_body() (one per response).
    explicit BodyWriter(detail::BodyPipe& p) noexcept : pipe_(&p) {}

  private:
    detail::BodyPipe* pipe_;
};

/// A coroutine that produces a body through a BodyWriter.
using BodyProducer = std::function<Task<void>(BodyWriter&)>;

/// Makes `r` stream its body from `producer` (status, Content-Type and headers of `r` stay).
/// Queued bytes above `high_water` make write() wait. An exception from the producer ends
/// the body early (HTTP/1.1: the connection closes; HTTP/2: RST_STREAM INTERNAL_ERROR).
Response stream_body(Response r, BodyProducer producer, std::size_t high_water = 256 * 1024);

/// Turns each piece of a response body into another: `f(piece, false)` per piece of `inner`,
/// then `f({}, true)` once at its end (an empty result is skipped). Coroutine producers
/// (stream_body, sse) keep working through it: waiting for them and dropping them reach
/// `inner`. The compression middleware compresses streamed bodies with it.
Response::BodySource transform_body(
    Response::BodySource inner, std::function<std::string(std::string_view piece, bool last)> f);

/// Writes the request body to the file `path` (created or truncated, mode 0644) as it
/// arrives, at most `max_bytes` of it. Returns Status::OK; the body's own error (413, 400,
/// 408); PayloadTooLarge past `max_bytes`; or InternalServerError when the file cannot be
/// written (logged). On any error the file is removed. File writes block the loop briefly
/// (the page cache takes them); on a slow disk use a worker thread instead.
Task<Status> save_body_to(Request& req, std::string path, std::uint64_t max_bytes);

/// One server-sent event (HTML Living Standard, "Server-sent events").
struct SseEvent {
    /// The data; a multi-line value becomes one "data:" line per line.
    std::string_view data;
    /// The event type ("event:"), empty for the default "message".
    std::string_view event = {};
    /// The event id ("id:"), empty for none; the client sends it back as Last-Event-ID.
    std::string_view id = {};
    /// Reconnection delay the client should use ("retry:"), if any.
    std::optional<std::chrono::milliseconds> retry = std::nullopt;
};

/// Settings of an event stream.
struct SseOptions {
    /// A comment line is sent after this long without an event, so proxies and clients keep
    /// the stream open (0: never).
    std::chrono::milliseconds heartbeat{15'000};
    /// A "retry:" sent first, if set.
    std::optional<std::chrono::milliseconds> retry = std::nullopt;
};

/// An event stream being written (see sse()).
class SseStream {
  public:
    /// Sends one event; false once the client has gone or the server is draining.
    Task<bool> send(SseEvent e);
    /// Sends an event with only data.
    Task<bool> send(std::string_view data) { return send(SseEvent{data}); }
    /// Sends a comment line (": text"), e.g. a heartbeat.
    Task<bool> comment(std::string_view text);
    /// The Last-Event-ID the client reconnected with, empty if none.
    std::string_view last_event_id() const noexcept { return last_id_; }
    /// False once the client has gone or the server is draining: time to return.
    bool open() const noexcept { return !writer_.closed() && !writer_.draining(); }
    /// The underlying body writer.
    BodyWriter& writer() noexcept { return writer_; }

    /// Made by sse().
    SseStream(BodyWriter& w, std::string last_id) noexcept
        : writer_(w), last_id_(std::move(last_id)) {}

  private:
    BodyWriter& writer_;
    std::string last_id_;
    std::string buf_;
};

/// A text/event-stream response whose events `fn` writes; heartbeats are sent while it is
/// quiet, and it sees Last-Event-ID from `req`. When the server drains, open() turns false
/// and sends fail, so the stream ends cleanly.
Response sse(const Request& req, std::function<Task<void>(SseStream&)> fn, SseOptions o = {});

}  // namespace vela
