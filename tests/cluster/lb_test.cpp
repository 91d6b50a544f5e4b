// Three vela nodes sharing one Redis, behind a real load balancer (HAProxy, then nginx, with
// the configurations docs/deploy.md gives): rooms and presence span the nodes, the shared rate
// limit holds over all of them, a session made on one node is valid on another, a node killed
// mid-run loses its clients to the others (an SSE client resumes with no event lost), and a
// Redis restart mid-run is survived with the loss counted.

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include <regex>
#include <set>

#include "cluster/cluster.hpp"
#include "db/servers.hpp"
#include "e2e/ws/ws_client.hpp"

#ifdef VELA_NODE_BINARY

namespace vela::cluster {
namespace {

using e2e::Ms;
using e2e::WsClient;

// A name no earlier test used (one process may run both balancers' tests).
std::string unique(const char* what) {
    return std::string(what) + std::to_string(::getpid()) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

// The load balancers under test.
enum class Balancer { haproxy, nginx };

std::string haproxy_config(std::uint16_t port, const std::vector<std::uint16_t>& nodes) {
    std::string c =
        "global\n"
        "  log stderr format raw local0 warning\n"
        "defaults\n"
        "  mode http\n"
        "  log global\n"
        "  option redispatch\n"
        "  retries 3\n"
        "  timeout connect 1s\n"
        "  timeout client 30s\n"
        "  timeout server 30s\n"
        "  timeout tunnel 1h\n"
        "frontend web\n"
        "  bind 127.0.0.1:" +
        std::to_string(port) +
        "\n"
        "  default_backend nodes\n"
        "backend nodes\n"
        "  balance roundrobin\n"
        "  option httpchk GET /ready\n"
        "  http-check expect status 200\n"
        "  default-server inter 200ms fall 1 rise 1\n";
    for (std::size_t i = 0; i < nodes.size(); ++i)
        c += "  server n" + std::to_string(i) + " 127.0.0.1:" + std::to_string(nodes[i]) +
             " check\n";
    return c;
}

std::string nginx_config(const std::string& dir, std::uint16_t port,
                         const std::vector<std::uint16_t>& nodes) {
    std::string c = std::string(::getuid() == 0 ? "user root;\n" : "") +
                    "daemon off;\n"
                    "worker_processes 1;\n"
                    "pid " +
                    dir + "/nginx.pid;\n" + "error_log " + dir +
                    "/nginx-error.log warn;\n"
                    "events { worker_connections 1024; }\n"
                    "http {\n"
                    "  access_log off;\n"
                    "  client_body_temp_path " +
                    dir + "/body;\n  proxy_temp_path " + dir +
                    "/proxy;\n"
                    "  fastcgi_temp_path " +
                    dir + "/fcgi;\n  uwsgi_temp_path " + dir + "/uwsgi;\n  scgi_temp_path " + dir +
                    "/scgi;\n"
                    "  map $http_upgrade $connection_upgrade { default upgrade; '' ''; }\n"
                    "  upstream nodes {\n";
    for (std::uint16_t p : nodes)
        c += "    server 127.0.0.1:" + std::to_string(p) + " max_fails=1 fail_timeout=5s;\n";
    c += "    keepalive 16;\n"
         "  }\n"
         "  server {\n"
         "    listen 127.0.0.1:" +
         std::to_string(port) +
         ";\n"
         "    location / {\n"
         "      proxy_pass http://nodes;\n"
         "      proxy_http_version 1.1;\n"
         "      proxy_set_header Upgrade $http_upgrade;\n"
         "      proxy_set_header Connection $connection_upgrade;\n"
         "      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n"
         "      proxy_buffering off;\n"
         "      proxy_read_timeout 1h;\n"
         "      proxy_next_upstream error timeout;\n"
         "      proxy_connect_timeout 1s;\n"
         "    }\n"
         "  }\n"
         "}\n";
    return c;
}

// An SSE client on a raw socket (ids and data of the events as they arrive).
struct SseReader {
    int fd = -1;
    std::string buf;
    SseReader(std::uint16_t port, const std::string& last_id) {
        fd = net::connect_tcp("127.0.0.1", port);
        std::string req = "GET /events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n";
        if (!last_id.empty()) req += "Last-Event-ID: " + last_id + "\r\n";
        req += "\r\n";
        EXPECT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(req.size()));
    }
    ~SseReader() {
        if (fd >= 0) ::close(fd);
    }
    // Reads for up to `within` or until `n` events or the end of the connection.
    std::vector<std::pair<std::string, std::string>> read(std::size_t n,
                                                          std::chrono::milliseconds within,
                                                          bool* ended = nullptr) {
        const auto end = std::chrono::steady_clock::now() + within;
        for (;;) {
            auto ev = events();
            if (ev.size() >= n || std::chrono::steady_clock::now() >= end) return ev;
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 50) == 1) {
                char tmp[16384];
                const ssize_t r = ::recv(fd, tmp, sizeof tmp, 0);
                if (r <= 0) {
                    if (ended) *ended = true;
                    return events();
                }
                buf.append(tmp, static_cast<std::size_t>(r));
            }
        }
    }
    std::vector<std::pair<std::string, std::string>> events() const {
        std::vector<std::pair<std::string, std::string>> out;
        static const std::regex ev("id: ([0-9]+-[0-9]+)\n(?:event: [a-z]+\n)?data: ([^\n]*)\n");
        for (auto it = std::sregex_iterator(buf.begin(), buf.end(), ev);
             it != std::sregex_iterator(); ++it)
            out.emplace_back((*it)[1], (*it)[2]);
        return out;
    }
};

