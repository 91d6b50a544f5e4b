// Streamed bodies from coroutines (BodyPipe between a producer and a connection) and
// server-sent events.

#include "vela/server/stream.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "vela/base/log.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/server/body_pipe.hpp"
#include "vela/server/stats.hpp"

namespace vela::detail {

namespace {
thread_local const bool* tl_draining = nullptr;
}

void set_loop_draining_flag(const bool* flag) noexcept { tl_draining = flag; }
bool loop_draining() noexcept { return tl_draining && *tl_draining; }

// The chunks waiting for the connection, oldest first. A vector with a read index rather
// than a std::deque: an empty libstdc++ deque still holds its map and one 512-byte node,
// which every idle event stream would pay.
struct ChunkQueue {
    std::vector<std::string> v;
    std::size_t head = 0;

    bool empty() const noexcept { return head == v.size(); }
    void push(std::string_view c) { v.emplace_back(c); }
    std::string pop() {
        std::string c = std::move(v[head++]);
        if (head == v.size()) {
            clear();
        } else if (head >= 8 && head * 2 >= v.size()) {  // never drained: drop the taken
            v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(head));
            head = 0;
        }
        return c;
    }
    // Keeps a small capacity for the next chunks, not what a burst of tiny ones grew.
    void clear() noexcept {
        if (v.capacity() > 16) std::vector<std::string>().swap(v);
        v.clear();
        head = 0;
    }
};

// The queue between a producer coroutine and the connection that sends its bytes. Lives on
// one loop; shared by the producer's side (BodyWriter) and the driver's (PipeSource).
struct BodyPipe : std::enable_shared_from_this<BodyPipe> {
    BodyProducer producer;
    std::size_t high_water = 0;
    ChunkQueue chunks;
    std::size_t bytes = 0;
    bool started = false;
    bool done = false;  // the producer returned
    bool gone = false;  // the connection dropped the body
    std::exception_ptr error;
    UniqueFunction wake;                          // the driver waits for data or the end
    BodyWriter::WriteAwaiter* waiting = nullptr;  // a write() waits for room
    std::unique_ptr<BodyWriter> writer;
    Response::TrailerFields trailers;  // the response's (set_trailers aliases the pipe)
    Loop* loop = nullptr;
    bool wake_queued = false;
    bool resume_queued = false;
    // Heartbeats (SSE): a chunk sent after `heartbeat` without one.
    std::chrono::milliseconds heartbeat{0};
    std::string heartbeat_text;
    std::uint64_t heartbeat_timer = 0;
    std::uint64_t last_write_ms = 0;
    // A stream without a natural end (SSE) ends when the server drains: what is queued goes
    // out, the body ends, later writes fail.
    bool end_on_drain = false;
    bool ended = false;  // the body was ended for the producer (drain)
    // The running producer (its detached driver), listed per thread so a worker can end
    // streams when it drains and destroy producers still suspended when its loop stops.
    std::coroutine_handle<> driver;
    BodyPipe* prev_live = nullptr;
    BodyPipe* next_live = nullptr;

    // Tells the waiting driver, from the loop rather than from inside the producer.
    void notify() {
        if (!wake || wake_queued || !loop) return;
        wake_queued = true;
        loop->defer([self = shared_from_this()] {
            self->wake_queued = false;
            if (UniqueFunction w = std::move(self->wake)) w();
        });
    }

    // Lets a waiting write() go on (room freed, or the client gone).
    void release_writer() {
        if (!waiting || resume_queued || !loop) return;
        resume_queued = true;
        loop->defer([self = shared_from_this()] {
            self->resume_queued = false;
            BodyWriter::WriteAwaiter* a = std::exchange(self->waiting, nullptr);
            if (!a) return;
            a->state = self->gone ? -1 : self->push(a->chunk);
            if (a->state == 0) {
                self->waiting = a;  // still full
                return;
            }
            self->waiting_handle.resume();
        });
    }
    std::coroutine_handle<> waiting_handle;

    int push(std::string_view chunk) {
        if (gone || ended) return -1;
        if (bytes >= high_water && bytes > 0) return 0;
        if (!chunk.empty()) {
            chunks.push(chunk);
            bytes += chunk.size();
            if (loop) last_write_ms = loop->now_ms();
            notify();
        }
        return 1;
    }

