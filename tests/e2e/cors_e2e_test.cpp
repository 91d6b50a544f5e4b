// CORS end to end: vela::cors() installed on an App, driven through vela::testing::Client in
// process (the request bytes through vela's parser, the App and the response writer), and on a
// real socket by the raw client of client.hpp (several origins on one connection) and by curl.
// Preflights to routes without an OPTIONS handler, to a route with one (not called), to 405 and 404
// paths; credentials; refused origins; Vary; a policy on a group only; several requests on one
// connection.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "client.hpp"
#include "process.hpp"
#include "tls/certs.hpp"
#include "vela/middleware/cors.hpp"
#include "vela/testing/client.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

constexpr std::string_view kApp = "https://app.example";

// Bytes of an OPTIONS preflight for `path` from `origin`.
std::string preflight(std::string_view path, std::string_view origin, std::string_view method,
                      std::string_view headers = {}) {
    std::string r = "OPTIONS ";
    r.append(path).append(" HTTP/1.1\r\nHost: localhost\r\nOrigin: ").append(origin);
    r.append("\r\nAccess-Control-Request-Method: ").append(method).append("\r\n");
    if (!headers.empty())
        r.append("Access-Control-Request-Headers: ").append(headers).append("\r\n");
    return r.append("\r\n");
}

template <class R>
bool has_any_cors_header(const R& r) {
    for (const auto& h : r.headers())
        if (h.first.size() > 15 &&
            iequal(std::string_view(h.first).substr(0, 15), "access-control-"))
            return true;
    return false;
}

class CorsE2E : public ::testing::Test {
  protected:
    App app;
    std::atomic<int> options_calls{0};
    std::atomic<int> item_calls{0};

    void SetUp() override {
        quick_options(app.options());
        app.use(cors({.origins = {std::string(kApp), "http://localhost:5173"},
                      .exposed_headers = {"X-Total-Count"},
                      .credentials = true,
                      .max_age = std::chrono::minutes(10)}));
        app.get("/items", [this] {
            ++item_calls;
            Response r = Response::json("[1,2,3]");
            r.add_header("X-Total-Count", "3");
            return r;
        });
        app.options("/custom", [this] {
            ++options_calls;
            return Response("custom options");
        });
        app.post("/custom", [] { return "posted"; });
        app.get("/boom", []() -> Response { throw std::runtime_error("boom"); });
        app.get("/gone", [] { return Status::Gone; });
        client.emplace(app);
        start_app(app);  // for the tests on the socket
    }

    testing::TestResponse exchange(const std::string& bytes) { return client->raw(bytes).get(); }

    std::optional<testing::Client> client;  // in process
};

TEST_F(CorsE2E, PreflightToAGetOnlyRouteIsAnsweredWithoutTheHandler) {
    testing::TestResponse r =
        exchange(preflight("/items", kApp, "PUT", "content-type, authorization"));
    EXPECT_EQ(r.status(), 204);
    EXPECT_EQ(r.header("Access-Control-Allow-Origin"), kApp);
    EXPECT_EQ(r.header("Access-Control-Allow-Credentials"), "true");
    EXPECT_EQ(r.header("Access-Control-Allow-Methods"), "GET, HEAD, POST, PUT, PATCH, DELETE");
    EXPECT_EQ(r.header("Access-Control-Allow-Headers"), "Content-Type, Authorization");
    EXPECT_EQ(r.header("Access-Control-Max-Age"), "600");
    EXPECT_TRUE(icontains(r.header("Vary"), "Origin"));
    EXPECT_FALSE(r.has_header("Access-Control-Expose-Headers"));  // not on a preflight
    EXPECT_TRUE(r.body().empty());
    EXPECT_EQ(item_calls.load(), 0);
}

