#include "http2_connection.hpp"
#include "http2_stream.hpp"
#include "response_pipeline.hpp"
#include "ws_connection.hpp"

#include "vela/server/body_pipe.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <utility>

#include "vela/base/ascii.hpp"
#include "vela/base/log.hpp"
#include "vela/http/file_cursor.hpp"
#include "vela/http/response_writer.hpp"

namespace vela::detail {

void H2RequestBody::release() {
    if (taken_ == 0) return;
    // The chunk was the whole of `body`; what arrived meanwhile waits in `more`.
    s_.body.clear();
    s_.body.swap(s_.more);
    const std::size_t n = std::exchange(taken_, 0);
    if (s_.conn && s_.open()) s_.conn->release_body(s_, n);
}

bool H2RequestBody::ready() {
    release();
    return error_ != Status::OK || !s_.body.empty() || s_.request_done || !s_.open();
}

BodyChunk H2RequestBody::take() {
    release();
    if (error_ != Status::OK) return {{}, true, error_};
    if (ended_) return {{}, true, Status::OK};
    if (s_.body.empty() && !s_.request_done) {
        // The stream went away before its end: the client left or reset it.
        error_ = Status::BadRequest;
        return {{}, true, error_};
    }
    taken_ = s_.body.size();
    received_ += taken_;
    ended_ = s_.request_done;
    return {s_.body, ended_, Status::OK};
}

namespace {

// Finished streams are kept per loop thread (not per connection, so an idle connection holds
// none) and reused with their buffers' capacity.
class StreamPool {
  public:
    ~StreamPool() {
        for (H2Stream* s : free_) delete s;
    }
    H2Stream* take() {
        if (free_.empty()) {
            auto* s = new H2Stream;
            s->raw.reserve(256);
            s->fields.reserve(16);
            return s;
        }
        H2Stream* s = free_.back();
        free_.pop_back();
        return s;
    }
    void give(H2Stream* s) noexcept {
        if (free_.size() >= kMax) {
            delete s;
            return;
        }
        s->recycle();
        try {
            free_.push_back(s);
        } catch (...) {
            delete s;
        }
    }

