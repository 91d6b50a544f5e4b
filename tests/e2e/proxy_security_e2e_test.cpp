// trusted_proxies() and security_headers() end to end: a real App on loopback (plain, TLS,
// IPv6), requests from the raw client of client.hpp and from curl. The peer 127.0.0.1 is the
// "proxy"; ::1 and an app trusting only 10.0.0.0/8 play untrusted peers sending spoofed headers.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "client.hpp"
#include "process.hpp"
#include "tls/certs.hpp"
#include "vela/middleware/proxy.hpp"
#include "vela/middleware/security_headers.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

// "client_ip|scheme|host" as the handler sees them.
std::string info(Request& r) {
    return std::string(r.client_ip()) + "|" + std::string(r.scheme()) + "|" + std::string(r.host());
}

void add_routes(App& app) {
    app.get("/info", [](Request& r) { return info(r); });
    app.get("/framed", [] {
        Response r("may be framed by us");
        r.add_header("X-Frame-Options", "SAMEORIGIN");
        return r;
    });
}

HttpResponse exchange(Client c, const std::string& bytes) {
    EXPECT_TRUE(c.connected());
    EXPECT_TRUE(c.send(bytes));
    std::optional<HttpResponse> r = c.read_response();
    EXPECT_TRUE(r) << c.error();
    return r ? *r : HttpResponse{};
}

constexpr const char* kSpoof =
    "X-Forwarded-For: 6.6.6.6, 203.0.113.7\r\nX-Forwarded-Proto: https\r\n"
    "X-Forwarded-Host: shop.example\r\nForwarded: for=9.9.9.9;proto=https\r\n";

class ProxySecurityE2E : public ::testing::Test {
  protected:
    App app;
    std::uint16_t port = 0, tls_port = 0;

    void SetUp() override {
        quick_options(app.options());
        app.use(trusted_proxies({.proxies = {"127.0.0.1"}}));
        app.use(security_headers());
        add_routes(app);
        app.listen("127.0.0.1:0");
        TlsOptions t;
        t.cert = test::test_certs().server_ec_cert;
        t.key = test::test_certs().server_ec_key;
        app.listen_tls("127.0.0.1:0", std::move(t));
        app.start(1);
        port = app.port(0);
        tls_port = app.port(1);
    }
};

TEST_F(ProxySecurityE2E, TrustedPeerForwardedValues) {
    HttpResponse r = exchange(Client::tcp(port), get_request("/info", kSpoof));
    EXPECT_EQ(r.status, 200);
    // Rightmost untrusted X-Forwarded-For entry; Forwarded is off by default.
    EXPECT_EQ(r.body, "203.0.113.7|https|shop.example");
    // The client reached the proxy over https: HSTS, even though this hop is plain http.
    EXPECT_EQ(r.header("Strict-Transport-Security"), "max-age=31536000");
}

