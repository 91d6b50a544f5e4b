// Tests for src/middleware/jwt.cpp without a server: keys, jwt::sign / jwt::verify, and the
// jwt_auth() before hook called on Requests parsed from raw bytes.
//
// RSA 2048 and P-256 keys are generated here with OpenSSL (nothing is committed). Besides
// tokens from jwt::sign, many are built by hand (header and payload JSON, base64url, an HMAC
// or an EVP signature made here) so that what verify() refuses is exactly what the test says:
// alg "none", algorithm confusion, DER instead of JOSE ECDSA signatures, bad base64url...
#include "vela/middleware/jwt.hpp"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "e2e/process.hpp"
#include "support/parsed_request.hpp"
#include "tls/certs.hpp"
#include "vela/crypto/crypto.hpp"
#include "vela/json/json.hpp"

namespace vela {
namespace {

using json::Value;

constexpr std::int64_t kNow = 1'700'000'000;  // the fixed clock of most tests

// ---- Keys ----------------------------------------------------------------------------------

struct PkeyFree {
    void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

std::string bio_text(BIO* bio) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string s(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return s;
}

std::string public_pem(EVP_PKEY* k) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, k);
    return bio_text(bio);
}

std::string private_pem(EVP_PKEY* k) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, k, nullptr, nullptr, 0, nullptr, nullptr);
    return bio_text(bio);
}

struct KeyPair {
    Pkey pkey;
    std::string pub, priv;
    explicit KeyPair(EVP_PKEY* k) : pkey(k), pub(public_pem(k)), priv(private_pem(k)) {}
};

const KeyPair& rsa() {
    static const KeyPair k(EVP_RSA_gen(2048));
    return k;
}
const KeyPair& rsa2() {  // another RSA key (a rotated one)
    static const KeyPair k(EVP_RSA_gen(2048));
    return k;
}
const KeyPair& ec() {
    static const KeyPair k(EVP_EC_gen("P-256"));
    return k;
}
const KeyPair& ec2() {
    static const KeyPair k(EVP_EC_gen("P-256"));
    return k;
}

const std::string kSecret = "0123456789abcdef0123456789abcdef";  // 32 bytes
const std::string kSecret2 = "another secret of thirty-two b!!";

// ---- Hand-built tokens ---------------------------------------------------------------------

std::string b64(std::string_view s) { return vela::base64url_encode(s); }

std::string hmac(std::string_view key, std::string_view input) {
    const crypto::Digest d = crypto::hmac_sha256(key, input);
    return {reinterpret_cast<const char*>(d.data()), d.size()};
}

// An EVP signature (DER for ECDSA) made here, independent of jwt.cpp.
std::string evp_sign(EVP_PKEY* k, std::string_view input) {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    std::size_t len = 0;
    EXPECT_EQ(EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, k), 1);
    EXPECT_EQ(EVP_DigestSign(ctx, nullptr, &len,
                             reinterpret_cast<const unsigned char*>(input.data()), input.size()),
              1);
    std::string sig(len, '\0');
    EXPECT_EQ(EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                             reinterpret_cast<const unsigned char*>(input.data()), input.size()),
              1);
    sig.resize(len);
    EVP_MD_CTX_free(ctx);
    return sig;
}

// header.payload.HMAC(secret) over the given JSON texts.
std::string hs_token(std::string_view header, std::string_view payload,
                     std::string_view secret = kSecret) {
    const std::string input = b64(header) + "." + b64(payload);
    return input + "." + b64(hmac(secret, input));
}

std::string payload_json(std::int64_t exp = kNow + 3600) {
    return R"({"sub":"alice","exp":)" + std::to_string(exp) + "}";
}

// ---- Options -------------------------------------------------------------------------------

JwtOptions options(std::vector<JwtKey> keys) {
    JwtOptions o;
    o.keys = std::move(keys);
    o.clock = [] { return std::chrono::system_clock::time_point(std::chrono::seconds(kNow)); };
    return o;
}

Value claims(std::int64_t exp = kNow + 3600) {
    return Value::object({{"sub", "alice"}, {"exp", exp}, {"iat", kNow}});
}

JwtError error_of(std::string_view token, const JwtOptions& o) {
    return jwt::verify(token, o).error;
}

// ---- Valid tokens ----------------------------------------------------------------------------

TEST(Jwt, Hs256SignAndVerify) {
    const auto key = JwtSigningKey::hs256(kSecret);
    const std::string token = jwt::sign(claims(), key);
    JwtResult r = jwt::verify(token, options({JwtKey::hs256(kSecret)}));
    ASSERT_TRUE(r.ok()) << r.reason;
    EXPECT_EQ(r.claims.sub(), "alice");
    EXPECT_EQ(r.claims.payload["exp"].as_int64(), kNow + 3600);
    EXPECT_EQ(r.claims.header["alg"].as_string(), "HS256");
    EXPECT_EQ(r.claims.header["typ"].as_string(), "JWT");
    EXPECT_EQ(r.claims.header.find("kid"), nullptr);
    // The same token checked against the signing key's own verification key.
    EXPECT_TRUE(jwt::verify(token, options({key.verification_key()})).ok());
}

