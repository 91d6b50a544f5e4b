// One libpq connection on a loop (see pg_connection.hpp).
#include "pg_connection.hpp"

#include <fmt/format.h>

#include <poll.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "pg_text.hpp"
#include "vela/base/log.hpp"

namespace vela::db::pg {

namespace {

using Clock = std::chrono::steady_clock;

// Type OIDs of the parameters (pg_type.h).
constexpr Oid kBool = 16, kBytea = 17, kInt8 = 20, kFloat8 = 701, kTimestamptz = 1184;

}  // namespace

std::string one_line(const char* m) {
    std::string s = m ? m : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    if (auto nl = s.find('\n'); nl != std::string::npos) s.replace(nl, s.size() - nl, "");
    return s.empty() ? std::string("connection lost") : s;
}

std::string server_message(const PGresult* r) {
    const char* primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    std::string m = primary ? primary : one_line(PQresultErrorMessage(r));
    if (const char* d = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL))
        m.append(" (").append(d).append(")");
    if (const char* h = PQresultErrorField(r, PG_DIAG_MESSAGE_HINT)) m.append(" hint: ").append(h);
    return m;
}

namespace {

// Parameters as libpq wants them: text values (binary for bytea) with their type OIDs.
struct ParamArrays {
    std::vector<Oid> types;
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    std::string storage;               // the texts, one after another
    std::vector<std::size_t> offsets;  // where each text starts (SIZE_MAX: NULL or bytes)

    void build(std::span<const Param> ps) {
        const std::size_t n = ps.size();
        types.assign(n, 0);
        values.assign(n, nullptr);
        lengths.assign(n, 0);
        formats.assign(n, 0);
        offsets.assign(n, SIZE_MAX);
        storage.clear();
        for (std::size_t i = 0; i < n; ++i) {
            const Param& p = ps[i];
            const std::size_t at = storage.size();
            switch (p.kind) {
                case Param::Kind::null:
                    continue;
                case Param::Kind::boolean:
                    types[i] = kBool;
                    storage.push_back(p.boolean ? 't' : 'f');
                    break;
                case Param::Kind::integer: {
                    types[i] = kInt8;
                    char buf[24];
                    auto r = std::to_chars(buf, buf + sizeof buf, p.integer);
                    storage.append(buf, r.ptr);
                    break;
                }
                case Param::Kind::real:
                    types[i] = kFloat8;
                    format_real(p.real, storage);
                    break;
                case Param::Kind::time:
                    types[i] = kTimestamptz;
                    if (!format_timestamp(p.integer, storage))
                        throw MappingError(
                            fmt::format("time parameter ${} is before year 1", i + 1));
                    break;
                case Param::Kind::text:
                case Param::Kind::json:
                    storage.append(p.text);  // type 0: the server infers it from the statement
                    break;
                case Param::Kind::bytes:
                    types[i] = kBytea;
                    formats[i] = 1;
                    values[i] = p.text.data();
                    lengths[i] = static_cast<int>(p.text.size());
                    continue;
            }
            offsets[i] = at;
            lengths[i] = static_cast<int>(storage.size() - at);
            storage.push_back('\0');
        }
        for (std::size_t i = 0; i < n; ++i)
            if (offsets[i] != SIZE_MAX) values[i] = storage.data() + offsets[i];
    }
};

thread_local ParamArrays t_params;

// Cancels the query running on `conn` from a thread of its own: PQcancel opens a connection
// and blocks, which the loop must not.
void cancel_off_loop(PGconn* conn) {
    PGcancel* c = PQgetCancel(conn);
    if (!c) return;
    std::thread([c] {
        char err[256];
        PQcancel(c, err, sizeof err);
        PQfreeCancel(c);
    }).detach();
}

}  // namespace

// ---------------------------------------------------------------------------------------

