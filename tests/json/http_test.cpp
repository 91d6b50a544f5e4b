// JSON over a real server socket: JSON results, Json<T> bodies, Query<T> parameters, and the
// 400 (problem+json) and 415 answers.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "support/http_response.hpp"
#include "vela/net/socket.hpp"
#include "vela/vela.hpp"

namespace http_test {

using namespace vela;

struct Status {
    std::string status;
    std::string framework;
    int version = 0;
};
VELA_REFLECT(Status, status, framework, VELA_REQUIRED(version))

enum class Sort { asc, desc };
VELA_ENUM(Sort, asc, desc)

struct Search {
    std::string q;
    int limit = 0;
    std::optional<bool> exact;
    std::vector<std::string> tag;
    Sort sort = Sort::asc;
};
VELA_REFLECT(Search, q, VELA_REQUIRED(limit), exact, tag, sort)

// The response, and its Content-Type (empty if absent).
struct Reply : test::HttpResponse {
    std::string content_type;
};

// One request on a fresh connection (Connection: close), read to the end.
Reply send_request(std::uint16_t port, const std::string& request) {
    Reply out;
    const int fd = net::connect_tcp("127.0.0.1", port);
    if (fd < 0) return out;
    timeval tv{3, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string raw;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
        raw.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    std::size_t used = 0;
    std::string why;
    EXPECT_EQ(test::parse_response(raw, false, true, out, used, why), test::ParseStatus::complete)
        << why << "\n"
        << raw;
    EXPECT_EQ(used, raw.size()) << "bytes after the response: " << raw;
    out.content_type = out.header("Content-Type");
    return out;
}

std::string post(std::string_view path, std::string_view body,
                 std::string_view type = "application/json") {
    std::string r = "POST " + std::string(path) + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n";
    if (!type.empty()) r += "Content-Type: " + std::string(type) + "\r\n";
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
    return r;
}

std::string get(std::string_view target) {
    return "GET " + std::string(target) + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
}

class JsonHttp : public ::testing::Test {
  protected:
    void SetUp() override {
        app.get("/status", [] { return Status{"ok", "vela", 1}; });
        app.get("/list", [](Request&) {
            return std::vector<Status>{{"a", "b", 1}, {"c", "d", 2}};
        });
        app.get("/value", [] {
            return json::Value::object({{"n", 1}, {"a", json::Value::array({true})}});
        });
        app.get("/nan", [] { return std::vector<double>{std::nan("")}; });
        app.get("/plain", [] { return "still text"; });
        app.post("/echo", [](Json<Status> body) { return body; });
        app.post("/echo-req", [](Request& r, Json<Status> body) {
            body->framework = std::string(r.header("X-Framework"));
            return body;
        });
        app.post("/echo-async", [](const Json<Status>& body) -> Task<Status> { co_return *body; });
        app.post("/any", [](Json<json::Value> v) { return std::to_string(v->size()); });
        app.post("/strict", [](Json<Status, json::ParseOptions{.reject_unknown_fields = true}> s) {
            return s->status;
        });
        app.get("/search", [](Query<Search> s) { return *s; });
        app.get("/both",
                [](Query<Search> s, Request& r) { return std::string(r.path()) + " " + s->q; });
        app.listen("127.0.0.1:0");
        app.start(1);
        port = app.port();
    }
    void TearDown() override {
        app.stop();
        app.wait();
    }
    App app;
    std::uint16_t port = 0;
};

TEST_F(JsonHttp, ReflectedStructVectorAndValueAreJson) {
    Reply r = send_request(port, get("/status"));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(r.body, R"({"status":"ok","framework":"vela","version":1})");
    r = send_request(port, get("/list"));
    EXPECT_EQ(
        r.body,
        R"([{"status":"a","framework":"b","version":1},{"status":"c","framework":"d","version":2}])");
    r = send_request(port, get("/value"));
    EXPECT_EQ(r.body, R"({"n":1,"a":[true]})");
    EXPECT_EQ(r.content_type, "application/json");
    r = send_request(port, get("/plain"));
    EXPECT_EQ(r.body, "still text");
    EXPECT_EQ(r.content_type, "text/plain; charset=utf-8");
    EXPECT_EQ(send_request(port, get("/nan")).status, 500);
}

TEST_F(JsonHttp, JsonBodyEchoes) {
    const std::string body = R"({"status":"ok","framework":"x","version":7})";
    Reply r = send_request(port, post("/echo", body));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(r.body, body);
    r = send_request(port, post("/echo", body, "application/merge-patch+json"));
    EXPECT_EQ(r.status, 200);
    r = send_request(port, post("/echo", body, "Application/JSON ; charset=utf-8"));
    EXPECT_EQ(r.status, 200);
    r = send_request(port, post("/echo-async", body));
    EXPECT_EQ(r.body, body);
    r = send_request(port, post("/any", R"([1,2,3])"));
    EXPECT_EQ(r.body, "3");
}

TEST_F(JsonHttp, RequestAndJsonTogether) {
    std::string req = post("/echo-req", R"({"status":"ok","framework":"x","version":7})");
    req.insert(req.find("Content-Length"), "X-Framework: from-header\r\n");
    Reply r = send_request(port, req);
    EXPECT_EQ(r.body, R"({"status":"ok","framework":"from-header","version":7})");
}

TEST_F(JsonHttp, BadJsonIsA400Problem) {
    Reply r = send_request(port, post("/echo", R"({"status":"ok","framework":"x","version":"7"})"));
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.content_type, "application/problem+json");
    json::Value p = json::parse<json::Value>(r.body);
    EXPECT_EQ(p["type"].as_string(), "about:blank");
    EXPECT_EQ(p["title"].as_string(), "Bad Request");
    EXPECT_EQ(p["status"].as_int64(), 400);
    EXPECT_EQ(p["detail"].as_string(), "invalid JSON body: $.version: expected integer");
    EXPECT_EQ(p["errors"][0]["pointer"].as_string(), "#/version");
    EXPECT_EQ(p["errors"][0]["detail"].as_string(), "expected integer");

    r = send_request(port, post("/echo", R"({"status":"ok","framework":"x"})"));
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("$.version: missing required field"), std::string::npos) << r.body;
    r = send_request(port, post("/echo", R"({"status":"ok",)"));
    EXPECT_EQ(r.status, 400);
    r = send_request(port, post("/echo", "not json at all"));
    EXPECT_EQ(r.status, 400);
    r = send_request(port, post("/echo", ""));
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("empty document"), std::string::npos) << r.body;
    r = send_request(port,
                     post("/strict", R"({"status":"ok","framework":"x","version":1,"more":1})"));
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("$.more: unknown field"), std::string::npos) << r.body;
}

