// Routing, handlers and middleware seen from a client over a real socket.

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "e2e/client.hpp"

namespace vela::e2e {
namespace {

constexpr std::string_view kSecret = "secret-detail-4711";

class RoutingTest : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        add_basic_routes(app);
        app.get("/items/{id:int}", [](Request& r) { return "item " + std::string(r.param("id")); });
        app.get("/static/{*path}",
                [](Request& r) { return "file:" + std::string(r.param("path")); });
        app.get("/only-get", [] { return "got"; });
        app.del("/things/{id}", [](Request& r) { return "deleted " + std::string(r.param("id")); });
        app.put("/things/{id}", [](Request& r) { return "put " + std::string(r.param("id")); });
        app.get("/throw",
                [](Request&) -> Response { throw std::runtime_error(std::string(kSecret)); });
        app.get("/throw-async", [](Request&) -> Task<Response> {
            co_await vela::sleep(5ms);
            throw std::runtime_error(std::string(kSecret));
        });
        app.get("/async", [](Request& r) -> Task<Response> {
            co_await vela::sleep(10ms);
            co_return "async " + std::string(r.query("n").value_or("?"));
        });

        app.get("/inject", [] {
            Response r("x");
            r.add_header("X-A", "a\r\nSet-Cookie: evil=1");  // header injection: throws
            return r;
        });
        app.get("/no-content", [] { return Status::NoContent; });
        app.get("/not-modified",
                [] { return Response::text("must not be sent", Status::NotModified); });
        app.get("/created", [] { return 201; });

        // Onion middleware adding a header on the way out.
        auto api = app.group("/api");
        api.use([](Request& req, Next next) -> Task<Response> {
            req.set_attribute("seen", "onion");
            Response res = co_await next();
            res.add_header("X-Onion", "out");
            co_return res;
        });
        api.get("/who",
                [](Request& r) { return std::string(r.attribute("seen").value_or("none")); });

        // Synchronous before hook that short-circuits with 401.
        auto admin = app.group("/admin");
        admin.use([](Request& req) -> std::optional<Response> {
            if (req.header("Authorization").empty())
                return Response::text("authorization required", Status::Unauthorized);
            return std::nullopt;
        });
        admin.get("/panel", [] { return "panel"; });

        // Synchronous after hook that rewrites the response.
        auto after = app.group("/after");
        after.use([](Request&, Response& res) {
            res.add_header("X-After", "1");
            res.set_body(res.body() + " (after)");
        });
        after.get("/x", [] { return "handler"; });
        after.get("/async", [](Request&) -> Task<Response> {
            co_await vela::sleep(5ms);
            co_return "async handler";
        });

        start_app(app);
        client = Client::tcp(app.port());
        ASSERT_TRUE(client.connected());
    }

    std::optional<HttpResponse> roundtrip(const std::string& raw, bool head = false) {
        if (!client.send(raw)) return std::nullopt;
        return client.read_response(head);
    }
    std::optional<HttpResponse> get(std::string_view path, std::string_view extra = {}) {
        return roundtrip(get_request(path, extra));
    }

    App app;
    Client client;
};

TEST_F(RoutingTest, UnknownPathIs404) {
    auto r = get("/no/such/thing");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 404);
    EXPECT_FALSE(r->announces_close());
    r = get("/users/1");  // keep-alive after a 404
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
}

TEST_F(RoutingTest, WrongMethodIs405WithAllow) {
    auto r = roundtrip(request_with_body("POST", "/only-get", ""));
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 405);
    EXPECT_EQ(r->header("Allow"), "GET, HEAD, OPTIONS");
    r = roundtrip(request_with_body("POST", "/things/3", "x"));
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 405);
    const std::string allow = r->header("Allow");
    EXPECT_NE(allow.find("PUT"), std::string::npos) << allow;
    EXPECT_NE(allow.find("DELETE"), std::string::npos) << allow;
    EXPECT_EQ(allow.find("GET"), std::string::npos) << allow;
}

TEST_F(RoutingTest, AutomaticOptions) {
    auto r = roundtrip("OPTIONS /only-get HTTP/1.1\r\nHost: localhost\r\n\r\n");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 204);
    EXPECT_EQ(r->header("Allow"), "GET, HEAD, OPTIONS");
    EXPECT_FALSE(r->has_header("Content-Length"));  // RFC 9110 8.6: none in 204
    r = roundtrip("OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 204);
    EXPECT_NE(r->header("Allow").find("DELETE"), std::string::npos);
    r = get("/only-get");  // in sync afterwards
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->body, "got");
}

TEST_F(RoutingTest, OptionsOnUnknownPathIs404) {
    auto r = roundtrip("OPTIONS /no/such/thing HTTP/1.1\r\nHost: localhost\r\n\r\n");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 404);
}

