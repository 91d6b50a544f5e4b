// Tests for include/vela/async/task.hpp and src/async/frame_pool.cpp.
#include "vela/async/task.hpp"

#include <gtest/gtest.h>

#include <coroutine>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "vela/async/frame_pool.hpp"

namespace vela {
namespace {

// Runs `t` with vela::start and returns its value; the task must finish synchronously.
template <class T>
T run(Task<T> t) {
    std::optional<T> out;
    std::exception_ptr err;
    bool called = false;
    start(std::move(t), [&](std::optional<T> v, std::exception_ptr e) {
        called = true;
        out = std::move(v);
        err = e;
    });
    EXPECT_TRUE(called) << "the task did not finish synchronously";
    if (err) std::rethrow_exception(err);
    return std::move(*out);
}

void run(Task<void> t) {
    std::exception_ptr err;
    bool called = false;
    start(std::move(t), [&](std::exception_ptr e) {
        called = true;
        err = e;
    });
    EXPECT_TRUE(called) << "the task did not finish synchronously";
    if (err) std::rethrow_exception(err);
}

Task<int> answer() { co_return 42; }
Task<void> nothing() { co_return; }
Task<int> add(int a, int b) { co_return co_await answer() - 42 + a + b; }

TEST(Task, ValueTask) { EXPECT_EQ(run(answer()), 42); }

TEST(Task, VoidTask) { EXPECT_NO_THROW(run(nothing())); }

TEST(Task, NestedAwaitsComposeValues) {
    auto outer = []() -> Task<int> {
        int a = co_await add(1, 2);
        int b = co_await add(a, 10);
        co_await nothing();
        co_return a * 100 + b;
    };
    EXPECT_EQ(run(outer()), 313);
}

TEST(Task, MoveOnlyAndStringResults) {
    auto make = []() -> Task<std::unique_ptr<std::string>> {
        co_return std::make_unique<std::string>("moved");
    };
    EXPECT_EQ(*run(make()), "moved");
    auto text = []() -> Task<std::string> { co_return std::string(1000, 'x'); };
    EXPECT_EQ(run(text()).size(), 1000u);
}

Task<int> thrower(std::string what) {
    co_await nothing();
    throw std::runtime_error(what);
}
Task<int> middle(std::string what) {
    int v = co_await thrower(std::move(what));  // no catch: passes through
    co_return v + 1;
}

TEST(Task, ExceptionsPropagateThroughNestedAwaits) {
    auto top = []() -> Task<std::string> {
        try {
            co_await middle("deep");
        } catch (const std::runtime_error& e) {
            co_return std::string("caught ") + e.what();
        }
        co_return "not thrown";
    };
    EXPECT_EQ(run(top()), "caught deep");
}

TEST(Task, UncaughtExceptionReachesTheStartCallback) {
    try {
        run(middle("to the top"));
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "to the top");
    }
}

TEST(Task, VoidTaskExceptionAndWorkAfterACatch) {
    auto fails = []() -> Task<void> {
        throw std::logic_error("void fails");
        co_return;
    };
    auto after = [&]() -> Task<int> {
        int caught = 0;
        for (int i = 0; i < 3; ++i) {
            try {
                co_await fails();
            } catch (const std::logic_error&) {
                ++caught;
            }
        }
        co_return caught + co_await answer();
    };
    EXPECT_EQ(run(after()), 45);
    EXPECT_THROW(run(fails()), std::logic_error);
}

TEST(Task, LazyStartRunsNothingUntilAwaited) {
    int runs = 0;
    auto body = [&]() -> Task<int> {
        ++runs;
        co_return 7;
    };
    Task<int> t = body();
    EXPECT_EQ(runs, 0);
    EXPECT_TRUE(static_cast<bool>(t));
    EXPECT_FALSE(t.done());
    auto awaiter = [&]() -> Task<int> {
        EXPECT_EQ(runs, 0);  // still not started when the awaiting task begins
        int v = co_await std::move(t);
        EXPECT_EQ(runs, 1);
        co_return v;
    };
    EXPECT_EQ(run(awaiter()), 7);
    EXPECT_TRUE(t.done());
    EXPECT_EQ(runs, 1);
}

Task<void> hold(std::shared_ptr<int> p) {
    ++*p;
    co_return;
}

TEST(Task, DestroyingAnUnstartedTaskFreesItsFrameWithoutRunningIt) {
    auto counter = std::make_shared<int>(0);
    {
        Task<void> t = hold(counter);
        EXPECT_EQ(counter.use_count(), 2);  // the frame holds a copy of the argument
    }
    EXPECT_EQ(counter.use_count(), 1);
    EXPECT_EQ(*counter, 0);
}

TEST(Task, MoveAssignmentDestroysTheOldFrame) {
    auto a = std::make_shared<int>(0);
    auto b = std::make_shared<int>(0);
    Task<void> t = hold(a);
    Task<void> u = hold(b);
    t = std::move(u);
    EXPECT_EQ(a.use_count(), 1);
    EXPECT_EQ(b.use_count(), 2);
    EXPECT_FALSE(static_cast<bool>(u));
    run(std::move(t));
    EXPECT_EQ(*b, 1);
}

Task<int> depth(int n) {
    if (n == 0) co_return 0;
    int below = co_await depth(n - 1);
    co_return below + 1;
}

// Symmetric transfer keeps the stack flat only where the compiler turns it into a tail call:
// GCC does in optimized builds, not under ASan/TSan instrumentation (documented in task.hpp).
bool tail_calls_guaranteed() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(__OPTIMIZE__)
    return false;
#else
    return true;
#endif
}

