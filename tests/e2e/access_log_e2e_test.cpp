// End-to-end tests for request ids and the access log: a real App on loopback, requests sent
// by curl (HTTP/1.1 and HTTP/2 prior knowledge) and by the test client, then the log file
// read back: one line per request in the chosen format, with the id the client was sent.
// JSON lines are checked with Python's json module as well as by eye.

// GCC 12 sees std::regex's std::function members as maybe uninitialized at -O2 with
// sanitizers (a false positive inside libstdc++); it must be off before the headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "e2e/client.hpp"
#include "e2e/process.hpp"
#include "vela/middleware/access_log.hpp"
#include "vela/middleware/request_id.hpp"

namespace vela::e2e {
namespace {

namespace fs = std::filesystem;

#define REQUIRE_CURL() \
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)"

// The value of header `name` in a curl head dump (-D -); empty if absent.
std::string head_value(const std::string& head, std::string_view name) {
    std::istringstream in(head);
    std::string line;
    std::string found;
    while (std::getline(in, line)) {
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos || !iequal(std::string_view(line).substr(0, colon), name))
            continue;
        std::string v = line.substr(colon + 1);
        while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.pop_back();
        while (!v.empty() && v.front() == ' ') v.erase(0, 1);
        found = v;  // the last head's (after a 100 or 101)
    }
    return found;
}

std::vector<std::string> read_lines(const fs::path& p) {
    std::ifstream in(p);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

class AccessLogE2e : public ::testing::Test {
  protected:
    fs::path dir;
    fs::path file;
    std::optional<AccessLog> log;
    App app;

    void SetUp() override {
        dir = fs::temp_directory_path() /
              ("vela_access_e2e_" + std::to_string(::getpid()) + "_" +
               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
        fs::create_directories(dir);
        file = dir / "access.log";
        quick_options(app.options());
    }
    void TearDown() override {
        app.stop();
        app.wait();
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    // Routes, then the middleware as `how` says, then starts the app.
    void start(AccessLogOptions o, bool onion = false, unsigned threads = 1) {
        o.path = file.string();
        log.emplace(std::move(o));
        app.use(request_id());
        if (onion)
            app.use(log->onion());
        else
            app.use(*log);
        app.get("/hello", [] { return "Hello, World!"; });
        app.get("/users/{id}", [](Request& r) { return std::string(r.param("id")); });
        app.post("/echo", [](Request& r) { return std::string(r.body()); });
        app.get("/id", [](Request& r) { return std::string(request_id(r)); });
        app.get("/stream", [] {
            Response r;
            auto n = std::make_shared<int>(0);
            r.set_body_source([n]() -> std::optional<std::string> {
                if (++*n > 3) return std::nullopt;
                return std::string("piece\n");
            });
            return r;
        });
        app.get("/boom", [](Request&) -> Response { throw std::runtime_error("kaboom"); });
        app.get("/slow", [](Request&) -> Task<Response> {
            co_await sleep(Ms{30});
            co_return "slow";
        });
        start_app(app, threads);
    }

    std::string url(std::string_view path) const {
        return "http://127.0.0.1:" + std::to_string(app.port()) + std::string(path);
    }

    // curl's response head (-D -); the body goes to /dev/null.
    std::string curl(const std::string& args, std::string_view path) {
        Ran r = run_command("timeout 20 curl -sS -o /dev/null -D - " + args + " '" + url(path) +
                            "' 2>&1");
        EXPECT_EQ(r.status, 0) << r.out;
        return r.out;
    }

    std::vector<std::string> lines() {
        log->flush();
        return read_lines(file);
    }
};

// 127.0.0.1 - - [01/Dec/2026:16:12:39 +0000] "GET /hello HTTP/1.1" 200 13 "ref" "agent" id 52
const std::regex kCombined(
    R"re(^127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000\] "([A-Z]+) (\S+) (HTTP/[0-9.]+)" (\d{3}) (\d+|-) "([^"]*)" "([^"]*)" (\S+) (\d+)$)re");

TEST_F(AccessLogE2e, CombinedLinesCarryTheEchoedId) {
    REQUIRE_CURL();
    start({.format = AccessLogFormat::combined});
    const std::string h1 = curl(
        "-A 'e2e-agent/1.0' -e 'https://ref.example/p' -H 'X-Request-Id: client-id-1'", "/hello");
    EXPECT_EQ(head_value(h1, "X-Request-Id"), "client-id-1") << h1;
    const std::string h2 = curl("-A 'e2e-agent/1.0'", "/users/42?x=1");
    const std::string generated = head_value(h2, "X-Request-Id");
    EXPECT_EQ(generated.size(), 16u) << h2;
    EXPECT_TRUE(valid_request_id(generated)) << generated;

    const auto l = lines();
    ASSERT_EQ(l.size(), 2u);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l[0], m, kCombined)) << l[0];
    EXPECT_EQ(m[1], "GET");
    EXPECT_EQ(m[2], "/hello");
    EXPECT_EQ(m[3], "HTTP/1.1");
    EXPECT_EQ(m[4], "200");
    EXPECT_EQ(m[5], "13");
    EXPECT_EQ(m[6], "https://ref.example/p");
    EXPECT_EQ(m[7], "e2e-agent/1.0");
    EXPECT_EQ(m[8], "client-id-1");
    ASSERT_TRUE(std::regex_match(l[1], m, kCombined)) << l[1];
    EXPECT_EQ(m[2], "/users/42?x=1");
    EXPECT_EQ(m[5], "2");
    EXPECT_EQ(m[6], "-");
    EXPECT_EQ(m[8], generated);
}

TEST_F(AccessLogE2e, CommonFormatWithoutExtras) {
    REQUIRE_CURL();
    start({.format = AccessLogFormat::common, .extras = false});
    curl("-I", "/hello");  // HEAD: no body bytes
    curl("-d 'abcdef'", "/echo");
    const auto l = lines();
    ASSERT_EQ(l.size(), 2u);
    const std::regex common(
        R"re(^127\.0\.0\.1 - - \[[^\]]+\] "(HEAD /hello|POST /echo) HTTP/1\.1" 200 (-|\d+)$)re");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l[0], m, common)) << l[0];
    EXPECT_EQ(m[2], "-");
    ASSERT_TRUE(std::regex_match(l[1], m, common)) << l[1];
    EXPECT_EQ(m[2], "6");
}

