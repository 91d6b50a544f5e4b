// Tests for vela::block_on: values, void, exceptions, tasks that wait on the loop (a timer,
// the blocking pool), and the refusal on a thread that runs a loop.
#include "vela/reactor/block_on.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "vela/reactor/blocking.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;

Task<int> answer() { co_return 42; }
Task<std::unique_ptr<std::string>> move_only() { co_return std::make_unique<std::string>("mo"); }
Task<void> set(bool& flag) {
    flag = true;
    co_return;
}
Task<int> fails() {
    throw std::runtime_error("boom");
    co_return 0;
}
Task<void> fails_void() {
    throw std::out_of_range("void boom");
    co_return;
}
Task<long> sleeps(std::chrono::milliseconds d) {
    const auto t0 = std::chrono::steady_clock::now();
    co_await sleep(d);
    co_return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0)
        .count();
}
Task<std::thread::id> pool_thread() {
    auto work = [] { return std::this_thread::get_id(); };
    co_return co_await run_blocking(std::move(work));
}

TEST(BlockOn, ReturnsTheValue) {
    EXPECT_EQ(block_on(answer()), 42);
    EXPECT_EQ(*block_on(move_only()), "mo");
}

TEST(BlockOn, RunsAVoidTask) {
    bool ran = false;
    block_on(set(ran));
    EXPECT_TRUE(ran);
}

TEST(BlockOn, RethrowsTheException) {
    EXPECT_THROW(block_on(fails()), std::runtime_error);
    EXPECT_THROW(block_on(fails_void()), std::out_of_range);
}

TEST(BlockOn, WaitsForTimersAndTheBlockingPool) {
    EXPECT_GE(block_on(sleeps(30ms)), 25);
    EXPECT_NE(block_on(pool_thread()), std::this_thread::get_id());
    EXPECT_EQ(Loop::current(), nullptr);  // the private loop is gone again
}

Task<std::string> nested() {
    bool inner_ran = false;
    try {
        block_on(set(inner_ran));
    } catch (const std::logic_error& e) {
        co_return std::string(e.what()) + (inner_ran ? " (ran)" : "");
    }
    co_return "not refused";
}

TEST(BlockOn, RefusedOnALoopThread) {
    const std::string what = block_on(nested());
    EXPECT_EQ(what,
              "vela::block_on called on an event loop's thread, where it would stall the loop: "
              "co_await the task instead");
    // A plain Loop run by hand counts too.
    Loop loop;
    std::string seen;
    loop.post([&] {
        try {
            block_on(answer());
        } catch (const std::logic_error&) {
            seen = "refused";
        }
        loop.stop();
    });
    loop.run();
    EXPECT_EQ(seen, "refused");
}

}  // namespace
}  // namespace vela
