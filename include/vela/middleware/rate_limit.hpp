#pragma once
// Rate limiting: a token bucket per key (client address, a header's value, or your own
// function), as synchronous hooks (a route that uses it stays free of coroutine frames).
//
//     // 100 requests a minute per client address, bursts up to 20, on every route:
//     app.use(vela::rate_limit({.rate = 100, .period = std::chrono::minutes(1), .burst = 20}));
//
//     // 5 login attempts a minute per address on one route (routes get middleware
//     // through groups):
//     auto login = vela::rate_limit({.rate = 5, .period = std::chrono::minutes(1)});
//     app.group("/login").use(login).post("", do_login);
//
//     // one limiter (one set of buckets) shared by several groups, keyed by API key:
//     auto api = vela::rate_limit({.rate = 1000, .period = std::chrono::hours(1),
//                                  .key = vela::rate_limit_key::header("X-Api-Key")});
//     app.group("/v1").use(api);
//     app.group("/v2").use(api);
//
// Each key owns a bucket of `burst` tokens, refilled at `rate` tokens per `period` (a new key
// starts full). A request takes `cost` tokens (1 unless set) or is refused with 429 Too Many
// Requests, a problem+json body, Retry-After (whole seconds, rounded up) and the RateLimit
// fields; a refused request takes nothing. The fields follow
// draft-ietf-httpapi-ratelimit-headers-09: `RateLimit-Policy: "name";q=<burst>;w=<seconds to
// refill an empty bucket>` and `RateLimit: "name";r=<tokens left>;t=<seconds until full>`,
// on refusals and on the answers of requests the limiter let through (options.headers).
// Installed with use(), a limiter is a vela::Hooks pair: the before hook counts and refuses,
// the after hook adds the fields to allowed answers.
//
// Threads: a RateLimiter is a handle; copies share one table of buckets, which every loop
// uses at once. The table is split into shards by a seeded hash of the key, each shard with
// its own mutex held for a few dozen instructions, so loops meet only when their keys fall
// into the same shard (and always on one hot key). No global lock, no allocation for a known
// key. Time comes from a monotonic clock (steady_clock unless RateLimitOptions::clock is set).
//
// Memory: at most max_keys buckets (rounded up to a multiple of the shard count), about 150
// bytes each. A key longer than 64 bytes is stored as its SHA-256. When a shard must make room,
// it drops buckets that are full again (forgetting them changes nothing) and, if still full,
// its least recently used bucket: a flood of new keys cannot grow the table, but it can make
// the limiter forget a throttled client early (it then starts with a full bucket again).

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/web/middleware.hpp"

namespace vela {

/// What a request is counted under. An empty key means "not limited".
class RateLimitKey {
  public:
    /// Longest key kept as it is; longer ones are stored as their SHA-256.
    static constexpr std::size_t kMaxKeySize = 64;

    /// The client address (the default; see rate_limit_key::client_ip).
    RateLimitKey() = default;
    /// Your function of the request; an empty result is not limited.
    template <class F>
    requires(std::is_invocable_v<const F&, const Request&>&&
                 std::convertible_to<std::invoke_result_t<const F&, const Request&>, std::string> &&
             !std::same_as<std::remove_cvref_t<F>, RateLimitKey>)
        RateLimitKey(F f)  // NOLINT(google-explicit-constructor): a function is a key
        : kind_(Kind::function), fn_(std::move(f)) {}

    /// Writes the key of `req` into `out` (at most kMaxKeySize + 2 bytes) and returns its
    /// length; 0: not limited.
    std::size_t extract(const Request& req, char* out) const;
    /// Buffer size extract() needs.
    static constexpr std::size_t kBufferSize = kMaxKeySize + 2;

    /// The client address key (see rate_limit_key::client_ip).
    static RateLimitKey client_ip(int ipv6_prefix);
    /// The header key (see rate_limit_key::header).
    static RateLimitKey header(std::string_view name);