void check_params(std::span<const Param> params) {
    std::string scratch;
    for (std::size_t i = 0; i < params.size(); ++i) {
        const Param& p = params[i];
        if ((p.kind == Param::Kind::text || p.kind == Param::Kind::json) &&
            p.text.find('\0') != std::string::npos)
            throw MappingError(fmt::format(
                "parameter ${} holds a NUL byte, which PostgreSQL text cannot store (bind it as "
                "db::Bytes for bytea)",
                i + 1));
        if (p.kind == Param::Kind::time && !format_timestamp(p.integer, scratch))
            throw MappingError(fmt::format("time parameter ${} is before year 1", i + 1));
        if (p.kind == Param::Kind::bytes && p.text.size() > INT32_MAX)
            throw MappingError(fmt::format("parameter ${} is larger than 2 GiB", i + 1));
    }
    if (params.size() > 65535) throw MappingError("more than 65535 parameters");
}

ConnectParams parse_url(std::string_view url) {
    std::string s(url);
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(s.c_str(), &err);
    if (!opts) {
        std::string why = err ? one_line(err) : "out of memory";
        PQfreemem(err);
        throw Error(fmt::format(
            "bad PostgreSQL URL: {} (expected postgres://user:password@host:port/db?param=value)",
            why));
    }
    ConnectParams p;
    std::string options;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
        if (!o->val) continue;
        if (std::strcmp(o->keyword, "options") == 0) {
            options = o->val;
            continue;
        }
        p.keys.emplace_back(o->keyword);
        p.values.emplace_back(o->val);
    }
    PQconninfoFree(opts);
    // Timestamps come back in UTC (the readers take them so); text in UTF-8.
    options += options.empty() ? "-c TimeZone=UTC" : " -c TimeZone=UTC";
    p.keys.emplace_back("options");
    p.values.push_back(std::move(options));
    p.keys.emplace_back("client_encoding");
    p.values.emplace_back("UTF8");
    p.keys.emplace_back("fallback_application_name");
    p.values.emplace_back("vela");
    return p;
}

void throw_outcome(const Outcome& o) {
    switch (o.kind) {
        case Outcome::Kind::connection:
            throw ConnectionError(o.message);
        case Outcome::Kind::timeout:
            throw TimeoutError(o.message);
        case Outcome::Kind::server_error:
            throw_error(o.message, o.sqlstate);
        default:
            throw Error(o.message.empty() ? std::string("statement failed") : o.message);
    }
}

void Op::abandon() noexcept {
    if (conn_) conn_->abandon(*this);
}

// ---------------------------------------------------------------------------------------

Connection::Connection(Loop& loop, const ConnectParams& params, ConnectionOwner* owner)
    : loop_(loop), params_(params), owner_(owner) {
    handle_.kind = IoHandle::watch;
    handle_.sink = this;
}

Connection::~Connection() {
    if (state_ != State::closed && conn_) close_off_loop();
}

void Connection::connect() {
    std::vector<const char*> keys, values;
    for (std::size_t i = 0; i < params_.keys.size(); ++i) {
        keys.push_back(params_.keys[i].c_str());
        values.push_back(params_.values[i].c_str());
    }
    keys.push_back(nullptr);
    values.push_back(nullptr);
    state_ = State::connecting;
    conn_ = PQconnectStartParams(keys.data(), values.data(), 0);
    auto self = shared_from_this();
    if (!conn_ || PQstatus(conn_) == CONNECTION_BAD) {
        std::string why = conn_ ? one_line(PQerrorMessage(conn_)) : "out of memory";
        loop_.defer([self, why] { self->close(why); });
        return;
    }
    PQsetnonblocking(conn_, 1);
    // Server notices (e.g. "table does not exist, skipping") go to the log, not stderr.
    PQsetNoticeProcessor(
        conn_, [](void*, const char* m) { log::debug("PostgreSQL: {}", one_line(m)); }, nullptr);
    connect_timer_ = loop_.call_after(params_.connect_timeout, [w = weak_from_this()] {
        if (auto c = w.lock()) {
            c->connect_timer_ = 0;
            if (c->state_ == State::connecting)
                c->close(fmt::format("connecting to PostgreSQL timed out after {} ms",
                                     c->params_.connect_timeout.count()));
        }
    });
    // The first poll step runs from the loop: owners hear nothing from inside connect().
    loop_.defer([self] {
        if (self->state_ == State::connecting) self->drive_connect();
    });
}

