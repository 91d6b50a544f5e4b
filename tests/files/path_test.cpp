// Tests for src/files/path.cpp: traversal attempts as they arrive after the parser's single
// percent-decoding, one line per case, and the no-allocation fast path.
#include "vela/files/path.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

namespace vela::files {

static void PrintTo(PathVerdict v, std::ostream* os) {
    *os << (v == PathVerdict::ok ? "ok" : v == PathVerdict::bad ? "bad" : "hidden");
}

namespace {

using namespace std::literals;
using V = PathVerdict;

struct Case {
    std::string_view in;
    V verdict;
    std::string_view out;  // the name on ok
};

void expect(const Case& c, bool allow_dotfiles) {
    std::string out = "stale";
    const V v = check_path(c.in, out, allow_dotfiles);
    EXPECT_EQ(v, c.verdict) << "input: " << testing::PrintToString(std::string(c.in));
    if (v == V::ok)
        EXPECT_EQ(out, c.out) << "input: " << testing::PrintToString(std::string(c.in));
    else
        EXPECT_TRUE(out.empty()) << "input: " << testing::PrintToString(std::string(c.in));
}

TEST(StaticPath, Table) {
    const Case cases[] = {
        // Dot segments, wherever they are.
        {"/../etc/passwd", V::bad, ""},
        {"/a/../../b", V::bad, ""},
        {"/..", V::bad, ""},
        {"/.", V::bad, ""},
        {"/a/./b", V::bad, ""},
        {"/a/..", V::bad, ""},
        {"..", V::bad, ""},
        {"/a/.//", V::bad, ""},
        // Backslashes: a separator elsewhere, never a name byte here.
        {"/..\\..\\etc", V::bad, ""},
        {"\\etc\\passwd", V::bad, ""},
        {"/a\\b", V::bad, ""},
        // NUL and controls.
        {"/a\0b"sv, V::bad, ""},
        {"\0"sv, V::bad, ""},
        {"/a\x01"
         "b",
         V::bad, ""},
        {"/a\tb", V::bad, ""},
        {"/a\nb", V::bad, ""},
        {"/a\x1f", V::bad, ""},
        {"/a\x7f", V::bad, ""},
        // Decoded once already: percent signs are literal.
        {"/%2e%2e/x", V::ok, "%2e%2e/x"},
        {"/%2f", V::ok, "%2f"},
        {"/%00", V::ok, "%00"},
        // Ill-formed UTF-8.
        {"/\xc0\xae\xc0\xae/etc", V::bad, ""},  // overlong '.'
        {"/\xc1\xbf", V::bad, ""},              // overlong
        {"/\xe0\x80\xae", V::bad, ""},          // overlong '.' in three bytes
        {"/\xf0\x80\x80\xae", V::bad, ""},      // overlong in four bytes
        {"/\xed\xa0\x80", V::bad, ""},          // surrogate U+D800
        {"/\xed\xbf\xbf", V::bad, ""},          // surrogate U+DFFF
        {"/\xf4\x90\x80\x80", V::bad, ""},      // U+110000
        {"/\xf5\x80\x80\x80", V::bad, ""},
        {"/\xff", V::bad, ""},
        {"/\xfe", V::bad, ""},
        {"/\x80", V::bad, ""},        // lone continuation
        {"/\xc3", V::bad, ""},        // truncated at the end
        {"/\xe6\x97/x", V::bad, ""},  // truncated before '/'
        {"/\xf0\x9f\x98", V::bad, ""},
        {"/\xc3\x28", V::bad, ""},  // lead without continuation
        // Valid UTF-8 edges.
        {"/\xc2\x80", V::ok, "\xc2\x80"},                  // U+0080
        {"/\xed\x9f\xbf", V::ok, "\xed\x9f\xbf"},          // U+D7FF
        {"/\xee\x80\x80", V::ok, "\xee\x80\x80"},          // U+E000
        {"/\xf4\x8f\xbf\xbf", V::ok, "\xf4\x8f\xbf\xbf"},  // U+10FFFF
        {"/日本語.txt", V::ok, "日本語.txt"},
        {"/émoji-😀.png", V::ok, "émoji-😀.png"},
        // Hidden segments.
        {"/.git/config", V::hidden, ""},
        {"/a/.env", V::hidden, ""},
        {"/...", V::hidden, ""},
        {"/.git/../x", V::bad, ""},  // bad wins over hidden
        {"/.git/\xff", V::bad, ""},
        // Ordinary names.
        {"/CON", V::ok, "CON"},
        {"/aux.txt", V::ok, "aux.txt"},
        {"/nul.txt", V::ok, "nul.txt"},
        {"/~", V::ok, "~"},
        {"/~user/x", V::ok, "~user/x"},
        {"/a..b", V::ok, "a..b"},
        {"/a.", V::ok, "a."},
        {"/a b/c", V::ok, "a b/c"},
        // Slashes.
        {"//a//b//", V::ok, "a/b"},
        {"", V::ok, ""},
        {"/", V::ok, ""},
        {"///", V::ok, ""},
        {"a/b", V::ok, "a/b"},
        {"/css/site.css", V::ok, "css/site.css"},
    };
    for (const Case& c : cases) expect(c, false);
}

TEST(StaticPath, AllowDotfiles) {
    const Case cases[] = {
        {"/.well-known/x", V::ok, ".well-known/x"},
        {"/.git/config", V::ok, ".git/config"},
        {"/...", V::ok, "..."},
        {"/..", V::bad, ""},
        {"/.", V::bad, ""},
        {"/.well-known/../x", V::bad, ""},
        {"/.a\\b", V::bad, ""},
    };
    for (const Case& c : cases) expect(c, true);
    expect({"/.well-known/x", V::hidden, ""}, false);
}

TEST(StaticPath, LongPath) {
    std::string in;
    while (in.size() < 4096) in += "/segment";
    std::string out;
    ASSERT_EQ(check_path(in, out), V::ok);
    EXPECT_EQ(out, in.substr(1));
    EXPECT_EQ(check_path(in + "/..", out), V::bad);
    EXPECT_TRUE(out.empty());
}

// Reusing one string: once it has room for the input no call reallocates it.
TEST(StaticPath, ReusedOutputKeepsItsBuffer) {
    std::string out;
    out.reserve(64);
    const char* data = out.data();
    const std::size_t cap = out.capacity();
    for (std::string_view in :
         {"/a/b.txt"sv, "//x//y//z"sv, "/../x"sv, "/.git"sv, ""sv, "/日本語.txt"sv}) {
        check_path(in, out);
        EXPECT_EQ(out.data(), data);
        EXPECT_EQ(out.capacity(), cap);
    }
}

TEST(StaticPath, EndsWithSlash) {
    EXPECT_TRUE(ends_with_slash("/"));
    EXPECT_TRUE(ends_with_slash("/a/"));
    EXPECT_FALSE(ends_with_slash(""));
    EXPECT_FALSE(ends_with_slash("/a"));
}

}  // namespace
}  // namespace vela::files
