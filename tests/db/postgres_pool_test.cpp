// The PostgreSQL backend's pools against a real server: transactions, pool exhaustion, query
// timeouts and cancellation, abandoned statements, a server restart, several loops, idle
// connections.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "db/pg_test_util.hpp"
#include "db/servers.hpp"
#include "vela/async/when_all.hpp"
#include "vela/db/db.hpp"
#include "vela/db/postgres.hpp"

namespace vela::db {
namespace {

using namespace std::chrono_literals;
using test::ms_since;
using test::run_on_loop;
using test::table;
using Clock = std::chrono::steady_clock;

// Statements running `text` on the server, other than the asking one.
Task<std::int64_t> running(Database& db, std::string_view like) {
    auto n = co_await db.query_one<std::int64_t>(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid "
        "<> pg_backend_pid()",
        like);
    co_return n.value_or(-1);
}

// Waits up to 3 s for no statement like `like` to be running.
Task<bool> stops_running(Database& db, std::string_view like) {
    co_return co_await test::poll_until(
        [&]() -> Task<bool> { co_return co_await running(db, like) == 0; }, 3s, 50ms);
}

TEST(PostgresPool, TransactionsCommitAndRollBackWhenTheBodyThrows) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string t = table("pg_tx");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(
            fmt::format("DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (id int PRIMARY KEY)", t));
        int r = co_await db.transaction([&](Transaction& tx) -> Task<int> {
            co_await tx.execute(fmt::format("INSERT INTO {} VALUES ($1)", t), 1);
            co_await tx.execute(fmt::format("INSERT INTO {} VALUES ($1)", t), 2);
            // Inside the transaction its own rows are visible; outside not yet.
            auto inside =
                co_await tx.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t));
            EXPECT_EQ(inside, 2);
            auto outside =
                co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t));
            EXPECT_EQ(outside, 0);
            co_return 7;
        });
        EXPECT_EQ(r, 7);
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t)),
                  2);
        try {
            co_await db.transaction([&](Transaction& tx) -> Task<void> {
                co_await tx.execute(fmt::format("INSERT INTO {} VALUES ($1)", t), 3);
                throw std::runtime_error("body failed");
            });
            ADD_FAILURE() << "no exception";
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "body failed");
        }
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t)),
                  2);
        // A statement error inside, caught by the body: COMMIT then rolls back, and says so.
        try {
            co_await db.transaction([&](Transaction& tx) -> Task<void> {
                co_await tx.execute(fmt::format("INSERT INTO {} VALUES ($1)", t), 4);
                try {
                    co_await tx.execute(fmt::format("INSERT INTO {} VALUES ($1)", t), 1);
                } catch (const UniqueViolation&) {
                }
            });
            ADD_FAILURE() << "commit of a failed transaction reported success";
        } catch (const Error& e) {
            EXPECT_EQ(e.sqlstate(), "25P02") << e.what();
        }
        // A transaction dropped without commit or rollback is rolled back.
        {
            std::unique_ptr<Transaction> tx = co_await db.begin();
            co_await tx->execute(fmt::format("INSERT INTO {} VALUES ($1)", t), 5);
        }
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t)),
                  2);
        auto tx = co_await db.begin();
        co_await tx->commit();
        EXPECT_THROW(co_await tx->execute("SELECT 1"), Error);
        co_await db.execute("DROP TABLE " + t);
    });
}

TEST(PostgresPool, ExhaustedPoolFailsWithTimeoutAfterAcquireTimeout) {
    VELA_NEED_PG(url);
    Options o;
    o.pool_size = 1;
    o.acquire_timeout = 300ms;
    Database db(url, o);
    run_on_loop([&]() -> Task<void> {
        auto tx = co_await db.begin();
        auto t0 = Clock::now();
        try {
            co_await db.query("SELECT 1");
            ADD_FAILURE() << "ran although the only connection is in a transaction";
        } catch (const TimeoutError& e) {
            EXPECT_NE(std::string(e.what()).find("no PostgreSQL connection free"),
                      std::string::npos);
        }
        EXPECT_GE(ms_since(t0), 250);
        EXPECT_LT(ms_since(t0), 3000);
        // A second transaction waits the same way.
        EXPECT_THROW((void)(co_await db.begin()), TimeoutError);
        EXPECT_EQ(pg_pool_stats(db).waiting, 0u);
        co_await tx->commit();
        EXPECT_EQ(co_await db.query_one<int>("SELECT 1"), 1);
        // A waiting statement gets the connection as soon as the transaction ends.
        auto tx2 = co_await db.begin();
        std::vector<Task<void>> both;
        both.push_back([](Database& d) -> Task<void> {
            EXPECT_EQ(co_await d.query_one<int>("SELECT 2"), 2);
        }(db));
        both.push_back([](Transaction& t) -> Task<void> {
            co_await vela::sleep(50ms);
            co_await t.commit();
        }(*tx2));
        co_await when_all(std::move(both));
    });
}

