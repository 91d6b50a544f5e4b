#include "client/h2_exchange.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace vela::http::detail {

namespace {

h2::SessionOptions session_options(const ClientOptions& o) {
    h2::SessionOptions s;
    s.role = h2::Role::client;
    // A response head may use what an HTTP/1.1 head may (HPACK-decoded size, RFC 9113 6.5.2).
    s.max_header_list_size = static_cast<std::uint32_t>(
        std::min<std::size_t>(o.head_limits.max_head_bytes, std::uint32_t{1} << 30));
    return s;
}

}  // namespace

// --- H2Conn ---

H2Conn::H2Conn(Connection& conn, const ClientOptions& o)
    : c(conn), session(*this, session_options(o)), o_(o), max_fields_(o.head_limits.max_fields) {}

H2Conn::~H2Conn() {
    for (H2Stream* s : streams_) {
        s->conn = nullptr;
        s->st = nullptr;
    }
    for (H2Stream* s : wakes_) {
        s->conn = nullptr;
        s->queued = false;
    }
}

void H2Conn::start() {
    session.start(c.t.loop().now_ms());
    flush();
    idle_check();
}

bool H2Conn::can_open() const noexcept {
    const std::uint32_t limit =
        session.peer_settings_received() ? session.peer_settings().max_concurrent_streams : 1;
    return !dead && !goaway && !session.closed() && !c.t.closed() &&
           session.stream_count() + reserved < limit;
}

void H2Conn::flush() {
    std::string& o = session.output();
    if (o.empty()) return;
    if (in_wakes_) {  // the coroutines being resumed write once, together, at the end
        flush_pending_ = true;
        return;
    }
    if (c.t.closed() || dead) {
        o.clear();
        return;
    }
    if (c.t.out.empty()) {
        iovec v{o.data(), o.size()};
        const ssize_t n = c.t.send(&v, 1);
        if (n < 0) {
            o.clear();
            c.error = static_cast<int>(-n);
            end_connection(
                H2Stream::Failure::protocol,
                std::string("cannot write to the HTTP/2 connection: ") + std::strerror(c.error));
            return;
        }
        const auto sent = static_cast<std::size_t>(n);
        if (sent < o.size()) c.t.output().append(o.data() + sent, o.size() - sent);
    } else {
        c.t.out.append(o);
    }
    o.clear();
    if (o.capacity() > 64 * 1024) std::string().swap(o);
}

void H2Conn::on_write_ready() {
    if (dead || c.t.closed()) return;
    if (!c.t.out.empty() && c.t.write_out() < 0) {
        c.error = EPIPE;
        end_connection(H2Stream::Failure::protocol, "cannot write to the HTTP/2 connection");
        return;
    }
    c.t.release_output_if_empty();
    flush();
    run_wakes();
}

bool H2Conn::on_read(ssize_t n) {
    if (dead) return false;
    if (n <= 0) {
        if (n == 0)
            c.eof = true;
        else
            c.error = static_cast<int>(-n);
        end_connection(H2Stream::Failure::protocol,
                       c.error
                           ? std::string(c.error == EPROTO ? "TLS error" : std::strerror(c.error)) +
                                 " on the HTTP/2 connection"
                           : "the server closed the HTTP/2 connection");
        return false;
    }
    Buffer& in = c.t.in;
    const std::size_t used = session.receive(in.view(), c.t.loop().now_ms());
    in.consume(used);
    if (session.closed()) {
        in.clear();
        flush();  // our GOAWAY, if the error was found here
        // A field past the header list limit ends the connection (HPACK's state is lost).
        const bool too_large =
            session.error_reason() == hpack::error_message(hpack::Error::string_too_long);
        end_connection(too_large ? H2Stream::Failure::too_large : H2Stream::Failure::protocol,
                       "HTTP/2 connection error: " + std::string(session.error_reason()) + " (" +
                           std::string(h2::error_code_name(session.error())) + ")");
        return false;
    }
    if (in.size() >= h2::frame_header_size) {
        // A frame larger than the buffer: make room for all of it.
        const auto* h = reinterpret_cast<const unsigned char*>(in.data());
        const std::size_t need =
            h2::frame_header_size + ((std::size_t{h[0]} << 16) | (std::size_t{h[1]} << 8) | h[2]);
        if (need > in.capacity()) {
            in.compact();
            in.ensure_writable(need - in.size());
        } else {
            c.t.keep_input();
        }
    } else {
        c.t.keep_input();
    }
    flush();
    after_io();
    return !dead && !c.t.closed() && c.t.reading();
}

