// The OpenAPI document of a rich app, checked field by field: path, query and body
// parameters with the readers' required rule, response schemas of every kind of type,
// components (each once, recursive, collisions), problem responses, the route builder's
// metadata and security schemes.
#include "vela/ops/openapi.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "vela/vela.hpp"

namespace oa_test {

enum class Color { red, dark_blue };
VELA_ENUM(Color, red, VELA_AS(dark_blue, "dark-blue"))

// Recursive through a vector (and through an optional of a vector below).
struct Node {
    std::string name;
    std::vector<Node> children;
};
VELA_REFLECT(Node, VELA_REQUIRED(name), children)

struct Item {
    std::int64_t id = 0;
    std::string name;
    std::optional<std::string> note;
    Color color = Color::red;
    std::map<std::string, int> counts;
    std::chrono::system_clock::time_point created;
    vela::json::Value extra;
    std::vector<std::string> tags;
    std::uint16_t qty = 0;
    float ratio = 0;
    std::optional<Node> tree;
    std::array<int, 3> rgb{};
    std::optional<Color> shade;
};
VELA_REFLECT(Item, VELA_REQUIRED(id), VELA_REQUIRED_AS(name, "title"), note, color, counts, created,
             extra, tags, qty, ratio, tree, rgb, shade)

struct Page {
    int limit = 10;
    std::optional<std::string> after;
    std::vector<int> tag;
    std::string q;
    Color color = Color::red;
};
VELA_REFLECT(Page, limit, after, tag, VELA_REQUIRED(q), color)

struct Login {
    std::string user;
    std::string password;
    bool remember = false;
};
VELA_REFLECT(Login, VELA_REQUIRED(user), VELA_REQUIRED(password), remember)

struct Renamed {
    int x = 0;
};
VELA_REFLECT(Renamed, x)
constexpr std::string_view vela_schema_name(const Renamed*) { return "CustomName"; }

struct Dup {
    int a = 0;
};
VELA_REFLECT(Dup, a)

namespace v2 {
struct Dup {
    std::string b;
};
VELA_REFLECT(Dup, b)
}  // namespace v2

}  // namespace oa_test

namespace vela {
namespace {

using json::Value;
using namespace oa_test;

// The rich app every test below reads.
struct RichApp {
    App app;
    RichApp() {
        app.get("/items/{id:int}", [](Request&) { return Item{}; })
            .summary("Get an item")
            .description("Reads one item.")
            .tag("items")
            .operation_id("getItem");
        app.get("/items", [](Query<Page>) { return std::vector<Item>{}; }).tag("items");
        app.post("/items", [](Json<Item> item) -> Task<Json<Item>> { co_return std::move(item); })
            .response<Item>(201, "Created")
            .response(409, "Already there")
            .security_bearer()
            .tag("items")
            .tag("write");
        app.post("/login", [](Form<Login> f) { return f->user; })
            .security_cookie("session")
            .security_bearer()
            .deprecated();
        app.get("/files/{*rest}", [](Request&) { return Response("x"); });
        app.get("/u/{n:uint}/{x:float}/{u:uuid}/{a:alpha}/{s}", [] { return Status::NoContent; });
        app.get("/colors", [] { return std::vector<std::map<std::string, Color>>{}; });
        app.get("/times", [] { return std::vector<std::chrono::system_clock::time_point>{}; });
        app.get("/any", [] { return Value{}; });
        app.get("/renamed", [] { return Renamed{}; });
        app.get("/dup1", [] { return Dup{}; });
        app.get("/dup2", [] { return std::vector<v2::Dup>{}; });
        app.get("/secret", [](const JwtClaims&) { return std::string("s"); });
        app.get("/hidden", [] { return "no"; }).hidden();
        app.ws("/ws", WsHandler{});
        app.put("/raw", [](FormData f) { return f.size() > 0 ? Status::OK : Status::BadRequest; });
        // Chains of App methods after a route keep working.
        app.get("/chain1", [] { return "1"; }).get("/chain2", [] { return "2"; }).summary("two");
        Group api = app.group("/api/v1");
        api.get("/tree", [] { return Node{}; }).tag("tree").summary("The tree");
        Group g =
            api.del("/tree/{id:int}", [] { return Status::NoContent; }).response(204, "Deleted");
        g.get("/again", [] { return "again"; });
        vela::openapi_spec(app, {.title = "Rich", .version = "2.0.0"});
    }
};

class OpenApiTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        rich_ = new RichApp;
        doc_ = new Value(openapi::document(
            rich_->app, {.title = "Rich",
                         .version = "2.0.0",
                         .description = "A rich app.",
                         .servers = {{"https://api.example.com", "production"}}}));
    }
    static void TearDownTestSuite() {
        delete doc_;
        delete rich_;
    }
    static const Value& doc() { return *doc_; }
    static const Value& op(std::string_view path, std::string_view method) {
        return doc()["paths"][path][method];
    }
    static const Value& schema(std::string_view name) {
        return doc()["components"]["schemas"][name];
    }
    // The parameter named `name` of an operation.
    static const Value& param(const Value& operation, std::string_view name) {
        for (const Value& p : operation["parameters"].as_array())
            if (p["name"] == Value(name)) return p;
        static const Value none;
        return none;
    }
    static Value ref(std::string_view name) {
        return Value::object({{"$ref", "#/components/schemas/" + std::string(name)}});
    }
    static Value parse(std::string_view text) { return json::parse<Value>(text); }

