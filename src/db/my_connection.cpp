// One MariaDB Connector/C connection on a loop (see my_connection.hpp).
#include "my_connection.hpp"

#include <errmsg.h>
#include <fmt/format.h>
#include <mysqld_error.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include "my_result.hpp"
#include "vela/base/log.hpp"

namespace vela::db::my {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A client error that means the connection is gone.
bool connection_lost(unsigned code) {
    return code == CR_SERVER_GONE_ERROR || code == CR_SERVER_LOST || code == CR_CONNECTION_ERROR ||
           code == CR_CONN_HOST_ERROR || code == CR_SERVER_LOST_EXTENDED ||
           code == CR_UNKNOWN_HOST || code == CR_COMMANDS_OUT_OF_SYNC ||
           code == ER_CONNECTION_KILLED || code == ER_SERVER_SHUTDOWN ||
           code == ER_NEW_ABORTING_CONNECTION || code == 2026;
}

std::string where(const ConnectParams& p) {
    if (!p.socket.empty()) return p.socket;
    return fmt::format("{}:{}", p.host, p.port);
}

// The text of a binary-protocol time value, as the text protocol writes it.
void format_time(const MYSQL_TIME& t, enum_field_types type, unsigned decimals, std::string& out) {
    auto it = std::back_inserter(out);
    if (type == MYSQL_TYPE_TIME) {
        fmt::format_to(it, "{}{:02}:{:02}:{:02}", t.neg ? "-" : "", t.day * 24 + t.hour, t.minute,
                       t.second);
    } else {
        fmt::format_to(it, "{:04}-{:02}-{:02}", t.year, t.month, t.day);
        if (type == MYSQL_TYPE_DATE || type == MYSQL_TYPE_NEWDATE) return;
        fmt::format_to(it, " {:02}:{:02}:{:02}", t.hour, t.minute, t.second);
    }
    if (decimals > 0 && decimals <= 6) {
        unsigned long frac = t.second_part;
        for (unsigned i = decimals; i < 6; ++i) frac /= 10;
        fmt::format_to(it, ".{:0{}}", frac, decimals);
    }
}

// True when `sql` names GET_LOCK in any case (its connection may then hold named locks; a
// stored procedure that takes some is not seen).
bool mentions_get_lock(std::string_view sql) {
    constexpr std::string_view kName = "get_lock";
    for (std::size_t i = 0; i + kName.size() <= sql.size(); ++i) {
        std::size_t k = 0;
        while (k < kName.size()) {
            char c = sql[i + k];
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            if (c != kName[k]) break;
            ++k;
        }
        if (k == kName.size()) return true;
    }
    return false;
}

bool is_integer_type(enum_field_types t) {
    return t == MYSQL_TYPE_TINY || t == MYSQL_TYPE_SHORT || t == MYSQL_TYPE_INT24 ||
           t == MYSQL_TYPE_LONG || t == MYSQL_TYPE_LONGLONG || t == MYSQL_TYPE_YEAR;
}

bool is_time_type(enum_field_types t) {
    return t == MYSQL_TYPE_DATE || t == MYSQL_TYPE_NEWDATE || t == MYSQL_TYPE_DATETIME ||
           t == MYSQL_TYPE_TIMESTAMP || t == MYSQL_TYPE_TIME;
}

// The columns of `fields` added to `out`.
void add_columns(MyResult& out, const MYSQL_FIELD* f, unsigned n) {
    for (unsigned i = 0; i < n; ++i)
        out.add_column(std::string_view(f[i].name, f[i].name_length), f[i].charsetnr == 63,
                       f[i].type == MYSQL_TYPE_BIT);
}

// The URL's TLS options on `m`.
void apply_tls(MYSQL* m, const ConnectParams& p) {
    if (p.ssl_mode.empty()) return;
    my_bool on = 1;
    mysql_options(m, MYSQL_OPT_SSL_ENFORCE, &on);
    if (p.ssl_mode == "verify") mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
    if (!p.ssl_ca.empty()) mysql_options(m, MYSQL_OPT_SSL_CA, p.ssl_ca.c_str());
}

// KILL QUERY `id` over a blocking connection of its own (run on a short-lived thread); "" or the
// error.
std::string kill_blocking(const ConnectParams& p, unsigned long id) {
    MYSQL* m = mysql_init(nullptr);
    if (!m) return "out of memory";
    unsigned secs =
        static_cast<unsigned>(std::max<long long>(1, (p.connect_timeout.count() + 999) / 1000));
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &secs);
    mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &secs);
    mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &secs);
    mysql_options(m, MYSQL_SET_CHARSET_NAME, p.charset.c_str());
    apply_tls(m, p);
    std::string err;
    if (!mysql_real_connect(m, p.socket.empty() ? p.host.c_str() : nullptr, p.user.c_str(),
                            p.password.c_str(), nullptr, p.port,
                            p.socket.empty() ? nullptr : p.socket.c_str(), 0)) {
        err = mysql_error(m);
    } else {
        const std::string q = fmt::format("KILL QUERY {}", id);
        if (mysql_real_query(m, q.data(), q.size()) != 0 && mysql_errno(m) != ER_NO_SUCH_THREAD)
            err = mysql_error(m);
    }
    mysql_close(m);
    return err;
}

}  // namespace

