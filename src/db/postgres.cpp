// The PostgreSQL backend of vela::db: a pool of pipelined libpq connections per loop.
//
// Threads: the backend is shared by every loop; each loop gets its own Pool the first time
// it runs a statement (found under a mutex once, then through a thread-local cache), and a
// Pool and its connections are only touched on their loop's thread. Statements go to the
// pool's least loaded connection, appended to its pipeline; a statement that finds no usable
// connection (all held by transactions, or still connecting) waits in the pool's queue for at
// most Options::acquire_timeout. Transactions and scripts take a connection for themselves.
#include "vela/db/postgres.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <coroutine>
#include <mutex>

#include "loop_pools.hpp"
#include "pg_backend.hpp"
#include "pg_connection.hpp"
#include "pg_result.hpp"

namespace vela::db {
namespace pg {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class Pool;

// Something in a pool's queue, waiting for a connection.
class Waiter {
  public:
    // Tries to get a connection now; true when it did (the pool then unqueues it).
    virtual bool place(Pool& pool) = 0;
    // Runs after a successful place() once the pool is consistent again (may resume).
    virtual void placed() {}
    // Gives up with an error (acquire timeout, the server cannot be reached); may resume.
    virtual void fail(Outcome::Kind kind, std::string message) = 0;

    Waiter* prev = nullptr;
    Waiter* next = nullptr;
    bool queued = false;
    bool exclusive = false;
    std::uint64_t timer = 0;

  protected:
    ~Waiter() = default;
};

class CheckOp;

// One loop's connections and queue (see the top of the file).
class Pool final : public ConnectionOwner, public std::enable_shared_from_this<Pool> {
  public:
    enum class Mode : std::uint8_t { shared, draining, reserved, checking, retiring };
    struct Member {
        std::shared_ptr<Connection> conn;
        Mode mode = Mode::shared;
        std::unique_ptr<CheckOp> check;
    };

    Pool(const ConnectParams& params, const Options& opts, Loop& loop)
        : loop(loop), ref(loop.ref()), params(params), opts(opts) {}
    ~Pool();

    Connection* best_shared();
    std::shared_ptr<Connection> take_idle();
    bool can_grow() const noexcept { return members_.size() < opts.pool_size; }
    void enqueue(Waiter& w);
    void unqueue(Waiter& w) noexcept;
    void release(const std::shared_ptr<Connection>& c);
    void check_done(Connection& c, bool ok);
    bool on_own_loop() const;
    PgPoolStats stats() const;

    void on_connected(Connection& c) override;
    void on_closed(Connection& c, const std::string& why) override;
    void on_idle(Connection& c) override;

    // The periodic sweep of idle, old and closed connections (detail::arm_sweep).
    void sweep();
    bool sweep_armed = false;

    Loop& loop;
    LoopRef ref;
    const ConnectParams& params;
    const Options& opts;

  private:
    Member* member(const Connection& c);
    bool needs_check(const Member& m, Clock::time_point now) const;
    void start_check(Member& m);
    void serve();
    void maybe_connect();
    void fail_waiters(Outcome::Kind kind, const std::string& why);
    std::size_t connecting() const;

    std::vector<Member> members_;
    Waiter* head_ = nullptr;
    Waiter* tail_ = nullptr;
    std::size_t waiting_ = 0;
    std::size_t exclusive_waiting_ = 0;
    milliseconds backoff_{0};
    Clock::time_point next_attempt_{};
    bool retry_armed_ = false;
    std::string last_error_;
};

// The trivial query that checks a connection idle for long before it is used again.
class CheckOp final : public Op {
  public:
    CheckOp(Pool& p, Connection& c) : pool_(p.weak_from_this()), conn_(c) {}
    ~CheckOp() {
        if (in_flight()) abandon();
        if (outcome.result) PQclear(outcome.result);
    }
    void done() override {
        if (outcome.result) PQclear(outcome.result), outcome.result = nullptr;
        if (auto p = pool_.lock()) p->check_done(conn_, outcome.kind == Outcome::Kind::ok);
    }

