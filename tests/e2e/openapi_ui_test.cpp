// Swagger UI at /docs (vela::openapi_ui) on a real server: the page, its script and the
// swagger-ui-dist files; the OpenAPI document checked against the official OpenAPI 3.1 schema
// (scripts/validate-openapi, which must also reject broken documents); and headless Chromium
// loading /docs and listing every route of the app.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "e2e/client.hpp"
#include "e2e/process.hpp"
#include "vela/ops/openapi.hpp"
#include "vela/ops/openapi_ui.hpp"
#include "vela/testing/client.hpp"
#include "vela/vela.hpp"

namespace openapi_ui_test {

enum class State { open, done, dropped };
VELA_ENUM(State, open, done, VELA_AS(dropped, "won't-do"))

// Recursive: an outline of outlines.
struct Outline {
    std::string label;
    std::vector<Outline> children;
};
VELA_REFLECT(Outline, VELA_REQUIRED(label), children)

struct Todo {
    std::int64_t id = 0;
    std::string title;
    std::optional<std::string> note;
    State state = State::open;
    std::vector<std::string> tags;
    std::chrono::system_clock::time_point due;
    std::map<std::string, int> counts;
    std::optional<Outline> outline;
};
VELA_REFLECT(Todo, VELA_REQUIRED(id), VELA_REQUIRED(title), note, state, tags, due, counts, outline)

struct NewTodo {
    std::string title;
    std::optional<std::string> note;
    std::vector<std::string> tags;
};
VELA_REFLECT(NewTodo, VELA_REQUIRED(title), note, tags)

struct Filter {
    int limit = 20;
    std::optional<std::string> after;
    std::vector<std::string> tag;
    State state = State::open;
};
VELA_REFLECT(Filter, limit, after, tag, state)

struct Login {
    std::string user;
    std::string password;
    bool remember = false;
};
VELA_REFLECT(Login, VELA_REQUIRED(user), VELA_REQUIRED(password), remember)

}  // namespace openapi_ui_test

namespace vela::e2e {
namespace {

using namespace openapi_ui_test;

namespace fs = std::filesystem;

// A temporary directory removed with its contents.
class TempDir {
  public:
    TempDir() {
        char tmpl[] = "/tmp/vela-openapi-ui-XXXXXX";
        if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

// What scripts/validate-openapi said about each of several documents.
struct Verdicts {
    /// Its exit status: 0 all valid, 1 one or more invalid, 2 could not run.
    int status = -1;
    /// Per document, in order: "valid\n" or its errors, one a line.
    std::vector<std::string> out;
    /// Everything it printed.
    std::string all;
};

// Runs scripts/validate-openapi once on all of `documents` (node and the schema compilation
// take seconds under load: one run for a table of cases).
Verdicts validate(const std::vector<std::string>& documents) {
    TempDir dir;
    std::string cmd = "node " VELA_SOURCE_DIR "/scripts/validate-openapi";
    std::vector<std::string> prefixes;
    for (std::size_t i = 0; i < documents.size(); ++i) {
        const fs::path file = dir.path() / ("doc" + std::to_string(i) + ".json");
        std::ofstream(file) << documents[i];
        cmd += " '" + file.string() + "'";
        prefixes.push_back(file.string() + ": ");
    }
    const Ran r = run_command(cmd + " 2>&1");
    Verdicts v{r.status, std::vector<std::string>(documents.size()), r.out};
    std::size_t pos = 0;
    while (pos < r.out.size()) {
        std::size_t end = r.out.find('\n', pos);
        if (end == std::string::npos) end = r.out.size();
        const std::string_view line(r.out.data() + pos, end - pos);
        for (std::size_t i = 0; i < prefixes.size(); ++i) {
            if (line.starts_with(prefixes[i])) {
                v.out[i].append(line.substr(prefixes[i].size())).append("\n");
            }
        }
        pos = end + 1;
    }
    return v;
}

// A small valid document written by hand: what the validator must accept.
constexpr std::string_view kHandWritten = R"({
  "openapi": "3.1.0",
  "info": {"title": "Hand-written", "version": "1.0.0"},
  "paths": {
    "/items": {
      "get": {"operationId": "listItems", "tags": ["items"],
              "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}],
              "responses": {"200": {"description": "The items", "content": {"application/json":
                {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}}}}}},
      "post": {"operationId": "createItem", "tags": ["items"],
               "requestBody": {"required": true, "content": {"application/json":
                 {"schema": {"$ref": "#/components/schemas/Item"}}}},
               "responses": {"201": {"description": "Created"},
                             "400": {"description": "Bad request", "content":
                               {"application/problem+json": {"schema": {"type": "object"}}}}}}
    },
    "/items/{id}": {
      "get": {"operationId": "getItem", "tags": ["items"],
              "parameters": [{"name": "id", "in": "path", "required": true,
                              "schema": {"type": "integer", "format": "int64"}}],
              "responses": {"200": {"description": "One item"},
                            "404": {"description": "Not found"}}},
      "delete": {"operationId": "deleteItem", "tags": ["items"],
                 "parameters": [{"name": "id", "in": "path", "required": true,
                                 "schema": {"type": "integer"}}],
                 "responses": {"204": {"description": "Deleted"}}}
    },
    "/health": {"get": {"operationId": "health", "responses": {"200": {"description": "Alive"}}}}
  },
  "components": {"schemas": {
    "Item": {"type": "object", "required": ["name"], "properties": {
      "name": {"type": "string"}, "done": {"type": "boolean"},
      "children": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}}}
  }}
})";

