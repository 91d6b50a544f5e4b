// Tests for src/http/request_parser.cpp (RFC 9112 sections 2-7).
//
// The table is the test: each row is one request, and every row runs five ways:
//   WholeBuffer       all bytes in one parse() call;
//   SplitInTwo        parse(data, k) then parse(data, n), for every k, on the same buffer
//                     (how a connection feeds a request that arrives in two reads);
//   ByteByByte        parse(data, 1), parse(data, 2), ... parse(data, n);
//   MovedBetweenCalls as SplitInTwo, and
//   MovedEveryByte    as ByteByByte, but the bytes are copied to a new buffer before each
//                     later call and the old one is scribbled over, as when a connection's
//                     buffer grows (the parser must re-read the head).
// A request must give the same outcome whichever way it arrives. Adding a case is one line.
#include "vela/http/request_parser.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "support/parsed_request.hpp"

namespace vela {

// Readable names in failure messages (found by argument-dependent lookup).
static void PrintTo(ParseResult r, std::ostream* os) {
    *os << (r == ParseResult::complete ? "complete"
            : r == ParseResult::error  ? "error"
                                       : "incomplete");
}

namespace {

using namespace std::literals;
using enum Method;

struct Row {
    std::string_view name;
    std::string_view raw;
    ParseResult result;
    int status;  // when result == error
    Method method;
    std::string_view path;
    std::string_view query;
    std::string_view body;
    bool keep_alive;
    int version;
    const ParserLimits* limits = nullptr;  // nullptr: the defaults
    bool check_host = false;
    std::string_view host;