TEST_F(CorsE2E, PreflightNeverCallsAnOptionsHandler) {
    testing::TestResponse r = exchange(preflight("/custom", "http://localhost:5173", "POST"));
    EXPECT_EQ(r.status(), 204);
    EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "http://localhost:5173");
    EXPECT_EQ(options_calls.load(), 0);
    // An OPTIONS request that is not a preflight reaches the handler (and gets CORS headers).
    testing::TestResponse plain = exchange(
        "OPTIONS /custom HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:5173\r\n\r\n");
    EXPECT_EQ(plain.status(), 200);
    EXPECT_EQ(plain.body(), "custom options");
    EXPECT_EQ(plain.header("Access-Control-Allow-Origin"), "http://localhost:5173");
    EXPECT_EQ(options_calls.load(), 1);
}

TEST_F(CorsE2E, PreflightToAnUnknownPathIsAnsweredByGlobalMiddleware) {
    testing::TestResponse r = exchange(preflight("/nowhere", kApp, "GET"));
    EXPECT_EQ(r.status(), 204);
    EXPECT_EQ(r.header("Access-Control-Allow-Origin"), kApp);
    // The actual request then gets its 404 with CORS headers, so the page can read it.
    testing::TestResponse nf = exchange(get_request("/nowhere", "Origin: https://app.example\r\n"));
    EXPECT_EQ(nf.status(), 404);
    EXPECT_EQ(nf.header("Access-Control-Allow-Origin"), kApp);
    EXPECT_TRUE(icontains(nf.header("Vary"), "Origin"));
}

TEST_F(CorsE2E, MethodNotAllowedCarriesCorsHeaders) {
    testing::TestResponse r =
        exchange(request_with_body("DELETE", "/items", "", "Origin: https://app.example\r\n"));
    EXPECT_EQ(r.status(), 405);
    EXPECT_EQ(r.header("Access-Control-Allow-Origin"), kApp);
    EXPECT_TRUE(icontains(r.header("Allow"), "GET"));
}

TEST_F(CorsE2E, ErrorAnswersCarryCorsHeaders) {
    // A handler's exception and a bare error status become the error answer where the
    // handler ends, so the page can read them instead of seeing a CORS failure.
    for (const char* path : {"/boom", "/gone"}) {
        testing::TestResponse r = exchange(get_request(path, "Origin: https://app.example\r\n"));
        EXPECT_EQ(r.status(), std::string_view(path) == "/boom" ? 500 : 410) << path;
        EXPECT_EQ(r.header("Access-Control-Allow-Origin"), kApp) << path;
        EXPECT_EQ(r.header("Access-Control-Allow-Credentials"), "true") << path;
        EXPECT_EQ(r.header("Vary"), "Origin") << path;
    }
}

TEST_F(CorsE2E, ActualRequestWithCredentials) {
    testing::TestResponse r =
        exchange(get_request("/items", "Origin: https://app.example\r\nCookie: s=1\r\n"));
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "[1,2,3]");
    EXPECT_EQ(r.header("Access-Control-Allow-Origin"), kApp);  // never "*" with credentials
    EXPECT_EQ(r.header("Access-Control-Allow-Credentials"), "true");
    EXPECT_EQ(r.header("Access-Control-Expose-Headers"), "X-Total-Count");
    EXPECT_EQ(r.header("Vary"), "Origin");
    EXPECT_EQ(r.header_values("Access-Control-Allow-Origin").size(), 1U);
}

TEST_F(CorsE2E, DisallowedOrigin) {
    testing::TestResponse pre = exchange(preflight("/items", "https://evil.example", "PUT"));
    EXPECT_EQ(pre.status(), 204);  // what ASP.NET Core and Express answer; the browser fails it
    EXPECT_FALSE(has_any_cors_header(pre));
    EXPECT_EQ(pre.header("Vary"), "Origin");

    testing::TestResponse r = exchange(get_request("/items", "Origin: https://evil.example\r\n"));
    EXPECT_EQ(r.status(), 200);  // served (CORS is enforced by the browser), but unreadable
    EXPECT_FALSE(has_any_cors_header(r));
    EXPECT_EQ(r.header("Vary"), "Origin");

    // Lookalikes of an allowed origin.
    for (std::string_view o :
         {"https://app.example.evil", "http://app.example", "https://app.example:8443", "null"}) {
        testing::TestResponse x = exchange(preflight("/items", o, "GET"));
        EXPECT_FALSE(has_any_cors_header(x)) << o;
    }
}

