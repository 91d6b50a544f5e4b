// Tests for the test support library (tests/support): the HTTP/1.1 response parser the
// end-to-end tests read the server's bytes with, the `curl -i` reader, the header counters and
// the parsed-request holder. A broken reader would make server tests pass or fail for the wrong
// reason, so each rule it applies has a row here.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "support/curl.hpp"
#include "support/http_response.hpp"
#include "support/parsed_request.hpp"

namespace vela::test {
namespace {

struct Row {
    std::string_view name;
    std::string_view bytes;
    bool head_request;
    bool at_eof;
    ParseStatus want;
    int status;             // when complete
    std::string_view body;  // when complete
    std::size_t consumed;   // when complete
};

constexpr std::string_view kCl = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
constexpr std::string_view kChunked =
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    "5;ext=1\r\nhello\r\nB \r\n, world ...\r\n0\r\nX-Trailer: t\r\n\r\n";

const Row kRows[] = {
    {"content_length", kCl, false, false, ParseStatus::complete, 200, "hello", kCl.size()},
    {"next_response_left", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1", false, false,
     ParseStatus::complete, 200, "hi", 40},
    {"chunked_with_extension_and_trailer", kChunked, false, false, ParseStatus::complete, 200,
     "hello, world ...", kChunked.size()},
    {"chunk_size_upper_hex",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", false,
     false, ParseStatus::complete, 200, "0123456789", 67},
    {"no_reason", "HTTP/1.1 204\r\n\r\n", false, false, ParseStatus::complete, 204, "", 16},
    {"head_ignores_length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, false,
     ParseStatus::complete, 200, "", 38},
    {"not_modified_has_no_body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", false,
     false, ParseStatus::complete, 304, "", 48},
    {"interim_has_no_body", "HTTP/1.1 100 Continue\r\n\r\n", false, false, ParseStatus::complete,
     100, "", 25},
    {"eof_framed", "HTTP/1.1 200 OK\r\n\r\nto the end", false, true, ParseStatus::complete, 200,
     "to the end", 29},
    {"eof_framed_still_open", "HTTP/1.1 200 OK\r\n\r\nto the end", false, false,
     ParseStatus::incomplete, 0, "", 0},
    {"head_incomplete", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", false, false,
     ParseStatus::incomplete, 0, "", 0},
    {"body_incomplete", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhell", false, false,
     ParseStatus::incomplete, 0, "", 0},
    {"chunk_incomplete", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", false,
     false, ParseStatus::incomplete, 0, "", 0},
    {"trailer_incomplete", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\r\n",
     false, false, ParseStatus::incomplete, 0, "", 0},
    {"bad_version", "HTTX/1.1 200 OK\r\n\r\n", false, false, ParseStatus::malformed, 0, "", 0},
    {"bad_status", "HTTP/1.1 2x0 OK\r\n\r\n", false, false, ParseStatus::malformed, 0, "", 0},
    {"status_below_100", "HTTP/1.1 099 Odd\r\n\r\n", false, false, ParseStatus::malformed, 0, "",
     0},
    {"no_space_after_status", "HTTP/1.1 200OK\r\n\r\n", false, false, ParseStatus::malformed, 0, "",
     0},
    {"header_without_colon", "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", false, false,
     ParseStatus::malformed, 0, "", 0},
    {"space_before_colon", "HTTP/1.1 200 OK\r\nName : v\r\n\r\n", false, false,
     ParseStatus::malformed, 0, "", 0},
    {"repeated_length", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", false,
     false, ParseStatus::malformed, 0, "", 0},
    {"length_and_chunked",
     "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false,
     false, ParseStatus::malformed, 0, "", 0},
    {"bad_length", "HTTP/1.1 200 OK\r\nContent-Length: 0x5\r\n\r\nhello", false, false,
     ParseStatus::malformed, 0, "", 0},
    {"bad_chunk_size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, false,
     ParseStatus::malformed, 0, "", 0},
    {"chunk_without_crlf",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiX\r\n0\r\n\r\n", false, false,
     ParseStatus::malformed, 0, "", 0},
};

TEST(SupportParseResponse, Table) {
    for (const Row& row : kRows) {
        HttpResponse r;
        std::size_t used = 0;
        std::string why;
        const ParseStatus got =
            parse_response(row.bytes, row.head_request, row.at_eof, r, used, why);
        ASSERT_EQ(got, row.want) << row.name << ": " << why;
        if (got == ParseStatus::malformed) {
            EXPECT_FALSE(why.empty()) << row.name;
        }
        if (got != ParseStatus::complete) continue;
        EXPECT_EQ(r.status, row.status) << row.name;
        EXPECT_EQ(r.body, row.body) << row.name;
        EXPECT_EQ(used, row.consumed) << row.name;
    }
}

TEST(SupportParseResponse, HeadersKeepOrderAndLookUpIgnoringCase) {
    const std::string_view raw =
        "HTTP/1.1 404 Not Found\r\nSet-Cookie: a=1\r\nx-one:  padded \t\r\nSET-COOKIE: b=2\r\n"
        "Connection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n";
    HttpResponse r;
    std::size_t used = 0;
    std::string why;
    ASSERT_EQ(parse_response(raw, false, false, r, used, why), ParseStatus::complete) << why;
    EXPECT_EQ(r.version, "HTTP/1.1");
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(r.reason, "Not Found");
    ASSERT_EQ(r.headers.size(), 5u);
    EXPECT_EQ(r.headers[1].first, "x-one");
    EXPECT_EQ(r.header("X-ONE"), "padded");
    EXPECT_EQ(r.header("set-cookie"), "a=1");  // the first of several
    EXPECT_EQ(r.header_count("Set-Cookie"), 2u);
    EXPECT_EQ(r.header_count("Set-Cookie2"), 0u);
    EXPECT_TRUE(r.has_header("content-length"));
    EXPECT_FALSE(r.has_header("Content"));
    EXPECT_EQ(r.header("Absent"), "");
    EXPECT_TRUE(r.announces_close());
    EXPECT_FALSE(r.chunked);
}

TEST(SupportParseResponse, ChunkedIsRecorded) {
    HttpResponse r;
    std::size_t used = 0;
    std::string why;
    ASSERT_EQ(parse_response(kChunked, false, false, r, used, why), ParseStatus::complete);
    EXPECT_TRUE(r.chunked);
    EXPECT_FALSE(r.announces_close());
}

TEST(SupportHeaderLines, CountsNamesIgnoringCaseAndNotPrefixes) {
    const std::string_view block =
        "Vary: Accept-Encoding\r\nvary: Origin\r\nVary-Not: x\r\nX-Vary: y\r\nETag: \"1\"\r\n";
    EXPECT_EQ(count_header_lines(block, "Vary"), 2u);
    EXPECT_EQ(count_header_lines(block, "VARY"), 2u);
    EXPECT_EQ(count_header_lines(block, "ETag"), 1u);
    EXPECT_EQ(count_header_lines(block, "Etag: \"1\""), 0u);
    EXPECT_EQ(count_header_lines(block, "Content-Type"), 0u);
    EXPECT_EQ(count_header_lines("", "Vary"), 0u);
    EXPECT_EQ(count_header_lines("Vary: last line without CRLF", "Vary"), 1u);
}

TEST(SupportSplitHead, AtTheFirstEmptyLine) {
    EXPECT_EQ(
        split_head("HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody\r\n\r\nmore"),
        (std::pair<std::string, std::string>{"HTTP/1.1 200 OK\r\nA: b\r\n", "body\r\n\r\nmore"}));
    EXPECT_EQ(split_head("HTTP/1.1 200 OK\r\n"),
              (std::pair<std::string, std::string>{"HTTP/1.1 200 OK\r\n", ""}));
}

TEST(SupportIcase, EqualAndContains) {
    EXPECT_TRUE(iequal("Content-Type", "content-TYPE"));
    EXPECT_FALSE(iequal("Content-Type", "Content-Typ"));
    EXPECT_FALSE(iequal("a[", "A{"));  // only letters fold
    EXPECT_TRUE(icontains("keep-alive, Close", "close"));
    EXPECT_FALSE(icontains("clos", "close"));
    EXPECT_EQ(lower_ascii('Q'), 'q');
    EXPECT_EQ(lower_ascii('@'), '@');
}

TEST(SupportCurl, SkipsInterimHeadsAndLowerCasesNames) {
    const CurlReply r = parse_curl_i(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
        "HTTP/2 201 \r\nContent-Type: text/plain \r\nx-a: 1\r\nX-A: 2\r\n\r\nbody\r\n\r\nbytes");
    EXPECT_TRUE(r.upgraded);
    EXPECT_EQ(r.version, "HTTP/2");
    EXPECT_EQ(r.status, 201);
    EXPECT_EQ(r.header("content-type"), "text/plain");
    EXPECT_EQ(r.header("x-a"), "2");      // the last of a repeated field
    EXPECT_FALSE(r.has("connection"));    // the 101's fields are gone
    EXPECT_FALSE(r.has("Content-Type"));  // names are looked up lower-cased
    EXPECT_EQ(r.body, "body\r\n\r\nbytes");

    const CurlReply c = parse_curl_i(
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 20);
    EXPECT_FALSE(c.upgraded);
    EXPECT_EQ(c.status, 200);
    EXPECT_EQ(c.header("content-length"), "2");
    EXPECT_EQ(c.body, "ok");
    EXPECT_EQ(c.raw, "HTTP/1.1 100 Continu");
}

TEST(SupportCurl, OutputWithoutAResponse) {
    const CurlReply none = parse_curl_i("");
    EXPECT_EQ(none.status, 0);
    EXPECT_EQ(none.body, "");
    const CurlReply cut = parse_curl_i("HTTP/1.1 200 OK\r\nA: b\r\n");
    EXPECT_EQ(cut.status, 0);
    EXPECT_TRUE(cut.headers.empty());
}

TEST(SupportParsedRequest, ParsesWholeOrByPrefix) {
    const ParsedRequest p(request_head("X-A: 1\r\n", "/p?q=1", "DELETE"));
    EXPECT_EQ(p.raw, "DELETE /p?q=1 HTTP/1.1\r\nHost: example.com\r\nX-A: 1\r\n\r\n");
    EXPECT_EQ(p.req.method(), Method::DELETE);
    EXPECT_EQ(p.req.path(), "/p");
    EXPECT_EQ(p.req.header("x-a"), "1");

    RawRequest r(request_head());
    EXPECT_EQ(r.parse(r.raw.size() - 1), ParseResult::incomplete);
    EXPECT_EQ(r.parse(), ParseResult::complete);
    EXPECT_EQ(r.req.path(), "/x");
}

}  // namespace
}  // namespace vela::test
