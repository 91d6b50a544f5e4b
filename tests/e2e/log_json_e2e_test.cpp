// JSON logs from a real server: with vela::log in JSON mode, the access log on its default
// format and the application's own lines (an unhandled exception, a handler's structured
// line) are each one JSON object per line, whatever hostile bytes the client or the code put
// in them; every captured line is parsed with vela's JSON reader.

#ifndef SPDLOG_FMT_EXTERNAL
#define SPDLOG_FMT_EXTERNAL
#endif
#ifndef SPDLOG_COMPILED_LIB
#define SPDLOG_COMPILED_LIB
#endif
#ifndef SPDLOG_SHARED_LIB
#define SPDLOG_SHARED_LIB
#endif

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "e2e/client.hpp"
#include "log_capture.hpp"
#include "vela/base/log.hpp"
#include "vela/json/codec.hpp"
#include "vela/json/value.hpp"
#include "vela/middleware/access_log.hpp"
#include "vela/middleware/request_id.hpp"

namespace vela::e2e {
namespace {

// A quote, a newline, a control byte and two bytes of invalid UTF-8.
const std::string kHostile = "bad \"input\"\n\x01 \xff\xfe end";
const std::string kHostileAsLogged = "bad \"input\"\n\x01 \xef\xbf\xbd\xef\xbf\xbd end";

std::vector<json::Value> parse_lines(const std::vector<std::string>& lines) {
    std::vector<json::Value> out;
    for (const std::string& l : lines) {
        EXPECT_EQ(l.find('\n'), std::string::npos);
        try {
            out.push_back(json::parse<json::Value>(l));
            EXPECT_TRUE(out.back().is_object()) << l;
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not one JSON value (" << e.what() << "): " << l;
        }
    }
    return out;
}

TEST(LogJsonE2E, EveryLineOfAServingAppIsOneJsonObject) {
    test::LogCapture logs(log::Format::json);
    std::mutex mu;
    std::vector<std::string> access;
    {
        App app;
        quick_options(app.options());
        app.use(request_id());
        AccessLog alog = access_log({.writer = [&](std::string_view l) {
            std::lock_guard lock(mu);
            access.emplace_back(l);
        }});
        app.use(alog);
        app.get("/boom", []() -> Response { throw std::runtime_error(kHostile); });
        app.get("/order", [] {
            log::write(log::Level::info, "order placed", {{"note", kHostile}, {"items", 3}});
            return "ok";
        });
        start_app(app);
        Client c = Client::tcp(app.port());
        const std::string ua = "curl \"x\" \xff";
        ASSERT_TRUE(c.send(get_request("/boom?q=%22%0a", fmt::format("User-Agent: {}\r\n", ua))));
        auto r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        EXPECT_EQ(r->status, 500);
        ASSERT_TRUE(c.send(get_request("/order")));
        r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        EXPECT_EQ(r->status, 200);
        ASSERT_TRUE(c.send(get_request("/missing")));
        r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        EXPECT_EQ(r->status, 404);
        app.stop();
        app.wait();
        alog.flush();
    }

    // The access log: one object per request, the request's fields as members.
    std::vector<json::Value> a = parse_lines(access);
    ASSERT_EQ(a.size(), 3u);
    const int statuses[] = {500, 200, 404};
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(a[i]["level"].as_string(), "info");
        EXPECT_EQ(a[i]["logger"].as_string(), "vela.access");
        EXPECT_EQ(a[i]["status"].as_int64(), statuses[i]);
        EXPECT_EQ(a[i]["method"].as_string(), "GET");
        EXPECT_FALSE(a[i]["request_id"].as_string().empty());
    }
    EXPECT_EQ(a[0]["target"].as_string(), "/boom?q=%22%0a");
    // The access log writes bytes above 0x7E as \u00HH (what the client sent, byte for byte).
    EXPECT_EQ(a[0]["user_agent"].as_string(), "curl \"x\" \xc3\xbf");

    // vela::log's lines: the unhandled exception with the request's parts as members, and the
    // handler's structured line.
    std::vector<json::Value> v = parse_lines(logs.lines());
    const json::Value* boom = nullptr;
    const json::Value* order = nullptr;
    for (const json::Value& x : v) {
        if (x["message"].is_string() && x["message"].as_string() == "unhandled exception")
            boom = &x;
        if (x["message"].is_string() && x["message"].as_string() == "order placed") order = &x;
    }
    ASSERT_NE(boom, nullptr) << logs.text();
    EXPECT_EQ((*boom)["level"].as_string(), "error");
    EXPECT_EQ((*boom)["method"].as_string(), "GET");
    EXPECT_EQ((*boom)["target"].as_string(), "/boom?q=%22%0a");
    EXPECT_EQ((*boom)["error"].as_string(), kHostileAsLogged);
    EXPECT_EQ((*boom)["request_id"].as_string(), a[0]["request_id"].as_string());
    ASSERT_NE(order, nullptr) << logs.text();
    EXPECT_EQ((*order)["note"].as_string(), kHostileAsLogged);
    EXPECT_EQ((*order)["items"].as_int64(), 3);
    EXPECT_EQ((*order)["logger"].as_string(), "vela");
}

}  // namespace
}  // namespace vela::e2e
