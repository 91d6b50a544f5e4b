#pragma once
// A streaming route's request body on an HTTP/1.1 connection (App::streaming), kept apart
// from the driver the way the protocol keeps it apart: the driver parses heads and frames
// responses; this unit hands the body to the handler's read() as it arrives.
//
// Each chunk is a view into the connection's input buffer, so nothing is read into the buffer
// until the handler's next read() (reading stops when a chunk is taken and resumes, from the
// loop, when the handler waits again). Content-Length bodies are cut from the buffer;
// chunked ones go through a ChunkedDecoder bounded by limits.max_streamed_body. The body
// timeout runs while the handler waits; a client that leaves mid-body, a timeout or bad
// framing end the stream with 400, 408 or the decoder's status.

#include <sys/types.h>

#include <coroutine>
#include <cstdint>
#include <string>
#include <string_view>

#include "vela/http/body_reader.hpp"
#include "vela/http/chunked_decoder.hpp"
#include "vela/http/request_parser.hpp"

namespace vela::detail {

class Http1Connection;

/// The request body a streaming route reads as it arrives (see above).
class Http1RequestBody final : public BodyReader {
  public:
    explicit Http1RequestBody(Http1Connection& c) noexcept : c_(c) {}

    /// Starts on the request whose head `parser` has just completed: the head moves to a copy
    /// (the request's views follow it), since the input buffer is reused for the body.
    void start(const RequestParser& parser, Request& req);
    /// The socket gave `n` bytes (n > 0) or its end (0) or an error (< 0).
    void on_read(ssize_t n);
    /// The connection's timer fired while the handler waits: 408 once the deadline passed.
    void on_timeout();
    /// True while the handler waits in read().
    bool waiting() const noexcept { return static_cast<bool>(waiter_); }
    /// True when part of the body was not handed out (or it failed): what follows on the
    /// connection cannot be told from the next request.
    bool unread() const noexcept { return !done_ || error_ != Status::OK; }
    /// Ends the stream with its response; `discard_input`: the rest of the input is dropped.
    void end(bool discard_input) noexcept;

    std::uint64_t received() const noexcept override { return received_; }

  protected:
    bool ready() override { return extract(); }
    void wait(std::coroutine_handle<> h) override;
    BodyChunk take() override;

  private:
    bool extract();
    void arrived();
    void extend_deadline() noexcept;

    Http1Connection& c_;
    ChunkedDecoder decoder_;
    std::coroutine_handle<> waiter_;
    std::string head_;  // the request's head (its views point here)
    std::string_view chunk_;
    std::uint64_t left_ = 0;  // Content-Length bytes still to come
    std::uint64_t received_ = 0;
    std::size_t hold_ = 0;  // input bytes the last chunk occupies (dropped on the next)
    Status error_ = Status::OK;
    bool chunked_ = false;
    bool done_ = false;        // every body byte was handed out
    bool have_chunk_ = false;  // chunk_ extracted and not yet taken
    bool chunk_end_ = false;
};

}  // namespace vela::detail