TEST_F(AccessLogE2e, JsonLinesAreValidJson) {
    REQUIRE_CURL();
    if (!have("/usr/bin/python3")) GTEST_SKIP() << "needs python3";
    start({.format = AccessLogFormat::json});
    const std::string h = curl("-H 'X-Request-Id: json-1' -A 'agent \"quoted\"'", "/hello");
    EXPECT_EQ(head_value(h, "X-Request-Id"), "json-1");
    curl("", "/stream");
    curl("", "/slow");
    // A raw request whose target and agent carry bytes a log must not pass through.
    Client c = Client::tcp(app.port());
    c.send(get_request("/users/%22%0A?q=%22x", "User-Agent: caf\xc3\xa9\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);

    const auto l = lines();
    ASSERT_EQ(l.size(), 4u);
    EXPECT_NE(
        l[0].find(
            R"("method":"GET","target":"/hello","version":"HTTP/1.1","status":200,"bytes":13,)"),
        std::string::npos)
        << l[0];
    EXPECT_NE(l[0].find(R"("request_id":"json-1","user_agent":"agent \"quoted\"","referer":null})"),
              std::string::npos)
        << l[0];
    EXPECT_NE(l[1].find(R"("target":"/stream","version":"HTTP/1.1","status":200,"bytes":null,)"),
              std::string::npos)
        << l[1];
    const auto at = l[2].find("\"latency_us\":");
    ASSERT_NE(at, std::string::npos) << l[2];
    EXPECT_GE(std::stoll(l[2].substr(at + 13)), 25'000) << l[2];  // the handler slept 30 ms
    EXPECT_NE(l[3].find(R"("user_agent":"caf\u00c3\u00a9")"), std::string::npos) << l[3];

    const Ran py = run_command(
        "/usr/bin/python3 -c 'import json,sys\n"
        "for l in open(sys.argv[1]):\n"
        "    o = json.loads(l)\n"
        "    assert set(o) == {\"time\",\"remote\",\"method\",\"target\",\"version\",\"status\","
        "\"bytes\",\"latency_us\",\"request_id\",\"user_agent\",\"referer\"}, o\n"
        "    assert o[\"remote\"] == \"127.0.0.1\" and len(o[\"request_id\"]) > 0, o\n"
        "print(\"ok\")' '" +
        file.string() + "' 2>&1");
    EXPECT_EQ(py.status, 0) << py.out;
    EXPECT_EQ(py.out, "ok\n");
}

TEST_F(AccessLogE2e, Http2RequestsAreLogged) {
    REQUIRE_CURL();
    if (!have_curl_h2()) GTEST_SKIP() << "curl without HTTP/2";
    start({.format = AccessLogFormat::combined});
    const std::string h = curl("--http2-prior-knowledge -H 'X-Request-Id: h2-id'", "/hello");
    EXPECT_EQ(head_value(h, "x-request-id"), "h2-id") << h;
    const auto l = lines();
    ASSERT_EQ(l.size(), 1u);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l[0], m, kCombined)) << l[0];
    EXPECT_EQ(m[3], "HTTP/2.0");
    EXPECT_EQ(m[8], "h2-id");
}

