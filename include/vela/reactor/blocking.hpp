#pragma once
// Blocking work off the loop: run a function on a thread of a small process-wide pool and
// resume the awaiting coroutine on its own loop with the result.
//
//     auto hash_it = [pw = std::string(password)] { return slow_hash(pw); };
//     std::string hash = co_await vela::run_blocking(std::move(hash_it));
//
// (Name a lambda that owns memory before the co_await, as above: GCC 12 destroys the
// captures of a closure written inside a co_await expression twice.)
//
// Threads: the function runs on a pool thread (it must not touch loop-owned objects); the
// awaiting coroutine is resumed on the loop it was suspended on, by a post to that loop. An
// awaiter must be on a running vela::Loop (std::logic_error otherwise). If the awaiting
// coroutine is destroyed while the function runs (on its own loop, e.g. a handler abandoned
// at shutdown), the function still runs to its end, its result is dropped and nothing is
// resumed; if the loop is gone, the resumption is dropped.
//
// The same machinery (BlockingState, BlockingAwaiter, WorkQueue) serves other blocking
// clients with threads of their own, e.g. the SQLite backend of vela::db.
#include <condition_variable>
#include <coroutine>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "vela/base/unique_function.hpp"
#include "vela/reactor/loop.hpp"

namespace vela {

/// A queue of work items shared by worker threads: push from any thread, pop blocks.
template <class T>
class WorkQueue {
  public:
    /// Adds `item`; false (and `item` dropped) once closed.
    bool push(T item) {
        {
            std::lock_guard lk(mu_);
            if (closed_) return false;
            items_.push_back(std::move(item));
        }
        cv_.notify_one();
        return true;
    }
    /// The next item, waiting for one; nullopt once closed and drained.
    std::optional<T> pop() {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return closed_ || !items_.empty(); });
        if (items_.empty()) return std::nullopt;
        T item = std::move(items_.front());
        items_.pop_front();
        return item;
    }
    /// Refuses new items; pop() drains the queued ones, then returns nullopt.
    void close() {
        {
            std::lock_guard lk(mu_);
            closed_ = true;
        }
        cv_.notify_all();
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<T> items_;
    bool closed_ = false;
};

namespace detail {

// What a blocking operation shares with the coroutine awaiting it. The worker fills in
// `value` or `error` and calls complete(); the resumption runs on the awaiting loop, where
// `abandoned` is also written (by ~BlockingAwaiter), so it needs no atomic.
template <class T>
struct BlockingState {
    std::coroutine_handle<> awaiting;
    LoopRef home;
    std::optional<std::conditional_t<std::is_void_v<T>, char, T>> value{};
    std::exception_ptr error{};
    bool abandoned = false;

    // Any thread, once: resume the awaiter on its loop (nothing if it was destroyed meanwhile
    // or its loop is gone; the state, and any value in it, is freed either way).
    static void complete(std::shared_ptr<BlockingState> s) {
        LoopRef home = s->home;
        home.post([s = std::move(s)] {
            if (!s->abandoned) s->awaiting.resume();
        });
    }
};

// Awaits a blocking operation: `submit(state)` hands the state to a worker, which later
// calls BlockingState<T>::complete(state).
template <class T, class Submit>
class BlockingAwaiter {
  public:
    explicit BlockingAwaiter(Submit submit) : submit_(std::move(submit)) {}
    BlockingAwaiter(const BlockingAwaiter&) = delete;
    BlockingAwaiter& operator=(const BlockingAwaiter&) = delete;
    // Destroyed when the awaiting coroutine resumes or is destroyed: after that nothing may
    // resume it.
    ~BlockingAwaiter() {
        if (state_) state_->abandoned = true;
    }

    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
        Loop* loop = Loop::current();
        if (!loop)
            throw std::logic_error(
                "blocking work must be awaited on a running vela::Loop (spawn the coroutine "
                "on a loop)");
        state_ = std::make_shared<BlockingState<T>>();
        state_->awaiting = h;
        state_->home = loop->ref();
        submit_(state_);
    }
    T await_resume() {
        if (state_->error) std::rethrow_exception(state_->error);
        if constexpr (!std::is_void_v<T>) return std::move(*state_->value);
    }

  private:
    Submit submit_;
    std::shared_ptr<BlockingState<T>> state_;
};

// Runs `work()` and stores its value (or exception) in `s`, then resumes the awaiter.
template <class T, class F>
void complete_with(std::shared_ptr<BlockingState<T>> s, F&& work) {
    try {
        if constexpr (std::is_void_v<T>) {
            work();
            s->value.emplace();
        } else {
            s->value.emplace(work());
        }
    } catch (...) {
        s->error = std::current_exception();
    }
    BlockingState<T>::complete(std::move(s));
}

// Queues `job` on the process-wide blocking pool (started on first use).
void submit_blocking(UniqueFunction job);

}  // namespace detail

/// Runs `fn()` on the process-wide blocking pool and resumes the awaiting coroutine on its
/// loop with the result (or the exception `fn` threw). Use it for CPU-heavy or blocking calls
/// (password hashing, file system walks) that would stall the loop.
template <class F>
auto run_blocking(F fn) {
    using R = std::invoke_result_t<F&>;
    auto submit = [fn = std::move(fn)](std::shared_ptr<detail::BlockingState<R>> s) mutable {
        detail::submit_blocking([s = std::move(s), fn = std::move(fn)]() mutable {
            detail::complete_with(std::move(s), fn);
        });
    };
    return detail::BlockingAwaiter<R, decltype(submit)>(std::move(submit));
}

}  // namespace vela
