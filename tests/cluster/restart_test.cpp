// Restarts without dropping anything: a socket-activated start (systemd's LISTEN_FDS and
// NOTIFY_SOCKET, set up here as systemd would), and hot restarts (SIGUSR2) under wrk load:
// no failed request, no refused connection, a request in flight finishes on the old process.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdlib>
#include <future>
#include <regex>

#include "cluster/cluster.hpp"

#ifdef VELA_NODE_BINARY

namespace vela::cluster {
namespace {

// A listening TCP socket on 127.0.0.1 (an ephemeral port), as systemd's .socket unit makes;
// inherited by the shell that starts the node (no close-on-exec).
int listening_socket(std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    EXPECT_EQ(::listen(fd, 128), 0);
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
    return fd;
}

// A datagram socket standing in for systemd's notification socket.
int notify_socket(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    return fd;
}

// The next notification (empty after `timeout`).
std::string next_notice(int fd, std::chrono::milliseconds timeout) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return {};
    char buf[512];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// wrk's summary: requests done, and whether it saw any socket error or non-2xx answer.
struct WrkResult {
    long requests = 0;
    bool errors = true;
    std::string out;
};

WrkResult parse_wrk(const std::string& out) {
    WrkResult r;
    r.out = out;
    std::smatch m;
    if (std::regex_search(out, m, std::regex(R"((\d+) requests in)"))) r.requests = std::stol(m[1]);
    r.errors = out.find("Socket errors") != std::string::npos ||
               out.find("Non-2xx") != std::string::npos || r.requests == 0;
    return r;
}

std::future<WrkResult> start_wrk(std::uint16_t port, int seconds, int connections) {
    return std::async(std::launch::async, [=] {
        return parse_wrk(e2e::shell("wrk -t2 -c" + std::to_string(connections) + " -d" +
                                    std::to_string(seconds) +
                                    "s http://127.0.0.1:" + std::to_string(port) + "/hello 2>&1"));
    });
}

pid_t served_pid(std::uint16_t port) {
    const Reply r = http(port, "/pid");
    return r.status == 200 ? static_cast<pid_t>(std::atol(r.body.c_str())) : -1;
}

TEST(SocketActivation, ServesThePassedSocketAndTellsTheManager) {
    TempDir dir;
    std::uint16_t port = 0;
    const int sock = listening_socket(port);  // kept open here: a node binding its own fails
    const int notify = notify_socket(dir.file("notify"));
    Node node;
    // As systemd does: the socket as fd 3, LISTEN_PID the service's own pid ($$ of the shell
    // that execs it).
    const std::string fd3 = " 3<&" + std::to_string(sock);
    node.start(VELA_NODE_BINARY,
               {"--listen", "127.0.0.1:" + std::to_string(port), "--threads", "2"}, dir.file("log"),
               "export LISTEN_FDS=1 LISTEN_PID=$$ NOTIFY_SOCKET=" + dir.file("notify") + ";" + fd3);
    EXPECT_EQ(next_notice(notify, 10s), "READY=1") << node.log();
    const Reply r = http(port, "/hello");
    EXPECT_EQ(r.status, 200) << node.log();
    EXPECT_EQ(r.body, "hello from node");
    EXPECT_NE(node.log().find("passed at start"), std::string::npos) << node.log();
    // Both loops serve the one socket: a burst of requests all succeed.
    for (int i = 0; i < 20; ++i) ASSERT_EQ(http(port, "/hello").status, 200);
    node.signal(SIGTERM);
    EXPECT_EQ(next_notice(notify, 10s), "STOPPING=1");
    EXPECT_TRUE(exited_cleanly(node.wait())) << node.log();
    ::close(notify);
    ::close(sock);
}

TEST(SocketActivation, SocketsForAnotherProcessAreIgnored) {
    TempDir dir;
    const std::uint16_t port = free_port();
    Node node;
    // LISTEN_PID names some other process: the variables are not ours, the node opens its own.
    node.start(VELA_NODE_BINARY, {"--listen", "127.0.0.1:" + std::to_string(port)}, dir.file("log"),
               "export LISTEN_FDS=1 LISTEN_PID=1;");
    ASSERT_TRUE(wait_ready(port)) << node.log();
    EXPECT_NE(node.log().find("not this one"), std::string::npos) << node.log();
    node.stop();
}

class HotRestart : public ::testing::Test {
  protected:
    void SetUp() override { adopt_orphans(); }
};

TEST_F(HotRestart, UnderLoadNoRequestFailsAndNoConnectionIsRefused) {
    if (!e2e::have("wrk")) GTEST_SKIP() << "wrk is not installed";
    TempDir dir;
    const std::uint16_t port = free_port();
    Node node;
    node.start(VELA_NODE_BINARY, {"--listen", "127.0.0.1:" + std::to_string(port)},
               dir.file("log"));
    ASSERT_TRUE(wait_ready(port)) << node.log();
    const pid_t first = node.pid();
    ASSERT_EQ(served_pid(port), first);

    std::future<WrkResult> load = start_wrk(port, 6, 64);
    std::this_thread::sleep_for(1500ms);
    // A request in flight on the old process when it hands over: it still gets its answer.
    std::future<Reply> slow =
        std::async(std::launch::async, [port] { return http(port, "/slow?ms=1500"); });
    std::this_thread::sleep_for(200ms);
    node.signal(SIGUSR2);
    const int status = node.wait(15s);  // the old process drains and exits
    EXPECT_TRUE(exited_cleanly(status)) << "status " << status << "\n" << node.log();
    const pid_t second = served_pid(port);
    EXPECT_GT(second, 0);
    EXPECT_NE(second, first);
    node.adopt(second);  // ours now (we reap orphans)
    // The successor served the sockets it was given (it opened none of its own).
    EXPECT_NE(node.log().find("passed at start"), std::string::npos) << node.log();
    EXPECT_EQ(node.log().find("matches no endpoint"), std::string::npos) << node.log();

    const Reply s = slow.get();
    EXPECT_EQ(s.status, 200);
    EXPECT_EQ(s.body, "slow");
    const WrkResult w = load.get();
    EXPECT_FALSE(w.errors) << w.out << "\n" << node.log();

    // The successor can hand over again, under load as well.
    load = start_wrk(port, 3, 32);
    std::this_thread::sleep_for(1000ms);
    node.signal(SIGUSR2);
    EXPECT_TRUE(exited_cleanly(node.wait(15s))) << node.log();
    const pid_t third = served_pid(port);
    EXPECT_GT(third, 0);
    EXPECT_NE(third, second);
    node.adopt(third);
    const WrkResult w2 = load.get();
    EXPECT_FALSE(w2.errors) << w2.out << "\n" << node.log();
    EXPECT_NE(node.log().find("hot restart: successor"), std::string::npos);
}

// The binary at the path is what starts: after a deploy replaced it, the successor is the
// new version; when the new version cannot start, the old process keeps serving.
TEST_F(HotRestart, StartsTheBinaryNowAtThePathAndSurvivesABadOne) {
    TempDir dir;
    const std::string bin = dir.file("app");
    std::filesystem::copy_file(VELA_NODE_BINARY, bin);
    const std::uint16_t port = free_port();
    const int notify = notify_socket(dir.file("notify"));  // as under systemd, Type=notify
    Node node;
    node.start(bin, {"--listen", "127.0.0.1:" + std::to_string(port), "--name", "v1"},
               dir.file("log"), "export NOTIFY_SOCKET=" + dir.file("notify") + ";");
    ASSERT_TRUE(wait_ready(port)) << node.log();
    EXPECT_EQ(http(port, "/hello").body, "hello from v1");
    EXPECT_EQ(next_notice(notify, 5s), "READY=1");

    // A broken release: the successor exits at once.
    {
        std::ofstream(dir.file("broken")) << "#!/bin/sh\nexit 3\n";
        std::filesystem::permissions(dir.file("broken"), std::filesystem::perms::owner_all);
        std::filesystem::rename(dir.file("broken"), bin);
    }
    node.signal(SIGUSR2);
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (node.log().find("exited before accepting") == std::string::npos &&
           std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(50ms);
    EXPECT_NE(node.log().find("exited before accepting; still serving"), std::string::npos)
        << node.log();
    EXPECT_EQ(served_pid(port), node.pid());
    EXPECT_EQ(http(port, "/hello").body, "hello from v1");

    // A good release (a wrapper standing for a new build): v2 takes over.
    {
        std::ofstream(dir.file("v2"))
            << "#!/bin/sh\nexec " << VELA_NODE_BINARY << " \"$@\" --name v2\n";
        std::filesystem::permissions(dir.file("v2"), std::filesystem::perms::owner_all);
        std::filesystem::rename(dir.file("v2"), bin);
    }
    const pid_t old = node.pid();
    node.signal(SIGUSR2);
    EXPECT_TRUE(exited_cleanly(node.wait(15s))) << node.log();
    const pid_t next = served_pid(port);
    EXPECT_NE(next, old);
    node.adopt(next);
    EXPECT_EQ(http(port, "/hello").body, "hello from v2");
    // The manager heard of the successor (from it and from the old process), and never a
    // STOPPING=1, which would have stopped the whole service.
    std::string notices;
    for (std::string n; !(n = next_notice(notify, 300ms)).empty();) notices += n + "|";
    const std::string successor = "MAINPID=" + std::to_string(next);
    EXPECT_NE(notices.find(successor + "\nREADY=1"), std::string::npos) << notices;
    EXPECT_NE(notices.find(successor + "|"), std::string::npos) << notices;
    EXPECT_EQ(notices.find("STOPPING"), std::string::npos) << notices;
    ::close(notify);
}

}  // namespace
}  // namespace vela::cluster

#endif  // VELA_NODE_BINARY
