#include "worker.hpp"

#include "vela/server/body_pipe.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "http1_connection.hpp"
#include "http2_connection.hpp"
#include "vela/base/log.hpp"
#include "vela/net/socket.hpp"
#include "vela/tls/context.hpp"

namespace vela::detail {

ServerWorker::ServerWorker(HttpHandler& handler, const ServerOptions& options, std::size_t index)
    : handler_(handler),
      options_(options),
      loop_(LoopOptions{options.timer_tick_ms, 16 * 1024}),
      reserve_fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)),
      index_(index) {
    // Request objects a burst needed (one per request in flight) go after it, as buffers do.
    loop_.add_trim([this] {
        std::size_t freed = 0;
        while (request_pool_.size() > kKeptRequests) {
            request_pool_.pop_back();
            freed += sizeof(Request);
        }
        if (request_pool_.capacity() > 64 && request_pool_.size() <= 64)
            request_pool_.shrink_to_fit();
        return freed;
    });
}

ServerWorker::~ServerWorker() {
    close_all();
    for (auto& l : listeners_) {
        loop_.io().remove(l->handle);
        ::close(l->handle.fd);
    }
    if (reserve_fd_ >= 0) ::close(reserve_fd_);
}

void ServerWorker::add_listener(int fd, std::shared_ptr<tls::Context> tls, bool h2c_only) {
    auto l = std::make_unique<Listener>();
    l->worker = this;
    l->tls = std::move(tls);
    l->h2c_only = h2c_only && !l->tls;
    l->handle.fd = fd;
    l->handle.sink = l.get();
    l->handle.kind = IoHandle::listener;
    loop_.io().add(l->handle);
    listeners_.push_back(std::move(l));
}

void ServerWorker::run() {
    started_.store(true, std::memory_order_release);
    set_loop_draining_flag(&draining_);
    set_producer_done_hook([this] {
        if (draining_) maybe_finish_drain();
    });
    if (options_.on_loop_start) {
        stats_ = options_.on_loop_start(index_, loop_);
        // Kept after the run: a connection closed later may still count its last bytes (the
        // statistics outlive the server, see ServerOptions::on_loop_start).
        if (stats_) loop_.io().set_byte_counters(&stats_->io);
    }
    detail::set_current_loop_stats(stats_);
    loop_.run();
    set_producer_done_hook(nullptr);
    destroy_suspended_producers();
    // Connections still open are closed by the destructor, on another thread: they leave the
    // counts here.
    if (stats_) {
        for (Connection* c = conns_; c; c = c->next) count_connection(c, false);
        stats_ = nullptr;
    }
    detail::set_current_loop_stats(nullptr);
    set_loop_draining_flag(nullptr);
}

void ServerWorker::count_connection(const Connection* c, bool open) noexcept {
    LoopCounter& n =
        stats_->connections[static_cast<std::size_t>(c->protocol)][c->info.secure ? 1 : 0];
    if (open)
        n.add();
    else
        n.sub();
}

void ServerWorker::request_stop() {
    loop_.post([this] { begin_drain(); });
}

std::unique_ptr<Request> ServerWorker::new_request() {
    auto r = std::make_unique<Request>();
    r->parser_.set_limits(&options_.limits);
    r->parser_.pause_after_body_head(
        true);  // a streaming route may take the body (Http1Connection)
    return r;
}

void ServerWorker::release_request_slow(std::unique_ptr<Request>&& r) noexcept {
    if (request_pool_.size() >= 4096) {  // freed
        r.reset();
        return;
    }
    try {
        request_pool_.reserve(std::max<std::size_t>(16, request_pool_.capacity() * 2));
        request_pool_.push_back(std::move(r));
    } catch (...) {
        r.reset();
    }
}