class Cluster : public ::testing::TestWithParam<Balancer> {
  protected:
    void SetUp() override {
        redis_ = test::env_or_empty("VELA_TEST_REDIS_URL");
        if (redis_.empty()) {
            if (test::in_ci()) FAIL() << "VELA_TEST_REDIS_URL is not set";
            GTEST_SKIP() << "no Redis server (run scripts/test)";
        }
        const bool haproxy = GetParam() == Balancer::haproxy;
        const std::string bin = haproxy                                      ? "haproxy"
                                : std::filesystem::exists("/usr/sbin/nginx") ? "/usr/sbin/nginx"
                                                                             : "nginx";
        if (!e2e::have(bin)) {
            if (test::in_ci()) FAIL() << "the load balancer is not installed";
            GTEST_SKIP() << "the load balancer is not installed";
        }
        // A fresh start for this test's keys (events, limits, sessions are prefixed anyway).
        run_command("redis-cli -u " + shell_quote(redis_) + " DEL vela:test:events >/dev/null");
        for (int i = 0; i < 3; ++i) {
            ports_.push_back(free_port());
            nodes_.push_back(std::make_unique<Node>());
            start_node(i);
        }
        for (std::uint16_t p : ports_) ASSERT_TRUE(wait_ready(p)) << nodes_[0]->log();
        lb_port_ = free_port();
        if (haproxy) {
            std::ofstream(dir_.file("haproxy.cfg")) << haproxy_config(lb_port_, ports_);
            lb_.start(bin, {"-f", dir_.file("haproxy.cfg"), "-db"}, dir_.file("lb.log"));
        } else {
            for (const char* d : {"body", "proxy", "fcgi", "uwsgi", "scgi"})
                std::filesystem::create_directories(dir_.file(d));
            std::ofstream(dir_.file("nginx.conf")) << nginx_config(dir_.path(), lb_port_, ports_);
            lb_.start(bin, {"-c", dir_.file("nginx.conf"), "-p", dir_.path(), "-e", "stderr"},
                      dir_.file("lb.log"));
        }
        ASSERT_TRUE(wait_ready(lb_port_)) << read_file(dir_.file("lb.log"));
    }

    void start_node(int i) {
        nodes_[i]->start(VELA_NODE_BINARY,
                         {"--listen", "127.0.0.1:" + std::to_string(ports_[i]), "--threads", "1",
                          "--redis", redis_, "--name", "n" + std::to_string(i), "--rate", "20"},
                         dir_.file("node" + std::to_string(i) + ".log"));
    }