    static RichApp* rich_;
    static Value* doc_;
};
RichApp* OpenApiTest::rich_ = nullptr;
Value* OpenApiTest::doc_ = nullptr;

TEST_F(OpenApiTest, TopLevel) {
    EXPECT_EQ(doc()["openapi"], Value("3.1.0"));
    EXPECT_EQ(doc()["info"],
              parse(R"({"title":"Rich","version":"2.0.0","description":"A rich app."})"));
    EXPECT_EQ(doc()["servers"],
              parse(R"([{"url":"https://api.example.com","description":"production"}])"));
}

TEST_F(OpenApiTest, HiddenRoutesAreLeftOut) {
    EXPECT_EQ(doc()["paths"].find("/hidden"), nullptr);
    EXPECT_EQ(doc()["paths"].find("/ws"), nullptr);
    EXPECT_EQ(doc()["paths"].find("/openapi.json"), nullptr);
    EXPECT_NE(doc()["paths"].find("/chain1"), nullptr);
    EXPECT_NE(doc()["paths"].find("/chain2"), nullptr);
    EXPECT_NE(doc()["paths"].find("/api/v1/again"), nullptr);
}

TEST_F(OpenApiTest, TypedPathParameters) {
    const Value& get = op("/items/{id}", "get");
    EXPECT_EQ(get["parameters"], parse(R"([{"name":"id","in":"path","required":true,
        "schema":{"type":"integer","format":"int64"}}])"));
    const Value& u = op("/u/{n}/{x}/{u}/{a}/{s}", "get");
    EXPECT_EQ(param(u, "n")["schema"], parse(R"({"type":"integer","format":"int64","minimum":0})"));
    EXPECT_EQ(param(u, "x")["schema"], parse(R"({"type":"number","format":"double"})"));
    EXPECT_EQ(param(u, "u")["schema"], parse(R"({"type":"string","format":"uuid"})"));
    EXPECT_EQ(param(u, "a")["schema"], parse(R"({"type":"string","pattern":"^[A-Za-z]+$"})"));
    EXPECT_EQ(param(u, "s")["schema"], parse(R"({"type":"string"})"));
    const Value& rest = param(op("/files/{rest}", "get"), "rest");
    EXPECT_EQ(rest["in"], Value("path"));
    EXPECT_EQ(rest["required"], Value(true));
    EXPECT_EQ(rest["schema"], parse(R"({"type":"string"})"));
    // A group's prefix is part of the path.
    EXPECT_EQ(param(op("/api/v1/tree/{id}", "delete"), "id")["schema"]["type"], Value("integer"));
}

TEST_F(OpenApiTest, QueryParametersFollowTheReadersRule) {
    const Value& list = op("/items", "get");
    EXPECT_EQ(list["parameters"], parse(R"([
        {"name":"limit","in":"query","schema":{"type":"integer","format":"int32"}},
        {"name":"after","in":"query","schema":{"type":"string"}},
        {"name":"tag","in":"query","schema":{"type":"array","items":{"type":"integer","format":"int32"}}},
        {"name":"q","in":"query","required":true,"schema":{"type":"string"}},
        {"name":"color","in":"query","schema":{"$ref":"#/components/schemas/Color"}}])"));
    // A query is read, so a 400 problem can answer; no body, so no 415; no path params, no 404.
    EXPECT_NE(list["responses"].find("400"), nullptr);
    EXPECT_EQ(list["responses"].find("415"), nullptr);
    EXPECT_EQ(list["responses"].find("404"), nullptr);
    EXPECT_EQ(list["responses"]["200"]["content"]["application/json"]["schema"],
              parse(R"({"type":"array","items":{"$ref":"#/components/schemas/Item"}})"));
}

TEST_F(OpenApiTest, JsonBodyAndAsyncResult) {
    const Value& post = op("/items", "post");
    EXPECT_EQ(post["requestBody"], parse(R"({"required":true,"content":{"application/json":
        {"schema":{"$ref":"#/components/schemas/Item"}}}})"));
    // .response<Item>(201) replaces the 200 the return type gives.
    EXPECT_EQ(post["responses"].find("200"), nullptr);
    EXPECT_EQ(post["responses"]["201"], parse(R"({"description":"Created","content":
        {"application/json":{"schema":{"$ref":"#/components/schemas/Item"}}}})"));
    EXPECT_EQ(post["responses"]["409"], parse(R"({"description":"Already there"})"));
    const Value problem = parse(R"({"application/problem+json":{"schema":
        {"$ref":"#/components/schemas/ProblemDetails"}}})");
    EXPECT_EQ(post["responses"]["400"]["content"], problem);
    EXPECT_EQ(post["responses"]["415"]["content"], problem);
    EXPECT_EQ(post["responses"]["415"]["description"], Value("Unsupported Media Type"));
    // The default error format is text: the framework's 500 is text/plain.
    EXPECT_EQ(post["responses"]["500"]["content"],
              parse(R"({"text/plain":{"schema":{"type":"string"}}})"));
    // Responses come in status order.
    std::vector<std::string> order;
    for (const auto& [k, v] : post["responses"].as_object()) order.push_back(k);
    EXPECT_EQ(order, (std::vector<std::string>{"201", "400", "401", "409", "415", "500"}));
}

