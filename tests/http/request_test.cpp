// Tests for src/http/request.cpp: query decoding, header lookup, attributes, parameters.
#include "vela/http/request.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vela {
namespace {

Request with_query(std::string_view q) {
    Request r;
    r.set_target("/", "/", q);
    return r;
}

TEST(RequestQuery, FindsDecodedValues) {
    Request r = with_query("a=1&b=x+y&c=%41%42%2b&d=&e&f=%E2%82%AC");
    EXPECT_EQ(r.query("a"), "1");
    EXPECT_EQ(r.query("b"), "x y");
    EXPECT_EQ(r.query("c"), "AB+");
    EXPECT_EQ(r.query("d"), "");
    EXPECT_EQ(r.query("e"), "");
    EXPECT_EQ(r.query("f"), "\xE2\x82\xAC");
    EXPECT_EQ(r.query("zz"), std::nullopt);
}

TEST(RequestQuery, FirstOfRepeatedNamesWins) {
    Request r = with_query("a=1&a=2");
    EXPECT_EQ(r.query("a"), "1");
}

TEST(RequestQuery, NamesAreDecodedToo) {
    Request r = with_query("first+name=Ada&na%6De=Bob&x%3Dy=1");
    EXPECT_EQ(r.query("first name"), "Ada");
    EXPECT_EQ(r.query("name"), "Bob");
    EXPECT_EQ(r.query("x=y"), "1");
}

TEST(RequestQuery, ValueMayHoldEqualsSigns) {
    Request r = with_query("k=a=b");
    EXPECT_EQ(r.query("k"), "a=b");
}

TEST(RequestQuery, MalformedEscapeInTheValueGivesNothing) {
    Request r = with_query("bad=%zz&short=%4");
    EXPECT_EQ(r.query("bad"), std::nullopt);
    EXPECT_EQ(r.query("short"), std::nullopt);
}

TEST(RequestQuery, EmptyQueryAndEmptyPairs) {
    EXPECT_EQ(with_query("").query("a"), std::nullopt);
    Request r = with_query("&&a=1&");
    EXPECT_EQ(r.query("a"), "1");
}

TEST(PercentDecode, PathAndQueryModes) {
    std::string out;
    ASSERT_TRUE(percent_decode("a+b%20c%2F", out, false));
    EXPECT_EQ(out, "a+b c/");
    ASSERT_TRUE(percent_decode("a+b%20c", out, true));
    EXPECT_EQ(out, "a b c");
    ASSERT_TRUE(percent_decode("%00", out, false));
    EXPECT_EQ(out, std::string(1, '\0'));
    EXPECT_FALSE(percent_decode("%", out, false));
    EXPECT_FALSE(percent_decode("%a", out, false));
    EXPECT_FALSE(percent_decode("%ag", out, false));
    EXPECT_FALSE(percent_decode("ok%G0", out, false));
}

Request with_headers(std::initializer_list<Header> hs) {
    Request r;
    for (const Header& h : hs) r.mutable_headers().push_back(h);
    return r;
}

TEST(RequestHeaders, LookupIsCaseInsensitive) {
    Request r = with_headers({{"Content-Type", "text/plain"}, {"X-Token", "abc"}});
    EXPECT_EQ(r.header("content-type"), "text/plain");
    EXPECT_EQ(r.header("CONTENT-TYPE"), "text/plain");
    EXPECT_EQ(r.header("x-token"), "abc");
    EXPECT_TRUE(r.has_header("X-TOKEN"));
    EXPECT_FALSE(r.has_header("X-Tok"));
    EXPECT_EQ(r.header("Missing"), "");
}

TEST(RequestHeaders, FirstOfRepeatedFieldsAndArrivalOrder) {
    Request r = with_headers({{"Accept", "a"}, {"accept", "b"}});
    EXPECT_EQ(r.header("ACCEPT"), "a");
    ASSERT_EQ(r.headers().size(), 2u);
    EXPECT_EQ(r.headers()[1].value, "b");
}

TEST(RequestHeaders, EmptyValueIsPresent) {
    Request r = with_headers({{"X-Empty", ""}});
    EXPECT_TRUE(r.has_header("x-empty"));
    EXPECT_EQ(r.header("x-empty"), "");
}

TEST(RequestAttributes, SetGetOverwrite) {
    Request r;
    EXPECT_EQ(r.attribute("user"), std::nullopt);
    r.set_attribute("user", "ada");
    r.set_attribute("role", "admin");
    EXPECT_EQ(r.attribute("user"), "ada");
    EXPECT_EQ(r.attribute("role"), "admin");
    r.set_attribute("user", "bob");
    EXPECT_EQ(r.attribute("user"), "bob");
    r.set_attribute("empty", "");
    ASSERT_TRUE(r.attribute("empty").has_value());
    EXPECT_EQ(*r.attribute("empty"), "");
}

TEST(RequestAttributes, CopiesTheValue) {
    Request r;
    std::string v = "temp";
    r.set_attribute("k", v);
    v = "changed";
    EXPECT_EQ(r.attribute("k"), "temp");
}

std::string key(int i) {
    std::string k = "k";  // built by append: GCC 12 -O3 warns (-Wrestrict) on "k" + string
    k += std::to_string(i);
    return k;
}

TEST(RequestAttributes, ResetForgetsThemAndSlotsAreReused) {
    Request r;
    for (int i = 0; i < 10; ++i) r.set_attribute(key(i), std::to_string(i));
    EXPECT_EQ(r.attribute("k9"), "9");
    r.reset();
    for (int i = 0; i < 10; ++i) EXPECT_EQ(r.attribute(key(i)), std::nullopt);
    r.set_attribute("new", "1");
    EXPECT_EQ(r.attribute("new"), "1");
    EXPECT_EQ(r.attribute("k0"), std::nullopt);
    EXPECT_EQ(r.attribute("k1"), std::nullopt);
}

TEST(RequestParams, ParamAndParamInt) {
    Request r;
    ASSERT_TRUE(r.add_param("id", "42"));
    ASSERT_TRUE(r.add_param("neg", "-7"));
    ASSERT_TRUE(r.add_param("name", "ada"));
    ASSERT_TRUE(r.add_param("empty", ""));
    ASSERT_TRUE(r.add_param("plus", "+1"));
    ASSERT_TRUE(r.add_param("tail", "12x"));
    ASSERT_TRUE(r.add_param("huge", "99999999999999999999"));
    ASSERT_TRUE(r.add_param("max", "9223372036854775807"));
    EXPECT_EQ(r.param("id"), "42");
    EXPECT_EQ(r.param("missing"), "");
    EXPECT_EQ(r.param_int("id"), 42);
    EXPECT_EQ(r.param_int("neg"), -7);
    EXPECT_EQ(r.param_int("max"), 9223372036854775807LL);
    EXPECT_EQ(r.param_int("name"), std::nullopt);
    EXPECT_EQ(r.param_int("empty"), std::nullopt);
    EXPECT_EQ(r.param_int("plus"), std::nullopt);
    EXPECT_EQ(r.param_int("tail"), std::nullopt);
    EXPECT_EQ(r.param_int("huge"), std::nullopt);
    EXPECT_EQ(r.param_int("missing"), std::nullopt);
}

TEST(RequestParams, CapacityTruncateAndClear) {
    Request r;
    for (std::size_t i = 0; i < Request::kMaxParams; ++i) ASSERT_TRUE(r.add_param("p", "v"));
    EXPECT_FALSE(r.add_param("one_too_many", "v"));
    EXPECT_EQ(r.param_count(), Request::kMaxParams);
    r.clear_params();
    EXPECT_EQ(r.param_count(), 0u);
    r.add_param("a", "1");
    r.add_param("b", "2");
    r.truncate_params(1);
    EXPECT_EQ(r.param("a"), "1");
    EXPECT_EQ(r.param("b"), "");
}

TEST(Request, DecodedPathIsOwnedByTheRequest) {
    Request r;
    std::string target = "/a%20b";
    r.set_target(target, target, {});
    r.set_decoded_path("/a b");
    target.assign(target.size(), '#');
    EXPECT_EQ(r.path(), "/a b");
}

TEST(Request, ResetClearsEverything) {
    Request r;
    r.set_method(Method::POST, "POST");
    r.set_target("/x?y", "/x", "y");
    r.set_version(10);
    r.set_host("h");
    r.set_body("b");
    r.set_keep_alive(false);
    r.mutable_headers().push_back({"A", "1"});
    r.add_param("p", "1");
    r.reset();
    EXPECT_EQ(r.method(), Method::GET);
    EXPECT_EQ(r.target(), "");
    EXPECT_EQ(r.path(), "");
    EXPECT_EQ(r.query_string(), "");
    EXPECT_EQ(r.version(), 11);
    EXPECT_EQ(r.host(), "");
    EXPECT_EQ(r.body(), "");
    EXPECT_TRUE(r.keep_alive());
    EXPECT_TRUE(r.headers().empty());
    EXPECT_EQ(r.param_count(), 0u);
}

}  // namespace
}  // namespace vela
