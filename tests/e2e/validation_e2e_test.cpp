// Declarative constraints (VELA_VALIDATE) over real sockets: JSON bodies sent by curl, queries,
// urlencoded and multipart forms, answered 422 with every violation listed; VELA_REJECT_UNKNOWN
// answered 400; the server stays sound after each; and the OpenAPI document states the
// constraints and validates against the OpenAPI 3.1 schema (scripts/validate-openapi).

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "e2e/client.hpp"
#include "e2e/process.hpp"
#include "vela/ops/openapi.hpp"
#include "vela/web/upload.hpp"

namespace validation_e2e {

using namespace vela;
using namespace vela::e2e;

struct Tag {
    std::string name;
};
VELA_REFLECT(Tag, VELA_REQUIRED(name))
VELA_VALIDATE(Tag, (name, rule::pattern<"^[a-z]+$">))

struct NewNote {
    std::string title;
    std::string body;
    int rating = 0;
    std::optional<std::string> email;
    std::string state = "draft";
    std::vector<Tag> tags;
};
VELA_REFLECT(NewNote, VELA_REQUIRED(title), body, rating, email, state, tags)
VELA_VALIDATE(NewNote, (title, rule::length(1, 200)), (body, rule::max_length(1000)),
              (rating, rule::range(0, 5)), (email, rule::email),
              (state, rule::one_of("draft", "published")), (tags, rule::max_items(3)))

struct Search {
    std::string q;
    int limit = 10;
    std::vector<int> ids;
};
VELA_REFLECT(Search, VELA_REQUIRED(q), limit, ids)
VELA_VALIDATE(Search, (q, rule::min_length(2)), (limit, rule::range(1, 100)),
              (ids, rule::each(rule::minimum(1))))
VELA_REJECT_UNKNOWN(Search)

struct Login {
    std::string user;
    std::string code;
};
VELA_REFLECT(Login, VELA_REQUIRED(user), code)
VELA_VALIDATE(Login, (user, rule::length(3, 20)), (code, rule::pattern<"^[0-9]{6}$">))

struct Strict {
    int a = 0;
};
VELA_REFLECT(Strict, a)
VELA_REJECT_UNKNOWN(Strict)

class ValidationE2e : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        app.post("/notes", [](Json<NewNote> n) { return *n; });
        app.get("/search", [](Query<Search> s) { return s->q + " " + std::to_string(s->limit); });
        app.post("/login", [](Form<Login> l) { return l->user; });
        app.post("/strict", [](Json<Strict> s) { return std::to_string(s->a); });
        app.post("/upload", [](Request& req) -> Task<std::string> {
            MultipartForm form = co_await read_multipart(req);
            co_return form.bind<Login>().user;
        });
        openapi_spec(app, {.title = "Notes", .version = "1.0.0"});
        start_app(app);
        port = app.port();
        base = "http://127.0.0.1:" + std::to_string(port);
    }

    // curl `args` against `path`: the status and the body.
    std::pair<int, std::string> curl(const std::string& args, const std::string& path) {
        bool ok = false;
        auto out = curl_status(args, base + path, &ok);
        EXPECT_TRUE(ok) << out.second;
        return out;
    }

    std::pair<int, std::string> post_json(const std::string& path, const std::string& json) {
        return curl("-H 'Content-Type: application/json' --data-binary " + shell_quote(json), path);
    }

    // The server still answers a valid request on a new connection.
    void expect_sound() {
        const auto [status, body] = post_json("/notes", R"({"title":"ok"})");
        EXPECT_EQ(status, 200) << body;
    }

    App app;
    std::uint16_t port = 0;
    std::string base;
};

