// WebSocket over HTTP/2 (RFC 8441): the link between a WebSocket session and the stream of an
// extended CONNECT, and the driver's part of starting and ending one. Apart from the hot
// file (http2_connection.cpp) so that plain requests pay nothing for it.

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "http2_connection.hpp"
#include "http2_stream.hpp"
#include "vela/base/log.hpp"
#include "vela/server/tunnel.hpp"
#include "ws_connection.hpp"

namespace vela::detail {

class H2TunnelConnection;

// The HTTP/2 stream under a WebSocket session (RFC 8441). DATA the session takes in is given
// back to the client's window at once; DATA that arrives while the session holds a message
// waits in `pending_`, still counted in the window (so the client is held back as TCP holds
// back a socket's peer). The session's frames go out as DATA pulled by the connection under
// flow control and its output high-water mark (pull()). Calls into the session happen from
// the loop (deliver(), deferred), never from inside the connection's frame processing.
class H2WsLink final : public WsLink {
  public:
    H2WsLink(H2Stream& s, Loop& loop) noexcept : s_(&s), loop_(loop) {}
    ~H2WsLink() override {
        loop_.wheel().cancel(timer_);
        if (in_.capacity()) loop_.buffers().release(in_);
        if (out_.capacity()) loop_.buffers().release(out_);
        H2Stream* s = s_;
        s->ws = nullptr;
        s->busy = false;
        if (s->conn)
            s->conn->ws_ended(*s);
        else
            delete s;  // its connection is gone (see ~Http2Connection)
    }

    Loop& loop() const noexcept override { return loop_; }
    bool closed() const noexcept override { return closed_; }
    Buffer& in() noexcept override { return in_; }
    Buffer& input() override {
        if (in_.capacity() == 0) loop_.buffers().acquire(in_);
        return in_;
    }
    void keep_input() noexcept override {
        if (in_.empty() && in_.capacity()) loop_.buffers().release(in_);
    }
    Buffer& out() noexcept override { return out_; }
    Buffer& output() override {
        if (out_.capacity() == 0) loop_.buffers().acquire(out_);
        return out_;
    }
    void release_output_if_empty() noexcept override {
        if (out_.empty() && out_.capacity()) loop_.buffers().release(out_);
    }
    bool write() override {
        if (closed_) return true;
        if (gone_) return out_.empty();  // nowhere to send: the session ends 1006
        if (!out_.empty() || (end_wanted_ && !end_sent_)) {
            if (Http2Connection* c = s_->conn) c->ws_output(*s_);
        }
        return true;
    }
    void start() override {}
    void read() override {
        reading_ = true;
        notify();
    }
    bool reading() const noexcept override { return reading_; }
    void stop_reading() override { reading_ = false; }
    void read_later() override {
        resume_ = true;
        notify();
    }
    void shutdown_write() override {
        end_wanted_ = true;
        write();
    }
    void close(bool clean) noexcept override {
        if (closed_) return;
        closed_ = true;
        loop_.wheel().cancel(timer_);
        Http2Connection* c = s_->conn;
        if (!c || gone_ || !s_->open()) return;
        if (!clean) {
            c->reset_stream(*s_, h2::ErrorCode::cancel);  // RFC 8441 5: an abnormal closure
            return;
        }
        // Both closing frames went: what is left of ours, then END_STREAM. The stream goes on
        // as a response body of its own (the session may be freed meanwhile); a client that
        // has not ended its side is then asked to stop with RST_STREAM NO_ERROR (9113 8.1).
        if (end_sent_) {
            if (s_->st->remote_open()) c->reset_stream(*s_, h2::ErrorCode::no_error);
            return;
        }
        s_->out_body.assign(out_.data(), out_.size());
        s_->body_off = 0;
        out_.clear();
        s_->st->await_peer_end = false;
        s_->body_pending = true;
        c->want_send(*s_);
        if (!c->in_feed_ && !c->in_flush_ && !c->in_run_) c->flush();
    }
    TimerWheel::Entry& timer() noexcept override { return timer_; }
    void done(WsConnection* ws) noexcept override {
        loop_.defer([ws] { delete ws; });  // (the link goes with it, then the stream)
    }

