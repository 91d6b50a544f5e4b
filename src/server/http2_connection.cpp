#include "http2_connection.hpp"
#include "response_pipeline.hpp"

#include "vela/server/body_pipe.hpp"

#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
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

// One stream: its request as received (fields stored back to back in `raw`, so the Request's
// views stay valid however many arrive), its response while it is being sent, and the
// handler's completion.
struct H2Stream final : ResponseSink {
    struct Field {
        std::uint32_t name, name_len, value, value_len;
    };
    Http2Connection* conn = nullptr;
    std::int32_t id = 0;
    H2Stream* prev = nullptr;
    H2Stream* next = nullptr;
    std::string raw;
    std::vector<Field> fields;  // the regular fields; the pseudo-fields' values are below
    struct Span {
        std::uint32_t off = 0, len = 0;
    };
    Span method, scheme, authority, path;  // in `raw`; len 0: absent
    std::string cookies;                   // RFC 9113 8.2.3: cookie fields joined with "; "
    std::string body;
    std::size_t header_list_size = 0;
    std::unique_ptr<Request> req;
    // The response being sent: a body string (sent from body_off) or a streamed source.
    std::string out_body;
    std::size_t body_off = 0;
    Response::BodySource source;
    std::unique_ptr<FileCursor> file;  // a file body being sent
    std::string piece;
    std::size_t piece_off = 0;
    std::string out_head;  // the response's field names (lowered) and values, kept for nghttp2
    std::uint64_t stalled_since = 0;  // when the response last could not move (0: it moves)
    bool producer_wait = false;       // a coroutine producer has nothing yet (not a stall)
    std::uint64_t opened_ms = 0;
    std::int64_t window_before = 0;  // our send window as a client SETTINGS frame began
    std::coroutine_handle<> work;
    Response* inline_result = nullptr;
    Status early = Status::OK;  // an answer decided while receiving (431, 413)
    bool open = true;           // nghttp2 still knows the stream
    bool queued = false;        // in the ready list
    bool request_done = false;  // END_STREAM received
    bool busy = false;          // an asynchronous handler owns the request
    bool dispatching = false;
    bool completed_inline = false;
    bool responding = false;  // a response was submitted
    bool prebuilt = false;    // the Request is filled already (an upgraded HTTP/1.1 request)

    void complete(Response&& r) override {
        if (dispatching) {
            *inline_result = std::move(r);
            completed_inline = true;
            return;
        }
        if (!conn) {  // its connection is gone (see ~Http2Connection)
            delete this;
            return;
        }
        conn->stream_completed(*this, std::move(r));
    }
    void pending(std::coroutine_handle<> w) override {
        if (!completed_inline) work = w;
    }
    std::string_view at(std::uint32_t off, std::uint32_t len) const {
        return std::string_view(raw).substr(off, len);
    }
    std::string_view at(Span v) const { return at(v.off, v.len); }
    // Where a request pseudo-field's value goes (nghttp2 refuses any other pseudo-field, and
    // an empty value of these, before we see them).
    Span* pseudo(std::string_view name) noexcept {
        if (name == ":path") return &path;
        if (name == ":method") return &method;
        if (name == ":authority") return &authority;
        if (name == ":scheme") return &scheme;
        return nullptr;
    }
    // Makes a finished stream ready for the next one, keeping its buffers' capacity (a
    // steady stream of small requests then allocates nothing here).
    void recycle() noexcept {
        constexpr std::size_t kKeep = 16 * 1024;
        raw.clear();
        fields.clear();
        method = scheme = authority = path = {};
        cookies.clear();
        if (body.capacity() > kKeep) std::string().swap(body);
        body.clear();
        header_list_size = 0;
        std::string().swap(out_body);
        body_off = 0;
        body_dropped(source);  // a producer learns that its stream has ended
        source = nullptr;
        file.reset();
        std::string().swap(piece);
        piece_off = 0;
        if (out_head.capacity() > kKeep) std::string().swap(out_head);
        out_head.clear();
        stalled_since = opened_ms = 0;
        producer_wait = false;
        work = {};
        inline_result = nullptr;
        early = Status::OK;
        open = true;
        queued = request_done = busy = dispatching = completed_inline = responding = prebuilt =
            false;
        prev = next = nullptr;
    }
};

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

// A 32-bit big-endian field of a frame header.
std::uint32_t load_be32(const std::uint8_t* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
    return v;
}

Http2Connection& self(void* user) { return *static_cast<Http2Connection*>(user); }

int cb_begin_headers(nghttp2_session*, const nghttp2_frame* f, void* user) {
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    return self(user).on_begin_headers(f->hd.stream_id);
}

int cb_header(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name,
              std::size_t namelen, const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
              void* user) {
    if (f->hd.type != NGHTTP2_HEADERS) return 0;
    return self(user).on_header(f->hd.stream_id, {reinterpret_cast<const char*>(name), namelen},
                                {reinterpret_cast<const char*>(value), valuelen},
                                f->headers.cat == NGHTTP2_HCAT_HEADERS);
}

