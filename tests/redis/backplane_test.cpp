// RedisBackplane against the real Redis server: two nodes (two Apps, each with its own Hub and
// backplane, as two processes would have) share rooms. Messages cross nodes in order, a room
// without members here is not received, presence is summed over nodes and a dead node's
// members age out, and a Redis restart loses messages (counted) but not the rooms.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "db/servers.hpp"
#include "e2e/client.hpp"
#include "e2e/ws/ws_client.hpp"
#include "redis/run.hpp"
#include "vela/backplane/redis_backplane.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;
using e2e::WsClient;
using test::run_on_loop;

std::string unique_prefix(const char* what) {
    return std::string("test:bp:") + what + ":" + std::to_string(::getpid()) + ":" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ":";
}

// One node: an App whose /ws/{room} joins the room and broadcasts what it receives to the
// others (not back to the sender).
struct TestNode {
    Hub hub;
    std::unique_ptr<RedisBackplane> bp;
    App app;

    TestNode(const std::string& url, RedisBackplaneOptions o) {
        bp = std::make_unique<RedisBackplane>(hub, url, o);
        app.ws("/ws/{room}", [this](WebSocket& ws, Request& req) -> Task<void> {
            Hub::Room& room = hub.room(req.param("room"));
            room.join(ws);
            for (;;) {
                WsMessage m = co_await ws.receive();
                if (m.is_close()) break;
                room.broadcast(m.data, m.type, &ws);
            }
            room.leave(ws);
        });
        e2e::start_app(app, 2);
    }
    ~TestNode() {
        app.stop();
        app.wait();
        bp.reset();
    }
    WsClient join(const std::string& room) {
        WsClient c = WsClient::connect(app.port());
        auto r = c.handshake("/ws/" + room);
        EXPECT_TRUE(r && c.open()) << c.error();
        return c;
    }
    std::size_t count(const std::string& room) { return run_on_loop(bp->count(room)); }
};

// Waits until `pred` holds (presence and subscriptions settle within a few flushes).
template <class F>
bool eventually(F pred, std::chrono::milliseconds within = 5s) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end) {
        if (pred()) return true;
        std::this_thread::sleep_for(20ms);
    }
    return pred();
}

RedisBackplaneOptions fast(const std::string& prefix, const std::string& node) {
    RedisBackplaneOptions o;
    o.prefix = prefix;
    o.node_id = node;
    o.presence_interval = 200ms;
    o.presence_ttl = 1000ms;
    o.reconnect_min = 20ms;
    o.reconnect_max = 200ms;
    return o;
}

TEST(RedisBackplane, RoomsSpanNodesInOrderAndPresenceIsSummed) {
    VELA_NEED_REDIS(url);
    const std::string prefix = unique_prefix("rooms");
    TestNode a(url, fast(prefix, "a"));
    TestNode b(url, fast(prefix, "b"));
    ASSERT_TRUE(eventually([&] { return a.bp->connected() && b.bp->connected(); }));

    WsClient a1 = a.join("lobby");
    WsClient b1 = b.join("lobby");
    WsClient b2 = b.join("lobby");
    WsClient other = b.join("elsewhere");
    ASSERT_TRUE(eventually([&] { return a.count("lobby") == 3 && b.count("lobby") == 3; }))
        << a.count("lobby") << " " << b.count("lobby");
    EXPECT_EQ(a.count("elsewhere"), 1u);

    ASSERT_TRUE(a1.send_text("hello from a"));
    for (WsClient* c : {&b1, &b2}) {
        auto m = c->read_message(5s);
        ASSERT_TRUE(m) << c->error();
        EXPECT_EQ(m->payload, "hello from a");
    }
    ASSERT_TRUE(b1.send_text("hello from b"));
    auto m = a1.read_message(5s);
    ASSERT_TRUE(m) << a1.error();
    EXPECT_EQ(m->payload, "hello from b");
    m = b2.read_message(5s);  // b's own member, delivered locally
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload, "hello from b");
    // Order per publisher, across the nodes.
    for (int i = 0; i < 300; ++i) ASSERT_TRUE(a1.send_text("n" + std::to_string(i)));
    for (int i = 0; i < 300; ++i) {
        auto n = b1.read_message(5s);
        ASSERT_TRUE(n) << i << " " << b1.error();
        ASSERT_EQ(n->payload, "n" + std::to_string(i));
    }
    // The room with no member on a: nothing of lobby reached it.
    EXPECT_FALSE(other.read_message(200ms));
    // ... and a is not subscribed to it: what b's member says there never reaches a.
    const std::uint64_t a_received = a.bp->received();
    WsClient other2 = b.join("elsewhere");
    ASSERT_TRUE(other2.send_text("only b"));
    auto o = other.read_message(5s);
    ASSERT_TRUE(o);
    EXPECT_EQ(o->payload, "only b");
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(a.bp->received(), a_received);
    redis::Client raw(url);
    const std::int64_t subscribers = run_on_loop([&]() -> Task<std::int64_t> {
        redis::Reply r = co_await raw.command("PUBSUB", "NUMSUB", prefix + "room:elsewhere");
        co_return r.as_array().at(1).as_integer();
    }());
    EXPECT_EQ(subscribers, 1);  // b alone
    EXPECT_EQ(b.bp->lost(), 0u);
    EXPECT_GE(b.bp->received(), 301u);
    EXPECT_GE(a.bp->published(), 301u);
    EXPECT_EQ(a.bp->publish_failed(), 0u);

    // Leaving shows on both nodes.
    b2 = WsClient();
    ASSERT_TRUE(eventually([&] { return a.count("lobby") == 2 && b.count("lobby") == 2; }));
}

