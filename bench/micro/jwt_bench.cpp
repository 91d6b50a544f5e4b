// JWT: jwt::verify of a typical access token (HS256, RS256 with a 2048-bit key, ES256 on
// P-256), the jwt_auth() before hook around it (header lookup, verify, claims stored in the
// request), and jwt::sign (ns per operation).

#include <benchmark/benchmark.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <chrono>
#include <string>

#include "vela/http/request.hpp"
#include "vela/middleware/jwt.hpp"

namespace {

using vela::json::Value;

const std::string kSecret = "bench-secret-0123456789abcdefghijklmnop";

struct Pems {
    std::string pub, priv;
};

Pems pems(EVP_PKEY* k) {
    Pems p;
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, k);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    p.pub.assign(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, k, nullptr, nullptr, 0, nullptr, nullptr);
    n = BIO_get_mem_data(bio, &data);
    p.priv.assign(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    EVP_PKEY_free(k);
    return p;
}

const Pems& rsa() {
    static const Pems p = pems(EVP_RSA_gen(2048));
    return p;
}
const Pems& ec() {
    static const Pems p = pems(EVP_EC_gen("P-256"));
    return p;
}

// The claims of a typical access token (about 250 bytes of JSON).
Value claims() {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    return Value::object({{"iss", "https://auth.example.com/"},
                          {"sub", "user-1234567890"},
                          {"aud", "orders-api"},
                          {"iat", now},
                          {"exp", now + 3600},
                          {"jti", "f3a9c1d27b8e4a6f9c0d1e2f3a4b5c6d"},
                          {"scope", "orders:read orders:write profile"},
                          {"email", "user@example.com"}});
}

vela::JwtOptions options(vela::JwtKey key) {
    vela::JwtOptions o;
    o.keys = {std::move(key)};
    o.issuers = {"https://auth.example.com/"};
    o.audiences = {"orders-api"};
    return o;
}

void verify(benchmark::State& state, const vela::JwtSigningKey& signer, vela::JwtKey key) {
    const std::string token = vela::jwt::sign(claims(), signer);
    const vela::JwtOptions o = options(std::move(key));
    if (!vela::jwt::verify(token, o)) state.SkipWithError("token refused");
    for (auto _ : state) benchmark::DoNotOptimize(vela::jwt::verify(token, o));
}

void BM_JwtVerifyHs256(benchmark::State& state) {
    verify(state, vela::JwtSigningKey::hs256(kSecret), vela::JwtKey::hs256(kSecret));
}
BENCHMARK(BM_JwtVerifyHs256);

void BM_JwtVerifyRs256(benchmark::State& state) {
    verify(state, vela::JwtSigningKey::rs256(rsa().priv), vela::JwtKey::rs256(rsa().pub));
}
BENCHMARK(BM_JwtVerifyRs256);

void BM_JwtVerifyEs256(benchmark::State& state) {
    verify(state, vela::JwtSigningKey::es256(ec().priv), vela::JwtKey::es256(ec().pub));
}
BENCHMARK(BM_JwtVerifyEs256);

// A refused token costs less than a valid one: the signature fails before any claim is read.
void BM_JwtVerifyHs256BadSignature(benchmark::State& state) {
    std::string token = vela::jwt::sign(claims(), vela::JwtSigningKey::hs256(kSecret));
    token[token.size() - 5] = token[token.size() - 5] == 'A' ? 'B' : 'A';
    const vela::JwtOptions o = options(vela::JwtKey::hs256(kSecret));
    for (auto _ : state) benchmark::DoNotOptimize(vela::jwt::verify(token, o));
}
BENCHMARK(BM_JwtVerifyHs256BadSignature);

// The whole before hook on a request carrying the token (HS256).
void BM_JwtAuthHookHs256(benchmark::State& state) {
    const std::string header =
        "Bearer " + vela::jwt::sign(claims(), vela::JwtSigningKey::hs256(kSecret));
    auto hook = vela::jwt_auth(options(vela::JwtKey::hs256(kSecret)));
    vela::Request req;
    req.mutable_headers().push_back({"Host", "api.example.com"});
    req.mutable_headers().push_back({"Accept", "application/json"});
    req.mutable_headers().push_back({"Authorization", header});
    for (auto _ : state) benchmark::DoNotOptimize(hook(req));
}
BENCHMARK(BM_JwtAuthHookHs256);

void BM_JwtSignHs256(benchmark::State& state) {
    const auto key = vela::JwtSigningKey::hs256(kSecret);
    const Value c = claims();
    for (auto _ : state) benchmark::DoNotOptimize(vela::jwt::sign(c, key));
}
BENCHMARK(BM_JwtSignHs256);

void BM_JwtSignEs256(benchmark::State& state) {
    const auto key = vela::JwtSigningKey::es256(ec().priv);
    const Value c = claims();
    for (auto _ : state) benchmark::DoNotOptimize(vela::jwt::sign(c, key));
}
BENCHMARK(BM_JwtSignEs256);

}  // namespace
