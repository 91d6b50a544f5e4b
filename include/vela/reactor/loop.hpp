#pragma once
// Loop: one event loop per thread, and the rules of who may touch what.
//
// vela runs one Loop per core. Each loop owns, exclusively and without locks, its I/O
// backend, the connections accepted by its listener, its buffer pool, its timing wheel,
// its timers and its cached Date header. Nothing a loop owns is touched by another
// thread. The only ways in from outside are thread-safe by design:
//   - post(fn): queue a function to run on the loop's thread (a lock-free MPSC queue
//     plus an eventfd wake-up, coalesced so a burst of posts costs one write);
//   - stop(): ask run() to return;
//   - vela::on(loop, task): run a Task on that loop and resume the caller on its own.
// Coroutines that suspend on a loop (sleep, socket readiness) are resumed on that loop.
// A Loop must outlive every thread that may still post to it.

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/base/buffer.hpp"
#include "vela/base/date_cache.hpp"
#include "vela/base/unique_function.hpp"
#include "vela/reactor/io_backend.hpp"
#include "vela/reactor/timer_wheel.hpp"

namespace vela {

/// Settings of one Loop.
struct LoopOptions {
    /// Resolution of the connection-timeout wheel.
    std::uint64_t wheel_tick_ms = 100;
    /// Capacity of a pooled I/O buffer.
    std::size_t buffer_size = 16 * 1024;
};

class Loop;

namespace detail {
// Shared by a Loop and every LoopRef to it; the Loop clears `loop` when it is destroyed.
// What LoopRefs share with their loop. Posting takes no lock: a poster announces itself in
// `posting`, then reads `loop`; the loop's destructor clears `loop`, then waits until no
// poster is inside (both sides sequentially consistent, so one of them sees the other).
struct LoopGate {
    explicit LoopGate(Loop* l) noexcept : loop(l) {}
    std::atomic<Loop*> loop;
    std::atomic<int> posting{0};
};
}  // namespace detail

/// A handle that may outlive its Loop: post() reaches the loop while it exists and does
/// nothing after it was destroyed. Thread-safe; cheap to copy.
class LoopRef {
  public:
    /// Refers to no loop (post() returns false).
    LoopRef() noexcept = default;
    /// Queues `fn` on the loop; false (and `fn` dropped) once the loop is gone.
    bool post(UniqueFunction fn) const;
    /// True when this refers to a loop at all (it may be gone since).
    explicit operator bool() const noexcept { return static_cast<bool>(gate_); }
    /// True when both refer to the same loop (a loop made later at the same address is
    /// another loop).
    bool same_loop(const LoopRef& o) const noexcept { return gate_ == o.gate_; }
    /// True while the loop exists (it may be gone by the time the answer is used, unless
    /// the caller is on that loop).
    bool alive() const;

  private:
    friend class Loop;
    explicit LoopRef(std::shared_ptr<detail::LoopGate> g) noexcept : gate_(std::move(g)) {}
    std::shared_ptr<detail::LoopGate> gate_;
};

/// One event loop: I/O readiness, posted work, timers and signals, run on one thread.
class Loop {
  public:
    /// The clock timers and now_ms() follow.
    using Clock = std::chrono::steady_clock;

    /// Creates a loop (epoll backend); it runs on whichever thread calls run().
    explicit Loop(LoopOptions options = {});
    /// Runs work still posted to it, then closes its descriptors.
    ~Loop();
    /// Not copyable (registered handles point into it).
    Loop(const Loop&) = delete;
    Loop& operator=(const Loop&) = delete;

    /// The loop running on this thread, or nullptr.
    static Loop* current() noexcept;

    /// Runs until stop() is called. Posted work still queued at that point is run first.
    void run();
    /// Makes run() return after the current iteration. Thread-safe.
    void stop() noexcept;
    /// True while run() is executing.
    bool running() const noexcept { return running_.load(std::memory_order_acquire); }