// Registers the current socket (libpq may switch sockets while connecting, e.g. to the next
// host): one watch registration per socket.
void Connection::watch_socket() {
    int fd = PQsocket(conn_);
    if (fd == handle_.fd && handle_.registered) return;
    if (handle_.registered) loop_.io().remove(handle_);
    handle_.fd = fd;
    if (fd >= 0) loop_.io().add(handle_);
}

bool ready_now(int fd, short events) {
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
}

void Connection::drive_connect() {
    for (;;) {
        PostgresPollingStatusType st = PQconnectPoll(conn_);
        if (st == PGRES_POLLING_FAILED) return close(one_line(PQerrorMessage(conn_)));
        if (st == PGRES_POLLING_OK) return connected();
        watch_socket();
        // Wait for the edge libpq asked for, unless the socket is ready already (its edge may
        // have come before libpq wanted it, or libpq left bytes unread).
        if (!ready_now(handle_.fd, st == PGRES_POLLING_READING ? POLLIN : POLLOUT)) return;
    }
}

void Connection::connected() {
    if (connect_timer_) loop_.cancel(connect_timer_), connect_timer_ = 0;
    watch_socket();
    if (PQenterPipelineMode(conn_) != 1) return close(one_line(PQerrorMessage(conn_)));
    state_ = State::ready;
    born_ = last_used_ = Clock::now();
    if (owner_) owner_->on_connected(*this);
}

void Connection::on_ready() {
    if (state_ == State::connecting) return drive_connect();
    if (state_ != State::ready) return;
    if (direct_) return direct_->on_edge(true);
    read_results();
}

void Connection::on_write_ready() {
    if (state_ == State::connecting) return drive_connect();
    if (state_ == State::ready && direct_) return direct_->on_edge(false);
    if (state_ == State::ready && want_write_) flush();
}

bool Connection::begin_direct(DirectUser& u) {
    if (!usable() || !entries_.empty()) return false;
    if (PQexitPipelineMode(conn_) != 1) return send_failed();
    direct_ = &u;
    return true;
}

void Connection::end_direct() {
    if (!direct_) return;
    direct_ = nullptr;
    if (state_ == State::ready && PQenterPipelineMode(conn_) != 1)
        close(one_line(PQerrorMessage(conn_)));
}

// ---------------------------------------------------------------------------------------
// Sending

bool Connection::send_failed() {
    std::string why = one_line(PQerrorMessage(conn_));
    // Fail the others from the loop: the caller is inside an await_suspend.
    loop_.defer([self = shared_from_this(), why] {
        if (self->state_ != State::closed) self->close(why);
    });
    broken_ = true;
    return false;
}

const Connection::Prepared* Connection::prepared_for(std::string_view key, bool& fresh,
                                                     std::string_view sql,
                                                     std::span<const Oid> types) {
    fresh = false;
    if (auto it = cache_.find(key); it != cache_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->confirmed ? &*it->second : nullptr;  // in flight: not yet usable
    }
    if (lru_.size() >= params_.statement_cache) {
        // Drop the least recently used confirmed one (statements already sent with it run
        // first: the pipeline is in order).
        for (auto it = std::prev(lru_.end());; --it) {
            if (it->confirmed) {
                submit_detached("DEALLOCATE " + it->name);
                cache_.erase(it->key);
                lru_.erase(it);
                break;
            }
            if (it == lru_.begin()) return nullptr;  // all in flight: run unprepared
        }
    }
    lru_.push_front(Prepared{std::string(key), fmt::format("v{}", next_name_++), false});
    cache_.emplace(lru_.front().key, lru_.begin());
    if (!PQsendPrepare(conn_, lru_.front().name.c_str(), std::string(sql).c_str(),
                       static_cast<int>(types.size()), types.data())) {
        cache_.erase(lru_.front().key);
        lru_.pop_front();
        return nullptr;
    }
    fresh = true;
    return &lru_.front();
}

