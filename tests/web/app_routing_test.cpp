// Routing, handlers and middleware seen through vela::testing::Client in process: the
// request bytes go through vela's request parser, the App's handler and the server's response
// writer, without a socket. (What only the wire shows, pipelining and framing on a kept
// connection, stays in tests/e2e/routing_test.cpp.)

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "e2e/client.hpp"
#include "e2e/routing_routes.hpp"
#include "vela/testing/client.hpp"

namespace vela::e2e {
namespace {

class AppRoutingTest : public ::testing::Test {
  protected:
    void SetUp() override {
        add_routing_routes(app);
        client.emplace(app);  // routes are final from here on
    }

    testing::TestResponse roundtrip(const std::string& raw, bool head = false) {
        return client->raw(raw, head).get();
    }
    testing::TestResponse get(std::string_view path, std::string_view extra = {}) {
        return roundtrip(get_request(path, extra));
    }

    App app;
    std::optional<testing::Client> client;
};

bool announces_close(const testing::TestResponse& r) {
    return icontains(r.header("Connection"), "close");
}

TEST_F(AppRoutingTest, UnknownPathIs404) {
    auto r = get("/no/such/thing");
    EXPECT_EQ(r.status(), 404);
    EXPECT_FALSE(announces_close(r));
    r = get("/users/1");  // keep-alive after a 404
    EXPECT_EQ(r.status(), 200);
}

TEST_F(AppRoutingTest, WrongMethodIs405WithAllow) {
    auto r = roundtrip(request_with_body("POST", "/only-get", ""));
    EXPECT_EQ(r.status(), 405);
    EXPECT_EQ(r.header("Allow"), "GET, HEAD, OPTIONS");
    r = roundtrip(request_with_body("POST", "/things/3", "x"));
    EXPECT_EQ(r.status(), 405);
    const std::string allow(r.header("Allow"));
    EXPECT_NE(allow.find("PUT"), std::string::npos) << allow;
    EXPECT_NE(allow.find("DELETE"), std::string::npos) << allow;
    EXPECT_EQ(allow.find("GET"), std::string::npos) << allow;
}

TEST_F(AppRoutingTest, AutomaticOptions) {
    auto r = roundtrip("OPTIONS /only-get HTTP/1.1\r\nHost: localhost\r\n\r\n");
    EXPECT_EQ(r.status(), 204);
    EXPECT_EQ(r.header("Allow"), "GET, HEAD, OPTIONS");
    EXPECT_FALSE(r.has_header("Content-Length"));  // RFC 9110 8.6: none in 204
    r = roundtrip("OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n");
    EXPECT_EQ(r.status(), 204);
    EXPECT_NE(r.header("Allow").find("DELETE"), std::string::npos);
    r = get("/only-get");  // in sync afterwards
    EXPECT_EQ(r.body(), "got");
}

TEST_F(AppRoutingTest, OptionsOnUnknownPathIs404) {
    auto r = roundtrip("OPTIONS /no/such/thing HTTP/1.1\r\nHost: localhost\r\n\r\n");
    EXPECT_EQ(r.status(), 404);
}

TEST_F(AppRoutingTest, AbsoluteFormTarget) {
    auto r = roundtrip("GET http://localhost/users/31?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "31");
}

TEST_F(AppRoutingTest, HeaderInjectionIsRefused) {
    auto r = get("/inject");
    EXPECT_EQ(r.status(), 500);
    EXPECT_FALSE(r.has_header("Set-Cookie"));
    r = get("/users/3");
    EXPECT_EQ(r.body(), "3");
}

TEST_F(AppRoutingTest, TypedParameter) {
    auto r = get("/items/42");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "item 42");
    r = get("/items/abc");
    EXPECT_EQ(r.status(), 404);
}

TEST_F(AppRoutingTest, PercentEncodedParameter) {
    auto r = get("/users/a%20b");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "a b");
}

TEST_F(AppRoutingTest, Wildcard) {
    auto r = get("/static/css/site.css");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "file:css/site.css");
    r = get("/static/");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "file:");
}

TEST_F(AppRoutingTest, HeadOnParameterRoute) {
    auto r = roundtrip("HEAD /users/12345 HTTP/1.1\r\nHost: localhost\r\n\r\n", true);
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.header("Content-Length"), "5");
    EXPECT_TRUE(r.body().empty());
    r = get("/users/6");
    EXPECT_EQ(r.body(), "6");
}

TEST_F(AppRoutingTest, HandlerExceptionIs500WithoutDetailsAndKeepsConnection) {
    auto r = get("/throw");
    EXPECT_EQ(r.status(), 500);
    EXPECT_EQ(r.body().find(kSecret), std::string::npos) << "exception text leaked: " << r.body();
    EXPECT_FALSE(announces_close(r));
    r = get("/users/5");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "5");
}

TEST_F(AppRoutingTest, AsyncHandlerExceptionIs500WithoutDetailsAndKeepsConnection) {
    auto r = get("/throw-async");
    EXPECT_EQ(r.status(), 500);
    EXPECT_EQ(r.body().find(kSecret), std::string::npos) << "exception text leaked: " << r.body();
    r = get("/users/5");
    EXPECT_EQ(r.status(), 200);
}

TEST_F(AppRoutingTest, AsyncHandlerWithSleep) {
    auto r = get("/async?n=1");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "async 1");
}

TEST_F(AppRoutingTest, OnionMiddlewareAddsHeader) {
    auto r = get("/api/who");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "onion");
    EXPECT_EQ(r.header("X-Onion"), "out");
    r = get("/users/1");  // outside the group: untouched
    EXPECT_FALSE(r.has_header("X-Onion"));
}

TEST_F(AppRoutingTest, BeforeHookShortCircuitsWith401) {
    auto r = get("/admin/panel");
    EXPECT_EQ(r.status(), 401);
    EXPECT_EQ(r.body(), "authorization required");
    r = get("/admin/panel", "Authorization: Bearer x\r\n");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "panel");
}

TEST_F(AppRoutingTest, AfterHookModifiesResponse) {
    auto r = get("/after/x");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.header("X-After"), "1");
    EXPECT_EQ(r.body(), "handler (after)");
    EXPECT_EQ(r.header("Content-Length"), std::to_string(r.body().size()));
    r = get("/after/async");
    EXPECT_EQ(r.header("X-After"), "1");
    EXPECT_EQ(r.body(), "async handler (after)");
}

}  // namespace
}  // namespace vela::e2e
