#include "vela/server/server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "activation.hpp"
#include "vela/base/log.hpp"
#include "vela/tls/context.hpp"
#include "worker.hpp"

namespace vela {

Response server_error_response(const ServerOptions& options, Status s, const Request* req) {
    Response r(s);
    if (options.error_body) {
        try {
            options.error_body(req, r);
        } catch (const std::exception& e) {
            log::error("error_body for {} threw: {}", static_cast<int>(s), e.what());
            r = Response(s);
        } catch (...) {
            r = Response(s);
        }
    }
    if (r.is_bare()) {
        r.set_body(std::string(reason_phrase(s)));
        r.set_content_type(mime::text);
    }
    return r;
}

void rewrite_file_error(const ServerOptions& options, const Request& req, Response& r) {
    if (!options.error_body || static_cast<int>(r.status()) < 400 || r.file_body()) return;
    r.set_body({});
    r.remove_header("Content-Type");
    try {
        options.error_body(&req, r);
    } catch (const std::exception& e) {
        log::error("error_body for {} threw: {}", static_cast<int>(r.status()), e.what());
    } catch (...) {
    }
    if (r.body().empty() && r.content_type().empty()) {  // left as it was: the reason phrase
        r.set_body(std::string(reason_phrase(r.status())));
        r.set_content_type(mime::text);
    }
}

Server::Server(HttpHandler& handler, ServerOptions options)
    : handler_(handler), options_(std::move(options)) {}

Server::~Server() {
    if (started_) {
        stop();
        wait();
    }
}

Server& Server::listen(net::Endpoint ep) { return listen(std::move(ep), nullptr); }

Server& Server::listen(net::Endpoint ep, std::shared_ptr<tls::Context> tls) {
    if (started_) throw std::logic_error("Server::listen after start");
    endpoints_.push_back(std::move(ep));
    tls_.push_back(std::move(tls));
    h2c_only_.push_back(false);
    return *this;
}

Server& Server::listen_h2c(net::Endpoint ep) {
    listen(std::move(ep), nullptr);
    h2c_only_.back() = true;
    return *this;
}

void Server::reload_tls() {
    std::vector<tls::Context*> done;
    for (const auto& t : tls_) {
        if (!t || std::find(done.begin(), done.end(), t.get()) != done.end()) continue;
        t->reload();
        done.push_back(t.get());
    }
}

std::size_t Server::workers() const noexcept { return workers_.size(); }

// Creates the workers and gives each one listener per endpoint (net::open_listeners: a
// SO_REUSEPORT group per TCP endpoint, one shared socket per Unix path), or the sockets this
// process was handed for it (socket activation, a hot restart): k of them for n workers go
// round-robin when k >= n, else each worker gets a copy of one. If an endpoint fails, the
// workers made so far are destroyed with every listener they hold, and the passed sockets
// not yet given are closed, so a failed start leaves no fds behind and the server can be
// destroyed (or started again) as usual.
void Server::open_listeners(unsigned threads) {
    std::vector<detail::PassedSocket> passed;
    if (options_.socket_activation) passed = detail::take_passed_sockets();
    std::vector<bool> taken(passed.size(), false);
    if (endpoints_.empty() && passed.empty()) listen(net::Endpoint::any(8080));
    if (endpoints_.empty()) {  // serve what we were given, as it is
        for (auto& p : passed) {
            p.name.clear();
            const bool seen = std::any_of(
                endpoints_.begin(), endpoints_.end(),
                [&](const net::Endpoint& e) { return detail::passed_socket_matches(p, e, 0); });
            if (!seen) listen(p.where);
        }
    }
    std::vector<net::Endpoint> resolved = endpoints_;  // port 0 becomes the real port
    std::vector<std::pair<int, std::size_t>> given_fds;
    std::uint16_t first_port = 0;
    try {
        for (unsigned i = 0; i < threads; ++i)
            workers_.push_back(std::make_unique<detail::ServerWorker>(handler_, options_, i));
        for (std::size_t e = 0; e < resolved.size(); ++e) {
            net::Endpoint& ep = resolved[e];
            std::vector<int> mine;
            for (std::size_t j = 0; j < passed.size(); ++j) {
                if (taken[j] || !detail::passed_socket_matches(passed[j], endpoints_[e], e))
                    continue;
                taken[j] = true;
                mine.push_back(passed[j].fd);
                passed[j].fd = -1;
            }
            std::vector<std::pair<std::size_t, int>> plan;  // (worker, fd)
            if (mine.empty()) {
                std::vector<int> fds = net::open_listeners(ep, threads, options_.listen);
                for (std::size_t w = 0; w < fds.size(); ++w) plan.emplace_back(w, fds[w]);
            } else {
                for (std::size_t j = 0; j < mine.size(); ++j)
                    plan.emplace_back(j % threads, mine[j]);
                for (std::size_t w = mine.size(); w < threads; ++w) {
                    const int d = ::fcntl(mine[w % mine.size()], F_DUPFD_CLOEXEC, 0);
                    if (d < 0) {
                        for (auto& [wk, fd] : plan) ::close(fd);
                        throw net::ListenError(std::error_code(errno, std::generic_category()),
                                               "cannot share a passed socket among the loops: " +
                                                   std::string(std::strerror(errno)));
                    }
                    plan.emplace_back(w, d);
                }
                log::info("{}: serving the listening socket{} passed at start", ep.to_string(),
                          mine.size() > 1 ? "s" : "");
            }
            std::size_t given = 0;
            try {
                if (ep.kind != net::Endpoint::Kind::unix_path)
                    ep.port = net::local_port(plan[0].second);
                for (; given < plan.size(); ++given) {
                    workers_[plan[given].first]->add_listener(plan[given].second, tls_[e],
                                                              h2c_only_[e]);
                    given_fds.emplace_back(plan[given].second, e);
                }
            } catch (...) {
                for (; given < plan.size(); ++given) ::close(plan[given].second);
                throw;
            }
            if (first_port == 0) first_port = ep.port;
        }
    } catch (...) {
        workers_.clear();
        std::vector<detail::PassedSocket> unused;
        for (auto& p : passed)
            if (p.fd >= 0) unused.push_back(std::move(p));
        detail::return_passed_sockets(std::move(unused));
        throw;
    }
    std::vector<detail::PassedSocket> unused;
    for (auto& p : passed) {
        if (p.fd < 0) continue;
        log::info(
            "{}: a socket passed at start (fd {}) matches no endpoint of this server; "
            "kept for another",
            p.where.to_string(), p.fd);
        unused.push_back(std::move(p));
    }
    if (!unused.empty()) detail::return_passed_sockets(std::move(unused));
    endpoints_ = std::move(resolved);
    listen_fds_ = std::move(given_fds);
    port_ = first_port;
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
    if (!stop_requested_.load()) detail::announce_ready();
}

int Server::run(unsigned threads) {
    if (started_) throw std::logic_error("Server already started");
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    open_listeners(threads);  // first: a failure must not leave SIGINT blocked for the caller
    block_signals();          // inherited by the worker threads: only worker 0's signalfd sees them
    started_ = true;
    workers_ready_.store(true);
    if (stop_requested_.load()) stop_workers();
    workers_[0]->loop().on_signals({SIGINT, SIGTERM, SIGHUP, SIGUSR2}, [this](int signo) {
        if (signo == SIGUSR2) {  // as nginx's binary upgrade: a successor takes the sockets
            log::info("SIGUSR2: hot restart");
            hot_restart();
            return;
        }
        if (signo == SIGHUP) {  // as nginx: reload certificates, keep serving
            try {
                reload_tls();
                log::info("SIGHUP: TLS certificates reloaded");
            } catch (const std::exception& e) {
                log::error("SIGHUP: {} (the previous certificates stay in use)", e.what());
            }
            return;
        }
        log::info("signal {}: shutting down gracefully", signo);
        stop();
    });
    for (std::size_t i = 1; i < workers_.size(); ++i)
        threads_.emplace_back([w = workers_[i].get()] { w->run(); });
    for (const auto& ep : endpoints_)
        log::info("vela listening on {} ({} loops)", ep.to_string(), threads);
    workers_[0]->loop().post([this] {
        if (!stop_requested_.load()) detail::announce_ready();
    });
    workers_[0]->run();
    return wait();
}

void Server::stop() {
    bool first;
    {
        std::lock_guard lock(restart_mu_);  // not while a hot restart forks with our sockets
        first = !stop_requested_.exchange(true);
    }
    if (!workers_ready_.load()) return;  // start()/run() will see stop_requested_
    if (first) detail::notify_service_manager("STOPPING=1");
    if (options_.drain_delay.count() > 0) {
        // stopping() is true from here (readiness probes say 503); the drain begins once the
        // load balancers had drain_delay to notice. A second stop() changes nothing.
        if (first) {
            Loop& loop = workers_[0]->loop();
            loop.post([this, &loop] {
                loop.call_after(options_.drain_delay, [this] { stop_workers(); });
            });
        }
        return;
    }
    stop_workers();
}

// Posts a drain to every loop (it runs when the loop does; twice is harmless).
void Server::stop_workers() {
    for (auto& w : workers_) w->request_stop();
}

int Server::wait() {
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
    std::thread watch;
    {
        std::lock_guard lock(restart_mu_);
        watch = std::move(restart_watch_);
    }
    if (watch.joinable()) watch.join();
    return 0;
}

bool Server::hot_restart(std::chrono::milliseconds ready_timeout) {
    if (!options_.socket_activation) {
        log::warn(
            "hot restart refused: ServerOptions::socket_activation is off (the successor "
            "would not take the sockets)");
        return false;
    }
    std::lock_guard lock(restart_mu_);  // against stop() closing the listeners, and wait()
    if (!workers_ready_.load() || stop_requested_.load()) {
        log::warn("hot restart refused: the server is not running (or already stopping)");
        return false;
    }
    if (restarting_.exchange(true)) {
        log::warn("hot restart refused: one is already under way");
        return false;
    }
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) {
        log::error("hot restart failed: pipe: {}", std::strerror(errno));
        restarting_.store(false);
        return false;
    }
    std::vector<int> fds;
    std::vector<std::string> names;
    for (const auto& [fd, e] : listen_fds_) {
        fds.push_back(fd);
        names.push_back("vela." + std::to_string(e));
    }
    pid_t pid = -1;
    try {
        pid = detail::spawn_successor(fds, names, ready[1]);
    } catch (const std::exception& e) {
        log::error("hot restart failed: {}; still serving", e.what());
    }
    ::close(ready[1]);
    if (pid < 0) {
        ::close(ready[0]);
        restarting_.store(false);
        return false;
    }
    log::info("hot restart: successor started (pid {}), waiting until it accepts", pid);
    if (restart_watch_.joinable()) restart_watch_.join();  // an earlier, failed one
    restart_watch_ = std::thread(
        [this, pid, fd = ready[0], ready_timeout] { watch_successor(pid, fd, ready_timeout); });
    return true;
}