// ---------------------------------------------------------------------------------------

void throw_mysql_error(unsigned code, std::string_view sqlstate, const std::string& message) {
    const std::string state(sqlstate == "00000" ? std::string_view{} : sqlstate);
    const std::string m = fmt::format("MySQL error {}: {}", code, message);
    switch (code) {
        case ER_DUP_ENTRY:
        case ER_DUP_KEY:
        case ER_DUP_ENTRY_WITH_KEY_NAME:
        case ER_DUP_UNIQUE:
            throw UniqueViolation(m, state);
        case ER_ROW_IS_REFERENCED:
        case ER_NO_REFERENCED_ROW:
        case ER_ROW_IS_REFERENCED_2:
        case ER_NO_REFERENCED_ROW_2:
            throw ForeignKeyViolation(m, state);
        case ER_BAD_NULL_ERROR:
        case ER_NO_DEFAULT_FOR_FIELD:
            throw NotNullViolation(m, state);
        case 3819:  // ER_CHECK_CONSTRAINT_VIOLATED (MySQL)
        case ER_CONSTRAINT_FAILED:
            throw CheckViolation(m, state);
        case ER_LOCK_DEADLOCK:
            throw DeadlockDetected(m, state);
        case ER_LOCK_WAIT_TIMEOUT:
        case ER_STATEMENT_TIMEOUT:
        case ER_QUERY_INTERRUPTED:
            throw TimeoutError(m, state);
        default:
            break;
    }
    if (connection_lost(code) || (code >= 2000 && code < 3000)) throw ConnectionError(m, state);
    if (state.starts_with("23")) throw ConstraintError(m, state);
    if (state.starts_with("42") || code == ER_PARSE_ERROR || code == ER_NO_SUCH_TABLE ||
        code == ER_BAD_FIELD_ERROR)
        throw StatementError(m, state);
    if (state.starts_with("08")) throw ConnectionError(m, state);
    if (state == "40001") throw SerializationFailure(m, state);
    throw Error(m, state);
}

// ---------------------------------------------------------------------------------------
// Waiting for the connector

void Connection::Step::await_suspend(std::coroutine_handle<> h) {
    c_.drain_ = fn_;
    c_.waiter_ = h;
    c_.want_ = status_;
    c_.got_ = 0;
    if (status_ & MYSQL_WAIT_TIMEOUT) c_.arm_io_timer();
}

int Connection::Step::await_resume() {
    c_.waiter_ = {};
    const int st = fn_(c_, c_.got_);
    if (st == 0) c_.drain_ = nullptr;
    return st;
}

Connection::Connection(Loop& loop, const ConnectParams& params)
    : loop_(loop), ref_(loop.ref()), params_(params) {
    handle_.kind = IoHandle::watch;
    handle_.sink = this;
}

Connection::~Connection() { close_on_loop(on_own_loop()); }

bool Connection::on_own_loop() const {
    Loop* l = Loop::current();
    return l == &loop_ && ref_.same_loop(l->ref());
}

void Connection::watch_socket() {
    const int fd = static_cast<int>(mysql_get_socket(my_));
    if (fd == handle_.fd && handle_.registered) return;
    if (handle_.registered) loop_.io().remove(handle_);
    handle_.fd = fd;
    if (fd >= 0) loop_.io().add(handle_);
}