TEST(Jwt, Rs256SignAndVerify) {
    const auto key = JwtSigningKey::rs256(rsa().priv, "r1");
    const std::string token = jwt::sign(claims(), key);
    JwtResult r = jwt::verify(token, options({JwtKey::rs256(rsa().pub, "r1")}));
    ASSERT_TRUE(r.ok()) << r.reason;
    EXPECT_EQ(r.claims.sub(), "alice");
    EXPECT_EQ(r.claims.header["kid"].as_string(), "r1");
    EXPECT_EQ(r.claims.header["alg"].as_string(), "RS256");
}

TEST(Jwt, Es256SignAndVerifyWithRawSignature) {
    const auto key = JwtSigningKey::es256(ec().priv);
    for (int i = 0; i < 20; ++i) {  // r or s with leading zero bytes must still be 32 each
        const std::string token =
            jwt::sign(Value::object({{"sub", "bob"}, {"exp", kNow + 60}, {"n", i}}), key);
        const std::string sig = *vela::base64url_decode(token.substr(token.rfind('.') + 1));
        EXPECT_EQ(sig.size(), 64u);
        JwtResult r = jwt::verify(token, options({JwtKey::es256(ec().pub)}));
        ASSERT_TRUE(r.ok()) << r.reason;
        EXPECT_EQ(r.claims.sub(), "bob");
    }
}

TEST(Jwt, HandBuiltTokensVerify) {
    // HS256 by hand.
    EXPECT_TRUE(jwt::verify(hs_token(R"({"alg":"HS256"})", payload_json()),
                            options({JwtKey::hs256(kSecret)}))
                    .ok());
    // RS256 by hand, signed with OpenSSL here.
    const std::string input = b64(R"({"alg":"RS256","typ":"JWT"})") + "." + b64(payload_json());
    const std::string rs = input + "." + b64(evp_sign(rsa().pkey.get(), input));
    JwtResult r = jwt::verify(rs, options({JwtKey::rs256(rsa().pub)}));
    EXPECT_TRUE(r.ok()) << r.reason;
}

TEST(Jwt, KeysFromCertificates) {
    const auto& certs = test::test_certs();
    auto read = [](const std::string& path) {
        std::ifstream f(path);
        std::stringstream s;
        s << f.rdbuf();
        return s.str();
    };
    const JwtKey ec_key = JwtKey::es256(read(certs.server_ec_cert));
    const JwtKey rsa_key = JwtKey::rs256(read(certs.server_rsa_cert));
    const std::string ec_token =
        jwt::sign(claims(), JwtSigningKey::es256(read(certs.server_ec_key)));
    const std::string rsa_token =
        jwt::sign(claims(), JwtSigningKey::rs256(read(certs.server_rsa_key)));
    EXPECT_TRUE(jwt::verify(ec_token, options({ec_key})).ok());
    EXPECT_TRUE(jwt::verify(rsa_token, options({rsa_key})).ok());
    EXPECT_THROW(JwtKey::rs256(read(certs.server_ec_cert)), std::invalid_argument);
}

// ---- Keys ----------------------------------------------------------------------------------

// The message of the std::invalid_argument `f` throws ("" if it throws none).
template <class F>
std::string thrown(F f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return {};
}

TEST(JwtKeys, BadKeysAreRefusedAtConstruction) {
    EXPECT_NE(thrown([] { JwtKey::hs256("short"); }).find("at least 32"), std::string::npos);
    EXPECT_NE(thrown([] { JwtSigningKey::hs256(std::string(31, 'x')); }), "");
    EXPECT_NO_THROW(JwtKey::hs256(std::string(32, 'x')));

    EXPECT_NE(thrown([] { JwtKey::rs256("not a pem"); }).find("JwtKey::rs256"), std::string::npos);
    EXPECT_NE(thrown([] { JwtKey::rs256(ec().pub); }).find("not an RSA key"), std::string::npos);
    EXPECT_NE(thrown([] { JwtKey::rs256(rsa().priv); }), "");  // private keys go to JwtSigningKey
    EXPECT_NE(thrown([] { JwtKey::es256(rsa().pub); }).find("not an EC key"), std::string::npos);
    EXPECT_NE(thrown([] { JwtKey::es256(""); }), "");
    EXPECT_NE(thrown([] { JwtSigningKey::rs256(rsa().pub); }), "");
    EXPECT_NE(thrown([] { JwtSigningKey::rs256(ec().priv); }), "");
    EXPECT_NE(thrown([] { JwtSigningKey::es256(rsa().priv); }), "");
    EXPECT_NE(thrown([] { JwtSigningKey::es256("-----BEGIN PRIVATE KEY-----\nAAAA\n"); }), "");

    Pkey small(EVP_RSA_gen(1024));
    EXPECT_NE(thrown([&] { JwtKey::rs256(public_pem(small.get())); }).find("2048"),
              std::string::npos);
    Pkey p384(EVP_EC_gen("P-384"));
    EXPECT_NE(thrown([&] { JwtKey::es256(public_pem(p384.get())); }).find("P-256"),
              std::string::npos);
    EXPECT_NE(thrown([&] { JwtSigningKey::es256(private_pem(p384.get())); }), "");

    // An encrypted private key is refused, not prompted for.
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, ec().pkey.get(), EVP_aes_256_cbc(),
                             reinterpret_cast<const unsigned char*>("pass"), 4, nullptr, nullptr);
    const std::string encrypted = bio_text(bio);
    EXPECT_NE(thrown([&] { JwtSigningKey::es256(encrypted); }), "");
    EXPECT_EQ(ERR_peek_error(), 0u) << "OpenSSL's error queue left dirty";
}

