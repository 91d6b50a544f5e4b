#include "vela/middleware/access_log.hpp"

// vela_middleware may be built without spdlog's usage requirements (vela_base links it privately):
// these are the definitions Debian's spdlog::spdlog target would add.
#ifndef SPDLOG_FMT_EXTERNAL
#define SPDLOG_FMT_EXTERNAL
#endif
#ifndef SPDLOG_COMPILED_LIB
#define SPDLOG_COMPILED_LIB
#endif
#ifndef SPDLOG_SHARED_LIB
#define SPDLOG_SHARED_LIB
#endif

#include <pthread.h>
#include <signal.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "vela/base/hex.hpp"
#include "vela/base/log.hpp"
#include "vela/middleware/request_id.hpp"

namespace vela {

// ---------------------------------------------------------------------------------------------
// Formatting

namespace {

using SteadyClock = std::chrono::steady_clock;
using SystemClock = std::chrono::system_clock;

// The start time, as 8 raw bytes (the key fits std::string's own buffer: no allocation).
constexpr std::string_view kStartAttribute = "vela.access_t0";

// Writes a line into memory reserved beforehand (bound() bytes at most): plain stores, no
// capacity check per character.
struct Writer {
    char* p;

    // Bytes a field of `n` bytes may take once escaped (\u00hh: 6 per byte).
    static constexpr std::size_t kEscapedPerByte = 6;

    void put(char c) noexcept { *p++ = c; }
    void put(std::string_view s) noexcept {
        std::memcpy(p, s.data(), s.size());
        p += s.size();
    }
    void put_uint(std::uint64_t v) noexcept { p = std::to_chars(p, p + 20, v).ptr; }
    void put_hex(unsigned char c) noexcept { p = hex_byte(p, c); }

    // Text formats: what Apache does for %r and %{...}i: '"' and '\' backslashed, bytes
    // outside printable ASCII as \xhh, so a client cannot end a field or start a new line.
    void text(std::string_view s) noexcept {
        for (char ch : s) {
            const auto c = static_cast<unsigned char>(ch);
            if (c >= 0x20 && c <= 0x7e && c != '"' && c != '\\') {
                *p++ = ch;
            } else if (c == '"' || c == '\\') {
                p[0] = '\\';
                p[1] = ch;
                p += 2;
            } else {
                p[0] = '\\';
                p[1] = 'x';
                p += 2;
                put_hex(c);
            }
        }
    }
    void text_or_dash(std::string_view s) noexcept {
        if (s.empty())
            put('-');
        else
            text(s);
    }