void H2Conn::after_io() {
    if (!settings_known_ && session.peer_settings_received()) {
        settings_known_ = true;  // the requests waiting for the server's limit may go
        if (c.pool) c.pool->wake_all();
    }
    run_wakes();
    if (dead || c.t.closed()) return;
    if ((goaway || session.drained()) && session.stream_count() == 0 && reserved == 0 &&
        streams_.empty()) {
        retire();
        if (c.pool) c.pool->discard(&c);
        return;
    }
    idle_check();
}

void H2Conn::retire() {
    if (!dead && !c.t.closed()) {
        session.shutdown();
        flush();
        c.clean_close = c.t.out.empty();
    }
    dead = true;
}

// An unused connection is closed after idle_timeout (on the transport's wheel entry).
void H2Conn::idle_check() {
    if (dead || c.t.closed()) return;
    if (session.stream_count() == 0 && reserved == 0 && streams_.empty()) {
        if (!idle_deadline_) {
            idle_deadline_ =
                c.t.loop().now_ms() + static_cast<std::uint64_t>(o_.idle_timeout.count());
            c.t.schedule(idle_deadline_);
        }
    } else if (idle_deadline_) {
        idle_deadline_ = 0;
        c.t.disarm();
    }
}

void H2Conn::on_timer() {
    if (!idle_deadline_ || !c.t.due(idle_deadline_)) return;
    idle_deadline_ = 0;
    if (session.stream_count() == 0 && reserved == 0 && streams_.empty() && c.pool) {
        retire();
        c.pool->discard(&c);
    }
}

void H2Conn::end_connection(H2Stream::Failure f, const std::string& why) {
    if (dead && streams_.empty()) return;
    dead = true;
    fail_all(f, why);
    if (c.pool) {
        OriginPool* pool = c.pool;
        pool->discard(&c);
        pool->wake_all();  // requests waiting for this connection's SETTINGS
    }
    run_wakes();
}

void H2Conn::fail_all(H2Stream::Failure f, const std::string& why) {
    dead = true;
    for (H2Stream* s : streams_) {
        if (s->st) s->st->user = nullptr;
        s->st = nullptr;
        if (!s->ended && s->failure == H2Stream::Failure::none) {
            // Nothing of the response came on a connection that served earlier requests: it
            // may have died before the request reached the server.
            s->failure = f == H2Stream::Failure::protocol && !s->head_done && s->reused
                             ? H2Stream::Failure::stale
                             : f;
            s->why = why;
        }
        if (s->waiter) {
            wake(*s);
            s->gone = true;  // run_wakes() unlinks it
        } else {
            s->conn = nullptr;
        }
    }
    streams_.clear();
}

void H2Conn::detach(H2Stream& s) {
    if (s.queued) {
        std::erase(wakes_, &s);
        s.queued = false;
    }
    std::erase(streams_, &s);
    s.conn = nullptr;
    if (s.st) {
        h2::Stream* st = std::exchange(s.st, nullptr);
        st->user = nullptr;
        if (!dead && !session.closed()) session.reset(*st, h2::ErrorCode::cancel);
        flush();
    }
    if (c.pool) c.pool->wake_one();
    if (!dead) after_io();
}

void H2Conn::wake(H2Stream& s) {
    if (s.queued || !s.waiter) return;
    s.queued = true;
    wakes_.push_back(&s);
}

void H2Conn::run_wakes() {
    if (in_wakes_) return;  // the outer call goes on with the queue
    in_wakes_ = true;
    while (!wakes_.empty()) {
        H2Stream* s = wakes_.front();
        wakes_.erase(wakes_.begin());
        s->queued = false;
        if (s->gone) s->conn = nullptr;
        if (s->waiter) std::exchange(s->waiter, {}).resume();
    }
    in_wakes_ = false;
    if (std::exchange(flush_pending_, false)) flush();
}

void H2Conn::on_begin_headers(h2::Stream& st) {
    auto* s = static_cast<H2Stream*>(st.user);
    if (s) s->fields = 0;
}

