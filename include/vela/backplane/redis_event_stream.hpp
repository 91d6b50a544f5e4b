#pragma once
// A server-sent event stream kept in a Redis Stream: every node appends to it and serves it,
// and a client that reconnects to any node with Last-Event-ID gets what it missed.
//
//     vela::RedisEventStream news("redis://10.0.0.5:6379/0", "news");   // before run()
//     app.get("/news", [&news](const vela::Request& req) { return news.serve(req); });
//     app.post("/news", [&news](vela::Request& req) -> vela::Task<std::string> {
//         co_return co_await news.publish(std::string(req.body()), "headline");  // its id
//     });
//
// Storage. publish() is XADD <key> MAXLEN ~ max_len * event <type> data <data>: Redis gives
// the event its id ("<ms>-<n>", increasing), and keeps about the last max_len events.
//
// Serving. serve() answers text/event-stream with every new event (id, event type, data). A
// request carrying Last-Event-ID (a browser's EventSource sends it when it reconnects, to
// whichever node the load balancer picks) first gets the events after that id still in the
// stream (the newest replay_max of them, by XREVRANGE), then the new ones: none is repeated,
// and none is lost as long as Redis still holds it and it is among those replay_max. An id
// older than what the stream kept replays from the oldest it has. (Needs Redis 6.2 or later:
// exclusive ranges.) Each node reads the stream once (one XREAD BLOCK loop on a thread of its
// own, resuming from the last id it saw after a lost connection) and hands each event to
// its clients' loops, whatever their number.
//
// Lifetime: make it before the server runs, destroy it after run() returned. The constructor
// returns once the node's reader knows where the stream ends (or found Redis unreachable), so
// every event published afterwards reaches the clients the node serves.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/ops/metrics.hpp"
#include "vela/server/stream.hpp"

namespace vela {

/// Settings of a RedisEventStream.
struct RedisEventStreamOptions {
    /// Events the stream keeps, about (XADD MAXLEN ~).
    std::size_t max_len = 10'000;
    /// Events replayed at most to one reconnecting client (the newest ones after its id).
    std::size_t replay_max = 1'000;
    /// How long one XREAD waits for new events before asking again.
    std::chrono::milliseconds block{5'000};
    /// The first wait before reading again after a lost connection (doubling to
    /// reconnect_max).
    std::chrono::milliseconds reconnect_min{100};
    /// The longest wait between attempts.
    std::chrono::milliseconds reconnect_max{5'000};
    /// The responses' heartbeat and retry.
    SseOptions sse{};
};

namespace detail {
class RedisEventStreamImpl;
}

/// An event stream in Redis, served to clients on every node (see the top of this file).
class RedisEventStream {
  public:
    /// Uses the stream `key` on the Redis server at `url` and starts reading it; throws
    /// std::invalid_argument for a bad URL or options, redis::ConnectionError when the host
    /// does not resolve.
    RedisEventStream(const std::string& url, std::string key, RedisEventStreamOptions options = {});
    /// Stops reading; streams still open end.
    ~RedisEventStream();
    RedisEventStream(const RedisEventStream&) = delete;
    RedisEventStream& operator=(const RedisEventStream&) = delete;

    /// Appends an event (`event` empty: the default "message" type); returns its id. Runs on
    /// a vela::Loop; throws the Redis client's errors.
    Task<std::string> publish(std::string data, std::string event = {});
    /// The text/event-stream response for `req` (see Serving above).
    Response serve(const Request& req);
    /// Clients being served by this node now.
    std::size_t clients() const noexcept;
    /// Times the reader lost its connection and read again.
    std::uint64_t reconnects() const noexcept;
    /// reconnects() for vela::metrics (vela_event_stream_reconnects_total{stream="<key>"}).
    CounterSource counter() const;

  private:
    std::shared_ptr<detail::RedisEventStreamImpl> impl_;
};

}  // namespace vela
