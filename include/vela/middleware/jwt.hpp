#pragma once
// JWT bearer authentication: JSON Web Tokens (RFC 7519) signed with JWS (RFC 7515) in the
// compact serialization, sent as OAuth 2.0 bearer tokens (RFC 6750).
//
//     vela::JwtOptions jwt;
//     jwt.keys = {vela::JwtKey::rs256(read_file("issuer.pub.pem"), "2024-06"),
//                 vela::JwtKey::hs256(std::getenv("JWT_SECRET"))};
//     jwt.issuers = {"https://auth.example.com"};
//     jwt.audiences = {"orders-api"};
//     auto api = app.group("/api").use(vela::jwt_auth(jwt));
//     api.get("/me", [](vela::Request& req) {
//         return vela::jwt_claims(req)["email"].as_string();   // the verified payload
//     });
//
//     // Issuing tokens (an auth service, or tests):
//     auto key = vela::JwtSigningKey::hs256(secret);
//     std::string token = vela::jwt::sign(
//         vela::json::Value::object({{"sub", "alice"}, {"exp", now + 3600}}), key);
//
// Each key is bound to one algorithm (HS256, RS256 or ES256): a token whose header names
// another algorithm than the key's is refused, so an RSA public key can never be used as an
// HMAC secret, and "none" (or any other algorithm) is never accepted. A token's `kid`
// selects among several keys (rotation); without one, every key of the token's algorithm is
// tried. The signature is checked before any claim is read; then exp, nbf and iat (with a
// leeway), iss, aud and the required claims.
//
// jwt_auth() is a synchronous before hook: a route without it pays nothing. A missing token
// is answered 401 with `WWW-Authenticate: Bearer realm="..."`, a bad one 401 with
// error="invalid_token" and a description (RFC 6750 3.1), missing scopes 403 with
// error="insufficient_scope"; each with an application/problem+json body.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/json/value.hpp"

namespace vela {

namespace openapi {
struct Operation;
class Schemas;
}  // namespace openapi

namespace detail {
struct JwtKeyData;
}  // namespace detail

/// A JWS algorithm vela signs and verifies with.
enum class JwtAlgorithm : std::uint8_t {
    hs256,  ///< HMAC with SHA-256 (a shared secret).
    rs256,  ///< RSASSA-PKCS1-v1_5 with SHA-256 (RSA, 2048 bits or more).
    es256,  ///< ECDSA on P-256 with SHA-256.
};

/// The algorithm's JOSE name: "HS256", "RS256" or "ES256".
std::string_view jwt_algorithm_name(JwtAlgorithm alg) noexcept;

/// A key that verifies tokens of exactly one algorithm (see above). Cheap to copy.
class JwtKey {
  public:
    /// An HMAC-SHA256 secret (at least 32 bytes; a shorter one throws std::invalid_argument).
    static JwtKey hs256(std::string_view secret, std::string kid = "");
    /// An RSA public key for RS256, from a PEM public key ("BEGIN PUBLIC KEY" or "BEGIN RSA
    /// PUBLIC KEY") or certificate; throws std::invalid_argument for anything else or a key
    /// under 2048 bits.
    static JwtKey rs256(std::string_view public_key_pem, std::string kid = "");
    /// A P-256 public key for ES256, from a PEM public key or certificate; throws
    /// std::invalid_argument for anything else or another curve.
    static JwtKey es256(std::string_view public_key_pem, std::string kid = "");

    /// The algorithm this key verifies.
    JwtAlgorithm algorithm() const noexcept { return alg_; }
    /// The key id matched against a token's "kid" header; empty when none was given.
    const std::string& kid() const noexcept { return kid_; }
    /// The key itself (what verification uses).
    const detail::JwtKeyData& data() const noexcept { return *data_; }

