// The same backend-neutral checks of vela::db on SQLite, PostgreSQL and MySQL/MariaDB against
// real servers: parameters, mapping, affected rows, transactions, typed errors, concurrency.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "db/pg_test_util.hpp"
#include "db/servers.hpp"
#include "db/sqlite_support.hpp"
#include "vela/async/when_all.hpp"
#include "vela/db/db.hpp"
#include "vela/json/json.hpp"

namespace vela::db {
namespace {

using test::run_on_loop;
using test::table;

// The only SQL that differs between the backends: column types and table options. BIGINT,
// TEXT and BOOLEAN are written as such on all three (SQLite takes any type name; MySQL's
// BOOLEAN is TINYINT(1)).
struct Dialect {
    const char* backend;
    const char* key_text;       // text in a key or UNIQUE constraint (MySQL cannot index TEXT)
    const char* bytes;          // binary data
    const char* time;           // SQLite has no time type: times are stored as ISO-8601 text
    const char* real;           // IEEE double
    const char* json;           // a JSON document
    const char* table_options;  // after CREATE TABLE (...)
};
constexpr Dialect kDialects[] = {
    {"sqlite", "TEXT", "BLOB", "TEXT", "REAL", "TEXT", ""},
    {"postgres", "TEXT", "BYTEA", "TIMESTAMPTZ", "DOUBLE PRECISION", "JSONB", ""},
    {"mysql", "VARCHAR(255)", "LONGBLOB", "DATETIME(6)", "DOUBLE", "JSON",
     " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"},
};

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

/// Microseconds since the epoch (time points compared with readable failure messages).
std::int64_t micros(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

/// The error E that `statement` fails with (a copy), or nullopt and a test failure naming
/// `what` when it succeeds or fails otherwise.
template <class E, class T>
Task<std::optional<E>> caught(Task<T> statement, const char* what) {
    try {
        (void)(co_await std::move(statement));
    } catch (const E& e) {
        co_return e;
    } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": wrong error: " << e.what();
        co_return std::nullopt;
    }
    ADD_FAILURE() << what << ": no error";
    co_return std::nullopt;
}

/// Checks that `statement` fails with E whose SQLSTATE starts with `state_class` ("" for any).
template <class E, class T>
Task<void> expect_error(Task<T> statement, const char* what, const char* state_class = "") {
    std::optional<E> e = co_await caught<E>(std::move(statement), what);
    if (e) {
        EXPECT_TRUE(e->sqlstate().starts_with(state_class)) << what << ": " << e->sqlstate();
    }
}

/// The value of the row `id` (one query of the concurrent batch).
Task<std::int64_t> value_of(Database& db, const std::string& select, std::int64_t id) {
    co_return co_await db.query_single<std::int64_t>(select, id);
}

// One Database per test on the backend named by the parameter: a fresh SQLite file (WAL, as
// in production; sqlite::memory: would share a cache with table locks between connections),
// or the test server of PostgreSQL or MySQL. Without that server the test is skipped (failed
// in CI) here in SetUp, which keeps the test body from running.
class Backends : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        const std::string& backend = GetParam();
        for (const Dialect& d : kDialects)
            if (backend == d.backend) dialect_ = &d;
        ASSERT_NE(dialect_, nullptr) << backend;
        if (backend == "sqlite") {
            scratch_ = std::make_unique<test::ScratchDir>();
            url_ = scratch_->url();
        } else if (backend == "postgres") {
            VELA_NEED_PG(url);
            url_ = url;
        } else {
            VELA_NEED_MYSQL(url);
            url_ = url;
        }
        db_ = std::make_unique<Database>(url_);
        ASSERT_EQ(db_->backend_name(), backend);
    }

    bool is(std::string_view backend) const { return GetParam() == backend; }

    /// `text` with {t} replaced by the table `t` and {key_text}, {bytes}, {time}, {real},
    /// {json} by this backend's column types.
    std::string sql(std::string_view text, const std::string& t = {}) const {
        return fmt::format(fmt::runtime(text), fmt::arg("t", t),
                           fmt::arg("key_text", dialect_->key_text),
                           fmt::arg("bytes", dialect_->bytes), fmt::arg("time", dialect_->time),
                           fmt::arg("real", dialect_->real), fmt::arg("json", dialect_->json));
    }