int cb_frame_recv(nghttp2_session*, const nghttp2_frame* f, void* user) {
    if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK)) [[unlikely]] {
        // nghttp2 applied the entries in order, each initial window size moving every window.
        for (std::size_t i = 0; i < f->settings.niv; ++i)
            if (f->settings.iv[i].settings_id == NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE)
                if (const int rv = self(user).on_initial_window(f->settings.iv[i].value)) return rv;
        self(user).settings_applied();
    }
    return self(user).on_frame(f->hd.type, f->hd.flags, f->hd.stream_id, f->hd.length);
}

int cb_data(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
            std::size_t len, void* user) {
    return self(user).on_data(id, data, len);
}

int cb_stream_close(nghttp2_session*, std::int32_t id, std::uint32_t error, void* user) {
    return self(user).on_stream_close(id, error);
}

int cb_frame_send(nghttp2_session*, const nghttp2_frame* f, void* user) {
    return self(user).on_frame_sent(f->hd.type, f->hd.flags, f->hd.stream_id);
}

// Thrown out of a body callback once the reason was logged: the stream is reset.
struct BodyAbandoned {};

ssize_t cb_read_body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                     std::uint32_t* flags, nghttp2_data_source* src, void*) {
    auto* s = static_cast<H2Stream*>(src->ptr);
    bool eof = false;
    std::size_t n;
    bool deferred = false;
    try {
        n = s->conn->write_body(*s, buf, length, eof, deferred);
    } catch (const BodyAbandoned&) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // RST_STREAM INTERNAL_ERROR; logged
    } catch (const std::exception& e) {
        // Headers are gone already: RST_STREAM INTERNAL_ERROR is the honest signal left.
        log::error("streamed body for HTTP/2 stream {} failed: {}", s->id, e.what());
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (eof) *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (n == 0 && !eof && deferred) return NGHTTP2_ERR_DEFERRED;  // resumed by the producer
    return static_cast<ssize_t>(n);
}

// nghttp2 allocates and frees a dozen small blocks per request (stream, frames, header copies).
// Its allocator hook gets per-thread free lists by size class instead of malloc: a session
// lives on one loop thread, and a block freed on another thread (at shutdown) simply joins
// that thread's lists. A free block links to the next through its own header, so taking and
// giving back are a few instructions each.
class BlockPool {
  public:
    static constexpr std::size_t kClasses = 8;  // 64 B .. 8 KiB, powers of two
    static constexpr std::size_t kMaxFree = 512;
    ~BlockPool() {
        for (Head* h : free_)
            while (h) std::free(std::exchange(h, h->next));
    }
    void* get(std::size_t size) {
        const std::size_t need = size + kHeader;
        // The smallest class (64 << cls bytes) that holds `need`; kClasses and up: malloc.
        const std::size_t cls =
            need <= 64 ? 0 : static_cast<std::size_t>(std::bit_width(need - 1)) - 6;
        Head* h;
        if (cls < kClasses && free_[cls]) {
            h = free_[cls];
            free_[cls] = h->next;
            --count_[cls];
        } else {
            h = static_cast<Head*>(std::malloc(cls < kClasses ? std::size_t{64} << cls : need));
            if (!h) return nullptr;
        }
        h->cls = cls;
        h->size = size;
        return reinterpret_cast<char*>(h) + kHeader;
    }
    void put(void* p) {
        if (!p) return;
        Head* h = head(p);
        if (h->cls < kClasses && count_[h->cls] < kMaxFree) {
            h->next = free_[h->cls];
            free_[h->cls] = h;
            ++count_[h->cls];
        } else {
            std::free(h);
        }
    }
    void* resize(void* p, std::size_t size) {
        if (!p) return get(size);
        Head* h = head(p);
        if (h->cls < kClasses && size + kHeader <= (std::size_t{64} << h->cls)) {
            h->size = size;
            return p;
        }
        void* q = get(size);
        if (!q) return nullptr;
        std::memcpy(q, p, std::min(size, h->size));
        put(p);
        return q;
    }

  private:
    struct Head {
        std::size_t cls;
        union {
            std::size_t size;  // in use: the size asked for
            Head* next;        // free: the next free block of its class
        };
    };
    static constexpr std::size_t kHeader = 16;  // keeps blocks 16-byte aligned, as malloc's
    static_assert(sizeof(Head) <= kHeader);
    static Head* head(void* p) { return reinterpret_cast<Head*>(static_cast<char*>(p) - kHeader); }
    Head* free_[kClasses] = {};
    std::size_t count_[kClasses] = {};
};

BlockPool& block_pool() {
    thread_local BlockPool pool;
    return pool;
}

nghttp2_mem* pooled_mem() {
    static nghttp2_mem mem{
        nullptr,
        [](std::size_t size, void*) { return block_pool().get(size); },
        [](void* p, void*) { block_pool().put(p); },
        [](std::size_t n, std::size_t size, void*) -> void* {
            if (size && n > SIZE_MAX / size) return nullptr;
            void* p = block_pool().get(n * size);
            if (p) std::memset(p, 0, n * size);
            return p;
        },
        [](void* p, std::size_t size, void*) { return block_pool().resize(p, size); },
    };
    return &mem;
}