    /// The session on this link.
    void attach(WsConnection* ws) noexcept { ws_ = ws; }
    /// Or the tunnel on this link (a proxied WebSocket).
    void attach_tunnel(H2TunnelConnection* t) noexcept { tunnel_ = t; }
    /// The driver on this link, a session or a tunnel (null once it is gone).
    Connection* driver() const noexcept;
    /// True while the session's frames are pulled from out() (until the link closes).
    bool pulls() const noexcept { return !closed_; }

    /// DATA from the client (inside the connection's frame processing).
    void received(Http2Connection& c, std::string_view data, bool end_stream) {
        if (closed_) {
            c.release_body(*s_, data.size());  // the session is over: dropped
        } else if (reading_ && pending_.empty()) {
            input().append(data);
            fresh_ += data.size();
            c.release_body(*s_, data.size());
        } else {
            pending_.append(data);
        }
        if (end_stream) peer_ended_ = true;
        notify();
    }
    /// The stream is gone: ended both ways (`reset` false), reset, or the connection closed.
    void stream_closed(bool reset) {
        if (closed_) return;
        gone_ = true;
        reset_ = reset;
        notify();
    }
    /// The client ended its side before the session started.
    void peer_ended() {
        peer_ended_ = true;
        notify();
    }
    /// Moves the session's frames into DATA on `st` (the connection's produce()): at most
    /// 64 KiB a call, so its output high-water mark applies; END_STREAM once asked and empty.
    void pull(h2::Session& session, h2::Stream& st) {
        if (!out_.empty()) {
            const std::size_t n = session.send_data(
                st, std::string_view(out_.data(), std::min<std::size_t>(out_.size(), 64 * 1024)),
                false);
            out_.consume(n);
            if (n != 0 && ws_) ws_->schedule_flush();  // waiting senders, a shutdown
            if (n != 0 && tunnel_) user_drained();
        }
        if (out_.empty() && end_wanted_ && !end_sent_) {
            end_sent_ = true;
            st.await_peer_end = true;  // the client's closing frame is still to come
            session.send_data(st, {}, true);
        }
    }
    /// Something remains for pull().
    bool has_output() const noexcept { return !out_.empty() || (end_wanted_ && !end_sent_); }

  private:
    // Calls into the session from the loop, once per batch of events.
    void notify() {
        if (notify_queued_ || closed_) return;  // (closed: its owner may be freed next)
        notify_queued_ = true;
        loop_.defer([this] { deliver(); });
    }
    void deliver() {
        notify_queued_ = false;
        if (closed_ || (!ws_ && !tunnel_)) return;
        if (!reading_) {
            if (tunnel_ && gone_) return user_read(0);  // a held-back tunnel's client went
            if (!resume_ || !user_wants_input()) return;
            reading_ = true;
        }
        resume_ = false;
        if (!pending_.empty()) {
            const std::size_t n = pending_.size();
            input().append(pending_);
            std::string().swap(pending_);
            fresh_ += n;
            if (Http2Connection* c = s_->conn; c && !gone_ && s_->open()) c->release_body(*s_, n);
        }
        if (fresh_ != 0) {
            const auto n = static_cast<ssize_t>(std::exchange(fresh_, 0));
            user_read(n);
            if (closed_ || !reading_) return;
        }
        if (peer_ended_ || gone_) user_read(0);  // the session ends (1006 without a close)
    }
    // The session's or the tunnel's (defined after H2TunnelConnection).
    void user_read(ssize_t n);
    bool user_wants_input();
    void user_drained();