  private:
    std::weak_ptr<Pool> pool_;
    Connection& conn_;
};

// ---------------------------------------------------------------------------------------
// Awaiters

// A statement (or script) awaited by a coroutine: placed on a pool connection, queued for
// one, or run on a transaction's connection.
class Statement final : public Op, public Waiter {
  public:
    Statement(Pool* pool, std::shared_ptr<Connection> fixed, std::string_view sql,
              std::span<const Param> params, bool prepare, bool script = false)
        : pool_(pool),
          fixed_(std::move(fixed)),
          sql_(sql),
          params_(params),
          prepare_(prepare),
          script_(script) {}
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    ~Statement() {
        // The awaiting coroutine was destroyed while waiting: forget this statement.
        if (in_flight()) abandon();
        if (queued) pool_->unqueue(*this);
        if (outcome.result) PQclear(outcome.result);
    }

    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
        handle_ = h;
        suspending_ = true;
        if (fixed_) {
            if (!submit(*fixed_))
                set_failure(Outcome::Kind::connection,
                            "the transaction's PostgreSQL connection is closed");
        } else if (!place(*pool_)) {
            pool_->enqueue(*this);
        }
        suspending_ = false;
        return !finished_;
    }
    Result await_resume() {
        if (outcome.kind != Outcome::Kind::ok) throw_outcome(outcome);
        return Result(std::make_shared<PgResultData>(std::exchange(outcome.result, nullptr)));
    }

    void done() override { finish(); }
    bool place(Pool& pool) override {
        Connection* c = pool.best_shared();
        // All busy while the pool may grow: wait for a new connection rather than queue
        // behind statements that may be slow (head-of-line blocking).
        if (!c || (c->outstanding() > 0 && pool.can_grow())) return false;
        return submit(*c);
    }
    void fail(Outcome::Kind kind, std::string message) override {
        set_failure(kind, std::move(message));
    }

  private:
    bool submit(Connection& c) {
        return script_ ? c.submit_script(*this, sql_) : c.submit(*this, sql_, params_, prepare_);
    }
    void set_failure(Outcome::Kind kind, std::string message) {
        outcome.kind = kind;
        outcome.message = std::move(message);
        finish();
    }
    void finish() {
        finished_ = true;
        if (!suspending_) handle_.resume();  // may destroy *this
    }

    Pool* pool_;
    std::shared_ptr<Connection> fixed_;
    std::string_view sql_;
    std::span<const Param> params_;
    bool prepare_;
    bool script_;
    bool suspending_ = false;
    bool finished_ = false;
    std::coroutine_handle<> handle_;
};

// Waits for a connection of its own (transactions, scripts).
class Acquire final : public Waiter {
  public:
    explicit Acquire(Pool& pool) : pool_(pool) { exclusive = true; }
    Acquire(const Acquire&) = delete;
    Acquire& operator=(const Acquire&) = delete;
    ~Acquire() {
        if (queued) pool_.unqueue(*this);
        if (got_ && !taken_) pool_.release(got_);  // abandoned after it was granted
    }

    bool await_ready() {
        got_ = pool_.take_idle();
        return got_ != nullptr;
    }
    void await_suspend(std::coroutine_handle<> h) {
        handle_ = h;
        pool_.enqueue(*this);
    }
    std::shared_ptr<Connection> await_resume() {
        if (!got_) throw_outcome(failure_);
        taken_ = true;
        return got_;
    }

    bool place(Pool& pool) override { return (got_ = pool.take_idle()) != nullptr; }
    void placed() override { handle_.resume(); }
    void fail(Outcome::Kind kind, std::string message) override {
        failure_.kind = kind;
        failure_.message = std::move(message);
        handle_.resume();
    }