TEST_F(OpenApiTest, FormBody) {
    const Value& login = op("/login", "post");
    EXPECT_EQ(login["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"],
              ref("Login"));
    EXPECT_EQ(schema("Login"), parse(R"({"type":"object","properties":{
        "user":{"type":"string"},"password":{"type":"string"},"remember":{"type":"boolean"}},
        "required":["user","password"]})"));
    EXPECT_EQ(login["responses"]["200"]["content"],
              parse(R"({"text/plain":{"schema":{"type":"string"}}})"));
    const Value& raw = op("/raw", "put");
    EXPECT_EQ(raw["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"],
              parse(R"({"type":"object","additionalProperties":{"type":"string"}})"));
    EXPECT_EQ(raw["responses"]["200"], parse(R"({"description":"OK"})"));
}

TEST_F(OpenApiTest, ReflectedStructSchema) {
    EXPECT_EQ(schema("Item"), parse(R"({"type":"object","properties":{
        "id":{"type":"integer","format":"int64"},
        "title":{"type":"string"},
        "note":{"type":["string","null"]},
        "color":{"$ref":"#/components/schemas/Color"},
        "counts":{"type":"object","additionalProperties":{"type":"integer","format":"int32"}},
        "created":{"type":"string","format":"date-time"},
        "extra":{},
        "tags":{"type":"array","items":{"type":"string"}},
        "qty":{"type":"integer","format":"int32","minimum":0},
        "ratio":{"type":"number","format":"float"},
        "tree":{"anyOf":[{"$ref":"#/components/schemas/Node"},{"type":"null"}]},
        "rgb":{"type":"array","items":{"type":"integer","format":"int32"},"minItems":3,"maxItems":3},
        "shade":{"anyOf":[{"$ref":"#/components/schemas/Color"},{"type":"null"}]}},
        "required":["id","title"]})"));
    EXPECT_EQ(schema("Color"), parse(R"({"type":"string","enum":["red","dark-blue"]})"));
}

TEST_F(OpenApiTest, RecursiveTypeRefersToItself) {
    EXPECT_EQ(schema("Node"), parse(R"({"type":"object","properties":{
        "name":{"type":"string"},
        "children":{"type":"array","items":{"$ref":"#/components/schemas/Node"}}},
        "required":["name"]})"));
    EXPECT_EQ(
        op("/api/v1/tree", "get")["responses"]["200"]["content"]["application/json"]["schema"],
        ref("Node"));
}