    H2Stream* s_;
    Loop& loop_;
    WsConnection* ws_ = nullptr;
    H2TunnelConnection* tunnel_ = nullptr;
    Buffer in_;
    Buffer out_;
    std::string pending_;
    TimerWheel::Entry timer_;
    std::size_t fresh_ = 0;  // bytes added to in_ since the session last heard
    bool reading_ = true;
    bool resume_ = false;
    bool closed_ = false;
    bool gone_ = false;   // the stream no longer exists
    bool reset_ = false;  // ... because it was reset (or its connection closed)
    bool peer_ended_ = false;
    bool end_wanted_ = false;
    bool end_sent_ = false;
    bool notify_queued_ = false;
};

// The link first, so that it is built before the session and outlives it (its destructor
// hands the stream back to the connection).
struct H2WsLinkPart {
    H2WsLinkPart(H2Stream& s, Loop& loop) noexcept : link(s, loop) {}
    H2WsLink link;
};

class H2WsConnection final : public H2WsLinkPart, public WsConnection {
  public:
    H2WsConnection(ServerWorker& worker, H2Stream& s, Loop& loop, std::unique_ptr<Request> req,
                   std::shared_ptr<WsUpgrade> up)
        : H2WsLinkPart(s, loop), WsConnection(worker, link, std::move(req), std::move(up)) {
        link.attach(this);
    }
};

// A tunnel whose client side is an HTTP/2 stream: a WebSocket's extended CONNECT (RFC 8441)
// that the reverse proxy joined to an upstream connection it switched over HTTP/1.1 (a
// vela::TunnelUpgrade answered with 200). A WebSocket's frames are the same bytes over both,
// so the stream's DATA goes to the upstream as it is, and the upstream's bytes come back as
// DATA. Bounded as TunnelConnection is: past the high-water mark toward one side, the other
// side is read no more (the client is held back by its stream window, the upstream by TCP).
// An end of either side is passed on (END_STREAM, a TCP half-close); both ended, the stream
// closes; an error, a reset or the idle timeout closes both (RST_STREAM CANCEL).
class H2TunnelConnection final : public H2WsLinkPart, public Connection {
  public:
    H2TunnelConnection(H2Stream& s, Loop& loop, TunnelUpgrade& up)
        : H2WsLinkPart(s, loop),
          up_(*this, std::move(*up.other)),
          idle_ms_(static_cast<std::uint64_t>(up.idle_timeout.count())),
          hold_(std::move(up.hold)) {
        link.attach_tunnel(this);
        up_.t.attach(up_, this, &H2TunnelConnection::timer_fired);
        protocol = ConnectionProtocol::websocket;
    }

    // Registers the upstream and passes on what each side already sent.
    void start() {
        last_ms_ = up_.t.loop().now_ms();
        up_.t.add();
        if (idle_ms_) up_.t.schedule(last_ms_ + idle_ms_);
        to_upstream();              // the client's first frames, sent with its CONNECT
        if (!closed_) to_client();  // what the upstream sent right behind its 101
        if (!closed_) up_.t.read();
    }
    void drain() override { close_all(false); }
    void force_close() override { close_all(false); }

    // The link's calls.
    void client_read(ssize_t n, bool reset) {
        if (closed_) return;
        if (n > 0) return to_upstream();
        if (reset) return close_all(false);  // reset, or the connection went away
        client_eof_ = true;  // END_STREAM: a half-close toward the upstream, once it has all
        flush_up();
    }
    bool wants_input() const noexcept { return !closed_ && !client_paused_; }
    void client_drained() {
        if (closed_ || !up_paused_ || link.out().size() > kHighWater / 2) return;
        up_paused_ = false;
        if (!up_eof_) up_.t.read_later([this] { return !closed_ && !up_paused_ && !up_eof_; });
    }

  private:
    static constexpr std::size_t kHighWater = 256 * 1024;

    struct Upstream final : tls::StreamOwner {
        Upstream(H2TunnelConnection& owner, net::Transport&& t) : owner(owner), t(std::move(t)) {}
        Buffer& read_buffer() override { return t.input(); }
        bool on_read(ssize_t n) override { return owner.upstream_read(n); }
        void on_read_none() override { t.release_input_if_empty(); }
        void on_write_ready() override { owner.upstream_writable(); }
        bool on_handshake(std::string_view) override { return true; }
        H2TunnelConnection& owner;
        net::Transport t;
    };
    bool on_handshake(std::string_view) override { return true; }

