// Tests for src/http/cookie.cpp: the Cookie field reader (next_cookie, Request::cookie and
// Request::cookies) as tables, and Set-Cookie serialization and its refusals
// (format_set_cookie, Response::set_cookie, Response::clear_cookie).
#include "vela/http/cookie.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {
namespace {

using Pairs = std::vector<std::pair<std::string_view, std::string_view>>;

Pairs parse(std::string_view field) {
    Pairs out;
    std::string_view n, v;
    while (next_cookie(field, n, v)) out.emplace_back(n, v);
    return out;
}

struct ParseCase {
    std::string_view field;
    Pairs want;
};

TEST(CookieParse, Table) {
    const ParseCase cases[] = {
        {"", {}},
        {"a=1", {{"a", "1"}}},
        {"a=1; b=2", {{"a", "1"}, {"b", "2"}}},
        {"a=1;b=2", {{"a", "1"}, {"b", "2"}}},
        {"  a = 1 ;\tb\t=\t2  ", {{"a", "1"}, {"b", "2"}}},
        {"a=1;;; b=2;", {{"a", "1"}, {"b", "2"}}},
        {"a=", {{"a", ""}}},
        {"a=; b=", {{"a", ""}, {"b", ""}}},
        {"a=\"\"", {{"a", ""}}},
        {"a=\"quoted value\"", {{"a", "quoted value"}}},
        {"a=\"\"x\"\"", {{"a", "\"x\""}}},  // only one pair of quotes goes
        {"a=\"", {{"a", "\""}}},            // a lone quote stays
        {"a=\"open", {{"a", "\"open"}}},
        {"a=b=c", {{"a", "b=c"}}},  // the first '=' splits
        {"a=1; a=2", {{"a", "1"}, {"a", "2"}}},
        {"flag; a=1", {{"a", "1"}}},  // no '=': skipped
        {"a=1; flag", {{"a", "1"}}},
        {"=v; a=1", {{"a", "1"}}},  // empty name: skipped
        {" = ; a=1", {{"a", "1"}}},
        {";", {}},
        {"   ", {}},
        {"noequals", {}},
        {"a=1, b=2", {{"a", "1, b=2"}}},  // a comma does not separate cookies
        {"A=1; a=2", {{"A", "1"}, {"a", "2"}}},
        {"sid=abc.def-_~; theme=dark", {{"sid", "abc.def-_~"}, {"theme", "dark"}}},
        {"x=\xc3\xa9t\xc3\xa9", {{"x", "\xc3\xa9t\xc3\xa9"}}},  // bytes are passed through
    };
    for (const auto& c : cases) EXPECT_EQ(parse(c.field), c.want) << "'" << c.field << "'";
}

// A Request with the given header fields (name, value); the views point into `store`.
struct WithHeaders {
    std::vector<std::pair<std::string, std::string>> store;
    Request req;
    explicit WithHeaders(std::initializer_list<std::pair<std::string, std::string>> h) : store(h) {
        for (const auto& [n, v] : store) req.mutable_headers().push_back(Header{n, v});
    }
};

TEST(CookieRequest, NoCookieField) {
    WithHeaders r{{"Host", "x"}, {"Accept", "*/*"}};
    EXPECT_EQ(r.req.cookie("a"), std::nullopt);
    EXPECT_TRUE(r.req.cookies().empty());
}

TEST(CookieRequest, LooksUpByExactName) {
    WithHeaders r{{"Cookie", "a=1; Theme=dark; theme=light; empty="}};
    EXPECT_EQ(r.req.cookie("a"), "1");
    EXPECT_EQ(r.req.cookie("theme"), "light");  // names are case-sensitive
    EXPECT_EQ(r.req.cookie("Theme"), "dark");
    EXPECT_EQ(r.req.cookie("empty"), "");
    EXPECT_EQ(r.req.cookie("missing"), std::nullopt);
    EXPECT_EQ(r.req.cookie(""), std::nullopt);
}

TEST(CookieRequest, FirstMatchWins) {
    WithHeaders r{{"Cookie", "id=specific; id=general"}};
    EXPECT_EQ(r.req.cookie("id"), "specific");
}

TEST(CookieRequest, SeveralCookieFields) {
    // HTTP/2 (RFC 9113 8.2.3) may send each cookie in its own field, in lower case.
    WithHeaders r{{"cookie", "a=1"},
                  {"Accept", "x=9"},
                  {"cookie", "b=2; c=\"3\""},
                  {"COOKIE", "a=4"},
                  {"Cookie2", "d=5"}};
    EXPECT_EQ(r.req.cookie("a"), "1");
    EXPECT_EQ(r.req.cookie("b"), "2");
    EXPECT_EQ(r.req.cookie("c"), "3");
    EXPECT_EQ(r.req.cookie("d"), std::nullopt);
    EXPECT_EQ(r.req.cookie("x"), std::nullopt);
    EXPECT_EQ(r.req.cookies(), (Pairs{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"a", "4"}}));
}

