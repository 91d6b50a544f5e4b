#include "ws_connection.hpp"

#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "vela/base/log.hpp"
#include "vela/server/ws_client_session.hpp"

namespace vela::detail {

using ws::Opcode;
namespace cc = ws::close_code;

namespace {

constexpr std::size_t kBigRead = 64 * 1024;

Opcode opcode_of(WsType t) noexcept { return t == WsType::binary ? Opcode::binary : Opcode::text; }

// The compressor shared by this thread's sessions that agreed on the default window (the
// server keeps no context, so one compressor serves all of them).
ws::Deflater& shared_deflater(const ws::DeflateOptions& o) {
    thread_local std::unique_ptr<ws::Deflater> d;
    thread_local const ws::DeflateOptions* made_for = nullptr;
    if (!d || made_for != &o) {
        ws::DeflateParams p;
        p.server_no_context_takeover = true;
        p.server_max_window_bits = std::clamp(o.server_max_window_bits, 9, 15);
        d = std::make_unique<ws::Deflater>(p, o);
        made_for = &o;
    }
    return *d;
}

bool uses_shared_deflater(const ws::DeflateParams& p, const ws::DeflateOptions& o) noexcept {
    return p.server_no_context_takeover &&
           p.server_max_window_bits == std::clamp(o.server_max_window_bits, 9, 15);
}

// The agreement seen from the client: its compressor is the agreement's client one, what it
// inflates the server's (Inflater and Deflater are written from the server's side).
ws::DeflateParams client_side(const ws::DeflateParams& p) noexcept {
    ws::DeflateParams m;
    m.server_no_context_takeover = p.client_no_context_takeover;
    m.server_max_window_bits = p.client_max_window_bits;
    m.client_no_context_takeover = p.server_no_context_takeover;
    m.client_max_window_bits = p.server_max_window_bits;
    return m;
}

// A masking key for a client frame (RFC 6455 5.3: unpredictable, from a strong source): taken
// from this thread's batch of getrandom bytes, refilled 1024 keys at a time.
void next_mask(std::uint8_t key[4]) {
    thread_local std::uint8_t batch[4096];  // NOLINT: per-thread key store
    thread_local std::size_t left = 0;      // NOLINT
    if (left < 4) {
        std::size_t got = 0;
        while (got < sizeof batch) {
            const ssize_t n = ::getrandom(batch + got, sizeof batch - got, 0);
            if (n < 0) {
                if (errno == EINTR) continue;
                throw std::system_error(errno, std::generic_category(), "getrandom");
            }
            got += static_cast<std::size_t>(n);
        }
        left = sizeof batch;
    }
    std::memcpy(key, batch + sizeof batch - left, 4);
    left -= 4;
}

// The client sessions of each loop of this thread, closed when their loop is destroyed (a
// session whose closing handshake is still running then has nobody left to finish it).
struct ClientSessions {
    Loop* loop = nullptr;
    Connection* head = nullptr;  // linked through Connection::prev/next
};
thread_local std::vector<std::unique_ptr<ClientSessions>> t_client_sessions;  // NOLINT

ClientSessions* find_client_sessions(const Loop* loop) noexcept {
    for (auto& r : t_client_sessions)
        if (r->loop == loop) return r.get();
    return nullptr;
}

void unlink_client(ClientSessions& cs, Connection* c) noexcept {
    if (c->prev)
        c->prev->next = c->next;
    else if (cs.head == c)
        cs.head = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = nullptr;
}

void link_client(WsConnection* ws) {
    Loop& loop = ws->loop();
    ClientSessions* cs = find_client_sessions(&loop);
    if (!cs) {
        cs = t_client_sessions.emplace_back(std::make_unique<ClientSessions>()).get();
        cs->loop = &loop;
        loop.at_exit([lp = &loop] {
            ClientSessions* r = find_client_sessions(lp);
            if (!r) return;
            while (Connection* c = r->head) {
                static_cast<WsConnection*>(c)->abandon_client();
                if (r->head == c) unlink_client(*r, c);  // its owner still holds it
            }
            std::erase_if(t_client_sessions, [r](const auto& p) { return p.get() == r; });
        });
    }
    ws->next = cs->head;
    if (cs->head) cs->head->prev = ws;
    cs->head = ws;
}

// A client session is over: out of its loop's list, freed after the current I/O batch.
void client_done(WsConnection* ws) noexcept {
    Loop& loop = ws->loop();
    if (ClientSessions* cs = find_client_sessions(&loop)) unlink_client(*cs, ws);
    loop.defer([ws] { delete ws; });
}

// An upgraded HTTP/1.1 connection's socket (and TLS transform) under a session.
class SocketLink final : public WsLink {
  public:
    explicit SocketLink(net::Transport&& t) noexcept : t(std::move(t)) {}
    Loop& loop() const noexcept override { return t.loop(); }
    bool closed() const noexcept override { return t.closed(); }
    Buffer& in() noexcept override { return t.in; }
    Buffer& input() override { return t.input(); }
    void keep_input() noexcept override { t.keep_input(); }
    Buffer& out() noexcept override { return t.out; }
    Buffer& output() override { return t.output(); }
    void release_output_if_empty() noexcept override { t.release_output_if_empty(); }
    bool write() override {
        while (!t.out.empty()) {
            iovec v{t.out.data(), t.out.size()};
            const ssize_t n = t.send(&v, 1);
            if (n < 0) return false;
            if (n == 0) break;  // the socket is full: on_write_ready follows
            t.out.consume(static_cast<std::size_t>(n));
        }
        return true;
    }
    void start() override { t.add(); }
    void read() override { t.read(); }
    bool reading() const noexcept override { return t.reading(); }
    void stop_reading() override { t.stop_reading(); }
    void read_later() override {
        t.read_later([ws = session()] { return ws->wants_input(); });
    }
    void shutdown_write() override { t.shutdown_write(); }
    void close(bool) noexcept override { t.close(); }
    TimerWheel::Entry& timer() noexcept override { return t.timer; }
    void done(WsConnection* ws) noexcept override {
        if (ws->client_mode()) [[unlikely]]
            client_done(ws);
        else
            ws->worker().connection_closed(ws);
    }

