#pragma once
// Task<T>: the coroutine type of vela.
//
// A Task is *lazy*: calling a coroutine function that returns Task<T> allocates its frame
// (from the per-thread pool, see frame_pool.hpp) and stops before the first statement.
// Nothing runs until somebody `co_await`s the task, or hands it to `spawn` / the
// server, which start it.
//
//     Task<int> answer() { co_return 42; }
//     Task<void> caller() {
//         int v = co_await answer();   // runs answer() now, resumes here when it returns
//     }
//
// Awaiting uses *symmetric transfer*: the awaiting coroutine suspends and control jumps
// straight into the awaited one; when that finishes, its final awaiter jumps straight
// back. No scheduler sits in between and a chain of awaits of any depth uses constant
// stack, as long as the compiler turns the transfer into a tail call: GCC does with
// optimization on, but not in -O0 or ASan/TSan builds, where chains tens of thousands of
// awaits deep can exhaust the stack.
//
// Exceptions thrown inside a Task are stored in its promise and rethrown from the
// `co_await` expression in the awaiter, as if the call had been a plain function call.
//
// Ownership: a Task owns its frame and destroys it in its destructor. A Task is moved,
// never copied; awaiting consumes it (`co_await std::move(t)` or `co_await f()`).
//
// Threads: a Task has no affinity. It runs on whichever thread resumes it; the reactor
// resumes I/O and timer waits on the loop that started them. To run work on another
// loop, see `vela::on(loop, task)` in reactor/loop.hpp.

#include <concepts>
#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "vela/async/frame_pool.hpp"

namespace vela {

template <class T = void>
class Task;

namespace detail {

struct PromiseBase {
    std::coroutine_handle<> continuation = std::noop_coroutine();
    std::exception_ptr exception;

    static void* operator new(std::size_t n) { return async::frame_alloc(n); }
    static void operator delete(void* p, std::size_t n) noexcept { async::frame_free(p, n); }

    std::suspend_always initial_suspend() noexcept { return {}; }

    // When the task finishes, jump back into whoever awaited it (symmetric transfer):
    // returning the handle instead of resuming it keeps the stack flat.
    struct FinalAwaiter {
        bool await_ready() noexcept { return false; }
        template <class P>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
            return h.promise().continuation;
        }
        void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void unhandled_exception() noexcept { exception = std::current_exception(); }
};

// A type U that a Task<T> may `co_return` although T cannot be made from it: another module
// says, through `task_return_error(U)` found by argument-dependent lookup, which exception the
// task ends with (the web module: `co_return vela::Status::NotFound;` in a typed handler).
template <class U>
concept TaskReturnError = requires(U&& u) {
    { task_return_error(std::forward<U>(u)) } -> std::same_as<std::exception_ptr>;
};

template <class T>
struct Promise : PromiseBase {
    std::optional<T> value;
    Task<T> get_return_object() noexcept;
    template <class U>
    requires std::is_constructible_v<T, U&&>
    void return_value(U&& v) { value.emplace(std::forward<U>(v)); }
    // Ends the task with the exception task_return_error gives (made without a throw; the
    // awaiter rethrows it).
    template <class U>
    requires(!std::is_constructible_v<T, U&&> && TaskReturnError<U>) void return_value(U&& v) {
        exception = task_return_error(std::forward<U>(v));
    }
    T take() {
        if (exception) std::rethrow_exception(exception);
        return std::move(*value);
    }
};

template <>
struct Promise<void> : PromiseBase {
    Task<void> get_return_object() noexcept;
    void return_void() noexcept {}
    void take() {
        if (exception) std::rethrow_exception(exception);
    }
};

}  // namespace detail

/// A lazy, move-only coroutine producing a T; it runs once awaited or started (see above).
template <class T>
class [[nodiscard]] Task {
  public:
    /// The promise type the compiler uses for coroutines that return Task<T>.
    using promise_type = detail::Promise<T>;
    /// Handle to the coroutine frame.
    using handle_type = std::coroutine_handle<promise_type>;
    /// What awaiting the task yields.
    using value_type = T;

    /// An empty task (no coroutine).
    Task() noexcept = default;
    /// Takes ownership of the coroutine frame `h`.
    explicit Task(handle_type h) noexcept : h_(h) {}
    /// Takes over `o`'s frame, leaving `o` empty.
    Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
    /// Destroys the frame held (if any), then takes over `o`'s, leaving `o` empty.
    Task& operator=(Task&& o) noexcept {
        if (this != &o) {
            if (h_) h_.destroy();
            h_ = std::exchange(o.h_, {});
        }
        return *this;
    }
    /// Not copyable.
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;
    /// Destroys the frame, if any (a suspended coroutine is abandoned).
    ~Task() {
        if (h_) h_.destroy();
    }

    /// True when the task holds a coroutine.
    explicit operator bool() const noexcept { return static_cast<bool>(h_); }
    /// True when the coroutine ran to completion.
    bool done() const noexcept { return h_ && h_.done(); }

    /// What `co_await` on a Task uses (made by operator co_await).
    struct Awaiter {
        /// The awaited task's frame (still owned by the Task).
        handle_type h;
        /// Always false: the task starts from await_suspend.
        bool await_ready() const noexcept { return false; }
        /// Remembers who to resume at the end, then starts the task by returning its handle.
        std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
            h.promise().continuation = awaiting;
            return h;
        }
        /// The task's result, or its exception rethrown.
        T await_resume() { return h.promise().take(); }
    };
    /// Starts the task and resumes the awaiter with its result (or rethrows its exception).
    Awaiter operator co_await() && noexcept { return Awaiter{h_}; }

    /// Gives up ownership of the frame (used by spawn and the server's drivers).
    handle_type release() noexcept { return std::exchange(h_, {}); }

  private:
    handle_type h_;
};

namespace detail {

template <class T>
Task<T> Promise<T>::get_return_object() noexcept {
    return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() noexcept {
    return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}

// A fire-and-forget coroutine: starts at once and frees its own frame when it ends.
struct Detached {
    struct promise_type;
    std::coroutine_handle<promise_type> handle;
    struct promise_type {
        static void* operator new(std::size_t n) { return async::frame_alloc(n); }
        static void operator delete(void* p, std::size_t n) noexcept { async::frame_free(p, n); }
        Detached get_return_object() noexcept {
            return Detached{std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};

template <class T, class F>
Detached run_detached(Task<T> task, F on_done) {
    std::exception_ptr error;
    if constexpr (std::is_void_v<T>) {
        try {
            co_await std::move(task);
        } catch (...) {
            error = std::current_exception();
        }
        on_done(error);
    } else {
        std::optional<T> value;
        try {
            value.emplace(co_await std::move(task));
        } catch (...) {
            error = std::current_exception();
        }
        on_done(std::move(value), error);
    }
}

void report_detached_exception(std::exception_ptr e) noexcept;

}  // namespace detail

/// Starts `task` now; `on_done(std::optional<T>, std::exception_ptr)` (or `on_done(ep)` for
/// void) runs when it finishes, possibly before start() returns. Returns the driving frame:
/// valid only until on_done has run; destroying it while the task is suspended abandons the
/// task (its frames are destroyed, on_done never runs).
template <class T, class F>
std::coroutine_handle<> start(Task<T> task, F on_done) {
    return detail::run_detached(std::move(task), std::move(on_done)).handle;
}

/// Starts a Task<void> on the current thread and forgets it; an escaping exception is
/// logged.
inline void spawn(Task<void> task) {
    start(std::move(task), [](std::exception_ptr e) {
        if (e) detail::report_detached_exception(e);
    });
}

}  // namespace vela