    void start() {
        started = true;
        loop = Loop::current();
        if (loop) last_write_ms = loop->now_ms();
        writer = std::make_unique<BodyWriter>(*this);
        Task<void> t;
        try {
            t = producer(*writer);
        } catch (...) {
            finish(std::current_exception());
            return;
        }
        if (heartbeat.count() > 0 && loop) schedule_heartbeat();
        live_add();
        auto d = run_detached(
            std::move(t), [self = shared_from_this()](std::exception_ptr e) { self->finish(e); });
        if (!done) driver = d.handle;
    }

    void finish(std::exception_ptr e);

    void schedule_heartbeat() {
        std::weak_ptr<BodyPipe> weak = weak_from_this();
        heartbeat_timer = loop->call_after(heartbeat, [weak] {
            auto self = weak.lock();
            if (!self || self->done || self->gone) return;
            self->heartbeat_timer = 0;
            const auto idle = self->loop->now_ms() - self->last_write_ms;
            if (idle + 5 >= static_cast<std::uint64_t>(self->heartbeat.count()) && self->bytes == 0)
                self->push(self->heartbeat_text);
            self->schedule_heartbeat();
        });
    }

    // The server drains: an endless stream ends now (after what is queued).
    void end_for_drain() {
        if (!end_on_drain || done || gone || ended) return;
        ended = true;
        if (heartbeat_timer && loop) loop->cancel(heartbeat_timer);
        heartbeat_timer = 0;
        notify();
        release_writer();
    }

    void live_add() noexcept;
    void live_remove() noexcept;

    void drop() noexcept {
        gone = true;
        wake = {};
        chunks.clear();
        bytes = 0;
        if (heartbeat_timer && loop) loop->cancel(heartbeat_timer);
        heartbeat_timer = 0;
        release_writer();
    }
};

// What the driver pulls (a Response::BodySource). Empty string: nothing yet (see
// body_pending); std::nullopt: the end.
struct PipeSource {
    std::shared_ptr<BodyPipe> pipe;
    std::optional<std::string> operator()() const {
        BodyPipe& p = *pipe;
        if (!p.started) p.start();
        if (!p.chunks.empty()) {
            std::string c = p.chunks.pop();
            p.bytes -= c.size();
            if (p.waiting && p.bytes < p.high_water / 2 + 1) p.release_writer();
            return c;
        }
        if (p.ended) return std::nullopt;  // ended by a drain: the producer's writes fail
        if (p.done) {
            if (p.error) std::rethrow_exception(p.error);
            return std::nullopt;
        }
        return std::string();
    }
};

// A source passed through a transform (transform_body): what the drivers ask of the source
// is asked of the inner one.
struct TransformSource {
    struct State {
        Response::BodySource inner;
        std::function<std::string(std::string_view, bool)> f;
        bool ended = false;
    };
    std::shared_ptr<State> st;

    std::optional<std::string> operator()() const {
        State& s = *st;
        while (!s.ended) {
            std::optional<std::string> piece = s.inner();
            if (!piece) {
                s.ended = true;
                std::string last = s.f({}, true);
                if (last.empty()) break;
                return last;
            }
            if (piece->empty()) return std::string();  // a producer with nothing yet
            std::string out = s.f(*piece, false);
            if (!out.empty()) return out;
        }
        return std::nullopt;
    }
};

bool body_pending(Response::BodySource& source, UniqueFunction wake) {
    if (TransformSource* t = source.target<TransformSource>()) [[unlikely]]
        return body_pending(t->st->inner, std::move(wake));
    PipeSource* ps = source.target<PipeSource>();
    if (!ps) return false;
    BodyPipe& p = *ps->pipe;
    if (!p.chunks.empty() || p.done || p.ended) return false;
    p.wake = std::move(wake);
    return true;
}

namespace {
thread_local LoopStats* tl_loop_stats = nullptr;  // metrics on: this server loop's statistics
}  // namespace

LoopStats* current_loop_stats() noexcept { return tl_loop_stats; }
void set_current_loop_stats(LoopStats* s) noexcept { tl_loop_stats = s; }

