#include "vela/server/server.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

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
// SO_REUSEPORT group per TCP endpoint, one shared socket per Unix path). If an endpoint
// fails, the workers made so far are destroyed with every listener they hold, so a failed
// start leaves no fds behind and the server can be destroyed (or started again) as usual.
void Server::open_listeners(unsigned threads) {
    if (endpoints_.empty()) listen(net::Endpoint::any(8080));
    std::vector<net::Endpoint> resolved = endpoints_;  // port 0 becomes the real port
    std::uint16_t first_port = 0;
    try {
        for (unsigned i = 0; i < threads; ++i)
            workers_.push_back(std::make_unique<detail::ServerWorker>(handler_, options_, i));
        for (std::size_t e = 0; e < resolved.size(); ++e) {
            net::Endpoint& ep = resolved[e];
            std::vector<int> fds = net::open_listeners(ep, threads, options_.listen);
            std::size_t given = 0;
            try {
                if (ep.kind != net::Endpoint::Kind::unix_path) ep.port = net::local_port(fds[0]);
                for (; given < fds.size(); ++given)
                    workers_[given]->add_listener(fds[given], tls_[e]);
            } catch (...) {
                for (; given < fds.size(); ++given) ::close(fds[given]);
                throw;
            }
            if (first_port == 0) first_port = ep.port;
        }
    } catch (...) {
        workers_.clear();
        throw;
    }
    endpoints_ = std::move(resolved);
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
}

int Server::run(unsigned threads) {
    if (started_) throw std::logic_error("Server already started");
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    open_listeners(threads);  // first: a failure must not leave SIGINT blocked for the caller
    block_signals();          // inherited by the worker threads: only worker 0's signalfd sees them
    started_ = true;
    workers_ready_.store(true);
    if (stop_requested_.load()) stop_workers();
    workers_[0]->loop().on_signals({SIGINT, SIGTERM, SIGHUP}, [this](int signo) {
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
    workers_[0]->run();
    return wait();
}

void Server::stop() {
    const bool first = !stop_requested_.exchange(true);
    if (!workers_ready_.load()) return;  // start()/run() will see stop_requested_
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
    return 0;
}

}  // namespace vela