// The callbacks are the same for every session: made once per process.
nghttp2_session_callbacks* callbacks() {
    static nghttp2_session_callbacks* cbs = [] {
        nghttp2_session_callbacks* c = nullptr;
        if (nghttp2_session_callbacks_new(&c) != 0) throw std::bad_alloc();
        nghttp2_session_callbacks_set_on_begin_headers_callback(c, cb_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(c, cb_header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(c, cb_frame_recv);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, cb_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(c, cb_stream_close);
        nghttp2_session_callbacks_set_on_frame_send_callback(c, cb_frame_send);
        return c;
    }();
    return cbs;
}

nghttp2_option* session_options() {
    static nghttp2_option* opt = [] {
        nghttp2_option* o = nullptr;
        if (nghttp2_option_new(&o) != 0) throw std::bad_alloc();
        // A client that sends PING/SETTINGS without reading the ACKs: end it, not queue them.
        nghttp2_option_set_max_outbound_ack(o, 1000);
        nghttp2_option_set_max_settings(o, 32);
        // Rapid reset (CVE-2023-44487): at most a burst of 1000 resets, then 33 per second.
        nghttp2_option_set_stream_reset_rate_limit(o, 1000, 33);
        // Closed streams are kept only to place later PRIORITY frames in the RFC 7540
        // dependency tree; without them the tree is still kept for open streams, and PRIORITY
        // frames are still parsed and checked (stream 0, self-dependency, length).
        nghttp2_option_set_no_closed_streams(o, 1);
        return o;
    }();
    return opt;
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

constexpr bool connection_specific(std::string_view lower_name) {
    return lower_name == "connection" || lower_name == "keep-alive" ||
           lower_name == "proxy-connection" || lower_name == "transfer-encoding" ||
           lower_name == "upgrade";
}

}  // namespace

Http2Connection::Http2Connection(ServerWorker& worker, net::Transport&& t,
                                 std::unique_ptr<Request> upgraded, std::string settings,
                                 const ConnectionInfo& info)
    : worker_(worker),
      t_(std::move(t)),
      target_parser_(&worker.options().limits),
      upgrade_settings_(std::move(settings)) {
    this->info = info;
    protocol = ConnectionProtocol::http2;
    t_.attach(*this, this, &Http2Connection::timer_fired);
    if (nghttp2_session_server_new3(&session_, callbacks(), this, session_options(),
                                    pooled_mem()) != 0)
        throw std::bad_alloc();
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
            s->prev = s->next = nullptr;
            continue;
        }
        free_stream(s);
    }
    nghttp2_session_del(session_);
}  // (the transport closes its socket, if still open, and returns the buffers)

void Http2Connection::start() {
    const Http2Options& o = worker_.options().http2;
    const std::array<nghttp2_settings_entry, 4> iv{{
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, o.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, o.stream_window},
        {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, o.max_frame_size},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, o.max_header_list_size},
    }};
    t_.output();
    if (upgraded_) {
        // RFC 7540 3.2: 101, then the server preface; the request becomes stream 1.
        t_.out.append(
            "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n");
        nghttp2_session_upgrade2(
            session_, reinterpret_cast<const std::uint8_t*>(upgrade_settings_.data()),
            upgrade_settings_.size(), upgraded_->req->method() == Method::HEAD, nullptr);
    }
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv.data(), iv.size());
    if (o.connection_window > 65535)
        nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                              static_cast<std::int32_t>(o.connection_window));
    t_.add();
    arm(t_.loop().now_ms() + static_cast<std::uint64_t>(worker_.options().idle_timeout.count()));
    if (H2Stream* s = std::exchange(upgraded_, nullptr)) {
        s->opened_ms = t_.loop().now_ms();
        s->next = streams_;
        if (streams_) streams_->prev = s;
        streams_ = s;
        ++stream_count_;
        nghttp2_session_set_stream_user_data(session_, 1, s);
        max_client_id_ = 1;
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
    if (!t_.closed() && !paused_ && !t_.reading()) t_.read();
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
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                          nullptr, 0);
    flush();
}