TEST(CookieRequest, MalformedPairsSkipped) {
    WithHeaders r{{"Cookie", "junk; =x; ok=1;; also junk"}};
    EXPECT_EQ(r.req.cookies(), (Pairs{{"ok", "1"}}));
    EXPECT_EQ(r.req.cookie("junk"), std::nullopt);
}

// --- Set-Cookie ---

using std::chrono::seconds;
using std::chrono::system_clock;

struct FormatCase {
    Cookie cookie;
    std::string_view want;
};

TEST(SetCookie, FormatTable) {
    const auto t = system_clock::time_point{seconds(784111777)};  // Sun, 06 Nov 1994 08:49:37
    const FormatCase cases[] = {
        {{.name = "a", .value = "1"}, "a=1; Path=/"},
        {{.name = "a", .value = ""}, "a=; Path=/"},
        {{.name = "a", .value = "\"q\""}, "a=\"q\"; Path=/"},
        {{.name = "a", .value = "1", .path = ""}, "a=1"},
        {{.name = "a", .value = "1", .path = "/app"}, "a=1; Path=/app"},
        {{.name = "a", .value = "1", .domain = "example.com"}, "a=1; Domain=example.com; Path=/"},
        {{.name = "a", .value = "1", .expires = t},
         "a=1; Expires=Sun, 06 Nov 1994 08:49:37 GMT; Path=/"},
        {{.name = "a", .value = "1", .max_age = seconds(3600)}, "a=1; Max-Age=3600; Path=/"},
        {{.name = "a", .value = "1", .max_age = seconds(0)}, "a=1; Max-Age=0; Path=/"},
        {{.name = "a", .value = "1", .max_age = seconds(-5)}, "a=1; Max-Age=0; Path=/"},
        {{.name = "a", .value = "1", .secure = true}, "a=1; Path=/; Secure"},
        {{.name = "a", .value = "1", .http_only = true}, "a=1; Path=/; HttpOnly"},
        {{.name = "a", .value = "1", .same_site = SameSite::strict},
         "a=1; Path=/; SameSite=Strict"},
        {{.name = "a", .value = "1", .same_site = SameSite::lax}, "a=1; Path=/; SameSite=Lax"},
        // SameSite=None and Partitioned force Secure.
        {{.name = "a", .value = "1", .same_site = SameSite::none},
         "a=1; Path=/; Secure; SameSite=None"},
        {{.name = "a", .value = "1", .partitioned = true}, "a=1; Path=/; Secure; Partitioned"},
        {{.name = "__Secure-id", .value = "1", .secure = true}, "__Secure-id=1; Path=/; Secure"},
        {{.name = "__Host-id", .value = "1", .secure = true}, "__Host-id=1; Path=/; Secure"},
        {{.name = "all",
          .value = "v",
          .expires = t,
          .max_age = seconds(60),
          .domain = "a.example",
          .path = "/p",
          .secure = true,
          .http_only = true,
          .partitioned = true,
          .same_site = SameSite::none},
         "all=v; Expires=Sun, 06 Nov 1994 08:49:37 GMT; Max-Age=60; Domain=a.example; Path=/p; "
         "Secure; HttpOnly; SameSite=None; Partitioned"},
        {{.name = "!#$%&'*+-.^_`|~09AZaz", .value = "!#$%&'()*+-./:<=>?@[]^_`{|}~"},
         "!#$%&'*+-.^_`|~09AZaz=!#$%&'()*+-./:<=>?@[]^_`{|}~; Path=/"},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(format_set_cookie(c.cookie), c.want);
        Response res;
        res.set_cookie(c.cookie);
        EXPECT_EQ(res.header("Set-Cookie"), c.want);
    }
}

