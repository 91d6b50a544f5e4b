#include "client/connection.hpp"

#include <cerrno>

#include "client/h2_exchange.hpp"
#include "client/pool.hpp"

namespace vela::http::detail {

namespace {
// Input a response may pile up while nobody reads it (a streamed body not being read): past
// this, reading stops until the reader takes some (back-pressure).
constexpr std::size_t kInputHighWater = 256 * 1024;
}  // namespace

Connection::Connection(OriginPool& p, Loop& loop, int fd, std::unique_ptr<tls::Stream> tls)
    : t(loop, fd, std::move(tls), false), pool(&p) {
    t.attach(*this, this, &Connection::fire);
}

Connection::~Connection() = default;

void Connection::start_tls(std::unique_ptr<tls::Stream> tls) {
    t.detach();
    t.tls = std::move(tls);
    t.attach(*this, this, &Connection::fire);
    t.add();
}

void Connection::fire(TimerWheel::Entry* e) { static_cast<Connection*>(e->owner)->on_timer(); }

void Connection::on_timer() {
    if (h2) {
        h2->on_timer();
        return;
    }
    if (idle) {
        if (t.due(idle_deadline)) pool->discard(this);
        return;
    }
    if (deadline && t.due(deadline)) {
        timed_out = true;
        wake();
    }
}

void Connection::set_deadline(std::uint64_t ms) {
    deadline = ms;
    timed_out = false;
    if (ms)
        t.schedule(ms);
    else
        t.disarm();
}

void Connection::park(std::uint64_t idle_deadline_ms) {
    idle = true;
    deadline = 0;
    idle_deadline = idle_deadline_ms;
    t.schedule(idle_deadline_ms);
    t.release_input_if_empty();
    t.release_output_if_empty();
    // Keep reading: a FIN or bytes from the server while idle make the connection unusable.
    read_on();
}

void Connection::unpark() noexcept {
    idle = false;
    t.disarm();
}

void Connection::on_write_ready() {
    if (h2)
        h2->on_write_ready();
    else
        wake();
}

bool Connection::on_read(ssize_t n) {
    if (h2) return h2->on_read(n);
    if (n > 0) {
        if (idle) {  // nothing may arrive between responses (RFC 9112 9.3 allows a close only)
            broken = true;
            pool->discard(this);
            return false;
        }
        if (lent || t.in.size() >= kInputHighWater) {
            t.stop_reading();
            wake();
            return false;
        }
        wake();
        return !t.closed() && t.reading();
    }
    if (n == 0)
        eof = true;
    else
        error = static_cast<int>(-n);
    if (idle) {
        pool->discard(this);
        return false;
    }
    if (!t.closed()) t.stop_reading();
    wake();
    return false;
}

void Connection::on_read_none() {
    if (idle)
        t.release_input_if_empty();
    else if (h2)
        t.keep_input();
}

bool Connection::on_handshake(std::string_view protocol) {
    handshake_done = true;
    alpn.assign(protocol);
    wake();
    return !t.closed();
}

}  // namespace vela::http::detail