TEST(JwtKeys, Pkcs1RsaPublicKeyPem) {
    // "BEGIN RSA PUBLIC KEY" from the openssl CLI (PEM_write_bio_RSAPublicKey is deprecated).
    const std::string pkcs1 = e2e::shell("printf '%s' '" + rsa().pub +
                                         "' | openssl rsa -pubin -RSAPublicKey_out 2>/dev/null");
    if (pkcs1.find("BEGIN RSA PUBLIC KEY") == std::string::npos) GTEST_SKIP() << "no openssl CLI";
    const JwtKey key = JwtKey::rs256(pkcs1);
    EXPECT_TRUE(
        jwt::verify(jwt::sign(claims(), JwtSigningKey::rs256(rsa().priv)), options({key})).ok());
}

// ---- Signatures ----------------------------------------------------------------------------

// `token` with one character of its signature changed (in the middle, so the base64url stays
// canonical).
std::string tamper_signature(std::string token) {
    const std::size_t i = token.rfind('.') + 5;
    token[i] = token[i] == 'A' ? 'B' : 'A';
    return token;
}

TEST(JwtSignature, WrongSignatureIsRefused) {
    const std::vector<std::pair<JwtSigningKey, JwtKey>> pairs = {
        {JwtSigningKey::hs256(kSecret), JwtKey::hs256(kSecret)},
        {JwtSigningKey::rs256(rsa().priv), JwtKey::rs256(rsa().pub)},
        {JwtSigningKey::es256(ec().priv), JwtKey::es256(ec().pub)},
    };
    for (const auto& [signer, verifier] : pairs) {
        const std::string token = jwt::sign(claims(), signer);
        const JwtOptions o = options({verifier});
        ASSERT_TRUE(jwt::verify(token, o).ok());
        EXPECT_EQ(error_of(tamper_signature(token), o), JwtError::bad_signature);
        // The payload changed under the same signature.
        const std::size_t d1 = token.find('.'), d2 = token.rfind('.');
        const std::string forged =
            token.substr(0, d1 + 1) +
            b64(R"({"sub":"mallory","exp":)" + std::to_string(kNow + 3600) + "}") +
            token.substr(d2);
        EXPECT_EQ(error_of(forged, o), JwtError::bad_signature);
        // No signature at all.
        EXPECT_EQ(error_of(token.substr(0, d2 + 1), o), JwtError::bad_signature);
    }
    // Signed by another key of the same algorithm.
    EXPECT_EQ(error_of(jwt::sign(claims(), JwtSigningKey::hs256(kSecret2)),
                       options({JwtKey::hs256(kSecret)})),
              JwtError::bad_signature);
    EXPECT_EQ(error_of(jwt::sign(claims(), JwtSigningKey::rs256(rsa2().priv)),
                       options({JwtKey::rs256(rsa().pub)})),
              JwtError::bad_signature);
    EXPECT_EQ(error_of(jwt::sign(claims(), JwtSigningKey::es256(ec2().priv)),
                       options({JwtKey::es256(ec().pub)})),
              JwtError::bad_signature);
    EXPECT_EQ(ERR_peek_error(), 0u) << "OpenSSL's error queue left dirty";
}

TEST(JwtSignature, AlgNoneIsRefused) {
    const JwtOptions o = options({JwtKey::hs256(kSecret), JwtKey::rs256(rsa().pub)});
    for (std::string_view alg : {"none", "None", "NONE", "nOnE"}) {
        const std::string header = R"({"alg":")" + std::string(alg) + R"(","typ":"JWT"})";
        const std::string unsigned_token = b64(header) + "." + b64(payload_json()) + ".";
        EXPECT_EQ(error_of(unsigned_token, o), JwtError::unsupported_algorithm) << alg;
        // Even with some signature attached.
        EXPECT_EQ(error_of(hs_token(header, payload_json()), o), JwtError::unsupported_algorithm)
            << alg;
    }
}

TEST(JwtSignature, OtherAlgorithmsAreRefused) {
    const JwtOptions o = options({JwtKey::hs256(kSecret)});
    for (std::string_view alg :
         {"HS384", "HS512", "RS384", "PS256", "ES384", "ES256K", "EdDSA", "hs256", "HS256 ", ""}) {
        const std::string header = R"({"alg":")" + std::string(alg) + R"("})";
        EXPECT_EQ(error_of(hs_token(header, payload_json()), o), JwtError::unsupported_algorithm)
            << alg;
    }
    EXPECT_EQ(error_of(hs_token(R"({"typ":"JWT"})", payload_json()), o), JwtError::malformed);
    EXPECT_EQ(error_of(hs_token(R"({"alg":256})", payload_json()), o), JwtError::malformed);
    EXPECT_EQ(error_of(hs_token(R"({"alg":null})", payload_json()), o), JwtError::malformed);
}

