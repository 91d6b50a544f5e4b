// vela::tunnel: a 101 answer that joins the client's connection to another one, byte for byte.
// The other side here is an echo server on a raw socket; the client a raw socket too.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>
#include <thread>

#include "e2e/client.hpp"
#include "e2e/raw_server.hpp"
#include "vela/server/tunnel.hpp"

namespace vela::e2e {
namespace {

// Echoes everything until the peer's FIN, then closes.
void echo(int fd) {
    char buf[65536];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) return;
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return;
        write_all(fd, std::string_view(buf, static_cast<std::size_t>(n)));
    }
}

// A route that dials `port` and joins the client to it.
void add_tunnel_route(App& app, std::uint16_t port, std::chrono::milliseconds idle = 10min) {
    app.get("/tunnel", [port, idle](Request&) -> Response {
        const int fd = net::connect_tcp("127.0.0.1", port);
        if (fd < 0) return Status::BadGateway;
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        auto other = std::make_unique<net::Transport>(*Loop::current(), fd, nullptr, false);
        Response r(Status::SwitchingProtocols);
        r.add_header("Upgrade", "echo");
        return tunnel(std::move(r), std::move(other), idle);
    });
}

// Reads `n` bytes from `fd` (3 s without any: gives up), after `first` (bytes the test
// client read past the 101).
std::string read_exactly(int fd, std::size_t n, std::string first = {}) {
    std::string got = std::move(first);
    char buf[65536];
    while (got.size() < n) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 3000) <= 0) break;
        const ssize_t k = ::read(fd, buf, sizeof buf);
        if (k <= 0) break;
        got.append(buf, static_cast<std::size_t>(k));
    }
    return got;
}

// True when `fd` reaches its end (or a reset) within 3 s, nothing more arriving.
bool ends(int fd) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 3000) <= 0) return false;
    char b;
    return ::read(fd, &b, 1) <= 0;
}

TEST(Tunnel, JoinsTheClientToTheOtherConnection) {
    RawServer upstream(echo);
    App app;
    quick_options(app.options());
    add_tunnel_route(app, static_cast<std::uint16_t>(std::stoi(upstream.url().substr(17))));
    start_app(app);
    Client c = Client::tcp(app.port());
    // Bytes sent right behind the request go through too.
    c.send("GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nearly;");
    const std::optional<HttpResponse> head = c.read_response();
    ASSERT_TRUE(head) << c.error();
    EXPECT_EQ(head->status, 101);
    EXPECT_EQ(head->header("upgrade"), "echo");
    EXPECT_TRUE(icontains(head->header("connection"), "upgrade"));
    EXPECT_EQ(read_exactly(c.fd(), 6, c.pending()), "early;");
    c.send("ping");
    EXPECT_EQ(read_exactly(c.fd(), 4), "ping");
    // 4 MB each way at once: the tunnel holds a side back instead of buffering it all.
    std::string big(4 << 20, 'x');
    for (std::size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>('a' + i % 26);
    std::string back;
    std::thread reader([&] { back = read_exactly(c.fd(), big.size()); });
    c.send(big);
    reader.join();
    EXPECT_EQ(back.size(), big.size());
    EXPECT_TRUE(back == big);
    // The client's half-close reaches the echo server, which closes: so does the tunnel.
    c.shutdown_write();
    EXPECT_TRUE(ends(c.fd()));
    // The server is sound.
    Client again = Client::tcp(app.port());
    again.send(get_request("/tunnel-missing"));
    const std::optional<HttpResponse> r = again.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
}

TEST(Tunnel, IdleTimeoutAndShutdownCloseIt) {
    RawServer upstream(echo);
    auto app = std::make_unique<App>();
    quick_options(app->options());
    add_tunnel_route(*app, static_cast<std::uint16_t>(std::stoi(upstream.url().substr(17))),
                     Ms{300});
    start_app(*app);
    Client c = Client::tcp(app->port());
    c.send("GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n");
    ASSERT_TRUE(c.read_response());
    const auto t0 = SteadyClock::now();
    EXPECT_TRUE(ends(c.fd()));  // silent both ways for 300 ms
    EXPECT_LT(ms_since(t0), 2500);
    Client d = Client::tcp(app->port());
    d.send("GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n");
    ASSERT_TRUE(d.read_response());
    app.reset();  // a graceful stop closes tunnels
    EXPECT_TRUE(ends(d.fd()));
}

}  // namespace
}  // namespace vela::e2e
