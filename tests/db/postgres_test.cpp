// The PostgreSQL backend against a real server (scripts/db-servers): parameters of every kind,
// mapping, typed errors, pipelining, large results, prepared statement cache, scripts.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
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

struct Item {
    std::int64_t id = 0;
    std::string name;
    std::optional<std::string> note;
    int score = 7;
};
VELA_REFLECT(Item, id, name, note, score)

struct NeedsScore {
    std::int64_t id = 0;
    int score = 0;
};
VELA_REFLECT(NeedsScore, id, VELA_REQUIRED(score))

struct Meta {
    std::string kind;
    std::vector<int> tags;
};
VELA_REFLECT(Meta, kind, tags)

TEST(Postgres, ParametersOfEveryKindRoundTrip) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string t = table("pg_params");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(fmt::format(
            "DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (id int4 PRIMARY KEY, big int8, r float8, "
            "b bool, s text, y bytea, ts timestamptz, plain timestamp, j jsonb, js json, "
            "n int4)",
            t));
        const std::string bin("a\0b\xff\x00z", 6);
        const std::string uni = "h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x8e\x89";
        const TimePoint when{
            std::chrono::microseconds(1714559400123456)};  // 2024-05-01 10:30:00.123456Z
        json::Value doc;
        doc["a"] = 1;
        doc["b"] = json::Value::array({true, "x"});
        Meta meta;        // built outside the co_await (GCC 12: initializer lists in a coroutine's
        meta.kind = "k";  // awaited expression fail to compile)
        meta.tags = {1, 2};
        const Json<Meta> jmeta{meta};  // (aggregate temporaries in awaited calls: same bug)
        const Bytes ybin{bin};
        const std::string insert = fmt::format(
            "INSERT INTO {} (id, big, r, b, s, y, ts, plain, j, js, n) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            t);
        std::uint64_t n =
            co_await db.execute(insert, 1, std::int64_t{9007199254740993}, 2.5, true, uni, ybin,
                                when, when, doc, jmeta, std::optional<int>{});
        EXPECT_EQ(n, 1u);
        // Comparisons work with the parameter types chosen (int8 vs int4 column, text inferred).
        Result r = co_await db.query(
            fmt::format("SELECT * FROM {} WHERE id = $1 AND s = $2 AND b = $3 AND r > $4", t), 1,
            uni, true, 2.0);
        EXPECT_EQ(r.size(), 1u);
        if (r.size() != 1) co_return;
        Row row = r[0];
        EXPECT_EQ(row.get<std::int64_t>("big"), 9007199254740993);
        EXPECT_DOUBLE_EQ(row.get<double>("r"), 2.5);
        EXPECT_TRUE(row.get<bool>("b"));
        EXPECT_EQ(row.get<std::string>("s"), uni);
        EXPECT_EQ(row.get<Bytes>("y").data, bin);
        EXPECT_EQ(row.get<TimePoint>("ts"), when);
        EXPECT_EQ(row.get<TimePoint>("plain"), when);  // without zone: read as UTC
        EXPECT_EQ(row.get<json::Value>("j"), doc);
        Meta m = row.get<Json<Meta>>("js").value;
        EXPECT_EQ(m.kind, "k");
        EXPECT_EQ(m.tags, (std::vector<int>{1, 2}));
        EXPECT_TRUE(row.is_null("n"));
        EXPECT_EQ(row.get<std::optional<int>>("n"), std::nullopt);
        // The server agrees on the values sent (not only our own reading of them).
        Result check = co_await db.query(
            "SELECT $1::timestamptz = '2024-05-01 10:30:00.123456+00' AS same_time, "
            "$2::bytea = '\\x610062ff007a'::bytea AS same_bytes, length($3::text) AS chars, "
            "$4::int8 = 9007199254740993 AS same_int",
            when, ybin, uni, std::int64_t{9007199254740993});
        EXPECT_TRUE(check[0].get<bool>("same_time"));
        EXPECT_TRUE(check[0].get<bool>("same_bytes"));
        EXPECT_EQ(check[0].get<int>("chars"), 10);
        EXPECT_TRUE(check[0].get<bool>("same_int"));
        // Special floats and NULL of every kind.
        Result f = co_await db.query("SELECT $1::float8 AS inf, $2::float8 AS nan, $3::text AS z",
                                     std::numeric_limits<double>::infinity(),
                                     std::numeric_limits<double>::quiet_NaN(), nullptr);
        EXPECT_TRUE(std::isinf(f[0].get<double>("inf")));
        EXPECT_TRUE(std::isnan(f[0].get<double>("nan")));
        EXPECT_TRUE(f[0].is_null("z"));
        co_await db.execute("DROP TABLE " + t);
    });
}

