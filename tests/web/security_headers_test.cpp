// Tests for src/middleware/security_headers.cpp: the after hook called on hand-made Requests
// (plain, TLS, forwarded as https) and Responses; defaults, options, option checks, and headers the
// handler set first.
#include "vela/middleware/security_headers.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "support/http_response.hpp"

namespace vela {
namespace {

std::size_t count(const Response& r, std::string_view name) {
    return test::count_header_lines(r.header_block(), name);
}

struct Conn {
    ConnectionInfo info;
    Request req;
    explicit Conn(bool tls) {
        info.secure = tls;
        req.set_connection(&info);
    }
};

Response run(const std::function<void(Request&, Response&)>& hook, Request& req,
             Response res = Response("hello")) {
    hook(req, res);
    return res;
}

TEST(SecurityHeaders, DefaultsOverPlainHttp) {
    auto hook = security_headers();
    Conn c(false);
    Response r = run(hook, c.req);
    EXPECT_EQ(count(r, "Strict-Transport-Security"), 0U);  // never over http
    EXPECT_EQ(r.header("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(r.header("X-Frame-Options"), "DENY");
    EXPECT_EQ(r.header("Content-Security-Policy"), "frame-ancestors 'none'");
    EXPECT_EQ(r.header("Referrer-Policy"), "strict-origin-when-cross-origin");
    EXPECT_EQ(count(r, "Cross-Origin-Opener-Policy"), 0U);
    EXPECT_EQ(count(r, "Permissions-Policy"), 0U);
    EXPECT_EQ(r.body(), "hello");
}

TEST(SecurityHeaders, HstsOnTlsAndForwardedHttps) {
    auto hook = security_headers();
    {
        Conn c(true);
        EXPECT_EQ(run(hook, c.req).header("Strict-Transport-Security"), "max-age=31536000");
    }
    {
        Conn c(false);
        c.req.set_forwarded("", "https", "");  // a trusted proxy says the client used https
        EXPECT_EQ(run(hook, c.req).header("Strict-Transport-Security"), "max-age=31536000");
    }
    {
        Conn c(false);
        c.req.set_forwarded("", "http", "");
        EXPECT_EQ(count(run(hook, c.req), "Strict-Transport-Security"), 0U);
    }
}

TEST(SecurityHeaders, HstsOptions) {
    Conn c(true);
    EXPECT_EQ(run(security_headers({.hsts_max_age = std::chrono::hours(24 * 730),
                                    .hsts_include_subdomains = true,
                                    .hsts_preload = true}),
                  c.req)
                  .header("Strict-Transport-Security"),
              "max-age=63072000; includeSubDomains; preload");
    EXPECT_EQ(run(security_headers({.hsts_max_age = std::chrono::seconds(0)}), c.req)
                  .header("Strict-Transport-Security"),
              "max-age=0");
    EXPECT_EQ(count(run(security_headers({.hsts = false}), c.req), "Strict-Transport-Security"),
              0U);
}

TEST(SecurityHeaders, FrameOptions) {
    Conn c(false);
    Response same = run(security_headers({.frame = FrameOptions::same_origin}), c.req);
    EXPECT_EQ(same.header("X-Frame-Options"), "SAMEORIGIN");
    EXPECT_EQ(same.header("Content-Security-Policy"), "frame-ancestors 'self'");
    Response off = run(security_headers({.frame = FrameOptions::off}), c.req);
    EXPECT_EQ(count(off, "X-Frame-Options"), 0U);
    EXPECT_EQ(count(off, "Content-Security-Policy"), 0U);
}

TEST(SecurityHeaders, ContentSecurityPolicy) {
    Conn c(false);
    // frame-ancestors is appended when the policy has none (a trailing ';' is tidied).
    EXPECT_EQ(run(security_headers({.content_security_policy = "default-src 'self';"}), c.req)
                  .header("Content-Security-Policy"),
              "default-src 'self'; frame-ancestors 'none'");
    // ... and left alone when it has one.
    EXPECT_EQ(
        run(security_headers({.content_security_policy = std::string(csp::strict_site)}), c.req)
            .header("Content-Security-Policy"),
        csp::strict_site);
    EXPECT_EQ(
        run(security_headers({.content_security_policy = "default-src 'none'; "
                                                         "FRAME-ANCESTORS https://a.example"}),
            c.req)
            .header("Content-Security-Policy"),
        "default-src 'none'; FRAME-ANCESTORS https://a.example");
    // Report-only: the policy is reported, frame-ancestors stays enforced.
    Response ro = run(
        security_headers({.content_security_policy = "script-src 'self'", .csp_report_only = true}),
        c.req);
    EXPECT_EQ(ro.header("Content-Security-Policy-Report-Only"), "script-src 'self'");
    EXPECT_EQ(ro.header("Content-Security-Policy"), "frame-ancestors 'none'");
    EXPECT_EQ(run(security_headers({.content_security_policy = std::string(csp::api)}), c.req)
                  .header("Content-Security-Policy"),
              csp::api);
}

TEST(SecurityHeaders, OptionalHeaders) {
    Conn c(false);
    Response r = run(security_headers({.referrer_policy = "no-referrer, strict-origin",
                                       .cross_origin_opener_policy = "same-origin",
                                       .cross_origin_resource_policy = "same-site",
                                       .cross_origin_embedder_policy = "require-corp",
                                       .permissions_policy = "camera=(), geolocation=(self)"}),
                     c.req);
    EXPECT_EQ(r.header("Referrer-Policy"), "no-referrer, strict-origin");
    EXPECT_EQ(r.header("Cross-Origin-Opener-Policy"), "same-origin");
    EXPECT_EQ(r.header("Cross-Origin-Resource-Policy"), "same-site");
    EXPECT_EQ(r.header("Cross-Origin-Embedder-Policy"), "require-corp");
    EXPECT_EQ(r.header("Permissions-Policy"), "camera=(), geolocation=(self)");
    Response none = run(security_headers({.nosniff = false, .referrer_policy = ""}), c.req);
    EXPECT_EQ(count(none, "Referrer-Policy"), 0U);
    EXPECT_EQ(count(none, "X-Content-Type-Options"), 0U);
}

TEST(SecurityHeaders, HandlerHeadersAreNotOverwritten) {
    auto hook = security_headers(
        {.content_security_policy = "default-src 'self'", .permissions_policy = "camera=()"});
    Conn c(true);
    Response res("page");
    res.add_header("x-frame-options", "SAMEORIGIN");
    res.add_header("Content-Security-Policy", "default-src *");
    res.add_header("Strict-Transport-Security", "max-age=60");
    res.add_header("Referrer-Policy", "no-referrer");
    Response r = run(hook, c.req, res);
    EXPECT_EQ(count(r, "X-Frame-Options"), 1U);
    EXPECT_EQ(r.header("X-Frame-Options"), "SAMEORIGIN");
    EXPECT_EQ(count(r, "Content-Security-Policy"), 1U);
    EXPECT_EQ(r.header("Content-Security-Policy"), "default-src *");
    EXPECT_EQ(r.header("Strict-Transport-Security"), "max-age=60");
    EXPECT_EQ(r.header("Referrer-Policy"), "no-referrer");
    EXPECT_EQ(r.header("X-Content-Type-Options"), "nosniff");  // not set: added
    EXPECT_EQ(r.header("Permissions-Policy"), "camera=()");
    // Running twice (e.g. installed on the app and a group) adds nothing more.
    Response twice = run(hook, c.req, r);
    EXPECT_EQ(twice.header_block(), r.header_block());
}

TEST(SecurityHeaders, InvalidOptionsThrowOneLine) {
    struct Case {
        const char* name;
        SecurityHeadersOptions o;
        const char* fragment;
    };
    std::vector<Case> cases;
    cases.push_back({"preload without subdomains", {.hsts_preload = true}, "hsts_preload"});
    cases.push_back({"preload short",
                     {.hsts_max_age = std::chrono::seconds(86400),
                      .hsts_include_subdomains = true,
                      .hsts_preload = true},
                     "hsts_preload"});
    cases.push_back({"negative", {.hsts_max_age = std::chrono::seconds(-1)}, "negative"});
    cases.push_back({"referrer", {.referrer_policy = "always"}, "referrer_policy"});
    cases.push_back({"coop", {.cross_origin_opener_policy = "same"}, "cross_origin_opener"});
    cases.push_back({"corp", {.cross_origin_resource_policy = "anyone"}, "cross_origin_resource"});
    cases.push_back({"coep", {.cross_origin_embedder_policy = "x"}, "cross_origin_embedder"});
    cases.push_back({"csp newline",
                     {.content_security_policy = "default-src 'self'\r\nX-Evil: 1"},
                     "content_security_policy"});
    cases.push_back(
        {"permissions newline", {.permissions_policy = "camera=()\n"}, "permissions_policy"});
    cases.push_back({"report-only empty", {.csp_report_only = true}, "csp_report_only"});
    for (Case& c : cases) {
        try {
            security_headers(std::move(c.o));
            ADD_FAILURE() << c.name << ": accepted";
        } catch (const std::invalid_argument& e) {
            const std::string msg = e.what();
            EXPECT_TRUE(msg.starts_with("vela::security_headers: ")) << c.name << ": " << msg;
            EXPECT_NE(msg.find(c.fragment), std::string::npos) << c.name << ": " << msg;
            EXPECT_EQ(msg.find('\n'), std::string::npos) << c.name;
        }
    }
}

}  // namespace
}  // namespace vela
