// Tests for src/middleware/compression.cpp, calling the hooks directly (no server): the after hook
// returned by compression() on Requests parsed from raw bytes and on Responses (string, file
// and streamed bodies), and the before hook returned by request_decompression().
#include "vela/middleware/compression.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/http_response.hpp"
#include "support/parsed_request.hpp"
#include "vela/compress/codec.hpp"
#include "vela/files/file_cache.hpp"

namespace vela {
namespace {

using compress::Coding;
namespace fs = std::filesystem;

using Parsed = test::ParsedRequest;

std::string get(std::string_view extra = {}) { return test::request_head(extra); }

std::string post(std::string_view extra, std::string_view body) {
    std::string s("POST /x HTTP/1.1\r\nHost: example.com\r\nContent-Length: ");
    s.append(std::to_string(body.size())).append("\r\n").append(extra).append("\r\n");
    return s.append(body);
}

// Compressible text well above the default min_size (1024).
std::string text(std::size_t n = 8000) {
    std::string s;
    while (s.size() < n)
        s += "The quick brown fox jumps over the lazy dog. " + std::to_string(s.size());
    s.resize(n);
    return s;
}

std::string decoded(Coding c, std::string_view in) {
    std::string out;
    EXPECT_EQ(compress::decompress(c, in, out, 1 << 24), compress::DecodeResult::done);
    return out;
}

std::size_t count_headers(const Response& r, std::string_view name) {
    return test::count_header_lines(r.header_block(), name);
}

std::string drain(Response& r) {
    Response::BodySource s = r.take_body_source();
    EXPECT_TRUE(s);
    std::string all;
    if (!s) return all;
    while (std::optional<std::string> piece = s()) all += *piece;
    return all;
}

// Runs the default compression hook over `res` for a request with `extra` header lines.
void run(Response& res, std::string_view extra, CompressionOptions o = {}) {
    Parsed p(get(extra));
    compression(std::move(o))(p.req, res);
}

void expect_untouched(const Response& r, const std::string& body) {
    EXPECT_EQ(r.header("Content-Encoding"), "");
    EXPECT_EQ(r.header("Vary"), "");
    EXPECT_EQ(r.body(), body);
}

TEST(CompressionHook, GzipIsChosenAndTheBodyDecodes) {
    const std::string body = text();
    Response r = Response::text(body);
    r.add_header("Accept-Ranges", "bytes");
    run(r, "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(r.status(), Status::OK);
    EXPECT_EQ(r.header("Content-Encoding"), "gzip");
    EXPECT_EQ(r.header("Vary"), "Accept-Encoding");
    EXPECT_EQ(r.header("Accept-Ranges"), "") << "a compressed whole is never sent in ranges";
    EXPECT_EQ(r.content_type(), mime::text);
    EXPECT_LT(r.body().size(), body.size());
    EXPECT_EQ(decoded(Coding::gzip, r.body()), body);
}

TEST(CompressionHook, ServerPreferenceAndClientQValues) {
    const std::string body = text();
    {
        Response r = Response::json(body);
        run(r, "Accept-Encoding: gzip, br, zstd\r\n");
        EXPECT_EQ(r.header("Content-Encoding"), "zstd");
        EXPECT_EQ(decoded(Coding::zstd, r.body()), body);
    }
    {
        Response r = Response::html(body);
        run(r, "Accept-Encoding: gzip;q=0.5, br;q=0.9\r\n");
        EXPECT_EQ(r.header("Content-Encoding"), "br");
        EXPECT_EQ(decoded(Coding::br, r.body()), body);
    }
    {
        Response r = Response::text(body);
        run(r, "Accept-Encoding: gzip, br, zstd\r\n",
            CompressionOptions{.preference = {Coding::gzip, Coding::br}});
        EXPECT_EQ(r.header("Content-Encoding"), "gzip");
    }
    {
        Response r = Response::text(body);
        run(r, "Accept-Encoding: identity, deflate\r\n");
        EXPECT_EQ(r.header("Content-Encoding"), "");
        EXPECT_EQ(r.header("Vary"), "Accept-Encoding");
        EXPECT_EQ(r.body(), body);
    }
}

TEST(CompressionHook, VaryIsAddedOnce) {
    const std::string body = text();
    {
        Response r = Response::text(body);
        r.add_header("Vary", "Accept-Encoding");
        run(r, "Accept-Encoding: gzip\r\n");
        EXPECT_EQ(r.header("Content-Encoding"), "gzip");
        EXPECT_EQ(count_headers(r, "Vary"), 1u);
    }
    {
        Response r = Response::text(body);
        r.add_header("Vary", "Origin, accept-encoding");
        run(r, "Accept-Encoding: gzip\r\n");
        EXPECT_EQ(count_headers(r, "Vary"), 1u);
        EXPECT_EQ(r.header("Vary"), "Origin, accept-encoding");
    }
    {
        Response r = Response::text(body);
        run(r, "Accept-Encoding: gzip\r\n");
        EXPECT_EQ(count_headers(r, "Vary"), 1u);
        // A second pass (the hook registered twice) neither adds Vary nor compresses again.
        const std::string once = r.body();
        run(r, "Accept-Encoding: gzip\r\n");
        EXPECT_EQ(count_headers(r, "Vary"), 1u);
        EXPECT_EQ(count_headers(r, "Content-Encoding"), 1u);
        EXPECT_EQ(r.body(), once);
    }
}

TEST(CompressionHook, EtagOfTheCompressedVariantIsDistinct) {
    const std::string body = text();
    {
        Response r = Response::text(body);
        r.add_header("ETag", "\"abc\"");
        run(r, "Accept-Encoding: gzip\r\n");
        EXPECT_EQ(r.header("ETag"), "\"abc-gzip\"");
        EXPECT_EQ(count_headers(r, "ETag"), 1u);
    }
    {
        Response r = Response::text(body);
        r.add_header("ETag", "W/\"v1\"");
        run(r, "Accept-Encoding: br\r\n");
        EXPECT_EQ(r.header("ETag"), "W/\"v1-br\"");
    }
    {
        // Not compressed: the ETag stays.
        Response r = Response::text(body);
        r.add_header("ETag", "\"abc\"");
        run(r, "");
        EXPECT_EQ(r.header("ETag"), "\"abc\"");
    }
}

TEST(CompressionHook, SomeStatusesAreUntouched) {
    const std::string body = text();
    for (Status s : {Status::PartialContent, Status::NotModified, Status::NoContent,
                     Status::SwitchingProtocols}) {
        Response r = Response::text(body, s);
        run(r, "Accept-Encoding: gzip\r\n");
        SCOPED_TRACE(code(s));
        expect_untouched(r, body);
    }
    // Errors are compressed like any other body.
    Response r = Response::text(body, Status::NotFound);
    run(r, "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(r.header("Content-Encoding"), "gzip");
}

TEST(CompressionHook, SmallBodyIsUntouched) {
    const std::string body = text(1023);
    Response r = Response::text(body);
    run(r, "Accept-Encoding: gzip\r\n");
    expect_untouched(r, body);

    Response at_min = Response::text(text(1024));
    run(at_min, "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(at_min.header("Content-Encoding"), "gzip");

    Response custom = Response::text(text(100));
    run(custom, "Accept-Encoding: gzip\r\n", CompressionOptions{.min_size = 10});
    EXPECT_EQ(custom.header("Content-Encoding"), "gzip");
}

TEST(CompressionHook, NoAcceptEncodingAddsVaryOnly) {
    const std::string body = text();
    Response r = Response::text(body);
    run(r, "");
    EXPECT_EQ(r.header("Content-Encoding"), "");
    EXPECT_EQ(r.header("Vary"), "Accept-Encoding");
    EXPECT_EQ(r.body(), body);
}

TEST(CompressionHook, ExistingContentEncodingIsUntouched) {
    const std::string body = text();
    Response r = Response::text(body);
    r.add_header("Content-Encoding", "br");
    run(r, "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(r.header("Content-Encoding"), "br");
    EXPECT_EQ(count_headers(r, "Content-Encoding"), 1u);
    EXPECT_EQ(r.header("Vary"), "");
    EXPECT_EQ(r.body(), body);
}

TEST(CompressionHook, NoTransformIsUntouched) {
    const std::string body = text();
    Response r = Response::text(body);
    r.add_header("Cache-Control", "public, no-transform");
    run(r, "Accept-Encoding: gzip\r\n");
    expect_untouched(r, body);
}

TEST(CompressionHook, TypesThatDoNotCompressAreUntouched) {
    const std::string body = text();
    for (std::string_view type : {"image/png", "application/zip", "video/mp4"}) {
        Response r = Response::with_body(Status::OK, body, type);
        run(r, "Accept-Encoding: gzip\r\n");
        SCOPED_TRACE(type);
        expect_untouched(r, body);
    }
    Response none;  // no Content-Type at all
    none.set_body(body);
    run(none, "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(none.header("Content-Encoding"), "");
}

TEST(CompressionHook, TypesOptionWithWildcard) {
    const std::string body = text();
    const CompressionOptions o{.types = {"text/*", "application/x-mine"}};
    Response a = Response::with_body(Status::OK, body, "text/csv; charset=utf-8");
    run(a, "Accept-Encoding: gzip\r\n", o);
    EXPECT_EQ(a.header("Content-Encoding"), "gzip");
    Response b = Response::with_body(Status::OK, body, "application/x-mine");
    run(b, "Accept-Encoding: gzip\r\n", o);
    EXPECT_EQ(b.header("Content-Encoding"), "gzip");
    Response c = Response::json(body);
    run(c, "Accept-Encoding: gzip\r\n", o);
    EXPECT_EQ(c.header("Content-Encoding"), "") << "only the listed types";
}

TEST(CompressionHook, LevelOutOfRangeThrowsAtOnce) {
    EXPECT_THROW(compression(CompressionOptions{.gzip_level = 10}), std::invalid_argument);
    EXPECT_THROW(compression(CompressionOptions{.zstd_level = 0}), std::invalid_argument);
    EXPECT_NO_THROW(compression(CompressionOptions{.gzip_level = 1}));
}

TEST(CompressionHook, StreamedBodyIsCompressedPieceByPiece) {
    auto pieces = std::make_shared<std::vector<std::string>>(
        std::vector<std::string>{"data: one\n\n", "data: two\n\n", "data: three\n\n"});
    auto at = std::make_shared<std::size_t>(0);
    Response r;
    r.set_content_type("text/event-stream");
    r.set_body_source([pieces, at]() -> std::optional<std::string> {
        if (*at == pieces->size()) return std::nullopt;
        return (*pieces)[(*at)++];
    });
    run(r, "Accept-Encoding: gzip\r\n");  // streamed: compressed whatever its size
    EXPECT_EQ(r.header("Content-Encoding"), "gzip");
    EXPECT_EQ(r.header("Vary"), "Accept-Encoding");
    ASSERT_TRUE(r.streaming());
    EXPECT_EQ(decoded(Coding::gzip, drain(r)), "data: one\n\ndata: two\n\ndata: three\n\n");
}

class CompressionHookFile : public testing::Test {
  protected:
    void SetUp() override {
        files::FileCache::local().clear();
        char tmpl[] = "/tmp/vela-compression-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
        dir_ = tmpl;
        content_ = text(5000);
        path_ = (dir_ / "page.html").string();
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

    fs::path dir_;
    std::string path_;
    std::string content_;
};

TEST_F(CompressionHookFile, SmallFileIsCompressedWhole) {
    Response r = Response::file(path_);
    const std::string etag(r.header("ETag"));
    ASSERT_FALSE(etag.empty());
    run(r, "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(r.status(), Status::OK);
    EXPECT_EQ(r.file_body(), nullptr);
    EXPECT_FALSE(r.streaming());
    EXPECT_EQ(r.header("Content-Encoding"), "gzip");
    EXPECT_EQ(r.header("Accept-Ranges"), "");
    EXPECT_EQ(r.header("ETag"), etag.substr(0, etag.size() - 1) + "-gzip\"");
    EXPECT_EQ(decoded(Coding::gzip, r.body()), content_);
}

TEST_F(CompressionHookFile, LargeFileIsStreamed) {
    Response r = Response::file(path_);
    run(r, "Accept-Encoding: zstd\r\n", CompressionOptions{.max_file_size = 1000});
    EXPECT_EQ(r.file_body(), nullptr);
    EXPECT_EQ(r.header("Content-Encoding"), "zstd");
    ASSERT_TRUE(r.streaming());
    EXPECT_EQ(decoded(Coding::zstd, drain(r)), content_);
}

TEST_F(CompressionHookFile, IfNoneMatchOfTheVariantIs304) {
    Response probe = Response::file(path_);
    const std::string etag(probe.header("ETag"));
    const std::string variant = etag.substr(0, etag.size() - 1) + "-gzip\"";
    Response r = Response::file(path_);
    run(r, "Accept-Encoding: gzip\r\nIf-None-Match: " + variant + "\r\n");
    EXPECT_EQ(r.status(), Status::NotModified);
    EXPECT_EQ(r.file_body(), nullptr);
    EXPECT_TRUE(r.body().empty());

    // The identity tag does not match the compressed variant.
    Response s = Response::file(path_);
    run(s, "Accept-Encoding: gzip\r\nIf-None-Match: " + etag + "\r\n");
    EXPECT_EQ(s.status(), Status::OK);
    EXPECT_EQ(decoded(Coding::gzip, s.body()), content_);
}

TEST_F(CompressionHookFile, IfMatchMismatchIs412) {
    Response r = Response::file(path_);
    run(r, "Accept-Encoding: gzip\r\nIf-Match: \"nope\"\r\n");
    EXPECT_EQ(r.status(), Status::PreconditionFailed);
    EXPECT_EQ(r.file_body(), nullptr);
    EXPECT_EQ(r.header("Content-Encoding"), "");
    EXPECT_EQ(r.body(), "Precondition Failed");
}

// Regression (fixed in eb40277): a handler may keep a prepared file response and return
// copies; compression then runs on the copy, whose FileBody (Response::Extra) is shared with
// the original. The hook's clear_file_body() used to drop the original's file as well, so
// every later copy was sent with an empty body.
TEST_F(CompressionHookFile, CompressingACopyLeavesTheOriginalsFileBody) {
    const Response original = Response::file(path_);
    Response copy = original;
    run(copy, "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(copy.header("Content-Encoding"), "gzip");
    EXPECT_EQ(decoded(Coding::gzip, copy.body()), content_);
    ASSERT_NE(original.file_body(), nullptr);
    EXPECT_EQ(original.file_body()->length(), content_.size());
    EXPECT_EQ(original.header("Content-Encoding"), "");
}

// --- request_decompression ---

TEST(CompressionHook, RequestGzipBodyIsReplacedByThePlainOne) {
    const std::string plain = text(20000);
    Parsed p(post("Content-Encoding: gzip\r\n", compress::compress(Coding::gzip, plain)));
    const std::optional<Response> r = request_decompression()(p.req);
    EXPECT_FALSE(r.has_value());
    EXPECT_EQ(p.req.body(), plain);
}

TEST(CompressionHook, RequestBrAndZstdBodies) {
    const std::string plain = text(3000);
    for (Coding c : {Coding::br, Coding::zstd}) {
        const std::string name(compress::name(c));
        Parsed p(post("Content-Encoding: " + name + "\r\n", compress::compress(c, plain)));
        EXPECT_FALSE(request_decompression()(p.req).has_value()) << name;
        EXPECT_EQ(p.req.body(), plain) << name;
    }
}

TEST(CompressionHook, RequestWithoutContentEncodingIsLeftAlone) {
    Parsed p(post("", "plain body"));
    EXPECT_FALSE(request_decompression()(p.req).has_value());
    EXPECT_EQ(p.req.body(), "plain body");
    Parsed q(post("Content-Encoding: identity\r\n", "plain body"));
    EXPECT_FALSE(request_decompression()(q.req).has_value());
    EXPECT_EQ(q.req.body(), "plain body");
}

TEST(CompressionHook, RequestUnknownCodingIs415) {
    Parsed p(post("Content-Encoding: deflate\r\n", "xxxx"));
    const std::optional<Response> r = request_decompression()(p.req);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status(), Status::UnsupportedMediaType);
    EXPECT_EQ(r->header("Accept-Encoding"), "gzip, br, zstd");
    EXPECT_EQ(p.req.body(), "xxxx");
}

TEST(CompressionHook, RequestCodingNotAcceptedIs415) {
    const std::string plain = text(2000);
    Parsed p(post("Content-Encoding: br\r\n", compress::compress(Coding::br, plain)));
    const std::optional<Response> r =
        request_decompression(RequestDecompressionOptions{.codings = {Coding::gzip}})(p.req);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status(), Status::UnsupportedMediaType);
    EXPECT_EQ(r->header("Accept-Encoding"), "gzip");
}

TEST(CompressionHook, RequestTwoCodingsAre415) {
    const std::string plain = text(2000);
    Parsed p(post("Content-Encoding: gzip, gzip\r\n",
                  compress::compress(Coding::gzip, compress::compress(Coding::gzip, plain))));
    const std::optional<Response> r = request_decompression()(p.req);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status(), Status::UnsupportedMediaType);
}

TEST(CompressionHook, RequestOverTheLimitIs413) {
    const std::string plain(100000, 'a');  // a small bomb: compresses to a few hundred bytes
    Parsed p(post("Content-Encoding: gzip\r\n", compress::compress(Coding::gzip, plain)));
    const std::optional<Response> r =
        request_decompression(RequestDecompressionOptions{.max_size = 1000})(p.req);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status(), Status::PayloadTooLarge);
    EXPECT_NE(p.req.body(), plain);

    Parsed q(post("Content-Encoding: gzip\r\n", compress::compress(Coding::gzip, plain)));
    EXPECT_FALSE(
        request_decompression(RequestDecompressionOptions{.max_size = 100000})(q.req).has_value())
        << "exactly the limit is fine";
    EXPECT_EQ(q.req.body(), plain);
}

TEST(CompressionHook, RequestCorruptBodyIs400) {
    Parsed p(post("Content-Encoding: gzip\r\n", "this is not gzip data at all"));
    const std::optional<Response> r = request_decompression()(p.req);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status(), Status::BadRequest);
    EXPECT_NE(r->body().find("gzip"), std::string::npos);

    // A truncated stream is corrupt too.
    std::string cut = compress::compress(Coding::gzip, text(5000));
    cut.resize(cut.size() / 2);
    Parsed q(post("Content-Encoding: gzip\r\n", cut));
    const std::optional<Response> s = request_decompression()(q.req);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->status(), Status::BadRequest);
}

// RFC 9110 13.2.1: preconditions are for 2xx answers; a 404 page sent from a file stays a 404.
TEST_F(CompressionHookFile, PreconditionsIgnoredOnANon200FileBody) {
    Response probe = Response::file(path_);
    const std::string etag(probe.header("ETag"));
    const std::string gz = etag.substr(0, etag.size() - 1) + "-gzip\"";
    for (const std::string& cond :
         {"If-None-Match: " + gz + "\r\n", std::string("If-Match: \"nope\"\r\n")}) {
        SCOPED_TRACE(cond);
        Response r = Response::file(path_);
        r.set_status(Status::NotFound);
        run(r, "Accept-Encoding: gzip\r\n" + cond);
        EXPECT_EQ(r.status(), Status::NotFound);
        EXPECT_EQ(decoded(Coding::gzip, r.body()), content_);
    }
}

// A hand-made file body with several parts is not compressed (only whole files are).
TEST_F(CompressionHookFile, MultiPartFileBodyIsLeftAlone) {
    Response r = Response::file(path_);
    FileBody fb = *r.file_body();
    fb.parts.push_back(FileBody::Part{"--b\r\n", 0, 10});
    r.set_file_body(fb);
    run(r, "Accept-Encoding: gzip\r\n");
    EXPECT_NE(r.file_body(), nullptr);
    EXPECT_EQ(r.header("Content-Encoding"), "");
}

// After decompression the request no longer claims an encoding or the encoded length.
TEST(CompressionHook, DecompressedRequestDropsContentEncodingAndLength) {
    const std::string plain = text(5000);
    Parsed p(post("Content-Encoding: gzip\r\n", compress::compress(Coding::gzip, plain)));
    ASSERT_FALSE(request_decompression()(p.req).has_value());
    EXPECT_EQ(p.req.body(), plain);
    EXPECT_EQ(p.req.header("Content-Encoding"), "");
    EXPECT_EQ(p.req.header("Content-Length"), "");
    // A second pass (the hook installed twice) leaves the plain body alone.
    EXPECT_FALSE(request_decompression()(p.req).has_value());
    EXPECT_EQ(p.req.body(), plain);
}

}  // namespace
}  // namespace vela
