#pragma once
// The client's shared state: per-loop connection pools, the resolver cache, the TLS context
// and the counters. One Impl per Client; one LoopPools per loop that sent a request, used
// only on that loop; one OriginPool per origin in it.

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/connection.hpp"
#include "client/cookie_jar.hpp"
#include "client/resolver.hpp"
#include "vela/client/client.hpp"
#include "vela/reactor/loop.hpp"

namespace vela::http::detail {

class LoopPools;

/// Waits for a free connection slot of an OriginPool (intrusive list node).
struct SlotWaiter {
    std::coroutine_handle<> h{};
    SlotWaiter* next = nullptr;
    SlotWaiter* prev = nullptr;
};

/// The connections of one origin on one loop.
class OriginPool {
  public:
    OriginPool(LoopPools& owner, Url origin) : owner(owner), origin(std::move(origin)) {}
    ~OriginPool();

    /// An idle usable connection (LIFO: the warmest), or null.
    Connection* take_idle();
    /// Returns a connection after a complete response: parked when `reusable`, else closed.
    void release(Connection* c, bool reusable);
    /// Closes and forgets a connection (idle or busy).
    void discard(Connection* c);
    /// Wakes the first waiter for a slot (from the loop, not from the caller's frame).
    void wake_one();
    /// Wakes every waiter (a dial that may have opened an HTTP/2 connection ended).
    void wake_all();
    /// A shared HTTP/2 connection that can open a stream now (and reserves it), or null.
    Connection* take_shared();
    /// Makes `c` (just dialled, h2 negotiated) the origin's shared connection.
    void share(Connection* c);
    /// True while a shared connection awaits the server's first SETTINGS (more requests wait
    /// to learn its concurrency limit instead of opening connections of their own).
    bool h2_warming() const noexcept;
    /// Adds/removes a slot waiter.
    void enqueue(SlotWaiter& w);
    void dequeue(SlotWaiter& w) noexcept;

    LoopPools& owner;
    Url origin;              // the origin served (for an http proxy: the proxy)
    Url dial_to;             // where connections go: the origin or the proxy
    bool tunnel = false;     // CONNECT through the proxy to the origin first
    bool absolute = false;   // requests in absolute form (to an http proxy)
    std::string proxy_auth;  // Proxy-Authorization value, or empty
    std::vector<Connection*> idle;
    std::vector<Connection*> shared;  // HTTP/2 connections, busy or not (never in `idle`)
    std::size_t open = 0;             // connections open or being opened
    std::size_t dialing = 0;          // connections being opened
    bool h2_tls = false;              // offer h2 by ALPN (https, ClientOptions::http2)
    bool h2c = false;                 // HTTP/2 by prior knowledge (ClientOptions::h2c)
    bool h1_only = false;             // the server answered ALPN without h2
    SlotWaiter* first = nullptr;
    SlotWaiter* last = nullptr;
};

/// Every pool of one loop. Shared by the Client and the loop's at-exit hook, whichever goes
/// first closes the connections (under `mu`) while the loop still exists; `closed` tells the
/// other one there is nothing left to do (and that `impl` may be gone).
class LoopPools {
  public:
    LoopPools(Client::Impl& impl, Loop& loop) : impl(impl), loop(loop) {}
    /// The pool of `url`'s origin (made on first use).
    /// `http1_only`: a pool of its own that never speaks HTTP/2 (upgrades: RFC 9113 8.6 has
    /// no 101).
    OriginPool& pool_for(const Url& url, bool http1_only = false);
    /// pool_for() without the memo of the last origin.
    OriginPool& find_pool(const Url& url, bool http1_only);
    /// Closes and frees every idle connection and forgets the pools (the loop must exist;
    /// on its thread or while it does not run).
    void close_all() noexcept;

    Client::Impl& impl;
    Loop& loop;
    std::mutex mu;
    bool closed = false;     // close_all() ran
    bool loop_gone = false;  // the loop was destroyed
    std::unordered_map<std::string, std::unique_ptr<OriginPool>> pools;
    // The origin pool_for() found last (pools are never removed): a run of requests to one
    // origin finds its pool without building the key.
    struct LastPool {
        Scheme scheme{};
        std::uint16_t port = 0;
        bool http1_only = false;
        std::string host;
        OriginPool* pool = nullptr;
    } last;
};

}  // namespace vela::http::detail

namespace vela::http {

/// The state a Client shares between loops.
struct Client::Impl {
    explicit Impl(ClientOptions o);
    ~Impl();
    /// This loop's pools (made on first use; the last found is cached per thread); throws
    /// std::logic_error off a loop.
    detail::LoopPools& here();
    /// A client id never used before.
    static std::uint64_t new_id() noexcept;
    /// The proxy for `url`, or null (see ClientOptions::proxy).
    const Url* proxy_for(const Url& url) const;
    /// The TLS context (made on first https use); throws TlsError.
    tls::ClientContext& tls();

    const std::uint64_t id = new_id();
    ClientOptions options;
    std::optional<Url> http_proxy, https_proxy;
    std::vector<std::string> no_proxy;
    bool no_proxy_all = false;
    bool proxy_from_env = false;
    detail::Resolver resolver;
    detail::CookieJar jar;
    std::mutex mu;
    std::vector<std::shared_ptr<detail::LoopPools>> loops;
    std::shared_ptr<tls::ClientContext> tls_ctx;
    std::atomic<std::uint64_t> requests{0}, failures{0}, opened{0}, reused{0}, retries{0},
        resumed{0};
    std::atomic<std::int64_t> open{0}, idle{0};
};

}  // namespace vela::http
