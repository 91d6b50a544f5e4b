#pragma once
// Request bodies read as they arrive (routes registered with App::streaming): a 2 GB upload
// passes through a buffer or two instead of being held whole.
//
//     app.streaming(vela::Method::PUT, "/files/{name}", [](vela::Request& req)
//                                                        -> vela::Task<vela::Response> {
//         std::uint64_t total = 0;
//         for (;;) {
//             vela::BodyChunk c = co_await req.body_stream().read();
//             if (c.error != vela::Status::OK) co_return vela::Response(c.error);
//             total += c.data.size();                  // c.data: valid until the next read()
//             if (c.end) break;
//         }
//         co_return vela::Response::text(std::to_string(total));
//     });
//
// The server reads from the socket only while the handler asks for more, so the client is
// paced by the handler (TCP back-pressure; over HTTP/2, the stream's flow-control window). On
// other routes the body is buffered (up to limits.max_body) and read() hands it out in one
// piece.

#include <coroutine>
#include <cstdint>
#include <string_view>

#include "vela/http/status.hpp"

namespace vela {

/// One piece of a request body.
struct BodyChunk {
    /// The bytes (valid until the next read()); may be empty on the last chunk.
    std::string_view data;
    /// True on the last chunk: the body is complete.
    bool end = false;
    /// OK, or why the body cannot be read: 413 (over the limit), 400 (malformed chunked
    /// framing), 408 (the client stopped sending), 499-like ClientClosedRequest is reported
    /// as BadRequest with `end` set (the client went away).
    Status error = Status::OK;
};

/// Reads a request body as it arrives.
class BodyReader {
  public:
    /// What co_await read() uses.
    struct ReadAwaiter {
        /// The reader.
        BodyReader& r;
        /// True when a chunk (or the end, or an error) is there now.
        bool await_ready() { return r.ready(); }
        /// Waits for the next bytes.
        void await_suspend(std::coroutine_handle<> h) { r.wait(h); }
        /// The chunk.
        BodyChunk await_resume() { return r.take(); }
    };

    /// Destroys the reader.
    virtual ~BodyReader() = default;
    /// The next chunk of the body (after the end or an error, the same end or error again).
    ReadAwaiter read() noexcept { return {*this}; }
    /// Body bytes handed out so far.
    virtual std::uint64_t received() const noexcept = 0;

  protected:
    /// True when take() has something now.
    virtual bool ready() = 0;
    /// Resumes `h` once take() has something.
    virtual void wait(std::coroutine_handle<> h) = 0;
    /// The next chunk.
    virtual BodyChunk take() = 0;
};

/// A body that was buffered whole, handed out in one chunk.
class WholeBodyReader final : public BodyReader {
  public:
    /// Reads `*body` (the Request's buffered body; the Request points it before each use).
    void point_at(const std::string_view* body) noexcept { body_ = body; }
    /// Starts over (a new request).
    void reset() noexcept { taken_ = false; }
    /// Body bytes handed out so far.
    std::uint64_t received() const noexcept override { return taken_ ? body_->size() : 0; }

  protected:
    bool ready() override { return true; }
    void wait(std::coroutine_handle<> h) override { h.resume(); }
    BodyChunk take() override {
        BodyChunk c{taken_ ? std::string_view() : *body_, true, Status::OK};
        taken_ = true;
        return c;
    }

  private:
    const std::string_view* body_ = nullptr;
    bool taken_ = false;
};

}  // namespace vela
