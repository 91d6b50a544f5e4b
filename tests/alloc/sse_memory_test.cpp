// What an idle server-sent-events stream costs in user-space memory.
//
// operator new is replaced in this binary to keep the bytes live through it (and, per size,
// how many blocks), so it must not share a binary with other tests. A child process, forked
// before the server's threads exist, opens the streams on raw sockets (its sockets and memory
// are not the server's); the server keeps every one open with a producer that waits, the way
// an event feed does between events. Live bytes are read after the app is warm and again once
// every stream has its first event; the difference per stream is the figure.

#include <gtest/gtest.h>
#include <malloc.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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

constexpr int kStreams = 10'000;
constexpr long long kBudget = 2048;  // bytes per idle stream
constexpr std::string_view kFirstEvent = "data: hello\n\n";

using vela::test::kClasses;
using vela::test::snapshot;
using vela::test::Snapshot;

// ---- the client process -------------------------------------------------------------------

int connect_to(std::uint16_t port) { return vela::net::connect_tcp("127.0.0.1", port); }

// Reads until the first event has arrived on `fd` (the head comes first); false on error.
bool first_event(int fd) {
    char buf[2048];
    std::size_t got = 0;
    while (got < sizeof buf) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 10'000) <= 0) return false;
        const ssize_t n = ::recv(fd, buf + got, sizeof buf - got, 0);
        if (n <= 0) return false;
        got += static_cast<std::size_t>(n);
        if (std::string_view(buf, got).find(kFirstEvent) != std::string_view::npos) return true;
    }
    return false;
}

// Opens `kStreams` streams in batches (each batch waits for its first events, so the listen
// backlog never overflows), reports how many are open, and holds them until told to close.
[[noreturn]] void client_main(int in, int out) {
    std::uint16_t port = 0;
    if (::read(in, &port, sizeof port) != sizeof port) ::_exit(2);
    static int fds[kStreams];
    int open = 0;
    const char req[] = "GET /events HTTP/1.1\r\nHost: t\r\n\r\n";
    for (int base = 0; base < kStreams && open == base; base += 200) {
        const int end = std::min(base + 200, kStreams);
        for (int i = base; i < end; ++i) {
            fds[i] = connect_to(port);
            if (fds[i] < 0 || ::send(fds[i], req, sizeof req - 1, MSG_NOSIGNAL) < 0) break;
        }
        for (int i = base; i < end && fds[i] >= 0 && first_event(fds[i]); ++i) ++open;
    }
    (void)!::write(out, &open, sizeof open);
    char c;
    (void)!::read(in, &c, 1);
    for (int i = 0; i < open; ++i) ::close(fds[i]);
    ::_exit(0);
}

// ---- the test -----------------------------------------------------------------------------

TEST(SseMemory, TenThousandIdleStreamsCostUnder2KBEach) {
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_cur < static_cast<rlim_t>(kStreams) + 200)
        GTEST_SKIP() << "RLIMIT_NOFILE hard limit " << lim.rlim_max << " is below " << kStreams;

    // The client is forked before the app's threads exist.
    int to_child[2], from_child[2];
    ASSERT_EQ(::pipe(to_child), 0);
    ASSERT_EQ(::pipe(from_child), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) client_main(to_child[0], from_child[1]);

    std::atomic<int> returned{0};
    {
        vela::App app;
        app.options().idle_timeout = 120s;
        app.options().shutdown_timeout = 5s;
        app.get("/", [] { return "warm"; });
        // An event feed between events: it waits (here on a timer) and checks open().
        app.get("/events", [&returned](vela::Request& req) {
            return vela::sse(req, [&returned](vela::SseStream& s) -> vela::Task<void> {
                co_await s.send("hello");
                while (s.open()) co_await vela::sleep(1000ms);
                returned.fetch_add(1);
            });
        });
        app.listen("127.0.0.1:0");
        app.start(1);
        // Warm up: a request and one stream (pools, lazily built state) before the baseline.
        {
            int fd = connect_to(app.port());
            ASSERT_GE(fd, 0);
            const char req[] = "GET /events HTTP/1.1\r\nHost: t\r\n\r\n";
            ASSERT_GT(::send(fd, req, sizeof req - 1, MSG_NOSIGNAL), 0);
            ASSERT_TRUE(first_event(fd));
            ::close(fd);
        }
        std::this_thread::sleep_for(1500ms);  // the warm-up stream notices and ends
        const Snapshot before = snapshot();

        const std::uint16_t port = app.port();
        ASSERT_EQ(::write(to_child[1], &port, sizeof port), static_cast<ssize_t>(sizeof port));
        int open = 0;
        pollfd p{from_child[0], POLLIN, 0};
        ASSERT_GT(::poll(&p, 1, 120'000), 0) << "the client did not report";
        ASSERT_EQ(::read(from_child[0], &open, sizeof open), static_cast<ssize_t>(sizeof open));
        ASSERT_EQ(open, kStreams);
        std::this_thread::sleep_for(300ms);  // idle: nothing moves but the producers' timers
        const Snapshot after = snapshot();

        const long long per_stream = (after.live - before.live) / kStreams;
        const long long per_stream_malloc = (after.malloc - before.malloc) / kStreams;
        std::printf("idle SSE stream: %lld bytes through operator new, %lld bytes of malloc\n",
                    per_stream, per_stream_malloc);
        std::printf("blocks per stream by size (at least 0.5 per stream):\n");
        for (std::size_t i = 0; i < kClasses; ++i) {
            const long long d = after.by_size[i] - before.by_size[i];
            if (d * 2 >= kStreams)
                std::printf("  %5zu-%5zu bytes: %.2f\n", i * 16, i * 16 + 15,
                            static_cast<double>(d) / kStreams);
        }
        RecordProperty("bytes_per_idle_stream", std::to_string(per_stream));
        EXPECT_LT(per_stream, kBudget);

        char c = 'x';
        (void)!::write(to_child[1], &c, 1);
        int st = 0;
        ::waitpid(pid, &st, 0);
        app.stop();
        EXPECT_EQ(app.wait(), 0);
    }
    EXPECT_EQ(returned.load(), kStreams + 1);
}

}  // namespace
