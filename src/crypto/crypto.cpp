// The building blocks of crypto.hpp on OpenSSL 3's EVP interfaces. The algorithm objects
// (SHA-256, HMAC, AES-256-GCM, HKDF) are fetched once per process: an implicit fetch inside
// every call costs a lock and a provider lookup, more than hashing a cookie does.
#include "vela/crypto/crypto.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <climits>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>

namespace vela::crypto {

namespace {

constexpr std::size_t kKeySize = 32;
constexpr std::size_t kNonceSize = 12;
constexpr std::size_t kTagSize = 16;

const unsigned char* bytes(std::string_view s) noexcept {
    return reinterpret_cast<const unsigned char*>(s.data());
}

[[noreturn]] void fail(const char* what) { throw std::runtime_error(what); }

// Algorithms fetched once from the default provider; they are immutable and shareable
// between threads. Deliberately never freed: they live as long as the process.
struct Algorithms {
    EVP_MD* sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    EVP_MAC* hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    EVP_CIPHER* aes_gcm = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
    EVP_KDF* hkdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
};

const Algorithms& algorithms() {
    static const Algorithms a;
    if (!a.sha256 || !a.hmac || !a.aes_gcm || !a.hkdf)
        fail("vela::crypto: OpenSSL lacks SHA-256, HMAC, AES-256-GCM or HKDF");
    return a;
}

struct CipherCtxFree {
    void operator()(EVP_CIPHER_CTX* c) const noexcept { EVP_CIPHER_CTX_free(c); }
};
struct MacCtxFree {
    void operator()(EVP_MAC_CTX* c) const noexcept { EVP_MAC_CTX_free(c); }
};
struct KdfCtxFree {
    void operator()(EVP_KDF_CTX* c) const noexcept { EVP_KDF_CTX_free(c); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;
using MacCtx = std::unique_ptr<EVP_MAC_CTX, MacCtxFree>;
using KdfCtx = std::unique_ptr<EVP_KDF_CTX, KdfCtxFree>;

// OpenSSL's lengths are int; a cookie never comes near, but a caller's buffer might.
int checked_int(std::size_t n) {
    if (n > static_cast<std::size_t>(INT_MAX))
        throw std::length_error("vela::crypto: input too large");
    return static_cast<int>(n);
}

}  // namespace

std::string random_bytes(std::size_t n) {
    std::string out(n, '\0');
    if (n > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), checked_int(n)) != 1)
        fail("vela::crypto: RAND_bytes failed");
    return out;
}

std::string random_token(std::size_t n) { return base64url_encode(random_bytes(n)); }

Digest sha256(std::string_view data) {
    Digest out{};
    unsigned int len = 0;
    if (EVP_Digest(data.data(), data.size(), out.data(), &len, algorithms().sha256, nullptr) != 1 ||
        len != out.size())
        fail("vela::crypto: SHA-256 failed");
    return out;
}

namespace {

// An HMAC context with SHA-256 already chosen: setting the digest by name does a provider
// lookup under a lock on every EVP_MAC_init, so each MAC starts from a copy of this instead.
const EVP_MAC_CTX* hmac_template() {
    static EVP_MAC_CTX* const t = [] {
        EVP_MAC_CTX* c = EVP_MAC_CTX_new(algorithms().hmac);
        char digest_name[] = "SHA256";
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
            OSSL_PARAM_construct_end(),
        };
        if (!c || EVP_MAC_CTX_set_params(c, params) != 1) fail("vela::crypto: HMAC setup failed");
        return c;
    }();
    return t;
}

// A copy of `from`; EVP_MAC_CTX_dup only reads its source, so threads may share `from`.
MacCtx dup(const EVP_MAC_CTX* from) {
    MacCtx c{EVP_MAC_CTX_dup(from)};
    if (!c) fail("vela::crypto: out of memory");
    return c;
}

Digest finish(EVP_MAC_CTX* ctx, std::initializer_list<std::string_view> parts) {
    for (std::string_view p : parts)
        if (!p.empty() && EVP_MAC_update(ctx, bytes(p), p.size()) != 1)
            fail("vela::crypto: HMAC-SHA256 failed");
    Digest out{};
    std::size_t len = 0;
    if (EVP_MAC_final(ctx, out.data(), &len, out.size()) != 1 || len != out.size())
        fail("vela::crypto: HMAC-SHA256 failed");
    return out;
}

MacCtx keyed(std::string_view key) {
    MacCtx ctx = dup(hmac_template());
    // A zero-length key is legal HMAC; OpenSSL wants a non-null pointer for it.
    static const unsigned char empty = 0;
    if (EVP_MAC_init(ctx.get(), key.empty() ? &empty : bytes(key), key.size(), nullptr) != 1)
        fail("vela::crypto: HMAC-SHA256 failed");
    return ctx;
}

}  // namespace

Digest hmac_sha256(std::string_view key, std::string_view data) {
    return finish(keyed(key).get(), {data});
}

HmacSha256::HmacSha256(std::string_view key) : ctx_(keyed(key).release()) {}

HmacSha256::HmacSha256(const HmacSha256& o) : ctx_(dup(o.ctx_).release()) {}

