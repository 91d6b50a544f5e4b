// Uploads end to end: real `curl -F` uploads to a real App (vela/web/upload.hpp). Fields and
// files through a streaming route and an ordinary one; a 20 MiB file through App::streaming
// while the process's memory stays small, checked byte for byte with cmp; temporary files
// gone after the request unless moved; limits and malformed bodies answered 413 / 400 / 415
// over the wire with problem+json, nothing left in the temporary directory, and the server
// sound for the next request (a client that leaves mid-upload included).

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client.hpp"
#include "process.hpp"
#include "sound.hpp"
#include "vela/vela.hpp"
#include "vela/web/upload.hpp"

namespace vela::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Resident memory of this process (the server runs in it), in KiB; `field` "VmRSS:" or
// "VmHWM:" (the peak since the last reset).
long status_kib(std::string_view field) {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
    return -1;
}

// Resets VmHWM to the current RSS (Linux clear_refs "5"); false where it is not allowed.
bool reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    f.flush();
    return f.good();
}

#define REQUIRE_CURL()                                     \
    if (!have("curl") || !have("cmp"))                     \
    GTEST_SKIP() << "needs curl and cmp (Debian packages " \
                    "curl, diffutils)"

// Writes `size` bytes of a pattern (not all equal, not aligned to anything) to `path`.
void write_pattern(const std::string& path, std::uint64_t size) {
    std::ofstream f(path, std::ios::binary);
    std::string block(64 * 1024, '\0');
    std::uint64_t x = 88172645463325252ull;
    for (std::uint64_t done = 0; done < size;) {
        for (char& c : block) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            c = static_cast<char>(x);
        }
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), size - done));
        f.write(block.data(), static_cast<std::streamsize>(n));
        done += n;
    }
}

class UploadE2e : public ::testing::Test {
  protected:
    void SetUp() override {
        char t1[] = "/tmp/vela-upload-e2e-XXXXXX";
        root_ = ::mkdtemp(t1);
        tmp_ = root_ + "/tmp";
        kept_ = root_ + "/kept";
        src_ = root_ + "/src";
        fs::create_directories(tmp_);
        fs::create_directories(kept_);
        fs::create_directories(src_);

        quick_options(app_.options());
        app_.options().limits.max_body = 1 << 20;  // ordinary routes buffer up to 1 MiB
        app_.error_pages(ErrorPages{ErrorFormat::problem_json, {}});
        add_basic_routes(app_);
        UploadOptions big;
        big.temp_dir = tmp_;
        big.limits.max_file_size = 64 << 20;
        UploadOptions small = big;
        small.limits.max_file_size = 1 << 20;
        small.limits.max_parts = 3;
        small.limits.max_field_size = 100;
        app_.streaming(Method::POST, "/upload",
                       [this, big](Request& req) { return handle(req, big); });
        app_.streaming(Method::POST, "/small",
                       [this, small](Request& req) { return handle(req, small); });
        app_.post("/buffered", [this, big](Request& req) { return handle(req, big); });
        start_app(app_);
        url_ = "http://127.0.0.1:" + std::to_string(app_.port());
    }
    void TearDown() override { fs::remove_all(root_); }

    // Lists what arrived ("field name=value", "file field name type size"); with a field
    // keep=1 the files are moved to kept_/<field>, else their temporary paths are noted.
    Task<Response> handle(Request& req, UploadOptions options) {
        MultipartForm form = co_await read_multipart(req, options);
        const bool keep = form.get("keep") == "1";
        std::string out;
        for (const auto& [name, value] : form.fields) out += "field " + name + "=" + value + "\n";
        for (UploadedFile& f : form.files) {
            out += "file " + f.field + " " + f.filename + " " + f.content_type + " " +
                   std::to_string(f.size) + "\n";
            if (keep) {
                f.move_to(kept_ + "/" + f.field);
            } else {
                std::lock_guard lock(mu_);
                temp_paths_.push_back(f.path());
            }
        }
        co_return Response::text(std::move(out));
    }

    struct Reply {
        int exit = -1;
        int status = 0;
        std::string body;
    };
    // curl -sS <args> url; the body and the status code.
    Reply curl(const std::string& args, const std::string& path = "/upload") {
        const std::string body = root_ + "/reply";
        const Ran r = run_command("timeout 30 curl -sS -o '" + body + "' -w '%{http_code}' " +
                                  args + " '" + url_ + path + "' 2>&1");
        Reply out;
        out.exit = r.status;
        std::ifstream f(body, std::ios::binary);
        out.body.assign(std::istreambuf_iterator<char>(f), {});
        try {
            out.status = std::stoi(r.out.substr(r.out.size() >= 3 ? r.out.size() - 3 : 0));
        } catch (...) {
            out.status = -1;
        }
        if (out.exit != 0) out.body += "\ncurl: " + r.out;
        return out;
    }

