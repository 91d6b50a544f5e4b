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

}  // namespace
}  // namespace vela::e2e
