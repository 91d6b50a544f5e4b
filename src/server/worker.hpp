#pragma once
// One server worker: a Loop, its listeners and its connections, all on one thread.

#include <atomic>
#include <memory>
#include <vector>

#include "vela/http/request.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/server/server.hpp"

namespace vela::detail {

class Http1Connection;

class ServerWorker final : public IoSink {
  public:
    ServerWorker(HttpHandler& handler, const ServerOptions& options);
    ~ServerWorker() override;

    /// Takes ownership of a listening fd (registered when run() starts).
    void add_listener(int fd);
    /// Runs the loop until the worker has drained (thread entry point).
    void run();
    /// Starts a graceful drain. Thread-safe.
    void request_stop();
    /// True once run() has been entered (and stays true after it returns).
    bool started() const noexcept { return started_.load(std::memory_order_acquire); }

    Loop& loop() noexcept { return loop_; }
    HttpHandler& handler() noexcept { return handler_; }
    const ServerOptions& options() const noexcept { return options_; }
    bool draining() const noexcept { return draining_; }

    /// A Request object for a connection to fill (kept in a pool: idle connections hold none).
    std::unique_ptr<Request> acquire_request();
    void release_request(std::unique_ptr<Request> r) noexcept;

    /// Called by a connection once it has closed its socket; frees it after this batch.
    void connection_closed(Http1Connection* c) noexcept;

  private:
    void on_accept(int fd) override;
    void begin_drain();
    void maybe_finish_drain();
    void close_all();

    HttpHandler& handler_;
    const ServerOptions& options_;
    Loop loop_;
    std::atomic<bool> started_{false};
    std::vector<std::unique_ptr<IoHandle>> listeners_;
    Http1Connection* conns_ = nullptr;  // intrusive list of live connections
    std::size_t count_ = 0;
    bool accept_paused_ = false;
    bool draining_ = false;
    int reserve_fd_ = -1;  // spare fd given up to shed a connection on EMFILE
    std::uint64_t next_emfile_log_ms_ = 0;
    std::vector<std::unique_ptr<Request>> request_pool_;
};

}  // namespace vela::detail