void Connection::arm_io_timer() {
    const unsigned ms = mysql_get_timeout_value_ms(my_);
    io_timer_ = loop_.call_after(milliseconds(ms), [w = weak_from_this()] {
        if (auto c = w.lock()) {
            c->io_timer_ = 0;
            c->wake(MYSQL_WAIT_TIMEOUT);
        }
    });
}

void Connection::wake(int events) {
    if (!waiter_) return;
    const int ev = events & want_;
    if (ev == 0) return;
    if (io_timer_) loop_.cancel(io_timer_), io_timer_ = 0;
    got_ = ev;
    std::exchange(waiter_, {}).resume();
}

// The loop reads the handle after the callback: an operation resumed from it that drops the
// last reference (its statement ended, the pool let the connection go) must not destroy the
// connection before the callback returns.
void Connection::keep_through_callback(std::shared_ptr<Connection> self) {
    if (self.use_count() == 1) loop_.defer([s = std::move(self)] {});
}

void Connection::on_ready() {
    if (waiter_) {
        auto self = shared_from_this();
        wake(MYSQL_WAIT_READ | (want_ & MYSQL_WAIT_WRITE));
        return keep_through_callback(std::move(self));
    }
    // Readable while idle: the server closed the connection (shutdown, wait_timeout, KILL),
    // maybe after an error packet; nothing else is sent unasked. An edge can also come late
    // for bytes the last operation already read: then there is nothing to read.
    if (state_ == State::ready && !busy_ && handle_.fd >= 0) {
        char b;
        const ssize_t n = ::recv(handle_.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        log::debug("MySQL: connection {} closed by the server", thread_id_);
        close();
    }
}

void Connection::on_write_ready() {
    if (!waiter_) return;
    auto self = shared_from_this();
    wake(MYSQL_WAIT_WRITE);
    keep_through_callback(std::move(self));
}

// Cuts the socket under an operation that does not end: the connector's next read fails.
void Connection::abort_io() {
    if (handle_.fd >= 0) ::shutdown(handle_.fd, SHUT_RDWR);
    wake(want_ | MYSQL_WAIT_READ | MYSQL_WAIT_WRITE);
}

// ---------------------------------------------------------------------------------------
// One operation at a time

// Marks the connection busy for an operation; on the way out, a connection whose operation was
// abandoned midway (its coroutine destroyed while the connector waited) is closed.
class Connection::Running {
  public:
    Running(Connection& c, bool timed) : c_(c) { c.begin_op(timed); }
    ~Running() { c_.end_op(); }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;

  private:
    Connection& c_;
};

void Connection::begin_op(bool timed) {
    if (state_ != State::ready)
        throw ConnectionError(fmt::format("MySQL: the connection to {} is closed", where(params_)));
    if (busy_) throw Error("MySQL: a connection runs one statement at a time");
    if (kill_pending_ > 0) {
        // The KILL QUERY of the last statement's timeout is still on its way: it would hit
        // this one. (The pool never lends such a connection; a transaction may hold one.)
        close();
        throw ConnectionError(
            "MySQL: the connection was closed: the KILL QUERY of the previous statement's "
            "timeout had not landed yet");
    }
    busy_ = true;
    timed_out_ = false;
    if (timed && params_.query_timeout.count() > 0) {
        query_timer_ = loop_.call_after(params_.query_timeout, [w = weak_from_this()] {
            if (auto c = w.lock()) {
                c->query_timer_ = 0;
                c->on_query_timeout();
            }
        });
    }
}

void Connection::end_op() noexcept {
    busy_ = false;
    // (An operation abandoned after its loop stopped must not touch the loop.)
    const bool on_loop = on_own_loop();
    if (on_loop && query_timer_) loop_.cancel(query_timer_);
    if (on_loop && stop_timer_) loop_.cancel(stop_timer_);
    query_timer_ = stop_timer_ = 0;
    last_used_ = Clock::now();
    if (waiter_ || drain_) {
        waiter_ = {};
        close_on_loop(on_loop);
    }
}

void Connection::on_query_timeout() {
    if (!busy_ || state_ != State::ready) return;
    timed_out_ = true;
    ++kill_pending_;
    kill_query(params_, thread_id_, weak_from_this(), loop_.ref());
    // A server that does not answer even then: cut the connection.
    const milliseconds grace = std::max(params_.connect_timeout, milliseconds(1000)) * 2;
    stop_timer_ = loop_.call_after(grace, [w = weak_from_this()] {
        if (auto c = w.lock()) {
            c->stop_timer_ = 0;
            if (c->busy_) c->abort_io();
        }
    });
}

// KILL QUERY from a short-lived thread of its own (connecting and the KILL block); the result
// comes back to the loop by a post, to a connection that may be gone by then.
void Connection::kill_query(ConnectParams p, unsigned long id, std::weak_ptr<Connection> w,
                            LoopRef loop) {
    std::thread([p = std::move(p), id, w = std::move(w), loop = std::move(loop)]() mutable {
        std::string err = kill_blocking(p, id);
        loop.post([w = std::move(w), err = std::move(err), id] {
            if (auto c = w.lock()) --c->kill_pending_;
            if (!err.empty()) log::warn("MySQL: KILL QUERY {} failed: {}", id, err);
        });
    }).detach();
}

void Connection::close_on_loop(bool on_loop) noexcept {
    if (state_ == State::closed && !my_) return;
    state_ = State::closed;
    if (on_loop) {
        if (io_timer_) loop_.cancel(io_timer_), io_timer_ = 0;
        if (query_timer_) loop_.cancel(query_timer_), query_timer_ = 0;
        if (stop_timer_) loop_.cancel(stop_timer_), stop_timer_ = 0;
        if (handle_.registered) {
            loop_.io().remove(handle_);
            // The loop may still hold an event of this batch for the handle: keep the
            // connection (and its handle) until the batch ends.
            if (auto self = weak_from_this().lock()) loop_.defer([self] {});
        }
    }
    if (!my_) return;
    if (drain_) {
        // An operation was abandoned inside the connector: cancel it and let it run out.
        mariadb_cancel(my_);
        if (handle_.fd >= 0) ::shutdown(handle_.fd, SHUT_RDWR);
        int st = 1;
        for (int i = 0; st != 0 && i < 64; ++i)
            st = drain_(*this, MYSQL_WAIT_READ | MYSQL_WAIT_WRITE);
        drain_ = nullptr;
    }
    mysql_close(my_);
    my_ = nullptr;
    // The statements were detached from the connection by mysql_close: this frees them.
    for (Prepared& p : lru_) mysql_stmt_close(p.stmt);
    lru_.clear();
    cache_.clear();
}

// ---------------------------------------------------------------------------------------
// Connecting

Task<void> Connection::connect() {
    state_ = State::connecting;
    my_ = mysql_init(nullptr);
    if (!my_) {
        state_ = State::closed;
        throw ConnectionError("MySQL: out of memory");
    }
    mysql_options(my_, MYSQL_OPT_NONBLOCK, nullptr);
    mysql_options(my_, MYSQL_SET_CHARSET_NAME, params_.charset.c_str());
    unsigned secs = static_cast<unsigned>(
        std::max<long long>(1, (params_.connect_timeout.count() + 999) / 1000));
    mysql_options(my_, MYSQL_OPT_CONNECT_TIMEOUT, &secs);
    // Times travel as UTC (DATETIME has no zone; TIMESTAMP converts with the session's).
    mysql_options(my_, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
    apply_tls(my_, params_);
    // The whole attempt (DNS, TCP, TLS, authentication) is bounded by connect_timeout.
    bool late = false;
    stop_timer_ = loop_.call_after(params_.connect_timeout, [w = weak_from_this(), &late] {
        if (auto c = w.lock()) {
            c->stop_timer_ = 0;
            late = true;
            c->abort_io();
        }
    });
    busy_ = true;
    int st = mysql_real_connect_start(
        &ret_my_, my_, params_.socket.empty() ? params_.host.c_str() : nullptr,
        params_.user.c_str(), params_.password.c_str(),
        params_.database.empty() ? nullptr : params_.database.c_str(), params_.port,
        params_.socket.empty() ? nullptr : params_.socket.c_str(),
        CLIENT_MULTI_STATEMENTS | CLIENT_FOUND_ROWS);
    struct Done {
        Connection& c;
        ~Done() {
            c.busy_ = false;
            const bool on_loop = c.on_own_loop();
            if (on_loop && c.stop_timer_) c.loop_.cancel(c.stop_timer_);
            c.stop_timer_ = 0;
            if (c.waiter_ || c.drain_) {
                c.waiter_ = {};
                c.close_on_loop(on_loop);
            }
        }
    } done{*this};
    while (st) {
        watch_socket();
        st = co_await step(st, [](Connection& c, int ev) {
            return mysql_real_connect_cont(&c.ret_my_, c.my_, ev);
        });
    }
    if (!ret_my_) {
        std::string why =
            late ? fmt::format("timed out after {} ms", params_.connect_timeout.count())
                 : std::string(mysql_error(my_));
        close();
        throw ConnectionError(
            fmt::format("MySQL: connecting to {} failed: {}", where(params_), why));
    }
    watch_socket();
    thread_id_ = mysql_thread_id(my_);
    state_ = State::ready;
    born_ = last_used_ = Clock::now();
}

// ---------------------------------------------------------------------------------------
// Statements

void Connection::fail(MYSQL_STMT* stmt) {
    const unsigned code = stmt ? mysql_stmt_errno(stmt) : mysql_errno(my_);
    std::string state = stmt ? mysql_stmt_sqlstate(stmt) : mysql_sqlstate(my_);
    std::string message = stmt ? mysql_stmt_error(stmt) : mysql_error(my_);
    const bool lost = connection_lost(code);
    if (lost) close();
    if (timed_out_)
        throw TimeoutError(fmt::format("MySQL: the statement ran past query_timeout ({} ms) and "
                                       "was cancelled",
                                       params_.query_timeout.count()),
                           "70100");
    if (lost)
        throw ConnectionError(
            fmt::format("MySQL: the connection to {} was lost: {}", where(params_), message),
            state);
    throw_mysql_error(code, state, message);
}

Task<Connection::Prepared*> Connection::prepare(std::string_view sql) {
    if (auto it = cache_.find(sql); it != cache_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        co_return &*it->second;
    }
    Prepared p;
    std::string text = translate_placeholders(sql, p.order);
    p.sql.assign(sql);
    p.stmt = mysql_stmt_init(my_);
    if (!p.stmt) throw Error("MySQL: out of memory");
    my_bool on = 1;
    mysql_stmt_attr_set(p.stmt, STMT_ATTR_UPDATE_MAX_LENGTH, &on);
    cur_ = p.stmt;
    int st = mysql_stmt_prepare_start(&ret_int_, p.stmt, text.data(), text.size());
    while (st)
        st = co_await step(st, [](Connection& c, int ev) {
            return mysql_stmt_prepare_cont(&c.ret_int_, c.cur_, ev);
        });
    if (ret_int_ != 0) {
        try {
            fail(p.stmt);
        } catch (...) {
            mysql_stmt_close(p.stmt);  // nothing was prepared: no round trip
            throw;
        }
    }
    p.fields = mysql_stmt_field_count(p.stmt);
    if (mysql_stmt_param_count(p.stmt) != p.order.size()) {
        // Text the translator reads otherwise than the server (a /*! ... */ comment, the
        // NO_BACKSLASH_ESCAPES mode): binding would not match the statement.
        const unsigned long server = mysql_stmt_param_count(p.stmt);
        mysql_stmt_close(p.stmt);
        throw MappingError(fmt::format(
            "MySQL counts {} placeholders in the statement where vela found {}: write them as "
            "$1, $2 ... outside /*! */ comments",
            server, p.order.size()));
    }
    // Drop the least recently used statement beyond the cache's size.
    if (params_.statement_cache > 0 && lru_.size() >= params_.statement_cache) {
        Prepared& old = lru_.back();
        cache_.erase(old.sql);
        MYSQL_STMT* victim = old.stmt;
        lru_.pop_back();
        co_await close_statement(victim);
    }
    lru_.push_front(std::move(p));
    cache_.emplace(lru_.front().sql, lru_.begin());
    co_return &lru_.front();
}

Task<void> Connection::close_statement(MYSQL_STMT* stmt) {
    cur_ = stmt;
    int st = mysql_stmt_close_start(&ret_bool_, stmt);
    while (st)
        st = co_await step(st, [](Connection& c, int ev) {
            return mysql_stmt_close_cont(&c.ret_bool_, c.cur_, ev);
        });
}

namespace {

// A parameter as the connector binds it.
struct ParamSlot {
    long long i = 0;
    double d = 0;
    signed char b = 0;
    MYSQL_TIME t{};
};

void bind_param(MYSQL_BIND& b, ParamSlot& s, const Param& p, std::size_t index) {
    std::memset(&b, 0, sizeof b);
    switch (p.kind) {
        case Param::Kind::null:
            b.buffer_type = MYSQL_TYPE_NULL;
            break;
        case Param::Kind::boolean:
            s.b = p.boolean ? 1 : 0;
            b.buffer_type = MYSQL_TYPE_TINY;
            b.buffer = &s.b;
            break;
        case Param::Kind::integer:
            s.i = p.integer;
            b.buffer_type = MYSQL_TYPE_LONGLONG;
            b.buffer = &s.i;
            break;
        case Param::Kind::real:
            s.d = p.real;
            b.buffer_type = MYSQL_TYPE_DOUBLE;
            b.buffer = &s.d;
            break;
        case Param::Kind::text:
        case Param::Kind::json:
        case Param::Kind::bytes:
            b.buffer_type = p.kind == Param::Kind::bytes ? MYSQL_TYPE_BLOB : MYSQL_TYPE_STRING;
            b.buffer = const_cast<char*>(p.text.data());
            b.buffer_length = p.text.size();
            break;
        case Param::Kind::time: {
            // Microseconds since the epoch, UTC, as a DATETIME(6).
            using namespace std::chrono;
            const sys_time<microseconds> tp{microseconds(p.integer)};
            const auto day = floor<days>(tp);
            const year_month_day ymd{day};
            const hh_mm_ss<microseconds> hms{tp - day};
            if (int(ymd.year()) < 1 || int(ymd.year()) > 9999)
                throw MappingError(
                    fmt::format("time parameter ${} is outside years 1 to 9999", index + 1));
            s.t.year = static_cast<unsigned>(int(ymd.year()));
            s.t.month = static_cast<unsigned>(ymd.month());
            s.t.day = static_cast<unsigned>(ymd.day());
            s.t.hour = static_cast<unsigned>(hms.hours().count());
            s.t.minute = static_cast<unsigned>(hms.minutes().count());
            s.t.second = static_cast<unsigned>(hms.seconds().count());
            s.t.second_part = static_cast<unsigned long>(hms.subseconds().count());
            s.t.time_type = MYSQL_TIMESTAMP_DATETIME;
            b.buffer_type = MYSQL_TYPE_DATETIME;
            b.buffer = &s.t;
            break;
        }
    }
}

// A result column as the connector fetches it.
struct ColumnSlot {
    long long i = 0;
    double d = 0;
    MYSQL_TIME t{};
    std::string buf;
    unsigned long length = 0;
    my_bool null = 0;
    my_bool error = 0;
};

}  // namespace

Task<Result> Connection::execute(std::string_view sql, std::span<const Param> params,
                                 bool prepare_it) {
    Running running(*this, true);
    if (mentions_get_lock(sql)) named_locks_ = true;
    Prepared* p = co_await prepare(sql);
    MYSQL_STMT* stmt = p->stmt;
    struct Unprepare {  // a statement not kept (prepare off, or no cache) is closed after
        Connection& c;
        Prepared* p;
        bool keep;
        ~Unprepare() {
            // (Abandoned midway, the connection closes and frees its statements itself.)
            if (keep || c.state_ != State::ready || c.drain_ || c.waiter_) return;
            // COM_STMT_CLOSE has no answer: one small write, sent with the next statement's.
            c.cache_.erase(p->sql);
            for (auto it = c.lru_.begin(); it != c.lru_.end(); ++it)
                if (&*it == p) {
                    mysql_stmt_close(it->stmt);
                    c.lru_.erase(it);
                    break;
                }
        }
    } unprepare{*this, p, prepare_it && params_.statement_cache > 0};
    // $N -> ?: the binds in the order of the ?s.
    std::size_t needed = 0;
    for (std::uint16_t i : p->order) needed = std::max<std::size_t>(needed, i + 1u);
    if (needed != params.size() && !(p->order.empty() && params.empty()))
        throw MappingError(fmt::format("the statement takes {} parameter{}, {} given", needed,
                                       needed == 1 ? "" : "s", params.size()));
    std::vector<MYSQL_BIND> binds(p->order.size());
    std::vector<ParamSlot> slots(p->order.size());
    for (std::size_t i = 0; i < p->order.size(); ++i)
        bind_param(binds[i], slots[i], params[p->order[i]], p->order[i]);
    if (!binds.empty() && mysql_stmt_bind_param(stmt, binds.data())) fail(stmt);
    cur_ = stmt;
    int st = mysql_stmt_execute_start(&ret_int_, stmt);
    while (st)
        st = co_await step(st, [](Connection& c, int ev) {
            return mysql_stmt_execute_cont(&c.ret_int_, c.cur_, ev);
        });
    if (ret_int_ != 0) fail(stmt);
    MYSQL_RES* meta = mysql_stmt_result_metadata(stmt);
    if (!meta) {
        auto out = std::make_shared<MyResult>();
        out->set_affected(mysql_stmt_affected_rows(stmt));
        out->set_last_insert_id(mysql_stmt_insert_id(stmt));
        co_return Result(std::move(out));
    }
    co_return co_await fetch(stmt, meta);
}

Task<Result> Connection::fetch(MYSQL_STMT* stmt, MYSQL_RES* meta) {
    struct FreeMeta {
        MYSQL_RES* m;
        ~FreeMeta() { mysql_free_result(m); }
    } free_meta{meta};
    const unsigned n = mysql_num_fields(meta);
    const MYSQL_FIELD* f = mysql_fetch_fields(meta);
    auto out = std::make_shared<MyResult>();
    add_columns(*out, f, n);
    cur_ = stmt;
    int st = mysql_stmt_store_result_start(&ret_int_, stmt);
    while (st)
        st = co_await step(st, [](Connection& c, int ev) {
            return mysql_stmt_store_result_cont(&c.ret_int_, c.cur_, ev);
        });
    if (ret_int_ != 0) fail(stmt);
    // The stored rows are in memory now: fetching them does no I/O.
    std::vector<MYSQL_BIND> binds(n);
    std::vector<ColumnSlot> cols(n);
    for (unsigned i = 0; i < n; ++i) {
        MYSQL_BIND& b = binds[i];
        ColumnSlot& s = cols[i];
        std::memset(&b, 0, sizeof b);
        b.length = &s.length;
        b.is_null = &s.null;
        b.error = &s.error;
        if (is_integer_type(f[i].type)) {
            b.buffer_type = MYSQL_TYPE_LONGLONG;
            b.buffer = &s.i;
            b.is_unsigned = (f[i].flags & UNSIGNED_FLAG) != 0;
        } else if (f[i].type == MYSQL_TYPE_FLOAT || f[i].type == MYSQL_TYPE_DOUBLE) {
            b.buffer_type = MYSQL_TYPE_DOUBLE;
            b.buffer = &s.d;
        } else if (is_time_type(f[i].type)) {
            b.buffer_type = f[i].type;
            b.buffer = &s.t;
            b.buffer_length = sizeof s.t;
        } else {
            s.buf.resize(std::max<unsigned long>(f[i].max_length, 1));
            b.buffer_type = MYSQL_TYPE_STRING;
            b.buffer = s.buf.data();
            b.buffer_length = s.buf.size();
        }
    }
    if (n > 0 && mysql_stmt_bind_result(stmt, binds.data())) fail(stmt);
    out->reserve(mysql_stmt_num_rows(stmt));
    for (;;) {
        const int r = mysql_stmt_fetch(stmt);
        if (r == MYSQL_NO_DATA) break;
        if (r == 1) fail(stmt);
        out->begin_row();
        for (unsigned i = 0; i < n; ++i) {
            ColumnSlot& s = cols[i];
            if (s.null) {
                out->add_null();
                continue;
            }
            std::string& a = out->cell_arena();
            const std::size_t start = a.size();
            const MYSQL_BIND& b = binds[i];
            if (b.buffer_type == MYSQL_TYPE_LONGLONG) {
                char buf[24];
                auto e = b.is_unsigned ? std::to_chars(buf, buf + sizeof buf,
                                                       static_cast<unsigned long long>(s.i))
                                       : std::to_chars(buf, buf + sizeof buf, s.i);
                a.append(buf, e.ptr);
            } else if (b.buffer_type == MYSQL_TYPE_DOUBLE) {
                if (f[i].type == MYSQL_TYPE_FLOAT)
                    fmt::format_to(std::back_inserter(a), "{}", static_cast<float>(s.d));
                else
                    fmt::format_to(std::back_inserter(a), "{}", s.d);
            } else if (b.buffer == &s.t) {
                format_time(s.t, f[i].type, f[i].decimals, a);
            } else if (s.length > s.buf.size()) {
                // Longer than max_length said (it should not be): fetch the whole value.
                a.resize(start + s.length);
                MYSQL_BIND one{};
                unsigned long len = 0;
                one.buffer_type = MYSQL_TYPE_STRING;
                one.buffer = a.data() + start;
                one.buffer_length = s.length;
                one.length = &len;
                if (mysql_stmt_fetch_column(stmt, &one, i, 0)) fail(stmt);
            } else {
                a.append(s.buf.data(), s.length);
            }
            out->end_cell(start);
        }
    }
    // Further result sets (a CALL) are read and dropped: the first one is the result.
    while (mysql_stmt_more_results(stmt)) {
        mysql_stmt_free_result(stmt);
        st = mysql_stmt_next_result_start(&ret_int_, stmt);
        while (st)
            st = co_await step(st, [](Connection& c, int ev) {
                return mysql_stmt_next_result_cont(&c.ret_int_, c.cur_, ev);
            });
        if (ret_int_ > 0) fail(stmt);
        if (ret_int_ < 0) break;
        if (mysql_stmt_field_count(stmt) > 0) {
            st = mysql_stmt_store_result_start(&ret_int_, stmt);
            while (st)
                st = co_await step(st, [](Connection& c, int ev) {
                    return mysql_stmt_store_result_cont(&c.ret_int_, c.cur_, ev);
                });
            if (ret_int_ != 0) fail(stmt);
        }
    }
    mysql_stmt_free_result(stmt);
    co_return Result(std::move(out));
}

Task<Result> Connection::script(std::string_view sql) {
    Running running(*this, true);
    if (mentions_get_lock(sql)) named_locks_ = true;
    int st = mysql_real_query_start(&ret_int_, my_, sql.data(), sql.size());
    while (st)
        st = co_await step(st, [](Connection& c, int ev) {
            return mysql_real_query_cont(&c.ret_int_, c.my_, ev);
        });
    if (ret_int_ != 0) fail(nullptr);
    co_return co_await text_results();
}

Task<Result> Connection::text_results() {
    Result last;
    for (;;) {
        auto out = std::make_shared<MyResult>();
        if (mysql_field_count(my_) > 0) {
            int st = mysql_store_result_start(&ret_res_, my_);
            while (st)
                st = co_await step(st, [](Connection& c, int ev) {
                    return mysql_store_result_cont(&c.ret_res_, c.my_, ev);
                });
            if (!ret_res_) fail(nullptr);
            MYSQL_RES* res = std::exchange(ret_res_, nullptr);
            const unsigned n = mysql_num_fields(res);
            add_columns(*out, mysql_fetch_fields(res), n);
            out->reserve(mysql_num_rows(res));
            while (MYSQL_ROW row = mysql_fetch_row(res)) {
                const unsigned long* len = mysql_fetch_lengths(res);
                out->begin_row();
                for (unsigned i = 0; i < n; ++i) {
                    if (!row[i])
                        out->add_null();
                    else
                        out->add_cell(std::string_view(row[i], len[i]));
                }
            }
            mysql_free_result(res);
        } else {
            out->set_affected(mysql_affected_rows(my_));
            out->set_last_insert_id(mysql_insert_id(my_));
        }
        last = Result(std::move(out));
        if (!mysql_more_results(my_)) break;
        int st = mysql_next_result_start(&ret_int_, my_);
        while (st)
            st = co_await step(st, [](Connection& c, int ev) {
                return mysql_next_result_cont(&c.ret_int_, c.my_, ev);
            });
        if (ret_int_ > 0) fail(nullptr);
        if (ret_int_ < 0) break;
    }
    co_return last;
}

Task<bool> Connection::ping() {
    if (state_ != State::ready || busy_) co_return false;
    Running running(*this, false);
    // A half-open connection does not answer: give up after connect_timeout.
    stop_timer_ = loop_.call_after(params_.connect_timeout, [w = weak_from_this()] {
        if (auto c = w.lock()) {
            c->stop_timer_ = 0;
            if (c->busy_) c->abort_io();
        }
    });
    int st = mysql_ping_start(&ret_int_, my_);
    while (st)
        st = co_await step(
            st, [](Connection& c, int ev) { return mysql_ping_cont(&c.ret_int_, c.my_, ev); });
    if (ret_int_ != 0) {
        close();
        co_return false;
    }
    co_return true;
}

}  // namespace vela::db::my