// kHandWritten with `from` replaced by `to` (which must occur once).
std::string broken(std::string_view from, std::string_view to) {
    std::string doc(kHandWritten);
    const std::size_t at = doc.find(from);
    if (at == std::string::npos || doc.find(from, at + 1) != std::string::npos) {
        throw std::logic_error("broken(): the text to replace must occur once");
    }
    doc.replace(at, from.size(), to);
    return doc;
}

TEST(OpenApiValidation, AcceptsAValidDocument) {
    const Verdicts v = validate({std::string(kHandWritten)});
    EXPECT_EQ(v.status, 0) << v.all;
    EXPECT_EQ(v.out[0], "valid\n") << v.all;
}

// The validator must be able to fail: each document breaks one rule of OpenAPI 3.1 or of
// JSON Schema 2020-12, and is checked beside a valid one (which must stay valid).
TEST(OpenApiValidation, RejectsBrokenDocuments) {
    struct Case {
        const char* what;
        std::string document;
        const char* error;  // a part of the error message
    };
    const std::vector<Case> cases = {
        {"an OpenAPI 3.0 version", broken(R"("3.1.0")", R"("3.0.3")"), "/openapi"},
        {"no info", broken(R"("info": {"title": "Hand-written", "version": "1.0.0"},)", ""),
         "info"},
        {"a parameter in the body", broken(R"("in": "query")", R"("in": "body")"),
         "parameters/0/in"},
        {"a path parameter not required",
         broken(R"("in": "path", "required": true,
                              "schema": {"type": "integer", "format": "int64"})",
                R"("in": "path",
                              "schema": {"type": "integer", "format": "int64"})"),
         "parameters"},
        {"a response without a description", broken(R"({"description": "Deleted"})", "{}"),
         "description"},
        {"a status that is not one", broken(R"("201")", R"("2001")"), "responses"},
        {"a $ref to nothing",
         broken(R"("$ref": "#/components/schemas/Item"}}}},)",
                R"("$ref": "#/components/schemas/Missing"}}}},)"),
         "Missing"},
        {"a schema type that does not exist",
         broken(R"("name": {"type": "string"})", R"("name": {"type": "text"})"), "type"},
        {"required as a string", broken(R"("required": ["name"])", R"("required": "name")"),
         "required"},
        {"a path without a leading slash", broken(R"("/health")", R"("health")"), "paths"},
        {"not JSON", "{\"openapi\": ", "not JSON"},
    };
    std::vector<std::string> documents{std::string(kHandWritten)};
    for (const Case& c : cases) documents.push_back(c.document);
    const Verdicts v = validate(documents);
    EXPECT_EQ(v.status, 1) << v.all;
    EXPECT_EQ(v.out[0], "valid\n") << v.all;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        SCOPED_TRACE(cases[i].what);
        const std::string& out = v.out[i + 1];
        EXPECT_NE(out, "valid\n");
        EXPECT_NE(out.find(cases[i].error), std::string::npos) << out;
    }
}

