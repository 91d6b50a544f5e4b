// Server-sent events and bodies streamed from coroutines, end to end over HTTP/1.1 and h2c:
// events arrive one by one as the producer writes them, formatted to the letter; a graceful
// stop ends open streams cleanly; a producer is paced by its client (back-pressure) and
// learns when the client has gone; a producer that throws cuts the body; a quiet producer is
// not mistaken for a stalled client.
//
// Real clients (curl -N, with --http2-prior-knowledge for h2) and tests/e2e/h2/stream_probe.py
// (raw HTTP/2 frames) run as child processes under `timeout`; their output is read as it
// arrives, with the time each piece arrived. The producers record what they saw in atomics
// the tests read.

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "client.hpp"
#include "process.hpp"
#include "sound.hpp"
#include "support/http_response.hpp"
#include "vela/vela.hpp"

#ifndef VELA_SOURCE_DIR
#error "tests/CMakeLists.txt defines VELA_SOURCE_DIR for every test binary"
#endif

namespace vela::e2e {
namespace {

constexpr std::size_t kChunk = 64 * 1024;
constexpr std::size_t kBulk = 64 * 1024 * 1024;
constexpr std::size_t kHighWater = 256 * 1024;  // stream_body's default

const std::string kStreamProbe = std::string(VELA_SOURCE_DIR) + "/tests/e2e/h2/stream_probe.py";

// Body byte i of the bulk route: period 251, so a lost, repeated or reordered chunk (64 KiB)
// shows. stream_probe.py checks the same pattern.
char body_byte(std::size_t i) { return static_cast<char>('a' + (i % 251) % 26); }

// The bytes of every chunk, as views into one string: chunk k starts at (k * kChunk) % 251.
const std::string& pattern_source() {
    static const std::string s = [] {
        std::string p(kChunk + 251, '\0');
        for (std::size_t i = 0; i < p.size(); ++i) p[i] = body_byte(i);
        return p;
    }();
    return s;
}

std::string_view chunk_at(std::size_t offset, std::size_t n = kChunk) {
    return std::string_view(pattern_source()).substr(offset % 251, n);
}

// Index of the first byte that breaks the pattern, or npos.
std::size_t pattern_mismatch(std::string_view body) {
    for (std::size_t i = 0; i < body.size(); ++i)
        if (body[i] != body_byte(i)) return i;
    return std::string_view::npos;
}

// The Debian python3 carries python3-h2 and python3-hpack; one earlier on PATH may not.
const std::string& python() {
    static const std::string py =
        ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    return py;
}
bool have_probe() { return succeeds(python() + " -c 'import hpack'"); }

#define REQUIRE_PROBE() \
    if (!have_probe()) GTEST_SKIP() << "python3 with python3-hpack (python3-h2) not installed"
#define REQUIRE_CURL() \
    if (!have_curl_h2()) GTEST_SKIP() << "curl with HTTP/2 support not installed"

// A child process (a shell command) whose stdout is read as it comes; each read keeps the
// time it arrived, so a test can tell when a given byte reached the client.
class Child {
  public:
    explicit Child(const std::string& cmd)
        : t0_(SteadyClock::now()), p_(::popen(cmd.c_str(), "r")) {}
    ~Child() {
        if (p_) ::pclose(p_);
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    bool ok() const noexcept { return p_ != nullptr; }
    const std::string& out() const noexcept { return out_; }

    /// Reads until `needle` is in out(); false if the output ends or `within` passes first.
    bool read_until(std::string_view needle, Ms within = Ms{10000}) {
        const auto deadline = SteadyClock::now() + within;
        while (out_.find(needle) == std::string::npos) {
            if (eof_ || SteadyClock::now() >= deadline) return false;
            read_some(deadline);
        }
        return true;
    }
    /// Reads to the end of the output and returns the exit status (-1: killed, no child).
    int finish() {
        if (!p_) return -1;
        while (!eof_) read_some(SteadyClock::now() + Ms{60000});
        const int st = ::pclose(std::exchange(p_, nullptr));
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    /// Milliseconds from the start to the read that brought byte `offset`; -1 if none did.
    long long arrived_ms(std::size_t offset) const {
        for (const auto& [end, ms] : arrivals_)
            if (offset < end) return ms;
        return -1;
    }
    /// The "key=value" lines of the output.
    std::map<std::string, std::string> kv() const {
        std::map<std::string, std::string> m;
        std::size_t pos = 0;
        while (pos < out_.size()) {
            std::size_t eol = std::min(out_.find('\n', pos), out_.size());
            const std::string line = out_.substr(pos, eol - pos);
            if (const std::size_t eq = line.find('='); eq != std::string::npos)
                m.emplace(line.substr(0, eq), line.substr(eq + 1));
            pos = eol + 1;
        }
        return m;
    }

  private:
    void read_some(SteadyClock::time_point deadline) {
        if (!p_) {
            eof_ = true;
            return;
        }
        const auto left = std::chrono::duration_cast<Ms>(deadline - SteadyClock::now()).count();
        pollfd pf{::fileno(p_), POLLIN, 0};
        if (::poll(&pf, 1, static_cast<int>(std::max<long long>(left, 0))) <= 0) return;
        char buf[64 * 1024];
        const ssize_t n = ::read(pf.fd, buf, sizeof buf);
        if (n <= 0) {
            eof_ = true;
            return;
        }
        out_.append(buf, static_cast<std::size_t>(n));
        arrivals_.emplace_back(out_.size(), ms_since(t0_));
    }

    SteadyClock::time_point t0_;
    FILE* p_;
    std::string out_;
    std::vector<std::pair<std::size_t, long long>> arrivals_;
    bool eof_ = false;
};

// A file the test creates to let a waiting stream_probe.py go on.
class GoFile {
  public:
    GoFile()
        : path_(::testing::TempDir() + "vela_sse_go_" + std::to_string(::getpid()) + "_" +
                std::to_string(counter_++)) {
        std::remove(path_.c_str());
    }
    ~GoFile() { std::remove(path_.c_str()); }
    const std::string& path() const noexcept { return path_; }
    void go() const { std::fclose(std::fopen(path_.c_str(), "w")); }

  private:
    static inline int counter_ = 0;
    std::string path_;
};

std::string curl_cmd(std::uint16_t port, std::string_view mode, std::string_view path,
                     std::string_view args = "-s -N -i") {
    return "timeout 20 curl " + std::string(args) + " " + std::string(mode) +
           " 'http://127.0.0.1:" + std::to_string(port) + std::string(path) + "'";
}

std::string probe_cmd(std::uint16_t port, std::string_view scenario, std::string_view args) {
    return "timeout 40 " + python() + " " + kStreamProbe + " " + std::to_string(port) + " " +
           std::string(scenario) + " " + std::string(args) + " 2>&1";
}

// The HTTP/1.1 and HTTP/2 (prior knowledge) curl modes every SSE test runs in.
const std::vector<std::string> kModes = {"--http1.1", "--http2-prior-knowledge"};

// Reads from `fd` into `buf` until `done(buf)` or EOF or `within` passes; false unless done.
template <class Done>
bool recv_until(int fd, std::string& buf, Done done, Ms within = Ms{10000}) {
    const auto deadline = SteadyClock::now() + within;
    char tmp[64 * 1024];
    while (!done(buf)) {
        const auto left = std::chrono::duration_cast<Ms>(deadline - SteadyClock::now()).count();
        pollfd pf{fd, POLLIN, 0};
        if (left <= 0 || ::poll(&pf, 1, static_cast<int>(left)) <= 0) return false;
        const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
        if (n <= 0) return done(buf);
        buf.append(tmp, static_cast<std::size_t>(n));
    }
    return true;
}

auto contains(std::string_view needle) {
    return [needle](const std::string& b) { return b.find(needle) != std::string::npos; };
}

// Waits until `counter` stops moving for `still` (the producer is suspended); its value.
int settled(const std::atomic<int>& counter, Ms still = Ms{300}, Ms within = Ms{10000}) {
    const auto deadline = SteadyClock::now() + within;
    int last = counter.load();
    auto since = SteadyClock::now();
    while (SteadyClock::now() < deadline) {
        std::this_thread::sleep_for(Ms{20});
        const int now = counter.load();
        if (now != last) {
            last = now;
            since = SteadyClock::now();
        } else if (SteadyClock::now() - since >= still) {
            break;
        }
    }
    return last;
}

// Waits up to `within` for `flag`.
bool eventually(const std::atomic<bool>& flag, Ms within = Ms{5000}) {
    const auto deadline = SteadyClock::now() + within;
    while (!flag.load() && SteadyClock::now() < deadline) std::this_thread::sleep_for(Ms{5});
    return flag.load();
}

// What the producers saw, read by the tests.
struct Seen {
    std::atomic<int> writes{0};              // writes that returned true
    std::atomic<std::size_t> max_queued{0};  // BodyWriter::queued() after each write
    std::atomic<bool> write_failed{false};   // a write returned false ...
    std::atomic<bool> closed_then{false};    // ... and closed() was true then
    std::atomic<bool> returned{false};       // the producer returned
};

class StreamRoutes : public ::testing::Test {
  protected:
    void start(const std::function<void(ServerOptions&)>& tweak = {}) {
        quick_options(app.options());
        app.options().shutdown_timeout = Ms{8000};
        if (tweak) tweak(app.options());
        add_basic_routes(app);
        add_sse_routes();
        add_stream_routes();
        start_app(app);
        port = app.port();
    }

    void add_sse_routes() {
        app.get("/sse/ticks", [](Request& req) {  // 4 events, 250 ms apart
            return sse(req, [](SseStream& s) -> Task<void> {
                for (int i = 0; i < 4; ++i) {
                    if (i) co_await vela::sleep(Ms{250});
                    const std::string n = std::to_string(i);
                    if (!co_await s.send({.data = "tick " + n, .id = n})) co_return;
                }
            });
        });
        app.get("/sse/format", [](Request& req) {
            return sse(
                req,
                [](SseStream& s) -> Task<void> {
                    co_await s.send("last=" + std::string(s.last_event_id()));
                    co_await s.send({.data = "a\rb\nc\r\nd", .event = "update\nevil: 1"});
                    co_await s.send({.data = "x", .id = "7", .retry = Ms{2500}});
                    co_await s.send("e\n");
                    co_await s.comment("note");
                },
                SseOptions{.heartbeat = Ms{0}, .retry = Ms{1500}});
        });
        app.get("/sse/quiet", [](Request& req) {  // heartbeats fill a 600 ms pause
            return sse(
                req,
                [](SseStream& s) -> Task<void> {
                    co_await s.send("start");
                    co_await vela::sleep(Ms{600});
                    co_await s.send("end");
                },
                SseOptions{.heartbeat = Ms{100}});
        });
        app.get("/sse/forever", [this](Request& req) {  // ends when the server drains
            return sse(req, [this](SseStream& s) -> Task<void> {
                while (s.open()) {
                    if (!co_await s.send("tick")) break;
                    co_await vela::sleep(Ms{50});
                }
                sse_returned.fetch_add(1);
            });
        });
        // A producer that does not look at open() for 4 s, past a short shutdown_timeout.
        app.get("/sse/sleepy", [this](Request& req) {
            return sse(req, [this](SseStream& s) -> Task<void> {
                co_await s.send("hello");
                co_await vela::sleep(Ms{4000});
                sse_returned.fetch_add(1);
            });
        });
    }

    void add_stream_routes() {
        app.get("/bulk", [this](Request&) {  // 64 MiB of the pattern in 64 KiB writes
            return stream_body(Response(), [this](BodyWriter& w) -> Task<void> {
                for (std::size_t off = 0; off < kBulk; off += kChunk) {
                    if (!co_await w.write(chunk_at(off))) break;
                    note_write(w);
                }
                seen.returned = true;
            });
        });
        app.get("/endless", [this](Request&) {  // 16 KiB every 5 ms until the client goes
            return stream_body(Response(), [this](BodyWriter& w) -> Task<void> {
                for (std::size_t off = 0;; off += 16 * 1024) {
                    if (!co_await w.write(chunk_at(off, 16 * 1024))) {
                        seen.closed_then = w.closed();
                        seen.write_failed = true;
                        break;
                    }
                    note_write(w);
                    co_await vela::sleep(Ms{5});
                }
                seen.returned = true;
            });
        });
        app.get("/throws", [](Request&) {
            return stream_body(Response(), [](BodyWriter& w) -> Task<void> {
                co_await w.write("part1");
                co_await w.write("part2");
                co_await vela::sleep(Ms{20});
                throw std::runtime_error("producer failed");
            });
        });
        app.get("/quiet", [](Request&) {  // silent far longer than send_timeout
            return stream_body(Response(), [](BodyWriter& w) -> Task<void> {
                co_await w.write("before");
                co_await vela::sleep(Ms{2500});
                co_await w.write("after");
            });
        });
    }

    void note_write(const BodyWriter& w) {
        seen.writes.fetch_add(1);
        std::size_t q = w.queued(), m = seen.max_queued.load();
        while (q > m && !seen.max_queued.compare_exchange_weak(m, q)) {
        }
    }

    // The producer is suspended with at most the high-water mark (plus the write that
    // crossed it) queued, far from the end of the body.
    void expect_suspended_by_back_pressure() {
        const int stalled = settled(seen.writes);
        std::this_thread::sleep_for(Ms{300});
        EXPECT_EQ(seen.writes.load(), stalled) << "the producer kept writing";
        EXPECT_LT(static_cast<std::size_t>(stalled) * kChunk, kBulk / 4);
        EXPECT_FALSE(seen.returned.load());
        EXPECT_LE(seen.max_queued.load(), kHighWater + kChunk);
    }

    // Within a bounded time of the client going, a write returns false with closed() true,
    // and the producer returns.
    void expect_producer_learns_the_client_went() {
        const auto t0 = SteadyClock::now();
        EXPECT_TRUE(eventually(seen.returned)) << "writes so far: " << seen.writes.load();
        EXPECT_LT(ms_since(t0), 2000);
        EXPECT_TRUE(seen.write_failed.load());
        EXPECT_TRUE(seen.closed_then.load());
    }

    App app;
    std::uint16_t port = 0;
    Seen seen;
    std::atomic<int> sse_returned{0};
};

class SseE2e : public StreamRoutes {};
class StreamBodyE2e : public StreamRoutes {};

// ---- 1. events as they are written, formatted exactly ------------------------------------

TEST_F(SseE2e, EventsArriveOneByOneWhileTheProducerSleeps) {
    REQUIRE_CURL();
    start();
    for (const std::string& mode : kModes) {
        SCOPED_TRACE(mode);
        Child curl(curl_cmd(port, mode, "/sse/ticks"));
        ASSERT_TRUE(curl.ok());
        ASSERT_EQ(curl.finish(), 0) << curl.out();
        std::vector<long long> at;
        for (int i = 0; i < 4; ++i) {
            const std::string event =
                "id: " + std::to_string(i) + "\ndata: tick " + std::to_string(i) + "\n\n";
            const std::size_t pos = curl.out().find(event);
            ASSERT_NE(pos, std::string::npos) << curl.out();
            at.push_back(curl.arrived_ms(pos + event.size() - 1));
        }
        // The producer sleeps 750 ms in all: buffered events would arrive together.
        EXPECT_GE(at[3] - at[0], 600) << "first at " << at[0] << " ms, last at " << at[3];
        for (int i = 1; i < 4; ++i) EXPECT_GE(at[i] - at[i - 1], 150) << "event " << i;
    }
}

TEST_F(SseE2e, FieldsAreFormattedExactlyAndLastEventIdReachesTheHandler) {
    REQUIRE_CURL();
    start();
    const std::string expected =
        "retry: 1500\n\n"
        "data: last=41\n\n"
        "event: update\ndata: a\ndata: b\ndata: c\ndata: d\n\n"  // CR, LF, CRLF each split
        "id: 7\nretry: 2500\ndata: x\n\n"
        "data: e\ndata: \n\n"  // a trailing line break survives the round trip
        ": note\n\n";
    for (const std::string& mode : kModes) {
        SCOPED_TRACE(mode);
        Child curl(curl_cmd(port, mode, "/sse/format", "-s -N -i -H 'Last-Event-ID: 41'"));
        ASSERT_EQ(curl.finish(), 0) << curl.out();
        const auto [head, body] = test::split_head(curl.out());
        EXPECT_TRUE(head.starts_with(mode == "--http1.1" ? "HTTP/1.1 200" : "HTTP/2 200")) << head;
        EXPECT_TRUE(icontains(head, "\ncontent-type: text/event-stream")) << head;
        EXPECT_TRUE(icontains(head, "\ncache-control: no-cache\r\n")) << head;
        EXPECT_EQ(body, expected);
    }
}

TEST_F(SseE2e, HeartbeatCommentsFillAQuietStream) {
    REQUIRE_CURL();
    start();
    for (const std::string& mode : kModes) {
        SCOPED_TRACE(mode);
        Child curl(curl_cmd(port, mode, "/sse/quiet", "-s -N"));
        ASSERT_TRUE(curl.read_until("data: start\n\n"));
        ASSERT_TRUE(curl.read_until(":\n\n", Ms{2000})) << "no heartbeat: " << curl.out();
        const long long first_beat = curl.arrived_ms(curl.out().find(":\n\n"));
        ASSERT_EQ(curl.finish(), 0) << curl.out();
        const std::string& out = curl.out();
        // 600 ms quiet with a 100 ms heartbeat: several comments, all between the events.
        std::size_t beats = 0;
        for (std::size_t p = 0; (p = out.find(":\n\n", p)) != std::string::npos; p += 3) ++beats;
        EXPECT_GE(beats, 3u) << out;
        EXPECT_LE(beats, 7u) << out;
        EXPECT_TRUE(out.starts_with("data: start\n\n:\n\n")) << out;
        EXPECT_TRUE(out.ends_with(":\n\ndata: end\n\n")) << out;
        EXPECT_LT(first_beat, curl.arrived_ms(out.find("data: end"))) << out;
    }
}

// ---- 2. graceful shutdown -----------------------------------------------------------------

TEST_F(SseE2e, GracefulStopEndsOpenStreamsCleanlyOnBothProtocols) {
    REQUIRE_PROBE();
    start();
    Client h1 = Client::tcp(port);
    ASSERT_TRUE(h1.send(get_request("/sse/forever")));
    std::string raw;
    ASSERT_TRUE(recv_until(h1.fd(), raw, contains("data: tick\n\n")));
    Child h2(probe_cmd(port, "drain", "/sse/forever"));
    ASSERT_TRUE(h2.read_until("ready\n")) << h2.out();

    const auto t0 = SteadyClock::now();
    app.stop();
    // HTTP/1.1: the chunked body ends with its last chunk, then the connection closes.
    ASSERT_TRUE(recv_until(h1.fd(), raw, [](const std::string& b) {
        return b.ends_with("0\r\n\r\n");
    })) << raw.substr(raw.size() > 200 ? raw.size() - 200 : 0);
    EXPECT_EQ(app.wait(), 0);
    const long long stop_ms = ms_since(t0);
    HttpResponse r;
    std::size_t used = 0;
    std::string why;
    ASSERT_EQ(parse_response(raw, false, false, r, used, why), ParseStatus::complete) << why;
    EXPECT_TRUE(r.chunked);
    EXPECT_TRUE(r.body.starts_with("data: tick\n\n"));
    // HTTP/2: END_STREAM, no RST_STREAM, then GOAWAY NO_ERROR.
    h2.finish();
    auto kv = h2.kv();
    EXPECT_EQ(kv["end_stream"], "1") << h2.out();
    EXPECT_EQ(kv["rst"], "none") << h2.out();
    EXPECT_EQ(kv["goaway"], "0") << h2.out();
    EXPECT_EQ(kv["status"], "200") << h2.out();
    // Both producers returned, and the stop took nothing like shutdown_timeout (8 s).
    EXPECT_EQ(sse_returned.load(), 2);
    EXPECT_LT(stop_ms, 2000);
}

// A producer that does not look at open() while the server drains (it sleeps, or waits for
// its next event) should still see its stream end cleanly and quickly.
TEST_F(SseE2e, GracefulStopWithAProducerAsleepPastTheDeadline) {
    start([](ServerOptions& o) { o.shutdown_timeout = Ms{1000}; });
    Client h1 = Client::tcp(port);
    ASSERT_TRUE(h1.send(get_request("/sse/sleepy")));
    std::string raw;
    ASSERT_TRUE(recv_until(h1.fd(), raw, contains("data: hello\n\n")));
    const auto t0 = SteadyClock::now();
    app.stop();
    recv_until(h1.fd(), raw, [](const std::string& b) { return b.ends_with("0\r\n\r\n"); });
    const long long end_ms = ms_since(t0);
    // The client sees its stream end at once, cleanly.
    EXPECT_TRUE(raw.ends_with("0\r\n\r\n")) << "cut after " << end_ms << " ms";
    EXPECT_LT(end_ms, 900);
    // The producer still sleeps: the worker waits for it until the deadline, then destroys
    // it (no leak under LeakSanitizer; it never returns).
    EXPECT_EQ(app.wait(), 0);
    EXPECT_LT(ms_since(t0), 3000);
    EXPECT_EQ(sse_returned.load(), 0);
}

// ---- 3. back-pressure ---------------------------------------------------------------------

TEST_F(StreamBodyE2e, Http11ProducerWaitsForASlowReaderThenEverythingArrives) {
    start();
    Client c(connect_loopback(port, 4096), Ms{30000});
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(get_request("/bulk")));
    std::string raw;
    ASSERT_TRUE(recv_until(c.fd(), raw, contains("\r\n\r\n")));
    expect_suspended_by_back_pressure();
    // Read it all now (the window can grow up to 64 KiB: the scale was fixed at connect).
    int big = 1 << 20;
    ::setsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    raw.reserve(kBulk + kBulk / 64);
    ASSERT_TRUE(recv_until(
        c.fd(), raw, [](const std::string& b) { return b.ends_with("\r\n0\r\n\r\n"); }, Ms{30000}));
    HttpResponse r;
    std::size_t used = 0;
    std::string why;
    ASSERT_EQ(parse_response(raw, false, false, r, used, why), ParseStatus::complete) << why;
    EXPECT_EQ(r.body.size(), kBulk);
    EXPECT_EQ(pattern_mismatch(r.body), std::string_view::npos);
    EXPECT_TRUE(eventually(seen.returned));
    EXPECT_LE(seen.max_queued.load(), kHighWater + kChunk);
}

TEST_F(StreamBodyE2e, Http2ProducerWaitsForAShutWindowThenEverythingArrives) {
    REQUIRE_PROBE();
    start();
    GoFile go;
    Child probe(probe_cmd(port, "window", "/bulk 16384 " + go.path()));
    ASSERT_TRUE(probe.read_until("ready\n")) << probe.out();
    expect_suspended_by_back_pressure();
    go.go();
    ASSERT_EQ(probe.finish(), 0) << probe.out();
    auto kv = probe.kv();
    EXPECT_EQ(kv["before_go"], "16384") << probe.out();
    EXPECT_EQ(kv["body_len"], std::to_string(kBulk)) << probe.out();
    EXPECT_EQ(kv["pattern_ok"], "1") << probe.out();
    EXPECT_EQ(kv["end_stream"], "1") << probe.out();
    EXPECT_TRUE(eventually(seen.returned));
}

TEST_F(StreamBodyE2e, Http2BigBodyArrivesIntactWithCurl) {
    REQUIRE_CURL();
    start();
    Child curl(curl_cmd(port, "--http2-prior-knowledge", "/bulk", "-s"));
    ASSERT_EQ(curl.finish(), 0);
    EXPECT_EQ(curl.out().size(), kBulk);
    EXPECT_EQ(pattern_mismatch(curl.out()), std::string_view::npos);
    EXPECT_LE(seen.max_queued.load(), kHighWater + kChunk);
}

// ---- 4. the client goes ------------------------------------------------------------------

TEST_F(StreamBodyE2e, Http11ClientGoneMakesTheNextWriteFailAndTheProducerReturn) {
    start();
    Client c = Client::tcp(port);
    ASSERT_TRUE(c.send(get_request("/endless")));
    std::string raw;
    ASSERT_TRUE(recv_until(c.fd(), raw, [](const std::string& b) { return b.size() > 64 * 1024; }));
    c.close();
    expect_producer_learns_the_client_went();
    expect_server_sound(app);
}

TEST_F(StreamBodyE2e, Http2ResetStreamMakesTheNextWriteFailAndTheConnectionLives) {
    REQUIRE_PROBE();
    start();
    GoFile go;
    Child probe(probe_cmd(port, "reset", "/endless 65536 " + go.path()));
    ASSERT_TRUE(probe.read_until("ready\n")) << probe.out();
    expect_producer_learns_the_client_went();
    go.go();
    ASSERT_EQ(probe.finish(), 0) << probe.out();
    EXPECT_EQ(probe.kv()["second_status"], "200") << probe.out();
}

// ---- 5. the producer throws --------------------------------------------------------------

TEST_F(StreamBodyE2e, ProducerThatThrowsCutsTheBodyAndTheServerStaysSound) {
    REQUIRE_PROBE();
    REQUIRE_CURL();
    start();
    // HTTP/1.1: no last chunk, the connection closes; curl calls that a partial file (18).
    Child curl(curl_cmd(port, "--http1.1", "/throws", "-s -N"));
    EXPECT_EQ(curl.finish(), 18) << curl.out();
    EXPECT_EQ(curl.out(), "part1part2");
    // HTTP/2: RST_STREAM INTERNAL_ERROR after the data that was written.
    Child probe(probe_cmd(port, "request", "/throws"));
    ASSERT_EQ(probe.finish(), 0) << probe.out();
    auto kv = probe.kv();
    EXPECT_EQ(kv["rst"], "2") << probe.out();
    EXPECT_EQ(kv["body"], "part1part2") << probe.out();
    expect_server_sound(app);
    Child again(probe_cmd(port, "request", "/hello"));
    ASSERT_EQ(again.finish(), 0);
    EXPECT_EQ(again.kv()["body"], "Hello, World!") << again.out();
}

// ---- 6. a quiet producer is not a stalled client -----------------------------------------

TEST_F(StreamBodyE2e, Http2QuietProducerOutlivesSendTimeout) {
    REQUIRE_PROBE();
    start([](ServerOptions& o) { o.http2.send_timeout = Ms{300}; });
    Child probe(probe_cmd(port, "request", "/quiet"));
    ASSERT_EQ(probe.finish(), 0) << probe.out();
    auto kv = probe.kv();
    EXPECT_EQ(kv["rst"], "none") << probe.out();
    EXPECT_EQ(kv["end_stream"], "1") << probe.out();
    EXPECT_EQ(kv["body"], "beforeafter") << probe.out();
}

}  // namespace
}  // namespace vela::e2e
