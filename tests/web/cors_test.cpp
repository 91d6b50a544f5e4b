// Tests for src/middleware/cors.cpp, calling the policy directly on Requests filled by hand: option
// checks, preflight answers (allowed, refused, wildcard, credentials, mirroring, private
// network), the headers added to other responses, Vary, and the Hooks conversion.
#include "vela/middleware/cors.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/http_response.hpp"

namespace vela {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// A request with `fields` as its headers (kept alive with it: the Request holds views).
struct Req {
    Fields fields;
    Request req;
    Req(Method m, Fields f) : fields(std::move(f)) {
        req.set_method(m, method_name(m));
        req.set_target("/api", "/api", "");
        for (const auto& [n, v] : fields) req.mutable_headers().push_back(Header{n, v});
    }
    Req(const Req&) = delete;
    Req& operator=(const Req&) = delete;
};

Fields preflight_fields(std::string origin, std::string method = "PUT", std::string headers = {}) {
    Fields f{{"Origin", std::move(origin)}, {"Access-Control-Request-Method", std::move(method)}};
    if (!headers.empty()) f.emplace_back("Access-Control-Request-Headers", std::move(headers));
    return f;
}

std::size_t count(const Response& r, std::string_view name) {
    return test::count_header_lines(r.header_block(), name);
}

bool has_cors_headers(const Response& r) {
    for (std::string_view h :
         {"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials",
          "Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age",
          "Access-Control-Expose-Headers", "Access-Control-Allow-Private-Network"})
        if (count(r, h) != 0) return true;
    return false;
}

const char* kApp = "https://app.example.com";

// ---- Options checked at construction ----------------------------------------------------------

TEST(CorsOptions, InvalidOptionsThrowOneLine) {
    struct Case {
        const char* name;
        CorsOptions o;
        const char* fragment;  // part of the message
    };
    auto pred = [](std::string_view) { return true; };
    std::vector<Case> cases;
    cases.push_back({"nothing", CorsOptions{}, "no allowed origin"});
    cases.push_back({"both", CorsOptions{.origins = {kApp}, .origin_predicate = pred}, "not both"});
    cases.push_back({"star+list", CorsOptions{.origins = {"*", kApp}}, "only origin"});
    cases.push_back({"trailing slash", CorsOptions{.origins = {"https://a.example/"}}, "path"});
    cases.push_back({"path", CorsOptions{.origins = {"https://a.example/x"}}, "path"});
    cases.push_back({"no scheme", CorsOptions{.origins = {"a.example"}}, "not an origin"});
    cases.push_back({"wildcard", CorsOptions{.origins = {"https://*.a.example"}}, "wildcard"});
    cases.push_back({"big port", CorsOptions{.origins = {"https://a.example:99999"}}, "port"});
    cases.push_back({"empty port", CorsOptions{.origins = {"https://a.example:"}}, "port"});
    cases.push_back({"no host", CorsOptions{.origins = {"https://"}}, "no host"});
    cases.push_back({"userinfo", CorsOptions{.origins = {"https://u@a.example"}}, "user"});
    cases.push_back({"bad host", CorsOptions{.origins = {"https://a b.example"}}, "host"});
    cases.push_back({"bad v6", CorsOptions{.origins = {"https://[zz]"}}, "IPv6"});
    cases.push_back({"no methods", CorsOptions{.origins = {kApp}, .methods = {}}, "method"});
    cases.push_back(
        {"bad method", CorsOptions{.origins = {kApp}, .methods = {"GET POST"}}, "method"});
    cases.push_back(
        {"star among methods", CorsOptions{.origins = {kApp}, .methods = {"GET", "*"}}, "method"});
    cases.push_back({"bad header", CorsOptions{.origins = {kApp}, .allowed_headers = {"X-A:"}},
                     "allowed header"});
    cases.push_back({"bad exposed", CorsOptions{.origins = {kApp}, .exposed_headers = {"X A"}},
                     "exposed header"});
    cases.push_back({"exposed star with credentials",
                     CorsOptions{.origins = {kApp}, .exposed_headers = {"*"}, .credentials = true},
                     "credentials"});
    cases.push_back({"negative max-age",
                     CorsOptions{.origins = {kApp}, .max_age = std::chrono::seconds(-1)},
                     "max_age"});
    for (Case& c : cases) {
        try {
            Cors cors(std::move(c.o));
            ADD_FAILURE() << c.name << ": accepted";
        } catch (const std::invalid_argument& e) {
            const std::string msg = e.what();
            EXPECT_TRUE(msg.starts_with("vela::cors: ")) << c.name << ": " << msg;
            EXPECT_NE(msg.find(c.fragment), std::string::npos) << c.name << ": " << msg;
            EXPECT_EQ(msg.find('\n'), std::string::npos) << c.name;
        }
    }
}

TEST(CorsOptions, ValidOrigins) {
    Cors c({.origins = {"null", "http://localhost:5173", "https://[::1]:8443",
                        "HTTPS://App.Example.COM", "chrome-extension://abcdef"}});
    EXPECT_TRUE(c.origin_allowed("null"));
    EXPECT_TRUE(c.origin_allowed("http://localhost:5173"));
    EXPECT_TRUE(c.origin_allowed("https://[::1]:8443"));
    EXPECT_TRUE(c.origin_allowed("https://app.example.com"));  // case-insensitive
    EXPECT_TRUE(c.origin_allowed("chrome-extension://abcdef"));
    EXPECT_FALSE(c.origin_allowed("http://localhost:5174"));
    EXPECT_FALSE(c.origin_allowed("http://localhost"));
    EXPECT_FALSE(c.origin_allowed("https://app.example.com.evil.example"));
    EXPECT_FALSE(c.origin_allowed("https://evil-app.example.com"));
    EXPECT_FALSE(c.origin_allowed(""));
}

TEST(CorsOptions, DefaultPortsAreDropped) {
    // Browsers omit the scheme's default port from Origin; a configured one would never match.
    Cors c({.origins = {"https://a.example:443", "http://b.example:80", "https://c.example:80",
                        "http://d.example:8080"}});
    EXPECT_TRUE(c.origin_allowed("https://a.example"));
    EXPECT_TRUE(c.origin_allowed("http://b.example"));
    EXPECT_TRUE(c.origin_allowed("https://c.example:80"));  // not https's default
    EXPECT_FALSE(c.origin_allowed("https://c.example"));
    EXPECT_TRUE(c.origin_allowed("http://d.example:8080"));
    EXPECT_FALSE(c.origin_allowed("https://a.example:443"));
}

TEST(CorsOptions, PredicateAndControlBytes) {
    Cors c({.origin_predicate = [](std::string_view o) {
        return o.ends_with(".example.com") && o.starts_with("https://");
    }});
    EXPECT_TRUE(c.origin_allowed("https://a.example.com"));
    EXPECT_FALSE(c.origin_allowed("http://a.example.com"));
    EXPECT_FALSE(c.origin_allowed("https://example.com.evil"));
    // An origin the predicate would accept is still refused when it could not be echoed.
    Cors any({.origin_predicate = [](std::string_view) { return true; }});
    EXPECT_FALSE(any.origin_allowed("https://a\x01.example.com"));
    EXPECT_FALSE(any.origin_allowed("https://a .example.com"));
}

// ---- Preflight -------------------------------------------------------------------------------

TEST(CorsPreflight, AllowedOrigin) {
    Cors c({.origins = {kApp}, .max_age = std::chrono::hours(2)});
    Req r(Method::OPTIONS, preflight_fields(kApp, "PUT", "content-type"));
    std::optional<Response> res = c.preflight(r.req);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status(), Status::NoContent);
    EXPECT_EQ(res->header("Access-Control-Allow-Origin"), kApp);
    EXPECT_EQ(res->header("Access-Control-Allow-Methods"), "GET, HEAD, POST, PUT, PATCH, DELETE");
    EXPECT_EQ(res->header("Access-Control-Allow-Headers"), "Content-Type, Authorization");
    EXPECT_EQ(res->header("Access-Control-Max-Age"), "7200");
    EXPECT_EQ(res->header("Vary"), "Origin");
    EXPECT_EQ(count(*res, "Access-Control-Allow-Credentials"), 0U);
    EXPECT_EQ(count(*res, "Access-Control-Allow-Private-Network"), 0U);
    EXPECT_TRUE(res->body().empty());
}