class OpenApiUi : public ::testing::Test {
  protected:
    void TearDown() override {
        app_.stop();
        app_.wait();
    }
    HttpResponse get(const std::string& path, std::string_view extra = {}) {
        Client c = Client::tcp(app_.port());
        EXPECT_TRUE(c.send(get_request(path, extra)));
        std::optional<HttpResponse> r = c.read_response();
        EXPECT_TRUE(r.has_value()) << path << ": " << c.error();
        return r.value_or(HttpResponse{});
    }
    // Many routes of every kind the generator knows, /openapi.json and /docs; returns the
    // operations the document must list, as "METHOD path".
    std::set<std::string> add_rich_routes() {
        app_.get("/todos", [](Query<Filter>) { return std::vector<Todo>{}; })
            .summary("List todos")
            .tag("todos");
        app_.post("/todos", [](Json<NewTodo>) -> Task<Todo> { co_return Todo{}; })
            .summary("Create a todo")
            .tag("todos")
            .response<Todo>(201, "Created")
            .response(409, "Already there")
            .security_bearer();
        app_.get("/todos/{id:int}", [](Request&) { return Todo{}; })
            .tag("todos")
            .operation_id("getTodo");
        app_.put("/todos/{id:int}", [](Json<Todo> t) { return *t; }).tag("todos");
        app_.patch("/todos/{id:int}", [](Json<json::Value>) { return Status::NoContent; })
            .tag("todos")
            .deprecated();
        app_.del("/todos/{id:int}", [] { return Status::NoContent; }).tag("todos");
        app_.get("/outlines/{name}", [](Request&) { return Outline{}; }).tag("outlines");
        app_.post("/outlines", [](Json<std::vector<Outline>>) { return Status::Created; })
            .tag("outlines");
        app_.post("/login", [](Form<Login> f) { return f->user; }).security_cookie("session");
        app_.get("/states", [] { return std::vector<std::map<std::string, State>>{}; });
        app_.get("/u/{n:uint}/{x:float}/{a:alpha}", [] { return std::string("u"); });
        Group api = app_.group("/api/v2");
        api.get("/users/{uid:uuid}", [](Request&) { return std::vector<std::string>{}; })
            .tag("users");
        api.get("/files/{*rest}", [](Request&) { return Response("file"); }).tag("files");
        app_.get("/internal", [] { return "hidden"; }).hidden();
        app_.ws("/ws", [](WebSocket&, Request&) -> Task<void> { co_return; });
        vela::openapi_spec(
            app_, {.title = "Rich", .version = "2.0.0", .description = "Every kind of route."});
        vela::openapi_ui(app_, "/docs");
        return {"GET /todos",
                "POST /todos",
                "GET /todos/{id}",
                "PUT /todos/{id}",
                "PATCH /todos/{id}",
                "DELETE /todos/{id}",
                "GET /outlines/{name}",
                "POST /outlines",
                "POST /login",
                "GET /states",
                "GET /u/{n}/{x}/{a}",
                "GET /api/v2/users/{uid}",
                "GET /api/v2/files/{rest}"};
    }

    App app_;
};