    /// The session, the socket's driver (and its timer entry's owner: the session is found
    /// there, so an idle session keeps no pointer more).
    void attach(WsConnection* ws, void (*fire)(TimerWheel::Entry*)) noexcept {
        t.attach(*ws, ws, fire);
    }
    WsConnection* session() const noexcept { return static_cast<WsConnection*>(t.timer.owner); }

    net::Transport t;  // socket, TLS transform, timer entry, buffers
};

}  // namespace

// The socket link first, so that it is built before the session and outlives it.
struct SocketLinkPart {
    explicit SocketLinkPart(net::Transport&& t) noexcept : link(std::move(t)) {}
    SocketLink link;
};

class SocketWsConnection final : public SocketLinkPart, public WsConnection {
  public:
    SocketWsConnection(ServerWorker& worker, net::Transport&& t, std::unique_ptr<Request> req,
                       std::string_view head, std::shared_ptr<WsUpgrade> up)
        : SocketLinkPart(std::move(t)),
          WsConnection(worker, link, std::move(req), std::move(up), head) {
        // The socket's completions come here (the HTTP/1.1 driver let go of it).
        link.attach(this, &WsConnection::timer_fired);
    }
    // A client session (ws::connect).
    SocketWsConnection(net::Transport&& t, std::shared_ptr<WsUpgrade> up)
        : SocketLinkPart(std::move(t)), WsConnection(link, std::move(up)) {
        link.attach(this, &WsConnection::timer_fired);
    }
};

WsConnection* WsConnection::client_over_socket(net::Transport&& t, std::shared_ptr<WsUpgrade> up) {
    auto* ws = new SocketWsConnection(std::move(t), std::move(up));
    link_client(ws);
    ws->start();
    return ws;
}

void WsConnection::abandon_client() noexcept {
    reader_waiting_ = {};
    waiters_ = waiters_tail_ = nullptr;
    close_socket();
}

WsConnection* WsConnection::over_socket(ServerWorker& worker, net::Transport&& t,
                                        std::unique_ptr<Request> req, std::string_view head,
                                        std::shared_ptr<WsUpgrade> up) {
    return new SocketWsConnection(worker, std::move(t), std::move(req), head, std::move(up));
}

WsConnection::WsConnection(ServerWorker& worker, WsLink& link, std::unique_ptr<Request> req,
                           std::shared_ptr<WsUpgrade> up, std::string_view head)
    : worker_(&worker),
      link_(&link),
      in_(&link_->in()),
      out_(&link_->out()),
      req_(std::move(req)),
      endpoint_(up->endpoint),
      opt_(endpoint_->options),
      reader_opt_{opt_.max_frame, opt_.max_message, true},
      reader_(reader_opt_) {
    protocol = ConnectionProtocol::websocket;
    link_->timer().owner = this;
    link_->timer().fire = &WsConnection::timer_fired;
    init(head, up);
}

WsConnection::WsConnection(WsLink& link, std::shared_ptr<WsUpgrade> up)
    : worker_(nullptr),
      link_(&link),
      in_(&link_->in()),
      out_(&link_->out()),
      endpoint_(up->endpoint),
      opt_(endpoint_->options),
      reader_opt_{opt_.max_frame, opt_.max_message, false, true},
      reader_(reader_opt_),
      client_(true) {
    protocol = ConnectionProtocol::websocket;
    link_->timer().owner = this;
    link_->timer().fire = &WsConnection::timer_fired;
    init({}, up);
}

// `head`: the request's bytes, copied so that its views outlive the HTTP/1.1 connection's
// buffer (an HTTP/2 stream keeps its request's storage itself).
void WsConnection::init(std::string_view head, std::shared_ptr<WsUpgrade>& up) {
    if (!head.empty()) {
        head_ = std::make_unique_for_overwrite<char[]>(head.size());
        std::memcpy(head_.get(), head.data(), head.size());
        req_->rebase(head.data(), head.size(), head_.get());
    }
    if (up->deflate && client_) {
        const ws::DeflateParams mine = client_side(*up->deflate);
        inflater_ = std::make_unique<ws::Inflater>(mine);
        reader_.set_inflater(inflater_.get());
        deflater_ = std::make_unique<ws::Deflater>(mine, opt_.deflate);
    } else if (up->deflate) {
        inflater_ = std::make_unique<ws::Inflater>(*up->deflate);
        reader_.set_inflater(inflater_.get());
        if (!uses_shared_deflater(*up->deflate, opt_.deflate))
            deflater_ = std::make_unique<ws::Deflater>(*up->deflate, opt_.deflate);
        default_window_ =
            up->deflate->server_no_context_takeover && up->deflate->server_max_window_bits == 15;
    }
    if (!up->subprotocol.empty()) up_ = std::move(up);  // the rest of it is used up
}

// The part other threads reach, made by the first sender() (a session nobody sends to from
// elsewhere holds none).
const std::shared_ptr<WsShared>& WsConnection::shared() const {
    if (!shared_) {
        auto s = std::make_shared<WsShared>();
        s->loop = link_->loop().ref();
        s->max = opt_.send_queue_max;
        s->policy = opt_.slow_client;
        s->open.store(!ended_ && !close_sent_ && !link_->closed(), std::memory_order_relaxed);
        s->out_bytes.store(out_->size(), std::memory_order_relaxed);
        if (!link_->closed()) s->conn = const_cast<WsConnection*>(this);
        shared_ = std::move(s);
    }
    return shared_;
}

WsConnection::~WsConnection() {
    // (the link closes its socket or stream, if still open, and returns the buffers)
    if (req_) worker_->release_request(std::move(req_));
}

void WsConnection::start() {
    link_->start();
    last_rx_ms_ = link_->loop().now_ms();
    arm_timer();
    handler_running_ = true;  // in client mode: the owner (ws::Session), until release_client()
    if (!client_) {
        Task<void> task;
        try {
            task =
                endpoint_->session ? endpoint_->session(*this) : endpoint_->handler(*this, *req_);
        } catch (...) {
            handler_done(std::current_exception());
            task = {};
        }
        if (endpoint_->session && req_) {
            // The coroutine has its frame and took no request: nothing can reach the request.
            worker_->release_request(std::move(req_));
            head_.reset();
        }
        if (task) {
            auto d = detail::run_detached(std::move(task),
                                          [this](std::exception_ptr e) { handler_done(e); });
            if (handler_running_) handler_ = d.handle;
        }
    }
    if (!link_->closed()) {
        parse();  // frames the client sent right behind its handshake
        flush();
        if (!link_->closed() && !held_ && !link_->reading()) link_->read();
    }
}

// ---- reading --------------------------------------------------------------------------------

Buffer& WsConnection::read_buffer() {
    link_->input();
    // A client that filled the buffer last time gets bigger reads (fewer system calls) while
    // it keeps sending that fast; the buffer goes back to its pooled size once drained.
    if (big_reads_ && in_->writable() < kBigRead / 2) in_->ensure_writable(kBigRead);
    return *in_;
}

bool WsConnection::on_read(ssize_t n) {
    if (n <= 0) {
        // The client went away (or reset): without its close frame the session ends 1006.
        if (!ended_) deliver_close(cc::abnormal, {});
        close_socket();
        return false;
    }
    last_rx_ms_ = link_->loop().now_ms();
    ping_sent_ms_ = 0;
    big_reads_ = in_->writable() == 0;
    if (discard_input_) {
        in_->clear();  // after the close handshake or an error nothing more is parsed
        return true;
    }
    parse();
    flush();
    return !link_->closed() && link_->reading();
}

// Turns buffered bytes into events until a message is held for receive() (then the rest
// waits: the handler sets the pace) or the bytes run out. A message is not copied: its view
// points into link_->in (or the reader's assembly buffer), whose bytes stay until the next
// receive(); meanwhile nothing is read into in_->
void WsConnection::parse() {
    if (parsing_ || link_->closed()) return;
    parsing_ = true;
    while (!held_ && !discard_input_ && !in_->empty()) {
        std::size_t consumed = 0;
        const ws::Event e = reader_.next(in_->data(), in_->size(), consumed);
        if (e.kind == ws::Event::Kind::need_more) {
            in_->consume(consumed);
            break;
        }
        if (e.kind == ws::Event::Kind::message) {
            if (ended_) {  // we closed: what the client sent meanwhile is dropped
                in_->consume(consumed);
                continue;
            }
            held_ = has_next_ = true;
            held_view_ = e.payload;
            held_consumed_ = consumed;
            next_type_ = e.opcode == Opcode::binary ? WsType::binary : WsType::text;
            if (reader_waiting_) {
                std::coroutine_handle<> h = std::exchange(reader_waiting_, {});
                h.resume();  // may send, close or receive again (which releases the message)
                if (link_->closed()) break;
            }
            continue;
        }
        on_event(e);
        in_->consume(consumed);
        if (e.kind == ws::Event::Kind::error) break;
    }
    parsing_ = false;
    if (link_->closed()) return;
    if (held_) {
        // The held message's bytes must not move: no reads into link_->in until it is released
        // (also when reading had not started yet: start() parses before it reads).
        read_stopped_ = true;
        if (link_->reading()) link_->stop_reading();
        return;
    }
    if (in_->empty()) reader_.shrink();
    link_->keep_input();  // waiting for the next message: no buffer, or only a partial frame
}

// A receive() begins: the message it returned last goes, and the next is looked for.
bool WsConnection::ready_message() {
    if (held_ && !has_next_) {
        held_ = false;
        held_view_ = {};
        in_->consume(held_consumed_);
        held_consumed_ = 0;
        parse();  // (a no-op when called from inside parse(): its loop goes on)
        if (!parsing_) schedule_flush();
    }
    if (read_stopped_ && !held_ && !link_->closed()) {
        read_stopped_ = false;
        // From the loop: read_into reads at once and would resume this receive() inside
        // itself.
        link_->read_later();
    }
    return has_next_ || ended_;
}

void WsConnection::on_event(const ws::Event& e) {
    switch (e.kind) {
        case ws::Event::Kind::message:  // handled by parse()
            break;
        case ws::Event::Kind::ping:
            if (!close_sent_) append_control(Opcode::pong, e.payload);
            break;
        case ws::Event::Kind::pong:
            break;
        case ws::Event::Kind::close: {
            close_received_ = true;
            const std::uint16_t code = e.code;
            if (!ended_) deliver_close(code, e.payload);
            if (!close_sent_) {
                // Echo the client's code (RFC 6455 5.5.1), then the TCP close is ours.
                append_control(Opcode::close,
                               ws::close_payload(code == cc::no_status ? cc::normal : code, {}));
                close_sent_ = true;
                if (client_) {  // the server closes the TCP connection, within close_timeout
                    close_deadline_ms_ = link_->loop().now_ms() +
                                         static_cast<std::uint64_t>(opt_.close_timeout.count());
                    arm_timer();
                }
            }
            shut_after_flush_ = true;
            discard_input_ = true;
            break;
        }
        case ws::Event::Kind::error:
            log::debug("WebSocket {}: closing with {}: {}", route(), e.code, e.what);
            fail(e.code, e.what);
            break;
        case ws::Event::Kind::need_more:
            break;
    }
}

// The session is over for receive(): a waiting receive() gets the close now.
void WsConnection::deliver_close(std::uint16_t code, std::string_view reason) {
    if (ended_) return;
    ended_ = true;
    close_code_ = code;
    if (!reason.empty()) close_reason_ = std::make_unique<std::string>(reason);
    if (shared_) shared_->open.store(false, std::memory_order_relaxed);
    // Waiting coroutines learn it from the loop, not from inside whatever ended the session
    // (a broadcast's fan-out, a send's policy, a timer).
    if ((reader_waiting_ || waiters_) && !wake_queued_) {
        wake_queued_ = true;
        link_->loop().defer([this] {
            wake_queued_ = false;
            wake_senders();
            if (reader_waiting_ && !has_next_) std::exchange(reader_waiting_, {}).resume();
        });
    }
}

// A protocol error: close frame with `code`, the session ends, the socket closes once the
// frame is out (the client's answer is not awaited for long: close_timeout).
void WsConnection::fail(std::uint16_t code, const char* what) {
    if (!close_sent_) {
        append_control(Opcode::close, ws::close_payload(code, what));
        close_sent_ = true;
        close_deadline_ms_ =
            link_->loop().now_ms() + static_cast<std::uint64_t>(opt_.close_timeout.count());
        arm_timer();
    }
    shut_after_flush_ = true;
    discard_input_ = true;
    has_next_ = false;
    deliver_close(code, what);
}

WsMessage WsConnection::take_message() noexcept {
    if (has_next_) {
        has_next_ = false;
        return WsMessage{next_type_, held_view_, 0};
    }
    return WsMessage{WsType::close,
                     close_reason_ ? std::string_view(*close_reason_) : std::string_view{},
                     close_code_};
}

// ---- writing --------------------------------------------------------------------------------

void WsConnection::append_control(Opcode op, std::string_view payload) {
    if (link_->closed()) return;
    link_->output();
    if (client_) [[unlikely]] {
        append_masked(op, payload, false);
    } else {
        char h[ws::kMaxHeader];
        const std::size_t n = ws::write_header(h, op, payload.size());
        out_->append(h, n);
        out_->append(payload.data(), payload.size());
    }
    schedule_flush();
}

// A client frame: masked with a fresh key (RFC 6455 5.3), the payload copied and masked in the
// output buffer.
void WsConnection::append_masked(Opcode op, std::string_view payload, bool rsv1) {
    std::uint8_t key[4];
    next_mask(key);
    char h[ws::kMaxHeader];
    const std::size_t n = ws::write_masked_header(h, op, payload.size(), key, true, rsv1);
    out_->append(h, n);
    const std::size_t at = out_->size();
    out_->append(payload.data(), payload.size());
    ws::mask_payload(out_->data() + at, payload.size(), key);
}

// Encodes one message into the output (compressed when agreed and worth it).
void WsConnection::queue_message(std::string_view data, WsType type) {
    link_->output();
    char h[ws::kMaxHeader];
    if (inflater_ && data.size() >= opt_.deflate.min_size) {
        thread_local std::string scratch_;  // NOLINT: the compressed payload, copied out at once
        scratch_.clear();
        (deflater_ ? *deflater_ : shared_deflater(opt_.deflate)).compress(data, scratch_);
        if (client_) [[unlikely]] {
            append_masked(opcode_of(type), scratch_, true);
        } else {
            const std::size_t n = ws::write_header(h, opcode_of(type), scratch_.size(), true, true);
            out_->append(h, n);
            out_->append(scratch_.data(), scratch_.size());
        }
        if (scratch_.capacity() > 64 * 1024) std::string().swap(scratch_);
    } else if (client_) [[unlikely]] {
        append_masked(opcode_of(type), data, false);
    } else {
        const std::size_t n = ws::write_header(h, opcode_of(type), data.size());
        out_->append(h, n);
        out_->append(data.data(), data.size());
    }
    if (shared_) shared_->out_bytes.store(out_->size(), std::memory_order_relaxed);
    schedule_flush();
}

// A frame encoded once for many sessions (Hub). With the policy check, a full queue meets
// the endpoint's policy (wait counts as drop: a broadcast cannot wait for one member).
void WsConnection::queue_frame(std::string_view frame, bool policy_check) {
    if (!is_open()) return;
    if (policy_check && out_->size() + frame.size() > opt_.send_queue_max) {
        if (opt_.slow_client == SlowClient::close)
            start_close(cc::policy_violation, "client too slow");
        return;
    }
    link_->output();
    out_->append(frame.data(), frame.size());
    if (shared_) shared_->out_bytes.store(out_->size(), std::memory_order_relaxed);
    schedule_flush();
}

// 1 queued, 0 wait for space (SlowClient::wait), -1 refused (closing, dropped, closed).
int WsConnection::try_send(std::string_view data, WsType type) {
    if (!is_open() || type == WsType::close) return -1;
    if (out_->size() + data.size() > opt_.send_queue_max && !out_->empty()) {
        switch (opt_.slow_client) {
            case SlowClient::wait:
                return 0;
            case SlowClient::drop:
                return -1;
            case SlowClient::close:
                start_close(cc::policy_violation, "client too slow");
                return -1;
        }
    }
    queue_message(data, type);
    return 1;
}

void WsConnection::wait_space(WebSocket::SendAwaiter* a) noexcept {
    a->next = nullptr;
    if (waiters_tail_)
        waiters_tail_->next = a;
    else
        waiters_ = a;
    waiters_tail_ = a;
}

// Senders waiting for space go on in order while there is room; all of them learn at once
// when the session ends.
void WsConnection::wake_senders() {
    while (waiters_) {
        WebSocket::SendAwaiter* a = waiters_;
        const int r = is_open() ? try_send(a->data, a->type) : -1;
        if (r == 0) break;
        waiters_ = a->next;
        if (!waiters_) waiters_tail_ = nullptr;
        a->state = r;
        a->waiter.resume();
    }
}

void WsConnection::queue_ping(std::string_view payload) {
    if (!is_open()) return;
    append_control(Opcode::ping, payload.substr(0, 125));
}

void WsConnection::start_close(std::uint16_t code, std::string_view reason) {
    if (close_sent_ || link_->closed()) return;
    if (!ws::close_code_valid(code) || code == cc::no_status) code = cc::normal;
    append_control(Opcode::close, ws::close_payload(code, reason));
    close_sent_ = true;
    if (shared_) shared_->open.store(false, std::memory_order_relaxed);
    close_deadline_ms_ =
        link_->loop().now_ms() + static_cast<std::uint64_t>(opt_.close_timeout.count());
    arm_timer();
    if (close_received_) shut_after_flush_ = true;
    deliver_close(code, reason);
}

void WsConnection::schedule_flush() noexcept {
    if (flush_queued_ || link_->closed()) return;
    flush_queued_ = true;
    link_->loop().defer([this] {
        flush_queued_ = false;
        flush();
    });
}

void WsConnection::flush() {
    if (link_->closed()) return;
    if (!link_->write()) {
        if (!ended_) deliver_close(cc::abnormal, {});
        close_socket();
        return;
    }
    if (shared_) shared_->out_bytes.store(out_->size(), std::memory_order_relaxed);
    link_->release_output_if_empty();
    if (waiters_ && out_->size() < opt_.send_queue_max / 2) wake_senders();
    if (out_->empty() && shut_after_flush_) {
        if (close_received_) {
            if (client_) {  // the server closes first (RFC 6455 7.1.1); close_timeout else
                shut_after_flush_ = false;
                return;
            }
            close_socket();  // both close frames went: the TCP close is the server's
            return;
        }
        // Our close (or an error) went out first: wait for the client's, at most close_timeout.
        shut_after_flush_ = false;
        link_->shutdown_write();
    }
}

void WsConnection::on_write_ready() { flush(); }

// ---- lifetime -------------------------------------------------------------------------------

void WsConnection::handler_done(std::exception_ptr e) {
    handler_running_ = false;
    handler_ = {};
    // A message it still held is nobody's now: parsing and reading go on, so the client's
    // answer to the close below is read.
    if (held_) {
        held_ = has_next_ = false;
        held_view_ = {};
        in_->consume(held_consumed_);
        held_consumed_ = 0;
    }
    if (e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            log::error("WebSocket handler for {} threw: {}", route(), x.what());
        } catch (...) {
            log::error("WebSocket handler for {} threw a non-standard exception", route());
        }
        start_close(cc::internal_error, "");
    } else {
        start_close(cc::normal, "");
    }
    if (!link_->closed()) {
        parse();
        if (read_stopped_ && !held_) {
            read_stopped_ = false;
            link_->read_later();
        }
    }
    // A coroutine ending inside an I/O callback must not free this object under the caller.
    link_->loop().defer([this] { release_if_done(); });
}