bool Connection::submit(Op& op, std::string_view sql, std::span<const Param> params, bool prepare) {
    if (!usable()) return false;
    ParamArrays& pa = t_params;
    pa.build(params);
    const int n = static_cast<int>(params.size());
    std::string prepared_name;
    bool sent = false;
    if (prepare && params_.statement_cache > 0) {
        thread_local std::string key;
        key.assign(sql);
        key.push_back('\0');
        for (Oid t : pa.types) key.append(std::to_string(t)).push_back(',');
        bool fresh = false;
        if (const Prepared* p = prepared_for(key, fresh, sql, pa.types)) {
            if (fresh) prepared_name = key;
            sent = PQsendQueryPrepared(conn_, p->name.c_str(), n, pa.values.data(),
                                       pa.lengths.data(), pa.formats.data(), 0) == 1;
            if (!sent) return send_failed();
        } else if (!usable()) {
            return false;
        }
    }
    if (!sent) {
        std::string text(sql);
        if (!PQsendQueryParams(conn_, text.c_str(), n, pa.types.data(), pa.values.data(),
                               pa.lengths.data(), pa.formats.data(), 0))
            return send_failed();
    }
    if (!PQpipelineSync(conn_)) return send_failed();
    Entry& e = entries_.emplace_back();
    e.op = &op;
    e.seq = next_seq_++;
    e.prepared = std::move(prepared_name);
    e.deadline = params_.query_timeout.count() > 0 ? Clock::now() + params_.query_timeout
                                                   : Clock::time_point::max();
    op.conn_ = this;
    op.seq_ = e.seq;
    op.outcome = Outcome{};
    last_used_ = Clock::now();
    schedule_flush();
    arm_timeout();
    return true;
}

bool Connection::submit_detached(std::string_view sql) {
    if (!usable()) return false;
    std::string text(sql);
    if (!PQsendQueryParams(conn_, text.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) ||
        !PQpipelineSync(conn_))
        return send_failed();
    Entry& e = entries_.emplace_back();
    e.seq = next_seq_++;
    e.deadline = Clock::time_point::max();
    schedule_flush();
    return true;
}

bool Connection::submit_script(Op& op, std::string_view sql) {
    if (!usable() || !entries_.empty()) return false;
    // Several statements need the simple query protocol, which pipeline mode refuses.
    if (PQexitPipelineMode(conn_) != 1) return send_failed();
    std::string text(sql);
    if (!PQsendQuery(conn_, text.c_str())) return send_failed();
    script_ = true;
    Entry& e = entries_.emplace_back();
    e.op = &op;
    e.seq = next_seq_++;
    e.script = true;
    e.deadline = params_.query_timeout.count() > 0 ? Clock::now() + params_.query_timeout
                                                   : Clock::time_point::max();
    op.conn_ = this;
    op.seq_ = e.seq;
    op.outcome = Outcome{};
    schedule_flush();
    arm_timeout();
    return true;
}

void Connection::schedule_flush() {
    if (flush_scheduled_) return;
    flush_scheduled_ = true;
    loop_.defer([self = shared_from_this()] {
        self->flush_scheduled_ = false;
        if (self->state_ == State::ready) self->flush();
    });
}

void Connection::flush() {
    if (direct_) return;  // the direct user flushes
    int r = PQflush(conn_);
    if (r < 0) return close(one_line(PQerrorMessage(conn_)));
    want_write_ = r == 1;  // the rest goes on the next writable edge
    // A blocked flush reads input to avoid a deadlock, which uses up a readable edge.
    if (want_write_) read_results();
}

// ---------------------------------------------------------------------------------------
// Receiving

Connection::Entry* Connection::find(std::uint64_t seq) noexcept {
    if (entries_.empty() || seq < entries_.front().seq) return nullptr;
    std::size_t i = seq - entries_.front().seq;
    return i < entries_.size() ? &entries_[i] : nullptr;
}

void Connection::absorb(Entry& e, PGresult* r) {
    switch (PQresultStatus(r)) {
        case PGRES_FATAL_ERROR:
            if (!e.error) {
                e.error = r;
                return;
            }
            break;
        case PGRES_PIPELINE_ABORTED:  // after a failed prepare: the error is already kept
            break;
        case PGRES_TUPLES_OK:
        case PGRES_COMMAND_OK:
        case PGRES_EMPTY_QUERY:
            if (e.result) PQclear(e.result);
            e.result = r;
            return;
        default:
            break;
    }
    PQclear(r);
}

