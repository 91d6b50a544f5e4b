#include "vela/middleware/jwt.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/decoder.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <utility>

#include "vela/base/ascii.hpp"
#include "vela/crypto/crypto.hpp"
#include "vela/json/json.hpp"
#include "vela/web/extract.hpp"
#include "vela/web/route_doc.hpp"

namespace vela {

namespace detail {

// The key material behind a JwtKey / JwtSigningKey: a secret for HS256, an EVP_PKEY (public,
// or private for signing) for RS256 and ES256. Immutable once built, so one key is shared
// by every loop thread (OpenSSL 3 allows concurrent use of a const EVP_PKEY).
struct JwtKeyData {
    std::string secret;
    EVP_PKEY* pkey = nullptr;

    JwtKeyData() = default;
    JwtKeyData(const JwtKeyData&) = delete;
    JwtKeyData& operator=(const JwtKeyData&) = delete;
    ~JwtKeyData() { EVP_PKEY_free(pkey); }
};

}  // namespace detail

namespace {

using detail::JwtKeyData;

constexpr std::size_t kMinSecret = 32;
constexpr int kMinRsaBits = 2048;
constexpr std::size_t kEs256Half = 32;  // bytes of r and of s in a JOSE ES256 signature

// ---- OpenSSL helpers -----------------------------------------------------------------------

struct BioFree {
    void operator()(BIO* b) const noexcept { BIO_free(b); }
};
struct PkeyFree {
    void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
struct MdCtxFree {
    void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};
struct X509Free {
    void operator()(X509* x) const noexcept { X509_free(x); }
};
struct EcdsaSigFree {
    void operator()(ECDSA_SIG* s) const noexcept { ECDSA_SIG_free(s); }
};
struct DecoderFree {
    void operator()(OSSL_DECODER_CTX* c) const noexcept { OSSL_DECODER_CTX_free(c); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// OpenSSL's thread-local error queue must be left empty: a stale entry would be read by the
// next TLS call on this thread as its own failure.
struct ErrGuard {
    ~ErrGuard() { ERR_clear_error(); }
};

// Encrypted PEM keys are refused instead of prompting on the terminal.
int no_passphrase(char*, int, int, void*) { return -1; }

BioPtr memory_bio(std::string_view pem) {
    if (pem.size() > static_cast<std::size_t>(INT_MAX)) return nullptr;
    return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// A public key from a PEM SubjectPublicKeyInfo ("BEGIN PUBLIC KEY"), a PKCS#1 RSA public key
// ("BEGIN RSA PUBLIC KEY") or a certificate ("BEGIN CERTIFICATE"); null if none of these.
PkeyPtr read_public_key(std::string_view pem) {
    ErrGuard guard;
    if (pem.find("-----BEGIN CERTIFICATE-----") != std::string_view::npos) {
        BioPtr bio = memory_bio(pem);
        if (!bio) return nullptr;
        std::unique_ptr<X509, X509Free> cert(
            PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr));
        if (!cert) return nullptr;
        return PkeyPtr(X509_get_pubkey(cert.get()));
    }
    if (pem.find("PRIVATE KEY-----") != std::string_view::npos) return nullptr;
    EVP_PKEY* pkey = nullptr;
    std::unique_ptr<OSSL_DECODER_CTX, DecoderFree> dctx(OSSL_DECODER_CTX_new_for_pkey(
        &pkey, "PEM", nullptr, nullptr, EVP_PKEY_PUBLIC_KEY, nullptr, nullptr));
    if (!dctx) return nullptr;
    const auto* data = reinterpret_cast<const unsigned char*>(pem.data());
    std::size_t len = pem.size();
    if (OSSL_DECODER_from_data(dctx.get(), &data, &len) != 1) {
        EVP_PKEY_free(pkey);
        return nullptr;
    }
    return PkeyPtr(pkey);
}

PkeyPtr read_private_key(std::string_view pem) {
    ErrGuard guard;
    BioPtr bio = memory_bio(pem);
    if (!bio) return nullptr;
    return PkeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
}

// Throws unless `pkey` suits `alg`: RSA of 2048 bits or more, or EC on P-256.
void check_key(const EVP_PKEY* pkey, JwtAlgorithm alg, const char* who) {
    if (alg == JwtAlgorithm::rs256) {
        if (!EVP_PKEY_is_a(pkey, "RSA"))
            throw std::invalid_argument(std::string(who) + ": the key is not an RSA key");
        if (EVP_PKEY_get_bits(pkey) < kMinRsaBits)
            throw std::invalid_argument(std::string(who) + ": the RSA key has " +
                                        std::to_string(EVP_PKEY_get_bits(pkey)) +
                                        " bits; at least 2048 are required");
        return;
    }
    if (!EVP_PKEY_is_a(pkey, "EC"))
        throw std::invalid_argument(std::string(who) + ": the key is not an EC key");
    char group[64] = {};
    std::size_t len = 0;
    ErrGuard guard;
    if (EVP_PKEY_get_group_name(pkey, group, sizeof group, &len) != 1 ||
        (std::string_view(group, len) != "prime256v1" && std::string_view(group, len) != "P-256"))
        throw std::invalid_argument(std::string(who) +
                                    ": the EC key is not on P-256 (ES256 needs P-256)");
}

std::shared_ptr<const JwtKeyData> secret_data(std::string_view secret, const char* who) {
    if (secret.size() < kMinSecret)
        throw std::invalid_argument(std::string(who) + ": the secret has " +
                                    std::to_string(secret.size()) +
                                    " bytes; HS256 needs at least 32 random bytes");
    auto d = std::make_shared<JwtKeyData>();
    d->secret = std::string(secret);
    return d;
}

std::shared_ptr<const JwtKeyData> pkey_data(PkeyPtr pkey) {
    auto d = std::make_shared<JwtKeyData>();
    d->pkey = pkey.release();
    return d;
}

// ---- Signatures ------------------------------------------------------------------------

// RS256 / ES256 signature over `input`, DER for ECDSA as OpenSSL makes it.
std::string digest_sign(EVP_PKEY* pkey, std::string_view input) {
    ErrGuard guard;
    MdCtxPtr ctx(EVP_MD_CTX_new());
    std::size_t len = 0;
    const auto* in = reinterpret_cast<const unsigned char*>(input.data());
    if (!ctx ||
        EVP_DigestSignInit_ex(ctx.get(), nullptr, "SHA256", nullptr, nullptr, pkey, nullptr) != 1 ||
        EVP_DigestSign(ctx.get(), nullptr, &len, in, input.size()) != 1)
        throw std::runtime_error("jwt::sign: OpenSSL could not start signing");
    std::string sig(len, '\0');
    if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, in,
                       input.size()) != 1)
        throw std::runtime_error("jwt::sign: OpenSSL could not sign");
    sig.resize(len);
    return sig;
}

bool digest_verify(EVP_PKEY* pkey, std::string_view input, std::string_view sig) {
    ErrGuard guard;
    MdCtxPtr ctx(EVP_MD_CTX_new());
    if (!ctx ||
        EVP_DigestVerifyInit_ex(ctx.get(), nullptr, "SHA256", nullptr, nullptr, pkey, nullptr) != 1)
        return false;
    return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()),
                            sig.size(), reinterpret_cast<const unsigned char*>(input.data()),
                            input.size()) == 1;
}

// DER ECDSA-Sig-Value -> JOSE r||s, each left-padded to 32 bytes (RFC 7518 3.4).
std::string der_to_jose(std::string_view der) {
    const auto* p = reinterpret_cast<const unsigned char*>(der.data());
    std::unique_ptr<ECDSA_SIG, EcdsaSigFree> sig(
        d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size())));
    if (!sig) throw std::runtime_error("jwt::sign: OpenSSL made an unreadable ECDSA signature");
    const BIGNUM* r = nullptr;
    const BIGNUM* s = nullptr;
    ECDSA_SIG_get0(sig.get(), &r, &s);
    std::string out(2 * kEs256Half, '\0');
    auto* o = reinterpret_cast<unsigned char*>(out.data());
    if (BN_bn2binpad(r, o, kEs256Half) < 0 || BN_bn2binpad(s, o + kEs256Half, kEs256Half) < 0)
        throw std::runtime_error("jwt::sign: ECDSA signature does not fit 64 bytes");
    return out;
}

