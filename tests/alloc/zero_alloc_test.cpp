// The synchronous hot path allocates nothing and creates no coroutine frame.
//
// operator new is replaced in this binary to count every allocation in the process. A
// warmed-up keep-alive connection then sends requests to routes whose middleware and
// handler are all synchronous; between two readings of the counters the only code that runs
// is the server (on its loop thread) and raw send/recv calls in the test.

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "vela/http/hpack.hpp"
#include "vela/net/socket.hpp"
#include "vela/vela.hpp"

namespace {
std::atomic<std::uint64_t> g_news{0};
std::atomic<long long> g_live_bytes{0};  // bytes held through operator new right now
}  // namespace

// The replacements below pair malloc with free on purpose.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
void* counted_alloc(std::size_t n) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    void* p = std::malloc(n ? n : 1);
    if (!p) throw std::bad_alloc();
    g_live_bytes.fetch_add(static_cast<long long>(malloc_usable_size(p)),
                           std::memory_order_relaxed);
    return p;
}
void counted_free(void* p) noexcept {
    if (!p) return;
    g_live_bytes.fetch_sub(static_cast<long long>(malloc_usable_size(p)),
                           std::memory_order_relaxed);
    std::free(p);
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }

namespace {

// Sends `req` and reads until a response whose body ends with `tail` has arrived. Uses only
// stack memory.
bool round_trip(int fd, const char* req, const char* tail) {
    const std::size_t len = std::strlen(req);
    if (::send(fd, req, len, MSG_NOSIGNAL) != static_cast<ssize_t>(len)) return false;
    char buf[4096];
    std::size_t got = 0;
    const std::size_t tl = std::strlen(tail);
    while (got < sizeof buf) {
        ssize_t n = ::recv(fd, buf + got, sizeof buf - got, 0);
        if (n <= 0) return false;
        got += static_cast<std::size_t>(n);
        if (got >= tl && std::memcmp(buf + got - tl, tail, tl) == 0) return true;
    }
    return false;
}

std::uint64_t read_frames(int fd) {
    const char* req = "GET /frames HTTP/1.1\r\nHost: t\r\n\r\n";
    ::send(fd, req, std::strlen(req), MSG_NOSIGNAL);
    char buf[1024];
    ssize_t n = ::recv(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return ~0ull;
    buf[n] = 0;
    const char* body = std::strstr(buf, "\r\n\r\n");
    return body ? std::strtoull(body + 4, nullptr, 10) : ~0ull;
}

struct ServiceStatus {
    std::string_view status;
    std::string_view framework;
    int uptime = 0;
};
VELA_REFLECT(ServiceStatus, status, framework, uptime)

class ZeroAlloc : public ::testing::Test {
  protected:
    void SetUp() override {
        app.use([](vela::Request& r) { r.set_attribute("mw", "one"); });
        app.use([](vela::Request& r) -> std::optional<vela::Response> {
            if (r.header("X-Deny") == "1") return vela::Status::Forbidden;
            return std::nullopt;
        });
        app.use([](vela::Request&, vela::Response& res) { res.add_header("X-Mw", "after"); });
        app.get("/", [] { return "Hello, World!"; });
        app.get("/users/{id:int}", [](vela::Request& r) {
            vela::Response res = vela::Response::json("{\"id\":1}");
            res.add_header("X-User", r.param("id"));
            return res;
        });
        app.get("/status", [] { return ServiceStatus{"running", "vela", 42}; });
        app.get("/frames", [] { return std::to_string(vela::async::frames_allocated()); });
        app.listen("127.0.0.1:0");
        app.start(1);
        fd = vela::net::connect_tcp("127.0.0.1", app.port());
        ASSERT_GE(fd, 0);
    }
    void TearDown() override {
        ::close(fd);
        app.stop();
        app.wait();
    }
    vela::App app;
    int fd = -1;
};

TEST_F(ZeroAlloc, SyncRoutesWithSyncMiddlewareAllocateNothingInSteadyState) {
    const char* hello = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
    const char* param = "GET /users/42?x=1 HTTP/1.1\r\nHost: t\r\nAccept: */*\r\n\r\n";
    for (int i = 0; i < 200; ++i) {  // warm-up: pools, header vectors, attribute slots
        ASSERT_TRUE(round_trip(fd, hello, "Hello, World!"));
        ASSERT_TRUE(round_trip(fd, param, "{\"id\":1}"));
    }
    const std::uint64_t frames_before = read_frames(fd);
    const std::uint64_t news_before = g_news.load();
    for (int i = 0; i < 1000; ++i) {
        ASSERT_TRUE(round_trip(fd, hello, "Hello, World!"));
        ASSERT_TRUE(round_trip(fd, param, "{\"id\":1}"));
    }
    const std::uint64_t news_after = g_news.load();
    const std::uint64_t frames_after = read_frames(fd);
    EXPECT_EQ(news_after - news_before, 0u) << "heap allocations on the synchronous path";
    EXPECT_EQ(frames_after, frames_before) << "coroutine frames on the synchronous path";
}

// A reflected struct serialized per request: the body is written into storage the server
// recycled from the previous response (vela::body_string / recycle_body).
TEST_F(ZeroAlloc, JsonStructResponsesAllocateNothingInSteadyState) {
    const char* req = "GET /status HTTP/1.1\r\nHost: t\r\n\r\n";
    const char* tail = "{\"status\":\"running\",\"framework\":\"vela\",\"uptime\":42}";
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(round_trip(fd, req, tail));
    const std::uint64_t before = g_news.load();
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(round_trip(fd, req, tail));
    EXPECT_EQ(g_news.load() - before, 0u) << "heap allocations per JSON response";
}

TEST_F(ZeroAlloc, PipelinedBatchAllocatesNothing) {
    std::string batch;
    for (int i = 0; i < 16; ++i) batch += "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
    auto run_batch = [&] {
        ASSERT_EQ(::send(fd, batch.data(), batch.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(batch.size()));
        char buf[16384];
        std::size_t responses = 0, got = 0;
        while (responses < 16) {
            ssize_t n = ::recv(fd, buf + got, sizeof buf - got, 0);
            ASSERT_GT(n, 0);
            got += static_cast<std::size_t>(n);
            responses = 0;
            for (const char* p = buf;
                 (p = static_cast<const char*>(memmem(p, buf + got - p, "World!", 6))); p += 6)
                ++responses;
        }
    };
    for (int i = 0; i < 50; ++i) run_batch();
    const std::uint64_t before = g_news.load();
    for (int i = 0; i < 200; ++i) run_batch();
    EXPECT_EQ(g_news.load() - before, 0u);
}

// An idle keep-alive connection holds its connection object and nothing else: read and
// write buffers go back to the loop's pool and the Request object to the worker's.
TEST_F(ZeroAlloc, IdleKeepAliveConnectionHoldsUnderOneKilobyte) {
    const char* hello = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
    ASSERT_TRUE(round_trip(fd, hello, "Hello, World!"));  // warm the pools
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    constexpr int kConns = 200;
    std::vector<int> fds;
    fds.reserve(kConns);
    const long long before = g_live_bytes.load();
    for (int i = 0; i < kConns; ++i) {
        int c = vela::net::connect_tcp("127.0.0.1", app.port());
        ASSERT_GE(c, 0);
        ASSERT_TRUE(round_trip(c, hello, "Hello, World!"));
        fds.push_back(c);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the loop go idle
    const long long per_conn = (g_live_bytes.load() - before) / kConns;
    for (int c : fds) ::close(c);
    EXPECT_LE(per_conn, 1024) << "bytes held per idle keep-alive connection";
    EXPECT_GT(per_conn, 0) << "the accounting must see the connection objects";
    std::printf("idle keep-alive connection: %lld bytes of heap\n", per_conn);
}

TEST_F(ZeroAlloc, AsyncRouteDoesCreateFrames) {
    // The counter is real: an async route does create frames (control for the tests above).
    vela::App other;
    other.get("/a", []() -> vela::Task<vela::Response> { co_return "a"; });
    other.get("/frames", [] { return std::to_string(vela::async::frames_allocated()); });
    other.listen("127.0.0.1:0");
    other.start(1);
    int c = vela::net::connect_tcp("127.0.0.1", other.port());
    ASSERT_GE(c, 0);
    const std::uint64_t before = read_frames(c);
    ASSERT_TRUE(round_trip(c, "GET /a HTTP/1.1\r\nHost: t\r\n\r\n", "\r\na"));
    EXPECT_GT(read_frames(c), before);
    ::close(c);
    other.stop();
    other.wait();
}

// With metrics and the watchdog on, requests still allocate nothing: the route's counters are
// preallocated per loop and found by endpoint number. (The loop-lag timer allocates a timer
// entry per tick; an hour-long interval keeps ticks out of the measurement.) The watchdog's
// threshold of 200 ms makes its thread look every 50 ms, several times during the measurement:
// its first look used to size a vector, one allocation that landed in the measurement when the
// requests before it took less than the first period.
TEST(ZeroAllocMetrics, MetricsAndWatchdogOnAllocateNothingPerRequest) {
    vela::App app;
    app.get("/", [] { return "Hello, World!"; });
    app.get("/users/{id:int}", [](vela::Request& r) {
        vela::Response res = vela::Response::json("{\"id\":1}");
        res.add_header("X-User", r.param("id"));
        return res;
    });
    vela::MetricsOptions m;
    m.lag_interval = std::chrono::hours(1);
    vela::metrics(app, std::move(m));
    vela::stall_watchdog(app, {.threshold = std::chrono::milliseconds(200)});
    app.listen("127.0.0.1:0");
    app.start(1);
    const int fd = vela::net::connect_tcp("127.0.0.1", app.port());
    ASSERT_GE(fd, 0);
    const char* hello = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
    const char* param = "GET /users/42?x=1 HTTP/1.1\r\nHost: t\r\nAccept: */*\r\n\r\n";
    const char* missing = "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n";
    for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(round_trip(fd, hello, "Hello, World!"));
        ASSERT_TRUE(round_trip(fd, param, "{\"id\":1}"));
        ASSERT_TRUE(round_trip(fd, missing, "Not Found"));
    }
    const std::uint64_t before = g_news.load();
    for (int i = 0; i < 1000; ++i) {
        ASSERT_TRUE(round_trip(fd, hello, "Hello, World!"));
        ASSERT_TRUE(round_trip(fd, param, "{\"id\":1}"));
        ASSERT_TRUE(round_trip(fd, missing, "Not Found"));
    }
    EXPECT_EQ(g_news.load() - before, 0u) << "heap allocations per request with metrics on";
    const std::string text = vela::metrics_text(app);
    EXPECT_NE(text.find("vela_http_requests_total{route=\"/\",method=\"GET\",status=\"200\"} 1200"),
              std::string::npos)
        << text;
    ::close(fd);
    app.stop();
    app.wait();
}

// HPACK on a long connection: once the dynamic tables' rings and strings and the decoder's
// Huffman buffers have grown, decoding (literals that add and evict entries, indexed fields)
// and encoding allocate nothing.
TEST(ZeroAllocHpack, DecodeAndEncodeAllocateNothingInSteadyState) {
    using namespace vela::hpack;
    const EncoderField fields[] = {
        {":method", "GET"},
        {":scheme", "https"},
        {":path", "/assets/app.js?v=3"},
        {":authority", "www.example.com"},
        {"user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)"},
        {"accept-language", "en-US,en;q=0.9"},
        {"cookie", "session=3f2a9c1e7b5d4a60b8e1f0c2d3a4b5c6; theme=dark"},
        {"authorization", "Bearer 0123456789"},
    };
    std::string first;
    std::string again;
    {
        Encoder e;
        e.encode(fields, first);
        e.encode(fields, again);
    }
    Decoder d;
    Encoder e;
    std::string out;
    std::size_t seen = 0;
    const auto sink = [&](const DecodedField& f) { seen += f.value.size(); };
    const auto round = [&] {
        ASSERT_EQ(d.decode(first, sink), Error::none);
        ASSERT_EQ(d.decode(again, sink), Error::none);
        out.clear();
        e.encode(fields, out);
    };
    for (int i = 0; i < 2000; ++i) round();
    const std::uint64_t before = g_news.load();
    for (int i = 0; i < 1000; ++i) round();
    EXPECT_EQ(g_news.load() - before, 0u) << "heap allocations per HPACK block";
    EXPECT_GT(seen, 0u);
}

}  // namespace