TEST_F(ValidationE2e, JsonBodyWithEveryViolationListedIn422) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    const auto [status, body] = post_json(
        "/notes",
        R"({"title":"","rating":9,"email":"nobody","state":"gone","tags":[{"name":"ok"},{"name":"Bad"},{"name":"x"},{"name":"y"}]})");
    EXPECT_EQ(status, 422) << body;
    const json::Value v = json::parse<json::Value>(body);
    EXPECT_EQ(v["status"].as_int64(), 422);
    EXPECT_EQ(v["title"].as_string(), "Unprocessable Content");
    EXPECT_EQ(v["detail"].as_string(),
              "the JSON body breaks constraints: /title must be 1 to 200 characters long; /rating "
              "must be between 0 and 5; /email must be an e-mail address; /state must be one of "
              "\"draft\", \"published\"; /tags must have at most 3 items; /tags/1/name must match "
              "the pattern ^[a-z]+$");
    const json::Value& errors = v["errors"];
    ASSERT_EQ(errors.size(), 6u) << body;
    EXPECT_EQ(errors[0]["pointer"].as_string(), "#/title");
    EXPECT_EQ(errors[0]["detail"].as_string(), "must be 1 to 200 characters long");
    EXPECT_EQ(errors[5]["pointer"].as_string(), "#/tags/1/name");
    expect_sound();
}

TEST_F(ValidationE2e, ValidJsonBodyReachesTheHandler) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    const auto [status, body] = post_json(
        "/notes", R"({"title":"Zoë","rating":5,"email":"zoe@example.com","tags":[{"name":"a"}]})");
    EXPECT_EQ(status, 200) << body;
    EXPECT_EQ(json::parse<NewNote>(body).title, "Zoë");
}

TEST_F(ValidationE2e, ReadErrorsStay400BeforeConstraints) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    // Missing required member and a wrong type: 400 from the reader, constraints not checked.
    auto [status, body] = post_json("/notes", R"({"rating":9})");
    EXPECT_EQ(status, 400) << body;
    std::tie(status, body) = post_json("/notes", R"({"title":"x","rating":"high"})");
    EXPECT_EQ(status, 400) << body;
    expect_sound();
}

TEST_F(ValidationE2e, QueryViolationsNameTheParameters) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    auto [status, body] = curl("", "/search?q=ab&limit=100&ids=1&ids=2");
    EXPECT_EQ(status, 200) << body;
    EXPECT_EQ(body, "ab 100");
    std::tie(status, body) = curl("", "/search?q=a&limit=0&ids=1&ids=0");
    EXPECT_EQ(status, 422) << body;
    const json::Value v = json::parse<json::Value>(body);
    ASSERT_EQ(v["errors"].size(), 3u) << body;
    EXPECT_EQ(v["errors"][0]["parameter"].as_string(), "q");
    EXPECT_EQ(v["errors"][1]["parameter"].as_string(), "limit");
    EXPECT_EQ(v["errors"][2]["parameter"].as_string(), "ids");
    EXPECT_EQ(v["errors"][2]["detail"].as_string(), "must be at least 1");
    EXPECT_EQ(v["detail"].as_string(),
              "the query breaks constraints: 'q' must be at least 2 characters long; 'limit' "
              "must be between 1 and 100; 'ids' must be at least 1");
    // VELA_REJECT_UNKNOWN(Search): an unknown parameter is a 400 naming it.
    std::tie(status, body) = curl("", "/search?q=abc&lmit=5");
    EXPECT_EQ(status, 400) << body;
    EXPECT_NE(body.find("lmit"), std::string::npos) << body;
    EXPECT_NE(body.find("unknown parameter"), std::string::npos) << body;
    expect_sound();
}

TEST_F(ValidationE2e, UrlencodedAndMultipartForms) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    auto [status, body] = curl("--data-urlencode user=zoe --data-urlencode code=123456", "/login");
    EXPECT_EQ(status, 200) << body;
    std::tie(status, body) = curl("--data-urlencode user=zo --data-urlencode code=12345", "/login");
    EXPECT_EQ(status, 422) << body;
    const json::Value v = json::parse<json::Value>(body);
    ASSERT_EQ(v["errors"].size(), 2u) << body;
    EXPECT_EQ(v["errors"][0]["pointer"].as_string(), "#/user");
    EXPECT_EQ(v["errors"][1]["pointer"].as_string(), "#/code");
    // multipart/form-data through MultipartForm::bind<T>: the same rules, a 422 in the app's
    // error format naming each violation.
    std::tie(status, body) = curl("-F user=zoe -F code=654321", "/upload");
    EXPECT_EQ(status, 200) << body;
    EXPECT_EQ(body, "zoe");
    std::tie(status, body) = curl("-F user=zo -F code=abc", "/upload");
    EXPECT_EQ(status, 422) << body;
    EXPECT_NE(body.find("/user must be 3 to 20 characters long"), std::string::npos) << body;
    EXPECT_NE(body.find("/code must match the pattern"), std::string::npos) << body;
    expect_sound();
}

