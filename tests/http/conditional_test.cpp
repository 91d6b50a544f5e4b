// Conditional requests (RFC 9110 section 13): HTTP-date in its three forms, entity-tag
// comparison and lists, and the evaluation order of 13.2.2.

#include "vela/http/conditional.hpp"

#include <gtest/gtest.h>

#include <ctime>
#include <initializer_list>
#include <string>

#include "vela/http/request.hpp"

namespace vela {
namespace {

constexpr std::int64_t kSunNov6 = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT

// --- HTTP-date (5.6.7) ---

struct DateRow {
    const char* name;
    std::string_view text;
    std::optional<std::int64_t> seconds;
};

const DateRow kDateRows[] = {
    // The three forms of the RFC's own example.
    {"imf", "Sun, 06 Nov 1994 08:49:37 GMT", kSunNov6},
    {"rfc850", "Sunday, 06-Nov-94 08:49:37 GMT", kSunNov6},
    {"asctime", "Sun Nov  6 08:49:37 1994", kSunNov6},
    {"asctimeTwoDigitDay", "Sun Nov 06 08:49:37 1994", kSunNov6},
    {"asctimeWideDay", "Wed Nov 16 08:49:37 1994", kSunNov6 + 10 * 86400},
    {"surroundingOws", "  Sun, 06 Nov 1994 08:49:37 GMT\t", kSunNov6},
    // Edges.
    {"epoch", "Thu, 01 Jan 1970 00:00:00 GMT", 0},
    {"beforeEpoch", "Wed, 31 Dec 1969 23:59:59 GMT", -1},
    {"y2k", "Sat, 01 Jan 2000 00:00:00 GMT", 946684800},
    {"y2038", "Tue, 19 Jan 2038 03:14:08 GMT", 2147483648},
    {"y2100", "Fri, 01 Jan 2100 00:00:00 GMT", 4102444800},
    {"y9999", "Fri, 31 Dec 9999 23:59:59 GMT", 253402300799},
    {"leapDay2000", "Tue, 29 Feb 2000 12:00:00 GMT", 951825600},
    {"leapDay2024", "Thu, 29 Feb 2024 00:00:00 GMT", 1709164800},
    {"leapSecondIs59", "Sat, 31 Dec 2016 23:59:60 GMT", 1483228799},
    // The weekday is checked to be a name, not to agree with the date.
    {"wrongWeekdayAccepted", "Mon, 06 Nov 1994 08:49:37 GMT", kSunNov6},
    // Invalid: names, fields out of range, impossible days (Feb 30 is rejected).
    {"badMonth", "Sun, 06 Foo 1994 08:49:37 GMT", std::nullopt},
    {"lowercaseMonth", "Sun, 06 nov 1994 08:49:37 GMT", std::nullopt},
    {"badWeekday", "Xyz, 06 Nov 1994 08:49:37 GMT", std::nullopt},
    {"lowercaseGmt", "Sun, 06 Nov 1994 08:49:37 gmt", std::nullopt},
    {"otherZone", "Sun, 06 Nov 1994 08:49:37 UTC", std::nullopt},
    {"feb30", "Mon, 30 Feb 2015 00:00:00 GMT", std::nullopt},
    {"feb29NonLeap", "Sun, 29 Feb 2023 00:00:00 GMT", std::nullopt},
    {"feb29Century", "Thu, 29 Feb 1900 00:00:00 GMT", std::nullopt},
    {"apr31", "Fri, 31 Apr 2015 00:00:00 GMT", std::nullopt},
    {"day0", "Sun, 00 Nov 1994 08:49:37 GMT", std::nullopt},
    {"day32", "Sun, 32 Dec 1994 08:49:37 GMT", std::nullopt},
    {"hour24", "Sun, 06 Nov 1994 24:00:00 GMT", std::nullopt},
    {"minute60", "Sun, 06 Nov 1994 08:60:37 GMT", std::nullopt},
    {"second61", "Sun, 06 Nov 1994 08:49:61 GMT", std::nullopt},
    {"oneDigitDayImf", "Sun, 6 Nov 1994 08:49:37 GMT", std::nullopt},
    {"twoDigitYearImf", "Sun, 06 Nov 94 08:49:37 GMT", std::nullopt},
    {"missingZone", "Sun, 06 Nov 1994 08:49:37", std::nullopt},
    {"signInField", "Sun, 06 Nov 1994 -8:49:37 GMT", std::nullopt},
    {"rfc850ShortDay", "Sun, 06-Nov-94 08:49:37 GMT", std::nullopt},
    {"rfc850FourDigitYear", "Sunday, 06-Nov-1994 08:49:37 GMT", std::nullopt},
    {"rfc850BadDay", "Sunday, 31-Nov-94 08:49:37 GMT", std::nullopt},
    {"asctimeBadDay", "Sun Nov  0 08:49:37 1994", std::nullopt},
    {"asctimeDayLeftAligned", "Sun Nov 6  08:49:37 1994", std::nullopt},
    {"asctimeWithGmt", "Sun Nov  6 08:49:37 1994 GMT", std::nullopt},
    {"empty", "", std::nullopt},
    {"number", "784111777", std::nullopt},
    {"commaOnly", ",", std::nullopt},
};

class HttpDateTable : public testing::TestWithParam<DateRow> {};

TEST_P(HttpDateTable, Parses) {
    const DateRow& row = GetParam();
    EXPECT_EQ(parse_http_date(row.text), row.seconds) << row.text;
}

INSTANTIATE_TEST_SUITE_P(HttpDate, HttpDateTable, testing::ValuesIn(kDateRows),
                         [](const testing::TestParamInfo<DateRow>& i) { return i.param.name; });

int this_year() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    return tm.tm_year + 1900;
}

std::string rfc850_jan1(int yy) {
    // Any full weekday name is accepted, so a fixed one keeps the text simple.
    char buf[64];
    std::snprintf(buf, sizeof buf, "Monday, 01-Jan-%02d 00:00:00 GMT", yy % 100);
    return buf;
}

std::optional<std::int64_t> jan1(int year) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "Mon, 01 Jan %04d 00:00:00 GMT", year);
    return parse_http_date(buf);
}

