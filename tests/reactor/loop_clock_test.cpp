// Regression for src/reactor/loop.cpp: the loop's clock (now_ms(), http_date()) used to be
// read only after the completions of a wait had run, so the first completions after a long
// sleep saw the time at which the loop fell asleep. Connection deadlines computed there were
// already past (an idle server closed its next new connection unanswered).
#include <time.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "vela/reactor/loop.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;

std::uint64_t coarse_now_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
}

TEST(LoopClock, CompletionsAfterALongWaitSeeTheCurrentTime) {
    Loop loop;
    std::thread runner([&] { loop.run(); });
    for (int round = 0; round < 2; ++round) {
        std::this_thread::sleep_for(600ms);  // nothing to do: the loop waits with no deadline
        const std::uint64_t before = coarse_now_ms();
        std::atomic<std::uint64_t> seen{0};
        loop.post([&] { seen = loop.now_ms(); });  // runs as the completion of the wake-up
        while (seen == 0) std::this_thread::sleep_for(1ms);
        // The coarse clock ticks every few milliseconds; 600 ms stale is what failed.
        EXPECT_GE(seen + 50, before)
            << "round " << round << ": clock " << (before - seen) << " ms stale";
    }
    loop.stop();
    runner.join();
}

}  // namespace
}  // namespace vela
