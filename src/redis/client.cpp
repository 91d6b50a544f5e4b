// The Redis client: per-loop pools of connections on the loop's I/O backend.
//
// A Connection is one socket. It goes waiting (a reconnect backoff) -> connecting (non-blocking
// connect, watched as await_write) -> open (a stream handle: the backend reads into `in_`,
// we write `out_` with write_from) -> dead. Commands are appended to `out_` as they come and
// written once per loop iteration (a deferred flush), so commands issued together leave
// together. Each command (or pipeline) waiting for replies has a Slot in `slots_`, in the order
// written; replies are handed to the front slot. AUTH and SELECT are the first slots of every
// connection, marked internal: their error kills the connection. A Connection in a
// subscription has no slots after the handshake; its replies go to the owner (SubState).
//
// Dead connections are freed with Loop::defer, never inside their own callbacks.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <coroutine>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "resp.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/redis/client.hpp"

namespace vela::redis {

namespace detail {

// What every connection of one Client needs, fixed at construction.
struct Config {
    Url url;
    Options opt;
    sockaddr_storage addr{};
    socklen_t addr_len = 0;
    std::string address;    // host:port, for messages
    std::string handshake;  // AUTH and SELECT, encoded
    std::size_t handshake_count = 0;
};

// One command (or pipeline) waiting for its replies; lives in the awaiting coroutine's frame.
struct Request {
    std::coroutine_handle<> waiter;
    Reply one;
    std::vector<Reply> many;
    bool pipeline = false;
    bool done = false;
    std::exception_ptr error;
};

class Connection;

// Whoever owns a connection learns here that it died (it then frees it with Loop::defer) and,
// for subscriptions, receives the replies no slot waits for.
struct ConnOwner {
    virtual void connection_dead(Connection& c, std::exception_ptr why) = 0;
    virtual void unsolicited(Reply&& r) = 0;

  protected:
    ~ConnOwner() = default;
};

class Connection final : private IoSink {
  public:
    enum class State : std::uint8_t { waiting, connecting, open, dead };

    Connection(Loop& loop, const Config& cfg, ConnOwner& owner, std::chrono::milliseconds delay)
        : loop_(loop), cfg_(cfg), owner_(owner) {
        io_.sink = this;
        if (cfg_.handshake_count) {
            out_ = cfg_.handshake;
            for (std::size_t i = 0; i < cfg_.handshake_count; ++i) push_slot(nullptr, 1, true);
            handshake_left_ = cfg_.handshake_count;
        }
        if (delay.count() > 0) {
            start_timer_ = loop_.call_after(delay, [this] {
                start_timer_ = 0;
                start_connect();
            });
        } else {
            loop_.defer([this] { start_connect(); });
        }
    }

    ~Connection() override { close_quietly(true); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    State state() const noexcept { return state_; }
    // Commands and pipelines written or queued and not yet answered.
    std::size_t load() const noexcept { return slots_.size(); }
    // True once connected and past AUTH/SELECT.
    bool ready() const noexcept { return ready_; }

    // Queues `n` commands answered as one Request (`req` may be null: replies dropped).
    void enqueue(Request* req, const Command* cmds, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) cmds[i].encode_to(out_);
        push_slot(req, n, false);
        schedule_flush();
    }
    // Queues a command whose replies go to the owner (SUBSCRIBE).
    void enqueue_unanswered(const Command& cmd) {
        cmd.encode_to(out_);
        schedule_flush();
    }
    // The awaiting coroutine went away: its replies are read and dropped.
    void forget(Request* req) noexcept {
        for (Slot& s : slots_)
            if (s.req == req) s.req = nullptr;
    }

    // Closes the socket and completes every waiting command with `why`.
    void fail(std::exception_ptr why) {
        if (state_ == State::dead) return;
        close_quietly(true);
        std::deque<Slot> slots;
        slots.swap(slots_);
        // Mark all first: a resumed coroutine must see the others as finished.
        for (Slot& s : slots) {
            if (!s.req) continue;
            s.req->done = true;
            s.req->error = why;
        }
        owner_.connection_dead(*this, why);  // after this, `this` lives until the deferred free
        for (Slot& s : slots)
            if (s.req && s.req->waiter) std::exchange(s.req->waiter, {}).resume();
    }

