// pg::copy_in / pg::copy_out against a real server (scripts/db-servers): 100k rows in and out,
// producers and sinks, bad rows as typed errors, the connection usable afterwards, and COPYs
// interleaved with statements many times over (none may wait for a socket edge that never
// comes).
#include <gtest/gtest.h>

#include <condition_variable>
#include <coroutine>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
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
using test::run_on_loop;
using test::table;

// Rows `from`..`to` (inclusive) as CSV lines "i,name i" (names with a comma and a quote
// every 7th row, quoted as CSV wants).
std::string csv_rows(int from, int to) {
    std::string out;
    for (int i = from; i <= to; ++i) {
        out += std::to_string(i);
        if (i % 7 == 0)
            out += fmt::format(",\"name, \"\"{}\"\"\"\n", i);
        else
            out += fmt::format(",name {}\n", i);
    }
    return out;
}

Task<void> make_table(Database& db, const std::string& t) {
    co_await db.run_script(fmt::format(
        "DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (a int4 PRIMARY KEY, b text NOT NULL)", t));
}

// Fails the test when a COPY into `t` still runs after `within`, and terminates that COPY's
// backend: a COPY waiting for a socket edge that never comes then ends with ConnectionError
// instead of hanging the suite.
class HangGuard {
  public:
    HangGuard(std::string url, std::string t, std::chrono::milliseconds within)
        : thread_([this, url = std::move(url), t = std::move(t), within] {
              {
                  std::unique_lock lock(mutex_);
                  if (cv_.wait_for(lock, within, [this] { return done_; })) return;
              }
              ADD_FAILURE() << "a COPY into " << t << " still runs after " << within.count()
                            << " ms: terminating its backend";
              run_on_loop([&]() -> Task<void> {
                  Database probe(url);
                  co_await probe.execute(
                      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE $1 "
                      "AND pid <> pg_backend_pid()",
                      "COPY " + t + " %");
              });
          }) {}
    HangGuard(const HangGuard&) = delete;
    HangGuard& operator=(const HangGuard&) = delete;
    ~HangGuard() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;  // last: it uses the members above
};

// Runs `body(db, t)` on a loop, with a Database of `pool_size` connections and a fresh table `t`
// (make_table) named after `base`, under a HangGuard of `within`; then drops the table.
void with_table(const std::string& url, std::size_t pool_size, const char* base,
                std::chrono::milliseconds within,
                const std::function<Task<void>(Database&, const std::string&)>& body) {
    Options o;
    o.pool_size = pool_size;
    Database db(url, o);
    const std::string t = table(base);
    HangGuard guard(url, t, within);
    run_on_loop([&]() -> Task<void> {
        co_await make_table(db, t);
        co_await body(db, t);
        co_await db.execute(fmt::format("DROP TABLE {}", t));
    });
}

