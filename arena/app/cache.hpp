#pragma once
// TtlCache: the entry's in-process cache tier. Pre-serialized JSON bodies by integer id, each
// kept for an absolute time to live from when it was put. One cache serves every loop of the
// process (a read on one loop sees what another put, and an invalidation reaches all of them),
// so it is split into shards, each with its own mutex, to keep loops from queueing on one lock.
//
// Cache-aside against writes: a reader takes generation(id) before it loads, and stores what it
// loaded with put_if_unchanged(); erase() moves the generation on, so a value loaded before a
// write cannot come back after the write's invalidation. (A generation counts the erases of a
// bucket of ids, 4,096 buckets in all: an unrelated erase in the same bucket only costs a
// reader its fill, never a stale value.)

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace arena {

class TtlCache {
  public:
    using Clock = std::chrono::steady_clock;

    /// A cache whose entries live `ttl` unless put() says otherwise.
    explicit TtlCache(std::chrono::milliseconds ttl) : ttl_(ttl) {}

    /// The body stored for `id`, unless absent or expired.
    std::optional<std::string> get(std::int64_t id) {
        Shard& s = shard(id);
        const Clock::time_point now = Clock::now();
        std::lock_guard lock(s.mu);
        auto it = s.map.find(id);
        if (it == s.map.end()) return std::nullopt;
        if (it->second.expires <= now) {
            s.map.erase(it);
            return std::nullopt;
        }
        return it->second.body;
    }

    /// The generation `id` is at: take it before loading what put_if_unchanged() stores.
    std::uint64_t generation(std::int64_t id) {
        Shard& s = shard(id);
        std::lock_guard lock(s.mu);
        return s.generation[bucket(id)];
    }

    /// Stores `body` for `id` for the cache's time to live, unless an erase() came after
    /// `generation` was taken; false then.
    bool put_if_unchanged(std::int64_t id, std::string body, std::uint64_t generation) {
        return put_if_unchanged(id, std::move(body), ttl_, generation);
    }

    /// Stores `body` for `id` for `ttl`, unless an erase() came after `generation` was taken.
    bool put_if_unchanged(std::int64_t id, std::string body, std::chrono::milliseconds ttl,
                          std::uint64_t generation) {
        Shard& s = shard(id);
        const Clock::time_point now = Clock::now();
        std::lock_guard lock(s.mu);
        if (s.generation[bucket(id)] != generation) return false;
        // Expired entries go when the shard has doubled since the last sweep, so an id read
        // once costs memory no longer than about one sweep period.
        if (s.map.size() >= s.sweep_at) {
            std::erase_if(s.map, [now](const auto& e) { return e.second.expires <= now; });
            s.sweep_at = std::max<std::size_t>(64, s.map.size() * 2);
        }
        s.map.insert_or_assign(id, Entry{std::move(body), now + ttl});
        return true;
    }

    /// Forgets `id` (a write changed it).
    void erase(std::int64_t id) {
        Shard& s = shard(id);
        std::lock_guard lock(s.mu);
        s.map.erase(id);
        ++s.generation[bucket(id)];
    }

  private:
    struct Entry {
        std::string body;
        Clock::time_point expires;
    };
    struct Shard {
        std::mutex mu;
        std::unordered_map<std::int64_t, Entry> map;
        std::size_t sweep_at = 64;
        std::array<std::uint64_t, 64> generation{};  // per bucket (see bucket())
    };
    static constexpr std::size_t kShards = 64;

    Shard& shard(std::int64_t id) noexcept {
        return shards_[static_cast<std::uint64_t>(id) % kShards];
    }
    // The generation bucket of `id` within its shard.
    static std::size_t bucket(std::int64_t id) noexcept {
        return static_cast<std::uint64_t>(id) / kShards % 64;
    }

    std::chrono::milliseconds ttl_;
    std::array<Shard, kShards> shards_;
};

}  // namespace arena