TEST(CorsPreflight, DisallowedOriginGets204WithoutCorsHeaders) {
    Cors c({.origins = {kApp}, .credentials = true, .max_age = std::chrono::seconds(60)});
    for (const char* origin : {"https://evil.example", "null", "https://app.example.com:444",
                               "http://app.example.com"}) {
        Req r(Method::OPTIONS, preflight_fields(origin));
        std::optional<Response> res = c.preflight(r.req);
        ASSERT_TRUE(res) << origin;
        EXPECT_EQ(res->status(), Status::NoContent) << origin;
        EXPECT_FALSE(has_cors_headers(*res)) << origin << "\n" << res->header_block();
        EXPECT_EQ(res->header("Vary"), "Origin") << origin;
    }
}

TEST(CorsPreflight, NotAPreflight) {
    Cors c({.origins = {kApp}});
    {
        Req r(Method::OPTIONS, {{"Origin", kApp}});  // no Access-Control-Request-Method
        EXPECT_FALSE(c.preflight(r.req));
    }
    {
        Req r(Method::OPTIONS, {{"Access-Control-Request-Method", "PUT"}});  // no Origin
        EXPECT_FALSE(c.preflight(r.req));
    }
    {
        Req r(Method::GET, preflight_fields(kApp));  // not OPTIONS
        EXPECT_FALSE(c.preflight(r.req));
    }
    {
        Req r(Method::PUT, preflight_fields(kApp));
        EXPECT_FALSE(c.preflight(r.req));
    }
}