    // The client's bytes to the upstream.
    void to_upstream() {
        Buffer& in = link.in();
        if (!in.empty()) {
            up_.t.output().append(in.data(), in.size());
            in.clear();
            last_ms_ = up_.t.loop().now_ms();
        }
        link.keep_input();
        if (!flush_up()) return;
        if (up_.t.out.size() > kHighWater && !client_paused_) {
            client_paused_ = true;
            link.stop_reading();
        }
    }
    // The upstream's bytes to the client, as DATA pulled by the connection.
    void to_client() {
        Buffer& in = up_.t.in;
        if (!in.empty()) {
            link.output().append(in.data(), in.size());
            in.clear();
            last_ms_ = up_.t.loop().now_ms();
        }
        up_.t.keep_input();
        if (!link.write()) return close_all(false);
        if (link.out().size() > kHighWater && !up_paused_) {
            up_paused_ = true;
            if (!up_.t.closed() && up_.t.reading()) up_.t.stop_reading();
        }
    }
    // Sends what is queued toward the upstream; its write side is shut once the client ended
    // and all of it left. False when the tunnel closed.
    bool flush_up() {
        if (up_.t.closed()) return !closed_;
        if (!up_.t.out.empty() && up_.t.write_out() < 0) {
            close_all(false);
            return false;
        }
        up_.t.release_output_if_empty();
        if (client_eof_ && up_.t.out.empty() && !up_shut_) {
            up_shut_ = true;
            up_.t.shutdown_write();
        }
        // Both directions ended and our bytes left (the stream's rest goes with its close).
        if (client_eof_ && up_eof_ && up_.t.out.empty() &&
            !(up_.t.tls && up_.t.tls->output_pending())) {
            close_all(true);
            return false;
        }
        return true;
    }
    bool upstream_read(ssize_t n) {
        if (closed_) return false;
        if (n > 0) {
            to_client();
            return !closed_ && !up_.t.closed() && up_.t.reading();
        }
        if (n < 0) {
            close_all(false);
            return false;
        }
        up_eof_ = true;  // the upstream ended its direction: END_STREAM once the rest is sent
        if (!up_.t.closed() && up_.t.reading()) up_.t.stop_reading();
        link.shutdown_write();
        flush_up();
        return false;
    }
    void upstream_writable() {
        if (closed_ || !flush_up()) return;
        if (client_paused_ && up_.t.out.size() <= kHighWater / 2) {
            client_paused_ = false;
            link.read_later();
        }
    }
    static void timer_fired(TimerWheel::Entry* e) {
        auto* self = static_cast<H2TunnelConnection*>(e->owner);
        if (self->closed_ || !self->idle_ms_) return;
        if (self->up_.t.due(self->last_ms_ + self->idle_ms_)) self->close_all(false);
    }
    // Ends both sides (`clean`: the stream ends with what is left of the upstream's bytes,
    // else it is reset) and frees the tunnel after this batch of events.
    void close_all(bool clean) noexcept {
        if (closed_) return;
        closed_ = true;
        link.close(clean);
        up_.t.close();
        up_.t.release_buffers();
        up_.t.loop().defer([this] { delete this; });  // the link hands the stream back
    }

