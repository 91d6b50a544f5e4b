#pragma once
// The WebSocket connection driver: what an HTTP/1.1 connection becomes after a 101 from
// ws_accept(), and what an HTTP/2 stream becomes after a 200 to an extended CONNECT (RFC
// 8441). It reads like the protocol:
//
//   on_read      -> parse(): frames to events (FrameReader); pings answered, a message held
//                   for receive() (parsing pauses while one is held: back-pressure reaches
//                   the client through TCP, or through the stream's flow-control window)
//   send()       -> encode (and compress) into the output buffer at once; one write per loop
//                   iteration (flush deferred) carries every frame queued meanwhile
//   timer        -> ping after ping_interval of silence, drop after pong_timeout, close after
//                   close_timeout
//
// The bytes move through a WsLink: the socket (SocketLink, below in the .cpp) or an HTTP/2
// stream (Http2Connection's). The session does not know which.
//
// The route's coroutine runs detached; the object lives until both the link is closed and
// the coroutine has returned (a shutdown past its deadline destroys the coroutine).
//
// The same session is the client side of ws::connect (client mode, no worker): its frames
// are masked (RFC 6455 5.3, keys from getrandom in batches), masked frames from the server
// fail it (1002), permessage-deflate runs with the roles swapped, the closing handshake
// waits for the server's TCP close (RFC 6455 7.1.1), and its owner is a ws::Session handle
// instead of a route coroutine.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "vela/base/buffer.hpp"
#include "vela/net/transport.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/reactor/timer_wheel.hpp"
#include "vela/server/websocket.hpp"
#include "vela/tls/stream.hpp"
#include "worker.hpp"

namespace vela::detail {

/// What a 101 from ws_accept() carries to the connection.
struct WsUpgrade final : Upgrade {
    std::shared_ptr<const WsEndpoint> endpoint;
    std::optional<ws::DeflateParams> deflate;
    std::string subprotocol;
};

/// The part of a session other threads reach (WsSender): a bounded queue the loop drains.
struct WsShared {
    LoopRef loop;
    std::mutex mu;
    std::vector<std::pair<std::string, WsType>> queue;  // under mu
    std::size_t queued_bytes = 0;                       // under mu
    bool drain_posted = false;                          // under mu
    std::atomic<bool> open{true};
    std::atomic<std::size_t> out_bytes{0};  // the connection's output backlog (loop writes)
    std::size_t max = 0;
    SlowClient policy = SlowClient::wait;
    WsConnection* conn = nullptr;  // loop thread only; null once the session ended
};

class WsConnection;

/// The bytes under a WebSocket session: the socket of an upgraded HTTP/1.1 connection, or a
/// stream of an HTTP/2 connection (RFC 8441). The session parses in() and appends frames to
/// out(); the link moves them, calls the session's on_read() when bytes came (n > 0) or the
/// peer ended (n <= 0), and on_write_ready() when out() can move again.
class WsLink {
  public:
    virtual ~WsLink() = default;
    /// The loop the session runs on.
    virtual Loop& loop() const noexcept = 0;
    /// True once no byte moves any more (the session was told, or closed the link itself).
    virtual bool closed() const noexcept = 0;
    /// Received bytes not parsed yet (kept while a view into them is held).
    virtual Buffer& in() noexcept = 0;
    /// in(), made able to take a read (a pooled buffer).
    virtual Buffer& input() = 0;
    /// Between messages: an empty input buffer goes back to the pool.
    virtual void keep_input() noexcept = 0;
    /// Bytes to send.
    virtual Buffer& out() noexcept = 0;
    /// out(), borrowed from the pool when none is held.
    virtual Buffer& output() = 0;
    /// Gives an empty output buffer back to the pool.
    virtual void release_output_if_empty() noexcept = 0;
    /// Moves out() toward the peer as far as it can now; false when the link failed.
    virtual bool write() = 0;
    /// Registers the link (before the session starts).
    virtual void start() = 0;
    /// Takes bytes in now (a read at once: the session's on_read may run inside).
    virtual void read() = 0;
    /// True while bytes are taken in (not paused by stop_reading()).
    virtual bool reading() const noexcept = 0;
    /// Takes no more bytes in (a message is held): the peer is held back.
    virtual void stop_reading() = 0;
    /// Takes bytes in again, from the loop (not from the caller's frame).
    virtual void read_later() = 0;
    /// Ends our direction once out() is empty: TLS close_notify and a TCP half-close, or
    /// END_STREAM. Reading goes on.
    virtual void shutdown_write() = 0;
    /// Ends the link: `clean` after a completed closing handshake (a TCP close, END_STREAM),
    /// else an abnormal closure (a TCP close, RST_STREAM CANCEL: RFC 8441 5).
    virtual void close(bool clean) noexcept = 0;
    /// The timer entry of the session's timeouts.
    virtual TimerWheel::Entry& timer() noexcept = 0;
    /// The session is over (link closed, coroutine returned): frees it, after the current
    /// I/O batch.
    virtual void done(WsConnection* ws) noexcept = 0;
};

/// A session and its link are one allocation: a derived class holds the link as its first
/// base (built before the session, destroyed after it): SocketWsConnection below, and
/// H2WsConnection (http2_websocket.cpp).
class WsConnection : public Connection, public WebSocket {
  public:
    /// Takes over an upgraded HTTP/1.1 connection: its socket and TLS transform (with the
    /// bytes read after the request and output not yet written), and the request, whose views
    /// are moved into a copy of `head` (the bytes they pointed into).
    static WsConnection* over_socket(ServerWorker& worker, net::Transport&& t,
                                     std::unique_ptr<Request> req, std::string_view head,
                                     std::shared_ptr<WsUpgrade> up);
    /// A client-side session over a connection a 101 switched (ws::connect): `up` carries the
    /// endpoint (options, the URL as its path), the agreed deflate parameters (as the server
    /// states them) and subprotocol. Started at once; its owner calls release_client().
    static WsConnection* client_over_socket(net::Transport&& t, std::shared_ptr<WsUpgrade> up);
    /// The owner (ws::Session) lets go: the closing handshake starts unless it ran, and the
    /// object is freed once the socket is closed.
    void release_client() { handler_done(nullptr); }
    /// Closes a client session's socket at once (its loop is being destroyed).
    void abandon_client() noexcept;
    ~WsConnection() override;
    /// Takes the HTTP/1.1 connection's peer information (the request points at it).
    void adopt_info(const ConnectionInfo& i) noexcept {
        info = i;
        if (req_) req_->set_connection(&info);
    }

