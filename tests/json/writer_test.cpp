// The writer: string escaping, UTF-8 checking and numbers at their limits.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "vela/json/json.hpp"

namespace writer_test {

using namespace vela;

struct Escape {
    std::string in;
    const char* out;
};

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
    const Escape cases[] = {
        {"", R"("")"},
        {"plain text", R"("plain text")"},
        {"\"", R"("\"")"},
        {"\\", R"("\\")"},
        {"a\"b\\c", R"("a\"b\\c")"},
        {"\b\f\n\r\t", R"("\b\f\n\r\t")"},
        {std::string("\0", 1), R"("\u0000")"},
        {"\x01\x1f", R"("\u0001\u001f")"},
        {"\x7f", "\"\x7f\""},
        {"/", R"("/")"},
        {"0123456789abcdef\"0123456789abcdef", R"("0123456789abcdef\"0123456789abcdef")"},
        {"long run without escapes, past eight bytes",
         R"("long run without escapes, past eight bytes")"},
        {"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\""},
        {"\xE2\x80\xA8", "\"\xE2\x80\xA8\""},
    };
    for (const Escape& c : cases) {
        EXPECT_EQ(json::write(c.in), c.out);
        EXPECT_EQ(json::parse<std::string>(json::write(c.in)), c.in) << c.out;
    }
}

TEST(JsonWriter, EveryByteValueRoundTrips) {
    std::string all;
    for (int c = 0; c < 0x80; ++c) all += static_cast<char>(c);
    EXPECT_EQ(json::parse<std::string>(json::write(all)), all);
}

TEST(JsonWriter, InvalidUtf8IsRefusedOrReplaced) {
    const char* bad[] = {
        "\xff",
        "\xC3",
        "\xC3(",
        "\xC0\xAF",  // overlong '/'
        "\xE0\x80\xAF",
        "\xED\xA0\x80",
        "\xF4\x90\x80\x80",
        "\xF8\x88\x80\x80\x80",
        "\x80",
        "ok\xE2\x82",
    };
    for (const char* b : bad) {
        std::string out = "keep";
        json::Error e = json::write_to(out, std::string(b));
        EXPECT_EQ(e.message, "invalid UTF-8 in a string") << b;
        EXPECT_EQ(out, "keep") << "output rolled back";
        EXPECT_THROW(json::write(std::string(b)), json::WriteError);
    }
    json::WriteOptions replace;
    replace.replace_invalid_utf8 = true;
    EXPECT_EQ(json::write(std::string("a\xff"
                                      "b"),
                          replace),
              "\"a\xEF\xBF\xBD"
              "b\"");
    EXPECT_EQ(json::write(std::string("\xC3"), replace), "\"\xEF\xBF\xBD\"");
}

TEST(JsonWriter, IntegersAtTheLimits) {
    EXPECT_EQ(json::write(std::numeric_limits<std::int64_t>::min()), "-9223372036854775808");
    EXPECT_EQ(json::write(std::numeric_limits<std::int64_t>::max()), "9223372036854775807");
    EXPECT_EQ(json::write(std::numeric_limits<std::uint64_t>::max()), "18446744073709551615");
    EXPECT_EQ(json::write(std::int8_t{-128}), "-128");
    EXPECT_EQ(json::write(std::uint8_t{255}), "255");
    EXPECT_EQ(json::parse<std::int64_t>("-9223372036854775808"),
              std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(json::parse<std::uint64_t>("18446744073709551615"),
              std::numeric_limits<std::uint64_t>::max());
    std::uint64_t u;
    EXPECT_EQ(json::read("18446744073709551616", u).message,
              "expected integer in [0, 18446744073709551615]");
    EXPECT_EQ(json::read("-1", u).message, "expected integer in [0, 18446744073709551615]");
    std::int64_t i;
    EXPECT_EQ(json::read("9223372036854775808", i).message,
              "expected integer in [-9223372036854775808, 9223372036854775807]");
}

TEST(JsonWriter, DoublesShortestRoundTrip) {
    EXPECT_EQ(json::write(0.1), "0.1");
    EXPECT_EQ(json::write(1e308), "1e+308");
    EXPECT_EQ(json::write(-0.0), "-0.0");
    EXPECT_EQ(json::write(2.0), "2.0");
    EXPECT_EQ(json::write(1.5e-300), "1.5e-300");
    EXPECT_EQ(json::write(123456789.25), "123456789.25");
    EXPECT_EQ(json::write(0.1f), "0.1");
    for (double d : {0.1, 1e308, -1e308, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                     -0.0, 3.141592653589793, 1e21, 1e-7, 123456789012345680.0}) {
        const double back = json::parse<double>(json::write(d));
        EXPECT_EQ(back, d) << json::write(d);
        EXPECT_EQ(std::signbit(back), std::signbit(d)) << json::write(d);
    }
}

TEST(JsonWriter, NaNAndInfinityAreRefused) {
    for (double d : {std::nan(""), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
        std::string out;
        EXPECT_EQ(json::write_to(out, d).message, "NaN and infinity cannot be written as JSON");
        EXPECT_TRUE(out.empty());
    }
    EXPECT_THROW(json::write(std::numeric_limits<float>::quiet_NaN()), json::WriteError);
    EXPECT_THROW(json::write(std::vector<double>{1, std::nan("")}), json::WriteError);
}

TEST(JsonWriter, FloatRangeIsChecked) {
    float f;
    EXPECT_EQ(json::read("1e39", f).message, "expected a number in the float range");
    EXPECT_FALSE(json::read("3.4e38", f));
    double d;
    EXPECT_FALSE(json::read("1e308", d));
    EXPECT_EQ(d, 1e308);
    EXPECT_TRUE(json::read("1e309", d)) << "out of the double range";
}

TEST(JsonWriter, AppendsToExistingText) {
    std::string out = "prefix:";
    ASSERT_FALSE(json::write_to(out, std::vector<int>{1, 2}));
    EXPECT_EQ(out, "prefix:[1,2]");
}

TEST(JsonWriter, LargeOutputGrows) {
    std::vector<std::string> many(5000, std::string(100, 'x'));
    const std::string text = json::write(many);
    EXPECT_EQ(text.size(), 5000u * 103 + 1);
    EXPECT_EQ(json::parse<std::vector<std::string>>(text), many);
}

}  // namespace writer_test