TEST(CorsPreflight, AnyOriginWithoutCredentialsSaysStar) {
    Cors c({.origins = {"*"}});
    Req r(Method::OPTIONS, preflight_fields("https://anyone.example"));
    std::optional<Response> res = c.preflight(r.req);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->header("Access-Control-Allow-Origin"), "*");
    EXPECT_EQ(count(*res, "Vary"), 0U);  // the same answer for every origin
}

TEST(CorsPreflight, CredentialsNeverStar) {
    Cors c({.origins = {"*"}, .credentials = true});
    Req r(Method::OPTIONS, preflight_fields("https://anyone.example"));
    std::optional<Response> res = c.preflight(r.req);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->header("Access-Control-Allow-Origin"), "https://anyone.example");
    EXPECT_EQ(res->header("Access-Control-Allow-Credentials"), "true");
    EXPECT_EQ(res->header("Vary"), "Origin");
}

TEST(CorsPreflight, StarMethodsAndHeadersEcho) {
    Cors c({.origins = {kApp}, .methods = {"*"}, .allowed_headers = {"*"}, .credentials = true});
    Req r(Method::OPTIONS, preflight_fields(kApp, "PURGE", "authorization, x-trace-id"));
    std::optional<Response> res = c.preflight(r.req);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->header("Access-Control-Allow-Methods"), "PURGE");
    EXPECT_EQ(res->header("Access-Control-Allow-Headers"), "authorization, x-trace-id");
    EXPECT_EQ(res->header("Vary"), "Origin, Access-Control-Request-Headers");

    // A request header list that is not a list of names is not echoed.
    Req bad(Method::OPTIONS, preflight_fields(kApp, "GET", "x-a, x b"));
    res = c.preflight(bad.req);
    ASSERT_TRUE(res);
    EXPECT_EQ(count(*res, "Access-Control-Allow-Headers"), 0U);
    EXPECT_EQ(res->header("Access-Control-Allow-Origin"), kApp);

    // Neither is a method that is not a token.
    Req bad_method(Method::OPTIONS, preflight_fields(kApp, "GE T"));
    res = c.preflight(bad_method.req);
    ASSERT_TRUE(res);
    EXPECT_EQ(count(*res, "Access-Control-Allow-Methods"), 0U);
}

TEST(CorsPreflight, MirrorWithoutRequestHeadersSendsNone) {
    Cors c({.origins = {"*"}, .allowed_headers = {"*"}});
    Req r(Method::OPTIONS, preflight_fields(kApp, "PUT"));
    std::optional<Response> res = c.preflight(r.req);
    ASSERT_TRUE(res);
    EXPECT_EQ(count(*res, "Access-Control-Allow-Headers"), 0U);
    EXPECT_EQ(res->header("Vary"), "Access-Control-Request-Headers");
}

