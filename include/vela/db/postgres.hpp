#pragma once
// PostgreSQL specifics of vela::db (docs/data.md, "PostgreSQL").
//
// A Database opened with a postgres:// URL keeps one pool of connections per vela::Loop
// (Options::pool_size each, made when the loop first needs them). Statements issued on a loop
// while others are in flight are pipelined on its connections (libpq pipeline mode, each with
// its own Sync: an error fails its own statement only), and the bytes leave once per loop
// iteration, so `co_await vela::when_all(...)` of 20 queries costs about one round trip.
//
// Lifetime: destroy the Database after its loops have stopped (or before they start), and
// never while a query is in flight; it then closes its connections without touching loops.
#include <cstddef>

#include "vela/db/db.hpp"

namespace vela::db {

/// What the calling loop's PostgreSQL pool holds (for monitoring and tests).
struct PgPoolStats {
    /// Connections open or being opened.
    std::size_t connections = 0;
    /// Of those, being opened.
    std::size_t connecting = 0;
    /// Held by a transaction (or a script).
    std::size_t reserved = 0;
    /// Statements in flight on the pool's connections.
    std::size_t in_flight = 0;
    /// Statements and transactions waiting for a connection.
    std::size_t waiting = 0;
    /// Loops that have a pool in this Database.
    std::size_t loops = 0;
};

/// The pool statistics of `db` on the calling loop (Error when `db` is not PostgreSQL or the
/// caller is on no running Loop).
PgPoolStats pg_pool_stats(Database& db);

}  // namespace vela::db