void WsConnection::close_socket() {
    if (link_->closed()) return;
    // Both closing frames went (or the client ended first): a normal end of the link.
    link_->close(close_received_ && close_sent_);
    if (!ended_) deliver_close(cc::abnormal, {});
    if (shared_) {
        shared_->open.store(false, std::memory_order_relaxed);
        shared_->conn = nullptr;
    }
    for (Hub::Room* r : rooms_) r->remove(this, nullptr);
    rooms_.clear();
    wake_senders();
    // A message the handler still holds is a view into the input: the destructor returns it.
    if (in_->capacity() && !held_) link_->loop().buffers().release(*in_);
    if (out_->capacity()) link_->loop().buffers().release(*out_);
    release_if_done();
}

void WsConnection::release_if_done() noexcept {
    if (link_->closed() && !handler_running_ && !released_) {
        released_ = true;
        link_->done(this);
    }
}

void WsConnection::drain() {
    if (link_->closed()) return;
    start_close(cc::going_away, "server shutting down");
    flush();
}

void WsConnection::force_close() {
    reader_waiting_ = {};  // frames of the coroutine destroyed below
    waiters_ = waiters_tail_ = nullptr;
    if (handler_running_ && handler_) {
        std::coroutine_handle<> h = std::exchange(handler_, {});
        handler_running_ = false;
        h.destroy();  // the route coroutine and everything it awaits
    }
    close_socket();
    release_if_done();
}