TEST(Postgres, RowsMapIntoReflectedStructsByColumnName) {
    VELA_NEED_PG(url);
    Database db(url);
    run_on_loop([&]() -> Task<void> {
        auto items = co_await db.query_as<Item>(
            "SELECT g AS id, 'n' || g AS name, CASE WHEN g = 2 THEN 'two' END AS note "
            "FROM generate_series(1, 3) g ORDER BY g");
        EXPECT_EQ(items.size(), 3u);
        if (items.size() != 3) co_return;
        EXPECT_EQ(items[1].id, 2);
        EXPECT_EQ(items[1].name, "n2");
        EXPECT_EQ(items[1].note, "two");
        EXPECT_EQ(items[0].note, std::nullopt);
        EXPECT_EQ(items[0].score, 7);  // no column: keeps its default
        auto one = co_await db.query_one<Item>("SELECT 5::int8 AS id, 'x' AS name");
        EXPECT_TRUE(one && one->id == 5);
        auto none = co_await db.query_one<Item>("SELECT 1 AS id WHERE false");
        EXPECT_FALSE(none);
        // VELA_REQUIRED member without a column, NULL into a non-optional member.
        EXPECT_THROW((void)(co_await db.query_as<NeedsScore>("SELECT 1 AS id")), MappingError);
        EXPECT_THROW((void)(co_await db.query_as<Item>("SELECT 1 AS id, NULL::text AS name")),
                     MappingError);
        // Text into an integer, and an integer too wide for int.
        EXPECT_THROW((void)(co_await db.query_as<int>("SELECT 'abc'")), MappingError);
        EXPECT_THROW((void)(co_await db.query_as<int>("SELECT 9999999999::int8")), MappingError);
        auto counts =
            co_await db.query_as<std::int64_t>("SELECT count(*) FROM generate_series(1, 4)");
        EXPECT_EQ(counts, (std::vector<std::int64_t>{4}));
    });
}

// query_single: the row of INSERT ... RETURNING, or NoRowError naming the statement.
TEST(Postgres, QuerySingleReturnsTheRowOrThrows) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string t = table("single");
    run_on_loop([&]() -> Task<void> {
        const std::string create = "DROP TABLE IF EXISTS " + t + "; CREATE TABLE " + t +
                                   " (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, note TEXT)";
        co_await db.run_script(create);
        const std::string insert = "INSERT INTO " + t + " (name) VALUES ($1) RETURNING id, name";
        Item made = co_await db.query_single<Item>(insert, "ann");
        EXPECT_GT(made.id, 0);
        EXPECT_EQ(made.name, "ann");
        const std::string count = "SELECT count(*) FROM " + t;
        EXPECT_EQ(co_await db.query_single<std::int64_t>(count), 1);
        std::string message;
        try {
            (void)co_await db.query_single<Item>("SELECT 1::int8 AS id WHERE false");
        } catch (const NoRowError& e) {
            message = e.what();
        }
        EXPECT_NE(message.find("returned no row"), std::string::npos) << message;
        EXPECT_NE(message.find("WHERE false"), std::string::npos) << message;
        const std::string drop = "DROP TABLE " + t;
        co_await db.run_script(drop);
    });
}

