// Tests for src/http/response_parser.cpp (RFC 9112 sections 2-6, as a client).
//
// The table is the test: each row is one response head, and every row runs four ways:
//   Whole          the head alone, in a buffer of exactly its size;
//   BodyAfter      the head followed by body bytes (and a second response), which must not
//                  be consumed and must not change the outcome;
//   EveryPrefix    each prefix of the head, in a buffer of exactly that size: need_more until
//                  the whole head is there (for a bad head: need_more, or the same error);
//   ReusedHead     parsed into a ResponseHead that held a larger head before.
// Adding a case is one line.
#include "vela/http/response_parser.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace vela {

// Readable names in failure messages (found by argument-dependent lookup).
static void PrintTo(HeadParse::Result r, std::ostream* os) {
    *os << (r == HeadParse::Result::done    ? "done"
            : r == HeadParse::Result::error ? "error"
                                            : "need_more");
}
static void PrintTo(BodyFraming f, std::ostream* os) {
    *os << (f == BodyFraming::none      ? "none"
            : f == BodyFraming::length  ? "length"
            : f == BodyFraming::chunked ? "chunked"
                                        : "until_close");
}

namespace {

using namespace std::literals;
using Result = HeadParse::Result;
using enum BodyFraming;

struct Row {
    std::string_view name{};
    std::string_view raw{};
    Result result = Result::done;
    std::string_view method = "GET";
    BodyFraming framing = none;
    std::uint64_t length = 0;
    bool keep_alive = false;
    std::string_view error{};                // the whole message, when result == error
    const ResponseLimits* limits = nullptr;  // nullptr: the defaults
    // Optional checks of the head (when done).
    int status = 0;  // 0: not checked
    int minor = 1;
    bool check_reason = false;
    std::string_view reason{};
    std::string_view field{};  // empty: not checked
    std::string_view value{};