TEST(PostgresCopy, CopyInOfAHundredThousandRowsThenCopyOutGivesThemBack) {
    VELA_NEED_PG(url);
    Options o;
    o.pool_size = 1;  // the COPY's connection is the one the queries use afterwards
    Database db(url, o);
    const std::string t = table("pg_copy_big");
    run_on_loop([&]() -> Task<void> {
        co_await make_table(db, t);
        constexpr int kRows = 100000;
        std::vector<std::string> chunks;
        std::string all;
        for (int i = 1; i <= kRows; i += 997) {  // chunks of 997 rows
            chunks.push_back(csv_rows(i, std::min(i + 996, kRows)));
            all += chunks.back();
        }
        std::uint64_t n = co_await pg::copy_in(
            db, fmt::format("COPY {} (a, b) FROM STDIN (FORMAT csv)", t), std::move(chunks));
        EXPECT_EQ(n, static_cast<std::uint64_t>(kRows));
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t)),
                  kRows);
        EXPECT_EQ(
            co_await db.query_one<std::string>(fmt::format("SELECT b FROM {} WHERE a = 14", t)),
            "name, \"14\"");
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT sum(a) FROM {}", t)),
                  std::int64_t{kRows} * (kRows + 1) / 2);

        // Out: the same bytes, whole or chunk by chunk.
        const std::string out_sql =
            fmt::format("COPY (SELECT a, b FROM {} ORDER BY a) TO STDOUT (FORMAT csv)", t);
        std::string back = co_await pg::copy_out(db, out_sql);
        EXPECT_EQ(back.size(), all.size());
        EXPECT_TRUE(back == all);
        std::string joined;
        std::size_t pieces = 0, whole_rows = 0;
        std::uint64_t rows =
            co_await pg::copy_out(db, out_sql, [&](std::string_view c) -> Task<void> {
                ++pieces;
                whole_rows += !c.empty() && c.back() == '\n';
                joined.append(c);
                co_await vela::sleep(0ms);  // a sink that suspends (e.g. writing to a client)
            });
        EXPECT_EQ(rows, static_cast<std::uint64_t>(kRows));
        EXPECT_TRUE(joined == all);
        EXPECT_GT(pieces, 10u);  // ~2 MB in ~64 KiB chunks
        EXPECT_EQ(whole_rows, pieces);
        EXPECT_EQ(pg_pool_stats(db).connections, 1u);
        co_await db.execute(fmt::format("DROP TABLE {}", t));
    });
}

TEST(PostgresCopy, AProducerMayStraddleRowsAcrossChunksAndSuspend) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string t = table("pg_copy_source");
    run_on_loop([&]() -> Task<void> {
        co_await make_table(db, t);
        // Text format (tab separated), handed out 5 bytes at a time.
        std::string data;
        for (int i = 1; i <= 300; ++i) data += fmt::format("{}\trow\\t{}\n", i, i);
        std::size_t at = 0;
        pg::CopySource source = [&]() -> Task<std::optional<std::string>> {
            if (at >= data.size()) co_return std::nullopt;
            if (at % 100 == 0) co_await vela::sleep(0ms);
            std::string piece = data.substr(at, 5);
            at += piece.size();
            co_return piece;
        };
        std::uint64_t n =
            co_await pg::copy_in(db, fmt::format("COPY {} FROM STDIN", t), std::move(source));
        EXPECT_EQ(n, 300u);
        EXPECT_EQ(
            co_await db.query_one<std::string>(fmt::format("SELECT b FROM {} WHERE a = 3", t)),
            "row\t3");
        co_await db.execute(fmt::format("DROP TABLE {}", t));
    });
}

TEST(PostgresCopy, ABadRowIsATypedErrorNothingIsKeptAndTheConnectionStaysUsable) {
    VELA_NEED_PG(url);
    Options o;
    o.pool_size = 1;
    Database db(url, o);
    const std::string t = table("pg_copy_bad");
    run_on_loop([&]() -> Task<void> {
        co_await make_table(db, t);
        const std::string sql = fmt::format("COPY {} (a, b) FROM STDIN (FORMAT csv)", t);
        const int pid = (co_await db.query_one<int>("SELECT pg_backend_pid()")).value_or(0);

        // Not an integer on line 3, then 3 MB more (sent, and discarded by the server).
        std::vector<std::string> chunks{"1,a\n2,b\n", "x,c\n"};
        for (int i = 0; i < 200; ++i)
            chunks.push_back(csv_rows(10 + i * 1000, 10 + i * 1000 + 999));
        try {
            co_await pg::copy_in(db, sql, std::move(chunks));
            ADD_FAILURE() << "a bad row was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.sqlstate(), "22P02") << e.what();
            EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
        }
        // A duplicate key: UniqueViolation.
        std::vector<std::string> dup{"5,a\n6,b\n5,c\n"};
        EXPECT_THROW(co_await pg::copy_in(db, sql, std::move(dup)), UniqueViolation);
        // Nothing of either was kept; the same connection serves the next statements.
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t)),
                  0);
        EXPECT_EQ(co_await db.query_one<int>("SELECT pg_backend_pid()"), pid);
        std::vector<std::string> good{"7,g\n"};
        EXPECT_EQ(co_await pg::copy_in(db, sql, std::move(good)), 1u);

        // A producer that throws: its exception, nothing kept, connection still fine.
        int calls = 0;
        pg::CopySource failing = [&]() -> Task<std::optional<std::string>> {
            if (++calls == 3) throw std::runtime_error("source broke");
            co_return fmt::format("{},x\n", 100 + calls);
        };
        try {
            co_await pg::copy_in(db, sql, std::move(failing));
            ADD_FAILURE() << "the producer's exception was lost";
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "source broke");
        }
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t)),
                  1);
        EXPECT_EQ(co_await db.query_one<int>("SELECT pg_backend_pid()"), pid);

        // Not a COPY, or the other direction, or an unknown table: errors, connection kept.
        EXPECT_THROW(co_await pg::copy_out(db, "SELECT 1"), Error);
        std::vector<std::string> none;
        EXPECT_THROW(co_await pg::copy_in(db, fmt::format("COPY {} TO STDOUT", t), none), Error);
        EXPECT_THROW(co_await pg::copy_out(db, fmt::format("COPY {} FROM STDIN", t)), Error);
        EXPECT_THROW(co_await pg::copy_out(db, "COPY no_such_table_xyz TO STDOUT"), StatementError);
        EXPECT_EQ(co_await db.query_one<int>("SELECT pg_backend_pid()"), pid);
        EXPECT_EQ(co_await pg::copy_out(db, fmt::format("COPY {} TO STDOUT (FORMAT csv)", t)),
                  "7,g\n");

        // An error after some rows went out (division by zero at row 50000): the sink had
        // data, then the typed error; the connection stays.
        std::size_t seen = 0;
        pg::CopySink count = [&](std::string_view c) -> Task<void> {
            seen += c.size();
            co_return;
        };
        try {
            co_await pg::copy_out(
                db, "COPY (SELECT 1 / (50000 - g) FROM generate_series(1, 60000) g) TO STDOUT",
                count);
            ADD_FAILURE() << "the division by zero was not reported";
        } catch (const Error& e) {
            EXPECT_EQ(e.sqlstate(), "22012") << e.what();
        }
        EXPECT_GT(seen, 0u);
        EXPECT_EQ(co_await db.query_one<int>("SELECT pg_backend_pid()"), pid);

        // A sink that throws: the COPY stops with its exception; the connection is replaced.
        co_await db.execute(
            fmt::format("INSERT INTO {} SELECT g, 'r' FROM generate_series(1000, 60000) g", t));
        pg::CopySink sink = [](std::string_view) -> Task<void> {
            throw std::runtime_error("sink broke");
            co_return;
        };
        EXPECT_THROW(co_await pg::copy_out(db, fmt::format("COPY {} TO STDOUT", t), sink),
                     std::runtime_error);
        EXPECT_EQ(co_await db.query_one<int>("SELECT 8"), 8);
        co_await db.execute(fmt::format("DROP TABLE {}", t));
    });
}

// Suspends for good (the frame is destroyed by the test while waiting here).
struct Never {
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    void await_resume() const noexcept {}
};

TEST(PostgresCopy, ACopyAbandonedMidwayDiscardsItsConnectionAndKeepsNothing) {
    VELA_NEED_PG(url);
    Options o;
    o.pool_size = 1;
    Database db(url, o);
    const std::string t = table("pg_copy_abandon");
    run_on_loop([&]() -> Task<void> {
        co_await make_table(db, t);
        const int pid = (co_await db.query_one<int>("SELECT pg_backend_pid()")).value_or(0);
        bool sent = false, resumed = false;
        auto load = [&]() -> Task<void> {
            pg::CopySource stalls = [&]() -> Task<std::optional<std::string>> {
                if (!sent) {
                    sent = true;
                    co_return csv_rows(1, 5000);
                }
                co_await Never{};
                co_return std::nullopt;
            };
            co_await pg::copy_in(db, fmt::format("COPY {} FROM STDIN (FORMAT csv)", t),
                                 std::move(stalls));
        };
        std::coroutine_handle<> h =
            vela::start(load(), [&](std::exception_ptr) { resumed = true; });
        for (int i = 0; i < 200 && !sent; ++i) co_await vela::sleep(10ms);
        EXPECT_TRUE(sent);
        h.destroy();  // e.g. a handler abandoned at shutdown
        EXPECT_FALSE(resumed);
        // Its connection was closed (the server rolls the COPY back); the pool makes another.
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t)),
                  0);
        EXPECT_NE(co_await db.query_one<int>("SELECT pg_backend_pid()"), pid);
        EXPECT_EQ(pg_pool_stats(db).connections, 1u);
        co_await db.execute(fmt::format("DROP TABLE {}", t));
    });
}

