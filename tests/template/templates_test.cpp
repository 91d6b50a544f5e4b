// Templates: a folder of .mustache files, partials by name, clear errors, reload on change
// (also while other threads render), and the text/html Response helper.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "vela/template/templates.hpp"

namespace templates_test {

namespace fs = std::filesystem;
using namespace vela;
using tmpl::Templates;

// A fresh folder under the system temp dir, removed at the end.
class Folder {
  public:
    Folder() {
        std::string pattern = (fs::temp_directory_path() / "vela-tmpl-XXXXXX").string();
        path_ = ::mkdtemp(pattern.data());
    }
    ~Folder() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    // Writes `text` to `name` and moves its modification time forward, so a rewrite within
    // the file system's time resolution still counts as a change.
    void write(const std::string& name, const std::string& text) {
        const fs::path p = path_ / name;
        fs::create_directories(p.parent_path());
        const bool existed = fs::exists(p);
        const auto before = existed ? fs::last_write_time(p) : fs::file_time_type{};
        std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
        if (existed) fs::last_write_time(p, before + std::chrono::seconds(1));
    }
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

using Data = std::map<std::string, std::string>;

TEST(Templates, LoadsAFolderAndResolvesPartialsByName) {
    Folder dir;
    dir.write("page.mustache", "<h1>{{title}}</h1>\n  {{>parts/footer}}\n");
    dir.write("parts/footer.mustache", "<footer>{{who}}</footer>\n");
    dir.write("notes.txt", "not a template {{");
    Templates views{dir.path()};
    EXPECT_EQ(views.names(), (std::vector<std::string>{"page", "parts/footer"}));
    EXPECT_EQ(views.render("page", Data{{"title", "A&B"}, {"who", "me"}}),
              "<h1>A&amp;B</h1>\n  <footer>me</footer>\n");
    EXPECT_EQ(views.get("parts/footer").name(), "parts/footer");
}

TEST(Templates, ResponseIsHtmlUtf8) {
    Folder dir;
    dir.write("hello.mustache", "<p>{{name}}</p>");
    Templates views{dir.path()};
    Response r = views.response("hello", Data{{"name", "\u30d9"}});
    EXPECT_EQ(r.status(), Status::OK);
    EXPECT_EQ(r.content_type(), "text/html; charset=utf-8");
    EXPECT_EQ(r.body(), "<p>\u30d9</p>");
    EXPECT_EQ(views.response("hello", Data{}, Status::NotFound).status(), Status::NotFound);
}

TEST(Templates, MissingTemplateIsOneClearError) {
    Folder dir;
    dir.write("fortunes.mustache", "x");
    Templates views{dir.path()};
    try {
        views.render("fortune", Data{});
        ADD_FAILURE() << "rendered";
    } catch (const tmpl::TemplateNotFound& e) {
        EXPECT_NE(std::string(e.what()).find("no template 'fortune' (no 'fortune.mustache' in"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("the set has: fortunes"), std::string::npos);
    }
}

TEST(Templates, BadFolderIsOneClearError) {
    try {
        Templates views{"/nonexistent/vela-templates"};
        ADD_FAILURE() << "loaded";
    } catch (const tmpl::TemplateNotFound& e) {
        EXPECT_NE(std::string(e.what()).find("'/nonexistent/vela-templates' is not a directory"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Templates, SyntaxErrorAndMissingIncludeFailAtLoad) {
    Folder dir;
    dir.write("bad.mustache", "ok\n{{#open}}");
    try {
        Templates views{dir.path()};
        ADD_FAILURE() << "loaded";
    } catch (const tmpl::TemplateError& e) {
        EXPECT_EQ(e.template_name(), "bad");
        EXPECT_EQ(e.line(), 2u);
    }
    dir.write("bad.mustache", "{{>heder}}");
    try {
        Templates views{dir.path()};
        ADD_FAILURE() << "loaded";
    } catch (const tmpl::TemplateNotFound& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "template 'bad' includes 'heder', but there is no 'heder.mustache'"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Templates, WithoutReloadAChangedFileIsNotSeen) {
    Folder dir;
    dir.write("t.mustache", "one");
    Templates views{dir.path()};
    dir.write("t.mustache", "two!");
    EXPECT_EQ(views.render("t", Data{}), "one");
}

TEST(Templates, ReloadRecompilesChangedAddedAndRemovedFiles) {
    Folder dir;
    dir.write("t.mustache", "one {{>p}}");
    dir.write("p.mustache", "p1");
    Templates views{dir.path(), {.reload = true}};
    EXPECT_EQ(views.render("t", Data{}), "one p1");
    dir.write("p.mustache", "p2");
    EXPECT_EQ(views.render("t", Data{}), "one p2");
    dir.write("new.mustache", "new");
    EXPECT_EQ(views.render("new", Data{}), "new");
    fs::remove(dir.path() / "new.mustache");
    EXPECT_THROW(views.render("new", Data{}), tmpl::TemplateNotFound);
    // A syntax error is reported on the render; fixing the file recovers.
    dir.write("t.mustache", "{{#x}}");
    EXPECT_THROW(views.render("t", Data{}), tmpl::TemplateError);
    dir.write("t.mustache", "fixed");
    EXPECT_EQ(views.render("t", Data{}), "fixed");
}

TEST(Templates, ReloadWhileOtherThreadsRender) {
    Folder dir;
    dir.write("t.mustache", "[{{>p}}]");
    dir.write("p.mustache", "v0");
    Templates views{dir.path(), {.reload = true}};
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0};
    std::vector<std::thread> readers;
    for (int k = 0; k < 3; ++k) {
        readers.emplace_back([&] {
            while (!stop.load()) {
                // "[]" is a render that read the partial between truncation and write.
                const std::string s = views.render("t", Data{});
                if (s != "[]" &&
                    (s.size() < 4 || s.front() != '[' || s.back() != ']' || s[1] != 'v'))
                    ++bad;
            }
        });
    }
    for (int i = 1; i <= 20; ++i)
        dir.write("p.mustache", std::string("v").append(std::to_string(i)));
    stop = true;
    for (auto& t : readers) t.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(views.render("t", Data{}), "[v20]");
}

}  // namespace templates_test