TEST(SetCookie, RejectedTable) {
    const Cookie bad[] = {
        {.name = "", .value = "1"},
        {.name = "a b", .value = "1"},
        {.name = "a=b", .value = "1"},
        {.name = "a;b", .value = "1"},
        {.name = "a(b)", .value = "1"},
        {.name = "a\x01", .value = "1"},
        {.name = "\xc3\xa9", .value = "1"},
        {.name = "a", .value = "with space"},
        {.name = "a", .value = "semi;colon"},
        {.name = "a", .value = "com,ma"},
        {.name = "a", .value = "back\\slash"},
        {.name = "a", .value = "\""},
        {.name = "a", .value = "\"x"},
        {.name = "a", .value = "x\"y"},
        {.name = "a", .value = "\"a b\""},
        {.name = "a", .value = "new\r\nline"},
        {.name = "a", .value = "del\x7f"},
        {.name = "a", .value = "\xc3\xa9"},
        {.name = "a", .value = std::string(4096, 'v')},  // name + value > 4096
        {.name = "a", .value = "1", .domain = "ex;ample.com"},
        {.name = "a", .value = "1", .domain = "example.com\r\nX: y"},
        {.name = "a", .value = "1", .domain = std::string(1025, 'd')},
        {.name = "a", .value = "1", .path = "/a;b"},
        {.name = "a", .value = "1", .path = "/a\tb"},
        {.name = "a", .value = "1", .path = "/\xc3\xa9"},
        {.name = "a", .value = "1", .path = "relative"},
        {.name = "a", .value = "1", .path = "/" + std::string(1024, 'p')},
        {.name = "__Secure-id", .value = "1"},
        {.name = "__secure-id", .value = "1"},  // prefixes match without case
        {.name = "__Host-id", .value = "1"},
        {.name = "__HOST-id", .value = "1"},
        {.name = "__Host-id", .value = "1", .path = "/app", .secure = true},
        {.name = "__Host-id", .value = "1", .path = "", .secure = true},
        {.name = "__Host-id", .value = "1", .domain = "example.com", .secure = true},
        // SameSite=None forces Secure, but the prefix rule is for what the caller asked.
        {.name = "__Secure-id", .value = "1", .same_site = SameSite::none},
    };
    for (const auto& c : bad) {
        EXPECT_THROW(format_set_cookie(c), std::invalid_argument) << c.name << "=" << c.value;
        Response res;
        EXPECT_THROW(res.set_cookie(c), std::invalid_argument) << c.name << "=" << c.value;
        EXPECT_EQ(res.header("Set-Cookie"), "");
        EXPECT_EQ(res.header_block(), "");
    }
}

TEST(SetCookie, LimitsAreInclusive) {
    EXPECT_NO_THROW(format_set_cookie({.name = "a", .value = std::string(4095, 'v')}));
    EXPECT_NO_THROW(
        format_set_cookie({.name = "a", .value = "1", .path = "/" + std::string(1023, 'p')}));
}

TEST(SetCookie, MessageNamesTheCookieAndReason) {
    try {
        format_set_cookie({.name = "__Host-sid", .value = "1", .domain = "x", .secure = true});
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()),
                  "set_cookie(\"__Host-sid\"): a __Host- cookie must have Path=/ and no Domain");
    }
}

TEST(SetCookie, SeveralCookiesAreSeparateFields) {
    Response res;
    res.set_cookie({.name = "a", .value = "1"}).set_cookie({.name = "b", .value = "2"});
    EXPECT_EQ(res.header_block(), "Set-Cookie: a=1; Path=/\r\nSet-Cookie: b=2; Path=/\r\n");
}

TEST(SetCookie, ClearCookie) {
    Response res;
    res.clear_cookie("sid");
    EXPECT_EQ(res.header("Set-Cookie"),
              "sid=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/");
    Response r2;
    r2.clear_cookie("sid", "/app", "example.com");
    EXPECT_EQ(r2.header("Set-Cookie"),
              "sid=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Domain=example.com; "
              "Path=/app");
    Response r3;
    r3.clear_cookie("__Host-sid");
    EXPECT_EQ(r3.header("Set-Cookie"),
              "__Host-sid=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/; Secure");
    Response r4;
    EXPECT_THROW(r4.clear_cookie("bad name"), std::invalid_argument);
    EXPECT_THROW(r4.clear_cookie("__Host-sid", "/app"), std::invalid_argument);
    EXPECT_EQ(r4.header_block(), "");
}

TEST(SetCookie, RoundTripThroughTheReader) {
    // What set_cookie sends as name=value, a client sends back; the reader gets it unchanged.
    const Cookie c{.name = "prefs", .value = "\"lang=en|tz=UTC\""};
    const std::string set = format_set_cookie(c);
    const std::string pair = set.substr(0, set.find(';'));
    WithHeaders r{{"Cookie", "other=x; " + pair}};
    EXPECT_EQ(r.req.cookie("prefs"), "lang=en|tz=UTC");
}

}  // namespace
}  // namespace vela