void H2Conn::on_field(h2::Stream& st, const hpack::DecodedField& f) {
    auto* s = static_cast<H2Stream*>(st.user);
    if (!s) return;
    if (s->head_done) {  // trailers (the session refused pseudo-fields in them)
        if (++s->fields > max_fields_) {
            s->too_large = true;
            return;
        }
        s->trailers.emplace_back(std::string(f.name), std::string(f.value));
        return;
    }
    if (f.name == ":status") {
        int status = 0;
        std::from_chars(f.value.data(), f.value.data() + f.value.size(), status);
        s->head.assign(status);
        return;
    }
    if (f.name.starts_with(':')) return;
    if (++s->fields > max_fields_) {
        s->too_large = true;
        return;
    }
    s->head.add_field(f.name, f.value);
}

void H2Conn::on_headers(h2::Stream& st, const h2::HeadersEnd& end) {
    auto* s = static_cast<H2Stream*>(st.user);
    if (!s) return;
    if (end.kind == h2::HeadersEnd::Kind::headers) {
        s->head_done = true;
        if ((end.list_too_large || s->too_large) && s->failure == H2Stream::Failure::none) {
            s->failure = H2Stream::Failure::too_large;
            s->why = "the response head is larger than the limits (head_limits)";
        }
    } else if ((end.list_too_large || s->too_large) && s->failure == H2Stream::Failure::none) {
        s->failure = H2Stream::Failure::too_large;
        s->why = "the response trailers are larger than the limits (head_limits)";
    }
    if (end.end_stream) s->ended = true;
    wake(*s);
}

void H2Conn::on_data(h2::Stream& st, std::string_view data, bool end_stream) {
    auto* s = static_cast<H2Stream*>(st.user);
    if (!s) {
        session.consume(st, data.size());
        return;
    }
    s->body.append(data);
    if (end_stream) s->ended = true;
    wake(*s);
}

void H2Conn::on_close(h2::Stream& st, h2::ErrorCode code, bool by_peer) {
    auto* s = static_cast<H2Stream*>(st.user);
    st.user = nullptr;
    if (c.pool) c.pool->wake_one();  // a stream slot came free
    if (!s) return;
    s->st = nullptr;
    // A connection error closes every stream: end_connection() says why, after receive().
    if (session.closed()) return;
    if (!s->ended && s->failure == H2Stream::Failure::none) {
        const std::string name(h2::error_code_name(code));
        if (code == h2::ErrorCode::refused_stream) {
            s->failure = H2Stream::Failure::unprocessed;
            s->why = goaway ? "the server went away (GOAWAY) before processing the request"
                            : "the server refused the stream (REFUSED_STREAM)";
        } else if (by_peer) {
            s->failure = H2Stream::Failure::protocol;
            s->why = "the server reset the stream (" + name + ")";
        } else {
            s->failure = H2Stream::Failure::protocol;
            s->why = "malformed HTTP/2 response (" + name + ")";
        }
    }
    wake(*s);
}

void H2Conn::on_writable(h2::Stream& st) {
    if (auto* s = static_cast<H2Stream*>(st.user)) wake(*s);
}

void H2Conn::on_goaway(std::uint32_t, h2::ErrorCode, std::string_view) { goaway = true; }

// --- H2Exchange ---

H2Exchange::H2Exchange(OriginPool& pool, Connection* c, bool reused, std::string url)
    : Exchange(std::move(url)), loop_(pool.owner.loop) {
    s_.conn = c->h2.get();
    s_.reused = reused;
}

H2Exchange::~H2Exchange() {
    if (!s_.conn) return;
    H2Conn* h = s_.conn;
    if (reserved_) --h->reserved;
    h->detach(s_);
}

void H2Exchange::Wait::await_suspend(std::coroutine_handle<> h) {
    x.s_.waiter = h;
    x.s_.timed_out = false;
    if (!deadline) return;
    const std::uint64_t now = x.loop_.now_ms();
    timer =
        x.loop_.call_after(std::chrono::milliseconds(deadline > now ? deadline - now : 0), [this] {
            timer = 0;
            x.s_.timed_out = true;
            if (x.s_.waiter) std::exchange(x.s_.waiter, {}).resume();
        });
}

void H2Exchange::Wait::await_resume() noexcept {
    if (timer) x.loop_.cancel(std::exchange(timer, 0));
}

H2Exchange::Wait::~Wait() {
    x.s_.waiter = {};
    if (timer) x.loop_.cancel(timer);
}

void H2Exchange::raise() {
    const std::string msg = url_ + ": " + s_.why;
    switch (s_.failure) {
        case H2Stream::Failure::too_large:
            throw TooLargeError(msg);
        case H2Stream::Failure::unprocessed:
            throw Unprocessed(msg);
        case H2Stream::Failure::stale:
            throw StaleConnection(msg + " (a reused connection)");
        default:
            throw ProtocolError(s_.why.empty() ? url_ + ": the HTTP/2 connection is gone" : msg);
    }
}