TEST_F(OpenApiUi, ServesThePageItsScriptAndTheSwaggerUiFiles) {
    openapi_ui(app_, "/docs", {.spec_url = "/api/openapi.json", .title = "Todo <API>"});
    start_app(app_);

    for (const char* path : {"/docs", "/docs/"}) {
        SCOPED_TRACE(path);
        const HttpResponse page = get(path);
        EXPECT_EQ(page.status, 200);
        EXPECT_EQ(page.header("Content-Type"), "text/html; charset=utf-8");
        EXPECT_NE(page.body.find("<title>Todo &lt;API&gt;</title>"), std::string::npos);
        EXPECT_NE(page.body.find(R"(<script src="/docs/assets/swagger-ui-bundle.js">)"),
                  std::string::npos);
        EXPECT_NE(page.body.find(R"(<script src="/docs/swagger-initializer.js">)"),
                  std::string::npos);
        EXPECT_NE(page.body.find(R"(href="/docs/assets/swagger-ui.css")"), std::string::npos);
        // No CDN: every script and style sheet comes from this server.
        EXPECT_EQ(page.body.find("http"), std::string::npos);
        // No inline script (a strict Content-Security-Policy would refuse it).
        EXPECT_EQ(page.body.find("<script>"), std::string::npos);
    }

    const HttpResponse init = get("/docs/swagger-initializer.js");
    EXPECT_EQ(init.status, 200);
    EXPECT_EQ(init.header("Content-Type"), "text/javascript; charset=utf-8");
    EXPECT_NE(init.body.find(R"(url: "/api/openapi.json")"), std::string::npos) << init.body;
    EXPECT_NE(init.body.find(R"("/docs/assets/oauth2-redirect.html")"), std::string::npos);

    const std::string dir = swagger_ui_dir();
    const HttpResponse bundle = get("/docs/assets/swagger-ui-bundle.js");
    EXPECT_EQ(bundle.status, 200);
    EXPECT_EQ(bundle.body.size(), fs::file_size(fs::path(dir) / "swagger-ui-bundle.js"));
    EXPECT_NE(bundle.body.find("SwaggerUIBundle"), std::string::npos);
    EXPECT_NE(bundle.header("Content-Type").find("javascript"), std::string::npos);
    // The compressed sibling scripts/install-npm made.
    const HttpResponse gz = get("/docs/assets/swagger-ui-bundle.js", "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(gz.status, 200);
    EXPECT_EQ(gz.header("Content-Encoding"), "gzip");
    EXPECT_LT(gz.body.size(), bundle.body.size() / 2);

    const HttpResponse css = get("/docs/assets/swagger-ui.css");
    EXPECT_EQ(css.status, 200);
    EXPECT_NE(css.header("Content-Type").find("text/css"), std::string::npos);
    // swagger-ui-dist's sample page (the petstore) is not served.
    EXPECT_EQ(get("/docs/assets/index.html").status, 404);
    EXPECT_EQ(get("/docs/assets/swagger-initializer.js").status, 404);
}

// What a child process printed (stdout and stderr together) and how it ended.
struct ChildOutcome {
    bool exited = false;  // false: killed by a signal (an abort)
    int code = -1;
    std::string out;
};

// Runs `body` in a forked child whose stdout and stderr go to one pipe; its return value is
// the child's exit code.
template <class F>
ChildOutcome run_child(F body) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) < 0) return {};
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(fds[1], 1);
        ::dup2(fds[1], 2);
        ::_exit(body());
    }
    ::close(fds[1]);
    ChildOutcome o;
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        o.out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    o.exited = WIFEXITED(status);
    o.code = o.exited ? WEXITSTATUS(status) : -1;
    return o;
}

