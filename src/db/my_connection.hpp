#pragma once
// One MariaDB Connector/C connection driven by a vela::Loop, without blocking it.
//
// The connector's non-blocking API (MYSQL_OPT_NONBLOCK) runs each call on a small stack of
// its own: `mysql_..._start` returns the events it waits for (MYSQL_WAIT_READ, _WRITE,
// _TIMEOUT) when the socket would block, and `mysql_..._cont` goes on once they happened.
// A Connection awaits those events in a coroutine (IoWait below): its socket is one
// edge-triggered `watch` registration for its whole life, and the connector yields only after
// a read or write found the socket empty or full, so the next edge is the one it waits for.
//
// Threading: a Connection belongs to the loop that made it and runs one operation at a time
// (the MySQL protocol has no pipelining), on that loop's thread only. The pool (mysql.cpp)
// hands it to one statement or transaction at a time.
//
// Query timeouts: a statement still running after its timeout is killed on the server
// (`KILL QUERY <connection id>` sent over a side connection from a short-lived thread, the
// only work done off the loop) and fails with TimeoutError; if the server does not answer even
// then, the connection is cut.
#include <mysql.h>

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "my_text.hpp"
#include "vela/async/task.hpp"
#include "vela/db/db.hpp"
#include "vela/reactor/loop.hpp"

namespace vela::db::my {

/// Throws the Error subclass for the server or client error `code` (mysql_errno) with
/// `sqlstate` (ConnectionError for lost connections, UniqueViolation for 1062, ...).
[[noreturn]] void throw_mysql_error(unsigned code, std::string_view sqlstate,
                                    const std::string& message);

/// One connection on a loop (see the top of this file).
class Connection : public IoSink, public std::enable_shared_from_this<Connection> {
  public:
    /// Where the connection is.
    enum class State : std::uint8_t { idle, connecting, ready, closed };

    /// A connection on `loop` with `params` (which must outlive it).
    Connection(Loop& loop, const ConnectParams& params);
    /// Closes the connection.
    ~Connection() override;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// Connects (TCP or socket, authentication, utf8mb4, UTC session time zone). Throws
    /// ConnectionError (one line) when it fails or takes longer than connect_timeout.
    Task<void> connect();
    /// Runs one statement: prepared (once per connection and SQL text when `prepare`, else
    /// prepared and closed) with `params` bound to its $1, $2 ... Throws the typed Error.
    Task<Result> execute(std::string_view sql, std::span<const Param> params, bool prepare);
    /// Runs `sql` (one or more statements separated by semicolons, no parameters) with the
    /// text protocol; returns the last result set (or the last statement's count).
    Task<Result> script(std::string_view sql);
    /// Checks the connection with a round trip (COM_PING); false (and closed) when it fails.
    Task<bool> ping();

    /// The state.
    State state() const noexcept { return state_; }
    /// True when an operation may start (ready, none running).
    bool usable() const noexcept { return state_ == State::ready && !busy_; }
    /// True while an operation runs.
    bool busy() const noexcept { return busy_; }
    /// When the connection was established (steady clock).
    std::chrono::steady_clock::time_point born() const noexcept { return born_; }
    /// When the last operation ended.
    std::chrono::steady_clock::time_point last_used() const noexcept { return last_used_; }
    /// The server's id of this connection (for KILL).
    unsigned long thread_id() const noexcept { return thread_id_; }
    /// True when a statement may have taken named locks (GET_LOCK) that are still held.
    bool may_hold_locks() const noexcept { return named_locks_; }
    /// Forgets the named locks (after RELEASE_ALL_LOCKS ran).
    void locks_released() noexcept { named_locks_ = false; }
    /// True when a KILL QUERY sent for this connection has not been confirmed yet: it must not
    /// run another statement (the KILL could hit it).
    bool kill_pending() const noexcept { return kill_pending_ > 0; }

    /// Closes the connection. An operation under way is abandoned (its coroutine is gone):
    /// the connector is cancelled and drained first.
    void close() noexcept { close_on_loop(true); }
    /// Closes without touching the loop (stopped or gone).
    void close_off_loop() noexcept { close_on_loop(false); }

    /// IoSink: readable edge (or hang-up).
    void on_ready() override;
    /// IoSink: writable edge.
    void on_write_ready() override;

  private:
    // A connector continuation: calls the `_cont` of the operation under way with the events
    // that happened and returns the next wait status (0: done).
    using Cont = int (*)(Connection&, int);
    // Awaits the events of a connector status (see the top), then continues the operation
    // with them: `st = co_await step(st, cont)`. Never ready at once: the connector yields only
    // when the socket would block.
    class Step {
      public:
        Step(Connection& c, int status, Cont fn) noexcept : c_(c), status_(status), fn_(fn) {}
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> h);
        int await_resume();

      private:
        Connection& c_;
        int status_;
        Cont fn_;
    };

    struct Prepared {
        std::string sql;
        MYSQL_STMT* stmt = nullptr;
        std::vector<std::uint16_t> order;  // ? -> parameter index
        unsigned fields = 0;
    };
    // Guards one operation: marks the connection busy, arms the query timeout, and on the
    // way out records the time (and closes a connection left in an unknown state).
    class Running;

    Step step(int status, Cont fn) noexcept { return Step(*this, status, fn); }
    void watch_socket();
    void wake(int events);
    void keep_through_callback(std::shared_ptr<Connection> self);
    void arm_io_timer();
    void on_query_timeout();
    void abort_io();
    void begin_op(bool timed);
    void end_op() noexcept;
    void close_on_loop(bool on_loop) noexcept;
    static void kill_query(ConnectParams p, unsigned long id, std::weak_ptr<Connection> w,
                           LoopRef loop);
    Task<Prepared*> prepare(std::string_view sql);
    Task<void> close_statement(MYSQL_STMT* stmt);
    Task<Result> fetch(MYSQL_STMT* stmt, MYSQL_RES* meta);
    Task<Result> text_results();
    [[noreturn]] void fail(MYSQL_STMT* stmt);

    bool on_own_loop() const;

    Loop& loop_;
    LoopRef ref_;  // tells this loop from a later one at the same address
    const ConnectParams& params_;
    MYSQL* my_ = nullptr;
    State state_ = State::idle;
    IoHandle handle_;
    std::coroutine_handle<> waiter_;
    int want_ = 0;             // events waited for
    int got_ = 0;              // events that happened
    Cont drain_ = nullptr;     // the continuation of the operation under way
    MYSQL* ret_my_ = nullptr;  // the connector's results, written by _start and _cont
    int ret_int_ = 0;
    my_bool ret_bool_ = 0;
    MYSQL_RES* ret_res_ = nullptr;
    MYSQL_STMT* cur_ = nullptr;  // the statement of the operation under way
    std::uint64_t io_timer_ = 0;
    std::uint64_t query_timer_ = 0;
    std::uint64_t stop_timer_ = 0;
    bool busy_ = false;
    bool timed_out_ = false;  // the running statement passed its timeout
    bool named_locks_ = false;
    int kill_pending_ = 0;
    unsigned long thread_id_ = 0;
    std::list<Prepared> lru_;  // most recent at the front
    std::unordered_map<std::string_view, std::list<Prepared>::iterator> cache_;
    std::chrono::steady_clock::time_point born_{}, last_used_{};
};

}  // namespace vela::db::my