  private:
    Pool& pool_;
    std::shared_ptr<Connection> got_;
    bool taken_ = false;
    Outcome failure_;
    std::coroutine_handle<> handle_;
};

// Gives a connection held for a script back to its pool, however the script ends.
struct Hold {
    std::weak_ptr<Pool> pool;
    std::shared_ptr<Connection> conn;
    ~Hold() {
        if (auto p = pool.lock(); p && p->on_own_loop()) p->release(conn);
    }
};

// ---------------------------------------------------------------------------------------
// Pool

Pool::~Pool() {
    // The loop may be stopped or gone: close without it (closing the socket also removes it
    // from the loop's epoll set).
    for (auto& m : members_) {
        m.conn->detach();
        m.conn->close_off_loop();
    }
}

bool Pool::on_own_loop() const {
    Loop* l = Loop::current();
    return l == &loop && ref.same_loop(l->ref());
}

Pool::Member* Pool::member(const Connection& c) {
    for (auto& m : members_)
        if (m.conn.get() == &c) return &m;
    return nullptr;
}

std::size_t Pool::connecting() const {
    std::size_t n = 0;
    for (auto& m : members_) n += m.conn->state() == Connection::State::connecting;
    return n;
}

bool Pool::needs_check(const Member& m, Clock::time_point now) const {
    return opts.health_check_after.count() > 0 && m.conn->outstanding() == 0 &&
           now - m.conn->last_used() >= opts.health_check_after;
}

void Pool::start_check(Member& m) {
    m.mode = Mode::checking;
    m.check = std::make_unique<CheckOp>(*this, *m.conn);
    static const std::vector<Param> none;
    if (!m.conn->submit(*m.check, "SELECT 1", none, false)) m.mode = Mode::retiring;
}

void Pool::check_done(Connection& c, bool ok) {
    Member* m = member(c);
    if (!m) return;
    if (!ok) {
        // The connection closes itself on a connection error; anything else: drop it too.
        m->mode = Mode::retiring;
        if (c.state() == Connection::State::ready)
            loop.defer([conn = m->conn] { conn->close("health check failed"); });
        return;
    }
    m->mode = Mode::shared;
    serve();
}

Connection* Pool::best_shared() {
    Connection* best = nullptr;
    const auto now = Clock::now();
    for (auto& m : members_) {
        Connection& c = *m.conn;
        if (m.mode != Mode::shared || !c.usable()) continue;
        if (!opts.pipeline && c.outstanding() > 0) continue;
        if (needs_check(m, now)) {
            start_check(m);
            continue;
        }
        if (!best || c.outstanding() < best->outstanding()) best = &c;
        if (best->outstanding() == 0) break;
    }
    return best;
}

std::shared_ptr<Connection> Pool::take_idle() {
    const auto now = Clock::now();
    Member* busy = nullptr;
    std::size_t draining = 0;
    for (auto& m : members_) {
        draining += m.mode == Mode::draining;
        if (m.mode != Mode::shared || !m.conn->usable()) continue;
        if (m.conn->outstanding() > 0) {
            if (!busy || m.conn->outstanding() < busy->conn->outstanding()) busy = &m;
            continue;
        }
        if (needs_check(m, now)) {
            start_check(m);
            continue;
        }
        m.mode = Mode::reserved;
        return m.conn;
    }
    // None idle: when no new connection may be opened, stop feeding the least busy one so it
    // becomes idle for the transaction waiting.
    if (busy && members_.size() >= opts.pool_size && draining <= exclusive_waiting_)
        busy->mode = Mode::draining;
    return nullptr;
}

void Pool::enqueue(Waiter& w) {
    w.prev = tail_;
    w.next = nullptr;
    (tail_ ? tail_->next : head_) = &w;
    tail_ = &w;
    w.queued = true;
    ++waiting_;
    if (w.exclusive) ++exclusive_waiting_;
    w.timer = loop.call_after(opts.acquire_timeout, [p = weak_from_this(), &w] {
        auto pool = p.lock();
        if (!pool || !w.queued) return;
        w.timer = 0;
        pool->unqueue(w);
        std::string why = fmt::format("no PostgreSQL connection free within {} ms (pool_size {})",
                                      pool->opts.acquire_timeout.count(), pool->opts.pool_size);
        if (!pool->last_error_.empty()) why += "; last error: " + pool->last_error_;
        w.fail(Outcome::Kind::timeout, std::move(why));
    });
    maybe_connect();
}

void Pool::unqueue(Waiter& w) noexcept {
    if (!w.queued) return;
    (w.prev ? w.prev->next : head_) = w.next;
    (w.next ? w.next->prev : tail_) = w.prev;
    w.prev = w.next = nullptr;
    w.queued = false;
    --waiting_;
    if (w.exclusive) --exclusive_waiting_;
    if (w.timer) loop.cancel(w.timer), w.timer = 0;
}

void Pool::serve() {
    // place() only submits or reserves; the resumptions run once the queue is consistent.
    std::vector<Waiter*> placed;
    // Once the pool has no room for a kind of waiter, the later ones of that kind are skipped
    // (a long queue is walked once per release, not placed one failure at a time).
    bool shared_full = false;
    bool exclusive_full = false;
    for (Waiter* w = head_; w && !(shared_full && exclusive_full);) {
        Waiter* next = w->next;
        if (w->exclusive ? exclusive_full : shared_full) {
            w = next;
            continue;
        }
        if (w->place(*this)) {
            unqueue(*w);
            placed.push_back(w);
        } else if (w->exclusive) {
            exclusive_full = true;  // place() found no idle connection to take
        } else {
            Connection* c = best_shared();
            shared_full = !c || (c->outstanding() > 0 && can_grow());
        }
        w = next;
    }
    if (waiting_ > 0) maybe_connect();
    auto self = shared_from_this();
    for (Waiter* w : placed) w->placed();
}

void Pool::release(const std::shared_ptr<Connection>& c) {
    Member* m = member(*c);
    if (!m) return;
    m->mode = Mode::shared;
    if (!c->usable()) return;
    if (waiting_ > 0) serve();
}

void Pool::maybe_connect() {
    // Connections open in parallel, one per statement waiting (up to pool_size).
    const std::size_t opening = connecting();
    if (members_.size() >= opts.pool_size || (opening > 0 && opening >= waiting_)) return;
    const auto now = Clock::now();
    if (now < next_attempt_) {
        if (retry_armed_) return;
        retry_armed_ = true;
        auto delay = std::chrono::ceil<milliseconds>(next_attempt_ - now);
        loop.call_after(delay, [p = weak_from_this()] {
            if (auto pool = p.lock()) {
                pool->retry_armed_ = false;
                if (pool->waiting_ > 0) pool->maybe_connect();
            }
        });
        return;
    }
    auto c = std::make_shared<Connection>(loop, params, this);
    members_.push_back(Member{c, Mode::shared, nullptr});
    c->connect();
}

void Pool::fail_waiters(Outcome::Kind kind, const std::string& why) {
    std::vector<Waiter*> all;
    while (head_) {
        Waiter* w = head_;
        unqueue(*w);
        all.push_back(w);
    }
    auto self = shared_from_this();
    for (Waiter* w : all) w->fail(kind, why);
}

void Pool::on_connected(Connection& c) {
    (void)c;
    backoff_ = milliseconds(0);
    next_attempt_ = {};
    last_error_.clear();
    detail::arm_sweep(*this);
    serve();
}

void Pool::on_closed(Connection& c, const std::string& why) {
    auto it = std::find_if(members_.begin(), members_.end(),
                           [&](const Member& m) { return m.conn.get() == &c; });
    if (it == members_.end()) return;
    const bool never_ready = c.born() == Clock::time_point{};
    std::shared_ptr<Connection> keep = it->conn;  // c runs this callback
    std::unique_ptr<CheckOp> check = std::move(it->check);
    members_.erase(it);
    auto self = shared_from_this();
    if (never_ready) {
        // Connecting failed: later attempts wait, doubling up to reconnect_backoff_max.
        backoff_ = detail::next_backoff(backoff_, opts);
        next_attempt_ = Clock::now() + backoff_;
        last_error_ = why;
        bool other = false;
        for (auto& m : members_) other = other || m.conn->state() != Connection::State::closed;
        if (!other) fail_waiters(Outcome::Kind::connection, why);
    }
    if (waiting_ > 0) maybe_connect();
}

void Pool::on_idle(Connection& c) {
    Member* m = member(c);
    if (!m) return;
    if (m->mode == Mode::retiring) {
        loop.defer([conn = m->conn] { conn->close("retired (max_lifetime)"); });
        return;
    }
    Waiter* granted = nullptr;
    if (m->mode == Mode::draining) {
        m->mode = Mode::shared;
        // Idle now: give it to the first transaction waiting, before shared statements.
        for (Waiter* w = head_; w; w = w->next) {
            if (!w->exclusive) continue;
            if (w->place(*this)) {
                unqueue(*w);
                granted = w;
            }
            break;
        }
    }
    auto self = shared_from_this();
    if (waiting_ > 0) serve();
    if (granted) granted->placed();
}

void Pool::sweep() {
    const auto now = Clock::now();
    std::vector<std::shared_ptr<Connection>> to_close;
    // Closed without the pool hearing it (a transaction dropped off its loop).
    std::erase_if(members_,
                  [](const Member& m) { return m.conn->state() == Connection::State::closed; });
    for (auto& m : members_) {
        Connection& c = *m.conn;
        if (c.state() != Connection::State::ready) continue;
        const bool old = opts.max_lifetime.count() > 0 && now - c.born() >= opts.max_lifetime;
        const bool idle = c.outstanding() == 0;
        if (m.mode == Mode::shared && idle &&
            (old || (opts.idle_timeout.count() > 0 && now - c.last_used() >= opts.idle_timeout)))
            to_close.push_back(m.conn);
        else if (old && m.mode == Mode::shared)
            m.mode = Mode::retiring;  // closed once idle
    }
    for (auto& c : to_close) c->close("idle");
    if (!members_.empty()) detail::arm_sweep(*this);
}

PgPoolStats Pool::stats() const {
    PgPoolStats s;
    for (auto& m : members_) {
        if (m.conn->state() == Connection::State::closed) continue;
        ++s.connections;
        s.connecting += m.conn->state() == Connection::State::connecting;
        s.reserved += m.mode == Mode::reserved;
        s.in_flight += m.conn->outstanding();
        s.busy += m.mode == Mode::reserved || m.conn->outstanding() > 0;
    }
    s.waiting = waiting_;
    return s;
}

// ---------------------------------------------------------------------------------------
// Transactions

class PgTransaction final : public Transaction {
  public:
    PgTransaction(Pool& pool, std::shared_ptr<Connection> conn)
        : pool_(pool.weak_from_this()), opts_(pool.opts), conn_(std::move(conn)) {}
    ~PgTransaction() override {
        if (!conn_) return;
        auto p = pool_.lock();
        if (p && p->on_own_loop() && conn_->usable() && conn_->submit_detached("ROLLBACK")) {
            p->release(conn_);  // the ROLLBACK runs before anything the pool sends next
        } else if (p && p->on_own_loop()) {
            conn_->close("transaction abandoned");
        } else {
            conn_->close_off_loop();
        }
    }