    // A WebSocket client through the balancer in `room`; the node it reached.
    std::pair<WsClient, std::string> join(const std::string& room) {
        WsClient c = WsClient::connect(lb_port_);
        auto r = c.handshake("/ws/" + room);
        EXPECT_TRUE(r && c.open()) << c.error() << (r ? r->body : "");
        auto hello = c.read_message(Ms{5000});
        EXPECT_TRUE(hello) << c.error();
        std::string node = hello ? hello->payload.substr(std::string("welcome ").size()) : "";
        return {std::move(c), node};
    }

    std::size_t count_on(std::uint16_t port, const std::string& room) {
        const Reply r = http(port, "/count/" + room);
        return r.status == 200 ? std::stoul(r.body) : 0;
    }

    TempDir dir_;
    std::string redis_;
    std::vector<std::uint16_t> ports_;
    std::vector<std::unique_ptr<Node>> nodes_;
    std::uint16_t lb_port_ = 0;
    Node lb_;
};

TEST_P(Cluster, RoomsPresenceLimitsAndSessionsSpanTheNodes) {
    const std::string room = unique("lobby");
    // Round robin: four clients reach at least two different nodes.
    std::vector<WsClient> clients;
    std::vector<std::string> on;
    for (int i = 0; i < 4; ++i) {
        auto [c, node] = join(room);
        clients.push_back(std::move(c));
        on.push_back(node);
    }
    ASSERT_GE(std::set<std::string>(on.begin(), on.end()).size(), 2u);
    bool agree = false;
    for (int i = 0; i < 100 && !agree; ++i) {
        agree = true;
        for (std::uint16_t p : ports_) agree = agree && count_on(p, room) == 4;
        if (!agree) std::this_thread::sleep_for(50ms);
    }
    EXPECT_TRUE(agree) << count_on(ports_[0], room) << " " << count_on(ports_[1], room) << " "
                       << count_on(ports_[2], room);
    ASSERT_TRUE(clients[0].send_text("hi from " + on[0]));
    for (std::size_t i = 1; i < clients.size(); ++i) {
        auto m = clients[i].read_message(Ms{5000});
        ASSERT_TRUE(m) << "client on " << on[i] << ": " << clients[i].error();
        EXPECT_EQ(m->payload, "hi from " + on[0]);
    }

    // The shared limit: 20 a minute for one client, whichever node its requests reach.
    // A key of its own (one process may run both balancers' tests, one after the other).
    const std::string who = "-H 'X-Client: " + unique("t") + "'";
    int accepted = 0, refused = 0;
    for (int i = 0; i < 45; ++i) {
        const int s = http(lb_port_, "/limited", who).status;
        accepted += s == 200;
        refused += s == 429;
    }
    EXPECT_GE(accepted, 20);
    EXPECT_LE(accepted, 21);  // one token may come back while the requests run
    EXPECT_EQ(accepted + refused, 45);

    // A session made on one node is read on the others.
    const std::string jar = dir_.file("cookies");
    ASSERT_EQ(http(ports_[0], "/session?v=kept", "-d '' -c " + shell_quote(jar)).status, 200);
    for (std::uint16_t p : {ports_[1], ports_[2], lb_port_}) {
        const Reply r = http(p, "/session", "-b " + shell_quote(jar));
        EXPECT_EQ(r.status, 200);
        EXPECT_EQ(r.body, "kept");
    }
}

