#pragma once
// Runs a task on a fresh vela::Loop on this thread until it finishes (the Redis client needs a
// loop); the task's value or exception comes back to the test.
#include <exception>
#include <optional>
#include <utility>

#include "vela/async/task.hpp"
#include "vela/reactor/loop.hpp"

namespace vela::test {

/// Runs `task` on a new loop and returns its result (rethrows its exception).
template <class T>
T run_on_loop(Task<T> task) {
    Loop loop;
    std::optional<T> value;
    std::exception_ptr error;
    loop.post([&] {
        start(std::move(task), [&](std::optional<T> v, std::exception_ptr e) {
            value = std::move(v);
            error = e;
            loop.stop();
        });
    });
    loop.run();
    if (error) std::rethrow_exception(error);
    return std::move(*value);
}

/// Runs `task` on a new loop until it finishes (rethrows its exception).
inline void run_on_loop(Task<void> task) {
    Loop loop;
    std::exception_ptr error;
    loop.post([&] {
        start(std::move(task), [&](std::exception_ptr e) {
            error = e;
            loop.stop();
        });
    });
    loop.run();
    if (error) std::rethrow_exception(error);
}

}  // namespace vela::test

/// ASSERT_TRUE for coroutine bodies (gtest's ASSERT_* use `return`): fails and co_returns.
#define VELA_CO_ASSERT(cond)                             \
    do {                                                 \
        if (!(cond)) {                                   \
            ADD_FAILURE() << "assertion failed: " #cond; \
            co_return;                                   \
        }                                                \
    } while (0)
