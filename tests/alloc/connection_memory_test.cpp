// What an idle connection costs the server in user-space memory, per protocol: the budgets
// docs/architecture.md ("Memory per connection") states, pinned so that no change grows them
// silently.
//
// operator new is replaced in this binary to keep the bytes live through it (and, per size,
// how many blocks), so it must not share a binary with other tests. A child process, forked
// before the server's threads exist, opens the connections on raw sockets (its sockets and
// memory are not the server's), makes one exchange on each (a request and its response, a
// WebSocket handshake and an echo) and holds them open. Live bytes are read after the app is
// warm and again once every connection had its answer; the difference per connection is the
// figure. Every allocation counts: the connection objects, buffers, coroutine frames, and
// (through malloc, the second figure) what the C libraries keep.

#include <gtest/gtest.h>
#include <malloc.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "alloc/live_bytes.hpp"
#include "vela/net/socket.hpp"
#include "vela/vela.hpp"

namespace {

using namespace std::chrono_literals;

constexpr int kConnections = 2'000;
// vela's HTTP/2 session per connection: HPACK tables, the stream record and the closed-stream
// record (2,983 bytes measured; nghttp2's session took 34.9 KB).
constexpr long long kH2cBudget = 4 * 1024;

using vela::test::kClasses;
using vela::test::snapshot;
using vela::test::Snapshot;

// One exchange on a fresh connection: send `send`, read until `until` has arrived, and again
// for the next step.
struct Step {
    std::string send;
    std::string until;
};

// ---- the client process -------------------------------------------------------------------

int connect_to(std::uint16_t port) { return vela::net::connect_tcp("127.0.0.1", port); }

// Reads until `until` has arrived on `fd` after `got` bytes; false on error or timeout.
bool read_until(int fd, std::string& got, std::string_view until) {
    char buf[4096];
    while (got.find(until) == std::string::npos) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 10'000) <= 0) return false;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return false;
        got.append(buf, static_cast<std::size_t>(n));
    }
    return true;
}