// JOSE r||s (exactly 64 bytes) -> DER, what EVP_DigestVerify takes; empty if not 64 bytes.
std::string jose_to_der(std::string_view raw) {
    if (raw.size() != 2 * kEs256Half) return {};
    ErrGuard guard;
    const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
    BIGNUM* r = BN_bin2bn(p, kEs256Half, nullptr);
    BIGNUM* s = BN_bin2bn(p + kEs256Half, kEs256Half, nullptr);
    std::unique_ptr<ECDSA_SIG, EcdsaSigFree> sig(ECDSA_SIG_new());
    if (!r || !s || !sig || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
        BN_free(r);
        BN_free(s);
        return {};
    }
    unsigned char* der = nullptr;
    const int len = i2d_ECDSA_SIG(sig.get(), &der);
    if (len <= 0) return {};
    std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(len));
    OPENSSL_free(der);
    return out;
}

std::string_view digest_view(const crypto::Digest& d) {
    return {reinterpret_cast<const char*>(d.data()), d.size()};
}

bool verify_signature(const JwtKey& key, std::string_view input, std::string_view sig) {
    const JwtKeyData& d = key.data();
    switch (key.algorithm()) {
        case JwtAlgorithm::hs256:
            return crypto::equal_constant_time(digest_view(crypto::hmac_sha256(d.secret, input)),
                                               sig);
        case JwtAlgorithm::rs256:
            if (sig.size() != static_cast<std::size_t>(EVP_PKEY_get_size(d.pkey))) return false;
            return digest_verify(d.pkey, input, sig);
        case JwtAlgorithm::es256: {
            const std::string der = jose_to_der(sig);
            return !der.empty() && digest_verify(d.pkey, input, der);
        }
    }
    return false;
}

