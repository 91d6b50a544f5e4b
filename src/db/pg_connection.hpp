#pragma once
// One libpq connection driven by a vela::Loop, without blocking it.
//
// Threading: a Connection belongs to the loop that made it and is used on that loop's thread
// only (the pool in postgres.cpp, or a dedicated user such as LISTEN/NOTIFY). Its socket is one
// edge-triggered `watch` registration for its whole life: connecting (PQconnectPoll), writing
// (PQflush on writable edges) and reading (PQconsumeInput, PQgetResult on readable edges) all
// run from those edges, so no epoll_ctl happens per statement.
//
// Statements: the connection is in libpq pipeline mode. submit() appends a statement (prepared
// once per connection and SQL text when asked, see the statement cache) and its own Sync, so an
// error aborts that statement only and each statement commits on its own outside BEGIN. The
// bytes are written once per loop iteration (Loop::defer), so statements submitted together
// leave in one write and share a round trip. Results come back in order and complete the Ops
// first in, first out.
//
// Completion: an Op is completed exactly once through Op::done(), after its result (or error)
// has been stored in it. An Op whose waiter went away calls abandon(): it is then never
// touched again, its result is dropped and, when it was running, the query is cancelled.
#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vela/db/db.hpp"
#include "vela/reactor/loop.hpp"

namespace vela::db::pg {

class Connection;

/// A statement's outcome, filled in by the connection before Op::done().
struct Outcome {
    /// How the statement ended.
    enum class Kind : std::uint8_t {
        pending,
        ok,
        server_error,
        connection,
        timeout
    } kind = Kind::pending;
    /// ok: the result (owned by the Op's user once done).
    PGresult* result = nullptr;
    /// Errors: the message (server errors: primary message, detail and hint).
    std::string message;
    /// server_error: the SQLSTATE.
    std::string sqlstate;
};

/// One statement submitted to a Connection (the awaiting side derives from it).
class Op {
  public:
    /// Runs when the outcome is set (exactly once, unless abandoned first).
    virtual void done() = 0;
    /// The result or error.
    Outcome outcome;
    /// Drops the interest in the result: never completed afterwards; a running query is
    /// cancelled.
    void abandon() noexcept;
    /// True while submitted and not completed.
    bool in_flight() const noexcept { return conn_ != nullptr; }

  protected:
    /// Not deleted through this type.
    ~Op() = default;

  private:
    friend class Connection;
    Connection* conn_ = nullptr;
    std::uint64_t seq_ = 0;  // the entry number in its connection
};

/// Connection parameters: libpq keywords and values (from PQconninfoParse), plus timeouts.
struct ConnectParams {
    /// Keywords (parallel to values).
    std::vector<std::string> keys;
    /// Values.
    std::vector<std::string> values;
    /// Connecting gives up after this.
    std::chrono::milliseconds connect_timeout{5000};
    /// A statement not answered by then fails with TimeoutError and is cancelled (0: never).
    std::chrono::milliseconds query_timeout{0};
    /// Prepared statements kept (0: none are prepared).
    std::size_t statement_cache = 256;
};

/// Parses a postgres:// URL (or key=value string) into libpq keywords; adds UTC time zone,
/// UTF-8 and the application name. Throws Error with one line on a malformed URL.
ConnectParams parse_url(std::string_view url);

/// What a Connection reports to its owner (called on the loop thread).
class ConnectionOwner {
  public:
    /// Connected and ready for statements.
    virtual void on_connected(Connection& c) = 0;
    /// Connecting failed or the connection was lost (`why`: one line). Ops in flight have
    /// been failed with ConnectionError; the connection is closed.
    virtual void on_closed(Connection& c, const std::string& why) = 0;
    /// The last op in flight completed.
    virtual void on_idle(Connection& c) { (void)c; }
    /// A NOTIFY arrived (LISTEN); `n` is freed after the call.
    virtual void on_notify(Connection& c, const PGnotify& n) {
        (void)c;
        (void)n;
    }

  protected:
    ~ConnectionOwner() = default;
};

/// A user that drives the libpq connection itself for a while (COPY), outside the pipeline:
/// it gets the socket's edges until Connection::end_direct().
class DirectUser {
  public:
    /// A readable (`readable` true) or writable edge of the socket.
    virtual void on_edge(bool readable) = 0;
    /// The connection was closed (`why`: one line); the PGconn is gone. Called last in
    /// Connection::close(), after the owner heard on_closed.
    virtual void on_lost(const std::string& why) = 0;

  protected:
    ~DirectUser() = default;
};

/// One libpq connection on a loop (see the top of this file).
class Connection : public IoSink, public std::enable_shared_from_this<Connection> {
  public:
    /// Where the connection is.
    enum class State : std::uint8_t { idle, connecting, ready, closed };