void WsConnection::left(Hub::Room* r) noexcept {
    auto it = std::find(rooms_.begin(), rooms_.end(), r);
    if (it != rooms_.end()) rooms_.erase(it);
}

// Broadcasts are compressed once with the default window and no context.
bool WsConnection::takes_deflated_broadcast() const noexcept { return default_window_; }

// The other threads' queue, drained in one go: every frame into the output, one write.
void WsConnection::drain_shared() {
    std::vector<std::pair<std::string, WsType>> batch;
    {
        std::lock_guard lock(shared_->mu);
        batch.swap(shared_->queue);
        shared_->queued_bytes = 0;
        shared_->drain_posted = false;
    }
    for (auto& [data, type] : batch) {
        if (!is_open()) break;
        queue_message(data, type);
    }
}

// ---- timers ---------------------------------------------------------------------------------

void WsConnection::arm_timer() {
    if (link_->closed()) return;
    const std::uint64_t now = link_->loop().now_ms();
    std::uint64_t at = UINT64_MAX;
    if (close_deadline_ms_) at = close_deadline_ms_;
    if (!close_sent_) {
        if (ping_sent_ms_ && opt_.pong_timeout.count() > 0)
            at = std::min<std::uint64_t>(at, ping_sent_ms_ + opt_.pong_timeout.count());
        else if (opt_.ping_interval.count() > 0)
            at = std::min<std::uint64_t>(at, last_rx_ms_ + opt_.ping_interval.count());
    }
    if (at == UINT64_MAX) return;
    link_->loop().wheel().cancel(link_->timer());
    link_->loop().wheel().schedule(link_->timer(), now, at > now ? at - now : 0);
}