void Http2Connection::force_close() {
    // The shutdown deadline passed with handlers suspended: abandon them, as HTTP/1.1 does
    // (destroying the driving coroutine destroys every frame it awaits).
    for (H2Stream* s = streams_; s;) {
        H2Stream* nx = s->next;
        if (s->busy && s->work) {
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
    run_ready();
    if (t_.closed()) return false;
    flush();
    return !t_.closed() && t_.reading();
}

// Hands the buffered bytes to nghttp2 (which calls back into on_header, on_frame, ...), after a
// walk over their frame headers for the RFC 9113 rules nghttp2 1.52 leaves out (check_frame).
// The walk costs a few instructions per frame; a frame that needs the streams' state as of its
// arrival first has the bytes before it processed.
bool Http2Connection::feed() {
    in_feed_ = true;
    // The rest of a SETTINGS frame: our DATA sent since the last read changed the windows.
    if (windows_noted_) [[unlikely]]
        note_windows();
    const auto* p = reinterpret_cast<const std::uint8_t*>(t_.in.data());
    const std::size_t n = t_.in.size();
    std::size_t pos = 0, fed = 0;
    std::uint32_t left = scan_left_;
    bool ok = true;
    for (;;) {
        const std::size_t skip = std::min<std::size_t>(left, n - pos);
        pos += skip;
        left -= static_cast<std::uint32_t>(skip);
        if (pos == n) break;
        const std::uint8_t* head;
        std::size_t start;
        if (scan_have_ == 0 && n - pos >= sizeof scan_head_) [[likely]] {
            head = p + pos;
            start = pos;
            pos += sizeof scan_head_;
        } else {  // a header split between reads: its beginning (if any) was fed already
            start = scan_have_ ? 0 : pos;
            const std::size_t take = std::min<std::size_t>(sizeof scan_head_ - scan_have_, n - pos);
            std::memcpy(scan_head_ + scan_have_, p + pos, take);
            scan_have_ = static_cast<std::uint8_t>(scan_have_ + take);
            pos += take;
            if (scan_have_ < sizeof scan_head_) break;
            scan_have_ = 0;
            head = scan_head_;
        }
        const std::uint32_t word = load_be32(head);  // length (24 bits), type
        left = word >> 8;
        const auto type = static_cast<std::uint8_t>(word);
        if (type == NGHTTP2_HEADERS) {
            // A new stream, the common case. (An even id is nghttp2's PROTOCOL_ERROR.)
            const auto id = static_cast<std::int32_t>(load_be32(head + 5) & 0x7fffffffu);
            if (id > max_client_id_) {
                if (id & 1) max_client_id_ = id;
                continue;
            }
        } else if (type != NGHTTP2_DATA && type != NGHTTP2_CONTINUATION &&
                   type != NGHTTP2_SETTINGS) {
            continue;
        }
        if (!(ok = check_frame(head, p, fed, start))) break;
    }
    scan_left_ = left;
    if (ok && fed < n) ok = deliver(p + fed, n - fed);
    in_feed_ = false;
    t_.in.clear();
    t_.release_input_if_empty();
    if (!ok) {
        flush();
        if (!t_.closed()) linger();
        return false;
    }
    deadline_ms_ =
        t_.loop().now_ms() + static_cast<std::uint64_t>(worker_.options().idle_timeout.count());
    return true;
}

bool Http2Connection::deliver(const std::uint8_t* data, std::size_t len) {
    const ssize_t r = nghttp2_session_mem_recv(session_, data, len);
    if (r >= 0) return true;
    // A connection error: nghttp2 has queued GOAWAY where the protocol asks for one.
    log::debug("HTTP/2 connection error: {}", nghttp2_strerror(static_cast<int>(r)));
    // Some fatal errors (a CONTINUATION flood) queue no GOAWAY; RFC 9113 5.4.1 asks for
    // one. A no-op when nghttp2 queued its own. A flood of unread ACKs gets none: that
    // client is not reading.
    if (r != NGHTTP2_ERR_FLOODED)
        nghttp2_session_terminate_session(session_, r == NGHTTP2_ERR_HEADER_COMP
                                                        ? NGHTTP2_COMPRESSION_ERROR
                                                        : NGHTTP2_PROTOCOL_ERROR);
    return false;
}

bool Http2Connection::connection_error(std::uint32_t error, const char* why) {
    log::debug("HTTP/2 connection error: {}", why);
    nghttp2_session_terminate_session(session_, error);
    return false;
}

// One DATA, CONTINUATION, SETTINGS or HEADERS (not opening a stream) frame header from the
// client, out of line: `start` is where the frame begins in `chunk`, of which
// the first `fed` bytes went to nghttp2. False once the connection is in error.
[[gnu::noinline]] bool Http2Connection::check_frame(const std::uint8_t* head,
                                                    const std::uint8_t* chunk, std::size_t& fed,
                                                    std::size_t start) {
    const std::uint32_t len = load_be32(head) >> 8;
    const std::uint8_t type = head[3];
    const auto id = static_cast<std::int32_t>(load_be32(head + 5) & 0x7fffffffu);
    switch (type) {
        case NGHTTP2_HEADERS:  // feed() let through the streams it opens
            break;
        case NGHTTP2_DATA:
            if (id > max_client_id_) return true;  // an idle stream: nghttp2's PROTOCOL_ERROR
            break;
        case NGHTTP2_CONTINUATION: {
            // RFC 9113 4.2: a frame over the SETTINGS_MAX_FRAME_SIZE we advertised, and a field
            // block frame at that, is a connection error. nghttp2 checks the HEADERS frame but
            // not the CONTINUATION frames after it, nor those of a block it ignores.
            const std::uint32_t limit =
                std::max<std::uint32_t>(worker_.options().http2.max_frame_size, 16384);
            if (len <= limit) return true;
            if (start > fed && !deliver(chunk + fed, start - fed)) return false;
            fed = start;
            return connection_error(NGHTTP2_FRAME_SIZE_ERROR, "CONTINUATION over max frame size");
        }
        case NGHTTP2_SETTINGS:
            // RFC 9113 6.9.2: a new SETTINGS_INITIAL_WINDOW_SIZE that takes a stream's window
            // over 2^31-1 is a connection error; nghttp2 resets that stream only. The windows
            // as the frame begins are kept for on_settings.
            if ((head[4] & NGHTTP2_FLAG_ACK) || max_client_id_ == 0) return true;  // no stream yet
            if (start > fed && !deliver(chunk + fed, start - fed)) return false;
            fed = start;
            note_windows();
            return true;
        default:
            return true;
    }
    // DATA or HEADERS on a stream the client opened before: its state is taken once the
    // frames before this one are processed. After our GOAWAY nghttp2 ignores new streams,
    // which then were never opened: no verdict here.
    if (draining_ || id == 0) return true;
    if (start > fed && !deliver(chunk + fed, start - fed)) return false;
    fed = start;
    if (nghttp2_session_want_read(session_) == 0) return true;            // it ended the connection
    if (nghttp2_session_get_stream_user_data(session_, id)) return true;  // open: nghttp2's rules
    return frame_on_closed_stream(type, id);
}

// RFC 9113 5.1 on a stream that is closed, or that the client skipped (closed implicitly when
// it opened a higher one).
bool Http2Connection::frame_on_closed_stream(std::uint8_t type, std::int32_t id) {
    switch (closed_streams_.find(id)) {
        case ClosedStreams::How::ended:
            // "any frames after receiving a frame with the END_STREAM flag set": connection error.
            return connection_error(NGHTTP2_STREAM_CLOSED, "frame on a stream the client ended");
        case ClosedStreams::How::reset_by_server:
            // "MUST ignore frames that it receives on closed streams after it has sent a
            // RST_STREAM frame": the client may have sent them before ours arrived. nghttp2
            // drops them (DATA still counts against the connection window).
            return true;
        case ClosedStreams::How::reset_by_client:
            break;  // "any frame other than PRIORITY after receiving a RST_STREAM": stream error
        case ClosedStreams::How::unknown:
            // 5.1.1: a HEADERS frame cannot open a stream below one already opened.
            if (type == NGHTTP2_HEADERS)
                return connection_error(NGHTTP2_PROTOCOL_ERROR, "HEADERS on a lower stream id");
            break;  // 6.1: DATA on a stream that is not open: stream error STREAM_CLOSED
    }
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_STREAM_CLOSED);
    if (++control_frames_ > worker_.options().http2.max_control_frames) {
        calm_down(NGHTTP2_ENHANCE_YOUR_CALM);
        return false;
    }
    return true;
}

void Http2Connection::note_windows() {
    windows_noted_ = true;
    initial_window_before_ =
        nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE);
    for (H2Stream* s = streams_; s; s = s->next)
        if (s->open)
            s->window_before = nghttp2_session_get_stream_remote_window_size(session_, s->id);
}

