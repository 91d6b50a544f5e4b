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
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/db/db.hpp"

namespace vela::db {

/// What the calling loop's PostgreSQL pool holds (see PoolStats in db.hpp).
using PgPoolStats = PoolStats;

/// The pool statistics of `db` on the calling loop (Error when `db` is not PostgreSQL or the
/// caller is on no running Loop).
PgPoolStats pg_pool_stats(Database& db);

// ---------------------------------------------------------------------------------------
// LISTEN/NOTIFY (docs/data.md, "Notifications")
//
//     auto sub = co_await vela::db::pg::listen(db, "orders", "users");
//     for (;;) {
//         try {
//             vela::db::pg::Notification n = co_await sub.next();
//             handle(n.channel, n.payload);
//         } catch (const vela::db::pg::NotificationsLost&) {
//             reload_everything();  // some were lost; the subscription goes on
//         }
//     }
//
// A Subscription has a connection of its own (not one of the pool's), made on the loop that
// called listen(); next() must be awaited on that loop. Notifications that arrive while
// nobody awaits are queued, up to ListenOptions::max_queued; past that bound they are dropped
// and next() reports the loss (NotificationsLost) where they would have been. A lost
// connection is made again in the background (Options::reconnect_backoff doubling up to
// reconnect_backoff_max) and the channels are LISTENed again; notifications sent meanwhile
// are lost, so once listening again next() throws NotificationsLost (after the ones queued
// before the loss): state re-read then misses nothing sent later. Destroying the
// Subscription closes its connection, which ends the LISTENs.

namespace pg {

/// One notification: NOTIFY channel, 'payload' or pg_notify(channel, payload).
struct Notification {
    /// The channel it was sent on.
    std::string channel;
    /// The payload ("" when none was given).
    std::string payload;
    /// The process ID of the server backend of the session that sent it.
    int sender_pid = 0;
};

/// Thrown by Subscription::next() where notifications were lost: the queue was full
/// (dropped() says how many) or the connection was lost and made again (dropped() is 0:
/// unknown). The subscription goes on: catch it and call next() again.
class NotificationsLost : public Error {
  public:
    /// The loss described by `message`; `dropped` notifications (0: unknown), `reconnected`
    /// when a lost connection was the cause.
    NotificationsLost(const std::string& message, std::size_t dropped, bool reconnected)
        : Error(message), dropped_(dropped), reconnected_(reconnected) {}
    /// How many notifications were dropped for a full queue (0 when not known).
    std::size_t dropped() const noexcept { return dropped_; }
    /// True when the connection was lost (and is listening again).
    bool reconnected() const noexcept { return reconnected_; }

  private:
    std::size_t dropped_;
    bool reconnected_;
};

/// How a Subscription buffers.
struct ListenOptions {
    /// Notifications queued while nobody awaits next(); more are dropped (NotificationsLost).
    std::size_t max_queued = 10000;
};

/// What a Subscription shares with its connection (private: src/db/pg_listen.cpp).
class ListenState;
class Subscription;

/// Opens a connection of its own on the calling loop and LISTENs on `channels` (names are
/// quoted as identifiers: any text of 1 to 63 bytes without NUL); returns once listening.
/// Throws ConnectionError when the server cannot be reached, Error for a bad channel name
/// or a database that is not PostgreSQL.
Task<Subscription> listen(Database& db, std::vector<std::string> channels,
                          ListenOptions options = {});

/// listen() on the channels given, e.g. listen(db, "orders", "users") (GCC 12 cannot compile a
/// braced list inside a co_await expression, so listen(db, {"a", "b"}) fails to build there).
template <class... S>
requires(sizeof...(S) > 0 && (std::is_convertible_v<const S&, std::string_view> &&
                              ...)) Task<Subscription> listen(Database& db, const S&... channels) {
    std::vector<std::string> names;
    names.reserve(sizeof...(S));
    (names.emplace_back(std::string_view(channels)), ...);
    return listen(db, std::move(names));
}

/// A LISTEN on a connection of its own (see above). Move-only; destroying it stops listening.
class Subscription {
  public:
    /// A closed subscription.
    Subscription() noexcept;
    /// Takes over `o` (which becomes closed).
    Subscription(Subscription&& o) noexcept;
    /// Closes this one, then takes over `o`.
    Subscription& operator=(Subscription&& o) noexcept;
    /// Closes it (see close()).
    ~Subscription();

