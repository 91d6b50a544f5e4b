#pragma once
// The I/O backend seam: operations, not readiness.
//
// Connection code asks the backend for three operations on a file descriptor:
//   accept      - "tell me about each new connection on this listener",
//   read_into   - "when bytes arrive, read them into a buffer I hand you, then tell me",
//   write_from  - "send these bytes; tell me when you can take the rest".
// The epoll backend performs them on readiness (one edge-triggered registration per
// socket, so no epoll_ctl per request). An io_uring backend would submit them as SQEs
// and complete them from the CQ: that is why read_into asks the sink for its buffer only
// when data is there (buffer rings work the same way) and why write_from may report
// that bytes are still pending.
//
// One backend belongs to one Loop and is used from that loop's thread only.

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>

#include "vela/base/buffer.hpp"
#include "vela/base/loop_counter.hpp"

namespace vela {

/// Receives the completions of operations started on an IoHandle.
class IoSink {
  public:
    /// Virtual, as every sink is a derived class.
    virtual ~IoSink() = default;
    /// read_into: a buffer to read into now (borrowed by the sink, e.g. from the loop pool).
    virtual Buffer& read_buffer() {
        // Only stream sinks read; a shared empty buffer keeps the others from carrying one.
        static thread_local Buffer none;
        return none;
    }
    /// read_into completed: `n` bytes were appended (0 = peer closed, <0 = -errno). Return
    /// false when the handle was closed or reading was stopped inside the callback.
    virtual bool on_read(ssize_t n) {
        (void)n;
        return false;
    }
    /// read_into found nothing to read: the sink may give back the buffer read_buffer() lent
    /// (a connection waiting for its first or next bytes holds none).
    virtual void on_read_none() {}
    /// write_from: the socket can take more bytes.
    virtual void on_write_ready() {}
    /// accept: a connection arrived (fd is non-blocking, close-on-exec), or -errno.
    virtual void on_accept(int fd) { (void)fd; }
    /// A plain readiness wake-up (eventfd, signalfd).
    virtual void on_ready() {}
};

/// Bytes read and written through IoHandles that point at them (metrics; written by the
/// loop's thread only).
struct IoCounters {
    /// Bytes read.
    LoopCounter read;
    /// Bytes written (sendfile included).
    LoopCounter written;
};

/// One file descriptor watched by a backend.
struct IoHandle {
    /// The descriptor.
    int fd = -1;
    /// Receives the completions for `fd`.
    IoSink* sink = nullptr;
    /// stream: read_into/write_from; listener: accept; notify: on_ready when readable;
    /// await_write: on_ready when writable; watch: edge-triggered readiness of a socket some
    /// library reads and writes itself (libpq): on_ready on each readable edge (or hang-up,
    /// error), on_write_ready on each writable edge, for as long as it stays added.
    enum Kind : std::uint8_t { stream, listener, notify, await_write, watch } kind = stream;
    /// read_into is armed (kept by the backend).
    bool reading = false;
    /// write_from has bytes pending (kept by the backend).
    bool write_wanted = false;
    /// Added to the backend and not removed since (kept by the backend).
    bool registered = false;
    /// A listener is accepting (kept by the backend; see set_accepting()).
    bool accepting = false;
    /// The peer's FIN (or a hang-up) has been reported (kept by the backend).
    bool peer_closed = false;
    /// stream: also report the peer's FIN as on_read(0) while reading is stopped (set by the
    /// owner; a hang-up or error is always reported).
    bool report_fin = false;
    /// stream: add the bytes read and written through it to the backend's byte_counters
    /// (set by the owner, only while the backend has them; metrics). A flag rather than a
    /// pointer: every connection carries a handle, and this byte fits its padding.
    bool count_bytes = false;
};

/// Performs operations on IoHandles for one Loop (see above; epoll implements it).
class IoBackend {
  public:
    /// Virtual, as every backend is a derived class.
    virtual ~IoBackend() = default;
    /// Where handles with count_bytes add their bytes (nullptr: none may ask); set on the
    /// loop's thread before such handles are added (metrics).
    void set_byte_counters(IoCounters* c) noexcept { byte_counters_ = c; }
    /// The byte counters set above.
    IoCounters* byte_counters() const noexcept { return byte_counters_; }
    /// Starts watching `h` (stream: reads and writes; listener: accepts; notify, await_write:
    /// on_ready).
    virtual void add(IoHandle& h) = 0;
    /// Stops watching `h`; no callback for it runs afterwards.
    virtual void remove(IoHandle& h) = 0;
    /// Arms read_into: on_read runs each time bytes were read into sink->read_buffer().
    virtual void read_into(IoHandle& h) = 0;
    /// Disarms read_into (back-pressure); already-buffered bytes stay in the kernel.
    virtual void stop_reading(IoHandle& h) = 0;
    /// Writes what it can of `iov` now; returns bytes written (0 when none fit) or -errno.
    /// When it returns less than asked, on_write_ready runs once more can be written.
    virtual ssize_t write_from(IoHandle& h, const iovec* iov, int iovcnt) = 0;
    /// As write_from, telling the kernel that more bytes follow at once (MSG_MORE): a response
    /// head written before send_file then leaves in the same packets as the file's bytes.
    virtual ssize_t write_more(IoHandle& h, const iovec* iov, int iovcnt) = 0;
    /// Sends up to `count` bytes of the file `file_fd` from `offset` (sendfile(2): the bytes go
    /// from the page cache to the socket without a copy); returns bytes sent (0 when none fit)
    /// or -errno. When it sends less than asked, on_write_ready runs once more can be written.
    virtual ssize_t send_file(IoHandle& h, int file_fd, std::uint64_t offset,
                              std::size_t count) = 0;
    /// Pauses (false) or resumes (true) accepting on a listener.
    virtual void set_accepting(IoHandle& h, bool on) = 0;
    /// Waits up to `timeout_ms` (-1: forever), calls `woke.on_ready()`, then runs the
    /// completions that are due. The loop reads its clock in `woke`: completions after a long
    /// wait must not see the time at which it began.
    virtual void poll(int timeout_ms, IoSink& woke) = 0;

  protected:
    IoCounters* byte_counters_ = nullptr;  // see set_byte_counters()
};

}  // namespace vela