void WsConnection::timer_fired(TimerWheel::Entry* e) {
    static_cast<WsConnection*>(e->owner)->on_timer();
}

void WsConnection::on_timer() {
    if (link_->closed()) return;
    const std::uint64_t now = link_->loop().now_ms();
    if (close_deadline_ms_ && now >= close_deadline_ms_) {
        close_socket();  // the client never answered our close
        return;
    }
    if (!close_sent_ && !read_stopped_) {
        if (ping_sent_ms_ && opt_.pong_timeout.count() > 0 &&
            now >= ping_sent_ms_ + static_cast<std::uint64_t>(opt_.pong_timeout.count())) {
            log::debug("WebSocket {}: no pong in time", route());
            deliver_close(cc::abnormal, "no pong");
            close_socket();
            return;
        }
        if (!ping_sent_ms_ && opt_.ping_interval.count() > 0 &&
            now >= last_rx_ms_ + static_cast<std::uint64_t>(opt_.ping_interval.count())) {
            append_control(Opcode::ping, {});
            ping_sent_ms_ = now;
        }
    }
    arm_timer();
}

}  // namespace vela::detail

// ---- the public classes ---------------------------------------------------------------------

namespace vela {

using detail::WsConnection;

WsConnection& WebSocket::self() noexcept { return static_cast<WsConnection&>(*this); }
const WsConnection& WebSocket::self() const noexcept {
    return static_cast<const WsConnection&>(*this);
}

bool WebSocket::ReceiveAwaiter::await_ready() const noexcept { return ws.self().ready_message(); }
void WebSocket::ReceiveAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
    ws.self().wait_message(h);
}
WsMessage WebSocket::ReceiveAwaiter::await_resume() noexcept { return ws.self().take_message(); }

