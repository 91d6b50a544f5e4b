#pragma once
// Signed and encrypted cookies: values the client stores but cannot forge (signed) or read
// (encrypted), under keys derived from server secrets.
//
//     vela::CookieKeys keys({new_secret, old_secret});   // each >= 32 bytes, newest first
//
//     app.get("/login", [&](vela::Request&) {
//         vela::Response res;
//         res.set_cookie(vela::signed_cookie(keys, {.name = "user", .value = "42",
//                                                   .http_only = true}));
//         res.set_cookie(vela::encrypted_cookie(keys, {.name = "cart", .value = "3 items",
//                                                      .http_only = true}));
//         return res;
//     });
//     app.get("/me", [&](vela::Request& req) {
//         std::optional<std::string> user = vela::signed_cookie(req, keys, "user");
//         std::optional<std::string> cart = vela::encrypted_cookie(req, keys, "cart");
//         ...
//     });
//
// A signed value is the value in clear, '.', then base64url of HMAC-SHA256 over the cookie
// name and value ("42.Xb3..."): readable by the client, refused when changed. An encrypted
// value is base64url of AES-256-GCM (nonce, ciphertext, tag): neither readable nor
// changeable. Both bind the cookie name, so a value copied into another cookie is refused.
// Each secret gives two independent keys (HKDF with distinct purposes). Rotation: put the new
// secret first; the first signs and encrypts, every listed one verifies and decrypts; drop an
// old secret once the cookies it made have expired.
// Neither carries an expiry of its own: a client may replay an old value for as long as the
// keys verify it. Put a timestamp in the value when that matters.

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vela/crypto/crypto.hpp"
#include "vela/http/cookie.hpp"
#include "vela/http/request.hpp"

namespace vela {

/// Keys for signed and encrypted cookies, derived from one or more secrets (newest first).
/// Immutable after construction, so one instance may be shared by every worker thread.
class CookieKeys {
  public:
    /// The shortest secret accepted, in bytes.
    static constexpr std::size_t kMinSecretSize = 32;

    /// Keys from `secrets`, newest first. Throws std::invalid_argument when the list is empty
    /// or a secret is shorter than 32 bytes (use e.g. crypto::random_token(32), 43 chars).
    explicit CookieKeys(std::vector<std::string> secrets);
    /// Keys from secrets written in place, newest first: `CookieKeys keys({new_s, old_s})`.
    CookieKeys(std::initializer_list<std::string_view> secrets);
    /// Keys from a single secret.
    explicit CookieKeys(std::string_view secret);

    /// `value` + "." + base64url(HMAC-SHA256 over `name` and `value`) under the newest key.
    std::string sign(std::string_view name, std::string_view value) const;
    /// The value inside `signed_value` when its signature, made for cookie `name`, verifies
    /// under any of the keys; nullopt otherwise.
    std::optional<std::string> verify(std::string_view name, std::string_view signed_value) const;

    /// `plaintext` (any bytes) sealed with AES-256-GCM under the newest key with `name` as
    /// associated data, as unpadded base64url (a valid cookie value): 4/3 × (plaintext + 28)
    /// characters. `name` may be any context string (sessions use the cookie name).
    std::string encrypt(std::string_view name, std::string_view plaintext) const;
    /// The plaintext of what encrypt(name, ...) made under any of the keys; nullopt when the
    /// text is not base64url, was altered in any bit, or was made for another name or key.
    std::optional<std::string> decrypt(std::string_view name, std::string_view sealed) const;

    /// How many secrets the keys come from.
    std::size_t size() const noexcept { return keys_.size(); }

  private:
    struct Key {
        crypto::HmacSha256 sign;  // HMAC-SHA256 key, prepared
        std::string encrypt;      // AES-256-GCM key
    };
    std::vector<Key> keys_;  // newest first
};

/// `c` with its value replaced by keys.sign(c.name, c.value), ready for Response::set_cookie
/// (which then checks the value: it must be cookie-octets, see vela/http/cookie.hpp).
Cookie signed_cookie(const CookieKeys& keys, Cookie c);
/// The verified value of the signed cookie `name` in `req`; nullopt when absent or forged.
/// Of several cookies with that name, the first that verifies counts (one planted by a
/// sibling subdomain cannot hide the genuine one).
std::optional<std::string> signed_cookie(const Request& req, const CookieKeys& keys,
                                         std::string_view name);

/// `c` with its value replaced by keys.encrypt(c.name, c.value) (any bytes may go in).
Cookie encrypted_cookie(const CookieKeys& keys, Cookie c);
/// The decrypted value of the encrypted cookie `name` in `req`; nullopt when absent or it
/// does not open. Of several with that name, the first that opens counts.
std::optional<std::string> encrypted_cookie(const Request& req, const CookieKeys& keys,
                                            std::string_view name);

}  // namespace vela