TEST(CorsPreflight, NoAllowedHeadersConfigured) {
    Cors c({.origins = {kApp}, .allowed_headers = {}});
    Req r(Method::OPTIONS, preflight_fields(kApp, "PUT", "x-custom"));
    std::optional<Response> res = c.preflight(r.req);
    ASSERT_TRUE(res);
    EXPECT_EQ(count(*res, "Access-Control-Allow-Headers"), 0U);
}

TEST(CorsPreflight, PrivateNetwork) {
    Fields f = preflight_fields(kApp);
    f.emplace_back("Access-Control-Request-Private-Network", "true");
    {
        Cors c({.origins = {kApp}, .private_network = true});
        Req r(Method::OPTIONS, f);
        std::optional<Response> res = c.preflight(r.req);
        ASSERT_TRUE(res);
        EXPECT_EQ(res->header("Access-Control-Allow-Private-Network"), "true");
    }
    {
        Cors c({.origins = {kApp}});  // not enabled
        Req r(Method::OPTIONS, f);
        std::optional<Response> res = c.preflight(r.req);
        ASSERT_TRUE(res);
        EXPECT_EQ(count(*res, "Access-Control-Allow-Private-Network"), 0U);
    }
    {
        Cors c({.origins = {kApp}, .private_network = true});  // not asked for
        Req r(Method::OPTIONS, preflight_fields(kApp));
        std::optional<Response> res = c.preflight(r.req);
        ASSERT_TRUE(res);
        EXPECT_EQ(count(*res, "Access-Control-Allow-Private-Network"), 0U);
    }
    {
        Cors c({.origins = {kApp}, .private_network = true});  // origin refused
        Req r(Method::OPTIONS, [&] {
            Fields g = preflight_fields("https://evil.example");
            g.emplace_back("Access-Control-Request-Private-Network", "true");
            return g;
        }());
        std::optional<Response> res = c.preflight(r.req);
        ASSERT_TRUE(res);
        EXPECT_FALSE(has_cors_headers(*res));
    }
}

// ---- Other responses -------------------------------------------------------------------------

TEST(CorsApply, AllowedOrigin) {
    Cors c({.origins = {kApp, "https://other.example"},
            .exposed_headers = {"X-Total-Count", "ETag"},
            .credentials = true});
    Req r(Method::GET, {{"Origin", kApp}});
    Response res = Response::json("[]");
    c.apply(r.req, res);
    EXPECT_EQ(res.header("Access-Control-Allow-Origin"), kApp);
    EXPECT_EQ(res.header("Access-Control-Allow-Credentials"), "true");
    EXPECT_EQ(res.header("Access-Control-Expose-Headers"), "X-Total-Count, ETag");
    EXPECT_EQ(res.header("Vary"), "Origin");
    EXPECT_EQ(count(res, "Access-Control-Allow-Methods"), 0U);  // preflight only
    EXPECT_EQ(res.body(), "[]");
}

TEST(CorsApply, DisallowedOrAbsentOriginGetsOnlyVary) {
    Cors c({.origins = {kApp}, .exposed_headers = {"X-A"}, .credentials = true});
    for (Fields f : {Fields{{"Origin", "https://evil.example"}}, Fields{}}) {
        Req r(Method::GET, f);
        Response res("hi");
        c.apply(r.req, res);
        EXPECT_FALSE(has_cors_headers(res)) << res.header_block();
        EXPECT_EQ(res.header("Vary"), "Origin");
        EXPECT_EQ(count(res, "Vary"), 1U);
    }
}

TEST(CorsApply, AnyOriginWithoutCredentialsStarOnEveryResponse) {
    Cors c({.origins = {"*"}, .exposed_headers = {"*"}});
    for (Fields f : {Fields{{"Origin", "https://x.example"}}, Fields{}}) {
        Req r(Method::POST, f);
        Response res("hi");
        c.apply(r.req, res);
        EXPECT_EQ(res.header("Access-Control-Allow-Origin"), "*");
        EXPECT_EQ(res.header("Access-Control-Expose-Headers"), "*");
        EXPECT_EQ(count(res, "Vary"), 0U);
        EXPECT_EQ(count(res, "Access-Control-Allow-Credentials"), 0U);
    }
}

