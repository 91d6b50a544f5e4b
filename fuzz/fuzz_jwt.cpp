// Feeds arbitrary bytes to jwt::verify. The first byte picks the mode:
//
//  * even: the rest is a token, verified against HS256, RS256 and ES256 keys (with and
//    without kid). It must be refused (no input carries a valid signature by chance), with a
//    one-line reason, and leave OpenSSL's error queue empty.
//  * odd: the rest is "header JSON\npayload JSON"; the harness signs them with the HS256
//    secret, so the header and claim checks run on arbitrary JSON. An accepted token must
//    have object header and payload, alg "HS256", and a payload equal to what was signed.
//    Feeding the same bytes with the signature altered must be refused.

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "vela/crypto/crypto.hpp"
#include "vela/json/json.hpp"
#include "vela/middleware/jwt.hpp"

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

constexpr std::string_view kSecret = "fuzz-secret-0123456789abcdefghijklmnop";

std::string public_pem(EVP_PKEY* k) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, k);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string s(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    EVP_PKEY_free(k);
    return s;
}

const vela::JwtOptions& options() {
    static const vela::JwtOptions o = [] {
        vela::JwtOptions o;
        const std::string rsa = public_pem(EVP_RSA_gen(2048));
        const std::string ec = public_pem(EVP_EC_gen("P-256"));
        o.keys = {vela::JwtKey::hs256(kSecret), vela::JwtKey::hs256(kSecret, "h"),
                  vela::JwtKey::rs256(rsa),     vela::JwtKey::rs256(rsa, "r"),
                  vela::JwtKey::es256(ec),      vela::JwtKey::es256(ec, "e")};
        o.audiences = {"a", "b"};
        o.issuers = {"i"};
        o.critical_headers = {"x"};
        o.clock = [] { return std::chrono::system_clock::time_point(std::chrono::seconds(1000)); };
        return o;
    }();
    return o;
}

void check_refused(const vela::JwtResult& r) {
    check(!r.ok());
    check(!r.reason.empty());
    check(r.reason.find('\n') == std::string::npos);
    check(ERR_peek_error() == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
    const vela::JwtOptions& o = options();
    if ((data[0] & 1) == 0) {
        check_refused(vela::jwt::verify(in, o));
        return 0;
    }
    const std::size_t nl = in.find('\n');
    const std::string_view header = in.substr(0, nl);
    const std::string_view payload = nl == std::string_view::npos ? "" : in.substr(nl + 1);
    const std::string input =
        vela::base64url_encode(header) + "." + vela::base64url_encode(payload);
    const vela::crypto::Digest mac = vela::crypto::hmac_sha256(kSecret, input);
    std::string sig(reinterpret_cast<const char*>(mac.data()), mac.size());
    const vela::JwtResult r = vela::jwt::verify(input + "." + vela::base64url_encode(sig), o);
    check(ERR_peek_error() == 0);
    if (r.ok()) {
        check(r.claims.header.is_object() && r.claims.payload.is_object());
        check(r.claims.header["alg"] == vela::json::Value("HS256"));
        check(r.claims.payload == vela::json::parse<vela::json::Value>(payload));
        check(r.reason.empty());
    } else {
        check(!r.reason.empty());
    }
    sig[0] = static_cast<char>(sig[0] ^ 1);
    check_refused(vela::jwt::verify(input + "." + vela::base64url_encode(sig), o));
    return 0;
}
