// Database::migrate: numbered SQL files applied once each, in order, recorded in
// vela_migrations. Written against Executor/Transaction only, so it serves both backends.
//
// Concurrency: each file is applied in its own transaction, which first makes sure no other
// migrator is inside one (PostgreSQL: pg_advisory_xact_lock on a fixed key; MySQL: the named
// lock vela_migrations, held by the connection until the pool takes it back, as DDL commits
// implicitly; SQLite: BEGIN IMMEDIATE, which the writer serializes) and then checks
// vela_migrations again, so two processes or loops migrating at once apply every file exactly
// once.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "vela/db/db.hpp"

namespace vela::db {

namespace {

// pg_advisory_xact_lock key of vela migrations ("vela-mig" in ASCII).
constexpr std::int64_t kLockKey = 0x76656c612d6d6967;

struct File {
    std::int64_t version = 0;
    std::string name;  // the file name, e.g. 001_users.sql
    std::string sql;
    std::string checksum;
};

// FNV-1a 64 of the file's bytes, in hex: detects a file edited after it was applied.
std::string checksum_of(std::string_view s) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return fmt::format("{:016x}", h);
}

// The migration files of `folder`, in version order. Other files are ignored.
std::vector<File> read_folder(const std::string& folder) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        throw Error(
            fmt::format("migrations folder '{}' does not exist (or is not a directory)", folder));
    std::map<std::int64_t, File> files;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file() || !name.ends_with(".sql")) continue;
        const std::size_t us = name.find('_');
        std::int64_t version = -1;
        if (us == std::string::npos || us == 0 ||
            std::from_chars(name.data(), name.data() + us, version).ptr != name.data() + us ||
            version < 0)
            throw Error(
                fmt::format("migration file '{}' in '{}': name it NNN_description.sql "
                            "(NNN a number giving the order)",
                            name, folder));
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        if (!in) throw Error(fmt::format("cannot read migration file '{}'", entry.path().string()));
        File f{version, name, text.str(), {}};
        f.checksum = checksum_of(f.sql);
        auto [it, added] = files.emplace(version, std::move(f));
        if (!added)
            throw Error(fmt::format("migration files '{}' and '{}' have the same number {}",
                                    it->second.name, name, version));
    }
    if (ec)
        throw Error(fmt::format("cannot list migrations folder '{}': {}", folder, ec.message()));
    std::vector<File> out;
    for (auto& [v, f] : files) out.push_back(std::move(f));
    return out;
}

std::string_view create_table_sql(std::string_view backend) {
    if (backend == "postgres")
        return "CREATE TABLE IF NOT EXISTS vela_migrations (version BIGINT PRIMARY KEY, name TEXT "
               "NOT NULL, checksum TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())";
    if (backend == "mysql")
        return "CREATE TABLE IF NOT EXISTS vela_migrations (version BIGINT PRIMARY KEY, name "
               "VARCHAR(255) NOT NULL, checksum VARCHAR(64) NOT NULL, applied_at DATETIME(6) NOT "
               "NULL DEFAULT CURRENT_TIMESTAMP(6))";
    return "CREATE TABLE IF NOT EXISTS vela_migrations (version INTEGER PRIMARY KEY, name TEXT "
           "NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT "
           "(strftime('%Y-%m-%d %H:%M:%f', 'now')))";
}

// Takes the migration lock for the rest of `tx` (PostgreSQL, MySQL; SQLite's BEGIN IMMEDIATE
// already holds the only writer).
Task<void> lock(Transaction& tx, std::string_view backend) {
    if (backend == "postgres") co_await tx.execute("SELECT pg_advisory_xact_lock($1)", kLockKey);
    if (backend == "mysql") {
        auto got = co_await tx.query_one<std::int64_t>("SELECT GET_LOCK('vela_migrations', 600)");
        if (!got || *got != 1)
            throw Error("migrations: another migrator held the lock vela_migrations for 600 s");
    }
}

void check_unchanged(const File& f, const std::string& recorded) {
    if (recorded != f.checksum)
        throw Error(
            fmt::format("migration '{}' was changed after it was applied (checksum {} "
                        "recorded, {} now): undo the edit and add a new migration instead",
                        f.name, recorded, f.checksum));
}

// Applies `f` unless another migrator did meanwhile; true when this call applied it.
Task<bool> apply(Database& db, const File& f) {
    const std::string_view backend = db.backend_name();
    return db.transaction([&f, backend](Transaction& tx) -> Task<bool> {
        co_await lock(tx, backend);
        auto done = co_await tx.query_one<std::string>(
            "SELECT checksum FROM vela_migrations WHERE version = $1", f.version);
        if (done) {
            check_unchanged(f, *done);
            co_return false;
        }
        co_await tx.run_script(f.sql);
        co_await tx.execute(
            "INSERT INTO vela_migrations (version, name, checksum) VALUES ($1, $2, $3)", f.version,
            f.name, f.checksum);
        co_return true;
    });
}

}  // namespace

Task<std::size_t> Database::migrate(std::string folder) {
    const std::vector<File> files = read_folder(folder);
    const std::string_view backend = backend_name();
    // The table itself, created under the lock so concurrent migrators do not race on it.
    co_await transaction([&](Transaction& tx) -> Task<void> {
        co_await lock(tx, backend);
        co_await tx.run_script(create_table_sql(backend));
    });
    std::map<std::int64_t, std::string> applied;
    for (Row r : co_await query("SELECT version, checksum FROM vela_migrations"))
        applied.emplace(r.get<std::int64_t>(0), r.get<std::string>(1));
    std::size_t count = 0;
    for (const File& f : files) {
        if (auto it = applied.find(f.version); it != applied.end()) {
            check_unchanged(f, it->second);
            continue;
        }
        bool did = false;
        try {
            did = co_await apply(*this, f);
        } catch (const Error& e) {
            if (std::string_view(e.what()).starts_with("migration '")) throw;
            throw_error(
                fmt::format("migration '{}' failed and was rolled back: {}", f.name, e.what()),
                e.sqlstate());
        }
        if (did) ++count;
    }
    co_return count;
}

}  // namespace vela::db