  private:
    enum class Kind : std::uint8_t { client_ip, header, function };
    Kind kind_ = Kind::client_ip;
    int ipv6_prefix_ = 64;
    std::string header_;
    std::function<std::string(const Request&)> fn_;
};

/// The built-in keys.
namespace rate_limit_key {
/// The client's address, `req.client_ip()` (so a trusted proxy's X-Forwarded-For counts,
/// see vela/middleware/proxy.hpp). IPv6 addresses are grouped by their first `ipv6_prefix` bits
/// (64: one customer's subnet, which can hand out addresses at will; 128: each address alone).
/// Requests without an address (a Unix socket, no proxy) are not limited. Throws
/// std::invalid_argument unless 1 <= ipv6_prefix <= 128.
inline RateLimitKey client_ip(int ipv6_prefix = 64) { return RateLimitKey::client_ip(ipv6_prefix); }
/// The value of header `name` ("X-Api-Key"); a request without it (or with an empty value)
/// is counted under its client address instead, in a separate bucket, so leaving the header
/// out does not escape the limit. Throws std::invalid_argument for an empty name.
inline RateLimitKey header(std::string_view name) { return RateLimitKey::header(name); }
}  // namespace rate_limit_key

/// Settings of rate_limit().
struct RateLimitOptions {
    /// Tokens added to each bucket per period (the sustained rate); at least 1.
    std::uint32_t rate = 60;
    /// The period `rate` refers to; more than zero.
    std::chrono::nanoseconds period = std::chrono::minutes(1);
    /// Bucket size: the most tokens a key can spend at once; 0: same as `rate`.
    std::uint32_t burst = 0;
    /// What requests are counted under (default: the client address).
    RateLimitKey key{};
    /// Tokens one request takes (0: counted but never refused); at most `burst`.
    std::uint32_t cost = 1;
    /// When set, the tokens each request takes (instead of `cost`); a request that costs
    /// more than `burst` is refused without Retry-After (it never fits).
    std::function<std::uint32_t(const Request&)> cost_of{};
    /// Most keys tracked at once (see "Memory" above); at least 1.
    std::size_t max_keys = 100000;
    /// Number of shards (rounded up to a power of two); 0: 64.
    std::size_t shards = 0;
    /// The policy's name in the RateLimit fields: 1-64 characters of A-Z a-z 0-9 - _ . :
    std::string name = "default";
    /// Send RateLimit-Policy and RateLimit on 429s and on allowed answers; false: neither
    /// (Retry-After is always sent on a 429).
    bool headers = true;
    /// The monotonic clock (tests inject a fake one); empty: std::chrono::steady_clock.
    std::function<std::chrono::steady_clock::time_point()> clock{};
};

/// The outcome of one RateLimiter::consume().
struct RateLimitDecision {
    /// True when the tokens were taken.
    bool allowed = true;
    /// Whole tokens left in the bucket (the RateLimit field's r).
    std::uint32_t remaining = 0;
    /// Seconds until the bucket is full again, rounded up (the RateLimit field's t).
    std::uint32_t reset = 0;
    /// When refused: seconds until the request's cost is available, rounded up (at least 1);
    /// 0 when it never will be (it costs more than the bucket holds).
    std::uint32_t retry_after = 0;
};

/// A rate limiter: middleware for App::use / Group::use (as Hooks), and a handle to its
/// buckets (copies share them). Build it with rate_limit().
class RateLimiter {
  public:
    /// A limiter with `options`. Throws std::invalid_argument (one line) for a zero rate or
    /// period, a cost above the burst, a zero max_keys or a bad name.
    explicit RateLimiter(RateLimitOptions options);

    /// As middleware (App::use / Group::use): the before hook below and, unless
    /// options.headers is false, an after hook that adds RateLimit-Policy and RateLimit to the
    /// answers of requests the before hook let through.
    operator Hooks() const;  // NOLINT(google-explicit-constructor): a limiter is middleware
    /// The before hook alone: counts `req` under its key; nullopt lets it through, else the 429.
    std::optional<Response> operator()(Request& req) const;

    /// Takes `cost` tokens from the bucket of `key` (made full if new) if it holds them.
    /// Usable directly, e.g. to charge an expensive operation more. Thread-safe. Its keys never
    /// meet the hooks' keys (those carry an internal prefix).
    RateLimitDecision consume(std::string_view key, std::uint32_t cost = 1) const;
    /// The 429 answer for a refused decision (problem+json, Retry-After, RateLimit fields).
    Response refusal(const RateLimitDecision& d) const;
    /// Number of keys tracked now (for tests and metrics).
    std::size_t size() const;
    /// The most keys this limiter tracks (max_keys rounded up to a multiple of the shards).
    std::size_t capacity() const noexcept;
    /// The RateLimit-Policy field value ("default";q=60;w=60).
    const std::string& policy() const noexcept;

    /// The shared state (internal).
    struct State;

  private:
    struct Take {
        bool allowed;
        double tokens;   // left in the bucket
        double wait_ns;  // refused: until the cost is there; negative: never
    };
    Take take(std::string_view key, std::uint32_t cost) const;
    RateLimitDecision decide(const Take& r) const;
    std::shared_ptr<State> state_;
};

/// A rate limiter with `options` (see above); throws std::invalid_argument for bad options.
inline RateLimiter rate_limit(RateLimitOptions options = {}) {
    return RateLimiter(std::move(options));
}

}  // namespace vela