void Connection::read_results() {
    if (in_read_) return;  // a completion resumed code that got here again: the outer loop reads
    in_read_ = true;
    auto self = shared_from_this();  // a completion may drop the owner's reference
again:
    if (!PQconsumeInput(conn_)) {
        in_read_ = false;
        return close(one_line(PQerrorMessage(conn_)));
    }
    deliver_notifies();
    int nulls = 0;
    while (state_ == State::ready && !entries_.empty() && !PQisBusy(conn_)) {
        PGresult* r = PQgetResult(conn_);
        Entry& e = entries_.front();
        if (!r) {
            if (e.script) {
                script_ = false;
                if (PQenterPipelineMode(conn_) != 1) {
                    in_read_ = false;
                    return close(one_line(PQerrorMessage(conn_)));
                }
                finish_front();
                continue;
            }
            if (++nulls > 1) break;  // between statements, nothing more arrived yet
            continue;
        }
        nulls = 0;
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            finish_front();
            continue;
        }
        absorb(e, r);
    }
    if (state_ == State::ready && PQstatus(conn_) == CONNECTION_BAD) {
        in_read_ = false;
        return close(one_line(PQerrorMessage(conn_)));
    }
    deliver_notifies();  // parsed along with the results
    // A completion above may have handed the socket to a direct user (a COPY started by the
    // resumed coroutine, which sent its statement and waits for a readable edge): the bytes
    // that come now are its own. Reading them here would put them in libpq's buffer and drain
    // the socket, so the edge the direct user waits for would never come.
    if (direct_) {
        in_read_ = false;
        return;
    }
    // PQconsumeInput reads once: drain the socket before waiting for the next edge. Also with
    // nothing due: a burst of notifications, or a server's last words (an error then EOF on
    // one edge) would otherwise wait for an edge that never comes.
    if (state_ == State::ready && ready_now(handle_.fd, POLLIN)) goto again;
    in_read_ = false;
}

// Hands the notifications libpq has parsed to the owner (which may close the connection).
void Connection::deliver_notifies() {
    while (conn_) {
        PGnotify* n = PQnotifies(conn_);
        if (!n) break;
        if (owner_) owner_->on_notify(*this, *n);
        PQfreemem(n);
    }
}

void Connection::finish_front() {
    Entry e = std::move(entries_.front());
    entries_.pop_front();
    last_used_ = Clock::now();
    if (e.error && !e.prepared.empty()) {  // its statement was never prepared
        if (auto it = cache_.find(e.prepared); it != cache_.end()) {
            lru_.erase(it->second);
            cache_.erase(it);
        }
    } else if (!e.prepared.empty()) {
        if (auto it = cache_.find(e.prepared); it != cache_.end()) it->second->confirmed = true;
    }
    Op* op = e.op;
    if (!op) {
        if (e.result) PQclear(e.result);
        if (e.error) PQclear(e.error);
    } else {
        op->conn_ = nullptr;
        Outcome& o = op->outcome;
        if (e.error) {
            const char* state = PQresultErrorField(e.error, PG_DIAG_SQLSTATE);
            o.kind = state ? Outcome::Kind::server_error : Outcome::Kind::connection;
            o.message = state ? server_message(e.error) : one_line(PQresultErrorMessage(e.error));
            if (state) o.sqlstate = state;
            PQclear(e.error);
            if (e.result) PQclear(e.result);
        } else {
            o.kind = Outcome::Kind::ok;
            o.result = e.result;
        }
    }
    if (entries_.empty() && owner_) owner_->on_idle(*this);
    if (op) op->done();
}

// ---------------------------------------------------------------------------------------
// Timeouts, cancellation, closing

void Connection::arm_timeout() {
    if (timer_armed_ || params_.query_timeout.count() <= 0 || entries_.empty()) return;
    Clock::time_point when = Clock::time_point::max();
    for (auto& e : entries_)
        if (e.op || e.cancelled) when = std::min(when, e.deadline);
    if (when == Clock::time_point::max()) return;
    auto delay = std::chrono::ceil<std::chrono::milliseconds>(when - Clock::now());
    timer_armed_ = true;
    timeout_timer_ =
        loop_.call_after(std::max(delay, std::chrono::milliseconds(0)), [w = weak_from_this()] {
            if (auto c = w.lock()) {
                c->timer_armed_ = false;
                c->check_timeouts();
            }
        });
}