    // Closes without resuming anything (`loop_alive`: the loop may still be touched).
    void close_quietly(bool loop_alive) noexcept {
        if (state_ == State::dead) return;
        state_ = State::dead;
        if (loop_alive) {
            if (start_timer_) loop_.cancel(start_timer_);
            if (connect_timer_) loop_.cancel(connect_timer_);
            if (cmd_timer_) loop_.cancel(cmd_timer_);
            if (io_.registered) loop_.io().remove(io_);
            if (in_.capacity()) loop_.buffers().release(in_);
        }
        start_timer_ = connect_timer_ = cmd_timer_ = 0;
        if (io_.fd >= 0) ::close(io_.fd);
        io_.fd = -1;
    }

  private:
    struct Slot {
        Request* req;
        std::size_t remaining;
        std::uint64_t deadline;
        bool internal;
    };

    void push_slot(Request* req, std::size_t n, bool internal) {
        const auto timeout = static_cast<std::uint64_t>(cfg_.opt.command_timeout.count());
        const std::uint64_t deadline =
            timeout ? loop_.now_ms() + timeout : std::numeric_limits<std::uint64_t>::max();
        slots_.push_back(Slot{req, n, deadline, internal});
        if (timeout && !cmd_timer_ && state_ != State::dead) arm_command_timer(timeout);
    }

    void arm_command_timer(std::uint64_t delay_ms) {
        cmd_timer_ = loop_.call_after(std::chrono::milliseconds(delay_ms), [this] {
            cmd_timer_ = 0;
            if (slots_.empty()) return;
            const std::uint64_t now = loop_.now_ms();
            const std::uint64_t due = slots_.front().deadline;
            if (due > now) {
                arm_command_timer(due - now);
                return;
            }
            fail(std::make_exception_ptr(TimeoutError(
                "redis " + cfg_.address + ": no reply within " +
                std::to_string(cfg_.opt.command_timeout.count()) +
                " ms (command_timeout); the connection was dropped and the command may or may "
                "not have run")));
        });
    }

    void schedule_flush() {
        if (flush_scheduled_ || state_ != State::open) return;
        flush_scheduled_ = true;
        loop_.defer([this] {
            flush_scheduled_ = false;
            flush();
        });
    }

    std::exception_ptr connection_error(std::string_view what, int err) const {
        std::string m = "redis " + cfg_.address + ": ";
        m += what;
        if (err) {
            m += ": ";
            m += std::strerror(err);
        }
        return std::make_exception_ptr(ConnectionError(m));
    }

