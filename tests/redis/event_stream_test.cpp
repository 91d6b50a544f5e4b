// RedisEventStream against the real Redis server: two nodes serve one stream; events published
// on either reach clients of both, with Redis's ids; a client that comes back to the other
// node with Last-Event-ID gets exactly what it missed; after a Redis restart the readers go on
// with the events published from then on.

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "db/servers.hpp"
#include "e2e/client.hpp"
#include "redis/run.hpp"
#include "vela/backplane/redis_event_stream.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;
using test::run_on_loop;

std::string unique_key(const char* what) {
    return std::string("test:es:") + what + ":" + std::to_string(::getpid()) + ":" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

struct StreamNode {
    std::unique_ptr<RedisEventStream> stream;
    App app;
    StreamNode(const std::string& url, const std::string& key) {
        RedisEventStreamOptions o;
        o.block = 500ms;
        o.reconnect_min = 20ms;
        o.reconnect_max = 200ms;
        stream = std::make_unique<RedisEventStream>(url, key, o);
        app.get("/events", [this](const Request& req) { return stream->serve(req); });
        e2e::start_app(app, 2);
    }
    ~StreamNode() {
        app.stop();
        app.wait();
        stream.reset();
    }
    std::string publish(const std::string& data) {
        return run_on_loop(stream->publish(data, "chat"));
    }
};

// An SSE client on a raw socket: the events' ids and data as they arrive.
struct SseClient {
    e2e::Client c;
    std::string buf;
    SseClient(std::uint16_t port, const std::string& last_id = {}) : c(e2e::Client::tcp(port)) {
        std::string extra;
        if (!last_id.empty()) extra = "Last-Event-ID: " + last_id + "\r\n";
        EXPECT_TRUE(c.send(e2e::get_request("/events", extra)));
    }
    // Reads until `n` events arrived in all (or `within` passes); their (id, data).
    std::vector<std::pair<std::string, std::string>> events(std::size_t n,
                                                            std::chrono::milliseconds within = 5s) {
        const auto end = std::chrono::steady_clock::now() + within;
        for (;;) {
            auto ev = parse();
            if (ev.size() >= n || std::chrono::steady_clock::now() >= end) return ev;
            pollfd p{c.fd(), POLLIN, 0};
            if (::poll(&p, 1, 50) == 1) {
                char tmp[16384];
                const ssize_t r = ::recv(c.fd(), tmp, sizeof tmp, 0);
                if (r <= 0) return parse();
                buf.append(tmp, static_cast<std::size_t>(r));
            }
        }
    }
    std::vector<std::pair<std::string, std::string>> parse() const {
        std::vector<std::pair<std::string, std::string>> out;
        static const std::regex ev("id: ([0-9]+-[0-9]+)\n(?:event: chat\n)?data: ([^\n]*)\n");
        for (auto it = std::sregex_iterator(buf.begin(), buf.end(), ev);
             it != std::sregex_iterator(); ++it)
            out.emplace_back((*it)[1], (*it)[2]);
        return out;
    }
};

// Waits until `n` clients are served by `node` (a client registers once its request ran).
bool served(StreamNode& node, std::size_t n) {
    for (int i = 0; i < 250 && node.stream->clients() < n; ++i) std::this_thread::sleep_for(20ms);
    return node.stream->clients() >= n;
}

TEST(RedisEventStream, EventsReachEveryNodeAndResumeOnAnother) {
    VELA_NEED_REDIS(url);
    const std::string key = unique_key("resume");
    StreamNode a(url, key), b(url, key);
    SseClient on_a(a.app.port()), on_b(b.app.port());
    ASSERT_TRUE(served(a, 1) && served(b, 1));

    std::vector<std::string> ids;
    for (int i = 0; i < 3; ++i) ids.push_back((i % 2 ? b : a).publish("m" + std::to_string(i)));
    for (SseClient* c : {&on_a, &on_b}) {
        auto got = c->events(3);
        ASSERT_EQ(got.size(), 3u) << c->buf;
        for (int i = 0; i < 3; ++i) {
            EXPECT_EQ(got[i].first, ids[i]);
            EXPECT_EQ(got[i].second, "m" + std::to_string(i));
        }
    }
    // The client of a leaves after m1 (its node died); m3..m5 are published meanwhile; it
    // reconnects to b with the last id it saw: m2..m5, each once, then live events.
    on_a.c = e2e::Client();
    for (int i = 3; i < 6; ++i) ids.push_back(a.publish("m" + std::to_string(i)));
    SseClient back(b.app.port(), ids[1]);
    auto got = back.events(4);
    ASSERT_EQ(got.size(), 4u) << back.buf;
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i].second, "m" + std::to_string(i + 2));
    ids.push_back(b.publish("m6"));
    got = back.events(5);
    ASSERT_EQ(got.size(), 5u) << back.buf;
    EXPECT_EQ(got[4].first, ids[6]);
    EXPECT_EQ(got[4].second, "m6");
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(back.parse().size(), 5u) << "a replayed event came twice: " << back.buf;
}

TEST(RedisEventStream, ARedisRestartDoesNotEndTheStreams) {
    VELA_NEED_REDIS(url);
    const std::string key = unique_key("restart");
    StreamNode a(url, key);
    SseClient c(a.app.port());
    ASSERT_TRUE(served(a, 1));
    a.publish("before");
    ASSERT_EQ(c.events(1).size(), 1u);
    // The test server keeps nothing on disk: the stream starts again empty, with later ids.
    ASSERT_TRUE(test::db_servers("redis-stop"));
    ASSERT_TRUE(test::db_servers("redis-start"));
    const auto end = std::chrono::steady_clock::now() + 10s;
    std::string id;
    while (id.empty() && std::chrono::steady_clock::now() < end) {
        try {
            id = a.publish("after");
        } catch (const std::exception&) {
            std::this_thread::sleep_for(50ms);
        }
    }
    ASSERT_FALSE(id.empty());
    auto got = c.events(2, 10s);
    ASSERT_EQ(got.size(), 2u) << c.buf;
    EXPECT_EQ(got[1].second, "after");
    EXPECT_EQ(got[1].first, id);
}

TEST(RedisEventStream, BadOptionsAreRefused) {
    RedisEventStreamOptions o;
    o.max_len = 0;
    EXPECT_THROW(RedisEventStream("redis://127.0.0.1:1/0", "k", o), std::invalid_argument);
    EXPECT_THROW(RedisEventStream("redis://127.0.0.1:1/0", "", {}), std::invalid_argument);
}

}  // namespace
}  // namespace vela
