// Constraints on reflected members (VELA_VALIDATE, json::validate): every rule on values that
// pass and that fail, the messages and JSON Pointers, optionals, arrays, maps, nested structs,
// a whole-value check, and VELA_REJECT_UNKNOWN when reading.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vela/json/json.hpp"

namespace validate_test {

using namespace vela;

struct Text {
    std::string s;
};
VELA_REFLECT(Text, s)

struct Plain {
    int a = 0;
    std::string b;
    std::vector<Text> texts;  // Text has no rules: neither has Plain
};
VELA_REFLECT(Plain, a, b, texts)

static_assert(!json::has_rules_v<Plain>);
static_assert(!json::has_rules_v<std::vector<Plain>>);
static_assert(!json::has_rules_v<int>);

struct Lengths {
    std::string both;
    std::string at_least;
    std::string at_most;
    std::string exact;
};
VELA_REFLECT(Lengths, both, at_least, at_most, exact)
VELA_VALIDATE(Lengths, (both, rule::length(2, 4)), (at_least, rule::min_length(1)),
              (at_most, rule::max_length(3)), (exact, rule::length(2, 2)))

struct Numbers {
    int r = 3;
    std::int64_t lo = 0;
    double hi = 0;
    double gt = 1;
    float lt = 0;
    unsigned mul = 0;
    std::uint64_t big = 0;
};
VELA_REFLECT(Numbers, r, lo, hi, gt, lt, mul, big)
VELA_VALIDATE(Numbers, (r, rule::range(1, 5)), (lo, rule::minimum(-10)), (hi, rule::maximum(2.5)),
              (gt, rule::exclusive_minimum(0)), (lt, rule::exclusive_maximum(1.5)),
              (mul, rule::multiple_of(3)), (big, rule::maximum(std::int64_t{1} << 62)))

struct Formats {
    std::string mail = "a@example.com";
    std::string link = "https://example.com/";
    std::string id = "123e4567-e89b-12d3-a456-426614174000";
    std::string day = "2024-02-29";
    std::string code = "ABC";
    std::string state = "draft";
    int level = 1;
};
VELA_REFLECT(Formats, mail, link, id, day, code, state, level)
VELA_VALIDATE(Formats, (mail, rule::email), (link, rule::uri), (id, rule::uuid), (day, rule::date),
              (code, rule::pattern<"^[A-Z]{3}$">), (state, rule::one_of("draft", "published")),
              (level, rule::one_of(1, 2, 4)))

struct Tag {
    std::string name;
};
VELA_REFLECT(Tag, name)
VELA_VALIDATE(Tag, (name, rule::length(1, 8)))

struct Lists {
    std::vector<std::string> words;
    std::vector<int> ids;
    std::vector<Tag> tags;  // checked with Tag's rules
    std::optional<Tag> maybe;
    std::map<std::string, int> scores;
    std::array<Tag, 2> pair;
};
VELA_REFLECT(Lists, words, ids, tags, maybe, scores, pair)
VELA_VALIDATE(Lists, (words, rule::items(1, 3), rule::each(rule::length(1, 4))),
              (ids, rule::unique_items, rule::each(rule::minimum(1))),
              (scores, rule::max_items(2), rule::each(rule::range(0, 10))))

static_assert(json::has_rules_v<std::vector<Tag>>);
static_assert(json::has_rules_v<std::optional<Lists>>);

struct Optionals {
    std::optional<std::string> nick;
    std::optional<int> age;
};
VELA_REFLECT(Optionals, nick, age)
VELA_VALIDATE(Optionals, (nick, rule::length(2, 10)), (age, rule::range(0, 150)))

struct Period {
    int start = 0;
    int end = 0;
    std::string odd = "x";
};
VELA_REFLECT(Period, start, end, VELA_AS(odd, "a/b~c"))
VELA_VALIDATE(Period, (odd, rule::check([](const std::string& s) { return s.size() % 2 == 1; },
                                        "must have an odd length")))
void vela_json_validate(const Period& p, json::Violations& out) {
    if (p.start > p.end) out.add("/end", "must not be before start");
}

struct Holder {
    Period period;
    std::vector<Period> history;
};
VELA_REFLECT(Holder, period, history)

struct Strict {
    int a = 0;
};
VELA_REFLECT(Strict, a)
VELA_REJECT_UNKNOWN(Strict)

struct Outer {
    Strict inner;
    int b = 0;
};
VELA_REFLECT(Outer, inner, b)

// "pointer: message" lines, for readable comparisons.
std::vector<std::string> lines(const json::Violations& v) {
    std::vector<std::string> out;
    for (const json::Violation& x : v) out.push_back(x.pointer + ": " + x.message);
    return out;
}

template <class T>
std::vector<std::string> check(std::string_view text) {
    return lines(json::validate(json::parse<T>(text)));
}

using Lines = std::vector<std::string>;

TEST(Validate, TypesWithoutRulesAreAlwaysValid) {
    json::Violations v;
    EXPECT_TRUE(json::validate(Plain{}, v));
    EXPECT_TRUE(v.empty());
}

TEST(Validate, LengthsCountCharactersNotBytes) {
    EXPECT_EQ(check<Lengths>(R"({"both":"ab","at_least":"x","at_most":"abc","exact":"ab"})"),
              Lines{});
    // Four characters, eight bytes: within length(2, 4).
    EXPECT_EQ(check<Lengths>(R"({"both":"éééé","at_least":"é","at_most":"ééé","exact":"éé"})"),
              Lines{});
    EXPECT_EQ(check<Lengths>(R"({"both":"abcde","at_least":"","at_most":"abcd","exact":"a"})"),
              (Lines{"/both: must be 2 to 4 characters long",
                     "/at_least: must be at least 1 character long",
                     "/at_most: must be at most 3 characters long",
                     "/exact: must be exactly 2 characters long"}));
    EXPECT_EQ(check<Lengths>(R"({"both":"a","at_least":"y","exact":"abc"})"),
              (Lines{"/both: must be 2 to 4 characters long",
                     "/exact: must be exactly 2 characters long"}));
}

TEST(Validate, NumberBounds) {
    EXPECT_EQ(check<Numbers>(R"({"r":1,"lo":-10,"hi":2.5,"gt":0.001,"lt":1.4,"mul":9,"big":4})"),
              Lines{});
    EXPECT_EQ(check<Numbers>(R"({"r":5,"gt":1e-9,"mul":0})"), Lines{});
    EXPECT_EQ(
        check<Numbers>(
            R"({"r":6,"lo":-11,"hi":2.50001,"gt":0,"lt":1.5,"mul":10,"big":9223372036854775807})"),
        (Lines{"/r: must be between 1 and 5", "/lo: must be at least -10",
               "/hi: must be at most 2.5", "/gt: must be greater than 0",
               "/lt: must be less than 1.5", "/mul: must be a multiple of 3",
               "/big: must be at most 4611686018427387904"}));
    EXPECT_EQ(check<Numbers>(R"({"r":0})"), Lines{"/r: must be between 1 and 5"});
}

TEST(Validate, IntegerBoundsAreExactBeyondDoublePrecision) {
    Numbers n;
    n.big = (std::uint64_t{1} << 62) + 1;  // as a double it equals the bound
    EXPECT_EQ(lines(json::validate(n)), Lines{"/big: must be at most 4611686018427387904"});
    n.big = std::uint64_t{1} << 62;
    EXPECT_EQ(lines(json::validate(n)), Lines{});
}

TEST(Validate, FormatsPatternsAndOneOf) {
    EXPECT_EQ(check<Formats>("{}"), Lines{});
    const Lines all_bad = {
        "/mail: must be an e-mail address",
        "/link: must be an absolute URI",
        "/id: must be a UUID (8-4-4-4-12 hexadecimal digits)",
        "/day: must be a date (YYYY-MM-DD)",
        "/code: must match the pattern ^[A-Z]{3}$",
        "/state: must be one of \"draft\", \"published\"",
        "/level: must be one of 1, 2, 4",
    };
    EXPECT_EQ(check<Formats>(
                  R"({"mail":"a@b","link":"no scheme","id":"123e4567e89b12d3a456426614174000",
                      "day":"2023-02-29","code":"ABCD","state":"gone","level":3})"),
              all_bad);
}

