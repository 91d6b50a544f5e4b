#include "epoll_backend.hpp"

#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace vela {

EpollBackend::EpollBackend() : epfd_(epoll_create1(EPOLL_CLOEXEC)) {
    if (epfd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
}

EpollBackend::~EpollBackend() { ::close(epfd_); }

void EpollBackend::add(IoHandle& h) {
    epoll_event ev{};
    ev.data.ptr = &h;
    switch (h.kind) {
        case IoHandle::stream:
            ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
            break;
        case IoHandle::listener:
            ev.events = EPOLLIN;
            h.accepting = true;
            break;
        case IoHandle::notify:
            ev.events = EPOLLIN;
            break;
        case IoHandle::await_write:
            ev.events = EPOLLOUT;
            break;
        case IoHandle::watch:
            ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
            break;
    }
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, h.fd, &ev) < 0)
        throw std::system_error(errno, std::generic_category(), "epoll_ctl add");
    h.registered = true;
}

void EpollBackend::remove(IoHandle& h) {
    if (!h.registered) return;
    epoll_ctl(epfd_, EPOLL_CTL_DEL, h.fd, nullptr);
    h.registered = false;
    h.reading = false;
    h.write_wanted = false;
    // A removed handle may still appear in the current batch of events: poll() checks
    // `registered` before dispatching, and the owner defers freeing until after the batch.
}

void EpollBackend::read_into(IoHandle& h) {
    // Edge-triggered: an edge may already have passed while reads were stopped, so try now.
    h.reading = true;
    do_read(h);
}

// Edge-triggered epoll reports the peer's FIN once, possibly together with the last bytes
// (or while reads were paused): once it has been seen, a short read no longer means drained,
// so reading goes on until read() returns 0.
void EpollBackend::do_read(IoHandle& h) {
    while (h.reading && h.registered) {
        Buffer& b = h.sink->read_buffer();
        if (b.writable() < 1024) b.ensure_writable(b.capacity() ? b.capacity() : 16 * 1024);
        const std::size_t room = b.writable();
        ssize_t n = ::read(h.fd, b.write_ptr(), room);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                h.sink->on_read_none();
                return;
            }
            if (errno == EINTR) continue;
            n = -errno;
        } else if (n > 0) {
            b.commit(static_cast<std::size_t>(n));
            if (h.count_bytes) [[unlikely]]
                byte_counters_->read.add(static_cast<std::uint64_t>(n));
        }
        if (!h.sink->on_read(n)) return;
        if (n <= 0 || (static_cast<std::size_t>(n) < room && !h.peer_closed))
            return;  // short read: drained
    }
}

// Both writes in one place; inlined into each, so the plain write costs nothing extra.
[[gnu::always_inline]] inline ssize_t EpollBackend::write_flags(IoHandle& h, const iovec* iov,
                                                                int iovcnt, int flags) {
    ssize_t n;
    do {
        if (iovcnt == 1) {
            n = ::send(h.fd, iov[0].iov_base, iov[0].iov_len, flags);
        } else {  // sendmsg, not writev: MSG_NOSIGNAL even where SIGPIPE is not ignored
            msghdr m{};
            m.msg_iov = const_cast<iovec*>(iov);
            m.msg_iovlen = static_cast<std::size_t>(iovcnt);
            n = ::sendmsg(h.fd, &m, flags);
        }
    } while (n < 0 && errno == EINTR);
    std::size_t total = 0;
    for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -errno;
        h.write_wanted = true;
        return 0;
    }
    h.write_wanted = static_cast<std::size_t>(n) < total;
    if (h.count_bytes) [[unlikely]]
        byte_counters_->written.add(static_cast<std::uint64_t>(n));
    return n;
}

ssize_t EpollBackend::write_from(IoHandle& h, const iovec* iov, int iovcnt) {
    return write_flags(h, iov, iovcnt, MSG_NOSIGNAL);
}

ssize_t EpollBackend::write_more(IoHandle& h, const iovec* iov, int iovcnt) {
    return write_flags(h, iov, iovcnt, MSG_NOSIGNAL | MSG_MORE);
}

ssize_t EpollBackend::send_file(IoHandle& h, int file_fd, std::uint64_t offset, std::size_t count) {
    off_t off = static_cast<off_t>(offset);
    ssize_t n;
    do {
        n = ::sendfile(h.fd, file_fd, &off, count);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -errno;
        h.write_wanted = true;
        return 0;
    }
    if (n == 0 && count > 0) return -ENODATA;  // the file ended before `count` bytes
    h.write_wanted = static_cast<std::size_t>(n) < count;
    if (h.count_bytes) [[unlikely]]
        byte_counters_->written.add(static_cast<std::uint64_t>(n));
    return n;
}

void EpollBackend::set_accepting(IoHandle& h, bool on) {
    if (h.accepting == on || !h.registered) return;
    epoll_event ev{};
    ev.data.ptr = &h;
    ev.events = on ? static_cast<std::uint32_t>(EPOLLIN) : 0u;
    epoll_ctl(epfd_, EPOLL_CTL_MOD, h.fd, &ev);
    h.accepting = on;
}

void EpollBackend::do_accept(IoHandle& h) {
    // Level-triggered: a bounded batch per wake-up keeps one busy listener from starving
    // the connections already accepted.
    for (int i = 0; i < 64 && h.accepting && h.registered; ++i) {
        int fd = ::accept4(h.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            if (errno == EINTR || errno == ECONNABORTED) continue;
            h.sink->on_accept(-errno);
            return;
        }
        h.sink->on_accept(fd);
    }
}

void EpollBackend::poll(int timeout_ms, IoSink& woke) {
    int n = epoll_wait(epfd_, events_, 256, timeout_ms);
    woke.on_ready();
    for (int i = 0; i < n; ++i) {
        auto* h = static_cast<IoHandle*>(events_[i].data.ptr);
        const std::uint32_t ev = events_[i].events;
        if (!h->registered) continue;
        if (h->kind == IoHandle::stream) [[likely]] {  // connections: the hot path
            if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                if (ev & (EPOLLRDHUP | EPOLLHUP)) h->peer_closed = true;
                if (h->reading) {
                    do_read(*h);
                } else if (ev & (EPOLLHUP | EPOLLERR)) {
                    // Not reading (paused or busy) but the socket died: report it.
                    if (!h->sink->on_read(-ECONNRESET)) continue;
                } else if ((ev & EPOLLRDHUP) && h->report_fin) {
                    if (!h->sink->on_read(0)) continue;
                }
            }
            if ((ev & EPOLLOUT) && h->registered && h->write_wanted) h->sink->on_write_ready();
            continue;
        }
        switch (h->kind) {
            case IoHandle::listener:
                do_accept(*h);
                break;
            case IoHandle::notify:
            case IoHandle::await_write:
                h->sink->on_ready();
                break;
            case IoHandle::watch:
                if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) h->sink->on_ready();
                if ((ev & EPOLLOUT) && h->registered) h->sink->on_write_ready();
                break;
            case IoHandle::stream:  // handled above
                break;
        }
    }
}

}  // namespace vela
