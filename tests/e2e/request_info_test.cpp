// End-to-end: what a request knows of its connection (peer address, TLS, the scheme), typed
// per-request values, error pages for every status the framework or a handler produces, and
// middleware running for requests that match no route.

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "e2e/client.hpp"
#include "e2e/process.hpp"
#include "e2e/sound.hpp"
#include "tls/certs.hpp"
#include "vela/web/http_error.hpp"

namespace vela::e2e {
namespace {

std::string info_of(const Request& r) {
    return std::string(r.remote_ip()) + " " + (r.remote_port() ? "port" : "noport") + " " +
           std::string(r.scheme()) + " " + (r.secure() ? "secure" : "plain") + " " +
           std::string(r.client_ip());
}

TEST(RequestInfo, PeerAddressOverIpv4AndIpv6) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.get("/me", [](Request& r) { return info_of(r); });
    app.listen("127.0.0.1:0");
    app.listen("[::1]:0");
    app.start(1);

    Client c4 = Client::tcp(app.port(0));
    ASSERT_TRUE(c4.send(get_request("/me")));
    auto r4 = c4.read_response();
    ASSERT_TRUE(r4);
    EXPECT_EQ(r4->body, "127.0.0.1 port http plain 127.0.0.1");

    Client c6 = Client::tcp6(app.port(1));
    if (!c6.connected()) GTEST_SKIP() << "no IPv6 loopback";
    ASSERT_TRUE(c6.send(get_request("/me")));
    auto r6 = c6.read_response();
    ASSERT_TRUE(r6);
    EXPECT_EQ(r6->body, "::1 port http plain ::1");
}

TEST(RequestInfo, SecureAndSchemeOverTlsWithHttp1AndHttp2) {
    App app;
    quick_options(app.options());
    app.get("/me", [](Request& r) { return info_of(r) + " " + std::to_string(r.version()); });
    TlsOptions tls;
    tls.cert = test::test_certs().server_ec_cert;
    tls.key = test::test_certs().server_ec_key;
    app.listen_tls("127.0.0.1:0", tls);
    app.start(1);
    const std::string base = "curl -sS --max-time 10 --cacert " + test::test_certs().ca +
                             " --resolve localhost:" + std::to_string(app.port()) +
                             ":127.0.0.1 https://localhost:" + std::to_string(app.port()) + "/me";
    EXPECT_EQ(shell(base + " --http1.1"), "127.0.0.1 port https secure 127.0.0.1 11");
    EXPECT_EQ(shell(base + " --http2"), "127.0.0.1 port https secure 127.0.0.1 20");
}

TEST(RequestInfo, H2cPriorKnowledgeKeepsThePeer) {
    App app;
    quick_options(app.options());
    app.get("/me", [](Request& r) { return info_of(r) + " " + std::to_string(r.version()); });
    start_app(app);
    EXPECT_EQ(shell("curl -sS --max-time 10 --http2-prior-knowledge http://127.0.0.1:" +
                    std::to_string(app.port()) + "/me"),
              "127.0.0.1 port http plain 127.0.0.1 20");
    // Upgrade: h2c hands the connection (and its peer) to the HTTP/2 driver.
    EXPECT_EQ(shell("curl -sS --max-time 10 --http2 http://127.0.0.1:" +
                    std::to_string(app.port()) + "/me"),
              "127.0.0.1 port http plain 127.0.0.1 20");
}

struct User {
    std::string name;
};

TEST(RequestInfo, TypedValuesPassFromMiddlewareToHandlerAndDoNotLeakToTheNextRequest) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.use([](Request& r) {
        if (r.header("X-User").empty()) return;
        r.set_local<User>(User{std::string(r.header("X-User"))});
    });
    app.get("/who", [](Request& r) {
        const User* u = r.local<User>();
        return u ? u->name : std::string("nobody");
    });
    start_app(app);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/who", "X-User: alice\r\n")));
    auto a = c.read_response();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->body, "alice");
    ASSERT_TRUE(c.send(get_request("/who")));  // same connection, same pooled Request
    auto b = c.read_response();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->body, "nobody");
}

