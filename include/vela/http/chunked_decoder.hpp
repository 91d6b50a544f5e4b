#pragma once
// Incremental, in-place decoder of the chunked transfer coding (RFC 9112 section 7.1).
//
// It is fed the bytes that follow a request head, as many as have arrived, again and again
// as more arrive. Chunk data is moved down over the framing, so once decoding is done the
// body is one contiguous run at the start of those bytes and no copy is allocated.
// Trailer fields (7.1.2) are checked for syntax and discarded, or kept when asked.

#include <cstddef>
#include <cstdint>
#include <string>

#include "vela/http/limits.hpp"
#include "vela/http/status.hpp"

namespace vela {

/// Decodes one chunked request body in place, as its bytes arrive (see above).
class ChunkedDecoder {
  public:
    /// What feed() found: more bytes are needed, the body is complete, or it is malformed.
    enum class Result : std::uint8_t { need_more, done, error };

    /// Starts a new body.
    void reset(const ParserLimits* limits) noexcept;
    /// Continues decoding `body[0..n)`, all bytes after the head received so far (the
    /// first decoded_size() of them are already-decoded data).
    Result feed(char* body, std::size_t n) noexcept;
    /// Decoded body bytes, at body[0..decoded_size()).
    std::size_t decoded_size() const noexcept { return write_; }
    /// Raw bytes the chunked body occupied (valid after done).
    std::size_t raw_size() const noexcept { return read_; }
    /// For a body streamed as it arrives: forgets the decoded bytes (handed out) and the raw
    /// bytes read so far (the caller drops body[0..raw) from its buffer); decoding goes on
    /// with what follows, and the size limit counts everything decoded before.
    void drop() noexcept {
        dropped_ += write_;
        write_ = read_ = 0;
    }
    /// Sets the largest total body (a streaming route's limit instead of max_body).
    void set_max_body(std::uint64_t m) noexcept { max_body_ = m; }
    /// Keeps the trailer field lines in `*out` as "name:value" lines ended by '\n' (the value
    /// as sent, OWS included); null (the default) discards them.
    void keep_trailers(std::string* out) noexcept { trailers_ = out; }
    /// The status to answer after error (400, 413 or 431).
    Status error() const noexcept { return error_; }

  private:
    Result fail(Status s) noexcept {
        error_ = s;
        return Result::error;
    }

    enum class State : std::uint8_t {
        size,
        ext_bws,
        ext,
        size_lf,
        data,
        data_cr,
        data_lf,
        trailer_start,
        trailer_name,
        trailer_value,
        trailer_lf,
        final_lf,
        done
    };

    const ParserLimits* limits_ = nullptr;
    std::string* trailers_ = nullptr;
    State state_ = State::size;
    Status error_ = Status::BadRequest;
    std::size_t read_ = 0;
    std::size_t write_ = 0;
    std::uint64_t dropped_ = 0;   // decoded bytes handed out before (streaming)
    std::uint64_t max_body_ = 0;  // the limit (limits->max_body unless set_max_body)
    std::uint64_t chunk_left_ = 0;
    std::size_t line_len_ = 0;
    std::size_t trailer_bytes_ = 0;
    std::size_t trailer_count_ = 0;
    unsigned digits_ = 0;
};

}  // namespace vela