TEST(JwtSignature, AlgorithmConfusionIsRefused) {
    // The classic attack: an HS256 token whose HMAC key is the RSA public key PEM, sent to a
    // service that verifies RS256 with that public key.
    const JwtOptions o = options({JwtKey::rs256(rsa().pub)});
    for (const std::string& secret : {rsa().pub, rsa().pub.substr(0, rsa().pub.size() - 1)}) {
        const std::string forged =
            hs_token(R"({"alg":"HS256","typ":"JWT"})", payload_json(), secret);
        JwtResult r = jwt::verify(forged, o);
        EXPECT_EQ(r.error, JwtError::unsupported_algorithm) << r.reason;
    }
    // The same with a kid naming the RSA key.
    const JwtOptions with_kid = options({JwtKey::rs256(rsa().pub, "k")});
    EXPECT_EQ(
        error_of(hs_token(R"({"alg":"HS256","kid":"k"})", payload_json(), rsa().pub), with_kid),
        JwtError::unsupported_algorithm);
    // ES256 token for an RS256 key and the reverse.
    EXPECT_EQ(error_of(jwt::sign(claims(), JwtSigningKey::es256(ec().priv)), o),
              JwtError::unsupported_algorithm);
    EXPECT_EQ(error_of(jwt::sign(claims(), JwtSigningKey::rs256(rsa().priv)),
                       options({JwtKey::es256(ec().pub)})),
              JwtError::unsupported_algorithm);
    // An RS256 header over an ECDSA signature with an EC key configured as ES256.
    const std::string input = b64(R"({"alg":"RS256"})") + "." + b64(payload_json());
    EXPECT_EQ(error_of(input + "." + b64(evp_sign(ec().pkey.get(), input)),
                       options({JwtKey::es256(ec().pub)})),
              JwtError::unsupported_algorithm);
}

TEST(JwtSignature, Es256DerSignatureIsRefused) {
    const JwtOptions o = options({JwtKey::es256(ec().pub)});
    const std::string input = b64(R"({"alg":"ES256"})") + "." + b64(payload_json());
    const std::string der = evp_sign(ec().pkey.get(), input);  // ASN.1 DER, 70-72 bytes
    EXPECT_EQ(error_of(input + "." + b64(der), o), JwtError::bad_signature);

    // The same signature in JOSE form (r||s) passes: the refusal is about the form only.
    const auto* p = reinterpret_cast<const unsigned char*>(der.data());
    ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
    ASSERT_NE(sig, nullptr);
    unsigned char raw[64];
    BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + 32, 32);
    ECDSA_SIG_free(sig);
    const std::string jose(reinterpret_cast<const char*>(raw), 64);
    EXPECT_TRUE(jwt::verify(input + "." + b64(jose), o).ok());
    // Wrong lengths.
    EXPECT_EQ(error_of(input + "." + b64(jose.substr(1)), o), JwtError::bad_signature);
    EXPECT_EQ(error_of(input + "." + b64(jose + "x"), o), JwtError::bad_signature);
    EXPECT_EQ(error_of(input + "." + b64(std::string(64, '\0')), o), JwtError::bad_signature);
    EXPECT_EQ(error_of(input + "." + b64(std::string(64, '\xff')), o), JwtError::bad_signature);
    EXPECT_EQ(ERR_peek_error(), 0u) << "OpenSSL's error queue left dirty";
}

TEST(JwtSignature, Rs256WrongLengthSignatureIsRefused) {
    const JwtOptions o = options({JwtKey::rs256(rsa().pub)});
    const std::string token = jwt::sign(claims(), JwtSigningKey::rs256(rsa().priv));
    const std::string input = token.substr(0, token.rfind('.'));
    const std::string sig = *vela::base64url_decode(token.substr(token.rfind('.') + 1));
    EXPECT_EQ(error_of(input + "." + b64(sig.substr(1)), o), JwtError::bad_signature);
    EXPECT_EQ(error_of(input + "." + b64(std::string(1, '\0') + sig), o), JwtError::bad_signature);
}

// ---- Key selection ---------------------------------------------------------------------------

TEST(JwtKeySelection, KidSelectsTheKey) {
    const JwtOptions o = options({JwtKey::hs256(kSecret, "a"), JwtKey::hs256(kSecret2, "b"),
                                  JwtKey::rs256(rsa().pub, "r1"), JwtKey::rs256(rsa2().pub, "r2"),
                                  JwtKey::es256(ec().pub, "e")});
    EXPECT_TRUE(jwt::verify(jwt::sign(claims(), JwtSigningKey::hs256(kSecret, "a")), o).ok());
    EXPECT_TRUE(jwt::verify(jwt::sign(claims(), JwtSigningKey::hs256(kSecret2, "b")), o).ok());
    EXPECT_TRUE(jwt::verify(jwt::sign(claims(), JwtSigningKey::rs256(rsa2().priv, "r2")), o).ok());
    EXPECT_TRUE(jwt::verify(jwt::sign(claims(), JwtSigningKey::es256(ec().priv, "e")), o).ok());
    // The kid names a key that did not sign it.
    EXPECT_EQ(error_of(jwt::sign(claims(), JwtSigningKey::hs256(kSecret2, "a")), o),
              JwtError::bad_signature);
    EXPECT_EQ(error_of(jwt::sign(claims(), JwtSigningKey::rs256(rsa2().priv, "r1")), o),
              JwtError::bad_signature);
    // An unknown kid.
    EXPECT_EQ(error_of(jwt::sign(claims(), JwtSigningKey::hs256(kSecret, "zzz")), o),
              JwtError::unknown_key);
    // A kid naming a key of another algorithm.
    EXPECT_EQ(error_of(jwt::sign(claims(), JwtSigningKey::hs256(kSecret, "r1")), o),
              JwtError::unsupported_algorithm);
    // A kid that is not a string.
    EXPECT_EQ(error_of(hs_token(R"({"alg":"HS256","kid":1})", payload_json()), o),
              JwtError::malformed);
}

