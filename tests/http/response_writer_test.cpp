// Tests for src/http/response_writer.cpp and the header rules of src/http/response.cpp:
// the exact bytes on the wire.
#include "vela/http/response_writer.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include "vela/http/response.hpp"

namespace vela {
namespace {

constexpr std::string_view kDate = "Sun, 06 Nov 1994 08:49:37 GMT";
const std::string kHead = "Server: vela\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n";
const std::string kText = "Content-Type: text/plain; charset=utf-8\r\n";

WriteOptions opts(bool keep_alive = true, bool http10 = false, bool head = false) {
    WriteOptions o;
    o.date = kDate;
    o.keep_alive = keep_alive;
    o.http10 = http10;
    o.head = head;
    return o;
}

std::string wire(const Response& r, const WriteOptions& o = opts()) {
    Buffer out;
    write_response(out, r, o);
    return std::string(out.view());
}

TEST(ResponseWriter, TextOk) {
    EXPECT_EQ(wire(Response("hello")),
              "HTTP/1.1 200 OK\r\n" + kHead + kText + "Content-Length: 5\r\n\r\nhello");
}

TEST(ResponseWriter, EmptyOkHasZeroLengthAndNoContentType) {
    EXPECT_EQ(wire(Response()), "HTTP/1.1 200 OK\r\n" + kHead + "Content-Length: 0\r\n\r\n");
}

TEST(ResponseWriter, JsonAndHtmlContentTypes) {
    EXPECT_EQ(wire(Response::json("{}", Status::Created)),
              "HTTP/1.1 201 Created\r\n" + kHead +
                  "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    EXPECT_EQ(wire(Response::html("<p>")),
              "HTTP/1.1 200 OK\r\n" + kHead +
                  "Content-Type: text/html; charset=utf-8\r\nContent-Length: 3\r\n\r\n<p>");
}

// A value that is no status code (a handler returning 0 or 42) goes out as a 500 framed
// like any 500: with its Content-Length and body, so the client can find where it ends.
TEST(ResponseWriter, OutOfRangeStatusIsSentAsAFramed500) {
    for (int bad : {0, 42, 99, 1000}) {
        Response r = Response::text("oops", static_cast<Status>(bad));
        EXPECT_EQ(wire(r), "HTTP/1.1 500 Internal Server Error\r\n" + kHead + kText +
                               "Content-Length: 4\r\n\r\noops")
            << bad;
    }
}

TEST(ResponseWriter, NoContentHasNoLengthAndNoBody) {
    EXPECT_EQ(wire(Response(Status::NoContent)), "HTTP/1.1 204 No Content\r\n" + kHead + "\r\n");
    // A body set by mistake is not sent either (RFC 9110 15.3.5).
    Response r(Status::NoContent);
    r.set_body("oops");
    EXPECT_EQ(wire(r), "HTTP/1.1 204 No Content\r\n" + kHead + "\r\n");
}

TEST(ResponseWriter, NotModifiedHasNoLengthAndNoBody) {
    Response r(Status::NotModified);
    r.add_header("ETag", "\"v1\"");
    r.set_body("stale");
    EXPECT_EQ(wire(r), "HTTP/1.1 304 Not Modified\r\n" + kHead + "ETag: \"v1\"\r\n\r\n");
}

TEST(ResponseWriter, HeadAnnouncesTheLengthButSendsNoBody) {
    EXPECT_EQ(wire(Response("hello"), opts(true, false, true)),
              "HTTP/1.1 200 OK\r\n" + kHead + kText + "Content-Length: 5\r\n\r\n");
    EXPECT_EQ(wire(Response(Status::NoContent), opts(true, false, true)),
              "HTTP/1.1 204 No Content\r\n" + kHead + "\r\n");
}

TEST(ResponseWriter, Http10KeepAliveIsAnnounced) {
    EXPECT_EQ(wire(Response("hi"), opts(true, true)),
              "HTTP/1.1 200 OK\r\n" + kHead + kText +
                  "Content-Length: 2\r\nConnection: keep-alive\r\n\r\nhi");
}

TEST(ResponseWriter, ConnectionClose) {
    const std::string expect =
        "HTTP/1.1 200 OK\r\n" + kHead + kText + "Content-Length: 2\r\nConnection: close\r\n\r\nhi";
    EXPECT_EQ(wire(Response("hi"), opts(false)), expect);
    EXPECT_EQ(wire(Response("hi"), opts(false, true)), expect);
}

TEST(ResponseWriter, CustomHeadersAndCustomContentType) {
    Response r = Response::with_body(Status::Created, "<x/>", "application/vnd.x+xml");
    r.add_header("X-Request-Id", "42");
    r.add_header("Cache-Control", "no-store");
    EXPECT_EQ(r.content_type(), "application/vnd.x+xml");
    EXPECT_EQ(r.header("x-request-id"), "42");
    EXPECT_EQ(wire(r), "HTTP/1.1 201 Created\r\n" + kHead +
                           "Content-Type: application/vnd.x+xml\r\nX-Request-Id: 42\r\n"
                           "Cache-Control: no-store\r\nContent-Length: 4\r\n\r\n<x/>");
}

TEST(ResponseWriter, BuiltinContentTypeComesBeforeAddedHeaders) {
    Response r("a");
    r.add_header("Vary", "Accept");
    EXPECT_EQ(wire(r),
              "HTTP/1.1 200 OK\r\n" + kHead + kText + "Vary: Accept\r\nContent-Length: 1\r\n\r\na");
}

TEST(ResponseWriter, UnknownStatusCode) {
    EXPECT_EQ(wire(Response(static_cast<Status>(299))),
              "HTTP/1.1 299 Unknown\r\n" + kHead + "Content-Length: 0\r\n\r\n");
}

TEST(ResponseWriter, AppendsAfterWhatIsAlreadyBuffered) {
    Buffer out;
    write_response(out, Response("a"), opts());
    write_response(out, Response(Status::NotFound), opts(false));
    EXPECT_EQ(out.view(), "HTTP/1.1 200 OK\r\n" + kHead + kText +
                              "Content-Length: 1\r\n\r\na"
                              "HTTP/1.1 404 Not Found\r\n" +
                              kHead + "Content-Length: 0\r\nConnection: close\r\n\r\n");
}

TEST(ResponseWriter, ManyHeadersSpillPastTheInlineBlock) {
    Response r("b");
    std::string expect_block;
    for (int i = 0; i < 20; ++i) {
        std::string name = "X-Header-" + std::to_string(i);
        std::string value(20, static_cast<char>('a' + i));
        r.add_header(name, value);
        expect_block += name + ": " + value + "\r\n";
    }
    ASSERT_GT(expect_block.size(), Response::kInlineHeaderBytes);
    EXPECT_EQ(r.header_block(), expect_block);
    EXPECT_EQ(r.header("x-header-19"), std::string(20, 't'));
    EXPECT_EQ(wire(r),
              "HTTP/1.1 200 OK\r\n" + kHead + kText + expect_block + "Content-Length: 1\r\n\r\nb");
    Response copy = r;
    EXPECT_EQ(copy.header_block(), expect_block);
    Response moved = std::move(r);
    EXPECT_EQ(moved.header_block(), expect_block);
}

TEST(ResponseWriter, CopyAndMoveKeepInlineHeaders) {
    Response r = Response::text("x", Status::Accepted);
    r.add_header("A", "1");
    Response copy = r;
    Response moved = std::move(r);
    EXPECT_EQ(wire(copy), wire(moved));
    EXPECT_EQ(copy.header("a"), "1");
    EXPECT_EQ(moved.status(), Status::Accepted);
}

TEST(ResponseWriter, ContinueIsAnInterimResponse) {
    Buffer out;
    write_continue(out);
    EXPECT_EQ(out.view(), "HTTP/1.1 100 Continue\r\n\r\n");
}

// write_response reserves its space once, up front: the longest variable parts (a 9-digit
// Content-Length together with "Connection: keep-alive") must fit in it, whatever spare
// capacity the buffer happens to have.
TEST(ResponseWriter, NeverWritesPastTheReservedSpace) {
    Response r(std::string(100'000'000, 'x'));  // 9 digits of Content-Length
    const std::string expect = wire(r, opts(true, true, true));
    ASSERT_EQ(expect, "HTTP/1.1 200 OK\r\n" + kHead + kText +
                          "Content-Length: 100000000\r\nConnection: keep-alive\r\n\r\n");
    for (std::size_t cap = expect.size() - 16; cap <= expect.size(); ++cap) {
        Buffer out(cap);
        write_response(out, r, opts(true, true, true));
        EXPECT_LE(out.size(), out.capacity()) << "capacity " << cap;
        EXPECT_EQ(out.view().substr(0, 17), "HTTP/1.1 200 OK\r\n");
    }
}

// --- Response::add_header: no injection, no managed headers. ---

TEST(ResponseHeaders, RejectsLineBreaksAndNul) {
    Response r;
    EXPECT_THROW(r.add_header("X-A\r\nInjected", "1"), std::invalid_argument);
    EXPECT_THROW(r.add_header("X-A", "1\r\nSet-Cookie: stolen=1"), std::invalid_argument);
    EXPECT_THROW(r.add_header("X-A", "a\nb"), std::invalid_argument);
    EXPECT_THROW(r.add_header("X-A", "a\rb"), std::invalid_argument);
    EXPECT_THROW(r.add_header("X-A", std::string_view("a\0b", 3)), std::invalid_argument);
    EXPECT_THROW(r.add_header("X\nA", "v"), std::invalid_argument);
    EXPECT_THROW(r.set_content_type("text/plain\r\nX-Evil: 1"), std::invalid_argument);
    EXPECT_EQ(r.header_block(), "");
}

TEST(ResponseHeaders, RejectsEmptyOrColonNames) {
    Response r;
    EXPECT_THROW(r.add_header("", "v"), std::invalid_argument);
    EXPECT_THROW(r.add_header("X-A: b", "v"), std::invalid_argument);
    EXPECT_EQ(r.header_block(), "");
}

TEST(ResponseHeaders, RejectsServerManagedHeadersInAnyCase) {
    Response r;
    for (std::string_view name :
         {"Content-Length", "content-length", "Transfer-Encoding", "TRANSFER-ENCODING", "Date",
          "date", "Connection", "connection"}) {
        EXPECT_THROW(r.add_header(name, "x"), std::invalid_argument) << name;
    }
    EXPECT_EQ(r.header_block(), "");
    EXPECT_EQ(wire(r), "HTTP/1.1 200 OK\r\n" + kHead + "Content-Length: 0\r\n\r\n");
}

TEST(ResponseHeaders, ContentTypeThroughAddHeaderReplacesTheBuiltinOne) {
    Response r("x");
    r.add_header("content-type", "text/csv");
    EXPECT_EQ(r.content_type(), "text/csv");
    EXPECT_EQ(wire(r), "HTTP/1.1 200 OK\r\n" + kHead +
                           "Content-Type: text/csv\r\nContent-Length: 1\r\n\r\nx");
}

TEST(ResponseHeaders, SettingContentTypeTwiceKeepsOnlyTheLast) {
    Response r("x");
    r.add_header("X-A", "1");
    r.set_content_type("a/b");
    r.add_header("X-B", "2");
    r.set_content_type("c/d");
    EXPECT_EQ(r.content_type(), "c/d");
    EXPECT_EQ(r.header_block(), "X-A: 1\r\nX-B: 2\r\nContent-Type: c/d\r\n");
}

TEST(ResponseHeaders, AllowedValuesKeepTabsAndObsText) {
    Response r;
    r.add_header("X-A", "a\tb caf\xC3\xA9");
    EXPECT_EQ(r.header("X-A"), "a\tb caf\xC3\xA9");
    EXPECT_EQ(r.header("X-B"), "");
}

TEST(ResponseHeaders, CloseConnectionIsAFlagForTheServer) {
    Response r("x");
    EXPECT_FALSE(r.wants_close());
    r.close_connection();
    EXPECT_TRUE(r.wants_close());
}

TEST(Trailers, LastChunkCarriesTheAllowedTrailerFields) {
    Response::TrailerFields t = {{"X-Checksum", "abc"}, {"Content-Length", "5"},
                                 {"set-cookie", "a=b"}, {"If-Match", "*"},
                                 {"Bad Name", "x"},     {"X-Split", "a\r\nX-Evil: 1"},
                                 {"Grpc-Status", "0"}};
    Buffer out;
    write_last_chunk(out, &t);
    EXPECT_EQ(out.view(), "0\r\nX-Checksum: abc\r\nGrpc-Status: 0\r\n\r\n");
    Buffer none;
    write_last_chunk(none, nullptr);
    EXPECT_EQ(none.view(), "0\r\n\r\n");
    EXPECT_TRUE(trailer_field_allowed("Server-Timing", "db;dur=53"));
    EXPECT_FALSE(trailer_field_allowed("", "x"));
    EXPECT_FALSE(trailer_field_allowed(":status", "200"));
    EXPECT_FALSE(trailer_field_allowed("Transfer-Encoding", "chunked"));
    EXPECT_FALSE(trailer_field_allowed("x-nul", std::string_view("a\0b", 3)));
}

}  // namespace
}  // namespace vela