    Task<Result> run(std::string_view sql, std::vector<Param> params) override {
        if (!conn_) throw Error("the transaction has ended (commit or rollback ran)");
        check_params(params);
        co_return co_await Statement(nullptr, conn_, sql, params, opts_.prepare);
    }
    Task<void> run_script(std::string_view sql) override {
        if (!conn_) throw Error("the transaction has ended (commit or rollback ran)");
        co_await Statement(nullptr, conn_, sql, {}, false, true);
    }
    Task<void> commit() override {
        if (!conn_) throw Error("the transaction has ended (commit or rollback ran)");
        Result r;
        try {
            r = co_await Statement(nullptr, conn_, "COMMIT", {}, false);
        } catch (...) {
            end();
            throw;
        }
        end();
        // COMMIT of a transaction in which a statement failed rolls back without an error.
        auto* d = static_cast<const PgResultData*>(r.data());
        if (d && d->command_status() == "ROLLBACK")
            throw Error("the transaction was rolled back: a statement in it had failed", "25P02");
    }
    Task<void> rollback() override {
        if (!conn_) co_return;  // ended already (e.g. a failed commit)
        try {
            co_await Statement(nullptr, conn_, "ROLLBACK", {}, false);
        } catch (...) {
            end();
            throw;
        }
        end();
    }

