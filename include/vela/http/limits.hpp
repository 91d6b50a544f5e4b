#pragma once
// Limits applied while parsing a request. Every limit has a default and is a setting
// (ServerOptions carries one of these).

#include <cstddef>
#include <cstdint>

namespace vela {

/// Request parsing limits; exceeding one is answered with the status given for it.
struct ParserLimits {
    /// Longest request line (method, target, version); longer gets 414.
    std::size_t max_request_line = 8 * 1024;
    /// Largest header section (all field lines, or all trailer lines); larger gets 431.
    std::size_t max_header_bytes = 16 * 1024;
    /// Most header fields; more gets 431.
    std::size_t max_headers = 100;
    /// Largest body (Content-Length or de-chunked total); larger gets 413.
    std::size_t max_body = 16 * 1024 * 1024;
    /// Largest body of a streaming route (App::streaming), read as it arrives; larger gets
    /// 413. Other routes buffer their bodies and keep max_body.
    std::uint64_t max_streamed_body = std::uint64_t{4} << 30;
    /// Most byte ranges in one Range header of a file response; with more, the header is
    /// ignored and the whole file is sent (the range DoS).
    std::size_t max_ranges = 16;
    /// Longest chunk-size line including extensions; longer gets 400.
    std::size_t max_chunk_line = 1024;
    /// POST, PUT and PATCH without Content-Length or Transfer-Encoding get 411.
    bool require_length_for_body_methods = true;
};

}  // namespace vela