TEST(JwtKeySelection, WithoutKidEveryKeyOfTheAlgorithmIsTried) {
    const JwtOptions o = options({JwtKey::hs256(kSecret, "a"), JwtKey::hs256(kSecret2, "b"),
                                  JwtKey::rs256(rsa().pub), JwtKey::rs256(rsa2().pub)});
    EXPECT_TRUE(jwt::verify(jwt::sign(claims(), JwtSigningKey::hs256(kSecret2)), o).ok());
    EXPECT_TRUE(jwt::verify(jwt::sign(claims(), JwtSigningKey::rs256(rsa2().priv)), o).ok());
    EXPECT_EQ(error_of(jwt::sign(claims(), JwtSigningKey::es256(ec().priv)), o),
              JwtError::unsupported_algorithm);
    // A token with a kid while the configured keys have none: the kid-less keys are tried.
    const JwtOptions no_kids = options({JwtKey::hs256(kSecret)});
    EXPECT_TRUE(jwt::verify(jwt::sign(claims(), JwtSigningKey::hs256(kSecret, "x")), no_kids).ok());
}

// ---- Claims --------------------------------------------------------------------------------

std::string hs(const Value& payload) { return jwt::sign(payload, JwtSigningKey::hs256(kSecret)); }

TEST(JwtClaimsCheck, ExpiryWithLeeway) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});  // leeway 60 s
    EXPECT_TRUE(jwt::verify(hs(claims(kNow + 1)), o).ok());
    EXPECT_TRUE(jwt::verify(hs(claims(kNow - 59)), o).ok());
    EXPECT_EQ(jwt::verify(hs(claims(kNow - 60)), o).error, JwtError::expired);
    EXPECT_EQ(jwt::verify(hs(claims(kNow - 3600)), o).reason, "token expired");
    o.leeway = std::chrono::seconds(0);
    EXPECT_EQ(error_of(hs(claims(kNow)), o), JwtError::expired);  // exp must be after now
    EXPECT_TRUE(jwt::verify(hs(claims(kNow + 1)), o).ok());
    // Fractional NumericDate.
    EXPECT_TRUE(jwt::verify(hs(Value::object({{"exp", double(kNow) + 0.5}})), o).ok());
    EXPECT_EQ(error_of(hs(Value::object({{"exp", double(kNow) - 0.5}})), o), JwtError::expired);
}

TEST(JwtClaimsCheck, NotBeforeAndIssuedAt) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});
    auto with = [](std::string_view name, std::int64_t t) {
        Value v = claims();
        v.set(name, t);
        return hs(v);
    };
    EXPECT_TRUE(jwt::verify(with("nbf", kNow + 60), o).ok());
    EXPECT_EQ(error_of(with("nbf", kNow + 61), o), JwtError::not_yet_valid);
    EXPECT_TRUE(jwt::verify(with("iat", kNow + 60), o).ok());
    EXPECT_EQ(error_of(with("iat", kNow + 61), o), JwtError::issued_in_future);
    EXPECT_TRUE(jwt::verify(with("iat", kNow - 100000), o).ok());
    o.leeway = std::chrono::seconds(0);
    EXPECT_TRUE(jwt::verify(with("nbf", kNow), o).ok());
    EXPECT_EQ(error_of(with("nbf", kNow + 1), o), JwtError::not_yet_valid);
    EXPECT_EQ(error_of(with("iat", kNow + 1), o), JwtError::issued_in_future);
}

TEST(JwtClaimsCheck, TimeClaimsMustBeNumbers) {
    const JwtOptions o = options({JwtKey::hs256(kSecret)});
    for (std::string_view name : {"exp", "nbf", "iat"}) {
        Value v = claims();
        v.set(name, std::to_string(kNow + 10));
        EXPECT_EQ(error_of(hs(v), o), JwtError::bad_claim) << name;
        v.set(name, nullptr);
        EXPECT_EQ(error_of(hs(v), o), JwtError::bad_claim) << name;
    }
}

TEST(JwtClaimsCheck, ExpIsRequiredByDefault) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});
    const std::string token = hs(Value::object({{"sub", "alice"}}));
    EXPECT_EQ(error_of(token, o), JwtError::missing_claim);
    o.require_exp = false;
    EXPECT_TRUE(jwt::verify(token, o).ok());
}

TEST(JwtClaimsCheck, Issuer) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});
    o.issuers = {"https://a.example", "https://b.example"};
    auto iss = [](Value v) {
        Value c = claims();
        c.set("iss", std::move(v));
        return hs(c);
    };
    EXPECT_TRUE(jwt::verify(iss("https://b.example"), o).ok());
    EXPECT_EQ(error_of(iss("https://c.example"), o), JwtError::bad_issuer);
    EXPECT_EQ(error_of(iss("https://a.example/"), o), JwtError::bad_issuer);  // exact match
    EXPECT_EQ(error_of(iss(Value::array({"https://a.example"})), o), JwtError::bad_issuer);
    EXPECT_EQ(error_of(hs(claims()), o), JwtError::bad_issuer);  // missing
    o.issuers.clear();
    EXPECT_TRUE(jwt::verify(iss("anyone"), o).ok());
}

