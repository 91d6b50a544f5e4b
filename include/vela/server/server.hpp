#pragma once
// Server: HTTP/1.1 over one Loop per thread.
//
// Threading model. run(n) / start(n) create n workers, each a thread with its own Loop, its
// own SO_REUSEPORT listener per endpoint (the kernel spreads connections over them), and
// the connections it accepted. A connection never moves between threads and nothing
// mutable is shared between workers: the handler is called on the worker's thread and
// must itself be safe to call from several threads at once (App's router is read-only
// once running). stop() is the only cross-thread call; it posts a drain to every loop.
//
// Shutdown. On SIGINT/SIGTERM (run) or stop(): listeners close, requests in flight finish
// and their connections close after the response (an idle keep-alive connection answers one
// more request, with Connection: close, if it comes within linger_timeout); when every
// connection is gone, or shutdown_timeout passes, the loops exit and run()/wait() return 0.
//
// Restarts without dropping a connection. The server takes the listening sockets systemd
// passes (socket activation, see ServerOptions::socket_activation) and tells systemd when it
// is ready (READY=1 to NOTIFY_SOCKET). On SIGUSR2 (run) or hot_restart(), it starts its own
// binary again (the file now at its path) with the same arguments and environment and every
// listening socket; once the successor accepts, this server stops accepting and drains as on
// SIGTERM. Connections waiting in the sockets' queues are the successor's: none is refused.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "vela/http/limits.hpp"
#include "vela/net/socket.hpp"
#include "vela/server/handler.hpp"
#include "vela/server/stats.hpp"

