// Password hashing with OpenSSL 3's SCRYPT KDF and the PHC string format
// (https://github.com/P-H-C/phc-string-format): "$scrypt$ln=15,r=8,p=1$<salt>$<hash>".
// Parsing is strict (one spelling per value) and bounded, since the string comes from
// storage that an attacker may have written to.
#include "vela/crypto/password.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>

#include "vela/crypto/crypto.hpp"

namespace vela::crypto {

namespace {

// What one hash may use: the memory scrypt allocates (128 * r * (N + p + 2) bytes) and the
// work (N * r * p block mixes). 256 MiB and 2^23 admit OWASP's N=2^17, r=8, p=1 with room.
constexpr std::uint64_t kMaxMemory = 256ull << 20;
constexpr std::uint64_t kMaxWork = 1ull << 23;
constexpr std::string_view kPrefix = "$scrypt$";

struct Params {
    unsigned log2_n = 0, r = 0, p = 0;
};

struct Parsed {
    Params params;
    std::string salt, hash;
};

std::uint64_t memory_of(const Params& c) { return 128ull * c.r * ((1ull << c.log2_n) + c.p + 2); }

bool within_limits(const Params& c) {
    if (c.log2_n < 1 || c.log2_n > 20 || c.r < 1 || c.r > 32 || c.p < 1 || c.p > 16) return false;
    return memory_of(c) <= kMaxMemory && (1ull << c.log2_n) * c.r * c.p <= kMaxWork;
}

struct KdfFree {
    void operator()(EVP_KDF* k) const noexcept { EVP_KDF_free(k); }
    void operator()(EVP_KDF_CTX* c) const noexcept { EVP_KDF_CTX_free(c); }
};

// scrypt(password, salt) of `length` bytes; throws std::runtime_error when OpenSSL fails.
std::string scrypt(std::string_view password, std::string_view salt, const Params& c,
                   std::size_t length) {
    // Fetched once: an implicit fetch per call takes a lock and a provider lookup.
    static const std::unique_ptr<EVP_KDF, KdfFree> kdf{EVP_KDF_fetch(nullptr, "SCRYPT", nullptr)};
    if (!kdf) throw std::runtime_error("vela::crypto: OpenSSL lacks the SCRYPT KDF");
    std::unique_ptr<EVP_KDF_CTX, KdfFree> ctx{EVP_KDF_CTX_new(kdf.get())};
    if (!ctx) throw std::runtime_error("vela::crypto: out of memory");
    static char empty = 0;
    auto mut = [](std::string_view s) { return s.empty() ? &empty : const_cast<char*>(s.data()); };
    std::uint64_t n = 1ull << c.log2_n;
    std::uint32_t r = c.r, p = c.p;
    // OpenSSL refuses more than 32 MiB unless told otherwise; the limits above are the policy.
    std::uint64_t maxmem = kMaxMemory;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, mut(password), password.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, mut(salt), salt.size()),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &n),
        OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_R, &r),
        OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_P, &p),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_MAXMEM, &maxmem),
        OSSL_PARAM_construct_end(),
    };
    std::string out(length, '\0');
    if (EVP_KDF_derive(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), out.size(),
                       params) != 1)
        throw std::runtime_error("vela::crypto: scrypt failed");
    return out;
}

// PHC's base64: the standard alphabet without padding.
std::string b64(std::string_view bytes) {
    std::string s = base64_encode(bytes);
    while (!s.empty() && s.back() == '=') s.pop_back();
    return s;
}

std::optional<std::string> unb64(std::string_view text) {
    if (text.find('=') != std::string_view::npos || text.size() % 4 == 1) return std::nullopt;
    std::string padded(text);
    padded.append((4 - text.size() % 4) % 4, '=');
    return base64_decode(padded);
}

// "name=<decimal>" at the front of `s`, no sign and no leading zero; advances `s` past it.
bool take_param(std::string_view& s, std::string_view name, unsigned& out) {
    if (!s.starts_with(name) || s.size() <= name.size() || s[name.size()] != '=') return false;
    s.remove_prefix(name.size() + 1);
    const char* end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, out);
    const std::size_t digits = static_cast<std::size_t>(ptr - s.data());
    if (ec != std::errc{} || digits == 0 || digits > 3 || (digits > 1 && s[0] == '0')) return false;
    s.remove_prefix(digits);
    return true;
}

std::optional<Parsed> parse(std::string_view s) {
    if (!s.starts_with(kPrefix)) return std::nullopt;
    s.remove_prefix(kPrefix.size());
    Parsed out;
    if (!take_param(s, "ln", out.params.log2_n) || !s.starts_with(',')) return std::nullopt;
    s.remove_prefix(1);
    if (!take_param(s, "r", out.params.r) || !s.starts_with(',')) return std::nullopt;
    s.remove_prefix(1);
    if (!take_param(s, "p", out.params.p) || !s.starts_with('$')) return std::nullopt;
    s.remove_prefix(1);
    const std::size_t dollar = s.find('$');
    if (dollar == std::string_view::npos) return std::nullopt;
    std::optional<std::string> salt = unb64(s.substr(0, dollar));
    std::optional<std::string> hash = unb64(s.substr(dollar + 1));
    if (!salt || !hash || !within_limits(out.params)) return std::nullopt;
    // A 4-byte salt admits RFC 7914's test vectors; password_hash makes 16 or more. A key
    // under 32 bytes is refused: scrypt's output of n bytes is the first n of any longer one,
    // so a stored hash cut short would still verify.
    if (salt->size() < 4 || salt->size() > 64 || hash->size() < 32 || hash->size() > 64)
        return std::nullopt;
    out.salt = std::move(*salt);
    out.hash = std::move(*hash);
    return out;
}

}  // namespace

std::string password_hash(std::string_view password, const PasswordOptions& o) {
    const Params c{o.log2_n, o.r, o.p};
    if (o.log2_n < 10 || !within_limits(c) || o.salt_length < 16 || o.salt_length > 64 ||
        o.hash_length < 32 || o.hash_length > 64)
        throw std::invalid_argument(
            "vela::crypto::password_hash: options out of range (log2_n 10..20, r 1..32, "
            "p 1..16, at most 256 MiB; salt and hash 16..64 bytes)");
    const std::string salt = random_bytes(o.salt_length);
    std::string key = scrypt(password, salt, c, o.hash_length);
    std::string out = std::string(kPrefix) + "ln=" + std::to_string(c.log2_n) +
                      ",r=" + std::to_string(c.r) + ",p=" + std::to_string(c.p) + "$" + b64(salt) +
                      "$" + b64(key);
    OPENSSL_cleanse(key.data(), key.size());
    return out;
}

bool password_verify(std::string_view password, std::string_view hash) noexcept {
    try {
        const std::optional<Parsed> h = parse(hash);
        if (!h) return false;
        std::string key = scrypt(password, h->salt, h->params, h->hash.size());
        const bool same = equal_constant_time(key, h->hash);
        OPENSSL_cleanse(key.data(), key.size());
        return same;
    } catch (...) {  // out of memory or an OpenSSL failure: not a match
        return false;
    }
}

bool needs_rehash(std::string_view hash, const PasswordOptions& o) noexcept {
    try {
        const std::optional<Parsed> h = parse(hash);
        if (!h) return true;
        const Params& c = h->params;
        return c.log2_n < o.log2_n || c.r < o.r || c.p < o.p || h->salt.size() < o.salt_length ||
               h->hash.size() < o.hash_length;
    } catch (...) {
        return true;
    }
}

}  // namespace vela::crypto
