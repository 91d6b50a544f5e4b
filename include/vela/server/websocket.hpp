#pragma once
// WebSocket sessions (RFC 6455, permessage-deflate RFC 7692) on the server's loops.
//
// A route registered with App::ws() answers the upgrade handshake (after the middleware ran,
// which may refuse it with an ordinary response); the connection then belongs to a
// WebSocket driver on the same loop and the route's coroutine runs with it:
//
//     app.ws("/echo", [](vela::WebSocket& ws, vela::Request& req) -> vela::Task<void> {
//         for (;;) {
//             vela::WsMessage m = co_await ws.receive();
//             if (m.is_close()) co_return;
//             co_await ws.send(m.data, m.type);
//         }
//     });
//
// Received messages are views valid until the next receive() (no copy, no allocation per
// message). Sends are queued in the connection's output buffer and written together once per
// loop iteration; a client that does not read meets the endpoint's SlowClient policy when its
// queue passes send_queue_max. WsSender sends from other threads and loops; Hub keeps rooms.

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/ws/deflate.hpp"
#include "vela/ws/frame.hpp"

namespace vela {

namespace detail {
class WsConnection;
struct WsShared;
}  // namespace detail

/// The kind of a WebSocket message.
enum class WsType : std::uint8_t { text, binary, close };

/// What a sender meets when the client's queue is full.
enum class SlowClient : std::uint8_t {
    wait,   ///< send() suspends until the queue drains (cross-thread sends return false)
    drop,   ///< the message is dropped and send() returns false
    close,  ///< the connection is closed with 1008 (policy violation)
};

/// Settings of one WebSocket endpoint.
struct WsOptions {
    /// Subprotocols the endpoint speaks, in preference order; the first one the client offers
    /// is chosen. Empty: no Sec-WebSocket-Protocol is answered. A client that offers only
    /// others is refused (400) when require_subprotocol is set.
    std::vector<std::string> subprotocols;
    /// Refuse clients that offer none of `subprotocols`.
    bool require_subprotocol = false;
    /// Allowed Origin values ("https://example.com"); empty: any origin is allowed. A
    /// request from another origin is refused with 403; one without Origin (not from a
    /// browser, which always sends it) is let in.
    std::vector<std::string> origins;
    /// Largest frame payload a client may send (close 1009 above it).
    std::size_t max_frame = 1 << 20;
    /// Largest message a client may send, after decompression (close 1009 above it).
    std::size_t max_message = 1 << 20;
    /// A ping is sent after this long without traffic from the client (0: never).
    std::chrono::milliseconds ping_interval{30'000};
    /// The connection is dropped when nothing (a pong or anything else) arrives this long
    /// after a ping.
    std::chrono::milliseconds pong_timeout{15'000};
    /// How long our close frame waits for the client's before the socket is closed.
    std::chrono::milliseconds close_timeout{5'000};
    /// Bytes queued for the client before the slow-client policy applies.
    std::size_t send_queue_max = 1 << 20;
    /// The slow-client policy.
    SlowClient slow_client = SlowClient::wait;
    /// permessage-deflate settings (on by default, server without context takeover).
    ws::DeflateOptions deflate;
};

/// A received message, or the close that ended the session.
struct WsMessage {
    /// text, binary, or close (the session is over; later receives return close again).
    WsType type = WsType::close;
    /// The payload (text is valid UTF-8), or the close reason. Valid until the next
    /// receive() on the same WebSocket.
    std::string_view data;
    /// For close: the code the client sent (1005 when none, 1006 when the connection ended
    /// without a close frame), or the code the server closed with.
    std::uint16_t code = 0;

    /// True for a text message.
    bool is_text() const noexcept { return type == WsType::text; }
    /// True for a binary message.
    bool is_binary() const noexcept { return type == WsType::binary; }
    /// True when the session has ended.
    bool is_close() const noexcept { return type == WsType::close; }
};

/// Sends to a WebSocket from any thread or loop. Cheap to copy; harmless after the
/// connection has ended (sends return false).
class WsSender {
  public:
    /// Refers to no connection.
    WsSender() = default;
    /// Queues a message for the connection's loop to write (in a batch with the others).
    /// False when the connection has ended, or its queue is full (SlowClient::close then
    /// closes it with 1008).
    bool send(std::string data, WsType type = WsType::text) const;
    /// Starts the closing handshake from any thread.
    void close(std::uint16_t code = ws::close_code::normal, std::string reason = {}) const;
    /// True while the connection is open.
    bool open() const noexcept;

  private:
    friend class detail::WsConnection;
    friend class WebSocket;
    explicit WsSender(std::shared_ptr<detail::WsShared> s) noexcept : s_(std::move(s)) {}
    std::shared_ptr<detail::WsShared> s_;
};

/// One WebSocket session, owned by its connection; the route's coroutine gets a reference
/// valid until it returns.
class WebSocket {
  public:
    /// What co_await receive() uses.
    struct ReceiveAwaiter {
        /// The session.
        WebSocket& ws;
        /// True when a message (or the close) is already there.
        bool await_ready() const noexcept;
        /// Waits for the next message.
        void await_suspend(std::coroutine_handle<> h) noexcept;
        /// The message.
        WsMessage await_resume() noexcept;
    };
    /// What co_await send() uses.
    struct SendAwaiter {
        /// The session.
        WebSocket& ws;
        /// The message (the caller's bytes stay alive across the co_await).
        std::string_view data;
        /// Its type.
        WsType type;
        /// 1 queued, 0 waiting for space, -1 refused.
        int state = 0;
        /// Intrusive list of senders waiting for space.
        SendAwaiter* next = nullptr;
        /// The waiting coroutine.
        std::coroutine_handle<> waiter;
        /// Queues at once unless the queue is full under SlowClient::wait.
        bool await_ready() noexcept;
        /// Waits for queue space.
        void await_suspend(std::coroutine_handle<> h) noexcept;
        /// True when the message was queued.
        bool await_resume() const noexcept { return state > 0; }
    };

    /// Waits for the next message; after the session ended, returns the close at once.
    ReceiveAwaiter receive() noexcept { return {*this}; }
    /// Queues a message (encoded, and compressed when negotiated and worth it, at once) and
    /// returns true; false when the session is closing or the policy dropped it. With
    /// SlowClient::wait it suspends while the client's queue is full.
    SendAwaiter send(std::string_view data, WsType type = WsType::text) noexcept {
        return {*this, data, type, 0, nullptr, {}};
    }
    /// Queues a ping with `payload` (at most 125 bytes).
    void ping(std::string_view payload = {});
    /// Starts the closing handshake (code and reason checked: a code a client may not
    /// see becomes 1000; the reason is cut to 123 bytes); receive() then returns the close.
    void close(std::uint16_t code = ws::close_code::normal, std::string_view reason = {});
    /// True until the session has ended or is closing.
    bool open() const noexcept;
    /// The subprotocol agreed on, empty if none.
    std::string_view subprotocol() const noexcept;
    /// True when permessage-deflate was negotiated.
    bool compressed() const noexcept;
    /// Bytes queued for the client now.
    std::size_t queued() const noexcept;
    /// A handle to send from other threads and loops.
    WsSender sender() const;
    /// The loop this session runs on.
    Loop& loop() const noexcept;

  protected:
    WebSocket() = default;
    ~WebSocket() = default;

  private:
    detail::WsConnection& self() noexcept;
    const detail::WsConnection& self() const noexcept;
};

/// The route coroutine of a WebSocket endpoint: runs for the session's lifetime; the
/// connection closes (1000) when it returns, with 1011 when it throws.
using WsHandler = std::function<Task<void>(WebSocket&, Request&)>;

/// The route coroutine of an endpoint that needs nothing of the upgrade request: the session
/// keeps none of it (the request's object and bytes, about 1.3 KB a connection, go back as
/// soon as the coroutine has started).
using WsSessionHandler = std::function<Task<void>(WebSocket&)>;

/// A WebSocket endpoint: the route coroutine and its settings (App::ws makes one).
struct WsEndpoint {
    /// Runs once per session (a route coroutine that takes the request).
    WsHandler handler;
    /// Or this one, which does not.
    WsSessionHandler session;
    /// The endpoint's settings.
    WsOptions options;
    /// The route, for log lines.
    std::string path;
};

/// Answers a WebSocket handshake for `ep`: on HTTP/1.1 (RFC 6455 4.2) a 101 that switches the
/// connection to a session once sent; on HTTP/2 (RFC 8441) a 200 to an extended CONNECT that
/// makes the stream a session; or the refusal (400 malformed, 403 origin, 426 not an upgrade
/// or another version, with the headers that say what would do).
Response ws_accept(const Request& req, std::shared_ptr<const WsEndpoint> ep);

/// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key (RFC 6455 4.2.2).
std::string ws_accept_key(std::string_view key);

class HubBackplane;

/// Named rooms of WebSocket sessions across all loops. Join and leave happen on the
/// session's own loop; a broadcast comes from any thread, is encoded (and compressed) once
/// for all recipients and reaches each loop that has members in one post, without a lock.
/// Sessions leave their rooms when they end. The hub must outlive the server. With a
/// backplane (vela::RedisBackplane), rooms span every node that shares it.
class Hub {
  public:
    class Room;
    /// An empty hub.
    Hub();
    /// Destroys the hub and its rooms.
    ~Hub();
    Hub(const Hub&) = delete;
    Hub& operator=(const Hub&) = delete;

    /// The room named `name`, made on first use (rooms are kept for the hub's lifetime: keep
    /// the handle to broadcast without the name lookup).
    Room& room(std::string_view name);
    /// Adds `ws` to room `name` (on ws's loop; joining twice is harmless).
    void join(std::string_view name, WebSocket& ws) { room(name).join(ws); }
    /// Removes `ws` from room `name` (on ws's loop).
    void leave(std::string_view name, WebSocket& ws) { room(name).leave(ws); }
    /// Sends to every member of room `name` (see Room::broadcast).
    std::size_t broadcast(std::string_view name, std::string_view data, WsType type = WsType::text,
                          const WebSocket* except = nullptr) {
        return room(name).broadcast(data, type, except);
    }
    /// Members of room `name` now, over all loops.
    std::size_t count(std::string_view name) { return room(name).count(); }
    /// Room `name` if it was made already, else nullptr (makes none).
    Room* find(std::string_view name);
    /// Connects the rooms to other nodes through `bp` (nullptr: detaches). Before the server
    /// runs, or after it stopped: broadcasts read it without a lock. RedisBackplane calls it.
    void set_backplane(HubBackplane* bp) noexcept { backplane_ = bp; }
    /// The backplane set, or nullptr.
    HubBackplane* backplane() const noexcept { return backplane_; }

    /// One room: members on every loop.
    class Room {
      public:
        /// Adds `ws` (on ws's loop; joining twice is harmless).
        void join(WebSocket& ws);
        /// Removes `ws` (on ws's loop).
        void leave(WebSocket& ws);
        /// Sends `data` to every member but `except`, from any thread; members whose queue is
        /// full meet their endpoint's policy (wait counts as drop). With a backplane, it goes
        /// to the other nodes' members too. Returns this node's member count at the time.
        std::size_t broadcast(std::string_view data, WsType type = WsType::text,
                              const WebSocket* except = nullptr);
        /// broadcast() to this node's members only (what a backplane delivers).
        std::size_t deliver(std::string_view data, WsType type = WsType::text,
                            const WebSocket* except = nullptr);
        /// Members now, over all loops.
        std::size_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
        /// The room's name.
        const std::string& name() const noexcept { return name_; }

        /// Made by Hub::room.
        Room(Hub& hub, std::string name);
        /// Frees the per-loop member lists.
        ~Room();

      private:
        friend class detail::WsConnection;
        struct Slot;
        static constexpr int kMaxLoops = 256;
        Slot* slot_for(Loop& loop);
        Slot* find_slot(const LoopRef& ref) const noexcept;
        void remove(detail::WsConnection* c, Slot* s) noexcept;

        Hub& hub_;
        std::string name_;
        std::atomic<std::size_t> count_{0};
        std::mutex mu_;  // making a loop's slot (first join from that loop), not broadcasts
        std::atomic<int> slots_used_{0};
        std::atomic<Slot*> slots_[kMaxLoops] = {};
        std::vector<Slot*> retired_;  // places of loops that are gone (under mu_)
    };

  private:
    std::mutex mu_;  // guards rooms_ (name lookups; broadcasts through a Room& take no lock)
    std::unordered_map<std::string, std::unique_ptr<Room>> rooms_;
    HubBackplane* backplane_ = nullptr;
};

/// What a Hub tells the backplane that connects it to other nodes (vela::RedisBackplane).
/// Called from any thread.
class HubBackplane {
  public:
    virtual ~HubBackplane() = default;
    /// A member joined or left `room` (room.count() is the new figure).
    virtual void members_changed(Hub::Room& room) noexcept = 0;
    /// `room` broadcast `data` here: send it to the other nodes.
    virtual void publish(Hub::Room& room, std::string_view data, WsType type) noexcept = 0;
};

}  // namespace vela
