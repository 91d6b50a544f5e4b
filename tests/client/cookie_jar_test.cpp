// The client's cookie jar against RFC 6265 5.3-5.4: which Set-Cookie fields are kept, and
// which cookies go back to which URL.

#include "client/cookie_jar.hpp"

#include <gtest/gtest.h>

namespace vela::http::detail {
namespace {

constexpr std::int64_t kNow = 1'800'000'000;

std::string sent(CookieJar& jar, const char* url, std::int64_t now = kNow) {
    return jar.header_for(Url::parse(url), now);
}

TEST(CookieJarTest, HostOnlyByDefault) {
    CookieJar jar;
    jar.store(Url::parse("http://a.example.com/x/y"), "id=1", kNow);
    EXPECT_EQ(sent(jar, "http://a.example.com/x/z"), "id=1");
    EXPECT_EQ(sent(jar, "http://b.a.example.com/x/z"), "");  // host-only: not subdomains
    EXPECT_EQ(sent(jar, "http://example.com/x/z"), "");
    EXPECT_EQ(sent(jar, "http://a.example.com/"), "");  // default path is /x
}

TEST(CookieJarTest, DomainAttributeCoversSubdomainsButNotStrangers) {
    CookieJar jar;
    jar.store(Url::parse("http://a.example.com/"), "d=1; Domain=.Example.COM; Path=/", kNow);
    jar.store(Url::parse("http://a.example.com/"), "tld=1; Domain=com; Path=/", kNow);
    jar.store(Url::parse("http://a.example.com/"), "other=1; Domain=example.org; Path=/", kNow);
    jar.store(Url::parse("http://10.0.0.1/"), "ip=1; Domain=0.0.1; Path=/", kNow);
    EXPECT_EQ(sent(jar, "http://example.com/"), "d=1");
    EXPECT_EQ(sent(jar, "http://deep.b.example.com/p"), "d=1");
    EXPECT_EQ(sent(jar, "http://notexample.com/"), "");
    EXPECT_EQ(sent(jar, "http://example.org/"), "");
    EXPECT_EQ(sent(jar, "http://10.0.0.1/"), "");
    EXPECT_EQ(jar.size(), 1u);
}

TEST(CookieJarTest, PathMatchingAndOrder) {
    CookieJar jar;
    const Url u = Url::parse("http://h/");
    jar.store(u, "a=1; Path=/", kNow);
    jar.store(u, "b=2; Path=/docs", kNow);
    jar.store(u, "c=3; Path=/docs/", kNow);
    EXPECT_EQ(sent(jar, "http://h/docs/x?q"), "c=3; b=2; a=1");
    EXPECT_EQ(sent(jar, "http://h/docs"), "b=2; a=1");
    EXPECT_EQ(sent(jar, "http://h/docsx"), "a=1");
}

TEST(CookieJarTest, SecureOnlyOverHttpsAndOnlyFromHttps) {
    CookieJar jar;
    jar.store(Url::parse("https://h/"), "s=1; Secure; Path=/", kNow);
    jar.store(Url::parse("http://h/"), "t=1; Secure; Path=/", kNow);  // refused
    EXPECT_EQ(sent(jar, "https://h/"), "s=1");
    EXPECT_EQ(sent(jar, "http://h/"), "");
}

TEST(CookieJarTest, ExpiryReplacementAndDeletion) {
    CookieJar jar;
    const Url u = Url::parse("http://h/");
    jar.store(u, "a=1; Max-Age=60; Path=/", kNow);
    jar.store(u, "b=1; Expires=Thu, 01 Jan 2099 00:00:00 GMT; Path=/", kNow);
    jar.store(u, "c=1; Expires=Thu, 01 Jan 1998 00:00:00 GMT; Path=/", kNow);
    EXPECT_EQ(sent(jar, "http://h/"), "a=1; b=1");
    EXPECT_EQ(sent(jar, "http://h/", kNow + 61), "b=1");
    jar.store(u, "b=2; Path=/", kNow);  // replaced (now a session cookie)
    EXPECT_EQ(sent(jar, "http://h/"), "b=2");
    jar.store(u, "b=gone; Max-Age=0; Path=/", kNow);  // deleted
    EXPECT_EQ(sent(jar, "http://h/"), "");
    // Max-Age wins over Expires, whichever comes first.
    jar.store(u, "m=1; Max-Age=10; Expires=Thu, 01 Jan 1998 00:00:00 GMT; Path=/", kNow);
    EXPECT_EQ(sent(jar, "http://h/"), "m=1");
}

TEST(CookieJarTest, MalformedFieldsAreIgnored) {
    CookieJar jar;
    const Url u = Url::parse("http://h/");
    for (const char* v : {"", "novalue", "=x", "a\x01=b", "; Path=/"}) jar.store(u, v, kNow);
    EXPECT_EQ(jar.size(), 0u);
    jar.store(u, "ok=1; Max-Age=abc; Path=/", kNow);  // a bad attribute is skipped
    EXPECT_EQ(sent(jar, "http://h/"), "ok=1");
}

}  // namespace
}  // namespace vela::http::detail
