#include "tunnel_connection.hpp"

#include <utility>

#include "vela/base/log.hpp"
#include "vela/server/tunnel.hpp"

namespace vela {

Response tunnel(Response r, std::unique_ptr<net::Transport> other,
                std::chrono::milliseconds idle_timeout, std::shared_ptr<void> hold) {
    if (!other) throw std::invalid_argument("vela::tunnel: no connection to join");
    r.set_status(Status::SwitchingProtocols);
    r.set_upgrade(std::make_shared<TunnelUpgrade>(std::move(other), idle_timeout, std::move(hold)));
    return r;
}

}  // namespace vela

namespace vela::detail {

namespace {
// Bytes queued toward a side past which the other side stops reading.
constexpr std::size_t kHighWater = 256 * 1024;
}  // namespace

TunnelConnection::TunnelConnection(ServerWorker& worker, net::Transport&& client,
                                   std::unique_ptr<net::Transport> other,
                                   std::chrono::milliseconds idle, std::shared_ptr<void> hold)
    : worker_(worker),
      a_(*this, std::move(client)),
      b_(*this, std::move(*other)),
      idle_ms_(static_cast<std::uint64_t>(idle.count())),
      hold_(std::move(hold)) {
    a_.peer = &b_;
    b_.peer = &a_;
    a_.t.attach(a_, this, &TunnelConnection::timer_fired);
    b_.t.attach(b_, this, &TunnelConnection::timer_fired);
}

TunnelConnection::~TunnelConnection() = default;

void TunnelConnection::start() {
    last_ms_ = a_.t.loop().now_ms();
    a_.t.add();
    b_.t.add();
    if (idle_ms_) a_.t.schedule(last_ms_ + idle_ms_);
    // What each side sent after its head (a client's first frames, an upstream's greeting).
    forward(a_);
    if (!closed_) forward(b_);
    if (!closed_) a_.t.read();
    if (!closed_) b_.t.read();
}

void TunnelConnection::timer_fired(TimerWheel::Entry* e) {
    static_cast<TunnelConnection*>(e->owner)->on_timer();
}

void TunnelConnection::on_timer() {
    if (closed_ || !idle_ms_) return;
    if (!a_.t.due(last_ms_ + idle_ms_)) return;
    close_both();
}

// Moves what `from` received to its peer's output and sends it.
void TunnelConnection::forward(Side& from) {
    Side& to = *from.peer;
    if (!from.t.in.empty()) {
        to.t.output().append(from.t.in.data(), from.t.in.size());
        from.t.in.clear();
        last_ms_ = from.t.loop().now_ms();
    }
    from.t.keep_input();
    if (!flush(to)) return;
    if (to.t.out.size() > kHighWater && !from.paused) {
        from.paused = true;
        if (!from.t.closed() && from.t.reading()) from.t.stop_reading();
    }
}

// True while `side`'s TLS transform still holds records for the socket.
bool TunnelConnection::tls_pending(const Side& side) noexcept {
    return side.t.tls && !side.t.closed() && side.t.tls->output_pending();
}

// Sends what is queued toward `to`; passes on the other side's end once all of it left.
// False when the tunnel closed.
bool TunnelConnection::flush(Side& to) {
    if (to.t.closed()) return !closed_;
    if (!to.t.out.empty() && to.t.write_out() < 0) {
        close_both();
        return false;
    }
    to.t.release_output_if_empty();
    if (to.peer->eof && to.t.out.empty() && !to.shut) {
        to.shut = true;
        to.t.shutdown_write();
    }
    // Both directions ended and everything left, TLS records included: done.
    if (a_.eof && b_.eof && a_.t.out.empty() && b_.t.out.empty() && !tls_pending(a_) &&
        !tls_pending(b_)) {
        close_both();
        return false;
    }
    return true;
}

bool TunnelConnection::side_read(Side& from, ssize_t n) {
    if (closed_) return false;
    if (n > 0) {
        forward(from);
        return !closed_ && !from.t.closed() && from.t.reading();
    }
    if (n < 0) {
        close_both();
        return false;
    }
    from.eof = true;  // the peer ended its direction: pass the half-close on
    if (!from.t.closed() && from.t.reading()) from.t.stop_reading();
    flush(*from.peer);
    return false;
}

void TunnelConnection::side_writable(Side& to) {
    if (closed_ || !flush(to)) return;
    Side& from = *to.peer;
    if (from.paused && to.t.out.size() <= kHighWater / 2) {
        from.paused = false;
        if (!from.eof)
            from.t.read_later([this, &from] { return !closed_ && !from.paused && !from.eof; });
    }
}

void TunnelConnection::close_both() noexcept {
    if (closed_) return;
    closed_ = true;
    a_.t.close();
    b_.t.close();
    a_.t.release_buffers();
    b_.t.release_buffers();
    worker_.connection_closed(this);
}

}  // namespace vela::detail
