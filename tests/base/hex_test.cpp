// Tests for src/base/hex.cpp: encoding, decoding (both cases, every rejection), the append and
// in-buffer forms, and round trips over every byte value.
#include "vela/base/hex.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

namespace vela {
namespace {

using namespace std::string_view_literals;

TEST(Hex, EncodeTable) {
    struct Case {
        std::string_view in;
        std::string_view out;
    };
    const Case cases[] = {
        {"", ""},
        {"\x00"sv, "00"},
        {"f", "66"},
        {"foobar", "666f6f626172"},  // RFC 4648 section 10, in lower case
        {"\x01\x23\x45\x67\x89\xab\xcd\xef"sv, "0123456789abcdef"},
        {"\xff\xfe\x7f\x80"sv, "fffe7f80"},
    };
    for (const Case& c : cases) EXPECT_EQ(hex_encode(c.in), c.out) << c.out;
}

TEST(Hex, DecodeTable) {
    struct Case {
        std::string_view name;
        std::string_view in;
        std::optional<std::string> out;
    };
    const Case cases[] = {
        {"empty", "", std::string()},
        {"lower", "666f6f626172", std::string("foobar")},
        {"upper", "666F6F626172", std::string("foobar")},
        {"mixed", "dEaDbEeF", std::string("\xde\xad\xbe\xef")},
        {"all_digits", "0123456789abcdefABCDEF",
         std::string("\x01\x23\x45\x67\x89\xab\xcd\xef\xab\xcd\xef")},
        {"zero_byte", "00ff", std::string("\x00\xff"sv)},
        {"odd_length", "abc", std::nullopt},
        {"single_digit", "a", std::nullopt},
        {"g", "0g", std::nullopt},
        {"G_first", "G0", std::nullopt},
        {"space", "0 ", std::nullopt},
        {"prefix_0x", "0x00", std::nullopt},
        {"colon", "00:0", std::nullopt},
        {"nul", "0\0"sv, std::nullopt},
        {"high_byte", "0\xb0"sv, std::nullopt},
        {"slash_before_0", "/0", std::nullopt},     // '0' - 1
        {"colon_after_9", "9:", std::nullopt},      // '9' + 1
        {"at_before_A", "@A", std::nullopt},        // 'A' - 1
        {"backtick_before_a", "`a", std::nullopt},  // 'a' - 1
    };
    for (const Case& c : cases) EXPECT_EQ(hex_decode(c.in), c.out) << c.name;
}

TEST(Hex, EveryByteRoundTrips) {
    std::string all;
    for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
    const std::string text = hex_encode(all);
    ASSERT_EQ(text.size(), 512u);
    for (int b = 0; b < 256; ++b) {
        char two[2];
        EXPECT_EQ(hex_byte(two, static_cast<unsigned char>(b)), two + 2);
        EXPECT_EQ(text.substr(2 * static_cast<std::size_t>(b), 2), std::string_view(two, 2)) << b;
    }
    EXPECT_EQ(hex_decode(text), all);
    std::string upper = text;
    for (char& c : upper)
        if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
    EXPECT_EQ(hex_decode(upper), all);
}

TEST(Hex, AppendKeepsWhatIsThere) {
    std::string out = "\\x";
    hex_append(out, "\x0a\xb1"sv);
    EXPECT_EQ(out, "\\x0ab1");
    hex_append(out, "");
    EXPECT_EQ(out, "\\x0ab1");
}

}  // namespace
}  // namespace vela