TEST(JwtClaimsCheck, Audience) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});
    auto aud = [](Value v) {
        Value c = claims();
        c.set("aud", std::move(v));
        return hs(c);
    };
    // Without configured audiences: no aud passes, any aud is refused (RFC 7519 4.1.3).
    EXPECT_TRUE(jwt::verify(hs(claims()), o).ok());
    EXPECT_EQ(error_of(aud("orders"), o), JwtError::bad_audience);

    o.audiences = {"orders", "billing"};
    EXPECT_TRUE(jwt::verify(aud("orders"), o).ok());
    EXPECT_TRUE(jwt::verify(aud(Value::array({"other", "billing"})), o).ok());
    EXPECT_EQ(error_of(aud("other"), o), JwtError::bad_audience);
    EXPECT_EQ(error_of(aud(Value::array({"other"})), o), JwtError::bad_audience);
    EXPECT_EQ(error_of(aud(Value::array({})), o), JwtError::bad_audience);
    EXPECT_EQ(error_of(hs(claims()), o), JwtError::bad_audience);  // required once configured
    EXPECT_EQ(error_of(aud(Value::array({"orders", 1})), o), JwtError::bad_claim);
    EXPECT_EQ(error_of(aud(42), o), JwtError::bad_claim);
    EXPECT_EQ(error_of(aud("Orders"), o), JwtError::bad_audience);  // case-sensitive
}

TEST(JwtClaimsCheck, RequiredClaims) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});
    o.required_claims = {"sub", "jti"};
    EXPECT_EQ(jwt::verify(hs(claims()), o).reason, "token has no jti claim");
    Value c = claims();
    c.set("jti", "id-1");
    EXPECT_TRUE(jwt::verify(hs(c), o).ok());
}

TEST(JwtClaimsCheck, TypeHeader) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});
    o.type = "at+jwt";
    const auto key = JwtSigningKey::hs256(kSecret);
    EXPECT_TRUE(jwt::verify(jwt::sign(claims(), key, Value::object({{"typ", "at+jwt"}})), o).ok());
    EXPECT_TRUE(
        jwt::verify(jwt::sign(claims(), key, Value::object({{"typ", "application/AT+JWT"}})), o)
            .ok());
    EXPECT_EQ(error_of(jwt::sign(claims(), key), o), JwtError::bad_type);  // typ "JWT"
    EXPECT_EQ(error_of(jwt::sign(claims(), key, Value::object()), o), JwtError::bad_type);
}

TEST(JwtClaimsCheck, CriticalHeaders) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});
    const auto key = JwtSigningKey::hs256(kSecret);
    const std::string crit =
        jwt::sign(claims(), key, Value::object({{"crit", Value::array({"x-ext"})}, {"x-ext", 1}}));
    EXPECT_EQ(error_of(crit, o), JwtError::unsupported_critical);
    o.critical_headers = {"x-ext"};
    EXPECT_TRUE(jwt::verify(crit, o).ok());
    // Listed but absent from the header, empty, or not a list.
    EXPECT_EQ(
        error_of(jwt::sign(claims(), key, Value::object({{"crit", Value::array({"x-ext"})}})), o),
        JwtError::unsupported_critical);
    EXPECT_EQ(error_of(jwt::sign(claims(), key, Value::object({{"crit", Value::array({})}})), o),
              JwtError::malformed);
    EXPECT_EQ(
        error_of(jwt::sign(claims(), key, Value::object({{"crit", "x-ext"}, {"x-ext", 1}})), o),
        JwtError::malformed);
    // RFC 7797's b64 is not understood.
    EXPECT_EQ(error_of(jwt::sign(claims(), key,
                                 Value::object({{"crit", Value::array({"b64"})}, {"b64", false}})),
                       o),
              JwtError::unsupported_critical);
}

TEST(JwtClaimsCheck, ScopesAccessors) {
    JwtClaims c;
    c.payload = Value::object({{"scope", "read  write"}, {"scp", Value::array({"admin", 3})}});
    EXPECT_EQ(c.scopes(), (std::vector<std::string_view>{"read", "write", "admin"}));
    EXPECT_TRUE(c.has_scope("write"));
    EXPECT_FALSE(c.has_scope("rea"));
    c.payload = Value::object({{"scp", "a b"}, {"sub", 5}});
    EXPECT_EQ(c.scopes(), (std::vector<std::string_view>{"a", "b"}));
    EXPECT_EQ(c.sub(), "");
    EXPECT_EQ(c.string("scp"), "a b");
    EXPECT_EQ(c.string("nope"), std::nullopt);
}

// ---- Malformed tokens ------------------------------------------------------------------------