  private:
    static constexpr std::size_t kMax = 1024;
    std::vector<H2Stream*> free_;
};

StreamPool& spare_streams() {
    thread_local StreamPool pool;
    return pool;
}

// Thrown out of send_body once the reason was logged: the stream is reset.
struct BodyAbandoned {};

h2::SessionOptions session_options(const ServerOptions& o) {
    h2::SessionOptions s;
    s.role = h2::Role::server;
    s.max_concurrent_streams = o.http2.max_concurrent_streams;
    s.initial_window_size = std::min<std::uint32_t>(o.http2.stream_window, h2::max_window_size);
    s.connection_window_size =
        std::min<std::uint32_t>(o.http2.connection_window, h2::max_window_size);
    s.max_frame_size = std::clamp<std::uint32_t>(o.http2.max_frame_size, h2::default_max_frame_size,
                                                 h2::max_max_frame_size);
    s.max_header_list_size = o.http2.max_header_list_size;
    s.enable_connect_protocol = o.http2.websocket;
    s.max_control_frames =
        static_cast<std::uint32_t>(std::min<std::size_t>(o.http2.max_control_frames, UINT32_MAX));
    return s;
}

// Whether a request's Host and :authority name the same origin (RFC 3986 6.2: the host is
// compared without case, and the scheme's default port may be left out).
bool same_authority(const H2Stream& s, std::string_view host, std::string_view authority) {
    const std::string_view scheme = s.at(s.scheme);
    const std::string_view port = scheme == "https" ? ":443" : scheme == "http" ? ":80" : "";
    auto origin = [&](std::string_view v) {
        if (!port.empty() && v.size() > port.size() && v.ends_with(port))
            v.remove_suffix(port.size());
        return v;
    };
    return ascii::iequals(origin(host), origin(authority));
}

// RFC 9113 8.2.2's fields, by length first (one comparison for most names).
constexpr bool connection_specific(std::string_view lower_name) {
    switch (lower_name.size()) {
        case 7:
            return lower_name == "upgrade";
        case 10:
            return lower_name == "connection" || lower_name == "keep-alive";
        case 16:
            return lower_name == "proxy-connection";
        case 17:
            return lower_name == "transfer-encoding";
        default:
            return false;
    }
}

}  // namespace

Http2Connection::Http2Connection(ServerWorker& worker, net::Transport&& t,
                                 std::unique_ptr<Request> upgraded, std::string settings,
                                 const ConnectionInfo& info)
    : worker_(worker),
      t_(std::move(t)),
      session_(*this, session_options(worker.options())),
      target_parser_(&worker.options().limits),
      upgrade_settings_(std::move(settings)) {
    this->info = info;
    protocol = ConnectionProtocol::http2;
    t_.attach(*this, this, &Http2Connection::timer_fired);
    // The upgraded request's fields point into `t_.in`'s old bytes: copy them before anything
    // touches the buffer.
    if (upgraded) adopt_upgrade(std::move(upgraded));
}

Http2Connection::~Http2Connection() {
    delete upgraded_;
    while (streams_) {
        H2Stream* s = streams_;
        if (s->busy) {
            // A handler still runs (the client left): the stream outlives this connection and
            // frees itself when the handler completes. Destroying the handler here could
            // leave its timers and awaited work pointing at freed frames.
            streams_ = s->next;
            if (streams_) streams_->prev = nullptr;
            s->conn = nullptr;
            s->st = nullptr;
            s->prev = s->next = nullptr;
            continue;
        }
        free_stream(s);
    }
}  // (the transport closes its socket, if still open, and returns the buffers)

void Http2Connection::start() {
    const std::uint64_t now = t_.loop().now_ms();
    t_.output();
    if (upgraded_) {
        // RFC 7540 3.2: 101, then the server preface; the request becomes stream 1.
        t_.out.append(
            "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n");
        if (!session_.start_upgraded(upgrade_settings_, now)) {
            // HTTP2-Settings that are not SETTINGS: the session wrote GOAWAY.
            delete std::exchange(upgraded_, nullptr);
        }
    } else {
        session_.start(now);
    }
    std::string().swap(upgrade_settings_);
    t_.add();
    arm(now + static_cast<std::uint64_t>(worker_.options().idle_timeout.count()));
    if (H2Stream* s = std::exchange(upgraded_, nullptr)) {
        s->opened_ms = now;
        s->next = streams_;
        if (streams_) streams_->prev = s;
        streams_ = s;
        ++stream_count_;
        s->st = session_.find(1);
        s->st->user = s;
        s->queued = true;
        ready_.push_back(s);
    }
    // What the HTTP/1.1 driver had read already (the preface and perhaps more).
    if (!t_.in.empty() && !feed()) return;
    run_ready();
    if (t_.closed()) return;
    flush();
    if (t_.closed()) return;
    // Plaintext that came with the TLS Finished. Its result is no reason to stop: on_read()
    // answers "keep reading" only once reading is armed, which it is not yet.
    if (t_.tls) t_.tls->deliver();
    if (!t_.closed() && !paused_ && !t_.reading() && !lingering_) t_.read();
}

// The upgraded HTTP/1.1 request is answered on stream 1: its fields and body move into the
// stream's own storage, as for any HTTP/2 request.
void Http2Connection::adopt_upgrade(std::unique_ptr<Request> req) {
    auto* s = new H2Stream;
    s->conn = this;
    s->id = 1;
    s->request_done = true;
    s->prebuilt = true;
    std::string& raw = s->raw;
    std::size_t size = req->method_name().size() + req->target().size() + req->host().size();
    for (const Header& h : req->headers()) size += h.name.size() + h.value.size();
    raw.reserve(size);
    auto keep = [&](std::string_view v) {
        const std::size_t off = raw.size();
        raw.append(v);
        return std::pair{off, v.size()};
    };
    const auto m = keep(req->method_name());
    const auto t = keep(req->target());
    const auto host = keep(req->host());
    std::vector<std::pair<std::pair<std::size_t, std::size_t>, std::pair<std::size_t, std::size_t>>>
        hs;
    for (const Header& h : req->headers()) hs.push_back({keep(h.name), keep(h.value)});
    s->body.assign(req->body());
    auto view = [&](std::pair<std::size_t, std::size_t> p) {
        return std::string_view(raw).substr(p.first, p.second);
    };
    const Method method = req->method();
    req->reset();
    req->set_connection(&info);
    req->set_method(method, view(m));
    target_parser_.reset();
    target_parser_.parse_target_only(view(t), *req);  // it passed the same check in HTTP/1.1
    req->set_host(view(host));
    req->set_body(s->body);
    for (const auto& [n, v] : hs) req->mutable_headers().push_back(Header{view(n), view(v)});
    req->set_version(20);
    req->set_keep_alive(true);
    s->req = std::move(req);
    upgraded_ = s;
}

void Http2Connection::drain() {
    if (t_.closed() || draining_) return;
    draining_ = true;
    // WebSocket sessions close with 1001; their streams end with their closing handshakes.
    for (H2Stream* s = streams_; s; s = s->next) {
        if (Connection* w = s->ws ? ws_link_session(*s->ws) : nullptr) w->drain();
    }
    session_.shutdown();
    flush();
}

void Http2Connection::force_close() {
    // The shutdown deadline passed with handlers suspended: abandon them, as HTTP/1.1 does
    // (destroying the driving coroutine destroys every frame it awaits).
    for (H2Stream* s = streams_; s;) {
        H2Stream* nx = s->next;
        if (s->ws) {
            // Its coroutine is destroyed and its link reset; the stream goes with the session.
            if (Connection* w = ws_link_session(*s->ws)) w->force_close();
        } else if (s->busy && s->work) {
            std::coroutine_handle<> w = std::exchange(s->work, {});
            s->busy = false;
            w.destroy();
            if (t_.closed()) free_stream(s);
        }
        s = nx;
    }
    if (t_.closed()) {
        release_if_done();
        return;
    }
    close();
}

Buffer& Http2Connection::read_buffer() { return t_.input(); }

void Http2Connection::on_read_none() { t_.keep_input(); }

bool Http2Connection::on_read(ssize_t n) {
    if (n <= 0) {
        close();
        return false;
    }
    if (lingering_) {  // after our GOAWAY: read and discard until the client closes
        t_.in.clear();
        t_.release_input_if_empty();
        return true;
    }
    if (!feed()) return false;
    if (!wake_.empty()) [[unlikely]] {
        in_wake_ = true;
        wake_readers();
        in_wake_ = false;
    }
    run_ready();
    if (t_.closed()) return false;
    flush();
    return !t_.closed() && t_.reading();
}

// Hands the buffered bytes to the session (which calls back into on_field, on_data, ...). An
// incomplete frame stays in the input buffer, which grows to hold the whole of it.
bool Http2Connection::feed() {
    in_feed_ = true;
    const std::size_t used = session_.receive(t_.in.view(), t_.loop().now_ms());
    t_.in.consume(used);
    in_feed_ = false;
    if (session_.closed()) {
        t_.in.clear();
        t_.release_input_if_empty();
        flush();
        if (!t_.closed()) linger();
        return false;
    }
    if (t_.in.empty()) {
        // A buffer grown for frames larger than the pooled size is kept while streams are
        // open (an upload would otherwise allocate and free it for every frame that spans
        // two reads), and given back once the connection is idle (flush).
        if (t_.in.capacity() <= t_.loop().buffers().buffer_size() || stream_count_ == 0) {
            t_.release_input_if_empty();
        }
    } else if (t_.in.size() >= h2::frame_header_size) {
        const auto* h = reinterpret_cast<const unsigned char*>(t_.in.data());
        const std::size_t need =
            h2::frame_header_size + ((std::size_t{h[0]} << 16) | (std::size_t{h[1]} << 8) | h[2]);
        if (need > t_.in.capacity()) {
            t_.in.compact();
            t_.in.ensure_writable(need - t_.in.size());
        } else {
            t_.keep_input();
        }
    } else {
        t_.keep_input();
    }
    deadline_ms_ =
        t_.loop().now_ms() + static_cast<std::uint64_t>(worker_.options().idle_timeout.count());
    return true;
}

void Http2Connection::on_begin_headers(h2::Stream& st) {
    if (st.headers_done) return;  // trailers of a stream we know
    H2Stream* s = spare_streams().take();
    s->conn = this;
    s->id = st.id;
    s->st = &st;
    s->opened_ms = t_.loop().now_ms();
    s->next = streams_;
    if (streams_) streams_->prev = s;
    streams_ = s;
    ++stream_count_;
    st.user = s;
}

void Http2Connection::on_field(h2::Stream& st, const hpack::DecodedField& f) {
    auto* s = static_cast<H2Stream*>(st.user);
    if (!s || st.headers_done) return;  // trailers are accepted and dropped
    if (s->early != Status::OK) return;
    const std::string_view name = f.name, value = f.value;
    const auto off = static_cast<std::uint32_t>(s->raw.size());
    if (name[0] == ':') {
        if (H2Stream::Span* v = s->pseudo(name)) {
            *v = {off, static_cast<std::uint32_t>(value.size())};
            s->raw.append(value);
        }
        return;
    }
    if (name == "cookie") {
        if (!s->cookies.empty()) s->cookies += "; ";
        s->cookies += value;
        return;
    }
    if (s->fields.size() >= worker_.options().limits.max_headers) {
        s->early = Status::RequestHeaderFieldsTooLarge;
        return;
    }
    s->raw.append(name);
    s->raw.append(value);
    s->fields.push_back({off, static_cast<std::uint32_t>(name.size()),
                         off + static_cast<std::uint32_t>(name.size()),
                         static_cast<std::uint32_t>(value.size())});
}

void Http2Connection::on_headers(h2::Stream& st, const h2::HeadersEnd& end) {
    auto* s = static_cast<H2Stream*>(st.user);
    if (!s) return;
    if (end.list_too_large) s->early = Status::RequestHeaderFieldsTooLarge;
    if (end.end_stream) {
        if (!s->request_done) {
            s->request_done = true;
            if (s->ws) {
                ws_link_peer_ended(*s->ws);  // (a tunnel carries no trailers: its end all the same)
            } else if (s->streaming) {
                wake_reader(*s);  // trailers end a streamed body
            } else if (!s->responding && !s->queued && !s->busy) {
                s->queued = true;
                ready_.push_back(s);
            }
        }
        return;
    }
    if (end.kind != h2::HeadersEnd::Kind::headers || s->responding) return;
    if (s->early != Status::OK) {
        // A header list over the limit is answered now, whatever body may follow.
        reject_stream(*s, s->early);
        return;
    }
    // A body follows: a streaming route reads it as it arrives, and is dispatched now.
    if (!build_request(*s)) return;  // answered (a bad target, CONNECT)
    s->prebuilt = true;
    if (worker_.handler().streams_body(*s->req)) {
        s->streaming = true;
        s->last_data_ms = t_.loop().now_ms();
        s->req->set_body_stream(&s->body_reader);
        s->queued = true;
        ready_.push_back(s);
    } else if (s->protocol.len != 0) [[unlikely]] {
        // An extended CONNECT (RFC 8441): answered before its stream carries anything.
        s->queued = true;
        ready_.push_back(s);
    }
}

void Http2Connection::on_data(h2::Stream& st, std::string_view data, bool end_stream) {
    auto* s = static_cast<H2Stream*>(st.user);
    if (!s) return;
    if (s->streaming) [[unlikely]] {
        streamed_data(*s, data, end_stream);
        return;
    }
    if (!s->responding) {
        if (s->body.size() + data.size() > worker_.options().limits.max_body) {
            std::string().swap(s->body);
            session_.consume(st, data.size());
            reject_stream(*s, Status::PayloadTooLarge);
            return;
        }
        s->body.append(data);
    }
    // The body is buffered: its bytes leave the window at once.
    session_.consume(st, data.size());
    if (end_stream && !s->request_done) {
        s->request_done = true;
        // (busy: an extended CONNECT dispatched at its HEADERS, its handler still running)
        if (!s->responding && !s->queued && !s->busy) {
            s->queued = true;
            ready_.push_back(s);
        }
    }
}

// DATA for a streaming route: kept for the handler's next read(), its bytes still counted in
// the client's window until then.
void Http2Connection::streamed_data(H2Stream& s, std::string_view data, bool end_stream) {
    if (s.ws) {
        ws_link_received(*s.ws, *this, data, end_stream);
        return;
    }
    if (s.responding) {
        session_.consume(*s.st, data.size());  // answered already: dropped
        return;
    }
    s.streamed_total += data.size();
    if (s.streamed_total > worker_.options().limits.max_streamed_body) {
        session_.consume(*s.st, data.size());
        s.body_reader.fail(Status::PayloadTooLarge);
    } else {
        (s.body_reader.chunk_out() ? s.more : s.body).append(data);
    }
    s.last_data_ms = t_.loop().now_ms();
    if (end_stream) s.request_done = true;
    wake_reader(s);
}

// A handler waiting in read() is resumed once the connection's read is processed.
void Http2Connection::wake_reader(H2Stream& s) {
    if (!s.body_reader.waiting() || s.wake_queued) return;
    s.wake_queued = true;
    wake_.push_back(&s);
}

void Http2Connection::wake_readers() {
    for (std::size_t i = 0; i < wake_.size() && !t_.closed(); ++i) {
        H2Stream* s = wake_[i];
        s->wake_queued = false;
        s->body_reader.wake();  // the handler may complete (stream_completed) in there
    }
    wake_.clear();
}

void Http2Connection::release_body(H2Stream& s, std::size_t n) {
    session_.consume(*s.st, n);
    s.last_data_ms = t_.loop().now_ms();
    if (!in_feed_ && !in_wake_) flush();
}

void Http2Connection::on_close(h2::Stream& st, h2::ErrorCode code, bool) {
    auto* s = static_cast<H2Stream*>(st.user);
    if (!s) return;
    s->st = nullptr;
    s->body_pending = false;
    if (s->ws)  // the session ends (1006 unless its handshake is done)
        ws_link_stream_closed(*s->ws, code != h2::ErrorCode::no_error);
    else if (s->streaming)
        wake_reader(*s);  // read() reports the end
    // A handler still owns it, run_ready() will meet it, or the sending list holds it: freed
    // there.
    if (!s->busy && !s->queued && !s->sending && !s->dispatching) free_stream(s);
}

void Http2Connection::on_writable(h2::Stream& st) {
    if (auto* s = static_cast<H2Stream*>(st.user)) want_send(*s);
}

// Dispatches every stream whose request ended during the last read, unless the client reset it
// in the meantime (rapid reset costs the server no handler work).
void Http2Connection::run_ready() {
    in_run_ = true;
    for (std::size_t i = 0; i < ready_.size() && !t_.closed(); ++i) {
        H2Stream* s = ready_[i];
        s->queued = false;
        if (!s->open()) {
            free_stream(s);
            continue;
        }
        dispatch(*s);
    }
    ready_.clear();
    in_run_ = false;
}

bool Http2Connection::build_request(H2Stream& s) {
    if (!s.req) {
        s.req = worker_.acquire_request();
        s.req->set_connection(&info);
    }
    Request& req = *s.req;
    req.reset();
    const std::string_view method = s.at(s.method), path = s.at(s.path),
                           authority = s.at(s.authority);
    std::string_view host;
    auto& headers = req.mutable_headers();
    for (const H2Stream::Field& f : s.fields) {
        const std::string_view name = s.at(f.name, f.name_len);
        const std::string_view value = s.at(f.value, f.value_len);
        if (name == "host") host = value;
        headers.push_back(Header{name, value});
    }
    if (!s.cookies.empty()) headers.push_back(Header{"cookie", s.cookies});
    if (!host.empty() && host != authority && !authority.empty()) [[unlikely]] {
        if (!same_authority(s, host, authority)) {
            // RFC 9113 8.3.1: a Host naming another origin than :authority makes the request
            // malformed (8.1.1: a stream error PROTOCOL_ERROR); which of the two a handler or
            // a proxy in front would trust differs.
            reset_stream(s, h2::ErrorCode::protocol_error);
            return false;
        }
    }
    const Method m = method_from(method);
    req.set_method(m, method);
    req.set_version(20);
    req.set_keep_alive(true);
    req.set_host(authority.empty() ? host : authority);
    req.set_body(s.body);
    if (m == Method::CONNECT) {
        // A tunnel (8.5) is not served; an extended CONNECT (RFC 8441) is routed by its
        // :path, to the WebSocket routes (App::ws).
        if (s.protocol.len == 0) {
            reject_stream(s, Status::NotImplemented);
            return false;
        }
        req.set_protocol(s.at(s.protocol));
    }
    target_parser_.reset();
    if (target_parser_.parse_target_only(path, req) != ParseResult::complete) {
        reject_stream(s, target_parser_.error());
        return false;
    }
    return true;
}

void Http2Connection::dispatch(H2Stream& s) {
    if (s.early != Status::OK) {
        if (!s.responding) reject_stream(s, s.early);
        return;
    }
    if (!s.prebuilt) {
        if (!build_request(s)) return;
    } else if (!s.streaming) {
        s.req->set_body(s.body);  // built when its head came (or upgraded): the body since
    }
    Response resp;
    bool ready;
    s.completed_inline = false;
    s.inline_result = &resp;
    s.dispatching = true;
    try {
        ready = worker_.handler().handle(*s.req, resp, s);
    } catch (const std::exception& e) {
        log::error("handler for {} {} threw: {}", s.req->method_name(), s.req->path(), e.what());
        resp = server_error_response(worker_.options(), Status::InternalServerError, s.req.get());
        ready = true;
    } catch (...) {
        log::error("handler for {} {} threw a non-standard exception", s.req->method_name(),
                   s.req->path());
        resp = server_error_response(worker_.options(), Status::InternalServerError, s.req.get());
        ready = true;
    }
    s.dispatching = false;
    s.inline_result = nullptr;
    if (!ready && !s.completed_inline) {
        s.busy = true;
        return;
    }
    respond(s, resp);
}

void Http2Connection::stream_completed(H2Stream& s, Response&& r) {
    s.busy = false;
    s.work = {};
    if (t_.closed() || !s.open()) {  // reset by the client, or the connection went away
        free_stream(&s);
        release_if_done();
        return;
    }
    respond(s, r);
    if (!in_feed_) flush();
}

// Sends HEADERS, its fields HPACK-encoded straight from the Response (names in lower case,
// RFC 9113 8.2.1; HTTP/1.1 connection-specific fields dropped, 8.2.2), then starts the body.
void Http2Connection::respond(H2Stream& s, Response& r) {
    s.responding = true;
    if (!s.open()) return;
    // (A 101 has no place in HTTP/2, RFC 9113 8.6: an upgrade is never run here.)
    PreparedResponse p;
    if (r.has_extra()) [[unlikely]] {
        prepare_extra(s.req.get(), r, worker_.options(), p);
        if (p.upgrade) {
            start_websocket(s, r);
            return;
        }
    }
    const bool head = s.req && s.req->method() == Method::HEAD;
    const bool streamed = p.streamed;
    const FileBody* file = p.file;
    const int status = wire_status(r.status());
    const bool has_body = status_has_body(status);
    // A streamed body of a known length goes with content-length (set_body_length).
    const std::int64_t declared = streamed ? r.body_length() : -1;

    std::array<char, 24> length_text{};
    auto [length_end, ec] = std::to_chars(
        length_text.data(), length_text.data() + length_text.size(),
        file ? file->length()
             : (declared >= 0 ? static_cast<std::uint64_t>(declared) : r.body().size()));
    (void)ec;
    const bool body =
        has_body && !head && (streamed || (file && file->length()) || (!file && !r.body().empty()));

    std::string& block = session_.begin_headers();
    hpack::Encoder& enc = session_.encoder();
    enc.begin_block(block);
    enc.add_status(status, block);
    encode_fields(r, block);
    if (has_body && (!streamed || declared >= 0)) {
        enc.add_unindexed(
            28,  // content-length, static entry 28
            std::string_view(length_text.data(),
                             static_cast<std::size_t>(length_end - length_text.data())),
            block);
    }
    if (body) {
        if (file) [[unlikely]] {
            s.file = std::make_unique<FileCursor>(std::move(*r.file_body()));
            r.clear_file_body();
        } else if (streamed) {
            s.source = r.take_body_source();
            s.trailers = r.trailers();
            s.stream_left = declared;
        } else {
            s.out_body = std::move(r.mutable_body());
            s.body_off = 0;
        }
        s.body_pending = true;
    } else {
        recycle_body(std::move(r.mutable_body()));
    }
    // The request's views are no longer needed: give its storage back early.
    s.raw.clear();
    s.fields.clear();
    s.body.clear();
    if (s.req) worker_.release_request(std::move(s.req));
    s.dispatching = true;  // the stream may close inside end_headers: keep it until below
    session_.end_headers(*s.st, !body);
    s.dispatching = false;
    if (!s.open()) {
        if (!s.busy && !s.queued && !s.sending) free_stream(&s);
        return;
    }
    if (body) want_send(s);
}

// The fields every response carries (server, date, content-type) and the Response's own,
// names in lower case (RFC 9113 8.2.1), HTTP/1.1 connection-specific fields dropped (8.2.2).
void Http2Connection::encode_fields(Response& r, std::string& block) {
    hpack::Encoder& enc = session_.encoder();
    enc.add_known(hpack::Known::server, "vela", block);
    enc.add_known(hpack::Known::date, t_.loop().http_date(), block);
    if (!r.builtin_content_type().empty()) {
        enc.add_known(hpack::Known::content_type, r.builtin_content_type(), block);
    }
    if (r.header_count()) {
        char lowered[64];
        thread_local std::string long_name;
        r.for_each_header([&](std::string_view n, std::string_view v) {
            char* to = lowered;
            if (n.size() > sizeof lowered) [[unlikely]] {
                long_name.resize(n.size());
                to = long_name.data();
            }
            for (std::size_t i = 0; i < n.size(); ++i) to[i] = ascii::lower(n[i]);
            const std::string_view name(to, n.size());
            if (connection_specific(name)) return;
            enc.add({name, v}, block);
        });
    }
}

// Ends a streamed body with its trailer fields (RFC 9113 8.1: a HEADERS frame with
// END_STREAM); false when none of them may be sent.
bool Http2Connection::send_trailers(H2Stream& s) {
    bool any = false;
    for (const auto& [name, value] : *s.trailers) any = any || trailer_field_allowed(name, value);
    if (!any) return false;
    std::string& block = session_.begin_headers();
    hpack::Encoder& enc = session_.encoder();
    enc.begin_block(block);
    std::string lowered;
    for (const auto& [name, value] : *s.trailers) {
        if (!trailer_field_allowed(name, value)) continue;
        lowered.assign(name);
        for (char& c : lowered) c = ascii::lower(c);
        enc.add({lowered, ascii::trim_ows(value)}, block);  // (edge whitespace: RFC 9113 8.2.1)
    }
    session_.end_headers(*s.st, true);
    return true;
}

void Http2Connection::reject_stream(H2Stream& s, Status st) {
    Response r = server_error_response(worker_.options(), st, nullptr);
    respond(s, r);
}

void Http2Connection::reset_stream(H2Stream& s, h2::ErrorCode code) {
    if (s.open()) session_.reset(*s.st, code);  // on_close follows
}

// Puts a stream with body bytes to send in the sending list (flush() pulls from it).
void Http2Connection::want_send(H2Stream& s) {
    if (s.sending || !s.body_pending || !s.open()) return;
    s.sending = true;
    sending_.push_back(&s);
}

// Sends what the windows allow of one stream's body, at most one frame's worth from a source
// or a file per call (the caller loops under the high-water mark).
void Http2Connection::send_body(H2Stream& s) {
    h2::Stream& st = *s.st;
    const std::size_t room = session_.send_window(st);
    if (room == 0) {
        st.blocked = true;
        if (s.stalled_since == 0) s.stalled_since = t_.loop().now_ms();
        return;
    }
    s.stalled_since = 0;
    if (s.ws && ws_link_pull(*s.ws, s, session_, st)) [[unlikely]] {
        return;
    }
    if (s.file) [[unlikely]] {
        thread_local std::string chunk;
        const std::size_t want = std::min<std::size_t>(room, 64 * 1024);
        if (chunk.size() < want) chunk.resize(want);
        const ssize_t n = s.file->read(chunk.data(), want);
        if (n < 0) {
            file_body_failed(info, static_cast<std::int32_t>(s.id));
            throw BodyAbandoned{};
        }
        const bool eof = s.file->done();
        if (eof) s.file.reset();
        s.body_pending = !eof;
        session_.send_data(st, std::string_view(chunk.data(), static_cast<std::size_t>(n)), eof);
        return;
    }
    if (!s.source) {
        const std::string_view rest = std::string_view(s.out_body).substr(s.body_off);
        const std::size_t n = session_.send_data(st, rest, true);
        s.body_off += n;
        if (n == rest.size()) {  // else blocked on a window: on_writable() resumes it
            s.body_pending = false;
            recycle_body(std::move(s.out_body));
            s.out_body = {};
        }
        return;
    }
    if (s.piece_off == s.piece.size()) {
        std::optional<std::string> next = s.source();
        if (s.stream_left >= 0 && (next ? next->size() > static_cast<std::uint64_t>(s.stream_left)
                                        : s.stream_left != 0)) [[unlikely]] {
            // The body does not match the content-length sent (RFC 9113 8.1.1): reset.
            log::error("streamed body for HTTP/2 stream {} {} its announced length", s.id,
                       next ? "went past" : "ended short of");
            body_dropped(s.source);  // (pulled no more, whenever the reset takes effect)
            s.source = nullptr;
            s.body_pending = false;
            throw BodyAbandoned{};
        }
        if (s.stream_left > 0 && next) s.stream_left -= static_cast<std::int64_t>(next->size());
        if (!next) {
            s.source = nullptr;
            s.body_pending = false;
            if (!s.trailers || !send_trailers(s)) session_.send_data(st, {}, true);
            s.trailers.reset();
            return;
        }
        s.piece = std::move(*next);
        s.piece_off = 0;
        if (s.piece.empty()) {
            // A coroutine producer (stream_body) with nothing yet: it wakes the stream.
            const std::uint32_t id = s.id;
            if (body_pending(s.source, [this, id] {
                    if (t_.closed() || lingering_) return;
                    h2::Stream* live = session_.find(id);
                    if (!live || !live->user) return;
                    auto* st2 = static_cast<H2Stream*>(live->user);
                    // Data again: a stall from here on is the client's (send_timeout).
                    st2->producer_wait = false;
                    want_send(*st2);
                    flush();
                })) {
                s.producer_wait = true;
                return;
            }
            return;
        }
    }
    const std::string_view rest = std::string_view(s.piece).substr(s.piece_off);
    s.piece_off += session_.send_data(st, rest, false);
}

// Pulls body bytes from the sending streams, round robin, until the output holds `high`
// bytes or no stream can send.
void Http2Connection::produce(std::size_t high) {
    while (!sending_.empty() && !session_.closed() &&
           session_.output().size() + t_.out.size() < high) {
        const std::size_t before = session_.output().size();
        std::size_t kept = 0;
        for (std::size_t i = 0; i < sending_.size(); ++i) {
            H2Stream* s = sending_[i];
            if (s->open() && s->body_pending && session_.output().size() + t_.out.size() < high) {
                try {
                    send_body(*s);
                } catch (const BodyAbandoned&) {
                    reset_stream(*s, h2::ErrorCode::internal_error);
                } catch (const std::exception& e) {
                    // Headers are gone already: RST_STREAM INTERNAL_ERROR is the honest
                    // signal left.
                    log::error("streamed body for HTTP/2 stream {} failed: {}", s->id, e.what());
                    reset_stream(*s, h2::ErrorCode::internal_error);
                }
            }
            // It stays while it can send at once; a window or a producer brings it back.
            if (s->open() && s->body_pending && !s->producer_wait && !s->st->blocked) {
                sending_[kept++] = s;
            } else {
                s->sending = false;
                if (!s->open() && !s->busy && !s->queued && !s->dispatching) {
                    free_stream(s);  // (no longer `sending`: the list is not searched)
                }
            }
        }
        sending_.resize(kept);
        if (session_.output().size() == before) break;  // nothing could move
    }
}

// Pulls body bytes up to the high-water mark and writes the session's output; reading pauses
// while a client leaves more than that unread.
void Http2Connection::flush() {
    if (t_.closed() || lingering_) return;
    in_flush_ = true;
    struct Done {
        bool& flag;
        ~Done() { flag = false; }
    } done_flushing{in_flush_};
    const std::size_t high = worker_.options().output_high_water;
    for (;;) {
        produce(high);
        std::string& o = session_.output();
        if (o.empty() && t_.out.empty()) break;
        if (t_.out.empty()) {
            // Straight from the session's output; what the socket does not take waits in
            // the transport's buffer.
            iovec v{o.data(), o.size()};
            const ssize_t n = t_.send(&v, 1);
            if (n < 0) {
                close();
                return;
            }
            if (n > 0)
                deadline_ms_ = t_.loop().now_ms() +
                               static_cast<std::uint64_t>(worker_.options().idle_timeout.count());
            const auto sent = static_cast<std::size_t>(n);
            if (sent < o.size()) {
                t_.output();
                t_.out.append(o.data() + sent, o.size() - sent);
                o.clear();
                break;  // the socket is full: on_write_ready continues
            }
            o.clear();
            continue;
        }
        t_.out.append(o);
        o.clear();
        iovec v{t_.out.data(), t_.out.size()};
        const ssize_t n = t_.send(&v, 1);
        if (n < 0) {
            close();
            return;
        }
        t_.out.consume(static_cast<std::size_t>(n));
        if (n > 0)
            deadline_ms_ = t_.loop().now_ms() +
                           static_cast<std::uint64_t>(worker_.options().idle_timeout.count());
        if (!t_.out.empty()) break;
    }
    if (session_.output().capacity() > 64 * 1024 && session_.output().empty()) {
        std::string().swap(session_.output());
    }
    if (!t_.out.empty() && t_.out.size() >= high && !paused_) {
        paused_ = true;
        t_.stop_reading();
    } else if (paused_ && t_.out.size() < high / 2) {
        paused_ = false;  // read again from the loop, not from inside this flush
        t_.read_later([this] { return !paused_; });
    }
    t_.release_output_if_empty();
    if (stream_count_ == 0 && !in_feed_) t_.release_input_if_empty();
    // After GOAWAY (ours or the client's) the connection ends once nothing is in flight.
    const bool done = session_.closed() || (draining_ && stream_count_ == 0) ||
                      (session_.drained() && stream_count_ == 0);
    if (t_.out.empty() && done) linger();
}

void Http2Connection::on_write_ready() { flush(); }

// After the last frame (GOAWAY): stop sending, but keep reading and discarding for
// linger_timeout. Closing with unread input makes the kernel answer with RST, which can
// destroy the GOAWAY before the client reads it; so the client's own close, or the timeout,
// ends the connection.
void Http2Connection::linger() {
    if (t_.closed() || lingering_) return;
    lingering_ = true;
    t_.shutdown_write();
    deadline_ms_ =
        t_.loop().now_ms() + static_cast<std::uint64_t>(worker_.options().linger_timeout.count());
    t_.schedule(deadline_ms_);
    if (!t_.reading()) t_.read_later([] { return true; });
}

void Http2Connection::close() {
    if (t_.closed()) return;
    t_.close();
    t_.release_buffers();
    // Streams with a handler still running stay until it completes (stream_completed frees
    // them) and keep this object in the worker's list meanwhile, so a shutdown waits for
    // them or abandons them at its deadline; the rest go now.
    sending_.clear();
    for (H2Stream* s = streams_; s;) {
        H2Stream* nx = s->next;
        s->st = nullptr;
        s->sending = false;
        if (s->ws) ws_link_stream_closed(*s->ws, true);
        if (!s->busy) free_stream(s);
        s = nx;
    }
    release_if_done();
}

// A closed connection leaves the worker once no handler holds one of its streams.
void Http2Connection::release_if_done() noexcept {
    if (t_.closed() && !streams_ && !released_) {
        released_ = true;
        worker_.connection_closed(this);
    }
}

void Http2Connection::free_stream(H2Stream* s) noexcept {
    if (s->prev)
        s->prev->next = s->next;
    else if (streams_ == s)
        streams_ = s->next;
    if (s->next) s->next->prev = s->prev;
    --stream_count_;
    if (s->st) {
        s->st->user = nullptr;
        s->st = nullptr;
    }
    if (s->sending) {
        sending_.erase(std::find(sending_.begin(), sending_.end(), s));
        s->sending = false;
    }
    if (s->req) worker_.release_request(std::move(s->req));
    spare_streams().give(s);
}

void Http2Connection::arm(std::uint64_t deadline) {
    deadline_ms_ = deadline;
    TimerWheel& w = t_.loop().wheel();
    const std::uint64_t now = t_.loop().now_ms();
    // Checked at least once a second while streams are open (send stalls, slow bodies).
    const std::uint64_t wait = std::min<std::uint64_t>(deadline > now ? deadline - now : 0, 1000);
    w.schedule(t_.timer, now, wait);
}

void Http2Connection::timer_fired(TimerWheel::Entry* e) {
    static_cast<Http2Connection*>(e->owner)->on_timeout();
}

// Once a second: a response that cannot move for send_timeout (the client keeps its window
// shut) and a request body that does not arrive within body_timeout end their stream; a
// connection with no stream for idle_timeout ends with GOAWAY; our SETTINGS must have been
// acknowledged in time.
void Http2Connection::on_timeout() {
    if (t_.closed()) return;
    const ServerOptions& o = worker_.options();
    const std::uint64_t now = t_.loop().now_ms();
    if (lingering_) {
        if (t_.due(deadline_ms_)) close();
        return;
    }
    if (!session_.tick(now)) {
        flush();
        if (!t_.closed()) linger();
        return;
    }
    bool busy = false;
    for (H2Stream* s = streams_; s;) {
        H2Stream* nx = s->next;
        if (!s->open()) {
            s = nx;
            continue;
        }
        busy = true;
        if (s->st && s->st->answered_early && s->st->remote_open()) {
            // Answered before the rest of a small declared body came (h2::Session::end_local
            // lets it in rather than resetting the stream): it gets linger_timeout, then the
            // stream is reset as RFC 9113 8.1 allows, so a client that never sends it holds
            // no stream (and no connection) for ever.
            if (s->answered_ms == 0) s->answered_ms = now;
            if (now - s->answered_ms >= static_cast<std::uint64_t>(o.linger_timeout.count()))
                reset_stream(*s, h2::ErrorCode::no_error);
        } else if (s->responding && s->body_pending && !s->producer_wait) {
            if (s->stalled_since != 0 &&
                now - s->stalled_since >=
                    static_cast<std::uint64_t>(o.http2.send_timeout.count())) {
                reset_stream(*s, h2::ErrorCode::cancel);
            }
        } else if (s->streaming) {
            // The handler waits for body bytes that do not come: read() reports 408.
            if (!s->request_done && s->body_reader.waiting() &&
                now - s->last_data_ms >= static_cast<std::uint64_t>(o.body_timeout.count())) {
                s->body_reader.fail(Status::RequestTimeout);
                s->body_reader.wake();  // (the handler may complete and free nothing: busy)
            }
        } else if (!s->request_done && !s->responding &&
                   now - s->opened_ms >= static_cast<std::uint64_t>(o.body_timeout.count())) {
            reject_stream(*s, Status::RequestTimeout);
        }
        s = nx;
    }
    if (!busy && now >= deadline_ms_) {
        session_.terminate(h2::ErrorCode::no_error, "idle");
        flush();
        if (!t_.closed()) linger();
        return;
    }
    flush();
    if (t_.closed()) return;
    if (busy || now < deadline_ms_) {
        TimerWheel& w = t_.loop().wheel();
        w.schedule(t_.timer, now,
                   std::min<std::uint64_t>(deadline_ms_ > now ? deadline_ms_ - now : 1000, 1000));
    }
}

}  // namespace vela::detail