  private:
    friend class JwtSigningKey;
    JwtKey(JwtAlgorithm alg, std::string kid, std::shared_ptr<const detail::JwtKeyData> data)
        : alg_(alg), kid_(std::move(kid)), data_(std::move(data)) {}

    JwtAlgorithm alg_;
    std::string kid_;
    std::shared_ptr<const detail::JwtKeyData> data_;
};

/// A key that signs tokens (jwt::sign): an HMAC secret or an RSA / P-256 private key.
class JwtSigningKey {
  public:
    /// An HMAC-SHA256 secret (at least 32 bytes, else std::invalid_argument).
    static JwtSigningKey hs256(std::string_view secret, std::string kid = "");
    /// An RSA private key in PEM (PKCS#8 or "BEGIN RSA PRIVATE KEY", unencrypted), 2048 bits
    /// or more; throws std::invalid_argument otherwise.
    static JwtSigningKey rs256(std::string_view private_key_pem, std::string kid = "");
    /// A P-256 private key in PEM (PKCS#8 or "BEGIN EC PRIVATE KEY", unencrypted); throws
    /// std::invalid_argument otherwise.
    static JwtSigningKey es256(std::string_view private_key_pem, std::string kid = "");

    /// The algorithm this key signs with.
    JwtAlgorithm algorithm() const noexcept { return key_.algorithm(); }
    /// The key id written into the token header ("kid"); empty: none.
    const std::string& kid() const noexcept { return key_.kid(); }
    /// The key that verifies what this one signs (the public half; the same secret for HS256).
    const JwtKey& verification_key() const noexcept { return key_; }

  private:
    explicit JwtSigningKey(JwtKey key) : key_(std::move(key)) {}
    JwtKey key_;
};

/// How tokens are verified (jwt::verify) and, for jwt_auth(), found and answered.
struct JwtOptions {
    /// The keys tokens may be signed with (at least one). Each is bound to its algorithm.
    std::vector<JwtKey> keys;
    /// Clock skew tolerated for exp, nbf and iat.
    std::chrono::seconds leeway{60};
    /// Accepted "iss" values (exact match); empty: iss is not checked.
    std::vector<std::string> issuers;
    /// This service's names: a token's "aud" (a string or an array) must hold one of them.
    /// Empty: a token that names any audience is refused (RFC 7519 4.1.3), one without aud
    /// passes.
    std::vector<std::string> audiences;
    /// A token without "exp" is refused (tokens that never expire are rarely intended).
    bool require_exp = true;
    /// Claims that must be present in every token (e.g. {"sub", "jti"}).
    std::vector<std::string> required_claims;
    /// When not empty, the "typ" header must equal this (case-insensitive, "application/"
    /// optional), e.g. "at+jwt" (RFC 9068) to tell access tokens from other JWTs.
    std::string type;
    /// Header parameters the application understands when a token lists them in "crit"
    /// (RFC 7515 4.1.11); any other critical parameter makes the token invalid.
    std::vector<std::string> critical_headers;
    /// Longer tokens are refused before any parsing.
    std::size_t max_token_size = 8 * 1024;
    /// The current time; empty: the system clock (tests set a fixed time).
    std::function<std::chrono::system_clock::time_point()> clock;

