#pragma once
// when_all: run several tasks at once on the current thread and wait for all of them.
//
//     std::vector<Task<World>> lookups;
//     for (int i = 0; i < 20; ++i) lookups.push_back(find_world(db, random_id()));
//     std::vector<World> worlds = co_await vela::when_all(std::move(lookups));
//
// Every task is started before the first one is awaited, so tasks that wait on I/O (database
// queries issued together, which a pipelining client sends in one round trip) overlap. The
// results come back in the order of the tasks. When some fail, all still run to their end and
// the first exception (in task order) is rethrown. If the awaiting coroutine is destroyed while
// it waits (a handler abandoned at the shutdown deadline), the tasks still running are
// destroyed with it.
#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <vector>

#include "vela/async/task.hpp"

namespace vela {

namespace detail {

template <class T>
struct WhenAllState {
    using Slot = std::conditional_t<std::is_void_v<T>, char, T>;
    std::vector<std::optional<Slot>> results;
    std::vector<std::exception_ptr> errors;
    std::vector<std::coroutine_handle<>> running;  // driver frames not finished yet
    std::size_t remaining = 0;
    std::coroutine_handle<> waiter;
    WhenAllState() = default;
    WhenAllState(const WhenAllState&) = delete;
    WhenAllState& operator=(const WhenAllState&) = delete;
    ~WhenAllState() {
        // Only non-null while the awaiting frame is destroyed mid-wait: abandon the rest.
        for (auto h : running)
            if (h) h.destroy();
    }
    void finished(std::size_t i) {
        running[i] = nullptr;
        if (--remaining == 0) waiter.resume();
    }
};

template <class T>
struct WhenAllAwaiter {
    WhenAllState<T>& s;
    std::vector<Task<T>>& tasks;
    bool await_ready() const noexcept { return tasks.empty(); }
    bool await_suspend(std::coroutine_handle<> h) {
        const std::size_t n = tasks.size();
        s.waiter = h;
        s.results.resize(n);
        s.errors.resize(n);
        s.running.assign(n, nullptr);
        s.remaining = n + 1;  // held until every task has started (some finish at once)
        for (std::size_t i = 0; i < n; ++i) {
            WhenAllState<T>* st = &s;
            std::coroutine_handle<> d;
            if constexpr (std::is_void_v<T>) {
                d = start(std::move(tasks[i]), [st, i](std::exception_ptr e) {
                    if (e)
                        st->errors[i] = e;
                    else
                        st->results[i].emplace('\0');
                    st->finished(i);
                });
            } else {
                d = start(std::move(tasks[i]), [st, i](std::optional<T> v, std::exception_ptr e) {
                    if (e)
                        st->errors[i] = e;
                    else
                        st->results[i] = std::move(v);
                    st->finished(i);
                });
            }
            // A task that already ended has run finished(i); its driver frame is gone.
            if (!s.results[i] && !s.errors[i]) s.running[i] = d;
        }
        return --s.remaining != 0;  // all done already: continue without suspending
    }
    void await_resume() const noexcept {}
};

}  // namespace detail

/// Runs every task at once on this thread; returns their results in order (see above).
template <class T>
requires(!std::is_void_v<T>) Task<std::vector<T>> when_all(std::vector<Task<T>> tasks) {
    detail::WhenAllState<T> state;
    co_await detail::WhenAllAwaiter<T>{state, tasks};
    for (auto& e : state.errors)
        if (e) std::rethrow_exception(e);
    std::vector<T> out;
    out.reserve(state.results.size());
    for (auto& r : state.results) out.push_back(std::move(*r));
    co_return out;
}

/// Runs every task at once on this thread and waits for all (see above).
inline Task<void> when_all(std::vector<Task<void>> tasks) {
    detail::WhenAllState<void> state;
    co_await detail::WhenAllAwaiter<void>{state, tasks};
    for (auto& e : state.errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace vela
