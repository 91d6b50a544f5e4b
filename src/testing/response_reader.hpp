#pragma once
// Reads HTTP/1.1 responses from bytes, incrementally (RFC 9112 sections 4-7, as a client).
//
// Pure: no socket, no loop. The test client feeds it what a connection received (or what the
// server's response writer produced in process) and takes the head, then the body piece by
// piece, as the framing says: none (HEAD, 1xx, 204, 304), Content-Length, chunked (vela's
// ChunkedDecoder, the same decoder the server uses for requests) or until the connection
// ends. Malformed input is an error with a one-line reason, never a crash. The head is read
// by the http module's parse_response_head, as strictly as a client of untrusted servers.

#include <cstdint>
#include <string>
#include <string_view>

#include "vela/http/chunked_decoder.hpp"
#include "vela/http/limits.hpp"
#include "vela/http/response_parser.hpp"
#include "vela/testing/client.hpp"

namespace vela::testing::detail {

/// One response read from bytes (see above).
class ResponseReader {
  public:
    /// What next() found.
    enum class Step : std::uint8_t { need_more, head, piece, done, error };

    /// A reader for the response to a request; `head_request`: the request was HEAD.
    explicit ResponseReader(bool head_request = false);

    /// Adds received bytes.
    void append(std::string_view bytes) { buf_.append(bytes); }
    /// Parses on: `head` once the status line and fields are in (head()), then `piece` for
    /// each piece of the body (take_piece()), then `done`. `eof`: no more bytes will come.
    Step next(bool eof);
    /// The head (valid after Step::head; its body stays empty).
    TestResponse& head() noexcept { return head_; }
    /// The body piece found by the last Step::piece.
    std::string take_piece() noexcept { return std::move(piece_); }
    /// Why Step::error was returned.
    const std::string& error() const noexcept { return error_; }
    /// Bytes received past the end of the response (the next response, or WebSocket frames
    /// after a 101).
    std::string take_unread() noexcept { return std::move(buf_); }
    /// True when the response ended the connection's usefulness (Connection: close, or a
    /// body delimited by the end of the connection).
    bool connection_closes() const noexcept { return closes_; }

  private:
    enum class Phase : std::uint8_t { head, length, chunked, until_eof, done, failed };
    Step parse_head(bool eof);
    Step fail(std::string why);

    std::string buf_;
    std::string piece_;
    std::string error_;
    TestResponse head_;
    ResponseHead parsed_;  // the head as parsed (its storage reused)
    ChunkedDecoder chunked_;
    std::uint64_t left_ = 0;
    Phase phase_ = Phase::head;
    bool head_request_;
    bool closes_ = false;
};

}  // namespace vela::testing::detail