    /// A connection on `loop` reporting to `owner` (which must outlive it or call detach()).
    Connection(Loop& loop, const ConnectParams& params, ConnectionOwner* owner);
    /// Closes the connection (see close()).
    ~Connection() override;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// Starts connecting; on_connected or on_closed follows (never from inside this call).
    void connect();
    /// The state.
    State state() const noexcept { return state_; }
    /// True when statements can be submitted (ready and no send has failed).
    bool usable() const noexcept {
        return state_ == State::ready && !broken_ && !script_ && !direct_;
    }
    /// Statements submitted and not completed (incl. abandoned ones still running).
    std::size_t outstanding() const noexcept { return entries_.size(); }
    /// When the connection was established (steady clock).
    std::chrono::steady_clock::time_point born() const noexcept { return born_; }
    /// When the last statement completed or was submitted.
    std::chrono::steady_clock::time_point last_used() const noexcept { return last_used_; }
    /// The loop it runs on.
    Loop& loop() const noexcept { return loop_; }
    /// The libpq connection (for features built on top, e.g. LISTEN/NOTIFY).
    PGconn* native() const noexcept { return conn_; }

    /// Appends a statement with `params` for `op` (prepared and cached when `prepare`).
    /// False when the connection is not usable: `op` is untouched then.
    bool submit(Op& op, std::string_view sql, std::span<const Param> params, bool prepare);
    /// Appends a statement nobody waits for (ROLLBACK of an abandoned transaction).
    bool submit_detached(std::string_view sql);
    /// Runs `sql` (several statements, no parameters) with the simple query protocol. Only
    /// when nothing is outstanding; false otherwise or when the connection is not usable.
    bool submit_script(Op& op, std::string_view sql);

    /// Leaves pipeline mode and hands the socket's edges to `u` until end_direct(). Only when
    /// usable and nothing is outstanding; false otherwise.
    bool begin_direct(DirectUser& u);
    /// Gives the socket back to the pipeline (the direct user must have left libpq idle);
    /// closes the connection when libpq refuses to re-enter pipeline mode.
    void end_direct();

    /// Closes the socket and fails every op in flight with ConnectionError (`why`). Also
    /// called by the loop when the server goes away. The owner hears on_closed unless it
    /// detached.
    void close(const std::string& why);
    /// Closes without touching the loop (the loop is stopped or gone): the owner is not told,
    /// ops in flight are dropped.
    void close_off_loop() noexcept;
    /// The owner stops hearing from this connection.
    void detach() noexcept { owner_ = nullptr; }

    /// IoSink: readable edge (or hang-up).
    void on_ready() override;
    /// IoSink: writable edge.
    void on_write_ready() override;

  private:
    friend class Op;
    struct Entry {
        Op* op = nullptr;            // null once abandoned, or for detached statements
        std::uint64_t seq = 0;       // position, for Op::abandon
        bool script = false;         // simple protocol: results until NULL, no Sync
        bool cancelled = false;      // timed out or abandoned: PQcancel sent
        std::string prepared;        // cache key of the statement this entry prepared
        PGresult* result = nullptr;  // last result of the statement
        PGresult* error = nullptr;   // first error
        std::chrono::steady_clock::time_point deadline{};  // query timeout (max: none)
    };
    // Prepared statements by SQL text and parameter types, least recently used first.
    struct Prepared {
        std::string key;   // sql + '\0' + type letters
        std::string name;  // "v<n>"
        bool confirmed = false;
    };

    void drive_connect();
    void connected();
    void watch_socket();
    void schedule_flush();
    void flush();
    void read_results();
    void finish_front();
    void absorb(Entry& e, PGresult* r);
    void fail_all(Outcome::Kind kind, const std::string& why);
    void arm_timeout();
    void check_timeouts();
    void cancel_running();
    void abandon(Op& op) noexcept;
    Entry* find(std::uint64_t seq) noexcept;
    const Prepared* prepared_for(std::string_view key, bool& fresh, std::string_view sql,
                                 std::span<const Oid> types);
    bool send_failed();
    void deliver_notifies();

    Loop& loop_;
    const ConnectParams& params_;
    ConnectionOwner* owner_;
    PGconn* conn_ = nullptr;
    State state_ = State::idle;
    IoHandle handle_;
    std::uint64_t connect_timer_ = 0;
    bool flush_scheduled_ = false;
    bool want_write_ = false;
    bool in_read_ = false;
    bool broken_ = false;  // a send failed: closing from the loop
    bool script_ = false;  // a script runs (out of pipeline mode)
    bool timer_armed_ = false;
    DirectUser* direct_ = nullptr;  // begin_direct() .. end_direct()
    std::uint64_t timeout_timer_ = 0;
    std::deque<Entry> entries_;
    std::uint64_t next_seq_ = 1;
    std::list<Prepared> lru_;  // most recent at the front
    std::unordered_map<std::string_view, std::list<Prepared>::iterator> cache_;
    std::uint64_t next_name_ = 1;
    std::chrono::steady_clock::time_point born_{}, last_used_{};
};

/// The first line of a libpq message `m`, without the trailing newline ("connection lost"
/// when empty).
std::string one_line(const char* m);

/// A server error's message: the primary text, then detail and hint when present.
std::string server_message(const PGresult* r);

/// True when `fd` is ready for `events` (POLLIN, POLLOUT) now, or hung up: with edge-triggered
/// readiness an edge may have passed while libpq left bytes unread.
bool ready_now(int fd, short events);

/// Throws MappingError for parameters PostgreSQL cannot take (NUL in text, times before
/// year 1, too many); submit() expects checked parameters.
void check_params(std::span<const Param> params);

/// Builds the error for `o` (ConnectionError, TimeoutError, or by SQLSTATE) and throws it.
[[noreturn]] void throw_outcome(const Outcome& o);

}  // namespace vela::db::pg
