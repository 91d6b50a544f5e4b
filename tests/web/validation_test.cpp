// Constraints (VELA_VALIDATE) where the web layer reads values: Json<T>, Query<T>, Form<T> and
// FormData::to<T> through the in-process test client, the 422 problem body, VELA_REJECT_UNKNOWN
// for queries and forms, the OpenAPI schema the rules produce; and problem bodies without an
// empty "detail".

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "vela/ops/openapi.hpp"
#include "vela/testing/client.hpp"
#include "vela/vela.hpp"

namespace validation_test {

using namespace vela;
using vela::testing::Client;

struct Item {
    std::string name;
    double price = 0;
    std::vector<std::string> tags;
    std::optional<std::string> sku;
};
VELA_REFLECT(Item, VELA_REQUIRED(name), price, tags, sku)
VELA_VALIDATE(Item, (name, rule::length(1, 10)), (price, rule::exclusive_minimum(0)),
              (tags, rule::unique_items, rule::each(rule::one_of("new", "sale"))),
              (sku, rule::pattern<"^[A-Z]{2}[0-9]{4}$">))

struct Page {
    int limit = 10;
    std::optional<std::string> after;
    std::vector<int> ids;
};
VELA_REFLECT(Page, limit, after, ids)
VELA_VALIDATE(Page, (limit, rule::range(1, 50)), (after, rule::uuid),
              (ids, rule::max_items(3), rule::each(rule::minimum(1))))
VELA_REJECT_UNKNOWN(Page)

struct Plain {
    int n = 0;
};
VELA_REFLECT(Plain, n)

class Validation : public ::testing::Test {
  protected:
    void SetUp() override {
        app.post("/items", [](Json<Item> i) { return i->name; });
        app.get("/items", [](Query<Page> p) { return std::to_string(p->limit); });
        app.post("/form", [](Form<Item> i) { return i->name; });
        app.post("/data", [](FormData d) {
            Response error;
            std::optional<Item> i = d.to<Item>(error);
            return i ? Response::text(i->name) : error;
        });
        app.get("/missing", [] { return Status::NotFound; });
        app.get("/plain", [](Query<Plain> p) { return std::to_string(p->n); });
    }
    App app;
};

TEST_F(Validation, JsonBodiesBreakingRulesAre422WithEveryViolation) {
    Client c(app);
    auto r = c.post("/items", R"({"name":"ok","price":1.5,"tags":["new"],"sku":"AB1234"})",
                    {{"Content-Type", "application/json"}})
                 .get();
    EXPECT_EQ(r.status(), 200) << r.body();
    r = c.post("/items",
               R"({"name":"far too long a name","price":0,"tags":["new","new","old"],"sku":"x"})",
               {{"Content-Type", "application/json"}})
            .get();
    ASSERT_EQ(r.status(), 422) << r.body();
    EXPECT_EQ(r.content_type(), "application/problem+json");
    const json::Value p = r.json();
    EXPECT_EQ(p["type"].as_string(), "about:blank");
    EXPECT_EQ(p["title"].as_string(), "Unprocessable Content");
    const json::Value& e = p["errors"];
    ASSERT_EQ(e.size(), 5u) << r.body();
    EXPECT_EQ(e[0]["pointer"].as_string(), "#/name");
    EXPECT_EQ(e[0]["detail"].as_string(), "must be 1 to 10 characters long");
    EXPECT_EQ(e[1]["pointer"].as_string(), "#/price");
    EXPECT_EQ(e[2]["pointer"].as_string(), "#/tags/1");
    EXPECT_EQ(e[2]["detail"].as_string(), "must not repeat an earlier element");
    EXPECT_EQ(e[3]["pointer"].as_string(), "#/tags/2");
    EXPECT_EQ(e[3]["detail"].as_string(), "must be one of \"new\", \"sale\"");
    EXPECT_EQ(e[4]["pointer"].as_string(), "#/sku");
    EXPECT_EQ(e[4].find("parameter"), nullptr);
}

TEST_F(Validation, QueriesNameParametersAndRejectUnknownOnes) {
    Client c(app);
    EXPECT_EQ(c.get("/items?limit=50&ids=1&ids=2").get().body(), "50");
    auto r = c.get("/items?limit=51&after=nope&ids=1&ids=0&ids=2&ids=3").get();
    ASSERT_EQ(r.status(), 422) << r.body();
    const json::Value p = r.json();
    ASSERT_EQ(p["errors"].size(), 4u) << r.body();
    EXPECT_EQ(p["errors"][0]["parameter"].as_string(), "limit");
    EXPECT_EQ(p["errors"][1]["parameter"].as_string(), "after");
    EXPECT_EQ(p["errors"][2]["parameter"].as_string(), "ids");
    EXPECT_EQ(p["errors"][2]["detail"].as_string(), "must have at most 3 items");
    EXPECT_EQ(p["errors"][3]["parameter"].as_string(), "ids");
    EXPECT_EQ(p["errors"][3]["detail"].as_string(), "must be at least 1");
    r = c.get("/items?limit=5&offset=2").get();
    ASSERT_EQ(r.status(), 400) << r.body();
    EXPECT_EQ(r.json()["detail"].as_string(), "query parameter 'offset': unknown parameter");
    // A type without VELA_REJECT_UNKNOWN ignores unknown parameters, as before.
    EXPECT_EQ(c.get("/plain?n=3&other=1").get().body(), "3");
}

TEST_F(Validation, FormsAndFormDataUseTheSameRules) {
    Client c(app);
    auto r = c.post_form("/form", {{"name", "pen"}, {"price", "2"}, {"tags", "sale"}}).get();
    EXPECT_EQ(r.status(), 200) << r.body();
    r = c.post_form("/form", {{"name", ""}, {"price", "-1"}}).get();
    ASSERT_EQ(r.status(), 422) << r.body();
    EXPECT_EQ(r.json()["errors"][0]["pointer"].as_string(), "#/name");
    EXPECT_EQ(r.json()["errors"][1]["pointer"].as_string(), "#/price");
    EXPECT_EQ(r.json()["detail"].as_string(),
              "the form breaks constraints: /name must be 1 to 10 characters long; /price must "
              "be greater than 0");
    r = c.post_form("/data", {{"name", "pen"}, {"price", "0"}}).get();
    ASSERT_EQ(r.status(), 422) << r.body();
    EXPECT_EQ(r.json()["errors"][0]["pointer"].as_string(), "#/price");
}

TEST_F(Validation, ProblemBodiesLeaveOutAnEmptyDetail) {
    const json::Value bare =
        json::parse<json::Value>(problem_response(Status::NotFound, "").body());
    EXPECT_EQ(bare.find("detail"), nullptr);
    EXPECT_EQ(bare.find("errors"), nullptr);
    EXPECT_EQ(bare["status"].as_int64(), 404);
    app.error_pages({.format = ErrorFormat::problem_json});
    Client c(app);
    const auto r = c.get("/missing").get();
    ASSERT_EQ(r.status(), 404);
    EXPECT_EQ(r.body(), R"({"type":"about:blank","title":"Not Found","status":404})");
    const auto nowhere = c.get("/no/such/route").get();
    EXPECT_EQ(nowhere.body(), R"({"type":"about:blank","title":"Not Found","status":404})");
}

TEST_F(Validation, OpenApiSchemasCarryTheRules) {
    const json::Value doc = openapi::document(app);
    const json::Value& item = doc["components"]["schemas"]["Item"];
    EXPECT_EQ(item["properties"]["name"]["minLength"].as_int64(), 1);
    EXPECT_EQ(item["properties"]["name"]["maxLength"].as_int64(), 10);
    EXPECT_EQ(item["properties"]["price"]["exclusiveMinimum"].as_int64(), 0);
    EXPECT_EQ(item["properties"]["tags"]["uniqueItems"], json::Value(true));
    EXPECT_EQ(item["properties"]["tags"]["items"]["enum"], json::Value::array({"new", "sale"}));
    // An optional member's schema admits null and keeps its rule.
    EXPECT_EQ(item["properties"]["sku"]["type"], json::Value::array({"string", "null"}));
    EXPECT_EQ(item["properties"]["sku"]["pattern"].as_string(), "^[A-Z]{2}[0-9]{4}$");
    EXPECT_EQ(item.find("additionalProperties"), nullptr);
    // Query parameters: each parameter's schema with its rules.
    const json::Value& get = doc["paths"]["/items"]["get"];
    std::vector<std::string> seen;
    for (const json::Value& q : get["parameters"].as_array()) {
        seen.push_back(q["name"].as_string());
        if (q["name"].as_string() == "limit") {
            EXPECT_EQ(q["schema"]["minimum"].as_int64(), 1);
            EXPECT_EQ(q["schema"]["maximum"].as_int64(), 50);
        } else if (q["name"].as_string() == "after") {
            EXPECT_EQ(q["schema"]["format"].as_string(), "uuid");
        } else if (q["name"].as_string() == "ids") {
            EXPECT_EQ(q["schema"]["maxItems"].as_int64(), 3);
            EXPECT_EQ(q["schema"]["items"]["minimum"].as_int64(), 1);
        }
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"limit", "after", "ids"}));
    for (const char* path : {"/items"}) {
        EXPECT_NE(doc["paths"][path]["get"]["responses"].find("422"), nullptr);
        EXPECT_NE(doc["paths"][path]["post"]["responses"].find("422"), nullptr);
    }
    EXPECT_NE(doc["paths"]["/form"]["post"]["responses"].find("422"), nullptr);
    EXPECT_EQ(doc["paths"]["/plain"]["get"]["responses"].find("422"), nullptr);
    EXPECT_EQ(doc["paths"]["/data"]["post"]["responses"].find("422"), nullptr);
}

}  // namespace validation_test