    /// Queues `fn` to run on this loop's thread. Thread-safe.
    void post(UniqueFunction fn);
    /// Starts `task` on this loop's thread. Thread-safe.
    void spawn(Task<void> task);
    /// A handle for posting to this loop from code that may outlive it.
    LoopRef ref() const { return LoopRef(gate_); }

    /// Runs `fn` on this loop's thread right after the current batch of I/O completions
    /// (loop thread only): the place to free objects an I/O callback closed.
    void defer(UniqueFunction fn) { deferred_.push_back(std::move(fn)); }

    /// Runs `fn` when the loop is destroyed, while its backend, wheel and buffers still exist
    /// (loop thread only, or before the loop runs): where a client frees the connections it
    /// keeps on this loop.
    void at_exit(UniqueFunction fn) { at_exit_.push_back(std::move(fn)); }

    /// Runs `fn` on this loop after `delay` (loop thread only). Returns an id for cancel().
    std::uint64_t call_after(std::chrono::milliseconds delay, UniqueFunction fn);
    /// Cancels a call_after that has not run yet.
    void cancel(std::uint64_t id) noexcept;
    /// Calls `fn(signo)` on this loop when one of `signals` arrives. The signals are blocked
    /// for the calling thread (block them before starting other threads; see
    /// block_signals()).
    void on_signals(std::vector<int> signals, std::function<void(int)> fn);

    /// The I/O backend of this loop.
    IoBackend& io() noexcept { return *io_; }
    /// The connection-timeout wheel.
    TimerWheel& wheel() noexcept { return wheel_; }
    /// The pool of read/write buffers.
    BufferPool& buffers() noexcept { return buffers_; }
    /// Buffers the pool keeps for the next burst of load; past a burst, the rest are freed.
    static constexpr std::size_t kKeptBuffers = 4;
    /// How long after the load the loop gives memory back, at most (it does on the second).
    static constexpr std::uint64_t kTrimPeriodMs = 1000;
    /// Adds `trim` to what runs when the loop gives memory back (at most once a
    /// kTrimPeriodMs, while there is anything to give): it frees what a pool of its keeps
    /// beyond its floor and returns the bytes freed.
    void add_trim(std::function<std::size_t()> trim) { trims_.push_back(std::move(trim)); }
    /// Memory was freed that the C library would keep (connections closed): give it back to
    /// the system at the next trim, within kTrimPeriodMs even if the loop has nothing to do.
    void trim_later() noexcept;
    /// The Date header value, refreshed once per iteration.
    std::string_view http_date() const noexcept { return date_.get(); }
    /// Milliseconds on the monotonic clock, read once per iteration.
    std::uint64_t now_ms() const noexcept { return now_ms_; }

  private:
    struct Posted;
    struct Timer {
        Clock::time_point when;
        std::uint64_t id;
        bool operator>(const Timer& o) const noexcept {
            return when != o.when ? when > o.when : id > o.id;
        }
    };
    class WakeSink;
    class ClockSink;
    class SignalSink;

    void refresh_clock() noexcept;
    void run_posted();
    void run_timers();
    void run_deferred();
    int poll_timeout() const noexcept;
    [[gnu::cold, gnu::noinline]] void trim_memory() noexcept;

    std::shared_ptr<detail::LoopGate> gate_;
    std::unique_ptr<IoBackend> io_;
    TimerWheel wheel_;
    BufferPool buffers_;
    DateCache date_;
    std::uint64_t now_ms_ = 0;
    bool trim_wanted_ = false;
    TimerWheel::Entry trim_entry_;  // wakes an idle loop for a wanted trim
    std::vector<std::function<std::size_t()>> trims_;
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_{false};

    // MPSC queue (Vyukov): producers exchange the tail, the loop pops from the head.
    std::atomic<Posted*> tail_;
    Posted* head_;
    std::atomic<bool> wake_pending_{false};
    int wake_fd_ = -1;
    IoHandle wake_handle_;
    std::unique_ptr<WakeSink> wake_sink_;

