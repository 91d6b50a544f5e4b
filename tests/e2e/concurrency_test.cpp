// Many clients and greedy clients over real sockets: output back-pressure, the connection
// cap, and a thousand concurrent connections across two loops.

#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "e2e/client.hpp"

namespace vela::e2e {
namespace {

// How many responses of `body` bytes overflow what the kernel can hold for a client that
// reads nothing: the server's send buffer grows up to tcp_wmem's maximum, and a further
// MiB covers the client's (small) receive buffer and the server's high-water mark.
int requests_to_overflow_kernel(std::size_t body) {
    std::size_t wmem_max = 4 << 20;
    if (std::FILE* f = std::fopen("/proc/sys/net/ipv4/tcp_wmem", "r")) {
        unsigned long lo = 0, def = 0, hi = 0;
        if (std::fscanf(f, "%lu %lu %lu", &lo, &def, &hi) == 3) wmem_max = hi;
        std::fclose(f);
    }
    const std::size_t n = (wmem_max + (1 << 20)) / body + 1;
    return static_cast<int>(std::clamp<std::size_t>(n, 200, 2000));
}

TEST(ConcurrencyTest, PipeliningClientThatDoesNotReadIsPausedNotBuffered) {
    constexpr std::size_t kBody = 32 * 1024;
    const int kRequests = requests_to_overflow_kernel(kBody);
    std::atomic<int> handled{0};
    App app;
    quick_options(app.options());
    app.options().output_high_water = 64 * 1024;
    app.get("/", [] { return "Hello, World!"; });
    app.get("/big/{i}", [&handled](Request& r) {
        handled.fetch_add(1, std::memory_order_relaxed);
        const std::string i(r.param("i"));
        Response res =
            Response::text(std::string(kBody, static_cast<char>('a' + std::stoi(i) % 26)));
        res.add_header("X-Seq", i);
        return res;
    });
    start_app(app);

    // A small receive window, and more output than the kernel's socket buffers can hold.
    Client greedy(connect_loopback(app.port(), 16 * 1024), 4000ms);
    ASSERT_TRUE(greedy.connected());
    std::string batch;
    for (int i = 0; i < kRequests; ++i) batch += get_request("/big/" + std::to_string(i));
    ASSERT_TRUE(greedy.send(batch));

    // Give the server time to run ahead as far as it would.
    std::this_thread::sleep_for(400ms);
    const int handled_while_not_reading = handled.load();
    EXPECT_LT(handled_while_not_reading, kRequests)
        << "all responses were produced although the client read none of them";
    EXPECT_GT(handled_while_not_reading, 0);

    // The loop is not blocked by the greedy client: another client is served.
    {
        Client other = Client::tcp(app.port());
        ASSERT_TRUE(other.send(get_request("/")));
        auto r = other.read_response();
        ASSERT_TRUE(r) << other.error();
        EXPECT_EQ(r->status, 200);
    }

    // Now the greedy client reads: every response arrives, in order.
    for (int i = 0; i < kRequests; ++i) {
        auto r = greedy.read_response();
        ASSERT_TRUE(r) << "response " << i << " of " << kRequests << ": " << greedy.error()
                       << " (handled so far: " << handled.load() << ")";
        ASSERT_EQ(r->status, 200) << "response " << i << " (handled: " << handled.load()
                                  << ", body: " << r->body.substr(0, 40) << ")";
        ASSERT_EQ(r->header("X-Seq"), std::to_string(i));
        ASSERT_EQ(r->body.size(), kBody);
        ASSERT_EQ(r->body[0], static_cast<char>('a' + i % 26));
    }
    EXPECT_EQ(handled.load(), kRequests);
}

TEST(ConcurrencyTest, PausedConnectionResumesWhenTheWholeBacklogFitsTheSocket) {
    // Back-pressure must also resume when the flush that follows the pause writes the whole
    // output at once (a socket with room to spare): the remaining requests are then answered
    // without the client doing anything special.
    constexpr int kRequests = 8;
    App app;
    quick_options(app.options());
    app.options().output_high_water = 16 * 1024;
    app.get("/big/{i}", [](Request& r) {
        Response res = Response::text(std::string(12 * 1024, 'x'));
        res.add_header("X-Seq", std::string(r.param("i")));
        return res;
    });
    start_app(app);
    Client c = Client::tcp(app.port());
    std::string batch;
    for (int i = 0; i < kRequests; ++i) batch += get_request("/big/" + std::to_string(i));
    ASSERT_TRUE(c.send(batch));
    for (int i = 0; i < kRequests; ++i) {
        auto r = c.read_response();
        ASSERT_TRUE(r) << "response " << i << ": " << c.error();
        ASSERT_EQ(r->status, 200) << "response " << i << ": " << r->body;
        EXPECT_EQ(r->header("X-Seq"), std::to_string(i));
    }
}

TEST(ConcurrencyTest, SlowReaderIsNotTimedOutForRequestsItSentInTime) {
    // header_timeout bounds how long a request's head may take to arrive. Here every head
    // arrives at once; only the client's reading is slow, which back-pressure handles. The
    // queued requests must not be answered 408 because their responses waited for room.
    constexpr std::size_t kBody = 32 * 1024;
    const int kRequests = requests_to_overflow_kernel(kBody);
    App app;
    quick_options(app.options());
    app.options().header_timeout = Ms{300};
    app.options().idle_timeout = Ms{5000};
    app.options().output_high_water = 64 * 1024;
    app.get("/big/{i}", [](Request& r) {
        Response res = Response::text(std::string(kBody, 'z'));
        res.add_header("X-Seq", std::string(r.param("i")));
        return res;
    });
    start_app(app);
    Client c(connect_loopback(app.port(), 16 * 1024), 4000ms);
    ASSERT_TRUE(c.connected());
    std::string batch;
    for (int i = 0; i < kRequests; ++i) batch += get_request("/big/" + std::to_string(i));
    ASSERT_TRUE(c.send(batch));
    std::this_thread::sleep_for(1000ms);  // a slow reader: several header timeouts
    for (int i = 0; i < kRequests; ++i) {
        auto r = c.read_response();
        ASSERT_TRUE(r) << "response " << i << ": " << c.error();
        ASSERT_EQ(r->status, 200) << "response " << i << ": " << r->body;
        ASSERT_EQ(r->header("X-Seq"), std::to_string(i));
    }
}

TEST(ConcurrencyTest, ConnectionCapDefersTheFifthConnection) {
    App app;
    quick_options(app.options());
    app.options().max_connections_per_loop = 4;
    add_basic_routes(app);
    start_app(app, 1);

    std::vector<Client> first;
    for (int i = 0; i < 4; ++i) {
        first.push_back(Client::tcp(app.port()));
        ASSERT_TRUE(first.back().connected());
        ASSERT_TRUE(first.back().send(get_request("/users/" + std::to_string(i))));
        auto r = first.back().read_response();
        ASSERT_TRUE(r) << i << ": " << first.back().error();
        EXPECT_EQ(r->body, std::to_string(i));
    }

    // The kernel completes the handshake (listen backlog) but the server does not accept.
    Client fifth = Client::tcp(app.port());
    ASSERT_TRUE(fifth.connected());
    ASSERT_TRUE(fifth.send(get_request("/users/5")));
    EXPECT_FALSE(fifth.readable_within(300ms)) << "the fifth connection was served over the cap";

    // The first four are still served meanwhile.
    ASSERT_TRUE(first[1].send(get_request("/users/11")));
    auto r = first[1].read_response();
    ASSERT_TRUE(r) << first[1].error();
    EXPECT_EQ(r->body, "11");

    first[0].close();  // one slot frees up
    r = fifth.read_response();
    ASSERT_TRUE(r) << "fifth connection not served after a slot freed: " << fifth.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "5");
}

TEST(ConcurrencyTest, ThousandConcurrentConnectionsAcrossTwoLoops) {
    constexpr int kConnections = 1000;
    rlimit lim{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
    if (lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
    }
    if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < 2 * kConnections + 100)
        GTEST_SKIP() << "RLIMIT_NOFILE hard limit " << lim.rlim_max << " is too low";

    App app;
    quick_options(app.options());
    app.options().header_timeout = Ms{8000};
    app.options().idle_timeout = Ms{8000};
    add_basic_routes(app);
    start_app(app, 2);

    std::vector<Client> clients;
    clients.reserve(kConnections);
    for (int i = 0; i < kConnections; ++i) {
        clients.push_back(Client::tcp(app.port(), 8000ms));
        ASSERT_TRUE(clients.back().connected())
            << "connect " << i << " failed: " << std::strerror(errno);
    }
    for (int i = 0; i < kConnections; ++i)
        ASSERT_TRUE(
            clients[static_cast<std::size_t>(i)].send(get_request("/users/" + std::to_string(i))));
    int ok = 0;
    for (int i = 0; i < kConnections; ++i) {
        Client& c = clients[static_cast<std::size_t>(i)];
        auto r = c.read_response();
        ASSERT_TRUE(r) << "connection " << i << ": " << c.error();
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, std::to_string(i));
        ok += r->status == 200;
    }
    EXPECT_EQ(ok, kConnections);
    // All still open and usable (keep-alive): a second round on every tenth connection.
    for (int i = 0; i < kConnections; i += 10) {
        Client& c = clients[static_cast<std::size_t>(i)];
        ASSERT_TRUE(c.send(get_request("/hello")));
        auto r = c.read_response();
        ASSERT_TRUE(r) << "connection " << i << ": " << c.error();
        EXPECT_EQ(r->status, 200);
    }
}

}  // namespace
}  // namespace vela::e2e
