#pragma once
// co_await readiness of any file descriptor on the current loop:
//
//     co_await vela::net::readable(fd);   // resumes when fd has bytes (or EOF/error)
//     co_await vela::net::writable(fd);   // resumes when fd can take bytes
//
// The fd is registered for the wait and removed before the coroutine resumes, so the same
// fd can be awaited again or handed to anything else. Only one wait per fd at a time.

#include <coroutine>
#include <stdexcept>

#include "vela/reactor/io_backend.hpp"
#include "vela/reactor/loop.hpp"

namespace vela::net {

/// Suspends a coroutine until an fd is readable or writable on the current loop.
class ReadinessAwaiter : private IoSink {
  public:
    /// Waits for `fd` to become writable (`write`) or readable (otherwise).
    ReadinessAwaiter(int fd, bool write) noexcept {
        handle_.fd = fd;
        handle_.kind = write ? IoHandle::await_write : IoHandle::notify;
        handle_.sink = this;
    }
    /// Always false: the wait starts in await_suspend.
    bool await_ready() const noexcept { return false; }
    /// Registers the fd with this thread's loop; throws std::logic_error when none is running.
    void await_suspend(std::coroutine_handle<> h) {
        loop_ = Loop::current();
        if (!loop_) throw std::logic_error("readiness wait needs a running Loop");
        waiter_ = h;
        loop_->io().add(handle_);
    }
    /// Returns nothing: the fd is ready (or at EOF or in error).
    void await_resume() const noexcept {}

  private:
    void on_ready() override {
        loop_->io().remove(handle_);
        waiter_.resume();
    }
    IoHandle handle_;
    Loop* loop_ = nullptr;
    std::coroutine_handle<> waiter_;
};

/// Suspends until `fd` is readable.
inline ReadinessAwaiter readable(int fd) noexcept { return ReadinessAwaiter(fd, false); }
/// Suspends until `fd` is writable.
inline ReadinessAwaiter writable(int fd) noexcept { return ReadinessAwaiter(fd, true); }

}  // namespace vela::net