  private:
    void end() {
        if (auto p = pool_.lock()) p->release(conn_);
        conn_.reset();
    }

    std::weak_ptr<Pool> pool_;
    const Options& opts_;
    std::shared_ptr<Connection> conn_;
};

// ---------------------------------------------------------------------------------------
// Backend

class PgBackend final : public Backend {
  public:
    PgBackend(std::string_view url, const Options& o) : params_(parse_url(url)), opts_(o) {
        if (opts_.pool_size == 0) throw Error("PostgreSQL: Options::pool_size must be at least 1");
        params_.connect_timeout = opts_.connect_timeout;
        params_.query_timeout = opts_.query_timeout;
        params_.statement_cache = opts_.prepare ? opts_.statement_cache : 0;
    }

    std::string_view name() const noexcept override { return "postgres"; }

    Task<Result> run(std::string_view sql, std::vector<Param> params) override {
        Pool& p = pool();
        check_params(params);
        co_return co_await Statement(&p, nullptr, sql, params, opts_.prepare);
    }

    Task<void> run_script(std::string_view sql) override {
        Pool& p = pool();
        // (Not `Hold hold{..., co_await ...}`: GCC 12 releases a temporary of a co_await
        // inside a braced initializer twice.)
        std::shared_ptr<Connection> conn = co_await Acquire(p);
        Hold hold{p.weak_from_this(), std::move(conn)};
        co_await Statement(nullptr, hold.conn, sql, {}, false, true);
    }

