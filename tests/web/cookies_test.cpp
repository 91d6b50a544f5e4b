// Tests for src/web/cookies.cpp: CookieKeys (sign/verify, encrypt/decrypt, rotation, secret
// checks) and the Cookie / Request helpers signed_cookie and encrypted_cookie.
#include "vela/web/cookies.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vela/crypto/crypto.hpp"
#include "vela/http/response.hpp"

namespace vela {
namespace {

const std::string kOld(32, 'o');
const std::string kNew = "a-new-secret-of-more-than-32-bytes!!";

// A Request carrying the given Cookie field values (views into `store`).
struct WithCookies {
    std::vector<std::string> store;
    Request req;
    explicit WithCookies(std::initializer_list<std::string> fields) : store(fields) {
        for (const auto& v : store) req.mutable_headers().push_back(Header{"Cookie", v});
    }
};

TEST(CookieKeys, SecretChecks) {
    EXPECT_THROW(CookieKeys(std::vector<std::string>{}), std::invalid_argument);
    EXPECT_THROW(CookieKeys(std::string_view("short")), std::invalid_argument);
    EXPECT_THROW(CookieKeys(std::string(31, 's')), std::invalid_argument);
    EXPECT_THROW(CookieKeys(std::vector<std::string>{kNew, std::string(31, 's')}),
                 std::invalid_argument);
    EXPECT_NO_THROW(CookieKeys(std::string(32, 's')));
    try {
        CookieKeys k(std::vector<std::string>{kNew, "too short"});
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()),
                  "CookieKeys: secret 1 is 9 bytes; at least 32 random bytes are needed");
    }
    EXPECT_EQ(CookieKeys(std::vector<std::string>{kNew, kOld}).size(), 2u);
    // The spellings a caller writes: braces pick the list, one secret the single-secret form.
    const char* env = "0123456789abcdef0123456789abcdef";
    EXPECT_EQ(CookieKeys({env}).size(), 1u);
    EXPECT_EQ(CookieKeys({kNew, kOld}).size(), 2u);
    EXPECT_EQ(CookieKeys({kNew, std::string_view(env)}).size(), 2u);
    EXPECT_EQ(CookieKeys(kNew).size(), 1u);
    EXPECT_EQ(CookieKeys(env).sign("a", "b"), CookieKeys({env}).sign("a", "b"));
    EXPECT_THROW(CookieKeys({kNew, "short"}), std::invalid_argument);
    EXPECT_THROW(CookieKeys(std::initializer_list<std::string_view>{}), std::invalid_argument);
}

TEST(CookieKeys, SignShapeAndRoundTrip) {
    const CookieKeys keys(kNew);
    for (std::string_view v : {"", "42", "a.b.c", "user=7|role=admin", "\"q\""}) {
        const std::string s = keys.sign("user", v);
        ASSERT_EQ(s.size(), v.size() + 1 + 43);
        EXPECT_EQ(s.substr(0, v.size()), v);
        EXPECT_EQ(s[v.size()], '.');
        EXPECT_EQ(keys.verify("user", s), std::string(v));
        EXPECT_EQ(s, keys.sign("user", v));  // deterministic
    }
}

TEST(CookieKeys, VerifyRefusesTampering) {
    const CookieKeys keys(kNew);
    const std::string s = keys.sign("user", "42");
    EXPECT_EQ(keys.verify("user", "43" + s.substr(2)), std::nullopt);   // value changed
    EXPECT_EQ(keys.verify("user", "420" + s.substr(2)), std::nullopt);  // value extended
    EXPECT_EQ(keys.verify("user", s.substr(1)), std::nullopt);          // value cut
    EXPECT_EQ(keys.verify("other", s), std::nullopt);                   // another cookie
    EXPECT_EQ(keys.verify("User", s), std::nullopt);
    EXPECT_EQ(keys.verify("user", s.substr(0, s.size() - 1)), std::nullopt);  // short sig
    EXPECT_EQ(keys.verify("user", s + "A"), std::nullopt);
    EXPECT_EQ(keys.verify("user", "42"), std::nullopt);
    EXPECT_EQ(keys.verify("user", ""), std::nullopt);
    EXPECT_EQ(keys.verify("user", std::string(44, '.')), std::nullopt);
    for (std::size_t i = 0; i < s.size(); ++i) {  // every character of value and signature
        std::string t = s;
        t[i] = t[i] == 'A' ? 'B' : 'A';
        EXPECT_EQ(keys.verify("user", t), std::nullopt) << i;
    }
    // Signed under another secret.
    EXPECT_EQ(keys.verify("user", CookieKeys(kOld).sign("user", "42")), std::nullopt);
    // The name and value cannot be re-split: ("ab", "c") signs differently from ("a", "bc").
    EXPECT_NE(keys.sign("ab", "c").substr(2), keys.sign("a", "bc").substr(3));
}

