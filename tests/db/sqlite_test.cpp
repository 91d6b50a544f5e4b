// The SQLite backend of vela::db on real files and real loops: parameters, mapping, errors,
// transactions, the writer queue, and the loop never waiting on SQLite.
#include <gtest/gtest.h>

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "db/sqlite_support.hpp"
#include "vela/db/db.hpp"
#include "vela/db/sqlite.hpp"
#include "vela/reactor/blocking.hpp"

namespace vela::db {
namespace {

using namespace std::chrono_literals;
using test::on_loop;
using test::on_loops;
using test::ScratchDir;

struct Point {
    int x = 0;
    int y = 0;
};
VELA_REFLECT(Point, x, y)

struct Person {
    std::int64_t id = 0;
    std::string name;
    std::optional<std::string> email;
    int score = 7;  // no such column: keeps the default
};
VELA_REFLECT(Person, id, name, email, score)

struct NeedsAge {
    std::int64_t id = 0;
    int age = 0;
};
VELA_REFLECT(NeedsAge, id, VELA_REQUIRED(age))

TEST(Sqlite, EveryParameterKindRoundTrips) {
    ScratchDir dir;
    Database db(dir.url());
    on_loop([&]() -> Task<void> {
        co_await db.run_script(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, r REAL, b INTEGER, s TEXT, "
            "bl BLOB, at TEXT, j TEXT, o TEXT)");
        const std::string blob("\0a\0\xff\0", 5);
        const std::string unicode = "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80 \xe4\xb8\xad";
        const TimePoint at = TimePoint(std::chrono::microseconds(1714566600123456));
        json::Value doc;
        EXPECT_FALSE(json::read(R"({"a":[1,2,{"b":null}],"u":"\u00e9"})", doc));
        // Named values, not temporaries inside co_await: GCC 12 destroys braced temporaries
        // of a co_await expression twice.
        const Bytes bytes{blob}, no_bytes{};
        const Json<Point> point{{3, 4}};
        const std::optional<std::string> none, x("x");
        const std::string empty;
        auto n1 = co_await db.execute("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                                      1, INT64_MIN, 2.5, true, unicode, bytes, at, doc, none);
        EXPECT_EQ(n1, 1u);
        auto n2 = co_await db.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", 2,
                                      INT64_MAX, -0.125, false, empty, no_bytes, at, point, x);
        EXPECT_EQ(n2, 1u);
        Result r = co_await db.query("SELECT * FROM t ORDER BY id");
        EXPECT_EQ(r.size(), 2u);
        EXPECT_EQ(r.columns(), 9u);
        EXPECT_EQ(r.column_name(6), "at");
        Row a = r[0], b = r[1];
        EXPECT_EQ(a.get<std::int64_t>("n"), INT64_MIN);
        EXPECT_EQ(b.get<std::int64_t>("n"), INT64_MAX);
        EXPECT_DOUBLE_EQ(a.get<double>("r"), 2.5);
        EXPECT_DOUBLE_EQ(b.get<double>("r"), -0.125);
        EXPECT_TRUE(a.get<bool>("b"));
        EXPECT_FALSE(b.get<bool>("b"));
        EXPECT_EQ(a.get<std::string>("s"), unicode);
        EXPECT_EQ(b.get<std::string>("s"), "");
        EXPECT_FALSE(b.is_null("s"));
        EXPECT_EQ(a.get<Bytes>("bl").data, blob);
        EXPECT_EQ(b.get<Bytes>("bl").data, "");
        EXPECT_FALSE(b.is_null("bl"));
        EXPECT_EQ(a.get<TimePoint>("at"), at);
        EXPECT_EQ(a.get<std::string>("at"), "2024-05-01 12:30:00.123456");  // the stored form
        EXPECT_EQ(json::write(a.get<json::Value>("j")), json::write(doc));
        EXPECT_EQ(b.get<Json<Point>>("j").value.y, 4);
        EXPECT_TRUE(a.is_null("o"));
        EXPECT_EQ(a.get<std::optional<std::string>>("o"), std::nullopt);
        EXPECT_EQ(b.get<std::optional<std::string>>("o"), "x");
        EXPECT_THROW(a.get<std::string>("o"), MappingError);  // NULL into a non-optional
        // The same parameter twice, numbered out of order.
        auto two = co_await db.query_one<std::int64_t>("SELECT $2 * 10 + $1 + $2", 1, 2);
        EXPECT_EQ(two, 23);
        // A time as stored text compares with SQLite's own date functions.
        auto later = co_await db.query_one<bool>("SELECT $1 > datetime('2024-05-01 12:00:00')", at);
        EXPECT_EQ(later, true);
    });
}

TEST(Sqlite, TimesReadFromIsoTextAndUnixSeconds) {
    Database db("sqlite::memory:");
    on_loop([&]() -> Task<void> {
        Result r = co_await db.query(
            "SELECT '2024-05-01T12:30:00Z', 1714566600, '2024-05-01 14:30:00+02:00', "
            "1714566600.5, '2024-05-01', unixepoch('2024-05-01 12:30:00'), 'not a time', "
            "99999999999999");
        const TimePoint want = TimePoint(std::chrono::seconds(1714566600));
        EXPECT_EQ(r[0].get<TimePoint>(0), want);
        EXPECT_EQ(r[0].get<TimePoint>(1), want);
        EXPECT_EQ(r[0].get<TimePoint>(2), want);
        EXPECT_EQ(r[0].get<TimePoint>(3), want + 500ms);
        EXPECT_EQ(r[0].get<TimePoint>(4), want - 12h - 30min);
        EXPECT_EQ(r[0].get<TimePoint>(5), want);
        EXPECT_THROW(r[0].get<TimePoint>(6), MappingError);
        EXPECT_THROW(r[0].get<TimePoint>(7), MappingError);  // out of range, not wrapped
    });
}

TEST(Sqlite, TimeTextTable) {
    struct Case {
        const char* text;
        std::optional<std::int64_t> micros;
    };
    const Case cases[] = {
        {"1970-01-01", 0},
        {"1970-01-01 00:00:01", 1000000},
        {"1970-01-01T00:00:00.5", 500000},
        {"1970-01-01 00:00:00.1234567", 123456},
        {"1970-01-01 01:00+01:00", 0},
        {"1969-12-31 23:00:00-01:00", 0},
        {"1969-12-31 23:59:59.999999", -1},
        {"2000-02-29 00:00", 951782400000000},
        {"2001-02-29", std::nullopt},
        {"2024-13-01", std::nullopt},
        {"2024-01-01 24:00", std::nullopt},
        {"2024-01-01 10:00:00.", std::nullopt},
        {"2024-01-01 10:00:00 ", std::nullopt},
        {"2024-1-01", std::nullopt},
        {"", std::nullopt},
        {"0000-01-01", std::nullopt},  // outside TimePoint (nanoseconds: years 1678-2262)
        {"2300-01-01", std::nullopt},
        {"2262-01-01 00:00", 9214646400000000},
    };
    for (const Case& c : cases) {
        auto t = sqlite::parse_time(c.text);
        if (!c.micros) {
            EXPECT_FALSE(t) << c.text;
            continue;
        }
        ASSERT_TRUE(t) << c.text;
        EXPECT_EQ(
            std::chrono::duration_cast<std::chrono::microseconds>(t->time_since_epoch()).count(),
            *c.micros)
            << c.text;
        EXPECT_EQ(sqlite::parse_time(sqlite::format_time(*t)), t) << c.text;
    }
    EXPECT_EQ(sqlite::format_time(TimePoint(std::chrono::microseconds(-1))),
              "1969-12-31 23:59:59.999999");
}

// query_single: the row of INSERT ... RETURNING, or NoRowError naming the statement.
TEST(Sqlite, QuerySingleReturnsTheRowOrThrows) {
    Database db("sqlite::memory:");
    on_loop([&]() -> Task<void> {
        co_await db.run_script(
            "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT)");
        Person ann = co_await db.query_single<Person>(
            "INSERT INTO people (name) VALUES ($1) RETURNING id, name, email", "ann");
        EXPECT_EQ(ann.id, 1);
        EXPECT_EQ(ann.name, "ann");
        EXPECT_EQ(co_await db.query_single<int>("SELECT count(*) FROM people"), 1);
        std::string message;
        try {
            (void)co_await db.query_single<Person>("SELECT id, name FROM people WHERE id = $1", 9);
        } catch (const NoRowError& e) {
            message = e.what();
        }
        EXPECT_NE(message.find("returned no row"), std::string::npos) << message;
        EXPECT_NE(message.find("WHERE id = $1"), std::string::npos) << message;
    });
}

TEST(Sqlite, RowsMapIntoReflectedStructsByColumnName) {
    Database db("sqlite::memory:");
    on_loop([&]() -> Task<void> {
        co_await db.run_script(
            "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT);"
            "INSERT INTO people VALUES (1, 'ann', NULL), (2, 'bob', 'b@x.org');");
        auto people =
            co_await db.query_as<Person>("SELECT email, name, id FROM people ORDER BY id");
        EXPECT_EQ(people.size(), 2u);
        if (people.size() != 2) co_return;
        EXPECT_EQ(people[0].name, "ann");
        EXPECT_FALSE(people[0].email);
        EXPECT_EQ(people[0].score, 7);
        EXPECT_EQ(people[1].email, "b@x.org");
        auto one = co_await db.query_one<Person>("SELECT id, name FROM people WHERE id = $1", 2);
        EXPECT_TRUE(one && one->name == "bob" && !one->email);
        auto none = co_await db.query_one<Person>("SELECT id, name FROM people WHERE id = $1", 9);
        EXPECT_FALSE(none);
        auto ids = co_await db.query_as<int>("SELECT id FROM people ORDER BY id DESC");
        const std::vector<int> want_ids = {2, 1};
        EXPECT_EQ(ids, want_ids);
        bool threw = false;
        try {
            co_await db.query_as<NeedsAge>("SELECT id FROM people");
        } catch (const MappingError& e) {
            threw = std::string(e.what()).find("'age'") != std::string::npos;
        }
        EXPECT_TRUE(threw);
        threw = false;
        try {
            co_await db.query_as<Person>("SELECT id, email AS name FROM people");  // NULL name
        } catch (const MappingError&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
    });
}

TEST(Sqlite, InjectionAttemptsAsParametersStayData) {
    ScratchDir dir;
    Database db(dir.url());
    on_loop([&]() -> Task<void> {
        co_await db.run_script("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)");
        const std::vector<std::string> evil = {
            "x'); DROP TABLE users; --", "' OR '1'='1", "$1", "?", "\"; DELETE FROM users; --",
            std::string("nul\0byte", 8)};
        for (const auto& e : evil) co_await db.execute("INSERT INTO users (name) VALUES ($1)", e);
        auto names = co_await db.query_as<std::string>("SELECT name FROM users ORDER BY id");
        EXPECT_EQ(names, evil);
        auto hit = co_await db.query_as<std::int64_t>("SELECT id FROM users WHERE name = $1",
                                                      std::string("' OR '1'='1"));
        EXPECT_EQ(hit.size(), 1u);
        auto none = co_await db.query_as<std::int64_t>("SELECT id FROM users WHERE name = $1",
                                                       std::string("nobody' OR 'a'='a"));
        EXPECT_TRUE(none.empty());
    });
}

template <class E>
Task<std::string> sqlstate_of(Database& db, std::string_view sql) {
    try {
        co_await db.execute(sql);
    } catch (const E& e) {
        co_return e.sqlstate();
    } catch (const std::exception& e) {
        ADD_FAILURE() << sql << ": wrong error type: " << e.what();
        co_return "wrong type";
    }
    ADD_FAILURE() << sql << ": no error";
    co_return "none";
}

TEST(Sqlite, ErrorsAreTypedWithSqlstate) {
    ScratchDir dir;
    Database db(dir.url());
    on_loop([&]() -> Task<void> {
        co_await db.run_script(
            "CREATE TABLE p (id INTEGER PRIMARY KEY, u TEXT UNIQUE, n TEXT NOT NULL, c INTEGER "
            "CHECK (c > 0));"
            "CREATE TABLE ch (id INTEGER PRIMARY KEY, p INTEGER REFERENCES p(id));"
            "INSERT INTO p VALUES (1, 'a', 'n', 1);");
        EXPECT_EQ(
            co_await sqlstate_of<UniqueViolation>(db, "INSERT INTO p VALUES (2, 'a', 'n', 1)"),
            "23505");
        EXPECT_EQ(
            co_await sqlstate_of<UniqueViolation>(db, "INSERT INTO p VALUES (1, 'b', 'n', 1)"),
            "23505");
        EXPECT_EQ(co_await sqlstate_of<ForeignKeyViolation>(db, "INSERT INTO ch VALUES (1, 42)"),
                  "23503");
        EXPECT_EQ(
            co_await sqlstate_of<NotNullViolation>(db, "INSERT INTO p VALUES (3, 'c', NULL, 1)"),
            "23502");
        EXPECT_EQ(co_await sqlstate_of<CheckViolation>(db, "INSERT INTO p VALUES (3, 'c', 'n', 0)"),
                  "23514");
        EXPECT_EQ(co_await sqlstate_of<StatementError>(db, "SELEC 1"), "42601");
        EXPECT_EQ(co_await sqlstate_of<StatementError>(db, "SELECT * FROM nope"), "42P01");
        EXPECT_EQ(co_await sqlstate_of<StatementError>(db, "SELECT nope FROM p"), "42703");
        EXPECT_EQ(co_await sqlstate_of<StatementError>(db, "SELECT 1; SELECT 2"), "42601");
        EXPECT_EQ(co_await sqlstate_of<StatementError>(db, "BEGIN"), "25000");
        EXPECT_EQ(co_await sqlstate_of<StatementError>(db, "SELECT :name"), "42P02");
        bool threw = false;
        try {
            co_await db.query("SELECT $1, $2", 1);
        } catch (const StatementError& e) {
            threw = std::string(e.what()).find("$2") != std::string::npos;
        }
        EXPECT_TRUE(threw);
        threw = false;
        try {
            co_await db.query("SELECT $1", 1, 2);
        } catch (const StatementError&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
        // The message is SQLite's.
        std::string msg;
        try {
            co_await db.execute("INSERT INTO p VALUES (9, 'a', 'n', 1)");
        } catch (const Error& e) {
            msg = e.what();
        }
        EXPECT_NE(msg.find("UNIQUE constraint failed: p.u"), std::string::npos) << msg;
        // Still usable after errors.
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM p"), 1);
    });
}

TEST(Sqlite, TransactionsCommitAndRollBackOnExceptions) {
    ScratchDir dir;
    Database db(dir.url());
    on_loop([&]() -> Task<void> {
        co_await db.run_script("CREATE TABLE log (id INTEGER PRIMARY KEY, msg TEXT)");
        int n = co_await db.transaction([](Transaction& tx) -> Task<int> {
            co_await tx.execute("INSERT INTO log (msg) VALUES ($1)", "a");
            co_await tx.execute("INSERT INTO log (msg) VALUES ($1)", "b");
            co_return static_cast<int>(*co_await tx.query_one<int>("SELECT count(*) FROM log"));
        });
        EXPECT_EQ(n, 2);
        bool threw = false;
        try {
            co_await db.transaction([](Transaction& tx) -> Task<void> {
                co_await tx.execute("INSERT INTO log (msg) VALUES ($1)", "c");
                throw std::runtime_error("body failed");
            });
        } catch (const std::runtime_error& e) {
            threw = std::string(e.what()) == "body failed";
        }
        EXPECT_TRUE(threw);
        threw = false;
        try {  // a failing statement rolls back the whole body
            co_await db.transaction([](Transaction& tx) -> Task<void> {
                co_await tx.execute("INSERT INTO log (msg) VALUES ($1)", "d");
                co_await tx.execute("INSERT INTO log (id, msg) VALUES (1, 'dup')");
            });
        } catch (const UniqueViolation&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
        auto msgs = co_await db.query_as<std::string>("SELECT msg FROM log ORDER BY id");
        EXPECT_EQ(msgs, (std::vector<std::string>{"a", "b"}));
        // A Transaction dropped without commit or rollback rolls back and frees the writer.
        {
            auto tx = co_await db.begin();
            co_await tx->execute("INSERT INTO log (msg) VALUES ('dropped')");
        }
        co_await db.execute("INSERT INTO log (msg) VALUES ('after')");
        msgs = co_await db.query_as<std::string>("SELECT msg FROM log ORDER BY id");
        EXPECT_EQ(msgs, (std::vector<std::string>{"a", "b", "after"}));
        // Using a finished transaction is an error; rollback after commit does nothing.
        auto tx = co_await db.begin();
        co_await tx->commit();
        co_await tx->rollback();
        threw = false;
        try {
            co_await tx->execute("INSERT INTO log (msg) VALUES ('late')");
        } catch (const Error&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
        // Savepoints work inside a transaction.
        co_await db.transaction([](Transaction& t) -> Task<void> {
            co_await t.execute("SAVEPOINT s1");
            co_await t.execute("INSERT INTO log (msg) VALUES ('undone')");
            co_await t.execute("ROLLBACK TO s1");
            co_await t.execute("RELEASE s1");
        });
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM log"), 3);
    });
}

TEST(Sqlite, AWriteWaitingOnAnOpenTransactionTimesOut) {
    ScratchDir dir;
    Options o;
    o.sqlite_busy_timeout = 200ms;
    Database db(dir.url(), o);
    on_loop([&]() -> Task<void> {
        co_await db.run_script("CREATE TABLE t (v INTEGER)");
        auto tx = co_await db.begin();
        co_await tx->execute("INSERT INTO t VALUES (1)");
        const auto t0 = std::chrono::steady_clock::now();
        bool timed_out = false;
        try {
            co_await db.execute("INSERT INTO t VALUES (2)");  // the writer is held by tx
        } catch (const TimeoutError&) {
            timed_out = true;
        }
        EXPECT_TRUE(timed_out);
        EXPECT_GE(std::chrono::steady_clock::now() - t0, 190ms);
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM t"), 0);  // not committed yet
        co_await tx->commit();
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM t"), 1);
    });
}

TEST(Sqlite, AnotherProcessHoldingTheWriteLockGivesTimeoutErrorAfterTheBusyTimeout) {
    ScratchDir dir;
    Options o;
    o.sqlite_busy_timeout = 150ms;
    Database first(dir.url(), o),
        second(dir.url(), o);  // two writers on one file, as two processes
    on_loop([&]() -> Task<void> {
        co_await first.run_script("CREATE TABLE t (v INTEGER)");
        auto tx = co_await first.begin();
        co_await tx->execute("INSERT INTO t VALUES (1)");
        const auto t0 = std::chrono::steady_clock::now();
        std::string state;
        try {
            co_await second.execute("INSERT INTO t VALUES (2)");
        } catch (const TimeoutError& e) {
            state = e.sqlstate();
        }
        EXPECT_EQ(state, "55P03");
        EXPECT_GE(std::chrono::steady_clock::now() - t0, 140ms);
        EXPECT_EQ(co_await second.query_one<int>("SELECT count(*) FROM t"), 0);  // WAL: reads go on
        co_await tx->commit();
        co_await second.execute("INSERT INTO t VALUES (2)");
        EXPECT_EQ(co_await first.query_one<int>("SELECT count(*) FROM t"), 2);
    });
}

TEST(Sqlite, LargeResultOf100kRows) {
    ScratchDir dir;
    Database db(dir.url());
    on_loop([&]() -> Task<void> {
        co_await db.run_script(
            "CREATE TABLE big (id INTEGER PRIMARY KEY, name TEXT, v REAL);"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000) "
            "INSERT INTO big SELECT i, 'row ' || i, i * 0.5 FROM c;");
        Result r = co_await db.query("SELECT id, name, v FROM big ORDER BY id");
        EXPECT_EQ(r.size(), 100000u);
        std::int64_t sum = 0;
        for (Row row : r) sum += row.get<std::int64_t>(0);
        EXPECT_EQ(sum, std::int64_t{100000} * 100001 / 2);
        EXPECT_EQ(r[99999].get<std::string>(1), "row 100000");
        EXPECT_DOUBLE_EQ(r[99999].get<double>(2), 50000.0);
        EXPECT_EQ(co_await db.execute("UPDATE big SET v = 0 WHERE id > 50000"), 50000u);
    });
}

TEST(Sqlite, ConcurrentWritersFromFourLoopsAllSucceed) {
    ScratchDir dir;
    Database db(dir.url());
    on_loop([&]() -> Task<void> {
        co_await db.run_script("CREATE TABLE w (id INTEGER PRIMARY KEY, loop INTEGER, i INTEGER)");
    });
    std::atomic<int> failures{0};
    on_loops(4, [&](std::size_t l) -> Task<void> {
        // 500 inserts per loop, all in flight at once.
        std::vector<Task<std::uint64_t>> inserts;
        for (int i = 0; i < 500; ++i)
            inserts.push_back(db.execute("INSERT INTO w (loop, i) VALUES ($1, $2)", l, i));
        for (auto& t : inserts) {
            try {
                if (co_await std::move(t) != 1) ++failures;
            } catch (const std::exception& e) {
                ++failures;
                ADD_FAILURE() << e.what();
            }
        }
    });
    EXPECT_EQ(failures.load(), 0);
    on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM w"), 2000);
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(DISTINCT loop * 1000 + i) FROM w"),
                  2000);
    });
}

TEST(Sqlite, ConcurrentInsertsFromLoopsAreAllInFlightAtOnce) {
    // Same as above but with every insert started together via spawn (not awaited in turn).
    ScratchDir dir;
    Database db(dir.url());
    on_loop([&]() -> Task<void> { co_await db.run_script("CREATE TABLE w (v INTEGER)"); });
    std::atomic<int> ok{0};
    on_loops(4, [&](std::size_t) -> Task<void> {
        auto pending = std::make_shared<int>(500);
        for (int i = 0; i < 500; ++i)
            spawn([](Database& d, int v, std::atomic<int>& okc,
                     std::shared_ptr<int> p) -> Task<void> {
                co_await d.execute("INSERT INTO w VALUES ($1)", v);
                ++okc;
                --*p;
            }(db, i, ok, pending));
        while (*pending > 0) co_await vela::sleep(1ms);
    });
    EXPECT_EQ(ok.load(), 2000);
}

TEST(Sqlite, ReadsRunWhileAWriteTransactionIsOpen) {
    ScratchDir dir;
    Database db(dir.url());
    on_loop([&]() -> Task<void> {
        co_await db.run_script("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1);");
    });
    std::atomic<bool> tx_open{false}, reads_done{false};
    std::atomic<int> reads{0};
    on_loops(2, [&](std::size_t l) -> Task<void> {
        if (l == 0) {
            co_await db.transaction([&](Transaction& tx) -> Task<void> {
                co_await tx.execute("INSERT INTO t VALUES (2)");
                tx_open = true;
                for (int i = 0; i < 400 && !reads_done; ++i) co_await vela::sleep(5ms);
            });
            co_return;
        }
        while (!tx_open) co_await vela::sleep(1ms);
        for (int i = 0; i < 20; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM t"),
                      1);  // not the open write
            EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
            ++reads;
        }
        reads_done = true;
    });
    EXPECT_EQ(reads.load(), 20);
    on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM t"), 2);
    });
}