TEST_F(ValidationE2e, RejectUnknownMembersInJsonBodies) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    auto [status, body] = post_json("/strict", R"({"a":1})");
    EXPECT_EQ(status, 200) << body;
    std::tie(status, body) = post_json("/strict", R"({"a":1,"b":2})");
    EXPECT_EQ(status, 400) << body;
    EXPECT_NE(body.find("#/b"), std::string::npos) << body;
    expect_sound();
}

TEST_F(ValidationE2e, RawBytesOnAKeepAliveConnection) {
    // The 422 is a complete answer: the same connection serves the next request.
    Client c = Client::tcp(port);
    const std::string bad = request_with_body("POST", "/notes", R"({"title":"","rating":-1})",
                                              "Content-Type: application/json\r\n");
    const std::string good = request_with_body("POST", "/notes", R"({"title":"t"})",
                                               "Content-Type: application/json\r\n");
    ASSERT_TRUE(c.send(bad + good));
    std::optional<HttpResponse> r1 = c.read_response();
    ASSERT_TRUE(r1) << c.error();
    EXPECT_EQ(r1->status, 422);
    EXPECT_EQ(r1->header("Content-Type"), "application/problem+json");
    std::optional<HttpResponse> r2 = c.read_response();
    ASSERT_TRUE(r2) << c.error();
    EXPECT_EQ(r2->status, 200);
}

TEST_F(ValidationE2e, OpenApiStatesTheConstraintsAndValidates) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    const auto [status, text] = curl("", "/openapi.json");
    ASSERT_EQ(status, 200) << text;
    const json::Value doc = json::parse<json::Value>(text);
    const json::Value& note = doc["components"]["schemas"]["NewNote"]["properties"];
    EXPECT_EQ(note["title"]["minLength"].as_int64(), 1);
    EXPECT_EQ(note["title"]["maxLength"].as_int64(), 200);
    EXPECT_EQ(note["body"]["maxLength"].as_int64(), 1000);
    EXPECT_EQ(note["rating"]["minimum"].as_int64(), 0);
    EXPECT_EQ(note["rating"]["maximum"].as_int64(), 5);
    EXPECT_EQ(note["email"]["format"].as_string(), "email");
    EXPECT_EQ(note["state"]["enum"], json::Value::array({"draft", "published"}));
    EXPECT_EQ(note["tags"]["maxItems"].as_int64(), 3);
    EXPECT_EQ(doc["components"]["schemas"]["Tag"]["properties"]["name"]["pattern"].as_string(),
              "^[a-z]+$");
    EXPECT_EQ(doc["components"]["schemas"]["Strict"]["additionalProperties"], json::Value(false));
    // The 422 is documented where a constrained value is read.
    EXPECT_NE(doc["paths"]["/notes"]["post"]["responses"].find("422"), nullptr);
    EXPECT_NE(doc["paths"]["/search"]["get"]["responses"].find("422"), nullptr);
    EXPECT_EQ(doc["paths"]["/strict"]["post"]["responses"].find("422"), nullptr);
    // Query parameters carry their constraints.
    bool saw_limit = false;
    for (const json::Value& p : doc["paths"]["/search"]["get"]["parameters"].as_array()) {
        if (p["name"].as_string() != "limit") continue;
        saw_limit = true;
        EXPECT_EQ(p["schema"]["minimum"].as_int64(), 1);
        EXPECT_EQ(p["schema"]["maximum"].as_int64(), 100);
    }
    EXPECT_TRUE(saw_limit) << text;
    // The whole document against the OpenAPI 3.1 schema.
    if (!have("node")) GTEST_SKIP() << "needs node (scripts/install-npm)";
    const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                       ("vela-validation-" + std::to_string(getpid()) + ".json");
    std::ofstream(file) << text;
    const Ran r = run_command("node " VELA_SOURCE_DIR "/scripts/validate-openapi '" +
                              file.string() + "' 2>&1");
    std::filesystem::remove(file);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("valid"), std::string::npos) << r.out;
}

}  // namespace validation_e2e
