#pragma once
// One client connection: a dialled socket in a net::Transport (with the TLS transform for
// https), driven by the coroutine of the request that holds it.
//
// The connection is the transport's driver (IoSink / StreamOwner): the backend reads into the
// transport's input buffer and calls on_read, which only records what happened (bytes, the
// peer's FIN, an error) and resumes the one coroutine waiting on the connection, if any. All
// protocol work (writing the request, parsing the response) runs in that coroutine, which
// re-checks the state after each wake-up. While the connection sits idle in its pool, bytes
// or a FIN from the server make it unusable and it is closed at once; an idle timeout on the
// transport's wheel entry closes it too.
//
// Lifetime: a connection is freed only through Loop::defer (never inside one of its own
// callbacks, and never while a coroutine may still be resumed from one), after its pool
// forgot it.

#include <coroutine>
#include <cstdint>
#include <memory>
#include <string>

#include "vela/net/transport.hpp"
#include "vela/tls/stream.hpp"

namespace vela::http::detail {

class OriginPool;
class H2Conn;

/// One dialled connection (see above).
class Connection final : public tls::StreamOwner {
  public:
    /// Takes the connected socket `fd` (and its TLS transform) for `pool`.
    Connection(OriginPool& pool, Loop& loop, int fd, std::unique_ptr<tls::Stream> tls);
    ~Connection() override;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// Suspends the calling coroutine until something happens on the connection (bytes, the
    /// socket drained, the handshake ended, the peer closed, an error, the deadline).
    struct Wait {
        Connection& c;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> h) noexcept { c.waiter_ = h; }
        void await_resume() const noexcept {}
        // A coroutine destroyed while it waits must not be resumed later.
        ~Wait() { c.waiter_ = {}; }
    };
    /// See Wait.
    Wait wait() noexcept { return Wait{*this}; }

    /// Arms reading when it is not (after back-pressure or a lent piece). May deliver bytes
    /// at once (the caller re-checks before it waits).
    void read_on() {
        if (!t.closed() && !t.reading() && !eof && !error) t.read();
    }
    /// Sets the deadline (monotonic ms; 0: none) at which a waiting coroutine is woken with
    /// timed_out set.
    void set_deadline(std::uint64_t ms);
    /// Marks the connection idle in its pool, with its idle deadline.
    void park(std::uint64_t idle_deadline_ms);
    /// Takes it out of the pool for a request.
    void unpark() noexcept;
    /// True when an idle connection can carry another request.
    bool usable() const noexcept {
        return !t.closed() && !eof && !error && !broken && !t.io.peer_closed && t.in.empty();
    }
    /// Puts the TLS transform `tls` under the connection (after a proxy's CONNECT tunnel was
    /// opened in plain text) and registers the socket again.
    void start_tls(std::unique_ptr<tls::Stream> tls);
    /// Closes the socket (the object is freed later by the pool); an idle, sound TLS
    /// connection says close_notify first (a session closed without it is not resumed).
    void close() noexcept { t.close(clean_close || (idle && usable())); }

    // StreamOwner / IoSink.
    Buffer& read_buffer() override { return t.input(); }
    bool on_read(ssize_t n) override;
    void on_read_none() override;
    void on_write_ready() override;
    bool on_handshake(std::string_view alpn) override;

    /// Resumes the waiting coroutine, if any.
    void wake() {
        if (waiter_) {
            const std::coroutine_handle<> h = waiter_;
            waiter_ = {};
            h.resume();
        }
    }

    net::Transport t;
    OriginPool* pool;
    std::string alpn;
    std::uint64_t deadline = 0;
    int error = 0;           // errno of a failed read or write (EPROTO: TLS)
    bool eof = false;        // the peer ended its side
    bool timed_out = false;  // the deadline passed
    bool handshake_done = false;
    bool idle = false;         // parked in the pool
    bool broken = false;       // bytes arrived while idle
    bool lent = false;         // a body piece points into the input: do not read more yet
    bool clean_close = false;  // a sound HTTP/2 connection no longer needed: close_notify
    std::uint64_t idle_deadline = 0;
    /// HTTP/2 (ALPN h2 or h2c): the session shared by the requests on it; they are driven by
    /// its callbacks instead of a waiting coroutine.
    std::unique_ptr<H2Conn> h2;

  private:
    static void fire(TimerWheel::Entry* e);
    void on_timer();

    std::coroutine_handle<> waiter_{};
};

}  // namespace vela::http::detail