TEST_F(AccessLogE2e, ErrorsAndUnroutedRequestsAreLogged) {
    REQUIRE_CURL();
    start({.format = AccessLogFormat::combined});
    const std::string h = curl("-H 'X-Request-Id: boom-1'", "/boom");
    EXPECT_NE(h.find(" 500"), std::string::npos) << h;
    EXPECT_EQ(head_value(h, "X-Request-Id"), "boom-1") << h;
    const std::string nf = curl("-H 'X-Request-Id: nf-1'", "/no/such/route");
    EXPECT_NE(nf.find(" 404"), std::string::npos) << nf;
    EXPECT_EQ(head_value(nf, "X-Request-Id"), "nf-1") << nf;
    curl("-X DELETE", "/hello");  // 405
    const auto l = lines();
    ASSERT_EQ(l.size(), 3u);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l[0], m, kCombined)) << l[0];
    EXPECT_EQ(m[2], "/boom");
    EXPECT_EQ(m[4], "500");
    EXPECT_EQ(m[8], "boom-1");
    ASSERT_TRUE(std::regex_match(l[1], m, kCombined)) << l[1];
    EXPECT_EQ(m[2], "/no/such/route");
    EXPECT_EQ(m[4], "404");
    EXPECT_EQ(m[8], "nf-1");
    ASSERT_TRUE(std::regex_match(l[2], m, kCombined)) << l[2];
    EXPECT_EQ(m[1], "DELETE");
    EXPECT_EQ(m[4], "405");
}

TEST_F(AccessLogE2e, OnionFormLogsToo) {
    REQUIRE_CURL();
    start({.format = AccessLogFormat::combined}, /*onion=*/true);
    const std::string h = curl("-H 'X-Request-Id: boom-2'", "/boom");
    EXPECT_NE(h.find(" 500"), std::string::npos) << h;
    curl("", "/slow");
    const auto l = lines();
    ASSERT_EQ(l.size(), 2u);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l[0], m, kCombined)) << l[0];
    EXPECT_EQ(m[2], "/boom");
    EXPECT_EQ(m[4], "500");
    EXPECT_EQ(m[8], "boom-2");
    ASSERT_TRUE(std::regex_match(l[1], m, kCombined)) << l[1];
    EXPECT_EQ(m[4], "200");
    EXPECT_GE(std::stoll(m[9]), 25'000);
}

TEST_F(AccessLogE2e, HandlersSeeTheId) {
    start({});
    Client c = Client::tcp(app.port());
    c.send(get_request("/id", "X-Request-Id: seen-by-handler\r\n"));
    std::optional<HttpResponse> r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "seen-by-handler");
    EXPECT_EQ(r->header("X-Request-Id"), "seen-by-handler");
    c.send(get_request("/id", "X-Request-Id: bad id with spaces\r\n"));
    r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body.size(), 16u);
    EXPECT_EQ(r->header("X-Request-Id"), r->body);
}

TEST_F(AccessLogE2e, EveryRequestOfManyConnectionsIsLogged) {
    start({.format = AccessLogFormat::common}, false, /*threads=*/2);
    constexpr int kClients = 4, kEach = 250;
    std::vector<std::thread> clients;
    std::atomic<int> ok{0};
    for (int t = 0; t < kClients; ++t)
        clients.emplace_back([&, t] {
            Client c = Client::tcp(app.port());
            for (int i = 0; i < kEach; ++i) {
                c.send(get_request("/users/" + std::to_string(t * 1000 + i)));
                auto r = c.read_response();
                if (r && r->status == 200) ++ok;
            }
        });
    for (auto& th : clients) th.join();
    EXPECT_EQ(ok.load(), kClients * kEach);
    const auto l = lines();
    EXPECT_EQ(l.size(), std::size_t{kClients * kEach});
    EXPECT_EQ(log->dropped(), 0u);
}

TEST_F(AccessLogE2e, RotatedFilesStayBounded) {
    start({.format = AccessLogFormat::combined, .max_file_size = 4096, .max_files = 3});
    Client c = Client::tcp(app.port());
    for (int i = 0; i < 400; ++i) {
        c.send(get_request("/users/" + std::to_string(i), "User-Agent: rotation-test\r\n"));
        auto r = c.read_response();
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200);
    }
    const auto last = lines();
    ASSERT_FALSE(last.empty());
    EXPECT_NE(last.back().find("/users/399"), std::string::npos) << last.back();
    std::size_t files = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
        ++files;
        EXPECT_LE(e.file_size(), 4096u) << e.path();
    }
    EXPECT_EQ(files, 4u);  // access.log + access.{1,2,3}.log
}

}  // namespace
}  // namespace vela::e2e