    /// Registers the link, writes what is queued and starts the route's coroutine.
    void start();
    /// Graceful shutdown: close handshake with 1001.
    void drain() override;
    /// Closes at once, abandoning the route's coroutine if it still runs.
    void force_close() override;

    // WebSocket, through the public class.
    bool ready_message();
    void wait_message(std::coroutine_handle<> h) noexcept { reader_waiting_ = h; }
    WsMessage take_message() noexcept;
    int try_send(std::string_view data, WsType type);
    void wait_space(WebSocket::SendAwaiter* a) noexcept;
    void queue_ping(std::string_view payload);
    void start_close(std::uint16_t code, std::string_view reason);
    bool is_open() const noexcept { return !ended_ && !close_sent_; }
    std::string_view subprotocol() const noexcept {
        return up_ ? std::string_view(up_->subprotocol) : std::string_view{};
    }
    bool deflating() const noexcept { return inflater_ != nullptr; }
    std::size_t backlog() const noexcept { return out_->size(); }
    Loop& loop() const noexcept { return link_->loop(); }
    ServerWorker& worker() const noexcept { return *worker_; }
    /// True for the client side of ws::connect.
    bool client_mode() const noexcept { return client_; }
    const std::shared_ptr<WsShared>& shared() const;

    // Hub and WsSender, on this loop.
    void queue_frame(std::string_view frame, bool fits_policy_check);
    void queue_message(std::string_view data, WsType type);
    void schedule_flush() noexcept;
    void drain_shared();
    void joined(Hub::Room* r) { rooms_.push_back(r); }
    void left(Hub::Room* r) noexcept;
    bool takes_deflated_broadcast() const noexcept;

    // The link's calls (IoSink for the socket).
    Buffer& read_buffer() override;
    bool on_read(ssize_t n) override;
    void on_read_none() override {
        if (!held_) link_->keep_input();
    }
    void on_write_ready() override;
    /// True while the session takes more bytes (no message held).
    bool wants_input() const noexcept { return !held_; }

