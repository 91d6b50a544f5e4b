// Tests for apply_file_semantics (src/http/file_body.cpp) on responses built by
// Response::send_file (src/files/static_files.cpp): preconditions (304, 412), Range with
// If-Range (206 single and multipart/byteranges, 416), and the cases left alone (HEAD, a status
// other than 200, too many ranges, a missing file, ETag switched off).
//
// Requests are parsed from raw bytes by RequestParser, as a connection would; the raw buffer
// lives in the same object because the Request's fields are views into it.
#include "vela/http/file_body.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "support/parsed_request.hpp"
#include "vela/files/file_cache.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {
namespace {

namespace fs = std::filesystem;

using Parsed = test::ParsedRequest;

// "GET / HTTP/1.1" with Host and the given extra header lines (each ending in \r\n).
std::string get(std::string_view extra = {}, std::string_view method = "GET") {
    return test::request_head(extra, "/file", method);
}

// The bytes a FileBody stands for: part heads, file stretches, tail.
std::string render(const FileBody& fb, std::string_view file) {
    std::string out;
    for (const FileBody::Part& p : fb.parts) {
        out.append(p.head);
        out.append(
            file.substr(static_cast<std::size_t>(p.offset), static_cast<std::size_t>(p.length)));
    }
    out.append(fb.tail);
    return out;
}

constexpr std::string_view kText = "text/plain; charset=utf-8";

class FileSemanticsTest : public testing::Test {
  protected:
    void SetUp() override {
        files::FileCache::local().clear();
        char tmpl[] = "/tmp/vela-file-semantics-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
        dir_ = tmpl;
        for (int i = 0; i < 100; ++i) content_.push_back(static_cast<char>('A' + i % 26));
        path_ = (dir_ / "data.txt").string();
        std::FILE* f = std::fopen(path_.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        ASSERT_EQ(std::fwrite(content_.data(), 1, content_.size(), f), content_.size());
        ASSERT_EQ(std::fclose(f), 0);
    }
    void TearDown() override {
        files::FileCache::local().clear();
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    Response file(const SendFileOptions& o = {}) {
        Response r = Response::file(path_, o);
        EXPECT_EQ(r.status(), Status::OK);
        EXPECT_NE(r.file_body(), nullptr);
        return r;
    }

    // The ETag send_file announced.
    std::string etag() {
        Response r = file();
        return std::string(r.header("ETag"));
    }

    static void expect_whole(const Response& r, std::uint64_t size = 100) {
        EXPECT_EQ(r.status(), Status::OK);
        const FileBody* fb = r.file_body();
        ASSERT_NE(fb, nullptr);
        ASSERT_EQ(fb->parts.size(), 1u);
        EXPECT_EQ(fb->parts[0].offset, 0u);
        EXPECT_EQ(fb->parts[0].length, size);
        EXPECT_TRUE(fb->parts[0].head.empty());
        EXPECT_TRUE(fb->tail.empty());
        EXPECT_EQ(r.header("Content-Range"), "");
        EXPECT_EQ(r.content_type(), kText);
    }

    fs::path dir_;
    std::string path_;
    std::string content_;
};

TEST_F(FileSemanticsTest, SendFileDescribesTheFile) {
    Response r = file();
    EXPECT_EQ(r.content_type(), kText);
    EXPECT_FALSE(r.header("ETag").empty());
    EXPECT_EQ(r.header("ETag"), r.file_body()->etag());
    EXPECT_FALSE(r.header("Last-Modified").empty());
    EXPECT_EQ(r.header("Accept-Ranges"), "bytes");
    EXPECT_EQ(r.header("Content-Disposition"), "");
    EXPECT_EQ(r.file_body()->length(), 100u);
    EXPECT_TRUE(r.body().empty());
}

TEST_F(FileSemanticsTest, NoConditionsLeaveThe200Unchanged) {
    Parsed p(get());
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    expect_whole(r);
}

TEST_F(FileSemanticsTest, IfNoneMatchEqualIs304WithoutABody) {
    Parsed p(get("If-None-Match: " + etag() + "\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::NotModified);
    EXPECT_EQ(r.file_body(), nullptr);
    EXPECT_TRUE(r.body().empty());
    EXPECT_FALSE(r.header("ETag").empty()) << "a 304 still names the representation";
}

TEST_F(FileSemanticsTest, IfNoneMatchOtherTagIsA200) {
    Parsed p(get("If-None-Match: \"something-else\"\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    expect_whole(r);
}

TEST_F(FileSemanticsTest, IfModifiedSinceLastModifiedIs304) {
    Response probe = file();
    Parsed p(get("If-Modified-Since: " + std::string(probe.header("Last-Modified")) + "\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::NotModified);
    EXPECT_EQ(r.file_body(), nullptr);
}

TEST_F(FileSemanticsTest, IfMatchMismatchIs412) {
    Parsed p(get("If-Match: \"not-the-etag\"\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::PreconditionFailed);
    EXPECT_EQ(r.file_body(), nullptr);
    EXPECT_EQ(r.body(), "Precondition Failed");
    EXPECT_EQ(r.content_type(), kText);
    EXPECT_EQ(r.header("Accept-Ranges"), "");
}

TEST_F(FileSemanticsTest, IfMatchEqualProceeds) {
    Parsed p(get("If-Match: " + etag() + "\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    expect_whole(r);
}

TEST_F(FileSemanticsTest, SingleRangeIs206WithOnePart) {
    Parsed p(get("Range: bytes=10-19\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::PartialContent);
    EXPECT_EQ(r.header("Content-Range"), "bytes 10-19/100");
    EXPECT_EQ(r.content_type(), kText);
    const FileBody* fb = r.file_body();
    ASSERT_NE(fb, nullptr);
    ASSERT_EQ(fb->parts.size(), 1u);
    EXPECT_EQ(fb->parts[0].offset, 10u);
    EXPECT_EQ(fb->parts[0].length, 10u);
    EXPECT_TRUE(fb->parts[0].head.empty());
    EXPECT_TRUE(fb->tail.empty());
    EXPECT_EQ(fb->length(), 10u);
    EXPECT_EQ(render(*fb, content_), content_.substr(10, 10));
}

TEST_F(FileSemanticsTest, SuffixAndOpenRanges) {
    {
        Parsed p(get("Range: bytes=-5\r\n"));
        Response r = file();
        apply_file_semantics(p.req, r, 16);
        EXPECT_EQ(r.status(), Status::PartialContent);
        EXPECT_EQ(r.header("Content-Range"), "bytes 95-99/100");
        EXPECT_EQ(render(*r.file_body(), content_), content_.substr(95));
    }
    {
        Parsed p(get("Range: bytes=90-\r\n"));
        Response r = file();
        apply_file_semantics(p.req, r, 16);
        EXPECT_EQ(r.status(), Status::PartialContent);
        EXPECT_EQ(r.header("Content-Range"), "bytes 90-99/100");
        EXPECT_EQ(r.file_body()->parts[0].length, 10u);
    }
}

TEST_F(FileSemanticsTest, MultipleRangesAreMultipartByteranges) {
    Parsed p(get("Range: bytes=0-4, 10-14, 90-\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::PartialContent);
    EXPECT_EQ(r.header("Content-Range"), "") << "only the parts carry Content-Range";

    const std::string_view type = r.content_type();
    constexpr std::string_view prefix = "multipart/byteranges; boundary=";
    ASSERT_TRUE(type.starts_with(prefix)) << type;
    const std::string boundary(type.substr(prefix.size()));
    ASSERT_FALSE(boundary.empty());
    EXPECT_LE(boundary.size(), 70u) << "RFC 2046 5.1.1";
    EXPECT_EQ(content_.find(boundary), std::string::npos);

    const FileBody* fb = r.file_body();
    ASSERT_NE(fb, nullptr);
    ASSERT_EQ(fb->parts.size(), 3u);
    EXPECT_EQ(fb->parts[0].offset, 0u);
    EXPECT_EQ(fb->parts[0].length, 5u);
    EXPECT_EQ(fb->parts[1].offset, 10u);
    EXPECT_EQ(fb->parts[1].length, 5u);
    EXPECT_EQ(fb->parts[2].offset, 90u);
    EXPECT_EQ(fb->parts[2].length, 10u);
    EXPECT_EQ(fb->parts[0].head, "--" + boundary +
                                     "\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                     "Content-Range: bytes 0-4/100\r\n\r\n");
    EXPECT_EQ(fb->parts[1].head, "\r\n--" + boundary +
                                     "\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                     "Content-Range: bytes 10-14/100\r\n\r\n");
    EXPECT_EQ(fb->parts[2].head, "\r\n--" + boundary +
                                     "\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                     "Content-Range: bytes 90-99/100\r\n\r\n");
    EXPECT_EQ(fb->tail, "\r\n--" + boundary + "--\r\n");

    std::uint64_t sum = fb->tail.size();
    for (const FileBody::Part& part : fb->parts) sum += part.head.size() + part.length;
    EXPECT_EQ(fb->length(), sum);
    const std::string body = render(*fb, content_);
    EXPECT_EQ(body.size(), fb->length());
    EXPECT_EQ(body, fb->parts[0].head + content_.substr(0, 5) + fb->parts[1].head +
                        content_.substr(10, 5) + fb->parts[2].head + content_.substr(90) +
                        fb->tail);
}

TEST_F(FileSemanticsTest, OverlappingRangesCoalesceIntoOnePart) {
    Parsed p(get("Range: bytes=0-9, 5-19\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::PartialContent);
    EXPECT_EQ(r.header("Content-Range"), "bytes 0-19/100");
    EXPECT_EQ(r.content_type(), kText);
    ASSERT_EQ(r.file_body()->parts.size(), 1u);
    EXPECT_EQ(r.file_body()->parts[0].length, 20u);
}

TEST_F(FileSemanticsTest, BoundariesDifferBetweenResponses) {
    Parsed p(get("Range: bytes=0-1,5-6\r\n"));
    Response a = file();
    Response b = file();
    apply_file_semantics(p.req, a, 16);
    apply_file_semantics(p.req, b, 16);
    EXPECT_NE(a.content_type(), b.content_type());
}

TEST_F(FileSemanticsTest, UnsatisfiableRangeIs416) {
    Parsed p(get("Range: bytes=200-300\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::RangeNotSatisfiable);
    EXPECT_EQ(r.header("Content-Range"), "bytes */100");
    EXPECT_EQ(r.file_body(), nullptr);
    EXPECT_EQ(r.body(), "Range Not Satisfiable");
    EXPECT_EQ(r.content_type(), kText);
}

TEST_F(FileSemanticsTest, MalformedRangeIsIgnored) {
    Parsed p(get("Range: lines=1-2\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    expect_whole(r);
}

TEST_F(FileSemanticsTest, IfRangeWithAnOldEtagSendsTheWhole) {
    Parsed p(get("Range: bytes=0-9\r\nIf-Range: \"an-old-etag\"\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    expect_whole(r);
}

TEST_F(FileSemanticsTest, IfRangeWithTheCurrentEtagHonoursTheRange) {
    Parsed p(get("Range: bytes=0-9\r\nIf-Range: " + etag() + "\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::PartialContent);
    EXPECT_EQ(r.header("Content-Range"), "bytes 0-9/100");
}

TEST_F(FileSemanticsTest, IfRangeWithTheLastModifiedDateHonoursTheRange) {
    Response probe = file();
    Parsed p(get("Range: bytes=0-9\r\nIf-Range: " + std::string(probe.header("Last-Modified")) +
                 "\r\n"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::PartialContent);
}

TEST_F(FileSemanticsTest, HeadIgnoresRange) {
    Parsed p(get("Range: bytes=0-9\r\n", "HEAD"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    expect_whole(r);
}

TEST_F(FileSemanticsTest, HeadStillAnswersConditions) {
    Parsed p(get("If-None-Match: " + etag() + "\r\n", "HEAD"));
    Response r = file();
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::NotModified);
}

TEST_F(FileSemanticsTest, AnotherStatusIsLeftAsTheHandlerSaid) {
    Parsed p(get("If-None-Match: " + etag() + "\r\nRange: bytes=0-9\r\n"));
    Response r = file();
    r.set_status(Status::NotFound);
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::NotFound);
    ASSERT_NE(r.file_body(), nullptr);
    ASSERT_EQ(r.file_body()->parts.size(), 1u);
    EXPECT_EQ(r.file_body()->parts[0].length, 100u);
    EXPECT_EQ(r.header("Content-Range"), "");
}

TEST_F(FileSemanticsTest, MoreRangesThanTheLimitSendTheWhole) {
    // 17 disjoint, non-adjacent specs against a limit of 16.
    std::string range = "Range: bytes=";
    for (int i = 0; i < 17; ++i) {
        if (i) range += ",";
        range += std::to_string(i * 4) + "-" + std::to_string(i * 4 + 1);
    }
    {
        Parsed p(get(range + "\r\n"));
        Response r = file();
        apply_file_semantics(p.req, r, 16);
        expect_whole(r);
    }
    {
        Parsed p(get(range + "\r\n"));
        Response r = file();
        apply_file_semantics(p.req, r, 17);
        EXPECT_EQ(r.status(), Status::PartialContent);
        EXPECT_EQ(r.file_body()->parts.size(), 17u);
    }
}

TEST_F(FileSemanticsTest, MissingFileIs404WithATextBody) {
    Response r = Response::file((dir_ / "missing.txt").string());
    EXPECT_EQ(r.status(), Status::NotFound);
    EXPECT_EQ(r.file_body(), nullptr);
    EXPECT_EQ(r.body(), "Not Found");
    EXPECT_EQ(r.content_type(), kText);
    EXPECT_EQ(r.header("ETag"), "");
    Parsed p(get("Range: bytes=0-9\r\n"));
    apply_file_semantics(p.req, r, 16);
    EXPECT_EQ(r.status(), Status::NotFound);
}

TEST_F(FileSemanticsTest, DirectoryIs404) {
    Response r = Response::file(dir_.string());
    EXPECT_EQ(r.status(), Status::NotFound);
    EXPECT_EQ(r.file_body(), nullptr);
}

TEST_F(FileSemanticsTest, DownloadNameIsEncodedPerRfc8187) {
    SendFileOptions o;
    o.download_name = "r\xC3\xA9sum\xC3\xA9.pdf";  // résumé.pdf
    Response r = file(o);
    const std::string_view cd = r.header("Content-Disposition");
    EXPECT_TRUE(cd.starts_with("attachment")) << cd;
    EXPECT_NE(cd.find("filename*=UTF-8''r%C3%A9sum%C3%A9.pdf"), std::string_view::npos) << cd;
    EXPECT_EQ(r.content_type(), kText) << "the type still comes from the file's own name";
}

TEST_F(FileSemanticsTest, AttachmentUsesTheFilesOwnName) {
    SendFileOptions o;
    o.attachment = true;
    Response r = file(o);
    const std::string_view cd = r.header("Content-Disposition");
    EXPECT_TRUE(cd.starts_with("attachment")) << cd;
    EXPECT_NE(cd.find("data.txt"), std::string_view::npos) << cd;
}

TEST_F(FileSemanticsTest, EtagOffSendsNoneAndIgnoresIfNoneMatch) {
    const std::string tag = etag();
    SendFileOptions o;
    o.etag = false;
    Response r = file(o);
    EXPECT_EQ(r.header("ETag"), "");
    EXPECT_EQ(r.file_body()->etag(), "");
    Parsed p(get("If-None-Match: " + tag + "\r\n"));
    apply_file_semantics(p.req, r, 16);
    expect_whole(r);
}

TEST_F(FileSemanticsTest, RangesOffIgnoresRange) {
    SendFileOptions o;
    o.ranges = false;
    Response r = file(o);
    EXPECT_EQ(r.header("Accept-Ranges"), "");
    Parsed p(get("Range: bytes=0-9\r\n"));
    apply_file_semantics(p.req, r, 16);
    expect_whole(r);
}

TEST_F(FileSemanticsTest, ContentTypeOptionWins) {
    SendFileOptions o;
    o.content_type = "application/x-custom";
    Response r = file(o);
    EXPECT_EQ(r.content_type(), "application/x-custom");
    Parsed p(get("Range: bytes=0-1,5-6\r\n"));
    apply_file_semantics(p.req, r, 16);
    ASSERT_EQ(r.file_body()->parts.size(), 2u);
    EXPECT_NE(r.file_body()->parts[0].head.find("Content-Type: application/x-custom\r\n"),
              std::string::npos);
}

// Regressions (fixed in eb40277): a handler may keep a prepared file response and return
// copies of it; the server then applies the range to the copy. The copy shares the FileBody
// (Response::Extra) with the original, and applying the range or a 304 through the copy used
// to rewrite or drop the original's FileBody too (file_body() / clear_file_body() did not copy
// a shared Extra before changing it).
TEST_F(FileSemanticsTest, RangeOnACopyLeavesTheOriginalWhole) {
    const Response original = file();
    Response copy = original;
    Parsed p(get("Range: bytes=0-4,10-14\r\n"));
    apply_file_semantics(p.req, copy, 16);
    EXPECT_EQ(copy.status(), Status::PartialContent);
    ASSERT_EQ(copy.file_body()->parts.size(), 2u);
    ASSERT_NE(original.file_body(), nullptr);
    ASSERT_EQ(original.file_body()->parts.size(), 1u);
    EXPECT_EQ(original.file_body()->parts[0].length, 100u);
    EXPECT_TRUE(original.file_body()->tail.empty());
}

TEST_F(FileSemanticsTest, NotModifiedOnACopyKeepsTheOriginalsFile) {
    const Response original = file();
    Response copy = original;
    Parsed p(get("If-None-Match: " + etag() + "\r\n"));
    apply_file_semantics(p.req, copy, 16);
    EXPECT_EQ(copy.status(), Status::NotModified);
    EXPECT_NE(original.file_body(), nullptr);
}

// A precompressed variant (Content-Encoding set by the static mount) answered with 412 or 416
// carries a plain-text body: the coding and the download name must go with the file.
TEST_F(FileSemanticsTest, ErrorAnswersDropTheFilesContentEncoding) {
    for (const char* extra : {"Range: bytes=5000-\r\n", "If-Match: \"other\"\r\n"}) {
        SCOPED_TRACE(extra);
        Parsed p(get(extra));
        Response r = file({.download_name = "d.txt"});
        r.add_header("Content-Encoding", "gzip");
        apply_file_semantics(p.req, r, 16);
        EXPECT_TRUE(r.status() == Status::RangeNotSatisfiable ||
                    r.status() == Status::PreconditionFailed);
        EXPECT_EQ(r.file_body(), nullptr);
        EXPECT_EQ(r.header("Content-Encoding"), "");
        EXPECT_EQ(r.header("Content-Disposition"), "");
    }
}

}  // namespace
}  // namespace vela