TEST(RedisBackplane, ADeadNodesMembersAgeOutAndAStoppedNodeWithdraws) {
    VELA_NEED_REDIS(url);
    const std::string prefix = unique_prefix("presence");
    // A long expiry: b's members must go because b says so, not because its key expired.
    RedisBackplaneOptions slow = fast(prefix, "a");
    slow.presence_ttl = 20s;
    TestNode a(url, slow);
    ASSERT_TRUE(eventually([&] { return a.bp->connected(); }));
    WsClient a1 = a.join("r");
    // A node that died: its figure is there, its liveness key is not (it expired).
    redis::Client raw(url);
    run_on_loop(
        [&]() -> Task<void> { co_await raw.command("HSET", prefix + "presence:r", "ghost", 7); }());
    ASSERT_TRUE(eventually([&] { return a.count("r") == 1; })) << a.count("r");
    {
        RedisBackplaneOptions slow_b = slow;
        slow_b.node_id = "b";
        TestNode b(url, slow_b);
        WsClient b1 = b.join("r");
        ASSERT_TRUE(eventually([&] { return a.count("r") == 2; })) << a.count("r");
        WsClient b2 = b.join("r");
        ASSERT_TRUE(eventually([&] { return a.count("r") == 3; })) << a.count("r");
    }  // b stops with its members still there: it takes them out itself
    EXPECT_TRUE(eventually([&] { return a.count("r") == 1; }, 1s)) << a.count("r");
}

TEST(RedisBackplane, RedisRestartLosesMessagesNotRooms) {
    VELA_NEED_REDIS(url);
    const std::string prefix = unique_prefix("restart");
    TestNode a(url, fast(prefix, "a"));
    TestNode b(url, fast(prefix, "b"));
    WsClient a1 = a.join("r");
    WsClient b1 = b.join("r");
    ASSERT_TRUE(eventually([&] { return a.count("r") == 2 && b.count("r") == 2; }));
    ASSERT_TRUE(a1.send_text("before"));
    auto m = b1.read_message(5s);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload, "before");

    ASSERT_TRUE(test::db_servers("redis-stop"));
    ASSERT_TRUE(eventually([&] { return !a.bp->connected() && !b.bp->connected(); }));
    // Redis away: local delivery goes on, the publish fails and is counted.
    WsClient a2 = a.join("r");
    ASSERT_TRUE(a1.send_text("during"));
    m = a2.read_message(5s);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload, "during");
    EXPECT_TRUE(eventually([&] { return a.bp->publish_failed() >= 1; }));
    EXPECT_FALSE(b1.read_message(300ms));

    ASSERT_TRUE(test::db_servers("redis-start"));
    ASSERT_TRUE(eventually([&] { return a.bp->connected() && b.bp->connected(); }, 10s));
    EXPECT_GE(a.bp->reconnects(), 1u);
    ASSERT_TRUE(eventually([&] { return a.count("r") == 3 && b.count("r") == 3; }, 10s));
    ASSERT_TRUE(a1.send_text("after"));
    m = b1.read_message(5s);
    ASSERT_TRUE(m) << b1.error();
    EXPECT_EQ(m->payload, "after");
    // b saw a's sequence jump over the message it never got.
    EXPECT_EQ(b.bp->lost(), 1u);
    m = a2.read_message(5s);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload, "after");
}

TEST(RedisBackplane, StopsPromptlyWhileRedisIsAway) {
    Hub hub;
    RedisBackplaneOptions o = fast(unique_prefix("away"), "z");
    const auto t0 = std::chrono::steady_clock::now();
    {
        RedisBackplane bp(hub, "redis://127.0.0.1:1/0", o);  // nothing listens there
        std::this_thread::sleep_for(300ms);                  // a few failed attempts
        EXPECT_FALSE(bp.connected());
        EXPECT_NE(hub.backplane(), nullptr);
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    EXPECT_EQ(hub.backplane(), nullptr);
}

TEST(RedisBackplane, CountersReachMetrics) {
    VELA_NEED_REDIS(url);
    const std::string prefix = unique_prefix("metrics");
    Hub hub;
    RedisBackplane bp(hub, url, fast(prefix, "m"));
    App app;
    metrics(app, {.counters = bp.counters()});
    e2e::start_app(app);
    e2e::Client c = e2e::Client::tcp(app.port());
    ASSERT_TRUE(c.send(e2e::get_request("/metrics")));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    for (const char* f :
         {"vela_hub_backplane_published_total 0", "vela_hub_backplane_publish_failed_total 0",
          "vela_hub_backplane_received_total 0", "vela_hub_backplane_lost_total 0",
          "vela_hub_backplane_reconnects_total 0"})
        EXPECT_NE(r->body.find(f), std::string::npos) << f << "\n" << r->body;
    app.stop();
    app.wait();
}

TEST(RedisBackplane, BadOptionsAreRefused) {
    Hub hub;
    RedisBackplaneOptions o;
    o.presence_ttl = o.presence_interval;
    EXPECT_THROW(RedisBackplane(hub, "redis://127.0.0.1:1/0", o), std::invalid_argument);
    EXPECT_THROW(RedisBackplane(hub, "nonsense://x", {}), std::invalid_argument);
    EXPECT_EQ(hub.backplane(), nullptr);
}

}  // namespace
}  // namespace vela