TEST(PostgresPool, QueryTimeoutFailsTheStatementAndCancelsItOnTheServer) {
    VELA_NEED_PG(url);
    Options o;
    o.query_timeout = 200ms;
    Database db(url, o);
    Database watcher(url);
    run_on_loop([&]() -> Task<void> {
        auto t0 = Clock::now();
        try {
            co_await db.query("SELECT pg_sleep(5) /* vela-timeout-test */");
            ADD_FAILURE() << "pg_sleep(5) returned";
        } catch (const TimeoutError& e) {
            EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
        }
        EXPECT_LT(ms_since(t0), 2000);
        EXPECT_TRUE(co_await stops_running(watcher, "%vela-timeout-test%"));
        // The connection serves the next statement.
        EXPECT_EQ(co_await db.query_one<int>("SELECT 3"), 3);
    });
}

TEST(PostgresPool, AbandonedStatementResumesNothingAndIsCancelled) {
    VELA_NEED_PG(url);
    Database db(url);
    run_on_loop([&]() -> Task<void> {
        bool resumed = false;
        auto sleeper = [](Database& d, bool& flag) -> Task<void> {
            co_await d.query("SELECT pg_sleep(5) /* vela-abandon-test */");
            flag = true;
        };
        std::coroutine_handle<> driver =
            vela::start(sleeper(db, resumed), [&](std::exception_ptr) { resumed = true; });
        while (co_await running(db, "%vela-abandon-test%") == 0) co_await vela::sleep(20ms);
        driver.destroy();  // the handler is abandoned mid-statement
        EXPECT_TRUE(co_await stops_running(db, "%vela-abandon-test%"));
        co_await vela::sleep(100ms);
        EXPECT_FALSE(resumed);
        EXPECT_EQ(co_await db.query_one<int>("SELECT 4"), 4);
    });
}

TEST(PostgresPool, ServerKilledMidQueryIsAConnectionErrorAndTheNextQueryReconnects) {
    VELA_NEED_PG(url);
    if (test::env_or_empty("VELA_TEST_DB_SCRIPT").empty())
        GTEST_SKIP() << "needs scripts/db-servers";
    Options o;
    o.reconnect_backoff = 50ms;
    o.reconnect_backoff_max = 400ms;
    Database db(url, o);
    run_on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await db.query_one<int>("SELECT 1"), 1);
        std::atomic<bool> killed{false};
        std::thread killer([&] {
            std::this_thread::sleep_for(300ms);
            killed = test::db_servers("pg-kill");
        });
        try {
            co_await db.query("SELECT pg_sleep(10)");
            ADD_FAILURE() << "pg_sleep survived the server";
        } catch (const ConnectionError& e) {
            EXPECT_NE(std::string(e.what()).find("connection"), std::string::npos) << e.what();
        }
        killer.join();
        EXPECT_TRUE(killed);
        // Down: statements fail with ConnectionError (not hang).
        EXPECT_THROW(co_await db.query("SELECT 1"), ConnectionError);
        EXPECT_TRUE(test::db_servers("pg-start"));
        co_await vela::sleep(o.reconnect_backoff_max);  // the backoff after failed attempts
        EXPECT_EQ(co_await db.query_one<int>("SELECT 5"), 5);
    });
}