TEST(HttpDate, Rfc850TwoDigitYearWithinFiftyYearsIsThisCentury) {
    const int y = this_year();
    EXPECT_EQ(parse_http_date(rfc850_jan1(y + 10)), jan1(y + 10));
    EXPECT_EQ(parse_http_date(rfc850_jan1(y + 50)), jan1(y + 50));
    EXPECT_EQ(parse_http_date(rfc850_jan1(y)), jan1(y));
    EXPECT_EQ(parse_http_date(rfc850_jan1(y - 40)), jan1(y - 40));
}

TEST(HttpDate, Rfc850TwoDigitYearMoreThanFiftyYearsAheadIsThePreviousCentury) {
    const int y = this_year();
    EXPECT_EQ(parse_http_date(rfc850_jan1(y + 51)), jan1(y + 51 - 100));
    EXPECT_EQ(parse_http_date(rfc850_jan1(y + 60)), jan1(y - 40));
}

TEST(HttpDate, FormatsImfFixdate) {
    EXPECT_EQ(format_http_date(kSunNov6), "Sun, 06 Nov 1994 08:49:37 GMT");
    EXPECT_EQ(format_http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    EXPECT_EQ(format_http_date(-1), "Wed, 31 Dec 1969 23:59:59 GMT");
    EXPECT_EQ(format_http_date(4102444800), "Fri, 01 Jan 2100 00:00:00 GMT");
    EXPECT_EQ(format_http_date(951825600), "Tue, 29 Feb 2000 12:00:00 GMT");
}

TEST(HttpDate, FormatClampsToFourDigitYears) {
    EXPECT_EQ(format_http_date(INT64_MAX), "Fri, 31 Dec 9999 23:59:59 GMT");
    EXPECT_EQ(format_http_date(253402300800), "Fri, 31 Dec 9999 23:59:59 GMT");
    EXPECT_EQ(format_http_date(INT64_MIN), "Sat, 01 Jan 0000 00:00:00 GMT");
}

// Checks format_http_date against the C library (an independent implementation) and that
// parse_http_date reads every formatted value back.
void expect_round_trip(std::int64_t t) {
    const std::string s = format_http_date(t);
    const std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    ASSERT_NE(gmtime_r(&tt, &tm), nullptr);
    char want[64];
    std::strftime(want, sizeof want, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    ASSERT_EQ(s, want) << t;
    ASSERT_EQ(parse_http_date(s), t) << s;
}

TEST(HttpDate, RoundTripAgainstGmtime) {
    for (std::int64_t t :
         {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1}, kSunNov6, std::int64_t{946684799},
          std::int64_t{951782400}, std::int64_t{4102444799}, std::int64_t{4102444800},
          std::int64_t{253402300799}})
        expect_round_trip(t);
    // Years 1900 to 2200 in steps that visit every hour, minute and second over time.
    for (std::int64_t t = -2208988800; t < 7258118400; t += 86400 * 7 + 3607) expect_round_trip(t);
    // Every day of 1970 and of 2100 (the non-leap century year).
    for (std::int64_t d = 0; d < 366; ++d) {
        expect_round_trip(d * 86400 + 45296);
        expect_round_trip(4102444800 + d * 86400 + 86399);
    }
    // Every day of the leap year 2000.
    for (std::int64_t d = 0; d < 367; ++d) expect_round_trip(946684800 + d * 86400);
}

// --- Entity-tags (8.8.3) ---

TEST(Etag, Validity) {
    EXPECT_TRUE(valid_etag("\"xyzzy\""));
    EXPECT_TRUE(valid_etag("W/\"xyzzy\""));
    EXPECT_TRUE(valid_etag("\"\""));
    EXPECT_TRUE(valid_etag("W/\"\""));
    EXPECT_TRUE(valid_etag("\"a,b\""));       // a comma is an etagc
    EXPECT_TRUE(valid_etag("\"\x80\xff\""));  // obs-text
    EXPECT_FALSE(valid_etag(""));
    EXPECT_FALSE(valid_etag("xyzzy"));
    EXPECT_FALSE(valid_etag("\"xyzzy"));
    EXPECT_FALSE(valid_etag("\""));
    EXPECT_FALSE(valid_etag("w/\"xyzzy\""));  // the weak indicator is case-sensitive
    EXPECT_FALSE(valid_etag("W/xyzzy"));
    EXPECT_FALSE(valid_etag("\"a b\""));
    EXPECT_FALSE(valid_etag("\"a\"b\""));
    EXPECT_FALSE(valid_etag("\"a\x7f\""));
    EXPECT_FALSE(valid_etag(" \"a\""));
    EXPECT_FALSE(valid_etag("*"));
}

struct EtagRow {
    std::string_view a, b;
    bool strong, weak;
};

// RFC 9110 8.8.3.2's table, plus unequal and malformed operands.
const EtagRow kEtagRows[] = {
    {"W/\"1\"", "W/\"1\"", false, true},
    {"W/\"1\"", "W/\"2\"", false, false},
    {"W/\"1\"", "\"1\"", false, true},
    {"\"1\"", "\"1\"", true, true},
    {"\"1\"", "W/\"1\"", false, true},
    {"\"1\"", "\"2\"", false, false},
    {"\"\"", "\"\"", true, true},
    {"\"1\"", "1", false, false},
    {"1", "1", false, false},
    {"\"1\"", "", false, false},
};

TEST(Etag, ComparisonTable) {
    for (const EtagRow& r : kEtagRows) {
        EXPECT_EQ(etag_equal(r.a, r.b, false), r.strong) << r.a << " vs " << r.b;
        EXPECT_EQ(etag_equal(r.a, r.b, true), r.weak) << r.a << " vs " << r.b;
        EXPECT_EQ(etag_equal(r.b, r.a, false), r.strong) << r.b << " vs " << r.a;
        EXPECT_EQ(etag_equal(r.b, r.a, true), r.weak) << r.b << " vs " << r.a;
    }
}

TEST(Etag, ListStar) {
    EXPECT_TRUE(etag_list_matches("*", "\"a\"", false));
    EXPECT_TRUE(etag_list_matches(" * ", "", false));
    EXPECT_FALSE(etag_list_matches("*", "\"a\"", false, /*exists=*/false));
    EXPECT_FALSE(etag_list_matches("*", "", true, /*exists=*/false));
    // Decided: "*" inside a list (as when repeated fields are joined) still counts.
    EXPECT_TRUE(etag_list_matches("\"x\", *", "\"a\"", false));
}

TEST(Etag, ListMembers) {
    EXPECT_TRUE(etag_list_matches("\"a\"", "\"a\"", false));
    EXPECT_TRUE(etag_list_matches("\"x\", \"a\"", "\"a\"", false));
    EXPECT_TRUE(etag_list_matches("\"x\",\"a\"", "\"a\"", false));
    EXPECT_TRUE(etag_list_matches("  \"x\"  ,\t\"a\"  ", "\"a\"", false));
    EXPECT_TRUE(etag_list_matches(",,\"a\",,", "\"a\"", false));
    EXPECT_FALSE(etag_list_matches("\"x\", \"y\"", "\"a\"", false));
    EXPECT_FALSE(etag_list_matches("", "\"a\"", false));
    EXPECT_FALSE(etag_list_matches("\"a\"", "", false));  // no tag: only "*" can match
}

TEST(Etag, ListWeakTags) {
    EXPECT_FALSE(etag_list_matches("W/\"a\"", "\"a\"", false));
    EXPECT_TRUE(etag_list_matches("W/\"a\"", "\"a\"", true));
    EXPECT_FALSE(etag_list_matches("\"a\"", "W/\"a\"", false));
    EXPECT_TRUE(etag_list_matches("\"a\"", "W/\"a\"", true));
    EXPECT_TRUE(etag_list_matches("W/\"x\", W/\"a\"", "W/\"a\"", true));
}

TEST(Etag, ListCommaInsideATag) {
    EXPECT_TRUE(etag_list_matches("\"a,b\"", "\"a,b\"", false));
    EXPECT_TRUE(etag_list_matches("\"x\", \"a,b\"", "\"a,b\"", false));
    EXPECT_FALSE(etag_list_matches("\"a,b\"", "\"a\"", false));
    EXPECT_FALSE(etag_list_matches("\"a,b\"", "\"b\"", false));
}

TEST(Etag, ListMalformedMembersAreSkipped) {
    EXPECT_TRUE(etag_list_matches("a, \"a\"", "\"a\"", false));
    EXPECT_TRUE(etag_list_matches("\"x\"junk, \"a\"", "\"a\"", false));
    EXPECT_TRUE(etag_list_matches("W/x, \"a\"", "\"a\"", false));
    EXPECT_TRUE(etag_list_matches("\"x y\", \"a\"", "\"a\"", false));
    EXPECT_FALSE(etag_list_matches("\"a\"junk", "\"a\"", false));
    EXPECT_FALSE(etag_list_matches("\"a\" \"b\"", "\"a\"", false));  // no comma between
    EXPECT_FALSE(etag_list_matches("a", "a", false));                // the tag itself is bad
    EXPECT_FALSE(etag_list_matches("\"a", "\"a\"", false));          // unterminated
    EXPECT_FALSE(etag_list_matches("\"x\", \"a", "\"a\"", false));
    EXPECT_FALSE(etag_list_matches("*junk", "\"a\"", false));
}

// --- evaluate_preconditions (13.2.2) ---

constexpr std::string_view kTag = "\"v1\"";
constexpr std::int64_t kModified = kSunNov6;
constexpr std::string_view kBefore = "Sun, 06 Nov 1994 08:49:36 GMT";  // kModified - 1
constexpr std::string_view kAt = "Sun, 06 Nov 1994 08:49:37 GMT";      // kModified
constexpr std::string_view kAfter = "Sun, 06 Nov 1994 08:49:38 GMT";   // kModified + 1

class Conditional : public testing::Test {
  protected:
    Precondition eval(Method m, std::initializer_list<Header> headers, std::string_view etag = kTag,
                      std::optional<std::int64_t> last_modified = kModified) {
        req_.reset();
        req_.set_method(m, method_name(m));
        for (const Header& h : headers) req_.mutable_headers().push_back(h);
        return evaluate_preconditions(req_, etag, last_modified);
    }

    Request req_;
};

constexpr Precondition kProceed = Precondition::proceed;
constexpr Precondition kNotModified = Precondition::not_modified;
constexpr Precondition kFailed = Precondition::failed;

TEST_F(Conditional, NoConditionsProceed) {
    EXPECT_EQ(eval(Method::GET, {}), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"Accept", "*/*"}}), kProceed);
}