    // JSON strings: the escapes of RFC 8259 section 7; bytes above 0x7E as \u00hh so the line
    // is valid JSON (and ASCII) whatever the client sent.
    void json(std::string_view s) noexcept {
        *p++ = '"';
        for (char ch : s) {
            const auto c = static_cast<unsigned char>(ch);
            if (c >= 0x20 && c <= 0x7e && c != '"' && c != '\\') {
                *p++ = ch;
                continue;
            }
            *p++ = '\\';
            switch (c) {
                case '"':
                case '\\':
                    *p++ = ch;
                    break;
                case '\n':
                    *p++ = 'n';
                    break;
                case '\r':
                    *p++ = 'r';
                    break;
                case '\t':
                    *p++ = 't';
                    break;
                default:
                    put("u00");
                    put_hex(c);
            }
        }
        *p++ = '"';
    }
    void json_or_null(std::string_view s) noexcept {
        if (s.empty())
            put("null");
        else
            json(s);
    }
};

std::string_view version_text(int v, char (&buf)[9]) {
    switch (v) {
        case 10:
            return "HTTP/1.0";
        case 11:
            return "HTTP/1.1";
        case 20:
            return "HTTP/2.0";
        default:
            std::memcpy(buf, "HTTP/x.y", 8);
            buf[5] = static_cast<char>('0' + (v / 10) % 10);
            buf[7] = static_cast<char>('0' + v % 10);
            return {buf, 8};
    }
}

// Writes `v` as `width` decimal digits (zero-padded, the high digits dropped).
char* put_digits(char* p, int v, int width) {
    for (int i = width - 1; i >= 0; --i) {
        p[i] = static_cast<char>('0' + v % 10);
        v /= 10;
    }
    return p + width;
}

// The time as text, formatted once per second per thread.
struct TimeText {
    std::int64_t second = INT64_MIN;
    char clf[27] = {};  // "01/Dec/2026:16:12:39 +0000"
    char iso[20] = {};  // "2026-12-01T16:12:39"
};

const TimeText& time_text(std::int64_t second) {
    thread_local TimeText t;
    if (t.second == second) return t;
    static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const auto tt = static_cast<std::time_t>(second);
    std::tm tm{};
    ::gmtime_r(&tt, &tm);
    const int year = std::clamp(tm.tm_year + 1900, 0, 9999);
    char* p = put_digits(t.clf, tm.tm_mday, 2);  // 01/Dec/2026:16:12:39 +0000
    *p++ = '/';
    std::memcpy(p, kMonths[tm.tm_mon % 12], 3);
    p += 3;
    *p++ = '/';
    p = put_digits(p, year, 4);
    *p++ = ':';
    p = put_digits(p, tm.tm_hour, 2);
    *p++ = ':';
    p = put_digits(p, tm.tm_min, 2);
    *p++ = ':';
    p = put_digits(p, tm.tm_sec, 2);
    std::memcpy(p, " +0000", 7);
    p = put_digits(t.iso, year, 4);  // 2026-12-01T16:12:39
    *p++ = '-';
    p = put_digits(p, tm.tm_mon + 1, 2);
    *p++ = '-';
    p = put_digits(p, tm.tm_mday, 2);
    *p++ = 'T';
    p = put_digits(p, tm.tm_hour, 2);
    *p++ = ':';
    p = put_digits(p, tm.tm_min, 2);
    *p++ = ':';
    p = put_digits(p, tm.tm_sec, 2);
    *p = '\0';
    t.second = second;
    return t;
}

void format_text(const AccessLogEntry& e, bool combined, bool extras, Writer& w,
                 std::int64_t second) {
    char vbuf[9];
    w.text_or_dash(e.remote);
    w.put(" - - [");
    w.put(std::string_view(time_text(second).clf, 26));
    w.put("] \"");
    w.text(e.method);
    w.put(' ');
    w.text(e.target);
    w.put(' ');
    w.put(version_text(e.version, vbuf));
    w.put("\" ");
    w.put_uint(static_cast<std::uint64_t>(e.status));
    w.put(' ');
    if (e.bytes && *e.bytes > 0)
        w.put_uint(*e.bytes);
    else
        w.put('-');  // CLF's %b: "-" for no bytes
    if (combined) {
        w.put(" \"");
        w.text_or_dash(e.referer);
        w.put("\" \"");
        w.text_or_dash(e.user_agent);
        w.put('"');
    }
    if (extras) {
        w.put(' ');
        w.text_or_dash(e.request_id);
        w.put(' ');
        w.put_uint(e.latency_us);
    }
}

// `log_members`: the "level" and "logger" members vela::log's JSON lines carry.
void format_json(const AccessLogEntry& e, Writer& w, std::int64_t second, int millis,
                 bool log_members) {
    char vbuf[9];
    w.put("{\"time\":\"");
    w.put(std::string_view(time_text(second).iso, 19));
    w.put('.');
    w.put(static_cast<char>('0' + millis / 100));
    w.put(static_cast<char>('0' + millis / 10 % 10));
    w.put(static_cast<char>('0' + millis % 10));
    w.put(log_members
              ? std::string_view("Z\",\"level\":\"info\",\"logger\":\"vela.access\",\"remote\":")
              : std::string_view("Z\",\"remote\":"));
    w.json_or_null(e.remote);
    w.put(",\"method\":");
    w.json(e.method);
    w.put(",\"target\":");
    w.json(e.target);
    w.put(",\"version\":\"");
    w.put(version_text(e.version, vbuf));
    w.put("\",\"status\":");
    w.put_uint(static_cast<std::uint64_t>(e.status));
    w.put(",\"bytes\":");
    if (e.bytes)
        w.put_uint(*e.bytes);
    else
        w.put("null");
    w.put(",\"latency_us\":");
    w.put_uint(e.latency_us);
    w.put(",\"request_id\":");
    w.json_or_null(e.request_id);
    w.put(",\"user_agent\":");
    w.json_or_null(e.user_agent);
    w.put(",\"referer\":");
    w.json_or_null(e.referer);
    w.put('}');
}

}  // namespace

void format_access_log(const AccessLogEntry& entry, AccessLogFormat format, bool extras,
                       std::string& out) {
    const auto ms =
        std::chrono::floor<std::chrono::milliseconds>(entry.time).time_since_epoch().count();
    const std::int64_t second = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    const int millis = static_cast<int>(ms - second * 1000);
    // The fixed text of the longest format (JSON: about 220 bytes with numbers and the log
    // members) plus every field escaped at its worst.
    const std::size_t fields = entry.remote.size() + entry.method.size() + entry.target.size() +
                               entry.request_id.size() + entry.user_agent.size() +
                               entry.referer.size();
    const std::size_t bound = 320 + Writer::kEscapedPerByte * fields;
    const std::size_t old = out.size();
    out.resize(old + bound);
    Writer w{out.data() + old};
    switch (format) {
        case AccessLogFormat::common:
            format_text(entry, false, extras, w, second);
            break;
        case AccessLogFormat::combined:
            format_text(entry, true, extras, w, second);
            break;
        case AccessLogFormat::json:
            format_json(entry, w, second, millis, false);
            break;
        case AccessLogFormat::automatic:
            if (log::format() == log::Format::json)
                format_json(entry, w, second, millis, true);
            else
                format_text(entry, true, extras, w, second);
            break;
    }
    out.resize(static_cast<std::size_t>(w.p - out.data()));
}

std::optional<std::uint64_t> access_log_bytes(const Request& req, const Response& res) noexcept {
    const auto code = static_cast<int>(res.status());
    if (req.method() == Method::HEAD || code < 200 || code == 204 || code == 304) return 0;
    if (res.streaming()) return std::nullopt;
    if (const FileBody* f = res.file_body()) return f->length();
    return res.body().size();
}

// ---------------------------------------------------------------------------------------------
// The queue and the logging thread

namespace detail {

namespace {

// A bounded multi-producer queue of lines (D. Vyukov's bounded MPMC design, with one
// consumer): each slot has a sequence number saying whose turn it is, so a producer claims a
// slot with one compare-and-swap and never waits; a full queue makes try_push fail. Slots keep
// their string's capacity, so steady-state pushes allocate nothing.
class LineQueue {
  public:
    explicit LineQueue(std::size_t capacity)
        : mask_(std::bit_ceil(std::max<std::size_t>(capacity, 2)) - 1),
          slots_(std::make_unique<Slot[]>(mask_ + 1)) {
        for (std::size_t i = 0; i <= mask_; ++i) slots_[i].seq.store(i, std::memory_order_relaxed);
    }

