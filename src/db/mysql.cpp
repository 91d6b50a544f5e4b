// The MySQL/MariaDB backend of vela::db: a pool of non-blocking connections per loop.
//
// Threads: the backend is shared by every loop; each loop gets its own Pool the first time it
// runs a statement (found under a mutex once, then through a thread-local cache), and a Pool
// and its connections are only touched on their loop's thread. The protocol runs one
// statement at a time per connection, so a statement takes an idle connection for its
// duration (a transaction for its whole life); when none is idle the pool opens one (up to
// Options::pool_size) and the statement waits in the queue for at most acquire_timeout.
#include "vela/db/mysql.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <coroutine>
#include <mutex>

#include "loop_pools.hpp"
#include "my_connection.hpp"
#include "vela/base/log.hpp"

namespace vela::db {
namespace my {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class Pool;

// A statement or transaction waiting in a pool's queue for a connection.
class Acquire {
  public:
    explicit Acquire(Pool& pool) : pool_(pool) {}
    Acquire(const Acquire&) = delete;
    Acquire& operator=(const Acquire&) = delete;
    ~Acquire();

    bool await_ready();
    void await_suspend(std::coroutine_handle<> h);
    std::shared_ptr<Connection> await_resume();

    // The pool gives it a connection (lent already) or an error, then resumes it.
    void grant(std::shared_ptr<Connection> c) {
        got_ = std::move(c);
        handle_.resume();
    }
    void fail(bool timeout, std::string why) {
        timeout_ = timeout;
        failure_ = std::move(why);
        handle_.resume();
    }

    Acquire* prev = nullptr;
    Acquire* next = nullptr;
    bool queued = false;
    std::uint64_t timer = 0;

  private:
    Pool& pool_;
    std::shared_ptr<Connection> got_;
    bool taken_ = false;
    bool timeout_ = false;
    std::string failure_;
    std::coroutine_handle<> handle_;
};

// One loop's connections and queue (see the top of the file).
class Pool final : public std::enable_shared_from_this<Pool> {
  public:
    struct Member {
        std::shared_ptr<Connection> conn;
        bool lent = false;                   // held by a statement or transaction
        bool tx = false;                     // held by a transaction
        bool opening = false;                // connect() under way
        std::coroutine_handle<> connecting;  // its driving frame (destroyed with the pool)
    };

    Pool(const ConnectParams& params, const Options& opts, Loop& loop)
        : loop(loop), ref(loop.ref()), params(params), opts(opts) {}
    ~Pool() {
        for (auto& m : members_) {
            // A connect still under way (the loop stopped first): abandon it.
            if (m.connecting) m.connecting.destroy();
            m.conn->close_off_loop();
        }
    }

    std::shared_ptr<Connection> take_idle();
    void enqueue(Acquire& w);
    void unqueue(Acquire& w) noexcept;
    void release(const std::shared_ptr<Connection>& c);
    void mark_tx(const Connection& c) {
        if (Member* m = member(c)) m->tx = true;
    }
    bool on_own_loop() const {
        Loop* l = Loop::current();
        return l == &loop && ref.same_loop(l->ref());
    }
    PoolStats stats() const;

    // The periodic sweep of idle, old and closed connections (detail::arm_sweep).
    void sweep();
    bool sweep_armed = false;

    Loop& loop;
    LoopRef ref;
    const ConnectParams& params;
    const Options& opts;

  private:
    Member* member(const Connection& c) {
        for (auto& m : members_)
            if (m.conn.get() == &c) return &m;
        return nullptr;
    }
    void serve();
    void maybe_connect();
    void opened(Connection& c, const std::string& error);
    void drop(const Connection& c);

