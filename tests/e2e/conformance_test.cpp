// RFC 9112 conformance over a real socket: one table row per case, the raw bytes sent, the
// status expected (or none: the server just closes), and whether the connection must close.
// After every row a fresh connection must still get 200 on GET /. The rows complement
// bad_input_test.cpp (none repeats one of its rows): request smuggling in the known HTTP/1.1
// shapes, line endings, control bytes, field syntax, limits, percent-encoding, path
// traversal, foreign protocol prefaces, requests cut short, and pipelining after an error.
// Where the RFC leaves a choice, the row's comment says which one vela takes and why.

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e/client.hpp"
#include "e2e/sound.hpp"

namespace vela::e2e {
namespace {

using namespace std::string_literals;

// What the connection must do after the response.
enum class Conn {
    close,  // "Connection: close" and the server closes (nothing after is answered)
    keep,   // stays open and in sync: the next request on it is answered correctly
    any,    // either is correct (a routing verdict; framing is intact)
};

// How the bytes are sent.
enum class Send {
    whole,     // one send(2)
    bytewise,  // one byte per send(2): the parser must reach the same verdict incrementally
    then_fin,  // one send(2), then a half-close: the request ends where the bytes end
};

// Which server the row talks to.
enum class Server {
    defaults,  // ParserLimits defaults
    small,     // the small limits of small_limits() below
};

struct Case {
    const char* name;
    std::string raw;
    int status;                  // 0: no response at all, the server closes
    Conn conn = Conn::close;     // ignored when status is 0
    const char* body = nullptr;  // expected response body, when set
    Send send = Send::whole;
    Server server = Server::defaults;
};

void small_limits(ParserLimits& l) {
    l.max_request_line = 128;
    l.max_header_bytes = 256;
    l.max_headers = 8;
    l.max_body = 64;
    l.max_chunk_line = 16;
}

const std::string kHost = "Host: localhost\r\n";
// Appended to requests that must be rejected: if the server ever answered it, the rejected
// request's framing leaked into the next request (desync / smuggling).
const std::string kSmuggled = "GET /users/666 HTTP/1.1\r\nHost: localhost\r\n\r\n";
const std::string kChunkedHello = "5\r\nhello\r\n0\r\n\r\n";

std::string post(const std::string& fields, const std::string& body) {
    return "POST /echo HTTP/1.1\r\n" + kHost + fields + "\r\n" + body;
}
std::string get(const std::string& target, const std::string& fields = kHost) {
    return "GET " + target + " HTTP/1.1\r\n" + fields + "\r\n";
}
std::string headers(int n) {
    std::string r;
    for (int i = 0; i < n; ++i) r += "X-H" + std::to_string(i) + ": v\r\n";
    return r;
}

std::vector<Case> smuggling_cases() {
    return {
        // --- Content-Length and Transfer-Encoding together (RFC 9112 6.1, 6.3 rule 3) ---
        // Any Transfer-Encoding with Content-Length is refused, whatever the coding.
        {"cl_with_te_identity",
         post("Content-Length: 5\r\nTransfer-Encoding: identity\r\n", "hello") + kSmuggled, 400},
        {"te_in_http10_with_cl",
         "POST /echo HTTP/1.0\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nhello" +
             kSmuggled,
         400},
        // --- Transfer-Encoding spelled oddly ---
        // Whitespace before the colon is never tolerated (RFC 9112 5.1 MUST reject with 400):
        // a lenient peer might strip it and see framing that vela would not.
        {"te_space_before_colon",
         post("Transfer-Encoding : chunked\r\n", kChunkedHello) + kSmuggled, 400},
        {"te_tab_before_colon", post("Transfer-Encoding\t: chunked\r\n", kChunkedHello) + kSmuggled,
         400},
        {"cl_space_before_colon", post("Content-Length : 5\r\n", "hello") + kSmuggled, 400},
        // OWS around a field value is not part of it (RFC 9112 5): these are plain chunked.
        {"te_trailing_space", post("Transfer-Encoding: chunked \r\n", kChunkedHello), 200,
         Conn::keep, "hello"},
        {"te_tab_value", post("Transfer-Encoding:\tchunked\r\n", kChunkedHello), 200, Conn::keep,
         "hello"},
        // Coding names and field names are case-insensitive (RFC 9112 7, RFC 9110 5.1).
        {"te_uppercase_value", post("Transfer-Encoding: CHUNKED\r\n", kChunkedHello), 200,
         Conn::keep, "hello"},
        {"te_lowercase_name", post("transfer-encoding: chunked\r\n", kChunkedHello), 200,
         Conn::keep, "hello"},
        // chunked must be the final coding, else the length is unknowable: 400 and close
        // (RFC 9112 6.3 rule 4).
        {"te_xchunked", post("Transfer-Encoding: xchunked\r\n", kChunkedHello) + kSmuggled, 400},
        {"te_chunked_identity",
         post("Transfer-Encoding: chunked, identity\r\n", kChunkedHello) + kSmuggled, 400},
        {"te_identity_only", post("Transfer-Encoding: identity\r\n", "") + kSmuggled, 400},
        {"te_quoted_chunked", post("Transfer-Encoding: \"chunked\"\r\n", kChunkedHello) + kSmuggled,
         400},
        {"te_empty_value", post("Transfer-Encoding: \r\n", kChunkedHello) + kSmuggled, 400},
        // Vertical tab is a CTL, not whitespace (RFC 9110 5.5).
        {"te_vertical_tab",
         post("Transfer-Encoding:\x0b"
              "chunked\r\n",
              kChunkedHello) +
             kSmuggled,
         400},
        // Repeated fields combine into one list (RFC 9110 5.3): chunked twice is refused, and
        // chunked followed by another field line is not last.
        {"te_duplicate_fields",
         post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", kChunkedHello) +
             kSmuggled,
         400},
        {"te_chunked_then_identity_field",
         post("Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", kChunkedHello) +
             kSmuggled,
         400},
        // An empty list element is ignored (RFC 9110 5.6.1 requires it), so an empty second
        // field leaves chunked last: the body is chunked.
        {"te_chunked_then_empty_field",
         post("Transfer-Encoding: chunked\r\nTransfer-Encoding:\r\n", kChunkedHello), 200,
         Conn::keep, "hello"},
        // Well-framed (chunked is last) but gzip is not a coding vela decodes: 501 (RFC 9112
        // 6.1), and the connection closes since the body is not read.
        {"te_gzip_field_then_chunked_field",
         post("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", kChunkedHello) +
             kSmuggled,
         501},
        // --- Content-Length values (RFC 9110 8.6: 1*DIGIT) ---
        // Leading zeros are digits: allowed.
        {"cl_leading_zeros", post("Content-Length: 005\r\n", "hello"), 200, Conn::keep, "hello"},
        {"cl_surrounding_ows", post("Content-Length: \t 5 \t\r\n", "hello"), 200, Conn::keep,
         "hello"},
        {"cl_space_inside", post("Content-Length: 5 5\r\n", "hello") + kSmuggled, 400},
        {"cl_trailing_comma", post("Content-Length: 5,\r\n", "hello") + kSmuggled, 400},
        {"cl_empty", post("Content-Length: \r\n", "hello") + kSmuggled, 400},
        {"cl_beyond_uint64", post("Content-Length: 18446744073709551616\r\n", "hello") + kSmuggled,
         400},
        // Strict choice: at most 19 digits (every such value fits in 64 bits), so even a
        // zero-padded small value longer than that is refused rather than risk overflow.
        {"cl_twenty_digits", post("Content-Length: 00000000000000000005\r\n", "hello") + kSmuggled,
         400},
        // Fits in 64 bits but exceeds max_body.
        {"cl_huge_fits_uint64", post("Content-Length: 9999999999999999999\r\n", "") + kSmuggled,
         413},
        // A GET may carry a body; it is read as body, never as the next request.
        {"get_with_body",
         "GET /users/1 HTTP/1.1\r\n" + kHost +
             "Content-Length: " + std::to_string(kSmuggled.size()) + "\r\n\r\n" + kSmuggled,
         200, Conn::keep, "1"},
        // --- Chunked framing (RFC 9112 7.1) ---
        {"chunk_size_uint64_max",
         post("Transfer-Encoding: chunked\r\n", "ffffffffffffffff\r\nhello\r\n0\r\n\r\n") +
             kSmuggled,
         413},
        {"chunk_size_negative",
         post("Transfer-Encoding: chunked\r\n", "-5\r\nhello\r\n0\r\n\r\n") + kSmuggled, 400},
        {"chunk_size_0x_prefix",
         post("Transfer-Encoding: chunked\r\n", "0x5\r\nhello\r\n0\r\n\r\n") + kSmuggled, 400},
        {"chunk_size_leading_space",
         post("Transfer-Encoding: chunked\r\n", " 5\r\nhello\r\n0\r\n\r\n") + kSmuggled, 400},
        {"chunk_size_empty", post("Transfer-Encoding: chunked\r\n", "\r\nhello\r\n0\r\n\r\n"), 400},
        {"chunk_size_leading_zeros",
         post("Transfer-Encoding: chunked\r\n", "0005\r\nhello\r\n0000\r\n\r\n"), 200, Conn::keep,
         "hello"},
        {"chunk_size_uppercase_hex",
         post("Transfer-Encoding: chunked\r\n", "A\r\n0123456789\r\n0\r\n\r\n"), 200, Conn::keep,
         "0123456789"},
        // Strict: after the size only BWS ";" may start an extension (RFC 9112 7.1.1), so
        // "5 xyz" or a bare trailing space is refused rather than read as size 5.
        {"chunk_size_then_garbage",
         post("Transfer-Encoding: chunked\r\n", "5 xyz\r\nhello\r\n0\r\n\r\n") + kSmuggled, 400},
        {"chunk_size_trailing_space",
         post("Transfer-Encoding: chunked\r\n", "5 \r\nhello\r\n0\r\n\r\n") + kSmuggled, 400},
        {"chunk_size_two_numbers",
         post("Transfer-Encoding: chunked\r\n", "5 6\r\nhello\r\n0\r\n\r\n") + kSmuggled, 400},
        // Extensions are parsed and ignored (RFC 9112 7.1.1).
        {"chunk_extension",
         post("Transfer-Encoding: chunked\r\n", "5;name=value\r\nhello\r\n0;x\r\n\r\n"), 200,
         Conn::keep, "hello"},
        {"chunk_extension_bare_lf",
         post("Transfer-Encoding: chunked\r\n", "5;a\nhello\r\n0\r\n\r\n") + kSmuggled, 400},
        {"chunk_extension_nul",
         post("Transfer-Encoding: chunked\r\n", "5;a\0b\r\nhello\r\n0\r\n\r\n"s) + kSmuggled, 400},
        {"chunk_data_shorter",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhel\r\n0\r\n\r\n") + kSmuggled, 400},
        {"chunk_data_without_crlf",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello0\r\n\r\n") + kSmuggled, 400},
        {"chunk_data_bare_lf",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello\n0\r\n\r\n") + kSmuggled, 400},
        // --- Trailers (RFC 9112 7.1.2): checked like header fields, then discarded ---
        {"trailer_valid",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\nX-T: v\r\n\r\n"), 200,
         Conn::keep, "hello"},
        {"trailer_no_colon",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\nX-T\r\n\r\n") + kSmuggled, 400},
        {"trailer_nul",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\nX-T: a\0b\r\n\r\n"s) +
             kSmuggled,
         400},
        {"trailer_space_before_colon",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\nX-T : v\r\n\r\n") + kSmuggled,
         400},
        {"trailer_empty_name",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n: v\r\n\r\n") + kSmuggled, 400},
        {"trailer_bare_lf",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\nX-T: v\n\r\n") + kSmuggled,
         400},
        {"final_crlf_bare_lf",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\n") + kSmuggled, 400},
    };
}

std::vector<Case> syntax_cases() {
    return {
        // --- Line endings (RFC 9112 2.2) ---
        // Empty lines before the request line are ignored (the RFC's SHOULD).
        {"leading_empty_lines", "\r\n\r\n" + get("/users/1"), 200, Conn::keep, "1"},
        // Strict choice: a bare LF is never a line ending (the RFC MAY accept it).
        {"leading_bare_lf", "\n" + get("/users/1"), 400},
        {"all_bare_lf", "GET / HTTP/1.1\nHost: localhost\n\n" + kSmuggled, 400},
        // A bare CR is rejected (RFC 9112 2.2: reject, or replace with SP; vela rejects).
        {"bare_cr_as_empty_line", "GET / HTTP/1.1\r\n" + kHost + "\r\r\n\r\n" + kSmuggled, 400},
        {"cr_cr_lf", "GET / HTTP/1.1\r\nHost: localhost\r\r\n\r\n" + kSmuggled, 400},
        {"bare_cr_in_name", "GET / HTTP/1.1\r\n" + kHost + "X\rA: b\r\n\r\n" + kSmuggled, 400},
        // Whitespace between the start line and the first field: RFC 9112 2.2 lets a server
        // reject the message; vela does (and treats any leading-whitespace line as obs-fold).
        {"space_before_first_field", "GET / HTTP/1.1\r\n Host: localhost\r\n\r\n" + kSmuggled, 400},
        {"obs_fold_tab", "GET / HTTP/1.1\r\n" + kHost + "X-A: one\r\n\ttwo\r\n\r\n", 400},
        // --- Control bytes: NUL, 0x01, DEL (RFC 9110 5.5, RFC 9112 3) ---
        {"nul_first_byte", "\0"s + get("/"), 400},
        {"nul_in_method", "G\0ET / HTTP/1.1\r\n"s + kHost + "\r\n", 400},
        {"nul_in_target", "GET /a\0b HTTP/1.1\r\n"s + kHost + "\r\n", 400},
        {"nul_in_version", "GET / HTTP/1.1\0\r\n"s + kHost + "\r\n", 400},
        {"ctl_01_in_method", "GE\x01T / HTTP/1.1\r\n" + kHost + "\r\n", 400},
        {"ctl_01_in_target", "GET /a\x01 HTTP/1.1\r\n" + kHost + "\r\n", 400},
        {"del_in_target", "GET /a\x7f HTTP/1.1\r\n" + kHost + "\r\n", 400},
        {"ctl_01_in_value", "GET / HTTP/1.1\r\n" + kHost + "X-A: a\x01z\r\n\r\n", 400},
        {"del_in_value", "GET / HTTP/1.1\r\n" + kHost + "X-A: a\x7fz\r\n\r\n", 400},
        {"form_feed_in_value", "GET / HTTP/1.1\r\n" + kHost + "X-A: a\x0cz\r\n\r\n", 400},
        {"ctl_01_in_name",
         "GET / HTTP/1.1\r\n" + kHost +
             "X\x01"
             "A: b\r\n\r\n",
         400},
        {"nul_in_host", "GET / HTTP/1.1\r\nHost: local\0host\r\n\r\n"s, 400},
        // obs-text (0x80-0xFF) is allowed in a field value (RFC 9110 5.5) and passed on opaque.
        {"obs_text_in_value", "GET /users/1 HTTP/1.1\r\n" + kHost + "X-A: caf\xc3\xa9\r\n\r\n", 200,
         Conn::keep, "1"},
        // Bytes outside RFC 3986 must be percent-encoded in the target.
        {"utf8_in_target", "GET /caf\xc3\xa9 HTTP/1.1\r\n" + kHost + "\r\n", 400},
        {"backslash_in_target", "GET /a\\b HTTP/1.1\r\n" + kHost + "\r\n", 400},
        // --- Request line shape (RFC 9112 3): exactly one SP between the three parts ---
        // Strict choice: no other whitespace (the RFC lets a lenient parser accept HTAB etc.).
        {"tab_after_method", "GET\t/ HTTP/1.1\r\n" + kHost + "\r\n", 400},
        {"leading_space", " GET / HTTP/1.1\r\n" + kHost + "\r\n", 400},
        {"space_after_version", "GET / HTTP/1.1 \r\n" + kHost + "\r\n", 400},
        {"two_spaces_before_version", "GET /  HTTP/1.1\r\n" + kHost + "\r\n", 400},
        {"slash_in_method", "GE/T / HTTP/1.1\r\n" + kHost + "\r\n", 400},
        // Methods are case-sensitive (RFC 9110 9.1): "get" is an unknown method, 501. The
        // framing is intact, so the connection may stay open.
        {"lowercase_method", "get / HTTP/1.1\r\n" + kHost + "\r\n", 501, Conn::any},
        {"unknown_long_method", std::string(1000, 'A') + " / HTTP/1.1\r\n" + kHost + "\r\n", 501,
         Conn::any},
        // --- Versions (RFC 9112 2.3) ---
        // A higher minor version is answered as the highest one vela speaks (1.1).
        {"http_1_2", "GET /users/1 HTTP/1.2\r\n" + kHost + "\r\n", 200, Conn::keep, "1"},
        {"http_0_9_version_token", "GET / HTTP/0.9\r\n" + kHost + "\r\n", 505},
        {"version_two_digit_minor", "GET / HTTP/1.10\r\n" + kHost + "\r\n", 400},
        {"version_without_minor", "GET / HTTP/1\r\n" + kHost + "\r\n", 400},
        // An HTTP/0.9 request is a request line without a version. No 0.9 response exists
        // (it would have no status line), so vela answers 400 once the line is complete.
        {"http_0_9_request", "GET /\r\n", 400},
        // The HTTP/2 connection preface (RFC 9113 3.4) parses as a request line with version
        // HTTP/2.0 and is answered 505 (RFC 9110 15.6.6: major version not supported) when h2c
        // is switched off (the small server). The "SM" part is never read. With h2c on (the
        // default) the preface switches to HTTP/2: see H2cSwitchesByDefault below.
        {"h2_preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"s, 505, Conn::close, nullptr, Send::whole,
         Server::small},
        // With h2c upgrades switched off, an upgrade request (RFC 7540 3.2) is served as plain
        // HTTP/1.1: the upgrade is optional for the server (RFC 9110 7.8).
        {"h2c_upgrade_ignored",
         get("/users/1", kHost + "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                                 "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"),
         200, Conn::keep, "1", Send::whole, Server::small},
        // An Upgrade to anything else (or an h2c upgrade without HTTP2-Settings) is an
        // ordinary request on the default server too.
        {"upgrade_other_ignored",
         get("/users/1", kHost + "Connection: Upgrade\r\nUpgrade: foo/1\r\n"), 200, Conn::keep,
         "1"},
        {"h2c_upgrade_without_settings",
         get("/users/1", kHost + "Connection: Upgrade\r\nUpgrade: h2c\r\n"), 200, Conn::keep, "1"},
        // --- Field names (RFC 9110 5.1: token) ---
        {"name_with_space", "GET / HTTP/1.1\r\n" + kHost + "Foo Bar: x\r\n\r\n", 400},
        {"name_with_paren", "GET / HTTP/1.1\r\n" + kHost + "Foo(: x\r\n\r\n", 400},
        {"name_with_high_byte", "GET / HTTP/1.1\r\n" + kHost + "Foo\x80: x\r\n\r\n", 400},
        {"name_with_slash", "GET / HTTP/1.1\r\n" + kHost + "Foo/Bar: x\r\n\r\n", 400},
        {"colon_only_line", "GET / HTTP/1.1\r\n" + kHost + ":\r\n\r\n", 400},
        {"tab_before_colon", "GET / HTTP/1.1\r\nHost\t: localhost\r\n\r\n", 400},
        // An empty field value is allowed.
        {"empty_value", "GET /users/1 HTTP/1.1\r\n" + kHost + "X-Empty:\r\n\r\n", 200, Conn::keep,
         "1"},
        // --- Expect (RFC 9110 10.1.1) ---
        {"expect_continue_and_other",
         post("Expect: 100-continue, foo\r\nContent-Length: 5\r\n", "hello"), 417},
        // The expectation token is case-insensitive.
        {"expect_continue_mixed_case",
         post("Expect: 100-Continue\r\nContent-Length: 5\r\n", "hello"), 200, Conn::keep, "hello"},
    };
}

std::vector<Case> limit_cases() {
    const std::string at_line = "GET /" + std::string(8192 - 14, 'a') + " HTTP/1.1";
    return {
        // --- Defaults: request line 8 KiB, header section 16 KiB, 100 fields ---
        // The request line limit counts the whole line; a method cannot be told from a
        // target before the line ends, so an over-long line is 414 whatever makes it long.
        {"long_method", std::string(10000, 'A') + " / HTTP/1.1\r\n" + kHost + "\r\n", 414},
        {"request_line_at_limit", at_line + "\r\n" + kHost + "\r\n", 404, Conn::keep},
        {"long_header_name",
         "GET / HTTP/1.1\r\n" + kHost + std::string(17 * 1024, 'N') + ": v\r\n\r\n", 431},
        // Field lines (CRLFs included) total exactly 16384 bytes: accepted; one more is not.
        {"header_section_at_limit",
         "GET /users/1 HTTP/1.1\r\n" + kHost + "X-Big: " + std::string(16358, 'v') + "\r\n\r\n",
         200, Conn::keep, "1"},
        {"header_section_over_limit",
         "GET / HTTP/1.1\r\n" + kHost + "X-Big: " + std::string(16359, 'v') + "\r\n\r\n", 431},
        {"headers_at_limit", "GET /users/1 HTTP/1.1\r\n" + kHost + headers(99) + "\r\n", 200,
         Conn::keep, "1"},
        // --- Small limits: line 128, header section 256, 8 fields, body 64, chunk line 16 ---
        {"small_long_method", std::string(200, 'A') + " / HTTP/1.1\r\n" + kHost + "\r\n", 414,
         Conn::close, nullptr, Send::whole, Server::small},
        {"small_long_target", "GET /" + std::string(200, 'a') + " HTTP/1.1\r\n" + kHost + "\r\n",
         414, Conn::close, nullptr, Send::whole, Server::small},
        {"small_long_header_name",
         "GET / HTTP/1.1\r\n" + kHost + std::string(300, 'N') + ": v\r\n\r\n", 431, Conn::close,
         nullptr, Send::whole, Server::small},
        {"small_long_header_value",
         "GET / HTTP/1.1\r\n" + kHost + "X-A: " + std::string(300, 'v') + "\r\n\r\n", 431,
         Conn::close, nullptr, Send::whole, Server::small},
        {"small_too_many_headers", "GET / HTTP/1.1\r\n" + kHost + headers(8) + "\r\n", 431,
         Conn::close, nullptr, Send::whole, Server::small},
        {"small_headers_at_limit", "GET /users/1 HTTP/1.1\r\n" + kHost + headers(7) + "\r\n", 200,
         Conn::keep, "1", Send::whole, Server::small},
        {"small_long_trailer",
         post("Transfer-Encoding: chunked\r\n", "0\r\nX-T: " + std::string(300, 't') + "\r\n\r\n"),
         431, Conn::close, nullptr, Send::whole, Server::small},
        {"small_body_over_limit", post("Content-Length: 65\r\n", std::string(65, 'b')), 413,
         Conn::close, nullptr, Send::whole, Server::small},
    };
}

std::vector<Case> target_cases() {
    return {
        // --- Percent-encoding (RFC 3986 2.1): an escape is '%' and two hex digits ---
        {"lone_percent", "GET /a% HTTP/1.1\r\n" + kHost + "\r\n", 400},
        {"percent_non_hex_in_query", "GET /?q=%zz HTTP/1.1\r\n" + kHost + "\r\n", 400},
        {"percent_percent", "GET /%%41 HTTP/1.1\r\n" + kHost + "\r\n", 400},
        // %2F is decoded before routing, so it separates segments like '/'.
        {"encoded_slash", get("/users/1%2F2"), 404, Conn::keep},
        {"encoded_letter", get("/users/%41"), 200, Conn::keep, "A"},
        // --- Path traversal: a "." or ".." segment, raw or decoded, is refused (400) ---
        {"dotdot_root", get("/../"), 400},
        {"dotdot_encoded_upper_with_slash", get("/%2E%2E%2F"), 400},
        {"dotdot_trailing", get("/a/.."), 400},
        {"dot_encoded", get("/%2e/users/1"), 400},
        {"dotdot_half_encoded", get("/files/.%2e/etc/passwd"), 400},
        {"dotdot_encoded_separators", get("/files/a%2f..%2f..%2fetc"), 400},
        {"dotdot_absolute_form", get("http://localhost/files/../etc"), 400},
        {"dotdot_without_slash", get("../etc/passwd"), 400},
        // Decoded once only: "%252e%252e" reaches the router as the literal "%2e%2e".
        {"double_encoded_dotdot", get("/files/%252e%252e/x"), 200, Conn::keep, "%2e%2e/x"},
        // ".." inside a segment is an ordinary name, and a query is not a path.
        {"dotdot_inside_name", get("/files/a..b"), 200, Conn::keep, "a..b"},
        {"dotdot_in_query", get("/users/1?p=../../etc"), 200, Conn::keep, "1"},
        // --- Host (RFC 9112 3.2) and absolute-form (3.2.2) ---
        {"host_with_at", get("/", "Host: user@localhost\r\n"), 400},
        {"host_with_inner_tab", get("/", "Host: local\thost\r\n"), 400},
        {"host_bad_port", get("/", "Host: localhost:8o\r\n"), 400},
        {"host_two_ports", get("/", "Host: localhost:1:2\r\n"), 400},
        // An empty Host is what a client sends when the target has no authority: valid.
        {"host_empty", get("/users/1", "Host:\r\n"), 200, Conn::keep, "1"},
        {"host_ows", get("/users/1", "Host: \t localhost \t\r\n"), 200, Conn::keep, "1"},
        {"host_ipv6", get("/users/1", "Host: [::1]:8080\r\n"), 200, Conn::keep, "1"},
        // HTTP/1.0 needs no Host; without keep-alive the server closes after answering.
        {"http10_without_host", "GET /users/1 HTTP/1.0\r\n\r\n", 200, Conn::close, "1"},
        // The absolute-form authority replaces Host, which may then disagree.
        {"absolute_form", get("http://localhost/users/7", "Host: other\r\n"), 200, Conn::keep, "7"},
        {"absolute_form_empty_authority", get("http:///users/1"), 400},
        {"absolute_form_userinfo", get("http://user@localhost/users/1"), 400},
        {"absolute_form_bad_port", get("http://localhost:x/users/1"), 400},
        {"absolute_form_other_scheme", get("ftp://localhost/users/1"), 400},
        {"absolute_form_space_in_authority", "GET http://a b/ HTTP/1.1\r\n" + kHost + "\r\n", 400},
    };
}

std::vector<Case> cut_short_cases() {
    // RFC 9112 8: an incomplete request may get an error response before the close; vela
    // just closes (nobody is left to read it).
    return {
        {"eof_mid_request_line", "GET /users/1 HT", 0, Conn::close, nullptr, Send::then_fin},
        {"eof_mid_head", "GET / HTTP/1.1\r\nHost: localhost\r\n", 0, Conn::close, nullptr,
         Send::then_fin},
        {"eof_mid_cl_body", post("Content-Length: 10\r\n", "hello"), 0, Conn::close, nullptr,
         Send::then_fin},
        {"eof_mid_chunk", post("Transfer-Encoding: chunked\r\n", "5\r\nhel"), 0, Conn::close,
         nullptr, Send::then_fin},
        {"eof_before_last_chunk", post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n"), 0,
         Conn::close, nullptr, Send::then_fin},
        {"eof_before_final_crlf", post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n"), 0,
         Conn::close, nullptr, Send::then_fin},
        {"eof_mid_final_crlf", post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r"), 0,
         Conn::close, nullptr, Send::then_fin},
        // A complete request before the cut is still answered; then the server closes.
        {"eof_after_complete_request", get("/users/1") + post("Content-Length: 10\r\n", "hel"), 200,
         Conn::close, "1", Send::then_fin},
        // Pipelined after a bad request: never answered.
        {"pipelined_after_bad_version",
         "GET / HTTP/1.x\r\n" + kHost + "\r\n" + kSmuggled + kSmuggled, 400},
        {"pipelined_after_bad_chunk",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\nZ\r\n") + kSmuggled + kSmuggled,
         400},
    };
}

std::vector<Case> bytewise_cases() {
    // A few smuggling shapes one byte per write: same verdicts from the incremental parser.
    return {
        {"bytewise_te_and_cl",
         post("Transfer-Encoding: chunked\r\nContent-Length: 4\r\n", kChunkedHello) + kSmuggled,
         400, Conn::close, nullptr, Send::bytewise},
        {"bytewise_te_space_before_colon",
         post("Transfer-Encoding : chunked\r\n", kChunkedHello) + kSmuggled, 400, Conn::close,
         nullptr, Send::bytewise},
        {"bytewise_te_xchunked", post("Transfer-Encoding: xchunked\r\n", kChunkedHello) + kSmuggled,
         400, Conn::close, nullptr, Send::bytewise},
        {"bytewise_duplicate_cl",
         post("Content-Length: 5\r\nContent-Length: 5\r\n", "hello") + kSmuggled, 400, Conn::close,
         nullptr, Send::bytewise},
        {"bytewise_chunk_size_overflow",
         post("Transfer-Encoding: chunked\r\n", "100000000000000005\r\nhello\r\n0\r\n\r\n") +
             kSmuggled,
         400, Conn::close, nullptr, Send::bytewise},
        {"bytewise_trailer_no_colon",
         post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\nX-T\r\n\r\n") + kSmuggled, 400,
         Conn::close, nullptr, Send::bytewise},
        {"bytewise_te_trailing_space", post("Transfer-Encoding: chunked \r\n", kChunkedHello), 200,
         Conn::keep, "hello", Send::bytewise},
    };
}

std::vector<Case> all_cases() {
    std::vector<Case> all;
    for (auto* part : {smuggling_cases, syntax_cases, limit_cases, target_cases, cut_short_cases,
                       bytewise_cases}) {
        for (Case& c : part()) all.push_back(std::move(c));
    }
    return all;
}

// Every path parameter the traversal routes were called with.
struct SeenParams {
    std::mutex mu;
    std::vector<std::string> values;
    void add(std::string_view v) {
        std::lock_guard<std::mutex> lock(mu);
        values.emplace_back(v);
    }
    std::vector<std::string> snapshot() {
        std::lock_guard<std::mutex> lock(mu);
        return values;
    }
};

bool has_dotdot_segment(std::string_view v) {
    std::size_t i = 0;
    while (i <= v.size()) {
        std::size_t j = v.find('/', i);
        if (j == std::string_view::npos) j = v.size();
        if (v.substr(i, j - i) == "..") return true;
        i = j + 1;
    }
    return false;
}

void add_routes(App& app, SeenParams& seen) {
    add_basic_routes(app);
    app.get("/files/{*path}", [&seen](Request& r) {
        seen.add(r.param("path"));
        return std::string(r.param("path"));
    });
}

class ConformanceTest : public ::testing::Test {
  protected:
    void SetUp() override {
        for (App* a : {&app, &small}) {
            quick_options(a->options());
            add_routes(*a, seen);
        }
        small_limits(small.options().limits);
        small.options().http2.h2c_prior_knowledge = false;
        small.options().http2.h2c_upgrade = false;
        start_app(app);
        start_app(small);
    }

    void run(const Case& k) {
        App& a = k.server == Server::small ? small : app;
        Client c = Client::tcp(a.port());
        ASSERT_TRUE(c.connected());
        switch (k.send) {
            case Send::whole:
                ASSERT_TRUE(c.send(k.raw)) << c.error();
                break;
            case Send::bytewise:
                c.send_in_pieces(k.raw, 1, 0ms);  // the server may close after its verdict
                break;
            case Send::then_fin:
                ASSERT_TRUE(c.send(k.raw)) << c.error();
                c.shutdown_write();
                break;
        }
        if (k.status == 0) {
            const Client::End end = c.wait_end(2s);
            EXPECT_TRUE(end == Client::End::eof || end == Client::End::reset)
                << "expected a silent close, got " << end << ": " << c.pending();
            return;
        }
        auto r = c.read_final_response();
        ASSERT_TRUE(r) << "no response: " << c.error();
        EXPECT_EQ(r->status, k.status) << "body: " << r->body;
        if (k.body) {
            EXPECT_EQ(r->body, k.body);
        }
        const bool closes = k.conn == Conn::close || (k.conn == Conn::any && r->announces_close());
        if (closes) {
            // After a half-close the end of input is what closes, not the response.
            if (k.send != Send::then_fin) {
                EXPECT_TRUE(r->announces_close()) << "no Connection: close";
            }
            EXPECT_TRUE(c.closed_by_peer()) << "connection left open; pending: " << c.pending();
        } else {
            EXPECT_FALSE(r->announces_close());
            ASSERT_TRUE(c.send(get_request("/users/1")));
            auto next = c.read_response();
            ASSERT_TRUE(next) << "out of sync: " << c.error();
            EXPECT_EQ(next->status, 200);
            EXPECT_EQ(next->body, "1");
        }
    }

    SeenParams seen;
    App app;
    App small;
};

TEST_F(ConformanceTest, Table) {
    const std::vector<Case> cases = all_cases();
    std::set<std::string> names;
    for (const Case& k : cases) {
        SCOPED_TRACE(k.name);
        EXPECT_TRUE(names.insert(k.name).second) << "duplicate row name";
        run(k);
        expect_server_sound(k.server == Server::small ? small : app);
    }
    // With bad_input_test.cpp's table (57 rows) the suites cover well over 80 cases.
    EXPECT_GE(cases.size(), 80u);
    for (const std::string& v : seen.snapshot()) EXPECT_FALSE(has_dotdot_segment(v)) << v;
}

// Regression: a loop with no connections sleeps in epoll_wait with no deadline, and its clock
// used to be read only after the completions of that wait had run. The first connection after
// a quiet spell then got its header deadline from the time the loop fell asleep, already
// past, and was closed on the next tick without an answer if its request had not arrived
// with the connection (seen as a rare "no response: eof" in the table above).
// With h2c on (the default), the preface where a request line was expected and an
// "Upgrade: h2c" request both switch the connection to HTTP/2 (RFC 9113 3.3, RFC 7540 3.2).
TEST_F(ConformanceTest, H2cSwitchesByDefault) {
    {
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"s + "\0\0\0\x04\0\0\0\0\0"s));
        ASSERT_EQ(c.wait_end(2s), Client::End::data);
        // The server's connection preface is a SETTINGS frame (type 4 at byte 3).
        ASSERT_GE(c.pending().size(), 9u) << c.pending();
        EXPECT_EQ(c.pending()[3], '\x04');
        EXPECT_EQ(c.pending().substr(0, 4).find("HTTP"), std::string::npos);
    }
    {
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send(get("/users/1", kHost + "Connection: Upgrade, HTTP2-Settings\r\n"
                                                   "Upgrade: h2c\r\nHTTP2-Settings: \r\n")));
        auto r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        EXPECT_EQ(r->status, 101);
        EXPECT_TRUE(iequal(r->header("Upgrade"), "h2c"));
    }
    expect_server_sound(app);
}

TEST(ConformanceIdleTest, FirstConnectionAfterAQuietSpellIsServed) {
    App app;
    quick_options(app.options());
    app.options().header_timeout = Ms{400};
    add_basic_routes(app);
    start_app(app);
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(round);
        std::this_thread::sleep_for(1200ms);  // the loop sleeps: no connection, no timer
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.connected());
        std::this_thread::sleep_for(100ms);  // accepted before the request arrives
        ASSERT_TRUE(c.send(get_request("/users/1")));
        auto r = c.read_response();
        ASSERT_TRUE(r) << "no response: " << c.error();
        EXPECT_EQ(r->status, 200);
    }
}

// Path traversal against a catch-all and a one-segment parameter: whatever the encoding,
// no handler is ever called with a ".." segment in its parameter.
TEST(ConformanceRoutingTest, TraversalNeverReachesAParameter) {
    App app;
    quick_options(app.options());
    SeenParams seen;
    app.get("/files/{*path}", [&seen](Request& r) {
        seen.add(r.param("path"));
        return std::string(r.param("path"));
    });
    app.get("/users/{id}", [&seen](Request& r) {
        seen.add(r.param("id"));
        return std::string(r.param("id"));
    });
    start_app(app);
    struct Attempt {
        const char* target;
        int status;
        const char* param;  // what the handler must have received (200 only)
    };
    const Attempt attempts[] = {
        {"/files/../etc/passwd", 400, nullptr},
        {"/files/a/../../etc/passwd", 400, nullptr},
        {"/files/..", 400, nullptr},
        {"/files/%2e%2e/etc/passwd", 400, nullptr},
        {"/files/%2E%2E%2Fetc%2Fpasswd", 400, nullptr},
        {"/files/..%2fetc", 400, nullptr},
        {"/files/.%2E/etc", 400, nullptr},
        {"/files/a/%2e/b", 400, nullptr},
        {"/files/a%2F%2E%2E%2Fb", 400, nullptr},
        {"/users/..", 400, nullptr},
        {"/users/%2e%2e", 400, nullptr},
        {"/users/..%2F", 400, nullptr},
        {"/users/%2e%2e%2fadmin", 400, nullptr},
        // Decoded once: the handler sees the literal escapes, which are not dot segments.
        {"/files/%252e%252e/etc", 200, "%2e%2e/etc"},
        {"/users/%252e%252e", 200, "%2e%2e"},
        // Not dot segments: a name containing dots, and the path-parameter trick "..;",
        // which vela does not strip (';' is an ordinary character here).
        {"/files/a..b/c", 200, "a..b/c"},
        {"/files/...", 200, "..."},
        {"/files/..;/etc", 200, "..;/etc"},
        // A decoded '/' in a one-segment parameter makes two segments: no route.
        {"/users/a%2Fb", 404, nullptr},
    };
    for (const Attempt& at : attempts) {
        SCOPED_TRACE(at.target);
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send(get_request(at.target)));
        auto r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        EXPECT_EQ(r->status, at.status) << r->body;
        if (at.param) {
            EXPECT_EQ(r->body, at.param);
        }
    }
    for (const std::string& v : seen.snapshot()) EXPECT_FALSE(has_dotdot_segment(v)) << v;
}

}  // namespace
}  // namespace vela::e2e
