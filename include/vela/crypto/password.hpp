#pragma once
// Password storage: scrypt (RFC 7914, OpenSSL 3's KDF, memory-hard) in a self-describing PHC
// string that carries the salt and the cost, so the cost can be raised later without
// breaking the hashes already stored.
//
//     std::string stored = crypto::password_hash(password);   // "$scrypt$ln=15,r=8,p=1$...$..."
//     if (crypto::password_verify(attempt, stored)) {          // constant-time comparison
//         if (crypto::needs_rehash(stored)) stored = crypto::password_hash(attempt);
//     }
//
// A hash costs tens of milliseconds of CPU and 32 MiB by default (docs/essentials.md has the
// figure measured by bench/micro/password_bench.cpp): on a server, call these through
// vela::run_blocking, never on an event loop. Every function is thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

namespace vela::crypto {

/// The scrypt cost of new hashes: N = 2^log2_n, block size r, parallelism p. Memory is about
/// 128 * r * N bytes (32 MiB for the defaults), time grows with N * r * p.
struct PasswordOptions {
    /// log2 of scrypt's N (CPU and memory cost), 10..20.
    unsigned log2_n = 15;
    /// Block size, 1..32.
    unsigned r = 8;
    /// Parallelism (sequential here: it multiplies the time), 1..16.
    unsigned p = 1;
    /// Random salt bytes, 16..64.
    std::size_t salt_length = 16;
    /// Derived key bytes stored, 32..64.
    std::size_t hash_length = 32;
};

/// A new PHC string `$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt>$<hash>` (unpadded base64) for
/// `password` with a fresh random salt. Throws std::invalid_argument when `options` are out
/// of their ranges (or above 1 GiB of memory), std::runtime_error if OpenSSL fails.
std::string password_hash(std::string_view password, const PasswordOptions& options = {});

/// True when `hash` is a PHC scrypt string made from `password`. Never throws: a malformed
/// string, or one whose cost is out of PasswordOptions' ranges (so a stored value cannot
/// make it allocate gigabytes), is false. The comparison takes constant time.
bool password_verify(std::string_view password, std::string_view hash) noexcept;

/// True when `hash` should be replaced at the next sign-in: it is not a valid PHC scrypt
/// string, or its N, r, p, salt or hash length is below `options`.
bool needs_rehash(std::string_view hash, const PasswordOptions& options = {}) noexcept;

}  // namespace vela::crypto