// A statement's completion resumes its coroutine from inside the connection's reading code.
// Here the first statement's coroutine starts a COPY, which gets the connection when the second
// statement completes, sends its statement and waits for the server's reply; then the second
// statement's coroutine keeps the loop busy until that reply has arrived. The reading code, on
// its way out, once drained the socket for the pipeline: the reply went into libpq's buffer,
// no readable edge was left for the COPY, and it waited forever.
TEST(PostgresCopy, ACopyStartedFromACompletionGetsTheReplyThatArrivesBeforeTheLoopWaits) {
    VELA_NEED_PG(url);
    with_table(
        url, 1, "pg_copy_handover", 10s, [&](Database& db, const std::string& t) -> Task<void> {
            for (int round = 0; round < 3; ++round) {
                auto copier = [&]() -> Task<void> {
                    co_await db.execute("SELECT 1");
                    std::vector<std::string> rows{fmt::format("{}\tone\n", round * 2 + 1),
                                                  fmt::format("{}\ttwo\n", round * 2 + 2)};
                    EXPECT_EQ(co_await pg::copy_in(db, fmt::format("COPY {} FROM STDIN", t),
                                                   std::move(rows)),
                              2u);
                };
                auto busy = [&]() -> Task<void> {
                    co_await db.execute("SELECT 2");
                    std::this_thread::sleep_for(100ms);  // the COPY's reply arrives meanwhile
                };
                std::vector<Task<void>> both;
                both.push_back(copier());
                both.push_back(busy());
                co_await when_all(std::move(both));
            }
            EXPECT_EQ(
                co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t)), 6);
        });
}

// The straddling producer of AProducerMayStraddleRowsAcrossChunksAndSuspend, hundreds of times
// in one run, each COPY started the moment a statement (or the COPY before) completed; every
// tenth producer also waits on a timer, so the server's reply comes while the COPY's coroutine
// is elsewhere.
TEST(PostgresCopy, StraddlingProducersHundredsOfTimesInARow) {
    VELA_NEED_PG(url);
    with_table(
        url, 1, "pg_copy_rounds", 30s, [&](Database& db, const std::string& t) -> Task<void> {
            constexpr int kRounds = 400, kRows = 3;
            const auto t0 = std::chrono::steady_clock::now();
            for (int round = 0; round < kRounds; ++round) {
                std::string data;
                for (int i = round * kRows + 1; i <= (round + 1) * kRows; ++i)
                    data += fmt::format("{}\trow\\t{}\n", i, i);
                std::size_t at = 0;
                pg::CopySource source = [&]() -> Task<std::optional<std::string>> {
                    if (at >= data.size()) co_return std::nullopt;
                    if (at == 0 && round % 10 == 0) co_await vela::sleep(1ms);
                    std::string piece = data.substr(at, 4);
                    at += piece.size();
                    co_return piece;
                };
                if (round % 3 == 0) co_await db.execute("SELECT 1");
                if (round % 3 == 1) {
                    EXPECT_EQ(co_await db.query_one<int>("SELECT $1::int4", round), round);
                }
                const std::uint64_t n = co_await pg::copy_in(
                    db, fmt::format("COPY {} FROM STDIN", t), std::move(source));
                EXPECT_EQ(n, static_cast<std::uint64_t>(kRows)) << "round " << round;
                if (n != kRows) break;
            }
            std::printf("[ rounds   ] %d COPYs of %d rows in %lld ms\n", kRounds, kRows,
                        test::ms_since(t0));
            EXPECT_EQ(
                co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t)),
                kRounds * kRows);
            EXPECT_EQ(co_await db.query_one<std::string>(
                          fmt::format("SELECT b FROM {} WHERE a = {}", t, kRounds * kRows)),
                      fmt::format("row\t{}", kRounds * kRows));
        });
}

