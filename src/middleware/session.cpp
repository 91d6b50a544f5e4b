#include "vela/middleware/session.hpp"

#include <algorithm>
#include <bit>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "vela/base/ascii.hpp"
#include "vela/base/log.hpp"
#include "vela/crypto/crypto.hpp"

namespace vela {

namespace {

using SysClock = std::chrono::system_clock;
using std::chrono::seconds;

constexpr std::size_t kIdBytes = 32;         // 256-bit ids
constexpr std::size_t kIdLength = 43;        // their base64url length
constexpr std::size_t kEntryOverhead = 160;  // map node, bucket, Entry fields: roughly
constexpr std::size_t kMinSecret = 32;
constexpr std::size_t kMaxCookieValue = 16 * 1024;  // never decode more than this
constexpr unsigned char kCookieVersion = 1;
constexpr int kMaxSessionCookies = 4;  // same-named session cookies tried per request
constexpr std::string_view kCookieKeyPurpose = "vela session cookie v1";

SysClock::time_point clock_now(const SessionClock& c) { return c ? c() : SysClock::now(); }

bool base64url_char(char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

// The shape of the ids we make: anything else is not looked up at all.
bool plausible_id(std::string_view id) noexcept {
    return id.size() == kIdLength && std::all_of(id.begin(), id.end(), base64url_char);
}

void put_u64(std::string& out, std::uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8)
        out.push_back(static_cast<char>((v >> shift) & 0xff));
}

std::uint64_t get_u64(std::string_view in) noexcept {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
    return v;
}

}  // namespace

// ---- SessionRecord ----------------------------------------------------------------------

std::string SessionRecord::encode() const {
    std::string out = "{\"c\":";
    out += std::to_string(created.time_since_epoch().count());
    out += ",\"a\":";
    out += std::to_string(accessed.time_since_epoch().count());
    out += ",\"d\":";
    out += data.empty() ? std::string_view("{}") : std::string_view(data);
    out += '}';
    return out;
}

std::optional<SessionRecord> SessionRecord::decode(std::string_view text) {
    json::Value v;
    if (json::read(text, v) || !v.is_object()) return std::nullopt;
    const json::Value* c = v.find("c");
    const json::Value* a = v.find("a");
    const json::Value* d = v.find("d");
    if (!c || !a || !d || !d->is_object()) return std::nullopt;
    if (c->type() != json::Type::int64 && c->type() != json::Type::uint64) return std::nullopt;
    if (a->type() != json::Type::int64 && a->type() != json::Type::uint64) return std::nullopt;
    SessionRecord r;
    try {
        r.created = SessionTime(seconds(c->as_int64()));
        r.accessed = SessionTime(seconds(a->as_int64()));
        r.data = json::write(*d);
    } catch (const std::exception&) {
        return std::nullopt;  // an integer past int64
    }
    return r;
}

// ---- MemoryStore ------------------------------------------------------------------------

struct alignas(64) MemoryStore::Shard {
    struct Entry {
        SessionRecord record;
        SysClock::time_point expires;
        std::size_t bytes = 0;
        Entry* prev = nullptr;  // towards the most recently used
        Entry* next = nullptr;  // towards the least recently used
        const std::string* key = nullptr;
    };
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    struct Eq {
        using is_transparent = void;
        bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
    };

    mutable std::mutex mu;
    std::unordered_map<std::string, Entry, Hash, Eq> map;
    Entry* head = nullptr;  // most recently used
    Entry* tail = nullptr;  // least recently used
    std::size_t bytes = 0;
    std::size_t evictions = 0;

