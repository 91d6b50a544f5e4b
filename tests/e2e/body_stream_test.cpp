// Streaming request bodies (App::streaming, Group::streaming, req.body_stream()): large uploads in
// bounded memory with Content-Length and chunked framing, the limits (413), a client that stops
// sending (408) or leaves, a handler that answers without reading (the connection closes),
// the next request on the same connection after a fully read body, save_body_to, the buffered
// fallback on ordinary routes, and over HTTP/2 a body read as it arrives with flow control
// following the handler's reads.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "client.hpp"
#include "count_body.hpp"
#include "process.hpp"
#include "sound.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

using namespace std::chrono_literals;

// Resident memory of this process (the server runs in it), in KiB.
long rss_kib() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

class BodyStreamE2e : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app_.options());
        app_.options().limits.max_body = 64 * 1024;  // buffered routes: small
        app_.options().limits.max_streamed_body = std::uint64_t{2} << 30;
        add_basic_routes(app_);
        app_.streaming(Method::PUT, "/upload", count_body);
        app_.streaming(Method::POST, "/ignore", [](Request&) { return "not read"; });
        app_.streaming(Method::PUT, "/save/{name}", [this](Request& req) -> Task<Response> {
            const std::string path = dir_ + "/" + std::string(req.param("name"));
            const Status s = co_await save_body_to(req, path, 1 << 20);
            co_return s == Status::OK ? Response("saved") : Response(s);
        });
        app_.post("/buffered", count_body);  // an ordinary route: the body comes whole
        // A group's streaming route: its middleware runs before the handler reads the body.
        auto api =
            app_.group("/api").use([](Request&, Response& r) { r.set_header("X-Group", "api"); });
        api.use([](Request& req) -> std::optional<Response> {
            if (req.header("X-Key") != "k") return Response(Status::Forbidden);
            return std::nullopt;
        });
        api.streaming(Method::PUT, "/upload", count_body);
        api.put("/buffered", count_body);
        char tmpl[] = "/tmp/vela-body-XXXXXX";
        dir_ = ::mkdtemp(tmpl);
        start_app(app_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    App app_;
    std::string dir_;
};

// Sends `total` bytes of the pattern i % 251 in 64 KiB writes.
bool send_pattern(Client& c, std::uint64_t total, std::uint64_t& sum) {
    std::string block(64 * 1024, '\0');
    std::uint64_t sent = 0;
    while (sent < total) {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), total - sent));
        for (std::size_t i = 0; i < n; ++i) {
            block[i] = static_cast<char>((sent + i) % 251);
            sum += static_cast<unsigned char>(block[i]);
        }
        if (!c.send(std::string_view(block.data(), n))) return false;
        sent += n;
    }
    return true;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr std::uint64_t kUploadBytes = 200'000'000;  // the same path, at sanitizer speed
#else
constexpr std::uint64_t kUploadBytes = 1'000'000'000;
#endif

