// LISTEN/NOTIFY on a connection of its own (postgres.hpp, "LISTEN/NOTIFY").
//
// Threads: a ListenState and its Connection live on the loop that called listen() and are
// touched on that loop's thread only; Subscription::close() from another thread posts.
//
// The connection is one of pg_connection.hpp's, owned by the ListenState: notifications reach
// on_notify() from its readable edges (PQconsumeInput, then PQnotifies) and are queued; a
// waiting next() is resumed from Loop::defer, never from inside the connection's callbacks.
// After a connect, one script "UNLISTEN *; LISTEN a; LISTEN b ..." makes the server's set of
// channels equal ours, whatever happened before (so a channel added or removed while that
// script runs only needs the script again).
#include <fmt/format.h>

#include <algorithm>
#include <coroutine>
#include <deque>

#include "pg_backend.hpp"
#include "pg_connection.hpp"
#include "vela/db/postgres.hpp"
#include "vela/reactor/loop.hpp"

namespace vela::db::pg {

using std::chrono::milliseconds;

std::string quote_identifier(std::string_view name) {
    std::string out;
    out.reserve(name.size() + 2);
    out.push_back('"');
    for (char c : name) {
        if (c == '"') out.push_back('"');
        out.push_back(c);
    }
    out.push_back('"');
    return out;
}

namespace {

constexpr std::size_t kMaxIdentifier = 63;  // NAMEDATALEN - 1: longer names are truncated

void check_channel(std::string_view name) {
    if (name.empty()) throw Error("pg::listen: a channel name cannot be empty");
    if (name.find('\0') != std::string_view::npos)
        throw Error("pg::listen: a channel name cannot hold a NUL byte");
    if (name.size() > kMaxIdentifier)
        throw Error(fmt::format(
            "pg::listen: channel name '{}' is longer than 63 bytes (PostgreSQL would truncate it)",
            name));
}

// One statement on the subscription's connection, awaited by a coroutine.
class Await final : public Op {
  public:
    Await(std::shared_ptr<Connection> conn, std::string sql)
        : conn_(std::move(conn)), sql_(std::move(sql)) {}
    Await(const Await&) = delete;
    Await& operator=(const Await&) = delete;
    ~Await() {
        if (in_flight()) abandon();
        if (outcome.result) PQclear(outcome.result);
    }

    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
        handle_ = h;
        if (conn_->submit(*this, sql_, {}, false)) return true;
        outcome.kind = Outcome::Kind::connection;
        outcome.message = "the PostgreSQL connection of the subscription is closed";
        return false;
    }
    void await_resume() const {
        if (outcome.kind != Outcome::Kind::ok) throw_outcome(outcome);
    }
    void done() override { handle_.resume(); }

  private:
    std::shared_ptr<Connection> conn_;
    std::string sql_;
    std::coroutine_handle<> handle_;
};

}  // namespace

// A subscription's connection, channels and queue (see the top of the file).
class ListenState final : public ConnectionOwner, public std::enable_shared_from_this<ListenState> {
  public:
    // What next() hands out, in order: a notification or the mark of a loss.
    struct Item {
        Notification n;
        bool lost = false;
        bool reconnected = false;  // lost: the connection was lost (else: the queue was full)
        std::size_t dropped = 0;   // lost to a full queue: how many
        std::string why;           // reconnected: why the connection was lost
    };

    ListenState(Loop& l, const ConnectParams& p, const Options& o, ListenOptions lo,
                std::vector<std::string> chans)
        : loop(l),
          ref(l.ref()),
          params(std::make_shared<const ConnectParams>(p)),
          opts(o),
          lopts(lo),
          channels(std::move(chans)),
          listen_op_(*this) {}
    ListenState(const ListenState&) = delete;
    ListenState& operator=(const ListenState&) = delete;
    ~ListenState() {
        closed = true;  // the LISTEN script's completion must not touch this any more
        if (reconnect_timer_ && on_own_loop()) loop.cancel(reconnect_timer_);
        if (!conn_) return;
        conn_->detach();
        if (on_own_loop()) {
            conn_->close("subscription closed");
            drop_connection();  // this may run inside one of its callbacks
        } else {
            conn_->close_off_loop();  // the loop is gone (or stopped for good)
        }
    }

    bool on_own_loop() const {
        Loop* l = Loop::current();
        return l == &loop && ref.same_loop(l->ref());
    }
    void check_loop(const char* what) const {
        if (!on_own_loop())
            throw Error(fmt::format(
                "PostgreSQL subscription: {} must be awaited on the loop that called listen()",
                what));
    }

    void connect() {
        conn_ = std::make_shared<Connection>(loop, *params, this);
        conn_->connect();
    }

    void close() noexcept {
        if (closed) return;
        closed = true;
        listening = false;
        queue.clear();
        queued_notifications = 0;
        if (reconnect_timer_) loop.cancel(reconnect_timer_), reconnect_timer_ = 0;
        if (conn_) {
            conn_->detach();
            conn_->close("subscription closed");  // ends its LISTENs on the server
            drop_connection();
        }
        wake();
    }

