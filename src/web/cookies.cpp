// Signed and encrypted cookies on vela::crypto (HMAC-SHA256, AES-256-GCM, HKDF).
#include "vela/web/cookies.hpp"

#include <charconv>
#include <stdexcept>
#include <string>
#include <utility>

#include "vela/base/ascii.hpp"
#include "vela/crypto/crypto.hpp"

namespace vela {

namespace {

// HKDF purposes: one secret, two unrelated keys. Changing them invalidates every cookie.
constexpr std::string_view kSignPurpose = "vela cookie signing v1";
constexpr std::string_view kEncryptPurpose = "vela cookie encryption v1";

// base64url of a 32-byte HMAC, unpadded.
constexpr std::size_t kSignatureChars = 43;

// Browsers keep at most 4096 bytes of name and value; a longer value was not made here and is
// refused before any work is spent on it.
constexpr std::size_t kMaxValue = 4096;

// The HMAC input: the name's length, ':', the name, then the value, so no (name, value) pair
// spells the same bytes as another even when the name is not a token.
crypto::Digest mac(const crypto::HmacSha256& key, std::string_view name, std::string_view value) {
    char len[24];
    const auto r = std::to_chars(len, len + sizeof len, name.size());
    *r.ptr = ':';
    return key.mac({std::string_view(len, static_cast<std::size_t>(r.ptr - len) + 1), name, value});
}

std::string_view as_view(const crypto::Digest& d) noexcept {
    return {reinterpret_cast<const char*>(d.data()), d.size()};
}

// The first cookie named `name` that `open` accepts. Not just the first named `name`: a
// sibling subdomain or an insecure page can plant a same-named cookie that the browser sends
// first (longer path), and garbage there must not hide the genuine value after it.
template <class Open>
std::optional<std::string> first_opening(const Request& req, std::string_view name, Open open) {
    for (const Header& h : req.headers()) {
        if (!ascii::iequals(h.name, "cookie")) continue;
        std::string_view field = h.value, n, v;
        while (next_cookie(field, n, v))
            if (n == name)
                if (std::optional<std::string> out = open(v)) return out;
    }
    return std::nullopt;
}

}  // namespace

CookieKeys::CookieKeys(std::vector<std::string> secrets) {
    if (secrets.empty()) throw std::invalid_argument("CookieKeys: at least one secret is needed");
    keys_.reserve(secrets.size());
    for (std::size_t i = 0; i < secrets.size(); ++i) {
        if (secrets[i].size() < kMinSecretSize)
            throw std::invalid_argument("CookieKeys: secret " + std::to_string(i) + " is " +
                                        std::to_string(secrets[i].size()) +
                                        " bytes; at least 32 random bytes are needed");
        keys_.push_back(Key{crypto::HmacSha256(crypto::derive_key(secrets[i], kSignPurpose)),
                            crypto::derive_key(secrets[i], kEncryptPurpose)});
    }
}

CookieKeys::CookieKeys(std::initializer_list<std::string_view> secrets)
    : CookieKeys(std::vector<std::string>(secrets.begin(), secrets.end())) {}

CookieKeys::CookieKeys(std::string_view secret)
    : CookieKeys(std::vector<std::string>{std::string(secret)}) {}

std::string CookieKeys::sign(std::string_view name, std::string_view value) const {
    std::string out;
    out.reserve(value.size() + 1 + kSignatureChars);
    out.append(value);
    out += '.';
    out += vela::base64url_encode(as_view(mac(keys_.front().sign, name, value)));
    return out;
}

std::optional<std::string> CookieKeys::verify(std::string_view name,
                                              std::string_view signed_value) const {
    if (signed_value.size() < 1 + kSignatureChars || signed_value.size() > kMaxValue)
        return std::nullopt;
    const std::size_t dot = signed_value.size() - kSignatureChars - 1;
    if (signed_value[dot] != '.') return std::nullopt;
    const std::string_view value = signed_value.substr(0, dot);
    // Compared as text: base64url_decode accepts one spelling per digest, so equal text is
    // equal bytes and no decoding is needed.
    const std::string_view sig = signed_value.substr(dot + 1);
    for (const Key& k : keys_)
        if (crypto::equal_constant_time(vela::base64url_encode(as_view(mac(k.sign, name, value))),
                                        sig))
            return std::string(value);
    return std::nullopt;
}

std::string CookieKeys::encrypt(std::string_view name, std::string_view plaintext) const {
    return vela::base64url_encode(crypto::aes_gcm_seal(keys_.front().encrypt, plaintext, name));
}

std::optional<std::string> CookieKeys::decrypt(std::string_view name,
                                               std::string_view sealed) const {
    if (sealed.size() > kMaxValue) return std::nullopt;
    const std::optional<std::string> bytes = vela::base64url_decode(sealed);
    if (!bytes) return std::nullopt;
    for (const Key& k : keys_)
        if (std::optional<std::string> plain = crypto::aes_gcm_open(k.encrypt, *bytes, name))
            return plain;
    return std::nullopt;
}

Cookie signed_cookie(const CookieKeys& keys, Cookie c) {
    c.value = keys.sign(c.name, c.value);
    return c;
}

std::optional<std::string> signed_cookie(const Request& req, const CookieKeys& keys,
                                         std::string_view name) {
    return first_opening(req, name, [&](std::string_view v) { return keys.verify(name, v); });
}

Cookie encrypted_cookie(const CookieKeys& keys, Cookie c) {
    c.value = keys.encrypt(c.name, c.value);
    return c;
}

std::optional<std::string> encrypted_cookie(const Request& req, const CookieKeys& keys,
                                            std::string_view name) {
    return first_opening(req, name, [&](std::string_view v) { return keys.decrypt(name, v); });
}

}  // namespace vela
