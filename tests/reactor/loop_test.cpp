// Tests for src/reactor/loop.cpp: cross-thread post, timers, sleep, and vela::on between
// loops on different threads.
// Regression: vela::on once failed to compile under -Wextra -Werror (OnAwaiter's members
// had no initializers); this file includes loop.hpp with no warning suppressed.
#include "vela/reactor/loop.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace vela {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A loop running on its own thread for the duration of a test.
struct LoopThread {
    Loop loop;
    std::thread thread;
    std::thread::id id;
    LoopThread() {
        std::atomic<bool> up{false};
        thread = std::thread([this, &up] {
            id = std::this_thread::get_id();
            up = true;
            loop.run();
        });
        while (!up) std::this_thread::yield();
    }
    ~LoopThread() {
        loop.stop();
        thread.join();
    }
};

TEST(Loop, CurrentIsSetOnlyInsideRun) {
    Loop loop;
    EXPECT_EQ(Loop::current(), nullptr);
    Loop* seen = nullptr;
    loop.post([&] {
        seen = Loop::current();
        loop.stop();
    });
    loop.run();
    EXPECT_EQ(seen, &loop);
    EXPECT_EQ(Loop::current(), nullptr);
    EXPECT_FALSE(loop.running());
}

TEST(Loop, PostsFromManyThreadsEachRunExactlyOnceOnTheLoopThread) {
    constexpr int kThreads = 4, kPosts = 10000;
    Loop loop;
    std::vector<int> runs(kThreads * kPosts, 0);  // touched by the loop thread only
    int total = 0;
    bool wrong_thread = false;
    std::thread::id loop_id;
    std::thread runner([&] {
        loop_id = std::this_thread::get_id();
        loop.run();
    });
    std::vector<std::thread> producers;
    for (int t = 0; t < kThreads; ++t) {
        producers.emplace_back([&, t] {
            for (int i = 0; i < kPosts; ++i) {
                loop.post([&, idx = t * kPosts + i] {
                    if (std::this_thread::get_id() != loop_id) wrong_thread = true;
                    ++runs[static_cast<std::size_t>(idx)];
                    if (++total == kThreads * kPosts) loop.stop();
                });
            }
        });
    }
    for (auto& p : producers) p.join();
    runner.join();
    EXPECT_EQ(total, kThreads * kPosts);
    EXPECT_FALSE(wrong_thread);
    int not_once = 0;
    for (int r : runs) not_once += r != 1;
    EXPECT_EQ(not_once, 0);
}

TEST(Loop, PostsFromOneThreadRunInOrder) {
    Loop loop;
    std::vector<int> order;
    std::thread producer([&] {
        for (int i = 0; i < 1000; ++i) loop.post([&, i] { order.push_back(i); });
        loop.post([&] { loop.stop(); });
    });
    loop.run();
    producer.join();
    ASSERT_EQ(order.size(), 1000u);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(order[static_cast<std::size_t>(i)], i);
}

TEST(Loop, StopFromAnotherThreadWakesAnIdleLoop) {
    Loop loop;
    std::thread runner([&] { loop.run(); });
    while (!loop.running()) std::this_thread::yield();
    std::this_thread::sleep_for(20ms);  // let it block in epoll_wait
    loop.stop();
    runner.join();
    EXPECT_FALSE(loop.running());
}

TEST(Loop, WorkPostedBeforeStopStillRuns) {
    Loop loop;
    bool later = false;
    loop.post([&] { loop.stop(); });
    loop.post([&] { later = true; });
    loop.run();
    EXPECT_TRUE(later);
}

TEST(Loop, CallAfterRunsInDeadlineOrderAndCancelWorks) {
    Loop loop;
    std::vector<int> order;
    std::vector<Clock::duration> late;
    Clock::time_point t0;
    loop.post([&] {
        t0 = Clock::now();
        loop.call_after(30ms, [&] {
            order.push_back(30);
            late.push_back(Clock::now() - t0 - 30ms);
        });
        loop.call_after(10ms, [&] {
            order.push_back(10);
            late.push_back(Clock::now() - t0 - 10ms);
        });
        std::uint64_t cancelled = loop.call_after(20ms, [&] { order.push_back(20); });
        loop.cancel(cancelled);
        loop.call_after(60ms, [&] { loop.stop(); });
    });
    loop.run();
    EXPECT_EQ(order, (std::vector<int>{10, 30}));
    for (auto l : late) EXPECT_GE(l, Clock::duration::zero());
}

