#pragma once
// Sessions: per-visitor values kept between requests, behind a cookie.
//
//     vela::App app;
//     app.use(vela::sessions());                          // memory store, cookie "vela.sid"
//     app.post("/login", [](vela::Request& req) {
//         vela::Session& s = vela::session(req);
//         s.regenerate();                                 // a new id on login (no fixation)
//         s.set("user", std::string("alice"));
//         return "welcome";
//     });
//     app.get("/count", [](vela::Request& req) {
//         vela::Session& s = vela::session(req);
//         int n = s.get<int>("count").value_or(0) + 1;
//         s.set("count", n);                              // any JSON-reflected type
//         return std::to_string(n);
//     });
//     app.post("/logout", [](vela::Request& req) {
//         vela::session(req).destroy();                   // erased, cookie expired
//         return "bye";
//     });
//
// Two ways to keep the values:
//  * A server-side SessionStore (MemoryStore here; a Redis store implements the same
//    interface). The cookie holds only a random 256-bit id; an id the store does not know
//    is never adopted: the visitor gets a fresh session with a new id.
//  * A CookieStore: the whole session sealed (AES-256-GCM) into the cookie itself, with key
//    rotation. Nothing is kept on the server, so nothing can be revoked either: a copied
//    cookie stays valid until its idle or absolute expiry.
//
// What a request pays: the middleware loads the session on entry only when the request
// carries the cookie (one store lookup, or one AES-GCM open); the values are parsed from
// JSON on the first get/set. At the end the session is saved only when it changed, or,
// unchanged, when its last save is older than touch_interval (the write-coalescing rule
// that keeps idle expiry alive without rewriting a busy session on every request). A new
// session that nobody wrote to is neither stored nor sent.
//
// Expiry: idle (default 30 min since the last save) and absolute (default 24 h since the
// session was created, kept in the record and never extended, not even by regenerate()).
// Both are checked on every load; an expired session is erased and replaced by a fresh one.
//
// Concurrency: a Session belongs to one request. Two requests of the same visitor running at
// once each work on their own copy; the last to finish wins.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/http/cookie.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/json/codec.hpp"
#include "vela/json/value.hpp"
#include "vela/web/middleware.hpp"

namespace vela {

/// Wall-clock time in whole seconds (records outlive processes, so no steady clock here).
using SessionTime = std::chrono::sys_seconds;
/// Where sessions read the time; tests inject their own.
using SessionClock = std::function<std::chrono::system_clock::time_point()>;

/// One session as a store keeps it.
struct SessionRecord {
    /// The session's values: a JSON object as text.
    std::string data = "{}";
    /// When the session was created (the absolute expiry counts from here).
    SessionTime created{};
    /// When the session was last saved (the idle expiry counts from here).
    SessionTime accessed{};

