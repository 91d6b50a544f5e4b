// Static mounts inside groups: the part below the mount comes from the router's match, so a
// group prefix with parameters works (its length says nothing about where the mount ends).

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "e2e/client.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

namespace fs = std::filesystem;

class StaticMount : public testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/vela-static-mount-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        fs::create_directories(dir_ / "sub");
        std::ofstream(dir_ / "app.js") << "console.log(1);\n";
        std::ofstream(dir_ / "sub" / "index.html") << "<p>sub</p>\n";
    }
    void TearDown() override {
        app_.stop();
        app_.wait();
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    HttpResponse get(const std::string& path) {
        Client c = Client::tcp(app_.port());
        EXPECT_TRUE(c.send(get_request(path)));
        std::optional<HttpResponse> r = c.read_response();
        EXPECT_TRUE(r.has_value()) << path << ": " << c.error();
        return r.value_or(HttpResponse{});
    }

    fs::path dir_;
    App app_;
};

TEST_F(StaticMount, GroupPrefixWithAParameter) {
    app_.group("/{lang}").static_files("/assets", dir_.string());
    start_app(app_);
    for (const char* lang : {"en", "deutsch", "x"}) {
        SCOPED_TRACE(lang);
        const std::string base = std::string("/") + lang + "/assets";
        HttpResponse js = get(base + "/app.js");
        EXPECT_EQ(js.status, 200);
        EXPECT_EQ(js.body, "console.log(1);\n");
        HttpResponse sub = get(base + "/sub");
        EXPECT_EQ(sub.status, 301);
        EXPECT_EQ(sub.header("Location"), base + "/sub/");
        EXPECT_EQ(get(base + "/sub/").body, "<p>sub</p>\n");
        EXPECT_EQ(get(base).status, 301);
        EXPECT_EQ(get(base + "/missing.js").status, 404);
    }
}

TEST_F(StaticMount, MountAtTheRootAndBesideRoutes) {
    app_.get("/api/ping", [] { return "pong"; });
    app_.static_files("/", dir_.string());
    start_app(app_);
    EXPECT_EQ(get("/api/ping").body, "pong");
    EXPECT_EQ(get("/app.js").body, "console.log(1);\n");
    EXPECT_EQ(get("/sub/").body, "<p>sub</p>\n");
    EXPECT_EQ(get("/sub").header("Location"), "/sub/");
}

// A mount at "/" answers what no route takes: its errors (404 for a missing file, 416 for a
// range past the end, decided by the server after the handler) and the router's 404 for a
// route whose parameter does not convert, all in the app's error format.
TEST_F(StaticMount, MountAtTheRootAnswersErrorsInTheAppsFormat) {
    app_.error_pages({.format = ErrorFormat::problem_json});
    app_.get("/api/notes/{id:int}", [](Request& r) { return std::string(r.param("id")); });
    app_.static_files("/", dir_.string());
    start_app(app_);
    for (const char* path : {"/api/notes/abc", "/api/nothing", "/missing.js", "/.hidden"}) {
        SCOPED_TRACE(path);
        HttpResponse r = get(path);
        EXPECT_EQ(r.status, 404);
        EXPECT_EQ(r.header("Content-Type"), "application/problem+json");
        EXPECT_NE(r.body.find("\"status\":404"), std::string::npos) << r.body;
    }
    EXPECT_EQ(get("/api/notes/7").body, "7");
    Client c = Client::tcp(app_.port());
    ASSERT_TRUE(c.send(get_request("/app.js", "Range: bytes=500-600\r\n")));
    std::optional<HttpResponse> r = c.read_response();
    ASSERT_TRUE(r.has_value()) << c.error();
    EXPECT_EQ(r->status, 416);
    EXPECT_EQ(r->header("Content-Type"), "application/problem+json");
    EXPECT_EQ(r->header("Content-Range"), "bytes */16");
    EXPECT_NE(r->body.find("\"status\":416"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace vela::e2e