void H2Exchange::open(const std::vector<Header>& fields, bool end) {
    H2Conn* h = s_.conn;
    if (reserved_) {
        reserved_ = false;
        if (h) --h->reserved;
    }
    if (!h || h->dead) raise();
    std::vector<hpack::EncoderField> ef;
    ef.reserve(fields.size());
    for (const Header& f : fields) ef.push_back(hpack::EncoderField{f.first, f.second});
    h2::Stream* st = h->session.open_stream(ef, end, &s_);
    if (!st) throw Unprocessed(url_ + ": no HTTP/2 stream could be opened on the connection");
    s_.st = st;
    h->attach(s_);
    h->flush();
}

Task<void> H2Exchange::send(std::vector<Header> fields, std::string body, const BodySource* source,
                            std::uint64_t request_deadline) {
    open(fields, body.empty() && !source);
    if (!body.empty()) co_await push(body, !source, request_deadline);
    if (!source) co_return;
    for (;;) {
        std::optional<std::string> next = co_await (*source)();
        if (!next) {
            co_await push({}, true, request_deadline);
            co_return;
        }
        if (!next->empty()) co_await push(*next, false, request_deadline);
    }
}

// Sends `data` as DATA as the windows open (END_STREAM with the last byte when `end`). Returns
// early when the stream cannot carry more: the response tells why.
Task<void> H2Exchange::push(std::string_view data, bool end, std::uint64_t deadline) {
    for (;;) {
        if (!s_.conn || !s_.st || s_.failure != H2Stream::Failure::none || s_.ended ||
            !s_.st->local_open())
            co_return;
        const std::size_t n = s_.conn->session.send_data(*s_.st, data, end);
        data.remove_prefix(n);
        if (s_.conn) s_.conn->flush();
        if (data.empty()) co_return;
        co_await wait(deadline);
        if (s_.timed_out)
            throw TimeoutError(TimeoutError::Phase::request,
                               url_ + ": the request timed out while sending it");
    }
}

Task<void> H2Exchange::read_head(const std::string&, ResponseHead& head,
                                 std::uint64_t head_deadline, std::uint64_t request_deadline) {
    const std::uint64_t deadline =
        request_deadline && request_deadline < head_deadline ? request_deadline : head_deadline;
    for (;;) {
        if (s_.failure != H2Stream::Failure::none) raise();
        if (s_.head_done) {
            head = std::move(s_.head);
            if (s_.ended && s_.body.empty()) {
                done_ = true;
                trailers_ = std::move(s_.trailers);
            }
            co_return;
        }
        if (!s_.conn) raise();
        if (s_.timed_out) {
            if (request_deadline && loop_.now_ms() >= request_deadline)
                throw TimeoutError(TimeoutError::Phase::request,
                                   url_ + ": the request timed out (request_timeout)");
            throw TimeoutError(TimeoutError::Phase::head,
                               url_ + ": no response head in time (head_timeout)");
        }
        co_await wait(deadline);
    }
}

bool H2Exchange::raw_piece(std::string_view& piece) {
    if (s_.failure == H2Stream::Failure::too_large) raise();  // trailers past the limits
    if (!s_.body.empty()) {
        piece_.clear();
        piece_.swap(s_.body);
        piece = piece_;
        if (s_.ended) end_after_piece_ = true;
        return true;
    }
    if (s_.ended) {
        piece = {};
        end_after_piece_ = true;
        return true;
    }
    return false;
}

// The bytes handed out last were used: the server may send as many again.
void H2Exchange::settle() {
    if (!piece_.empty()) {
        if (s_.conn && s_.st) {
            s_.conn->session.consume(*s_.st, piece_.size());
            s_.conn->flush();
        }
        piece_.clear();
    }
    if (end_after_piece_) {
        end_after_piece_ = false;
        done_ = true;
        trailers_ = std::move(s_.trailers);
    }
}

Task<bool> H2Exchange::more() {
    if (s_.failure != H2Stream::Failure::none || !s_.conn) raise();
    if (s_.timed_out)
        throw TimeoutError(TimeoutError::Phase::request,
                           url_ + ": the response body did not arrive in time");
    co_await wait(deadline_);
    co_return true;
}

}  // namespace vela::http::detail
