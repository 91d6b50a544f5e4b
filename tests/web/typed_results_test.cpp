// Typed handlers that find nothing without a throw: a std::optional result (empty: 404), a
// Status or an HttpError co_returned from a Task<T>; json_response with an int status; the
// errors of a static mount at "/" in the app's error format; what the OpenAPI document says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "vela/testing/client.hpp"
#include "vela/vela.hpp"

namespace vela {
namespace {

using testing::Client;
using testing::TestResponse;

struct Note {
    int id = 0;
    std::string title;
};
VELA_REFLECT(Note, id, title)

std::optional<Note> find_note(int id) {
    if (id == 1) return Note{1, "first"};
    return std::nullopt;
}

// A helper a handler awaits: its co_returned status answers the handler's request.
Task<Note> load_note(int id) {
    if (std::optional<Note> n = find_note(id)) co_return *n;
    co_return Status::NotFound;
}

int id_of(const Request& r) { return std::stoi(std::string(r.param("id"))); }

void add_routes(App& app) {
    app.get("/sync/{id:int}", [](Request& r) { return find_note(id_of(r)); });
    app.get("/async/{id:int}",
            [](Request& r) -> Task<std::optional<Note>> { co_return find_note(id_of(r)); });
    app.get("/status/{id:int}", [](Request& r) -> Task<Note> {
        if (std::optional<Note> n = find_note(id_of(r))) co_return *n;
        co_return Status::NotFound;
    });
    app.get("/gone", []() -> Task<Note> { co_return Status::Gone; });
    app.get("/helper/{id:int}", [](Request& r) -> Task<Note> {
        Note n = co_await load_note(id_of(r));
        n.title += " (loaded)";
        co_return n;
    });
    app.get("/error",
            []() -> Task<Note> { co_return HttpError(Status::Conflict, "the note is locked"); });
    app.get("/none", []() -> Task<Note> { co_return Status::NoContent; });
    // Typed parameters (the extracting path) with an optional result.
    app.get("/query",
            [](Query<Note> q) -> Task<std::optional<Note>> { co_return find_note(q->id); });
    app.post("/notes", [](Json<Note> n) { return json_response(n.value, 201); });
}

TEST(TypedResults, AnEngagedOptionalIsTheValue) {
    App app;
    add_routes(app);
    Client client(app);
    for (const char* path : {"/sync/1", "/async/1", "/status/1", "/query?id=1"}) {
        TestResponse r = client.get(path).get();
        EXPECT_EQ(r.status(), 200) << path;
        EXPECT_EQ(r.content_type(), "application/json") << path;
        EXPECT_EQ(r.body(), R"({"id":1,"title":"first"})") << path;
    }
    EXPECT_EQ(client.get("/helper/1").get().json()["title"].as_string(), "first (loaded)");
}

TEST(TypedResults, AnEmptyOptionalOrAStatusIs404InTheDefaultFormat) {
    App app;
    add_routes(app);
    Client client(app);
    for (const char* path : {"/sync/2", "/async/2", "/status/2", "/helper/2", "/query?id=2"}) {
        TestResponse r = client.get(path).get();
        EXPECT_EQ(r.status(), 404) << path;
        EXPECT_EQ(r.content_type(), "text/plain; charset=utf-8") << path;
        EXPECT_EQ(r.body(), "Not Found") << path;
    }
    TestResponse gone = client.get("/gone").get();
    EXPECT_EQ(gone.status(), 410);
    EXPECT_EQ(gone.body(), "Gone");
    TestResponse none = client.get("/none").get();  // not an error: no body
    EXPECT_EQ(none.status(), 204);
    EXPECT_EQ(none.body(), "");
}

TEST(TypedResults, AnEmptyOptionalOrAStatusIs404InProblemJson) {
    App app;
    app.error_pages({.format = ErrorFormat::problem_json});
    add_routes(app);
    Client client(app);
    // The body any other 404 of the framework gets.
    const std::string framework_404 = client.get("/no/such/route").get().body();
    for (const char* path : {"/sync/2", "/async/2", "/status/2", "/helper/2", "/query?id=2"}) {
        TestResponse r = client.get(path).get();
        EXPECT_EQ(r.status(), 404) << path;
        EXPECT_EQ(r.content_type(), "application/problem+json") << path;
        EXPECT_EQ(r.json()["status"].as_int64(), 404) << path;
        EXPECT_EQ(r.body(), framework_404) << path;
    }
}

TEST(TypedResults, AnHttpErrorReturnedKeepsItsDetail) {
    App app;
    app.error_pages({.format = ErrorFormat::problem_json});
    add_routes(app);
    Client client(app);
    TestResponse r = client.get("/error").get();
    EXPECT_EQ(r.status(), 409);
    EXPECT_EQ(r.content_type(), "application/problem+json");
    EXPECT_EQ(r.json()["detail"].as_string(), "the note is locked");
}

TEST(TypedResults, JsonResponseTakesAnIntStatus) {
    App app;
    add_routes(app);
    Client client(app);
    TestResponse r =
        client.post("/notes", R"({"id":3,"title":"new"})", {{"Content-Type", "application/json"}})
            .get();
    EXPECT_EQ(r.status(), 201);
    EXPECT_EQ(r.json()["title"].as_string(), "new");
    EXPECT_EQ(json_response(Note{}, 202).status(), Status::Accepted);
}

TEST(TypedResults, OpenApiDocumentsThe404OfAnOptional) {
    App app;
    add_routes(app);
    app.get("/plain", [] { return Note{}; });
    app.error_pages({.format = ErrorFormat::problem_json});
    const json::Value d = openapi::document(app);
    const json::Value& paths = d["paths"];
    for (const char* path : {"/sync/{id}", "/async/{id}", "/query"}) {
        const json::Value& responses = paths[path]["get"]["responses"];
        ASSERT_NE(responses.find("404"), nullptr) << path;
        EXPECT_EQ(responses["404"]["content"]["application/problem+json"]["schema"]["$ref"],
                  json::Value("#/components/schemas/ProblemDetails"))
            << path;
        // The 200 describes the value.
        EXPECT_EQ(responses["200"]["content"]["application/json"]["schema"]["$ref"],
                  json::Value("#/components/schemas/Note"))
            << path;
    }
    EXPECT_EQ(paths["/plain"]["get"]["responses"].find("404"), nullptr);
}

// A static mount at "/" answers its errors in the app's format (problem+json, html), like
// the router's own 404s; a range past the end (416, decided after the handler) too.
class StaticRoot : public ::testing::TestWithParam<ErrorFormat> {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/vela-typed-results-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        std::ofstream(dir_ + "/app.js") << "console.log(1);\n";
    }
    void TearDown() override {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    std::string dir_;
};

TEST_P(StaticRoot, ErrorsUseTheAppsFormat) {
    const ErrorFormat format = GetParam();
    const std::string type =
        format == ErrorFormat::html ? "text/html; charset=utf-8" : "application/problem+json";
    App app;
    app.error_pages({.format = format});
    add_routes(app);
    // Response::file in a handler: a missing file is the app's 404 too.
    app.get("/download/{name}", [this](Request& req) {
        return Response::file(dir_ + "/" + std::string(req.param("name")));
    });
    app.static_files("/", dir_);
    Client client(app);
    const std::string framework_404 = client.get("/sync/2").get().body();
    for (const char* path :
         {"/sync/abc", "/api/notes/abc", "/missing.js", "/.env", "/download/missing.txt"}) {
        TestResponse r = client.get(path).get();
        EXPECT_EQ(r.status(), 404) << path;
        EXPECT_EQ(r.content_type(), type) << path;
        EXPECT_EQ(r.body(), framework_404) << path;
    }
    TestResponse bad = client.get("/app.js", {{"Range", "bytes=500-600"}}).get();
    EXPECT_EQ(bad.status(), 416);
    EXPECT_EQ(bad.content_type(), type);
    EXPECT_EQ(bad.header("Content-Range"), "bytes */16");
    EXPECT_NE(bad.body().find("416"), std::string::npos) << bad.body();
    TestResponse stale = client.get("/app.js", {{"If-Match", "\"other\""}}).get();
    EXPECT_EQ(stale.status(), 412);
    EXPECT_EQ(stale.content_type(), type);
    EXPECT_NE(stale.body().find("412"), std::string::npos) << stale.body();
    TestResponse post = client.post("/app.js", "x").get();
    EXPECT_EQ(post.status(), 405);
    EXPECT_EQ(post.content_type(), type);
    EXPECT_EQ(client.get("/app.js").get().body(), "console.log(1);\n");
}

// With the default text format, a missing file's answer stays the files module's own text;
// with problem+json it becomes the app's 404. Both keep the handler's own headers.
TEST_F(StaticRoot, AFileAHandlerCannotSendFollowsTheFormat) {
    const auto add_download = [this](App& app) {
        app.get("/download/{name}", [this](Request& req) {
            Response r = Response::file(dir_ + "/" + std::string(req.param("name")));
            r.add_header("X-Kept", "1");
            return r;
        });
    };
    App app;
    add_download(app);
    Client client(app);
    TestResponse r = client.get("/download/missing.txt").get();
    EXPECT_EQ(r.status(), 404);
    EXPECT_EQ(r.body(), "Not Found");
    EXPECT_EQ(r.header("X-Kept"), "1");
    EXPECT_EQ(client.get("/download/app.js").get().body(), "console.log(1);\n");
    App problem;
    problem.error_pages({.format = ErrorFormat::problem_json});
    add_download(problem);
    Client pc(problem);
    TestResponse p = pc.get("/download/missing.txt").get();
    EXPECT_EQ(p.status(), 404);
    EXPECT_EQ(p.content_type(), "application/problem+json");
    EXPECT_EQ(p.body(), R"({"type":"about:blank","title":"Not Found","status":404})");
    EXPECT_EQ(p.header("X-Kept"), "1");
}

INSTANTIATE_TEST_SUITE_P(Formats, StaticRoot,
                         ::testing::Values(ErrorFormat::problem_json, ErrorFormat::html));

}  // namespace
}  // namespace vela
