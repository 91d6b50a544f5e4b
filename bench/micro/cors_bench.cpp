// CORS, security headers and trusted proxies: the per-request cost of each middleware's hooks,
// called directly on a request shaped like a browser's (Host, User-Agent, Accept, Origin...).
// BM_ResponseOnly is the baseline the others include: making and destroying the Response.

#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "vela/middleware/cors.hpp"
#include "vela/middleware/proxy.hpp"
#include "vela/middleware/security_headers.hpp"

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

struct Req {
    vela::ConnectionInfo info;
    Fields fields;
    vela::Request req;
    Req(vela::Method m, Fields extra, const char* peer = "127.0.0.1") {
        std::memcpy(info.ip, peer, std::strlen(peer));
        info.ip_size = static_cast<std::uint8_t>(std::strlen(peer));
        fields = {{"Host", "api.example.com"},
                  {"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0"},
                  {"Accept", "application/json"},
                  {"Accept-Language", "en-US,en;q=0.5"},
                  {"Accept-Encoding", "gzip, deflate, br, zstd"}};
        for (auto& f : extra) fields.push_back(std::move(f));
        req.set_connection(&info);
        req.set_method(m, vela::method_name(m));
        req.set_target("/items", "/items", "");
        for (const auto& [n, v] : fields) req.mutable_headers().push_back(vela::Header{n, v});
    }
};

const vela::Hooks& policy() {
    static const vela::Hooks h =
        vela::cors({.origins = {"https://app.example.com", "https://admin.example.com"},
                    .exposed_headers = {"X-Total-Count"},
                    .credentials = true,
                    .max_age = std::chrono::hours(2)});
    return h;
}

// One request through a Hooks pair: the before hook, then the handler's response (a small
// JSON body) through the after hook.
void through(benchmark::State& state, const vela::Hooks& h, vela::Request& req) {
    for (auto _ : state) {
        std::optional<vela::Response> early = h.before ? h.before(req) : std::nullopt;
        vela::Response res = early ? std::move(*early) : vela::Response::json("[1,2,3]");
        if (h.after) h.after(req, res);
        benchmark::DoNotOptimize(res);
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_ResponseOnly(benchmark::State& state) {
    Req r(vela::Method::GET, {{"Origin", "https://app.example.com"}});
    through(state, vela::Hooks{}, r.req);
}

void BM_CorsSimpleAllowed(benchmark::State& state) {
    Req r(vela::Method::GET, {{"Origin", "https://app.example.com"}});
    through(state, policy(), r.req);
}

void BM_CorsSimpleRefused(benchmark::State& state) {
    Req r(vela::Method::GET, {{"Origin", "https://evil.example.com"}});
    through(state, policy(), r.req);
}

void BM_CorsSameOrigin(benchmark::State& state) {
    Req r(vela::Method::GET, {});
    through(state, policy(), r.req);
}

void BM_CorsPreflight(benchmark::State& state) {
    Req r(vela::Method::OPTIONS, {{"Origin", "https://admin.example.com"},
                                  {"Access-Control-Request-Method", "PUT"},
                                  {"Access-Control-Request-Headers", "content-type"}});
    through(state, policy(), r.req);
}

void BM_SecurityHeaders(benchmark::State& state) {
    static const vela::Hooks h{{}, vela::security_headers()};
    Req r(vela::Method::GET, {});
    through(state, h, r.req);
}

void BM_TrustedProxyChain(benchmark::State& state) {
    static const vela::Hooks h{vela::trusted_proxies({.proxies = {"10.0.0.0/8"}}), {}};
    Req r(vela::Method::GET,
          {{"X-Forwarded-For", "203.0.113.7, 10.0.0.2"}, {"X-Forwarded-Proto", "https"}},
          "10.0.0.1");
    through(state, h, r.req);
}

void BM_TrustedProxyUntrustedPeer(benchmark::State& state) {
    static const vela::Hooks h{vela::trusted_proxies({.proxies = {"10.0.0.0/8"}}), {}};
    Req r(vela::Method::GET, {{"X-Forwarded-For", "203.0.113.7"}}, "198.51.100.1");
    through(state, h, r.req);
}

}  // namespace

BENCHMARK(BM_ResponseOnly);
BENCHMARK(BM_CorsSimpleAllowed);
BENCHMARK(BM_CorsSimpleRefused);
BENCHMARK(BM_CorsSameOrigin);
BENCHMARK(BM_CorsPreflight);
BENCHMARK(BM_SecurityHeaders);
BENCHMARK(BM_TrustedProxyChain);
BENCHMARK(BM_TrustedProxyUntrustedPeer);