TEST(PostgresPool, SeveralLoopsShareOneDatabaseWithAPoolEach) {
    VELA_NEED_PG(url);
    Options o;
    o.pool_size = 2;
    Database db(url, o);
    constexpr int kLoops = 4, kQueries = 100;
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    std::atomic<std::size_t> max_connections{0};
    std::atomic<std::size_t> loops_seen{0};
    for (int l = 0; l < kLoops; ++l)
        threads.emplace_back([&, l] {
            run_on_loop([&, l]() -> Task<void> {
                std::vector<Task<std::int64_t>> tasks;
                for (int i = 0; i < kQueries; ++i)
                    tasks.push_back([](Database& d, std::int64_t v) -> Task<std::int64_t> {
                        auto r = co_await d.query_one<std::int64_t>("SELECT $1::int8 + 1", v);
                        co_return r.value_or(-1);
                    }(db, l * 1000 + i));
                auto out = co_await when_all(std::move(tasks));
                for (int i = 0; i < kQueries; ++i) ok += out[i] == l * 1000 + i + 1;
                PgPoolStats s = pg_pool_stats(db);
                std::size_t c = max_connections.load();
                while (s.connections > c &&
                       !max_connections.compare_exchange_weak(c, s.connections)) {
                }
                std::size_t seen = loops_seen.load();
                while (s.loops > seen && !loops_seen.compare_exchange_weak(seen, s.loops)) {
                }
            });
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(ok, kLoops * kQueries);
    EXPECT_LE(max_connections.load(), o.pool_size);  // per loop
    EXPECT_GE(loops_seen.load(), 2u);
}

TEST(PostgresPool, IdleConnectionsAreClosedAndDeadOnesReplaced) {
    VELA_NEED_PG(url);
    Options o;
    o.idle_timeout = 150ms;
    o.health_check_after = 50ms;
    Database db(url, o);
    Database watcher(url);
    run_on_loop([&]() -> Task<void> {
        auto pid = co_await db.query_one<int>("SELECT pg_backend_pid()");
        EXPECT_EQ(pg_pool_stats(db).connections, 1u);
        // Killed on the server while idle (past health_check_after): not handed out again, a
        // new connection serves the next statement.
        co_await vela::sleep(80ms);
        co_await watcher.query("SELECT pg_terminate_backend($1::int4)", *pid);
        co_await vela::sleep(20ms);
        auto pid2 = co_await db.query_one<int>("SELECT pg_backend_pid()");
        EXPECT_NE(pid, pid2);
        co_await vela::sleep(500ms);
        EXPECT_EQ(pg_pool_stats(db).connections, 0u);  // closed after idle_timeout
        EXPECT_EQ(co_await db.query_one<int>("SELECT 6"), 6);
    });
}

TEST(PostgresPool, IdleConnectionIsHealthCheckedBeforeUse) {
    VELA_NEED_PG(url);
    Options o;
    o.health_check_after = 50ms;
    o.query_timeout = 400ms;
    Database db(url, o);
    bool skipped = false;
    run_on_loop([&]() -> Task<void> {
        auto pid = co_await db.query_one<int>("SELECT pg_backend_pid()");
        // The server process stops answering without closing the socket (a silent network
        // failure): only a check notices.
        if (!pid || ::kill(*pid, SIGSTOP) != 0) {
            skipped = true;  // the server runs as a user we may not signal
            co_return;
        }
        co_await vela::sleep(100ms);
        auto t0 = Clock::now();
        try {
            auto other = co_await db.query_one<int>("SELECT pg_backend_pid()");
            EXPECT_NE(other, pid);
            EXPECT_LT(ms_since(t0), 400);  // not the query timeout of the dead connection
        } catch (const Error& e) {
            ADD_FAILURE() << "the statement went to the unchecked connection: " << e.what();
        }
        ::kill(*pid, SIGCONT);
    });
    if (skipped) GTEST_SKIP() << "cannot stop the server process (not root?)";
}

TEST(PostgresPool, ConnectionsOlderThanMaxLifetimeAreReplaced) {
    VELA_NEED_PG(url);
    Options o;
    o.max_lifetime = 200ms;
    o.pool_size = 1;
    Database db(url, o);
    run_on_loop([&]() -> Task<void> {
        auto first = co_await db.query_one<int>("SELECT pg_backend_pid()");
        // Busy past its lifetime: it finishes its statement, then is closed.
        auto during = co_await db.query_one<int>("SELECT pg_backend_pid() FROM pg_sleep(0.4)");
        EXPECT_EQ(first, during);
        co_await vela::sleep(300ms);
        auto later = co_await db.query_one<int>("SELECT pg_backend_pid()");
        EXPECT_NE(first, later);
    });
}

}  // namespace
}  // namespace vela::db