    std::vector<Member> members_;
    Acquire* head_ = nullptr;
    Acquire* tail_ = nullptr;
    std::size_t waiting_ = 0;
    milliseconds backoff_{0};
    Clock::time_point next_attempt_{};
    bool retry_armed_ = false;
    std::string last_error_;
};

Acquire::~Acquire() {
    if (queued) pool_.unqueue(*this);
    if (got_ && !taken_) pool_.release(got_);  // destroyed after it was granted
}

bool Acquire::await_ready() {
    got_ = pool_.take_idle();
    return got_ != nullptr;
}

void Acquire::await_suspend(std::coroutine_handle<> h) {
    handle_ = h;
    pool_.enqueue(*this);
}

std::shared_ptr<Connection> Acquire::await_resume() {
    if (!got_) {
        if (timeout_) throw TimeoutError(failure_);
        throw ConnectionError(failure_);
    }
    taken_ = true;
    return got_;
}

std::shared_ptr<Connection> Pool::take_idle() {
    for (auto& m : members_) {
        if (m.lent || m.opening || !m.conn->usable()) continue;
        m.lent = true;
        m.tx = false;
        return m.conn;
    }
    return nullptr;
}

void Pool::enqueue(Acquire& w) {
    w.prev = tail_;
    w.next = nullptr;
    (tail_ ? tail_->next : head_) = &w;
    tail_ = &w;
    w.queued = true;
    ++waiting_;
    w.timer = loop.call_after(opts.acquire_timeout, [p = weak_from_this(), &w] {
        auto pool = p.lock();
        if (!pool || !w.queued) return;
        w.timer = 0;
        pool->unqueue(w);
        std::string why = fmt::format("no MySQL connection free within {} ms (pool_size {})",
                                      pool->opts.acquire_timeout.count(), pool->opts.pool_size);
        if (!pool->last_error_.empty()) why += "; last error: " + pool->last_error_;
        w.fail(true, std::move(why));
    });
    maybe_connect();
}

void Pool::unqueue(Acquire& w) noexcept {
    if (!w.queued) return;
    (w.prev ? w.prev->next : head_) = w.next;
    (w.next ? w.next->prev : tail_) = w.prev;
    w.prev = w.next = nullptr;
    w.queued = false;
    --waiting_;
    if (w.timer) loop.cancel(w.timer), w.timer = 0;
}

void Pool::serve() {
    auto self = shared_from_this();
    while (head_) {
        std::shared_ptr<Connection> c = take_idle();
        if (!c) break;
        Acquire* w = head_;
        unqueue(*w);
        w->grant(std::move(c));  // may run the waiter's statement up to its first wait
    }
    if (waiting_ > 0) maybe_connect();
}

void Pool::release(const std::shared_ptr<Connection>& c) {
    Member* m = member(*c);
    if (!m) return;
    if (c->state() != Connection::State::ready || c->busy() || c->kill_pending() ||
        c->may_hold_locks()) {
        // Lost, abandoned midway, or a KILL QUERY may still hit its next statement, or named
        // locks its user did not get to release (closing releases them): do not reuse it.
        c->close();
        drop(*c);
        if (waiting_ > 0) maybe_connect();
        return;
    }
    m->lent = false;
    m->tx = false;
    if (waiting_ > 0) serve();
}

void Pool::drop(const Connection& c) {
    std::erase_if(members_, [&](const Member& m) { return m.conn.get() == &c; });
}

void Pool::maybe_connect() {
    // Connections the server closed while idle stay members until the sweep: not counted.
    std::size_t opening = 0, open = 0;
    for (auto& m : members_) {
        opening += m.opening;
        open += m.opening || m.conn->state() != Connection::State::closed;
    }
    if (open >= opts.pool_size || opening >= waiting_) return;
    const auto now = Clock::now();
    if (now < next_attempt_) {
        if (retry_armed_) return;
        retry_armed_ = true;
        loop.call_after(std::chrono::ceil<milliseconds>(next_attempt_ - now),
                        [p = weak_from_this()] {
                            if (auto pool = p.lock()) {
                                pool->retry_armed_ = false;
                                if (pool->waiting_ > 0) pool->maybe_connect();
                            }
                        });
        return;
    }
    auto c = std::make_shared<Connection>(loop, params);
    members_.push_back(Member{c, false, false, true, {}});
    // The pool owns the connect coroutine (not the loop): destroyed with the pool if the loop
    // stops first, so nothing is left suspended for ever.
    std::coroutine_handle<> h =
        vela::start(c->connect(), [w = weak_from_this(), raw = c.get()](std::exception_ptr e) {
            std::string error;
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& x) {
                    error = x.what();
                } catch (...) {
                    error = "MySQL: connecting failed";
                }
            }
            if (auto p = w.lock()) p->opened(*raw, error);
        });
    if (Member* m = member(*c); m && m->opening) m->connecting = h;
}