// RFC 9113 6.9.2: one SETTINGS_INITIAL_WINDOW_SIZE of a client SETTINGS frame moves every
// stream's window by its difference to the one before.
int Http2Connection::on_initial_window(std::uint32_t value) {
    if (!windows_noted_) return 0;
    constexpr std::int64_t kMaxWindow = 0x7fffffff;
    const std::int64_t delta = static_cast<std::int64_t>(value) - initial_window_before_;
    initial_window_before_ = value;
    for (H2Stream* s = streams_; s; s = s->next) {
        if (!s->open) continue;
        s->window_before += delta;
        if (s->window_before > kMaxWindow) {
            connection_error(NGHTTP2_FLOW_CONTROL_ERROR,
                             "SETTINGS_INITIAL_WINDOW_SIZE takes a window over 2^31-1");
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
    }
    return 0;
}

int Http2Connection::on_begin_headers(std::int32_t id) {
    if (draining_) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    H2Stream* s = spare_streams().take();
    s->conn = this;
    s->id = id;
    s->opened_ms = t_.loop().now_ms();
    s->next = streams_;
    if (streams_) streams_->prev = s;
    streams_ = s;
    ++stream_count_;
    nghttp2_session_set_stream_user_data(session_, id, s);
    receiving_ = s;
    return 0;
}

int Http2Connection::on_header(std::int32_t id, std::string_view name, std::string_view value,
                               bool trailer) {
    // Header blocks arrive whole and one at a time (RFC 9113 4.3): the stream is the one
    // on_begin_headers opened, unless these are trailers.
    H2Stream* s = receiving_ && receiving_->id == id
                      ? receiving_
                      : static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(session_, id));
    if (!s || trailer) return 0;  // trailers are accepted and dropped
    // RFC 9113 6.5.2: the size of a field is its name and value plus 32.
    s->header_list_size += name.size() + value.size() + 32;
    if (s->header_list_size > worker_.options().http2.max_header_list_size ||
        s->fields.size() >= worker_.options().limits.max_headers) {
        s->early = Status::RequestHeaderFieldsTooLarge;
        return 0;  // keep decoding (HPACK state must stay in step) but store nothing more
    }
    if (s->early != Status::OK) return 0;
    const auto off = static_cast<std::uint32_t>(s->raw.size());
    if (name[0] == ':') {  // (nghttp2 refuses an empty name)
        if (H2Stream::Span* v = s->pseudo(name)) {
            *v = {off, static_cast<std::uint32_t>(value.size())};
            s->raw.append(value);
        }
        return 0;
    }
    if (name == "cookie") {
        if (!s->cookies.empty()) s->cookies += "; ";
        s->cookies += value;
        return 0;
    }
    s->raw.append(name);
    s->raw.append(value);
    s->fields.push_back({off, static_cast<std::uint32_t>(name.size()),
                         off + static_cast<std::uint32_t>(name.size()),
                         static_cast<std::uint32_t>(value.size())});
    return 0;
}

