// vela::log's JSON lines (and text-mode fields): every line captured from the spdlog sink is
// one JSON object that vela's JSON reader (simdjson underneath: it checks UTF-8) accepts, with
// hostile strings kept intact or replaced by U+FFFD, never breaking the line.

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

#include <chrono>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "log_capture.hpp"
#include "vela/base/log.hpp"
#include "vela/json/codec.hpp"
#include "vela/json/value.hpp"
#include "vela/middleware/access_log.hpp"

namespace vela {
namespace {

using Capture = test::LogCapture;

json::Value parse_line(const std::string& line) {
    try {
        json::Value v = json::parse<json::Value>(line);
        EXPECT_TRUE(v.is_object()) << line;
        return v;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not one JSON value (" << e.what() << "): " << line;
        return {};
    }
}

const std::string kHostile = "q\"uote \\back\nnew\rret\ttab \x01\x1f\x7f end";

TEST(LogJson, OneObjectPerLineWithTimeLevelLoggerMessage) {
    Capture cap(log::Format::json);
    log::info("hello {}", "world");
    log::warn("careful");
    log::error("{}", kHostile);
    const auto lines = cap.lines();
    ASSERT_EQ(lines.size(), 3u);
    const json::Value a = parse_line(lines[0]);
    EXPECT_EQ(a["message"].as_string(), "hello world");
    EXPECT_EQ(a["level"].as_string(), "info");
    EXPECT_EQ(a["logger"].as_string(), "vela");
    EXPECT_EQ(parse_line(lines[1])["level"].as_string(), "warn");
    const json::Value c = parse_line(lines[2]);
    EXPECT_EQ(c["level"].as_string(), "error");
    EXPECT_EQ(c["message"].as_string(), kHostile);  // every byte back after unescaping
    // RFC 3339, UTC, milliseconds: 2026-12-01T16:12:39.123Z, and now.
    const std::string& t = a["time"].as_string();
    ASSERT_EQ(t.size(), 24u) << t;
    EXPECT_EQ(t[4], '-');
    EXPECT_EQ(t[10], 'T');
    EXPECT_EQ(t[19], '.');
    EXPECT_EQ(t[23], 'Z');
    std::int64_t sec = 0;
    std::uint32_t nanos = 0;
    ASSERT_TRUE(json::parse_rfc3339(t, sec, nanos)) << t;
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    EXPECT_LE(std::abs(now - sec), 5) << t;
    EXPECT_EQ(nanos % 1'000'000, 0u);
    // Escapes as RFC 8259 writes them; nothing below 0x20 in the line itself.
    EXPECT_NE(lines[2].find(R"(q\"uote \\back\nnew\rret\ttab \u0001\u001f\u007f end)"),
              std::string::npos)
        << lines[2];
    for (const std::string& l : lines)
        for (char ch : l) EXPECT_GE(static_cast<unsigned char>(ch), 0x20) << l;
}

TEST(LogJson, InvalidUtf8BecomesReplacementCharactersValidUtf8Stays) {
    Capture cap(log::Format::json);
    const std::string valid = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";  // é € 😀
    log::info("{}", valid);
    // A lone continuation byte, a truncated sequence, an overlong '/', a surrogate, above
    // U+10FFFF, 0xFF.
    const std::string bad =
        "a\x80"
        "b\xc3"
        "c\xc0\xaf"
        "d\xed\xa0\x80"
        "e\xf4\x90\x80\x80"
        "f\xff";
    log::info("{}", bad);
    log::write(log::Level::info, "fields", {{"bad", std::string_view(bad)}, {"ok", valid}});
    const auto lines = cap.lines();
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(parse_line(lines[0])["message"].as_string(), valid);
    EXPECT_NE(lines[0].find(valid), std::string::npos) << "valid UTF-8 was escaped";
    const std::string fffd = "\xef\xbf\xbd";
    auto r = [&](int n) {
        std::string s;
        for (int i = 0; i < n; ++i) s += fffd;
        return s;
    };
    const std::string expected =
        std::string("a") + r(1) + "b" + r(1) + "c" + r(2) + "d" + r(3) + "e" + r(4) + "f" + r(1);
    EXPECT_EQ(parse_line(lines[1])["message"].as_string(), expected);
    const json::Value f = parse_line(lines[2]);
    EXPECT_EQ(f["bad"].as_string(), expected);
    EXPECT_EQ(f["ok"].as_string(), valid);
}

TEST(LogJson, FieldsAreMembersOfTheLine) {
    Capture cap(log::Format::json);
    log::write(log::Level::warn, "handler held the loop",
               {{"route", "/items/{id}"},
                {"ms", 143},
                {"loop", std::size_t{2}},
                {"ratio", 0.25},
                {"slow", true},
                {"nothing", nullptr},
                {"nan", std::numeric_limits<double>::quiet_NaN()},
                {"neg", -7},
                {"k\"ey\n", kHostile}});
    const auto lines = cap.lines();
    ASSERT_EQ(lines.size(), 1u);
    const json::Value v = parse_line(lines[0]);
    EXPECT_EQ(v["message"].as_string(), "handler held the loop");
    EXPECT_EQ(v["level"].as_string(), "warn");
    EXPECT_EQ(v["route"].as_string(), "/items/{id}");
    EXPECT_EQ(v["ms"].as_int64(), 143);
    EXPECT_EQ(v["loop"].as_uint64(), 2u);
    EXPECT_DOUBLE_EQ(v["ratio"].as_double(), 0.25);
    EXPECT_TRUE(v["slow"].as_bool());
    ASSERT_NE(v.find("nothing"), nullptr);
    EXPECT_TRUE(v["nothing"].is_null());
    EXPECT_TRUE(v["nan"].is_null());
    EXPECT_EQ(v["neg"].as_int64(), -7);
    EXPECT_EQ(v["k\"ey\n"].as_string(), kHostile);
}

TEST(LogJson, LevelsBelowTheMinimumAreNotWritten) {
    Capture cap(log::Format::json);
    log::set_level(log::Level::warn);
    log::info("hidden");
    log::write(log::Level::info, "hidden too", {{"a", 1}});
    log::warn("shown");
    log::set_level(log::Level::info);
    const auto lines = cap.lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(parse_line(lines[0])["message"].as_string(), "shown");
}

TEST(LogText, FieldsAreKeyValuePairsQuotedWhenNeeded) {
    Capture cap(log::Format::text);
    log::write(log::Level::info, "stalled",
               {{"route", "/a"}, {"ms", 12}, {"ua", "curl 8\"x\"\n"}, {"empty", ""}, {"b", false}});
    const auto lines = cap.lines();
    ASSERT_EQ(lines.size(), 1u);
    const std::string& l = lines[0];
    EXPECT_NE(l.find("[info] stalled route=/a ms=12 ua=\"curl 8\\\"x\\\"\\n\" empty=\"\" b=false"),
              std::string::npos)
        << l;
}

TEST(LogFormat, NamesParse) {
    EXPECT_EQ(log::parse_format("json"), log::Format::json);
    EXPECT_EQ(log::parse_format("text"), log::Format::text);
    EXPECT_EQ(log::parse_format("JSON"), std::nullopt);
    EXPECT_EQ(log::parse_level("warn"), log::Level::warn);
    EXPECT_EQ(log::parse_level("off"), log::Level::off);
    EXPECT_EQ(log::parse_level("warning"), std::nullopt);
}

TEST(LogJson, AppendJsonStringEscapesLikeTheLines) {
    std::string out;
    log::append_json_string(out, std::string_view("a\0b\"\\\b\f", 7));
    EXPECT_EQ(out, R"("a\u0000b\"\\\b\f")");
}

// The access log left on its default format follows vela::log: combined in text mode, a JSON
// object with the same time/level/logger members (and the request's fields as members) in
// JSON mode.
TEST(LogJson, AccessLogAutomaticFollowsTheLogFormat) {
    AccessLogEntry e;
    e.time = std::chrono::system_clock::time_point(std::chrono::seconds(1796141559) +
                                                   std::chrono::milliseconds(123));
    e.remote = "203.0.113.7";
    e.method = "GET";
    e.target = "/items?id=1";
    e.status = 200;
    e.bytes = 12;
    e.latency_us = 512;
    e.user_agent = "evil\"\n{\"forged\":1}";
    std::string text, combined, json_line;
    format_access_log(e, AccessLogFormat::automatic, true, text);
    format_access_log(e, AccessLogFormat::combined, true, combined);
    EXPECT_EQ(text, combined);
    {
        Capture cap(log::Format::json);
        format_access_log(e, AccessLogFormat::automatic, true, json_line);
    }
    EXPECT_EQ(
        json_line.substr(0, 90),
        R"({"time":"2026-12-01T16:12:39.123Z","level":"info","logger":"vela.access","remote":"203.0.1)");
    const json::Value v = parse_line(json_line);
    EXPECT_EQ(v["status"].as_int64(), 200);
    EXPECT_EQ(v["target"].as_string(), "/items?id=1");
    EXPECT_EQ(v["user_agent"].as_string(), "evil\"\n{\"forged\":1}");
    EXPECT_EQ(v.find("message"), nullptr);
    EXPECT_EQ(json_line.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace vela
