// The MySQL/MariaDB backend against a real MariaDB server (scripts/db-servers): every type,
// typed errors from server codes, transactions and a deadlock, query timeouts that KILL on
// the server, a killed connection, a server restart, large results and BLOBs, the statement
// cache, scripts, named locks, migrations, and that no statement blocks the loop.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "db/pg_test_util.hpp"
#include "db/servers.hpp"
#include "vela/async/when_all.hpp"
#include "vela/db/db.hpp"
#include "vela/db/mysql.hpp"

namespace vela::db {
namespace {

using namespace std::chrono_literals;
using test::run_on_loop;
using test::table;

struct Item {
    std::int64_t id = 0;
    std::string name;
    std::optional<std::string> note;
    int score = 7;
};
VELA_REFLECT(Item, id, name, note, score)

struct Meta {
    std::string kind;
    std::vector<int> tags;
};
VELA_REFLECT(Meta, kind, tags)

// The ids of the server's connections running a statement like `pattern` (SHOW PROCESSLIST).
Task<std::vector<std::int64_t>> running(Database& db, std::string pattern) {
    co_return co_await db.query_as<std::int64_t>(
        "SELECT id FROM information_schema.processlist WHERE info LIKE $1 AND id <> "
        "CONNECTION_ID()",
        pattern);
}

TEST(Mysql, EveryTypeRoundTrips) {
    VELA_NEED_MYSQL(url);
    Database db(url);
    const std::string t = table("my_types");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(fmt::format(
            "DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (id INT PRIMARY KEY, big BIGINT, "
            "ubig BIGINT UNSIGNED, tiny TINYINT, flag BOOLEAN, bits BIT(1), r DOUBLE, f FLOAT, "
            "d DECIMAL(20,4), s VARCHAR(100), t LONGTEXT, y LONGBLOB, bin VARBINARY(16), "
            "dt DATETIME(6), ts TIMESTAMP(6) NULL, day DATE, dur TIME, j JSON, yr YEAR, "
            "e ENUM('a','b'), n INT)",
            t));
        const std::string bin("a\0b\xff\x00z", 6);
        const std::string uni = "h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x8e\x89 'q' \\";
        const TimePoint when{std::chrono::microseconds(1714559400123456)};  // 10:30:00.123456Z
        json::Value doc;
        doc["a"] = 1;
        doc["b"] = json::Value::array({true, "x"});
        Meta meta;
        meta.kind = "k";
        meta.tags = {1, 2};
        const Json<Meta> jmeta{meta};
        const Bytes ybin{bin};
        const std::string insert = fmt::format(
            "INSERT INTO {} (id, big, ubig, tiny, flag, bits, r, f, d, s, t, y, bin, dt, ts, day, "
            "dur, j, yr, e, n) VALUES ($1, $2, 18446744073709551615, $3, $4, b'1', $5, $6, "
            "'12345678.9012', $7, $8, $9, $10, $11, $11, $11, '-838:59:59', $12, 2024, 'b', $13)",
            t);
        std::uint64_t n = co_await db.execute(insert, 1, INT64_MIN, -5, true, 2.5, 1.1f, uni, uni,
                                              ybin, ybin, when, doc, std::optional<int>{});
        EXPECT_EQ(n, 1u);
        co_await db.execute(fmt::format("UPDATE {} SET j = $1 WHERE id = 1", t), jmeta);
        co_await db.execute(fmt::format("UPDATE {} SET j = $1 WHERE id = 1", t), doc);
        const std::string select = fmt::format(
            "SELECT * FROM {} WHERE id = $1 AND s = $2 AND flag = $3 AND r > $4 AND dt = $5", t);
        Result r = co_await db.query(select, 1, uni, true, 2.0, when);
        EXPECT_EQ(r.size(), 1u);
        if (r.size() != 1) co_return;
        Row row = r[0];
        EXPECT_EQ(row.get<std::int64_t>("big"), INT64_MIN);
        EXPECT_EQ(row.get<std::string>("ubig"), "18446744073709551615");
        EXPECT_THROW(row.get<std::int64_t>("ubig"), MappingError);  // above INT64_MAX
        EXPECT_THROW(row.get<std::uint64_t>("ubig"), MappingError);
        EXPECT_EQ(row.get<int>("tiny"), -5);
        EXPECT_TRUE(row.get<bool>("flag"));
        EXPECT_TRUE(row.get<bool>("bits"));
        EXPECT_EQ(row.get<int>("bits"), 1);
        EXPECT_DOUBLE_EQ(row.get<double>("r"), 2.5);
        EXPECT_EQ(row.get<std::string>("f"), "1.1");
        EXPECT_FLOAT_EQ(row.get<float>("f"), 1.1f);
        EXPECT_EQ(row.get<std::string>("d"), "12345678.9012");  // exact as text
        EXPECT_DOUBLE_EQ(row.get<double>("d"), 12345678.9012);
        EXPECT_EQ(row.get<std::string>("s"), uni);
        EXPECT_EQ(row.get<std::string>("t"), uni);
        EXPECT_EQ(row.get<Bytes>("y").data, bin);
        EXPECT_EQ(row.get<Bytes>("bin").data, bin);
        EXPECT_EQ(row.get<TimePoint>("dt"), when);
        EXPECT_EQ(row.get<TimePoint>("ts"), when);  // TIMESTAMP converts with time_zone +00:00
        EXPECT_EQ(row.get<std::string>("ts"), "2024-05-01 10:30:00.123456");
        EXPECT_EQ(row.get<std::string>("day"), "2024-05-01");
        EXPECT_EQ(row.get<TimePoint>("day"),
                  TimePoint{std::chrono::seconds(1714521600)});  // midnight UTC
        EXPECT_EQ(row.get<std::string>("dur"), "-838:59:59");
        EXPECT_EQ(row.get<json::Value>("j"), doc);
        EXPECT_EQ(row.get<int>("yr"), 2024);
        EXPECT_EQ(row.get<std::string>("e"), "b");
        EXPECT_TRUE(row.is_null("n"));
        EXPECT_EQ(row.get<std::optional<int>>("n"), std::nullopt);
        EXPECT_THROW(row.get<int>("n"), MappingError);
        EXPECT_THROW(row.get<int>("s"), MappingError);
        // The server agrees on the values sent (not only our reading of them).
        Result check = co_await db.query(
            "SELECT $1 = '2024-05-01 10:30:00.123456' AS same_time, HEX($2) AS hex, "
            "CHAR_LENGTH($3) AS chars, $4 = -9223372036854775808 AS same_int, $5 IS NULL AS "
            "null_param",
            when, ybin, uni, INT64_MIN, nullptr);
        EXPECT_TRUE(check[0].get<bool>("same_time"));
        EXPECT_EQ(check[0].get<std::string>("hex"), "610062FF007A");
        EXPECT_EQ(check[0].get<int>("chars"), 16);
        EXPECT_TRUE(check[0].get<bool>("same_int"));
        EXPECT_TRUE(check[0].get<bool>("null_param"));
        co_await db.execute("DROP TABLE " + t);
    });
}