TEST_F(ProxySecurityE2E, NoHeadersNoChange) {
    HttpResponse r = exchange(Client::tcp(port), get_request("/info"));
    EXPECT_EQ(r.body, "127.0.0.1|http|localhost");
    EXPECT_FALSE(r.has_header("Strict-Transport-Security"));  // plain http
    EXPECT_EQ(r.header("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(r.header("X-Frame-Options"), "DENY");
    EXPECT_EQ(r.header("Content-Security-Policy"), "frame-ancestors 'none'");
    EXPECT_EQ(r.header("Referrer-Policy"), "strict-origin-when-cross-origin");
}

TEST_F(ProxySecurityE2E, MalformedForwardingValuesIgnored) {
    HttpResponse r =
        exchange(Client::tcp(port), get_request("/info",
                                                "X-Forwarded-For: not-an-ip\r\n"
                                                "X-Forwarded-Proto: gopher\r\n"
                                                "X-Forwarded-Host: evil.example/x\r\n"));
    EXPECT_EQ(r.body, "127.0.0.1|http|localhost");
}

TEST_F(ProxySecurityE2E, KeepAliveRequestsDoNotInheritForwardedValues) {
    Client c = Client::tcp(port);
    ASSERT_TRUE(c.send(get_request("/info", kSpoof)));
    std::optional<HttpResponse> first = c.read_response();
    ASSERT_TRUE(first) << c.error();
    EXPECT_EQ(first->body, "203.0.113.7|https|shop.example");
    ASSERT_TRUE(c.send(get_request("/info")));
    std::optional<HttpResponse> second = c.read_response();
    ASSERT_TRUE(second) << c.error();
    EXPECT_EQ(second->body, "127.0.0.1|http|localhost");
    EXPECT_FALSE(second->has_header("Strict-Transport-Security"));
}

TEST_F(ProxySecurityE2E, SecurityHeadersOnFrameworkAnswersAndHandlerHeadersKept) {
    HttpResponse nf = exchange(Client::tcp(port), get_request("/missing"));
    EXPECT_EQ(nf.status, 404);
    EXPECT_EQ(nf.header("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(nf.header("X-Frame-Options"), "DENY");

    HttpResponse framed = exchange(Client::tcp(port), get_request("/framed"));
    EXPECT_EQ(framed.header_count("X-Frame-Options"), 1U);
    EXPECT_EQ(framed.header("X-Frame-Options"), "SAMEORIGIN");
}

struct CurlOut {
    int exit = -1;
    std::string out;  // head (-D -) then body
};

CurlOut curl(const std::string& args) {
    Ran r = run_command("timeout 20 curl -sS -D - " + args + " 2>&1");
    return {r.status, std::move(r.out)};
}

TEST_F(ProxySecurityE2E, CurlOverTlsAndPlain) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    const std::string tls = "https://127.0.0.1:" + std::to_string(tls_port) + "/info";
    CurlOut s = curl("-k '" + tls + "'");
    ASSERT_EQ(s.exit, 0) << s.out;
    EXPECT_TRUE(icontains(s.out, "strict-transport-security: max-age=31536000")) << s.out;
    EXPECT_NE(s.out.find("127.0.0.1|https|127.0.0.1:" + std::to_string(tls_port)),
              std::string::npos)
        << s.out;

    const std::string plain = "http://127.0.0.1:" + std::to_string(port) + "/info";
    CurlOut p =
        curl("-H 'X-Forwarded-For: 2001:db8::5' -H 'X-Forwarded-Proto: https' '" + plain + "'");
    ASSERT_EQ(p.exit, 0) << p.out;
    EXPECT_NE(p.out.find("2001:db8::5|https|127.0.0.1:" + std::to_string(port)), std::string::npos)
        << p.out;
    EXPECT_TRUE(icontains(p.out, "x-content-type-options: nosniff")) << p.out;
}

TEST(ProxyUntrustedE2E, SpoofedHeadersFromAnUntrustedPeerAreIgnored) {
    App app;
    quick_options(app.options());
    app.use(trusted_proxies({.proxies = {"10.0.0.0/8"}, .forwarded = true}));
    app.use(security_headers());
    add_routes(app);
    start_app(app);
    HttpResponse r = exchange(Client::tcp(app.port()), get_request("/info", kSpoof));
    EXPECT_EQ(r.body, "127.0.0.1|http|localhost");
    EXPECT_FALSE(r.has_header("Strict-Transport-Security"));  // X-Forwarded-Proto not believed
}

TEST(ProxyUntrustedE2E, IPv6PeerNotInTheList) {
    App app;
    quick_options(app.options());
    app.use(trusted_proxies({.proxies = {"127.0.0.1"}}));
    add_routes(app);
    try {
        start_app(app, 1, "[::1]:0");
    } catch (const std::exception& e) {
        GTEST_SKIP() << "no IPv6 loopback: " << e.what();
    }
    HttpResponse r = exchange(Client::tcp6(app.port()), get_request("/info", kSpoof));
    EXPECT_EQ(r.body, "::1|http|localhost");
}

TEST(ProxyTrustedIPv6E2E, IPv6Proxy) {
    App app;
    quick_options(app.options());
    app.use(trusted_proxies({.proxies = {"loopback"}, .forwarded = true}));
    add_routes(app);
    try {
        start_app(app, 1, "[::1]:0");
    } catch (const std::exception& e) {
        GTEST_SKIP() << "no IPv6 loopback: " << e.what();
    }
    HttpResponse r =
        exchange(Client::tcp6(app.port()),
                 get_request("/info",
                             "Forwarded: for=\"[2001:db8::17]:4711\";proto=https;host=a.example\r\n"
                             "X-Forwarded-For: 1.1.1.1\r\n"));
    EXPECT_EQ(r.body, "2001:db8::17|https|a.example");  // Forwarded wins when both are enabled
}

}  // namespace
}  // namespace vela::e2e