TEST(CorsApply, AnyOriginWithCredentialsEchoes) {
    Cors c({.origins = {"*"}, .credentials = true});
    Req r(Method::GET, {{"Origin", "https://x.example"}});
    Response res("hi");
    c.apply(r.req, res);
    EXPECT_EQ(res.header("Access-Control-Allow-Origin"), "https://x.example");
    EXPECT_EQ(res.header("Access-Control-Allow-Credentials"), "true");
    EXPECT_EQ(res.header("Vary"), "Origin");
}

TEST(CorsApply, VaryMergesWithExisting) {
    Cors c({.origins = {kApp}});
    {
        Req r(Method::GET, {{"Origin", kApp}});
        Response res("hi");
        res.add_header("Vary", "Accept-Encoding");
        c.apply(r.req, res);
        EXPECT_EQ(count(res, "Vary"), 2U);  // a second field: Vary is a list
    }
    for (const char* existing : {"Origin", "accept-encoding, origin", "*"}) {
        Req r(Method::GET, {{"Origin", kApp}});
        Response res("hi");
        res.add_header("vary", existing);
        c.apply(r.req, res);
        EXPECT_EQ(count(res, "Vary"), 1U) << existing;
        EXPECT_EQ(res.header("Access-Control-Allow-Origin"), kApp);
    }
}

TEST(CorsApply, HandlerSetAllowOriginIsKept) {
    Cors c({.origins = {kApp}, .credentials = true});
    Req r(Method::GET, {{"Origin", kApp}});
    Response res("hi");
    res.add_header("Access-Control-Allow-Origin", "https://chosen.example");
    c.apply(r.req, res);
    EXPECT_EQ(count(res, "Access-Control-Allow-Origin"), 1U);
    EXPECT_EQ(res.header("Access-Control-Allow-Origin"), "https://chosen.example");
    EXPECT_EQ(count(res, "Access-Control-Allow-Credentials"), 0U);
    EXPECT_EQ(res.header("Vary"), "Origin");
}

TEST(CorsApply, NonPreflightOptionsIsAnOrdinaryRequest) {
    Cors c({.origins = {kApp}});
    Req r(Method::OPTIONS, {{"Origin", kApp}});
    EXPECT_FALSE(c.preflight(r.req));
    Response res(Status::NoContent);
    c.apply(r.req, res);
    EXPECT_EQ(res.header("Access-Control-Allow-Origin"), kApp);
}

// ---- As middleware ---------------------------------------------------------------------------

TEST(CorsHooks, BeforeAnswersAfterLeavesThePreflightAlone) {
    Hooks h = cors({.origins = {kApp}, .credentials = true});
    ASSERT_TRUE(h.before);
    ASSERT_TRUE(h.after);
    Req pre(Method::OPTIONS, preflight_fields(kApp));
    std::optional<Response> res = h.before(pre.req);
    ASSERT_TRUE(res);
    const std::string block(res->header_block());
    h.after(pre.req, *res);  // Hooks run the after hook on the before hook's answer too
    EXPECT_EQ(res->header_block(), block);

    Req get(Method::GET, {{"Origin", kApp}});
    EXPECT_FALSE(h.before(get.req));
    Response ok("fine");
    h.after(get.req, ok);
    EXPECT_EQ(ok.header("Access-Control-Allow-Origin"), kApp);
    EXPECT_EQ(ok.header("Access-Control-Allow-Credentials"), "true");

    // A refused preflight passes the after hook unchanged as well.
    Req refused(Method::OPTIONS, preflight_fields("https://evil.example"));
    res = h.before(refused.req);
    ASSERT_TRUE(res);
    h.after(refused.req, *res);
    EXPECT_FALSE(has_cors_headers(*res));
    EXPECT_EQ(count(*res, "Vary"), 1U);
}

TEST(CorsHooks, CopiesShareThePolicy) {
    Cors a({.origins = {kApp}});
    Cors b = a;
    EXPECT_TRUE(b.origin_allowed(kApp));
    EXPECT_FALSE(b.origin_allowed("https://x.example"));
}

}  // namespace
}  // namespace vela