TEST(Mysql, RowsMapAndPlaceholdersReorder) {
    VELA_NEED_MYSQL(url);
    Database db(url);
    run_on_loop([&]() -> Task<void> {
        auto items = co_await db.query_as<Item>(
            "SELECT 1 AS id, 'n1' AS name, NULL AS note UNION ALL SELECT 2, 'n2', 'two'");
        EXPECT_EQ(items.size(), 2u);
        if (items.size() != 2) co_return;
        EXPECT_EQ(items[1].name, "n2");
        EXPECT_EQ(items[1].note, "two");
        EXPECT_EQ(items[0].note, std::nullopt);
        EXPECT_EQ(items[0].score, 7);
        // $2 before $1, and $1 twice; ? placeholders work too.
        auto v =
            co_await db.query_one<std::string>("SELECT CONCAT($2, '-', $1, '-', $1)", "a", "b");
        EXPECT_EQ(v, "b-a-a");
        auto q = co_await db.query_one<std::int64_t>("SELECT ? + ?", 2, 3);
        EXPECT_EQ(q, 5);
        // Wrong parameter counts are refused before anything is sent.
        EXPECT_THROW((void)(co_await db.query("SELECT $1 + $2", 1)), MappingError);
        // A placeholder the server sees and vela does not (an executable comment): refused,
        // never bound short.
        EXPECT_THROW((void)(co_await db.query("SELECT $1 /*! + ? */", 1)), MappingError);
        EXPECT_THROW((void)(co_await db.query("SELECT 1", 1)), MappingError);
        EXPECT_THROW((void)(co_await db.query_single<Item>("SELECT 1 AS id FROM DUAL WHERE 0")),
                     NoRowError);
    });
}