TEST(Postgres, InjectionAttemptsPassedAsParametersStayData) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string t = table("pg_users");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(fmt::format(
            "DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (id serial PRIMARY KEY, name text)", t));
        const std::vector<std::string> evil = {"'); DROP TABLE " + t + "; --",
                                               "x' OR '1'='1",
                                               "\\'; SELECT pg_sleep(1); --",
                                               "$1",
                                               "\"quoted\"",
                                               std::string("nul\0byte", 8)};
        for (const auto& e : evil) {
            if (e.find('\0') != std::string::npos) {
                // Text cannot hold NUL in PostgreSQL: refused by the server, not injected.
                EXPECT_THROW((void)(co_await db.execute(
                                 fmt::format("INSERT INTO {} (name) VALUES ($1)", t), e)),
                             Error);
                continue;
            }
            co_await db.execute(fmt::format("INSERT INTO {} (name) VALUES ($1)", t), e);
            auto back = co_await db.query_as<std::string>(
                fmt::format("SELECT name FROM {} WHERE name = $1", t), e);
            EXPECT_EQ(back, std::vector<std::string>{e});
        }
        auto n = co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t));
        EXPECT_EQ(n, 5);  // the table is still there, with the five texts as rows
        auto none = co_await db.query_as<std::string>(
            fmt::format("SELECT name FROM {} WHERE name = $1", t), "x' OR '1'='1' --");
        EXPECT_TRUE(none.empty());
        co_await db.execute("DROP TABLE " + t);
    });
}

TEST(Postgres, ErrorsAreTypedBySqlstateAndFailOnlyTheirStatement) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string t = table("pg_errors");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(fmt::format(
            "DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (id int PRIMARY KEY, v int NOT NULL "
            "CHECK (v >= 0))",
            t));
        co_await db.execute(fmt::format("INSERT INTO {} VALUES ($1, $2)", t), 1, 1);
        try {
            co_await db.execute(fmt::format("INSERT INTO {} VALUES ($1, $2)", t), 1, 2);
            ADD_FAILURE() << "duplicate key accepted";
        } catch (const UniqueViolation& e) {
            EXPECT_EQ(e.sqlstate(), "23505");
            EXPECT_NE(std::string(e.what()).find("duplicate key"), std::string::npos) << e.what();
        }
        EXPECT_THROW(co_await db.execute(fmt::format("INSERT INTO {} VALUES (2, NULL)", t)),
                     NotNullViolation);
        EXPECT_THROW(co_await db.execute(fmt::format("INSERT INTO {} VALUES (3, -1)", t)),
                     CheckViolation);
        try {
            co_await db.query("SELEC 1");
            ADD_FAILURE() << "syntax error accepted";
        } catch (const StatementError& e) {
            EXPECT_EQ(e.sqlstate(), "42601");
        }
        EXPECT_THROW(co_await db.query("SELECT * FROM no_such_table_at_all"), StatementError);
        // Issued together: the failing one fails alone, the others commit (own Sync each).
        auto insert = [&](int id, int v) -> Task<int> {
            try {
                co_await db.execute(fmt::format("INSERT INTO {} VALUES ($1, $2)", t), id, v);
                co_return 1;
            } catch (const ConstraintError&) {
                co_return 0;
            }
        };
        std::vector<Task<int>> batch;
        batch.push_back(insert(10, 1));
        batch.push_back(insert(1, 1));    // duplicate
        batch.push_back(insert(11, -5));  // check violation
        batch.push_back(insert(12, 1));
        auto ok = co_await when_all(std::move(batch));
        EXPECT_EQ(ok, (std::vector<int>{1, 0, 0, 1}));
        auto ids = co_await db.query_as<int>(fmt::format("SELECT id FROM {} ORDER BY id", t));
        EXPECT_EQ(ids, (std::vector<int>{1, 10, 12}));
        co_await db.execute("DROP TABLE " + t);
    });
}

Task<std::int64_t> doubled(Database& db, std::int64_t i) {
    auto v = co_await db.query_one<std::int64_t>("SELECT $1::int8 * 2", i);
    co_return v.value_or(-1);
}

TEST(Postgres, TwoHundredConcurrentStatementsReturnTheirOwnResultsInOrder) {
    VELA_NEED_PG(url);
    for (bool pipeline : {true, false}) {
        Options o;
        o.pipeline = pipeline;
        Database db(url, o);
        run_on_loop([&]() -> Task<void> {
            std::vector<Task<std::int64_t>> tasks;
            for (int i = 0; i < 200; ++i) tasks.push_back(doubled(db, i));
            auto out = co_await when_all(std::move(tasks));
            EXPECT_EQ(out.size(), 200u);
            for (std::size_t i = 0; i < out.size(); ++i)
                EXPECT_EQ(out[i], static_cast<std::int64_t>(2 * i)) << "pipeline " << pipeline;
            PgPoolStats s = pg_pool_stats(db);
            EXPECT_GE(s.connections, 1u);
            EXPECT_LE(s.connections, o.pool_size);
            EXPECT_EQ(s.in_flight, 0u);
        });
    }
}