TEST(Validate, EmailAddresses) {
    for (const char* ok : {"a@example.com", "first.last+tag@sub.example.org", "x@a-b.io",
                           "o'brien@example.ie", "用户@例子.广告"}) {
        Formats f;
        f.mail = ok;
        EXPECT_EQ(lines(json::validate(f)), Lines{}) << ok;
    }
    for (const char* bad :
         {"", "@example.com", "a@", "a@b", "a b@example.com", "a..b@example.com", ".a@example.com",
          "a.@example.com", "a@-example.com", "a@example-.com", "a@exa_mple.com", "a@example..com",
          "a@@example.com", "a(b)@example.com"}) {
        Formats f;
        f.mail = bad;
        EXPECT_EQ(lines(json::validate(f)), Lines{"/mail: must be an e-mail address"}) << bad;
    }
}

TEST(Validate, UrisUuidsAndDates) {
    const auto errors = [](Formats f) { return json::validate(f).size(); };
    for (const char* ok : {"https://example.com", "mailto:a@example.com", "urn:isbn:0451450523",
                           "http://[::1]:8080/a?b=c#d", "ftp://u@host/%20x"}) {
        Formats f;
        f.link = ok;
        EXPECT_EQ(errors(f), 0u) << ok;
    }
    for (const char* bad : {"", "example.com", "/relative", "1http://x", "http://", "http://a b",
                            "http://x/%zz", "http://x/%2", "http://:80/"}) {
        Formats f;
        f.link = bad;
        EXPECT_EQ(errors(f), 1u) << bad;
    }
    for (const char* bad :
         {"123e4567-e89b-12d3-a456-42661417400", "123e4567-e89b-12d3-a456_426614174000",
          "g23e4567-e89b-12d3-a456-426614174000"}) {
        Formats f;
        f.id = bad;
        EXPECT_EQ(errors(f), 1u) << bad;
    }
    for (const char* ok : {"2000-02-29", "1999-12-31", "0001-01-01"}) {
        Formats f;
        f.day = ok;
        EXPECT_EQ(errors(f), 0u) << ok;
    }
    for (const char* bad : {"1900-02-29", "2024-13-01", "2024-04-31", "2024-1-01", "2024/01/01",
                            "2024-01-00", "20240101"}) {
        Formats f;
        f.day = bad;
        EXPECT_EQ(errors(f), 1u) << bad;
    }
}