int Http2Connection::on_frame(std::uint8_t type, std::uint8_t flags, std::int32_t id,
                              std::size_t length) {
    const Http2Options& o = worker_.options().http2;
    switch (type) {
        case NGHTTP2_DATA:
            if (length == 0 && !(flags & NGHTTP2_FLAG_END_STREAM)) ++control_frames_;
            break;
        case NGHTTP2_HEADERS:
            break;
        case NGHTTP2_RST_STREAM:  // nghttp2 closes the stream next (on_stream_close)
            reset_by_client_ = id;
            ++control_frames_;
            break;
        default:  // PING, SETTINGS, PRIORITY, WINDOW_UPDATE, GOAWAY, unknown
            ++control_frames_;
            break;
    }
    if (control_frames_ > o.max_control_frames) {
        calm_down(NGHTTP2_ENHANCE_YOUR_CALM);
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if ((type == NGHTTP2_DATA || type == NGHTTP2_HEADERS) && (flags & NGHTTP2_FLAG_END_STREAM)) {
        // A request without a body ends with its header block: that is the stream
        // on_begin_headers opened (no lookup in nghttp2's stream map).
        H2Stream* s =
            receiving_ && receiving_->id == id
                ? receiving_
                : static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(session_, id));
        if (s && !s->request_done) {
            s->request_done = true;
            if (!s->responding) {
                s->queued = true;
                ready_.push_back(s);
            }
        }
    } else if (type == NGHTTP2_HEADERS) {
        auto* s = static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(session_, id));
        // A header list over the limit is answered now, whatever body may follow.
        if (s && s->early != Status::OK && !s->responding) reject_stream(*s, s->early);
    }
    return 0;
}

int Http2Connection::on_data(std::int32_t id, const std::uint8_t* data, std::size_t len) {
    auto* s = static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(session_, id));
    if (!s || s->responding) return 0;
    if (s->body.size() + len > worker_.options().limits.max_body) {
        s->body.clear();
        s->body.shrink_to_fit();
        reject_stream(*s, Status::PayloadTooLarge);
        return 0;
    }
    s->body.append(reinterpret_cast<const char*>(data), len);
    return 0;
}

int Http2Connection::on_stream_close(std::int32_t id, std::uint32_t) {
    auto* s = static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(session_, id));
    closed_streams_.remember(id, s && s->request_done     ? ClosedStreams::How::ended
                                 : id == reset_by_client_ ? ClosedStreams::How::reset_by_client
                                                          : ClosedStreams::How::reset_by_server);
    if (!s) return 0;
    nghttp2_session_set_stream_user_data(session_, id, nullptr);
    s->open = false;
    if (!s->request_done || !s->responding) ++control_frames_;  // reset by the client early
    // A handler still owns it, or run_ready() will meet it: freed there.
    if (!s->busy && !s->queued) free_stream(s);
    return 0;
}

int Http2Connection::on_frame_sent(std::uint8_t type, std::uint8_t flags, std::int32_t id) {
    // RFC 9113 8.1: a response complete before its request (413, 431) ends the stream with
    // RST_STREAM NO_ERROR so the client stops sending the body.
    if ((type == NGHTTP2_DATA || type == NGHTTP2_HEADERS) && (flags & NGHTTP2_FLAG_END_STREAM)) {
        auto* s = static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(session_, id));
        if (s && !s->request_done)
            nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR);
    } else if (type == NGHTTP2_RST_STREAM) [[unlikely]] {
        // A stream refused before it opened (REFUSED_STREAM) has no on_stream_close: its late
        // frames are to be ignored all the same.
        if (!nghttp2_session_get_stream_user_data(session_, id) &&
            closed_streams_.find(id) == ClosedStreams::How::unknown)
            closed_streams_.remember(id, ClosedStreams::How::reset_by_server);
    }
    return 0;
}

// Dispatches every stream whose request ended during the last read, unless the client reset it
// in the meantime (rapid reset costs the server no handler work).
void Http2Connection::run_ready() {
    for (std::size_t i = 0; i < ready_.size() && !t_.closed(); ++i) {
        H2Stream* s = ready_[i];
        s->queued = false;
        if (!s->open) {
            free_stream(s);
            continue;
        }
        dispatch(*s);
    }
    ready_.clear();
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
            nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_PROTOCOL_ERROR);
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
        reject_stream(s, Status::NotImplemented);
        return false;
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
    if (!s.prebuilt && !build_request(s)) return;  // an upgraded request arrives built
    control_frames_ = 0;  // a real request: the control-frame budget starts again
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
    if (t_.closed() || !s.open) {  // reset by the client, or the connection went away
        free_stream(&s);
        release_if_done();
        return;
    }
    respond(s, r);
    if (!in_feed_) flush();
}