namespace vela {

class Loop;

namespace detail {
class ServerWorker;
}
namespace tls {
class Context;
}

/// HTTP/2 settings (RFC 9113). h2 over TLS is offered through ALPN (TlsOptions::http2).
struct Http2Options {
    /// Accept h2c with prior knowledge: the connection preface on a plain port.
    bool h2c_prior_knowledge = true;
    /// Accept h2c through "Upgrade: h2c" from HTTP/1.1 on a plain port.
    bool h2c_upgrade = true;
    /// Announce SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441): WebSocket routes (App::ws) also
    /// accept an extended CONNECT with :protocol websocket, a session on one HTTP/2 stream.
    bool websocket = true;
    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams a client may have open. Streams over it sent
    /// before the client acknowledged our SETTINGS are refused (RST_STREAM REFUSED_STREAM);
    /// exceeding it afterwards ends the connection (GOAWAY PROTOCOL_ERROR, RFC 9113 5.4.1).
    std::uint32_t max_concurrent_streams = 128;
    /// SETTINGS_INITIAL_WINDOW_SIZE: how much of each request body the client may send ahead.
    std::uint32_t stream_window = 1 << 20;
    /// The connection's receive window (all streams together).
    std::uint32_t connection_window = 16 << 20;
    /// SETTINGS_MAX_FRAME_SIZE: the largest frame payload accepted.
    std::uint32_t max_frame_size = 16 * 1024;
    /// SETTINGS_MAX_HEADER_LIST_SIZE, and the limit applied (decoded names + values + 32 per
    /// field, as RFC 9113 counts them); a larger header list gets 431.
    std::uint32_t max_header_list_size = 32 * 1024;
    /// A stream whose response cannot move this long (the client keeps its window shut) is
    /// reset, so a stalled client holds no memory for ever.
    std::chrono::milliseconds send_timeout{30'000};
    /// Control frames (PING, SETTINGS, PRIORITY, RST_STREAM, WINDOW_UPDATE, empty DATA) a
    /// client may send between two requests before the connection ends with GOAWAY
    /// ENHANCE_YOUR_CALM (floods that cost the server work and the client nothing).
    std::size_t max_control_frames = 10'000;
};

struct ServerOptions {
    /// Request size limits (414, 431, 413, ...).
    ParserLimits limits;
    /// Time allowed from a request's first byte to the end of its head (then 408, close).
    std::chrono::milliseconds header_timeout{10'000};
    /// Time allowed from the end of the head to the end of the body (then 408, close).
    std::chrono::milliseconds body_timeout{30'000};
    /// Time a keep-alive connection may sit between requests (then closed silently).
    std::chrono::milliseconds idle_timeout{60'000};
    /// After a response with Connection: close, how long unread input is drained before
    /// the socket is closed (so the client sees the response rather than a reset).
    std::chrono::milliseconds linger_timeout{1'000};
    /// How long a graceful shutdown waits for requests in flight.
    std::chrono::milliseconds shutdown_timeout{10'000};
    /// After stop() (SIGINT/SIGTERM), keep accepting and serving this long before the drain
    /// begins, while stopping() is true, so load balancers polling /ready see 503 and stop
    /// sending first (0: the drain begins at once).
    std::chrono::milliseconds drain_delay{0};
    /// HTTP/1.1: when the client closes its connection while an asynchronous handler runs,
    /// abandon the handler (its coroutine is destroyed where it waits: database statements
    /// it awaits are cancelled, open transactions roll back, nothing is answered or logged)
    /// instead of letting it run to its end. A client that half-closes after its request
    /// counts as gone.
    bool cancel_on_disconnect = false;
    /// Connections one loop holds at most; at the cap it stops accepting until one closes.
    std::size_t max_connections_per_loop = 100'000;
    /// Output bytes queued for a client above which its connection stops reading (a client
    /// that pipelines without reading is paused, not buffered without bound).
    std::size_t output_high_water = 1 << 20;
    /// Response bodies at least this large are sent straight from the Response's string
    /// (one writev with the head) instead of being copied into the output buffer.
    std::size_t direct_body_min = 64 * 1024;
    /// listen(2) backlog, and whether other processes may share the port (off by default).
    net::ListenOptions listen;
    /// HTTP/2 settings.
    Http2Options http2;
    /// Time allowed for a TLS handshake (then the connection closes).
    std::chrono::milliseconds handshake_timeout{10'000};
    /// TLS handshakes one loop runs at once; at the cap its TLS listeners stop accepting until
    /// one finishes (handshakes cost CPU and are a DoS target).
    std::size_t max_handshakes_per_loop = 512;
    /// Resolution of the timeout wheel.
    std::uint64_t timer_tick_ms = 100;
    /// Put exception messages in 500 bodies (off in production).
    bool debug_errors = false;
    /// Writes the body of the error answers the server itself generates (400, 408, 413, 414,
    /// 431, 500, 501, 505...): called with a Response holding the status (and any headers) and
    /// the request when one was read (nullptr when it could not be). Empty, or leaving the
    /// response bare: the reason phrase as text/plain. App::error_pages sets it.
    std::function<void(const Request*, Response&)> error_body;
    /// Serve the listening sockets this process was handed at start (systemd's socket
    /// activation, LISTEN_FDS and LISTEN_PID; or a predecessor's hot_restart()) instead of
    /// opening new ones: each endpoint takes the sockets listening where it would (its address
    /// and port, or its Unix path); with no endpoint given, every passed socket is served.
    /// Endpoints left without one open their own; passed sockets no endpoint wants are closed.
    bool socket_activation = true;
    /// Called on each loop's thread as the loop starts serving (before its first event), with
    /// the loop's index (0..threads-1) and the loop. A non-null result turns on that loop's
    /// statistics (connections, SSE streams, bytes), which the server then writes there; it
    /// must outlive the server's run. vela::metrics and vela::stall_watchdog set it.
    std::function<LoopStats*(std::size_t index, Loop& loop)> on_loop_start;
};

/// The error answer with status `s` the server sends for `req` (nullptr: none was read), its
/// body written by options.error_body or the reason phrase.
Response server_error_response(const ServerOptions& options, Status s, const Request* req);
/// Rewrites the body of `r`, an error the server decided for a file body after the handler
/// (412, 416: see apply_file_semantics), with options.error_body (the App's error format); its
/// headers (Content-Range...) stay. Nothing without an error_body.
void rewrite_file_error(const ServerOptions& options, const Request& req, Response& r);

class Server {
  public:
    /// `handler` must outlive the server.
    explicit Server(HttpHandler& handler, ServerOptions options = {});
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    /// Adds an endpoint to listen on (call before start/run).
    Server& listen(net::Endpoint ep);
    /// Adds a TLS endpoint: its connections start with a handshake using `tls`.
    Server& listen(net::Endpoint ep, std::shared_ptr<tls::Context> tls);
    /// Adds a plain endpoint that speaks HTTP/2 only, with prior knowledge (RFC 9113 3.3): a
    /// connection that does not open with the connection preface (an HTTP/1.1 request) gets
    /// GOAWAY PROTOCOL_ERROR and is closed.
    Server& listen_h2c(net::Endpoint ep);
    /// Re-reads every TLS certificate and key: new handshakes use them, open connections go
    /// on. Thread-safe. Throws TlsError (and keeps the old ones) when a file is bad.
    void reload_tls();
    /// Opens the listeners and starts `threads` workers (0: one per core) in background
    /// threads; returns once they accept connections. Throws net::ListenError (one line in
    /// what()) when an endpoint cannot be opened; nothing is left open or running then.
    void start(unsigned threads = 0);
    /// Starts like start() but runs worker 0 on the calling thread and handles SIGINT and
    /// SIGTERM as a graceful stop; returns 0 after shutdown. Throws like start().
    int run(unsigned threads = 0);
    /// Starts a successor (this binary, same arguments) on the same listening sockets and,
    /// once it accepts, drains this server (see the top of this file). Returns at once; false
    /// (and one logged line) when it cannot begin: not running, stopping, or a restart is
    /// already under way. A successor that exits or is not ready within `ready_timeout` is
    /// stopped and this server keeps serving. Thread-safe.
    bool hot_restart(std::chrono::milliseconds ready_timeout = std::chrono::seconds(30));
    /// Begins a graceful shutdown. Thread-safe, idempotent; called before run()/start(), the
    /// server shuts down as soon as it has started.
    void stop();
    /// Waits for all workers started by start() to finish; returns 0.
    int wait();
    /// The TCP port of the first TCP endpoint (the real one when it was 0).
    std::uint16_t port() const noexcept { return port_; }
    /// The TCP port of the `index`-th endpoint, in listen() order (0: a Unix socket or out of
    /// range).
    std::uint16_t port(std::size_t index) const noexcept {
        return index < endpoints_.size() && endpoints_[index].kind != net::Endpoint::Kind::unix_path
                   ? endpoints_[index].port
                   : 0;
    }
    /// True from the moment stop() is called (SIGINT/SIGTERM included), for readiness probes.
    bool stopping() const noexcept { return stop_requested_.load(std::memory_order_relaxed); }
    /// Number of workers running.
    std::size_t workers() const noexcept;
    /// The options in use.
    const ServerOptions& options() const noexcept { return options_; }

  private:
    void open_listeners(unsigned threads);
    void watch_successor(int pid, int ready_fd, std::chrono::milliseconds timeout);

    HttpHandler& handler_;
    ServerOptions options_;
    std::vector<net::Endpoint> endpoints_;
    std::vector<std::shared_ptr<tls::Context>> tls_;  // per endpoint; null for plain ones
    std::vector<bool> h2c_only_;                      // per endpoint: listen_h2c()
    std::vector<std::unique_ptr<detail::ServerWorker>> workers_;
    std::vector<std::thread> threads_;
    void stop_workers();
    // Every listening fd with the index of its endpoint (for hot_restart()).
    std::vector<std::pair<int, std::size_t>> listen_fds_;
    std::mutex restart_mu_;                // restart_watch_; stop() against a fork
    std::thread restart_watch_;            // waits for a successor's word
    std::atomic<bool> restarting_{false};  // a successor is starting

    std::uint16_t port_ = 0;
    bool started_ = false;
    // stop() may race with run()/start() building the workers: each side sets its flag, then
    // reads the other's (sequentially consistent), so at least one of them stops the workers.
    std::atomic<bool> stop_requested_{false};
    std::atomic<bool> workers_ready_{false};
};

}  // namespace vela
