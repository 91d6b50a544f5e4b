#pragma once
// block_on: runs a Task to its end from plain code (main(), a test, a command-line tool) on a
// private Loop in the calling thread, and hands back its value or rethrows its exception.
//
//     int main() {
//         vela::db::Database db("sqlite://app.db");
//         std::size_t applied = vela::block_on(db.migrate("migrations"));
//     }
//
// The task may do anything that needs a loop: sleep, sockets, run_blocking, vela::on. It is
// refused (std::logic_error) on a thread already running a vela::Loop: a handler or other
// coroutine would stall its whole loop, or deadlock waiting on it; there, co_await the task.
#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "vela/async/task.hpp"
#include "vela/reactor/loop.hpp"

namespace vela {

/// Runs `task` to completion on a new Loop in this thread: its value, or its exception
/// rethrown. Throws std::logic_error when called on a thread that is running a Loop.
template <class T>
T block_on(Task<T> task) {
    if (Loop::current())
        throw std::logic_error(
            "vela::block_on called on an event loop's thread, where it would stall the loop: "
            "co_await the task instead");
    Loop loop;
    std::exception_ptr error;
    std::optional<std::conditional_t<std::is_void_v<T>, char, T>> value;
    loop.post([&] {
        if constexpr (std::is_void_v<T>) {
            start(std::move(task), [&](std::exception_ptr e) {
                error = e;
                loop.stop();
            });
        } else {
            start(std::move(task), [&](std::optional<T> v, std::exception_ptr e) {
                value = std::move(v);
                error = e;
                loop.stop();
            });
        }
    });
    loop.run();
    if (error) std::rethrow_exception(error);
    if constexpr (!std::is_void_v<T>) return std::move(*value);
}

}  // namespace vela