// ---- Parsing -------------------------------------------------------------------------------

int b64url_value(char c) noexcept {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

// Strict base64url (RFC 7515 2): the URL-safe alphabet only, no padding, a possible length,
// and zero unused bits at the end (so each byte string has exactly one encoding).
std::optional<std::string> strict_b64url(std::string_view s) {
    if (s.size() % 4 == 1) return std::nullopt;
    int last = 0;
    for (char c : s)
        if ((last = b64url_value(c)) < 0) return std::nullopt;
    if (s.size() % 4 == 2 && (last & 0x0F) != 0) return std::nullopt;
    if (s.size() % 4 == 3 && (last & 0x03) != 0) return std::nullopt;
    return vela::base64url_decode(s);
}

std::optional<json::Value> json_object(std::string_view text) {
    json::Value v;
    if (json::read(text, v, json::ParseOptions{.max_depth = 64})) return std::nullopt;
    if (!v.is_object()) return std::nullopt;
    return v;
}

JwtResult refuse(JwtError e, std::string reason) {
    JwtResult r;
    r.error = e;
    r.reason = std::move(reason);
    return r;
}

std::optional<JwtAlgorithm> algorithm_from_name(std::string_view name) noexcept {
    if (name == "HS256") return JwtAlgorithm::hs256;
    if (name == "RS256") return JwtAlgorithm::rs256;
    if (name == "ES256") return JwtAlgorithm::es256;
    return std::nullopt;
}

// "application/at+jwt" and "at+jwt" name the same type (RFC 7515 4.1.9).
std::string_view without_application(std::string_view t) noexcept {
    constexpr std::string_view prefix = "application/";
    if (t.size() > prefix.size() && ascii::iequals(t.substr(0, prefix.size()), prefix))
        t.remove_prefix(prefix.size());
    return t;
}

bool contains(const std::vector<std::string>& list, std::string_view s) {
    return std::find(list.begin(), list.end(), s) != list.end();
}

// Checks the registered claims of a verified payload (RFC 7519 4.1).
JwtResult check_claims(const json::Value& payload, const JwtOptions& o) {
    const auto now_tp = o.clock ? o.clock() : std::chrono::system_clock::now();
    const double now = std::chrono::duration<double>(now_tp.time_since_epoch()).count();
    const auto leeway = static_cast<double>(o.leeway.count());

    auto numeric = [&](std::string_view name, const json::Value*& out) -> std::optional<JwtResult> {
        out = payload.find(name);
        if (out && !out->is_number())
            return refuse(JwtError::bad_claim, std::string(name) + " is not a NumericDate");
        return std::nullopt;
    };
    const json::Value* exp = nullptr;
    const json::Value* nbf = nullptr;
    const json::Value* iat = nullptr;
    if (auto bad = numeric("exp", exp)) return *bad;
    if (auto bad = numeric("nbf", nbf)) return *bad;
    if (auto bad = numeric("iat", iat)) return *bad;
    if (!exp && o.require_exp) return refuse(JwtError::missing_claim, "token has no exp claim");
    if (exp && now >= exp->as_double() + leeway) return refuse(JwtError::expired, "token expired");
    if (nbf && now + leeway < nbf->as_double())
        return refuse(JwtError::not_yet_valid, "token not valid yet (nbf)");
    if (iat && iat->as_double() > now + leeway)
        return refuse(JwtError::issued_in_future, "token issued in the future (iat)");

    if (!o.issuers.empty()) {
        const json::Value* iss = payload.find("iss");
        if (!iss || !iss->is_string() || !contains(o.issuers, iss->as_string()))
            return refuse(JwtError::bad_issuer, "issuer not accepted");
    }

    if (const json::Value* aud = payload.find("aud")) {
        bool ours = false;
        if (aud->is_string()) {
            ours = contains(o.audiences, aud->as_string());
        } else if (aud->is_array()) {
            for (const json::Value& a : aud->as_array()) {
                if (!a.is_string()) return refuse(JwtError::bad_claim, "aud is not a string list");
                ours = ours || contains(o.audiences, a.as_string());
            }
        } else {
            return refuse(JwtError::bad_claim, "aud is not a string or a string list");
        }
        if (!ours) return refuse(JwtError::bad_audience, "audience not accepted");
    } else if (!o.audiences.empty()) {
        return refuse(JwtError::bad_audience, "token has no aud claim");
    }

    for (const std::string& name : o.required_claims)
        if (!payload.find(name))
            return refuse(JwtError::missing_claim, "token has no " + name + " claim");
    return {};
}

// ---- Middleware ----------------------------------------------------------------------------

// A quoted-string value RFC 6750 allows in a challenge (%x20-21 / %x23-5B / %x5D-7E):
// anything else becomes '?', so a description can never break the header.
std::string challenge_text(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') c = '?';
    return out;
}

bool is_nqchar_text(std::string_view s, bool allow_space) noexcept {
    for (char c : s)
        if (c < 0x20 || c > 0x7E || c == '"' || c == '\\' || (!allow_space && c == ' '))
            return false;
    return true;
}

Response challenge(Status status, const JwtOptions& o, std::string_view error,
                   std::string_view description, std::string_view detail) {
    Response res = problem_response(status, detail);
    std::string h = "Bearer realm=\"" + o.realm + "\"";
    if (!error.empty()) {
        h += ", error=\"";
        h += error;
        h += "\", error_description=\"";
        h += challenge_text(description);
        h += '"';
        if (error == "insufficient_scope" && !o.required_scopes.empty()) {
            h += ", scope=\"";
            for (std::size_t i = 0; i < o.required_scopes.size(); ++i) {
                if (i) h += ' ';
                h += o.required_scopes[i];
            }
            h += '"';
        }
    }
    res.set_header("WWW-Authenticate", h);
    res.set_header("Cache-Control", "no-store");
    return res;
}

void check_scopes(const std::vector<std::string_view>& granted, const JwtOptions& o,
                  std::string& missing) {
    for (const std::string& s : o.required_scopes)
        if (std::find(granted.begin(), granted.end(), s) == granted.end()) {
            missing = s;
            return;
        }
}

}  // namespace