constexpr const char* kSlow =
    "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $1) "
    "SELECT sum(i) FROM c";

TEST(Sqlite, TheLoopKeepsRunningWhileAStatementRuns) {
    Database db("sqlite::memory:");
    on_loop([&]() -> Task<void> {
        Loop* loop = Loop::current();
        int ticks = 0;
        bool running = true;
        std::function<void()> tick = [&] {
            ++ticks;
            if (running) loop->call_after(5ms, [&] { tick(); });
        };
        loop->call_after(5ms, [&] { tick(); });
        const auto t0 = std::chrono::steady_clock::now();
        auto sum = co_await db.query_one<std::int64_t>(kSlow, 3000000);
        const auto took = std::chrono::steady_clock::now() - t0;
        running = false;
        EXPECT_EQ(sum, std::int64_t{3000000} * 3000001 / 2);
        // The timer fired while the statement ran (a blocked loop fires none until it ends).
        // Loose bound: the shared CI machine may starve the loop thread for a while.
        EXPECT_GE(took, 100ms) << "the statement was too fast to show anything";
        EXPECT_GE(ticks, std::max(3, static_cast<int>(took / 5ms / 20))) << "ticks " << ticks;
        co_await vela::sleep(10ms);
    });
}

TEST(Sqlite, QueryTimeoutInterruptsAStatement) {
    Options o;
    o.query_timeout = 50ms;
    Database db("sqlite::memory:", o);
    on_loop([&]() -> Task<void> {
        bool timed_out = false;
        try {
            co_await db.query(kSlow, 1000000000);
        } catch (const TimeoutError& e) {
            timed_out = e.sqlstate() == "57014";
        }
        EXPECT_TRUE(timed_out);
        EXPECT_EQ(co_await db.query_one<int>("SELECT 7"), 7);
    });
}

