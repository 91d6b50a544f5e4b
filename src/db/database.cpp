// The Database facade: the URL picks the backend.
#include <fmt/format.h>

#include "vela/db/db.hpp"

namespace vela::db {

Database::Database() : Database("sqlite://data/vela.db") {}

Database::Database(std::string_view url, Options options) {
    if (url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        backend_ = make_postgres(url, options);
    } else if (url.starts_with("mysql://") || url.starts_with("mariadb://")) {
        backend_ = make_mysql(url, options);
    } else if (url.starts_with("sqlite:")) {
        backend_ = make_sqlite(url, options);
    } else {
        throw Error(
            fmt::format("database URL '{}': use sqlite:///path/file.db, sqlite://relative/file.db, "
                        "sqlite::memory:, postgres://user@host:port/db or "
                        "mysql://user:password@host:port/db",
                        url.substr(0, url.find(':'))));
    }
}

Database::~Database() = default;

std::string_view Database::backend_name() const noexcept { return backend_->name(); }

Task<Result> Database::run(std::string_view sql, std::vector<Param> params) {
    return backend_->run(sql, std::move(params));
}

Task<void> Database::run_script(std::string_view sql) { return backend_->run_script(sql); }

Task<std::unique_ptr<Transaction>> Database::begin() { return backend_->begin(); }

PoolStats pool_stats(Database& db) {
    std::optional<PoolStats> s = db.backend().pool_stats();
    if (!s)
        throw Error(
            fmt::format("pool_stats: the {} backend has no connection pool", db.backend_name()));
    return *s;
}

}  // namespace vela::db