    void start_connect() {
        if (state_ != State::waiting) return;
        state_ = State::connecting;
        const sockaddr* sa = reinterpret_cast<const sockaddr*>(&cfg_.addr);
        io_.fd = ::socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (io_.fd < 0) return fail(connection_error("cannot create a socket", errno));
        int one = 1;
        ::setsockopt(io_.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        connect_timer_ = loop_.call_after(cfg_.opt.connect_timeout, [this] {
            connect_timer_ = 0;
            fail(connection_error("connect timed out after " +
                                      std::to_string(cfg_.opt.connect_timeout.count()) +
                                      " ms (connect_timeout)",
                                  0));
        });
        if (::connect(io_.fd, sa, cfg_.addr_len) == 0) return connected();
        if (errno != EINPROGRESS) return fail(connection_error("cannot connect", errno));
        io_.kind = IoHandle::await_write;
        loop_.io().add(io_);
    }

    // The connect finished (await_write woke us).
    void on_ready() override {
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(io_.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
        loop_.io().remove(io_);
        if (err) return fail(connection_error("cannot connect", err));
        connected();
    }

    void connected() {
        io_.kind = IoHandle::stream;
        loop_.io().add(io_);
        state_ = State::open;
        if (handshake_left_ == 0) handshake_done();
        loop_.io().read_into(io_);
        if (state_ == State::open && !out_.empty()) schedule_flush();
    }

    void handshake_done() {
        ready_ = true;
        if (connect_timer_) loop_.cancel(connect_timer_);
        connect_timer_ = 0;
    }

    void flush() {
        while (state_ == State::open && written_ < out_.size()) {
            iovec v{out_.data() + written_, out_.size() - written_};
            const ssize_t n = loop_.io().write_from(io_, &v, 1);
            if (n < 0) return fail(connection_error("write failed", static_cast<int>(-n)));
            if (n == 0) return;  // on_write_ready continues
            written_ += static_cast<std::size_t>(n);
        }
        if (written_ == out_.size()) {
            out_.clear();
            written_ = 0;
            if (out_.capacity() > (1u << 20)) out_.shrink_to_fit();
        }
    }

    void on_write_ready() override { flush(); }

    Buffer& read_buffer() override {
        if (in_.capacity() == 0) loop_.buffers().acquire(in_);
        return in_;
    }

    bool on_read(ssize_t n) override {
        if (n <= 0) {
            fail(connection_error(n == 0 ? "connection closed by the server (the command may or "
                                           "may not have run)"
                                         : "connection lost (the command may or may not have run)",
                                  n == 0 ? 0 : static_cast<int>(-n)));
            return false;
        }
        reader_.feed(in_.view());
        in_.clear();
        while (state_ != State::dead) {
            std::optional<Reply> r;
            try {
                r = reader_.next();
            } catch (...) {
                fail(std::current_exception());
                return false;
            }
            if (!r) break;
            deliver(std::move(*r));
        }
        return state_ != State::dead;
    }

    void deliver(Reply&& reply) {
        if (slots_.empty()) {
            owner_.unsolicited(std::move(reply));
            return;
        }
        Slot& s = slots_.front();
        if (s.internal) {
            slots_.pop_front();
            if (reply.is_error()) {
                return fail(std::make_exception_ptr(ConnectionError(
                    "redis " + cfg_.address + ": login failed (AUTH/SELECT): " + reply.str)));
            }
            if (--handshake_left_ == 0) handshake_done();
            return;
        }
        Request* req = s.req;
        if (req) {
            if (req->pipeline)
                req->many.push_back(std::move(reply));
            else
                req->one = std::move(reply);
        }
        if (--s.remaining > 0) return;
        slots_.pop_front();
        if (req) {
            req->done = true;
            if (req->waiter) std::exchange(req->waiter, {}).resume();
        }
    }

    Loop& loop_;
    const Config& cfg_;
    ConnOwner& owner_;
    IoHandle io_;
    State state_ = State::waiting;
    bool ready_ = false;
    bool flush_scheduled_ = false;
    std::size_t handshake_left_ = 0;
    std::uint64_t start_timer_ = 0;
    std::uint64_t connect_timer_ = 0;
    std::uint64_t cmd_timer_ = 0;
    std::string out_;
    std::size_t written_ = 0;
    Buffer in_;
    ReplyReader reader_;
    std::deque<Slot> slots_;
};

// The connections one loop uses for commands.
struct LoopPool final : ConnOwner {
    Loop& loop;
    LoopRef ref;
    const Config& cfg;
    std::vector<std::unique_ptr<Connection>> conns;
    std::chrono::milliseconds backoff{0};
    std::uint64_t next_attempt_ms = 0;

    LoopPool(Loop& l, const Config& c) : loop(l), ref(l.ref()), cfg(c) {}
    LoopPool(const LoopPool&) = delete;
    LoopPool& operator=(const LoopPool&) = delete;

    // Commands in flight on one connection before the next one is used: commands issued
    // together then leave in one write and come back in one read (spreading a burst of 16
    // over two connections measured a third slower than keeping it on one).
    static constexpr std::size_t kSpreadAt = 32;

    // The first connection with room under kSpreadAt; else a new one while the pool has room;
    // else the least busy.
    Connection& pick() {
        Connection* best = nullptr;
        for (auto& c : conns) {
            if (c->load() < kSpreadAt) return *c;
            if (!best || c->load() < best->load()) best = c.get();
        }
        if (best && conns.size() >= cfg.opt.connections_per_loop) return *best;
        const std::uint64_t now = loop.now_ms();
        const auto delay =
            std::chrono::milliseconds(next_attempt_ms > now ? next_attempt_ms - now : 0);
        conns.push_back(std::make_unique<Connection>(loop, cfg, *this, delay));
        return *conns.back();
    }

    void connection_dead(Connection& c, std::exception_ptr) override {
        if (c.ready()) {
            backoff = std::chrono::milliseconds(0);  // it worked: the next connect goes at once
            next_attempt_ms = 0;
        } else {
            backoff = backoff.count() == 0 ? cfg.opt.reconnect_min
                                           : std::min(backoff * 2, cfg.opt.reconnect_max);
            next_attempt_ms = loop.now_ms() + static_cast<std::uint64_t>(backoff.count());
        }
        for (auto it = conns.begin(); it != conns.end(); ++it) {
            if (it->get() != &c) continue;
            loop.defer([dead = std::move(*it)] {});
            conns.erase(it);
            break;
        }
    }

    void unsolicited(Reply&& r) override {
        (void)r;  // a command connection gets no unasked replies; RESP2 has no pushes
    }

    // Closes everything without resuming (the client is going away).
    void shutdown(bool loop_alive) noexcept {
        for (auto& c : conns) c->close_quietly(loop_alive);
        conns.clear();
    }
};

struct ClientImpl {
    Config cfg;
    std::mutex mu;
    std::vector<std::unique_ptr<LoopPool>> pools;

    // The pool of the loop running on this thread (made on first use).
    LoopPool& pool() {
        Loop* l = Loop::current();
        if (!l)
            throw std::logic_error(
                "redis::Client: commands must run on a vela::Loop (await them in a handler or a "
                "task spawned on a loop)");
        std::lock_guard<std::mutex> lock(mu);
        for (auto it = pools.begin(); it != pools.end(); ++it) {
            if (&(*it)->loop != l) continue;
            if ((*it)->ref.same_loop(l->ref())) return **it;
            (*it)->shutdown(false);  // a destroyed loop's pool; this loop reuses its address
            pools.erase(it);
            break;
        }
        // A new loop: also drop the pools of loops destroyed since (their sockets stay open
        // until then).
        for (auto it = pools.begin(); it != pools.end();) {
            if ((*it)->ref.alive()) {
                ++it;
                continue;
            }
            (*it)->shutdown(false);
            it = pools.erase(it);
        }
        pools.push_back(std::make_unique<LoopPool>(*l, cfg));
        return *pools.back();
    }

    ~ClientImpl() {
        Loop* here = Loop::current();
        for (auto& p : pools)
            p->shutdown(p->ref.alive() && (here == &p->loop || !p->loop.running()));
    }
};

// A subscription's connection and the messages it received.
struct SubState final : ConnOwner, std::enable_shared_from_this<SubState> {
    Loop& loop;
    std::unique_ptr<Connection> conn;
    std::deque<Message> queue;
    std::coroutine_handle<> waiter;  // next() or the subscribe confirmation
    std::exception_ptr error;
    std::size_t confirmations_left = 0;
    std::unordered_set<std::string> confirmed;  // channels the server said we are on
    std::uint64_t pongs = 0;
    bool closed = false;

    explicit SubState(Loop& l) : loop(l) {}
    SubState(const SubState&) = delete;
    SubState& operator=(const SubState&) = delete;
    ~SubState() {
        if (conn) conn->close_quietly(true);
    }

    void wake() {
        if (waiter) std::exchange(waiter, {}).resume();
    }

    void connection_dead(Connection& c, std::exception_ptr why) override {
        (void)c;
        closed = true;
        error = why;
        loop.defer([dead = std::move(conn)] {});
        wake();
    }

    void unsolicited(Reply&& r) override {
        if (r.is_error()) {
            conn->fail(std::make_exception_ptr(ServerError(r.str)));
            return;
        }
        if (r.type != Reply::Type::array || r.elements.empty()) return;
        auto& e = r.elements;
        const std::string& kind = e[0].str;
        if (kind == "message" && e.size() == 3) {
            queue.push_back(Message{std::move(e[1].str), {}, std::move(e[2].str)});
            wake();
        } else if (kind == "pmessage" && e.size() == 4) {
            queue.push_back(Message{std::move(e[2].str), std::move(e[1].str), std::move(e[3].str)});
            wake();
        } else if (kind == "subscribe" || kind == "psubscribe") {
            if (e.size() >= 2 && kind == "subscribe") confirmed.insert(e[1].str);
            if (confirmations_left > 0 && --confirmations_left == 0) wake();
        } else if (kind == "unsubscribe" && e.size() >= 2) {
            confirmed.erase(e[1].str);
        } else if (kind == "pong") {
            ++pongs;
        }
    }

    void close() noexcept {
        if (closed) return;
        closed = true;
        queue.clear();
        if (conn) {
            conn->close_quietly(true);
            loop.defer([dead = std::move(conn)] {});
        }
        if (!error) error = std::make_exception_ptr(Error("redis: the subscription was closed"));
        if (waiter) {
            // A next() still waiting: finish it from the loop, not from inside close(); by
            // then it may have been destroyed instead (its awaiter clears `waiter`).
            loop.defer([self = shared_from_this()] { self->wake(); });
        }
    }
};

namespace {

// co_await: sends commands on the current loop's pool and waits for their replies.
struct RequestAwaiter {
    ClientImpl& impl;
    const Command* cmds;
    std::size_t n;
    Request req{};
    Connection* conn = nullptr;

    RequestAwaiter(ClientImpl& i, const Command* c, std::size_t count, bool pipeline)
        : impl(i), cmds(c), n(count) {
        req.pipeline = pipeline;
    }
    RequestAwaiter(const RequestAwaiter&) = delete;
    RequestAwaiter& operator=(const RequestAwaiter&) = delete;
    ~RequestAwaiter() {
        if (conn && !req.done) conn->forget(&req);
    }
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
        Connection& c = impl.pool().pick();
        req.waiter = h;
        c.enqueue(&req, cmds, n);
        conn = &c;
    }
    void await_resume() {
        if (req.error) std::rethrow_exception(req.error);
    }
};

// co_await: waits for a subscription's confirmation or its next message. Destroyed with a
// frame abandoned while it waits (a handler dropped at the shutdown deadline), it withdraws
// the frame, so a later message or close() does not resume it.
struct SubAwaiter {
    SubState& st;
    bool for_confirmation;
    std::coroutine_handle<> self{};

    SubAwaiter(SubState& s, bool confirmation) noexcept : st(s), for_confirmation(confirmation) {}
    SubAwaiter(const SubAwaiter&) = delete;
    SubAwaiter& operator=(const SubAwaiter&) = delete;
    ~SubAwaiter() {
        if (self && st.waiter == self) st.waiter = {};
    }
    bool await_ready() const noexcept {
        return st.closed || (for_confirmation ? st.confirmations_left == 0 : !st.queue.empty());
    }
    void await_suspend(std::coroutine_handle<> h) noexcept {
        self = h;
        st.waiter = h;
    }
    void await_resume() const noexcept {}
};

}  // namespace

}  // namespace detail

// ---- Client ---------------------------------------------------------------------------------

namespace {

std::unique_ptr<detail::ClientImpl> make_impl(Url url, Options opt) {
    auto impl = std::make_unique<detail::ClientImpl>();
    detail::Config& c = impl->cfg;
    if (opt.connections_per_loop == 0) opt.connections_per_loop = 1;
    if (opt.reconnect_min.count() <= 0) opt.reconnect_min = std::chrono::milliseconds(1);
    if (opt.reconnect_max < opt.reconnect_min) opt.reconnect_max = opt.reconnect_min;
    c.address = url.address();

    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(url.port);
    const int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0 || !res)
        throw ConnectionError("redis " + c.address +
                              ": cannot resolve the host: " + ::gai_strerror(rc));
    std::memcpy(&c.addr, res->ai_addr, res->ai_addrlen);
    c.addr_len = res->ai_addrlen;
    ::freeaddrinfo(res);