TEST(Mysql, ErrorsAreTyped) {
    VELA_NEED_MYSQL(url);
    Database db(url);
    const std::string parent = table("my_parent"), child = table("my_child");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(
            fmt::format("DROP TABLE IF EXISTS {1}; DROP TABLE IF EXISTS {0}; "
                        "CREATE TABLE {0} (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL UNIQUE, "
                        "qty INT CHECK (qty >= 0)) ENGINE=InnoDB; "
                        "CREATE TABLE {1} (id INT PRIMARY KEY, parent INT NOT NULL, "
                        "FOREIGN KEY (parent) REFERENCES {0}(id)) ENGINE=InnoDB",
                        parent, child));
        const std::string ins =
            fmt::format("INSERT INTO {} (id, name, qty) VALUES ($1, $2, $3)", parent);
        co_await db.execute(ins, 1, "a", 1);
        std::string state;
        try {
            co_await db.execute(ins, 1, "b", 1);
        } catch (const UniqueViolation& e) {
            state = e.sqlstate();
        }
        EXPECT_EQ(state, "23000");
        EXPECT_THROW(co_await db.execute(ins, 2, "a", 1), UniqueViolation);
        EXPECT_THROW(co_await db.execute(ins, 3, nullptr, 1), NotNullViolation);
        EXPECT_THROW(co_await db.execute(ins, 4, "c", -1), CheckViolation);
        const std::string add_child =
            fmt::format("INSERT INTO {} (id, parent) VALUES ($1, $2)", child);
        EXPECT_THROW(co_await db.execute(add_child, 1, 99), ForeignKeyViolation);
        co_await db.execute(add_child, 1, 1);
        EXPECT_THROW(co_await db.execute(fmt::format("DELETE FROM {} WHERE id = 1", parent)),
                     ForeignKeyViolation);
        EXPECT_THROW((void)(co_await db.query("SELEC 1")), StatementError);
        EXPECT_THROW((void)(co_await db.query("SELECT nope FROM DUAL")), StatementError);
        EXPECT_THROW((void)(co_await db.query("SELECT * FROM no_such_table_here")), StatementError);
        // The connection is fine after the errors.
        EXPECT_EQ(co_await db.query_one<int>("SELECT 42"), 42);
        co_await db.run_script(fmt::format("DROP TABLE {}; DROP TABLE {}", child, parent));
    });
}

TEST(Mysql, TransactionsCommitOnReturnAndRollBackOnThrow) {
    VELA_NEED_MYSQL(url);
    Database db(url);
    const std::string t = table("my_tx");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(fmt::format(
            "DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (id INT AUTO_INCREMENT PRIMARY KEY, "
            "v INT) ENGINE=InnoDB",
            t));
        const std::string ins = fmt::format("INSERT INTO {} (v) VALUES ($1)", t);
        const std::string count = fmt::format("SELECT COUNT(*) FROM {}", t);
        std::uint64_t id = co_await db.transaction([&](Transaction& tx) -> Task<std::uint64_t> {
            Result r = co_await tx.query(ins, 1);
            co_return r.last_insert_id();
        });
        EXPECT_GT(id, 0u);
        EXPECT_EQ(co_await db.query_one<std::int64_t>(count), 1);
        bool thrown = false;
        try {
            co_await db.transaction([&](Transaction& tx) -> Task<void> {
                co_await tx.execute(ins, 2);
                throw std::runtime_error("no");
            });
        } catch (const std::runtime_error&) {
            thrown = true;
        }
        EXPECT_TRUE(thrown);
        EXPECT_EQ(co_await db.query_one<std::int64_t>(count), 1);
        // A transaction dropped without commit or rollback is rolled back.
        {
            std::unique_ptr<Transaction> tx = co_await db.begin();
            co_await tx->execute(ins, 3);
        }
        co_await vela::sleep(50ms);
        EXPECT_EQ(co_await db.query_one<std::int64_t>(count), 1);
        co_await db.execute("DROP TABLE " + t);
    });
}