TEST(Loop, CancelAfterFiringIsHarmless) {
    Loop loop;
    int fired = 0;
    loop.post([&] {
        std::uint64_t id = loop.call_after(1ms, [&] {
            ++fired;
            loop.stop();
        });
        loop.call_after(5ms, [&, id] { loop.cancel(id); });
    });
    loop.run();
    EXPECT_EQ(fired, 1);
}

TEST(Loop, DeferRunsAfterTheCurrentCallback) {
    Loop loop;
    std::vector<int> order;
    loop.post([&] {
        loop.defer([&] {
            order.push_back(2);
            loop.stop();
        });
        order.push_back(1);
    });
    loop.run();
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(Loop, SleepResumesAfterAtLeastTheDelay) {
    Loop loop;
    Clock::duration slept{};
    std::thread::id before, after;
    // Coroutine lambdas that capture are named: the closure must outlive the frame.
    auto body = [&]() -> Task<void> {
        before = std::this_thread::get_id();
        auto t0 = Clock::now();
        co_await vela::sleep(50ms);
        slept = Clock::now() - t0;
        after = std::this_thread::get_id();
        co_await vela::sleep(0ms);  // ready at once
        loop.stop();
    };
    loop.spawn(body());
    loop.run();
    EXPECT_GE(slept, 50ms);
    EXPECT_LT(slept, 5s);
    EXPECT_EQ(before, after);
}

TEST(Loop, ManySleepersWakeInDeadlineOrder) {
    Loop loop;
    std::vector<int> woke;
    auto sleeper = [&](int ms) -> Task<void> {
        co_await vela::sleep(std::chrono::milliseconds(ms));
        woke.push_back(ms);
        if (woke.size() == 4) loop.stop();
    };
    for (int ms : {40, 10, 30, 20}) loop.spawn(sleeper(ms));
    loop.run();
    EXPECT_EQ(woke, (std::vector<int>{10, 20, 30, 40}));
}

TEST(Loop, SleepOutsideALoopThrows) {
    std::exception_ptr err;
    start([]() -> Task<void> { co_await vela::sleep(1ms); }(),
          [&](std::exception_ptr e) { err = e; });
    ASSERT_TRUE(err);
    EXPECT_THROW(std::rethrow_exception(err), std::logic_error);
}

TEST(Loop, OnRunsTheTaskOnTheOtherLoopAndResumesAtHome) {
    Loop home;  // declared first: `other` stops and joins before `home` is destroyed, as it
                // may still be inside home.post() after home ran the posted resumption
    LoopThread other;
    std::thread::id home_id = std::this_thread::get_id();
    std::thread::id ran_on, resumed_on, void_ran_on;
    int value = 0;
    auto body = [&]() -> Task<void> {
        value = co_await vela::on(other.loop, [&]() -> Task<int> {
            ran_on = std::this_thread::get_id();
            co_await vela::sleep(1ms);  // suspends on the other loop too
            co_return 41 + 1;
        }());
        resumed_on = std::this_thread::get_id();
        co_await vela::on(other.loop, [&]() -> Task<void> {
            void_ran_on = std::this_thread::get_id();
            co_return;
        }());
        EXPECT_EQ(std::this_thread::get_id(), home_id);
        home.stop();
    };
    home.spawn(body());
    home.run();
    EXPECT_EQ(value, 42);
    EXPECT_EQ(ran_on, other.id);
    EXPECT_EQ(void_ran_on, other.id);
    EXPECT_EQ(resumed_on, home_id);
    EXPECT_NE(other.id, home_id);
}

TEST(Loop, OnCarriesExceptionsBackHome) {
    // The exceptions are kept alive here until `other` has joined. Otherwise the last
    // reference may be dropped on the other thread (when it frees the task's frame) and
    // ThreadSanitizer, which cannot see the atomic reference count inside the uninstrumented
    // libstdc++, reports the exception's destruction as racing with the reads made here.
    std::vector<std::exception_ptr> keep;
    Loop home;
    LoopThread other;
    std::thread::id home_id = std::this_thread::get_id();
    std::string message;
    std::thread::id caught_on, void_caught_on;
    auto body = [&]() -> Task<void> {
        try {
            co_await vela::on(other.loop, []() -> Task<int> {
                throw std::runtime_error("failed over there");
                co_return 0;
            }());
        } catch (const std::runtime_error& e) {
            keep.push_back(std::current_exception());
            message = e.what();
            caught_on = std::this_thread::get_id();
        }
        try {
            co_await vela::on(other.loop, []() -> Task<void> {
                co_await vela::sleep(1ms);
                throw std::logic_error("void failed");
            }());
        } catch (const std::logic_error&) {
            keep.push_back(std::current_exception());
            void_caught_on = std::this_thread::get_id();
        }
        home.stop();
    };
    home.spawn(body());
    home.run();
    EXPECT_EQ(message, "failed over there");
    EXPECT_EQ(caught_on, home_id);
    EXPECT_EQ(void_caught_on, home_id);
}

// The awaiting coroutine is destroyed while the other loop still runs its task (a handler
// abandoned at the shutdown deadline): the task finishes, and nothing is resumed or written
// into the destroyed frame.
TEST(Loop, OnAwaiterDestroyedWhileTheTaskRunsElsewhere) {
    Loop home;  // before `other`, as in the tests above
    LoopThread other;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<bool> task_finished{false};
    bool resumed = false;
    auto remote = [&, released]() -> Task<std::string> {
        released.wait();  // holds the other loop until the awaiting frame is gone
        task_finished = true;
        co_return std::string(100, 'r');  // a heap string, written into the shared state
    };
    auto body = [&]() -> Task<void> {
        std::string s = co_await vela::on(other.loop, remote());
        resumed = true;
    };
    std::coroutine_handle<> frame;
    bool finished = false;
    home.post([&] {
        frame = start(body(), [&](std::exception_ptr) { finished = true; });
        home.post([&] {
            frame.destroy();  // abandon the coroutine suspended in on()
            release.set_value();
            // Queued behind the task on the other loop, so it reaches home after the task's
            // resumption does.
            other.loop.post([&] { home.post([&] { home.stop(); }); });
        });
    });
    home.run();
    EXPECT_TRUE(task_finished);
    EXPECT_FALSE(resumed);
    EXPECT_FALSE(finished);
}

// The awaiting loop itself is destroyed before the task on the other loop ends (a server
// torn down while a user-owned loop still works for it): the result is dropped instead of
// being posted to the destroyed loop.
TEST(Loop, OnToleratesTheAwaitingLoopBeingDestroyed) {
    LoopThread other;
    auto home = std::make_unique<Loop>();
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<bool> task_finished{false};
    bool resumed = false;
    auto remote = [&, released]() -> Task<int> {
        released.wait();
        task_finished = true;
        co_return 7;
    };
    auto body = [&]() -> Task<void> { resumed = co_await vela::on(other.loop, remote()) == 7; };
    std::coroutine_handle<> frame;
    home->post([&] {
        frame = start(body(), [](std::exception_ptr) {});
        home->post([&] { home->stop(); });
    });
    home->run();  // returns with `body` still waiting in on()
    home.reset();
    release.set_value();
    std::promise<void> drained;  // queued behind the task on the other loop
    other.loop.post([&] { drained.set_value(); });
    drained.get_future().wait();
    EXPECT_TRUE(task_finished);
    EXPECT_FALSE(resumed);
    frame.destroy();  // the abandoned coroutine, on the thread that created it
}

TEST(Loop, LoopRefPostsOnlyWhileTheLoopExists) {
    LoopRef none;
    EXPECT_FALSE(none.post([] {}));
    auto loop = std::make_unique<Loop>();
    LoopRef ref = loop->ref();
    int ran = 0;
    EXPECT_TRUE(ref.post([&] {
        ++ran;
        loop->stop();
    }));
    loop->run();
    EXPECT_EQ(ran, 1);
    loop.reset();
    EXPECT_FALSE(ref.post([&] { ++ran; }));
    EXPECT_EQ(ran, 1);
}

TEST(Loop, ManyConcurrentOnCallsBetweenTwoLoops) {
    Loop home;  // before `other`, as in the tests above
    LoopThread other;
    int done = 0, sum = 0;
    std::atomic<int> wrong{0};
    std::thread::id home_id = std::this_thread::get_id();
    auto remote = [&](int i) -> Task<int> {
        if (std::this_thread::get_id() != other.id) ++wrong;
        co_return i;
    };
    auto body = [&](int i) -> Task<void> {
        int v = co_await vela::on(other.loop, remote(i));
        if (std::this_thread::get_id() != home_id) ++wrong;
        sum += v;
        if (++done == 200) home.stop();
    };
    for (int i = 0; i < 200; ++i) home.spawn(body(i));
    home.run();
    EXPECT_EQ(done, 200);
    EXPECT_EQ(sum, 199 * 200 / 2);
    EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace vela