// Symmetric transfer keeps the stack flat however deep the chain of awaits is. Runs in a
// child process so that a stack overflow fails this test instead of the whole binary.
TEST(TaskDeathTest, DeepChainOfNestedAwaitsDoesNotOverflowTheStack) {
    if (!tail_calls_guaranteed()) GTEST_SKIP() << "no tail calls in sanitizer/unoptimized builds";
    EXPECT_EXIT(
        {
            int got = run(depth(100000));
            std::exit(got == 100000 ? 0 : 1);
        },
        testing::ExitedWithCode(0), "");
}

TEST(TaskDeathTest, MillionSequentialSynchronousAwaitsDoNotGrowTheStack) {
    if (!tail_calls_guaranteed()) GTEST_SKIP() << "no tail calls in sanitizer/unoptimized builds";
    auto loop = []() -> Task<int> {
        int sum = 0;
        for (int i = 0; i < 1000000; ++i) sum += co_await answer() - 41;
        co_return sum;
    };
    EXPECT_EXIT(
        {
            int got = run(loop());
            std::exit(got == 1000000 ? 0 : 1);
        },
        testing::ExitedWithCode(0), "");
}

TEST(FramePool, EachCoroutineCallAllocatesOneFrame) {
    const std::uint64_t before = async::frames_allocated();
    {
        Task<int> t = answer();
        EXPECT_EQ(async::frames_allocated(), before + 1);
    }
    Task<int> outer = []() -> Task<int> {
        int v = co_await answer();
        v += co_await answer();
        v += co_await add(0, 0);  // add() awaits answer() itself
        co_return v;
    }();
    const std::uint64_t created = async::frames_allocated();
    EXPECT_EQ(created, before + 2);
    EXPECT_EQ(run(std::move(outer)), 84);
    // answer, answer, add, add's answer, plus the detached driver that start() runs.
    EXPECT_EQ(async::frames_allocated(), created + 4 + 1);
}

TEST(FramePool, FreedFramesAreReused) {
    Task<int> a = answer();
    void* first = a.release().address();
    std::coroutine_handle<>::from_address(first).destroy();
    Task<int> b = answer();
    auto h = b.release();
    EXPECT_EQ(h.address(), first);
    h.destroy();
}

TEST(FramePool, SizeClassesAndLargeFrames) {
    void* p = async::frame_alloc(100);
    async::frame_free(p, 100);
    void* q = async::frame_alloc(120);  // same 64-byte class as 100
    EXPECT_EQ(q, p);
    async::frame_free(q, 120);
    void* big = async::frame_alloc(64 * 1024);  // beyond the pooled classes
    ASSERT_NE(big, nullptr);
    static_cast<char*>(big)[64 * 1024 - 1] = 1;
    async::frame_free(big, 64 * 1024);
    const std::uint64_t before = async::frames_allocated();
    async::frame_free(async::frame_alloc(8), 8);
    EXPECT_EQ(async::frames_allocated(), before + 1);
}

// A minimal awaitable that parks the coroutine until the test resumes it.
struct Gate {
    std::coroutine_handle<> waiting;
    struct Awaiter {
        Gate& g;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> h) noexcept { g.waiting = h; }
        void await_resume() const noexcept {}
    };
    Awaiter operator co_await() noexcept { return Awaiter{*this}; }
};

TEST(Start, CallbackRunsWhenTheTaskFinishesNotBefore) {
    Gate gate;
    auto task = [&]() -> Task<int> {
        co_await gate;
        co_return 5;
    };
    std::optional<int> value;
    int calls = 0;
    start(task(), [&](std::optional<int> v, std::exception_ptr e) {
        ++calls;
        value = v;
        EXPECT_FALSE(e);
    });
    EXPECT_EQ(calls, 0);
    ASSERT_TRUE(gate.waiting);
    gate.waiting.resume();
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(value, 5);
}

TEST(Start, VoidCallbackGetsTheException) {
    Gate gate;
    auto task = [&]() -> Task<void> {
        co_await gate;
        throw std::runtime_error("late");
    };
    std::exception_ptr got;
    int calls = 0;
    start(task(), [&](std::exception_ptr e) {
        ++calls;
        got = e;
    });
    EXPECT_EQ(calls, 0);
    gate.waiting.resume();
    ASSERT_EQ(calls, 1);
    EXPECT_THROW(std::rethrow_exception(got), std::runtime_error);
}

TEST(Start, SpawnSwallowsAndLogsExceptions) {
    bool ran = false;
    spawn([&]() -> Task<void> {
        ran = true;
        throw std::runtime_error("spawned task failed (expected in this test)");
        co_return;
    }());
    EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace vela