TEST(RequestInfo, ForwardedValuesAreKeptPerRequest) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.use([](Request& r) {
        if (r.header("X-Test-Forward") == "yes") r.set_forwarded("203.0.113.9", "https", "ex.com");
    });
    app.get("/me", [](Request& r) {
        return std::string(r.client_ip()) + " " + std::string(r.scheme()) + " " +
               std::string(r.host());
    });
    start_app(app);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/me", "X-Test-Forward: yes\r\n")));
    auto a = c.read_response();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->body, "203.0.113.9 https ex.com");
    ASSERT_TRUE(c.send(get_request("/me")));
    auto b = c.read_response();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->body, "127.0.0.1 http localhost");
}

// ---- error pages --------------------------------------------------------------------------

void add_error_routes(App& app) {
    add_basic_routes(app);
    app.get("/bare404", [] { return Status::NotFound; });
    app.get("/bare503", [] { return Status::ServiceUnavailable; });
    app.get("/bare204", [] { return Status::NoContent; });
    app.get("/own", [] { return Response::text("my own words", Status::NotFound); });
    app.get("/throws", []() -> Response { throw std::runtime_error("secret detail"); });
    app.get("/http-error",
            []() -> Response { throw HttpError(Status::Conflict, "item 7 already exists"); });
    app.get("/async-bare", []() -> Task<Response> { co_return Status::Forbidden; });
}

std::optional<HttpResponse> get(App& app, std::string_view path, std::string_view extra = {}) {
    Client c = Client::tcp(app.port());
    if (!c.send(get_request(path, extra))) return std::nullopt;
    return c.read_response();
}

TEST(ErrorPages, BareStatusesGetTheSameBodyAsTheFrameworksOwn) {
    App app;
    quick_options(app.options());
    add_error_routes(app);
    start_app(app);
    auto router404 = get(app, "/nowhere");
    auto bare404 = get(app, "/bare404");
    ASSERT_TRUE(router404 && bare404);
    EXPECT_EQ(router404->status, 404);
    EXPECT_EQ(bare404->status, 404);
    EXPECT_EQ(bare404->body, router404->body);
    EXPECT_EQ(bare404->body, "Not Found");
    EXPECT_EQ(bare404->header("Content-Type"), router404->header("Content-Type"));
    auto async_bare = get(app, "/async-bare");
    ASSERT_TRUE(async_bare);
    EXPECT_EQ(async_bare->status, 403);
    EXPECT_EQ(async_bare->body, "Forbidden");
    auto b503 = get(app, "/bare503");
    ASSERT_TRUE(b503);
    EXPECT_EQ(b503->body, "Service Unavailable");
    auto b204 = get(app, "/bare204");  // not an error: stays empty
    ASSERT_TRUE(b204);
    EXPECT_EQ(b204->status, 204);
    EXPECT_EQ(b204->body, "");
    auto own = get(app, "/own");  // a body of the handler's own is kept
    ASSERT_TRUE(own);
    EXPECT_EQ(own->body, "my own words");
    auto thrown = get(app, "/throws");
    ASSERT_TRUE(thrown);
    EXPECT_EQ(thrown->status, 500);
    EXPECT_EQ(thrown->body, "Internal Server Error");  // no detail without debug_errors
    auto conflict = get(app, "/http-error");
    ASSERT_TRUE(conflict);
    EXPECT_EQ(conflict->status, 409);
    EXPECT_EQ(conflict->body, "Conflict: item 7 already exists");
    expect_server_sound(app);
}

TEST(ErrorPages, ProblemJsonForEveryErrorTheFrameworkGenerates) {
    App app;
    quick_options(app.options());
    app.options().limits.max_body = 16;
    add_error_routes(app);
    app.error_pages({.format = ErrorFormat::problem_json});
    start_app(app);
    const auto check = [](const std::optional<HttpResponse>& r, int status, const char* title) {
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, status);
        EXPECT_EQ(r->header("Content-Type"), "application/problem+json");
        EXPECT_NE(r->body.find(std::string("\"title\":\"") + title + "\""), std::string::npos)
            << r->body;
        EXPECT_NE(r->body.find("\"status\":" + std::to_string(status)), std::string::npos);
    };
    check(get(app, "/nowhere"), 404, "Not Found");
    check(get(app, "/bare404"), 404, "Not Found");
    check(get(app, "/throws"), 500, "Internal Server Error");
    check(get(app, "/http-error"), 409, "Conflict");
    {
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send(request_with_body("DELETE", "/hello", "")));
        auto r = c.read_response();
        check(r, 405, "Method Not Allowed");
        EXPECT_EQ(r->header("Allow"), "GET, HEAD, OPTIONS");
    }
    {
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send("BREW / HTTP/1.1\r\nHost: x\r\n\r\n"));
        check(c.read_response(), 501, "Not Implemented");
    }
    {  // generated by the server before any routing: a body over the limit
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send(request_with_body("POST", "/echo", std::string(100, 'x'))));
        check(c.read_response(), 413, "Content Too Large");
    }
    {  // a malformed request line
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send("GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n"));
        auto r = c.read_response();
        check(r, 400, "Bad Request");
    }
    expect_server_sound(app);
}