    if (!url.password.empty()) {
        Command auth;
        auth.arg("AUTH");
        if (!url.user.empty()) auth.arg(url.user);
        auth.arg(url.password);
        auth.encode_to(c.handshake);
        ++c.handshake_count;
    }
    if (url.db != 0) {
        Command{"SELECT", url.db}.encode_to(c.handshake);
        ++c.handshake_count;
    }
    c.url = std::move(url);
    c.opt = opt;
    return impl;
}

}  // namespace

Client::Client(std::string_view url, Options options) : Client(Url::parse(url), options) {}

Client::Client(Url url, Options options) : impl_(make_impl(std::move(url), options)) {}

Client::~Client() = default;

const Url& Client::url() const noexcept { return impl_->cfg.url; }

const Options& Client::options() const noexcept { return impl_->cfg.opt; }

Task<Reply> Client::execute(Command cmd) {
    detail::RequestAwaiter a(*impl_, &cmd, 1, false);
    co_await a;
    if (a.req.one.is_error()) throw ServerError(a.req.one.str);
    co_return std::move(a.req.one);
}

Task<std::vector<Reply>> Client::pipeline(std::vector<Command> cmds) {
    if (cmds.empty()) co_return std::vector<Reply>{};
    detail::RequestAwaiter a(*impl_, cmds.data(), cmds.size(), true);
    a.req.many.reserve(cmds.size());
    co_await a;
    co_return std::move(a.req.many);
}

namespace {
Task<std::optional<std::string>> get_impl(Task<Reply> t) {
    Reply r = co_await std::move(t);
    if (r.is_nil()) co_return std::nullopt;
    co_return std::move(r.str);
}
Task<std::int64_t> integer_impl(Task<Reply> t) { co_return (co_await std::move(t)).as_integer(); }
Task<bool> positive_impl(Task<Reply> t) { co_return (co_await std::move(t)).as_integer() > 0; }
Task<bool> set_impl(Task<Reply> t) { co_return !(co_await std::move(t)).is_nil(); }
}  // namespace

Task<std::optional<std::string>> Client::get(std::string_view key) {
    return get_impl(command("GET", key));
}

Task<bool> Client::set(std::string_view key, std::string_view value, SetOptions opts) {
    Command c{"SET", key, value};
    if (opts.ttl.count() > 0) c.arg("PX").arg(static_cast<long long>(opts.ttl.count()));
    if (opts.if_absent) c.arg("NX");
    if (opts.if_present) c.arg("XX");
    if (opts.keep_ttl) c.arg("KEEPTTL");
    return set_impl(execute(std::move(c)));
}

Task<std::int64_t> Client::integer_reply(Task<Reply> t) { return integer_impl(std::move(t)); }

Task<std::int64_t> Client::incr(std::string_view key, std::int64_t by) {
    return integer_impl(command("INCRBY", key, by));
}

Task<bool> Client::expire(std::string_view key, std::chrono::seconds ttl) {
    return positive_impl(command("EXPIRE", key, static_cast<long long>(ttl.count())));
}

Task<bool> Client::exists(std::string_view key) { return positive_impl(command("EXISTS", key)); }

Task<std::int64_t> Client::publish(std::string_view channel, std::string_view message) {
    return integer_impl(command("PUBLISH", channel, message));
}

Task<Subscription> Client::subscribe(const std::vector<std::string>& channels) {
    if (channels.empty())
        throw std::invalid_argument("redis: subscribe needs at least one channel");
    Command c{"SUBSCRIBE"};
    for (const std::string& ch : channels) c.arg(ch);
    return open_subscription(std::move(c), channels.size());
}

Task<Subscription> Client::psubscribe(const std::vector<std::string>& patterns) {
    if (patterns.empty())
        throw std::invalid_argument("redis: psubscribe needs at least one pattern");
    Command c{"PSUBSCRIBE"};
    for (const std::string& p : patterns) c.arg(p);
    return open_subscription(std::move(c), patterns.size());
}

Task<Subscription> Client::open_subscription(Command cmd, std::size_t confirmations) {
    Loop* l = Loop::current();
    if (!l) throw std::logic_error("redis::Client: subscribe must run on a vela::Loop");
    auto st = std::make_shared<detail::SubState>(*l);
    st->confirmations_left = confirmations;
    st->conn =
        std::make_unique<detail::Connection>(*l, impl_->cfg, *st, std::chrono::milliseconds(0));
    st->conn->enqueue_unanswered(cmd);
    co_await detail::SubAwaiter(*st, true);
    if (st->error) std::rethrow_exception(st->error);
    co_return Subscription(std::move(st));
}

// ---- Subscription ---------------------------------------------------------------------------

Subscription::Subscription() noexcept = default;

Subscription::Subscription(std::shared_ptr<detail::SubState> s) noexcept : st_(std::move(s)) {}

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
    if (st_) st_->close();
}

