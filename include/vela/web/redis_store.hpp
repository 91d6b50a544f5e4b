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

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vela/redis/client.hpp"
#include "vela/web/session.hpp"

namespace vela {

/// How a RedisStore names its keys.
struct RedisStoreOptions {
    /// Put before each session id to make its key (keeps sessions apart from other data).
    std::string key_prefix = "vela:session:";
};

/// A SessionStore in Redis (see above). Safe from several loops at once, as the client is.
class RedisStore final : public SessionStore {
  public:
    /// Uses `client` (shared: it must live as long as the store is used).
    explicit RedisStore(std::shared_ptr<redis::Client> client, RedisStoreOptions options = {});

    /// GET: the record, or nullopt when absent, expired or not a session record.
    Task<std::optional<SessionRecord>> load(std::string_view id) override;
    /// SET key record EX ttl (ttl rounded up to at least one second).
    Task<void> save(std::string_view id, const SessionRecord& record,
                    std::chrono::seconds ttl) override;
    /// DEL key.
    Task<void> erase(std::string_view id) override;
    /// SET key record XX EX ttl: false when the key was gone.
    Task<bool> update(std::string_view id, const SessionRecord& record,
                      std::chrono::seconds ttl) override;

    /// The Redis key of session `id`.
    std::string key(std::string_view id) const;
    /// The client the store talks through.
    redis::Client& client() const noexcept { return *client_; }

  private:
    std::shared_ptr<redis::Client> client_;
    RedisStoreOptions options_;
};

}  // namespace vela