    void unlink(Entry* e) noexcept {
        (e->prev ? e->prev->next : head) = e->next;
        (e->next ? e->next->prev : tail) = e->prev;
        e->prev = e->next = nullptr;
    }
    void push_front(Entry* e) noexcept {
        e->prev = nullptr;
        e->next = head;
        (head ? head->prev : tail) = e;
        head = e;
    }
    void touch(Entry* e) noexcept {
        if (head == e) return;
        unlink(e);
        push_front(e);
    }
    void drop(Entry* e) {
        bytes -= e->bytes;
        unlink(e);
        map.erase(map.find(std::string_view(*e->key)));
    }
    // Drops least recently used entries (not `keep`) until `extra` more sessions and bytes
    // fit; expired ones are not counted as evictions.
    void make_room(std::size_t extra_count, std::size_t extra_bytes, std::size_t max_count,
                   std::size_t max_bytes, SysClock::time_point now, const Entry* keep) {
        while (tail && tail != keep &&
               ((max_count && map.size() + extra_count > max_count) ||
                (max_bytes && bytes + extra_bytes > max_bytes))) {
            if (tail->expires > now) ++evictions;
            drop(tail);
        }
    }
    // Sessions met expired at the cold end go now, a couple per save (amortised cleanup).
    void drop_expired_tail(SysClock::time_point now, const Entry* keep, int budget) {
        while (budget-- > 0 && tail && tail != keep && tail->expires <= now) drop(tail);
    }
};

MemoryStore::MemoryStore(MemoryStoreOptions options) : options_(std::move(options)) {
    const std::size_t n = std::bit_ceil(std::clamp<std::size_t>(options_.shards, 1, 1024));
    options_.shards = n;
    shard_mask_ = n - 1;
    shard_max_sessions_ = options_.max_sessions ? (options_.max_sessions + n - 1) / n : 0;
    shard_max_bytes_ = options_.max_bytes ? (options_.max_bytes + n - 1) / n : 0;
    shards_ = std::make_unique<Shard[]>(n);
}

MemoryStore::~MemoryStore() = default;

MemoryStore::Shard& MemoryStore::shard_for(std::string_view id) const noexcept {
    std::size_t h = std::hash<std::string_view>{}(id);
    h ^= h >> 29;  // the map uses the low bits too: spread the shard choice over others
    return shards_[(h >> 7) & shard_mask_];
}

SysClock::time_point MemoryStore::now() const { return clock_now(options_.clock); }

std::optional<SessionRecord> MemoryStore::find(std::string_view id) {
    Shard& s = shard_for(id);
    const auto t = now();
    std::lock_guard lock(s.mu);
    auto it = s.map.find(id);
    if (it == s.map.end()) return std::nullopt;
    Shard::Entry* e = &it->second;
    if (e->expires <= t) {
        s.drop(e);
        return std::nullopt;
    }
    s.touch(e);
    return e->record;
}

bool MemoryStore::put(std::string_view id, const SessionRecord& record, seconds ttl,
                      bool only_if_present) {
    const std::size_t need = id.size() + record.data.size() + kEntryOverhead;
    if (shard_max_bytes_ && need > shard_max_bytes_)
        throw std::length_error("session of " + std::to_string(need) +
                                " bytes is larger than the memory store's per-shard budget of " +
                                std::to_string(shard_max_bytes_) + " bytes");
    Shard& s = shard_for(id);
    const auto t = now();
    const auto expires = t + ttl;
    std::lock_guard lock(s.mu);
    auto it = s.map.find(id);
    if (it != s.map.end() && only_if_present && it->second.expires <= t) {
        s.drop(&it->second);
        return false;
    }
    if (it != s.map.end()) {
        Shard::Entry* e = &it->second;
        s.touch(e);
        s.bytes -= e->bytes;
        s.make_room(0, need, shard_max_sessions_, shard_max_bytes_, t, e);
        e->record = record;
        e->expires = expires;
        e->bytes = need;
        s.bytes += need;
        s.drop_expired_tail(t, e, 2);
        return true;
    }
    if (only_if_present) return false;
    s.drop_expired_tail(t, nullptr, 2);
    s.make_room(1, need, shard_max_sessions_, shard_max_bytes_, t, nullptr);
    auto [pos, inserted] = s.map.try_emplace(std::string(id));
    Shard::Entry* e = &pos->second;
    e->record = record;
    e->expires = expires;
    e->bytes = need;
    e->key = &pos->first;
    s.bytes += need;
    s.push_front(e);
    return true;
}

bool MemoryStore::remove(std::string_view id) {
    Shard& s = shard_for(id);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(id);
    if (it == s.map.end()) return false;
    s.drop(&it->second);
    return true;
}

std::size_t MemoryStore::purge_expired() {
    const auto t = now();
    std::size_t n = 0;
    for (std::size_t i = 0; i <= shard_mask_; ++i) {
        Shard& s = shards_[i];
        std::lock_guard lock(s.mu);
        for (Shard::Entry* e = s.tail; e;) {
            Shard::Entry* prev = e->prev;
            if (e->expires <= t) {
                s.drop(e);
                ++n;
            }
            e = prev;
        }
    }
    return n;
}

std::size_t MemoryStore::size() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i <= shard_mask_; ++i) {
        std::lock_guard lock(shards_[i].mu);
        n += shards_[i].map.size();
    }
    return n;
}