TEST_F(BodyStreamE2e, GigabyteUploadWithContentLengthInBoundedMemory) {
    constexpr std::uint64_t kTotal = kUploadBytes;
    const long before = rss_kib();
    Client c = Client::tcp(app_.port(), Ms{60'000});
    ASSERT_TRUE(c.send("PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                       std::to_string(kTotal) + "\r\n\r\n"));
    std::uint64_t sum = 0;
    long peak = before;
    std::atomic<bool> done{false};
    std::thread watch([&] {
        while (!done) {
            peak = std::max(peak, rss_kib());
            std::this_thread::sleep_for(20ms);
        }
    });
    ASSERT_TRUE(send_pattern(c, kTotal, sum));
    auto r = c.read_response();
    done = true;
    watch.join();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::to_string(kTotal) + " " + std::to_string(sum));
    // The whole body went through; the server held a buffer or two of it at a time.
    EXPECT_LT(peak - before, 64 * 1024) << "RSS grew by " << (peak - before) << " KiB";
    // The connection carries on with the next request.
    ASSERT_TRUE(c.send(get_request("/")));
    auto r2 = c.read_response();
    ASSERT_TRUE(r2);
    EXPECT_EQ(r2->body, "Hello, World!");
}

TEST_F(BodyStreamE2e, ChunkedUploadThroughCurl) {
    // curl reads stdin and sends it chunked (no length known).
    const std::string cmd =
        "head -c 50000000 /dev/zero | timeout 60 curl -s -T - -H 'Expect:' "
        "http://127.0.0.1:" +
        std::to_string(app_.port()) + "/upload";
    const Ran r = run_command(cmd);
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, "50000000 0") << "curl status " << r.status;
}

TEST_F(BodyStreamE2e, ChunkedPiecesAndPipelinedNextRequest) {
    Client c = Client::tcp(app_.port());
    ASSERT_TRUE(c.send("PUT /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"));
    ASSERT_TRUE(c.send("5\r\nhello\r\n"));
    std::this_thread::sleep_for(30ms);
    ASSERT_TRUE(c.send("6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n" + get_request("/hello")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    std::uint64_t sum = 0;
    for (unsigned char ch : std::string("hello world")) sum += ch;
    EXPECT_EQ(r->body, "11 " + std::to_string(sum)) << "status " << r->status;
    auto r2 = c.read_response();
    ASSERT_TRUE(r2) << c.error();
    EXPECT_EQ(r2->body, "Hello, World!");
}

TEST_F(BodyStreamE2e, ContentLengthOverStreamedLimitIs413) {
    Client c = Client::tcp(app_.port());
    ASSERT_TRUE(c.send("PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3000000000\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    expect_server_sound(app_);
}

TEST_F(BodyStreamE2e, GroupStreamingRouteReadsPastMaxBodyThroughTheGroupsMiddleware) {
    // 1 MB: sixteen times the buffered routes' max_body, so only a streamed body gets through.
    constexpr std::uint64_t kTotal = 1'000'000;
    Client c = Client::tcp(app_.port());
    ASSERT_TRUE(c.send("PUT /api/upload HTTP/1.1\r\nHost: x\r\nX-Key: k\r\nContent-Length: " +
                       std::to_string(kTotal) + "\r\n\r\n"));
    std::uint64_t sum = 0;
    ASSERT_TRUE(send_pattern(c, kTotal, sum));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::to_string(kTotal) + " " + std::to_string(sum));
    EXPECT_EQ(r->header("X-Group"), "api");
    // The connection carries on.
    ASSERT_TRUE(c.send(get_request("/")));
    auto r2 = c.read_response();
    ASSERT_TRUE(r2);
    EXPECT_EQ(r2->body, "Hello, World!");

    // The group's before hook refuses without reading the body.
    Client d = Client::tcp(app_.port());
    ASSERT_TRUE(d.send("PUT /api/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"));
    auto r3 = d.read_response();
    ASSERT_TRUE(r3);
    EXPECT_EQ(r3->status, 403);
    EXPECT_EQ(r3->header("X-Group"), "api");

    // The group's ordinary route keeps max_body: 413 before the body is sent.
    Client e = Client::tcp(app_.port());
    ASSERT_TRUE(e.send("PUT /api/buffered HTTP/1.1\r\nHost: x\r\nX-Key: k\r\nContent-Length: " +
                       std::to_string(kTotal) + "\r\n\r\n"));
    auto r4 = e.read_response();
    ASSERT_TRUE(r4);
    EXPECT_EQ(r4->status, 413);
    expect_server_sound(app_);
}

TEST_F(BodyStreamE2e, BufferedRouteKeepsMaxBody) {
    // Over max_body on an ordinary route: 413 at once, before the body is sent.
    Client c = Client::tcp(app_.port());
    ASSERT_TRUE(c.send("POST /buffered HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    // Within it, the handler reads the buffered body through the same interface.
    Client d = Client::tcp(app_.port());
    ASSERT_TRUE(d.send(request_with_body("POST", "/buffered", "abc")));
    auto r2 = d.read_response();
    ASSERT_TRUE(r2);
    EXPECT_EQ(r2->body, "3 294");
}

TEST_F(BodyStreamE2e, ChunkedOverLimitMidStreamIs413) {
    app_.options();  // (limits are fixed once started; this app allows 2 GiB)
    Client c = Client::tcp(app_.port());
    ASSERT_TRUE(
        c.send("PUT /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               "100000000\r\n"));  // one chunk of 4 GiB: over the 2 GiB limit
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    expect_server_sound(app_);
}

TEST_F(BodyStreamE2e, MalformedChunkIs400) {
    Client c = Client::tcp(app_.port());
    ASSERT_TRUE(
        c.send("PUT /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               "5\r\nhelloXX"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    expect_server_sound(app_);
}

TEST_F(BodyStreamE2e, StalledBodyIs408) {
    Client c = Client::tcp(app_.port(), Ms{10'000});
    ASSERT_TRUE(c.send("PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"));
    const auto t0 = SteadyClock::now();
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 408);
    EXPECT_LT(ms_since(t0), 6000);  // body_timeout is 3 s in quick_options
    expect_server_sound(app_);
}

TEST_F(BodyStreamE2e, HandlerThatDoesNotReadClosesTheConnection) {
    Client c = Client::tcp(app_.port());
    ASSERT_TRUE(
        c.send("POST /ignore HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"
               "some of it"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "not read");
    EXPECT_TRUE(icontains(r->header("connection"), "close"));
    expect_server_sound(app_);
}

TEST_F(BodyStreamE2e, ClientLeavingMidBodyLeavesTheServerSound) {
    {
        Client c = Client::tcp(app_.port());
        ASSERT_TRUE(c.send("PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"));
        std::uint64_t sum = 0;
        ASSERT_TRUE(send_pattern(c, 100'000, sum));
    }  // closed with the body unfinished
    std::this_thread::sleep_for(50ms);
    expect_server_sound(app_);
}

TEST_F(BodyStreamE2e, SaveBodyToFileAndItsLimit) {
    Client c = Client::tcp(app_.port());
    const std::string body(300'000, 'z');
    ASSERT_TRUE(c.send(request_with_body("PUT", "/save/a.bin", body)));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "saved");
    std::ifstream f(dir_ + "/a.bin", std::ios::binary);
    std::string got((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(got, body);
    // Over save_body_to's own limit (1 MiB): 413, and no file left behind.
    Client d = Client::tcp(app_.port());
    ASSERT_TRUE(d.send("PUT /save/b.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n"));
    std::uint64_t sum = 0;
    send_pattern(d, 2'000'000, sum);  // the server may close before all of it is sent
    auto r2 = d.read_response();
    ASSERT_TRUE(r2);
    EXPECT_EQ(r2->status, 413);
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/b.bin"));
}

// ---- HTTP/2: the body of a streaming route arrives as the handler reads it ----

std::string h2_upload(std::uint16_t port, const std::string& path, std::uint64_t bytes,
                      const std::string& method = "PUT") {
    return run_command("head -c " + std::to_string(bytes) +
                       " /dev/zero | timeout 60 curl -s --http2-prior-knowledge -X " + method +
                       " -T - http://127.0.0.1:" + std::to_string(port) + path)
        .out;
}

TEST_F(BodyStreamE2e, OverHttp2AStreamingRouteReadsTheBodyAsItArrives) {
    const long before = rss_kib();
    EXPECT_EQ(h2_upload(app_.port(), "/upload", 200'000'000), "200000000 0");
    // The client sends a window ahead of the handler (1 MiB), never the whole body.
    EXPECT_LT(rss_kib() - before, 48 * 1024);
    // Ordinary routes still get the body whole, within limits.max_body.
    EXPECT_EQ(h2_upload(app_.port(), "/buffered", 30000, "POST"), "30000 0");
    // The group's middleware ran before the handler read the body.
    EXPECT_EQ(run_command("head -c 5000 /dev/zero | timeout 20 curl -s -H 'X-Key: k' "
                          "--http2-prior-knowledge -T - http://127.0.0.1:" +
                          std::to_string(app_.port()) + "/api/upload")
                  .out,
              "5000 0");
}

// A handler that sleeps after its first chunk: the next chunk holds what the client could
// send meanwhile, which the stream window bounds.
class H2BodyWindow : public ::testing::Test {
  protected:
    void SetUp() override {
        quick_options(app_.options());
        app_.options().http2.stream_window = 100'000;
        app_.streaming(Method::PUT, "/slow", [](Request& req) -> Task<Response> {
            std::uint64_t total = 0, largest = 0;
            bool first = true;
            for (;;) {
                BodyChunk c = co_await req.body_stream().read();
                if (c.error != Status::OK) co_return Response(c.error);
                total += c.data.size();
                if (!first) largest = std::max<std::uint64_t>(largest, c.data.size());
                if (c.end) break;
                if (first) co_await vela::sleep(std::chrono::milliseconds(700));
                first = false;
            }
            co_return Response::text(std::to_string(total) + " " + std::to_string(largest));
        });
        app_.streaming(Method::POST, "/watch", [this](Request& req) -> Task<Response> {
            for (;;) {
                BodyChunk c = co_await req.body_stream().read();
                seen_ += c.data.size();
                if (c.error != Status::OK || c.end) {
                    last_error_ = static_cast<int>(c.error);
                    co_return Response(c.error == Status::OK ? Status::OK : c.error);
                }
            }
        });
        add_basic_routes(app_);
        start_app(app_);
    }
    App app_;
    std::atomic<std::uint64_t> seen_{0};
    std::atomic<int> last_error_{0};
};

TEST_F(H2BodyWindow, FlowControlFollowsTheHandlersReads) {
    const std::string out = h2_upload(app_.port(), "/slow", 3'000'000);
    const auto space = out.find(' ');
    ASSERT_NE(space, std::string::npos) << out;
    EXPECT_EQ(out.substr(0, space), "3000000");
    const std::uint64_t largest = std::stoull(out.substr(space + 1));
    EXPECT_GT(largest, 0u);
    EXPECT_LE(largest, 100'000u) << "the client sent past the stream window";
}

TEST_F(H2BodyWindow, AStalledBodyIs408) {
    const std::string py = ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    if (run_command(py + " -c 'import hpack' 2>&1").status != 0) {
        GTEST_SKIP() << "python3 with python3-hpack (a python3-h2 dependency) not installed";
    }
    const Ran r = run_command("timeout 20 " + py + " " + std::string(VELA_SOURCE_DIR) +
                              "/tests/e2e/h2/probe.py " + std::to_string(app_.port()) +
                              " uploadstall /watch 1000 2>&1");
    EXPECT_NE(r.out.find("status=408"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("second_status=200"), std::string::npos) << r.out;
    for (int i = 0; i < 100 && last_error_ == 0; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(last_error_.load(), static_cast<int>(Status::RequestTimeout));
}

TEST_F(H2BodyWindow, AClientThatResetsMidBodyEndsTheRead) {
    // tests/e2e/h2/probe.py writes the frames (python3-h2's hpack encodes the fields).
    const std::string py = ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    if (run_command(py + " -c 'import hpack' 2>&1").status != 0) {
        GTEST_SKIP() << "python3 with python3-hpack (a python3-h2 dependency) not installed";
    }
    const Ran r = run_command("timeout 20 " + py + " " + std::string(VELA_SOURCE_DIR) +
                              "/tests/e2e/h2/probe.py " + std::to_string(app_.port()) +
                              " uploadreset /watch 50000 2>&1");
    EXPECT_NE(r.out.find("sent=50000"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("second_status=200"), std::string::npos) << r.out;
    for (int i = 0; i < 100 && last_error_ == 0; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(last_error_.load(), static_cast<int>(Status::BadRequest));
    EXPECT_LE(seen_.load(), 50'000u);
}

}  // namespace
}  // namespace vela::e2e