TEST(CookieKeys, EncryptRoundTrip) {
    const CookieKeys keys(kNew);
    for (std::string plain : {std::string(), std::string("cart=3"), std::string(2000, 'x'),
                              std::string("\0\r\n; \"\\", 7)}) {
        const std::string e = keys.encrypt("cart", plain);
        EXPECT_EQ(vela::base64url_decode(e)->size(), plain.size() + 28);
        EXPECT_EQ(keys.decrypt("cart", e), plain);
        EXPECT_NO_THROW(format_set_cookie({.name = "cart", .value = e}));  // a cookie value
        EXPECT_EQ(e.find(plain.empty() ? "\x01" : plain), std::string::npos);
    }
    EXPECT_NE(keys.encrypt("cart", "same"), keys.encrypt("cart", "same"));  // fresh nonce
}

TEST(CookieKeys, DecryptRefusesTampering) {
    const CookieKeys keys(kNew);
    const std::string e = keys.encrypt("cart", "3 items");
    EXPECT_EQ(keys.decrypt("session", e), std::nullopt);  // moved to another cookie
    EXPECT_EQ(keys.decrypt("", e), std::nullopt);
    EXPECT_EQ(CookieKeys(kOld).decrypt("cart", e), std::nullopt);
    EXPECT_EQ(keys.decrypt("cart", ""), std::nullopt);
    EXPECT_EQ(keys.decrypt("cart", e.substr(0, e.size() - 1)), std::nullopt);
    EXPECT_EQ(keys.decrypt("cart", e + "A"), std::nullopt);
    EXPECT_EQ(keys.decrypt("cart", e + "=="), std::nullopt);
    // 35 bytes sealed, 47 characters: one '=' is the padding base64url_decode accepts.
    ASSERT_EQ(e.size(), 47u);
    EXPECT_EQ(keys.decrypt("cart", e + "="), "3 items");
    EXPECT_EQ(keys.decrypt("cart", "!!!!"), std::nullopt);
    for (std::size_t i = 0; i < e.size(); ++i) {
        std::string t = e;
        t[i] = t[i] == 'A' ? 'B' : 'A';
        EXPECT_EQ(keys.decrypt("cart", t), std::nullopt) << i;
    }
    // A signed value does not decrypt and an encrypted one does not verify.
    EXPECT_EQ(keys.verify("cart", e), std::nullopt);
    EXPECT_EQ(keys.decrypt("cart", keys.sign("cart", "x")), std::nullopt);
}

TEST(CookieKeys, Rotation) {
    const CookieKeys old_keys(kOld);
    const CookieKeys rotated(std::vector<std::string>{kNew, kOld});
    const CookieKeys new_only(kNew);

    const std::string old_signed = old_keys.sign("user", "42");
    const std::string old_sealed = old_keys.encrypt("cart", "3");
    EXPECT_EQ(rotated.verify("user", old_signed), "42");  // old cookies still verify
    EXPECT_EQ(rotated.decrypt("cart", old_sealed), "3");

    const std::string new_signed = rotated.sign("user", "42");  // the newest signs
    EXPECT_EQ(new_signed, new_only.sign("user", "42"));
    EXPECT_NE(new_signed, old_signed);
    EXPECT_EQ(new_only.decrypt("cart", rotated.encrypt("cart", "3")), "3");
    EXPECT_EQ(old_keys.decrypt("cart", rotated.encrypt("cart", "3")), std::nullopt);

    // Once the old secret is dropped, its cookies are refused.
    EXPECT_EQ(new_only.verify("user", old_signed), std::nullopt);
    EXPECT_EQ(new_only.decrypt("cart", old_sealed), std::nullopt);
}