// ---- Keys ----------------------------------------------------------------------------------

std::string_view jwt_algorithm_name(JwtAlgorithm alg) noexcept {
    switch (alg) {
        case JwtAlgorithm::hs256:
            return "HS256";
        case JwtAlgorithm::rs256:
            return "RS256";
        case JwtAlgorithm::es256:
            return "ES256";
    }
    return "?";
}

JwtKey JwtKey::hs256(std::string_view secret, std::string kid) {
    return JwtKey(JwtAlgorithm::hs256, std::move(kid), secret_data(secret, "JwtKey::hs256"));
}

JwtKey JwtKey::rs256(std::string_view public_key_pem, std::string kid) {
    PkeyPtr pkey = read_public_key(public_key_pem);
    if (!pkey)
        throw std::invalid_argument(
            "JwtKey::rs256: not a PEM RSA public key or certificate (a private key goes to "
            "JwtSigningKey)");
    check_key(pkey.get(), JwtAlgorithm::rs256, "JwtKey::rs256");
    return JwtKey(JwtAlgorithm::rs256, std::move(kid), pkey_data(std::move(pkey)));
}

JwtKey JwtKey::es256(std::string_view public_key_pem, std::string kid) {
    PkeyPtr pkey = read_public_key(public_key_pem);
    if (!pkey)
        throw std::invalid_argument(
            "JwtKey::es256: not a PEM EC public key or certificate (a private key goes to "
            "JwtSigningKey)");
    check_key(pkey.get(), JwtAlgorithm::es256, "JwtKey::es256");
    return JwtKey(JwtAlgorithm::es256, std::move(kid), pkey_data(std::move(pkey)));
}

