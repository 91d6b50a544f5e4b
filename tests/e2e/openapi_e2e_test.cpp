// The OpenAPI document served by a real App on loopback: fetched over a socket, parsed, and
// compared with what openapi::document() builds; the documented routes answer as described.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "client.hpp"
#include "vela/ops/openapi.hpp"
#include "vela/vela.hpp"

namespace oa_e2e {

struct Todo {
    std::int64_t id = 0;
    std::string title;
    bool done = false;
    std::vector<Todo> subtasks;
};
VELA_REFLECT(Todo, VELA_REQUIRED(id), VELA_REQUIRED(title), done, subtasks)

struct Filter {
    std::optional<bool> done;
    int limit = 20;
};
VELA_REFLECT(Filter, done, limit)

}  // namespace oa_e2e

namespace vela::e2e {
namespace {

using json::Value;
using oa_e2e::Filter;
using oa_e2e::Todo;

class OpenApiE2E : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app_.options());
        app_.get("/todos/{id:int}",
                 [](Request& r) {
                     return Todo{r.param_int("id").value_or(0), "t", false, {}};
                 })
            .summary("One todo")
            .tag("todos");
        app_.get(
                "/todos",
                [](Query<Filter> f) {
                    return std::vector<Todo>(static_cast<std::size_t>(f->limit > 2 ? 2 : f->limit));
                })
            .tag("todos");
        vela::openapi_spec(app_,
                           {.title = "Todos", .version = "0.3.0", .path = "/api/openapi.json"});
        // Registered after openapi(): the document is built at its first request, so it is in.
        app_.post("/todos", [](Json<Todo> t) -> Task<Json<Todo>> { co_return std::move(t); })
            .response<Todo>(201, "Created");
        start_app(app_, 2);
    }

    HttpResponse fetch(std::string_view path) {
        Client c = Client::tcp(app_.port());
        EXPECT_TRUE(c.send(get_request(path)));
        std::optional<HttpResponse> r = c.read_response();
        EXPECT_TRUE(r.has_value()) << c.error();
        return r.value_or(HttpResponse{});
    }

    App app_;
};

TEST_F(OpenApiE2E, ServesTheDocumentAtItsPath) {
    HttpResponse r = fetch("/api/openapi.json");
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.header("Content-Type"), "application/json");
    const Value doc = json::parse<Value>(r.body);
    EXPECT_EQ(doc["openapi"], Value("3.1.0"));
    EXPECT_EQ(doc["info"]["title"], Value("Todos"));
    EXPECT_EQ(doc["info"]["version"], Value("0.3.0"));
    // The document's own route is not in it; the route registered after openapi() is.
    EXPECT_EQ(doc["paths"].find("/api/openapi.json"), nullptr);
    ASSERT_NE(doc["paths"]["/todos"].find("post"), nullptr);
    EXPECT_EQ(doc["paths"]["/todos"]["post"]["responses"]["201"]["content"]["application/json"]
                 ["schema"]["$ref"],
              Value("#/components/schemas/Todo"));
    EXPECT_EQ(doc["paths"]["/todos/{id}"]["get"]["summary"], Value("One todo"));
    EXPECT_EQ(doc["components"]["schemas"]["Todo"]["properties"]["subtasks"]["items"]["$ref"],
              Value("#/components/schemas/Todo"));
    // Exactly what openapi::document() builds for the same app and info.
    EXPECT_EQ(doc, openapi::document(app_, {.title = "Todos", .version = "0.3.0"}));
    // The default path is free: /openapi.json was not registered.
    EXPECT_EQ(fetch("/openapi.json").status, 404);
}

TEST_F(OpenApiE2E, CachedAcrossRequestsAndLoops) {
    const std::string first = fetch("/api/openapi.json").body;
    ASSERT_FALSE(first.empty());
    for (int i = 0; i < 6; ++i) EXPECT_EQ(fetch("/api/openapi.json").body, first);
}

TEST_F(OpenApiE2E, DocumentedRoutesAnswerAsDescribed) {
    const Value doc = json::parse<Value>(fetch("/api/openapi.json").body);
    // The query parameter the document lists is the one the reader applies.
    const Value& params = doc["paths"]["/todos"]["get"]["parameters"];
    ASSERT_EQ(params.size(), 2u);
    EXPECT_EQ(params[1]["name"], Value("limit"));
    EXPECT_EQ(json::parse<Value>(fetch("/todos?limit=1").body).size(), 1u);
    // The 400 the document promises for a bad query is a problem+json answer.
    ASSERT_NE(doc["paths"]["/todos"]["get"]["responses"].find("400"), nullptr);
    HttpResponse bad = fetch("/todos?limit=x");
    EXPECT_EQ(bad.status, 400);
    EXPECT_EQ(bad.header("Content-Type"), "application/problem+json");
    // The 404 promised for a path parameter of the wrong form.
    ASSERT_NE(doc["paths"]["/todos/{id}"]["get"]["responses"].find("404"), nullptr);
    EXPECT_EQ(fetch("/todos/abc").status, 404);
    EXPECT_EQ(json::parse<Value>(fetch("/todos/7").body)["id"], Value(7));
}

}  // namespace
}  // namespace vela::e2e