    // The script that makes the server's channels ours.
    std::string listen_script() const {
        std::string sql = "UNLISTEN *";
        for (const auto& c : channels) sql.append("; LISTEN ").append(quote_identifier(c));
        return sql;
    }

    // Sends the LISTEN script (again, when one is running: it ran with older channels).
    void relisten() {
        if (!conn_ || conn_->state() != Connection::State::ready) return;
        if (listen_op_.in_flight()) {
            relisten_again_ = true;
            return;
        }
        listening = false;
        if (!conn_->submit_script(listen_op_, listen_script())) relisten_again_ = true;
    }

    void listened() {
        if (closed) return;
        Outcome& o = listen_op_.outcome;
        if (o.result) PQclear(o.result), o.result = nullptr;
        if (o.kind == Outcome::Kind::ok) {
            if (std::exchange(relisten_again_, false)) return relisten();
            listening = true;
            first_ = false;
            backoff_ = milliseconds(0);
            if (lost_) {
                Item it;
                it.lost = it.reconnected = true;
                it.why = std::move(lost_why_);
                queue.push_back(std::move(it));
                lost_ = false;
            }
            return wake();
        }
        if (first_) {
            failure = o;  // listen() throws it
            return wake();
        }
        // A connection error closes the connection (on_closed reconnects); any other error
        // of a script that only LISTENs: drop the connection and try again later.
        if (o.kind != Outcome::Kind::connection && conn_)
            loop.defer(
                [c = conn_, why = o.message] { c->close(fmt::format("LISTEN failed: {}", why)); });
    }

    // ConnectionOwner
    void on_connected(Connection& c) override {
        backend_pid = PQbackendPID(c.native());
        relisten();
    }
    void on_closed(Connection& c, const std::string& why) override {
        (void)c;
        listening = false;
        backend_pid = 0;
        relisten_again_ = false;
        drop_connection();
        if (closed) return;
        if (first_) {
            if (failure.kind == Outcome::Kind::pending) {
                failure.kind = Outcome::Kind::connection;
                failure.message = why;
            }
            return wake();
        }
        if (!lost_) lost_why_ = why;
        lost_ = true;
        backoff_ = backoff_.count() == 0 ? opts.reconnect_backoff
                                         : std::min(backoff_ * 2, opts.reconnect_backoff_max);
        reconnect_timer_ = loop.call_after(backoff_, [w = weak_from_this()] {
            if (auto s = w.lock()) {
                s->reconnect_timer_ = 0;
                if (!s->closed) s->connect();
            }
        });
    }
    void on_notify(Connection& c, const PGnotify& n) override {
        (void)c;
        if (closed) return;
        if (queued_notifications >= lopts.max_queued) {
            if (queue.empty() || !queue.back().lost || queue.back().reconnected) {
                Item it;
                it.lost = true;
                queue.push_back(std::move(it));
            }
            ++queue.back().dropped;
            return wake();
        }
        Item it;
        it.n.channel = n.relname ? n.relname : "";
        it.n.payload = n.extra ? n.extra : "";
        it.n.sender_pid = n.be_pid;
        queue.push_back(std::move(it));
        ++queued_notifications;
        wake();
    }

    // Resumes the coroutine waiting in next() or listen(), from the loop (never from inside
    // the connection's callbacks, which it could destroy).
    void wake() {
        if (!waiter || wake_scheduled_ || !on_own_loop()) return;
        wake_scheduled_ = true;
        loop.defer([s = shared_from_this()] {
            s->wake_scheduled_ = false;
            if (auto h = std::exchange(s->waiter, {})) h.resume();
        });
    }

    const std::shared_ptr<Connection>& connection() const noexcept { return conn_; }

    Loop& loop;
    LoopRef ref;
    std::shared_ptr<const ConnectParams> params;  // shared: a closed Connection may linger
    Options opts;
    ListenOptions lopts;
    std::vector<std::string> channels;
    std::deque<Item> queue;
    std::size_t queued_notifications = 0;  // notifications in `queue` (not loss marks)
    std::coroutine_handle<> waiter;        // in next() or listen()
    Outcome failure;                       // the first connect or LISTEN failed
    bool listening = false;
    bool closed = false;
    int backend_pid = 0;

  private:
    // The connection's LISTEN script, completing into listened().
    class ListenOp final : public Op {
      public:
        explicit ListenOp(ListenState& s) : st_(s) {}
        ~ListenOp() {
            if (outcome.result) PQclear(outcome.result);
        }
        void done() override { st_.listened(); }

      private:
        ListenState& st_;
    };

    // Frees the connection from the loop: it may be running the callback that got here.
    void drop_connection() {
        if (conn_) loop.defer([c = std::move(conn_), p = params] {});
    }

    std::shared_ptr<Connection> conn_;
    ListenOp listen_op_;
    bool first_ = true;  // until listening the first time: failures go to listen()
    bool lost_ = false;  // a connection was lost: report it once listening again
    std::string lost_why_;
    bool relisten_again_ = false;
    bool wake_scheduled_ = false;
    milliseconds backoff_{0};
    std::uint64_t reconnect_timer_ = 0;
};

