// Throughput of the SQLite backend (disabled by default; run a Release build with
// --gtest_also_run_disabled_tests --gtest_filter='SqliteBench*'): point SELECTs by primary key
// from one and two loops, INSERTs from four loops, each with many statements in flight.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include "db/sqlite_support.hpp"
#include "vela/db/db.hpp"

namespace vela::db {
namespace {

using namespace std::chrono_literals;

constexpr int kRows = 10000;
constexpr int kInFlight = 32;  // coroutines per loop, each awaiting its statements in turn
constexpr auto kRun = 2s;

// Runs `op(i)` repeatedly from kInFlight coroutines on each of `loops` loops for kRun;
// returns statements per second.
double rate(std::size_t loops, const std::function<Task<void>(std::int64_t)>& op) {
    std::atomic<std::int64_t> done{0};
    const auto until = std::chrono::steady_clock::now() + kRun;
    const auto t0 = std::chrono::steady_clock::now();
    test::on_loops(loops, [&](std::size_t l) -> Task<void> {
        auto worker = [&](std::int64_t seed) -> Task<void> {
            std::int64_t n = 0;
            while (std::chrono::steady_clock::now() < until) {
                co_await op(seed * 7919 + n++);
                ++done;
            }
        };
        std::vector<Task<void>> ws;
        for (int i = 0; i < kInFlight; ++i)
            ws.push_back(worker(static_cast<std::int64_t>(l) * 1000 + i));
        auto left = std::make_shared<int>(kInFlight);
        for (auto& w : ws)
            spawn([](Task<void> t, std::shared_ptr<int> p) -> Task<void> {
                co_await std::move(t);
                --*p;
            }(std::move(w), left));
        while (*left > 0) co_await vela::sleep(5ms);
    });
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
    return static_cast<double>(done.load()) / took.count();
}

TEST(SqliteBench, DISABLED_PointSelectsAndInserts) {
    test::ScratchDir dir;
    Database db(dir.url());
    test::on_loop([&]() -> Task<void> {
        co_await db.run_script(
            "CREATE TABLE kv (id INTEGER PRIMARY KEY, v TEXT NOT NULL);"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10000) "
            "INSERT INTO kv SELECT i, 'value ' || i FROM c;"
            "CREATE TABLE ins (id INTEGER PRIMARY KEY, loop INTEGER, v TEXT);");
    });
    auto select = [&](std::int64_t k) -> Task<void> {
        auto v =
            co_await db.query_one<std::string>("SELECT v FROM kv WHERE id = $1", k % kRows + 1);
        if (!v) ADD_FAILURE() << "no row " << k;
    };
    auto insert = [&](std::int64_t k) -> Task<void> {
        co_await db.execute("INSERT INTO ins (loop, v) VALUES ($1, $2)", k, "some text");
    };
    const double one = rate(1, select);
    const double two = rate(2, select);
    const double ins = rate(4, insert);
    std::printf("SQLite point SELECT by primary key: %.0f/s on 1 loop, %.0f/s on 2 loops\n", one,
                two);
    std::printf("SQLite INSERT from 4 loops: %.0f/s\n", ins);
    RecordProperty("select_1_loop", static_cast<int>(one));
    RecordProperty("select_2_loops", static_cast<int>(two));
    RecordProperty("insert_4_loops", static_cast<int>(ins));
    EXPECT_GT(one, 0);
    EXPECT_GT(ins, 0);
}

}  // namespace
}  // namespace vela::db