bool exchange(int fd, const std::vector<Step>& steps) {
    std::string got;
    for (const Step& s : steps) {
        if (::send(fd, s.send.data(), s.send.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(s.send.size()))
            return false;
        if (!read_until(fd, got, s.until)) return false;
        got.erase(0, got.find(s.until) + s.until.size());
    }
    return true;
}

// Opens `n` connections in batches (each batch waits for its answers, so the listen backlog
// never overflows), reports how many are open, and holds them until told to close.
[[noreturn]] void client_main(int in, int out, int n, const std::vector<Step>& steps) {
    std::uint16_t port = 0;
    if (::read(in, &port, sizeof port) != sizeof port) ::_exit(2);
    std::vector<int> fds(static_cast<std::size_t>(n), -1);
    int open = 0;
    for (int base = 0; base < n && open == base; base += 100) {
        const int end = std::min(base + 100, n);
        for (int i = base; i < end; ++i) {
            fds[static_cast<std::size_t>(i)] = connect_to(port);
            if (fds[static_cast<std::size_t>(i)] < 0 ||
                !exchange(fds[static_cast<std::size_t>(i)], steps))
                break;
            ++open;
        }
    }
    (void)!::write(out, &open, sizeof open);
    char c;
    (void)!::read(in, &c, 1);
    for (int i = 0; i < open; ++i) ::close(fds[static_cast<std::size_t>(i)]);
    ::_exit(0);
}

// The client's steps for each kind of connection.
std::vector<Step> http1_steps() { return {{"GET / HTTP/1.1\r\nHost: t\r\n\r\n", "warm"}}; }

std::string client_frame(std::string_view payload) {
    std::string f;
    f.push_back(static_cast<char>(0x81));                   // FIN, text
    f.push_back(static_cast<char>(0x80 | payload.size()));  // masked, < 126
    f.append(4, '\0');                                      // a zero mask
    f.append(payload);
    return f;
}

std::vector<Step> websocket_steps(std::string_view path) {
    std::string hs = "GET " + std::string(path) +
                     " HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n";
    return {{hs, "\r\n\r\n"}, {client_frame("hi"), std::string("\x81\x02hi", 4)}};
}

std::vector<Step> h2c_steps() {
    std::string b = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    b.append(std::string("\0\0\0\x04\0\0\0\0\0", 9));  // an empty SETTINGS
    // HEADERS on stream 1, END_STREAM | END_HEADERS: GET http / with :authority t (HPACK
    // static-table indexes 2, 6, 4 and a literal without indexing of name index 1).
    const std::string block("\x82\x86\x84\x01\x01t", 6);
    b.append(std::string("\0\0", 2));
    b.push_back(static_cast<char>(block.size()));
    b.append(std::string("\x01\x05\0\0\0\x01", 6));
    b.append(block);
    return {{b, "warm"}};
}

struct Figure {
    long long live = 0;    // bytes through operator new per connection
    long long malloc = 0;  // all malloc'd bytes per connection
};

// Forks the client, starts an app made by `routes` with one loop, warms it with one
// connection, then holds kConnections and returns the bytes each costs.
template <class Routes>
Figure measure(const std::vector<Step>& steps, Routes routes) {
    int to_child[2], from_child[2];
    EXPECT_EQ(::pipe(to_child), 0);
    EXPECT_EQ(::pipe(from_child), 0);
    const pid_t pid = ::fork();
    if (pid == 0) client_main(to_child[0], from_child[1], kConnections, steps);
    Figure f;
    {
        vela::App app;
        app.options().idle_timeout = 120s;
        app.options().shutdown_timeout = 5s;
        app.get("/", [] { return "warm"; });
        routes(app);
        app.listen("127.0.0.1:0");
        app.start(1);
        {  // warm-up: pools and lazily built state before the baseline
            int fd = connect_to(app.port());
            EXPECT_GE(fd, 0);
            EXPECT_TRUE(exchange(fd, steps));
            ::close(fd);
        }
        std::this_thread::sleep_for(300ms);
        const Snapshot before = snapshot();
        const std::uint16_t port = app.port();
        EXPECT_EQ(::write(to_child[1], &port, sizeof port), static_cast<ssize_t>(sizeof port));
        int open = 0;
        pollfd p{from_child[0], POLLIN, 0};
        EXPECT_GT(::poll(&p, 1, 120'000), 0) << "the client did not report";
        EXPECT_EQ(::read(from_child[0], &open, sizeof open), static_cast<ssize_t>(sizeof open));
        EXPECT_EQ(open, kConnections);
        std::this_thread::sleep_for(300ms);  // idle
        const Snapshot after = snapshot();
        f.live = (after.live - before.live) / kConnections;
        f.malloc = (after.malloc - before.malloc) / kConnections;
        std::printf("%lld bytes through operator new, %lld bytes of malloc per connection\n",
                    f.live, f.malloc);
        for (std::size_t i = 0; i < kClasses; ++i) {
            const long long d = after.by_size[i] - before.by_size[i];
            if (d * 2 >= kConnections)
                std::printf("  blocks of %5zu-%5zu bytes: %.2f per connection\n", i * 16,
                            i * 16 + 15, static_cast<double>(d) / kConnections);
        }
        char c = 'x';
        (void)!::write(to_child[1], &c, 1);
        int st = 0;
        ::waitpid(pid, &st, 0);
        app.stop();
        EXPECT_EQ(app.wait(), 0);
    }
    ::close(to_child[0]);
    ::close(to_child[1]);
    ::close(from_child[0]);
    ::close(from_child[1]);
    return f;
}

bool enough_files() {
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
    return lim.rlim_cur >= static_cast<rlim_t>(kConnections) + 200;
}

#define REQUIRE_FILES() \
    if (!enough_files()) GTEST_SKIP() << "RLIMIT_NOFILE is below " << kConnections + 200

// ---- the budgets ---------------------------------------------------------------------------

// An idle keep-alive connection after one request: the driver object only (no buffer, no
// Request, no parser).
TEST(ConnectionMemory, IdleHttp1KeepAliveUnder400Bytes) {
    REQUIRE_FILES();
    const Figure f = measure(http1_steps(), [](vela::App&) {});
    RecordProperty("bytes_per_idle_http1", std::to_string(f.malloc));
    EXPECT_LE(std::max(f.live, f.malloc), 400);
}

// The route coroutine of the WebSocket tests: an echo, waiting in receive() when idle.
vela::Task<void> echo(vela::WebSocket& ws) {
    for (;;) {
        vela::WsMessage m = co_await ws.receive();
        if (m.is_close()) co_return;
        co_await ws.send(m.data, m.type);
    }
}

vela::WsOptions no_deflate() {
    vela::WsOptions o;
    o.deflate.enabled = false;
    return o;
}

// An idle WebSocket session whose coroutine waits in receive(), frame included; the
// coroutine takes no request, so the session keeps none of it.
TEST(ConnectionMemory, IdleWebSocketUnder1KiB) {
    REQUIRE_FILES();
    const Figure f = measure(websocket_steps("/ws"), [](vela::App& app) {
        app.ws(
            "/ws", [](vela::WebSocket& ws) { return echo(ws); }, no_deflate());
    });
    RecordProperty("bytes_per_idle_websocket", std::to_string(f.malloc));
    EXPECT_LE(std::max(f.live, f.malloc), 1024);
}

// The same with a coroutine that takes the request: the request's object and bytes stay.
TEST(ConnectionMemory, IdleWebSocketKeepingItsRequestUnder3KiB) {
    REQUIRE_FILES();
    const Figure f = measure(websocket_steps("/ws"), [](vela::App& app) {
        app.ws(
            "/ws", [](vela::WebSocket& ws, vela::Request&) { return echo(ws); }, no_deflate());
    });
    RecordProperty("bytes_per_idle_websocket_with_request", std::to_string(f.malloc));
    EXPECT_LE(std::max(f.live, f.malloc), 3072);
}

// An idle h2c connection after one request (the HTTP/2 session's state included).
TEST(ConnectionMemory, IdleH2cConnectionUnder4KiB) {
    REQUIRE_FILES();
    const Figure f = measure(h2c_steps(), [](vela::App&) {});
    RecordProperty("bytes_per_idle_h2c", std::to_string(f.malloc));
    EXPECT_LE(std::max(f.live, f.malloc), kH2cBudget);
}

}  // namespace
