// Tests for src/http/response.cpp: remove_header / set_header, and the rarely used parts kept
// behind one shared pointer (Response::Extra: a streamed body, a file body, a protocol switch):
// when it exists, how moves carry it, and how copies share it until one of them changes it.
#include "vela/http/response.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vela {
namespace {

using namespace std::literals;

// A BodySource that yields `pieces` once each, then ends.
Response::BodySource pieces_source(std::vector<std::string> pieces) {
    auto state =
        std::make_shared<std::pair<std::vector<std::string>, std::size_t>>(std::move(pieces), 0);
    return [state]() -> std::optional<std::string> {
        if (state->second == state->first.size()) return std::nullopt;
        return state->first[state->second++];
    };
}

FileBody file_body_of(std::uint64_t length) {
    FileBody fb;
    fb.parts.push_back(FileBody::Part{{}, 0, length});
    return fb;
}

struct TestUpgrade : Upgrade {};

// The fields as for_each_header gives them, as "name=value" lines.
std::vector<std::string> fields_of(const Response& r) {
    std::vector<std::string> out;
    r.for_each_header([&](std::string_view n, std::string_view v) {
        out.push_back(std::string(n) + "=" + std::string(v));
    });
    return out;
}

// The fields parsed out of header_block(): what for_each_header must agree with.
std::vector<std::string> parsed_fields(const Response& r) {
    std::vector<std::string> out;
    std::string_view rest = r.header_block();
    while (!rest.empty()) {
        const std::size_t eol = rest.find("\r\n");
        const std::string_view line = rest.substr(0, eol);
        rest.remove_prefix(eol + 2);
        const std::size_t colon = line.find(": ");
        out.push_back(std::string(line.substr(0, colon)) + "=" +
                      std::string(line.substr(colon + 2)));
    }
    return out;
}

TEST(ResponseFields, ForEachHeaderWalksTheRecordedLengths) {
    Response r;
    EXPECT_EQ(r.header_count(), 0u);
    EXPECT_TRUE(fields_of(r).empty());
    r.add_header("x-a", "");
    r.add_header("x-b", "a: b: c");
    r.set_content_type("text/x-custom");
    EXPECT_EQ(r.header_count(), 3u);
    EXPECT_EQ(fields_of(r),
              (std::vector<std::string>{"x-a=", "x-b=a: b: c", "Content-Type=text/x-custom"}));
    EXPECT_EQ(fields_of(r), parsed_fields(r));
}

TEST(ResponseFields, ManyFieldsSpillTheIndexAndTheBytes) {
    Response r;
    std::vector<std::string> want;
    for (int i = 0; i < 40; ++i) {  // past kInlineFields and past the inline header bytes
        const std::string name = "x-field-" + std::to_string(i);
        const std::string value(static_cast<std::size_t>(i * 7), char('a' + i % 26));
        r.add_header(name, value);
        want.push_back(name + "=" + value);
    }
    ASSERT_GT(r.header_block().size(), Response::kInlineHeaderBytes);
    EXPECT_EQ(r.header_count(), 40u);
    EXPECT_EQ(fields_of(r), want);
    EXPECT_EQ(fields_of(r), parsed_fields(r));
    EXPECT_EQ(r.header("X-FIELD-39"), std::string(39 * 7, char('a' + 39 % 26)));

    Response copy(r);
    EXPECT_EQ(fields_of(copy), want);
    Response moved(std::move(r));
    EXPECT_EQ(fields_of(moved), want);
    Response assigned;
    assigned.add_header("x-old", "1");
    assigned = std::move(moved);
    EXPECT_EQ(fields_of(assigned), want);
    assigned = Response();
    EXPECT_EQ(assigned.header_count(), 0u);
    EXPECT_TRUE(fields_of(assigned).empty());

    // Removing rebuilds both the bytes and the index.
    EXPECT_EQ(copy.remove_header("x-field-0"), 1u);
    EXPECT_EQ(copy.remove_header("X-Field-20"), 1u);
    want.erase(want.begin() + 20);
    want.erase(want.begin());
    EXPECT_EQ(copy.header_count(), 38u);
    EXPECT_EQ(fields_of(copy), want);
    EXPECT_EQ(fields_of(copy), parsed_fields(copy));
}

TEST(ResponseFields, ReplacingTheContentTypeKeepsTheIndexRight) {
    Response r;
    r.add_header("X-A", "1");
    r.set_content_type("text/one");
    r.add_header("x-b", "2");
    r.set_content_type("text/two");
    EXPECT_EQ(fields_of(r), (std::vector<std::string>{"X-A=1", "x-b=2", "Content-Type=text/two"}));
    EXPECT_EQ(fields_of(r), parsed_fields(r));
    EXPECT_EQ(r.remove_header("content-type"), 1u);
    EXPECT_EQ(fields_of(r), (std::vector<std::string>{"X-A=1", "x-b=2"}));
    EXPECT_EQ(r.remove_header("x-a"), 1u);
    EXPECT_EQ(fields_of(r), (std::vector<std::string>{"x-b=2"}));
}

TEST(ResponseFields, OversizedNamesAndValuesAreRefused) {
    Response r;
    const std::string big(Response::kMaxFieldPart + 1, 'a');
    EXPECT_THROW(r.add_header("x-big", big), std::invalid_argument);
    EXPECT_THROW(r.add_header(big, "1"), std::invalid_argument);
    EXPECT_THROW(r.set_content_type(big), std::invalid_argument);
    EXPECT_EQ(r.header_count(), 0u);
    EXPECT_EQ(r.header_block(), "");
    const std::string largest(Response::kMaxFieldPart, 'b');
    r.add_header("x-largest", largest);
    EXPECT_EQ(r.header("x-largest"), largest);
}

TEST(ResponseExtra, RemoveHeaderIsCaseInsensitiveAndRemovesEveryOccurrence) {
    Response r("body");
    r.add_header("X-A", "1");
    r.add_header("Set-Cookie", "a=1");
    r.add_header("X-B", "2");
    r.add_header("set-cookie", "b=2");
    r.add_header("SET-COOKIE", "c=3");
    EXPECT_EQ(r.remove_header("Set-Cookie"), 3u);
    EXPECT_EQ(r.header_block(), "X-A: 1\r\nX-B: 2\r\n");
    EXPECT_EQ(r.header("Set-Cookie"), "");
    EXPECT_EQ(r.remove_header("set-cookie"), 0u);
    EXPECT_EQ(r.remove_header("x-a"), 1u);
    EXPECT_EQ(r.header_block(), "X-B: 2\r\n");
    EXPECT_EQ(r.content_type(), mime::text) << "another header's removal keeps the type";
    EXPECT_EQ(r.body(), "body");
}

TEST(ResponseExtra, RemoveHeaderMatchesWholeNamesOnly) {
    Response r;
    r.add_header("X-Long", "1");
    r.add_header("X-Lon", "2");
    r.add_header("X", "3");
    EXPECT_EQ(r.remove_header("X-Lon"), 1u);
    EXPECT_EQ(r.header_block(), "X-Long: 1\r\nX: 3\r\n");
    EXPECT_EQ(r.remove_header("X-"), 0u);
    EXPECT_EQ(r.remove_header("Absent"), 0u);
    EXPECT_EQ(r.header_block(), "X-Long: 1\r\nX: 3\r\n");
}

TEST(ResponseExtra, RemoveHeaderOnAnEmptyResponse) {
    Response r;
    EXPECT_EQ(r.remove_header("X-A"), 0u);
    EXPECT_EQ(r.header_block(), "");
    EXPECT_EQ(r.content_type(), "");
}

TEST(ResponseExtra, RemoveHeaderWorksOnSpilledHeaders) {
    Response r;
    const std::string big(100, 'v');
    r.add_header("X-One", big);
    r.add_header("X-Two", big);
    r.add_header("X-One", big);  // past kInlineHeaderBytes: spilled to the heap
    ASSERT_GT(r.header_block().size(), Response::kInlineHeaderBytes);
    EXPECT_EQ(r.remove_header("x-one"), 2u);
    EXPECT_EQ(r.header_block(), "X-Two: " + big + "\r\n");
    r.add_header("X-Three", "3");
    EXPECT_EQ(r.header("X-Three"), "3");
    EXPECT_EQ(r.header("X-Two"), big);
}

TEST(ResponseExtra, RemoveCustomContentType) {
    Response r = Response::with_body(Status::OK, "<x/>", "application/xml");
    r.add_header("X-A", "1");
    EXPECT_EQ(r.content_type(), "application/xml");
    EXPECT_EQ(r.remove_header("content-type"), 1u);
    EXPECT_EQ(r.content_type(), "");
    EXPECT_EQ(r.header("Content-Type"), "");
    EXPECT_EQ(r.header_block(), "X-A: 1\r\n");
    r.set_content_type("text/css");
    EXPECT_EQ(r.content_type(), "text/css");
}

TEST(ResponseExtra, RemoveBuiltinContentTypeAlongsideOtherHeaders) {
    Response r = Response::json("{}");
    r.add_header("X-A", "1");
    EXPECT_EQ(r.builtin_content_type(), mime::json);
    EXPECT_EQ(r.remove_header("Content-Type"), 1u);
    EXPECT_EQ(r.content_type(), "");
    EXPECT_EQ(r.builtin_content_type(), "");
    EXPECT_EQ(r.header_block(), "X-A: 1\r\n");
}

TEST(ResponseExtra, RemoveBuiltinContentTypeWithNoOtherHeader) {
    Response r = Response::json("{}");
    ASSERT_EQ(r.header_block(), "");
    // Regression: remove_header once returned 0 as soon as the header block was empty, before
    // it looked at the built-in Content-Type (kept outside the block).
    EXPECT_EQ(r.remove_header("Content-Type"), 1u);
    EXPECT_EQ(r.content_type(), "");
}

TEST(ResponseExtra, SetHeaderReplacesEveryOccurrence) {
    Response r;
    r.add_header("Vary", "Origin");
    r.add_header("X-Keep", "k");
    r.add_header("vary", "Cookie");
    r.set_header("Vary", "Accept-Encoding");
    EXPECT_EQ(r.header("Vary"), "Accept-Encoding");
    EXPECT_EQ(r.header_block(), "X-Keep: k\r\nVary: Accept-Encoding\r\n");
    r.set_header("X-New", "n");
    EXPECT_EQ(r.header("X-New"), "n");
}

TEST(ResponseExtra, SetHeaderContentType) {
    Response r("text");
    r.set_header("Content-Type", "application/xml");
    EXPECT_EQ(r.content_type(), "application/xml");
    EXPECT_EQ(r.header_block(), "Content-Type: application/xml\r\n");
    r.set_header("content-type", "text/css");
    EXPECT_EQ(r.content_type(), "text/css");
    EXPECT_EQ(r.header_block(), "Content-Type: text/css\r\n");
}

TEST(ResponseExtra, SetHeaderValidatesLikeAddHeader) {
    Response r;
    EXPECT_THROW(r.set_header("X-A", "a\r\nInjected: 1"), std::invalid_argument);
    EXPECT_THROW(r.set_header("Content-Length", "1"), std::invalid_argument);
    EXPECT_EQ(r.header_block(), "");
}

TEST(ResponseExtra, PlainResponsesHaveNoExtra) {
    EXPECT_FALSE(Response().has_extra());
    EXPECT_FALSE(Response("text").has_extra());
    EXPECT_FALSE(Response::json("{}").has_extra());
    Response r = Response::text("x", Status::NotFound);
    r.add_header("X-A", "1");
    r.set_content_type("text/css");
    EXPECT_FALSE(r.has_extra());
    EXPECT_FALSE(r.streaming());
    EXPECT_EQ(r.file_body(), nullptr);
    EXPECT_EQ(r.take_upgrade(), nullptr);
    EXPECT_FALSE(r.take_body_source());
    EXPECT_FALSE(r.has_extra()) << "taking from nothing creates nothing";
    r.clear_file_body();
    EXPECT_FALSE(r.has_extra());
}

TEST(ResponseExtra, BodySourceMakesAnExtra) {
    Response r;
    r.set_body_source(pieces_source({"a", "b"}));
    EXPECT_TRUE(r.has_extra());
    EXPECT_TRUE(r.streaming());
    EXPECT_EQ(r.file_body(), nullptr);
}

TEST(ResponseExtra, FileBodyMakesAnExtra) {
    Response r;
    r.set_file_body(file_body_of(42));
    EXPECT_TRUE(r.has_extra());
    EXPECT_FALSE(r.streaming());
    ASSERT_NE(r.file_body(), nullptr);
    EXPECT_EQ(r.file_body()->length(), 42u);
    r.clear_file_body();
    EXPECT_EQ(r.file_body(), nullptr);
}

TEST(ResponseExtra, UpgradeMakesAnExtra) {
    Response r(Status::SwitchingProtocols);
    auto u = std::make_shared<TestUpgrade>();
    r.set_upgrade(u);
    EXPECT_TRUE(r.has_extra());
    EXPECT_FALSE(r.streaming());
    EXPECT_EQ(r.take_upgrade(), u);
    EXPECT_EQ(r.take_upgrade(), nullptr) << "taken once";
}

TEST(ResponseExtra, MoveConstructionCarriesTheExtra) {
    Response a("x");
    a.add_header("X-A", "1");
    a.set_body_source(pieces_source({"p1", "p2"}));
    Response b(std::move(a));
    EXPECT_TRUE(b.has_extra());
    EXPECT_TRUE(b.streaming());
    EXPECT_EQ(b.header("X-A"), "1");
    Response::BodySource s = b.take_body_source();
    ASSERT_TRUE(s);
    EXPECT_EQ(s(), "p1");
    EXPECT_EQ(s(), "p2");
    EXPECT_EQ(s(), std::nullopt);
}

TEST(ResponseExtra, MoveAssignmentCarriesAndReplacesTheExtra) {
    Response a;
    a.set_file_body(file_body_of(7));
    Response b;
    b.set_body_source(pieces_source({"old"}));
    b = std::move(a);
    EXPECT_TRUE(b.has_extra());
    EXPECT_FALSE(b.streaming()) << "b's own source is gone";
    ASSERT_NE(b.file_body(), nullptr);
    EXPECT_EQ(b.file_body()->length(), 7u);

    // Moving a plain response over one with an extra drops the extra.
    Response plain("p");
    b = std::move(plain);
    EXPECT_FALSE(b.has_extra());
    EXPECT_EQ(b.file_body(), nullptr);
    EXPECT_EQ(b.body(), "p");
}

TEST(ResponseExtra, CopySharesTheExtra) {
    Response a;
    a.add_header("X-A", "1");
    a.set_file_body(file_body_of(9));
    Response b(a);
    EXPECT_TRUE(b.has_extra());
    // Read through const access: the non-const file_body() would give b its own copy.
    ASSERT_NE(std::as_const(b).file_body(), nullptr);
    EXPECT_EQ(std::as_const(b).file_body(), std::as_const(a).file_body())
        << "shared, not copied, until a change";
    EXPECT_EQ(b.header("X-A"), "1");

    Response c;
    c = a;
    EXPECT_EQ(std::as_const(c).file_body(), std::as_const(a).file_body());

    // Copy-assigning a plain response drops the extra.
    const Response plain("plain");
    c = plain;
    EXPECT_FALSE(c.has_extra());
}

TEST(ResponseExtra, SetBodySourceOnACopyLeavesTheOriginal) {
    Response a;
    a.set_file_body(file_body_of(5));
    a.set_body_source(pieces_source({"original"}));
    Response b = a;
    b.set_body_source(pieces_source({"copy"}));
    // Copy-on-write in mutable_extra: b has its own Extra now.
    EXPECT_NE(std::as_const(b).file_body(), std::as_const(a).file_body());
    ASSERT_NE(b.file_body(), nullptr);
    EXPECT_EQ(b.file_body()->length(), 5u) << "the rest of the Extra was copied";
    EXPECT_EQ(b.take_body_source()(), "copy");
    ASSERT_TRUE(a.streaming());
    EXPECT_EQ(a.take_body_source()(), "original");
}

TEST(ResponseExtra, SetFileBodyAndUpgradeOnACopyLeaveTheOriginal) {
    Response a;
    a.set_file_body(file_body_of(5));
    Response b = a;
    b.set_file_body(file_body_of(6));
    EXPECT_EQ(a.file_body()->length(), 5u);
    EXPECT_EQ(b.file_body()->length(), 6u);

    Response c = a;
    c.set_upgrade(std::make_shared<TestUpgrade>());
    EXPECT_EQ(a.take_upgrade(), nullptr);
    EXPECT_NE(c.take_upgrade(), nullptr);
}

TEST(ResponseExtra, CopyOfACopyChangesOnlyItself) {
    Response a;
    a.set_file_body(file_body_of(1));
    Response b = a;
    Response c = b;
    c.set_file_body(file_body_of(3));
    const Response& ca = a;
    const Response& cb = b;
    EXPECT_EQ(ca.file_body(), cb.file_body()) << "a and b still share theirs";
    EXPECT_EQ(ca.file_body()->length(), 1u);
    EXPECT_EQ(cb.file_body()->length(), 1u);
    EXPECT_EQ(c.file_body()->length(), 3u);
}

TEST(ResponseExtra, SoleOwnerChangesInPlace) {
    Response a;
    a.set_file_body(file_body_of(1));
    const FileBody* before = a.file_body();
    a.set_body_source(pieces_source({"x"}));
    EXPECT_EQ(a.file_body(), before) << "no copy when nobody shares the Extra";
    FileBody* mut = a.file_body();
    EXPECT_EQ(mut, before) << "nor for mutable access";
}

TEST(ResponseExtra, TakeBodySourceLeavesStreamingFalse) {
    Response r;
    r.set_body_source(pieces_source({"a"}));
    ASSERT_TRUE(r.streaming());
    Response::BodySource s = r.take_body_source();
    EXPECT_TRUE(s);
    EXPECT_FALSE(r.streaming());
    EXPECT_FALSE(r.take_body_source()) << "a second take gets nothing";
}

TEST(ResponseExtra, TakeBodySourceFromACopyLeavesTheOriginal) {
    Response a;
    a.set_body_source(pieces_source({"a"}));
    Response b = a;
    Response::BodySource s = b.take_body_source();
    EXPECT_TRUE(s);
    EXPECT_FALSE(b.streaming());
    // Regression: take_body_source() once moved the source out of the Extra the copies share,
    // leaving the original with no source.
    EXPECT_TRUE(a.streaming());
}

TEST(ResponseExtra, TakeUpgradeFromACopyLeavesTheOriginal) {
    Response a(Status::SwitchingProtocols);
    a.set_upgrade(std::make_shared<TestUpgrade>());
    Response b = a;
    EXPECT_NE(b.take_upgrade(), nullptr);
    // Regression: take_upgrade() once moved the upgrade out of the shared Extra.
    EXPECT_NE(a.take_upgrade(), nullptr);
}

// Regression (fixed in eb40277): clear_file_body() on a copy reset the FileBody inside the
// Extra it shared with the original, so a cached Response copied per request lost its file.
TEST(ResponseExtra, ClearFileBodyOnACopyLeavesTheOriginal) {
    Response a;
    a.set_file_body(file_body_of(5));
    Response b = a;
    b.clear_file_body();
    EXPECT_EQ(b.file_body(), nullptr);
    EXPECT_NE(std::as_const(a).file_body(), nullptr);
    EXPECT_EQ(std::as_const(a).file_body()->length(), 5u);
}

// Regression (fixed in eb40277): the non-const file_body() handed out the shared FileBody, so
// a change made through a copy (a range applied by the server) showed in the original.
TEST(ResponseExtra, MutatingTheFileBodyOfACopyLeavesTheOriginal) {
    Response a;
    a.set_file_body(file_body_of(5));
    Response b = a;
    b.file_body()->parts[0].length = 2;
    EXPECT_EQ(std::as_const(a).file_body()->length(), 5u);
    EXPECT_EQ(std::as_const(b).file_body()->length(), 2u);
}

}  // namespace
}  // namespace vela
