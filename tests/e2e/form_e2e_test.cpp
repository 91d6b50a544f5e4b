// Form<T>, FormData, Query<T> and Json<T> over real sockets: bodies sent by curl
// (--data-urlencode, -G for queries, HTTP/1.1 and HTTP/2 cleartext) and by the raw test
// client (keep-alive, chunked, pipelined), checking the required/defaulted rule on the wire.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "e2e/client.hpp"
#include "e2e/process.hpp"

namespace form_e2e {

using namespace vela;
using namespace vela::e2e;

enum class Plan { free, pro };
VELA_ENUM(Plan, free, pro)

// `user` is required; everything else keeps its default when absent.
struct Signup {
    std::string user;
    int age = 18;
    bool newsletter = false;
    Plan plan = Plan::free;
    std::optional<std::string> referrer;
    std::optional<int> invited_by;
    std::vector<std::string> tags;
};
VELA_REFLECT(Signup, VELA_REQUIRED(user), age, newsletter, plan, referrer, invited_by, tags)

struct Page {
    int limit = 10;
    int offset = 0;
};
VELA_REFLECT(Page, limit, offset)

class FormE2e : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app.options());
        app.options().limits.max_body = 64 * 1024;
        app.post("/form", [](Form<Signup> s) { return *s; });
        app.get("/query", [](Query<Signup> s) { return *s; });
        app.post("/json", [](Json<Signup> s) { return *s; });
        app.post("/raw", [](FormData f) {
            std::string out = std::to_string(f.size());
            for (const auto& [name, value] : f) out += "|" + name + "=" + value;
            return out;
        });
        app.post("/both", [](Request& r, Query<Page> page, Form<Signup> s) {
            return std::string(r.path()) + " " + std::to_string(page->limit) + " " +
                   std::to_string(page->offset) + " " + s->user + " " + std::to_string(s->age);
        });
        app.post("/async", [](Form<Signup> s) -> Task<Response> {
            co_return Response::text("async " + s->user);
        });
        start_app(app);
        port = app.port();
        base = "http://127.0.0.1:" + std::to_string(port);
    }

    // Runs curl with `args` against `path`; the output ends with "\n<status>".
    std::pair<int, std::string> curl(const std::string& args, const std::string& path) {
        bool ok = false;
        auto out = curl_status(args, base + path, &ok);
        EXPECT_TRUE(ok) << out.second;
        return out;
    }

    HttpResponse send(const std::string& request) {
        Client c = Client::tcp(port);
        EXPECT_TRUE(c.send(request));
        std::optional<HttpResponse> r = c.read_response();
        EXPECT_TRUE(r) << c.error();
        return r ? *r : HttpResponse{};
    }

    static std::string post_form(std::string_view path, std::string_view body,
                                 std::string_view type = "application/x-www-form-urlencoded") {
        return request_with_body("POST", path, body, "Content-Type: " + std::string(type) + "\r\n");
    }

    App app;
    std::uint16_t port = 0;
    std::string base;
};

TEST_F(FormE2e, CurlDataUrlencodedFillsTheStruct) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    const auto [status, body] =
        curl("--data-urlencode " + shell_quote("user=Zoë & co+=") + " --data-urlencode age=42" +
                 " --data-urlencode newsletter=on --data-urlencode plan=pro" +
                 " --data-urlencode " + shell_quote("referrer=https://x.test/?a=1&b=2") +
                 " --data-urlencode " + shell_quote("tags=a b") + " --data-urlencode tags=100%",
             "/form");
    EXPECT_EQ(status, 200) << body;
    EXPECT_EQ(body, R"({"user":"Zoë & co+=","age":42,"newsletter":true,"plan":"pro",)"
                    R"("referrer":"https://x.test/?a=1&b=2","tags":["a b","100%"]})");
}

TEST_F(FormE2e, CurlAbsentMembersKeepTheirDefaults) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    const std::string defaults =
        R"({"user":"ann","age":18,"newsletter":false,"plan":"free","tags":[]})";
    auto [status, body] = curl("--data-urlencode user=ann", "/form");
    EXPECT_EQ(status, 200);
    EXPECT_EQ(body, defaults);
    std::tie(status, body) = curl("-G --data-urlencode user=ann", "/query");
    EXPECT_EQ(status, 200);
    EXPECT_EQ(body, defaults);
    std::tie(status, body) =
        curl("-H 'Content-Type: application/json' --data-binary '{\"user\":\"ann\"}'", "/json");
    EXPECT_EQ(status, 200);
    EXPECT_EQ(body, defaults);
    // An empty number field of an HTML form is "not given" for an optional.
    std::tie(status, body) = curl("-d 'user=ann&invited_by=&referrer='", "/form");
    EXPECT_EQ(status, 200);
    EXPECT_EQ(
        body,
        R"({"user":"ann","age":18,"newsletter":false,"plan":"free","referrer":"","tags":[]})");
}

