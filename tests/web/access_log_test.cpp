// Tests for src/middleware/access_log.cpp without a server: the three line formats exactly, against
// fixed entries (escaping included); the body size reported for each kind of response; the
// hooks on parsed requests with a collecting writer; drops with a tiny queue and a blocked
// writer; rotation by size; the lines still queued when the last copy goes.
#include "vela/middleware/access_log.hpp"

// The test binary gets spdlog's headers but not its usage requirements (vela_base links it
// privately): the definitions Debian's spdlog::spdlog target would add.
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
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "log_capture.hpp"
#include "support/parsed_request.hpp"
#include "vela/middleware/request_id.hpp"

namespace vela {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using Parsed = test::ParsedRequest;

// 2026-12-01T16:12:39.123Z
AccessLogEntry fixed_entry() {
    AccessLogEntry e;
    e.time = std::chrono::system_clock::time_point(std::chrono::seconds(1796141559) + 123ms);
    e.remote = "203.0.113.7";
    e.method = "GET";
    e.target = "/items?id=1&x=%20";
    e.version = 11;
    e.status = 200;
    e.bytes = 1234;
    e.latency_us = 512;
    e.request_id = "req-42";
    e.user_agent = "curl/7.88.1";
    e.referer = "https://example.com/start";
    return e;
}

std::string line(const AccessLogEntry& e, AccessLogFormat f, bool extras = true) {
    std::string out;
    format_access_log(e, f, extras, out);
    return out;
}

TEST(AccessLogFormat, Common) {
    EXPECT_EQ(
        line(fixed_entry(), AccessLogFormat::common, false),
        R"(203.0.113.7 - - [01/Dec/2026:16:12:39 +0000] "GET /items?id=1&x=%20 HTTP/1.1" 200 1234)");
    EXPECT_EQ(
        line(fixed_entry(), AccessLogFormat::common),
        R"(203.0.113.7 - - [01/Dec/2026:16:12:39 +0000] "GET /items?id=1&x=%20 HTTP/1.1" 200 1234 req-42 512)");
}

TEST(AccessLogFormat, Combined) {
    EXPECT_EQ(
        line(fixed_entry(), AccessLogFormat::combined, false),
        R"(203.0.113.7 - - [01/Dec/2026:16:12:39 +0000] "GET /items?id=1&x=%20 HTTP/1.1" 200 1234 "https://example.com/start" "curl/7.88.1")");
    EXPECT_EQ(
        line(fixed_entry(), AccessLogFormat::combined),
        R"(203.0.113.7 - - [01/Dec/2026:16:12:39 +0000] "GET /items?id=1&x=%20 HTTP/1.1" 200 1234 "https://example.com/start" "curl/7.88.1" req-42 512)");
}

TEST(AccessLogFormat, Json) {
    EXPECT_EQ(
        line(fixed_entry(), AccessLogFormat::json),
        R"({"time":"2026-12-01T16:12:39.123Z","remote":"203.0.113.7","method":"GET","target":"/items?id=1&x=%20","version":"HTTP/1.1","status":200,"bytes":1234,"latency_us":512,"request_id":"req-42","user_agent":"curl/7.88.1","referer":"https://example.com/start"})");
}

TEST(AccessLogFormat, AbsentFields) {
    AccessLogEntry e = fixed_entry();
    e.remote = e.request_id = e.user_agent = e.referer = {};
    e.bytes = std::nullopt;
    e.version = 20;
    e.status = 404;
    EXPECT_EQ(
        line(e, AccessLogFormat::combined),
        R"(- - - [01/Dec/2026:16:12:39 +0000] "GET /items?id=1&x=%20 HTTP/2.0" 404 - "-" "-" - 512)");
    EXPECT_EQ(
        line(e, AccessLogFormat::json),
        R"({"time":"2026-12-01T16:12:39.123Z","remote":null,"method":"GET","target":"/items?id=1&x=%20","version":"HTTP/2.0","status":404,"bytes":null,"latency_us":512,"request_id":null,"user_agent":null,"referer":null})");
    e.bytes = 0;  // CLF writes no bytes as "-", JSON as 0
    EXPECT_EQ(line(e, AccessLogFormat::common, false),
              R"(- - - [01/Dec/2026:16:12:39 +0000] "GET /items?id=1&x=%20 HTTP/2.0" 404 -)");
    EXPECT_NE(line(e, AccessLogFormat::json).find(R"("bytes":0,)"), std::string::npos);
    e.version = 10;
    EXPECT_NE(line(e, AccessLogFormat::common).find("HTTP/1.0\""), std::string::npos);
}

TEST(AccessLogFormat, TextEscapesWhatCouldForgeALine) {
    AccessLogEntry e = fixed_entry();
    e.target = "/a\"b\\c";
    e.user_agent = "evil\" \"agent\n203.0.113.9 - - [x]";
    e.referer = "caf\xc3\xa9\x01";
    EXPECT_EQ(
        line(e, AccessLogFormat::combined, false),
        R"(203.0.113.7 - - [01/Dec/2026:16:12:39 +0000] "GET /a\"b\\c HTTP/1.1" 200 1234 "caf\xc3\xa9\x01" "evil\" \"agent\x0a203.0.113.9 - - [x]")");
}

TEST(AccessLogFormat, JsonEscapes) {
    AccessLogEntry e = fixed_entry();
    e.target = "/a\"b\\c";
    e.user_agent = "tab\there\nnl\r\x01\x7f";
    e.referer = "caf\xc3\xa9";
    const std::string l = line(e, AccessLogFormat::json);
    EXPECT_NE(l.find(R"("target":"/a\"b\\c")"), std::string::npos) << l;
    EXPECT_NE(l.find(R"("user_agent":"tab\there\nnl\r\u0001\u007f")"), std::string::npos) << l;
    EXPECT_NE(l.find(R"("referer":"caf\u00c3\u00a9")"), std::string::npos) << l;
    for (char c : l) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << l;
}

TEST(AccessLogFormat, TimeChangesEachSecond) {
    AccessLogEntry e = fixed_entry();
    e.time += 1s;
    EXPECT_NE(line(e, AccessLogFormat::common).find("[01/Dec/2026:16:12:40 +0000]"),
              std::string::npos);
    e.time = std::chrono::system_clock::time_point(std::chrono::seconds(1796141559) + 7ms);
    EXPECT_NE(line(e, AccessLogFormat::json).find("16:12:39.007Z"), std::string::npos);
    e.time = std::chrono::system_clock::time_point(std::chrono::seconds(951782400));  // leap day
    EXPECT_NE(line(e, AccessLogFormat::common).find("[29/Feb/2000:00:00:00 +0000]"),
              std::string::npos);
}

TEST(AccessLogBytes, EachKindOfResponse) {
    Parsed get("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    Parsed head("HEAD / HTTP/1.1\r\nHost: a\r\n\r\n");
    EXPECT_EQ(access_log_bytes(get.req, Response("hello")), 5u);
    EXPECT_EQ(access_log_bytes(head.req, Response("hello")), 0u);
    EXPECT_EQ(access_log_bytes(get.req, Response(Status::NoContent)), 0u);
    Response not_modified("ignored");
    not_modified.set_status(Status::NotModified);
    EXPECT_EQ(access_log_bytes(get.req, not_modified), 0u);
    Response streamed;
    streamed.set_body_source([]() -> std::optional<std::string> { return std::nullopt; });
    EXPECT_EQ(access_log_bytes(get.req, streamed), std::nullopt);
    FileBody fb;
    fb.parts.push_back({"--b\r\n", 10, 100});
    fb.parts.push_back({"--b\r\n", 500, 20});
    fb.tail = "--b--\r\n";
    Response file;
    file.set_file_body(std::move(fb));
    EXPECT_EQ(access_log_bytes(get.req, file), 5u + 100 + 5 + 20 + 7);
}

// Collects the lines the logging thread hands over.
struct Collector {
    std::mutex mu;
    std::vector<std::string> lines;
    std::function<void(std::string_view)> writer() {
        return [this](std::string_view l) {
            std::lock_guard lock(mu);
            lines.emplace_back(l);
        };
    }
    std::vector<std::string> get() {
        std::lock_guard lock(mu);
        return lines;
    }
};

TEST(AccessLog, HooksLogARequestWithItsIdAndLatency) {
    Collector c;
    AccessLog log = access_log({.format = AccessLogFormat::json, .writer = c.writer()});
    RequestId rid = request_id();
    Parsed p(
        "POST /submit?x=1 HTTP/1.1\r\nHost: a\r\nUser-Agent: test-agent\r\n"
        "X-Request-Id: abc-123\r\nContent-Length: 0\r\n\r\n");
    log.start(p.req);
    rid.start(p.req);
    std::this_thread::sleep_for(2ms);
    Response res = Response::text("created", Status::Created);
    rid.finish(p.req, res);
    log.finish(p.req, res);
    log.flush();
    const auto lines = c.get();
    ASSERT_EQ(lines.size(), 1u);
    const std::string& l = lines[0];
    EXPECT_NE(
        l.find(
            R"("method":"POST","target":"/submit?x=1","version":"HTTP/1.1","status":201,"bytes":7,)"),
        std::string::npos)
        << l;
    EXPECT_NE(l.find(R"("request_id":"abc-123","user_agent":"test-agent","referer":null})"),
              std::string::npos)
        << l;
    const auto at = l.find("\"latency_us\":");
    ASSERT_NE(at, std::string::npos);
    EXPECT_GE(std::stoll(l.substr(at + 13)), 2000);
    EXPECT_EQ(log.written(), 1u);
    EXPECT_EQ(log.dropped(), 0u);
}

TEST(AccessLog, ManyThreadsLoseNothingWhenTheQueueKeepsUp) {
    Collector c;
    AccessLog log = access_log(
        {.format = AccessLogFormat::common, .queue_size = 1 << 16, .writer = c.writer()});
    constexpr int kThreads = 4, kEach = 2000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&log, t] {
            for (int i = 0; i < kEach; ++i) {
                Parsed p("GET /t" + std::to_string(t) + "/" + std::to_string(i) +
                         " HTTP/1.1\r\nHost: a\r\n\r\n");
                log.start(p.req);
                log.finish(p.req, Response("x"));
            }
        });
    for (auto& th : threads) th.join();
    log.flush();
    EXPECT_EQ(log.dropped(), 0u);
    EXPECT_EQ(c.get().size(), std::size_t{kThreads * kEach});
}

TEST(AccessLog, DropsAndCountsWhenTheQueueIsFull) {
    std::mutex mu;
    std::condition_variable cv;
    bool entered = false, release = false;
    std::vector<std::string> lines;
    AccessLog log = access_log({.queue_size = 2, .writer = [&](std::string_view l) {
                                    std::unique_lock lock(mu);
                                    lines.emplace_back(l);
                                    entered = true;
                                    cv.notify_all();
                                    cv.wait(lock, [&] { return release; });  // a stuck disk
                                }});
    Parsed p("GET /d HTTP/1.1\r\nHost: a\r\n\r\n");
    log.finish(p.req, Response("x"));  // taken by the logging thread, which then blocks
    {
        std::unique_lock lock(mu);
        ASSERT_TRUE(cv.wait_for(lock, 5s, [&] { return entered; }));
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 9; ++i) log.finish(p.req, Response("x"));  // 2 fit, 7 do not
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);          // never waits for the writer
    EXPECT_EQ(log.dropped(), 7u);
    {
        std::lock_guard lock(mu);
        release = true;
    }
    cv.notify_all();
    log.flush();
    EXPECT_EQ(log.written(), 3u);
    EXPECT_EQ(lines.size(), 3u);
    log.finish(p.req, Response("x"));  // room again
    log.flush();
    EXPECT_EQ(log.written(), 4u);
    EXPECT_EQ(log.dropped(), 7u);
}

struct TempDir {
    fs::path path;
    TempDir() {
        path = fs::temp_directory_path() /
               ("vela_access_log_" + std::to_string(::getpid()) + "_" +
                std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::vector<std::string> read_lines(const fs::path& p) {
    std::ifstream in(p);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

TEST(AccessLog, FileRotatesBySize) {
    TempDir dir;
    const fs::path file = dir.path / "access.log";
    AccessLog log = access_log({.format = AccessLogFormat::common,
                                .extras = false,
                                .path = file.string(),
                                .max_file_size = 1000,
                                .max_files = 2});
    for (int i = 0; i < 200; ++i) {
        Parsed p("GET /rotate/" + std::to_string(i) + " HTTP/1.1\r\nHost: a\r\n\r\n");
        log.finish(p.req, Response("x"));
        if (i % 50 == 49) log.flush();
    }
    log.flush();
    ASSERT_TRUE(fs::exists(file));
    ASSERT_TRUE(fs::exists(dir.path / "access.1.log"));
    ASSERT_TRUE(fs::exists(dir.path / "access.2.log"));
    EXPECT_FALSE(fs::exists(dir.path / "access.3.log"));
    EXPECT_LE(fs::file_size(file), 1000u);
    for (const char* name : {"access.1.log", "access.2.log"}) {
        EXPECT_LE(fs::file_size(dir.path / name), 1000u) << name;
        EXPECT_GT(fs::file_size(dir.path / name), 900u) << name;  // filled before rotating
    }
    const auto last = read_lines(file);
    ASSERT_FALSE(last.empty());
    EXPECT_NE(last.back().find("GET /rotate/199 HTTP/1.1"), std::string::npos) << last.back();
}

TEST(AccessLog, TheLastCopyWritesWhatIsQueued) {
    TempDir dir;
    const fs::path file = dir.path / "a.log";
    {
        AccessLog log = access_log({.path = file.string()});
        AccessLog copy = log;
        for (int i = 0; i < 500; ++i) {
            Parsed p("GET /bye/" + std::to_string(i) + " HTTP/1.1\r\nHost: a\r\n\r\n");
            copy.finish(p.req, Response("x"));
        }
    }  // no flush(): the destructor drains the queue
    const auto lines = read_lines(file);
    ASSERT_EQ(lines.size(), 500u);
    EXPECT_NE(lines.back().find("/bye/499"), std::string::npos);
}

TEST(AccessLog, WritesToACustomSpdlogSink) {
    std::ostringstream os;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(os);
    {
        AccessLog log =
            access_log({.format = AccessLogFormat::common, .extras = false, .sink = sink});
        Parsed p("GET /sink HTTP/1.0\r\nHost: a\r\n\r\n");
        log.finish(p.req, Response("abc"));
        log.flush();
        const std::string out = os.str();
        EXPECT_EQ(out.substr(out.find(']')), "] \"GET /sink HTTP/1.0\" 200 3\n") << out;
        EXPECT_EQ(out.substr(0, 6), "- - - ") << out;  // the bare line: no spdlog prefix
    }
}

TEST(AccessLog, DropsAreReportedThroughTheAppLog) {
    test::LogCapture capture;
    {
        std::mutex mu;
        std::condition_variable cv;
        bool entered = false, release = false;
        AccessLog log =
            access_log({.queue_size = 2, .report_interval = 10ms, .writer = [&](std::string_view) {
                            std::unique_lock lock(mu);
                            entered = true;
                            cv.notify_all();
                            cv.wait(lock, [&] { return release; });
                        }});
        Parsed p("GET /d HTTP/1.1\r\nHost: a\r\n\r\n");
        log.finish(p.req, Response("x"));
        {
            std::unique_lock lock(mu);
            ASSERT_TRUE(cv.wait_for(lock, 5s, [&] { return entered; }));
        }
        for (int i = 0; i < 7; ++i) log.finish(p.req, Response("x"));  // 5 dropped
        std::this_thread::sleep_for(20ms);
        {
            std::lock_guard lock(mu);
            release = true;
        }
        cv.notify_all();
        log.flush();
        EXPECT_EQ(log.dropped(), 5u);
        std::this_thread::sleep_for(20ms);
        log.finish(p.req, Response("x"));  // a pass of the logging thread after the interval
        log.flush();
    }
    EXPECT_NE(capture.text().find("access log: 5 lines dropped (queue of 2 full)"),
              std::string::npos)
        << capture.text();
}

// Regression: the logging thread was made before App::run() blocks SIGINT/SIGTERM for its
// signalfd, so the kernel could hand it a SIGTERM, whose default action killed the process
// without the graceful stop (seen as a server that ignored SIGINT under valgrind).
TEST(AccessLog, TheLoggingThreadBlocksSignals) {
    AccessLog log = access_log({.writer = [](std::string_view) {}});
    Parsed p("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    log.finish(p.req, Response("x"));
    log.flush();  // the thread has written a line: it runs, and has its name
    std::string blocked;
    for (const auto& task : fs::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string name;
        std::getline(comm, name);
        if (name != "vela-access-log") continue;
        std::ifstream status(task.path() / "status");
        for (std::string l; std::getline(status, l);)
            if (l.rfind("SigBlk:", 0) == 0) blocked = l.substr(7);
    }
    ASSERT_FALSE(blocked.empty()) << "no vela-access-log thread";
    const unsigned long long mask = std::stoull(blocked, nullptr, 16);
    EXPECT_TRUE(mask & (1ull << (SIGINT - 1))) << blocked;
    EXPECT_TRUE(mask & (1ull << (SIGTERM - 1))) << blocked;
    EXPECT_TRUE(mask & (1ull << (SIGHUP - 1))) << blocked;
}

TEST(AccessLog, BadOptionsAreRefused) {
    EXPECT_THROW(access_log({.queue_size = (std::size_t{1} << 24) + 1}), std::invalid_argument);
    EXPECT_THROW(access_log({.path = "/tmp/x.log", .max_file_size = 0}), std::invalid_argument);
    EXPECT_THROW(access_log({.report_interval = 0ms}), std::invalid_argument);
    TempDir dir;
    { std::ofstream(dir.path / "file") << "x"; }
    try {
        access_log({.path = (dir.path / "file" / "sub.log").string()});
        FAIL() << "opened a log below a regular file";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("access_log: cannot open"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace vela