TEST(BodyRecycling, RecycledStorageServesTheNextBody) {
    (void)vela::body_string(0);  // takes whatever spare this thread holds
    std::string big(200, 'x');
    const char* storage = big.data();
    vela::recycle_body(std::move(big));
    std::string next = vela::body_string(100);
    EXPECT_TRUE(next.empty());
    EXPECT_GE(next.capacity(), 200u);
    EXPECT_EQ(next.data(), storage);  // the same allocation, handed back
    // Taken: the next request for storage is a fresh one.
    std::string other = vela::body_string(100);
    EXPECT_NE(other.data(), storage);
    EXPECT_GE(other.capacity(), 100u);
}

TEST(BodyRecycling, TooSmallSpareIsNotUsedAndHugeBodiesAreNotKept) {
    (void)vela::body_string(0);
    vela::recycle_body(std::string(40, 'a'));
    std::string s = vela::body_string(1000);  // the 40-byte spare is too small
    EXPECT_GE(s.capacity(), 1000u);
    vela::recycle_body(std::move(s));
    std::string huge(vela::kMaxRecycledBody + 1, 'h');
    const char* huge_storage = huge.data();
    vela::recycle_body(std::move(huge));
    std::string t = vela::body_string(1000);
    EXPECT_NE(t.data(), huge_storage);
    EXPECT_GE(t.capacity(), 1000u);
}