    std::vector<UniqueFunction> deferred_;
    std::vector<UniqueFunction> deferred_running_;
    std::vector<UniqueFunction> at_exit_;
    std::vector<Timer> timers_;  // min-heap on `when`
    std::unordered_map<std::uint64_t, UniqueFunction> timer_fns_;
    std::uint64_t next_timer_id_ = 1;

    int signal_fd_ = -1;
    IoHandle signal_handle_;
    std::unique_ptr<SignalSink> signal_sink_;
};

/// Blocks SIGINT, SIGTERM, SIGHUP and SIGUSR2 (and ignores SIGPIPE) in the calling thread; threads
/// started afterwards inherit the mask, so only a Loop's signalfd sees them.
void block_signals() noexcept;

namespace detail {
struct SleepAwaiter {
    std::chrono::milliseconds delay;
    bool await_ready() const noexcept { return delay.count() <= 0; }
    void await_suspend(std::coroutine_handle<> h);
    void await_resume() const noexcept {}
};
}  // namespace detail

/// Suspends the calling coroutine for `d` on the current loop (millisecond resolution).
inline detail::SleepAwaiter sleep(std::chrono::milliseconds d) noexcept { return {d}; }

namespace detail {
// What vela::on's two sides share. It outlives the awaiting frame: when that frame is
// destroyed while it waits (a handler abandoned at the shutdown deadline), the other loop
// still finishes the task, stores its result here and posts the resumption home, which
// then sees `abandoned` and resumes nothing.
template <class T>
struct OnState {
    std::coroutine_handle<> awaiting;
    LoopRef home;  // the awaiting loop, which may be destroyed before the task ends
    std::optional<std::conditional_t<std::is_void_v<T>, char, T>> value{};
    std::exception_ptr error{};
    std::atomic<bool> abandoned{false};

    // Runs on the loop that awaited (or right here when the awaiter was on no loop).
    static void resume(const std::shared_ptr<OnState>& s) {
        if (!s->abandoned.load(std::memory_order_acquire)) s->awaiting.resume();
    }
};

template <class T>
struct OnAwaiter {
    Loop& target;
    Task<T> task;
    std::shared_ptr<OnState<T>> state = std::make_shared<OnState<T>>();

    OnAwaiter(Loop& l, Task<T> t) : target(l), task(std::move(t)) {}
    OnAwaiter(const OnAwaiter&) = delete;
    OnAwaiter& operator=(const OnAwaiter&) = delete;
    // Destroyed when the awaiting coroutine resumes or is destroyed; after that nothing may
    // resume it.
    ~OnAwaiter() { state->abandoned.store(true, std::memory_order_release); }

    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
        state->awaiting = h;
        if (Loop* l = Loop::current()) state->home = l->ref();
        target.post([s = state, t = std::move(task)]() mutable {
            auto resume_home = [s] {
                if (s->abandoned.load(std::memory_order_acquire)) return;
                if (s->home)
                    s->home.post([s] { OnState<T>::resume(s); });  // dropped if home is gone
                else
                    OnState<T>::resume(s);
            };
            if constexpr (std::is_void_v<T>) {
                start(std::move(t), [s, resume_home](std::exception_ptr e) {
                    s->error = e;
                    resume_home();
                });
            } else {
                start(std::move(t), [s, resume_home](std::optional<T> v, std::exception_ptr e) {
                    s->value = std::move(v);
                    s->error = e;
                    resume_home();
                });
            }
        });
    }
    T await_resume() {
        if (state->error) std::rethrow_exception(state->error);
        if constexpr (!std::is_void_v<T>) return std::move(*state->value);
    }
};
}  // namespace detail

/// Runs `task` on `loop` and resumes the awaiting coroutine on its own loop with the result
/// (or the exception). If the awaiting coroutine is destroyed meanwhile (on its own loop,
/// e.g. at the shutdown deadline), or its loop is, the task still runs to its end and its
/// result is dropped. An awaiter on no loop is resumed on `loop` and must not be destroyed
/// while it waits.
template <class T>
detail::OnAwaiter<T> on(Loop& loop, Task<T> task) {
    return detail::OnAwaiter<T>(loop, std::move(task));
}

}  // namespace vela