TEST_P(Cluster, AKilledNodesClientsReconnectAndTheEventStreamResumes) {
    const std::string room = unique("r");
    // An SSE client through the balancer, and the node it reached.
    SseReader sse(lb_port_, "");
    ASSERT_EQ(http(lb_port_, "/events?data=e0", "-d ''").status, 200);
    auto got = sse.read(1, 5s);
    ASSERT_EQ(got.size(), 1u) << sse.buf;
    // The node serving it is killed, with a WebSocket client of the room on it too.
    int v = -1;
    for (int i = 0; i < 3; ++i)
        if (http(ports_[i], "/events/clients").body == "1") v = i;
    ASSERT_GE(v, 0);
    const std::string victim = "n" + std::to_string(v);
    WsClient ws;
    std::string on;
    for (int i = 0; i < 6 && on != victim; ++i) std::tie(ws, on) = join(room);
    ASSERT_EQ(on, victim);
    nodes_[v]->signal(SIGKILL);
    nodes_[v]->wait(5s);
    // Events published while the stream's client may be cut off.
    std::vector<std::string> published;
    for (int i = 1; i <= 5; ++i) {
        const Reply r = http(lb_port_, "/events?data=e" + std::to_string(i), "-d ''");
        ASSERT_EQ(r.status, 200) << r.body;
        published.push_back(r.body);
    }
    // The WebSocket client sees its connection end and comes back through the balancer.
    auto m = ws.read_message(Ms{3000});
    EXPECT_FALSE(m);
    auto [again, node] = join(room);
    EXPECT_NE(node, victim);
    // The SSE client's stream ended with its node; it reconnects through the balancer with
    // the last id it saw and gets every event after it, once.
    bool ended = false;
    got = sse.read(6, 3s, &ended);
    EXPECT_TRUE(ended);
    ASSERT_EQ(got.size(), 1u) << sse.buf;
    SseReader resumed(lb_port_, got.back().first);
    auto rest = resumed.read(5, 5s);
    ASSERT_EQ(rest.size(), 5u) << resumed.buf;
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(rest[i].second, "e" + std::to_string(i + 1));
        EXPECT_EQ(rest[i].first, published[i]);
    }
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(resumed.events().size(), 5u) << "an event came twice: " << resumed.buf;
    start_node(v);  // for the destructor's SIGTERM
    ASSERT_TRUE(wait_ready(ports_[v]));
}

TEST_P(Cluster, ARedisRestartMidRunIsSurvivedAndTheLossCounted) {
    const std::string room = unique("x");
    WsClient a, b;
    std::string na, nb;
    // Two clients on two different nodes.
    std::tie(a, na) = join(room);
    for (int i = 0; i < 6 && (nb.empty() || nb == na); ++i) std::tie(b, nb) = join(room);
    ASSERT_NE(na, nb);
    const std::uint16_t pa = ports_[na.back() - '0'];
    for (int i = 0; i < 100 && count_on(pa, room) < 2; ++i) std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(a.send_text("one"));
    auto m = b.read_message(Ms{5000});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload, "one");

    ASSERT_TRUE(test::db_servers("redis-stop"));
    std::this_thread::sleep_for(300ms);
    ASSERT_TRUE(a.send_text("lost"));  // cannot cross: counted as failed on a's node
    EXPECT_FALSE(b.read_message(Ms{500}));
    ASSERT_TRUE(test::db_servers("redis-start"));
    // Delivery resumes once the subscriptions are back (the nodes retry within 500 ms).
    bool crossed = false;
    for (int i = 0; i < 40 && !crossed; ++i) {
        ASSERT_TRUE(a.send_text("again"));
        auto r = b.read_message(Ms{250});
        crossed = r && r->payload == "again";
    }
    EXPECT_TRUE(crossed);
    const std::string metrics = http(pa, "/metrics").body;
    std::smatch f;
    ASSERT_TRUE(std::regex_search(metrics, f,
                                  std::regex("vela_hub_backplane_publish_failed_total ([0-9]+)")))
        << metrics;
    EXPECT_GE(std::stoi(f[1]), 1);
    for (auto& n : nodes_) EXPECT_EQ(::waitpid(n->pid(), nullptr, WNOHANG), 0) << "a node died";
}

INSTANTIATE_TEST_SUITE_P(Balancers, Cluster, ::testing::Values(Balancer::haproxy, Balancer::nginx),
                         [](const auto& info) {
                             return info.param == Balancer::haproxy ? std::string("HAProxy")
                                                                    : std::string("nginx");
                         });

}  // namespace
}  // namespace vela::cluster

#endif  // VELA_NODE_BINARY