// COPYs in and out and plain statements at once on a pool of two, many times over: the
// connections change hands between the pipeline and COPY from inside each other's completions.
TEST(PostgresCopy, CopiesAndStatementsInterleavedOnASharedPool) {
    VELA_NEED_PG(url);
    with_table(url, 2, "pg_copy_mixed", 30s, [&](Database& db, const std::string& t) -> Task<void> {
        // Named, so their captures outlive the tasks; the round comes in as a parameter.
        auto load = [&](int round) -> Task<void> {
            std::vector<std::string> rows{csv_rows(round * 10 + 1, round * 10 + 10)};
            EXPECT_EQ(co_await pg::copy_in(db, fmt::format("COPY {} FROM STDIN (FORMAT csv)", t),
                                           std::move(rows)),
                      10u);
        };
        auto dump = [&](int round) -> Task<void> {
            const std::string out = co_await pg::copy_out(
                db, fmt::format("COPY (SELECT a FROM {} WHERE a <= {} ORDER BY a) TO STDOUT", t,
                                round * 10));
            EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), round * 10);
        };
        auto echo = [&](int q) -> Task<void> {
            EXPECT_EQ(co_await db.query_one<int>("SELECT $1::int4", q), q);
        };
        constexpr int kRounds = 100;
        for (int round = 0; round < kRounds; ++round) {
            std::vector<Task<void>> all;
            all.push_back(load(round));
            all.push_back(dump(round));
            for (int q = 0; q < 3; ++q) all.push_back(echo(q));
            co_await when_all(std::move(all));
        }
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t)),
                  kRounds * 10);
    });
}

// A row trigger that raises a 2 KB notice for each row of a 30 MB COPY: the server writes
// notices faster than it reads rows, fills the client's socket, and stops reading until the
// client reads. A COPY that, with its own socket full, waited for a writable edge only would
// wait forever: a readable edge must also wake it, to read the notices.
TEST(PostgresCopy, ACopyKeepsReadingWhileItsSocketIsFullSoNoticesCannotDeadlockIt) {
    VELA_NEED_PG(url);
    with_table(
        url, 1, "pg_copy_notices", 30s, [&](Database& db, const std::string& t) -> Task<void> {
            co_await db.run_script(fmt::format(
                "CREATE OR REPLACE FUNCTION {0}_notice() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE NOTICE '%', repeat('n', 2000); RETURN NEW; END $$; "
                "CREATE TRIGGER {0}_notice BEFORE INSERT ON {0} FOR EACH ROW "
                "EXECUTE FUNCTION {0}_notice()",
                t));
            constexpr int kRows = 30000;
            const std::string filler(1000, 'r');
            std::vector<std::string> chunks;
            for (int i = 1; i <= kRows; i += 100) {
                std::string c;
                for (int k = i; k < i + 100; ++k) c += fmt::format("{}\t{}\n", k, filler);
                chunks.push_back(std::move(c));
            }
            const auto t0 = std::chrono::steady_clock::now();
            EXPECT_EQ(
                co_await pg::copy_in(db, fmt::format("COPY {} FROM STDIN", t), std::move(chunks)),
                static_cast<std::uint64_t>(kRows));
            std::printf("[ notices  ] %d rows, each with a 2 KB notice, in %lld ms\n", kRows,
                        test::ms_since(t0));
            co_await db.run_script(
                fmt::format("DROP TRIGGER {0}_notice ON {0}; DROP FUNCTION {0}_notice()", t));
        });
}

}  // namespace
}  // namespace vela::db