void Pool::opened(Connection& c, const std::string& error) {
    Member* m = member(c);
    if (!m) return;
    m->opening = false;
    m->connecting = {};
    auto self = shared_from_this();
    if (!error.empty()) {
        drop(c);
        // Later attempts wait, doubling up to reconnect_backoff_max.
        backoff_ = detail::next_backoff(backoff_, opts);
        next_attempt_ = Clock::now() + backoff_;
        last_error_ = error;
        bool other = false;
        for (auto& x : members_) other = other || x.conn->state() != Connection::State::closed;
        if (!other) {
            // Nobody can be served soon: fail the waiters now rather than at their timeout
            // (those queued by now only: one that retries at once waits for the next attempt).
            std::vector<Acquire*> failed;
            while (head_) {
                failed.push_back(head_);
                unqueue(*head_);
            }
            for (Acquire* w : failed) w->fail(false, error);
        }
        if (waiting_ > 0) maybe_connect();
        return;
    }
    backoff_ = milliseconds(0);
    next_attempt_ = {};
    last_error_.clear();
    detail::arm_sweep(*this);
    serve();
}

void Pool::sweep() {
    const auto now = Clock::now();
    // Closed by the server meanwhile (seen while idle), or too old or idle too long.
    std::vector<std::shared_ptr<Connection>> to_close;
    for (auto& m : members_) {
        if (m.lent || m.opening) continue;
        Connection& c = *m.conn;
        if (c.state() != Connection::State::ready) {
            to_close.push_back(m.conn);
            continue;
        }
        const bool old = opts.max_lifetime.count() > 0 && now - c.born() >= opts.max_lifetime;
        const bool idle = opts.idle_timeout.count() > 0 && now - c.last_used() >= opts.idle_timeout;
        if (old || idle) to_close.push_back(m.conn);
    }
    for (auto& c : to_close) {
        c->close();
        drop(*c);
    }
    if (waiting_ > 0) maybe_connect();
    if (!members_.empty()) detail::arm_sweep(*this);
}

PoolStats Pool::stats() const {
    PoolStats s;
    for (auto& m : members_) {
        if (m.conn->state() == Connection::State::closed) continue;
        ++s.connections;
        s.connecting += m.opening;
        s.reserved += m.lent && m.tx;
        s.in_flight += m.conn->busy();
        s.busy += m.lent;
    }
    s.waiting = waiting_;
    return s;
}

// A connection held by one user; back to its pool when destroyed.
struct Lease {
    std::weak_ptr<Pool> pool;
    std::shared_ptr<Connection> conn;
    Lease() = default;
    Lease(std::weak_ptr<Pool> p, std::shared_ptr<Connection> c)
        : pool(std::move(p)), conn(std::move(c)) {}
    Lease(Lease&&) noexcept = default;
    Lease& operator=(Lease&& o) noexcept {
        reset();
        pool = std::move(o.pool);
        conn = std::move(o.conn);
        return *this;
    }
    ~Lease() { reset(); }
    void reset() noexcept {
        if (!conn) return;
        auto p = pool.lock();
        if (p && p->on_own_loop())
            p->release(conn);
        else
            conn->close_off_loop();
        conn.reset();
    }
};

// An idle connection of `p`, checked first when it was idle for long (health_check_after).
Task<Lease> lease(Pool& p) {
    for (std::size_t attempt = 0;; ++attempt) {
        std::shared_ptr<Connection> c = co_await Acquire(p);
        Lease l(p.weak_from_this(), std::move(c));
        const auto after = p.opts.health_check_after;
        if (after.count() <= 0 || Clock::now() - l.conn->last_used() < after ||
            attempt > p.opts.pool_size)
            co_return l;
        if (co_await l.conn->ping()) co_return l;
        // Gone (closed by ping): the lease drops it; take another.
    }
}

