#include "vela/web/redis_store.hpp"

#include <stdexcept>
#include <utility>

namespace vela {

namespace {

// Redis refuses EX 0 and negative times; a session is kept at least a second.
long long ttl_seconds(std::chrono::seconds ttl) { return ttl.count() < 1 ? 1 : ttl.count(); }

Task<std::optional<SessionRecord>> decode_reply(Task<std::optional<std::string>> get) {
    std::optional<std::string> bytes = co_await std::move(get);
    if (!bytes) co_return std::nullopt;
    co_return SessionRecord::decode(*bytes);  // not a record (someone else's key): unknown id
}

Task<void> ignore_reply(Task<redis::Reply> t) { (void)co_await std::move(t); }

Task<bool> stored(Task<redis::Reply> t) { co_return !(co_await std::move(t)).is_nil(); }

}  // namespace

RedisStore::RedisStore(std::shared_ptr<redis::Client> client, RedisStoreOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
    if (!client_) throw std::invalid_argument("RedisStore needs a redis::Client");
}

std::string RedisStore::key(std::string_view id) const {
    std::string k = options_.key_prefix;
    k += id;
    return k;
}

// The commands are built (and the arguments copied) before the first suspension, as the
// SessionStore contract asks nothing longer of the caller.
Task<std::optional<SessionRecord>> RedisStore::load(std::string_view id) {
    return decode_reply(client_->get(key(id)));
}

Task<void> RedisStore::save(std::string_view id, const SessionRecord& record,
                            std::chrono::seconds ttl) {
    return ignore_reply(client_->command("SET", key(id), record.encode(), "EX", ttl_seconds(ttl)));
}

Task<void> RedisStore::erase(std::string_view id) {
    return ignore_reply(client_->command("DEL", key(id)));
}

Task<bool> RedisStore::update(std::string_view id, const SessionRecord& record,
                              std::chrono::seconds ttl) {
    return stored(client_->command("SET", key(id), record.encode(), "XX", "EX", ttl_seconds(ttl)));
}

}  // namespace vela