    constexpr Row to(std::string_view m) const {
        Row r = *this;
        r.method = m;
        return r;
    }
    constexpr Row with(const ResponseLimits& l) const {
        Row r = *this;
        r.limits = &l;
        return r;
    }
    constexpr Row head(int s, int m, std::string_view why) const {
        Row r = *this;
        r.status = s;
        r.minor = m;
        r.check_reason = true;
        r.reason = why;
        return r;
    }
    constexpr Row has(std::string_view f, std::string_view v) const {
        Row r = *this;
        r.field = f;
        r.value = v;
        return r;
    }
};

void PrintTo(const Row& r, std::ostream* os) { *os << r.name; }

constexpr Row ok(std::string_view name, std::string_view raw, BodyFraming framing, bool keep_alive,
                 std::uint64_t length = 0) {
    return {
        .name = name, .raw = raw, .framing = framing, .length = length, .keep_alive = keep_alive};
}

constexpr Row err(std::string_view name, std::string_view raw, std::string_view error) {
    return {.name = name, .raw = raw, .result = Result::error, .error = error};
}

constexpr Row more(std::string_view name, std::string_view raw) {
    return {.name = name, .raw = raw, .result = Result::need_more};
}

const ResponseLimits kDefault;
const ResponseLimits kThreeFields{.max_fields = 3};
const ResponseLimits kHead47{.max_head_bytes = 47};
const ResponseLimits kHead48{.max_head_bytes = 48};

std::string many_fields(std::size_t n) {
    std::string s = "HTTP/1.1 200 OK\r\n";
    for (std::size_t i = 0; i < n; ++i) s += "X-Field-" + std::to_string(i) + ": v\r\n";
    return s + "Content-Length: 1\r\n\r\n";  // one more field
}
const std::string k128Fields = many_fields(127);
const std::string k129Fields = many_fields(128);
const std::string kLongLine = "HTTP/1.1 200 " + std::string(70000, 'a');

#define OK11 "HTTP/1.1 200 OK\r\n"
#define OK10 "HTTP/1.0 200 OK\r\n"

// The 48-byte head the limit rows use.
#define HEAD48 OK11 "Content-Length: 5\r\nX: 12345\r\n\r\n"
static_assert(sizeof(HEAD48) - 1 == 48);

// clang-format off
const Row kRows[] = {
    // Status line (RFC 9112 4, 2.3; RFC 9110 15).
    ok("http11", OK11 "Content-Length: 5\r\n\r\n", length, true, 5).head(200, 1, "OK"),
    ok("http10", OK10 "Content-Length: 5\r\n\r\n", length, false, 5).head(200, 0, "OK"),
    ok("empty_reason", "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", length, true).head(200, 1, ""),
    ok("no_space_after_code", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", length, true).head(200, 1, ""),
    ok("reason_spaces_tabs_obs_text", "HTTP/1.1 404 Not \t\xC3\xA9t\xE9 \r\nContent-Length: 0\r\n\r\n", length, true).head(404, 1, "Not \t\xC3\xA9t\xE9 "),
    ok("reason_leading_space_kept", "HTTP/1.1 200  OK\r\nContent-Length: 0\r\n\r\n", length, true).head(200, 1, " OK"),
    ok("status_100_lowest", "HTTP/1.1 100 Continue\r\n\r\n", none, true).head(100, 1, "Continue"),
    ok("status_599_highest", "HTTP/1.1 599 X\r\nContent-Length: 0\r\n\r\n", length, true).head(599, 1, "X"),
    err("http2_version", "HTTP/2.0 200 OK\r\n\r\n", "unsupported HTTP version"),
    err("http12_version", "HTTP/1.2 200 OK\r\n\r\n", "unsupported HTTP version"),
    err("http09_version", "HTTP/0.9 200 OK\r\n\r\n", "unsupported HTTP version"),
    err("http2_short_version", "HTTP/2 200 OK\r\n\r\n", "malformed status line"),
    err("lowercase_version", "http/1.1 200 OK\r\n\r\n", "malformed status line"),
    err("version_without_minor", "HTTP/1 200 OK\r\n\r\n", "malformed status line"),
    err("two_digit_minor", "HTTP/1.10 200 OK\r\n\r\n", "malformed status line"),
    err("not_http", "<html><body>hello</body></html>\r\n\r\n", "malformed status line"),
    err("tls_record", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "malformed status line"),
    err("empty_line_before_status", "\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "malformed status line"),
    err("status_only_version", "HTTP/1.1\r\n\r\n", "malformed status line"),
    err("two_digit_status", "HTTP/1.1 20 OK\r\n\r\n", "malformed status line"),
    err("four_digit_status", "HTTP/1.1 2000 OK\r\n\r\n", "malformed status line"),
    err("status_with_letter", "HTTP/1.1 2x0 OK\r\n\r\n", "malformed status line"),
    err("two_spaces_before_status", "HTTP/1.1  200 OK\r\n\r\n", "malformed status line"),
    err("tab_before_status", "HTTP/1.1\t200 OK\r\n\r\n", "malformed status line"),
    err("status_099", "HTTP/1.1 099 Low\r\n\r\n", "status code out of range"),
    err("status_600", "HTTP/1.1 600 High\r\n\r\n", "status code out of range"),
    err("status_999", "HTTP/1.1 999 High\r\n\r\n", "status code out of range"),
    err("ctl_in_reason", "HTTP/1.1 200 O\x01K\r\n\r\n", "invalid byte in reason phrase"),
    err("del_in_reason", "HTTP/1.1 200 O\x7fK\r\n\r\n", "invalid byte in reason phrase"),
    err("nul_in_reason", "HTTP/1.1 200 O\0K\r\n\r\n"sv, "invalid byte in reason phrase"),

    // Lines (RFC 9112 2.2): CRLF or a bare LF; a bare CR is refused.
    ok("lf_line_endings", "HTTP/1.1 200 OK\nContent-Length: 2\n\n", length, true, 2).head(200, 1, "OK"),
    ok("mixed_line_endings", "HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\n", length, true, 2),
    ok("lf_then_crlf_end", "HTTP/1.1 204 No Content\n\r\n", none, true),
    err("bare_cr_in_reason", "HTTP/1.1 200 O\rK\r\n\r\n", "bare CR in response head"),
    err("bare_cr_ends_status_line", "HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n", "bare CR in response head"),
    err("bare_cr_in_value", OK11 "X: a\rb\r\n\r\n", "bare CR in response head"),
    err("cr_cr_lf", OK11 "X: a\r\r\n\r\n", "bare CR in response head"),
    err("bare_cr_in_name", OK11 "X\r: a\r\n\r\n", "bare CR in response head"),
    err("cr_alone_as_empty_line", OK11 "X: a\r\n\r\r\n", "bare CR in response head"),

    // Field lines (RFC 9112 5, RFC 9110 5.1-5.6).
    ok("value_ows_trimmed", OK11 "X-A: \t a  b \t\r\nContent-Length: 0\r\n\r\n", length, true).has("x-a", "a  b"),
    ok("value_without_ows", OK11 "X-A:b\r\nContent-Length: 0\r\n\r\n", length, true).has("X-A", "b"),
    ok("empty_value", OK11 "X-A:\r\nContent-Length: 0\r\n\r\n", length, true).has("X-A", ""),
    ok("whitespace_only_value", OK11 "X-A:  \t \r\nContent-Length: 0\r\n\r\n", length, true).has("X-A", ""),
    ok("obs_text_value", OK11 "X-A: caf\xC3\xA9 \x80\xff\r\nContent-Length: 0\r\n\r\n", length, true).has("X-A", "caf\xC3\xA9 \x80\xff"),
    ok("token_chars_in_name", OK11 "!#$%&'*+-.^_`|~09az: v\r\nContent-Length: 0\r\n\r\n", length, true).has("!#$%&'*+-.^_`|~09az", "v"),
    ok("colon_in_value", OK11 "Location: http://h:8/x\r\nContent-Length: 0\r\n\r\n", length, true).has("location", "http://h:8/x"),
    ok("fields_at_limit", k128Fields, length, true, 1).has("X-Field-126", "v"),
    ok("three_fields_at_limit", OK11 "A: 1\r\nB: 2\r\nContent-Length: 0\r\n\r\n", length, true).with(kThreeFields),
    err("too_many_fields", k129Fields, "too many header fields"),
    err("four_fields_over_limit", OK11 "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", "too many header fields").with(kThreeFields),
    err("space_before_colon", OK11 "Content-Length : 5\r\n\r\n", "whitespace before a field's colon"),
    err("tab_before_colon", OK11 "X\t: 5\r\n\r\n", "whitespace before a field's colon"),
    err("space_in_name", OK11 "X Y: z\r\n\r\n", "malformed field name"),
    err("empty_name", OK11 ": z\r\n\r\n", "malformed field name"),
    err("no_colon", OK11 "Xyz\r\n\r\n", "malformed field name"),
    err("separator_in_name", OK11 "X(y): z\r\n\r\n", "malformed field name"),
    err("obs_text_in_name", OK11 "X\xC3\xA9: z\r\n\r\n", "malformed field name"),
    err("obs_fold", OK11 "X: a\r\n b\r\n\r\n", "obs-fold in response head"),
    err("obs_fold_tab", OK11 "X: a\r\n\tb\r\n\r\n", "obs-fold in response head"),
    err("space_before_first_field", OK11 " X: a\r\n\r\n", "obs-fold in response head"),
    err("nul_in_value", OK11 "X: a\0b\r\n\r\n"sv, "invalid byte in field value"),
    err("ctl_in_value", OK11 "X: a\x01" "b\r\n\r\n", "invalid byte in field value"),
    err("esc_in_long_value", OK11 "X: 0123456789abcdef\x1b" "0123456789\r\n\r\n", "invalid byte in field value"),
    err("del_in_value", OK11 "X: a\x7f" "b\r\n\r\n", "invalid byte in field value"),

    // Head size (ResponseLimits::max_head_bytes).
    ok("head_at_limit", HEAD48, length, true, 5).with(kHead48),
    err("head_over_limit", HEAD48, "response head larger than 47 bytes").with(kHead47),
    err("line_never_ends", kLongLine, "response head larger than 65536 bytes"),

    // Framing (RFC 9112 6.3).
    ok("head_request_ignores_length", OK11 "Content-Length: 100\r\n\r\n", none, true).to("HEAD"),
    ok("head_request_ignores_chunked", OK11 "Transfer-Encoding: chunked\r\n\r\n", none, true).to("HEAD"),
    ok("head_request_without_length", OK11 "\r\n", none, true).to("HEAD"),
    ok("http10_head_request", OK10 "\r\n", none, false).to("HEAD"),
    ok("continue_100", "HTTP/1.1 100 Continue\r\n\r\n", none, true),
    ok("early_hints_103", "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n", none, true).has("link", "</a.css>; rel=preload"),
    ok("switching_protocols_101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", none, false),
    ok("no_content_204", "HTTP/1.1 204 No Content\r\n\r\n", none, true),
    ok("not_modified_304_ignores_length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n", none, true),
    ok("connect_200_is_tunnel", "HTTP/1.1 200 Connection established\r\n\r\n", none, false).to("CONNECT"),
    ok("connect_200_ignores_framing", "HTTP/1.1 200 OK\r\nContent-Length: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", none, false).to("CONNECT"),
    ok("connect_407_has_body", "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 5\r\n\r\n", length, true, 5).to("CONNECT"),
    ok("content_length", OK11 "Content-Length: 42\r\n\r\n", length, true, 42),
    ok("content_length_zero", OK11 "Content-Length: 0\r\n\r\n", length, true, 0),
    ok("content_length_name_case", OK11 "content-LENGTH: 7\r\n\r\n", length, true, 7),
    ok("content_length_list_identical", OK11 "Content-Length: 5, 5,5\r\n\r\n", length, true, 5),
    ok("content_length_repeated_identical", OK11 "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", length, true, 5),
    ok("content_length_leading_zeros", OK11 "Content-Length: 007\r\n\r\n", length, true, 7),
    ok("content_length_max", OK11 "Content-Length: 9223372036854775807\r\n\r\n", length, true, 9223372036854775807u),
    ok("chunked", OK11 "Transfer-Encoding: chunked\r\n\r\n", chunked, true),
    ok("chunked_case_insensitive", OK11 "transfer-encoding: Chunked\r\n\r\n", chunked, true),
    ok("gzip_then_chunked", OK11 "Transfer-Encoding: gzip, chunked\r\n\r\n", chunked, true),
    ok("gzip_then_chunked_two_fields", OK11 "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", chunked, true),
    ok("coding_with_parameter", OK11 "Transfer-Encoding: x-foo; a=1, chunked\r\n\r\n", chunked, true),
    ok("te_without_chunked_until_close", OK11 "Transfer-Encoding: gzip\r\n\r\n", until_close, false),
    ok("neither_until_close", OK11 "Server: x\r\n\r\n", until_close, false),
    ok("http10_neither_until_close", OK10 "Connection: keep-alive\r\n\r\n", until_close, false),
    err("length_and_chunked", OK11 "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "Content-Length and Transfer-Encoding together"),
    err("chunked_and_length", OK11 "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", "Content-Length and Transfer-Encoding together"),
    err("length_and_te_in_head_response", OK11 "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "Content-Length and Transfer-Encoding together").to("HEAD"),
    err("length_and_gzip", OK11 "Content-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\n", "Content-Length and Transfer-Encoding together"),
    err("chunked_then_gzip", OK11 "Transfer-Encoding: chunked, gzip\r\n\r\n", "chunked must be the final transfer coding, once"),
    err("chunked_then_gzip_two_fields", OK11 "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n", "chunked must be the final transfer coding, once"),
    err("chunked_twice", OK11 "Transfer-Encoding: chunked, chunked\r\n\r\n", "chunked must be the final transfer coding, once"),
    err("chunked_twice_two_fields", OK11 "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "chunked must be the final transfer coding, once"),
    err("chunked_with_parameter", OK11 "Transfer-Encoding: chunked;x=1\r\n\r\n", "malformed Transfer-Encoding"),
    err("coding_not_token", OK11 "Transfer-Encoding: gz ip, chunked\r\n\r\n", "malformed Transfer-Encoding"),
    err("te_in_http10", OK10 "Transfer-Encoding: chunked\r\n\r\n", "Transfer-Encoding in an HTTP/1.0 response"),
    err("conflicting_length_list", OK11 "Content-Length: 5, 6\r\n\r\n", "conflicting Content-Length values"),
    err("conflicting_length_fields", OK11 "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", "conflicting Content-Length values"),
    err("conflicting_length_in_304", "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "conflicting Content-Length values"),
    err("length_empty", OK11 "Content-Length: \r\n\r\n", "malformed Content-Length"),
    err("length_negative", OK11 "Content-Length: -1\r\n\r\n", "malformed Content-Length"),
    err("length_plus_sign", OK11 "Content-Length: +5\r\n\r\n", "malformed Content-Length"),
    err("length_hex", OK11 "Content-Length: 0x5\r\n\r\n", "malformed Content-Length"),
    err("length_inner_space", OK11 "Content-Length: 5 5\r\n\r\n", "malformed Content-Length"),
    err("length_empty_list_element", OK11 "Content-Length: 5,,5\r\n\r\n", "malformed Content-Length"),
    err("length_trailing_comma", OK11 "Content-Length: 5,\r\n\r\n", "malformed Content-Length"),
    err("length_over_int64", OK11 "Content-Length: 9223372036854775808\r\n\r\n", "malformed Content-Length"),
    err("length_19_nines", OK11 "Content-Length: 9999999999999999999\r\n\r\n", "malformed Content-Length"),
    err("length_20_digits", OK11 "Content-Length: 00000000000000000005\r\n\r\n", "malformed Content-Length"),

    // Persistence (RFC 9112 9.3).
    ok("http11_connection_close", OK11 "Content-Length: 0\r\nConnection: close\r\n\r\n", length, false),
    ok("http11_close_in_list", OK11 "Content-Length: 0\r\nConnection: Upgrade, CLOSE\r\n\r\n", length, false),
    ok("http11_close_in_second_field", OK11 "Connection: keep-alive\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", length, false),
    ok("http10_keep_alive", OK10 "Content-Length: 0\r\nConnection: Keep-Alive\r\n\r\n", length, true),
    ok("http10_keep_alive_close_wins", OK10 "Content-Length: 0\r\nConnection: keep-alive, close\r\n\r\n", length, false),
    ok("http10_204_closes", "HTTP/1.0 204 No Content\r\n\r\n", none, false),
    ok("chunked_close", OK11 "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n", chunked, false),

    // Heads still arriving.
    more("nothing", ""),
    more("version_prefix", "HTT"),
    more("status_line_without_end", "HTTP/1.1 200 OK"),
    more("status_line_cr", "HTTP/1.1 200 OK\r"),
    more("fields_without_end", OK11 "Content-Length: 5\r\n"),
    more("last_cr_of_head", OK11 "Content-Length: 5\r\n\r"),
    more("at_limit_without_end", "HTTP/1.1 200 OK\r\nX: 1234567890123456789012345\r\n").with(kHead47),
};
// clang-format on

class ResponseParserTable : public testing::TestWithParam<Row> {};

// Parses `bytes` from a buffer of exactly their size (so ASan sees any read past the end).
HeadParse parse_exact(std::string_view bytes, const Row& row, ResponseHead& head) {
    const std::vector<char> buf(bytes.begin(), bytes.end());
    return parse_response_head(std::string_view(buf.data(), buf.size()), row.method,
                               row.limits ? *row.limits : kDefault, head);
}

void expect_row(const Row& row, const HeadParse& p, const ResponseHead& head) {
    ASSERT_EQ(p.result, row.result) << p.error;
    if (row.result == Result::error) {
        EXPECT_EQ(p.error, row.error);
        EXPECT_EQ(p.consumed, 0u);
    }
    if (row.result != Result::done) {
        EXPECT_EQ(head.size(), 0u);
        EXPECT_EQ(head.status(), 0);
        return;
    }
    EXPECT_EQ(p.consumed, row.raw.size());
    EXPECT_EQ(head.raw(), row.raw);
    EXPECT_EQ(p.framing, row.framing);
    EXPECT_EQ(p.content_length, row.length);
    EXPECT_EQ(p.keep_alive, row.keep_alive);
    EXPECT_TRUE(p.error.empty());
    if (row.status) {
        EXPECT_EQ(head.status(), row.status);
        EXPECT_EQ(head.version_minor(), row.minor);
    }
    if (row.check_reason) {
        EXPECT_EQ(head.reason(), row.reason);
    }
    if (!row.field.empty()) {
        EXPECT_TRUE(head.has_header(row.field));
        EXPECT_EQ(head.header(row.field), row.value);
    }
}

TEST_P(ResponseParserTable, Whole) {
    const Row& row = GetParam();
    ResponseHead head;
    expect_row(row, parse_exact(row.raw, row, head), head);
}

TEST_P(ResponseParserTable, BodyAfter) {
    const Row& row = GetParam();
    if (row.result == Result::need_more) GTEST_SKIP() << "more bytes would finish the head";
    ResponseHead head;
    const std::string bytes = std::string(row.raw) + "0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n";
    const HeadParse p = parse_exact(bytes, row, head);
    expect_row(row, p, head);
    if (p.result == Result::done) {
        EXPECT_EQ(bytes.substr(p.consumed, 3), "0\r\n");
    }
}

// The prefix lengths to try: all of them, but for a head of over 4 KiB (whose every prefix
// would take seconds) a sample, every length around the default limit, and the last bytes.
std::vector<std::size_t> prefix_lengths(std::size_t n) {
    std::vector<std::size_t> out;
    for (std::size_t k = 0; k < n; ++k) {
        const bool near_limit =
            k + 4 >= kDefault.max_head_bytes && k <= kDefault.max_head_bytes + 4;
        if (n <= 4096 || k % 61 == 0 || near_limit || k + 8 >= n) out.push_back(k);
    }
    return out;
}

TEST_P(ResponseParserTable, EveryPrefix) {
    const Row& row = GetParam();
    ResponseHead head;
    for (std::size_t k : prefix_lengths(row.raw.size())) {
        const HeadParse p = parse_exact(row.raw.substr(0, k), row, head);
        if (row.result == Result::error && p.result == Result::error) {
            EXPECT_EQ(p.error, row.error) << "prefix of " << k << " bytes";
            continue;
        }
        ASSERT_EQ(p.result, Result::need_more) << "prefix of " << k << " bytes: " << p.error;
        EXPECT_EQ(p.consumed, 0u);
        EXPECT_EQ(head.size(), 0u);
    }
    expect_row(row, parse_exact(row.raw, row, head), head);
}

TEST_P(ResponseParserTable, ReusedHead) {
    const Row& row = GetParam();
    ResponseHead head;
    const HeadParse big = parse_exact(k128Fields, Row{}, head);
    ASSERT_EQ(big.result, Result::done);
    expect_row(row, parse_exact(row.raw, row, head), head);
}

INSTANTIATE_TEST_SUITE_P(Rfc9112, ResponseParserTable, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<Row>& i) {
                             return std::string(i.param.name);
                         });

TEST(ResponseParser, HeaderLookupIsCaseInsensitiveAndKeepsOrder) {
    ResponseHead head;
    const HeadParse p = parse_response_head(
        "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nContent-Length: 0\r\nset-COOKIE: b=2\r\n"
        "X-Empty:\r\nSET-COOKIE:c=3 \r\n\r\n",
        "GET", ResponseLimits{}, head);
    ASSERT_EQ(p.result, Result::done) << p.error;
    EXPECT_EQ(head.header("set-cookie"), "a=1");
    EXPECT_EQ(head.header("CONTENT-length"), "0");
    EXPECT_EQ(head.header_values("Set-Cookie"),
              (std::vector<std::string_view>{"a=1", "b=2", "c=3"}));
    EXPECT_TRUE(head.header_values("Missing").empty());
    EXPECT_TRUE(head.has_header("x-empty"));
    EXPECT_EQ(head.header("x-empty"), "");
    EXPECT_FALSE(head.has_header("Missing"));
    EXPECT_EQ(head.header("Missing"), "");
    EXPECT_FALSE(head.has_header("Set-Cookie2"));
    ASSERT_EQ(head.size(), 5u);
    EXPECT_EQ(head.name(2), "set-COOKIE");  // as received
    EXPECT_EQ(head.value(4), "c=3");
    std::vector<std::string> seen;
    head.for_each([&](std::string_view n, std::string_view v) {
        seen.push_back(std::string(n) + "=" + std::string(v));
    });
    EXPECT_EQ(seen, (std::vector<std::string>{"Set-Cookie=a=1", "Content-Length=0",
                                              "set-COOKIE=b=2", "X-Empty=", "SET-COOKIE=c=3"}));
}

TEST(ResponseParser, HeadOwnsItsBytes) {
    ResponseHead head;
    std::string in = "HTTP/1.1 200 OK\r\nX-A: b\r\nContent-Length: 0\r\n\r\n";
    ASSERT_EQ(parse_response_head(in, "GET", ResponseLimits{}, head).result, Result::done);
    std::fill(in.begin(), in.end(), '#');
    EXPECT_EQ(head.reason(), "OK");
    EXPECT_EQ(head.header("X-A"), "b");
}

TEST(ResponseParser, ReusesTheHeadsStorage) {
    ResponseHead head;
    ASSERT_EQ(
        parse_response_head(k129Fields, "GET", ResponseLimits{.max_fields = 200}, head).result,
        Result::done);
    const char* const storage = head.raw().data();
    const HeadParse p = parse_response_head("HTTP/1.1 204 No Content\r\nX: y\r\n\r\n", "GET",
                                            ResponseLimits{}, head);
    ASSERT_EQ(p.result, Result::done);
    EXPECT_EQ(head.raw().data(), storage);
    EXPECT_EQ(head.size(), 1u);
    EXPECT_EQ(head.header("X"), "y");
    EXPECT_EQ(head.status(), 204);
}

TEST(ResponseParser, InterimThenFinalResponseOnOneConnection) {
    const std::string_view in =
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s>\r\n\r\n"
        "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nhi";
    ResponseHead head;
    std::vector<int> statuses;
    std::size_t at = 0;
    for (;;) {
        const HeadParse p = parse_response_head(in.substr(at), "POST", ResponseLimits{}, head);
        ASSERT_EQ(p.result, Result::done) << p.error;
        at += p.consumed;
        statuses.push_back(head.status());
        if (head.status() >= 200) {
            EXPECT_EQ(p.framing, length);
            EXPECT_EQ(in.substr(at, p.content_length), "hi");
            break;
        }
        EXPECT_EQ(p.framing, none);
    }
    EXPECT_EQ(statuses, (std::vector<int>{100, 103, 201}));
}

TEST(ResponseParser, HostileHeadIsRefusedBeforeTheLimitWhenTheFirstBytesTellAlready) {
    ResponseHead head;
    const HeadParse p = parse_response_head("SSH-2.0-OpenSSH", "GET", ResponseLimits{}, head);
    EXPECT_EQ(p.result, Result::error);
    EXPECT_EQ(p.error, "malformed status line");
}

}  // namespace

}  // namespace vela
