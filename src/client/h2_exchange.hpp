#pragma once
// HTTP/2 in the client (RFC 9113): H2Conn drives an h2::Session in the client role over one
// pooled Connection shared by every request to its origin on its loop; H2Exchange is one
// request on it, a stream.
//
// The connection is event-driven: bytes read go to the session at once (on_read), whose
// callbacks fill the streams' state (head fields, body bytes, the end, a reset) and queue
// the streams whose coroutine waits; those are resumed once the session returned, so a
// coroutine never runs inside the session. A stream's DATA is kept in its buffer until the
// reader takes it: the next read gives the bytes back to the server's window
// (WINDOW_UPDATE), so flow control is the back-pressure and a stream holds at most its
// window. Writes go straight to the socket, the rest waits in the transport's output.
//
// Failures: a stream reset by the server fails its request (REFUSED_STREAM, or a GOAWAY that
// left it unprocessed: Unprocessed, sent again once on a new connection); a connection error
// (a malformed frame, a closed socket) fails every stream on it and the pool forgets it; a
// GOAWAY takes it out of the pool for new requests and it closes once its streams ended. A
// request that ends early (a timeout, an abandoned body) resets its stream with CANCEL and
// the connection goes on with the others.

#include <coroutine>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client/exchange.hpp"
#include "vela/http/h2_session.hpp"

namespace vela::http::detail {

class H2Conn;

/// The state of one request's stream, filled by the session's callbacks.
struct H2Stream {
    /// What ended the stream early.
    enum class Failure : std::uint8_t { none, protocol, too_large, unprocessed, stale };
    H2Conn* conn = nullptr;        // null once the connection is gone
    h2::Stream* st = nullptr;      // null once the session closed the stream
    ResponseHead head;             // the final response's head, as its fields arrive
    std::string body;              // DATA received, not yet handed out
    std::vector<Header> trailers;  // the trailer fields, when they came
    std::size_t fields = 0;        // fields of the current header block
    Failure failure = Failure::none;
    std::string why;         // the failure, one line
    bool head_done = false;  // the final head arrived
    bool ended = false;      // the server ended its side (END_STREAM)
    bool too_large = false;  // the head passed a limit
    bool queued = false;     // in the connection's wake list
    bool timed_out = false;  // the wait's deadline passed
    bool reused = false;     // the connection served requests before this one
    bool gone = false;       // the connection failed while the stream was queued
    std::coroutine_handle<> waiter{};
};

/// One HTTP/2 connection of the client (see above); owned by its Connection.
class H2Conn final : public h2::SessionHandler {
  public:
    H2Conn(Connection& c, const ClientOptions& o);
    ~H2Conn() override;
    H2Conn(const H2Conn&) = delete;
    H2Conn& operator=(const H2Conn&) = delete;

    /// Starts the session (the preface and SETTINGS) and writes it.
    void start();
    /// True when a new stream may be opened now: within the server's concurrency limit, and
    /// only one before its SETTINGS told that limit.
    bool can_open() const noexcept;
    /// True while the server's first SETTINGS are awaited on a sound connection.
    bool warming() const noexcept { return !dead && !session.peer_settings_received(); }
    /// Writes what the session has to say.
    void flush();
    /// Connection callbacks (see Connection).
    bool on_read(ssize_t n);
    void on_write_ready();
    void on_timer();
    /// Says goodbye (GOAWAY) before a connection no longer needed is closed.
    void retire();
    /// Fails every stream with `why` (the connection is gone) and wakes them.
    void fail_all(H2Stream::Failure f, const std::string& why);
    /// Links `s` to this connection (its stream was opened).
    void attach(H2Stream& s) { streams_.push_back(&s); }
    /// Unlinks `s` (its request ended); resets its stream with CANCEL when still open.
    void detach(H2Stream& s);
    /// Queues `s`'s waiting coroutine to be resumed (run_wakes()).
    void wake(H2Stream& s);
    /// Resumes the queued coroutines.
    void run_wakes();

    // SessionHandler.
    void on_begin_headers(h2::Stream& s) override;
    void on_field(h2::Stream& s, const hpack::DecodedField& f) override;
    void on_headers(h2::Stream& s, const h2::HeadersEnd& end) override;
    void on_data(h2::Stream& s, std::string_view data, bool end_stream) override;
    void on_close(h2::Stream& s, h2::ErrorCode code, bool by_peer) override;
    void on_writable(h2::Stream& s) override;
    void on_goaway(std::uint32_t last_stream_id, h2::ErrorCode code,
                   std::string_view debug) override;

    Connection& c;
    h2::Session session;
    std::size_t reserved = 0;  // leases given out whose stream is not open yet
    bool goaway = false;       // the server sent GOAWAY: no new stream
    bool dead = false;         // the connection failed

  private:
    void after_io();
    void end_connection(H2Stream::Failure f, const std::string& why);
    void idle_check();

    const ClientOptions& o_;
    std::size_t max_fields_;
    std::vector<H2Stream*> streams_;  // the streams of live requests
    std::vector<H2Stream*> wakes_;
    std::uint64_t idle_deadline_ = 0;
    bool in_wakes_ = false;
    bool settings_known_ = false;  // the pool was told the server's first SETTINGS arrived
    bool flush_pending_ = false;   // flush() was asked for while in run_wakes()
};

/// One request as a stream of an H2Conn.
class H2Exchange final : public Exchange {
  public:
    /// A request on `c` (its lease reserved a stream), to `url`.
    H2Exchange(OriginPool& pool, Connection* c, bool reused, std::string url);
    /// Resets the stream (CANCEL) unless it ended.
    ~H2Exchange() override;

    /// Opens the stream with `fields` (pseudo-fields first), then sends `body`, then what
    /// `source` produces, as DATA within the server's windows.
    Task<void> send(std::vector<Header> fields, std::string body, const BodySource* source,
                    std::uint64_t request_deadline);
    Task<void> read_head(const std::string& method, ResponseHead& head, std::uint64_t head_deadline,
                         std::uint64_t request_deadline) override;
    std::string_view protocol() const noexcept override { return "HTTP/2"; }

  private:
    // Suspends until the stream's state changes or `deadline` (absolute ms; 0: none) passes.
    struct Wait {
        H2Exchange& x;
        std::uint64_t deadline;
        std::uint64_t timer = 0;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> h);
        void await_resume() noexcept;
        ~Wait();
    };
    Wait wait(std::uint64_t deadline) noexcept { return Wait{*this, deadline}; }
    void open(const std::vector<Header>& fields, bool end);
    Task<void> push(std::string_view data, bool end, std::uint64_t deadline);
    [[noreturn]] void raise();
    void begin_read(std::uint64_t deadline) override { deadline_ = deadline; }
    bool raw_piece(std::string_view& piece) override;
    void settle() override;
    Task<bool> more() override;

    Loop& loop_;
    H2Stream s_;
    bool reserved_ = true;  // the lease's reservation is not yet used
    std::string piece_;     // the piece handed out last
    std::uint64_t deadline_ = 0;
};

}  // namespace vela::http::detail
