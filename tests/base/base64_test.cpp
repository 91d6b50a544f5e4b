// Tests for src/base/base64.cpp: RFC 4648's vectors in both alphabets, strictness (one
// accepted spelling per byte string), every byte value.

#include "vela/base/base64.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

namespace vela {
namespace {

// RFC 4648 section 10.
struct Base64Case {
    std::string_view plain, std, url;
};
constexpr Base64Case kBase64[] = {
    {"", "", ""},
    {"f", "Zg==", "Zg"},
    {"fo", "Zm8=", "Zm8"},
    {"foo", "Zm9v", "Zm9v"},
    {"foob", "Zm9vYg==", "Zm9vYg"},
    {"fooba", "Zm9vYmE=", "Zm9vYmE"},
    {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
};

TEST(Base64, Base64Rfc4648Vectors) {
    for (const auto& c : kBase64) {
        EXPECT_EQ(base64_encode(c.plain), c.std) << c.plain;
        EXPECT_EQ(base64url_encode(c.plain), c.url) << c.plain;
        EXPECT_EQ(base64_decode(c.std), std::string(c.plain)) << c.std;
        EXPECT_EQ(base64url_decode(c.url), std::string(c.plain)) << c.url;
        EXPECT_EQ(base64url_decode(c.std), std::string(c.plain)) << "padded url " << c.std;
    }
}

TEST(Base64, Base64AlphabetsDiffer) {
    const std::string bytes = "\xfb\xff\xbf";
    EXPECT_EQ(base64_encode(bytes), "+/+/");
    EXPECT_EQ(base64url_encode(bytes), "-_-_");
    EXPECT_EQ(base64_decode("+/+/"), bytes);
    EXPECT_EQ(base64url_decode("-_-_"), bytes);
    EXPECT_EQ(base64_decode("-_-_"), std::nullopt);
    EXPECT_EQ(base64url_decode("+/+/"), std::nullopt);
}

TEST(Base64, Base64RejectsMalformed) {
    for (std::string_view bad : {"Zg", "Zg=", "Z", "Zm9vY", "Zm9v=", "Zg===", "Zg==Zg==", "Zh==",
                                 "Zm9=", "Zm 9v", "Zm9v\n", "=Zg=", "===="}) {
        EXPECT_EQ(base64_decode(bad), std::nullopt) << "'" << bad << "'";
    }
    for (std::string_view bad :
         {"Z", "Zm9vY", "Zh", "Zm9", "Zg=", "Zg===", "Zm9v=", "Z=", "a b", "Zm9v.", "Zg==x"}) {
        EXPECT_EQ(base64url_decode(bad), std::nullopt) << "'" << bad << "'";
    }
}

TEST(Base64, Base64AllByteValuesRoundTrip) {
    std::string all;
    for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
    for (std::size_t n = 0; n < all.size(); n += 7) {
        std::string s = all.substr(n);
        EXPECT_EQ(base64_decode(base64_encode(s)), s);
        EXPECT_EQ(base64url_decode(base64url_encode(s)), s);
    }
}

}  // namespace
}  // namespace vela
