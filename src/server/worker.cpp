#include "worker.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "http1_connection.hpp"
#include "vela/base/log.hpp"
#include "vela/net/socket.hpp"

namespace vela::detail {

ServerWorker::ServerWorker(HttpHandler& handler, const ServerOptions& options)
    : handler_(handler),
      options_(options),
      loop_(LoopOptions{options.timer_tick_ms, 16 * 1024}),
      reserve_fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

ServerWorker::~ServerWorker() {
    close_all();
    for (auto& l : listeners_) {
        loop_.io().remove(*l);
        ::close(l->fd);
    }
    if (reserve_fd_ >= 0) ::close(reserve_fd_);
}

void ServerWorker::add_listener(int fd) {
    auto h = std::make_unique<IoHandle>();
    h->fd = fd;
    h->sink = this;
    h->kind = IoHandle::listener;
    loop_.io().add(*h);
    listeners_.push_back(std::move(h));
}

void ServerWorker::run() {
    started_.store(true, std::memory_order_release);
    loop_.run();
}

void ServerWorker::request_stop() {
    loop_.post([this] { begin_drain(); });
}

std::unique_ptr<Request> ServerWorker::acquire_request() {
    if (request_pool_.empty()) return std::make_unique<Request>();
    auto r = std::move(request_pool_.back());
    request_pool_.pop_back();
    return r;
}

void ServerWorker::release_request(std::unique_ptr<Request> r) noexcept {
    if (request_pool_.size() >= 4096) return;  // freed
    try {
        request_pool_.push_back(std::move(r));
    } catch (...) {
    }
}

void ServerWorker::on_accept(int fd) {
    if (fd < 0) {
        if ((fd == -EMFILE || fd == -ENFILE) && reserve_fd_ >= 0) {
            // Out of descriptors: the pending connection would wake us forever. Give up the
            // spare fd, take the connection, close it, and take the spare back.
            ::close(reserve_fd_);
            for (auto& l : listeners_) {
                int c = ::accept4(l->fd, nullptr, nullptr, SOCK_CLOEXEC);
                if (c >= 0) ::close(c);
            }
            reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (loop_.now_ms() >= next_emfile_log_ms_) {  // at most one line per second
                next_emfile_log_ms_ = loop_.now_ms() + 1000;
                log::warn("accept: out of file descriptors; shedding connections");
            }
        } else if (fd != -EAGAIN) {
            log::warn("accept failed: {}", std::strerror(-fd));
        }
        return;
    }
    if (draining_) {
        ::close(fd);
        return;
    }
    net::set_nodelay(fd);
    auto* c = new Http1Connection(*this, fd);
    c->next = conns_;
    if (conns_) conns_->prev = c;
    conns_ = c;
    ++count_;
    if (count_ >= options_.max_connections_per_loop && !accept_paused_) {
        accept_paused_ = true;
        for (auto& l : listeners_) loop_.io().set_accepting(*l, false);
    }
    c->start();
}

void ServerWorker::connection_closed(Http1Connection* c) noexcept {
    if (c->prev)
        c->prev->next = c->next;
    else if (conns_ == c)
        conns_ = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = nullptr;
    --count_;
    // Freed after the current batch of I/O events: the backend may still hold its handle.
    loop_.defer([c] { delete c; });
    if (accept_paused_ && count_ < options_.max_connections_per_loop && !draining_) {
        accept_paused_ = false;
        for (auto& l : listeners_) loop_.io().set_accepting(*l, true);
    }
    if (draining_) maybe_finish_drain();
}

void ServerWorker::begin_drain() {
    if (draining_) return;
    draining_ = true;
    for (auto& l : listeners_) {
        loop_.io().remove(*l);
        ::close(l->fd);
    }
    listeners_.clear();
    for (Http1Connection* c = conns_; c;) {
        Http1Connection* nx = c->next;
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

void ServerWorker::maybe_finish_drain() {
    if (count_ == 0) loop_.stop();
}

void ServerWorker::close_all() {
    for (Http1Connection* c = conns_; c;) {
        Http1Connection* nx = c->next;
        c->force_close();
        c = nx;
    }
}

}  // namespace vela::detail