// Two transactions lock two rows in opposite orders: the server picks one as the victim.
TEST(Mysql, DeadlockIsDetectedAndTyped) {
    VELA_NEED_MYSQL(url);
    Options o;
    o.pool_size = 4;
    Database db(url, o);
    const std::string t = table("my_deadlock");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(
            fmt::format("DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (id INT PRIMARY KEY, v INT) "
                        "ENGINE=InnoDB; INSERT INTO {0} VALUES (1, 0), (2, 0)",
                        t));
        const std::string upd = fmt::format("UPDATE {} SET v = v + 1 WHERE id = $1", t);
        int deadlocks = 0, commits = 0;
        auto one = [&](int first, int second) -> Task<void> {
            try {
                co_await db.transaction([&](Transaction& tx) -> Task<void> {
                    co_await tx.execute(upd, first);
                    co_await vela::sleep(200ms);  // both hold their first row
                    co_await tx.execute(upd, second);
                });
                ++commits;
            } catch (const DeadlockDetected& e) {
                ++deadlocks;
                EXPECT_EQ(e.sqlstate(), "40001");
            }
        };
        {
            std::vector<Task<void>> both;
            both.push_back(one(1, 2));
            both.push_back(one(2, 1));
            co_await vela::when_all(std::move(both));
        }
        EXPECT_EQ(deadlocks, 1);
        EXPECT_EQ(commits, 1);
        // Lock wait timeout: a statement waiting for a row lock past innodb_lock_wait_timeout.
        std::unique_ptr<Transaction> holder = co_await db.begin();
        co_await holder->execute(upd, 1);
        bool timed_out = false;
        try {
            co_await db.transaction([&](Transaction& tx) -> Task<void> {
                co_await tx.run_script("SET SESSION innodb_lock_wait_timeout = 1");
                co_await tx.execute(upd, 1);
            });
        } catch (const TimeoutError& e) {
            timed_out = true;
            EXPECT_NE(std::string(e.what()).find("1205"), std::string::npos) << e.what();
        }
        EXPECT_TRUE(timed_out);
        co_await holder->rollback();
        co_await db.execute("DROP TABLE " + t);
    });
}

// A statement past query_timeout is killed on the server (KILL QUERY), fails with
// TimeoutError, and the loop goes on meanwhile.
TEST(Mysql, QueryTimeoutKillsTheQueryOnTheServer) {
    VELA_NEED_MYSQL(url);
    Options o;
    o.query_timeout = 300ms;
    o.pool_size = 2;
    Database db(url, o);
    Database observer(url);
    run_on_loop([&]() -> Task<void> {
        int ticks = 0;
        bool done = false;
        auto ticker = [&]() -> Task<void> {
            while (!done) {
                co_await vela::sleep(20ms);
                ++ticks;
            }
        };
        auto slow = [&]() -> Task<void> {
            const auto t0 = std::chrono::steady_clock::now();
            std::string message;
            try {
                (void)(co_await db.query("SELECT SLEEP(10) AS vela_timeout_probe"));
            } catch (const TimeoutError& e) {
                message = e.what();
            }
            done = true;
            EXPECT_NE(message.find("query_timeout"), std::string::npos) << message;
            EXPECT_LT(test::ms_since(t0), 3000);
        };
        {
            std::vector<Task<void>> both;
            both.push_back(ticker());
            both.push_back(slow());
            co_await vela::when_all(std::move(both));
        }
        EXPECT_GE(ticks, 10);  // the loop ran while the statement waited
        // Nothing of it runs on the server any more.
        const bool gone = co_await test::poll_until(
            [&]() -> Task<bool> {
                co_return (co_await running(observer, "%vela_timeout_probe%")).empty();
            },
            5s, 50ms);
        EXPECT_TRUE(gone);
        // The pool serves the next statements (a fresh connection or the same one).
        for (int i = 0; i < 3; ++i) EXPECT_EQ(co_await db.query_one<int>("SELECT $1", i), i);
    });
}