bool WebSocket::SendAwaiter::await_ready() noexcept {
    state = ws.self().try_send(data, type);
    return state != 0;
}
void WebSocket::SendAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
    waiter = h;
    ws.self().wait_space(this);
}

void WebSocket::ping(std::string_view payload) { self().queue_ping(payload); }
void WebSocket::close(std::uint16_t code, std::string_view reason) {
    self().start_close(code, reason);
}
bool WebSocket::open() const noexcept { return self().is_open(); }
std::string_view WebSocket::subprotocol() const noexcept { return self().subprotocol(); }
bool WebSocket::compressed() const noexcept { return self().deflating(); }
std::size_t WebSocket::queued() const noexcept { return self().backlog(); }
WsSender WebSocket::sender() const { return WsSender(self().shared()); }
Loop& WebSocket::loop() const noexcept { return self().loop(); }

bool WsSender::send(std::string data, WsType type) const {
    if (!s_ || !s_->open.load(std::memory_order_relaxed) || type == WsType::close) return false;
    bool post = false;
    {
        std::lock_guard lock(s_->mu);
        const std::size_t backlog =
            s_->queued_bytes + s_->out_bytes.load(std::memory_order_relaxed);
        if (backlog + data.size() > s_->max && backlog > 0) {
            if (s_->policy == SlowClient::close) {
                auto s = s_;
                s_->loop.post([s] {
                    if (s->conn)
                        s->conn->start_close(ws::close_code::policy_violation, "client too slow");
                });
            }
            return false;
        }
        s_->queued_bytes += data.size();
        s_->queue.emplace_back(std::move(data), type);
        post = !std::exchange(s_->drain_posted, true);
    }
    if (post) {
        auto s = s_;
        if (!s_->loop.post([s] {
                if (s->conn)
                    s->conn->drain_shared();
                else {
                    std::lock_guard lock(s->mu);
                    s->queue.clear();
                    s->drain_posted = false;
                }
            }))
            return false;
    }
    return true;
}

