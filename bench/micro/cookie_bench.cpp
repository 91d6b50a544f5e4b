// Cookies: reading a browser-sized Cookie field, Set-Cookie serialization, and the signed
// and encrypted cookie operations (ns per operation).

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "vela/http/cookie.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/web/cookies.hpp"

namespace {

// Five cookies, the shapes a site's own cookies usually have (ids, analytics, a preference).
const std::string kCookieField =
    "_ga=GA1.2.1234567890.1699999999; sid=Kx3lQ0q9uZp8tY2vB7nR4mW1cE6aH5jD; theme=dark; "
    "_gid=GA1.2.987654321.1700000000; csrf=\"f3a9c1d27b8e4a6f9c0d1e2f3a4b5c6d\"";

vela::Request request_with_cookies() {
    vela::Request req;
    req.mutable_headers().push_back({"Host", "www.example.com"});
    req.mutable_headers().push_back({"Accept", "text/html"});
    req.mutable_headers().push_back({"Cookie", kCookieField});
    return req;
}

void BM_CookieLookupLast(benchmark::State& state) {
    const vela::Request req = request_with_cookies();
    for (auto _ : state) benchmark::DoNotOptimize(req.cookie("csrf"));
}
BENCHMARK(BM_CookieLookupLast);

void BM_CookieLookupFirst(benchmark::State& state) {
    const vela::Request req = request_with_cookies();
    for (auto _ : state) benchmark::DoNotOptimize(req.cookie("_ga"));
}
BENCHMARK(BM_CookieLookupFirst);

void BM_CookieLookupMissing(benchmark::State& state) {
    const vela::Request req = request_with_cookies();
    for (auto _ : state) benchmark::DoNotOptimize(req.cookie("absent"));
}
BENCHMARK(BM_CookieLookupMissing);

void BM_CookiesAll(benchmark::State& state) {
    const vela::Request req = request_with_cookies();
    for (auto _ : state) benchmark::DoNotOptimize(req.cookies());
}
BENCHMARK(BM_CookiesAll);

void BM_SetCookie(benchmark::State& state) {
    const vela::Cookie c{.name = "sid",
                         .value = "Kx3lQ0q9uZp8tY2vB7nR4mW1cE6aH5jD",
                         .max_age = std::chrono::hours(24),
                         .secure = true,
                         .http_only = true,
                         .same_site = vela::SameSite::lax};
    for (auto _ : state) {
        vela::Response res;
        res.set_cookie(c);
        benchmark::DoNotOptimize(res.header_block().data());
    }
}
BENCHMARK(BM_SetCookie);

const vela::CookieKeys& keys() {
    static const vela::CookieKeys k(std::string("benchmark-secret-benchmark-secret-!!"));
    return k;
}

void BM_Sign(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(keys().sign("user", "42"));
}
BENCHMARK(BM_Sign);

void BM_Verify(benchmark::State& state) {
    const std::string s = keys().sign("user", "42");
    for (auto _ : state) benchmark::DoNotOptimize(keys().verify("user", s));
}
BENCHMARK(BM_Verify);

void BM_VerifyForged(benchmark::State& state) {
    std::string s = keys().sign("user", "42");
    s[0] = '4';
    s[1] = '3';
    for (auto _ : state) benchmark::DoNotOptimize(keys().verify("user", s));
}
BENCHMARK(BM_VerifyForged);

// Encrypt/decrypt a session-sized payload (64 and 1024 bytes).
void BM_Encrypt(benchmark::State& state) {
    const std::string plain(static_cast<std::size_t>(state.range(0)), 'p');
    for (auto _ : state) benchmark::DoNotOptimize(keys().encrypt("session", plain));
    state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Encrypt)->Arg(64)->Arg(1024);

void BM_Decrypt(benchmark::State& state) {
    const std::string sealed =
        keys().encrypt("session", std::string(static_cast<std::size_t>(state.range(0)), 'p'));
    for (auto _ : state) benchmark::DoNotOptimize(keys().decrypt("session", sealed));
    state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Decrypt)->Arg(64)->Arg(1024);

void BM_SignedCookieFromRequest(benchmark::State& state) {
    const std::string field = "theme=dark; user=" + keys().sign("user", "42") + "; lang=en";
    vela::Request req;
    req.mutable_headers().push_back({"Cookie", field});
    for (auto _ : state) benchmark::DoNotOptimize(vela::signed_cookie(req, keys(), "user"));
}
BENCHMARK(BM_SignedCookieFromRequest);

}  // namespace