    /// The record as one JSON document ({"c":created,"a":accessed,"d":{...}}), for stores
    /// that keep bytes (Redis).
    std::string encode() const;
    /// Reads what encode() wrote; nullopt when it is not such a document.
    static std::optional<SessionRecord> decode(std::string_view text);
    /// Same contents.
    bool operator==(const SessionRecord&) const = default;
};

/// Where server-side sessions live, by id. Implementations must be safe to call from several
/// loops (threads) at once. The arguments stay valid until the returned task completes (the
/// middleware awaits each task at once); an implementation copies what it keeps. An
/// exception from a store reaches the request as a 500.
class SessionStore {
  public:
    virtual ~SessionStore() = default;
    /// The record stored under `id`, or nullopt when unknown or past its time to live.
    virtual Task<std::optional<SessionRecord>> load(std::string_view id) = 0;
    /// Stores `record` under `id` (replacing any), to be forgotten `ttl` after this save
    /// unless saved again (Redis: SET id bytes EX ttl).
    virtual Task<void> save(std::string_view id, const SessionRecord& record,
                            std::chrono::seconds ttl) = 0;
    /// Forgets `id` (nothing happens when it is unknown).
    virtual Task<void> erase(std::string_view id) = 0;
    /// Stores `record` under `id` only while `id` is still stored (Redis: SET id bytes EX ttl
    /// XX); false when it was forgotten meanwhile (a logout or a login in a request running at
    /// the same time erased it), so a late request cannot bring it back. The default loads
    /// then saves, which leaves a small window; stores override it with one atomic step.
    virtual Task<bool> update(std::string_view id, const SessionRecord& record,
                              std::chrono::seconds ttl) {
        if (!co_await load(id)) co_return false;
        co_await save(id, record, ttl);
        co_return true;
    }
};

/// How a MemoryStore is bounded and sharded.
struct MemoryStoreOptions {
    /// At most this many sessions; when a shard is full its least recently used session is
    /// evicted (see MemoryStore). 0: no bound.
    std::size_t max_sessions = 100'000;
    /// At most roughly this many bytes of sessions (ids, values and bookkeeping); evicts as
    /// above. 0: no bound.
    std::size_t max_bytes = 256u << 20;
    /// Independent shards, each with its own mutex (rounded up to a power of two, 1-1024).
    std::size_t shards = 32;
    /// The time source (default: system_clock::now).
    SessionClock clock{};
};

/// Sessions in this process's memory: fast, lost on restart, not shared between processes.
///
/// Threads: the ids are spread over `shards` shards by hash, each a map and an LRU list
/// under its own mutex, so loops touching different sessions rarely wait for each other and
/// no lock is global. Bounds are per shard (max_sessions / shards sessions and
/// max_bytes / shards bytes each); random ids fill the shards evenly, so the whole store
/// holds close to the bound. When a save would overflow a shard, the shard's least recently
/// used sessions are dropped until it fits (a load or save makes a session the most recent).
/// Since the middleware gives every session the same idle time to live, the least recently
/// used session is also the one that expires soonest, so expired sessions go first and are
/// not counted as evictions. Each save also drops up to two expired sessions from the cold
/// end, and a load drops the expired session it meets, so dead sessions do not pile up. A
/// session larger than a shard's byte budget is refused with std::length_error.
class MemoryStore final : public SessionStore {
  public:
    /// A store bounded and sharded by `options`.
    explicit MemoryStore(MemoryStoreOptions options = {});
    ~MemoryStore() override;
    MemoryStore(const MemoryStore&) = delete;
    MemoryStore& operator=(const MemoryStore&) = delete;

    /// As find(), as a task.
    Task<std::optional<SessionRecord>> load(std::string_view id) override;
    /// As put(), as a task.
    Task<void> save(std::string_view id, const SessionRecord& record,
                    std::chrono::seconds ttl) override;
    /// As remove(), as a task.
    Task<void> erase(std::string_view id) override;
    /// As put(..., true), as a task.
    Task<bool> update(std::string_view id, const SessionRecord& record,
                      std::chrono::seconds ttl) override;

    /// The record under `id` if present and not expired (an expired one is dropped).
    std::optional<SessionRecord> find(std::string_view id);
    /// Stores `record` under `id` for `ttl`, evicting as described above; with
    /// `only_if_present`, only when `id` is held and not expired. True when stored.
    bool put(std::string_view id, const SessionRecord& record, std::chrono::seconds ttl,
             bool only_if_present = false);
    /// Forgets `id`; true when it was there.
    bool remove(std::string_view id);
    /// Drops every expired session now (they are otherwise dropped when met); returns how many.
    std::size_t purge_expired();

    /// Sessions held (expired ones not yet dropped included).
    std::size_t size() const;
    /// Bytes held, roughly (ids, values and per-session bookkeeping).
    std::size_t bytes() const;
    /// Sessions evicted to stay within the bounds since the store was made.
    std::size_t evictions() const;

  private:
    struct Shard;
    Shard& shard_for(std::string_view id) const noexcept;
    std::chrono::system_clock::time_point now() const;