namespace {
thread_local BodyPipe* tl_live = nullptr;  // this thread's running producers
thread_local std::function<void()> tl_done_hook;
}  // namespace

bool producers_running() noexcept { return tl_live != nullptr; }

void BodyPipe::finish(std::exception_ptr e) {
    live_remove();
    driver = {};
    done = true;
    error = e;
    producer = nullptr;  // its captures go now
    if (heartbeat_timer && loop) loop->cancel(heartbeat_timer);
    heartbeat_timer = 0;
    notify();
    if (tl_done_hook) tl_done_hook();  // a draining worker may be done now
}
void set_producer_done_hook(std::function<void()> hook) { tl_done_hook = std::move(hook); }

void BodyPipe::live_add() noexcept {
    next_live = tl_live;
    if (tl_live) tl_live->prev_live = this;
    tl_live = this;
}

void BodyPipe::live_remove() noexcept {
    if (!driver && !prev_live && tl_live != this) return;  // not listed
    if (prev_live)
        prev_live->next_live = next_live;
    else if (tl_live == this)
        tl_live = next_live;
    if (next_live) next_live->prev_live = prev_live;
    prev_live = next_live = nullptr;
}

void end_streams_for_drain() {
    for (BodyPipe* p = tl_live; p; p = p->next_live) p->end_for_drain();
}

void destroy_suspended_producers() noexcept {
    while (BodyPipe* p = tl_live) {
        std::shared_ptr<BodyPipe> keep = p->shared_from_this();
        p->live_remove();
        p->waiting = nullptr;  // an awaiter in the frame destroyed below
        p->wake = {};
        if (std::coroutine_handle<> h = std::exchange(p->driver, {})) h.destroy();
    }
}

void body_dropped(Response::BodySource& source) noexcept {
    if (!source) return;
    if (TransformSource* t = source.target<TransformSource>()) [[unlikely]] {
        body_dropped(t->st->inner);
        return;
    }
    if (PipeSource* ps = source.target<PipeSource>()) ps->pipe->drop();
}

}  // namespace vela::detail

namespace vela {

using detail::BodyPipe;

Response::BodySource transform_body(Response::BodySource inner,
                                    std::function<std::string(std::string_view, bool)> f) {
    auto st = std::make_shared<detail::TransformSource::State>();
    st->inner = std::move(inner);
    st->f = std::move(f);
    return detail::TransformSource{std::move(st)};
}

bool BodyWriter::WriteAwaiter::await_ready() noexcept {
    state = pipe.push(chunk);
    return state != 0;
}

void BodyWriter::WriteAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
    pipe.waiting = this;
    pipe.waiting_handle = h;
}

bool BodyWriter::closed() const noexcept { return pipe_->gone; }
bool BodyWriter::draining() const noexcept { return detail::loop_draining(); }
std::size_t BodyWriter::queued() const noexcept { return pipe_->bytes; }
void BodyWriter::trailer(std::string_view name, std::string_view value) {
    pipe_->trailers.emplace_back(name, value);
}

namespace {
Response make_stream(Response r, BodyProducer producer, std::size_t high_water,
                     std::chrono::milliseconds heartbeat, std::string heartbeat_text,
                     bool end_on_drain) {
    auto pipe = std::make_shared<BodyPipe>();
    pipe->end_on_drain = end_on_drain;
    pipe->producer = std::move(producer);
    pipe->high_water = high_water ? high_water : 1;
    pipe->heartbeat = heartbeat;
    pipe->heartbeat_text = std::move(heartbeat_text);
    // The list lives in the pipe: no allocation of its own per streamed response.
    r.set_trailers(std::shared_ptr<Response::TrailerFields>(pipe, &pipe->trailers));
    r.set_body_source(detail::PipeSource{std::move(pipe)});
    return r;
}
}  // namespace

Response stream_body(Response r, BodyProducer producer, std::size_t high_water) {
    return make_stream(std::move(r), std::move(producer), high_water, {}, {}, false);
}

// ---- request bodies to files ----------------------------------------------------------------