// Regression: an installed vela that did not find its Swagger UI ended the program with
// "terminate called ... Swagger UI files not found" (exit 134) from openapi_ui().
TEST(OpenApiUiMissing, RunLogsOneLineSayingWhatToDoAndReturnsOne) {
    TempDir empty;
    const ChildOutcome o = run_child([&] {
        ::setenv("VELA_SWAGGER_UI_DIR", empty.path().c_str(), 1);
        App app;
        app.get("/", [] { return "up"; });
        openapi_spec(app);
        openapi_ui(app, "/docs");
        return app.listen("127.0.0.1:0").run(1);
    });
    ASSERT_TRUE(o.exited) << "killed by a signal: " << o.out;
    EXPECT_EQ(o.code, 1) << o.out;
    EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
    EXPECT_EQ(o.out.find("terminate called"), std::string::npos) << o.out;
    for (const std::string& part :
         {std::string("Swagger UI for /docs not found"),
          "(no swagger-ui-bundle.js in VELA_SWAGGER_UI_DIR=" + empty.path().string() + ")",
          std::string("point VELA_SWAGGER_UI_DIR at a copy of the npm package swagger-ui-dist")})
        EXPECT_NE(o.out.find(part), std::string::npos) << part << " not in: " << o.out;
}

TEST_F(OpenApiUi, MissingFilesStopTheStartNotTheRouteOrTheTestClient) {
    TempDir empty;
    ASSERT_EQ(::setenv("VELA_SWAGGER_UI_DIR", empty.path().c_str(), 1), 0);
    EXPECT_EQ(swagger_ui_dir(), "");
    ::unsetenv("VELA_SWAGGER_UI_DIR");

    openapi_ui(app_, "/docs", {.assets_dir = empty.path().string()});  // no throw here
    {
        // The in-process client serves the page (a test of the routes needs no files).
        vela::testing::Client client(app_);
        EXPECT_EQ(client.get("/docs").get().status(), 200);
        EXPECT_EQ(client.get("/docs/assets/swagger-ui-bundle.js").get().status(), 404);
    }
    App app;
    openapi_ui(app, "/api/docs/", {.assets_dir = empty.path().string()});
    app.listen("127.0.0.1:0");
    try {
        app.start(1);
        app.stop();
        app.wait();
        FAIL() << "started without Swagger UI's files";
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("Swagger UI for /api/docs not found (no swagger-ui-bundle.js in " +
                            empty.path().string() + ")"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("scripts/install-npm"), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    EXPECT_EQ(app.port(), 0);
}

TEST_F(OpenApiUi, EnvironmentVariableChoosesTheDirectory) {
    const std::string dir = swagger_ui_dir();
    ASSERT_EQ(::setenv("VELA_SWAGGER_UI_DIR", dir.c_str(), 1), 0);
    EXPECT_EQ(swagger_ui_dir(), dir);
    ::unsetenv("VELA_SWAGGER_UI_DIR");
}

// The operations Swagger UI rendered in `dom` (Chromium's --dump-dom), as "METHOD path":
// each operation is a div of class "opblock opblock-<method or deprecated>" holding a span of
// class "opblock-summary-method" (the method) and one with the path in its data-path attribute.
std::set<std::string> rendered_operations(std::string_view dom) {
    std::set<std::string> ops;
    constexpr std::string_view block = R"(class="opblock opblock-)";
    constexpr std::string_view method_tag = R"(<span class="opblock-summary-method">)";
    constexpr std::string_view data_path = R"(data-path=")";
    for (std::size_t at = dom.find(block); at != std::string_view::npos;) {
        const std::size_t next = dom.find(block, at + block.size());
        const std::string_view op =
            dom.substr(at, next == std::string_view::npos ? next : next - at);
        const std::size_t m = op.find(method_tag);
        const std::size_t p = op.find(data_path);
        if (m != std::string_view::npos && p != std::string_view::npos) {
            const std::size_t m_end = op.find('<', m + method_tag.size());
            const std::size_t p_end = op.find('"', p + data_path.size());
            ops.insert(
                std::string(op.substr(m + method_tag.size(), m_end - m - method_tag.size())) + " " +
                std::string(op.substr(p + data_path.size(), p_end - p - data_path.size())));
        }
        at = next;
    }
    return ops;
}