// Submits HEADERS (and the body through the data provider). Field names go out in lower case
// (RFC 9113 8.2.1) and HTTP/1.1 connection-specific fields are dropped (8.2.2).
void Http2Connection::respond(H2Stream& s, Response& r) {
    s.responding = true;
    // (A 101 has no place in HTTP/2, RFC 9113 8.6: an upgrade is never run here.)
    PreparedResponse p;
    if (r.has_extra()) [[unlikely]]
        prepare_extra(s.req.get(), r, worker_.options(), p);
    const bool head = s.req && s.req->method() == Method::HEAD;
    const bool streamed = p.streamed;
    const FileBody* file = p.file;
    const int status = wire_status(r.status());
    const bool has_body = status_has_body(status);
    thread_local std::vector<nghttp2_nv> nv;
    nv.clear();
    char status_text[4] = {char('0' + status / 100), char('0' + status / 10 % 10),
                           char('0' + status % 10), 0};
    std::array<char, 24> length_text{};
    auto [length_end, ec] =
        std::to_chars(length_text.data(), length_text.data() + length_text.size(),
                      file ? file->length() : r.body().size());
    (void)ec;
    // nghttp2 copies each name and value it is not told it may keep (and lower-cases the
    // names). Kept: the literals, the static content types, the loop's date buffer (rewritten
    // in place once a second, always 29 bytes), and the handler's fields, copied with one
    // assign into the stream's `out_head` (the names lowered there in place) and
    // walked by the lengths the Response recorded: it lives until the stream is freed, after
    // its HEADERS frame went out or was dropped with the stream. The status and the length (a
    // few bytes on this stack) are copied.
    constexpr std::uint8_t kKeepName = NGHTTP2_NV_FLAG_NO_COPY_NAME;
    constexpr std::uint8_t kKeepBoth = NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;
    auto add = [](std::string_view n, std::string_view v, std::uint8_t flags) {
        nv.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(n.data())),
                      reinterpret_cast<std::uint8_t*>(const_cast<char*>(v.data())), n.size(),
                      v.size(), flags});
    };
    add(":status", std::string_view(status_text, 3), kKeepName);
    add("server", "vela", kKeepBoth);
    add("date", t_.loop().http_date(), kKeepBoth);
    if (!r.builtin_content_type().empty()) add("content-type", r.builtin_content_type(), kKeepBoth);
    if (r.header_count()) {
        const std::string_view block = r.header_block();
        std::string& out = s.out_head;
        out.assign(block.data(), block.size());  // its bytes no longer move
        r.for_each_header([&](std::string_view n, std::string_view v) {
            char* name = out.data() + (n.data() - block.data());
            for (std::size_t i = 0; i < n.size(); ++i) name[i] = ascii::lower(name[i]);
            const std::string_view lowered(name, n.size());
            if (connection_specific(lowered)) return;
            add(lowered, std::string_view(out.data() + (v.data() - block.data()), v.size()),
                kKeepBoth);
        });
    }
    if (has_body && !streamed)
        add("content-length",
            std::string_view(length_text.data(),
                             static_cast<std::size_t>(length_end - length_text.data())),
            kKeepName);

    nghttp2_data_provider prd;
    prd.source.ptr = &s;
    prd.read_callback = cb_read_body;
    const bool body =
        has_body && !head && (streamed || (file && file->length()) || (!file && !r.body().empty()));
    if (body) {
        if (file) [[unlikely]] {
            s.file = std::make_unique<FileCursor>(std::move(*r.file_body()));
            r.clear_file_body();
        } else if (streamed) {
            s.source = r.take_body_source();
        } else {
            s.out_body = std::move(r.mutable_body());
            s.body_off = 0;
        }
    } else {
        recycle_body(std::move(r.mutable_body()));
    }
    if (nghttp2_submit_response(session_, s.id, nv.data(), nv.size(), body ? &prd : nullptr) != 0)
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
    // The request's views are no longer needed: give its storage back early.
    s.raw.clear();
    s.fields.clear();
    s.body.clear();
    if (s.req) worker_.release_request(std::move(s.req));
}

void Http2Connection::reject_stream(H2Stream& s, Status st) {
    Response r = server_error_response(worker_.options(), st, nullptr);
    respond(s, r);
}

