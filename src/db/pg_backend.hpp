#pragma once
// What features built on the PostgreSQL backend take from a Database (src/db/postgres.cpp):
// LISTEN/NOTIFY (pg_listen.cpp) opens connections of its own with the Database's parameters;
// COPY (pg_copy.cpp) borrows a connection of the calling loop's pool for itself alone.
#include <memory>

#include "pg_connection.hpp"
#include "vela/async/task.hpp"
#include "vela/db/db.hpp"

namespace vela::db::pg {

/// A connection of the calling loop's pool held by one user alone (as a transaction holds
/// one); it goes back to the pool when the Lease is destroyed on that loop.
struct Lease {
    /// The connection (usable when granted).
    std::shared_ptr<Connection> conn;
    /// Gives the connection back when the last copy goes.
    std::shared_ptr<void> hold;
};

/// Waits (at most Options::acquire_timeout) for an idle connection of `db`'s pool on the
/// calling loop. Throws Error when `db` is not PostgreSQL (`what` names the caller).
Task<Lease> lease(Database& db, const char* what);

/// The connection parameters of `db` (Error when it is not PostgreSQL; `what` names the
/// caller). Valid while `db` lives.
const ConnectParams& connect_params(Database& db, const char* what);

/// The options `db` was opened with (Error when it is not PostgreSQL).
const Options& options(Database& db, const char* what);

}  // namespace vela::db::pg
