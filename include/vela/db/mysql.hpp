#pragma once
// MySQL and MariaDB specifics of vela::db (docs/data.md, "MySQL and MariaDB").
//
//     vela::db::Database db("mysql://app:secret@127.0.0.1:3306/shop");  // or mariadb://
//     auto items = co_await db.query_as<Item>("SELECT id, name FROM items WHERE id > $1", 10);
//     vela::db::Result r = co_await db.query("INSERT INTO items (name) VALUES ($1)", "pen");
//     std::uint64_t id = r.last_insert_id();
//
// URLs: mysql://user:password@host:port/database (port 3306 by default; user and password
// %-encoded), with a Unix socket as ?socket=/run/mysqld/mysqld.sock or a %2F-encoded host
// (mysql://app@%2Frun%2Fmysqld%2Fmysqld.sock/shop); host `localhost` means the connector's
// default socket. Options: charset (utf8mb4 by default), ssl-mode (disabled, required,
// verify-identity), ssl-ca (a CA file for verify-identity). An unknown option or a malformed
// URL throws Error with one line.
//
// Connections: MariaDB Connector/C (libmariadb) in non-blocking mode, each driven by its
// loop's epoll: no statement blocks a loop thread. (The connector resolves a host name with
// getaddrinfo on the loop thread when it connects: give an IP address or a socket in the URL
// when the resolver may be slow.) A Database keeps one pool per loop
// (Options::pool_size each, opened as statements need them; reconnect_backoff after a
// failed attempt). The protocol runs one statement at a time per connection, so concurrent
// statements of a loop use several connections: size pool_size for the concurrency you want.
// A connection the server closes while idle (restart, wait_timeout, KILL) is dropped at once
// and its place opened again when a statement waits; one idle longer than health_check_after
// is pinged (at most connect_timeout) before use.
//
// Statements: $1, $2 ... as in the other backends (or ?), prepared once per connection and
// cached by their text (Options::statement_cache; Options::prepare = false closes each after
// use). Parameters bind as binary values (integers, doubles, strings, BLOBs, NULL, times as
// DATETIME(6) in UTC, JSON as its text). Each session uses utf8mb4, time_zone '+00:00' and
// CLIENT_FOUND_ROWS (affected() of an UPDATE counts the rows matched, as PostgreSQL does).
//
// Reading: integers (signed and unsigned; an unsigned BIGINT above INT64_MAX is a
// MappingError), FLOAT/DOUBLE as double, DECIMAL as exact text through std::string or as a
// double, DATETIME/TIMESTAMP/DATE as time points (UTC; zero dates are a MappingError),
// TINYINT(1)/BIT(1) as bool, BLOB/BINARY as Bytes, JSON as json::Value or Json<T>, NULL into
// std::optional.
//
// Errors map to the typed exceptions by server error code: 1062 duplicate key ->
// UniqueViolation, 1451/1452 -> ForeignKeyViolation, 1048/1364 -> NotNullViolation,
// 3819/4025 -> CheckViolation, 1213 deadlock -> DeadlockDetected (the server rolled the whole
// transaction back: retry it), 1205 lock wait timeout -> TimeoutError (only the statement was
// rolled back), syntax and unknown names -> StatementError, lost connections ->
// ConnectionError. Error::sqlstate() is MySQL's SQLSTATE.
//
// Query timeouts (Options::query_timeout): a statement still running is killed on the server
// (KILL QUERY on a side connection opened from a short-lived thread) and fails with TimeoutError;
// the connection is closed unless the KILL was confirmed before the statement ended. A server that
// does not answer within twice connect_timeout after that has the connection cut.
//
// Transactions run between START TRANSACTION and COMMIT/ROLLBACK on one connection (one
// dropped without either has its connection closed, which rolls it back). Unlike
// PostgreSQL, a failed statement does not abort the transaction (except a deadlock), and DDL
// (CREATE, ALTER, DROP) commits implicitly, so a migration with DDL is not atomic. Named locks
// (GET_LOCK) taken on a pooled connection are released before the pool hands it to anyone
// else.
//
// Lifetime: destroy the Database after its loops have stopped (or before they start), and
// never while a statement is in flight.
#include "vela/db/db.hpp"

namespace vela::db {

/// The pool statistics of a MySQL `db` on the calling loop (same as pool_stats(db)).
inline PoolStats mysql_pool_stats(Database& db) { return pool_stats(db); }

}  // namespace vela::db
