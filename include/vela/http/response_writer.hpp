#pragma once
// Serializes a Response as HTTP/1.1 bytes straight into a connection's output buffer.

#include <string_view>

#include "vela/base/buffer.hpp"
#include "vela/http/response.hpp"

namespace vela {

/// How write_response() frames a response for its connection and request.
struct WriteOptions {
    /// The cached Date value (DateCache::get()).
    std::string_view date;
    /// True when the connection stays open afterwards.
    bool keep_alive = true;
    /// True when the request was HTTP/1.0 (keep-alive must then be announced).
    bool http10 = false;
    /// True for HEAD: headers as for GET, no body bytes.
    bool head = false;
    /// The body follows as a stream (Response::streaming()): announce chunked transfer
    /// coding instead of a Content-Length (or neither for HTTP/1.0, which reads to close).
    bool streamed = false;
    /// The Content-Length to announce when not -1 (a file body, sent after the head).
    std::int64_t length = -1;
};

/// The status code sent for `s`: its own, or 500 for a value outside 100-999.
constexpr int wire_status(Status s) noexcept {
    const int c = code(s);
    return c < 100 || c > 999 ? 500 : c;
}
/// False for the statuses whose responses have no body (1xx, 204, 304; RFC 9110 8.6).
constexpr bool status_has_body(int wire_code) noexcept {
    return wire_code >= 200 && wire_code != 204 && wire_code != 304;
}

/// Appends the status line, Server, Date, Content-Type, the response's own headers,
/// Content-Length, Connection when needed, the empty line and the body to `out`.
void write_response(Buffer& out, const Response& r, const WriteOptions& o);

/// Appends "HTTP/1.1 100 Continue\r\n\r\n" (an interim response).
void write_continue(Buffer& out);

/// Appends one piece of a streamed body: a chunk (size, CRLF, data, CRLF) or the raw bytes.
void write_chunk(Buffer& out, std::string_view data, bool chunked);

/// Appends the last chunk and the empty trailer section ("0\r\n\r\n").
void write_last_chunk(Buffer& out);

/// Appends the last chunk, the trailer fields of `trailers` that may be sent
/// (trailer_field_allowed), and the empty line that ends the trailer section.
void write_last_chunk(Buffer& out, const Response::TrailerFields* trailers);

/// True when a field may travel as a trailer (RFC 9110 6.5.1): a token name, a value without
/// CR, LF or NUL, and none of the fields that frame, route, authenticate, control caches or
/// describe the content (Content-Length, Transfer-Encoding, Host, Content-Type, Set-Cookie,
/// Authorization, Cache-Control, Trailer, hop-by-hop fields, HTTP/2 pseudo-fields...).
bool trailer_field_allowed(std::string_view name, std::string_view value) noexcept;

}  // namespace vela