TEST(ErrorPages, AUserRendererWritesEveryErrorBody) {
    App app;
    quick_options(app.options());
    add_error_routes(app);
    app.error_pages({.render = [](const Request* req, Response& r, std::string_view) {
        if (r.status() == Status::ServiceUnavailable) return;  // left bare: the format applies
        r.set_body("<p>oops " + std::to_string(static_cast<int>(r.status())) +
                   (req ? " at " + std::string(req->path()) : std::string(" early")) + "</p>");
        r.set_content_type(mime::html);
    }});
    start_app(app);
    auto a = get(app, "/nowhere");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->body, "<p>oops 404 at /nowhere</p>");
    EXPECT_EQ(a->header("Content-Type"), "text/html; charset=utf-8");
    auto b = get(app, "/bare404");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->body, "<p>oops 404 at /bare404</p>");
    auto c503 = get(app, "/bare503");
    ASSERT_TRUE(c503);
    EXPECT_EQ(c503->body, "Service Unavailable");
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n"));
    auto bad = c.read_response();
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_EQ(bad->body, "<p>oops 400 early</p>");
    expect_server_sound(app);
}

TEST(ErrorPages, HtmlFormatEscapesTheDetail) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.get("/x", []() -> Response { throw HttpError(Status::BadRequest, "<script>"); });
    app.error_pages({.format = ErrorFormat::html});
    start_app(app);
    auto r = get(app, "/x");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("<h1>400 Bad Request</h1>"), std::string::npos) << r->body;
    EXPECT_NE(r->body.find("&lt;script&gt;"), std::string::npos);
    EXPECT_EQ(r->body.find("<script>"), std::string::npos);
}

// ---- middleware on unrouted requests --------------------------------------------------------

TEST(UnroutedMiddleware, GlobalMiddlewareRunsFor404And405AndAutomaticOptions) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.use([](Request&, Response& r) { r.add_header("X-Global", "1"); });
    auto api = app.group("/api");
    api.use([](Request& req) -> std::optional<Response> {
        if (req.method() == Method::OPTIONS && req.has_header("Origin")) {
            Response r(Status::NoContent);
            r.add_header("X-Preflight", "api");
            return r;
        }
        return std::nullopt;
    });
    api.get("/items", [] { return "items"; });
    start_app(app);

    auto nf = get(app, "/nowhere");
    ASSERT_TRUE(nf);
    EXPECT_EQ(nf->status, 404);
    EXPECT_EQ(nf->header("X-Global"), "1");

    Client c = Client::tcp(app.port());
    ASSERT_TRUE(
        c.send("OPTIONS /api/items HTTP/1.1\r\nHost: x\r\nOrigin: http://a.example\r\n"
               "Access-Control-Request-Method: POST\r\n\r\n"));
    auto pre = c.read_response();
    ASSERT_TRUE(pre);
    EXPECT_EQ(pre->status, 204);
    EXPECT_EQ(pre->header("X-Preflight"), "api");  // the group's middleware answered
    EXPECT_EQ(pre->header("X-Global"), "1");

    ASSERT_TRUE(c.send("OPTIONS /api/items HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto opt = c.read_response();
    ASSERT_TRUE(opt);
    EXPECT_EQ(opt->status, 204);
    EXPECT_EQ(opt->header("Allow"), "GET, HEAD, OPTIONS");
    EXPECT_FALSE(opt->has_header("X-Preflight"));

    ASSERT_TRUE(c.send(request_with_body("POST", "/api/items", "")));
    auto na = c.read_response();
    ASSERT_TRUE(na);
    EXPECT_EQ(na->status, 405);
    EXPECT_EQ(na->header("X-Global"), "1");
    expect_server_sound(app);
}

}  // namespace
}  // namespace vela::e2e

