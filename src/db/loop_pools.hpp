#pragma once
// What the pooled backends (PostgreSQL, MySQL) share: one pool per loop, found under a mutex
// once per loop and thread and then through a thread-local cache; the sweep period; the
// reconnect backoff.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "vela/db/db.hpp"
#include "vela/reactor/loop.hpp"

namespace vela::db::detail {

/// How often a pool looks for idle and old connections: every second, or half the idle
/// timeout or the max lifetime when shorter, at least every 20 ms.
inline std::chrono::milliseconds sweep_period(const Options& o) noexcept {
    std::chrono::milliseconds period{1000};
    if (o.idle_timeout.count() > 0) period = std::min(period, o.idle_timeout / 2);
    if (o.max_lifetime.count() > 0) period = std::min(period, o.max_lifetime / 2);
    return std::max(period, std::chrono::milliseconds(20));
}

/// The wait before the next attempt after a failed connect (`current`: the last wait, 0 at
/// first): reconnect_backoff, doubling up to reconnect_backoff_max.
inline std::chrono::milliseconds next_backoff(std::chrono::milliseconds current,
                                              const Options& o) noexcept {
    return current.count() == 0 ? o.reconnect_backoff
                                : std::min(current * 2, o.reconnect_backoff_max);
}

/// Arms `pool.sweep()` to run once after sweep_period (unless armed already); P has public
/// `loop`, `opts`, `sweep_armed` and `sweep()`, and is owned by a shared_ptr.
template <class P>
void arm_sweep(P& pool) {
    if (pool.sweep_armed) return;
    pool.sweep_armed = true;
    pool.loop.call_after(sweep_period(pool.opts), [w = pool.weak_from_this()] {
        if (auto p = w.lock()) {
            p->sweep_armed = false;
            p->sweep();
        }
    });
}

/// The pools of one backend, one per loop (P has a public `LoopRef ref` naming its loop).
template <class P>
class LoopPools {
  public:
    LoopPools() = default;
    LoopPools(const LoopPools&) = delete;
    LoopPools& operator=(const LoopPools&) = delete;
    /// Drops every pool (their destructors close connections without the loops).
    ~LoopPools() {
        std::lock_guard lock(mu_);
        if (t_local.owner == id_) t_local = {};
        pools_.clear();
    }

    /// The calling loop's pool, made by `make(loop)` the first time. Throws Error (naming
    /// `what`, e.g. "PostgreSQL") off a running Loop.
    template <class Make>
    P& get(const char* what, Make make) {
        Loop* l = Loop::current();
        if (!l)
            throw Error(
                fmt::format("vela::db: {} statements must be awaited on a running "
                            "vela::Loop",
                            what));
        LoopRef ref = l->ref();
        if (t_local.owner == id_ && t_local.loop.same_loop(ref)) return *t_local.pool;
        std::lock_guard lock(mu_);
        // The pools of loops that are gone close their connections without them.
        std::erase_if(pools_, [](const std::shared_ptr<P>& p) { return !p->ref.alive(); });
        P* found = nullptr;
        for (auto& p : pools_)
            if (p->ref.same_loop(ref)) found = p.get();
        if (!found) {
            pools_.push_back(make(*l));
            found = pools_.back().get();
        }
        t_local = Local{id_, std::move(ref), found};
        return *found;
    }

    /// Loops that have a pool.
    std::size_t count() {
        std::lock_guard lock(mu_);
        return pools_.size();
    }

  private:
    struct Local {
        std::uint64_t owner = 0;
        LoopRef loop;
        P* pool = nullptr;
    };
    static inline thread_local Local t_local;
    static inline std::atomic<std::uint64_t> next_id{1};

    const std::uint64_t id_ = next_id.fetch_add(1);
    std::mutex mu_;
    std::vector<std::shared_ptr<P>> pools_;
};

}  // namespace vela::db::detail
