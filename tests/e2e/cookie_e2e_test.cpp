// Cookies end to end: a real App on loopback sets plain, signed and encrypted cookies; curl
// stores them in its cookie jar (-c), the jar's lines show the attributes as curl parsed
// them, and curl sends them back (-b) to a route that reads and verifies them. The raw
// client sends several Cookie fields, odd spacing and forged values.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "client.hpp"
#include "process.hpp"
#include "vela/http/conditional.hpp"
#include "vela/http/cookie.hpp"
#include "vela/vela.hpp"
#include "vela/web/cookies.hpp"

namespace vela::e2e {
namespace {

namespace fs = std::filesystem;

// One line of a Netscape cookie jar as curl writes it (-c).
struct JarEntry {
    std::string domain;
    bool http_only = false;
    std::string path;
    bool secure = false;
    long long expires = 0;  // 0: a session cookie
    std::string name, value;
};

std::vector<JarEntry> read_jar(const std::string& file) {
    std::vector<JarEntry> out;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        JarEntry e;
        if (line.starts_with("#HttpOnly_")) {
            e.http_only = true;
            line.erase(0, 10);
        } else if (line.empty() || line[0] == '#') {
            continue;
        }
        std::vector<std::string> f;
        std::stringstream ss(line);
        std::string part;
        while (std::getline(ss, part, '\t')) f.push_back(part);
        if (f.size() == 6) f.emplace_back();  // an empty value
        if (f.size() != 7) continue;
        e.domain = f[0];
        e.path = f[2];
        e.secure = f[3] == "TRUE";
        e.expires = std::stoll(f[4]);
        e.name = f[5];
        e.value = f[6];
        out.push_back(e);
    }
    return out;
}

const JarEntry* find(const std::vector<JarEntry>& jar, std::string_view name) {
    for (const auto& e : jar)
        if (e.name == name) return &e;
    return nullptr;
}

HttpResponse fetch(std::uint16_t port, const std::string& request) {
    Client c = Client::tcp(port, Ms{5000});
    if (!c.connected() || !c.send(request)) {
        ADD_FAILURE() << "cannot send to " << port;
        return {};
    }
    auto r = c.read_response();
    if (!r) {
        ADD_FAILURE() << "no response: " << c.error();
        return {};
    }
    return *r;
}

std::vector<std::string> set_cookies(const HttpResponse& r) {
    std::vector<std::string> out;
    for (const auto& [n, v] : r.headers)
        if (iequal(n, "Set-Cookie")) out.push_back(v);
    return out;
}

class CookieE2E : public ::testing::Test {
  protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / ("vela_cookie_e2e_" + std::to_string(::getpid()));
        fs::create_directories(dir);
        jar = (dir / "jar.txt").string();
        quick_options(app.options());
        app.get("/set", [this](Request&) {
            Response res = Response::text("set");
            res.set_cookie({.name = "theme",
                            .value = "dark",
                            .max_age = std::chrono::hours(1),
                            .http_only = true,
                            .same_site = SameSite::lax});
            res.set_cookie({.name = "scoped", .value = "\"quoted\"", .path = "/app"});
            res.set_cookie({.name = "session", .value = "plain"});
            res.set_cookie({.name = "dated",
                            .value = "x",
                            .expires = std::chrono::system_clock::from_time_t(dated_at)});
            res.set_cookie(signed_cookie(keys, {.name = "user", .value = "42"}));
            res.set_cookie(encrypted_cookie(keys, {.name = "cart", .value = "3 items; \"x\""}));
            return res;
        });
        app.get("/read", [this](Request& req) {
            std::string out;
            for (const auto& [n, v] : req.cookies())
                out += std::string(n) + "=" + std::string(v) + "\n";
            out += "first-a=" + std::string(req.cookie("a").value_or("-")) + "\n";
            out += "user=" + signed_cookie(req, keys, "user").value_or("-") + "\n";
            out += "cart=" + encrypted_cookie(req, keys, "cart").value_or("-") + "\n";
            return Response::text(out);
        });
        app.get("/app/read", [](Request& req) {
            return Response::text(std::string(req.cookie("scoped").value_or("-")));
        });
        app.get("/clear", [](Request&) {
            Response res = Response::text("cleared");
            res.clear_cookie("theme");
            return res;
        });
        app.get("/bad", [](Request&) {
            Response res = Response::text("never");
            res.set_cookie({.name = "bad name", .value = "x"});
            return res;
        });
        start_app(app);
        port = app.port();
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    Ran curl(const std::string& args) {
        return run_command("timeout 20 curl -sS --max-time 10 " + args + " 2>&1");
    }
    std::string url(std::string_view path) {
        return "http://127.0.0.1:" + std::to_string(port) + std::string(path);
    }

    // 30 days ahead: within the 400 days a client may cap an expiry to (RFC 6265bis 5.6.1).
    const std::time_t dated_at = std::time(nullptr) + 30 * 86400;
    CookieKeys keys{std::string("e2e-secret-e2e-secret-e2e-secret-!")};
    App app;
    std::uint16_t port = 0;
    fs::path dir;
    std::string jar;
};

TEST_F(CookieE2E, CurlStoresTheAttributesItParsed) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    const Ran set = curl("-c '" + jar + "' '" + url("/set") + "'");
    ASSERT_EQ(set.status, 0) << set.out;
    EXPECT_EQ(set.out, "set");
    const auto entries = read_jar(jar);
    ASSERT_EQ(entries.size(), 6u);

