#pragma once
// One request and its response on one connection: writes the request, reads the head and
// then the body as its framing says (RFC 9112 6-7), decoding the content coding when asked.
// It holds the connection until the body's end, then gives it back to the pool; destroyed
// before that (an error, a timeout, an abandoned or half-read response), it closes it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "client/connection.hpp"
#include "client/pool.hpp"
#include "vela/compress/codec.hpp"
#include "vela/http/chunked_decoder.hpp"

namespace vela::http::detail {

/// Thrown when a reused connection turned out closed before any byte of the response: the
/// request may be sent again on a new connection (idempotent methods).
class StaleConnection : public ProtocolError {
  public:
    using ProtocolError::ProtocolError;
};

/// One request/response on one connection (see above).
class Exchange {
  public:
    Exchange(OriginPool& pool, Connection* c, bool reused, std::string url);
    /// Closes the connection unless the response was read to its end.
    ~Exchange();
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    /// Writes `bytes` (the head and a body in memory), then, when `source` is set, the pieces
    /// it produces (chunked unless `length_known`).
    Task<void> send(std::string bytes,
                    const std::function<Task<std::optional<std::string>>()>* source, bool chunked,
                    std::uint64_t request_deadline);
    /// Reads the response head (1xx interim responses are skipped, except 101) into `head`.
    Task<void> read_head(const std::string& method, ResponseHead& head, std::uint64_t head_deadline,
                         std::uint64_t request_deadline);
    /// Sets the content coding to decode (identity: none), the body limit, and the deadline
    /// for each wait of read().
    void decode(compress::Coding coding, std::uint64_t max_body);
    /// The next body piece; nullopt at the end.
    Task<std::optional<std::string_view>> read(std::uint64_t deadline);
    /// True once the body's end was read.
    bool done() const noexcept { return done_; }
    /// Reads the rest of the body into `out` (TooLargeError past `limit` bytes in all).
    Task<void> read_all(std::string& out, std::uint64_t limit, std::uint64_t deadline);
    /// The per-read timeout of a streamed body (ms).
    std::uint64_t read_timeout_ms = 30'000;
    /// True when the server may reuse this connection after the response.
    bool keep_alive = false;
    /// Keep the connection at the end instead of giving it to the pool (a proxy's CONNECT:
    /// the caller goes on with the tunnel).
    bool hold = false;
    /// The HTTP version of the response (0 or 1).
    int version_minor = 1;

  private:
    Task<std::optional<std::string_view>> next(std::uint64_t deadline, bool lend);
    [[noreturn]] void fail_io(std::string_view during, bool before_response);
    void settle();
    bool raw_piece(std::string_view& piece);
    void finish();
    void release(bool reusable) noexcept;

    OriginPool* pool_;
    Connection* c_;
    std::string url_;
    bool reused_;
    bool done_ = false;
    bool end_after_piece_ = false;
    BodyFraming framing_ = BodyFraming::none;
    std::uint64_t left_ = 0;      // Content-Length bytes still to come
    std::uint64_t total_ = 0;     // body bytes handed out (decoded)
    std::uint64_t max_body_ = 0;  // 0: no limit
    std::size_t lent_raw_ = 0;    // input bytes the piece handed out occupies
    ChunkedDecoder chunked_;
    std::unique_ptr<compress::Decoder> decoder_;
    std::string decoded_;
};

}  // namespace vela::http::detail