TEST_F(CorsE2E, SameOriginRequestGetsVaryOnly) {
    testing::TestResponse r = exchange(get_request("/items"));
    EXPECT_EQ(r.status(), 200);
    EXPECT_FALSE(has_any_cors_header(r));
    EXPECT_EQ(r.header("Vary"), "Origin");  // a cache must not reuse it for another origin
}

TEST_F(CorsE2E, OneConnectionManyOrigins) {
    Client c = Client::tcp(app.port());
    const std::string_view origins[] = {kApp, "https://evil.example", "http://localhost:5173", ""};
    for (int round = 0; round < 3; ++round) {
        for (std::string_view o : origins) {
            std::string extra;
            if (!o.empty()) extra.append("Origin: ").append(o).append("\r\n");
            ASSERT_TRUE(c.send(get_request("/items", extra)));
            std::optional<HttpResponse> r = c.read_response();
            ASSERT_TRUE(r) << c.error();
            const bool allowed = o == kApp || o == "http://localhost:5173";
            EXPECT_EQ(r->header("Access-Control-Allow-Origin"), allowed ? std::string(o) : "") << o;
            EXPECT_EQ(r->header_count("Vary"), 1U) << o;
        }
    }
}

// ---- With curl --------------------------------------------------------------------------------

struct CurlHead {
    int exit = -1;
    std::string head;
    std::string header(std::string_view name) const {
        std::istringstream in(head);
        std::string line;
        while (std::getline(in, line)) {
            const std::size_t colon = line.find(':');
            if (colon == std::string::npos ||
                !iequal(std::string_view(line).substr(0, colon), name))
                continue;
            std::string v = line.substr(colon + 1);
            while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.pop_back();
            while (!v.empty() && v.front() == ' ') v.erase(0, 1);
            return v;
        }
        return {};
    }
    int status() const { return head.size() > 12 ? std::atoi(head.c_str() + head.find(' ')) : 0; }
};

CurlHead curl_head(const std::string& args) {
    Ran r = run_command("timeout 20 curl -sS -o /dev/null -D - " + args + " 2>&1");
    return {r.status, std::move(r.out)};
}

TEST_F(CorsE2E, CurlPreflightAndRequest) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    const std::string url = "http://127.0.0.1:" + std::to_string(app.port()) + "/items";
    CurlHead pre = curl_head(
        "-X OPTIONS -H 'Origin: https://app.example' "
        "-H 'Access-Control-Request-Method: PATCH' "
        "-H 'Access-Control-Request-Headers: content-type' '" +
        url + "'");
    ASSERT_EQ(pre.exit, 0) << pre.head;
    EXPECT_EQ(pre.status(), 204) << pre.head;
    EXPECT_EQ(pre.header("access-control-allow-origin"), kApp);
    EXPECT_EQ(pre.header("access-control-allow-credentials"), "true");
    EXPECT_TRUE(icontains(pre.header("access-control-allow-methods"), "PATCH"));

    CurlHead get = curl_head("-H 'Origin: https://app.example' '" + url + "'");
    ASSERT_EQ(get.exit, 0) << get.head;
    EXPECT_EQ(get.status(), 200);
    EXPECT_EQ(get.header("access-control-allow-origin"), kApp);
    EXPECT_EQ(get.header("access-control-expose-headers"), "X-Total-Count");
    EXPECT_EQ(get.header("vary"), "Origin");

    CurlHead evil = curl_head(
        "-X OPTIONS -H 'Origin: https://evil.example' "
        "-H 'Access-Control-Request-Method: PATCH' '" +
        url + "'");
    ASSERT_EQ(evil.exit, 0) << evil.head;
    EXPECT_EQ(evil.status(), 204);
    EXPECT_EQ(evil.header("access-control-allow-origin"), "");
}