// Named locks (GET_LOCK) never outlive their user: released before the connection goes back
// (a connection returned with them is closed instead).
Task<void> release_locks(Connection& c) {
    // (A connection with a KILL on its way is closed by the pool, which releases them too.)
    if (!c.may_hold_locks() || c.kill_pending()) co_return;
    co_await c.script("DO RELEASE_ALL_LOCKS()");
    c.locks_released();
}

// ---------------------------------------------------------------------------------------
// Transactions

class MyTransaction final : public Transaction {
  public:
    MyTransaction(Lease l, const Options& o) : lease_(std::move(l)), opts_(o) {}
    ~MyTransaction() override {
        // Dropped without commit or rollback: closing the connection rolls it back on the
        // server (the Lease then drops it from the pool).
        if (lease_.conn && lease_.conn->state() == Connection::State::ready) {
            auto p = lease_.pool.lock();
            if (p && p->on_own_loop()) lease_.conn->close();
        }
    }

    Task<Result> run(std::string_view sql, std::vector<Param> params) override {
        check();
        co_return co_await lease_.conn->execute(sql, params, opts_.prepare);
    }
    Task<void> run_script(std::string_view sql) override {
        check();
        co_await lease_.conn->script(sql);
    }
    Task<void> commit() override {
        check();
        co_await end("COMMIT");
    }
    Task<void> rollback() override {
        if (!lease_.conn) co_return;  // ended already (e.g. a failed commit)
        co_await end("ROLLBACK");
    }

  private:
    void check() const {
        if (!lease_.conn) throw Error("the transaction has ended (commit or rollback ran)");
    }
    Task<void> end(std::string_view sql) {
        try {
            co_await lease_.conn->script(sql);
            co_await release_locks(*lease_.conn);
        } catch (...) {
            lease_.reset();
            throw;
        }
        lease_.reset();
    }
    Lease lease_;
    const Options& opts_;
};

// ---------------------------------------------------------------------------------------
// Backend

class MyBackend final : public Backend {
  public:
    MyBackend(std::string_view url, const Options& o) : params_(parse_url(url)), opts_(o) {
        if (opts_.pool_size == 0) throw Error("MySQL: Options::pool_size must be at least 1");
        params_.connect_timeout = opts_.connect_timeout;
        params_.query_timeout = opts_.query_timeout;
        params_.statement_cache = opts_.prepare ? opts_.statement_cache : 0;
        // The connector's global state, once, before any loop makes a connection.
        static std::once_flag once;
        std::call_once(once, [] { mysql_library_init(0, nullptr, nullptr); });
    }

    std::string_view name() const noexcept override { return "mysql"; }

    Task<Result> run(std::string_view sql, std::vector<Param> params) override {
        Lease l = co_await lease(pool());
        Result r = co_await l.conn->execute(sql, params, opts_.prepare);
        co_await release_locks(*l.conn);
        co_return r;
    }

    Task<void> run_script(std::string_view sql) override {
        Lease l = co_await lease(pool());
        co_await l.conn->script(sql);
        co_await release_locks(*l.conn);
    }

    Task<std::unique_ptr<Transaction>> begin() override {
        Pool& p = pool();
        Lease l = co_await lease(p);
        p.mark_tx(*l.conn);
        co_await l.conn->script("START TRANSACTION");
        co_return std::make_unique<MyTransaction>(std::move(l), opts_);
    }

    std::optional<PoolStats> pool_stats() override {
        PoolStats s = pool().stats();
        s.loops = pools_.count();
        return s;
    }

    // The calling loop's pool.
    Pool& pool() {
        return pools_.get("MySQL",
                          [this](Loop& l) { return std::make_shared<Pool>(params_, opts_, l); });
    }

  private:
    ConnectParams params_;
    Options opts_;
    detail::LoopPools<Pool> pools_;  // last: destroyed first
};

}  // namespace
}  // namespace my

std::unique_ptr<Backend> make_mysql(std::string_view url, const Options& options) {
    return std::make_unique<my::MyBackend>(url, options);
}

}  // namespace vela::db
