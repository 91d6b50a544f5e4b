#include "vela/middleware/rate_limit.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "vela/crypto/crypto.hpp"
#include "vela/web/extract.hpp"

namespace vela {

namespace {

// ---- Keys ----------------------------------------------------------------------------------
//
// A stored key is one byte saying where it came from, then the data: the header key falls
// back to the client address, and the two must never meet in one bucket. Data longer than
// kMaxKeySize is replaced by its SHA-256 (a huge API key would otherwise cost its size per
// bucket), with the kind byte's high bit set.

constexpr char kIpv4 = '4';
constexpr char kIpv6 = '6';
constexpr char kOther = 'a';  // an address that is neither (a proxy's odd report)
constexpr char kHeader = 'h';
constexpr char kFunction = 'f';

std::size_t put_key(char kind, std::string_view data, char* out) {
    if (data.size() <= RateLimitKey::kMaxKeySize) {
        out[0] = kind;
        std::memcpy(out + 1, data.data(), data.size());
        return data.size() + 1;
    }
    const crypto::Digest d = crypto::sha256(data);
    out[0] = static_cast<char>(static_cast<unsigned char>(kind) | 0x80u);
    std::memcpy(out + 1, d.data(), d.size());
    return d.size() + 1;
}

bool is_v4_mapped(const unsigned char* b) noexcept {
    static constexpr unsigned char prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(b, prefix, sizeof prefix) == 0;
}

// IPv6 addresses by prefix (a /64 is one subscriber's: every address in it is one client).
std::size_t put_address(std::string_view ip, int ipv6_prefix, char* out) {
    if (ip.empty()) return 0;
    if (ip.find(':') == std::string_view::npos) return put_key(kIpv4, ip, out);
    char text[INET6_ADDRSTRLEN] = {};
    unsigned char bytes[16];
    if (ip.size() >= sizeof text) return put_key(kOther, ip, out);
    std::memcpy(text, ip.data(), ip.size());
    if (::inet_pton(AF_INET6, text, bytes) != 1) return put_key(kOther, ip, out);
    if (is_v4_mapped(bytes)) {  // ::ffff:192.0.2.1 is 192.0.2.1 (all of these share one /64)
        char v4[INET_ADDRSTRLEN];
        if (::inet_ntop(AF_INET, bytes + 12, v4, sizeof v4)) return put_key(kIpv4, v4, out);
    }
    for (int bit = ipv6_prefix; bit < 128; ++bit)
        bytes[bit / 8] &= static_cast<unsigned char>(~(0x80u >> (bit % 8)));
    return put_key(kIpv6, std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes),
                   out);
}

// ---- Hashing -------------------------------------------------------------------------------
//
// Keys come from clients, so the table hash is seeded per limiter with random bytes: nobody
// outside can aim many keys at one shard or one hash chain. (Not a cryptographic PRF; the
// per-shard bound keeps even a lucky guess's damage to a bounded scan.)

std::uint64_t mix64(std::uint64_t x) noexcept {
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    return x;
}

std::uint64_t load8(const char* p) noexcept {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
}

std::uint64_t hash_key(std::string_view key, std::uint64_t seed) noexcept {
    constexpr std::uint64_t k = 0x9e3779b97f4a7c15ULL;
    const char* p = key.data();
    const std::size_t n = key.size();
    std::uint64_t h = seed ^ (n * k);
    if (n >= 8) {
        std::size_t i = 0;
        for (; i + 8 < n; i += 8) h = mix64(h ^ load8(p + i)) + k;
        h = mix64(h ^ load8(p + n - 8)) + k;  // the last 8 bytes (may overlap the previous word)
    } else {
        std::uint64_t w = 0;
        for (std::size_t i = 0; i < n; ++i)
            w |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
        h = mix64(h ^ w) + k;
    }
    return mix64(h ^ seed);
}

// ---- The table -----------------------------------------------------------------------------

struct Probe {
    std::string_view key;
    std::size_t hash;
};

struct Bucket;
using Entry = std::pair<const std::string, Bucket>;

struct Bucket {
    double tokens;
    std::int64_t updated;  // ns on the limiter's clock
    Entry* older;          // least-recently-used order within the shard
    Entry* newer;
};

struct KeyHash {
    using is_transparent = void;
    std::uint64_t seed;
    std::size_t operator()(const std::string& k) const noexcept { return hash_key(k, seed); }
    std::size_t operator()(const Probe& p) const noexcept { return p.hash; }
};

struct KeyEqual {
    using is_transparent = void;
    bool operator()(const std::string& a, const std::string& b) const noexcept { return a == b; }
    bool operator()(const Probe& a, const std::string& b) const noexcept { return a.key == b; }
    bool operator()(const std::string& a, const Probe& b) const noexcept { return a == b.key; }
};

// One shard: a map of buckets and their use order under one small mutex. Aligned so two
// shards never share a cache line (loops on different shards do not slow each other).
struct alignas(64) Shard {
    using Map = std::unordered_map<std::string, Bucket, KeyHash, KeyEqual>;
    std::mutex mu;
    Map map{0, KeyHash{0}};
    Entry* oldest = nullptr;
    Entry* newest = nullptr;