    std::size_t capacity() const noexcept { return mask_ + 1; }
    /// Claims a slot, lets `fill` write the line into it, publishes it. False when full.
    template <class Fill>
    bool try_push(Fill&& fill) noexcept {
        std::size_t pos = tail_.load(std::memory_order_relaxed);
        Slot* s;
        for (;;) {
            s = &slots_[pos & mask_];
            const std::size_t seq = s->seq.load(std::memory_order_acquire);
            const auto diff = static_cast<std::ptrdiff_t>(seq - pos);
            if (diff == 0) {
                if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
            } else if (diff < 0) {
                return false;
            } else {
                pos = tail_.load(std::memory_order_relaxed);
            }
        }
        try {
            s->line.clear();
            fill(s->line);
        } catch (...) {
            s->line.clear();  // published empty (skipped): a claimed slot must not stall the queue
        }
        s->seq.store(pos + 1, std::memory_order_release);
        return true;
    }
    /// The consumer: true when the next line is published.
    bool ready() const noexcept {
        return slots_[head_ & mask_].seq.load(std::memory_order_acquire) == head_ + 1;
    }
    /// The consumer: swaps the next line into `line` (ready() must be true).
    void pop(std::string& line) noexcept {
        Slot& s = slots_[head_ & mask_];
        s.line.swap(line);
        s.seq.store(head_ + mask_ + 1, std::memory_order_release);
        ++head_;
    }
    /// Lines claimed so far (pushed or being pushed).
    std::size_t claimed() const noexcept { return tail_.load(std::memory_order_acquire); }
    /// The consumer: lines taken so far.
    std::size_t taken() const noexcept { return head_; }