    const JarEntry* theme = find(entries, "theme");
    ASSERT_NE(theme, nullptr);
    EXPECT_EQ(theme->value, "dark");
    EXPECT_TRUE(theme->http_only);
    EXPECT_EQ(theme->path, "/");
    EXPECT_FALSE(theme->secure);
    const long long now = std::time(nullptr);
    EXPECT_GT(theme->expires, now + 3500);  // Max-Age=3600
    EXPECT_LT(theme->expires, now + 3700);
    EXPECT_EQ(theme->domain, "127.0.0.1");  // host-only: no Domain was sent

    const JarEntry* scoped = find(entries, "scoped");
    ASSERT_NE(scoped, nullptr);
    EXPECT_EQ(scoped->path, "/app");
    EXPECT_FALSE(scoped->http_only);

    const JarEntry* session = find(entries, "session");
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(session->expires, 0);  // neither Expires nor Max-Age: a session cookie

    const JarEntry* dated = find(entries, "dated");
    ASSERT_NE(dated, nullptr);
    EXPECT_EQ(dated->expires, static_cast<long long>(dated_at));

    const JarEntry* user = find(entries, "user");
    ASSERT_NE(user, nullptr);
    EXPECT_TRUE(user->value.starts_with("42."));
    EXPECT_EQ(keys.verify("user", user->value), "42");
    const JarEntry* cart = find(entries, "cart");
    ASSERT_NE(cart, nullptr);
    EXPECT_EQ(keys.decrypt("cart", cart->value), "3 items; \"x\"");
}

TEST_F(CookieE2E, CurlSendsThemBackAndTheyVerify) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    ASSERT_EQ(curl("-c '" + jar + "' '" + url("/set") + "'").status, 0);
    const Ran read = curl("-b '" + jar + "' '" + url("/read") + "'");
    ASSERT_EQ(read.status, 0) << read.out;
    EXPECT_NE(read.out.find("theme=dark\n"), std::string::npos) << read.out;
    EXPECT_NE(read.out.find("session=plain\n"), std::string::npos) << read.out;
    EXPECT_EQ(read.out.find("scoped="), std::string::npos) << read.out;  // Path=/app only
    EXPECT_NE(read.out.find("\nuser=42\n"), std::string::npos) << read.out;
    EXPECT_NE(read.out.find("\ncart=3 items; \"x\"\n"), std::string::npos) << read.out;

    const Ran scoped = curl("-b '" + jar + "' '" + url("/app/read") + "'");
    EXPECT_EQ(scoped.out, "quoted");  // the quotes are the reader's to strip
}

TEST_F(CookieE2E, CurlForgetsAClearedCookie) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    ASSERT_EQ(curl("-c '" + jar + "' '" + url("/set") + "'").status, 0);
    ASSERT_NE(find(read_jar(jar), "theme"), nullptr);
    ASSERT_EQ(curl("-b '" + jar + "' -c '" + jar + "' '" + url("/clear") + "'").status, 0);
    const auto entries = read_jar(jar);
    EXPECT_EQ(find(entries, "theme"), nullptr);
    EXPECT_NE(find(entries, "session"), nullptr);
}

TEST_F(CookieE2E, SetCookieFieldsOnTheWire) {
    const HttpResponse r = fetch(port, get_request("/set"));
    ASSERT_EQ(r.status, 200);
    const auto fields = set_cookies(r);
    ASSERT_EQ(fields.size(), 6u);
    EXPECT_EQ(fields[0], "theme=dark; Max-Age=3600; Path=/; HttpOnly; SameSite=Lax");
    EXPECT_EQ(fields[1], "scoped=\"quoted\"; Path=/app");
    EXPECT_EQ(fields[2], "session=plain; Path=/");
    EXPECT_EQ(fields[3], "dated=x; Expires=" + format_http_date(dated_at) + "; Path=/");
}

TEST_F(CookieE2E, SeveralCookieFieldsFromARawClient) {
    const std::string good_user = keys.sign("user", "7");
    const std::string good_cart = keys.encrypt("cart", "one");
    const HttpResponse r = fetch(port, get_request("/read",
                                                   "Cookie: a=1;b=2\r\n"
                                                   "cookie:   a=3 ; junk ;  c = \"4\"  \r\n"
                                                   "Cookie: user=7.forged; user=" +
                                                       good_user + "; cart=" + good_cart + "\r\n"));
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "a=1\nb=2\na=3\nc=4\nuser=7.forged\nuser=" + good_user +
                          "\ncart=" + good_cart + "\nfirst-a=1\nuser=7\ncart=one\n");
}

TEST_F(CookieE2E, ForgedAndMovedValuesAreRefused) {
    const std::string signed_user = keys.sign("user", "42");
    const HttpResponse r =
        fetch(port, get_request("/read", "Cookie: user=43" + signed_user.substr(2) +
                                             "; cart=" + keys.encrypt("other", "secret") + "\r\n"));
    EXPECT_NE(r.body.find("\nuser=-\ncart=-\n"), std::string::npos) << r.body;
    const HttpResponse none = fetch(port, get_request("/read"));
    EXPECT_EQ(none.body, "first-a=-\nuser=-\ncart=-\n");
}

TEST_F(CookieE2E, AnInvalidCookieIsAServerErrorNotAHeader) {
    const HttpResponse r = fetch(port, get_request("/bad"));
    EXPECT_EQ(r.status, 500);
    EXPECT_FALSE(r.has_header("Set-Cookie"));
}

}  // namespace
}  // namespace vela::e2e