// On its own thread: the successor writes one byte once it accepts, or closes the pipe by
// exiting. Either way the answer comes quickly; the timeout covers a successor that hangs.
void Server::watch_successor(int pid, int ready_fd, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char byte = 0;
    ssize_t got = -1;
    while (!stop_requested_.load()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{ready_fd, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 100)));
        if (n < 0 && errno == EINTR) continue;
        if (n != 0) {
            got = ::read(ready_fd, &byte, 1);
            break;
        }
    }
    ::close(ready_fd);
    if (got == 1) {
        log::info("hot restart: successor {} accepts; draining this process", pid);
        // The service manager follows the successor (no STOPPING=1: that would stop the unit).
        detail::notify_service_manager("MAINPID=" + std::to_string(pid));
        {
            std::lock_guard lock(restart_mu_);
            stop_requested_.store(true);
        }
        stop_workers();  // no drain_delay: the successor serves the same sockets already
        return;
    }
    if (got == 0)
        log::error(
            "hot restart failed: the successor (pid {}) exited before accepting; still "
            "serving",
            pid);
    else if (!stop_requested_.load())
        log::error(
            "hot restart failed: the successor (pid {}) was not ready in time; stopped "
            "it, still serving",
            pid);
    else
        log::info("hot restart abandoned: this server is stopping; successor {} stopped", pid);
    // Stopped and reaped: SIGTERM, then SIGKILL if it does not go within 5 s.
    ::kill(pid, SIGTERM);
    for (int i = 0; i < 500 && ::waitpid(pid, nullptr, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::waitpid(pid, nullptr, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    restarting_.store(false);
}

}  // namespace vela