TEST(JwtMalformed, Table) {
    const JwtOptions o = options({JwtKey::hs256(kSecret)});
    const std::string good = hs(claims());
    const std::size_t d1 = good.find('.'), d2 = good.rfind('.');
    const std::string h = good.substr(0, d1), p = good.substr(d1 + 1, d2 - d1 - 1),
                      s = good.substr(d2 + 1);
    struct Case {
        std::string name, token;
    };
    const std::vector<Case> cases = {
        {"empty", ""},
        {"one part", h},
        {"two parts", h + "." + p},
        {"four parts", good + "." + s},
        {"dots only", ".."},
        {"empty header", "." + p + "." + s},
        {"padding", h + "." + p + "==." + s},
        {"standard base64 +", h + "." + p + "." + s.substr(0, 10) + "+" + s.substr(11)},
        {"standard base64 /", h + "." + p + "." + s.substr(0, 10) + "/" + s.substr(11)},
        {"space", h + "." + p + " ." + s},
        {"impossible length", h + "." + p + "." + s + "AA"},
        {"non-canonical trailing bits",
         h + "." + p + "." + s.substr(0, s.size() - 1) + (s.back() == 'B' ? "C" : "B")},
        {"leading whitespace", " " + good},
        {"trailing newline", good + "\n"},
        {"header not JSON", hs_token("{alg:HS256}", payload_json())},
        {"header an array", hs_token(R"(["HS256"])", payload_json())},
        {"header a string", hs_token(R"("HS256")", payload_json())},
        {"header trailing garbage", hs_token(R"({"alg":"HS256"}x)", payload_json())},
        {"payload an array", hs_token(R"({"alg":"HS256"})", R"([1,2])")},
        {"payload a number", hs_token(R"({"alg":"HS256"})", "1700000000")},
        {"payload not JSON", hs_token(R"({"alg":"HS256"})", "sub=alice")},
        {"payload empty", hs_token(R"({"alg":"HS256"})", "")},
        {"payload too deep",
         hs_token(R"({"alg":"HS256"})", std::string(200, '[') + std::string(200, ']'))},
        {"huge token", hs_token(R"({"alg":"HS256"})",
                                R"({"exp":1800000000,"pad":")" + std::string(9000, 'x') + "\"}")},
    };
    for (const Case& c : cases) {
        JwtResult r = jwt::verify(c.token, o);
        EXPECT_EQ(r.error, JwtError::malformed) << c.name << ": " << r.reason;
        EXPECT_FALSE(r.reason.empty()) << c.name;
        EXPECT_EQ(r.reason.find('"'), std::string::npos) << c.name;
    }
    // The size limit is an option.
    JwtOptions big = o;
    big.max_token_size = 64 * 1024;
    EXPECT_TRUE(jwt::verify(cases.back().token, big).ok());
    EXPECT_EQ(jwt::verify(cases.back().token, o).reason, "token longer than 8192 bytes");
}

TEST(JwtMalformed, FailuresAreNotExceptions) {
    // Bytes of every kind in every part must give an error, never an exception or a crash.
    const JwtOptions o =
        options({JwtKey::hs256(kSecret), JwtKey::rs256(rsa().pub), JwtKey::es256(ec().pub)});
    const std::vector<std::string> headers = {R"({"alg":"HS256"})", R"({"alg":"RS256"})",
                                              R"({"alg":"ES256"})", R"({"alg":"ES256","kid":""})"};
    for (const std::string& hd : headers)
        for (int len : {0, 1, 31, 32, 33, 63, 64, 65, 255, 256, 257})
            EXPECT_NO_THROW({
                JwtResult r = jwt::verify(
                    b64(hd) + "." + b64(payload_json()) + "." + b64(std::string(len, '\x01')), o);
                EXPECT_FALSE(r.ok());
            });
    EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST(Jwt, VerifyWithoutKeysThrows) {
    EXPECT_THROW(jwt::verify("a.b.c", JwtOptions{}), std::invalid_argument);
    EXPECT_THROW(jwt::sign(Value::array({1}), JwtSigningKey::hs256(kSecret)),
                 std::invalid_argument);
    EXPECT_THROW(jwt_auth(JwtOptions{}), std::invalid_argument);
}

// ---- The middleware, called directly -----------------------------------------------------------

using Parsed = test::ParsedRequest;

std::string get(std::string_view extra = {}, std::string_view target = "/x") {
    return test::request_head(extra, target);
}

TEST(JwtAuth, ValidTokenStoresTheClaims) {
    auto mw = jwt_auth(options({JwtKey::hs256(kSecret)}));
    Parsed p(get("Authorization: Bearer " + hs(claims()) + "\r\n"));
    EXPECT_THROW(jwt_claims(p.req), std::logic_error);
    EXPECT_THROW(jwt_subject(p.req), std::logic_error);
    EXPECT_EQ(mw(p.req), std::nullopt);
    EXPECT_EQ(jwt_claims(p.req)["sub"].as_string(), "alice");
    EXPECT_EQ(jwt_subject(p.req), "alice");
    Response err;
    auto c = JwtClaims::from_request(p.req, err);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->sub(), "alice");
    // The scheme is case-insensitive and may be followed by several spaces.
    for (std::string_view scheme : {"bearer ", "BEARER ", "Bearer   "}) {
        Parsed q(get("Authorization: " + std::string(scheme) + hs(claims()) + "\r\n"));
        EXPECT_EQ(mw(q.req), std::nullopt) << scheme;
    }
}

TEST(JwtAuth, FromRequestWithoutMiddlewareIs500) {
    Parsed p(get());
    Response err;
    EXPECT_FALSE(JwtClaims::from_request(p.req, err));
    EXPECT_EQ(err.status(), Status::InternalServerError);
}