    /// Creates the table `t` with `columns` (see sql()), dropping an old one first.
    Task<void> create(const std::string& t, std::string_view columns) {
        const std::string script =
            fmt::format("DROP TABLE IF EXISTS {0}; CREATE TABLE {0} ({1}){2}", t, sql(columns),
                        dialect_->table_options);
        co_await db_->run_script(script);
    }

    /// Drops the table `t`.
    Task<void> drop(const std::string& t) {
        const std::string script = "DROP TABLE IF EXISTS " + t;
        co_await db_->run_script(script);
    }

    const Dialect* dialect_ = nullptr;
    std::unique_ptr<test::ScratchDir> scratch_;  // outlives db_
    std::string url_;
    std::unique_ptr<Database> db_;
};

// 1. Every parameter kind goes in with an INSERT and comes back with a SELECT; the server
// compares the same parameters equal to what it stored.
TEST_P(Backends, ParametersOfEveryKindRoundTrip) {
    Database& db = *db_;
    const std::string t = table("bk_params");
    run_on_loop([&]() -> Task<void> {
        co_await create(t,
                        "id BIGINT PRIMARY KEY, i BIGINT, r {real}, b BOOLEAN, s TEXT, y {bytes}, "
                        "ts {time}, j {json}, js {json}, n BIGINT, ns TEXT");
        constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
        constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
        constexpr std::int64_t kNegative = -42;
        const double exact = 0.1 + 0.2;  // 0.30000000000000004: every bit must survive
        const double tiny = -1.2345678901234567e-300;
        const std::string text =
            "it's \"quoted\" \\ back\\slash h\xc3\xa9llo \xe4\xb8\x96 \xf0\x9f\x8e\x89";
        const std::string empty_text;
        const Bytes bytes{std::string("\0a\xff\0z\xff", 6)};  // NUL and 0xFF bytes
        const Bytes no_bytes{};
        // 2024-05-01 12:30:00.123456 UTC and 2000-01-01 00:00:00.000001 UTC.
        const TimePoint when{std::chrono::microseconds(1714566600123456)};
        const TimePoint y2k{std::chrono::microseconds(946684800000001)};
        // JSONB and MySQL's JSON store objects with their keys sorted (shorter first, then
        // bytewise); these keys are in that order already, so the document reads back equal
        // (json::Value compares members in order).
        json::Value doc;
        doc["a"] = 1;
        doc["b"] = json::Value::array({true, "x\"y", nullptr});
        doc["c"] = "h\xc3\xa9llo \xf0\x9f\x8e\x89";
        doc["d"] = 2.5;
        const json::Value empty_doc = json::Value::array();
        Meta meta;  // built outside the co_await (GCC 12: braced lists in awaited expressions)
        meta.kind = "k\xc3\xa9";
        meta.tags = {1, 2, 3};
        const Json<Meta> jmeta{meta};
        const Json<Meta> jempty{};
        const std::optional<std::int64_t> no_int, seven(7);
        const std::optional<std::string> no_text, x("x");

        const std::string insert =
            sql("INSERT INTO {t} (id, i, r, b, s, y, ts, j, js, n, ns) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                t);
        EXPECT_EQ(co_await db.execute(insert, 1, kMin, exact, true, text, bytes, when, doc, jmeta,
                                      no_int, no_text),
                  1u);
        EXPECT_EQ(co_await db.execute(insert, 2, kMax, tiny, false, empty_text, no_bytes, y2k,
                                      empty_doc, jempty, seven, x),
                  1u);
        const std::string insert_short = sql("INSERT INTO {t} (id, i) VALUES ($1, $2)", t);
        EXPECT_EQ(co_await db.execute(insert_short, 3, kNegative), 1u);

        const std::string select = sql("SELECT * FROM {t} ORDER BY id", t);
        Result r = co_await db.query(select);
        EXPECT_EQ(r.size(), 3u);
        if (r.size() == 3) {
            Row a = r[0], b = r[1], c = r[2];
            EXPECT_EQ(a.get<std::int64_t>("i"), kMin);
            EXPECT_EQ(b.get<std::int64_t>("i"), kMax);
            EXPECT_EQ(c.get<std::int64_t>("i"), kNegative);
            EXPECT_EQ(a.get<double>("r"), exact);  // exact, not approximately
            EXPECT_EQ(b.get<double>("r"), tiny);
            EXPECT_TRUE(a.get<bool>("b"));
            EXPECT_FALSE(b.get<bool>("b"));
            EXPECT_EQ(a.get<std::string>("s"), text);
            EXPECT_EQ(b.get<std::string>("s"), "");
            EXPECT_FALSE(b.is_null("s"));
            EXPECT_EQ(a.get<Bytes>("y").data, bytes.data);
            EXPECT_EQ(b.get<Bytes>("y").data, "");
            EXPECT_FALSE(b.is_null("y"));
            EXPECT_EQ(micros(a.get<TimePoint>("ts")), micros(when));
            EXPECT_EQ(micros(b.get<TimePoint>("ts")), micros(y2k));
            if (is("sqlite")) {  // no time type: stored as UTC text with microseconds (sqlite.hpp)
                EXPECT_EQ(a.get<std::string>("ts"), "2024-05-01 12:30:00.123456");
            }
            EXPECT_EQ(json::write(a.get<json::Value>("j")), json::write(doc));
            EXPECT_EQ(json::write(b.get<json::Value>("j")), "[]");
            const Meta m = a.get<Json<Meta>>("js").value;
            EXPECT_EQ(m.kind, meta.kind);
            EXPECT_EQ(m.tags, meta.tags);
            EXPECT_TRUE(b.get<Json<Meta>>("js").value.tags.empty());
            // std::optional: empty -> NULL -> empty; with a value -> the value.
            EXPECT_TRUE(a.is_null("n"));
            EXPECT_EQ(a.get<std::optional<std::int64_t>>("n"), std::nullopt);
            EXPECT_EQ(a.get<std::optional<std::string>>("ns"), std::nullopt);
            EXPECT_EQ(b.get<std::optional<std::int64_t>>("n"), 7);
            EXPECT_EQ(b.get<std::optional<std::string>>("ns"), "x");
            // Columns not inserted are NULL, read as empty optionals of every kind.
            EXPECT_EQ(c.get<std::optional<double>>("r"), std::nullopt);
            EXPECT_EQ(c.get<std::optional<bool>>("b"), std::nullopt);
            EXPECT_EQ(c.get<std::optional<std::string>>("s"), std::nullopt);
            EXPECT_FALSE(c.get<std::optional<Bytes>>("y"));
            EXPECT_FALSE(c.get<std::optional<TimePoint>>("ts"));
            EXPECT_TRUE(c.get<json::Value>("j").is_null());  // a NULL JSON cell reads as null
        }

        // The server compares the parameters equal to the stored values (not only our reading).
        const std::string match =
            sql("SELECT id FROM {t} WHERE i = $1 AND r = $2 AND b = $3 AND s = $4 AND y = $5 "
                "AND ts = $6",
                t);
        auto ids = co_await db.query_as<std::int64_t>(match, kMin, exact, true, text, bytes, when);
        EXPECT_EQ(ids, (std::vector<std::int64_t>{1}));
        const std::string by_int = sql("SELECT id FROM {t} WHERE i = $1", t);
        EXPECT_EQ(co_await db.query_one<std::int64_t>(by_int, kMax), 2);
        EXPECT_EQ(co_await db.query_one<std::int64_t>(by_int, kNegative), 3);
        co_await drop(t);
    });
}

// 2. query_as maps rows into VELA_REFLECT structs by column name.
TEST_P(Backends, RowsMapIntoReflectedStructsByColumnName) {
    Database& db = *db_;
    const std::string t = table("bk_map");
    run_on_loop([&]() -> Task<void> {
        co_await create(t, "id BIGINT PRIMARY KEY, name TEXT NOT NULL, note TEXT, extra BIGINT");
        const std::string insert = sql("INSERT INTO {t} (id, name, note) VALUES ($1, $2, $3)", t);
        const std::optional<std::string> none, hi("hi");
        co_await db.execute(insert, 1, "ann", none);
        co_await db.execute(insert, 2, "bob", hi);
        // Columns in another order than the members, one (extra) that no member takes; score
        // has no column and keeps its default.
        const std::string all = sql("SELECT note, extra, name, id FROM {t} ORDER BY id", t);
        auto items = co_await db.query_as<Item>(all);
        EXPECT_EQ(items.size(), 2u);
        if (items.size() == 2) {
            EXPECT_EQ(items[0].id, 1);
            EXPECT_EQ(items[0].name, "ann");
            EXPECT_EQ(items[0].note, std::nullopt);
            EXPECT_EQ(items[0].score, 7);
            EXPECT_EQ(items[1].id, 2);
            EXPECT_EQ(items[1].name, "bob");
            EXPECT_EQ(items[1].note, "hi");
            EXPECT_EQ(items[1].score, 7);
        }
        // The optional member without a column stays empty though the row has a note.
        const std::string id_name = sql("SELECT id, name FROM {t} WHERE id = $1", t);
        auto bob = co_await db.query_one<Item>(id_name, 2);
        EXPECT_TRUE(bob && bob->name == "bob" && !bob->note && bob->score == 7);
        // A VELA_REQUIRED member without a column.
        const std::string ids = sql("SELECT id FROM {t}", t);
        auto e = co_await caught<MappingError>(db.query_as<NeedsScore>(ids), "required member");
        if (e) {
            EXPECT_NE(std::string(e->what()).find("score"), std::string::npos) << e->what();
        }
        co_await drop(t);
    });
}

// 3. A parameter used several times, numbered out of order.
TEST_P(Backends, ParametersReusedAndOutOfOrder) {
    Database& db = *db_;
    const std::string t = table("bk_order");
    run_on_loop([&]() -> Task<void> {
        co_await create(t, "id BIGINT PRIMARY KEY, a BIGINT, b BIGINT, s TEXT");
        const std::string insert = sql("INSERT INTO {t} (id, a, b, s) VALUES ($2, $1, $2, $3)", t);
        EXPECT_EQ(co_await db.execute(insert, 10, 20, "twenty"), 1u);
        const std::string select =
            sql("SELECT id, a, b, s FROM {t} WHERE b = $2 AND a = $1 AND id = $2 AND s = $3", t);
        Result r = co_await db.query(select, 10, 20, "twenty");
        EXPECT_EQ(r.size(), 1u);
        if (r.size() == 1) {
            EXPECT_EQ(r[0].get<std::int64_t>("id"), 20);
            EXPECT_EQ(r[0].get<std::int64_t>("a"), 10);
            EXPECT_EQ(r[0].get<std::int64_t>("b"), 20);
            EXPECT_EQ(r[0].get<std::string>("s"), "twenty");
        }
        // Text parameters reused, and the later one first.
        const std::string text = sql("SELECT a FROM {t} WHERE s = $2 AND (s = $1 OR s = $2)", t);
        EXPECT_EQ(co_await db.query_one<std::int64_t>(text, "other", "twenty"), 10);
        co_await drop(t);
    });
}

// 4. execute() returns the rows an UPDATE matched (also unchanged ones) or a DELETE removed.
TEST_P(Backends, ExecuteReturnsAffectedRows) {
    Database& db = *db_;
    const std::string t = table("bk_affected");
    run_on_loop([&]() -> Task<void> {
        co_await create(t, "id BIGINT PRIMARY KEY, grp BIGINT NOT NULL, v BIGINT NOT NULL");
        const std::string insert = sql("INSERT INTO {t} (id, grp, v) VALUES ($1, $2, $3)", t);
        EXPECT_EQ(co_await db.execute(insert, 1, 1, 10), 1u);
        EXPECT_EQ(co_await db.execute(insert, 2, 1, 10), 1u);
        EXPECT_EQ(co_await db.execute(insert, 3, 2, 10), 1u);
        const std::string update = sql("UPDATE {t} SET v = $1 WHERE grp = $2", t);
        EXPECT_EQ(co_await db.execute(update, 20, 1), 2u);
        // The same values again: the rows match but do not change. Counted all the same
        // (MySQL connects with CLIENT_FOUND_ROWS for this).
        EXPECT_EQ(co_await db.execute(update, 20, 1), 2u);
        EXPECT_EQ(co_await db.execute(update, 20, 9), 0u);
        const std::string remove = sql("DELETE FROM {t} WHERE grp = $1", t);
        EXPECT_EQ(co_await db.execute(remove, 1), 2u);
        EXPECT_EQ(co_await db.execute(remove, 1), 0u);
        const std::string count = sql("SELECT count(*) FROM {t}", t);
        EXPECT_EQ(co_await db.query_single<std::int64_t>(count), 1);
        co_await drop(t);
    });
}

// 5. query_one gives nullopt for no row; query_single throws NoRowError.
TEST_P(Backends, QueryOneAndQuerySingle) {
    Database& db = *db_;
    const std::string t = table("bk_single");
    run_on_loop([&]() -> Task<void> {
        co_await create(t, "id BIGINT PRIMARY KEY, name TEXT NOT NULL, note TEXT");
        const std::string insert = sql("INSERT INTO {t} (id, name) VALUES ($1, $2)", t);
        co_await db.execute(insert, 1, "ann");
        const std::string name_of = sql("SELECT name FROM {t} WHERE id = $1", t);
        const std::string item_of = sql("SELECT id, name, note FROM {t} WHERE id = $1", t);
        EXPECT_EQ(co_await db.query_one<std::string>(name_of, 1), "ann");
        EXPECT_EQ(co_await db.query_one<std::string>(name_of, 99), std::nullopt);
        auto none = co_await db.query_one<Item>(item_of, 99);
        EXPECT_FALSE(none);
        EXPECT_EQ(co_await db.query_single<std::string>(name_of, 1), "ann");
        Item ann = co_await db.query_single<Item>(item_of, 1);
        EXPECT_EQ(ann.name, "ann");
        auto e = co_await caught<NoRowError>(db.query_single<std::string>(name_of, 99), "no row");
        if (e) {
            const std::string message = e->what();
            EXPECT_NE(message.find("returned no row"), std::string::npos) << message;
            EXPECT_NE(message.find("WHERE id = $1"), std::string::npos) << message;
        }
        co_await drop(t);
    });
}

// 6. Database::transaction commits when the body returns and rolls back when it throws.
TEST_P(Backends, TransactionCommitsOrRollsBack) {
    Database& db = *db_;
    const std::string t = table("bk_tx");
    run_on_loop([&]() -> Task<void> {
        co_await create(t, "id BIGINT PRIMARY KEY, name TEXT NOT NULL");
        const std::string insert = sql("INSERT INTO {t} (id, name) VALUES ($1, $2)", t);
        const std::string count = sql("SELECT count(*) FROM {t}", t);
        const std::string name_of = sql("SELECT name FROM {t} WHERE id = $1", t);
        auto commit_body = [&](Transaction& tx) -> Task<std::int64_t> {
            co_await tx.execute(insert, 1, "kept");
            co_return co_await tx.query_single<std::int64_t>(count);  // sees its own insert
        };
        EXPECT_EQ(co_await db.transaction(commit_body), 1);
        EXPECT_EQ(co_await db.query_one<std::string>(name_of, 1), "kept");
        auto failing_body = [&](Transaction& tx) -> Task<void> {
            co_await tx.execute(insert, 2, "gone");
            throw std::runtime_error("body failed");
        };
        std::string what;
        try {
            co_await db.transaction(failing_body);
        } catch (const std::runtime_error& e) {
            what = e.what();
        }
        EXPECT_EQ(what, "body failed");  // the body's own exception, rethrown
        EXPECT_EQ(co_await db.query_one<std::string>(name_of, 2), std::nullopt);
        EXPECT_EQ(co_await db.query_single<std::int64_t>(count), 1);
        co_await drop(t);
    });
}

// 7. Errors are typed the same on every backend (SQLSTATEs differ within their class:
// MySQL reports 23000 for every constraint and 42000/42S02 for statements).
TEST_P(Backends, ErrorsAreTyped) {
    Database& db = *db_;
    const std::string t = table("bk_errors");
    const std::string missing = table("bk_no_such_table");
    run_on_loop([&]() -> Task<void> {
        co_await create(t,
                        "id BIGINT PRIMARY KEY, code {key_text} UNIQUE, v BIGINT NOT NULL, "
                        "note TEXT, s TEXT");
        const std::string insert =
            sql("INSERT INTO {t} (id, code, v, note, s) VALUES ($1, $2, $3, $4, $5)", t);
        const std::optional<std::string> no_text;
        const std::optional<std::int64_t> no_int;
        EXPECT_EQ(co_await db.execute(insert, 1, "a", 1, no_text, "abc"), 1u);

        co_await expect_error<UniqueViolation>(db.execute(insert, 1, "b", 2, no_text, "x"),
                                               "duplicate primary key", "23");
        co_await expect_error<UniqueViolation>(db.execute(insert, 2, "a", 2, no_text, "x"),
                                               "duplicate unique text", "23");
        co_await expect_error<NotNullViolation>(db.execute(insert, 3, "c", no_int, no_text, "x"),
                                                "NULL into NOT NULL", "23");
        co_await expect_error<StatementError>(db.query("SELEC 1"), "syntax error", "42");
        const std::string from_missing = "SELECT * FROM " + missing;
        co_await expect_error<StatementError>(db.query(from_missing), "missing table", "42");

        // Reading: NULL into a non-optional, text into an integer (no SQLSTATE: not the
        // server's errors).
        const std::string note_of = sql("SELECT note FROM {t} WHERE id = $1", t);
        co_await expect_error<MappingError>(db.query_one<std::string>(note_of, 1),
                                            "NULL into std::string");
        co_await expect_error<MappingError>(db.query_one<std::int64_t>(note_of, 1),
                                            "NULL into std::int64_t");
        const std::string s_of = sql("SELECT s FROM {t} WHERE id = $1", t);
        co_await expect_error<MappingError>(db.query_one<std::int64_t>(s_of, 1),
                                            "text into std::int64_t");
        Result r = co_await db.query(s_of, 1);
        EXPECT_EQ(r.size(), 1u);
        if (r.size() == 1) {
            EXPECT_THROW((void)r[0].get<std::int64_t>("s"), MappingError);
        }

        // Nothing of the failed statements stayed, and the database is still usable.
        const std::string count = sql("SELECT count(*) FROM {t}", t);
        EXPECT_EQ(co_await db.query_single<std::int64_t>(count), 1);
        co_await drop(t);
    });
}

// 8. Twenty queries in flight at once on one loop each get their own row.
TEST_P(Backends, ConcurrentQueriesReturnTheirOwnValues) {
    Database& db = *db_;
    const std::string t = table("bk_concurrent");
    run_on_loop([&]() -> Task<void> {
        co_await create(t, "id BIGINT PRIMARY KEY, v BIGINT NOT NULL");
        const std::string insert = sql("INSERT INTO {t} (id, v) VALUES ($1, $2)", t);
        constexpr int kQueries = 20;
        for (int i = 0; i < kQueries; ++i) co_await db.execute(insert, i, i * 1000 + 7);
        const std::string select = sql("SELECT v FROM {t} WHERE id = $1", t);
        std::vector<Task<std::int64_t>> queries;
        for (int i = 0; i < kQueries; ++i) queries.push_back(value_of(db, select, i));
        std::vector<std::int64_t> values = co_await when_all(std::move(queries));
        EXPECT_EQ(values.size(), static_cast<std::size_t>(kQueries));
        for (std::size_t i = 0; i < values.size(); ++i)
            EXPECT_EQ(values[i], static_cast<std::int64_t>(i) * 1000 + 7) << "query " << i;
        co_await drop(t);
    });
}

// 9. run_script runs statements separated by semicolons.
TEST_P(Backends, ScriptRunsTwoStatements) {
    Database& db = *db_;
    const std::string t = table("bk_script");
    run_on_loop([&]() -> Task<void> {
        co_await create(t, "id BIGINT PRIMARY KEY, name TEXT NOT NULL");
        const std::string script =
            sql("INSERT INTO {t} (id, name) VALUES (1, 'a'); "
                "INSERT INTO {t} (id, name) VALUES (2, 'b')",
                t);
        co_await db.run_script(script);
        const std::string names = sql("SELECT name FROM {t} ORDER BY id", t);
        auto got = co_await db.query_as<std::string>(names);
        EXPECT_EQ(got, (std::vector<std::string>{"a", "b"}));
        co_await drop(t);
    });
}

INSTANTIATE_TEST_SUITE_P(Db, Backends, ::testing::Values("sqlite", "postgres", "mysql"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             return info.param;
                         });

}  // namespace
}  // namespace vela::db
