// Templates end to end: an App on loopback answers with views.response() from a folder of
// .mustache files (a page including a partial), over real sockets from several clients at
// once; the bytes on the wire are the escaped page with Content-Type text/html; charset=utf-8.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "client.hpp"
#include "vela/template/templates.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

namespace fs = std::filesystem;

struct Fortune {
    int id = 0;
    std::string message;
};
VELA_REFLECT(Fortune, id, message)

struct FortunesPage {
    std::vector<Fortune> fortunes;
};
VELA_REFLECT(FortunesPage, fortunes)

class TemplatesE2E : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string pattern = (fs::temp_directory_path() / "vela-views-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        std::ofstream(dir_ / "fortunes.mustache")
            << "<table>\n{{#fortunes}}\n  {{>row}}\n{{/fortunes}}\n</table>\n";
        std::ofstream(dir_ / "row.mustache") << "<tr><td>{{id}}</td><td>{{message}}</td></tr>\n";
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    fs::path dir_;
};

TEST_F(TemplatesE2E, ResponseFromAFolderOverRealSockets) {
    tmpl::Templates views{dir_};
    App app;
    app.get("/fortunes", [&views] {
        FortunesPage page{{{1, "<script>alert(\"x\")</script>"}, {2, "\u30d9\u30f3\u30c1"}}};
        return views.response("fortunes", page);
    });
    start_app(app, 2);
    const std::string expected =
        "<table>\n"
        "  <tr><td>1</td><td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td></tr>\n"
        "  <tr><td>2</td><td>\u30d9\u30f3\u30c1</td></tr>\n"
        "</table>\n";
    std::vector<std::thread> clients;
    std::vector<int> good(4, 0);
    for (std::size_t k = 0; k < good.size(); ++k) {
        clients.emplace_back([&, k] {
            Client c = Client::tcp(app.port(), Ms{5000});
            for (int i = 0; i < 25 && c.connected(); ++i) {
                if (!c.send(get_request("/fortunes"))) break;
                auto r = c.read_response();
                if (!r) break;
                if (r->status == 200 && r->header("Content-Type") == "text/html; charset=utf-8" &&
                    r->body == expected)
                    ++good[k];
            }
        });
    }
    for (auto& t : clients) t.join();
    for (int g : good) EXPECT_EQ(g, 25);
}

}  // namespace
}  // namespace vela::e2e
