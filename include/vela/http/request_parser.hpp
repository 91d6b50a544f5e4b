#pragma once
// Incremental, zero-copy HTTP/1.1 request parser (RFC 9112).
//
// The parser touches only its input bytes and the Request it fills: no sockets, no
// application. A connection calls parse() with all the bytes it holds for the current
// request, each time more arrive (a request may arrive split at any byte). The parser
// remembers how far it has scanned, so bytes are examined once even when they arrive one at a
// time. Request fields are views into those bytes.
//
// Strict choices where the RFC allows several (each is answered with 400 unless noted):
// - Line endings must be CRLF; a bare LF or bare CR anywhere in the head is rejected.
// - Up to request-line-length bytes of empty lines before the request line are ignored
//   (RFC 9112 2.2).
// - obs-fold, whitespace between a field name and its colon, empty field names, and control
//   bytes (NUL included) in the request line or field values are rejected.
// - Content-Length must be plain digits and appear once (no comma lists, no repeats).
// - Transfer-Encoding with Content-Length, Transfer-Encoding in HTTP/1.0, and chunked not
//   last or repeated are rejected; a coding other than chunked gets 501.
// - A request line that does not end in " HTTP/x.y" is rejected as soon as it is complete.
// - HTTP/1.1 requests need exactly one Host field; Host and an absolute-form authority must
//   be uri-host [":" port] (a bracketed IPv6 literal or a reg-name; no IPvFuture, no
//   userinfo, digits-only port, no port without a host).
// - The target must use RFC 3986 characters only ('#' and raw spaces are rejected);
//   percent escapes must be complete; a decoded NUL or a "." / ".." path segment is rejected.
// - Versions other than HTTP/1.0 and HTTP/1.x get 505; CONNECT gets 501 (not a proxy).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "vela/http/chunked_decoder.hpp"
#include "vela/http/limits.hpp"
#include "vela/http/status.hpp"

namespace vela {

class Request;

/// What parse() found: more bytes are needed, a whole request, or an error (see error()).
enum class ParseResult : std::uint8_t { incomplete, complete, error };

/// Parses HTTP/1.1 requests incrementally from a connection's bytes (see above).
class RequestParser {
  public:
    /// `limits` must outlive the parser.
    explicit RequestParser(const ParserLimits* limits) noexcept : limits_(limits) {}
    /// Sets the limits (for a parser made without them; they must outlive it).
    void set_limits(const ParserLimits* limits) noexcept { limits_ = limits; }

    /// Parses the request that starts at data[0]; `n` bytes are available. On `complete`,
    /// `req` is filled and consumed() tells how many bytes the request occupied. The bytes
    /// may be rewritten (chunked bodies are decoded in place). If `data` moved since the last
    /// call (the buffer grew), the head is re-read from the new location.
    ParseResult parse(char* data, std::size_t n, Request& req);

    /// Bytes of the complete request, including any empty lines before it.
    std::size_t consumed() const noexcept { return consumed_; }
    /// Status to answer after `error`.
    Status error() const noexcept { return error_; }
    /// Human-readable reason for the error (static text).
    std::string_view error_detail() const noexcept { return detail_; }
    /// True once the head is parsed and the body is still arriving.
    bool head_complete() const noexcept {
        return phase_ == Phase::body_length || phase_ == Phase::body_chunked;
    }
    /// True when the head asked for "Expect: 100-continue" (only meaningful after the head).
    bool expects_continue() const noexcept { return expect_continue_; }
    /// True once any byte of the current request has been seen (for timeouts).
    bool started() const noexcept { return scan_ > 0; }
    /// True when the head carried an Upgrade field (only meaningful after the head).
    bool upgrade() const noexcept { return upgrade_; }
    /// After head_complete(): the body is chunked (else it has content_length() bytes).
    bool body_chunked() const noexcept { return phase_ == Phase::body_chunked; }
    /// After head_complete(): the Content-Length of a body that is not chunked.
    std::uint64_t content_length() const noexcept { return content_length_; }
    /// After head_complete(): bytes before the body (the head, and empty lines before it).
    std::size_t head_size() const noexcept { return head_end_; }
    /// After head_complete() with pause_after_body_head: a Content-Length over max_body
    /// (fine only for a streaming route; parsing on answers 413).
    bool body_too_large() const noexcept {
        return phase_ == Phase::body_length && content_length_ > limits_->max_body;
    }
    /// With `on`, parse() returns `incomplete` right after the head of a chunked request
    /// (before decoding any of its body in place) or of one whose Content-Length is over
    /// max_body but within max_streamed_body, so a driver can decide to stream the body
    /// itself; the next call goes on as usual (413 for the latter).
    void pause_after_body_head(bool on) noexcept { pause_body_ = on; }
    /// Prepares for the next request.
    void reset() noexcept;
    /// Checks an origin-form or asterisk-form target (an HTTP/2 :path) by the same rules as a
    /// request line's and sets `req`'s target, path and query; on `error` see error(). The
    /// method must already be set.
    ParseResult parse_target_only(std::string_view target, Request& req);

  private:
    enum class Phase : std::uint8_t { head, body_length, body_chunked, done, error };

    ParseResult fail(Status s, std::string_view detail) noexcept {
        error_ = s;
        detail_ = detail;
        phase_ = Phase::error;
        return ParseResult::error;
    }
    ParseResult find_head_end(const char* data, std::size_t n);
    ParseResult parse_head(char* data, Request& req);
    ParseResult parse_request_line(std::string_view line, Request& req);
    ParseResult parse_target(std::string_view target, Request& req, unsigned seen);
    ParseResult parse_fields(std::string_view fields, Request& req);
    ParseResult parse_body(char* data, std::size_t n, Request& req);

    const ParserLimits* limits_;
    Phase phase_ = Phase::head;
    Status error_ = Status::BadRequest;
    std::string_view detail_;
    const char* last_data_ = nullptr;
    std::size_t scan_ = 0;        // next byte to examine while looking for the head's end
    std::size_t start_ = 0;       // first byte of the request line (after empty lines)
    std::size_t line_start_ = 0;  // first byte of the line being scanned
    std::size_t line_end_ = 0;    // end of the request line (0 until found)
    std::size_t head_end_ = 0;    // one past the empty line ending the head
    std::size_t consumed_ = 0;
    std::uint64_t content_length_ = 0;
    bool expect_continue_ = false;
    bool upgrade_ = false;
    bool pause_body_ = false;
    ChunkedDecoder chunked_;
};

}  // namespace vela

// Request keeps a parser (the HTTP/1.1 driver's state for it), and the parser fills Requests.
#include "vela/http/request.hpp"  // IWYU pragma: export
