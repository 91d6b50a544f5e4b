// Tests for src/crypto/password.cpp: RFC 7914's scrypt vectors through password_verify (the
// same KDF path password_hash takes), round trips, tampering, a table of malformed and
// oversized PHC strings, and needs_rehash after the cost is raised.
#include "vela/crypto/password.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vela::crypto {
namespace {

// Cheap parameters, so the tests do not spend a second per hash.
const PasswordOptions kCheap{.log2_n = 10, .r = 8, .p = 1};

// RFC 7914 section 12, the 2nd and 3rd vectors (hex fdbabe1c...cc0640 and 7023bdcb...575887),
// written as PHC strings: base64 of "NaCl" / "SodiumChloride" and of the 64-byte keys.
constexpr std::string_view kRfcVector2 =
    "$scrypt$ln=10,r=8,p=16$TmFDbA$/bq+HJ00cgB4VucZDQHp/nxq18vII3gw53N2Y0s3MWIurzDZLiKjiG/"
    "xCSedmDDaxyevuUqD7m2DYMvfoswGQA";
constexpr std::string_view kRfcVector3 =
    "$scrypt$ln=14,r=8,p=1$U29kaXVtQ2hsb3JpZGU$cCO9yzr9c0hGHAbNgf046/"
    "2o+7qQT44+qbVD9lRdofLVQylVYT8Pz2LUlwUkKpr55h6F3A1lHkDfzwF7RVdYhw";

TEST(Password, Rfc7914Vectors) {
    EXPECT_TRUE(password_verify("password", kRfcVector2));
    EXPECT_FALSE(password_verify("Password", kRfcVector2));
    EXPECT_TRUE(password_verify("pleaseletmein", kRfcVector3));
    EXPECT_FALSE(password_verify("pleaseletmeout", kRfcVector3));
}

TEST(Password, DefaultsRoundTrip) {
    const std::string h = password_hash("correct horse battery staple");
    EXPECT_TRUE(h.starts_with("$scrypt$ln=15,r=8,p=1$")) << h;
    // 16 salt bytes and 32 key bytes: 22 and 43 characters of unpadded base64.
    EXPECT_EQ(h.size(), std::string_view("$scrypt$ln=15,r=8,p=1$").size() + 22 + 1 + 43) << h;
    EXPECT_EQ(h.find('='), h.find("ln=") + 2);  // no padding anywhere
    EXPECT_TRUE(password_verify("correct horse battery staple", h));
    EXPECT_FALSE(password_verify("correct horse battery stapl", h));
    EXPECT_FALSE(needs_rehash(h));
}

TEST(Password, EmptyAndBinaryPasswords) {
    const std::string empty = password_hash("", kCheap);
    EXPECT_TRUE(password_verify("", empty));
    EXPECT_FALSE(password_verify(" ", empty));
    // scrypt keys HMAC-SHA256 with the password, and HMAC pads a key with zero bytes: "" and
    // "\0" are the same key. A property of scrypt itself (and of PBKDF2), checked so it is known.
    EXPECT_TRUE(password_verify(std::string_view("\0", 1), empty));
    const std::string bin(std::string_view("a\0b\xff", 4));
    const std::string h = password_hash(bin, kCheap);
    EXPECT_TRUE(password_verify(bin, h));
    EXPECT_FALSE(password_verify("a", h));
}

TEST(Password, FreshSaltEachTime) {
    std::set<std::string> seen;
    for (int i = 0; i < 5; ++i) seen.insert(password_hash("same", kCheap));
    EXPECT_EQ(seen.size(), 5u);
    for (const std::string& h : seen) EXPECT_TRUE(password_verify("same", h));
}

// Changes one character of the part of `h` that starts after the `field`-th '$'.
std::string tamper(std::string h, int field) {
    std::size_t at = 0;
    for (int i = 0; i < field; ++i) at = h.find('$', at) + 1;
    h[at] = h[at] == 'A' ? 'B' : 'A';
    return h;
}

TEST(Password, TamperedSaltHashOrParametersFail) {
    const std::string h = password_hash("hunter22", kCheap);
    ASSERT_TRUE(password_verify("hunter22", h));
    EXPECT_FALSE(password_verify("hunter22", tamper(h, 3))) << "salt";
    EXPECT_FALSE(password_verify("hunter22", tamper(h, 4))) << "hash";
    std::string p = h;
    p.replace(p.find("ln=10"), 5, "ln=11");
    EXPECT_FALSE(password_verify("hunter22", p));
    p = h;
    p.replace(p.find("r=8"), 3, "r=9");
    EXPECT_FALSE(password_verify("hunter22", p));
    p = h;
    p.replace(p.find("p=1"), 3, "p=2");
    EXPECT_FALSE(password_verify("hunter22", p));
    // The key cut short: scrypt's shorter output is a prefix of the longer one, so this once
    // verified whenever the cut left canonical base64 (about one run in four).
    for (std::size_t cut = 1; cut <= 20; ++cut)
        EXPECT_FALSE(password_verify("hunter22", h.substr(0, h.size() - cut))) << cut;
}

TEST(Password, MalformedStringsAreFalseNeverThrow) {
    const std::string salt = "c2FsdHNhbHRzYWx0c2FsdA";  // "saltsaltsaltsalt"
    const std::string key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    const std::string rest = "$" + salt + "$" + key;
    const std::string bad[] = {
        "",
        "$",
        "scrypt$ln=10,r=8,p=1" + rest,
        "$scrypt$",
        "$argon2id$v=19$m=65536,t=3,p=4" + rest,
        "$SCRYPT$ln=10,r=8,p=1" + rest,
        "$scrypt$ln=10,r=8,p=1$" + salt,                               // no hash
        "$scrypt$ln=10,r=8,p=1$" + salt + "$",                         // empty hash
        "$scrypt$ln=10,r=8,p=1$$" + key,                               // empty salt
        "$scrypt$ln=10,r=8,p=1" + rest + "$",                          // a field too many
        "$scrypt$ln=10,r=8" + rest,                                    // p missing
        "$scrypt$r=8,ln=10,p=1" + rest,                                // order
        "$scrypt$ln=10,r=8,p=1,x=1" + rest,                            // unknown parameter
        "$scrypt$ln=010,r=8,p=1" + rest,                               // leading zero
        "$scrypt$ln=+10,r=8,p=1" + rest,                               // sign
        "$scrypt$ln=,r=8,p=1" + rest,                                  // empty value
        "$scrypt$ln=1e1,r=8,p=1" + rest,                               // not decimal
        "$scrypt$ln=10 ,r=8,p=1" + rest,                               // space
        "$scrypt$ln=0,r=8,p=1" + rest,                                 // N = 1
        "$scrypt$ln=21,r=8,p=1" + rest,                                // N above 2^20
        "$scrypt$ln=99999999999,r=8,p=1" + rest,                       // overflow
        "$scrypt$ln=20,r=32,p=1" + rest,                               // 4 GiB
        "$scrypt$ln=19,r=8,p=1" + rest,                                // 512 MiB
        "$scrypt$ln=17,r=8,p=16" + rest,                               // 16 times OWASP's work
        "$scrypt$ln=10,r=0,p=1" + rest,                                // r = 0
        "$scrypt$ln=10,r=33,p=1" + rest,                               // r too big
        "$scrypt$ln=10,r=8,p=0" + rest,                                // p = 0
        "$scrypt$ln=10,r=8,p=17" + rest,                               // p too big
        "$scrypt$ln=10,r=8,p=1$" + salt + "==$" + key,                 // padding
        "$scrypt$ln=10,r=8,p=1$" + salt + "$" + key + "=",             // padding
        "$scrypt$ln=10,r=8,p=1$c2Fsd-Rz$" + key,                       // base64url character
        "$scrypt$ln=10,r=8,p=1$c2FsdHNhbHRzYWx0c2FsdA*$" + key,        // not base64
        "$scrypt$ln=10,r=8,p=1$" + salt + "AAA$" + key,                // impossible length
        "$scrypt$ln=10,r=8,p=1$c2FsdHNhbHRzYWx0c2FsdB$" + key,         // non-zero leftover bits
        "$scrypt$ln=10,r=8,p=1$c2Fs$" + key,                           // 3-byte salt
        "$scrypt$ln=10,r=8,p=1$" + std::string(88, 'A') + "$" + key,   // 66-byte salt
        "$scrypt$ln=10,r=8,p=1$" + salt + "$AAAAAAAAAAAAAAAAAAAA",     // 15-byte hash
        "$scrypt$ln=10,r=8,p=1$" + salt + "$" + std::string(88, 'A'),  // 66-byte hash
        std::string("$scrypt$ln=10,r=8,p=1\0", 22) + rest,
    };
    for (const std::string& s : bad) {
        EXPECT_FALSE(password_verify("password", s)) << s;
        EXPECT_TRUE(needs_rehash(s)) << s;
    }
    // The same string with sane fields parses (it just is not this password's hash).
    EXPECT_FALSE(password_verify("password", "$scrypt$ln=10,r=8,p=1" + rest));
    EXPECT_FALSE(needs_rehash("$scrypt$ln=15,r=8,p=1" + rest));
}

TEST(Password, NeedsRehashAfterTheCostIsRaised) {
    const std::string old_hash = password_hash("pw-of-old", kCheap);
    EXPECT_FALSE(needs_rehash(old_hash, kCheap));
    EXPECT_TRUE(needs_rehash(old_hash));  // the defaults are above ln=10
    PasswordOptions more = kCheap;
    more.log2_n = 11;
    EXPECT_TRUE(needs_rehash(old_hash, more));
    more = kCheap;
    more.r = 9;
    EXPECT_TRUE(needs_rehash(old_hash, more));
    more = kCheap;
    more.p = 2;
    EXPECT_TRUE(needs_rehash(old_hash, more));
    more = kCheap;
    more.hash_length = 48;
    EXPECT_TRUE(needs_rehash(old_hash, more));
    // The old hash still verifies, and the new one does not need another.
    EXPECT_TRUE(password_verify("pw-of-old", old_hash));
    more = kCheap;
    more.log2_n = 11;
    more.salt_length = 24;
    const std::string new_hash = password_hash("pw-of-old", more);
    EXPECT_TRUE(new_hash.starts_with("$scrypt$ln=11,r=8,p=1$")) << new_hash;
    EXPECT_TRUE(password_verify("pw-of-old", new_hash));
    EXPECT_FALSE(needs_rehash(new_hash, more));
    EXPECT_FALSE(needs_rehash(new_hash, kCheap));  // above the old cost is fine
}

TEST(Password, OptionsOutOfRangeAreRefused) {
    const PasswordOptions bad[] = {
        {.log2_n = 9},
        {.log2_n = 21},
        {.log2_n = 20, .r = 8},
        {.r = 0},
        {.r = 33},
        {.p = 0},
        {.p = 17},
        {.salt_length = 15},
        {.salt_length = 65},
        {.hash_length = 31},
        {.hash_length = 65},
    };
    for (const PasswordOptions& o : bad)
        EXPECT_THROW(password_hash("x", o), std::invalid_argument) << o.log2_n << " " << o.r;
}

}  // namespace
}  // namespace vela::crypto