void WsSender::close(std::uint16_t code, std::string reason) const {
    if (!s_) return;
    auto s = s_;
    s_->loop.post([s, code, reason = std::move(reason)] {
        if (s->conn) s->conn->start_close(code, reason);
    });
}

bool WsSender::open() const noexcept { return s_ && s_->open.load(std::memory_order_relaxed); }

// ---- Hub ------------------------------------------------------------------------------------

struct Hub::Room::Slot {
    Loop* loop = nullptr;
    LoopRef ref;
    std::vector<WsConnection*> members;  // touched only on `loop`
};

Hub::Hub() = default;
Hub::~Hub() = default;

Hub::Room& Hub::room(std::string_view name) {
    std::lock_guard lock(mu_);
    auto it = rooms_.find(std::string(name));
    if (it == rooms_.end())
        it = rooms_.emplace(std::string(name), std::make_unique<Room>(*this, std::string(name)))
                 .first;
    return *it->second;
}

Hub::Room* Hub::find(std::string_view name) {
    std::lock_guard lock(mu_);
    auto it = rooms_.find(std::string(name));
    return it == rooms_.end() ? nullptr : it->second.get();
}

Hub::Room::Room(Hub& hub, std::string name) : hub_(hub), name_(std::move(name)) {}
Hub::Room::~Room() {
    for (auto& s : slots_) delete s.load(std::memory_order_relaxed);
    for (Slot* s : retired_) delete s;
}

// Slots are matched by the loop's identity, not its address: a Hub may outlive an App, and
// the next App's loop may sit where the last one's did.
Hub::Room::Slot* Hub::Room::find_slot(const LoopRef& ref) const noexcept {
    const int used = slots_used_.load(std::memory_order_acquire);
    for (int i = 0; i < used; ++i) {
        Slot* s = slots_[i].load(std::memory_order_acquire);
        if (s && s->ref.same_loop(ref)) return s;
    }
    return nullptr;
}

