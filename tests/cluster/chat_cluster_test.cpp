// examples/chat --redis on two nodes sharing one Redis: a room's messages reach its members on
// both, the presence figures count both nodes' members, and /events on either node streams
// what was said on the other.

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include "cluster/cluster.hpp"
#include "db/servers.hpp"
#include "e2e/ws/ws_client.hpp"

#ifdef VELA_CHAT_BINARY

namespace vela::cluster {
namespace {

using e2e::Ms;
using e2e::WsClient;

TEST(ChatCluster, RoomsPresenceAndEventsSpanTwoNodes) {
    VELA_NEED_REDIS(url);
    TempDir dir;
    std::uint16_t ports[2];
    Node nodes[2];
    for (int i = 0; i < 2; ++i) {
        ports[i] = free_port();
        nodes[i].start(VELA_CHAT_BINARY,
                       {"--port", std::to_string(ports[i]), "--threads", "1", "--redis", url},
                       dir.file("chat" + std::to_string(i) + ".log"));
    }
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(wait_ready(ports[i], "/")) << nodes[i].log();

    const std::string room = "c" + std::to_string(::getpid());
    WsClient a = WsClient::connect(ports[0]);
    ASSERT_TRUE(a.handshake("/ws/chat/" + room) && a.open());
    auto m = a.read_message(Ms{5000});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload, "* somebody joined (1 here)");
    // Once node 0's presence is in Redis, node 1 counts its member too.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    WsClient b = WsClient::connect(ports[1]);
    ASSERT_TRUE(b.handshake("/ws/chat/" + room) && b.open());
    m = b.read_message(Ms{5000});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload, "* somebody joined (2 here)");
    m = a.read_message(Ms{5000});  // node 1's announcement crossed to node 0
    ASSERT_TRUE(m) << a.error();
    EXPECT_EQ(m->payload, "* somebody joined (2 here)");

    // An event-stream client on node 1 sees what is said on node 0.
    const int sse = net::connect_tcp("127.0.0.1", ports[1]);
    const std::string req = "GET /events HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(sse, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // registered before we speak

    ASSERT_TRUE(a.send_text("hello from node 0"));
    for (WsClient* c : {&a, &b}) {
        m = c->read_message(Ms{5000});
        ASSERT_TRUE(m) << c->error();
        EXPECT_EQ(m->payload, "hello from node 0");
    }
    std::string buf;
    const std::string want = "data: " + room + ": hello from node 0\n";
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (buf.find(want) == std::string::npos && std::chrono::steady_clock::now() < end) {
        pollfd p{sse, POLLIN, 0};
        if (::poll(&p, 1, 50) != 1) continue;
        char tmp[4096];
        const ssize_t n = ::recv(sse, tmp, sizeof tmp, 0);
        if (n <= 0) break;
        buf.append(tmp, static_cast<std::size_t>(n));
    }
    EXPECT_NE(buf.find(want), std::string::npos) << buf;
    ::close(sse);
}

}  // namespace
}  // namespace vela::cluster

#endif  // VELA_CHAT_BINARY
