#pragma once
// A Request parsed from raw bytes by vela's RequestParser, as a connection would parse it, for
// tests that call hooks and middleware directly. The bytes live in the same object because the
// Request's fields are views into them; the object is not copyable for the same reason.

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "vela/http/request.hpp"
#include "vela/http/request_parser.hpp"

namespace vela::test {

/// Raw request bytes with a parser and a Request; parse() runs the parser over a prefix.
struct RawRequest {
    std::string raw;
    ParserLimits limits;
    RequestParser parser{&limits};
    Request req;

    explicit RawRequest(std::string bytes) : raw(std::move(bytes)) {}
    RawRequest(const RawRequest&) = delete;
    RawRequest& operator=(const RawRequest&) = delete;

    /// Parses the first `n` bytes (what a connection has read so far).
    ParseResult parse(std::size_t n) { return parser.parse(raw.data(), n, req); }
    /// Parses all of the bytes.
    ParseResult parse() { return parse(raw.size()); }
};

/// A RawRequest parsed at construction; the test fails unless it parses completely.
struct ParsedRequest : RawRequest {
    explicit ParsedRequest(std::string bytes) : RawRequest(std::move(bytes)) {
        EXPECT_EQ(parse(), ParseResult::complete) << raw;
    }
};

/// "<method> <target> HTTP/1.1" with a Host header and `extra` header lines (each ending in
/// CRLF), then the empty line.
inline std::string request_head(std::string_view extra = {}, std::string_view target = "/x",
                                std::string_view method = "GET") {
    std::string s(method);
    s.append(" ").append(target).append(" HTTP/1.1\r\nHost: example.com\r\n");
    return s.append(extra).append("\r\n");
}

}  // namespace vela::test