// A connection killed on the server: the statement on it fails with ConnectionError, idle ones
// are dropped when the server closes them, and the pool opens new ones.
TEST(Mysql, KilledConnectionsAreReplaced) {
    VELA_NEED_MYSQL(url);
    Options one;
    one.pool_size = 1;  // the killed connection's place must be opened again at once
    Database db(url, one);
    Database killer(url);
    run_on_loop([&]() -> Task<void> {
        auto id = co_await db.query_one<std::int64_t>("SELECT CONNECTION_ID()");
        EXPECT_TRUE(id);
        if (!id) co_return;
        // Idle: killed, then used (served at once, not after acquire_timeout).
        co_await killer.execute(fmt::format("KILL {}", *id));
        co_await vela::sleep(100ms);
        const auto t0 = std::chrono::steady_clock::now();
        auto id2 = co_await db.query_one<std::int64_t>("SELECT CONNECTION_ID()");
        EXPECT_TRUE(id2 && *id2 != *id);
        EXPECT_LT(test::ms_since(t0), 2000);
        // Busy: killed while it runs.
        auto victim = [&]() -> Task<void> {
            EXPECT_THROW((void)(co_await db.query("SELECT SLEEP(5) AS vela_kill_probe")),
                         ConnectionError);
        };
        auto kill = [&]() -> Task<void> {
            std::vector<std::int64_t> ids;
            co_await test::poll_until(
                [&]() -> Task<bool> {
                    ids = co_await running(killer, "%vela_kill_probe%");
                    co_return !ids.empty();
                },
                3s, 20ms);
            EXPECT_EQ(ids.size(), 1u);
            for (auto i : ids) co_await killer.execute(fmt::format("KILL {}", i));
        };
        {
            std::vector<Task<void>> both;
            both.push_back(victim());
            both.push_back(kill());
            co_await vela::when_all(std::move(both));
        }
        EXPECT_EQ(co_await db.query_one<int>("SELECT 7"), 7);
    });
}

// The server stops and starts again: statements meanwhile fail with ConnectionError (after
// the reconnect backoff), later ones reconnect on their own.
TEST(Mysql, ReconnectsAfterAServerRestart) {
    VELA_NEED_MYSQL(url);
    if (test::env_or_empty("VELA_TEST_DB_DIR").empty()) GTEST_SKIP() << "needs scripts/db-servers";
    Options o;
    o.reconnect_backoff = 50ms;
    o.reconnect_backoff_max = 200ms;
    o.acquire_timeout = 2000ms;
    o.connect_timeout = 1000ms;
    Database db(url, o);
    run_on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await db.query_one<int>("SELECT 1"), 1);
        EXPECT_TRUE(test::db_servers("my-stop"));
        co_await vela::sleep(100ms);
        bool failed = false;
        try {
            (void)(co_await db.query("SELECT 1"));
        } catch (const ConnectionError&) {
            failed = true;
        } catch (const TimeoutError&) {
            failed = true;
        }
        EXPECT_TRUE(failed);
        EXPECT_TRUE(test::db_servers("my-start"));
        const bool back = co_await test::poll_until(
            [&]() -> Task<bool> {
                try {
                    co_return (co_await db.query_one<int>("SELECT 2")) == 2;
                } catch (const Error&) {
                    co_return false;
                }
            },
            10s, 100ms);
        EXPECT_TRUE(back);
    });
}

