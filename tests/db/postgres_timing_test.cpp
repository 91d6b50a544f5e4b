// Prints what PostgreSQL statements cost on one loop against the real server (no timing
// assertions: machines differ). Build type Release for numbers worth quoting:
//   build/hP-rel/tests/vela_data_tests --gtest_filter='PostgresTiming.*'
// It checks every answer, so it is also a test of the pipelined paths under load.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "db/pg_test_util.hpp"
#include "db/servers.hpp"
#include "vela/async/when_all.hpp"
#include "vela/db/db.hpp"

namespace vela::db {
namespace {

using Clock = std::chrono::steady_clock;

struct World {
    int id = 0;
    int randomnumber = 0;
};
VELA_REFLECT(World, id, randomnumber)

Task<World> find_world(Database& db, int id) {
    auto w =
        co_await db.query_one<World>("SELECT id, randomnumber FROM world_timing WHERE id = $1", id);
    co_return w.value_or(World{});
}

double us_per(Clock::duration d, int n) {
    return std::chrono::duration<double, std::micro>(d).count() / n;
}

// Per query: sequential awaits; per batch of 20: when_all, 20 sequential awaits.
Task<void> measure(Database& db, const char* label, int rounds, int& wrong) {
    const int kBatch = 20;
    for (int i = 1; i <= 50; ++i) wrong += (co_await find_world(db, i)).id != i;  // warm up
    auto t0 = Clock::now();
    for (int i = 0; i < rounds * kBatch; ++i)
        wrong += (co_await find_world(db, i % 1000 + 1)).id != i % 1000 + 1;
    auto single = Clock::now() - t0;
    t0 = Clock::now();
    for (int r = 0; r < rounds; ++r) {
        std::vector<Task<World>> batch;
        for (int i = 0; i < kBatch; ++i)
            batch.push_back(find_world(db, (r * kBatch + i) % 1000 + 1));
        auto out = co_await when_all(std::move(batch));
        for (int i = 0; i < kBatch; ++i) wrong += out[i].id != (r * kBatch + i) % 1000 + 1;
    }
    auto together = Clock::now() - t0;
    std::printf(
        "[ timing   ] %-22s single query %7.1f us | 20 sequential %8.1f us | 20 with when_all "
        "%8.1f us\n",
        label, us_per(single, rounds * kBatch), us_per(single, rounds), us_per(together, rounds));
}

TEST(PostgresTiming, SingleRowQueriesSequentialAndTwentyTogether) {
    VELA_NEED_PG(url);
    Database setup(url);
    test::run_on_loop([&]() -> Task<void> {
        co_await setup.run_script(
            "CREATE TABLE IF NOT EXISTS world_timing (id int PRIMARY KEY, randomnumber int NOT "
            "NULL); INSERT INTO world_timing SELECT g, g % 10000 FROM generate_series(1, 1000) g "
            "ON CONFLICT DO NOTHING");
    });
    int wrong = 0;
    const int rounds = 100;
    for (int mode = 0; mode < 3; ++mode) {
        Options o;
        o.pipeline = mode != 1;
        o.prepare = mode != 2;
        Database db(url, o);
        const char* label = mode == 0   ? "pipeline+prepare"
                            : mode == 1 ? "no pipeline"
                                        : "no prepare";
        test::run_on_loop([&]() -> Task<void> { co_await measure(db, label, rounds, wrong); });
    }
    Options one;
    one.pool_size = 1;
    Database db1(url, one);
    test::run_on_loop(
        [&]() -> Task<void> { co_await measure(db1, "pipeline, 1 connection", rounds, wrong); });
    Options one_np = one;
    one_np.pipeline = false;
    Database db2(url, one_np);
    test::run_on_loop(
        [&]() -> Task<void> { co_await measure(db2, "no pipeline, 1 conn.", rounds, wrong); });
    EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace vela::db