    Task<std::unique_ptr<Transaction>> begin() override {
        Pool& p = pool();
        std::shared_ptr<Connection> conn = co_await Acquire(p);
        auto tx = std::make_unique<PgTransaction>(p, std::move(conn));
        co_await tx->run("BEGIN", {});
        co_return std::unique_ptr<Transaction>(std::move(tx));
    }

    // The calling loop's pool.
    Pool& pool() {
        return pools_.get("PostgreSQL",
                          [this](Loop& l) { return std::make_shared<Pool>(params_, opts_, l); });
    }

    // For LISTEN/NOTIFY and COPY (pg_backend.hpp).
    const ConnectParams& params() const noexcept { return params_; }
    const Options& options() const noexcept { return opts_; }

    PgPoolStats stats() {
        PgPoolStats s = pool().stats();
        s.loops = pools_.count();
        return s;
    }
    std::optional<PoolStats> pool_stats() override { return stats(); }

  private:
    ConnectParams params_;
    Options opts_;
    detail::LoopPools<Pool> pools_;  // last: destroyed first
};

PgBackend& backend_of(Database& db, const char* what) {
    auto* b = dynamic_cast<PgBackend*>(&db.backend());
    if (!b) throw Error(fmt::format("{}: the database is not PostgreSQL", what));
    return *b;
}

}  // namespace

Task<Lease> lease(Database& db, const char* what) {
    Pool& p = backend_of(db, what).pool();
    std::shared_ptr<Connection> conn = co_await Acquire(p);
    auto hold = std::make_shared<Hold>();
    hold->pool = p.weak_from_this();
    hold->conn = conn;
    Lease out;
    out.conn = std::move(conn);
    out.hold = std::move(hold);
    co_return out;
}

const ConnectParams& connect_params(Database& db, const char* what) {
    return backend_of(db, what).params();
}

const Options& options(Database& db, const char* what) { return backend_of(db, what).options(); }

}  // namespace pg

std::unique_ptr<Backend> make_postgres(std::string_view url, const Options& options) {
    return std::make_unique<pg::PgBackend>(url, options);
}

PgPoolStats pg_pool_stats(Database& db) {
    auto* b = dynamic_cast<pg::PgBackend*>(&db.backend());
    if (!b) throw Error("pg_pool_stats: the database is not PostgreSQL");
    return b->stats();
}

}  // namespace vela::db