// Step 1.
TEST_F(Conditional, IfMatchUsesStrongComparison) {
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"v1\""}}), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"v0\", \"v1\""}}), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"v2\""}}), kFailed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "W/\"v1\""}}), kFailed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"v1\""}}, "W/\"v1\""), kFailed);
    EXPECT_EQ(eval(Method::GET, {{"If-Match", "\"v2\""}}), kFailed);
    EXPECT_EQ(eval(Method::PUT, {{"if-match", "\"v2\""}}), kFailed);  // name case
}

TEST_F(Conditional, IfMatchStar) {
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "*"}}), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "*"}}, ""), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"v1\""}}, ""), kFailed);  // no tag to match
}

TEST_F(Conditional, IfMatchRepeatedFieldsAreOneList) {
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"a\""}, {"If-Match", "\"v1\""}}), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"v1\""}, {"If-Match", "\"a\""}}), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"a\""}, {"If-Match", "\"b\""}}), kFailed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"a\""}, {"X", "1"}, {"If-Match", "*"}}), kProceed);
}

TEST_F(Conditional, IfMatchMalformedIsPresentAndFails) {
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", ""}}), kFailed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "v1"}}), kFailed);
}

// Step 2.
TEST_F(Conditional, IfUnmodifiedSince) {
    EXPECT_EQ(eval(Method::PUT, {{"If-Unmodified-Since", kAt}}), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Unmodified-Since", kAfter}}), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Unmodified-Since", kBefore}}), kFailed);
    EXPECT_EQ(eval(Method::GET, {{"If-Unmodified-Since", kBefore}}), kFailed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Unmodified-Since", "Sunday, 06-Nov-94 08:49:36 GMT"}}),
              kFailed);
}