TEST(CookieKeys, SigningAndEncryptionKeysDiffer) {
    // The HMAC key is not the raw secret: a MAC computed with the secret itself is refused.
    const CookieKeys keys(kNew);
    const crypto::Digest d = crypto::hmac_sha256(kNew, "4:user42");
    const std::string forged =
        "42." + vela::base64url_encode({reinterpret_cast<const char*>(d.data()), d.size()});
    EXPECT_EQ(keys.verify("user", forged), std::nullopt);
}

TEST(CookieHelpers, SignedCookieRoundTrip) {
    const CookieKeys keys(kNew);
    Response res;
    res.set_cookie(signed_cookie(keys, {.name = "user", .value = "42", .http_only = true}));
    const std::string set(res.header("Set-Cookie"));
    ASSERT_TRUE(set.starts_with("user=42."));
    EXPECT_NE(set.find("; Path=/; HttpOnly"), std::string::npos);
    const std::string pair = set.substr(0, set.find(';'));

    WithCookies ok{{"a=b; " + pair}};
    EXPECT_EQ(signed_cookie(ok.req, keys, "user"), "42");
    WithCookies forged{{"user=43" + pair.substr(7)}};
    EXPECT_EQ(signed_cookie(forged.req, keys, "user"), std::nullopt);
    WithCookies none{{"a=b"}};
    EXPECT_EQ(signed_cookie(none.req, keys, "user"), std::nullopt);
    // Under another name it does not verify.
    WithCookies moved{{"admin=" + pair.substr(5)}};
    EXPECT_EQ(signed_cookie(moved.req, keys, "admin"), std::nullopt);
}

TEST(CookieHelpers, PlantedCookieDoesNotHideTheGenuineOne) {
    const CookieKeys keys(kNew);
    const std::string good = keys.sign("user", "42");
    WithCookies r{{"user=planted.AAAA; user=" + good}};
    EXPECT_EQ(signed_cookie(r.req, keys, "user"), "42");
    WithCookies split{{"user=junk"}, {"user=" + good}};
    EXPECT_EQ(signed_cookie(split.req, keys, "user"), "42");
    const std::string sealed = keys.encrypt("cart", "3");
    WithCookies e{{"cart=garbage; cart=" + sealed}};
    EXPECT_EQ(encrypted_cookie(e.req, keys, "cart"), "3");
}

TEST(CookieHelpers, EncryptedCookieRoundTrip) {
    const CookieKeys keys(kNew);
    Response res;
    res.set_cookie(encrypted_cookie(
        keys, {.name = "cart", .value = "3 items; \"odd\" bytes\n", .secure = true}));
    const std::string set(res.header("Set-Cookie"));
    const std::string pair = set.substr(0, set.find(';'));
    EXPECT_EQ(pair.find("items"), std::string::npos);
    WithCookies r{{pair}};
    EXPECT_EQ(encrypted_cookie(r.req, keys, "cart"), "3 items; \"odd\" bytes\n");
    WithCookies moved{{"other=" + pair.substr(5)}};
    EXPECT_EQ(encrypted_cookie(moved.req, keys, "other"), std::nullopt);
    WithCookies none{{}};
    EXPECT_EQ(encrypted_cookie(none.req, keys, "cart"), std::nullopt);
}

TEST(CookieHelpers, SignedValueMustStillBeACookieValue) {
    const CookieKeys keys(kNew);
    Response res;
    EXPECT_THROW(res.set_cookie(signed_cookie(keys, {.name = "u", .value = "has space"})),
                 std::invalid_argument);
    EXPECT_EQ(res.header_block(), "");
}

}  // namespace
}  // namespace vela