TEST(JwtAuth, MissingTokenIsAChallengeWithoutError) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});
    o.realm = "orders";
    auto mw = jwt_auth(o);
    for (std::string_view extra : {"", "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l\r\n",
                                   "Authorization: Bearerx abc\r\n"}) {
        Parsed p(get(extra));
        auto r = mw(p.req);
        ASSERT_TRUE(r) << extra;
        EXPECT_EQ(r->status(), Status::Unauthorized);
        EXPECT_EQ(r->header("WWW-Authenticate"), "Bearer realm=\"orders\"");
        EXPECT_EQ(r->content_type(), "application/problem+json");
        EXPECT_EQ(p.req.local<JwtClaims>(), nullptr);
    }
}

TEST(JwtAuth, InvalidTokenIs401InvalidToken) {
    auto mw = jwt_auth(options({JwtKey::hs256(kSecret)}));
    Parsed p(get("Authorization: Bearer " + hs(claims(kNow - 3600)) + "\r\n"));
    auto r = mw(p.req);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status(), Status::Unauthorized);
    EXPECT_EQ(r->header("WWW-Authenticate"),
              "Bearer realm=\"api\", error=\"invalid_token\", error_description=\"token expired\"");
    EXPECT_EQ(p.req.local<JwtClaims>(), nullptr);

    Parsed bad(get("Authorization: Bearer abc.def\r\n"));
    r = mw(bad.req);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status(), Status::Unauthorized);
    EXPECT_NE(r->header("WWW-Authenticate").find("error=\"invalid_token\""), std::string::npos);
}

TEST(JwtAuth, EmptyBearerIs400InvalidRequest) {
    auto mw = jwt_auth(options({JwtKey::hs256(kSecret)}));
    for (std::string_view extra : {"Authorization: Bearer\r\n", "Authorization: Bearer a b\r\n"}) {
        Parsed p(get(extra));
        auto r = mw(p.req);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status(), Status::BadRequest) << extra;
        EXPECT_NE(r->header("WWW-Authenticate").find("error=\"invalid_request\""),
                  std::string::npos);
    }
}

TEST(JwtAuth, Scopes) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});
    o.required_scopes = {"orders:read", "orders:write"};
    auto mw = jwt_auth(o);
    Value c = claims();
    c.set("scope", "orders:read profile");
    Parsed p(get("Authorization: Bearer " + hs(c) + "\r\n"));
    auto r = mw(p.req);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status(), Status::Forbidden);
    EXPECT_EQ(r->header("WWW-Authenticate"),
              "Bearer realm=\"api\", error=\"insufficient_scope\", error_description=\"the token "
              "lacks a required scope\", scope=\"orders:read orders:write\"");
    c.set("scope", "orders:write orders:read");
    Parsed ok(get("Authorization: Bearer " + hs(c) + "\r\n"));
    EXPECT_EQ(mw(ok.req), std::nullopt);
    c.set("scope", nullptr);
    c.set("scp", Value::array({"orders:write", "orders:read"}));
    Parsed scp(get("Authorization: Bearer " + hs(c) + "\r\n"));
    EXPECT_EQ(mw(scp.req), std::nullopt);

    o.required_scopes = {"two words"};
    EXPECT_THROW(jwt_auth(o), std::invalid_argument);
    o.required_scopes = {"q\"uote"};
    EXPECT_THROW(jwt_auth(o), std::invalid_argument);
    o.required_scopes = {};
    o.realm = "a\"b";
    EXPECT_THROW(jwt_auth(o), std::invalid_argument);
}

TEST(JwtAuth, CookieAndQueryParameterAreOptIn) {
    const std::string token = hs(claims());
    auto header_only = jwt_auth(options({JwtKey::hs256(kSecret)}));
    Parsed c1(get("Cookie: access_token=" + token + "\r\n"));
    EXPECT_EQ(header_only(c1.req)->status(), Status::Unauthorized);
    Parsed q1(get({}, "/x?access_token=" + token));
    EXPECT_EQ(header_only(q1.req)->status(), Status::Unauthorized);

    JwtOptions o = options({JwtKey::hs256(kSecret)});
    o.cookie = "access_token";
    o.query_parameter = "access_token";
    auto both = jwt_auth(o);
    Parsed c2(get("Cookie: theme=dark; access_token=" + token + "\r\n"));
    EXPECT_EQ(both(c2.req), std::nullopt);
    EXPECT_EQ(jwt_subject(c2.req), "alice");
    Parsed q2(get({}, "/x?a=1&access_token=" + token));
    EXPECT_EQ(both(q2.req), std::nullopt);
    EXPECT_EQ(jwt_subject(q2.req), "alice");
    // The header wins over a bad cookie.
    Parsed h(get("Authorization: Bearer " + token + "\r\nCookie: access_token=junk\r\n"));
    EXPECT_EQ(both(h.req), std::nullopt);
    Parsed junk(get("Cookie: access_token=junk\r\n"));
    EXPECT_EQ(both(junk.req)->status(), Status::Unauthorized);
}

TEST(JwtAuth, DescriptionCannotBreakTheHeader) {
    JwtOptions o = options({JwtKey::hs256(kSecret)});
    o.required_claims = {"we\"ird\\claim"};
    auto mw = jwt_auth(o);
    Parsed p(get("Authorization: Bearer " + hs(claims()) + "\r\n"));
    auto r = mw(p.req);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header("WWW-Authenticate"),
              "Bearer realm=\"api\", error=\"invalid_token\", error_description=\"token has no "
              "we?ird?claim claim\"");
}

}  // namespace
}  // namespace vela