namespace {

// Suspends until ListenState::wake() (the caller re-checks what it waits for).
struct Wake {
    ListenState& st;
    std::coroutine_handle<> h;
    ~Wake() {
        if (h && st.waiter == h) st.waiter = {};  // the waiting coroutine was destroyed
    }
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> handle) noexcept {
        h = handle;
        st.waiter = handle;
    }
    void await_resume() noexcept { h = {}; }
};

}  // namespace

// ---------------------------------------------------------------------------------------

Task<Subscription> listen(Database& db, std::vector<std::string> channels, ListenOptions options) {
    const ConnectParams& params = connect_params(db, "pg::listen");
    const Options& opts = pg::options(db, "pg::listen");
    for (const auto& c : channels) check_channel(c);
    std::sort(channels.begin(), channels.end());
    channels.erase(std::unique(channels.begin(), channels.end()), channels.end());
    Loop* loop = Loop::current();
    if (!loop) throw Error("pg::listen must be awaited on a running vela::Loop");
    auto st = std::make_shared<ListenState>(*loop, params, opts, options, std::move(channels));
    st->connect();
    while (!st->listening && st->failure.kind == Outcome::Kind::pending) co_await Wake{*st, {}};
    if (!st->listening) {
        Outcome failure = st->failure;
        st->close();
        throw_outcome(failure);
    }
    co_return Subscription(std::move(st));
}

Subscription::Subscription() noexcept = default;
Subscription::Subscription(std::shared_ptr<ListenState> s) noexcept : st_(std::move(s)) {}
Subscription::Subscription(Subscription&& o) noexcept : st_(std::move(o.st_)) {}
Subscription& Subscription::operator=(Subscription&& o) noexcept {
    if (this != &o) {
        close();
        st_ = std::move(o.st_);
    }
    return *this;
}
Subscription::~Subscription() { close(); }

void Subscription::close() noexcept {
    std::shared_ptr<ListenState> st = std::move(st_);
    if (!st) return;
    if (st->on_own_loop()) {
        st->close();
    } else if (!st->ref.post([st] { st->close(); })) {
        st->closed = true;  // the loop is gone: the destructor closes without it
    }
}

bool Subscription::is_open() const noexcept { return st_ && !st_->closed; }

bool Subscription::listening() const noexcept { return st_ && st_->listening; }

int Subscription::backend_pid() const noexcept { return st_ ? st_->backend_pid : 0; }

std::size_t Subscription::queued() const noexcept { return st_ ? st_->queued_notifications : 0; }

std::vector<std::string> Subscription::channels() const {
    return st_ ? st_->channels : std::vector<std::string>{};
}

Task<Notification> Subscription::next() {
    std::shared_ptr<ListenState> st = st_;  // kept while waiting, even if *this goes
    if (!st || st->closed) throw Error("next() on a closed PostgreSQL subscription");
    st->check_loop("next()");
    if (st->waiter) throw Error("next() is already awaited on this PostgreSQL subscription");
    while (st->queue.empty() && !st->closed) co_await Wake{*st, {}};
    if (st->closed) throw Error("the PostgreSQL subscription was closed");
    ListenState::Item it = std::move(st->queue.front());
    st->queue.pop_front();
    if (!it.lost) {
        --st->queued_notifications;
        co_return std::move(it.n);
    }
    if (it.reconnected)
        throw NotificationsLost(
            fmt::format("notifications were lost: {}; listening again since", it.why), 0, true);
    throw NotificationsLost(
        fmt::format("{} notifications were dropped: the subscription's queue was full "
                    "(ListenOptions::max_queued {})",
                    it.dropped, st->lopts.max_queued),
        it.dropped, false);
}

Task<void> Subscription::listen(std::string channel) {
    std::shared_ptr<ListenState> st = st_;
    if (!st || st->closed) throw Error("listen() on a closed PostgreSQL subscription");
    st->check_loop("listen()");
    check_channel(channel);
    if (std::find(st->channels.begin(), st->channels.end(), channel) != st->channels.end())
        co_return;
    st->channels.push_back(channel);
    if (!st->listening) {
        st->relisten();  // the LISTEN script after a connect covers it
        co_return;
    }
    try {
        std::string sql = fmt::format("LISTEN {}", quote_identifier(channel));
        co_await Await(st->connection(), std::move(sql));
    } catch (const ConnectionError&) {
        // Lost meanwhile: the reconnection LISTENs on every channel, this one included.
    } catch (...) {
        std::erase(st->channels, channel);
        throw;
    }
}

Task<void> Subscription::unlisten(std::string channel) {
    std::shared_ptr<ListenState> st = st_;
    if (!st || st->closed) throw Error("unlisten() on a closed PostgreSQL subscription");
    st->check_loop("unlisten()");
    if (std::erase(st->channels, channel) == 0) co_return;
    if (!st->listening) {
        st->relisten();
        co_return;
    }
    try {
        std::string sql = fmt::format("UNLISTEN {}", quote_identifier(channel));
        co_await Await(st->connection(), std::move(sql));
    } catch (const ConnectionError&) {
        // Lost meanwhile: the reconnection does not LISTEN on it any more.
    }
}

}  // namespace vela::db::pg
