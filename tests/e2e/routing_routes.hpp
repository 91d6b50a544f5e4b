#pragma once
// The routes of the routing tests: tests/e2e/routing_test.cpp (on a real socket) and
// tests/web/app_routing_test.cpp (in process, vela::testing::Client) run the same app.

#include <optional>
#include <stdexcept>
#include <string>

#include "e2e/client.hpp"

namespace vela::e2e {

/// Text an exception carries that must never reach a client.
inline constexpr std::string_view kSecret = "secret-detail-4711";

/// add_basic_routes plus typed, wildcard, throwing, async and bodiless routes, and groups
/// with onion, before and after middleware.
inline void add_routing_routes(App& app) {
    quick_options(app.options());
    add_basic_routes(app);
    app.get("/items/{id:int}", [](Request& r) { return "item " + std::string(r.param("id")); });
    app.get("/static/{*path}", [](Request& r) { return "file:" + std::string(r.param("path")); });
    app.get("/only-get", [] { return "got"; });
    app.del("/things/{id}", [](Request& r) { return "deleted " + std::string(r.param("id")); });
    app.put("/things/{id}", [](Request& r) { return "put " + std::string(r.param("id")); });
    app.get("/throw", [](Request&) -> Response { throw std::runtime_error(std::string(kSecret)); });
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
    api.get("/who", [](Request& r) { return std::string(r.attribute("seen").value_or("none")); });

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
}

}  // namespace vela::e2e