Task<Status> save_body_to(Request& req, std::string path, std::uint64_t max_bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        log::error("save_body_to: cannot open {}: {}", path, std::strerror(errno));
        co_return Status::InternalServerError;
    }
    Status result = Status::OK;
    std::uint64_t total = 0;
    for (;;) {
        BodyChunk c = co_await req.body_stream().read();
        if (c.error != Status::OK) {
            result = c.error;
            break;
        }
        total += c.data.size();
        if (total > max_bytes) {
            result = Status::PayloadTooLarge;
            break;
        }
        const char* p = c.data.data();
        std::size_t left = c.data.size();
        while (left > 0) {
            const ssize_t n = ::write(fd, p, left);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                log::error("save_body_to: cannot write {}: {}", path, std::strerror(errno));
                result = Status::InternalServerError;
                break;
            }
            p += n;
            left -= static_cast<std::size_t>(n);
        }
        if (result != Status::OK || c.end) break;
    }
    if (::close(fd) != 0 && result == Status::OK) {
        log::error("save_body_to: cannot write {}: {}", path, std::strerror(errno));
        result = Status::InternalServerError;
    }
    if (result != Status::OK) ::unlink(path.c_str());
    co_return result;
}

// ---- server-sent events ---------------------------------------------------------------------

namespace {
// Appends "name: value" lines, one per line of `value` (CR, LF and CRLF all end a line).
void field_lines(std::string& out, std::string_view name, std::string_view value) {
    std::size_t start = 0;
    for (;;) {
        std::size_t end = value.find_first_of("\r\n", start);
        out += name;
        out += ": ";
        out += value.substr(start, end == std::string_view::npos ? end : end - start);
        out += '\n';
        if (end == std::string_view::npos) break;
        start = end + 1;
        if (value[end] == '\r' && start < value.size() && value[start] == '\n') ++start;
    }
}

// A field that must stay on one line: line breaks would start other fields.
std::string_view one_line(std::string_view v) {
    return v.substr(0, std::min(v.find_first_of("\r\n"), v.size()));
}
}  // namespace

Task<bool> SseStream::send(SseEvent e) {
    if (!open()) co_return false;
    buf_.clear();
    if (!e.event.empty()) field_lines(buf_, "event", one_line(e.event));
    if (!e.id.empty()) field_lines(buf_, "id", one_line(e.id));
    if (e.retry) fmt::format_to(std::back_inserter(buf_), "retry: {}\n", e.retry->count());
    field_lines(buf_, "data", e.data);
    buf_ += '\n';
    co_return co_await writer_.write(buf_);
}

Task<bool> SseStream::comment(std::string_view text) {
    if (!open()) co_return false;
    buf_.clear();
    field_lines(buf_, "", text);  // ": text" per line
    buf_ += '\n';
    co_return co_await writer_.write(buf_);
}

Response sse(const Request& req, std::function<Task<void>(SseStream&)> fn, SseOptions o) {
    Response r;
    r.set_content_type("text/event-stream");
    r.add_header("Cache-Control", "no-cache");
    r.add_header("X-Accel-Buffering", "no");  // proxies (nginx) pass events on at once
    std::string last_id(one_line(req.header("Last-Event-ID")));
    std::string first;
    if (o.retry) first = fmt::format("retry: {}\n\n", o.retry->count());
    auto producer = [fn = std::move(fn), last_id = std::move(last_id),
                     first = std::move(first)](BodyWriter& w) -> Task<void> {
        // Counted open while the producer runs (metrics on; the frame may also end destroyed).
        // No member: the statistics are this loop's thread's, found again at the end, so the
        // frame of every idle stream stays as small as before (SseMemory checks it).
        struct Open {
            Open() {
                if (LoopStats* stats = detail::current_loop_stats()) stats->sse_streams.add();
            }
            ~Open() {
                if (LoopStats* stats = detail::current_loop_stats()) stats->sse_streams.sub();
            }
            Open(const Open&) = delete;
            Open& operator=(const Open&) = delete;
        } open;
        if (!first.empty() && !co_await w.write(first)) co_return;
        SseStream s(w, last_id);
        co_await fn(s);
    };
    return make_stream(std::move(r), std::move(producer), 64 * 1024, o.heartbeat, ":\n\n", true);
}

}  // namespace vela