    std::size_t files_in(const std::string& dir) const {
        std::size_t n = 0;
        for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
        return n;
    }
    // Waits a little for the temporary directory to empty (a failed request's files go when
    // the handler's frame unwinds, which may be just after the answer is written).
    bool tmp_empties() const {
        for (int i = 0; i < 100; ++i) {
            if (files_in(tmp_) == 0) return true;
            std::this_thread::sleep_for(10ms);
        }
        return false;
    }
    std::vector<std::string> temp_paths() {
        std::lock_guard lock(mu_);
        return temp_paths_;
    }

    App app_;
    std::string root_, tmp_, kept_, src_, url_;
    std::mutex mu_;
    std::vector<std::string> temp_paths_;
};

TEST_F(UploadE2e, CurlFieldsAndFiles) {
    REQUIRE_CURL();
    write_pattern(src_ + "/photo.png", 30000);
    std::ofstream(src_ + "/notes.txt") << "line one\r\n--not a boundary\r\n";
    for (const char* path : {"/upload", "/buffered"}) {
        SCOPED_TRACE(path);
        const Reply r = curl("-F title=Holiday -F 'tag=sea side' -F tag=sun -F 'photo=@" + src_ +
                                 "/photo.png;type=image/png' -F 'notes=@" + src_ +
                                 "/notes.txt;filename=../../etc/n.txt'",
                             path);
        ASSERT_EQ(r.exit, 0) << r.body;
        EXPECT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.body,
                  "field title=Holiday\nfield tag=sea side\nfield tag=sun\n"
                  "file photo photo.png image/png 30000\n"
                  "file notes n.txt text/plain 28\n");
        // The files were in tmp_ during the request and are gone after it.
        const std::vector<std::string> paths = temp_paths();
        ASSERT_GE(paths.size(), 2u);
        for (const std::string& p : paths) {
            EXPECT_EQ(fs::path(p).parent_path(), fs::path(tmp_));
            EXPECT_FALSE(fs::exists(p)) << p;
        }
        EXPECT_EQ(files_in(tmp_), 0u);
    }
}

TEST_F(UploadE2e, MovedFilesArriveIntact) {
    REQUIRE_CURL();
    write_pattern(src_ + "/a.bin", 1'000'003);
    const Reply r = curl("-F keep=1 -F 'a=@" + src_ + "/a.bin'");
    ASSERT_EQ(r.exit, 0) << r.body;
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(run_command("cmp '" + src_ + "/a.bin' '" + kept_ + "/a'").status, 0);
    EXPECT_EQ(files_in(tmp_), 0u);
}

TEST_F(UploadE2e, TwentyMiBThroughAStreamingRouteInBoundedMemory) {
    REQUIRE_CURL();
    constexpr std::uint64_t kSize = 20u << 20;
    write_pattern(src_ + "/big.bin", kSize);
    // Warm up (first-use allocations of the loop, the parser, curl's connection handling).
    ASSERT_EQ(curl("-F warm=1 -F 'w=@" + src_ + "/big.bin'").status, 200);
    const bool hwm = reset_peak_rss();
    const long before = status_kib("VmRSS:");
    std::atomic<long> peak{before};
    std::atomic<bool> done{false};
    std::thread watch([&] {
        while (!done) {
            peak = std::max(peak.load(), status_kib("VmRSS:"));
            std::this_thread::sleep_for(5ms);
        }
    });
    const Reply kept = curl("-F keep=1 -F 'big=@" + src_ + "/big.bin;type=application/x-big'");
    const Reply temp = curl("-F 'big=@" + src_ + "/big.bin'");
    done = true;
    watch.join();
    const long growth = std::max(peak.load(), hwm ? status_kib("VmHWM:") : 0) - before;
    ASSERT_EQ(kept.exit, 0) << kept.body;
    EXPECT_EQ(kept.status, 200) << kept.body;
    EXPECT_EQ(kept.body, "field keep=1\nfile big big.bin application/x-big 20971520\n");
    EXPECT_EQ(temp.status, 200) << temp.body;
    EXPECT_EQ(temp.body, "file big big.bin application/octet-stream 20971520\n");
    // Byte for byte, and the not-kept copy is gone.
    EXPECT_EQ(run_command("cmp '" + src_ + "/big.bin' '" + kept_ + "/big'").status, 0);
    EXPECT_EQ(run_command("sha256sum < '" + src_ + "/big.bin'").out,
              run_command("sha256sum < '" + kept_ + "/big'").out);
    for (const std::string& p : temp_paths()) EXPECT_FALSE(fs::exists(p)) << p;
    EXPECT_EQ(files_in(tmp_), 0u);
    // Two 20 MiB uploads passed through a few buffers at a time.
    EXPECT_LT(growth, 4 * 1024) << "RSS grew by " << growth << " KiB (peak reset: " << hwm << ")";
    RecordProperty("rss_growth_kib", std::to_string(growth));
    std::printf("[ info ] two 20 MiB uploads: RSS growth %ld KiB (VmHWM reset: %d)\n", growth,
                hwm ? 1 : 0);
}

