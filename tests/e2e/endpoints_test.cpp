// Listening endpoints other than IPv4: IPv6 loopback and Unix domain sockets.

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <system_error>

#include <cstdio>

#include <string>

#include "e2e/client.hpp"

namespace vela::e2e {
namespace {

bool ipv6_loopback_available() {
    int fd = net::connect_tcp("::1", 9);  // refused (not "unreachable") when ::1 exists
    if (fd >= 0) {
        ::close(fd);
        return true;
    }
    return errno == ECONNREFUSED;
}

TEST(EndpointsTest, Ipv6Loopback) {
    if (!ipv6_loopback_available()) GTEST_SKIP() << "no IPv6 loopback here";
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    start_app(app, 1, "[::1]:0");
    ASSERT_NE(app.port(), 0);
    Client c = Client::tcp6(app.port());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send("GET /users/6 HTTP/1.1\r\nHost: [::1]\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "6");
    ASSERT_TRUE(c.send(request_with_body("POST", "/echo", "over v6")));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "over v6");
}

TEST(EndpointsTest, UnixDomainSocket) {
    const std::string path = "/tmp/vela-test-" + std::to_string(::getpid()) + ".sock";
    {
        App app;
        quick_options(app.options());
        add_basic_routes(app);
        start_app(app, 2, "unix:" + path);
        struct stat st {};
        ASSERT_EQ(::stat(path.c_str(), &st), 0);
        EXPECT_TRUE(S_ISSOCK(st.st_mode));
        for (int i = 0; i < 4; ++i) {  // both loops watch the one socket
            Client c = Client::unix_socket(path);
            ASSERT_TRUE(c.connected()) << std::strerror(errno);
            ASSERT_TRUE(c.send(get_request("/users/" + std::to_string(i)) +
                               request_with_body("POST", "/echo", "over unix")));
            auto r = c.read_response();
            ASSERT_TRUE(r) << c.error();
            EXPECT_EQ(r->status, 200);
            EXPECT_EQ(r->body, std::to_string(i));
            r = c.read_response();
            ASSERT_TRUE(r) << c.error();
            EXPECT_EQ(r->body, "over unix");
        }
        app.stop();
        EXPECT_EQ(app.wait(), 0);
    }
    ::unlink(path.c_str());
}

// A socket file left by an earlier run is replaced; a live listener's socket or any other
// file at the path is not touched (listening fails instead).
TEST(EndpointsTest, UnixListenerReplacesOnlyStaleSockets) {
    const std::string path = "/tmp/vela-test-" + std::to_string(::getpid()) + "-stale.sock";
    const net::Endpoint ep = net::Endpoint::parse("unix:" + path);
    // A stale socket: bound, then closed without unlinking.
    int old = net::open_listener(ep, {});
    ASSERT_GE(old, 0);
    ::close(old);
    int fd = net::open_listener(ep, {});
    EXPECT_GE(fd, 0) << "the stale socket file was not replaced";
    // A socket someone listens on is not taken over.
    EXPECT_THROW(net::open_listener(ep, {}), std::system_error);
    Client c = Client::unix_socket(path);
    EXPECT_TRUE(c.connected()) << "the live listener lost its path";
    if (fd >= 0) ::close(fd);
    ::unlink(path.c_str());

    // A regular file with the same name stays as it was.
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fputs("precious", f);
        std::fclose(f);
    }
    EXPECT_THROW(net::open_listener(ep, {}), std::system_error);
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << "the file was deleted";
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_size, 8);
    ::unlink(path.c_str());
}

TEST(EndpointsTest, TcpAndUnixTogether) {
    const std::string path = "/tmp/vela-test-" + std::to_string(::getpid()) + "-both.sock";
    {
        App app;
        quick_options(app.options());
        add_basic_routes(app);
        app.listen("127.0.0.1:0");
        app.listen("unix:" + path);
        app.start(1);
        Client tcp = Client::tcp(app.port());
        Client uds = Client::unix_socket(path);
        ASSERT_TRUE(tcp.connected());
        ASSERT_TRUE(uds.connected());
        ASSERT_TRUE(tcp.send(get_request("/users/1")));
        ASSERT_TRUE(uds.send(get_request("/users/2")));
        auto a = tcp.read_response();
        auto b = uds.read_response();
        ASSERT_TRUE(a) << tcp.error();
        ASSERT_TRUE(b) << uds.error();
        EXPECT_EQ(a->body, "1");
        EXPECT_EQ(b->body, "2");
    }
    ::unlink(path.c_str());
}

}  // namespace
}  // namespace vela::e2e