    void unlink(Entry& e) noexcept {
        Bucket& b = e.second;
        (b.older ? b.older->second.newer : oldest) = b.newer;
        (b.newer ? b.newer->second.older : newest) = b.older;
        b.older = b.newer = nullptr;
    }
    void push_newest(Entry& e) noexcept {
        e.second.older = newest;
        e.second.newer = nullptr;
        (newest ? newest->second.newer : oldest) = &e;
        newest = &e;
    }
    void erase(Entry& e) {
        unlink(e);
        map.erase(e.first);
    }
};

constexpr std::uint32_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();

std::uint32_t saturate(double v) noexcept {
    if (!(v > 0)) return 0;
    return v >= static_cast<double>(kMaxU32) ? kMaxU32 : static_cast<std::uint32_t>(v);
}

// Whole seconds for a wait of `ns`, rounded up; a microsecond of slack keeps an exact second
// (1e9 ns computed as 1000000000.0000001) from reading as two.
std::uint32_t ceil_seconds(double ns) noexcept { return saturate(std::ceil((ns - 1000.0) / 1e9)); }

bool valid_name(std::string_view n) noexcept {
    if (n.empty() || n.size() > 64) return false;
    for (char c : n) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == ':';
        if (!ok) return false;
    }
    return true;
}

void append_number(std::string& out, std::uint64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

}  // namespace

// ---- RateLimitKey --------------------------------------------------------------------------

RateLimitKey RateLimitKey::client_ip(int ipv6_prefix) {
    if (ipv6_prefix < 1 || ipv6_prefix > 128)
        throw std::invalid_argument(
            "rate_limit_key::client_ip: the IPv6 prefix must be 1-128, got " +
            std::to_string(ipv6_prefix));
    RateLimitKey k;
    k.kind_ = Kind::client_ip;
    k.ipv6_prefix_ = ipv6_prefix;
    return k;
}

RateLimitKey RateLimitKey::header(std::string_view name) {
    if (name.empty()) throw std::invalid_argument("rate_limit_key::header: empty header name");
    RateLimitKey k;
    k.kind_ = Kind::header;
    k.header_ = std::string(name);
    return k;
}

std::size_t RateLimitKey::extract(const Request& req, char* out) const {
    switch (kind_) {
        case Kind::client_ip:
            return put_address(req.client_ip(), ipv6_prefix_, out);
        case Kind::header: {
            const std::string_view v = req.header(header_);
            if (!v.empty()) return put_key(kHeader, v, out);
            return put_address(req.client_ip(), 64, out);
        }
        case Kind::function: {
            const std::string k = fn_(req);
            return k.empty() ? 0 : put_key(kFunction, k, out);
        }
    }
    return 0;
}

// ---- RateLimiter ---------------------------------------------------------------------------

struct RateLimiter::State {
    RateLimitOptions opt;
    double burst = 0;         // bucket size in tokens
    double per_ns = 0;        // tokens added per nanosecond
    double ns_per_token = 0;  // nanoseconds to add one token
    double eps = 0;           // tolerance of the floating-point token count
    std::uint64_t seed = 0;
    std::size_t shard_count = 0;
    std::size_t per_shard = 0;  // keys per shard
    std::unique_ptr<Shard[]> shards;
    std::string policy;       // RateLimit-Policy value
    std::string attr_key;     // request attribute the before hook leaves for the after hook
    std::string item_prefix;  // "name";r= (the start of every RateLimit item)
    std::atomic<bool> record{false};

