#pragma once
// Reports a PostgreSQL (or MySQL: db_pool_source) pool in vela::metrics
// (vela_db_pool_*{pool="name"}):
//
//     auto db = vela::db::Database::open("postgres://...");
//     vela::MetricsOptions m;
//     m.pools.push_back(vela::pg_pool_source("main", db));
//     vela::metrics(app, std::move(m));
//
// Header-only, so vela's web library does not depend on its database library; the program
// links both anyway.

#include <optional>
#include <string>
#include <utility>

#include "vela/db/postgres.hpp"
#include "vela/ops/metrics.hpp"

namespace vela {

/// A PoolSource reading `db`'s pool on each loop (db::pg_pool_stats); `db` must outlive the
/// app's run.
inline PoolSource pg_pool_source(std::string name, db::Database& db) {
    return PoolSource{std::move(name), [&db]() -> std::optional<PoolSample> {
                          const db::PgPoolStats s = db::pg_pool_stats(db);
                          return PoolSample{s.connections, s.busy, s.waiting};
                      }};
}

/// A PoolSource reading the pool of any pooled `db` (PostgreSQL, MySQL) on each loop
/// (db::pool_stats); `db` must outlive the app's run.
inline PoolSource db_pool_source(std::string name, db::Database& db) {
    return PoolSource{std::move(name), [&db]() -> std::optional<PoolSample> {
                          const db::PoolStats s = db::pool_stats(db);
                          return PoolSample{s.connections, s.busy, s.waiting};
                      }};
}

}  // namespace vela