TEST_F(Conditional, IfUnmodifiedSinceIgnoredWhenIfMatchPresent) {
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"v1\""}, {"If-Unmodified-Since", kBefore}}),
              kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Unmodified-Since", kBefore}, {"If-Match", "*"}}), kProceed);
}

TEST_F(Conditional, IfUnmodifiedSinceIgnoredWhenInvalidOrRepeatedOrNoDate) {
    EXPECT_EQ(eval(Method::PUT, {{"If-Unmodified-Since", "yesterday"}}), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Unmodified-Since", "Mon, 30 Feb 2015 00:00:00 GMT"}}),
              kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Unmodified-Since", kBefore}, {"If-Unmodified-Since", kAt}}),
              kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Unmodified-Since", kBefore}}, kTag, std::nullopt), kProceed);
}

// Step 3.
TEST_F(Conditional, IfNoneMatchOnGetAndHeadIsNotModified) {
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "\"v1\""}}), kNotModified);
    EXPECT_EQ(eval(Method::HEAD, {{"If-None-Match", "\"v1\""}}), kNotModified);
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "\"v0\", \"v1\""}}), kNotModified);
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "*"}}), kNotModified);
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "\"v2\""}}), kProceed);
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "\"v1\""}}, ""), kProceed);
}

TEST_F(Conditional, IfNoneMatchUsesWeakComparison) {
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "W/\"v1\""}}), kNotModified);
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "\"v1\""}}, "W/\"v1\""), kNotModified);
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "W/\"v1\""}}, "W/\"v1\""), kNotModified);
}