  private:
    // tls::StreamOwner (the handshake finished long before)
    bool on_handshake(std::string_view) override { return true; }

    void parse();
    void on_event(const ws::Event& e);
    void deliver_close(std::uint16_t code, std::string_view reason);
    void fail(std::uint16_t code, const char* what);
    void append_control(ws::Opcode op, std::string_view payload);
    void append_masked(ws::Opcode op, std::string_view payload, bool rsv1);
    void flush();
    void wake_senders();
    void handler_done(std::exception_ptr e);
    void close_socket();
    void release_if_done() noexcept;
    void arm_timer();
    void on_timer();

    void init(std::string_view head, std::shared_ptr<WsUpgrade>& up);

  protected:
    /// Runs over `link` (built already: the derived class's first base): an HTTP/2 stream
    /// (the request's views stay valid as long as the link does; `head` empty) or a socket
    /// (`head`: the request's bytes, copied).
    WsConnection(ServerWorker& worker, WsLink& link, std::unique_ptr<Request> req,
                 std::shared_ptr<WsUpgrade> up, std::string_view head = {});
    /// A client-side session over `link` (client mode).
    WsConnection(WsLink& link, std::shared_ptr<WsUpgrade> up);
    static void timer_fired(TimerWheel::Entry* e);

  private:
    ServerWorker* worker_;  // null in client mode
    WsLink* link_;          // the socket or the HTTP/2 stream (a base of the derived class)
    Buffer* in_;            // link_->in()
    Buffer* out_;           // link_->out()
    // The route (for log lines): the request's path while it is kept, else the endpoint's.
    std::string_view route() const noexcept {
        return req_ ? req_->path() : std::string_view(endpoint_->path);
    }

    std::unique_ptr<char[]> head_;  // the request's bytes; req_'s views point here
    std::unique_ptr<Request> req_;  // kept for a route coroutine that takes it
    std::shared_ptr<const WsEndpoint> endpoint_;
    std::shared_ptr<WsUpgrade> up_;  // kept only for a subprotocol
    const WsOptions& opt_;
    ws::ReaderOptions reader_opt_;
    ws::FrameReader reader_;
    std::unique_ptr<ws::Inflater> inflater_;
    std::unique_ptr<ws::Deflater> deflater_;  // only when the window is not the shared one's
    std::string_view held_view_;     // the held message (in the input or the reader's buffer)
    std::size_t held_consumed_ = 0;  // input bytes to drop when it is released
    std::unique_ptr<std::string> close_reason_;  // the client's, when it gave one
    mutable std::shared_ptr<WsShared> shared_;   // made by the first sender()
    std::vector<Hub::Room*> rooms_;
    WebSocket::SendAwaiter* waiters_ = nullptr;  // senders waiting for space, FIFO
    WebSocket::SendAwaiter* waiters_tail_ = nullptr;
    std::coroutine_handle<> reader_waiting_;
    std::coroutine_handle<> handler_;  // the detached driver of the route coroutine
    std::uint64_t last_rx_ms_ = 0;
    std::uint64_t ping_sent_ms_ = 0;
    std::uint64_t close_deadline_ms_ = 0;
    std::uint16_t close_code_ = ws::close_code::abnormal;
    WsType next_type_ = WsType::text;
    bool has_next_ = false;
    bool ended_ = false;       // the session is over for receive() (close seen or failed)
    bool close_sent_ = false;  // our close frame is queued
    bool close_received_ = false;
    bool released_ = false;
    bool handler_running_ = false;
    bool parsing_ = false;
    bool flush_queued_ = false;
    bool shut_after_flush_ = false;  // after our close frame: shut down writing once sent
    bool big_reads_ = false;         // the last read filled the buffer: read more next time
    bool held_ = false;              // a message's bytes are kept for receive() (see parse())
    bool read_stopped_ = false;      // reading stopped while a message is held
    bool discard_input_ = false;     // after the client's close or an error
    bool wake_queued_ = false;       // a deferred wake-up of waiting coroutines is pending
    bool default_window_ = false;    // deflating with the server's default window, no context
    bool client_ = false;            // the client side of ws::connect
};

}  // namespace vela::detail