void Connection::check_timeouts() {
    if (state_ != State::ready || entries_.empty()) return;
    const auto now = Clock::now();
    Entry& front = entries_.front();
    if (front.cancelled && front.deadline <= now) {
        // Cancelled a query timeout ago and still not answered: the server is gone for us.
        return close("the server did not answer a cancelled query; connection dropped");
    }
    std::vector<Op*> expired;
    for (auto& e : entries_) {
        if (e.deadline > now || !e.op) continue;
        expired.push_back(e.op);
        e.op->conn_ = nullptr;
        e.op = nullptr;
    }
    if (!expired.empty() && !front.cancelled) {
        front.cancelled = true;
        front.deadline = now + std::max(params_.query_timeout, std::chrono::milliseconds(1000));
        cancel_running();
    }
    arm_timeout();
    auto self = shared_from_this();
    for (Op* op : expired) {
        op->outcome.kind = Outcome::Kind::timeout;
        op->outcome.message =
            fmt::format("query timed out after {} ms (cancelled)", params_.query_timeout.count());
        op->done();
    }
}

void Connection::cancel_running() {
    if (conn_) cancel_off_loop(conn_);
}

void Connection::abandon(Op& op) noexcept {
    Entry* e = find(op.seq_);
    op.conn_ = nullptr;
    if (!e || e->op != &op) return;
    e->op = nullptr;
    if (e == &entries_.front() && !e->cancelled && state_ == State::ready) {
        e->cancelled = true;
        e->deadline =
            Clock::now() + std::max(params_.query_timeout, std::chrono::milliseconds(1000));
        cancel_running();
        arm_timeout();
    }
}

void Connection::fail_all(Outcome::Kind kind, const std::string& why) {
    std::deque<Entry> entries = std::move(entries_);
    entries_.clear();
    std::vector<Op*> ops;
    for (auto& e : entries) {
        if (e.result) PQclear(e.result);
        if (e.error) PQclear(e.error);
        if (!e.op) continue;
        e.op->conn_ = nullptr;
        e.op->outcome.kind = kind;
        e.op->outcome.message = why;
        ops.push_back(e.op);
    }
    for (Op* op : ops) op->done();
}

void Connection::close(const std::string& why) {
    if (state_ == State::closed) return;
    auto self = shared_from_this();
    const bool was_connecting = state_ == State::connecting;
    state_ = State::closed;
    if (connect_timer_) loop_.cancel(connect_timer_), connect_timer_ = 0;
    if (timer_armed_) loop_.cancel(timeout_timer_), timer_armed_ = false;
    if (handle_.registered) loop_.io().remove(handle_);
    // The loop may still hold an event for the handle in its current batch (it checks
    // `registered` first): the handle's memory must live until the batch is over.
    loop_.defer([self] {});
    if (conn_) PQfinish(conn_), conn_ = nullptr;
    lru_.clear();
    cache_.clear();
    std::string msg = was_connecting ? fmt::format("cannot connect to PostgreSQL: {}", why)
                                     : fmt::format("PostgreSQL connection lost: {}", why);
    fail_all(Outcome::Kind::connection, msg);
    if (owner_) owner_->on_closed(*this, msg);
    if (DirectUser* d = std::exchange(direct_, nullptr)) d->on_lost(msg);
}

void Connection::close_off_loop() noexcept {
    state_ = State::closed;
    direct_ = nullptr;
    for (auto& e : entries_) {
        if (e.result) PQclear(e.result);
        if (e.error) PQclear(e.error);
        if (e.op) e.op->conn_ = nullptr;
    }
    entries_.clear();
    handle_.registered = false;  // closing the socket removes it from the loop's epoll set
    if (conn_) PQfinish(conn_), conn_ = nullptr;
}

}  // namespace vela::db::pg