TEST_F(FormE2e, CurlRequiredMemberAbsentIs400Problem) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    for (const auto& [args, path, detail] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {"--data-urlencode age=3", "/form", "form field 'user': missing required parameter"},
             {"-G --data-urlencode age=3", "/query",
              "query parameter 'user': missing required parameter"},
             {"-H 'Content-Type: application/json' --data-binary '{\"age\":3}'", "/json",
              "invalid JSON body: $.user: missing required field"},
             {"-d 'user=a&age=old'", "/form", "form field 'age': expected integer"},
             {"-d 'user=a&plan=gold'", "/form",
              R"(form field 'plan': expected one of "free", "pro")"},
             {"-d 'user=%zz'", "/form", "malformed percent-encoding in the form body"},
         }) {
        const auto [status, body] = curl(args, path);
        EXPECT_EQ(status, 400) << args;
        EXPECT_EQ(json::parse<json::Value>(body)["detail"].as_string(), detail) << args;
    }
}

TEST_F(FormE2e, CurlOtherContentTypesAre415) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    for (const char* type : {"text/plain", "application/json", "multipart/form-data; boundary=x"}) {
        const auto [status, body] = curl(
            "-H " + shell_quote(std::string("Content-Type: ") + type) + " --data-binary user=a",
            "/form");
        EXPECT_EQ(status, 415) << type;
        EXPECT_NE(body.find("application/x-www-form-urlencoded"), std::string::npos) << body;
    }
    // curl -F sends multipart/form-data: not a urlencoded form.
    const auto [status, body] = curl("-F user=a", "/raw");
    EXPECT_EQ(status, 415) << body;
}

TEST_F(FormE2e, CurlHttp2AndFormData) {
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)";
    auto [status, body] =
        curl("--http2-prior-knowledge --data-urlencode user=h2 --data-urlencode age=7", "/form");
    EXPECT_EQ(status, 200) << body;
    EXPECT_EQ(body, R"({"user":"h2","age":7,"newsletter":false,"plan":"free","tags":[]})");
    std::tie(status, body) = curl("-d 'b=1&a&b=2&&=x&c=%2B+'", "/raw");
    EXPECT_EQ(status, 200);
    EXPECT_EQ(body, "5|b=1|a=|b=2|=x|c=+ ");
    std::tie(status, body) = curl("-d user=q", "/both?limit=3");
    EXPECT_EQ(status, 200);
    EXPECT_EQ(body, "/both 3 0 q 18");
}

TEST_F(FormE2e, RawClientKeepAliveChunkedAndMixedParameters) {
    Client c = Client::tcp(port);
    ASSERT_TRUE(c.connected());
    // Three requests pipelined on one connection.
    std::string batch = post_form("/form", "user=one&age=1") +
                        post_form("/both?offset=5", "user=two",
                                  "Application/X-WWW-Form-Urlencoded; charset=utf-8") +
                        post_form("/async", "user=three");
    ASSERT_TRUE(c.send(batch));
    std::optional<HttpResponse> r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, R"({"user":"one","age":1,"newsletter":false,"plan":"free","tags":[]})");
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "/both 10 5 two 18");
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "async three");

    // A chunked body is read whole.
    ASSERT_TRUE(
        c.send("POST /raw HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
               "Content-Type: application/x-www-form-urlencoded\r\n\r\n"
               "4\r\na=1&\r\n5\r\nb=%41\r\n0\r\n\r\n"));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "2|a=1|b=A");
}

TEST_F(FormE2e, RawClientLimits) {
    // 1000 fields pass, 1001 are a 400 (the body itself is bounded by limits.max_body).
    std::string body;
    for (int i = 0; i < 1000; ++i) body += "t=" + std::to_string(i) + "&";
    HttpResponse r = send(post_form("/raw", body));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body.substr(0, 5), "1000|");
    r = send(post_form("/raw", body + "x=1"));
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.header("Content-Type"), "application/problem+json");
    EXPECT_NE(r.body.find("more than 1000 form fields"), std::string::npos) << r.body;
    r = send(post_form("/form", "user=a&" + body + "x=1"));
    EXPECT_EQ(r.status, 400);
    r = send(post_form("/raw", std::string(70 * 1024, 'a')));
    EXPECT_EQ(r.status, 413);
    // No Content-Type at all.
    r = send(request_with_body("POST", "/form", "user=a"));
    EXPECT_EQ(r.status, 415);
    EXPECT_EQ(r.header("Accept-Post"), "application/x-www-form-urlencoded");
    // An empty form body is a form with no fields: the required one is missing.
    r = send(post_form("/form", ""));
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("form field 'user': missing required parameter"), std::string::npos);
}

}  // namespace form_e2e
