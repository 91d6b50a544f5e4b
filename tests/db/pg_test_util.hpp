#pragma once
// Running PostgreSQL tests on a real vela::Loop: the test body is a coroutine spawned on a
// loop on the test thread (or on several loop threads), and the loop stops when it ends.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <functional>
#include <string>

#include "vela/async/task.hpp"
#include "vela/db/db.hpp"
#include "vela/reactor/loop.hpp"

namespace vela::test {

namespace detail {
inline Task<void> drive(std::function<Task<void>()> body, std::exception_ptr* error, Loop* loop) {
    try {
        co_await body();
    } catch (...) {
        *error = std::current_exception();
    }
    loop->stop();
}
}  // namespace detail

/// Runs `body()` (a coroutine) on a new Loop on this thread until it ends; rethrows its
/// exception.
inline void run_on_loop(std::function<Task<void>()> body) {
    Loop loop;
    std::exception_ptr error;
    loop.spawn(detail::drive(std::move(body), &error, &loop));
    loop.run();
    if (error) std::rethrow_exception(error);
}

/// A table name unique to this process (tests may run in parallel against one server).
inline std::string table(const char* base) { return fmt::format("{}_{}", base, ::getpid()); }

/// Milliseconds since `t0`.
inline long long ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 t0)
        .count();
}

/// Calls `done()` every `every` until it returns true (then true) or `within` has passed (then
/// false).
inline Task<bool> poll_until(std::function<Task<bool>()> done, std::chrono::milliseconds within,
                             std::chrono::milliseconds every) {
    for (std::chrono::milliseconds waited{0}; waited < within; waited += every) {
        if (co_await done()) co_return true;
        co_await vela::sleep(every);
    }
    co_return false;
}

}  // namespace vela::test
