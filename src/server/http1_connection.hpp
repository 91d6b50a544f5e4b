#pragma once
// The HTTP/1.1 connection driver. It reads like the protocol:
//
//   on_read      -> process(): parse every complete request in the buffer, in order
//   process      -> dispatch(): hand each request to the handler
//   dispatch     -> finish(): serialize the response into the output buffer
//   process end  -> flush(): one write for every response of this read
//
// Bad input is answered by reject() with the parser's status, then the connection closes
// (lingering: output is shut down and remaining input drained for a moment so the
// client reads the error instead of a reset). Timeouts (idle, header, body, linger)
// share one wheel entry; per request only a deadline integer changes.
//
// Buffers: the read buffer is borrowed from the loop's pool when bytes arrive and given
// back when every byte was consumed; the write buffer likewise. The Request object is
// borrowed from the worker for the duration of a request. An idle keep-alive connection
// therefore holds only this object.

#include <cstdint>
#include <memory>
#include <string>

#include "http1_request_body.hpp"
#include "vela/base/buffer.hpp"
#include "vela/http/file_cursor.hpp"
#include "vela/http/request_parser.hpp"
#include "vela/net/transport.hpp"
#include "vela/reactor/timer_wheel.hpp"
#include "vela/server/handler.hpp"
#include "vela/server/tunnel.hpp"
#include "vela/tls/stream.hpp"
#include "worker.hpp"

namespace vela::detail {

class Http1Connection final : public Connection, public ResponseSink {
  public:
    /// With `tls`, the connection starts with a TLS handshake (handshake_timeout applies).
    Http1Connection(ServerWorker& worker, int fd, std::unique_ptr<tls::Stream> tls = nullptr);
    ~Http1Connection() override;

    /// Registers the socket and starts reading.
    void start();
    /// Graceful shutdown: close now if idle, else after the current response.
    void drain() override;
    /// Closes the socket at once (shutdown deadline).
    void force_close() override;
    /// True when no request is in progress and no output is queued.
    bool idle() const noexcept;

  private:
    enum class Phase : std::uint8_t { idle, header, body, linger };

    // IoSink
    Buffer& read_buffer() override;
    bool on_read(ssize_t n) override;
    void on_read_none() override;
    void on_write_ready() override;
    // tls::StreamOwner
    bool on_handshake(std::string_view alpn) override;
    // ResponseSink
    void complete(Response&& r) override;
    void pending(std::coroutine_handle<> work) override;

    // A streamed or direct body is still being sent: reading waits, and so do the requests
    // behind it.
    bool body_in_flight() const noexcept { return stream_ || direct_ || file_; }
    void process();
    bool dispatch();
    void finish(Response& r);
    void pump_stream();
    void resume();
    void reject(Status s);
    bool flush();
    void keep_partial();
    // Part of a request has arrived (its Request may have gone back with keep_partial()).
    bool request_started() const noexcept {
        return req_ ? req_->parser_.started() : !t_.in.empty();
    }
    // A streaming route's request body (App::streaming): http1_request_body.cpp.
    friend class Http1RequestBody;
    void start_body_stream();
    bool h2c_preface() const noexcept;
    bool try_h2c_upgrade();
    void hand_over_to_http2(std::unique_ptr<Request> upgraded, std::string settings);
    void hand_over_to_websocket(std::shared_ptr<Upgrade> u, const Response& r);
    void hand_over_to_tunnel(TunnelUpgrade& up, const Response& r);
    int write_direct();
    int write_file();
    int write_out(bool more = false);
    void start_file(Response& r);
    void note_progress();
    void close();
    void begin_linger();
    void release_buffers() noexcept;
    void set_phase(Phase p, std::chrono::milliseconds timeout);
    void on_timeout();
    static void timer_fired(TimerWheel::Entry* e);

    ServerWorker& worker_;
    net::Transport t_;  // socket, TLS transform, timer entry, buffers
    std::unique_ptr<Request> req_;
    std::uint64_t deadline_ms_ = 0;
    Response::BodySource stream_;  // a streamed body still being produced
    std::shared_ptr<Response::TrailerFields> stream_trailers_;  // sent after stream_'s end
    std::unique_ptr<std::string> direct_;  // a large body sent from its own storage
    std::size_t direct_sent_ = 0;          // bytes of *direct_ already written
    std::unique_ptr<FileCursor> file_;     // a file body being sent
    std::coroutine_handle<> pending_;      // the asynchronous handler's driving coroutine
    Response* inline_result_ = nullptr;    // where complete() stores a response delivered inline
    Phase phase_ = Phase::header;
    bool busy_ = false;         // an asynchronous handler owns the request
    bool dispatching_ = false;  // inside handler.handle()
    bool completed_inline_ = false;
    bool close_after_ = false;  // close once output is flushed
    bool paused_ = false;       // reading stopped for back-pressure
    bool peer_gone_ = false;    // the peer closed while a handler was running
    bool continue_sent_ = false;
    bool stream_chunked_ = false;    // stream_ is framed as chunks (else raw until close)
    std::int64_t stream_left_ = -1;  // bytes stream_ still owes its Content-Length (-1: none)
    bool resume_queued_ = false;     // a deferred resume() is pending
    bool stream_ended_ = false;      // a stream (or direct body) finished: what follows may proceed
    bool handshaking_ = false;       // counted in the worker's handshakes in progress
    bool first_request_ = true;      // only the first request may be an h2c preface or upgrade
    bool body_checked_ = false;      // the handler was asked whether this request streams
    bool body_streaming_ = false;    // the handler reads this request's body as it arrives
    std::unique_ptr<Http1RequestBody> body_;  // made by the first streaming request
};

}  // namespace vela::detail