TEST(CorsHttp2E2E, PreflightAndRequestOverHttp2) {
    if (!have("curl") || !have_curl_h2()) GTEST_SKIP() << "needs curl with HTTP/2";
    App app;
    quick_options(app.options());
    app.use(cors({.origins = {std::string(kApp)}, .credentials = true}));
    app.get("/items", [] { return Response::json("[]"); });
    TlsOptions t;
    t.cert = test::test_certs().server_ec_cert;
    t.key = test::test_certs().server_ec_key;
    app.listen_tls("127.0.0.1:0", std::move(t));
    app.start(1);
    const std::string url = "https://127.0.0.1:" + std::to_string(app.port()) + "/items";
    CurlHead pre = curl_head(
        "-k --http2 -X OPTIONS -H 'Origin: https://app.example' "
        "-H 'Access-Control-Request-Method: DELETE' '" +
        url + "'");
    ASSERT_EQ(pre.exit, 0) << pre.head;
    EXPECT_TRUE(pre.head.starts_with("HTTP/2 204")) << pre.head;
    EXPECT_EQ(pre.header("access-control-allow-origin"), kApp);
    EXPECT_EQ(pre.header("access-control-allow-credentials"), "true");
    CurlHead get = curl_head("-k --http2 -H 'Origin: https://app.example' '" + url + "'");
    ASSERT_EQ(get.exit, 0) << get.head;
    EXPECT_TRUE(get.head.starts_with("HTTP/2 200")) << get.head;
    EXPECT_EQ(get.header("access-control-allow-origin"), kApp);
    EXPECT_EQ(get.header("vary"), "Origin");
}

// ---- A policy on one group ---------------------------------------------------------------------

TEST(CorsGroupE2E, GroupPolicyCoversItsPathsOnly) {
    App app;
    quick_options(app.options());
    auto pub = app.group("/pub");
    pub.use(cors({.origins = {"*"}, .allowed_headers = {"*"}}));
    pub.get("/data", [] { return "public"; });
    app.get("/private", [] { return "private"; });
    testing::Client client(app);
    auto exchange = [&](const std::string& bytes) { return client.raw(bytes).get(); };

    // The group's policy answers a preflight to its GET-only route (no OPTIONS handler).
    testing::TestResponse pre =
        exchange(preflight("/pub/data", "https://any.example", "PUT", "x-token"));
    EXPECT_EQ(pre.status(), 204);
    EXPECT_EQ(pre.header("Access-Control-Allow-Origin"), "*");
    EXPECT_EQ(pre.header("Access-Control-Allow-Headers"), "x-token");
    EXPECT_FALSE(pre.has_header("Access-Control-Allow-Credentials"));
    EXPECT_FALSE(pre.has_header("Allow"));  // the middleware's answer, not the automatic one

    testing::TestResponse get =
        exchange(get_request("/pub/data", "Origin: https://any.example\r\n"));
    EXPECT_EQ(get.status(), 200);
    EXPECT_EQ(get.header("Access-Control-Allow-Origin"), "*");
    EXPECT_FALSE(get.has_header("Vary"));  // "*" is the same for every origin

    // A path outside the group: the automatic OPTIONS answer, no CORS.
    testing::TestResponse other = exchange(preflight("/private", "https://any.example", "GET"));
    EXPECT_EQ(other.status(), 204);
    EXPECT_TRUE(icontains(other.header("Allow"), "GET"));
    EXPECT_FALSE(has_any_cors_header(other));
    testing::TestResponse other_get =
        exchange(get_request("/private", "Origin: https://any.example\r\n"));
    EXPECT_FALSE(has_any_cors_header(other_get));
}

}  // namespace
}  // namespace vela::e2e