    MemoryStoreOptions options_;
    std::size_t shard_mask_ = 0;
    std::size_t shard_max_sessions_ = 0;
    std::size_t shard_max_bytes_ = 0;
    std::unique_ptr<Shard[]> shards_;
};

/// A session opened from a cookie: its id and record.
struct OpenedSession {
    /// The session id sealed in the cookie.
    std::string id;
    /// The values and times sealed in the cookie.
    SessionRecord record;
};

/// Seals whole sessions into cookie values: AES-256-GCM under a key derived (HKDF) from the
/// newest secret; every listed secret opens, so keys rotate by putting the new secret first
/// and dropping the oldest once its cookies have expired. The value is base64url of nonce,
/// ciphertext and tag; the plaintext holds a version, the creation and last-save times, the
/// id and the values (not compressed: compressing before encrypting leaks the contents'
/// redundancy). A value altered in any bit, sealed under an unknown secret or for another
/// context (the cookie name) does not open.
class CookieStore {
  public:
    /// Secrets newest first, each at least 32 bytes (random, e.g. crypto::random_token()).
    /// Throws std::invalid_argument when the list is empty or a secret is too short.
    explicit CookieStore(std::vector<std::string> secrets);

    /// The cookie value carrying `id` and `record`, bound to `context` (the cookie name).
    std::string seal(std::string_view id, const SessionRecord& record,
                     std::string_view context = {}) const;
    /// The id and record in a value seal() made with one of the secrets for `context`;
    /// nullopt when it does not open or is malformed. Expiry is the middleware's check.
    std::optional<OpenedSession> open(std::string_view value, std::string_view context = {}) const;

  private:
    std::vector<std::string> keys_;  // derived, newest first
};

/// How sessions() keeps sessions and sends its cookie.
struct SessionOptions {
    /// A server-side store; when neither this nor cookie_store is set, a MemoryStore with
    /// default options is made (one per sessions() call).
    std::shared_ptr<SessionStore> store{};
    /// Keep the whole session in the cookie instead (exclusive with `store`).
    std::shared_ptr<const CookieStore> cookie_store{};

    /// The cookie's name.
    std::string cookie_name = "vela.sid";
    /// The cookie's Path.
    std::string path = "/";
    /// The cookie's Domain (empty: none, the cookie goes back to this host only).
    std::string domain{};
    /// Secure: true/false forces it; unset: set when the request came over HTTPS
    /// (req.secure() or a trusted proxy's scheme "https").
    std::optional<bool> secure{};
    /// HttpOnly (scripts cannot read the cookie).
    bool http_only = true;
    /// SameSite (none forces Secure, as browsers require).
    SameSite same_site = SameSite::lax;
    /// false: a browser-session cookie (no Max-Age; closing the browser forgets it). true:
    /// Max-Age up to the absolute expiry, refreshed with every save.
    bool persistent = false;