std::size_t MemoryStore::bytes() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i <= shard_mask_; ++i) {
        std::lock_guard lock(shards_[i].mu);
        n += shards_[i].bytes;
    }
    return n;
}

std::size_t MemoryStore::evictions() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i <= shard_mask_; ++i) {
        std::lock_guard lock(shards_[i].mu);
        n += shards_[i].evictions;
    }
    return n;
}

Task<std::optional<SessionRecord>> MemoryStore::load(std::string_view id) { co_return find(id); }

Task<void> MemoryStore::save(std::string_view id, const SessionRecord& record, seconds ttl) {
    put(id, record, ttl);
    co_return;
}

Task<void> MemoryStore::erase(std::string_view id) {
    remove(id);
    co_return;
}

Task<bool> MemoryStore::update(std::string_view id, const SessionRecord& record, seconds ttl) {
    co_return put(id, record, ttl, true);
}

// ---- CookieStore ------------------------------------------------------------------------

CookieStore::CookieStore(std::vector<std::string> secrets) {
    if (secrets.empty()) throw std::invalid_argument("CookieStore: no secret given");
    for (const std::string& s : secrets) {
        if (s.size() < kMinSecret)
            throw std::invalid_argument("CookieStore: a secret must be at least " +
                                        std::to_string(kMinSecret) + " bytes (got " +
                                        std::to_string(s.size()) + ")");
        keys_.push_back(crypto::derive_key(s, kCookieKeyPurpose, 32));
    }
}

std::string CookieStore::seal(std::string_view id, const SessionRecord& record,
                              std::string_view context) const {
    if (id.size() > 255) throw std::invalid_argument("CookieStore: session id over 255 bytes");
    std::string plain;
    plain.reserve(18 + id.size() + record.data.size());
    plain.push_back(static_cast<char>(kCookieVersion));
    put_u64(plain, static_cast<std::uint64_t>(record.created.time_since_epoch().count()));
    put_u64(plain, static_cast<std::uint64_t>(record.accessed.time_since_epoch().count()));
    plain.push_back(static_cast<char>(id.size()));
    plain.append(id);
    plain.append(record.data);
    return vela::base64url_encode(crypto::aes_gcm_seal(keys_.front(), plain, context));
}

std::optional<OpenedSession> CookieStore::open(std::string_view value,
                                               std::string_view context) const {
    if (value.empty() || value.size() > kMaxCookieValue) return std::nullopt;
    std::optional<std::string> sealed = vela::base64url_decode(value);
    if (!sealed) return std::nullopt;
    std::optional<std::string> plain;
    for (const std::string& key : keys_)
        if ((plain = crypto::aes_gcm_open(key, *sealed, context))) break;
    if (!plain) return std::nullopt;
    const std::string_view p = *plain;
    if (p.size() < 18 || static_cast<unsigned char>(p[0]) != kCookieVersion) return std::nullopt;
    const std::size_t id_len = static_cast<unsigned char>(p[17]);
    if (p.size() < 18 + id_len) return std::nullopt;
    OpenedSession out;
    out.record.created = SessionTime(seconds(static_cast<std::int64_t>(get_u64(p.substr(1)))));
    out.record.accessed = SessionTime(seconds(static_cast<std::int64_t>(get_u64(p.substr(9)))));
    out.id.assign(p.substr(18, id_len));
    out.record.data.assign(p.substr(18 + id_len));
    return out;
}

// ---- Session ----------------------------------------------------------------------------

Session::Session(SessionTime now) noexcept : now_(now) {
    record_.created = now;
    record_.accessed = now;
}

json::Value& Session::parsed() const {
    if (!parsed_) {
        parsed_ = true;
        if (json::read(record_.data, values_) || !values_.is_object())
            values_ = json::Value::object();
    }
    return values_;
}

const json::Value& Session::values() const { return parsed(); }

const json::Value* Session::find(std::string_view key) const { return parsed().find(key); }

void Session::put(std::string_view key, json::Value value) {
    json::Value& obj = parsed();
    if (json::Value* old = obj.find(key)) {
        if (*old == value) return;
        *old = std::move(value);
    } else {
        obj.set(key, std::move(value));
    }
    changed_ = true;
}