// Loads `url` in headless Chromium and returns the DOM after scripts ran. Bounded: Chromium
// gets `budget_ms` of virtual time (network waits do not count) and 60 s of real time.
Ran chromium_dom(const std::string& url, int budget_ms) {
    TempDir profile;
    return run_command(
        "timeout -k 5 60 chromium --headless=new --no-sandbox --disable-gpu "
        "--disable-dev-shm-usage --no-first-run --no-default-browser-check --disable-extensions "
        "--disable-background-networking --user-data-dir='" +
        profile.path().string() + "' --virtual-time-budget=" + std::to_string(budget_ms) +
        " --dump-dom '" + url + "' 2>/dev/null");
}

bool have_chromium() { return run_command("command -v chromium >/dev/null").status == 0; }

TEST_F(OpenApiUi, ChromiumListsEveryRoute) {
    // scripts/install-deps installs chromium; CI must not skip this test.
    if (!have_chromium()) {
        if (std::getenv("VELA_CI")) FAIL() << "chromium is missing: run scripts/install-deps";
        GTEST_SKIP() << "chromium is missing: run scripts/install-deps";
    }
    const std::set<std::string> expected = add_rich_routes();
    start_app(app_);
    const std::string url = "http://127.0.0.1:" + std::to_string(app_.port()) + "/docs";
    const auto t0 = SteadyClock::now();
    const Ran r = chromium_dom(url, 10000);
    ASSERT_EQ(r.status, 0) << "chromium failed or timed out (124) after " << ms_since(t0)
                           << " ms: " << r.out.substr(0, 2000);
    // Swagger UI rendered the document (its title, the API's title and version).
    EXPECT_NE(r.out.find("Rich"), std::string::npos) << r.out.substr(0, 4000);
    EXPECT_EQ(rendered_operations(r.out), expected) << r.out.substr(0, 4000);
}

// The document of the same app, as the server sends it, against the OpenAPI 3.1 schema.
TEST_F(OpenApiUi, GeneratedDocumentOfARichAppValidates) {
    const std::set<std::string> expected = add_rich_routes();
    start_app(app_);
    const HttpResponse doc = get("/openapi.json");
    ASSERT_EQ(doc.status, 200);
    EXPECT_EQ(doc.header("Content-Type"), "application/json");
    const Verdicts v = validate({doc.body});
    EXPECT_EQ(v.status, 0) << v.all;
    EXPECT_EQ(v.out[0], "valid\n") << v.all;
    // The UI's own routes and the hidden ones stay out of it; every other route is in it.
    EXPECT_EQ(doc.body.find("/docs"), std::string::npos);
    EXPECT_EQ(doc.body.find("/internal"), std::string::npos);
    const json::Value parsed = json::parse<json::Value>(doc.body);
    std::set<std::string> listed;
    for (const auto& [path, item] : parsed["paths"].as_object()) {
        for (const auto& [method, op] : item.as_object()) {
            std::string m = method;
            for (char& ch : m) ch = static_cast<char>(ch - ('a' <= ch && ch <= 'z' ? 32 : 0));
            listed.insert(m + " " + path);
        }
    }
    EXPECT_EQ(listed, expected);
}

TEST(OpenApiUiDom, ReadsOperationsFromSwaggerUiMarkup) {
    const std::string dom =
        R"(<div class="opblock opblock-get" id="x"><span class="opblock-summary-method">GET)"
        R"(</span><span class="opblock-summary-path" data-path="/items/{id}"></span></div>)"
        R"(<div class="opblock opblock-deprecated"><div class="opblock-summary-patch">)"
        R"(<span class="opblock-summary-method">PATCH</span>)"
        R"(<span class="opblock-summary-path__deprecated" data-path="/items/{id}"></span>)"
        R"(<div class="opblock opblock-post"><span class="opblock-summary-method">POST</span>)"
        R"(</div><div class="opblock opblock-put"><span data-path="/a"></span></div>)"
        R"(<div class="opblock opblock-delete"><span class="opblock-summary-method">DELETE</span>)"
        R"(<span data-path="/b"></span></div>)";
    EXPECT_EQ(rendered_operations(dom),
              (std::set<std::string>{"GET /items/{id}", "PATCH /items/{id}", "DELETE /b"}));
}

}  // namespace
}  // namespace vela::e2e
