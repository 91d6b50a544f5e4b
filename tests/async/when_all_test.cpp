// Tests for include/vela/async/when_all.hpp.
#include "vela/async/when_all.hpp"

#include <gtest/gtest.h>

#include <coroutine>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vela {
namespace {

// A manual event: tasks suspend on it until the test fires it.
struct Gate {
    std::vector<std::coroutine_handle<>> waiting;
    auto operator co_await() {
        struct A {
            Gate& g;
            bool await_ready() const noexcept { return false; }
            void await_suspend(std::coroutine_handle<> h) { g.waiting.push_back(h); }
            void await_resume() const noexcept {}
        };
        return A{*this};
    }
    void open_one(std::size_t i) { waiting.at(i).resume(); }
};

Task<int> value_now(int v) { co_return v; }

Task<int> value_later(Gate& g, int v) {
    co_await g;
    co_return v;
}

Task<int> fail_later(Gate& g) {
    co_await g;
    throw std::runtime_error("boom");
}

Task<void> count_later(Gate& g, int& n) {
    co_await g;
    ++n;
}

TEST(WhenAll, EmptyListGivesEmptyResult) {
    bool done = false;
    start(when_all(std::vector<Task<int>>{}),
          [&](std::optional<std::vector<int>> v, std::exception_ptr e) {
              done = true;
              EXPECT_FALSE(e);
              EXPECT_TRUE(v->empty());
          });
    EXPECT_TRUE(done);
}

TEST(WhenAll, TasksThatFinishAtOnceNeedNoSuspension) {
    std::vector<Task<int>> ts;
    for (int i = 0; i < 5; ++i) ts.push_back(value_now(i));
    std::optional<std::vector<int>> out;
    start(when_all(std::move(ts)),
          [&](std::optional<std::vector<int>> v, std::exception_ptr) { out = v; });
    ASSERT_TRUE(out);
    EXPECT_EQ(*out, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(WhenAll, AllStartBeforeAnyIsAwaitedAndResultsKeepTaskOrder) {
    Gate g;
    std::vector<Task<int>> ts;
    for (int i = 0; i < 4; ++i) ts.push_back(value_later(g, i * 10));
    std::optional<std::vector<int>> out;
    start(when_all(std::move(ts)),
          [&](std::optional<std::vector<int>> v, std::exception_ptr) { out = v; });
    ASSERT_EQ(g.waiting.size(), 4u);  // every task is in flight at once
    g.open_one(2);
    g.open_one(0);
    g.open_one(3);
    EXPECT_FALSE(out);
    g.open_one(1);
    ASSERT_TRUE(out);
    EXPECT_EQ(*out, (std::vector<int>{0, 10, 20, 30}));
}

TEST(WhenAll, FirstErrorInTaskOrderIsRethrownAfterAllEnded) {
    Gate g;
    std::vector<Task<int>> ts;
    ts.push_back(value_later(g, 1));
    ts.push_back(fail_later(g));
    ts.push_back(value_later(g, 3));
    bool done = false;
    std::string what;
    start(when_all(std::move(ts)), [&](std::optional<std::vector<int>> v, std::exception_ptr e) {
        done = true;
        EXPECT_FALSE(v);
        try {
            std::rethrow_exception(e);
        } catch (const std::runtime_error& ex) {
            what = ex.what();
        }
    });
    g.open_one(1);
    EXPECT_FALSE(done);  // the others still run
    g.open_one(0);
    g.open_one(2);
    EXPECT_TRUE(done);
    EXPECT_EQ(what, "boom");
}

TEST(WhenAll, VoidTasks) {
    Gate g;
    int n = 0;
    std::vector<Task<void>> ts;
    for (int i = 0; i < 3; ++i) ts.push_back(count_later(g, n));
    bool done = false;
    start(when_all(std::move(ts)), [&](std::exception_ptr e) {
        EXPECT_FALSE(e);
        done = true;
    });
    for (std::size_t i = 0; i < 3; ++i) g.open_one(i);
    EXPECT_TRUE(done);
    EXPECT_EQ(n, 3);
}

TEST(WhenAll, DestroyingTheWaiterDestroysTasksStillRunning) {
    Gate g;
    std::vector<Task<int>> ts;
    ts.push_back(value_later(g, 1));
    ts.push_back(value_now(2));
    bool done = false;
    auto driver = start(when_all(std::move(ts)),
                        [&](std::optional<std::vector<int>>, std::exception_ptr) { done = true; });
    ASSERT_EQ(g.waiting.size(), 1u);
    driver.destroy();  // abandons when_all and the task suspended on the gate (ASan: no leak)
    EXPECT_FALSE(done);
}

}  // namespace
}  // namespace vela
