#pragma once
// Sessions kept in Redis: shared by every process and loop that uses the same server, and
// they survive a restart of the application.
//
//     auto redis = std::make_shared<vela::redis::Client>("redis://127.0.0.1:6379/0");
//     app.use(vela::sessions({.store = std::make_shared<vela::RedisStore>(redis)}));
//
// Each session is one string key, `key_prefix` + id, holding SessionRecord::encode() (a small
// JSON document), with a Redis expiry equal to the session's idle timeout, so Redis forgets
// sessions nobody uses without any sweeping by us. save() is SET key bytes EX ttl; update() is
// SET key bytes XX EX ttl (stored only while the key still exists, so a request finishing
// after a logout cannot bring the session back); erase() is DEL. Errors of the client
// (redis::ConnectionError, TimeoutError ...) reach the request as a 500.
//
// Header-only and in the umbrella (like pg_metrics.hpp), so vela's web library does not depend
// on its Redis client (nor link hiredis) for this bridge; a program using it links both anyway.

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "vela/middleware/session.hpp"
#include "vela/redis/client.hpp"

namespace vela {

namespace detail::redis_store {

// Redis refuses EX 0 and negative times; a session is kept at least a second.
inline long long ttl_seconds(std::chrono::seconds ttl) { return ttl.count() < 1 ? 1 : ttl.count(); }

inline Task<std::optional<SessionRecord>> decode_reply(Task<std::optional<std::string>> get) {
    std::optional<std::string> bytes = co_await std::move(get);
    if (!bytes) co_return std::nullopt;
    co_return SessionRecord::decode(*bytes);  // not a record (someone else's key): unknown id
}

inline Task<void> ignore_reply(Task<redis::Reply> t) { (void)co_await std::move(t); }

inline Task<bool> stored(Task<redis::Reply> t) { co_return !(co_await std::move(t)).is_nil(); }

}  // namespace detail::redis_store

/// How a RedisStore names its keys.
struct RedisStoreOptions {
    /// Put before each session id to make its key (keeps sessions apart from other data).
    std::string key_prefix = "vela:session:";
};

/// A SessionStore in Redis (see above). Safe from several loops at once, as the client is.
class RedisStore final : public SessionStore {
  public:
    /// Uses `client` (shared: it must live as long as the store is used).
    explicit RedisStore(std::shared_ptr<redis::Client> client, RedisStoreOptions options = {})
        : client_(std::move(client)), options_(std::move(options)) {
        if (!client_) throw std::invalid_argument("RedisStore needs a redis::Client");
    }

    // The commands are built (and the arguments copied) before the first suspension, as the
    // SessionStore contract asks nothing longer of the caller.

    /// GET: the record, or nullopt when absent, expired or not a session record.
    Task<std::optional<SessionRecord>> load(std::string_view id) override {
        return detail::redis_store::decode_reply(client_->get(key(id)));
    }
    /// SET key record EX ttl (ttl rounded up to at least one second).
    Task<void> save(std::string_view id, const SessionRecord& record,
                    std::chrono::seconds ttl) override {
        return detail::redis_store::ignore_reply(client_->command(
            "SET", key(id), record.encode(), "EX", detail::redis_store::ttl_seconds(ttl)));
    }
    /// DEL key.
    Task<void> erase(std::string_view id) override {
        return detail::redis_store::ignore_reply(client_->command("DEL", key(id)));
    }
    /// SET key record XX EX ttl: false when the key was gone.
    Task<bool> update(std::string_view id, const SessionRecord& record,
                      std::chrono::seconds ttl) override {
        return detail::redis_store::stored(client_->command(
            "SET", key(id), record.encode(), "XX", "EX", detail::redis_store::ttl_seconds(ttl)));
    }

    /// The Redis key of session `id`.
    std::string key(std::string_view id) const {
        std::string k = options_.key_prefix;
        k += id;
        return k;
    }
    /// The client the store talks through.
    redis::Client& client() const noexcept { return *client_; }

  private:
    std::shared_ptr<redis::Client> client_;
    RedisStoreOptions options_;
};

}  // namespace vela