    constexpr Row with(const ParserLimits& l) const {
        Row r = *this;
        r.limits = &l;
        return r;
    }
    constexpr Row host_is(std::string_view h) const {
        Row r = *this;
        r.check_host = true;
        r.host = h;
        return r;
    }
};

void PrintTo(const Row& r, std::ostream* os) { *os << r.name; }

constexpr Row ok(std::string_view name, std::string_view raw, Method m, std::string_view path,
                 std::string_view query = "", std::string_view body = "", bool keep_alive = true,
                 int version = 11) {
    Row r{};
    r.name = name;
    r.raw = raw;
    r.result = ParseResult::complete;
    r.method = m;
    r.path = path;
    r.query = query;
    r.body = body;
    r.keep_alive = keep_alive;
    r.version = version;
    return r;
}

constexpr Row err(std::string_view name, std::string_view raw, int status) {
    Row r{};
    r.name = name;
    r.raw = raw;
    r.result = ParseResult::error;
    r.status = status;
    return r;
}

template <class F>
ParserLimits make_limits(F f) {
    ParserLimits l;
    f(l);
    return l;
}

const ParserLimits kDefault;
const ParserLimits kLine14 = make_limits([](ParserLimits& l) { l.max_request_line = 14; });
const ParserLimits kLine16 = make_limits([](ParserLimits& l) { l.max_request_line = 16; });
const ParserLimits kHeaders9 = make_limits([](ParserLimits& l) { l.max_header_bytes = 9; });
const ParserLimits kThreeHeaders = make_limits([](ParserLimits& l) { l.max_headers = 3; });
const ParserLimits kBody5 = make_limits([](ParserLimits& l) { l.max_body = 5; });
const ParserLimits kChunkLine8 = make_limits([](ParserLimits& l) { l.max_chunk_line = 8; });

#define CHUNKED_POST "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
#define CL_POST "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: "

// clang-format off
const Row kRows[] = {
    // Request line (RFC 9112 3) and target forms (3.2).
    ok("simple_get", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", GET, "/"),
    ok("head", "HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n", HEAD, "/x"),
    ok("unknown_method_is_other", "PURGE /x HTTP/1.1\r\nHost: h\r\n\r\n", other, "/x"),
    ok("options_path", "OPTIONS /x HTTP/1.1\r\nHost: h\r\n\r\n", OPTIONS, "/x"),
    ok("asterisk_form_options", "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", OPTIONS, "*"),
    ok("delete_without_body", "DELETE /x/1 HTTP/1.1\r\nHost: h\r\n\r\n", DELETE, "/x/1"),
    ok("query_string", "GET /s?q=a+b&x=%41 HTTP/1.1\r\nHost: h\r\n\r\n", GET, "/s", "q=a+b&x=%41"),
    ok("empty_query", "GET /s? HTTP/1.1\r\nHost: h\r\n\r\n", GET, "/s", ""),
    ok("query_may_hold_slash_and_question", "GET /s?a=/b?c HTTP/1.1\r\nHost: h\r\n\r\n", GET, "/s", "a=/b?c"),
    ok("percent_decoded_path", "GET /a%20b/%C3%a9 HTTP/1.1\r\nHost: h\r\n\r\n", GET, "/a b/\xC3\xA9"),
    ok("dots_inside_segments", "GET /a..b/.well-known/x. HTTP/1.1\r\nHost: h\r\n\r\n", GET, "/a..b/.well-known/x."),
    ok("absolute_form", "GET http://example.com/p?x=1 HTTP/1.1\r\nHost: other\r\n\r\n", GET, "/p", "x=1").host_is("example.com"),
    ok("absolute_form_without_path", "GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", GET, "/").host_is("example.com"),
    ok("absolute_form_https_port", "GET HTTPS://example.com:8443/a HTTP/1.1\r\nHost: x\r\n\r\n", GET, "/a").host_is("example.com:8443"),
    ok("http1x_minor_is_11", "GET / HTTP/1.7\r\nHost: h\r\n\r\n", GET, "/"),
    ok("leading_crlfs_ignored", "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", GET, "/"),
    ok("request_line_at_limit", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", GET, "/").with(kLine14),
    ok("empty_lines_at_limit", "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", GET, "/").with(kLine16),
    err("asterisk_form_with_get", "GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("asterisk_with_query", "OPTIONS *?x HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("http2_version", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505),
    err("http09_version", "GET / HTTP/0.9\r\n\r\n", 505),
    err("http09_style_line", "GET /\r\n\r\n", 400),
    err("lowercase_version", "GET / http/1.1\r\nHost: h\r\n\r\n", 400),
    err("version_without_minor", "GET / HTTP/1\r\nHost: h\r\n\r\n", 400),
    err("two_digit_minor", "GET / HTTP/1.10\r\nHost: h\r\n\r\n", 400),
    err("space_after_version", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400),
    err("double_space_before_target", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("empty_method", " / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("method_with_separator", "GE(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("connect", "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n", 501),
    err("relative_target", "GET a/b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("fragment_in_target", "GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("space_in_target", "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("control_byte_in_target", "GET /a\x01" "b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("del_in_target", "GET /a\x7f" "b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("non_ascii_in_target", "GET /caf\xC3\xA9 HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("invalid_percent_escape", "GET /a%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("truncated_percent_escape", "GET /a%2 HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("percent_at_end", "GET /a% HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("invalid_escape_in_query", "GET /a?x=%g1 HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("encoded_nul_in_path", "GET /a%00b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("dot_dot_segment", "GET /a/../b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("dot_segment", "GET /a/./b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("trailing_dot_dot", "GET /a/.. HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("encoded_dot_dot", "GET /%2e%2e/etc HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("encoded_dot_dot_mixed", "GET /a/.%2E/b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("encoded_slashes_around_dot_dot", "GET /a%2f..%2fb HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("dot_dot_in_absolute_form", "GET http://h/a/../b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("absolute_form_userinfo", "GET http://u@h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("absolute_form_empty_authority", "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("absolute_form_other_scheme", "GET ftp://h/x HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("request_line_over_limit", "GET /a HTTP/1.1\r\nHost: h\r\n\r\n", 414).with(kLine14),
    err("too_many_empty_lines", "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400).with(kLine16),

    // Host (RFC 9112 3.2) and persistence (9.3).
    ok("host_field_trimmed", "GET / HTTP/1.1\r\nhOsT:  example.com:80 \r\n\r\n", GET, "/").host_is("example.com:80"),
    ok("host_ipv6", "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", GET, "/").host_is("[::1]:8080"),
    ok("host_empty", "GET / HTTP/1.1\r\nHost:\r\n\r\n", GET, "/").host_is(""),
    ok("http10_defaults_to_close", "GET / HTTP/1.0\r\n\r\n", GET, "/", "", "", false, 10),
    ok("http10_keep_alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", GET, "/", "", "", true, 10),
    ok("http10_keep_alive_in_list", "GET / HTTP/1.0\r\nConnection: foo, Keep-Alive\r\n\r\n", GET, "/", "", "", true, 10),
    ok("http10_close_wins", "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", GET, "/", "", "", false, 10),
    ok("http11_connection_close", "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", GET, "/", "", "", false),
    ok("http11_close_in_list", "GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade,CLOSE\r\n\r\n", GET, "/", "", "", false),
    ok("http11_close_in_second_field", "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", GET, "/", "", "", false),
    err("missing_host", "GET / HTTP/1.1\r\n\r\n", 400),
    err("missing_host_with_absolute_form", "GET http://h/ HTTP/1.1\r\n\r\n", 400),
    err("two_hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400),
    err("http10_two_hosts", "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    err("host_with_space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
    err("host_with_slash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
    err("host_with_userinfo", "GET / HTTP/1.1\r\nHost: u@h\r\n\r\n", 400),
    // Regression: Host was checked for its characters only, so these passed (RFC 9112 3.2
    // requires 400 for an invalid Host value).
    err("host_port_not_digits", "GET / HTTP/1.1\r\nHost: h:8o\r\n\r\n", 400),
    err("host_two_ports", "GET / HTTP/1.1\r\nHost: h:1:2\r\n\r\n", 400),
    err("host_port_without_host", "GET / HTTP/1.1\r\nHost: :80\r\n\r\n", 400),
    err("host_unclosed_ipv6", "GET / HTTP/1.1\r\nHost: [::1:80\r\n\r\n", 400),
    err("host_after_ipv6_not_port", "GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n", 400),
    err("host_bracket_in_name", "GET / HTTP/1.1\r\nHost: a]b\r\n\r\n", 400),
    err("host_bad_escape", "GET / HTTP/1.1\r\nHost: a%zz\r\n\r\n", 400),
    err("absolute_form_port_not_digits", "GET http://h:x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    ok("host_empty_port", "GET / HTTP/1.1\r\nHost: h:\r\n\r\n", GET, "/").host_is("h:"),
    ok("host_ipv4", "GET / HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n", GET, "/").host_is("127.0.0.1:80"),
    // Regression: a request line without a version (HTTP/0.9) waited for a header section
    // that never came, and was answered 408 by the header timeout instead of 400.
    err("http09_request_line_alone", "GET /\r\n", 400),

    // Field lines (RFC 9112 5, 2.2).
    ok("field_value_obs_text", "GET / HTTP/1.1\r\nHost: h\r\nX: caf\xC3\xA9\r\n\r\n", GET, "/"),
    ok("field_value_tabs", "GET / HTTP/1.1\r\nHost: h\r\nX:\tv\t\r\n\r\n", GET, "/"),
    ok("headers_at_count_limit", "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n", GET, "/").with(kThreeHeaders),
    ok("header_section_at_limit", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", GET, "/").with(kHeaders9),
    ok("long_field_value_obs_text", "GET / HTTP/1.1\r\nHost: h\r\nX: 0123456789\xC3\xA9\xFF\x80" "abcdefgh\xC3\xA9xyz\r\n\r\n", GET, "/"),
    ok("long_field_value_with_tabs", "GET / HTTP/1.1\r\nHost: h\r\nX: 0123456789abcdef\tghijklmnop\tq\r\n\r\n", GET, "/"),
    err("control_byte_deep_in_long_value", "GET / HTTP/1.1\r\nHost: h\r\nX: 0123456789abcdefghij\x1b" "klmnop\r\n\r\n", 400),
    err("del_deep_in_long_value", "GET / HTTP/1.1\r\nHost: h\r\nX: 0123456789abcdef\x80\x7f" "ghijklmnop\r\n\r\n", 400),
    err("nul_deep_in_long_value", "GET / HTTP/1.1\r\nHost: h\r\nX: 0123456789abcdefghijklmno\0p\r\n\r\n"sv, 400),
    err("obs_fold", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400),
    err("whitespace_before_first_field", "GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400),
    err("space_before_colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400),
    err("tab_before_colon", "GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", 400),
    err("empty_field_name", "GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400),
    err("field_name_with_separator", "GET / HTTP/1.1\r\nHost: h\r\nX(a): v\r\n\r\n", 400),
    err("field_line_without_colon", "GET / HTTP/1.1\r\nHost: h\r\nXv\r\n\r\n", 400),
    err("nul_in_field_value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n"sv, 400),
    err("control_byte_in_field_value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\x01" "b\r\n\r\n", 400),
    err("del_in_field_value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f" "b\r\n\r\n", 400),
    err("bare_cr_in_field_value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400),
    err("bare_cr_ending_field", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\r\n\r\n", 400),
    err("bare_cr_in_request_line", "GET /\r HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("bare_lf_line_endings", "GET / HTTP/1.1\nHost: h\n\n", 400),
    err("bare_lf_after_field", "GET / HTTP/1.1\r\nHost: h\n\r\n", 400),
    err("bare_lf_leading_line", "\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    err("too_many_headers", "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 431).with(kThreeHeaders),
    err("header_section_over_limit", "GET / HTTP/1.1\r\nHost: hh\r\n\r\n", 431).with(kHeaders9),
    err("header_section_over_limit_in_later_line", "GET / HTTP/1.1\r\nHost: h\r\nA: b\r\n\r\n", 431).with(kHeaders9),
    err("unsupported_expectation", CL_POST "2\r\nExpect: something-else\r\n\r\nok", 417),

    // Content-Length (RFC 9112 6.2, 6.3).
    ok("content_length_body", CL_POST "5\r\n\r\nhello", POST, "/p", "", "hello"),
    ok("content_length_zero", CL_POST "0\r\n\r\n", POST, "/p"),
    ok("content_length_leading_zeros", "PUT /p HTTP/1.1\r\nHost: h\r\nContent-Length: 005\r\n\r\nhello", PUT, "/p", "", "hello"),
    ok("content_length_ows", "PATCH /p HTTP/1.1\r\nHost: h\r\nContent-Length: \t5 \r\n\r\nhello", PATCH, "/p", "", "hello"),
    ok("get_with_body", "GET /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc", GET, "/p", "", "abc"),
    ok("body_holding_crlfs", CL_POST "6\r\n\r\n\r\n\r\nab", POST, "/p", "", "\r\n\r\nab"),
    ok("http10_content_length", "POST /p HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi", POST, "/p", "", "hi", false, 10),
    ok("expect_100_continue", CL_POST "2\r\nExpect: 100-continue\r\n\r\nok", POST, "/p", "", "ok"),
    ok("expect_100_continue_any_case", CL_POST "2\r\nExpect: 100-Continue\r\n\r\nok", POST, "/p", "", "ok"),
    ok("body_at_limit", CL_POST "5\r\n\r\nhello", POST, "/p", "", "hello").with(kBody5),
    err("content_length_plus", CL_POST "+5\r\n\r\nhello", 400),
    err("content_length_minus", CL_POST "-5\r\n\r\nhello", 400),
    err("content_length_inner_space", CL_POST "1 0\r\n\r\nhelloworld", 400),
    err("content_length_list", CL_POST "5, 5\r\n\r\nhello", 400),
    err("content_length_twice", CL_POST "5\r\nContent-Length: 5\r\n\r\nhello", 400),
    err("content_length_empty", CL_POST "\r\n\r\n", 400),
    err("content_length_hex", CL_POST "0x5\r\n\r\nhello", 400),
    err("content_length_20_digits", CL_POST "00000000000000000005\r\n\r\nhello", 400),
    err("content_length_over_limit", CL_POST "6\r\n\r\nhello!", 413).with(kBody5),
    err("content_length_huge", CL_POST "9999999999999999999\r\n\r\n", 413),
    err("post_without_length", "POST /p HTTP/1.1\r\nHost: h\r\n\r\n", 411),
    err("put_without_length", "PUT /p HTTP/1.1\r\nHost: h\r\n\r\n", 411),
    err("patch_without_length", "PATCH /p HTTP/1.1\r\nHost: h\r\n\r\n", 411),

    // Transfer-Encoding (RFC 9112 6.1) and the chunked coding (7.1).
    ok("chunked", CHUNKED_POST "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", POST, "/p", "", "hello world"),
    ok("chunked_any_case", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", POST, "/p", "", "hi"),
    ok("chunked_empty_list_items", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ,chunked,\r\n\r\n0\r\n\r\n", POST, "/p"),
    ok("chunked_empty_body", CHUNKED_POST "0\r\n\r\n", POST, "/p"),
    ok("chunked_extensions", CHUNKED_POST "5;a=b;c\r\nhello\r\n0;last=\"x y\"\r\n\r\n", POST, "/p", "", "hello"),
    ok("chunked_extension_bws", CHUNKED_POST "5 ;a=b\r\nhello\r\n0\r\n\r\n", POST, "/p", "", "hello"),
    ok("chunked_trailers", CHUNKED_POST "5\r\nhello\r\n0\r\nX-Sum: 1\r\nY:\r\n\r\n", POST, "/p", "", "hello"),
    ok("chunked_hex_sizes", CHUNKED_POST "A\r\n0123456789\r\nf\r\nabcdefghijklmno\r\n0\r\n\r\n", POST, "/p", "", "0123456789abcdefghijklmno"),
    ok("chunked_leading_zeros", CHUNKED_POST "005\r\nhello\r\n00\r\n\r\n", POST, "/p", "", "hello"),
    ok("chunked_data_holding_crlf", CHUNKED_POST "4\r\n\r\n\r\n\r\n0\r\n\r\n", POST, "/p", "", "\r\n\r\n"),
    ok("chunked_body_at_limit", CHUNKED_POST "2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n", POST, "/p", "", "hello").with(kBody5),
    ok("chunk_line_at_limit", CHUNKED_POST "5;abcdef\r\nhello\r\n0\r\n\r\n", POST, "/p", "", "hello").with(kChunkLine8),
    ok("trailers_at_count_limit", CHUNKED_POST "0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", POST, "/p").with(kThreeHeaders),
    err("te_with_content_length", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400),
    err("content_length_with_te", CL_POST "5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    err("te_in_http10", "POST /p HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    err("te_chunked_then_gzip", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400),
    err("te_gzip_then_chunked", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
    err("te_gzip_then_chunked_in_two_fields", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501),
    err("te_chunked_twice", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400),
    err("te_chunked_in_two_fields", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    err("te_gzip_only", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
    err("te_empty", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n", 400),
    err("te_bad_token", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: g(zip, chunked\r\n\r\n0\r\n\r\n", 400),
    err("chunk_size_overflow", CHUNKED_POST "10000000000000000\r\nx\r\n0\r\n\r\n", 400),
    err("chunk_size_not_hex", CHUNKED_POST "g\r\nhello\r\n0\r\n\r\n", 400),
    err("chunk_size_negative", CHUNKED_POST "-5\r\nhello\r\n0\r\n\r\n", 400),
    err("chunk_size_missing", CHUNKED_POST "\r\nhello\r\n0\r\n\r\n", 400),
    err("chunk_data_without_crlf", CHUNKED_POST "5\r\nhelloX\r\n0\r\n\r\n", 400),
    err("chunk_data_longer_than_size", CHUNKED_POST "3\r\nhello\r\n0\r\n\r\n", 400),
    err("chunk_size_bare_lf", CHUNKED_POST "5\nhello\r\n0\r\n\r\n", 400),
    err("chunk_data_bare_lf", CHUNKED_POST "5\r\nhello\n0\r\n\r\n", 400),
    err("chunk_ext_control_byte", CHUNKED_POST "5;a\x01\r\nhello\r\n0\r\n\r\n", 400),
    err("chunk_line_over_limit", CHUNKED_POST "5;abcdefg\r\nhello\r\n0\r\n\r\n", 400).with(kChunkLine8),
    err("chunk_over_body_limit", CHUNKED_POST "6\r\nhello!\r\n0\r\n\r\n", 413).with(kBody5),
    err("chunks_sum_over_body_limit", CHUNKED_POST "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", 413).with(kBody5),
    err("trailer_obs_fold", CHUNKED_POST "0\r\nX: a\r\n b\r\n\r\n", 400),
    err("trailer_without_colon", CHUNKED_POST "0\r\nXYZ\r\n\r\n", 400),
    err("trailer_space_before_colon", CHUNKED_POST "0\r\nX : a\r\n\r\n", 400),
    err("trailer_nul", CHUNKED_POST "0\r\nX: a\0b\r\n\r\n"sv, 400),
    err("too_many_trailers", CHUNKED_POST "0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", 431).with(kThreeHeaders),
};
// clang-format on

#undef CHUNKED_POST
#undef CL_POST

const char* result_name(ParseResult r) {
    switch (r) {
        case ParseResult::incomplete:
            return "incomplete";
        case ParseResult::complete:
            return "complete";
        case ParseResult::error:
            return "error";
    }
    return "?";
}

// The method token of the request line (after any leading empty lines).
std::string_view method_token(std::string_view raw) {
    while (raw.starts_with("\r\n")) raw.remove_prefix(2);
    return raw.substr(0, raw.find(' '));
}

class RequestParserTable : public testing::TestWithParam<Row> {
  protected:
    const Row& row() const { return GetParam(); }
    const ParserLimits* row_limits() const { return row().limits ? row().limits : &kDefault; }
    std::vector<char> copy() const { return {row().raw.begin(), row().raw.end()}; }

    // Checks the outcome of the call that saw the whole request.
    void expect_final(const RequestParser& p, ParseResult got, const Request& req) const {
        const Row& r = row();
        ASSERT_STREQ(result_name(got), result_name(r.result)) << p.error_detail();
        if (got == ParseResult::error) {
            EXPECT_EQ(code(p.error()), r.status) << p.error_detail();
            return;
        }
        EXPECT_EQ(p.consumed(), r.raw.size());
        EXPECT_EQ(req.method(), r.method);
        EXPECT_EQ(req.method_name(), method_token(r.raw));
        EXPECT_EQ(req.path(), r.path);
        EXPECT_EQ(req.query_string(), r.query);
        EXPECT_EQ(req.body(), r.body);
        EXPECT_EQ(req.keep_alive(), r.keep_alive);
        EXPECT_EQ(req.version(), r.version);
        if (r.check_host) {
            EXPECT_EQ(req.host(), r.host);
        }
    }

    // Checks the outcome of a call that saw only a prefix; true when feeding should go on.
    bool prefix_continues(const RequestParser& p, ParseResult got) const {
        if (got == ParseResult::incomplete) return true;
        if (got == ParseResult::complete) {
            ADD_FAILURE() << "complete before the last byte";
        } else if (row().result != ParseResult::error) {
            ADD_FAILURE() << "error " << code(p.error()) << " on a prefix (" << p.error_detail()
                          << ") of a valid request";
        } else {
            EXPECT_EQ(code(p.error()), row().status) << p.error_detail();
        }
        return false;
    }
};

TEST_P(RequestParserTable, WholeBuffer) {
    std::vector<char> buf = copy();
    RequestParser p(row_limits());
    Request req;
    expect_final(p, p.parse(buf.data(), buf.size(), req), req);
    // The outcome is sticky until reset().
    ParseResult again = p.parse(buf.data(), buf.size(), req);
    EXPECT_STREQ(result_name(again), result_name(row().result));
}

TEST_P(RequestParserTable, SplitInTwo) {
    const std::size_t n = row().raw.size();
    for (std::size_t k = 1; k < n && !HasFailure(); ++k) {
        SCOPED_TRACE("first call sees " + std::to_string(k) + " of " + std::to_string(n));
        std::vector<char> buf = copy();
        RequestParser p(row_limits());
        Request req;
        if (!prefix_continues(p, p.parse(buf.data(), k, req))) continue;
        expect_final(p, p.parse(buf.data(), n, req), req);
    }
}

TEST_P(RequestParserTable, ByteByByte) {
    const std::size_t n = row().raw.size();
    std::vector<char> buf = copy();
    RequestParser p(row_limits());
    Request req;
    for (std::size_t k = 1; k <= n; ++k) {
        SCOPED_TRACE("call sees " + std::to_string(k) + " of " + std::to_string(n));
        ParseResult r = p.parse(buf.data(), k, req);
        if (k == n) {
            expect_final(p, r, req);
        } else if (!prefix_continues(p, r)) {
            return;
        }
    }
}

TEST_P(RequestParserTable, MovedBetweenCalls) {
    const std::string_view raw = row().raw;
    const std::size_t n = raw.size();
    for (std::size_t k = 1; k < n && !HasFailure(); ++k) {
        SCOPED_TRACE("moved after " + std::to_string(k) + " of " + std::to_string(n));
        std::vector<char> first = copy();
        RequestParser p(row_limits());
        Request req;
        if (!prefix_continues(p, p.parse(first.data(), k, req))) continue;
        // The bytes seen so far (possibly rewritten in place) move to a new buffer, and the
        // old one is scribbled over so a stale view shows up as garbage.
        std::vector<char> second(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(k));
        second.insert(second.end(), raw.begin() + static_cast<std::ptrdiff_t>(k), raw.end());
        std::fill(first.begin(), first.end(), '#');
        expect_final(p, p.parse(second.data(), n, req), req);
    }
}

TEST_P(RequestParserTable, MovedEveryByte) {
    const std::string_view raw = row().raw;
    const std::size_t n = raw.size();
    std::deque<std::vector<char>> buffers;  // all kept alive: each one has its own address
    RequestParser p(row_limits());
    Request req;
    for (std::size_t k = 1; k <= n; ++k) {
        SCOPED_TRACE("call sees " + std::to_string(k) + " of " + std::to_string(n));
        std::vector<char> next;
        if (!buffers.empty()) next = buffers.back();
        next.push_back(raw[k - 1]);
        if (!buffers.empty()) std::fill(buffers.back().begin(), buffers.back().end(), '#');
        buffers.push_back(std::move(next));
        ParseResult r = p.parse(buffers.back().data(), k, req);
        if (k == n) {
            expect_final(p, r, req);
        } else if (!prefix_continues(p, r)) {
            return;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Rfc9112, RequestParserTable, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<Row>& i) {
                             return std::string(i.param.name);
                         });

TEST(RequestParserTableSelf, HasEnoughDistinctRows) {
    EXPECT_GE(std::size(kRows), 60u);
    std::vector<std::string_view> names;
    for (const Row& r : kRows) names.push_back(r.name);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

// --- Behaviour that is not a single request's outcome. ---

using Parsed = test::RawRequest;

TEST(RequestParser, ExpectContinueIsKnownOnceTheHeadIsIn) {
    const std::string head =
        "POST /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
        "Content-Length: 5\r\n\r\n";
    Parsed p(head + "hello");
    EXPECT_EQ(p.parse(head.size() - 1), ParseResult::incomplete);
    EXPECT_FALSE(p.parser.head_complete());
    EXPECT_EQ(p.parse(head.size()), ParseResult::incomplete);
    EXPECT_TRUE(p.parser.head_complete());
    EXPECT_TRUE(p.parser.expects_continue());
    EXPECT_EQ(p.parse(), ParseResult::complete);
    EXPECT_EQ(p.req.body(), "hello");
}

TEST(RequestParser, ExpectContinueIsIgnoredInHttp10) {
    Parsed p("POST /u HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    EXPECT_EQ(p.parse(), ParseResult::incomplete);
    EXPECT_TRUE(p.parser.head_complete());
    EXPECT_FALSE(p.parser.expects_continue());
}

TEST(RequestParser, ExpectContinueWithoutBodyAsksForNothing) {
    Parsed p("GET /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n");
    EXPECT_EQ(p.parse(), ParseResult::complete);
    EXPECT_FALSE(p.parser.expects_continue());
}

TEST(RequestParser, PipelinedRequestsParseOneAfterAnother) {
    Parsed p(
        "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
        "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
        "GET /c HTTP/1.1\r\nHost: h\r\n\r\n");
    std::vector<std::string> seen;
    std::size_t off = 0;
    while (off < p.raw.size()) {
        ASSERT_EQ(p.parser.parse(p.raw.data() + off, p.raw.size() - off, p.req),
                  ParseResult::complete);
        seen.push_back(std::string(p.req.path()) + ":" + std::string(p.req.body()));
        off += p.parser.consumed();
        p.parser.reset();
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"/a:", "/b:xyz", "/c:"}));
}

TEST(RequestParser, ResetAfterErrorParsesTheNextRequest) {
    Parsed bad("GET / HTTP/2.0\r\n\r\n");
    ASSERT_EQ(bad.parse(), ParseResult::error);
    EXPECT_EQ(bad.parser.error(), Status::HttpVersionNotSupported);
    EXPECT_FALSE(bad.parser.error_detail().empty());
    bad.parser.reset();
    std::string good = "GET /ok HTTP/1.1\r\nHost: h\r\n\r\n";
    ASSERT_EQ(bad.parser.parse(good.data(), good.size(), bad.req), ParseResult::complete);
    EXPECT_EQ(bad.req.path(), "/ok");
}

// A TLS ClientHello sent to a plain port (and any other byte that cannot start a method) is
// answered as soon as it arrives, not when a line end or the header timeout comes.
TEST(RequestParser, ClientHelloIsRejectedAtTheFirstByte) {
    Parsed hello(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11));
    ASSERT_EQ(hello.parse(1), ParseResult::error);
    EXPECT_EQ(hello.parser.error(), Status::BadRequest);
    Parsed crlf("\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n");  // empty lines first stay legal
    EXPECT_EQ(crlf.parse(1), ParseResult::incomplete);
    EXPECT_EQ(crlf.parse(), ParseResult::complete);
    Parsed late("\r\n\x16\x03");
    EXPECT_EQ(late.parse(), ParseResult::error);
}

// The HTTP/2 driver checks :path with the request line's target rules.
TEST(RequestParser, TargetOnlyUsesTheRequestLineRules) {
    RequestParser p(&kDefault);
    Request req;
    req.set_method(Method::GET, "GET");
    ASSERT_EQ(p.parse_target_only("/a%20b?x=1", req), ParseResult::complete);
    EXPECT_EQ(req.path(), "/a b");
    EXPECT_EQ(req.query_string(), "x=1");
    p.reset();
    EXPECT_EQ(p.parse_target_only("/a/../b", req), ParseResult::error);
    p.reset();
    EXPECT_EQ(p.parse_target_only("http://x/", req), ParseResult::error);
    p.reset();
    EXPECT_EQ(p.parse_target_only(std::string_view("/a\0b", 4), req), ParseResult::error);
    p.reset();
    EXPECT_EQ(p.parse_target_only("", req), ParseResult::error);
}

// Upgrade is flagged for the h2c check; its absence costs nothing.
TEST(RequestParser, UpgradeFieldIsFlagged) {
    Parsed up("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\n\r\n");
    ASSERT_EQ(up.parse(), ParseResult::complete);
    EXPECT_TRUE(up.parser.upgrade());
    Parsed plain("GET / HTTP/1.1\r\nHost: h\r\nReferer: x\r\n\r\n");
    ASSERT_EQ(plain.parse(), ParseResult::complete);
    EXPECT_FALSE(plain.parser.upgrade());
}

TEST(RequestParser, StartedOnceAnyByteIsSeen) {
    Parsed p("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_FALSE(p.parser.started());
    EXPECT_EQ(p.parse(0), ParseResult::incomplete);
    EXPECT_FALSE(p.parser.started());
    EXPECT_EQ(p.parse(1), ParseResult::incomplete);
    EXPECT_TRUE(p.parser.started());
}

TEST(RequestParser, FieldsAreZeroCopyViewsInArrivalOrder) {
    Parsed p("GET /a?b=c HTTP/1.1\r\nHost: h\r\nX-One:  1 \r\nx-two: 2\r\n\r\n");
    ASSERT_EQ(p.parse(), ParseResult::complete);
    const char* begin = p.raw.data();
    const char* end = begin + p.raw.size();
    auto inside = [&](std::string_view v) {
        return v.data() >= begin && v.data() + v.size() <= end;
    };
    EXPECT_TRUE(inside(p.req.path()));
    EXPECT_TRUE(inside(p.req.target()));
    EXPECT_EQ(p.req.target(), "/a?b=c");
    ASSERT_EQ(p.req.headers().size(), 3u);
    EXPECT_EQ(p.req.headers()[1].name, "X-One");
    EXPECT_EQ(p.req.headers()[1].value, "1");
    EXPECT_TRUE(inside(p.req.headers()[1].value));
    EXPECT_EQ(p.req.header("X-TWO"), "2");
}

TEST(RequestParser, ChunkedBodyIsDecodedInPlaceAfterTheHead) {
    const std::string head = "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
    Parsed p(head + "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nGET");
    ASSERT_EQ(p.parse(), ParseResult::complete);
    EXPECT_EQ(p.req.body(), "abcde");
    EXPECT_EQ(p.req.body().data(), p.raw.data() + head.size());
    EXPECT_EQ(p.parser.consumed(), p.raw.size() - 3);  // the next request's bytes stay
}

// Regression: re-reading the head after the buffer moved must not restart the chunked
// decoder, whose earlier chunks were already moved down over their framing.
TEST(RequestParser, ChunkedBodySurvivesBufferMoveAfterFirstChunk) {
    const std::string all =
        "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    const std::size_t first = all.find(" world") - 3;  // through "hello\r\n"
    std::string a = all;
    ParserLimits limits;
    RequestParser parser(&limits);
    Request req;
    ASSERT_EQ(parser.parse(a.data(), first, req), ParseResult::incomplete);
    std::string b = a.substr(0, first) + all.substr(first);  // grown buffer, new address
    a.assign(a.size(), '#');
    ASSERT_EQ(parser.parse(b.data(), b.size(), req), ParseResult::complete)
        << parser.error_detail();
    EXPECT_EQ(req.body(), "hello world");
}

// A driver that may stream bodies (pause_after_body_head): the parser stops after the head
// of a chunked request before decoding in place, and after a Content-Length over max_body
// that a streaming route could take; parsing on goes as without the pause.
TEST(RequestParserPause, StopsAfterTheHeadOfBodiesADriverMayStream) {
    ParserLimits limits;
    limits.max_body = 10;
    limits.max_streamed_body = 1000;
    RequestParser p(&limits);
    p.pause_after_body_head(true);
    Request req;
    std::string chunked =
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3\r\nabc\r\n0\r\n\r\n";
    ASSERT_EQ(p.parse(chunked.data(), chunked.size(), req), ParseResult::incomplete);
    EXPECT_TRUE(p.head_complete());
    EXPECT_TRUE(p.body_chunked());
    EXPECT_EQ(chunked.substr(p.head_size(), 3), "3\r\n");  // not decoded yet
    ASSERT_EQ(p.parse(chunked.data(), chunked.size(), req), ParseResult::complete);
    EXPECT_EQ(req.body(), "abc");

    p.reset();
    std::string big = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 500\r\n\r\nxyz";
    ASSERT_EQ(p.parse(big.data(), big.size(), req), ParseResult::incomplete);
    EXPECT_TRUE(p.body_too_large());
    EXPECT_EQ(p.content_length(), 500u);
    EXPECT_EQ(p.parse(big.data(), big.size(), req), ParseResult::error);
    EXPECT_EQ(p.error(), Status::PayloadTooLarge);

    p.reset();
    std::string huge = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n";
    EXPECT_EQ(p.parse(huge.data(), huge.size(), req), ParseResult::error);  // over both
    EXPECT_EQ(p.error(), Status::PayloadTooLarge);
}

}  // namespace
}  // namespace vela