TEST_F(RoutingTest, AbsoluteFormTarget) {
    auto r = roundtrip("GET http://localhost/users/31?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "31");
}

TEST_F(RoutingTest, BodilessStatusesKeepFraming) {
    auto r = get("/no-content");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 204);
    EXPECT_FALSE(r->has_header("Content-Length"));
    r = get("/not-modified");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 304);
    EXPECT_FALSE(client.readable_within(50ms)) << "a 304 carried body bytes: " << client.pending();
    r = get("/created");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 201);
    r = get("/users/2");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->body, "2");
}

TEST_F(RoutingTest, HeaderInjectionIsRefused) {
    auto r = get("/inject");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 500);
    EXPECT_FALSE(r->has_header("Set-Cookie"));
    r = get("/users/3");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->body, "3");
}

TEST_F(RoutingTest, TypedParameter) {
    auto r = get("/items/42");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "item 42");
    r = get("/items/abc");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 404);
}

TEST_F(RoutingTest, PercentEncodedParameter) {
    auto r = get("/users/a%20b");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "a b");
}

TEST_F(RoutingTest, Wildcard) {
    auto r = get("/static/css/site.css");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "file:css/site.css");
    r = get("/static/");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "file:");
}

TEST_F(RoutingTest, HeadOnParameterRoute) {
    auto r = roundtrip("HEAD /users/12345 HTTP/1.1\r\nHost: localhost\r\n\r\n", true);
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("Content-Length"), "5");
    EXPECT_TRUE(r->body.empty());
    r = get("/users/6");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->body, "6");
}

TEST_F(RoutingTest, HandlerExceptionIs500WithoutDetailsAndKeepsConnection) {
    auto r = get("/throw");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 500);
    EXPECT_EQ(r->body.find(kSecret), std::string::npos) << "exception text leaked: " << r->body;
    EXPECT_FALSE(r->announces_close());
    r = get("/users/5");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "5");
}

TEST_F(RoutingTest, AsyncHandlerExceptionIs500WithoutDetailsAndKeepsConnection) {
    auto r = get("/throw-async");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 500);
    EXPECT_EQ(r->body.find(kSecret), std::string::npos) << "exception text leaked: " << r->body;
    r = get("/users/5");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
}

TEST_F(RoutingTest, AsyncHandlerWithSleep) {
    auto r = get("/async?n=1");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "async 1");
}

TEST_F(RoutingTest, PipelinedAsyncAndSyncHandlersKeepOrder) {
    std::string batch;
    for (int i = 0; i < 6; ++i) {
        batch += i % 2 ? get_request("/users/" + std::to_string(i))
                       : get_request("/async?n=" + std::to_string(i));
    }
    ASSERT_TRUE(client.send(batch));
    for (int i = 0; i < 6; ++i) {
        auto r = client.read_response();
        ASSERT_TRUE(r) << i << ": " << client.error();
        EXPECT_EQ(r->body, i % 2 ? std::to_string(i) : "async " + std::to_string(i));
    }
}

TEST_F(RoutingTest, OnionMiddlewareAddsHeader) {
    auto r = get("/api/who");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "onion");
    EXPECT_EQ(r->header("X-Onion"), "out");
    r = get("/users/1");  // outside the group: untouched
    ASSERT_TRUE(r) << client.error();
    EXPECT_FALSE(r->has_header("X-Onion"));
}

TEST_F(RoutingTest, BeforeHookShortCircuitsWith401) {
    auto r = get("/admin/panel");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(r->body, "authorization required");
    r = get("/admin/panel", "Authorization: Bearer x\r\n");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "panel");
}

TEST_F(RoutingTest, AfterHookModifiesResponse) {
    auto r = get("/after/x");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("X-After"), "1");
    EXPECT_EQ(r->body, "handler (after)");
    EXPECT_EQ(r->header("Content-Length"), std::to_string(r->body.size()));
    r = get("/after/async");
    ASSERT_TRUE(r) << client.error();
    EXPECT_EQ(r->header("X-After"), "1");
    EXPECT_EQ(r->body, "async handler (after)");
}

// Routes and middleware are fixed when the app starts (the loops read them without locks):
// adding either afterwards throws, and the running app is unaffected.
TEST(RoutingAfterStart, AddingRoutesOrMiddlewareAfterStartThrows) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    Group api = app.group("/api");
    api.get("/x", [] { return "x"; });
    start_app(app);
    EXPECT_THROW(app.get("/late", [] { return "late"; }), std::logic_error);
    EXPECT_THROW(app.use([](Request&) {}), std::logic_error);
    EXPECT_THROW(api.use([](Request&) {}), std::logic_error);
    EXPECT_THROW(api.get("/y", [] { return "y"; }), std::logic_error);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/api/x") + get_request("/late")));
    auto x = c.read_response();
    auto late = c.read_response();
    ASSERT_TRUE(x && late) << c.error();
    EXPECT_EQ(x->body, "x");
    EXPECT_EQ(late->status, 404);
}

}  // namespace
}  // namespace vela::e2e