    /// A session unused for this long expires.
    std::chrono::seconds idle_timeout = std::chrono::minutes(30);
    /// A session expires this long after its creation, however busy.
    std::chrono::seconds absolute_timeout = std::chrono::hours(24);
    /// An unchanged session is saved again (to keep it from idling out) only when its last
    /// save is at least this old; so a session idles out between idle_timeout -
    /// touch_interval and idle_timeout after its last request. Clamped to idle_timeout / 2.
    std::chrono::seconds touch_interval = std::chrono::minutes(1);
    /// With a cookie_store: the largest cookie (name, '=' and value) sent; a bigger one is
    /// logged as an error and not sent, so the browser keeps the previous cookie and the
    /// request's changes to the session are lost.
    std::size_t max_cookie_size = 4096;
    /// The time source (default: system_clock::now).
    SessionClock clock{};
};

class Session;
namespace detail {
struct SessionAccess;
}

/// The session middleware (an onion: it awaits the store). Throws std::invalid_argument for
/// contradictory options (both stores, an empty cookie name, non-positive timeouts).
std::function<Task<Response>(Request&, Next)> sessions(SessionOptions options = {});

/// The request's session; throws std::logic_error when sessions() is not installed on the
/// route.
Session& session(Request& req);

/// One visitor's session during one request (see above). Values are JSON: anything json::
/// can write and read (numbers, strings, vectors, maps, VELA_REFLECT structs, json::Value).
class Session {
  public:
    /// The value under `key` read as a T; nullopt when absent or of another shape.
    template <class T>
    std::optional<T> get(std::string_view key) const {
        const json::Value* v = find(key);
        if (!v) return std::nullopt;
        if constexpr (std::is_same_v<T, json::Value>) {
            return *v;
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (!v->is_string()) return std::nullopt;
            return v->as_string();
        } else if constexpr (std::is_same_v<T, bool>) {
            if (!v->is_bool()) return std::nullopt;
            return v->as_bool();
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, char>) {
            // The common counter and id case without a trip through JSON text.
            if (v->type() == json::Type::int64) {
                const std::int64_t x = v->as_int64();
                if (std::in_range<T>(x)) return static_cast<T>(x);
            } else if (v->type() == json::Type::uint64) {
                const std::uint64_t x = v->as_uint64();
                if (std::in_range<T>(x)) return static_cast<T>(x);
            }
            return std::nullopt;
        } else {
            T out{};
            if (json::read(json::write(*v), out)) return std::nullopt;
            return out;
        }
    }
    /// Stores `value` under `key` (written as JSON now: a later change to the original does
    /// not reach the session). Throws json::WriteError for a value JSON cannot hold.
    template <class T>
    void set(std::string_view key, const T& value) {
        if constexpr (std::is_same_v<T, json::Value>) {
            put(key, value);
        } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool> ||
                             std::is_same_v<T, double> ||
                             (std::is_integral_v<T> && !std::is_same_v<T, char> &&
                              sizeof(T) >= sizeof(int))) {
            put(key, json::Value(value));
        } else {
            put(key, json::parse<json::Value>(json::write(value)));
        }
    }
    /// Removes `key`; true when it was there.
    bool erase(std::string_view key);
    /// Removes every value (the session and its id stay).
    void clear();
    /// True when a value is stored under `key`.
    bool contains(std::string_view key) const { return find(key) != nullptr; }
    /// Every value, as a JSON object.
    const json::Value& values() const;

    /// Gives the session a new id, keeping its values; the old id is erased from the store
    /// when the request ends. Call it on login (and on any change of privilege).
    void regenerate();
    /// Ends the session: its values are dropped, the store forgets it and the cookie is
    /// expired. Values set afterwards start a new session with a new id.
    void destroy();

    /// The id; a new session gets one on the first call (only stored and sent if saved).
    const std::string& id();
    /// True when the request brought no valid session (none, unknown, expired or destroyed).
    bool is_new() const noexcept { return is_new_; }
    /// When the session was created (now, for a new one).
    SessionTime created() const noexcept { return record_.created; }
    /// True when a value was changed, or the session regenerated or destroyed.
    bool changed() const noexcept { return changed_ || regenerated_ || destroyed_; }

    /// A new, empty session created at `now` (the middleware makes these).
    explicit Session(SessionTime now) noexcept;

  private:
    friend struct detail::SessionAccess;
    const json::Value* find(std::string_view key) const;
    void put(std::string_view key, json::Value value);
    json::Value& parsed() const;

    std::string id_;
    SessionTime now_;  // when the request began
    SessionRecord record_;
    mutable json::Value values_;
    mutable bool parsed_ = false;
    bool is_new_ = true;
    bool changed_ = false;
    bool regenerated_ = false;
    bool destroyed_ = false;
    std::vector<std::string> erase_ids_;  // ids to erase from the store at the end
};

}  // namespace vela