HmacSha256& HmacSha256::operator=(const HmacSha256& o) {
    if (this != &o) {
        EVP_MAC_CTX* c = dup(o.ctx_).release();
        EVP_MAC_CTX_free(ctx_);
        ctx_ = c;
    }
    return *this;
}

HmacSha256::~HmacSha256() { EVP_MAC_CTX_free(ctx_); }

Digest HmacSha256::mac(std::initializer_list<std::string_view> parts) const {
    return finish(dup(ctx_).get(), parts);
}

bool equal_constant_time(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string derive_key(std::string_view secret, std::string_view purpose, std::size_t length) {
    return derive_key(secret, std::string_view{}, purpose, length);
}

std::string derive_key(std::string_view secret, std::string_view salt, std::string_view purpose,
                       std::size_t length) {
    if (length == 0 || length > 255 * 32)
        throw std::invalid_argument("vela::crypto::derive_key: length must be 1..8160 bytes");
    KdfCtx ctx{EVP_KDF_CTX_new(algorithms().hkdf)};
    if (!ctx) fail("vela::crypto: out of memory");
    char digest_name[] = "SHA256";
    static unsigned char empty = 0;
    auto mut = [](std::string_view s) {
        return s.empty() ? &empty : reinterpret_cast<unsigned char*>(const_cast<char*>(s.data()));
    };
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest_name, 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, mut(secret), secret.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, mut(salt), salt.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, mut(purpose), purpose.size()),
        OSSL_PARAM_construct_end(),
    };
    std::string out(length, '\0');
    if (EVP_KDF_derive(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), out.size(),
                       params) != 1)
        fail("vela::crypto: HKDF failed");
    return out;
}

std::string aes_gcm_seal(std::string_view key, std::string_view plaintext, std::string_view aad) {
    if (key.size() != kKeySize)
        throw std::invalid_argument("vela::crypto::aes_gcm_seal: the key must be 32 bytes");
    CipherCtx ctx{EVP_CIPHER_CTX_new()};
    if (!ctx) fail("vela::crypto: out of memory");
    std::string out = random_bytes(kNonceSize);
    out.resize(kNonceSize + plaintext.size() + kTagSize);
    auto* nonce = reinterpret_cast<unsigned char*>(out.data());
    auto* cipher = nonce + kNonceSize;
    int len = 0;
    if (EVP_EncryptInit_ex2(ctx.get(), algorithms().aes_gcm, bytes(key), nonce, nullptr) != 1)
        fail("vela::crypto: AES-GCM init failed");
    if (!aad.empty() &&
        EVP_EncryptUpdate(ctx.get(), nullptr, &len, bytes(aad), checked_int(aad.size())) != 1)
        fail("vela::crypto: AES-GCM failed");
    int written = 0;
    if (!plaintext.empty()) {
        if (EVP_EncryptUpdate(ctx.get(), cipher, &len, bytes(plaintext),
                              checked_int(plaintext.size())) != 1)
            fail("vela::crypto: AES-GCM failed");
        written = len;
    }
    if (EVP_EncryptFinal_ex(ctx.get(), cipher + written, &len) != 1)
        fail("vela::crypto: AES-GCM failed");
    written += len;
    if (static_cast<std::size_t>(written) != plaintext.size())
        fail("vela::crypto: AES-GCM wrote an unexpected length");
    if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagSize, cipher + written) != 1)
        fail("vela::crypto: AES-GCM tag failed");
    return out;
}

std::optional<std::string> aes_gcm_open(std::string_view key, std::string_view sealed,
                                        std::string_view aad) {
    if (key.size() != kKeySize || sealed.size() < kNonceSize + kTagSize) return std::nullopt;
    CipherCtx ctx{EVP_CIPHER_CTX_new()};
    if (!ctx) fail("vela::crypto: out of memory");
    const unsigned char* nonce = bytes(sealed);
    std::string_view body = sealed.substr(kNonceSize, sealed.size() - kNonceSize - kTagSize);
    // The tag goes in through a non-const pointer in OpenSSL's ctrl interface; copy it.
    unsigned char tag[kTagSize];
    for (std::size_t i = 0; i < kTagSize; ++i) tag[i] = bytes(sealed)[sealed.size() - kTagSize + i];
    std::string out(body.size(), '\0');
    auto* plain = reinterpret_cast<unsigned char*>(out.data());
    int len = 0;
    if (EVP_DecryptInit_ex2(ctx.get(), algorithms().aes_gcm, bytes(key), nonce, nullptr) != 1)
        return std::nullopt;
    if (!aad.empty() &&
        EVP_DecryptUpdate(ctx.get(), nullptr, &len, bytes(aad), checked_int(aad.size())) != 1)
        return std::nullopt;
    int written = 0;
    if (!body.empty()) {
        if (EVP_DecryptUpdate(ctx.get(), plain, &len, bytes(body), checked_int(body.size())) != 1)
            return std::nullopt;
        written = len;
    }
    if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagSize, tag) != 1)
        return std::nullopt;
    if (EVP_DecryptFinal_ex(ctx.get(), plain + written, &len) != 1) {
        OPENSSL_cleanse(out.data(), out.size());
        return std::nullopt;
    }
    return out;
}

}  // namespace vela::crypto
