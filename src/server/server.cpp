#include "vela/server/server.hpp"

#include <signal.h>
#include <unistd.h>

#include <stdexcept>

#include "vela/base/log.hpp"
#include "worker.hpp"

namespace vela {

Server::Server(HttpHandler& handler, ServerOptions options)
    : handler_(handler), options_(std::move(options)) {}

Server::~Server() {
    if (started_) {
        stop();
        wait();
    }
}

Server& Server::listen(net::Endpoint ep) {
    if (started_) throw std::logic_error("Server::listen after start");
    endpoints_.push_back(std::move(ep));
    return *this;
}

std::size_t Server::workers() const noexcept { return workers_.size(); }

// Opens one listener per endpoint and worker. TCP endpoints use SO_REUSEPORT: the first
// socket binds (resolving port 0), the others bind the same port. A Unix socket cannot be
// shared that way, so every worker watches the one socket.
void Server::open_listeners(unsigned threads) {
    if (endpoints_.empty()) endpoints_.push_back(net::Endpoint::any(8080));
    for (unsigned i = 0; i < threads; ++i)
        workers_.push_back(std::make_unique<detail::ServerWorker>(handler_, options_));
    for (net::Endpoint& ep : endpoints_) {
        if (ep.kind == net::Endpoint::Kind::unix_path) {
            int fd = net::open_listener(ep, options_.listen);
            workers_[0]->add_listener(fd);
            for (unsigned i = 1; i < threads; ++i) workers_[i]->add_listener(::dup(fd));
            continue;
        }
        for (unsigned i = 0; i < threads; ++i) {
            int fd = net::open_listener(ep, options_.listen);
            if (ep.port == 0) ep.port = net::local_port(fd);
            workers_[i]->add_listener(fd);
        }
        if (port_ == 0) port_ = ep.port;
    }
}

void Server::start(unsigned threads) {
    if (started_) throw std::logic_error("Server already started");
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    ::signal(SIGPIPE, SIG_IGN);
    open_listeners(threads);
    started_ = true;
    workers_ready_.store(true);
    if (stop_requested_.load()) stop_workers();
    for (auto& w : workers_) threads_.emplace_back([w = w.get()] { w->run(); });
    for (auto& w : workers_)
        while (!w->started()) std::this_thread::yield();  // a stopped one may be done already
}

int Server::run(unsigned threads) {
    if (started_) throw std::logic_error("Server already started");
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    block_signals();  // inherited by the worker threads: only worker 0's signalfd sees them
    open_listeners(threads);
    started_ = true;
    workers_ready_.store(true);
    if (stop_requested_.load()) stop_workers();
    workers_[0]->loop().on_signals({SIGINT, SIGTERM}, [this](int signo) {
        log::info("signal {}: shutting down gracefully", signo);
        stop();
    });
    for (std::size_t i = 1; i < workers_.size(); ++i)
        threads_.emplace_back([w = workers_[i].get()] { w->run(); });
    for (const auto& ep : endpoints_)
        log::info("vela listening on {} ({} loops)", ep.to_string(), threads);
    workers_[0]->run();
    return wait();
}

void Server::stop() {
    stop_requested_.store(true);
    if (workers_ready_.load()) stop_workers();
}

// Posts a drain to every loop (it runs when the loop does; twice is harmless).
void Server::stop_workers() {
    for (auto& w : workers_) w->request_stop();
}

int Server::wait() {
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
    return 0;
}

}  // namespace vela