TEST(Validate, ArraysMapsAndNestedStructsWithPointers) {
    EXPECT_EQ(check<Lists>(R"({"words":["a"],"ids":[1,2],"tags":[{"name":"x"}],
                               "scores":{"a":1},"pair":[{"name":"p"},{"name":"q"}]})"),
              Lines{});
    EXPECT_EQ(
        check<Lists>(R"({"words":[],"ids":[1,2,1,0],
                               "tags":[{"name":"ok"},{"name":""},{"name":"toolongname"}],
                               "maybe":{"name":""},"scores":{"a":11,"b/c":-1,"d":2},
                               "pair":[{"name":"p"},{"name":""}]})"),
        (Lines{"/words: must have 1 to 3 items", "/ids/2: must not repeat an earlier element",
               "/ids/3: must be at least 1", "/tags/1/name: must be 1 to 8 characters long",
               "/tags/2/name: must be 1 to 8 characters long",
               "/maybe/name: must be 1 to 8 characters long", "/scores: must have at most 2 items",
               "/scores/a: must be between 0 and 10", "/scores/b~1c: must be between 0 and 10",
               "/pair/1/name: must be 1 to 8 characters long"}));
    EXPECT_EQ(check<Lists>(R"({"words":["a","b","c","toolong"]})"),
              (Lines{"/words: must have 1 to 3 items", "/words/3: must be 1 to 4 characters long",
                     "/pair/0/name: must be 1 to 8 characters long",
                     "/pair/1/name: must be 1 to 8 characters long"}));
    // A vector of a type with rules is checked element by element.
    EXPECT_EQ(lines(json::validate(std::vector<Tag>{{"a"}, {""}})),
              Lines{"/1/name: must be 1 to 8 characters long"});
}

TEST(Validate, OptionalsAreCheckedWhenTheyHoldAValue) {
    EXPECT_EQ(check<Optionals>("{}"), Lines{});
    EXPECT_EQ(check<Optionals>(R"({"nick":null,"age":null})"), Lines{});
    EXPECT_EQ(check<Optionals>(R"({"nick":"ab","age":0})"), Lines{});
    EXPECT_EQ(check<Optionals>(R"({"nick":"a","age":151})"),
              (Lines{"/nick: must be 2 to 10 characters long", "/age: must be between 0 and 150"}));
}

TEST(Validate, CustomPredicatesAndWholeValueChecks) {
    EXPECT_EQ(check<Period>(R"({"start":1,"end":2})"), Lines{});
    EXPECT_EQ(check<Period>(R"({"start":3,"end":2,"a/b~c":"xy"})"),
              (Lines{"/a~1b~0c: must have an odd length", "/end: must not be before start"}));
    // Nested, the whole-value check's pointers are put under the member's.
    EXPECT_EQ(check<Holder>(R"({"period":{"start":3,"end":2},"history":[{},{"start":1}]})"),
              (Lines{"/period/end: must not be before start",
                     "/history/1/end: must not be before start"}));
}

TEST(Validate, ViolationsAppendAfterEarlierOnes) {
    json::Violations v;
    v.add("/x", "earlier");
    Optionals o;
    o.age = -1;
    EXPECT_FALSE(json::validate(o, v));
    EXPECT_EQ(lines(v), (Lines{"/x: earlier", "/age: must be between 0 and 150"}));
}

TEST(Validate, RejectUnknownRefusesUndeclaredMembersAtAnyDepth) {
    Strict s;
    EXPECT_FALSE(json::read(R"({"a":1})", s));
    const json::Error e = json::read(R"({"a":1,"b":2})", s);
    ASSERT_TRUE(e);
    EXPECT_EQ(e.pointer, "/b");
    Outer o;
    EXPECT_FALSE(json::read(R"({"b":1,"extra":true,"inner":{"a":2}})", o));  // Outer is lenient
    const json::Error nested = json::read(R"({"inner":{"a":2,"z":0}})", o);
    ASSERT_TRUE(nested);
    EXPECT_EQ(nested.pointer, "/inner/z");
}

}  // namespace validate_test
