#pragma once
// Runs a task on a fresh vela::Loop on this thread until it finishes (the Redis client needs a
// loop); the task's value or exception comes back to the test.
#include <utility>

#include "vela/async/task.hpp"
#include "vela/reactor/block_on.hpp"

namespace vela::test {

/// Runs `task` on a new loop and returns its result (rethrows its exception).
template <class T>
T run_on_loop(Task<T> task) {
    return block_on(std::move(task));
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