TEST(Sqlite, AnAwaiterDestroyedWhileItsStatementRunsIsNotResumed) {
    ScratchDir dir;
    Database db(dir.url());
    std::atomic<bool> resumed{false};
    on_loop([&]() -> Task<void> {
        co_await db.run_script("CREATE TABLE t (v INTEGER)");
        auto body = [](Database& d, std::atomic<bool>& flag) -> Task<void> {
            co_await d.query(kSlow, 2000000);
            flag = true;
        };
        auto frame = start(body(db, resumed), [](std::exception_ptr) {});
        co_await vela::sleep(10ms);
        frame.destroy();  // abandoned while SQLite runs the statement
        // A write abandoned the same way still happens, exactly once.
        auto w = [](Database& d) -> Task<void> { co_await d.execute("INSERT INTO t VALUES (1)"); };
        start(w(db), [](std::exception_ptr) {}).destroy();
        // Wait for both: the same slow statement again (finishes about when the first does)
        // and the write to show.
        co_await db.query(kSlow, 2000000);
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM t"), 1);
        co_await vela::sleep(50ms);
    });
    EXPECT_FALSE(resumed.load());
}

TEST(Sqlite, AwaitingOnNoLoopIsAnError) {
    Database db("sqlite::memory:");
    std::exception_ptr error;
    auto q = [](Database& d) -> Task<void> { co_await d.query("SELECT 1"); };
    start(q(db), [&](std::exception_ptr e) { error = e; });
    ASSERT_TRUE(error);
    EXPECT_THROW(std::rethrow_exception(error), std::logic_error);
}