namespace vela::e2e {
namespace {

// A Hooks middleware is one synchronous middleware: its after hook runs on the answer of its
// own before hook too, and the route stays on the synchronous path.
TEST(HooksMiddleware, BeforeAndAfterAsOneMiddleware) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.use(Hooks{.before = [](Request& r) -> std::optional<Response> {
                      if (r.header("X-Stop") == "1") return Response::text("stopped");
                      return std::nullopt;
                  },
                  .after = [](Request&, Response& r) { r.add_header("X-After", "1"); }});
    app.use([](Request&, Response& r) { r.add_header("X-Inner", "1"); });
    start_app(app);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/hello")));
    auto a = c.read_response();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->body, "Hello, World!");
    EXPECT_EQ(a->header("X-After"), "1");
    EXPECT_EQ(a->header("X-Inner"), "1");
    ASSERT_TRUE(c.send(get_request("/hello", "X-Stop: 1\r\n")));
    auto b = c.read_response();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->body, "stopped");
    EXPECT_EQ(b->header("X-After"), "1");    // its own after hook ran
    EXPECT_FALSE(b->has_header("X-Inner"));  // the inner one did not
}

// The same with an onion in the chain (the asynchronous path).
TEST(HooksMiddleware, InAnAsynchronousChain) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.use(Hooks{.before = [](Request& r) -> std::optional<Response> {
                      if (r.header("X-Stop") == "1") return Response::text("stopped");
                      return std::nullopt;
                  },
                  .after = [](Request&, Response& r) { r.add_header("X-After", "1"); }});
    app.use([](Request&, Next next) -> Task<Response> {
        Response r = co_await next();
        r.add_header("X-Onion", "1");
        co_return r;
    });
    start_app(app);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/hello")));
    auto a = c.read_response();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->header("X-After"), "1");
    EXPECT_EQ(a->header("X-Onion"), "1");
    ASSERT_TRUE(c.send(get_request("/hello", "X-Stop: 1\r\n")));
    auto b = c.read_response();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->body, "stopped");
    EXPECT_EQ(b->header("X-After"), "1");
    EXPECT_FALSE(b->has_header("X-Onion"));
}

}  // namespace
}  // namespace vela::e2e

namespace vela::e2e {
namespace {

// What an onion middleware throws in an asynchronous chain becomes the error answer the
// outer after hooks see (an access log logs it, CORS headers go on it).
TEST(HooksMiddleware, ExceptionsFromMiddlewareReachTheOuterAfterHooks) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.use([](Request&, Response& r) { r.add_header("X-Outer", "1"); });
    app.use([](Request& req, Next next) -> Task<Response> {
        if (req.header("X-Throw") == "1") throw HttpError(Status::Forbidden, "no");
        co_return co_await next();
    });
    app.use([](Request& req, Response&) {  // an after hook that throws
        if (req.header("X-Throw") == "2") throw std::runtime_error("after hook failed");
    });
    start_app(app);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/hello", "X-Throw: 1\r\n")));
    auto a = c.read_response();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 403);
    EXPECT_EQ(a->body, "Forbidden: no");
    EXPECT_EQ(a->header("X-Outer"), "1");
    ASSERT_TRUE(c.send(get_request("/hello", "X-Throw: 2\r\n")));
    auto b = c.read_response();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->status, 500);
    EXPECT_EQ(b->header("X-Outer"), "1");
    expect_server_sound(app);
}

// The same on the synchronous path: an after hook that throws leaves the outer ones running.
TEST(HooksMiddleware, AnAfterHookThatThrowsOnTheSyncPath) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.use([](Request&, Response& r) { r.add_header("X-Outer", "1"); });
    app.use([](Request&, Response&) { throw std::runtime_error("after hook failed"); });
    start_app(app);
    auto r = get(app, "/hello");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    EXPECT_EQ(r->body, "Internal Server Error");
    EXPECT_EQ(r->header("X-Outer"), "1");
}

}  // namespace
}  // namespace vela::e2e
