// Tests for src/reactor/timer_wheel.cpp: never early, at most one tick late, cancel,
// reschedule, entries beyond one turn of the wheel.
#include "vela/reactor/timer_wheel.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace vela {
namespace {

// A schedulable timer that records the (fake) clock each time it fires.
struct Probe {
    TimerWheel::Entry entry;
    const std::uint64_t* clock;
    std::vector<std::uint64_t> fired_at;
    std::uint64_t deadline = 0;

    explicit Probe(const std::uint64_t* c) : clock(c) {
        entry.owner = this;
        entry.fire = [](TimerWheel::Entry* e) {
            auto* p = static_cast<Probe*>(e->owner);
            p->fired_at.push_back(*p->clock);
        };
    }
};

struct Harness {
    TimerWheel wheel;
    std::uint64_t now = 0;
    Harness(std::uint64_t tick, std::size_t slots, std::uint64_t start) : wheel(tick, slots) {
        now = start;
        wheel.advance(now);
    }
    void schedule(Probe& p, std::uint64_t after) {
        p.deadline = now + after;
        wheel.schedule(p.entry, now, after);
    }
    // Advances the clock one millisecond at a time up to `until`.
    void step_to(std::uint64_t until) {
        while (now < until) {
            ++now;
            wheel.advance(now);
        }
    }
};

TEST(TimerWheel, SlotCountMustBeAPowerOfTwo) {
    EXPECT_THROW(TimerWheel(10, 0), std::invalid_argument);
    EXPECT_THROW(TimerWheel(10, 1000), std::invalid_argument);
    EXPECT_NO_THROW(TimerWheel(10, 1));
    EXPECT_NO_THROW(TimerWheel(10, 512));
}

TEST(TimerWheel, FiresNeverEarlyAndAtMostOneTickLate) {
    const std::uint64_t tick = 100;
    for (std::uint64_t start : {0, 1, 37, 99, 100, 101, 12345}) {
        for (std::uint64_t delay : {0, 1, 50, 99, 100, 101, 150, 199, 200, 250, 999, 1000, 1001}) {
            SCOPED_TRACE("start " + std::to_string(start) + " delay " + std::to_string(delay));
            Harness h(tick, 16, start);
            Probe p(&h.now);
            h.schedule(p, delay);
            EXPECT_EQ(h.wheel.size(), 1u);
            h.step_to(start + delay + 3 * tick);
            ASSERT_EQ(p.fired_at.size(), 1u);
            EXPECT_GE(p.fired_at[0], p.deadline);
            EXPECT_LE(p.fired_at[0], p.deadline + tick);
            EXPECT_FALSE(p.entry.linked());
            EXPECT_EQ(h.wheel.size(), 0u);
        }
    }
}

TEST(TimerWheel, ScheduleBeforeTheFirstAdvance) {
    TimerWheel wheel(10, 8);
    std::uint64_t now = 1000;
    Probe p(&now);
    wheel.schedule(p.entry, now, 25);
    for (; now < 1040; ++now) wheel.advance(now);
    ASSERT_EQ(p.fired_at.size(), 1u);
    EXPECT_GE(p.fired_at[0], 1025u);
    EXPECT_LE(p.fired_at[0], 1035u);
}

TEST(TimerWheel, CancelledEntriesNeverFire) {
    Harness h(10, 8, 0);
    Probe a(&h.now), b(&h.now);
    h.schedule(a, 50);
    h.schedule(b, 50);
    EXPECT_EQ(h.wheel.size(), 2u);
    h.wheel.cancel(a.entry);
    EXPECT_FALSE(a.entry.linked());
    EXPECT_EQ(h.wheel.size(), 1u);
    h.wheel.cancel(a.entry);  // twice: no-op
    EXPECT_EQ(h.wheel.size(), 1u);
    h.step_to(200);
    EXPECT_TRUE(a.fired_at.empty());
    EXPECT_EQ(b.fired_at.size(), 1u);
    Probe never(&h.now);
    h.wheel.cancel(never.entry);  // never scheduled: no-op
    EXPECT_EQ(h.wheel.size(), 0u);
}

TEST(TimerWheel, RescheduleMovesTheDeadline) {
    Harness h(10, 8, 0);
    Probe p(&h.now);
    h.schedule(p, 100);
    h.step_to(50);
    h.schedule(p, 500);  // re-arm while linked: an idle connection that saw a request
    EXPECT_EQ(h.wheel.size(), 1u);
    h.step_to(540);
    EXPECT_TRUE(p.fired_at.empty());
    h.step_to(700);
    ASSERT_EQ(p.fired_at.size(), 1u);
    EXPECT_GE(p.fired_at[0], 550u);
    EXPECT_LE(p.fired_at[0], 560u);
    h.schedule(p, 5);  // rescheduling after it fired works like a fresh schedule
    h.step_to(800);
    EXPECT_EQ(p.fired_at.size(), 2u);
}

TEST(TimerWheel, EntriesBeyondOneTurnWaitForTheirTick) {
    Harness h(10, 8, 0);  // one turn = 80 ms
    Probe far(&h.now), near(&h.now);
    h.schedule(far, 1000);
    h.schedule(near, 75);
    h.step_to(999);
    EXPECT_EQ(near.fired_at.size(), 1u);
    EXPECT_TRUE(far.fired_at.empty()) << "fired at " << far.fired_at[0];
    h.step_to(1020);
    ASSERT_EQ(far.fired_at.size(), 1u);
    EXPECT_GE(far.fired_at[0], 1000u);
    EXPECT_LE(far.fired_at[0], 1010u);
}

TEST(TimerWheel, OneBigJumpFiresEverythingDueAndNothingElse) {
    Harness h(10, 8, 0);
    std::vector<std::unique_ptr<Probe>> probes;
    for (std::uint64_t d : {5, 80, 81, 500, 999, 1000, 1001, 5000}) {
        probes.push_back(std::make_unique<Probe>(&h.now));
        h.schedule(*probes.back(), d);
    }
    h.now = 1000;
    h.wheel.advance(h.now);
    for (const auto& p : probes) {
        if (p->deadline <= 1000) {
            EXPECT_EQ(p->fired_at.size(), 1u) << p->deadline;
        } else {
            EXPECT_TRUE(p->fired_at.empty()) << p->deadline;
        }
    }
    h.step_to(6000);
    for (const auto& p : probes) EXPECT_EQ(p->fired_at.size(), 1u) << p->deadline;
}

TEST(TimerWheel, ManyEntriesEachFireOnceOnTime) {
    const std::uint64_t tick = 10;
    Harness h(tick, 64, 5);  // one turn = 640 ms; deadlines go well past it
    std::mt19937 rng(1234);
    std::uniform_int_distribution<std::uint64_t> delay(0, 5000);
    std::vector<std::unique_ptr<Probe>> probes;
    for (int round = 0; round < 20; ++round) {
        for (int i = 0; i < 500; ++i) {
            probes.push_back(std::make_unique<Probe>(&h.now));
            h.schedule(*probes.back(), delay(rng));
        }
        h.step_to(h.now + 37);
    }
    EXPECT_LE(h.wheel.size(), probes.size());
    h.step_to(h.now + 5000 + 2 * tick);
    EXPECT_EQ(h.wheel.size(), 0u);
    std::size_t bad = 0;
    for (const auto& p : probes) {
        if (p->fired_at.size() != 1 || p->fired_at[0] < p->deadline ||
            p->fired_at[0] > p->deadline + tick) {
            if (++bad <= 5) {
                ADD_FAILURE() << "deadline " << p->deadline << " fired " << p->fired_at.size()
                              << " times, first at " << (p->fired_at.empty() ? 0 : p->fired_at[0]);
            }
        }
    }
    EXPECT_EQ(bad, 0u);
}

// A fired callback may re-arm its own entry (periodic work) and cancel another due entry.
struct Periodic {
    TimerWheel::Entry entry;
    TimerWheel* wheel = nullptr;
    const std::uint64_t* clock = nullptr;
    TimerWheel::Entry* victim = nullptr;
    int fired = 0;
};

TEST(TimerWheel, CallbacksMayRescheduleAndCancel) {
    TimerWheel wheel(10, 8);
    std::uint64_t now = 0;
    wheel.advance(now);
    Periodic per;
    per.wheel = &wheel;
    per.clock = &now;
    per.entry.owner = &per;
    per.entry.fire = [](TimerWheel::Entry* e) {
        auto* p = static_cast<Periodic*>(e->owner);
        ++p->fired;
        if (p->victim) p->wheel->cancel(*p->victim);
        if (p->fired < 5) p->wheel->schedule(p->entry, *p->clock, 20);
    };
    Probe victim(&now);
    per.victim = &victim.entry;
    wheel.schedule(per.entry, now, 20);
    wheel.schedule(victim.entry, now, 20);  // same tick, queued after `per`
    for (; now <= 300; ++now) wheel.advance(now);
    EXPECT_EQ(per.fired, 5);
    EXPECT_TRUE(victim.fired_at.empty());
    EXPECT_EQ(wheel.size(), 0u);
}

TEST(TimerWheel, NextTimeout) {
    TimerWheel wheel(100, 16);
    EXPECT_EQ(wheel.next_timeout_ms(0), -1);
    std::uint64_t now = 1050;
    wheel.advance(now);
    Probe p(&now);
    wheel.schedule(p.entry, now, 1000);
    int t = wheel.next_timeout_ms(now);
    EXPECT_GT(t, 0);
    EXPECT_LE(t, 100);
    wheel.cancel(p.entry);
    EXPECT_EQ(wheel.next_timeout_ms(now), -1);
    EXPECT_EQ(wheel.tick_ms(), 100u);
}

}  // namespace
}  // namespace vela