TEST(Sqlite, InMemoryDatabasesArePrivateAndSharedByTheirConnections) {
    Database a("sqlite::memory:"), b("sqlite::memory:");
    on_loop([&]() -> Task<void> {
        co_await a.run_script("CREATE TABLE t (v INTEGER)");
        co_await a.execute("INSERT INTO t VALUES (1)");
        // The write went to the writer, the read to a reader connection: same database.
        EXPECT_EQ(co_await a.query_one<int>("SELECT count(*) FROM t"), 1);
        bool missing = false;
        try {
            co_await b.query("SELECT count(*) FROM t");
        } catch (const StatementError&) {
            missing = true;
        }
        EXPECT_TRUE(missing);
    });
    // Reads and writes at once from two loops (shared cache locks tables: retried, not failed).
    on_loops(2, [&](std::size_t l) -> Task<void> {
        for (int i = 0; i < 200; ++i) {
            if (l == 0)
                co_await a.execute("INSERT INTO t VALUES ($1)", i);
            else
                co_await a.query("SELECT count(*) FROM t");
        }
    });
    on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await a.query_one<int>("SELECT count(*) FROM t"), 201);
    });
}

TEST(Sqlite, UrlsAndPaths) {
    ScratchDir dir;
    // A missing parent directory is created.
    {
        Database db("sqlite://" + dir.path() + "/sub/dir/x.db");
        EXPECT_EQ(db.backend_name(), "sqlite");
        on_loop([&]() -> Task<void> {
            auto mode = co_await db.query_one<std::string>("PRAGMA journal_mode");
            EXPECT_EQ(mode, "wal");
            EXPECT_EQ(co_await db.query_one<int>("PRAGMA foreign_keys"), 1);
        });
    }
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/sub/dir/x.db"));
    // A relative path is relative to the working directory; the default is data/vela.db.
    const auto cwd = std::filesystem::current_path();
    // The file is made at the first statement (relative to the working directory of the
    // constructor), not by the constructor.
    std::filesystem::current_path(dir.path());
    Database rel("sqlite://rel/r.db");
    Database def;
    EXPECT_EQ(def.backend_name(), "sqlite");
    std::filesystem::current_path(cwd);
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/rel"));
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/data"));
    on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await rel.query_one<int>("SELECT 1"), 1);
        EXPECT_EQ(co_await def.query_one<int>("SELECT 1"), 1);
    });
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/rel/r.db"));
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/data/vela.db"));
    // A path that cannot be a database: one clear error naming it, at the first statement.
    const std::string file = dir.path() + "/plain";
    { std::ofstream(file) << "not a directory"; }
    const auto first_error = [](Database& db) {
        std::string message = "no error";
        on_loop([&]() -> Task<void> {
            try {
                co_await db.execute("CREATE TABLE t (x INTEGER)");
            } catch (const ConnectionError& e) {
                message = e.what();
            }
        });
        return message;
    };
    Database not_dir("sqlite://" + file + "/x.db");
    std::string message = first_error(not_dir);
    EXPECT_NE(message.find(file + "/x.db"), std::string::npos) << message;
    message = first_error(not_dir);  // tried again: the same error
    EXPECT_NE(message.find(file + "/x.db"), std::string::npos) << message;
    Database not_db("sqlite://" + file);  // exists, but is not a SQLite file
    message = first_error(not_db);
    EXPECT_NE(message.find("not a database"), std::string::npos) << message;
    EXPECT_THROW(Database("sqlite:"), Error);
    EXPECT_THROW(Database("sqlite://"), Error);
}

TEST(Sqlite, RunBlockingResumesOnTheAwaitingLoop) {
    on_loop([&]() -> Task<void> {
        const auto home = std::this_thread::get_id();
        std::thread::id worker;
        int v = co_await vela::run_blocking([&] {
            worker = std::this_thread::get_id();
            return 6 * 7;
        });
        EXPECT_EQ(v, 42);
        EXPECT_NE(worker, home);
        // A lambda owning a string, named before the co_await (the documented form).
        const std::string word = "a string too long for the small string buffer";
        auto measure = [w = std::string(word)] { return w.size(); };
        auto size = co_await vela::run_blocking(std::move(measure));
        EXPECT_EQ(size, word.size());
        EXPECT_EQ(std::this_thread::get_id(), home);
        bool threw = false;
        try {
            co_await vela::run_blocking([] { throw std::invalid_argument("no"); });
        } catch (const std::invalid_argument&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
    });
}

}  // namespace
}  // namespace vela::db