TEST_F(OpenApiTest, EachComponentOnce) {
    std::vector<std::string> names;
    for (const auto& [k, v] : doc()["components"]["schemas"].as_object()) names.push_back(k);
    std::sort(names.begin(), names.end());
    // Query<Page> becomes parameters, not a component.
    EXPECT_EQ(names, (std::vector<std::string>{"Color", "CustomName", "Item", "Login", "Node",
                                               "ProblemDetails", "oa_test.Dup", "oa_test.v2.Dup"}));
}

TEST_F(OpenApiTest, NameCollisionsUseQualifiedNames) {
    // Both types named Dup get their qualified names, and the reference made before the
    // collision was found is rewritten.
    EXPECT_EQ(op("/dup1", "get")["responses"]["200"]["content"]["application/json"]["schema"],
              ref("oa_test.Dup"));
    EXPECT_EQ(op("/dup2", "get")["responses"]["200"]["content"]["application/json"]["schema"],
              parse(R"({"type":"array","items":{"$ref":"#/components/schemas/oa_test.v2.Dup"}})"));
    EXPECT_EQ(schema("oa_test.v2.Dup"),
              parse(R"({"type":"object","properties":{"b":{"type":"string"}}})"));
    EXPECT_EQ(op("/renamed", "get")["responses"]["200"]["content"]["application/json"]["schema"],
              ref("CustomName"));
}

TEST_F(OpenApiTest, OtherResultTypes) {
    const auto body = [](const Value& o) {
        return o["responses"]["200"]["content"]["application/json"]["schema"];
    };
    EXPECT_EQ(body(op("/colors", "get")), parse(R"({"type":"array","items":{"type":"object",
                  "additionalProperties":{"$ref":"#/components/schemas/Color"}}})"));
    EXPECT_EQ(body(op("/times", "get")),
              parse(R"({"type":"array","items":{"type":"string","format":"date-time"}})"));
    EXPECT_EQ(body(op("/any", "get")), Value::object());
    // A Response or a Status says nothing about the body.
    EXPECT_EQ(op("/files/{rest}", "get")["responses"]["200"], parse(R"({"description":"OK"})"));
    EXPECT_EQ(op("/u/{n}/{x}/{u}/{a}/{s}", "get")["responses"]["200"],
              parse(R"({"description":"OK"})"));
    // A 2xx given with .response replaces the 200.
    EXPECT_EQ(op("/api/v1/tree/{id}", "delete")["responses"]["204"],
              parse(R"({"description":"Deleted"})"));
    EXPECT_EQ(op("/api/v1/tree/{id}", "delete")["responses"].find("200"), nullptr);
}

TEST_F(OpenApiTest, ProblemResponses) {
    const Value& get = op("/items/{id}", "get");
    // Path parameters: 404; nothing read from the query or body: no 400/415; 500 always.
    std::vector<std::string> order;
    for (const auto& [k, v] : get["responses"].as_object()) order.push_back(k);
    EXPECT_EQ(order, (std::vector<std::string>{"200", "404", "500"}));
    EXPECT_EQ(get["responses"]["404"]["description"], Value("Not Found"));
    EXPECT_EQ(schema("ProblemDetails")["required"], parse(R"(["type","title","status"])"));
    EXPECT_EQ(schema("ProblemDetails")["properties"]["status"],
              parse(R"({"type":"integer","format":"int32"})"));
    EXPECT_EQ(schema("ProblemDetails")["properties"]["errors"]["type"],
              parse(R"(["array","null"])"));
}

TEST_F(OpenApiTest, ErrorPagesFormatDecidesTheFrameworkErrors) {
    App app;
    app.get("/x/{id}", [] { return "x"; });
    app.error_pages({.format = ErrorFormat::problem_json});
    Value d = openapi::document(app);
    EXPECT_EQ(
        d["paths"]["/x/{id}"]["get"]["responses"]["404"]["content"],
        parse(
            R"({"application/problem+json":{"schema":{"$ref":"#/components/schemas/ProblemDetails"}}})"));
    App html;
    html.get("/y", [] { return "y"; });
    html.error_pages({.format = ErrorFormat::html});
    Value h = openapi::document(html);
    EXPECT_EQ(h["paths"]["/y"]["get"]["responses"]["500"]["content"],
              parse(R"({"text/html":{"schema":{"type":"string"}}})"));
    // A document without a typed body needs no ProblemDetails component.
    EXPECT_EQ(h.find("components"), nullptr);
}

TEST_F(OpenApiTest, RouteMetadata) {
    const Value& get = op("/items/{id}", "get");
    EXPECT_EQ(get["summary"], Value("Get an item"));
    EXPECT_EQ(get["description"], Value("Reads one item."));
    EXPECT_EQ(get["tags"], parse(R"(["items"])"));
    EXPECT_EQ(get["operationId"], Value("getItem"));
    EXPECT_EQ(get.find("deprecated"), nullptr);
    EXPECT_EQ(get.find("security"), nullptr);
    EXPECT_EQ(op("/items", "post")["tags"], parse(R"(["items","write"])"));
    EXPECT_EQ(op("/login", "post")["deprecated"], Value(true));
    EXPECT_EQ(op("/chain2", "get")["summary"], Value("two"));
    EXPECT_EQ(op("/api/v1/tree", "get")["summary"], Value("The tree"));
}

TEST_F(OpenApiTest, Security) {
    EXPECT_EQ(op("/items", "post")["security"], parse(R"([{"bearerAuth":[]}])"));
    EXPECT_EQ(op("/login", "post")["security"],
              parse(R"([{"cookie_session":[]},{"bearerAuth":[]}])"));
    EXPECT_EQ(op("/items", "post")["responses"]["401"]["description"], Value("Unauthorized"));
    // A handler taking JwtClaims needs a bearer token.
    EXPECT_EQ(op("/secret", "get")["security"], parse(R"([{"bearerAuth":[]}])"));
    EXPECT_NE(op("/secret", "get")["responses"].find("401"), nullptr);
    EXPECT_EQ(doc()["components"]["securitySchemes"], parse(R"({
        "bearerAuth":{"type":"http","scheme":"bearer","bearerFormat":"JWT"},
        "cookie_session":{"type":"apiKey","in":"cookie","name":"session"}})"));
}

TEST_F(OpenApiTest, DuplicateOperationIdIsAnError) {
    App app;
    app.get("/a", [] { return "a"; }).operation_id("same");
    app.get("/b", [] { return "b"; }).operation_id("same");
    try {
        (void)openapi::document(app);
        FAIL() << "expected std::logic_error";
    } catch (const std::logic_error& e) {
        EXPECT_STREQ(e.what(), "openapi: operationId 'same' is given to two routes (/a and /b)");
    }
}

// /metrics, /health and /ready are served but are operations endpoints, not the API.
TEST_F(OpenApiTest, OperationsEndpointsAreLeftOut) {
    App app;
    app.get("/items", [] { return "items"; });
    vela::metrics(app);
    vela::health(app);
    vela::openapi_spec(app);
    const Value d = openapi::document(app);
    EXPECT_NE(d["paths"].find("/items"), nullptr);
    EXPECT_EQ(d["paths"].find("/metrics"), nullptr);
    EXPECT_EQ(d["paths"].find("/health"), nullptr);
    EXPECT_EQ(d["paths"].find("/ready"), nullptr);
    EXPECT_EQ(d["paths"].size(), 1u);
}

// The document is built when the app starts (a mistake in it stops the start, not a later
// request): vela::detail::handler(app) (what start() and the test client call) builds it.
TEST_F(OpenApiTest, BuiltWhenTheAppStarts) {
    App app;
    app.get("/a", [] { return "a"; }).operation_id("same");
    app.get("/b", [] { return "b"; }).operation_id("same");
    vela::openapi_spec(app);
    EXPECT_THROW(vela::detail::handler(app), std::logic_error);
}

TEST_F(OpenApiTest, SeveralMethodsShareAPathItem) {
    const Value& item = doc()["paths"]["/items"];
    EXPECT_NE(item.find("get"), nullptr);
    EXPECT_NE(item.find("post"), nullptr);
    EXPECT_EQ(item.size(), 2u);
}

TEST_F(OpenApiTest, DocumentJsonIsTheSameDocument) {
    const std::string text = openapi::document_json(rich_->app);
    const Value back = json::parse<Value>(text);
    EXPECT_EQ(back["paths"], doc()["paths"]);
    EXPECT_EQ(back["info"], parse(R"({"title":"API","version":"1.0.0"})"));
}

}  // namespace
}  // namespace vela
