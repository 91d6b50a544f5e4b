// Range (RFC 9110 section 14): parse_range as a table, then the DoS defences, If-Range and
// the Content-Range texts.

#include "vela/http/range.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "vela/http/conditional.hpp"

namespace vela {
namespace {

struct RangeRow {
    const char* name;
    std::string_view header;
    std::uint64_t size;
    RangeResult result;
    std::vector<ByteRange> ranges;  // expected on partial
};

constexpr std::uint64_t kU64Max = ~std::uint64_t{0};

const RangeRow kRangeRows[] = {
    // Single ranges (14.1.2 examples against a 10000-byte representation).
    {"first500", "bytes=0-499", 10000, RangeResult::partial, {{0, 499}}},
    {"second500", "bytes=500-999", 10000, RangeResult::partial, {{500, 999}}},
    {"oneByte", "bytes=0-0", 10000, RangeResult::partial, {{0, 0}}},
    {"lastByteExact", "bytes=9999-9999", 10000, RangeResult::partial, {{9999, 9999}}},
    {"open", "bytes=9500-", 10000, RangeResult::partial, {{9500, 9999}}},
    {"openFromZero", "bytes=0-", 10000, RangeResult::partial, {{0, 9999}}},
    {"suffix", "bytes=-500", 10000, RangeResult::partial, {{9500, 9999}}},
    {"suffixWhole", "bytes=-10000", 10000, RangeResult::partial, {{0, 9999}}},
    {"suffixLargerThanSize", "bytes=-20000", 10000, RangeResult::partial, {{0, 9999}}},
    {"suffixOverflowDigits",
     "bytes=-99999999999999999999999999",
     10,
     RangeResult::partial,
     {{0, 9}}},
    // Clamping of last-byte-pos.
    {"lastClamped", "bytes=5-100", 10, RangeResult::partial, {{5, 9}}},
    {"lastOverflowClamped",
     "bytes=5-99999999999999999999999999",
     10,
     RangeResult::partial,
     {{5, 9}}},
    {"lastMaxU64", "bytes=0-18446744073709551615", 10, RangeResult::partial, {{0, 9}}},
    {"firstMaxU64Unsatisfiable", "bytes=18446744073709551615-", 10, RangeResult::unsatisfiable, {}},
    {"hugeSize",
     "bytes=18446744073709551613-",
     kU64Max,
     RangeResult::partial,
     {{kU64Max - 2, kU64Max - 1}}},
    {"hugeSizeSuffix", "bytes=-1", kU64Max, RangeResult::partial, {{kU64Max - 1, kU64Max - 1}}},
    // Several ranges: sorted and coalesced (overlapping, adjacent, backwards, contained).
    {"twoDisjoint", "bytes=0-9,20-29", 100, RangeResult::partial, {{0, 9}, {20, 29}}},
    {"backwardsDisjoint", "bytes=20-29,0-9", 100, RangeResult::partial, {{0, 9}, {20, 29}}},
    {"backwardsAdjacent", "bytes=50-99,0-49", 100, RangeResult::partial, {{0, 99}}},
    {"overlapping", "bytes=0-10,5-20", 100, RangeResult::partial, {{0, 20}}},
    {"adjacent", "bytes=0-9,10-19", 100, RangeResult::partial, {{0, 19}}},
    {"gapOfOne", "bytes=0-9,11-19", 100, RangeResult::partial, {{0, 9}, {11, 19}}},
    {"contained", "bytes=0-50,10-20", 100, RangeResult::partial, {{0, 50}}},
    {"duplicates", "bytes=3-4,3-4,3-4", 100, RangeResult::partial, {{3, 4}}},
    {"suffixAndOpenOverlap", "bytes=-10,95-", 100, RangeResult::partial, {{90, 99}}},
    {"mixed", "bytes=0-99, -500, 1000-", 10000, RangeResult::partial, {{0, 99}, {1000, 9999}}},
    {"chain", "bytes=30-39,0-9,20-29,10-19", 100, RangeResult::partial, {{0, 39}}},
    // Whitespace and the list rule.
    {"spacesAroundSpecs", "bytes= 0-1 ,\t3-4 ", 10, RangeResult::partial, {{0, 1}, {3, 4}}},
    {"surroundingOws", "  bytes=0-1\t", 10, RangeResult::partial, {{0, 1}}},
    {"emptyElements", "bytes=,0-1,,3-4,", 10, RangeResult::partial, {{0, 1}, {3, 4}}},
    {"spaceInsideSpec", "bytes=0 -1", 10, RangeResult::none, {}},
    {"spaceBeforeEquals", "bytes =0-1", 10, RangeResult::none, {}},
    // Unit: case-insensitive; another unit is ignored.
    {"unitUpper", "BYTES=0-1", 10, RangeResult::partial, {{0, 1}}},
    {"unitMixed", "Bytes=0-1", 10, RangeResult::partial, {{0, 1}}},
    {"otherUnit", "items=0-1", 10, RangeResult::none, {}},
    {"unitPrefix", "byte=0-1", 10, RangeResult::none, {}},
    {"emptyUnit", "=0-1", 10, RangeResult::none, {}},
    // Malformed: the whole header is ignored.
    {"empty", "", 10, RangeResult::none, {}},
    {"noEquals", "bytes 0-1", 10, RangeResult::none, {}},
    {"noSpecs", "bytes=", 10, RangeResult::none, {}},
    {"onlyCommas", "bytes=, ,", 10, RangeResult::none, {}},
    {"letters", "bytes=a-b", 10, RangeResult::none, {}},
    {"backwards", "bytes=5-1", 10, RangeResult::none, {}},
    {"backwardsAmongValid", "bytes=0-1,5-1", 10, RangeResult::none, {}},
    {"doubleDash", "bytes=--1", 10, RangeResult::none, {}},
    {"threeParts", "bytes=1-2-3", 10, RangeResult::none, {}},
    {"noDash", "bytes=5", 10, RangeResult::none, {}},
    {"onlyDash", "bytes=-", 10, RangeResult::none, {}},
    {"plusSign", "bytes=+1-2", 10, RangeResult::none, {}},
    {"negativeLast", "bytes=1--2", 10, RangeResult::none, {}},
    {"trailingGarbage", "bytes=0-1x", 10, RangeResult::none, {}},
    {"semicolon", "bytes=0-1;2-3", 10, RangeResult::none, {}},
    {"firstOverflow", "bytes=18446744073709551616-", 10, RangeResult::none, {}},
    {"firstOverflowLong",
     "bytes=99999999999999999999999999-99999999999999999999999999",
     10,
     RangeResult::none,
     {}},
    {"malformedAfterUnsatisfiable", "bytes=50-60,x", 10, RangeResult::none, {}},
    // Unsatisfiable: no spec overlaps [0, size).
    {"beyondSize", "bytes=10-20", 10, RangeResult::unsatisfiable, {}},
    {"openBeyondSize", "bytes=10-", 10, RangeResult::unsatisfiable, {}},
    {"allBeyond", "bytes=10-20,30-", 10, RangeResult::unsatisfiable, {}},
    {"zeroSuffix", "bytes=-0", 10, RangeResult::unsatisfiable, {}},
    {"zeroSuffixManyZeros", "bytes=-000", 10, RangeResult::unsatisfiable, {}},
    {"sizeZeroRange", "bytes=0-0", 0, RangeResult::unsatisfiable, {}},
    {"sizeZeroOpen", "bytes=0-", 0, RangeResult::unsatisfiable, {}},
    {"sizeZeroSuffix", "bytes=-5", 0, RangeResult::unsatisfiable, {}},
    // One satisfiable spec is enough; the unsatisfiable ones are dropped.
    {"someSatisfiable", "bytes=50-60,-0,2-3", 10, RangeResult::partial, {{2, 3}}},
};

class RangeTable : public testing::TestWithParam<RangeRow> {};

TEST_P(RangeTable, Parses) {
    const RangeRow& row = GetParam();
    std::vector<ByteRange> out{{7, 7}};  // stale contents must not survive
    EXPECT_EQ(parse_range(row.header, row.size, out), row.result) << row.header;
    if (row.result == RangeResult::partial) {
        EXPECT_EQ(out, row.ranges) << row.header;
    } else {
        EXPECT_TRUE(out.empty()) << row.header;  // decided: cleared on every result
    }
}

INSTANTIATE_TEST_SUITE_P(Range, RangeTable, testing::ValuesIn(kRangeRows),
                         [](const testing::TestParamInfo<RangeRow>& i) { return i.param.name; });

std::string repeat_spec(std::string_view spec, std::size_t n) {
    std::string h = "bytes=";
    for (std::size_t i = 0; i < n; ++i) {
        if (i) h += ',';
        h += spec;
    }
    return h;
}

TEST(RangeDos, ThousandTinyRangesAreIgnored) {
    std::vector<ByteRange> out;
    EXPECT_EQ(parse_range(repeat_spec("0-0", 1000), 100, out), RangeResult::none);
    EXPECT_TRUE(out.empty());
}

TEST(RangeDos, ExactlyMaxRangesIsHonouredAndCoalesced) {
    std::vector<ByteRange> out;
    EXPECT_EQ(parse_range(repeat_spec("0-0", 16), 100, out), RangeResult::partial);
    EXPECT_EQ(out, (std::vector<ByteRange>{{0, 0}}));
    EXPECT_EQ(parse_range(repeat_spec("0-0", 17), 100, out), RangeResult::none);
}

TEST(RangeDos, EmptyElementsDoNotCount) {
    std::vector<ByteRange> out;
    std::string h = "bytes=" + std::string(1000, ',') + "1-2" + std::string(1000, ',');
    EXPECT_EQ(parse_range(h, 100, out), RangeResult::partial);
    EXPECT_EQ(out, (std::vector<ByteRange>{{1, 2}}));
}

TEST(RangeDos, UnsatisfiableSpecsCountToo) {
    std::vector<ByteRange> out;
    EXPECT_EQ(parse_range(repeat_spec("500-", 17), 100, out), RangeResult::none);
    EXPECT_EQ(parse_range(repeat_spec("500-", 16), 100, out), RangeResult::unsatisfiable);
}

TEST(RangeDos, CustomLimit) {
    std::vector<ByteRange> out;
    RangeLimits one{1};
    EXPECT_EQ(parse_range("bytes=0-1", 10, out, one), RangeResult::partial);
    EXPECT_EQ(parse_range("bytes=0-1,3-4", 10, out, one), RangeResult::none);
}

TEST(RangeDos, ManyDisjointRangesNeverExceedTheSize) {
    // Sixteen backwards, overlapping ranges: the answer is one pass over the bytes at most.
    std::string h = "bytes=";
    for (int i = 15; i >= 0; --i)
        h += std::to_string(i * 5) + "-" + std::to_string(i * 5 + 9) + ",";
    std::vector<ByteRange> out;
    ASSERT_EQ(parse_range(h, 1000, out), RangeResult::partial);
    EXPECT_EQ(out, (std::vector<ByteRange>{{0, 84}}));
}

TEST(RangeByteRange, Length) {
    EXPECT_EQ((ByteRange{0, 0}.length()), 1u);
    EXPECT_EQ((ByteRange{10, 19}.length()), 10u);
}

// --- If-Range (13.1.5) ---

constexpr std::int64_t kSunNov6 = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT

TEST(RangeIfRange, StrongTagMatch) {
    EXPECT_TRUE(if_range_matches("\"abc\"", "\"abc\"", std::nullopt));
    EXPECT_TRUE(if_range_matches(" \"abc\" ", "\"abc\"", std::nullopt));
    EXPECT_FALSE(if_range_matches("\"abc\"", "\"abd\"", std::nullopt));
    EXPECT_FALSE(if_range_matches("\"abc\"", "", kSunNov6));
}

TEST(RangeIfRange, WeakTagsNeverMatch) {
    EXPECT_FALSE(if_range_matches("W/\"abc\"", "W/\"abc\"", std::nullopt));
    EXPECT_FALSE(if_range_matches("W/\"abc\"", "\"abc\"", std::nullopt));
    EXPECT_FALSE(if_range_matches("\"abc\"", "W/\"abc\"", std::nullopt));
}

TEST(RangeIfRange, DateMustBeExactlyEqual) {
    EXPECT_TRUE(if_range_matches("Sun, 06 Nov 1994 08:49:37 GMT", "\"x\"", kSunNov6));
    EXPECT_TRUE(if_range_matches("Sunday, 06-Nov-94 08:49:37 GMT", "", kSunNov6));
    EXPECT_TRUE(if_range_matches("Sun Nov  6 08:49:37 1994", "", kSunNov6));
    EXPECT_FALSE(if_range_matches("Sun, 06 Nov 1994 08:49:37 GMT", "", kSunNov6 + 1));
    EXPECT_FALSE(if_range_matches("Sun, 06 Nov 1994 08:49:37 GMT", "", kSunNov6 - 1));
    EXPECT_FALSE(if_range_matches("Sun, 06 Nov 1994 08:49:37 GMT", "", std::nullopt));
}

TEST(RangeIfRange, GarbageNeverMatches) {
    EXPECT_FALSE(if_range_matches("", "\"abc\"", kSunNov6));
    EXPECT_FALSE(if_range_matches("abc", "\"abc\"", kSunNov6));
    EXPECT_FALSE(if_range_matches("\"abc", "\"abc\"", kSunNov6));
    EXPECT_FALSE(if_range_matches("\"a b\"", "\"a b\"", kSunNov6));
    EXPECT_FALSE(if_range_matches("784111777", "\"abc\"", kSunNov6));
    EXPECT_FALSE(if_range_matches("Sun, 06 Nov 1994 08:49:37", "", kSunNov6));
    EXPECT_FALSE(if_range_matches("*", "\"abc\"", kSunNov6));
}

// --- Content-Range (14.4) ---

TEST(RangeContentRange, Texts) {
    EXPECT_EQ(content_range({0, 499}, 1234), "bytes 0-499/1234");
    EXPECT_EQ(content_range({0, 0}, 1), "bytes 0-0/1");
    EXPECT_EQ(content_range({kU64Max - 1, kU64Max - 1}, kU64Max),
              "bytes 18446744073709551614-18446744073709551614/18446744073709551615");
    EXPECT_EQ(content_range_unsatisfied(1234), "bytes */1234");
    EXPECT_EQ(content_range_unsatisfied(0), "bytes */0");
}

}  // namespace
}  // namespace vela