    std::int64_t now() const {
        const auto t = opt.clock ? opt.clock() : std::chrono::steady_clock::now();
        return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    }
    Shard& shard_of(std::uint64_t hash) const noexcept {
        return shards[static_cast<std::size_t>(hash >> 40) & (shard_count - 1)];
    }
    // Tokens in `b` at `t` (refilled since it was last touched, up to the burst).
    double level(const Bucket& b, std::int64_t t) const noexcept {
        if (t <= b.updated) return b.tokens;  // another loop read the clock a little later
        return std::min(burst, b.tokens + static_cast<double>(t - b.updated) * per_ns);
    }
    bool full(const Bucket& b, std::int64_t t) const noexcept { return level(b, t) >= burst - eps; }
    std::uint32_t seconds_until_full(double tokens) const noexcept {
        const double missing = burst - tokens;
        return missing <= eps ? 0 : ceil_seconds(missing * ns_per_token);
    }
    // Makes room in `sh` for one more key: forgets buckets that are full again (no change in
    // behaviour), then, if the shard is still at its bound, the least recently used one.
    void make_room(Shard& sh, std::int64_t t) {
        for (int i = 0; i < 4 && sh.oldest && full(sh.oldest->second, t); ++i) sh.erase(*sh.oldest);
        if (sh.map.size() >= per_shard && sh.oldest) sh.erase(*sh.oldest);
    }
};

RateLimiter::RateLimiter(RateLimitOptions options) : state_(std::make_shared<State>()) {
    State& s = *state_;
    if (options.rate == 0) throw std::invalid_argument("rate_limit: rate must be at least 1");
    if (options.period.count() <= 0)
        throw std::invalid_argument("rate_limit: period must be positive");
    if (options.burst == 0) options.burst = options.rate;
    if (options.cost > options.burst)
        throw std::invalid_argument("rate_limit: cost " + std::to_string(options.cost) +
                                    " exceeds the burst " + std::to_string(options.burst) +
                                    " (no request could pass)");
    if (options.max_keys == 0)
        throw std::invalid_argument("rate_limit: max_keys must be at least 1");
    if (!valid_name(options.name))
        throw std::invalid_argument(
            "rate_limit: the name must be 1-64 characters of A-Z a-z 0-9 - _ . :");

    s.burst = options.burst;
    s.per_ns = static_cast<double>(options.rate) / static_cast<double>(options.period.count());
    s.ns_per_token =
        static_cast<double>(options.period.count()) / static_cast<double>(options.rate);
    s.eps = 1e-9 * (s.burst + 1);

    std::size_t n = options.shards;
    if (n == 0) n = std::min<std::size_t>(64, std::bit_floor(options.max_keys));
    s.shard_count = std::bit_ceil(std::min<std::size_t>(n, 4096));
    s.per_shard = (options.max_keys + s.shard_count - 1) / s.shard_count;

    const std::string seed = crypto::random_bytes(sizeof s.seed);
    std::memcpy(&s.seed, seed.data(), sizeof s.seed);
    s.shards = std::make_unique<Shard[]>(s.shard_count);
    for (std::size_t i = 0; i < s.shard_count; ++i)
        Shard::Map(0, KeyHash{s.seed}).swap(s.shards[i].map);  // swap exchanges the hashers too

    // draft-ietf-httpapi-ratelimit-headers-09 section 3: a quota policy item "name";q=;w=.
    // w is the time an empty bucket takes to fill (the window the quota q is granted over).
    s.item_prefix = "\"" + options.name + "\";r=";
    s.policy = "\"" + options.name + "\";q=";
    append_number(s.policy, options.burst);
    s.policy += ";w=";
    append_number(s.policy, std::max<std::uint32_t>(1, ceil_seconds(s.burst * s.ns_per_token)));

    char self[2 + 2 * sizeof(void*)];
    const auto r =
        std::to_chars(self, self + sizeof self, reinterpret_cast<std::uintptr_t>(&s), 16);
    s.attr_key = "vela.rate_limit@" + std::string(self, r.ptr);
    s.opt = std::move(options);
}

