// Routing seen on a real socket where the wire matters: framing of bodiless statuses on a kept
// connection, pipelined async and sync handlers, routes fixed once the app listens. The
// routing, handler and middleware behaviour is tested in process in
// tests/web/app_routing_test.cpp (vela::testing::Client).

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "e2e/client.hpp"
#include "e2e/routing_routes.hpp"

namespace vela::e2e {
namespace {

class RoutingTest : public ::testing::Test {
  protected:
    void SetUp() override {
        add_routing_routes(app);
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
