// vela::http::Url: parsing as a client must (RFC 3986, RFC 9110 4.2) and resolving Location
// references (RFC 3986 5.2, with its 5.4 examples).

#include "vela/client/url.hpp"

#include <gtest/gtest.h>

namespace vela::http {
namespace {

struct Good {
    const char* in;
    Scheme scheme;
    const char* host;
    std::uint16_t port;
    const char* target;
    const char* origin;
};

TEST(UrlTest, ParsesWhatAClientSends) {
    const Good cases[] = {
        {"http://example.com", Scheme::http, "example.com", 80, "/", "http://example.com:80"},
        {"HTTP://EXAMPLE.com/A?b=C", Scheme::http, "example.com", 80, "/A?b=C",
         "http://example.com:80"},
        {"https://example.com:8443/x", Scheme::https, "example.com", 8443, "/x",
         "https://example.com:8443"},
        {"http://[::1]:8080/p", Scheme::http, "::1", 8080, "/p", "http://[::1]:8080"},
        {"http://127.0.0.1?q=1", Scheme::http, "127.0.0.1", 80, "/?q=1", "http://127.0.0.1:80"},
        {"http://h/a b#frag", Scheme::http, "h", 80, "/a%20b", "http://h:80"},
        {"http://h/caf\xc3\xa9", Scheme::http, "h", 80, "/caf%C3%A9", "http://h:80"},
        {"ws://h/chat", Scheme::ws, "h", 80, "/chat", "http://h:80"},
        {"wss://h/chat", Scheme::wss, "h", 443, "/chat", "https://h:443"},
        {"http+unix://%2Frun%2Fapp.sock/v1", Scheme::http_unix, "/run/app.sock", 0, "/v1",
         "http+unix:///run/app.sock"},
    };
    for (const Good& c : cases) {
        SCOPED_TRACE(c.in);
        const Url u = Url::parse(c.in);
        EXPECT_EQ(u.scheme, c.scheme);
        EXPECT_EQ(u.host, c.host);
        EXPECT_EQ(u.port, c.port);
        EXPECT_EQ(u.target, c.target);
        EXPECT_EQ(u.origin(), c.origin);
    }
}

TEST(UrlTest, UserInfoIsDecodedAndNeverWrittenBack) {
    const Url u = Url::parse("https://al%40ice:p%3Ass@h.example/x");
    EXPECT_TRUE(u.has_userinfo);
    EXPECT_EQ(u.user, "al@ice");
    EXPECT_EQ(u.password, "p:ss");
    EXPECT_EQ(u.host, "h.example");
    EXPECT_EQ(u.to_string(), "https://h.example/x");
}

TEST(UrlTest, AuthorityOmitsTheDefaultPort) {
    EXPECT_EQ(Url::parse("http://h:80/").authority(), "h");
    EXPECT_EQ(Url::parse("http://h:81/").authority(), "h:81");
    EXPECT_EQ(Url::parse("https://[::1]/").authority(), "[::1]");
    EXPECT_EQ(Url::parse("https://[::1]:444/").authority(), "[::1]:444");
    EXPECT_TRUE(Url::parse("http://[::1]/").host_is_ip());
    EXPECT_TRUE(Url::parse("http://10.0.0.1/").host_is_ip());
    EXPECT_FALSE(Url::parse("http://example.com/").host_is_ip());
}

TEST(UrlTest, RefusesWhatWouldGoSomewhereElse) {
    const char* bad[] = {
        "example.com/x",           // no scheme
        "ftp://h/",                // unsupported scheme
        "http://",                 // no host
        "http:///x",               // no host
        "http://h:0/",             // port 0
        "http://h:65536/",         // port too large
        "http://h:8o/",            // not a number
        "http://h h/",             // space in the host
        "http://h\\@evil/",        // backslash
        "http://[::1/",            // unclosed bracket
        "http://[zz::1]/",         // not IPv6
        "http://h/a\r\nb",         // control bytes
        "http+unix://relative/x",  // a Unix socket path must be absolute
        "http://%zz/",             // bad escape
    };
    for (const char* b : bad) EXPECT_THROW(Url::parse(b), std::invalid_argument) << b;
}

TEST(UrlTest, ResolvesReferencesAsRfc3986Section54) {
    const Url base = Url::parse("http://a/b/c/d;p?q");
    const std::pair<const char*, const char*> cases[] = {
        {"g", "http://a/b/c/g"},
        {"./g", "http://a/b/c/g"},
        {"g/", "http://a/b/c/g/"},
        {"/g", "http://a/g"},
        {"//g", "http://g/"},
        {"?y", "http://a/b/c/d;p?y"},
        {"g?y", "http://a/b/c/g?y"},
        {"#s", "http://a/b/c/d;p?q"},
        {"g#s", "http://a/b/c/g"},
        {";x", "http://a/b/c/;x"},
        {"", "http://a/b/c/d;p?q"},
        {".", "http://a/b/c/"},
        {"./", "http://a/b/c/"},
        {"..", "http://a/b/"},
        {"../", "http://a/b/"},
        {"../g", "http://a/b/g"},
        {"../..", "http://a/"},
        {"../../g", "http://a/g"},
        {"../../../g", "http://a/g"},
        {"/./g", "http://a/g"},
        {"/../g", "http://a/g"},
        {"g.", "http://a/b/c/g."},
        {"..g", "http://a/b/c/..g"},
        {"./g/.", "http://a/b/c/g/"},
        {"g/./h", "http://a/b/c/g/h"},
        {"g/../h", "http://a/b/c/h"},
        {"https://other:8443/z", "https://other:8443/z"},
    };
    for (const auto& [ref, want] : cases) EXPECT_EQ(base.resolve(ref).to_string(), want) << ref;
}

TEST(UrlTest, ResolvingDropsCredentials) {
    const Url base = Url::parse("http://u:p@a/b");
    EXPECT_FALSE(base.resolve("/c").has_userinfo);
}

}  // namespace
}  // namespace vela::http