// The bucket step under the shard's lock: refill, take `cost` tokens if there, and report
// the tokens left (and, when refused, the wait in ns; negative: it never fits).
RateLimiter::Take RateLimiter::take(std::string_view key, std::uint32_t cost) const {
    State& s = *state_;
    const std::uint64_t h = hash_key(key, s.seed);
    Shard& sh = s.shard_of(h);
    const std::int64_t t = s.now();

    std::lock_guard lock(sh.mu);
    auto it = sh.map.find(Probe{key, static_cast<std::size_t>(h)});
    if (it == sh.map.end()) {
        s.make_room(sh, t);
        it = sh.map.emplace(std::string(key), Bucket{s.burst, t, nullptr, nullptr}).first;
        sh.push_newest(*it);
    } else {
        Bucket& b = it->second;
        b.tokens = s.level(b, t);
        b.updated = std::max(b.updated, t);
        if (sh.newest != &*it) {
            sh.unlink(*it);
            sh.push_newest(*it);
        }
    }

    Bucket& b = it->second;
    if (cost > s.burst) return {false, b.tokens, -1.0};  // it never fits
    if (b.tokens + s.eps >= cost) {
        b.tokens = std::max(0.0, b.tokens - cost);
        return {true, b.tokens, 0.0};
    }
    return {false, b.tokens, (cost - b.tokens) * s.ns_per_token};
}

RateLimitDecision RateLimiter::decide(const Take& r) const {
    const State& s = *state_;
    RateLimitDecision d;
    d.allowed = r.allowed;
    d.remaining = saturate(std::floor(r.tokens + s.eps));
    d.reset = s.seconds_until_full(r.tokens);
    if (!r.allowed && r.wait_ns >= 0)
        d.retry_after = std::max<std::uint32_t>(1, ceil_seconds(r.wait_ns));
    return d;
}

RateLimitDecision RateLimiter::consume(std::string_view key, std::uint32_t cost) const {
    return decide(take(key, cost));
}

std::optional<Response> RateLimiter::operator()(Request& req) const {
    const State& s = *state_;
    char key[RateLimitKey::kBufferSize];
    const std::size_t n = s.opt.key.extract(req, key);
    if (n == 0) return std::nullopt;
    const std::uint32_t cost = s.opt.cost_of ? s.opt.cost_of(req) : s.opt.cost;
    const Take r = take(std::string_view(key, n), cost);
    if (!r.allowed) return refusal(decide(r));
    if (s.opt.headers && s.record.load(std::memory_order_relaxed)) {
        const RateLimitDecision d = decide(r);
        // The RateLimit item, left for the after hook on the way out: "name";r=<left>;t=<reset>.
        thread_local std::string item;  // keeps its capacity: no allocation per request
        item.assign(s.item_prefix);     // "name";r=
        append_number(item, d.remaining);
        item += ";t=";
        append_number(item, d.reset);
        req.set_attribute(s.attr_key, item);
    }
    return std::nullopt;
}

Response RateLimiter::refusal(const RateLimitDecision& d) const {
    const State& s = *state_;
    std::string detail;
    if (d.retry_after) {
        detail = "too many requests: retry in ";
        append_number(detail, d.retry_after);
        detail += d.retry_after == 1 ? " second" : " seconds";
    } else {
        detail = "this request costs more than the rate limit allows at once";
    }
    Response r = problem_response(Status::TooManyRequests, detail);
    if (d.retry_after) {
        std::string v;
        append_number(v, d.retry_after);
        r.add_header("Retry-After", v);
    }
    if (s.opt.headers) {
        std::string item = s.item_prefix;
        append_number(item, d.remaining);
        item += ";t=";
        append_number(item, d.reset);
        r.add_header("RateLimit-Policy", s.policy);
        r.add_header("RateLimit", item);
    }
    return r;
}

RateLimiter::operator Hooks() const {
    Hooks h;
    h.before = *this;
    if (state_->opt.headers) {
        state_->record.store(true, std::memory_order_relaxed);
        // Adds the item the before hook recorded; a refusal (its own fields) and a request
        // this limiter did not count (an empty key) have none.
        h.after = [s = std::shared_ptr<const State>(state_)](Request& req, Response& res) {
            const std::optional<std::string_view> item = req.attribute(s->attr_key);
            if (!item) return;
            res.add_header("RateLimit-Policy", s->policy);
            res.add_header("RateLimit", *item);
        };
    }
    return h;
}

std::size_t RateLimiter::size() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < state_->shard_count; ++i) {
        std::lock_guard lock(state_->shards[i].mu);
        n += state_->shards[i].map.size();
    }
    return n;
}

std::size_t RateLimiter::capacity() const noexcept {
    return state_->per_shard * state_->shard_count;
}

const std::string& RateLimiter::policy() const noexcept { return state_->policy; }

}  // namespace vela