bool Subscription::is_open() const noexcept { return st_ && !st_->closed; }

void Subscription::subscribe_more(const std::vector<std::string>& channels) {
    if (!is_open()) throw Error("redis: subscribe_more() on a closed subscription");
    if (channels.empty()) return;
    Command c{"SUBSCRIBE"};
    for (const std::string& ch : channels) c.arg(ch);
    st_->conn->enqueue_unanswered(c);
}

void Subscription::unsubscribe(const std::vector<std::string>& channels) {
    if (!is_open() || channels.empty()) return;
    Command c{"UNSUBSCRIBE"};
    for (const std::string& ch : channels) {
        c.arg(ch);
        st_->confirmed.erase(ch);
    }
    st_->conn->enqueue_unanswered(c);
}

void Subscription::ping() {
    if (!is_open()) throw Error("redis: ping() on a closed subscription");
    st_->conn->enqueue_unanswered(Command{"PING"});
}

std::uint64_t Subscription::pongs() const noexcept { return st_ ? st_->pongs : 0; }

bool Subscription::is_subscribed(std::string_view channel) const noexcept {
    return st_ && !st_->closed && st_->confirmed.count(std::string(channel)) != 0;
}

Task<Message> Subscription::next() {
    std::shared_ptr<detail::SubState> st = st_;
    if (!st) throw Error("redis: next() on a closed subscription");
    co_await detail::SubAwaiter(*st, false);
    if (st->queue.empty()) std::rethrow_exception(st->error);
    Message m = std::move(st->queue.front());
    st->queue.pop_front();
    co_return m;
}

}  // namespace vela::redis