TEST_F(Conditional, IfNoneMatchOnOtherMethodsFails) {
    EXPECT_EQ(eval(Method::POST, {{"If-None-Match", "\"v1\""}}), kFailed);
    EXPECT_EQ(eval(Method::PUT, {{"If-None-Match", "*"}}), kFailed);
    EXPECT_EQ(eval(Method::DELETE, {{"If-None-Match", "W/\"v1\""}}), kFailed);
    EXPECT_EQ(eval(Method::POST, {{"If-None-Match", "\"v2\""}}), kProceed);
}

TEST_F(Conditional, IfNoneMatchRepeatedFieldsAreOneList) {
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "\"a\""}, {"If-None-Match", "\"v1\""}}),
              kNotModified);
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "\"a\""}, {"If-None-Match", "\"b\""}}),
              kProceed);
}

// Step 4.
TEST_F(Conditional, IfModifiedSince) {
    EXPECT_EQ(eval(Method::GET, {{"If-Modified-Since", kAt}}), kNotModified);
    EXPECT_EQ(eval(Method::GET, {{"If-Modified-Since", kAfter}}), kNotModified);
    EXPECT_EQ(eval(Method::HEAD, {{"If-Modified-Since", kAt}}), kNotModified);
    EXPECT_EQ(eval(Method::GET, {{"If-Modified-Since", kBefore}}), kProceed);
    EXPECT_EQ(eval(Method::GET, {{"If-Modified-Since", "Sun Nov  6 08:49:37 1994"}}), kNotModified);
}