  private:
    struct alignas(64) Slot {
        std::atomic<std::size_t> seq{0};
        std::string line;
    };
    std::size_t mask_;
    std::unique_ptr<Slot[]> slots_;
    alignas(64) std::atomic<std::size_t> tail_{0};
    alignas(64) std::size_t head_ = 0;  // the consumer's alone
};

}  // namespace

class AccessLogState {
  public:
    explicit AccessLogState(AccessLogOptions o);
    ~AccessLogState();
    AccessLogState(const AccessLogState&) = delete;
    AccessLogState& operator=(const AccessLogState&) = delete;

    void push(const AccessLogEntry& e) noexcept;
    void flush();
    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
    std::uint64_t written() const noexcept { return written_.load(std::memory_order_relaxed); }
    AccessLogFormat format() const noexcept { return options_.format; }

  private:
    void run();
    std::size_t drain(std::string& line);
    void write(std::string_view line);
    void flush_destination();
    void report(bool final);
    void wake();

    AccessLogOptions options_;
    std::shared_ptr<spdlog::logger> logger_;  // null when options_.writer is set
    LineQueue queue_;
    std::atomic<std::uint64_t> dropped_{0};
    std::atomic<std::uint64_t> written_{0};
    std::uint64_t reported_drops_ = 0;  // the logging thread's
    SteadyClock::time_point last_report_ = SteadyClock::now();
    std::atomic<bool> sleeping_{false};
    // Both sides of the sleep/wake handshake do one acq_rel RMW on it (instead of seq_cst
    // fences, which ThreadSanitizer does not support): the RMWs are totally ordered, so
    // whichever side comes second sees what the other wrote before its own.
    std::atomic<unsigned> handshake_{0};
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::condition_variable wake_cv_;  // the logging thread waits here when idle
    std::condition_variable done_cv_;  // flush() waits here
    std::size_t done_ = 0;             // lines written and flushed (under mu_)
    int flush_waiters_ = 0;            // under mu_
    bool exited_ = false;              // under mu_: the logging thread has ended
    std::thread thread_;
};

namespace {

// Live logs, flushed when the process exits (a log kept until then loses no line).
struct Registry {
    std::mutex mu;
    std::vector<AccessLogState*> live;
};
void flush_all_at_exit();
Registry& registry() {
    static Registry* r = [] {
        auto* reg = new Registry;  // never destroyed: usable from atexit and static destructors
        std::atexit(flush_all_at_exit);
        return reg;
    }();
    return *r;
}
void flush_all_at_exit() {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    for (AccessLogState* s : r.live) s->flush();
}

// Lines the logging thread lets gather after writing a batch before it looks again: the
// request threads then never need to wake it while traffic flows.
constexpr auto kBatchPause = std::chrono::milliseconds(2);
constexpr auto kIdleTick = std::chrono::milliseconds(1000);

}  // namespace

AccessLogState::AccessLogState(AccessLogOptions o)
    : options_(std::move(o)), queue_(options_.queue_size) {
    if (!options_.writer) {
        std::shared_ptr<spdlog::sinks::sink> sink = options_.sink;
        if (!sink && !options_.path.empty()) {
            try {
                sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
                    options_.path, options_.max_file_size, options_.max_files);
            } catch (const std::exception& e) {
                throw std::runtime_error("access_log: cannot open '" + options_.path +
                                         "': " + e.what());
            }
        }
        if (!sink) sink = std::make_shared<spdlog::sinks::stdout_sink_mt>();
        logger_ = std::make_shared<spdlog::logger>("vela.access", std::move(sink));
        logger_->set_pattern("%v");
        logger_->set_level(spdlog::level::info);
        logger_->flush_on(spdlog::level::off);
    }
    // The thread starts with every signal blocked: the server takes SIGINT/SIGTERM through its
    // loop's signalfd, and blocks them only in run(), after this thread was made; a signal the
    // kernel handed to this thread instead would kill the process without its graceful stop.
    sigset_t all, previous;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &previous);
    try {
        thread_ = std::thread([this] { run(); });
    } catch (...) {
        ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        throw;
    }
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    r.live.push_back(this);
}