bool Session::erase(std::string_view key) {
    json::Value::Object& members = parsed().as_object();
    auto it = std::find_if(members.begin(), members.end(),
                           [&](const json::Value::Member& m) { return m.first == key; });
    if (it == members.end()) return false;
    members.erase(it);
    changed_ = true;
    return true;
}

void Session::clear() {
    json::Value::Object& members = parsed().as_object();
    if (members.empty()) return;
    members.clear();
    changed_ = true;
}

void Session::regenerate() {
    if (is_new_) {
        id_.clear();  // nothing stored yet: a fresh id is made when needed
        return;
    }
    erase_ids_.push_back(std::move(id_));
    id_ = crypto::random_token(kIdBytes);
    regenerated_ = true;
}

void Session::destroy() {
    if (!is_new_) erase_ids_.push_back(std::move(id_));
    id_.clear();
    values_ = json::Value::object();
    parsed_ = true;
    record_ = SessionRecord{};
    record_.created = now_;
    record_.accessed = now_;
    is_new_ = true;
    changed_ = false;
    regenerated_ = false;
    destroyed_ = true;
}

const std::string& Session::id() {
    if (id_.empty()) id_ = crypto::random_token(kIdBytes);
    return id_;
}

// ---- The middleware ---------------------------------------------------------------------

namespace {

struct SessionState {
    SessionOptions o;
    std::shared_ptr<SessionStore> store;
    std::shared_ptr<const CookieStore> sealer;

    SessionTime now() const { return std::chrono::floor<seconds>(clock_now(o.clock)); }

    bool expired(const SessionRecord& r, SessionTime t) const noexcept {
        return t - r.created >= o.absolute_timeout || t - r.accessed >= o.idle_timeout;
    }

    Cookie cookie(const Request& req, std::string value) const {
        Cookie c;
        c.name = o.cookie_name;
        c.value = std::move(value);
        c.path = o.path;
        c.domain = o.domain;
        c.secure = o.secure ? *o.secure : (req.secure() || req.scheme() == "https");
        c.http_only = o.http_only;
        c.same_site = o.same_site;
        return c;
    }
};

}  // namespace

namespace detail {

struct SessionAccess {
    // Adopts the session the cookie names, if valid and current; false otherwise.
    static Task<bool> adopt(const SessionState& st, Session& s, std::string_view value) {
        if (st.sealer) {
            std::optional<OpenedSession> opened = st.sealer->open(value, st.o.cookie_name);
            if (!opened || !plausible_id(opened->id) || st.expired(opened->record, s.now_))
                co_return false;
            s.id_ = std::move(opened->id);
            s.record_ = std::move(opened->record);
            s.is_new_ = false;
            co_return true;
        }
        if (!plausible_id(value)) co_return false;
        std::optional<SessionRecord> rec = co_await st.store->load(value);
        if (!rec) co_return false;
        if (st.expired(*rec, s.now_)) {
            co_await st.store->erase(value);
            co_return false;
        }
        s.id_.assign(value);
        s.record_ = std::move(*rec);
        s.is_new_ = false;
        co_return true;
    }

    static bool has_values(const Session& s) {
        return s.parsed_ ? s.values_.size() != 0 : s.record_.data != "{}";
    }