JwtSigningKey JwtSigningKey::hs256(std::string_view secret, std::string kid) {
    return JwtSigningKey(
        JwtKey(JwtAlgorithm::hs256, std::move(kid), secret_data(secret, "JwtSigningKey::hs256")));
}

JwtSigningKey JwtSigningKey::rs256(std::string_view private_key_pem, std::string kid) {
    PkeyPtr pkey = read_private_key(private_key_pem);
    if (!pkey)
        throw std::invalid_argument("JwtSigningKey::rs256: not an unencrypted PEM private key");
    check_key(pkey.get(), JwtAlgorithm::rs256, "JwtSigningKey::rs256");
    return JwtSigningKey(JwtKey(JwtAlgorithm::rs256, std::move(kid), pkey_data(std::move(pkey))));
}

JwtSigningKey JwtSigningKey::es256(std::string_view private_key_pem, std::string kid) {
    PkeyPtr pkey = read_private_key(private_key_pem);
    if (!pkey)
        throw std::invalid_argument("JwtSigningKey::es256: not an unencrypted PEM private key");
    check_key(pkey.get(), JwtAlgorithm::es256, "JwtSigningKey::es256");
    return JwtSigningKey(JwtKey(JwtAlgorithm::es256, std::move(kid), pkey_data(std::move(pkey))));
}

// ---- Claims --------------------------------------------------------------------------------

std::string_view JwtClaims::sub() const noexcept { return string("sub").value_or(""); }

std::optional<std::string_view> JwtClaims::string(std::string_view name) const noexcept {
    const json::Value* v = payload.find(name);
    if (!v || !v->is_string()) return std::nullopt;
    return std::string_view(v->as_string());
}

std::vector<std::string_view> JwtClaims::scopes() const {
    std::vector<std::string_view> out;
    auto split = [&](std::string_view s) {
        while (!s.empty()) {
            const std::size_t sp = s.find(' ');
            if (sp != 0) out.push_back(s.substr(0, sp));
            if (sp == std::string_view::npos) break;
            s.remove_prefix(sp + 1);
        }
    };
    if (const json::Value* scope = payload.find("scope"); scope && scope->is_string())
        split(scope->as_string());
    if (const json::Value* scp = payload.find("scp")) {
        if (scp->is_string()) {
            split(scp->as_string());
        } else if (scp->is_array()) {
            for (const json::Value& s : scp->as_array())
                if (s.is_string()) out.push_back(s.as_string());
        }
    }
    return out;
}

bool JwtClaims::has_scope(std::string_view scope) const {
    const auto all = scopes();
    return std::find(all.begin(), all.end(), scope) != all.end();
}

void JwtClaims::describe_openapi(openapi::Operation& op, openapi::Schemas&) {
    openapi::detail::add_bearer(op);
}

std::optional<JwtClaims> JwtClaims::from_request(Request& req, Response& error) {
    if (const JwtClaims* c = req.local<JwtClaims>()) return *c;
    error = problem_response(Status::InternalServerError,
                             "JwtClaims parameter on a route without vela::jwt_auth");
    return std::nullopt;
}

// ---- Verify and sign -----------------------------------------------------------------------

