// Tests for src/files/mime.cpp: the built-in table, overrides, the compressibility rule and
// Content-Disposition values.
#include "vela/files/mime.hpp"

#include <gtest/gtest.h>

#include <string_view>

namespace vela::files {
namespace {

using namespace std::literals;

TEST(Mime, Extensions) {
    const std::pair<std::string_view, std::string_view> cases[] = {
        {"index.html", "text/html; charset=utf-8"},
        {"index.htm", "text/html; charset=utf-8"},
        {"site.css", "text/css; charset=utf-8"},
        {"app.js", "text/javascript; charset=utf-8"},
        {"app.mjs", "text/javascript; charset=utf-8"},
        {"app.cjs", "text/javascript; charset=utf-8"},
        {"data.json", "application/json; charset=utf-8"},
        {"app.js.map", "application/json; charset=utf-8"},
        {"a.jsonld", "application/ld+json; charset=utf-8"},
        {"a.txt", "text/plain; charset=utf-8"},
        {"a.csv", "text/csv; charset=utf-8"},
        {"a.xml", "application/xml; charset=utf-8"},
        {"logo.svg", "image/svg+xml; charset=utf-8"},
        {"app.wasm", "application/wasm"},
        {"README.md", "text/markdown; charset=utf-8"},
        {"site.webmanifest", "application/manifest+json; charset=utf-8"},
        {"feed.rss", "application/rss+xml; charset=utf-8"},
        {"a.vtt", "text/vtt; charset=utf-8"},
        {"a.png", "image/png"},
        {"a.jpg", "image/jpeg"},
        {"a.jpeg", "image/jpeg"},
        {"a.gif", "image/gif"},
        {"a.webp", "image/webp"},
        {"a.avif", "image/avif"},
        {"favicon.ico", "image/x-icon"},
        {"a.woff", "font/woff"},
        {"a.woff2", "font/woff2"},
        {"a.ttf", "font/ttf"},
        {"a.eot", "application/vnd.ms-fontobject"},
        {"a.mp3", "audio/mpeg"},
        {"a.mp4", "video/mp4"},
        {"a.webm", "video/webm"},
        {"a.pdf", "application/pdf"},
        {"a.zip", "application/zip"},
        {"a.tar.gz", "application/gzip"},
        {"a.zst", "application/zstd"},
        {"a.7z", "application/x-7z-compressed"},
        {"a.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
        {"a.yml", "application/yaml"},
        {"a.exe", "application/octet-stream"},
        {"a.iso", "application/octet-stream"},
        {"dir/a.css", "text/css; charset=utf-8"},
    };
    for (const auto& [name, type] : cases) EXPECT_EQ(mime_type(name), type) << name;
}

TEST(Mime, NoOrUnknownExtension) {
    for (std::string_view name : {""sv, "Makefile"sv, ".bashrc"sv, "dir/.bashrc"sv, "a."sv,
                                  "a.unknown"sv, "a.verylongextension0"sv, "dir.css/file"sv,
                                  "dir.css\\file"sv, "."sv, ".."sv, "a.h\0tml"sv})
        EXPECT_EQ(mime_type(name), "application/octet-stream") << name;
    EXPECT_EQ(mime_type(".bashrc.txt"), "text/plain; charset=utf-8");
}

TEST(Mime, CaseInsensitive) {
    EXPECT_EQ(mime_type("INDEX.HTML"), "text/html; charset=utf-8");
    EXPECT_EQ(mime_type("Photo.JpEg"), "image/jpeg");
    EXPECT_EQ(mime_type("SITE.WEBMANIFEST"), "application/manifest+json; charset=utf-8");
}

TEST(Mime, Overrides) {
    const MimeOverrides overrides = {{"html", "text/html"}, {"foo", "application/x-foo"}};
    EXPECT_EQ(mime_type("a.html", overrides), "text/html");
    EXPECT_EQ(mime_type("a.HTML", overrides), "text/html");
    EXPECT_EQ(mime_type("a.Foo", overrides), "application/x-foo");
    EXPECT_EQ(mime_type("a.css", overrides), "text/css; charset=utf-8");
    EXPECT_EQ(mime_type("a.bar", overrides), "application/octet-stream");
    EXPECT_EQ(mime_type("foo", overrides), "application/octet-stream");
    EXPECT_EQ(mime_type("a.css", MimeOverrides{}), "text/css; charset=utf-8");
}

TEST(Mime, CompressibleTable) {
    for (std::string_view t : {"text/html"sv,
                               "text/html; charset=utf-8"sv,
                               "TEXT/CSS"sv,
                               "text/javascript"sv,
                               "application/json"sv,
                               "Application/JSON ; charset=utf-8"sv,
                               "application/ld+json"sv,
                               "application/manifest+json; charset=utf-8"sv,
                               "application/xml"sv,
                               "application/rss+xml"sv,
                               "application/javascript"sv,
                               "image/svg+xml"sv,
                               "image/svg+xml; charset=utf-8"sv,
                               "application/wasm"sv,
                               "font/ttf"sv,
                               "font/otf"sv,
                               "application/vnd.ms-fontobject"sv,
                               "image/x-icon"sv,
                               "image/bmp"sv,
                               "application/yaml"sv})
        EXPECT_TRUE(compressible(t)) << t;
    for (std::string_view t :
         {""sv, "text/"sv, "image/png"sv, "image/jpeg"sv, "image/webp"sv, "font/woff"sv,
          "font/woff2"sv, "audio/mpeg"sv, "video/mp4"sv, "application/zip"sv, "application/gzip"sv,
          "application/zstd"sv, "application/pdf"sv, "application/octet-stream"sv,
          "application/jsonx"sv, "xtext/html"sv, "json"sv})
        EXPECT_FALSE(compressible(t)) << t;
}

// Every built-in text type carries the charset, and every one of them is compressible.
TEST(Mime, CharsetTypesAreCompressible) {
    for (std::string_view name : {"a.html"sv, "a.js"sv, "a.json"sv, "a.xml"sv, "a.svg"sv,
                                  "a.atom"sv, "a.webmanifest"sv, "a.ics"sv, "a.py"sv})
        EXPECT_TRUE(compressible(mime_type(name))) << name;
}

TEST(ContentDisposition, Ascii) {
    EXPECT_EQ(content_disposition("report.pdf"), "attachment; filename=\"report.pdf\"");
    EXPECT_EQ(content_disposition("report.pdf", false), "inline; filename=\"report.pdf\"");
    EXPECT_EQ(content_disposition("my file (1).txt"), "attachment; filename=\"my file (1).txt\"");
}

TEST(ContentDisposition, QuotesAndControls) {
    EXPECT_EQ(content_disposition("a\"b.txt"),
              "attachment; filename=\"a_b.txt\"; filename*=UTF-8''a%22b.txt");
    EXPECT_EQ(content_disposition("a\r\nb"),
              "attachment; filename=\"a__b\"; filename*=UTF-8''a%0D%0Ab");
    EXPECT_EQ(content_disposition("100%.txt"),
              "attachment; filename=\"100_.txt\"; filename*=UTF-8''100%25.txt");
    EXPECT_EQ(content_disposition("a\0b"sv),
              "attachment; filename=\"a_b\"; filename*=UTF-8''a%00b");
}

TEST(ContentDisposition, NonAscii) {
    EXPECT_EQ(content_disposition("résumé.pdf"),
              "attachment; filename=\"r_sum_.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf");
    EXPECT_EQ(content_disposition("日本.txt"),
              "attachment; filename=\"__.txt\"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.txt");
    // Bytes outside attr-char are encoded, attr-char punctuation is not.
    EXPECT_EQ(content_disposition("é a!#$&+-.^_`|~"),
              "attachment; filename=\"_ a!#$&+-.^_`|~\"; filename*=UTF-8''%C3%A9%20a!#$&+-.^_`|~");
}

TEST(ContentDisposition, DirectoryPartsAndEmpty) {
    EXPECT_EQ(content_disposition("/var/www/a.txt"), "attachment; filename=\"a.txt\"");
    EXPECT_EQ(content_disposition("C:\\Users\\x\\a.txt"), "attachment; filename=\"a.txt\"");
    EXPECT_EQ(content_disposition("a/b\\c.txt"), "attachment; filename=\"c.txt\"");
    EXPECT_EQ(content_disposition(""), "attachment");
    EXPECT_EQ(content_disposition("dir/"), "attachment");
    EXPECT_EQ(content_disposition("", false), "inline");
}

}  // namespace
}  // namespace vela::files