TEST_F(Conditional, IfModifiedSinceIgnoredWhenIfNoneMatchPresent) {
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "\"v2\""}, {"If-Modified-Since", kAt}}),
              kProceed);
    EXPECT_EQ(eval(Method::GET, {{"If-Modified-Since", kAt}, {"If-None-Match", "garbage"}}),
              kProceed);
}

TEST_F(Conditional, IfModifiedSinceIgnoredForOtherMethods) {
    EXPECT_EQ(eval(Method::POST, {{"If-Modified-Since", kAt}}), kProceed);
    EXPECT_EQ(eval(Method::PUT, {{"If-Modified-Since", kAfter}}), kProceed);
    EXPECT_EQ(eval(Method::DELETE, {{"If-Modified-Since", kAfter}}), kProceed);
}

TEST_F(Conditional, IfModifiedSinceIgnoredWhenInvalidOrRepeatedOrNoDate) {
    EXPECT_EQ(eval(Method::GET, {{"If-Modified-Since", "not a date"}}), kProceed);
    EXPECT_EQ(eval(Method::GET, {{"If-Modified-Since", "Sun, 06 Nov 1994 25:49:37 GMT"}}),
              kProceed);
    EXPECT_EQ(eval(Method::GET, {{"If-Modified-Since", kAt}, {"If-Modified-Since", kAt}}),
              kProceed);
    EXPECT_EQ(eval(Method::GET, {{"If-Modified-Since", kAt}}, kTag, std::nullopt), kProceed);
}

// The order between steps.
TEST_F(Conditional, IfMatchFailureWinsOverIfNoneMatch) {
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "\"v1\""}, {"If-Match", "\"v2\""}}), kFailed);
}

TEST_F(Conditional, IfUnmodifiedSinceFailureWinsOverIfNoneMatch) {
    EXPECT_EQ(eval(Method::GET, {{"If-None-Match", "\"v1\""}, {"If-Unmodified-Since", kBefore}}),
              kFailed);
}

TEST_F(Conditional, PassingIfMatchThenIfNoneMatch) {
    EXPECT_EQ(eval(Method::GET, {{"If-Match", "\"v1\""}, {"If-None-Match", "\"v1\""}}),
              kNotModified);
    EXPECT_EQ(eval(Method::PUT, {{"If-Match", "\"v1\""}, {"If-None-Match", "\"v1\""}}), kFailed);
    EXPECT_EQ(eval(Method::GET, {{"If-Match", "\"v1\""}, {"If-None-Match", "\"v2\""}}), kProceed);
}

TEST_F(Conditional, PassingIfUnmodifiedSinceThenIfModifiedSince) {
    EXPECT_EQ(eval(Method::GET, {{"If-Unmodified-Since", kAt}, {"If-Modified-Since", kAt}}),
              kNotModified);
    EXPECT_EQ(eval(Method::GET, {{"If-Unmodified-Since", kAt}, {"If-Modified-Since", kBefore}}),
              kProceed);
}

TEST_F(Conditional, AllFourHeaders) {
    const std::initializer_list<Header> all = {{"If-Match", "\"v1\""},
                                               {"If-Unmodified-Since", kBefore},
                                               {"If-None-Match", "\"v2\""},
                                               {"If-Modified-Since", kAt}};
    EXPECT_EQ(eval(Method::GET, all), kProceed);  // 2 and 4 ignored, 1 and 3 pass
}

}  // namespace
}  // namespace vela
