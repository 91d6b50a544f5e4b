// Database::migrate on SQLite (and on PostgreSQL when its server and backend are there):
// numbered files applied once, in order, each in a transaction, checked for edits, safe to run
// from two loops (or two Database objects, like two processes) at once.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "db/servers.hpp"
#include "db/sqlite_support.hpp"
#include "vela/db/db.hpp"

namespace vela::db {
namespace {

using test::on_loop;
using test::on_loops;
using test::ScratchDir;

void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

struct Applied {
    std::int64_t version = 0;
    std::string name;
    std::string checksum;
    std::string applied_at;
};
VELA_REFLECT(Applied, version, name, checksum, applied_at)

TEST(Migrate, AppliesEachFileOnceInNumberOrder) {
    ScratchDir dir;
    const std::string m = dir.path() + "/migrations";
    std::filesystem::create_directory(m);
    // 002 needs 001's table, 010 needs 002's column: number order, not name order.
    write(m + "/010_index.sql", "CREATE INDEX users_email ON users(email);");
    write(m + "/001_users.sql", "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);");
    write(m + "/002_email.sql",
          "ALTER TABLE users ADD COLUMN email TEXT;\nINSERT INTO users (name, email) VALUES "
          "('ann', 'a@x.org');");
    write(m + "/README.md", "not a migration");
    Database db(dir.url());
    on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await db.migrate(m), 3u);
        EXPECT_EQ(co_await db.migrate(m), 0u);
        auto rows = co_await db.query_as<Applied>(
            "SELECT * FROM vela_migrations ORDER BY applied_at, version");
        EXPECT_EQ(rows.size(), 3u);
        if (rows.size() != 3) co_return;
        EXPECT_EQ(rows[0].name, "001_users.sql");
        EXPECT_EQ(rows[1].name, "002_email.sql");
        EXPECT_EQ(rows[2].version, 10);
        EXPECT_EQ(rows[0].checksum.size(), 16u);
        EXPECT_FALSE(rows[0].applied_at.empty());
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM users"), 1);
        // A new file is applied on the next run, the others skipped.
        write(m + "/011_more.sql", "INSERT INTO users (name) VALUES ('bob');");
        EXPECT_EQ(co_await db.migrate(m), 1u);
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM users"), 2);
    });
}

TEST(Migrate, AnAppliedFileThatChangedIsAnErrorNamingIt) {
    ScratchDir dir;
    const std::string m = dir.path();
    write(m + "/001_t.sql", "CREATE TABLE t (v INTEGER);");
    Database db(dir.url("db.sqlite"));
    on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await db.migrate(m), 1u);
        write(m + "/001_t.sql", "CREATE TABLE t (v INTEGER, w INTEGER);");
        write(m + "/002_u.sql", "CREATE TABLE u (v INTEGER);");
        std::string msg;
        try {
            co_await db.migrate(m);
        } catch (const Error& e) {
            msg = e.what();
        }
        EXPECT_NE(msg.find("'001_t.sql' was changed"), std::string::npos) << msg;
        // Nothing after it was applied.
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM vela_migrations"), 1);
    });
}