TEST(Postgres, LargeResultOfHundredThousandRows) {
    VELA_NEED_PG(url);
    Database db(url);
    run_on_loop([&]() -> Task<void> {
        Result r = co_await db.query(
            "SELECT g AS id, md5(g::text) AS name FROM generate_series(1, 100000) g ORDER BY g");
        EXPECT_EQ(r.size(), 100000u);
        std::int64_t sum = 0;
        for (Row row : r) sum += row.get<std::int64_t>(0);
        EXPECT_EQ(sum, 100000LL * 100001 / 2);
        EXPECT_EQ(r[99999].get<std::string>("name").size(), 32u);
        // The connection is fine afterwards.
        auto one = co_await db.query_one<int>("SELECT 1");
        EXPECT_EQ(one, 1);
    });
}

TEST(Postgres, StatementCacheEvictsAndStatementsRunUnprepared) {
    VELA_NEED_PG(url);
    for (bool prepare : {true, false}) {
        Options o;
        o.prepare = prepare;
        o.statement_cache = 3;
        o.pool_size = 1;
        Database db(url, o);
        run_on_loop([&]() -> Task<void> {
            for (int round = 0; round < 3; ++round)
                for (int i = 0; i < 8; ++i) {
                    auto v = co_await db.query_one<std::int64_t>(
                        fmt::format("SELECT $1::int8 + {}", i), round);
                    EXPECT_EQ(v, round + i);
                }
            // A statement prepared once, called with other parameter types (NULL, then text).
            auto a = co_await db.query_one<std::optional<std::string>>("SELECT $1::text", nullptr);
            EXPECT_TRUE(a && !*a);  // a row whose cell is NULL
            auto b = co_await db.query_one<std::string>("SELECT $1::text", 5);
            EXPECT_EQ(b, "5");
            auto prepared =
                co_await db.query_one<std::int64_t>("SELECT count(*) FROM pg_prepared_statements");
            if (prepare)
                EXPECT_LE(prepared, 4);  // the cache bound, plus this statement itself
            else
                EXPECT_EQ(prepared, 0);
        });
    }
}

TEST(Postgres, ScriptsRunSeveralStatements) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string t = table("pg_script");
    run_on_loop([&]() -> Task<void> {
        co_await db.run_script(fmt::format(
            "DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (x int); INSERT INTO {0} VALUES (1), (2);",
            t));
        auto n = co_await db.query_one<std::int64_t>(fmt::format("SELECT sum(x) FROM {}", t));
        EXPECT_EQ(n, 3);
        // A failing statement stops the script with its error; the connection is reusable.
        EXPECT_THROW(co_await db.run_script(fmt::format("INSERT INTO {} VALUES (3); SELEC;", t)),
                     StatementError);
        auto after = co_await db.query_one<std::int64_t>(fmt::format("SELECT count(*) FROM {}", t));
        EXPECT_EQ(after, 2);  // the script ran as one implicit transaction: the insert rolled back
        co_await db.run_script("DROP TABLE " + t);
    });
}

TEST(Postgres, BadUrlIsOneClearError) {
    try {
        Database db("postgres://u@h/db?no_such_parameter=1");
        FAIL() << "accepted";
    } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("bad PostgreSQL URL"), std::string::npos) << m;
        EXPECT_NE(m.find("no_such_parameter"), std::string::npos) << m;
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
}

TEST(Postgres, UnreachableServerIsAConnectionError) {
    // A port nothing listens on (bound, then closed).
    Options o;
    o.connect_timeout = 2000ms;
    Database db("postgres://vela@127.0.0.1:1/vela", o);
    run_on_loop([&]() -> Task<void> {
        auto t0 = std::chrono::steady_clock::now();
        try {
            co_await db.query("SELECT 1");
            ADD_FAILURE() << "connected to port 1";
        } catch (const ConnectionError& e) {
            EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
        }
        EXPECT_LT(test::ms_since(t0), 2000);
    });
}

}  // namespace
}  // namespace vela::db