// Out of descriptors: the pending connection would wake us forever. Give up the spare fd,
// take the connection, close it, and take the spare back.
void ServerWorker::shed(int err) {
    if ((err == EMFILE || err == ENFILE) && reserve_fd_ >= 0) {
        ::close(reserve_fd_);
        for (auto& l : listeners_) {
            int c = ::accept4(l->handle.fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (c >= 0) ::close(c);
        }
        reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (loop_.now_ms() >= next_emfile_log_ms_) {  // at most one line per second
            next_emfile_log_ms_ = loop_.now_ms() + 1000;
            log::warn("accept: out of file descriptors; shedding connections");
        }
    } else if (err != EAGAIN) {
        log::warn("accept failed: {}", std::strerror(err));
    }
}

// The peer's address as text, once per connection (requests point at it). False when the
// peer cannot be known (it reset the connection before the accept): such a connection is
// closed rather than served as if it came from a Unix socket.
static bool fill_connection_info(int fd, bool secure, ConnectionInfo& info) noexcept {
    info.secure = secure;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;
    const void* addr = nullptr;
    if (ss.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
        addr = &a.sin_addr;
        info.port = ntohs(a.sin_port);
    } else if (ss.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
        addr = &a.sin6_addr;
        info.port = ntohs(a.sin6_port);
        if (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) {  // ::ffff:1.2.3.4 reads as 1.2.3.4
            if (!::inet_ntop(AF_INET, &a.sin6_addr.s6_addr[12], info.ip, sizeof info.ip))
                return false;
            info.ip_size = static_cast<std::uint8_t>(std::strlen(info.ip));
            return true;
        }
    } else {
        return ss.ss_family == AF_UNIX;  // a Unix socket: no address
    }
    if (!::inet_ntop(ss.ss_family, addr, info.ip, sizeof info.ip)) return false;
    info.ip_size = static_cast<std::uint8_t>(std::strlen(info.ip));
    return true;
}

void ServerWorker::on_accept(int fd, Listener& from) {
    if (fd < 0) {
        shed(-fd);
        return;
    }
    if (draining_) {
        ::close(fd);
        return;
    }
    ConnectionInfo info;
    if (!fill_connection_info(fd, from.tls != nullptr, info)) {
        ::close(fd);
        return;
    }
    net::set_nodelay(fd);
    if (from.h2c_only) [[unlikely]] {
        // The session checks the client's preface; anything else ends with GOAWAY.
        auto* h2 = new Http2Connection(
            *this, net::Transport(loop_, fd, nullptr, driver_counts_bytes()), nullptr, {}, info);
        add_connection(h2);
        h2->start();
        return;
    }
    std::unique_ptr<tls::Stream> tls;
    if (from.tls) {
        try {
            tls =
                std::make_unique<tls::Stream>(from.tls->new_session(), loop_.buffers(), loop_.io());
        } catch (const std::exception& e) {
            log::warn("TLS session for a new connection failed: {}", e.what());
            ::close(fd);
            return;
        }
        ++handshakes_;
    }
    auto* c = new Http1Connection(*this, fd, std::move(tls));
    c->info = info;
    add_connection(c);
    c->start();
}

void ServerWorker::add_connection(Connection* c) noexcept {
    c->next = conns_;
    if (conns_) conns_->prev = c;
    conns_ = c;
    ++count_;
    if (stats_) [[unlikely]]
        count_connection(c, true);
    update_accepting();
}

// Listeners accept while the loop is under its connection cap; TLS listeners also wait while
// the loop has max_handshakes_per_loop handshakes in progress (they cost CPU and are a DoS
// target). Called on every accept and close, so it only flips flags that changed.
void ServerWorker::update_accepting() noexcept {
    const bool full = count_ >= options_.max_connections_per_loop || draining_;
    const bool tls_full = full || handshakes_ >= options_.max_handshakes_per_loop;
    if (full == plain_paused_ && tls_full == tls_paused_) return;
    plain_paused_ = full;
    tls_paused_ = tls_full;
    for (auto& l : listeners_) loop_.io().set_accepting(l->handle, !(l->tls ? tls_full : full));
}

void ServerWorker::handshake_finished() noexcept {
    --handshakes_;
    update_accepting();
}

void ServerWorker::replace_connection(Connection* old, Connection* fresh) noexcept {
    fresh->prev = old->prev;
    fresh->next = old->next;
    if (old->prev)
        old->prev->next = fresh;
    else if (conns_ == old)
        conns_ = fresh;
    if (old->next) old->next->prev = fresh;
    old->prev = old->next = nullptr;
    if (stats_) [[unlikely]] {
        count_connection(old, false);
        count_connection(fresh, true);
    }
    loop_.defer([old] { delete old; });
}

void ServerWorker::connection_closed(Connection* c) noexcept {
    if (c->prev)
        c->prev->next = c->next;
    else if (conns_ == c)
        conns_ = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = nullptr;
    --count_;
    if (stats_) [[unlikely]]
        count_connection(c, false);
    // Freed after the current batch of I/O events: the backend may still hold its handle.
    loop_.defer([c] { delete c; });
    loop_.trim_later();  // what it held goes back to the system after the burst
    update_accepting();
    if (draining_) maybe_finish_drain();
}

void ServerWorker::begin_drain() {
    if (draining_) return;
    draining_ = true;
    for (auto& l : listeners_) {
        loop_.io().remove(l->handle);
        ::close(l->handle.fd);
    }
    // Freed after the current batch of events, which may still name them (the drain runs
    // from the loop's wake-up, before the batch is dispatched; a removed handle is skipped).
    loop_.defer([gone = std::move(listeners_)] {});
    listeners_.clear();
    end_streams_for_drain();  // event streams end after what they queued
    for (Connection* c = conns_; c;) {
        Connection* nx = c->next;
        c->drain();
        c = nx;
    }
    loop_.call_after(options_.shutdown_timeout, [this] {
        if (count_) log::warn("shutdown deadline passed with {} connection(s) open", count_);
        close_all();
        loop_.stop();
    });
    maybe_finish_drain();
}

// Done once no connection is left and no stream producer still runs (an event stream ended
// by the drain lets its producer return at its next write or open() check; the deadline
// stops the loop anyway, and what still waits then is destroyed).
void ServerWorker::maybe_finish_drain() {
    if (count_ == 0 && !producers_running()) loop_.stop();
}

void ServerWorker::close_all() {
    for (Connection* c = conns_; c;) {
        Connection* nx = c->next;
        c->force_close();
        c = nx;
    }
}

}  // namespace vela::detail
