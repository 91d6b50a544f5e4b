// Tests for src/crypto/crypto.cpp: known-answer vectors from the RFCs (FIPS
// 180-2 SHA-256 "abc", RFC 4231 HMAC-SHA256, RFC 5869 HKDF) and tampering tables for
// aes_gcm_open.
#include "vela/crypto/crypto.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "vela/base/hex.hpp"

namespace vela::crypto {
namespace {

std::string hex(std::string_view s) { return hex_encode(s); }
std::string hex(const Digest& d) {
    return hex_encode({reinterpret_cast<const char*>(d.data()), d.size()});
}

// The test vectors' bytes (written in hex in the RFCs).
std::string unhex(std::string_view h) { return hex_decode(h).value(); }

TEST(Crypto, Sha256KnownAnswers) {
    EXPECT_EQ(hex(sha256("abc")),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

// RFC 4231 section 4, the HMAC-SHA-256 lines (case 5, a truncated output, is left out).
struct HmacCase {
    std::string key, data;
    std::string_view mac;
};

TEST(Crypto, HmacSha256Rfc4231) {
    const HmacCase cases[] = {
        {std::string(20, '\x0b'), "Hi There",
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        {"Jefe", "what do ya want for nothing?",
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        {std::string(20, '\xaa'), std::string(50, '\xdd'),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
        {unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"), std::string(50, '\xcd'),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
        {std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        {std::string(131, '\xaa'),
         "This is a test using a larger than block-size key and a larger than block-size "
         "data. The key needs to be hashed before being used by the HMAC algorithm.",
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
    };
    for (std::size_t i = 0; i < std::size(cases); ++i)
        EXPECT_EQ(hex(hmac_sha256(cases[i].key, cases[i].data)), cases[i].mac) << "case " << i + 1;
}

TEST(Crypto, PreparedHmacMatchesOneShot) {
    const HmacSha256 jefe("Jefe");
    EXPECT_EQ(hex(jefe.mac({"what do ya want for nothing?"})),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // Parts are concatenated; the key survives many uses and copies.
    EXPECT_EQ(jefe.mac({"what do ya ", "", "want for nothing?"}),
              hmac_sha256("Jefe", "what do ya want for nothing?"));
    HmacSha256 copy = jefe;
    EXPECT_EQ(copy.mac({"x"}), hmac_sha256("Jefe", "x"));
    HmacSha256 other(std::string(131, '\xaa'));
    other = jefe;
    EXPECT_EQ(other.mac({}), hmac_sha256("Jefe", ""));
    EXPECT_EQ(HmacSha256("").mac({}), hmac_sha256("", ""));
}

TEST(Crypto, PreparedHmacFromSeveralThreads) {
    const HmacSha256 key(std::string(32, 'k'));
    const Digest want = hmac_sha256(std::string(32, 'k'), "message");
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 2000; ++i)
                if (key.mac({"mess", "age"}) != want) ++wrong;
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
}

TEST(Crypto, HmacEmptyKeyAndData) {
    // A well-known value: HMAC-SHA256 with an empty key over an empty message.
    EXPECT_EQ(hex(hmac_sha256("", "")),
              "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(Crypto, HkdfRfc5869Case1) {
    const std::string ikm(22, '\x0b');
    const std::string salt = unhex("000102030405060708090a0b0c");
    const std::string info = unhex("f0f1f2f3f4f5f6f7f8f9");
    EXPECT_EQ(hex(derive_key(ikm, salt, info, 42)),
              "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
              "34007208d5b887185865");
}

TEST(Crypto, HkdfRfc5869Case3NoSaltNoInfo) {
    // Case 3: empty salt and info, which is what the two-argument overload uses for the salt.
    const std::string ikm(22, '\x0b');
    EXPECT_EQ(hex(derive_key(ikm, "", 42)),
              "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"
              "9d201395faa4b61a96c8");
}

TEST(Crypto, DeriveKeyPurposesAreIndependent) {
    const std::string secret(32, 's');
    std::string a = derive_key(secret, "sign");
    std::string b = derive_key(secret, "encrypt");
    EXPECT_EQ(a.size(), 32u);
    EXPECT_NE(a, b);
    EXPECT_EQ(a, derive_key(secret, "sign"));
    EXPECT_EQ(derive_key(secret, "sign", 64).substr(0, 32), a);
    EXPECT_THROW(derive_key(secret, "sign", 0), std::invalid_argument);
    EXPECT_THROW(derive_key(secret, "sign", 8161), std::invalid_argument);
    EXPECT_EQ(derive_key(secret, "sign", 8160).size(), 8160u);
}

TEST(Crypto, EqualConstantTime) {
    EXPECT_TRUE(equal_constant_time("", ""));
    EXPECT_TRUE(equal_constant_time("abc", "abc"));
    EXPECT_FALSE(equal_constant_time("abc", "abd"));
    EXPECT_FALSE(equal_constant_time("abc", "ab"));
    EXPECT_FALSE(equal_constant_time("", "a"));
}

TEST(Crypto, RandomBytesAndTokens) {
    EXPECT_EQ(random_bytes(0), "");
    EXPECT_EQ(random_bytes(17).size(), 17u);
    std::set<std::string> seen;
    for (int i = 0; i < 100; ++i) seen.insert(random_token());
    EXPECT_EQ(seen.size(), 100u);
    std::string t = random_token();
    EXPECT_EQ(t.size(), 43u);  // 32 bytes, unpadded base64url
    EXPECT_EQ(base64url_decode(t)->size(), 32u);
    EXPECT_EQ(random_token(16).size(), 22u);
}

const std::string kKey = derive_key(std::string(32, 'k'), "test");

TEST(Crypto, AesGcmRoundTrip) {
    for (std::string plain : {std::string{}, std::string("x"), std::string(1000, 'p'),
                              std::string("\0\xff binary", 9)}) {
        std::string sealed = aes_gcm_seal(kKey, plain, "aad");
        EXPECT_EQ(sealed.size(), 12 + plain.size() + 16);
        EXPECT_EQ(aes_gcm_open(kKey, sealed, "aad"), plain);
    }
    EXPECT_EQ(aes_gcm_open(kKey, aes_gcm_seal(kKey, "no aad")), "no aad");
}

TEST(Crypto, AesGcmFreshNonceEachTime) {
    std::string a = aes_gcm_seal(kKey, "same");
    std::string b = aes_gcm_seal(kKey, "same");
    EXPECT_NE(a, b);
    EXPECT_NE(a.substr(0, 12), b.substr(0, 12));
}

TEST(Crypto, AesGcmOpenRejectsAnyFlippedByte) {
    const std::string sealed = aes_gcm_seal(kKey, "attack at dawn", "cookie");
    for (std::size_t i = 0; i < sealed.size(); ++i) {
        for (unsigned char bit : {0x01, 0x80}) {
            std::string t = sealed;
            t[i] = static_cast<char>(t[i] ^ bit);
            EXPECT_EQ(aes_gcm_open(kKey, t, "cookie"), std::nullopt) << "byte " << i;
        }
    }
}

TEST(Crypto, AesGcmOpenRejectsWrongAadKeyAndLength) {
    const std::string sealed = aes_gcm_seal(kKey, "attack at dawn", "cookie");
    EXPECT_EQ(aes_gcm_open(kKey, sealed, "cookie2"), std::nullopt);
    EXPECT_EQ(aes_gcm_open(kKey, sealed, ""), std::nullopt);
    EXPECT_EQ(aes_gcm_open(kKey, sealed, "Cookie"), std::nullopt);
    EXPECT_EQ(aes_gcm_open(derive_key(std::string(32, 'k'), "other"), sealed, "cookie"),
              std::nullopt);
    EXPECT_EQ(aes_gcm_open(kKey.substr(0, 16), sealed, "cookie"), std::nullopt);
    for (std::size_t n = 0; n < sealed.size(); ++n)
        EXPECT_EQ(aes_gcm_open(kKey, sealed.substr(0, n), "cookie"), std::nullopt) << n;
    EXPECT_EQ(aes_gcm_open(kKey, sealed + "x", "cookie"), std::nullopt);
    EXPECT_EQ(aes_gcm_open(kKey, "", ""), std::nullopt);
    // Nonce and tag alone (an empty plaintext) is the shortest valid input.
    EXPECT_EQ(aes_gcm_open(kKey, aes_gcm_seal(kKey, "", "a"), "a"), "");
}

TEST(Crypto, AesGcmSealRejectsBadKey) {
    EXPECT_THROW(aes_gcm_seal("short", "x"), std::invalid_argument);
    EXPECT_THROW(aes_gcm_seal(std::string(33, 'k'), "x"), std::invalid_argument);
}

}  // namespace
}  // namespace vela::crypto
