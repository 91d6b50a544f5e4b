#pragma once
// The byte transport under a protocol driver: one socket on one loop, the optional TLS
// transform, the wheel entry of the connection's timeouts, and the input and output buffers
// borrowed from the loop's pool. It knows no protocol: the drivers (HTTP/1.1, HTTP/2,
// WebSocket; server or client side) keep only protocol state and frame bytes through it.
//
// The driver is the socket's IoSink (or the TLS stream's owner): the backend calls its
// read_buffer/on_read/on_write_ready, which use the transport's buffers. A driver switch
// (ALPN h2, the h2c preface or Upgrade, a WebSocket upgrade) detaches the transport from the
// backend and the wheel, moves it into the new driver with its unread bytes, TLS state and
// queued output, and the new driver attaches it again. A client connection is the same
// transport over a socket it dialled instead of accepted.

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <utility>

#include "vela/base/buffer.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/reactor/timer_wheel.hpp"
#include "vela/tls/stream.hpp"

namespace vela::net {

/// One connection's socket, TLS transform, timer entry and buffers (see above).
class Transport {
  public:
    /// Takes a detached transport (see detach()); the source is left closed and empty.
    Transport(Transport&& o) noexcept;
    Transport& operator=(Transport&&) = delete;
    Transport(const Transport&) = delete;
    /// Closes the socket if it is still open and returns the buffers.
    ~Transport();

    /// Takes an accepted or dialled socket `fd` and its TLS transform (null on a plain
    /// socket), for a driver to attach(). `count_bytes`: the loop's backend counts this
    /// socket's bytes (metrics).
    Transport(Loop& loop, int fd, std::unique_ptr<tls::Stream> tls, bool count_bytes) noexcept;
    /// Points the socket at `driver`: its completions go to the driver, through the TLS
    /// transform when there is one, and the timer entry fires `fire` with `owner`. Also what
    /// the next driver does with a transport moved to it by a driver switch.
    void attach(tls::StreamOwner& driver, void* owner, void (*fire)(TimerWheel::Entry*)) noexcept;
    /// Registers the socket with the loop's backend (after attach()).
    void add() { loop_->io().add(io); }
    /// Takes the socket off the backend and the wheel for a driver switch; the fd, the TLS
    /// transform and the buffers stay, for the transport to be moved to the next driver.
    void detach() noexcept;

    /// The loop this transport lives on.
    Loop& loop() const noexcept { return *loop_; }
    /// True once the socket was closed (or the transport moved to another driver).
    bool closed() const noexcept { return closed_; }
    /// True on a TLS connection.
    bool secure() const noexcept { return tls != nullptr; }

    /// Writes `v` through the TLS transform when there is one (one predictable branch on plain
    /// sockets). Returns the bytes taken (0: the socket is full; on_write_ready follows) or
    /// -errno.
    ssize_t send(const iovec* v, int n) {
        return tls ? tls->write(v, n) : loop_->io().write_from(io, v, n);
    }
    /// Writes the output buffer until it is empty or the socket is full. Returns -1 on a
    /// socket error (the caller closes), 0 when bytes remain, 1 when it is empty; `more`: more
    /// bytes follow at once (sendfile), so the kernel may hold these back to fill packets.
    int write_out(bool more = false);

    /// The input buffer to read into: a pooled one (the loop's most recently used, so in
    /// practice the loop's one read buffer), with the leftover bytes keep_input() kept moved
    /// to its front.
    Buffer& input() {
        if (in.capacity() == 0)
            loop_->buffers().acquire(in);
        else if (in.capacity() < loop_->buffers().buffer_size()) [[unlikely]]
            take_leftover();
        return in;
    }
    /// After the driver parsed what it could, and no view into the input is kept: an empty
    /// buffer goes back to the pool; the leftover bytes of a partial message, up to
    /// kLeftoverMax, move to an allocation of their own size (an idle connection holding
    /// half a request keeps those bytes, not a pooled buffer). More stay where they are, and
    /// so does a buffer grown past the pooled size (a connection reading that much is busy).
    void keep_input() noexcept {
        if (in.empty()) {
            if (in.capacity()) loop_->buffers().release(in);
        } else if (in.size() <= kLeftoverMax && in.capacity() == loop_->buffers().buffer_size()) {
            keep_leftover();
        }
    }
    /// The most leftover bytes keep_input() moves out of a pooled buffer.
    static constexpr std::size_t kLeftoverMax = 4096;
    /// The output buffer, borrowed from the pool when it holds none.
    Buffer& output() {
        if (out.capacity() == 0) loop_->buffers().acquire(out);
        return out;
    }
    /// Gives an empty input buffer back to the pool (an idle connection holds none).
    void release_input_if_empty() noexcept {
        if (in.empty() && in.capacity()) loop_->buffers().release(in);
    }
    /// Gives an empty output buffer back to the pool.
    void release_output_if_empty() noexcept {
        if (out.empty() && out.capacity()) loop_->buffers().release(out);
    }
    /// Gives both buffers back to the pool, whatever they hold.
    void release_buffers() noexcept;

    /// Reads now (the backend calls the driver's on_read once per read).
    void read() { loop_->io().read_into(io); }
    /// Stops reading (back-pressure; a handler owns the request).
    void stop_reading() { loop_->io().stop_reading(io); }
    /// True while reading is armed.
    bool reading() const noexcept { return io.reading; }
    /// Reads again from the loop, not from the caller's frame (a read at once could run the
    /// driver inside itself, one stack frame deeper each time), if the socket is still open,
    /// not reading, and `still()` says reading is still wanted then.
    template <class Still>
    void read_later(Still still) {
        loop_->defer([this, still] {
            if (!closed_ && !io.reading && still()) read();
        });
    }

    /// Schedules the timer entry to fire no later than `deadline_ms`. Cheap when the entry
    /// already fires before then: a deadline that moves later costs a store in the driver,
    /// and the entry, firing early, re-arms (see rearm()).
    void arm(std::uint64_t deadline_ms) {
        const std::uint64_t tick = loop_->wheel().tick_ms();
        if (timer.linked() && timer.expiry * tick <= deadline_ms + tick) return;
        schedule(deadline_ms);
    }
    /// Schedules the timer entry for `deadline_ms` (replacing its current expiry).
    void schedule(std::uint64_t deadline_ms);
    /// For a timer that fired: true when `deadline_ms` has come; otherwise the entry is
    /// scheduled again for it.
    bool due(std::uint64_t deadline_ms);
    /// Stops the timer entry.
    void disarm() noexcept { loop_->wheel().cancel(timer); }

    /// Half-close after the last bytes: TLS close_notify first, then the write side is shut
    /// down if every byte has left by now; if the socket is full, the TLS stream sends the
    /// rest as it drains and the TCP FIN waits for close() (the peer still reads all of it
    /// first). Reading goes on.
    void shutdown_write();
    /// Closes the socket: takes it off the wheel and the backend and closes the fd (with TLS,
    /// a best-effort close_notify first when `notify`). Buffers stay until release_buffers()
    /// or destruction. No-op when already closed.
    void close(bool notify = true) noexcept;

    // The parts, for the driver's hot paths and the backend (the transport owns them).
    IoHandle io;
    TimerWheel::Entry timer;
    std::unique_ptr<tls::Stream> tls;
    Buffer in;
    Buffer out;

  private:
    void take_leftover();
    void keep_leftover() noexcept;

    Loop* loop_;
    bool closed_ = false;
};

}  // namespace vela::net
