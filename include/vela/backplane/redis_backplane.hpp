#pragma once
// A Hub's rooms across every node that shares one Redis server (a backplane, as SignalR's or
// Socket.IO's Redis adapters are).
//
//     vela::Hub hub;
//     vela::RedisBackplane backplane(hub, "redis://10.0.0.5:6379/0");   // before run()
//     vela::metrics(app, {.counters = backplane.counters()});
//     app.ws("/ws/chat/{room}", [&](vela::WebSocket& ws, vela::Request& req) -> vela::Task<void> {
//         vela::Hub::Room& room = hub.room(req.param("room"));
//         room.join(ws);
//         std::size_t here = co_await backplane.count(room.name());       // on every node
//         ...
//         room.broadcast(text);    // this node's members at once, the other nodes' through Redis
//     });
//
// Delivery. Room::broadcast() delivers to this node's members as without a backplane and
// publishes the message on the room's channel (PUBLISH <prefix>room:<name>). Each node is
// subscribed to the channels of the rooms that have members on it, from the first member's
// join to the last one's leave, and delivers what it receives to its members: encoded once per
// node, whatever its number of members and loops. A node skips its own messages (they were
// delivered locally already).
//
// Guarantees. At most once: Redis pub/sub keeps nothing, so a node that is not connected when
// a message is published does not get it. Order is kept per publisher (the loop or thread
// that broadcast): each loop publishes on one connection of its own. Every message carries
// its publisher's sequence number for the room, so a receiver sees what it missed and counts
// it (lost()); a publish that fails counts in publish_failed(). While Redis is away, local
// delivery goes on; the subscription reconnects with a backoff (reconnect_min doubling to
// reconnect_max) and resubscribes every room with members.
//
// Presence. count(room) sums the members on every node. Each node writes its own figure per
// room (HSET <prefix>presence:<room> <node> <count>) within presence_flush of a change and
// again every presence_interval, and keeps <prefix>node:<node> alive with a presence_ttl
// expiry; a node that died stops doing so, and its members stop counting after presence_ttl.
//
// Threads. The backplane runs its subscription and presence on a loop of its own, on a thread
// it starts. Make it before the server runs and destroy it after run() returned (it detaches
// from the hub); the hub must outlive it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/ops/metrics.hpp"
#include "vela/redis/client.hpp"
#include "vela/server/websocket.hpp"

namespace vela {

/// Settings of a RedisBackplane.
struct RedisBackplaneOptions {
    /// Put before every channel and key the backplane uses (several apps can share a Redis).
    std::string prefix = "vela:hub:";
    /// This node's name in presence and in messages; empty: a random one.
    std::string node_id;
    /// How soon a change of a room's local member count reaches Redis.
    std::chrono::milliseconds presence_flush{20};
    /// How often every room's count (and the node's liveness) is written again.
    std::chrono::milliseconds presence_interval{2000};
    /// A node that wrote nothing for this long no longer counts (at least 2 intervals).
    std::chrono::milliseconds presence_ttl{10000};
    /// The first wait before subscribing again after the connection was lost.
    std::chrono::milliseconds reconnect_min{100};
    /// The longest wait between attempts.
    std::chrono::milliseconds reconnect_max{5000};
};

namespace detail {
class RedisBackplaneImpl;
}

/// Connects a Hub to the other nodes' through Redis (see the top of this file).
class RedisBackplane {
  public:
    /// Attaches to `hub` and starts the backplane's loop; `url` is redis://... (throws
    /// std::invalid_argument for a bad URL or options, redis::ConnectionError when the host
    /// does not resolve; Redis itself is reached in the background).
    RedisBackplane(Hub& hub, const std::string& url, RedisBackplaneOptions options = {});
    /// Detaches from the hub and stops the backplane's loop.
    ~RedisBackplane();
    RedisBackplane(const RedisBackplane&) = delete;
    RedisBackplane& operator=(const RedisBackplane&) = delete;

    /// Members of room `room` on every node (see Presence above). Runs on a vela::Loop; throws
    /// the Redis client's errors when Redis cannot answer.
    Task<std::size_t> count(std::string room);
    /// This node's id.
    const std::string& node_id() const noexcept;
    /// True while the subscription is connected.
    bool connected() const noexcept;

    /// Messages published (attempted) by this node.
    std::uint64_t published() const noexcept;
    /// Of those, publishes that failed (Redis unreachable): the other nodes did not get them.
    std::uint64_t publish_failed() const noexcept;
    /// Messages received from other nodes and delivered here.
    std::uint64_t received() const noexcept;
    /// Messages of other nodes this node missed (gaps in their sequence numbers).
    std::uint64_t lost() const noexcept;
    /// Times the subscription was lost and made again.
    std::uint64_t reconnects() const noexcept;
    /// The figures above for vela::metrics (vela_hub_backplane_*_total).
    std::vector<CounterSource> counters() const;

  private:
    std::shared_ptr<detail::RedisBackplaneImpl> impl_;
    Hub* hub_ = nullptr;
};

}  // namespace vela