TEST_F(JsonHttp, DeepNestingIsA400NotACrash) {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    Reply r = send_request(port, post("/any", deep));
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("nesting deeper than 128"), std::string::npos) << r.body.substr(0, 300);
    r = send_request(port, post("/any", std::string(128, '[') + std::string(128, ']')));
    EXPECT_EQ(r.status, 200);
}

TEST_F(JsonHttp, WrongContentTypeIs415) {
    const std::string body = R"({"status":"ok","framework":"x","version":7})";
    for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "", "json",
                             "application/jsonx", "application/+json"}) {
        Reply r = send_request(port, post("/echo", body, type));
        EXPECT_EQ(r.status, 415) << type;
        EXPECT_EQ(r.content_type, "application/problem+json") << type;
        EXPECT_EQ(r.header("Accept-Post"), "application/json") << type;
    }
}

TEST_F(JsonHttp, QueryFillsAStruct) {
    Reply r = send_request(port, get("/search?q=a%20b&limit=5&tag=x&tag=y+z&sort=desc&exact=true"));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, R"({"q":"a b","limit":5,"exact":true,"tag":["x","y z"],"sort":"desc"})");
    r = send_request(port, get("/search?limit=1&q=&sort=asc"));
    EXPECT_EQ(r.body, R"({"q":"","limit":1,"tag":[],"sort":"asc"})");
    r = send_request(port, get("/both?q=hi&limit=2&sort=asc"));
    EXPECT_EQ(r.body, "/both hi");
}

TEST_F(JsonHttp, BadQueryIsA400Problem) {
    struct Bad {
        const char* target;
        const char* detail;
    };
    const Bad cases[] = {
        {"/search?q=x&sort=asc", "query parameter 'limit': missing required parameter"},
        {"/search?q=x&limit=ten&sort=asc", "query parameter 'limit': expected integer"},
        {"/search?q=x&limit=99999999999&sort=asc",
         "query parameter 'limit': expected integer in [-2147483648, 2147483647]"},
        {"/search?q=x&limit=1&sort=up", R"(query parameter 'sort': expected one of "asc", "desc")"},
        {"/search?q=x&limit=1&sort=asc&exact=maybe",
         "query parameter 'exact': expected a boolean (true or false)"},
    };
    for (const Bad& c : cases) {
        Reply r = send_request(port, get(c.target));
        EXPECT_EQ(r.status, 400) << c.target;
        EXPECT_EQ(r.content_type, "application/problem+json");
        EXPECT_EQ(json::parse<json::Value>(r.body)["detail"].as_string(), c.detail) << c.target;
    }
}

TEST(JsonQueryParams, DecodesPairsInOrder) {
    detail::QueryParams q("a=1&b=x+y&&c&a=%41&d=");
    ASSERT_FALSE(q.malformed);
    ASSERT_EQ(q.items.size(), 5u);
    EXPECT_EQ(q.items[1].second, "x y");
    EXPECT_EQ(q.items[2].first, "c");
    EXPECT_EQ(q.items[2].second, "");
    EXPECT_EQ(q.items[3].second, "A");
    EXPECT_TRUE(detail::QueryParams("a=%zz").malformed);
}

TEST(JsonMediaType, JsonAndPlusJson) {
    for (const char* t : {"application/json", "APPLICATION/JSON", "application/json;charset=utf-8",
                          " application/json ", "application/problem+json", "text/x+json"})
        EXPECT_TRUE(detail::is_json_media_type(t)) << t;
    for (const char* t : {"", "json", "application/jsonp", "text/plain", "/json",
                          "application/+jso", "multipart/form-data; boundary=json"})
        EXPECT_FALSE(detail::is_json_media_type(t)) << t;
}

}  // namespace http_test