    Upstream up_;
    std::uint64_t idle_ms_;
    std::uint64_t last_ms_ = 0;
    std::shared_ptr<void> hold_;  // vela::tunnel()'s, released with the tunnel
    bool closed_ = false;
    bool client_eof_ = false;     // END_STREAM from the client
    bool up_eof_ = false;         // FIN from the upstream
    bool up_shut_ = false;        // our write side toward the upstream is shut
    bool client_paused_ = false;  // the client's DATA waits: the upstream is behind
    bool up_paused_ = false;      // the upstream is not read: the client is behind
};

Connection* H2WsLink::driver() const noexcept {
    return ws_ ? static_cast<Connection*>(ws_) : tunnel_;
}
void H2WsLink::user_read(ssize_t n) {
    if (ws_)
        ws_->on_read(n);
    else
        tunnel_->client_read(n, gone_ && reset_);
}
bool H2WsLink::user_wants_input() { return ws_ ? ws_->wants_input() : tunnel_->wants_input(); }
void H2WsLink::user_drained() { tunnel_->client_drained(); }

void ws_link_received(H2WsLink& link, Http2Connection& c, std::string_view data, bool end_stream) {
    link.received(c, data, end_stream);
}
void ws_link_peer_ended(H2WsLink& link) { link.peer_ended(); }
void ws_link_stream_closed(H2WsLink& link, bool reset) { link.stream_closed(reset); }
Connection* ws_link_session(H2WsLink& link) noexcept { return link.driver(); }
bool ws_link_pull(H2WsLink& link, H2Stream& s, h2::Session& session, h2::Stream& st) {
    if (!link.pulls()) return false;
    link.pull(session, st);
    s.body_pending = link.has_output();
    return true;
}

// The 200 from ws_accept() to an extended CONNECT (RFC 8441 5): HEADERS without END_STREAM,
// then the stream is the link of a WebSocket session (its request and the stream's storage
// stay with it). DATA that came before the answer is the session's first input.
void Http2Connection::start_websocket(H2Stream& s, Response& r) {
    std::shared_ptr<Upgrade> any = r.take_upgrade();
    auto tunnel = std::dynamic_pointer_cast<TunnelUpgrade>(any);
    auto up = tunnel ? nullptr : std::dynamic_pointer_cast<WsUpgrade>(std::move(any));
    if ((!up && !tunnel) || r.status() != Status::OK || !s.req ||
        s.req->protocol() != "websocket") {
        log::error(
            "a protocol switch for {} that HTTP/2 cannot run: only ws_accept()'s answer "
            "to an extended CONNECT, or a 200 vela::TunnelUpgrade to one",
            s.req ? s.req->path() : std::string_view("?"));
        reset_stream(s, h2::ErrorCode::internal_error);
        return;
    }
    std::string& block = session_.begin_headers();
    session_.encoder().begin_block(block);
    session_.encoder().add_status(200, block);
    encode_fields(r, block);
    s.dispatching = true;  // (the stream may close inside end_headers: kept until below)
    session_.end_headers(*s.st, false);
    s.dispatching = false;
    if (!s.open()) {
        if (!s.busy && !s.queued && !s.sending) free_stream(&s);
        return;
    }
    if (tunnel) {
        // A proxied WebSocket: the stream joined to the upstream's connection.
        auto* tc = new H2TunnelConnection(s, t_.loop(), *tunnel);
        H2WsLink* l = &tc->link;
        if (!s.body.empty()) {
            l->input().append(s.body);
            std::string().swap(s.body);
        }
        worker_.release_request(std::move(s.req));
        s.raw.clear();  // (the request's bytes: not needed for the tunnel's life)
        s.raw.shrink_to_fit();
        s.fields.clear();
        s.fields.shrink_to_fit();
        s.cookies.clear();
        s.cookies.shrink_to_fit();
        s.ws = l;
        s.streaming = true;
        s.busy = true;
        tc->info = info;
        tc->start();
        if (s.request_done && s.ws == l) l->peer_ended();
        if (draining_) tc->drain();  // made during a graceful stop: it ends too
        return;
    }
    auto* ws = new H2WsConnection(worker_, s, t_.loop(), std::move(s.req), std::move(up));
    H2WsLink* l = &ws->link;
    if (!s.body.empty()) {
        l->input().append(s.body);
        std::string().swap(s.body);
    }
    s.ws = l;
    s.streaming = true;
    s.busy = true;
    ws->adopt_info(info);
    ws->start();
    if (s.request_done && s.ws == l) l->peer_ended();
    if (draining_ && s.ws == l) ws->drain();  // made during a graceful stop: 1001
}

// The session queued frames (or its end) on `s`: pulled by the next flush.
void Http2Connection::ws_output(H2Stream& s) {
    if (t_.closed() || !s.open()) return;
    s.body_pending = true;
    want_send(s);
    if (!in_feed_ && !in_flush_ && !in_run_) flush();
}

// A session's link was destroyed: its stream is done with (it ended or was reset already;
// reset now if not, unless the rest of its frames is still being sent).
void Http2Connection::ws_ended(H2Stream& s) noexcept {
    if (s.open()) {
        if (!s.body_pending) reset_stream(s, h2::ErrorCode::cancel);  // on_close frees it
    } else if (!s.queued && !s.sending && !s.dispatching) {
        free_stream(&s);
    }
    if (t_.closed()) {
        release_if_done();
    } else if (!in_feed_ && !in_flush_ && !in_run_) {
        flush();
    }
}

}  // namespace vela::detail