TEST(Migrate, AFailingFileIsRolledBackAndNamed) {
    ScratchDir dir;
    const std::string m = dir.path();
    write(m + "/001_ok.sql", "CREATE TABLE a (v INTEGER);");
    write(m + "/002_bad.sql",
          "CREATE TABLE b (v INTEGER);\nINSERT INTO a VALUES (1);\nINSERT INTO nope VALUES (1);");
    write(m + "/003_later.sql", "CREATE TABLE c (v INTEGER);");
    Database db(dir.url());
    on_loop([&]() -> Task<void> {
        std::string msg;
        std::string state;
        try {
            co_await db.migrate(m);
        } catch (const StatementError& e) {
            msg = e.what();
            state = e.sqlstate();
        }
        EXPECT_NE(msg.find("'002_bad.sql'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("no such table: nope"), std::string::npos) << msg;
        EXPECT_EQ(state, "42P01");
        // 001 stays applied; 002 left nothing behind; 003 did not run.
        auto names = co_await db.query_as<std::string>("SELECT name FROM vela_migrations");
        EXPECT_EQ(names, std::vector<std::string>(1, "001_ok.sql"));
        EXPECT_EQ(co_await db.query_one<int>("SELECT count(*) FROM a"), 0);
        auto tables = co_await db.query_as<std::string>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('b', 'c')");
        EXPECT_TRUE(tables.empty());
        // Fixed, it applies.
        write(m + "/002_bad.sql", "CREATE TABLE b (v INTEGER);\nINSERT INTO a VALUES (1);");
        EXPECT_EQ(co_await db.migrate(m), 2u);
    });
}

TEST(Migrate, BadFolderAndFileNamesAreErrors) {
    ScratchDir dir;
    Database db("sqlite::memory:");
    on_loop([&]() -> Task<void> {
        std::string msg;
        try {
            co_await db.migrate(dir.path() + "/missing");
        } catch (const Error& e) {
            msg = e.what();
        }
        EXPECT_NE(msg.find("/missing' does not exist"), std::string::npos) << msg;
        write(dir.path() + "/init.sql", "SELECT 1;");
        msg.clear();
        try {
            co_await db.migrate(dir.path());
        } catch (const Error& e) {
            msg = e.what();
        }
        EXPECT_NE(msg.find("'init.sql'"), std::string::npos) << msg;
        std::filesystem::remove(dir.path() + "/init.sql");
        write(dir.path() + "/1_a.sql", "SELECT 1;");
        write(dir.path() + "/01_b.sql", "SELECT 1;");
        msg.clear();
        try {
            co_await db.migrate(dir.path());
        } catch (const Error& e) {
            msg = e.what();
        }
        EXPECT_NE(msg.find("the same number 1"), std::string::npos) << msg;
    });
}

// A missing (relative) migrations folder is the error, before the SQLite file or its directory
// is made: nothing appears on disk.
TEST(Migrate, AMissingFolderCreatesNothing) {
    ScratchDir dir;
    Database db("sqlite://" + dir.path() + "/data/app.db");
    on_loop([&]() -> Task<void> {
        std::string msg;
        try {
            co_await db.migrate("vela-test-no-such-migrations");
        } catch (const Error& e) {
            msg = e.what();
        }
        EXPECT_NE(msg.find("'vela-test-no-such-migrations' does not exist"), std::string::npos)
            << msg;
    });
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
    EXPECT_FALSE(std::filesystem::exists("vela-test-no-such-migrations"));
    // The first statement opens (and creates) the file.
    on_loop([&]() -> Task<void> { co_await db.execute("CREATE TABLE t (x INTEGER)"); });
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/data/app.db"));
}

// Twenty files, each appending its number to a log table: applied twice, a row shows twice.
void write_counting_migrations(const std::string& m) {
    write(m + "/000_log.sql", "CREATE TABLE log (n INTEGER NOT NULL);");
    for (int i = 1; i <= 20; ++i)
        write(m + "/" + std::to_string(100 + i) + "_step.sql",
              "INSERT INTO log VALUES (" + std::to_string(i) + ");");
}

TEST(Migrate, ConcurrentMigrationsApplyEachFileOnce) {
    ScratchDir dir;
    const std::string m = dir.path() + "/m";
    std::filesystem::create_directory(m);
    write_counting_migrations(m);
    // Two loops sharing one Database, and two more with a Database each on the same file (as
    // two processes would be).
    Database shared(dir.url());
    Database other1(dir.url()), other2(dir.url());
    Database* dbs[] = {&shared, &shared, &other1, &other2};
    std::atomic<std::size_t> applied{0};
    on_loops(4, [&](std::size_t i) -> Task<void> { applied += co_await dbs[i]->migrate(m); });
    EXPECT_EQ(applied.load(), 21u);
    on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await shared.query_one<int>("SELECT count(*) FROM log"), 20);
        EXPECT_EQ(co_await shared.query_one<int>("SELECT count(DISTINCT n) FROM log"), 20);
        EXPECT_EQ(co_await shared.query_one<int>("SELECT count(*) FROM vela_migrations"), 21);
    });
}

}  // namespace
}  // namespace vela::db

namespace vela::db {
namespace {

// The same migrations on PostgreSQL, from two loops at once (the advisory lock path).
TEST(MigratePg, ConcurrentMigrationsApplyEachFileOnce) {
    VELA_NEED_PG(url);
    ScratchDir dir;
    write_counting_migrations(dir.path());
    Database db(url);
    test::on_loop([&]() -> Task<void> {
        co_await db.run_script("DROP TABLE IF EXISTS log; DROP TABLE IF EXISTS vela_migrations;");
    });
    std::atomic<std::size_t> applied{0};
    on_loops(2, [&](std::size_t) -> Task<void> { applied += co_await db.migrate(dir.path()); });
    EXPECT_EQ(applied.load(), 21u);
    on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await db.query_one<std::int64_t>("SELECT count(*) FROM log"), 20);
        EXPECT_EQ(co_await db.migrate(dir.path()), 0u);
        write(dir.path() + "/200_bad.sql", "INSERT INTO log VALUES (99); SELECT * FROM nope;");
        std::string msg;
        try {
            co_await db.migrate(dir.path());
        } catch (const StatementError& e) {
            msg = e.what();
        }
        EXPECT_NE(msg.find("'200_bad.sql'"), std::string::npos) << msg;
        EXPECT_EQ(co_await db.query_one<std::int64_t>("SELECT count(*) FROM log"), 20);
        co_await db.run_script("DROP TABLE log; DROP TABLE vela_migrations;");
    });
}

}  // namespace
}  // namespace vela::db
