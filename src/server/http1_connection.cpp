#include "http1_connection.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>

#include "http2_connection.hpp"
#include "response_pipeline.hpp"
#include "tunnel_connection.hpp"
#include "vela/base/ascii.hpp"
#include "vela/base/base64.hpp"
#include "vela/base/log.hpp"
#include "vela/http/response_writer.hpp"
#include "vela/server/body_pipe.hpp"
#include "ws_connection.hpp"

namespace vela::detail {

using std::chrono::milliseconds;

Http1Connection::Http1Connection(ServerWorker& worker, int fd, std::unique_ptr<tls::Stream> tls)
    : worker_(worker), t_(worker.loop(), fd, std::move(tls), driver_counts_bytes()) {
    handshaking_ = t_.secure();
    t_.attach(*this, this, &Http1Connection::timer_fired);
}

Http1Connection::~Http1Connection() {
    if (!t_.closed() && handshaking_) worker_.handshake_finished();
    release_buffers();  // (the transport closes its socket, if still open)
}

void Http1Connection::start() {
    t_.add();
    set_phase(Phase::header, handshaking_ ? worker_.options().handshake_timeout
                                          : worker_.options().header_timeout);
    t_.read();  // the first request often arrives with the connection
}

bool Http1Connection::idle() const noexcept {
    return !busy_ && t_.in.empty() && t_.out.empty() && !body_in_flight() &&
           !(t_.tls && t_.tls->output_pending());  // a response's last records still leaving
}

// An idle keep-alive connection is not closed at once: its client may have sent a request
// already (closing then would reset it, a failed request). One that comes within
// linger_timeout is answered, with Connection: close; without one the connection closes then.
void Http1Connection::drain() {
    if (t_.closed()) return;
    if (phase_ == Phase::linger) {
        close();
    } else if (handshaking_) {
        // The handshake may finish within linger_timeout; the request that follows gets it too.
        const milliseconds grace = worker_.options().linger_timeout;
        if (t_.loop().now_ms() + static_cast<std::uint64_t>(grace.count()) < deadline_ms_)
            set_phase(phase_, grace);
    } else if (idle()) {
        const milliseconds grace = worker_.options().linger_timeout;
        if (t_.loop().now_ms() + static_cast<std::uint64_t>(grace.count()) < deadline_ms_ ||
            phase_ != Phase::idle)
            set_phase(Phase::idle, grace);
    } else {
        close_after_ = close_after_ || (!busy_ && !request_started());
    }
}

void Http1Connection::force_close() {
    if (t_.closed()) return;
    if (busy_ && pending_) {
        // The shutdown deadline passed with a handler suspended: abandon it. Destroying its
        // driving coroutine destroys every frame it awaits; complete() will not be called.
        std::coroutine_handle<> work = std::exchange(pending_, {});
        busy_ = false;
        work.destroy();
    } else if (busy_) {
        // A handler that gave no way to abandon it: close the socket and keep this object
        // for its complete(), which frees it.
        t_.close(false);
        return;
    }
    close();
}

bool Http1Connection::on_handshake(std::string_view alpn) {
    handshaking_ = false;
    worker_.handshake_finished();
    if (alpn == "h2") {
        hand_over_to_http2(nullptr, {});
        return false;
    }
    set_phase(Phase::header, worker_.draining() ? worker_.options().linger_timeout
                                                : worker_.options().header_timeout);
    return true;
}

Buffer& Http1Connection::read_buffer() { return t_.input(); }

void Http1Connection::on_read_none() {
    if (!busy_ && !body_streaming_) t_.keep_input();
}

bool Http1Connection::on_read(ssize_t n) {
    if (body_streaming_) [[unlikely]] {
        body_->on_read(n);
        if (n > 0) return !t_.closed() && t_.reading();
    }
    if (n <= 0) {
        // Peer closed or reset. Responses not yet written are of no use to anybody if it
        // reset; after a clean half-close they are still flushed.
        if (busy_) {
            peer_gone_ = true;
            t_.stop_reading();
            if (pending_ && worker_.options().cancel_on_disconnect) {
                // Nobody is left to answer: abandon the handler (see ServerOptions).
                std::coroutine_handle<> work = std::exchange(pending_, {});
                busy_ = false;
                t_.io.report_fin = false;
                work.destroy();
                close();
            }
        } else if (n == 0 && (!t_.out.empty() || body_in_flight()) && phase_ != Phase::linger) {
            close_after_ = true;
            t_.stop_reading();
        } else {
            close();
        }
        return false;
    }
    if (phase_ == Phase::linger) {
        t_.in.clear();  // draining after the last response: discard
        return true;
    }
    process();
    return !t_.closed() && t_.reading();
}

// Parses and answers every complete request in the buffer, in order, then writes all the
// responses at once.
void Http1Connection::process() {
    const ServerOptions& opt = worker_.options();
    while (!busy_ && !body_in_flight() && !close_after_ && !t_.closed() && !t_.in.empty()) {
        if (t_.out.size() >= opt.output_high_water) {
            if (!flush()) return;
            if (t_.out.size() >= opt.output_high_water) {
                // The client is not reading its responses: stop reading until it does
                // (the partial write above guarantees a writable event). Requests it sent
                // in time are not its fault: only the idle timeout runs meanwhile.
                paused_ = true;
                t_.stop_reading();
                set_phase(Phase::idle, opt.idle_timeout);
                break;
            }
        }
        if (!req_) {
            req_ = worker_.acquire_request();
            req_->set_connection(&info);
        }
        ParseResult r = req_->parser_.parse(t_.in.data(), t_.in.size(), *req_);
        if (r == ParseResult::incomplete) {
            if (req_->parser_.head_complete()) {
                if (!body_checked_) {
                    // Asked once per request whose body did not come with its head (a
                    // small request never gets here).
                    body_checked_ = true;
                    if (worker_.handler().streams_body(*req_)) {
                        start_body_stream();
                        if (!dispatch()) break;  // the handler reads the body
                        continue;
                    }
                    if (req_->parser_.body_too_large()) {
                        reject(Status::PayloadTooLarge);
                        break;
                    }
                    continue;  // parse on: the body may be here already (chunked pauses)
                }
                if (phase_ != Phase::body) set_phase(Phase::body, opt.body_timeout);
                if (req_->parser_.expects_continue() && !continue_sent_) {
                    t_.output();
                    write_continue(t_.out);
                    continue_sent_ = true;
                }
            } else if (phase_ != Phase::header) {
                set_phase(Phase::header, opt.header_timeout);
            }
            break;
        }
        if (r == ParseResult::error) {
            if (first_request_ && h2c_preface()) {
                if (t_.in.size() >= kH2Preface.size()) {
                    hand_over_to_http2(nullptr, {});
                    return;
                }
                req_->parser_.reset();  // the preface's first line: wait for the rest of it
                break;
            }
            reject(req_->parser_.error());
            break;
        }
        if (first_request_) {
            first_request_ = false;
            if (req_->parser_.upgrade() && try_h2c_upgrade()) return;
        }
        if (!dispatch()) break;  // an asynchronous handler has the request
    }
    if (!t_.closed()) flush();
    // What follows a finished stream or direct body continues in a deferred call, not by
    // recursion: a client pipelining many large bodies would otherwise grow the stack
    // (process -> resume -> read -> process ...) without bound.
    if (!t_.closed() && stream_ended_ && !resume_queued_) {
        resume_queued_ = true;
        t_.loop().defer([this] {
            resume_queued_ = false;
            if (!t_.closed() && stream_ended_) resume();
        });
    }
}

// Carries on after a pause, a finished stream or an asynchronous response: answer what is
// buffered, then read again.
void Http1Connection::resume() {
    paused_ = false;
    stream_ended_ = false;
    process();
    if (!t_.closed() && !busy_ && !body_in_flight() && !close_after_ && !paused_ &&
        phase_ != Phase::linger && !t_.reading())
        t_.read();
}

// Hands the parsed request to the handler; true when its response is already written.
bool Http1Connection::dispatch() {
    Response resp;
    bool ready;
    completed_inline_ = false;
    inline_result_ = &resp;
    dispatching_ = true;
    try {
        ready = worker_.handler().handle(*req_, resp, *this);
    } catch (const std::exception& e) {
        log::error("handler for {} {} threw: {}", req_->method_name(), req_->path(), e.what());
        resp = server_error_response(worker_.options(), Status::InternalServerError, req_.get());
        ready = true;
    } catch (...) {
        log::error("handler for {} {} threw a non-standard exception", req_->method_name(),
                   req_->path());
        resp = server_error_response(worker_.options(), Status::InternalServerError, req_.get());
        ready = true;
    }
    dispatching_ = false;
    inline_result_ = nullptr;
    if (!ready && !completed_inline_) {
        busy_ = true;
        if (!body_streaming_ || !body_->waiting()) {  // (a handler reading its body keeps both)
            t_.stop_reading();
            t_.disarm();  // no timeout runs against the application
            t_.io.report_fin = worker_.options().cancel_on_disconnect;
        }
        return false;
    }
    finish(resp);
    return true;
}

void Http1Connection::pending(std::coroutine_handle<> work) {
    if (!completed_inline_) pending_ = work;
}

void Http1Connection::complete(Response&& r) {
    if (dispatching_) {
        *inline_result_ = std::move(r);
        completed_inline_ = true;
        return;
    }
    busy_ = false;
    pending_ = {};
    t_.io.report_fin = false;
    if (t_.closed()) {  // force-closed during shutdown while the handler ran
        worker_.connection_closed(this);
        return;
    }
    if (peer_gone_) {
        close();
        return;
    }
    finish(r);
    resume();
}

void Http1Connection::finish(Response& r) {
    const bool http10 = req_->version() == 10;
    PreparedResponse p;
    p.head = req_->method() == Method::HEAD;
    if (r.has_extra()) [[unlikely]] {
        prepare_extra(req_.get(), r, worker_.options(), p);
        if (p.upgrade && r.status() == Status::SwitchingProtocols) {
            hand_over_to_websocket(r.take_upgrade(), r);
            return;
        }
    }
    const bool head = p.head;
    const bool streamed = p.streamed;
    const FileBody* file = p.file;
    // A streamed body of a known length goes with Content-Length (set_body_length).
    const std::int64_t declared = streamed ? r.body_length() : -1;
    // An HTTP/1.0 client reads a streamed body of no known length until the connection closes.
    // The rest of an unread streamed request body cannot be told from the next request.
    const bool unread_body = body_streaming_ && body_->unread();
    const bool keep = req_->keep_alive() && !r.wants_close() && !worker_.draining() &&
                      !(streamed && http10 && !head && declared < 0) && !unread_body;
    // A large body goes out from its own string, after the head (no copy).
    const bool direct = !streamed && !file && !head &&
                        r.body().size() >= worker_.options().direct_body_min &&
                        response_has_body(r);
    t_.output();
    if (file) [[unlikely]] {
        write_response(t_.out, r,
                       WriteOptions{t_.loop().http_date(), keep, http10, true, false,
                                    static_cast<std::int64_t>(file->length())});
        if (!head && response_has_body(r)) start_file(r);
    } else if (declared >= 0) [[unlikely]] {
        write_response(t_.out, r,
                       WriteOptions{t_.loop().http_date(), keep, http10, true, false, declared});
    } else {
        write_response(t_.out, r,
                       WriteOptions{t_.loop().http_date(), keep, http10, head || direct, streamed});
    }
    if (file) [[unlikely]] {
        // sent by write_file
    } else if (streamed && !head && response_has_body(r)) {
        // (A 204 or 304 has no body to stream: its source is dropped with the response.)
        // Requests after this one wait until the stream ends (responses go out in order);
        // reading stops meanwhile and only the idle timeout runs.
        stream_ = r.take_body_source();
        stream_chunked_ = !http10 && declared < 0;
        stream_left_ = declared;
        stream_trailers_ = stream_chunked_ ? r.trailers() : nullptr;
        t_.stop_reading();
    } else if (direct) {
        // Likewise until the body is written.
        direct_ = std::make_unique<std::string>(std::move(r.mutable_body()));
        direct_sent_ = 0;
        t_.stop_reading();
    } else {
        recycle_body(std::move(r.mutable_body()));  // copied out: its storage serves the next one
    }
    if (body_streaming_) [[unlikely]] {
        body_->end(unread_body);
        body_streaming_ = false;
    }
    t_.in.consume(req_->parser_.consumed());
    req_->parser_.reset();
    body_checked_ = false;
    continue_sent_ = false;
    if (!keep) close_after_ = true;
    if (t_.in.empty() || body_in_flight()) {
        set_phase(Phase::idle, worker_.options().idle_timeout);
    } else {
        set_phase(Phase::header, worker_.options().header_timeout);
    }
}

// Pulls pieces of a streamed body into the output buffer up to the high-water mark.
void Http1Connection::pump_stream() {
    t_.output();
    const std::size_t high = worker_.options().output_high_water;
    while (stream_ && t_.out.size() < high) {
        std::optional<std::string> piece;
        try {
            piece = stream_();
        } catch (const std::exception& e) {
            // Headers are gone already: the only honest signal left is an incomplete body.
            log::error("streamed body for {} failed: {}", req_ ? req_->path() : "?", e.what());
            stream_ = nullptr;
            close();
            return;
        }
        if (stream_left_ >= 0 && (piece ? piece->size() > static_cast<std::uint64_t>(stream_left_)
                                        : stream_left_ != 0)) [[unlikely]] {
            // The body does not match the Content-Length sent: nothing honest can follow.
            log::error("streamed body for {} {} its announced length", req_ ? req_->path() : "?",
                       piece ? "went past" : "ended short of");
            stream_ = nullptr;
            close();
            return;
        }
        if (!piece) {
            if (stream_chunked_) write_last_chunk(t_.out, stream_trailers_.get());
            stream_ = nullptr;
            stream_trailers_.reset();
            stream_ended_ = true;
            break;
        }
        if (piece->empty()) {
            // A coroutine producer (stream_body) with nothing yet: it wakes us.
            if (body_pending(stream_, [this] {
                    if (!t_.closed()) on_write_ready();
                }))
                break;
            continue;
        }
        if (stream_left_ > 0) stream_left_ -= static_cast<std::int64_t>(piece->size());
        write_chunk(t_.out, *piece, stream_chunked_);
    }
}

// Answers malformed input with its status and closes (RFC 9112 leaves the framing of what
// follows unknowable, so nothing more is read from this connection).
void Http1Connection::reject(Status s) {
    Response r = server_error_response(worker_.options(), s, nullptr);
    t_.output();
    write_response(t_.out, r, WriteOptions{t_.loop().http_date(), false, false, false});
    close_after_ = true;
    t_.in.clear();
    if (req_) req_->parser_.reset();
}

// A client that keeps reading a long body (or its paused pipeline) is not idle: progress
// moves the idle deadline.
void Http1Connection::note_progress() {
    if (phase_ == Phase::idle)
        deadline_ms_ =
            t_.loop().now_ms() + static_cast<std::uint64_t>(worker_.options().idle_timeout.count());
}

// Writes the queued head bytes and the rest of the direct body in one writev. Returns -1 if
// the connection closed, 0 while body bytes remain, 1 once the body is out.
int Http1Connection::write_direct() {
    iovec v[2];
    int parts = 0;
    if (!t_.out.empty()) v[parts++] = iovec{t_.out.data(), t_.out.size()};
    v[parts++] = iovec{direct_->data() + direct_sent_, direct_->size() - direct_sent_};
    const ssize_t n = t_.send(v, parts);
    if (n < 0) {
        close();
        return -1;
    }
    if (n) note_progress();
    std::size_t written = static_cast<std::size_t>(n);
    const std::size_t from_out = std::min(written, t_.out.size());
    t_.out.consume(from_out);
    direct_sent_ += written - from_out;
    if (direct_sent_ < direct_->size()) return 0;
    direct_.reset();
    direct_sent_ = 0;
    stream_ended_ = true;  // the requests behind it may proceed
    return 1;
}

void Http1Connection::start_file(Response& r) {
    file_ = std::make_unique<FileCursor>(std::move(*r.file_body()));
    r.clear_file_body();
    if (t_.secure()) file_->no_sendfile();  // TLS encrypts in user space: the file is read
    t_.stop_reading();  // the requests behind it wait (responses go out in order)
}

// Writes the output buffer; -1 if the connection closed, 0 if bytes remain (on_write_ready
// continues), 1 once it is empty.
int Http1Connection::write_out(bool more) {
    const std::size_t before = t_.out.size();
    const int w = t_.write_out(more);
    if (w < 0) {
        close();
        return -1;
    }
    if (t_.out.size() != before) note_progress();
    return w;
}

// Sends the file body: part heads and bytes kept in memory go through the output buffer (so
// small files leave with the head, and with the responses pipelined around them, in one
// write); larger files go with sendfile(2) on plain connections and through pread into the
// output buffer under TLS. One call sends at most one high-water mark and then yields to
// the other connections. Returns -1 if the connection closed, 0 while bytes remain, 1 when
// the body is out (its last bytes may still sit in the output buffer).
int Http1Connection::write_file() {
    FileCursor& f = *file_;
    const std::size_t high = worker_.options().output_high_water;
    std::size_t budget = high;
    while (!f.done()) {
        if (budget == 0) {
            t_.loop().defer([this] {
                if (!t_.closed()) on_write_ready();
            });
            return 0;
        }
        if (const std::optional<FileCursor::Span> span = f.sendfile_span()) {
            // What is queued goes first, held by the kernel to share packets with the file's
            // first bytes.
            if (const int w = write_out(true); w <= 0) return w;
            const std::size_t want =
                static_cast<std::size_t>(std::min<std::uint64_t>(span->length, budget));
            const ssize_t n = t_.loop().io().send_file(t_.io, span->fd, span->offset, want);
            if (n == -EINVAL || n == -ENOSYS) {
                f.no_sendfile();  // a file system without splice support: read it instead
                continue;
            }
            if (n < 0) {
                if (n == -ENODATA) file_body_failed(info);
                close();
                return -1;
            }
            if (n > 0) note_progress();
            f.advance(static_cast<std::uint64_t>(n));
            budget -= static_cast<std::size_t>(n);
            // Nothing sent: the socket is full (on_write_ready continues). A short count is
            // tried again at once: it may mean a full socket (the next call says so) or a file
            // that shrank (the next call reports its end), which must not wait for a writable
            // event that never comes.
            if (n == 0) return 0;
            continue;
        }
        const std::size_t room = t_.out.size() < high ? high - t_.out.size() : 0;
        if (room == 0) {
            if (const int w = write_out(); w <= 0) return w;
            continue;
        }
        const ssize_t n = f.fill(t_.out, std::min({room, std::size_t{256} * 1024, budget}));
        if (n < 0) {
            file_body_failed(info);
            close();
            return -1;
        }
        budget -= static_cast<std::size_t>(n);
    }
    file_.reset();
    stream_ended_ = true;  // the requests behind it may proceed
    return 1;
}

// Writes what is queued; returns false if the connection closed.
bool Http1Connection::flush() {
    // A stream is written one high-water mark at a time; after that this loop iteration
    // yields to other connections and continues in the next one.
    std::size_t budget = worker_.options().output_high_water;
    for (;;) {
        if (stream_) {
            pump_stream();
            if (t_.closed()) return false;
        }
        if (file_) [[unlikely]] {
            const int r = write_file();
            if (r < 0) return false;
            if (r == 0) break;  // on_write_ready (or the deferred call) continues
            continue;           // the body is queued; what is in t_.out follows
        }
        if (direct_) {
            const int r = write_direct();
            if (r < 0) return false;
            if (r == 0) break;  // partial write: on_write_ready continues
            continue;           // the body is out; anything still in t_.out follows
        }
        if (t_.out.empty()) break;
        iovec v{t_.out.data(), t_.out.size()};
        ssize_t n = t_.send(&v, 1);
        if (n < 0) {
            close();
            return false;
        }
        t_.out.consume(static_cast<std::size_t>(n));
        if (n && (stream_ || paused_)) note_progress();
        if (!t_.out.empty() || !stream_) break;  // partial write: on_write_ready continues
        if (static_cast<std::size_t>(n) >= budget) {
            t_.loop().defer([this] {
                if (!t_.closed()) on_write_ready();
            });
            return true;
        }
        budget -= static_cast<std::size_t>(n);
    }
    // An empty output buffer goes back to the pool, also while a stream waits for its
    // producer (pump_stream takes one again): an idle event stream holds no 16 KiB buffer.
    t_.release_output_if_empty();
    if (t_.out.empty() && !body_in_flight() && close_after_ && !busy_) {
        begin_linger();
        return !t_.closed();
    }
    // Nothing points into the input now (a request whose head is complete is parsed again from
    // wherever its bytes move): an idle connection holds no buffer, no Request and no parser,
    // one with half a request only those bytes (keep_partial()).
    if (!busy_ && t_.in.empty()) {
        if (t_.in.capacity()) t_.loop().buffers().release(t_.in);
        if (req_) worker_.release_request(std::move(req_));
    } else if (!busy_ && !body_streaming_) [[unlikely]] {
        keep_partial();
    }
    return true;
}

// Between reads with part of a request (or pipelined ones behind a body still being sent):
// the bytes move out of the pooled buffer; a Request not yet filled goes back.
void Http1Connection::keep_partial() {
    if (req_ && !body_in_flight() && !req_->parser_.head_complete())
        worker_.release_request(std::move(req_));  // (its parser's scan is redone later)
    t_.keep_input();
}

void Http1Connection::on_write_ready() {
    if (!flush() || t_.closed()) return;
    if (stream_ended_ || (paused_ && t_.out.size() < worker_.options().output_high_water / 2))
        resume();
}

// After the last response: stop sending, keep reading (and discarding) for a moment so
// the peer receives our bytes before the kernel would answer its late bytes with a reset.
void Http1Connection::begin_linger() {
    if (t_.closed() || phase_ == Phase::linger) return;
    if (peer_gone_) {
        close();
        return;
    }
    // With TLS, close_notify first; the write side is shut once it has left (if the socket
    // is full, the peer still reads it before our close).
    t_.shutdown_write();
    t_.in.clear();
    if (req_) worker_.release_request(std::move(req_));
    set_phase(Phase::linger, worker_.options().linger_timeout);
    if (!t_.reading()) t_.read();
}

void Http1Connection::close() {
    if (t_.closed()) return;
    // An idle or timed-out TLS connection ends with close_notify (best effort); a lingering
    // one sent it already, a handshake never finished has none to send.
    const bool notify = !handshaking_ && phase_ != Phase::linger;
    if (handshaking_) {
        handshaking_ = false;
        worker_.handshake_finished();
    }
    t_.close(notify);
    release_buffers();
    if (req_ && !busy_) worker_.release_request(std::move(req_));
    worker_.connection_closed(this);
}

// h2c with prior knowledge (RFC 9113 3.3): the buffer starts like the connection preface
// where a request line was expected (the parser rejects "PRI * HTTP/2.0", so this costs
// ordinary requests nothing).
bool Http1Connection::h2c_preface() const noexcept {
    return !t_.tls && worker_.options().http2.h2c_prior_knowledge &&
           is_h2_preface_start(t_.in.view());
}

// h2c via Upgrade (RFC 7540 3.2): "Upgrade: h2c" with exactly one HTTP2-Settings, both named in
// Connection. Anything else with an Upgrade field is an ordinary request.
bool Http1Connection::try_h2c_upgrade() {
    if (t_.tls || !worker_.options().http2.h2c_upgrade) return false;
    bool h2c = false, conn_upgrade = false, conn_settings = false;
    int settings_count = 0;
    std::string_view settings;
    for (const Header& h : req_->headers()) {
        if (ascii::iequals(h.name, "upgrade")) h2c = h2c || ascii::list_has(h.value, "h2c");
        if (ascii::iequals(h.name, "connection")) {
            conn_upgrade = conn_upgrade || ascii::list_has(h.value, "upgrade");
            conn_settings = conn_settings || ascii::list_has(h.value, "http2-settings");
        }
        if (ascii::iequals(h.name, "http2-settings")) {
            ++settings_count;
            settings = h.value;
        }
    }
    if (!h2c || !conn_upgrade || !conn_settings || settings_count != 1) return false;
    // RFC 9113 3.2.1 (RFC 7540): token68, base64url without padding. One that does not
    // decode is not an upgrade: the request is answered over HTTP/1.1.
    std::optional<std::string> decoded = base64url_decode(settings);
    if (!decoded) return false;
    t_.in.consume(req_->parser_.consumed());
    req_->parser_.reset();
    hand_over_to_http2(std::move(req_), std::move(*decoded));
    return true;
}

// Gives the socket, the TLS transform and the unread bytes to an HTTP/2 driver, which takes
// this connection's place in the worker's list.
void Http1Connection::hand_over_to_http2(std::unique_ptr<Request> upgraded, std::string settings) {
    t_.detach();
    auto* h2 =
        new Http2Connection(worker_, std::move(t_), std::move(upgraded), std::move(settings), info);
    if (req_) worker_.release_request(std::move(req_));
    worker_.replace_connection(this, h2);
    h2->start();
    if (worker_.draining()) h2->drain();  // made during a graceful stop: GOAWAY at once
}

// The route reads this request's body itself (http1_request_body.cpp).
void Http1Connection::start_body_stream() {
    if (!body_) body_ = std::make_unique<Http1RequestBody>(*this);
    body_->start(req_->parser_, *req_);
    body_streaming_ = true;
    if (req_->parser_.expects_continue() && !continue_sent_) {
        t_.output();
        write_continue(t_.out);
        continue_sent_ = true;
    }
}

// A 101 from ws_accept(): the head goes out, then the socket, the TLS transform, the bytes
// behind the request and the request itself go to a WebSocket driver in this one's place.
void Http1Connection::hand_over_to_websocket(std::shared_ptr<Upgrade> u, const Response& r) {
    if (auto* tunnel = dynamic_cast<TunnelUpgrade*>(u.get())) {
        hand_over_to_tunnel(*tunnel, r);
        return;
    }
    auto up = std::dynamic_pointer_cast<WsUpgrade>(std::move(u));
    if (!up) {
        log::error("a 101 response for {} carries an upgrade this server cannot run", req_->path());
        close();
        return;
    }
    t_.output();
    t_.out.append("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n");
    t_.out.append(r.header_block());
    t_.out.append("\r\n");
    const std::string_view head(t_.in.data(), req_->parser_.consumed());
    t_.in.consume(req_->parser_.consumed());  // the bytes stay where they are until the copy
    req_->parser_.reset();
    t_.detach();
    auto* ws =
        WsConnection::over_socket(worker_, std::move(t_), std::move(req_), head, std::move(up));
    ws->adopt_info(info);
    worker_.replace_connection(this, ws);
    ws->start();
    if (worker_.draining()) ws->drain();  // made during a graceful stop: it ends too
}

// A tunnel (vela::tunnel): the 101, then the socket joined to the other connection.
void Http1Connection::hand_over_to_tunnel(TunnelUpgrade& up, const Response& r) {
    t_.output();
    t_.out.append("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n");
    t_.out.append(r.header_block());
    t_.out.append("\r\n");
    t_.in.consume(req_->parser_.consumed());  // what follows the request is the tunnel's
    req_->parser_.reset();
    const bool websocket = ascii::iequals(r.header("upgrade"), "websocket");
    worker_.release_request(std::move(req_));
    t_.detach();
    auto* tunnel = new TunnelConnection(worker_, std::move(t_), std::move(up.other),
                                        up.idle_timeout, std::move(up.hold));
    tunnel->info = info;
    if (websocket) tunnel->protocol = ConnectionProtocol::websocket;
    worker_.replace_connection(this, tunnel);
    tunnel->start();
    if (worker_.draining()) tunnel->drain();  // made during a graceful stop: it ends too
}

void Http1Connection::release_buffers() noexcept {
    if (stream_) {
        body_dropped(stream_);  // a producer learns that its client has gone
        stream_ = nullptr;
        stream_trailers_.reset();
    }
    t_.release_buffers();
    direct_.reset();
}

void Http1Connection::set_phase(Phase p, milliseconds timeout) {
    phase_ = p;
    deadline_ms_ = t_.loop().now_ms() + static_cast<std::uint64_t>(timeout.count());
    t_.arm(deadline_ms_);
}

// The wheel entry only needs to fire no later than the deadline; when it fires early the
// deadline is checked again (so a request costs a store, not a relink).
void Http1Connection::timer_fired(TimerWheel::Entry* e) {
    static_cast<Http1Connection*>(e->owner)->on_timeout();
}

void Http1Connection::on_timeout() {
    if (busy_ && body_streaming_ && body_->waiting() && !t_.closed()) {
        body_->on_timeout();  // a body that stopped arriving: the handler's read() reports 408
        return;
    }
    if (t_.closed() || busy_) return;
    if (!t_.due(deadline_ms_)) return;
    switch (phase_) {
        case Phase::idle:
        case Phase::linger:
            close();
            break;
        case Phase::header:
            if (!request_started() && t_.in.empty()) {
                close();  // nothing was sent: no request to answer
                break;
            }
            [[fallthrough]];
        case Phase::body:
            reject(Status::RequestTimeout);
            flush();
            break;
    }
}

}  // namespace vela::detail
