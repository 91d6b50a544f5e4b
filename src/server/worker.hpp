#pragma once
// One server worker: a Loop, its listeners and its connections, all on one thread.
//
// A connection runs one protocol driver at a time (Http1Connection, Http2Connection). A
// driver switch (ALPN "h2", the h2c preface, Upgrade: h2c) hands the socket, the TLS
// transform and the unread bytes to the new driver in place; the worker's list and counts
// see one connection throughout.

#include <atomic>
#include <memory>
#include <vector>

#include "vela/http/request.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/reactor/timer_wheel.hpp"
#include "vela/server/server.hpp"
#include "vela/tls/stream.hpp"

namespace vela::tls {
class Context;
}

namespace vela::detail {

/// What the worker needs of every protocol driver.
class Connection : public tls::StreamOwner {
  public:
    /// Graceful shutdown: close now if idle, else once the work in flight is done.
    virtual void drain() = 0;
    /// Closes at once (the shutdown deadline passed).
    virtual void force_close() = 0;

    /// The peer's address and whether the connection is TLS (requests point at it).
    ConnectionInfo info;
    /// The protocol this driver speaks (metrics).
    ConnectionProtocol protocol = ConnectionProtocol::http1;

    // Intrusive list of the worker's connections.
    Connection* prev = nullptr;
    Connection* next = nullptr;
};

/// True when this thread's server loop counts connection bytes (metrics on; the worker gave
/// the loop's backend its counters).
inline bool driver_counts_bytes() noexcept { return current_loop_stats() != nullptr; }

class ServerWorker final {
  public:
    /// `index`: the loop's number in its server (ServerOptions::on_loop_start).
    ServerWorker(HttpHandler& handler, const ServerOptions& options, std::size_t index = 0);
    ~ServerWorker();

    /// Takes ownership of a listening fd (registered when run() starts); with `tls`, its
    /// connections start with a TLS handshake.
    void add_listener(int fd, std::shared_ptr<tls::Context> tls = nullptr, bool h2c_only = false);
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
    std::unique_ptr<Request> acquire_request() {
        if (request_pool_.empty()) [[unlikely]]
            return new_request();
        std::unique_ptr<Request> r = std::move(request_pool_.back());
        request_pool_.pop_back();
        return r;
    }
    /// Takes `r` back into the pool (leaving it null).
    void release_request(std::unique_ptr<Request>&& r) noexcept {
        r->clear_locals();
        if (r->parser_.started()) [[unlikely]]
            r->parser_.reset();  // (one whose request was answered was reset then)
        if (request_pool_.size() < request_pool_.capacity()) [[likely]]
            request_pool_.push_back(std::move(r));
        else
            release_request_slow(std::move(r));
    }

    /// Puts a new connection in the list and counts it (accept; tests and fuzzers).
    void add_connection(Connection* c) noexcept;
    /// Puts a new driver in the list in place of `old` (a protocol switch).
    void replace_connection(Connection* old, Connection* fresh) noexcept;
    /// Called by a connection once it has closed its socket; frees it after this batch.
    void connection_closed(Connection* c) noexcept;
    /// A TLS handshake of this loop finished or was abandoned.
    void handshake_finished() noexcept;

  private:
    struct Listener final : IoSink {
        ServerWorker* worker = nullptr;
        IoHandle handle;
        std::shared_ptr<tls::Context> tls;
        bool h2c_only = false;  // plain, HTTP/2 with prior knowledge only
        void on_accept(int fd) override { worker->on_accept(fd, *this); }
    };

    void on_accept(int fd, Listener& from);
    void shed(int err);
    void update_accepting() noexcept;
    void begin_drain();
    void maybe_finish_drain();
    void close_all();
    void count_connection(const Connection* c, bool open) noexcept;

    HttpHandler& handler_;
    const ServerOptions& options_;
    Loop loop_;
    std::atomic<bool> started_{false};
    std::vector<std::unique_ptr<Listener>> listeners_;
    Connection* conns_ = nullptr;  // intrusive list of live connections
    std::size_t count_ = 0;
    std::size_t handshakes_ = 0;  // TLS handshakes in progress
    bool plain_paused_ = false;   // plain listeners not accepting (connection cap)
    bool tls_paused_ = false;     // TLS listeners not accepting (connection or handshake cap)
    bool draining_ = false;
    int reserve_fd_ = -1;  // spare fd given up to shed a connection on EMFILE
    std::uint64_t next_emfile_log_ms_ = 0;
    static constexpr std::size_t kKeptRequests = 4;  // kept past a burst (Loop::add_trim)
    std::vector<std::unique_ptr<Request>> request_pool_;
    std::unique_ptr<Request> new_request();
    void release_request_slow(std::unique_ptr<Request>&& r) noexcept;
    std::size_t index_ = 0;
    LoopStats* stats_ = nullptr;  // metrics on: this loop's statistics
};

}  // namespace vela::detail
