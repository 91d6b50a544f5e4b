#pragma once
// The epoll implementation of IoBackend.
//
// Streams are registered once, edge-triggered, for input, output and peer hang-up: no
// epoll_ctl is made per request. A read that fills less than the offered buffer means the
// socket is drained (no extra read to see EAGAIN). Listeners are level-triggered so that
// a connection cap can pause accepting by disarming them.

#include <sys/epoll.h>

#include "vela/reactor/io_backend.hpp"

namespace vela {

class EpollBackend final : public IoBackend {
  public:
    EpollBackend();
    ~EpollBackend() override;

    void add(IoHandle& h) override;
    void remove(IoHandle& h) override;
    void read_into(IoHandle& h) override;
    void stop_reading(IoHandle& h) override { h.reading = false; }
    ssize_t write_from(IoHandle& h, const iovec* iov, int iovcnt) override;
    ssize_t write_more(IoHandle& h, const iovec* iov, int iovcnt) override;
    ssize_t send_file(IoHandle& h, int file_fd, std::uint64_t offset, std::size_t count) override;
    void set_accepting(IoHandle& h, bool on) override;
    void poll(int timeout_ms, IoSink& woke) override;

  private:
    void do_read(IoHandle& h);
    ssize_t write_flags(IoHandle& h, const iovec* iov, int iovcnt, int flags);
    static void do_accept(IoHandle& h);

    int epfd_;
    epoll_event events_[256];
};

}  // namespace vela