TEST(Mysql, LargeResultsAndBlobs) {
    VELA_NEED_MYSQL(url);
    Database db(url);
    const std::string t = table("my_large");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(fmt::format(
            "DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (id INT PRIMARY KEY, b LONGBLOB)", t));
        std::string blob(4 << 20, '\0');
        for (std::size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>(i * 131 + 7);
        const Bytes big{blob};
        co_await db.execute(fmt::format("INSERT INTO {} VALUES (1, $1)", t), big);
        auto back = co_await db.query_one<Bytes>(fmt::format("SELECT b FROM {}", t));
        EXPECT_TRUE(back && back->data == blob);
        // 100,000 rows in one result (five digits cross joined on the server).
        Result r = co_await db.query(
            "WITH d(x) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 "
            "UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION "
            "ALL SELECT 8 UNION ALL SELECT 9) SELECT n, CONCAT('row ', n) AS label FROM (SELECT "
            "1 + a.x + 10 * b.x + 100 * c.x + 1000 * e.x + 10000 * f.x AS n FROM d a, d b, d c, "
            "d e, d f) s ORDER BY n");
        EXPECT_EQ(r.size(), 100000u);
        if (r.size() == 100000u) {
            EXPECT_EQ(r[99999].get<int>("n"), 100000);
            EXPECT_EQ(r[12345].get<std::string>("label"), "row 12346");
        }
        co_await db.execute("DROP TABLE " + t);
    });
}

TEST(Mysql, ConcurrentStatementsUseThePoolAndTheCache) {
    VELA_NEED_MYSQL(url);
    Options o;
    o.pool_size = 3;
    o.statement_cache = 2;  // more distinct statements than the cache holds
    Database db(url, o);
    run_on_loop([&]() -> Task<void> {
        std::vector<Task<std::optional<std::int64_t>>> tasks;
        for (int i = 0; i < 20; ++i)
            tasks.push_back(db.query_one<std::int64_t>("SELECT $1 * 2", i));
        auto got = co_await vela::when_all(std::move(tasks));
        for (int i = 0; i < 20; ++i) EXPECT_EQ(got[i], i * 2);
        PoolStats s = pool_stats(db);
        EXPECT_LE(s.connections, 3u);
        EXPECT_GE(s.connections, 1u);
        EXPECT_EQ(s.waiting, 0u);
        EXPECT_EQ(s.busy, 0u);
        for (int round = 0; round < 3; ++round)
            for (int k = 0; k < 5; ++k) {
                const std::string sql = fmt::format("SELECT $1 + {}", k);
                EXPECT_EQ(co_await db.query_one<std::int64_t>(sql, round), round + k);
            }
        // Statements are not prepared with prepare = false, and work alike.
        Options np;
        np.prepare = false;
        Database plain(url, np);
        EXPECT_EQ(co_await plain.query_one<std::int64_t>("SELECT $1 + 1", 41), 42);
        EXPECT_EQ(co_await plain.query_one<std::int64_t>("SELECT $1 + 1", 1), 2);
    });
}

TEST(Mysql, ScriptsAndNamedLocks) {
    VELA_NEED_MYSQL(url);
    Options o;
    o.pool_size = 1;
    Database db(url, o);
    Database other(url);
    const std::string t = table("my_script");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(fmt::format(
            "DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (v INT); INSERT INTO {0} VALUES (1), "
            "(2); INSERT INTO {0} VALUES (3)",
            t));
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT SUM(v) FROM {}", t)), 6);
        // An error in the middle stops the script and is typed.
        EXPECT_THROW(co_await db.run_script(fmt::format(
                         "INSERT INTO {0} VALUES (4); SELEC 1; INSERT INTO {0} VALUES (5)", t)),
                     StatementError);
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT SUM(v) FROM {}", t)), 10);
        // A named lock taken by a statement is released when its connection goes back.
        EXPECT_EQ(co_await db.query_one<int>("SELECT Get_Lock('vela_test_lock', 1)"), 1);
        const bool released = co_await test::poll_until(
            [&]() -> Task<bool> {
                co_return co_await other.query_one<int>("SELECT IS_FREE_LOCK('vela_test_lock')") ==
                    1;
            },
            2s, 10ms);
        EXPECT_TRUE(released);
        co_await db.execute("DROP TABLE " + t);
    });
}

