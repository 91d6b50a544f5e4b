// arena/app/cache.hpp: the HttpArena entry's in-process cache tier (TTL, invalidation, and the
// generations that keep a read in flight from undoing a write's invalidation).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cache.hpp"

namespace {

using namespace std::chrono_literals;
using arena::TtlCache;

TEST(TtlCache, KeepsAValueForItsTimeToLive) {
    TtlCache c(60ms);
    EXPECT_FALSE(c.get(7));
    EXPECT_TRUE(c.put_if_unchanged(7, "seven", c.generation(7)));
    EXPECT_EQ(c.get(7).value_or(""), "seven");
    std::this_thread::sleep_for(80ms);
    EXPECT_FALSE(c.get(7)) << "expired";
    EXPECT_TRUE(c.put_if_unchanged(7, "again", 10s, c.generation(7)));
    std::this_thread::sleep_for(80ms);
    EXPECT_EQ(c.get(7).value_or(""), "again") << "a longer time to live of its own";
}

TEST(TtlCache, EraseForgetsAndRefusesAFillThatStartedBefore) {
    TtlCache c(10s);
    const std::uint64_t before = c.generation(42);
    ASSERT_TRUE(c.put_if_unchanged(42, "v1", before));
    // A reader takes the generation, loads the old row; a write erases meanwhile.
    const std::uint64_t reader = c.generation(42);
    c.erase(42);
    EXPECT_FALSE(c.get(42));
    EXPECT_FALSE(c.put_if_unchanged(42, "v1 (stale)", reader));
    EXPECT_FALSE(c.get(42)) << "the stale fill was refused";
    // A reader that starts after the write fills as usual.
    EXPECT_TRUE(c.put_if_unchanged(42, "v2", c.generation(42)));
    EXPECT_EQ(c.get(42).value_or(""), "v2");
}

TEST(TtlCache, AnEraseOfAnotherBucketDoesNotCostAFill) {
    TtlCache c(10s);
    const std::uint64_t g = c.generation(1);
    c.erase(2);   // another shard
    c.erase(65);  // same shard as 1 (64 shards), another bucket
    EXPECT_TRUE(c.put_if_unchanged(1, "one", g));
    // Ids 64 * 64 apart share shard and bucket: an erase there refuses the fill (never stale).
    const std::uint64_t h = c.generation(3);
    c.erase(3 + 64 * 64);
    EXPECT_FALSE(c.put_if_unchanged(3, "three", h));
}

TEST(TtlCache, NegativeAndHugeIdsAreFine) {
    TtlCache c(10s);
    for (std::int64_t id : {std::int64_t{-1}, std::int64_t{0}, INT64_MIN, INT64_MAX}) {
        EXPECT_TRUE(c.put_if_unchanged(id, std::to_string(id), c.generation(id)));
        EXPECT_EQ(c.get(id).value_or(""), std::to_string(id));
        c.erase(id);
        EXPECT_FALSE(c.get(id));
    }
}

// Many ids put once: expired entries are swept as shards grow, not kept for ever.
TEST(TtlCache, ExpiredEntriesAreSweptAsTheCacheGrows) {
    TtlCache c(1ms);
    for (std::int64_t id = 0; id < 20'000; ++id) c.put_if_unchanged(id, "x", c.generation(id));
    std::this_thread::sleep_for(5ms);
    for (std::int64_t id = 20'000; id < 40'000; ++id) c.put_if_unchanged(id, "x", c.generation(id));
    for (std::int64_t id = 0; id < 20'000; id += 997) EXPECT_FALSE(c.get(id));
}

// One writer erasing while three readers fill: once the writer is done, the value left (if
// any) is the last version, never one a reader loaded before the last erase.
TEST(TtlCache, FourThreadsNeverKeepAFillOlderThanTheLastErase) {
    TtlCache c(10s);
    std::atomic<int> version{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    threads.emplace_back([&] {
        for (int i = 0; i < 20'000; ++i) {
            version.fetch_add(1);  // the write commits...
            c.erase(5);            // ...then invalidates
        }
        stop = true;
    });
    for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&] {
            while (!stop) {
                const std::uint64_t g = c.generation(5);
                const int seen = version.load();  // the row, read after the generation
                c.put_if_unchanged(5, std::to_string(seen), g);
            }
        });
    }
    for (auto& th : threads) th.join();
    if (std::optional<std::string> v = c.get(5)) {
        EXPECT_EQ(std::stoi(*v), version.load()) << *v;
    }
}

}  // namespace