JwtResult jwt::verify(std::string_view token, const JwtOptions& o) {
    if (o.keys.empty()) throw std::invalid_argument("jwt::verify: JwtOptions::keys is empty");
    if (token.size() > o.max_token_size)
        return refuse(JwtError::malformed,
                      "token longer than " + std::to_string(o.max_token_size) + " bytes");

    // Compact serialization: header.payload.signature (RFC 7515 7.1).
    const std::size_t dot1 = token.find('.');
    const std::size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
    if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
        return refuse(JwtError::malformed, "token is not three dot-separated parts");
    const std::string_view header_b64 = token.substr(0, dot1);
    const std::string_view payload_b64 = token.substr(dot1 + 1, dot2 - dot1 - 1);
    const std::string_view sig_b64 = token.substr(dot2 + 1);

    const std::optional<std::string> header_text = strict_b64url(header_b64);
    const std::optional<std::string> payload_text = strict_b64url(payload_b64);
    const std::optional<std::string> sig = strict_b64url(sig_b64);
    if (!header_text || !payload_text || !sig)
        return refuse(JwtError::malformed, "token part is not base64url");
    std::optional<json::Value> header = json_object(*header_text);
    if (!header) return refuse(JwtError::malformed, "token header is not a JSON object");

    // The algorithm, bound to the keys: never taken from the token alone.
    const json::Value* alg_v = header->find("alg");
    if (!alg_v || !alg_v->is_string())
        return refuse(JwtError::malformed, "token header has no alg");
    if (alg_v->as_string() == "none")
        return refuse(JwtError::unsupported_algorithm, "unsigned tokens (alg none) are refused");
    const std::optional<JwtAlgorithm> alg = algorithm_from_name(alg_v->as_string());
    if (!alg) return refuse(JwtError::unsupported_algorithm, "unsupported algorithm");

    if (const json::Value* crit = header->find("crit")) {
        // A non-empty list of names that are present and that the application understands
        // (RFC 7515 4.1.11); we understand no extension ourselves.
        if (!crit->is_array() || crit->size() == 0)
            return refuse(JwtError::malformed, "token crit header is not a non-empty list");
        for (const json::Value& name : crit->as_array())
            if (!name.is_string() || !contains(o.critical_headers, name.as_string()) ||
                !header->find(name.as_string()))
                return refuse(JwtError::unsupported_critical,
                              "token has a critical header parameter that is not understood");
    }
    if (!o.type.empty()) {
        const json::Value* typ = header->find("typ");
        if (!typ || !typ->is_string() ||
            !ascii::iequals(without_application(typ->as_string()), without_application(o.type)))
            return refuse(JwtError::bad_type, "token type not accepted");
    }

    // Key selection: the keys with the token's kid (else the keys without a kid), of the
    // token's algorithm.
    const json::Value* kid_v = header->find("kid");
    if (kid_v && !kid_v->is_string())
        return refuse(JwtError::malformed, "token kid is not a string");
    std::string_view kid = kid_v ? std::string_view(kid_v->as_string()) : std::string_view();
    bool kid_known = false;
    if (kid_v)
        for (const JwtKey& k : o.keys) kid_known = kid_known || k.kid() == kid;
    bool any_candidate = false;
    bool alg_match = false;
    const std::string_view input = token.substr(0, dot2);
    for (const JwtKey& k : o.keys) {
        if (kid_v && (kid_known ? k.kid() != kid : !k.kid().empty())) continue;
        any_candidate = true;
        if (k.algorithm() != *alg) continue;
        alg_match = true;
        if (!verify_signature(k, input, *sig)) continue;

        std::optional<json::Value> payload = json_object(*payload_text);
        if (!payload) return refuse(JwtError::malformed, "token payload is not a JSON object");
        JwtResult r = check_claims(*payload, o);
        if (!r.ok()) return r;
        r.claims.header = std::move(*header);
        r.claims.payload = std::move(*payload);
        return r;
    }
    if (!any_candidate) return refuse(JwtError::unknown_key, "no key for the token's kid");
    if (!alg_match)
        return refuse(
            JwtError::unsupported_algorithm,
            "algorithm " + std::string(jwt_algorithm_name(*alg)) + " not accepted for this key");
    return refuse(JwtError::bad_signature, "signature does not verify");
}

std::string jwt::sign(const json::Value& claims, const JwtSigningKey& key) {
    return sign(claims, key, json::Value::object({{"typ", "JWT"}}));
}