std::size_t Http2Connection::write_body(H2Stream& s, std::uint8_t* buf, std::size_t length,
                                        bool& eof, bool& deferred) {
    s.stalled_since = 0;
    s.producer_wait = false;
    if (s.file) [[unlikely]]
        return write_file_body(s, buf, length, eof);
    if (!s.source) {
        const std::size_t n = std::min(length, s.out_body.size() - s.body_off);
        std::memcpy(buf, s.out_body.data() + s.body_off, n);
        s.body_off += n;
        if (s.body_off == s.out_body.size()) {
            eof = true;
            recycle_body(std::move(s.out_body));
            s.out_body = {};
        }
        return n;
    }
    std::size_t n = 0;
    while (n < length) {
        if (s.piece_off == s.piece.size()) {
            std::optional<std::string> next = s.source();
            if (!next) {
                eof = true;
                s.source = nullptr;
                break;
            }
            s.piece = std::move(*next);
            s.piece_off = 0;
            if (s.piece.empty()) {
                // A coroutine producer (stream_body) with nothing yet: it wakes the stream.
                const std::int32_t id = s.id;
                if (body_pending(s.source, [this, id] {
                        if (t_.closed() || lingering_) return;
                        // Data again: a stall from here on is the client's (send_timeout).
                        if (auto* st = static_cast<H2Stream*>(
                                nghttp2_session_get_stream_user_data(session_, id)))
                            st->producer_wait = false;
                        nghttp2_session_resume_data(session_, id);
                        flush();
                    })) {
                    deferred = s.producer_wait = true;
                    break;
                }
                continue;
            }
        }
        const std::size_t k = std::min(length - n, s.piece.size() - s.piece_off);
        std::memcpy(buf + n, s.piece.data() + s.piece_off, k);
        s.piece_off += k;
        n += k;
    }
    return n;
}

// Fills one DATA frame from a file body, so flow control paces the reads and the file is never
// buffered whole. A file that ends early resets the stream (file_body_failed, BodyAbandoned).
std::size_t Http2Connection::write_file_body(H2Stream& s, std::uint8_t* buf, std::size_t length,
                                             bool& eof) {
    const ssize_t n = s.file->read(reinterpret_cast<char*>(buf), length);
    if (n < 0) {
        file_body_failed(info, s.id);
        throw BodyAbandoned{};
    }
    if (s.file->done()) {
        eof = true;
        s.file.reset();
    }
    return static_cast<std::size_t>(n);
}

// Gathers nghttp2's output up to the high-water mark and writes it; reading pauses while a
// client leaves more than that unread.
void Http2Connection::flush() {
    if (t_.closed() || lingering_) return;
    const std::size_t high = worker_.options().output_high_water;
    t_.output();
    for (;;) {
        while (t_.out.size() < high) {
            const std::uint8_t* data = nullptr;
            const ssize_t n = nghttp2_session_mem_send(session_, &data);
            if (n < 0) {
                close();
                return;
            }
            if (n == 0) break;
            t_.out.append(data, static_cast<std::size_t>(n));
        }
        if (t_.out.empty()) break;
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
        if (!t_.out.empty()) break;  // the socket is full: on_write_ready continues
    }
    if (!t_.out.empty() && t_.out.size() >= high && !paused_) {
        paused_ = true;
        t_.stop_reading();
    } else if (paused_ && t_.out.size() < high / 2) {
        paused_ = false;  // read again from the loop, not from inside this flush
        t_.read_later([this] { return !paused_; });
    }
    t_.release_output_if_empty();
    // After GOAWAY (ours or the client's) the connection ends once nothing is in flight.
    const bool done =
        nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
    if (t_.out.empty() && (done || (draining_ && stream_count_ == 0))) linger();
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

// Ends the connection with GOAWAY (a flood or abuse): what is queued is still sent.
void Http2Connection::calm_down(std::uint32_t error) {
    nghttp2_session_terminate_session(session_, error);
}

void Http2Connection::close() {
    if (t_.closed()) return;
    t_.close();
    t_.release_buffers();
    // Streams with a handler still running stay until it completes (stream_completed frees
    // them) and keep this object in the worker's list meanwhile, so a shutdown waits for
    // them or abandons them at its deadline; the rest go now.
    for (H2Stream* s = streams_; s;) {
        H2Stream* nx = s->next;
        s->open = false;
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
    if (receiving_ == s) receiving_ = nullptr;
    if (s->prev)
        s->prev->next = s->next;
    else if (streams_ == s)
        streams_ = s->next;
    if (s->next) s->next->prev = s->prev;
    --stream_count_;
    if (s->open && session_) nghttp2_session_set_stream_user_data(session_, s->id, nullptr);
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
// connection with no stream for idle_timeout ends with GOAWAY.
void Http2Connection::on_timeout() {
    if (t_.closed()) return;
    const ServerOptions& o = worker_.options();
    const std::uint64_t now = t_.loop().now_ms();
    if (lingering_) {
        if (t_.due(deadline_ms_)) close();
        return;
    }
    bool busy = false;
    for (H2Stream* s = streams_; s; s = s->next) {
        if (!s->open) continue;
        busy = true;
        if (s->responding && !s->producer_wait && (s->source || !s->out_body.empty())) {
            if (s->stalled_since == 0) {
                s->stalled_since = now;
            } else if (now - s->stalled_since >=
                       static_cast<std::uint64_t>(o.http2.send_timeout.count())) {
                nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
            }
        } else if (!s->request_done && !s->responding &&
                   now - s->opened_ms >= static_cast<std::uint64_t>(o.body_timeout.count())) {
            reject_stream(*s, Status::RequestTimeout);
        }
    }
    if (!busy && now >= deadline_ms_) {
        nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
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