TEST_F(UploadE2e, LimitsAndErrorsOverTheWire) {
    REQUIRE_CURL();
    write_pattern(src_ + "/two-mib.bin", 2u << 20);
    write_pattern(src_ + "/half-mib.bin", 512u << 10);
    struct Row {
        const char* name;
        std::string args;
        std::string path;
        int status;
        std::string detail;
    };
    const Row rows[] = {
        {"fileTooLarge", "-F a=1 -F 'f=@" + src_ + "/two-mib.bin'", "/small", 413,
         "file 'f' is larger than 1048576 bytes"},
        {"fileTooLargeAfterASmallOne",
         "-F 'g=@" + src_ + "/half-mib.bin' -F 'f=@" + src_ + "/two-mib.bin'", "/small", 413,
         "larger than 1048576"},
        {"tooManyParts", "-F a=1 -F b=2 -F c=3 -F d=4", "/small", 413, "more than 3 parts"},
        {"fieldTooLarge", "-F a=" + std::string(101, 'x'), "/small", 413,
         "field 'a' is larger than 100 bytes"},
        {"urlencoded", "-d a=1", "/upload", 415, "multipart/form-data"},
        {"noBoundary", "-H 'Content-Type: multipart/form-data' --data-binary x", "/upload", 400,
         "without a boundary"},
        {"notMultipart",
         "-H 'Content-Type: multipart/form-data; boundary=zz' --data-binary "
         "'hello'",
         "/upload", 400, "no multipart boundary"},
        {"bufferedRouteBodyLimit", "-F 'f=@" + src_ + "/two-mib.bin'", "/buffered", 413, ""},
    };
    for (const Row& row : rows) {
        SCOPED_TRACE(row.name);
        const Reply r = curl(row.args, row.path);
        EXPECT_EQ(r.status, row.status) << r.body;
        if (!row.detail.empty()) {
            EXPECT_NE(r.body.find("\"status\":" + std::to_string(row.status)), std::string::npos)
                << r.body;
            EXPECT_NE(r.body.find(row.detail), std::string::npos) << r.body;
        }
        EXPECT_TRUE(tmp_empties()) << files_in(tmp_) << " files left";
        expect_server_sound(app_);
    }
    // And an upload still works afterwards.
    const Reply ok = curl("-F 'f=@" + src_ + "/half-mib.bin'", "/small");
    EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(UploadE2e, MalformedBodyKeepsTheConnection) {
    // The body is read whole (Content-Length), so after the 400 the connection goes on.
    const std::string body =
        "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x\"\r\n\r\ndata";  // no
                                                                                          // end
    Client c = Client::tcp(app_.port());
    ASSERT_TRUE(c.send(request_with_body("POST", "/upload", body,
                                         "Content-Type: multipart/form-data; boundary=b\r\n")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(r->header("Content-Type"), "application/problem+json");
    EXPECT_NE(r->body.find("truncated multipart body"), std::string::npos) << r->body;
    EXPECT_TRUE(tmp_empties());
    ASSERT_TRUE(c.send(get_request("/hello")));
    auto next = c.read_response();
    ASSERT_TRUE(next) << c.error();
    EXPECT_EQ(next->body, "Hello, World!");
}

TEST_F(UploadE2e, ClientLeavingMidUploadLeavesNoFile) {
    Client c = Client::tcp(app_.port());
    const std::string head =
        "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        "Content-Length: 10000000\r\n\r\n"
        "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x\"\r\n\r\n";
    ASSERT_TRUE(c.send(head + std::string(200000, 'x')));
    // The temporary file exists while the upload is under way.
    bool seen = false;
    for (int i = 0; i < 200 && !seen; ++i) {
        seen = files_in(tmp_) == 1;
        if (!seen) std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(seen);
    c.close();
    EXPECT_TRUE(tmp_empties()) << files_in(tmp_) << " files left";
    expect_server_sound(app_);
}

TEST_F(UploadE2e, Http2UploadIsBuffered) {
    REQUIRE_CURL();
    if (!have_curl_h2()) GTEST_SKIP() << "curl without HTTP/2";
    write_pattern(src_ + "/h2.bin", 100000);
    const Reply r = curl("--http2-prior-knowledge -F keep=1 -F 'h=@" + src_ + "/h2.bin'");
    ASSERT_EQ(r.exit, 0) << r.body;
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(run_command("cmp '" + src_ + "/h2.bin' '" + kept_ + "/h'").status, 0);
}

}  // namespace
}  // namespace vela::e2e