Hub::Room::Slot* Hub::Room::slot_for(Loop& loop) {
    const LoopRef ref = loop.ref();
    if (Slot* s = find_slot(ref)) return s;
    std::lock_guard lock(mu_);
    if (Slot* s = find_slot(ref)) return s;
    auto* s = new Slot;
    s->loop = &loop;
    s->ref = ref;
    const int n = slots_used_.load(std::memory_order_relaxed);
    if (n < kMaxLoops) {
        slots_[n].store(s, std::memory_order_release);
        slots_used_.store(n + 1, std::memory_order_release);
        return s;
    }
    // Every place is taken: a loop that is gone (an App that ended) gives up its place. Its
    // slot may still be read by a broadcast in flight, so it is retired, not freed.
    for (int i = 0; i < n; ++i) {
        Slot* old = slots_[i].load(std::memory_order_relaxed);
        if (!old->ref.alive()) {
            slots_[i].store(s, std::memory_order_release);
            retired_.emplace_back(old);
            return s;
        }
    }
    delete s;
    throw std::length_error("vela::Hub: a room has members on more than 256 live loops");
}

void Hub::Room::join(WebSocket& ws) {
    auto& c = static_cast<WsConnection&>(ws);
    // A broadcast is one server frame for all: a client's frames are masked each.
    if (c.client_mode()) throw std::logic_error("vela::Hub: rooms are for server sessions");
    if (!c.is_open()) return;
    Slot* s = slot_for(c.loop());
    if (std::find(s->members.begin(), s->members.end(), &c) != s->members.end()) return;
    s->members.push_back(&c);
    c.joined(this);
    count_.fetch_add(1, std::memory_order_relaxed);
    if (HubBackplane* bp = hub_.backplane_) bp->members_changed(*this);
}

void Hub::Room::leave(WebSocket& ws) {
    auto& c = static_cast<WsConnection&>(ws);
    remove(&c, nullptr);
    c.left(this);
}

void Hub::Room::remove(WsConnection* c, Slot* s) noexcept {
    if (!s) s = find_slot(c->loop().ref());
    if (!s) return;
    auto it = std::find(s->members.begin(), s->members.end(), c);
    if (it == s->members.end()) return;
    *it = s->members.back();
    s->members.pop_back();
    count_.fetch_sub(1, std::memory_order_relaxed);
    if (HubBackplane* bp = hub_.backplane_) bp->members_changed(*this);
}

namespace {
// One broadcast, encoded once: the plain frame, and the compressed one made by the first
// loop that has a member who takes it (none when no member negotiated permessage-deflate).
struct Encoded {
    std::string data;  // the message, kept for the compressed form
    ws::Opcode op = ws::Opcode::text;
    std::string plain;
    std::string deflated;
    std::once_flag once;
    const std::string& compressed() {
        std::call_once(once, [this] {
            thread_local ws::Deflater deflater(ws::DeflateParams{}, ws::DeflateOptions{});
            std::string z;
            deflater.compress(data, z);
            ws::append_frame(deflated, op, z, true, true);
        });
        return deflated;
    }
};
}  // namespace

std::size_t Hub::Room::broadcast(std::string_view data, WsType type, const WebSocket* except) {
    const std::size_t members = deliver(data, type, except);
    if (HubBackplane* bp = hub_.backplane_) bp->publish(*this, data, type);
    return members;
}

std::size_t Hub::Room::deliver(std::string_view data, WsType type, const WebSocket* except) {
    const std::size_t members = count();
    if (members == 0) return 0;
    auto e = std::make_shared<Encoded>();
    e->op = type == WsType::binary ? ws::Opcode::binary : ws::Opcode::text;
    ws::append_frame(e->plain, e->op, data);
    const bool worth = data.size() >= ws::DeflateOptions{}.min_size;
    if (worth) e->data.assign(data);
    const auto* skip = static_cast<const WsConnection*>(except);
    const int used = slots_used_.load(std::memory_order_acquire);
    for (int i = 0; i < used; ++i) {
        Slot* s = slots_[i].load(std::memory_order_acquire);
        s->ref.post([s, e, skip, worth] {
            for (std::size_t k = 0; k < s->members.size(); ++k) {
                WsConnection* c = s->members[k];
                if (c == skip) continue;
                const bool z = worth && c->takes_deflated_broadcast();
                c->queue_frame(z ? e->compressed() : e->plain, true);
            }
        });
    }
    return members;
}

}  // namespace vela

// ---- the client side (ws::connect) ----------------------------------------------------------

namespace vela::detail {

WebSocket& ws_client_start(net::Transport&& t, WsClientAgreement a) {
    auto ep = std::make_shared<WsEndpoint>();
    ep->options = std::move(a.options);
    ep->path = std::move(a.url);
    auto up = std::make_shared<WsUpgrade>();
    up->endpoint = std::move(ep);
    up->deflate = a.deflate;
    up->subprotocol = std::move(a.subprotocol);
    return *WsConnection::client_over_socket(std::move(t), std::move(up));
}

void ws_client_release(WebSocket& ws) noexcept { static_cast<WsConnection&>(ws).release_client(); }

}  // namespace vela::detail
