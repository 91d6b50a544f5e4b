#include "vela/net/transport.hpp"

#include <sys/socket.h>
#include <unistd.h>

namespace vela::net {

Transport::Transport(Transport&& o) noexcept
    : tls(std::move(o.tls)),
      in(std::move(o.in)),
      out(std::move(o.out)),
      loop_(o.loop_),
      closed_(o.closed_) {
    // Only a detached transport moves: its handle is off the backend and its entry off the
    // wheel, so nothing points at the old addresses.
    io.fd = o.io.fd;
    io.kind = IoHandle::stream;
    io.count_bytes = o.io.count_bytes;
    o.io.fd = -1;
    o.closed_ = true;
}

Transport::~Transport() {
    close(false);
    release_buffers();
}

Transport::Transport(Loop& loop, int fd, std::unique_ptr<tls::Stream> t, bool count_bytes) noexcept
    : tls(std::move(t)), loop_(&loop) {
    io.fd = fd;
    io.kind = IoHandle::stream;
    io.count_bytes = count_bytes;
}

void Transport::attach(tls::StreamOwner& driver, void* owner,
                       void (*fire)(TimerWheel::Entry*)) noexcept {
    // With TLS, ciphertext goes to the transform and plaintext comes to the driver.
    io.sink = tls ? static_cast<IoSink*>(tls.get()) : &driver;
    timer.fire = fire;
    timer.owner = owner;
    if (tls) tls->bind(io, driver);
}

void Transport::detach() noexcept {
    loop_->wheel().cancel(timer);
    loop_->io().remove(io);
}

int Transport::write_out(bool more) {
    while (!out.empty()) {
        iovec v{out.data(), out.size()};
        const ssize_t n = more ? loop_->io().write_more(io, &v, 1) : send(&v, 1);
        if (n < 0) return -1;
        if (n == 0) return 0;
        out.consume(static_cast<std::size_t>(n));
    }
    return 1;
}

void Transport::take_leftover() {
    Buffer leftover = std::move(in);  // (freed on return)
    loop_->buffers().acquire(in);
    in.append(leftover.data(), leftover.size());
}

void Transport::keep_leftover() noexcept {
    try {
        Buffer small((in.size() + 63) & ~std::size_t{63});
        small.append(in.data(), in.size());
        loop_->buffers().release(in);
        in = std::move(small);
    } catch (...) {  // out of memory: the pooled buffer stays
    }
}

void Transport::release_buffers() noexcept {
    if (in.capacity()) loop_->buffers().release(in);
    if (out.capacity()) loop_->buffers().release(out);
}

void Transport::schedule(std::uint64_t deadline_ms) {
    TimerWheel& w = loop_->wheel();
    const std::uint64_t now = loop_->now_ms();
    w.schedule(timer, now, deadline_ms > now ? deadline_ms - now : 0);
}

bool Transport::due(std::uint64_t deadline_ms) {
    const std::uint64_t now = loop_->now_ms();
    if (now >= deadline_ms) return true;
    loop_->wheel().schedule(timer, now, deadline_ms - now);
    return false;
}

void Transport::shutdown_write() {
    if (!tls || tls->close_notify()) ::shutdown(io.fd, SHUT_WR);
}

void Transport::close(bool notify) noexcept {
    if (closed_) return;
    closed_ = true;
    if (notify && tls) tls->close_notify();  // best effort: the connection ends cleanly
    loop_->wheel().cancel(timer);
    loop_->io().remove(io);
    ::close(io.fd);
    io.fd = -1;
}

}  // namespace vela::net
