#pragma once
// The protocol-neutral half of sending a response: what the response is (a protocol switch,
// a file body with its conditional and range semantics applied, a streamed body, headers
// only), decided once for every driver; the drivers only frame the bytes (HTTP/1.1 heads and
// chunks, HTTP/2 HEADERS and DATA). File bodies go through one FileCursor and fail one way.

#include <cstdint>

#include "vela/http/file_body.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/http/response_writer.hpp"
#include "vela/server/server.hpp"

namespace vela::detail {

/// A response as the drivers send it (see prepare_response()). Trivial, so that it lives in
/// registers: the hot path pays for what a plain response needs and no more.
struct PreparedResponse {
    /// The file body, its preconditions and ranges already applied (status and headers set).
    const FileBody* file = nullptr;
    /// A HEAD request: the head only, with the length the body would have.
    bool head = false;
    /// The body comes from a BodySource.
    bool streamed = false;
    /// A protocol switch (ws_accept()): a 101 on HTTP/1.1, a 200 to an extended CONNECT on
    /// HTTP/2 (RFC 8441; RFC 9113 8.6 has no 101). The driver takes it with
    /// Response::take_upgrade().
    bool upgrade = false;
};

/// Decides the rare cases of `r`, the answer to `req` (null: a connection-level error), when
/// r.has_extra(): a protocol switch, a file body (its preconditions and ranges applied here), a
/// streamed body. The drivers test has_extra() first, so a plain response costs that test.
inline void prepare_extra(const Request* req, Response& r, const ServerOptions& options,
                          PreparedResponse& p) {
    p.upgrade =
        r.has_upgrade() && (r.status() == Status::SwitchingProtocols || r.status() == Status::OK);
    if (r.file_body() && req) {
        apply_file_semantics(*req, r, options.limits.max_ranges);
        rewrite_file_error(options, *req, r);  // a 412 or 416 in the App's error format
    }
    p.streamed = r.streaming();
    p.file = r.file_body();
}

/// Decides how `r`, the answer to `req` (null: a connection-level error), is sent.
inline PreparedResponse prepare_response(const Request* req, Response& r,
                                         const ServerOptions& options) {
    PreparedResponse p;
    p.head = req && req->method() == Method::HEAD;
    if (r.has_extra()) [[unlikely]]
        prepare_extra(req, r, options, p);
    return p;
}

/// True when the status `r` is sent with allows a body (RFC 9110 8.6).
inline bool response_has_body(const Response& r) noexcept {
    return status_has_body(wire_status(r.status()));
}

/// The one failure policy of file bodies: a file that shrank or failed while it was sent makes
/// the announced length a lie, so the response is abandoned (HTTP/1.1 closes the connection,
/// HTTP/2 resets stream `stream`; 0 on HTTP/1.1) after this warning naming the peer.
void file_body_failed(const ConnectionInfo& peer, std::int32_t stream = 0);

}  // namespace vela::detail
