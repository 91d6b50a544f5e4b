// pg::copy_in / pg::copy_out against a real server (scripts/db-servers): 100k rows in and out,
// producers and sinks, bad rows as typed errors, and the connection usable afterwards.
#include <gtest/gtest.h>

#include <coroutine>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "db/pg_test_util.hpp"
#include "db/servers.hpp"
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

}  // namespace
}  // namespace vela::db