AccessLogState::~AccessLogState() {
    {
        Registry& r = registry();
        std::lock_guard lock(r.mu);
        std::erase(r.live, this);
    }
    {
        std::lock_guard lock(mu_);
        stop_.store(true);
    }
    wake_cv_.notify_one();
    thread_.join();
}

void AccessLogState::push(const AccessLogEntry& e) noexcept {
    const bool ok = queue_.try_push(
        [&](std::string& line) { format_access_log(e, options_.format, options_.extras, line); });
    if (!ok) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    // Pairs with the RMW in run(): either the logging thread sees the line before it sleeps,
    // or this thread sees it asleep and wakes it.
    handshake_.fetch_add(1, std::memory_order_acq_rel);
    if (sleeping_.load(std::memory_order_relaxed)) wake();
}

void AccessLogState::wake() {
    if (!sleeping_.exchange(false)) return;
    std::lock_guard lock(mu_);
    wake_cv_.notify_one();
}

void AccessLogState::flush() {
    const std::size_t target = queue_.claimed();
    std::unique_lock lock(mu_);
    ++flush_waiters_;
    sleeping_.store(false);
    wake_cv_.notify_one();
    done_cv_.wait(lock, [&] { return done_ >= target || exited_; });
    --flush_waiters_;
}

void AccessLogState::run() {
    ::pthread_setname_np(::pthread_self(), "vela-access-log");
    std::string line;
    for (;;) {
        const std::size_t n = drain(line);
        if (n) flush_destination();
        {
            std::lock_guard lock(mu_);
            done_ = queue_.taken();
            if (flush_waiters_) done_cv_.notify_all();
        }
        report(false);
        if (stop_.load()) {
            if (!queue_.ready()) break;  // no request thread is left to push: all is written
            continue;
        }
        if (n) {
            std::this_thread::sleep_for(kBatchPause);
            continue;
        }
        std::unique_lock lock(mu_);
        sleeping_.store(true, std::memory_order_relaxed);
        handshake_.fetch_add(1, std::memory_order_acq_rel);
        if (queue_.ready() || stop_.load()) {
            sleeping_.store(false, std::memory_order_relaxed);
            continue;
        }
        if (flush_waiters_) {  // a line is still being written into its slot: look again soon
            sleeping_.store(false, std::memory_order_relaxed);
            lock.unlock();
            std::this_thread::sleep_for(std::chrono::microseconds(100));
            continue;
        }
        wake_cv_.wait_for(lock, kIdleTick, [&] { return !sleeping_.load() || stop_.load(); });
        sleeping_.store(false, std::memory_order_relaxed);
    }
    report(true);
    std::lock_guard lock(mu_);
    exited_ = true;
    done_cv_.notify_all();
}

std::size_t AccessLogState::drain(std::string& line) {
    std::size_t n = 0;
    while (queue_.ready()) {
        queue_.pop(line);
        if (!line.empty()) write(line);
        ++n;
    }
    if (n) written_.fetch_add(n, std::memory_order_relaxed);
    return n;
}

void AccessLogState::write(std::string_view line) {
    if (options_.writer) {
        try {
            options_.writer(line);
        } catch (const std::exception& e) {
            log::error("access log: the writer failed: {}", e.what());
        } catch (...) {
            log::error("access log: the writer failed");
        }
        return;
    }
    // spdlog catches what its sinks throw and reports it through its error handler.
    logger_->log(spdlog::log_clock::time_point{}, spdlog::source_loc{}, spdlog::level::info,
                 spdlog::string_view_t(line.data(), line.size()));
}