std::string jwt::sign(const json::Value& claims, const JwtSigningKey& key, json::Value header) {
    if (!claims.is_object()) throw std::invalid_argument("jwt::sign: the claims must be an object");
    if (!header.is_object()) throw std::invalid_argument("jwt::sign: the header must be an object");
    header.set("alg", std::string(jwt_algorithm_name(key.algorithm())));
    if (!key.kid().empty()) header.set("kid", key.kid());
    std::string token = vela::base64url_encode(json::write(header));
    token += '.';
    token += vela::base64url_encode(json::write(claims));
    const JwtKeyData& d = key.verification_key().data();
    std::string sig;
    switch (key.algorithm()) {
        case JwtAlgorithm::hs256:
            sig = std::string(digest_view(crypto::hmac_sha256(d.secret, token)));
            break;
        case JwtAlgorithm::rs256:
            sig = digest_sign(d.pkey, token);
            break;
        case JwtAlgorithm::es256:
            sig = der_to_jose(digest_sign(d.pkey, token));
            break;
    }
    token += '.';
    token += vela::base64url_encode(sig);
    return token;
}

// ---- Middleware ----------------------------------------------------------------------------

std::function<std::optional<Response>(Request&)> jwt_auth(JwtOptions options) {
    if (options.keys.empty()) throw std::invalid_argument("jwt_auth: JwtOptions::keys is empty");
    if (!is_nqchar_text(options.realm, true))
        throw std::invalid_argument(
            "jwt_auth: the realm may not hold quotes, backslashes or control characters");
    for (const std::string& s : options.required_scopes)
        if (s.empty() || !is_nqchar_text(s, false))
            throw std::invalid_argument(
                "jwt_auth: a required scope is empty or holds a space, "
                "quote, backslash or control character");
    auto o = std::make_shared<const JwtOptions>(std::move(options));
    return [o](Request& req) -> std::optional<Response> {
        std::string_view token;
        std::optional<std::string> from_query;
        // RFC 6750 2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive.
        // Another scheme (Basic...) counts as no bearer token.
        const std::string_view auth = req.header("Authorization");
        constexpr std::string_view scheme = "bearer";
        if (auth.size() >= scheme.size() && ascii::iequals(auth.substr(0, scheme.size()), scheme) &&
            (auth.size() == scheme.size() || auth[scheme.size()] == ' ')) {
            token = auth.substr(scheme.size());
            while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
            if (token.empty() || token.find(' ') != std::string_view::npos)
                return challenge(Status::BadRequest, *o, "invalid_request",
                                 "malformed Bearer credentials",
                                 "malformed Authorization: Bearer header");
        } else if (!o->cookie.empty()) {
            if (auto c = req.cookie(o->cookie)) token = *c;
        }
        if (token.empty() && !o->query_parameter.empty()) {
            from_query = req.query(o->query_parameter);
            if (from_query) token = *from_query;
        }
        if (token.empty())
            return challenge(Status::Unauthorized, *o, {}, {}, "a bearer token is required");

        JwtResult r = jwt::verify(token, *o);
        if (!r.ok())
            return challenge(Status::Unauthorized, *o, "invalid_token", r.reason,
                             "invalid bearer token: " + r.reason);
        if (!o->required_scopes.empty()) {
            std::string missing;
            check_scopes(r.claims.scopes(), *o, missing);
            if (!missing.empty())
                return challenge(Status::Forbidden, *o, "insufficient_scope",
                                 "the token lacks a required scope",
                                 "the token lacks the scope " + missing);
        }
        req.set_local<JwtClaims>(std::move(r.claims));
        return std::nullopt;
    };
}

const json::Value& jwt_claims(const Request& req) {
    const JwtClaims* c = req.local<JwtClaims>();
    if (!c)
        throw std::logic_error(
            "vela::jwt_claims: no verified token on this request (is vela::jwt_auth installed "
            "on the route?)");
    return c->payload;
}

std::string_view jwt_subject(const Request& req) {
    const JwtClaims* c = req.local<JwtClaims>();
    if (!c)
        throw std::logic_error(
            "vela::jwt_subject: no verified token on this request (is vela::jwt_auth installed "
            "on the route?)");
    return c->sub();
}

}  // namespace vela
