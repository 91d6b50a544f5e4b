// Accept-Encoding (RFC 9110 12.5.3) as a table: each row is a field value and the q-values
// it gives identity, gzip, br and zstd; then negotiate()'s preference and tie rules.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "vela/compress/codec.hpp"

using vela::compress::AcceptEncoding;
using vela::compress::Coding;
using vela::compress::negotiate;

namespace {

struct Row {
    const char* header;  // nullptr: the field is absent
    int identity, gzip, br, zstd;
};

constexpr int kAll = 1000;

const Row kRows[] = {
    // Absent: everything acceptable (negotiate still picks identity, below).
    {nullptr, kAll, kAll, kAll, kAll},
    // Present but empty: only identity (12.5.3).
    {"", kAll, 0, 0, 0},
    {"*", kAll, kAll, kAll, kAll},
    {"gzip;q=0", kAll, 0, 0, 0},
    {"br;q=0.5, gzip", kAll, kAll, 500, 0},
    {"gzip, deflate, br, zstd", kAll, kAll, kAll, kAll},
    // qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ); a bad one drops the member.
    {"gzip;q=1.0001", kAll, 0, 0, 0},
    {"gzip;q=1.001", kAll, 0, 0, 0},
    {"gzip;q=1.000", kAll, kAll, 0, 0},
    {"gzip;q=1.", kAll, kAll, 0, 0},
    {"gzip;q=0.", kAll, 0, 0, 0},
    {"gzip;q=0.123", kAll, 123, 0, 0},
    {"gzip;q=0.05", kAll, 50, 0, 0},
    {"gzip;q=0.001", kAll, 1, 0, 0},
    {"gzip;q=0.1234", kAll, 0, 0, 0},
    {"gzip;q=.5", kAll, 0, 0, 0},
    {"gzip;q=2", kAll, 0, 0, 0},
    {"gzip;q=-0", kAll, 0, 0, 0},
    {"gzip;q=", kAll, 0, 0, 0},
    {"gzip;q=0.5x, br", kAll, 0, kAll, 0},
    {"gzip;q=\"0.5\", br", kAll, 0, kAll, 0},
    {"gzip;q", kAll, 0, 0, 0},
    // Tokens and parameter names are case-insensitive; x-gzip is gzip.
    {"GZIP", kAll, kAll, 0, 0},
    {"Gzip;Q=0.5, BR", kAll, 500, kAll, 0},
    {"x-gzip", kAll, kAll, 0, 0},
    {"X-GZIP;q=0.3, gzip", kAll, 300, 0, 0},
    // identity excluded by name, or by "*;q=0" unless named.
    {"identity;q=0", 0, 0, 0, 0},
    {"*;q=0", 0, 0, 0, 0},
    {"*;q=0, identity", kAll, 0, 0, 0},
    {"identity;q=0.5, *;q=0", 500, 0, 0, 0},
    {"*;q=0.5", kAll, 500, 500, 500},
    {"br;q=0, *", kAll, kAll, 0, kAll},
    {"gzip, *;q=0.2", kAll, kAll, 200, 200},
    // OWS around elements, ";" and "=", tabs too; empty elements.
    {"  gzip ; q = 0.5 ,\tbr\t", kAll, 500, kAll, 0},
    {"gzip;q=0.5 ;", kAll, 500, 0, 0},
    {"gzip; ;q=0.7", kAll, 700, 0, 0},
    {",,gzip,, ,br,", kAll, kAll, kAll, 0},
    {" , ", kAll, 0, 0, 0},
    // A repeated coding keeps its first q-value; so does a repeated q.
    {"gzip;q=0.2, gzip;q=0.9", kAll, 200, 0, 0},
    {"gzip;q=0.2;q=0.9", kAll, 200, 0, 0},
    {"*;q=0.1, *;q=1", kAll, 100, 100, 100},
    // Other parameters are ignored, quoted or not; a comma inside quotes does not split.
    {"gzip;level=9", kAll, kAll, 0, 0},
    {"br;foo=\"a,b\";q=0.4, gzip", kAll, kAll, 400, 0},
    {"br;foo=\"a\\\"b\", zstd", kAll, 0, kAll, kAll},
    // Garbage: the malformed member goes, the rest stays.
    {"gz ip, br", kAll, 0, kAll, 0},
    {"gzip;foo, br", kAll, 0, kAll, 0},
    {"br;foo=\"unterminated, gzip", kAll, 0, 0, 0},
    {"br;foo=\"ends in a backslash\\", kAll, 0, 0, 0},
    {"\x80gzip, zstd", kAll, 0, 0, kAll},
    {"gzip/1, br", kAll, 0, kAll, 0},
    {";;;, ===, \"\"\", zstd", kAll, 0, 0, 0},
    {"compress, deflate, sdch", kAll, 0, 0, 0},
    {"gzip;=0.5, br", kAll, 0, kAll, 0},
};

TEST(AcceptEncoding, Table) {
    for (const Row& r : kRows) {
        const AcceptEncoding a(r.header ? r.header : "", r.header != nullptr);
        SCOPED_TRACE(r.header ? std::string("\"") + r.header + "\"" : std::string("(absent)"));
        EXPECT_EQ(a.present(), r.header != nullptr);
        EXPECT_EQ(a.quality(Coding::identity), r.identity);
        EXPECT_EQ(a.quality(Coding::gzip), r.gzip);
        EXPECT_EQ(a.quality(Coding::br), r.br);
        EXPECT_EQ(a.quality(Coding::zstd), r.zstd);
    }
}

TEST(AcceptEncoding, VeryLongInputs) {
    std::string many;
    for (int i = 0; i < 100000; ++i) many += "foo;q=0.5, ";
    many += "br;q=0.25";
    const AcceptEncoding a(many);
    EXPECT_EQ(a.quality(Coding::br), 250);
    EXPECT_EQ(a.quality(Coding::gzip), 0);

    // One huge token, a run of separators, an unterminated quote, and nothing but commas.
    for (const char fill : {'a', ';', '"', ',', ' ', '=', '\\'}) {
        const std::string s(1 << 20, fill);
        const AcceptEncoding b(s + ", zstd");
        EXPECT_EQ(b.quality(Coding::identity), kAll);
        EXPECT_LE(b.quality(Coding::zstd), kAll) << fill;
    }
    const AcceptEncoding c(std::string(1 << 20, ',') + "gzip");
    EXPECT_EQ(c.quality(Coding::gzip), kAll);
}

TEST(AcceptEncoding, CodingNames) {
    using vela::compress::file_suffix;
    using vela::compress::name;
    using vela::compress::parse_coding;
    for (const Coding c : {Coding::identity, Coding::gzip, Coding::br, Coding::zstd})
        EXPECT_EQ(parse_coding(name(c)), c);
    EXPECT_EQ(parse_coding("X-Gzip"), Coding::gzip);
    EXPECT_EQ(parse_coding("ZSTD"), Coding::zstd);
    EXPECT_FALSE(parse_coding("deflate"));
    EXPECT_FALSE(parse_coding(""));
    EXPECT_FALSE(parse_coding("gzip "));
    EXPECT_EQ(file_suffix(Coding::gzip), ".gz");
    EXPECT_EQ(file_suffix(Coding::br), ".br");
    EXPECT_EQ(file_suffix(Coding::zstd), ".zst");
    EXPECT_EQ(file_suffix(Coding::identity), "");
}

struct Pick {
    const char* header;  // nullptr: absent
    std::vector<Coding> preference;
    Coding expected;
};

TEST(AcceptEncoding, Negotiate) {
    const std::vector<Coding> zbg{Coding::zstd, Coding::br, Coding::gzip};
    const Pick picks[] = {
        {nullptr, zbg, Coding::identity},  // absent: vela sends identity
        {"", zbg, Coding::identity},
        {"*", zbg, Coding::zstd},
        {"gzip, br, zstd", zbg, Coding::zstd},  // a tie goes to the server's order
        {"gzip, br", zbg, Coding::br},
        {"gzip, br;q=0.9", zbg, Coding::gzip},  // a higher q-value beats the server's order
        {"br;q=0.5, gzip;q=0.5", {Coding::gzip, Coding::br}, Coding::gzip},
        {"br;q=0.5, gzip;q=0.5", {Coding::br, Coding::gzip}, Coding::br},
        {"*;q=0", zbg, Coding::identity},
        {"gzip;q=0, br;q=0", zbg, Coding::identity},
        {"deflate", zbg, Coding::identity},
        {"br, *;q=0.1", {Coding::gzip}, Coding::gzip},
        {"zstd", {Coding::gzip, Coding::br}, Coding::identity},  // not on the server's list
        {"gzip", {}, Coding::identity},
        {"x-gzip;q=0.001", zbg, Coding::gzip},
        {"identity, gzip;q=0.5", {Coding::identity, Coding::gzip}, Coding::identity},
    };
    for (const Pick& p : picks) {
        SCOPED_TRACE(p.header ? p.header : "(absent)");
        const AcceptEncoding a(p.header ? p.header : "", p.header != nullptr);
        EXPECT_EQ(negotiate(a, p.preference), p.expected);
    }
}

}  // namespace