void AccessLogState::flush_destination() {
    if (logger_) logger_->flush();
}

void AccessLogState::report(bool final) {
    const auto now = SteadyClock::now();
    if (!final && now - last_report_ < options_.report_interval) return;
    last_report_ = now;
    const std::uint64_t d = dropped();
    if (d == reported_drops_) return;
    log::warn("access log: {} lines dropped (queue of {} full){}; {} in all", d - reported_drops_,
              queue_.capacity(), final ? "" : " since the last report", d);
    reported_drops_ = d;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The middleware

namespace {

void note_start(Request& req, SteadyClock::time_point t) {
    const std::int64_t ns = t.time_since_epoch().count();
    char raw[sizeof ns];
    std::memcpy(raw, &ns, sizeof ns);
    req.set_attribute(kStartAttribute, std::string_view(raw, sizeof raw));
}

std::optional<SteadyClock::time_point> noted_start(const Request& req) {
    std::optional<std::string_view> raw = req.attribute(kStartAttribute);
    if (!raw || raw->size() != sizeof(std::int64_t)) return std::nullopt;
    std::int64_t ns;
    std::memcpy(&ns, raw->data(), sizeof ns);
    return SteadyClock::time_point(SteadyClock::duration(ns));
}

AccessLogEntry entry_for(AccessLogFormat format, const Request& req, int status,
                         std::optional<std::uint64_t> bytes,
                         std::optional<SteadyClock::time_point> start) {
    AccessLogEntry e;
    e.time = SystemClock::now();
    if (start) {
        const auto us =
            std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - *start);
        e.latency_us = static_cast<std::uint64_t>(std::max<std::int64_t>(us.count(), 0));
    }
    e.remote = req.client_ip();
    e.method = req.method_name();
    e.target = req.target();
    e.version = req.version();
    e.status = status;
    e.bytes = bytes;
    e.request_id = request_id(req);
    if (format != AccessLogFormat::common) {  // two header scans the common format skips
        e.user_agent = req.header("User-Agent");
        e.referer = req.header("Referer");
    }
    return e;
}

}  // namespace

AccessLog::AccessLog(AccessLogOptions options) {
    if (options.queue_size > (std::size_t{1} << 24))
        throw std::invalid_argument("access_log: queue_size above 16777216 lines");
    if (options.writer == nullptr && options.sink == nullptr && !options.path.empty()) {
        if (options.max_file_size == 0)
            throw std::invalid_argument("access_log: max_file_size must be above 0");
        if (options.max_files > 200000)
            throw std::invalid_argument("access_log: max_files above 200000");
    }
    if (options.report_interval.count() <= 0)
        throw std::invalid_argument("access_log: report_interval must be positive");
    state_ = std::make_shared<detail::AccessLogState>(std::move(options));
}

void AccessLog::start(Request& req) const { note_start(req, SteadyClock::now()); }

void AccessLog::finish(const Request& req, const Response& res) const {
    state_->push(entry_for(state_->format(), req, static_cast<int>(res.status()),
                           access_log_bytes(req, res), noted_start(req)));
}

Task<Response> AccessLog::around(Request& req, Next next) const {
    const auto t0 = SteadyClock::now();
    std::exception_ptr error;
    try {
        Response res = co_await next();
        state_->push(entry_for(state_->format(), req, static_cast<int>(res.status()),
                               access_log_bytes(req, res), t0));
        co_return res;
    } catch (...) {
        error = std::current_exception();
    }
    // The app turns the exception into a 500 (its body depends on debug_errors: size unknown).
    state_->push(entry_for(state_->format(), req, 500, std::nullopt, t0));
    std::rethrow_exception(error);
}

std::uint64_t AccessLog::dropped() const noexcept { return state_->dropped(); }

std::uint64_t AccessLog::written() const noexcept { return state_->written(); }

void AccessLog::flush() const { state_->flush(); }

AccessLog access_log(AccessLogOptions options) { return AccessLog(std::move(options)); }

}  // namespace vela