    /// The next notification, waiting for one. Throws NotificationsLost where some were lost
    /// (then call it again), Error after close() or when awaited on another loop or by two
    /// coroutines at once.
    Task<Notification> next();
    /// Starts listening on `channel` too (when connected; otherwise it is LISTENed on
    /// reconnecting). Throws Error for an empty name, a NUL or more than 63 bytes.
    Task<void> listen(std::string channel);
    /// Stops listening on `channel` (notifications of it already queued stay queued).
    Task<void> unlisten(std::string channel);
    /// The channels listened on.
    std::vector<std::string> channels() const;
    /// Notifications queued and not yet taken by next().
    std::size_t queued() const noexcept;
    /// True while connected and listening (false while reconnecting and after close()).
    bool listening() const noexcept;
    /// The server process ID of the current connection (0 when there is none).
    int backend_pid() const noexcept;
    /// Closes the connection (ending its LISTENs); a next() waiting fails with Error. Safe
    /// from any thread: off its loop, the closing is posted to it.
    void close() noexcept;
    /// True until close().
    bool is_open() const noexcept;

  private:
    friend Task<Subscription> listen(Database&, std::vector<std::string>, ListenOptions);
    explicit Subscription(std::shared_ptr<ListenState> s) noexcept;
    std::shared_ptr<ListenState> st_;
};

/// `name` quoted as an SQL identifier ("a""b" for a"b), for channel and table names.
std::string quote_identifier(std::string_view name);

// ---------------------------------------------------------------------------------------
// COPY (docs/data.md, "COPY")
//
//     std::vector<std::string> rows = {"1,x\n2,y\n"};  // named: GCC 12 rejects a braced
//                                                     // list inside co_await
//     std::uint64_t n = co_await pg::copy_in(db, "COPY t (a, b) FROM STDIN (FORMAT csv)",
//                                            std::move(rows));
//     std::string csv = co_await pg::copy_out(db, "COPY t TO STDOUT (FORMAT csv)");
//
// The statement runs on a connection of the calling loop's pool taken for itself alone (as
// a transaction takes one), without blocking the loop: data goes out as the socket takes it
// and comes in as it arrives. `sql` is one COPY statement (simple query protocol, no
// parameters). A bad row fails the COPY with the typed Error of its SQLSTATE (e.g. 22P02
// invalid text, 23505 UniqueViolation) once all the data was sent (the server discards what
// follows the bad row); nothing of it is kept and the connection stays in the pool. A COPY
// abandoned midway (its coroutine destroyed, a producer or consumer that throws) discards its
// connection.

/// Produces COPY FROM STDIN data: the next chunk (any split, rows may straddle chunks), or
/// nullopt at the end. An exception aborts the COPY (nothing is kept) and is rethrown.
using CopySource = std::function<Task<std::optional<std::string>>()>;
/// Consumes COPY TO STDOUT data: called with chunks of whole rows (about 64 KiB), each valid
/// during the call; the next chunk is read once its task ends. An exception stops the COPY.
using CopySink = std::function<Task<void>(std::string_view)>;

/// Runs `sql` (COPY ... FROM STDIN) sending `chunks` in order; returns the rows copied.
Task<std::uint64_t> copy_in(Database& db, std::string sql, std::vector<std::string> chunks);
/// Runs `sql` (COPY ... FROM STDIN) sending what `source` produces; returns the rows copied.
Task<std::uint64_t> copy_in(Database& db, std::string sql, CopySource source);
/// Runs `sql` (COPY ... TO STDOUT) and returns all its data.
Task<std::string> copy_out(Database& db, std::string sql);
/// Runs `sql` (COPY ... TO STDOUT) handing its data to `sink` chunk by chunk; returns the
/// rows copied.
Task<std::uint64_t> copy_out(Database& db, std::string sql, CopySink sink);

}  // namespace pg

}  // namespace vela::db