TEST(Mysql, MigrationsApplyOnce) {
    VELA_NEED_MYSQL(url);
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / table("vela_my_migrations");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string t = table("my_mig");
    // Versions no other test uses (vela_migrations is one table per database).
    std::ofstream(dir / "9001_create.sql")
        << fmt::format("CREATE TABLE {} (id INT PRIMARY KEY, name VARCHAR(20));", t);
    std::ofstream(dir / "9002_seed.sql")
        << fmt::format("INSERT INTO {0} VALUES (1, 'a'); INSERT INTO {0} VALUES (2, 'b');", t);
    Database db(url);
    run_on_loop([&]() -> Task<void> {
        const std::string clean =
            "DROP TABLE IF EXISTS " + t +
            "; CREATE TABLE IF NOT EXISTS vela_migrations (version BIGINT PRIMARY KEY, name "
            "VARCHAR(255) NOT NULL, checksum VARCHAR(64) NOT NULL, applied_at DATETIME(6) NOT "
            "NULL DEFAULT CURRENT_TIMESTAMP(6)); DELETE FROM vela_migrations WHERE version IN "
            "(9001, 9002)";
        co_await db.run_script(clean);
        // Two migrators at once (one loop, two connections): each file is applied once.
        std::vector<Task<std::size_t>> both;
        both.push_back(db.migrate(dir.string()));
        both.push_back(db.migrate(dir.string()));
        std::vector<std::size_t> applied = co_await vela::when_all(std::move(both));
        EXPECT_EQ(applied[0] + applied[1], 2u);
        EXPECT_EQ(co_await db.migrate(dir.string()), 0u);
        EXPECT_EQ(co_await db.query_one<std::int64_t>(fmt::format("SELECT COUNT(*) FROM {}", t)),
                  2);
        // The lock goes with the connection back to the pool (released just after).
        const bool released = co_await test::poll_until(
            [&]() -> Task<bool> {
                co_return co_await db.query_one<int>("SELECT IS_FREE_LOCK('vela_migrations')") == 1;
            },
            2s, 10ms);
        EXPECT_TRUE(released);
        co_await db.run_script(clean);
    });
    fs::remove_all(dir);
}

// The Unix socket forms of the URL reach the same server (processlist shows a socket login
// as host "localhost").
TEST(Mysql, UnixSocketUrls) {
    VELA_NEED_MYSQL(url);
    const std::string sock = test::env_or_empty("VELA_TEST_MYSQL_SOCKET");
    if (sock.empty()) {
        if (test::in_ci()) FAIL() << "VELA_TEST_MYSQL_SOCKET unset in CI";
        GTEST_SKIP() << "needs scripts/db-servers (VELA_TEST_MYSQL_SOCKET)";
    }
    std::string encoded;
    for (char c : sock) encoded += c == '/' ? std::string("%2F") : std::string(1, c);
    for (const std::string& u : {"mysql://vela:vela@localhost/vela?socket=" + sock,
                                 "mariadb://vela:vela@" + encoded + "/vela"}) {
        Database db(u);
        run_on_loop([&]() -> Task<void> {
            auto host = co_await db.query_one<std::string>(
                "SELECT HOST FROM information_schema.processlist WHERE ID = CONNECTION_ID()");
            EXPECT_EQ(host, "localhost") << u;
        });
    }
}

TEST(Mysql, UnreachableServerFailsInOneLine) {
    Options o;
    o.connect_timeout = 1000ms;
    o.acquire_timeout = 3000ms;
    o.reconnect_backoff = 10ms;
    Database db("mysql://nobody:x@127.0.0.1:1/none", o);
    run_on_loop([&]() -> Task<void> {
        std::string message;
        try {
            (void)(co_await db.query("SELECT 1"));
        } catch (const ConnectionError& e) {
            message = e.what();
        }
        EXPECT_NE(message.find("127.0.0.1:1"), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    });
    VELA_NEED_MYSQL(url);
    // A wrong password: the server's refusal, in one line.
    const std::string bad =
        url.substr(0, url.find("://") + 3) + "vela:wrong@" + url.substr(url.find('@') + 1);
    Database wrong(bad, o);
    run_on_loop([&]() -> Task<void> {
        std::string message;
        try {
            (void)(co_await wrong.query("SELECT 1"));
        } catch (const ConnectionError& e) {
            message = e.what();
        }
        EXPECT_NE(message.find("Access denied"), std::string::npos) << message;
    });
}

}  // namespace
}  // namespace vela::db