    // Saves what needs saving and sets or expires the cookie.
    static Task<void> finish(const SessionState& st, Session& s, const Request& req, Response& res,
                             bool stale_cookie) {
        if (st.store)
            for (const std::string& old : s.erase_ids_) co_await st.store->erase(old);

        const SessionTime t = st.now();
        bool save;
        if (s.is_new_)
            save = s.changed_ && has_values(s);
        else
            save = s.changed_ || s.regenerated_ || t - s.record_.accessed >= st.o.touch_interval;

        const seconds left = s.record_.created + st.o.absolute_timeout - t;
        const seconds ttl = std::min(st.o.idle_timeout, left);
        if (save && ttl <= seconds(0)) {  // outlived its absolute expiry during the request
            if (st.store && !s.is_new_) co_await st.store->erase(s.id_);
            save = false;
            stale_cookie = true;
        }
        if (!save) {
            if (stale_cookie || s.destroyed_) {
                Cookie c = st.cookie(req, "");
                c.max_age = seconds(0);
                res.set_cookie(c);
            }
            co_return;
        }

        SessionRecord rec;
        rec.created = s.record_.created;
        rec.accessed = t;
        rec.data = s.parsed_ ? json::write(s.values_) : s.record_.data;
        const std::string& id = s.id();

        if (st.sealer) {
            std::string value = st.sealer->seal(id, rec, st.o.cookie_name);
            const std::size_t size = st.o.cookie_name.size() + 1 + value.size();
            if (size > st.o.max_cookie_size) {
                log::error(
                    "session cookie {} of {} bytes exceeds max_cookie_size {}: not sent, the "
                    "changes to the session in {} {} are lost",
                    st.o.cookie_name, size, st.o.max_cookie_size, req.method_name(), req.target());
                co_return;
            }
            Cookie c = st.cookie(req, std::move(value));
            if (st.o.persistent) c.max_age = ttl;
            res.set_cookie(c);
            co_return;
        }

        if (s.is_new_ || s.regenerated_) {
            co_await st.store->save(id, rec, ttl);
        } else if (!co_await st.store->update(id, rec, ttl)) {
            co_return;  // ended meanwhile by another request (logout, login): stays ended
        }
        if (s.is_new_ || s.regenerated_ || st.o.persistent) {
            Cookie c = st.cookie(req, id);
            if (st.o.persistent) c.max_age = ttl;
            res.set_cookie(c);
        }
    }

    static Task<Response> run(std::shared_ptr<const SessionState> st, Request& req, Next next) {
        // A second sessions() on the route would replace (and free) the Session the outer
        // one still holds.
        if (req.local<Session>())
            throw std::logic_error("sessions() is installed twice on the route to " +
                                   std::string(req.target()));
        Session& s = req.set_local<Session>(st->now());
        // Every cookie of that name is tried (a sibling subdomain may plant one with a longer
        // Path, which browsers send first), up to a few.
        bool any = false, adopted = false;
        int tries = 0;
        for (const Header& h : req.headers()) {
            if (adopted || tries >= kMaxSessionCookies) break;
            if (!ascii::iequals(h.name, "Cookie")) continue;
            std::string_view field = h.value, name, value;
            while (!adopted && tries < kMaxSessionCookies && next_cookie(field, name, value)) {
                if (name != st->o.cookie_name) continue;
                any = true;
                ++tries;
                adopted = co_await adopt(*st, s, value);
            }
        }
        const bool stale_cookie = any && !adopted;
        Response res = co_await next();
        // A 5xx (a handler's exception arrives as one) keeps the session as it was: no
        // half-done changes are saved.
        if (static_cast<int>(res.status()) < 500) co_await finish(*st, s, req, res, stale_cookie);
        co_return res;
    }
};

}  // namespace detail

std::function<Task<Response>(Request&, Next)> sessions(SessionOptions options) {
    if (options.store && options.cookie_store)
        throw std::invalid_argument("sessions: set either store or cookie_store, not both");
    if (options.cookie_name.empty()) throw std::invalid_argument("sessions: empty cookie_name");
    if (options.idle_timeout <= seconds(0) || options.absolute_timeout <= seconds(0))
        throw std::invalid_argument("sessions: idle_timeout and absolute_timeout must be positive");
    if (options.touch_interval < seconds(0)) options.touch_interval = seconds(0);
    options.touch_interval = std::min(options.touch_interval, options.idle_timeout / 2);
    // Fail now, not on the first request, for a name or path a cookie may not carry.
    Cookie probe;
    probe.name = options.cookie_name;
    probe.value = "x";
    probe.domain = options.domain;
    probe.path = options.path;
    probe.secure = true;
    probe.same_site = options.same_site;
    (void)format_set_cookie(probe);

    auto st = std::make_shared<SessionState>();
    st->sealer = options.cookie_store;
    st->store = options.store;
    if (!st->sealer && !st->store) {
        MemoryStoreOptions mo;
        mo.clock = options.clock;
        st->store = std::make_shared<MemoryStore>(std::move(mo));
    }
    st->o = std::move(options);
    return [st = std::shared_ptr<const SessionState>(std::move(st))](Request& req, Next next) {
        return detail::SessionAccess::run(st, req, next);
    };
}

Session& session(Request& req) {
    if (Session* s = req.local<Session>()) return *s;
    throw std::logic_error(
        "vela::session(req): no session on this request; install the middleware with "
        "app.use(vela::sessions(...)) on the app or the route's group");
}

}  // namespace vela