    // ---- jwt_auth() only ----
    /// The realm named in WWW-Authenticate challenges.
    std::string realm = "api";
    /// Scopes every request must carry (all of them), from the "scope" claim (a
    /// space-separated string, RFC 8693 4.2) or "scp" (a string or an array); missing ones
    /// are answered 403 insufficient_scope.
    std::vector<std::string> required_scopes;
    /// Also read the token from this cookie when the request has no Bearer Authorization header
    /// (none, or another scheme such as Basic); empty: off.
    std::string cookie;
    /// Also read the token from this query parameter when there is neither header nor cookie
    /// (RFC 6750 2.3; tokens in URLs end up in logs, so off by default); empty: off.
    std::string query_parameter;
};

/// Why a token was refused.
enum class JwtError : std::uint8_t {
    none,                   ///< Not refused.
    malformed,              ///< Not three base64url parts of JSON objects, or too long.
    unsupported_algorithm,  ///< "none", an unknown alg, or an alg no key is bound to.
    unknown_key,            ///< No configured key has the token's kid.
    bad_signature,          ///< No candidate key verifies the signature.
    unsupported_critical,   ///< A "crit" header parameter the application does not understand.
    bad_type,               ///< The "typ" header is not the expected one.
    expired,                ///< exp is past (beyond the leeway).
    not_yet_valid,          ///< nbf is ahead (beyond the leeway).
    issued_in_future,       ///< iat is ahead (beyond the leeway).
    bad_issuer,             ///< iss missing or not accepted.
    bad_audience,           ///< aud missing or not ours.
    missing_claim,          ///< A required claim (or exp) is absent.
    bad_claim,              ///< A registered claim has the wrong JSON type.
};

/// A verified token: its JOSE header and its claims (the payload).
struct JwtClaims {
    /// The JOSE header ({"alg":"RS256","kid":...}).
    json::Value header;
    /// The claims set: the JSON object the token carries.
    json::Value payload;

    /// The "sub" claim, empty when absent or not a string.
    std::string_view sub() const noexcept;
    /// The string claim `name`, nullopt when absent or not a string.
    std::optional<std::string_view> string(std::string_view name) const noexcept;
    /// The scopes granted: "scope" split on spaces, or "scp" (a string or an array).
    std::vector<std::string_view> scopes() const;
    /// True when scopes() contains `scope`.
    bool has_scope(std::string_view scope) const;

    /// Lets a handler take `const vela::JwtClaims&` as a parameter: a copy of what jwt_auth()
    /// stored (500 if jwt_auth() is not installed on the route).
    static std::optional<JwtClaims> from_request(Request& req, Response& error);
    /// Documents such a handler (openapi.hpp): bearer authentication, 401 without a token.
    static void describe_openapi(openapi::Operation& op, openapi::Schemas& schemas);
};

/// What jwt::verify() returns: the claims, or why the token was refused.
struct JwtResult {
    /// none when the token is valid.
    JwtError error = JwtError::none;
    /// One line saying why ("token expired"); safe to send to the client.
    std::string reason;
    /// The verified claims (empty values when refused).
    JwtClaims claims;

    /// True when the token is valid.
    bool ok() const noexcept { return error == JwtError::none; }
    /// True when the token is valid.
    explicit operator bool() const noexcept { return ok(); }
};

namespace jwt {

/// Verifies the compact JWS `token` against `options` (signature first, then claims).
/// Never throws for a bad token; throws std::invalid_argument when options.keys is empty.
JwtResult verify(std::string_view token, const JwtOptions& options);

/// A compact JWS of `claims` (a JSON object) signed with `key`; the header is
/// {"alg":...,"typ":"JWT"} plus "kid" when the key has one. Throws std::invalid_argument when
/// `claims` is not an object, std::runtime_error if OpenSSL fails.
std::string sign(const json::Value& claims, const JwtSigningKey& key);

/// As sign(), with extra header parameters (alg, and kid when the key has one, are set by
/// the key and override `header`'s).
std::string sign(const json::Value& claims, const JwtSigningKey& key, json::Value header);

}  // namespace jwt

/// The bearer authentication middleware (a before hook; see above). Throws
/// std::invalid_argument for no keys or a realm with a quote, backslash or control character.
std::function<std::optional<Response>(Request&)> jwt_auth(JwtOptions options);

/// The claims jwt_auth() verified for `req`; throws std::logic_error if it did not run.
const json::Value& jwt_claims(const Request& req);
/// The "sub" claim jwt_auth() verified for `req` (empty when absent); throws
/// std::logic_error if it did not run.
std::string_view jwt_subject(const Request& req);

}  // namespace vela
