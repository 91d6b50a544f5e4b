// Password hashing: crypto::password_hash and password_verify (scrypt) at the default cost
// (N=2^15, r=8, p=1: 32 MiB) and at OWASP's N=2^17 (128 MiB), in milliseconds per hash: the
// figure docs/essentials.md quotes, and what one sign-in costs the blocking pool.

#include <benchmark/benchmark.h>

#include <string>

#include "vela/crypto/password.hpp"

namespace {

using vela::crypto::PasswordOptions;

PasswordOptions cost(unsigned log2_n) {
    PasswordOptions o;
    o.log2_n = log2_n;
    return o;
}

void BM_PasswordHash(benchmark::State& state) {
    const PasswordOptions o = cost(static_cast<unsigned>(state.range(0)));
    for (auto _ : state) benchmark::DoNotOptimize(vela::crypto::password_hash("correct-horse", o));
}
BENCHMARK(BM_PasswordHash)
    ->ArgName("log2_n")
    ->Arg(14)
    ->Arg(15)
    ->Arg(16)
    ->Arg(17)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

void BM_PasswordVerify(benchmark::State& state) {
    const std::string stored = vela::crypto::password_hash("correct-horse");
    for (auto _ : state)
        benchmark::DoNotOptimize(vela::crypto::password_verify("correct-horse", stored));
}
BENCHMARK(BM_PasswordVerify)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace
