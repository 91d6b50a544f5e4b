#pragma once
// One request and its response. Exchange is what ResponseBody reads through, whatever the
// protocol: it decodes the content coding and checks the body limit over the raw pieces its
// protocol hands it. H1Exchange runs on one HTTP/1.1 connection: writes the request, reads
// the head and then the body as its framing says (RFC 9112 6-7); it holds the connection
// until the body's end, then gives it back to the pool; destroyed before that (an error, a
// timeout, an abandoned or half-read response), it closes it. H2Exchange (h2_exchange.hpp)
// is one stream of a shared HTTP/2 connection.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// Thrown when the server said it did not process the request (HTTP/2 GOAWAY above its last
/// stream, REFUSED_STREAM): any request may be sent again once on a new connection.
class Unprocessed : public StaleConnection {
  public:
    using StaleConnection::StaleConnection;
};

/// A streamed request body's source.
using BodySource = std::function<Task<std::optional<std::string>>()>;

/// One request/response, protocol aside (see above).
class Exchange {
  public:
    /// An exchange for the request to `url` (named in error messages).
    explicit Exchange(std::string url) : url_(std::move(url)) {}
    virtual ~Exchange() = default;
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    /// Reads the response head (1xx interim responses are skipped, except 101) into `head`.
    virtual Task<void> read_head(const std::string& method, ResponseHead& head,
                                 std::uint64_t head_deadline, std::uint64_t request_deadline) = 0;
    /// "HTTP/1.0", "HTTP/1.1" or "HTTP/2" (after read_head()).
    virtual std::string_view protocol() const noexcept = 0;
    /// Sets the content coding to decode (identity: none) and the body limit.
    void decode(compress::Coding coding, std::uint64_t max_body);
    /// The next body piece (valid until the next call); nullopt at the end. `deadline`: for
    /// the whole body (0: each wait gets read_timeout_ms).
    Task<std::optional<std::string_view>> read(std::uint64_t deadline);
    /// True once the body's end was read.
    bool done() const noexcept { return done_; }
    /// Reads the rest of the body into `out` (TooLargeError past `limit` bytes in all).
    Task<void> read_all(std::string& out, std::uint64_t limit, std::uint64_t deadline);
    /// The URL of the request.
    const std::string& url() const noexcept { return url_; }
    /// Takes the URL (the exchange is not used after).
    std::string take_url() noexcept { return std::move(url_); }
    /// The per-read timeout of a streamed body (ms).
    std::uint64_t read_timeout_ms = 30'000;
    /// The trailer fields that followed the body (once done()).
    const std::vector<Header>& trailers() const noexcept { return trailers_; }
    /// True when trailer fields came.
    bool has_trailers() const noexcept { return !trailers_.empty(); }

  protected:
    /// Arms the deadline (absolute ms) of the waits of one read.
    virtual void begin_read(std::uint64_t deadline) = 0;
    /// The next raw piece of the body (not yet decoded from its content coding); false when
    /// more bytes are needed. An empty piece with end_after_piece_ set is the end.
    virtual bool raw_piece(std::string_view& piece) = 0;
    /// Drops the raw bytes of the piece handed out last; finishes at the body's end.
    virtual void settle() = 0;
    /// The piece just handed out will be read by the caller after this call returns.
    virtual void lend() {}
    /// Waits for more of the body; false when the body ended there (read to the close).
    /// Throws on an error or a timeout.
    virtual Task<bool> more() = 0;

    std::string url_;
    std::vector<Header> trailers_;  // the body's trailer fields, once done
    bool done_ = false;
    bool end_after_piece_ = false;

  private:
    Task<std::optional<std::string_view>> next(std::uint64_t deadline, bool lend);

    std::uint64_t total_ = 0;     // body bytes handed out (decoded)
    std::uint64_t max_body_ = 0;  // 0: no limit
    std::unique_ptr<compress::Decoder> decoder_;
    std::string decoded_;
};

/// One request/response on one HTTP/1.1 connection (see above).
class H1Exchange final : public Exchange {
  public:
    H1Exchange(OriginPool& pool, Connection* c, bool reused, std::string url);
    /// Closes the connection unless the response was read to its end.
    ~H1Exchange() override;

    /// Writes `bytes` (the head and a body in memory), then, when `source` is set, the pieces
    /// it produces (chunked unless `length_known`).
    Task<void> send(std::string bytes, const BodySource* source, bool chunked,
                    std::uint64_t request_deadline);
    Task<void> read_head(const std::string& method, ResponseHead& head, std::uint64_t head_deadline,
                         std::uint64_t request_deadline) override;
    std::string_view protocol() const noexcept override {
        return version_minor == 0 ? "HTTP/1.0" : "HTTP/1.1";
    }
    /// True when the server may reuse this connection after the response.
    bool keep_alive = false;
    /// Keep the connection at the end instead of giving it to the pool (a proxy's CONNECT:
    /// the caller goes on with the tunnel).
    bool hold = false;
    /// The HTTP version of the response (0 or 1).
    int version_minor = 1;

  private:
    void begin_read(std::uint64_t deadline) override;
    bool raw_piece(std::string_view& piece) override;
    void settle() override;
    void lend() override;
    Task<bool> more() override;
    [[noreturn]] void fail_io(std::string_view during, bool before_response);
    void finish();
    void release(bool reusable) noexcept;

    OriginPool* pool_;
    Connection* c_;
    bool reused_;
    BodyFraming framing_ = BodyFraming::none;
    std::uint64_t left_ = 0;    // Content-Length bytes still to come
    std::size_t lent_raw_ = 0;  // input bytes the piece handed out occupies
    bool send_cut_ = false;     // the server answered before it read the whole request
    ChunkedDecoder chunked_;
    std::string trailer_text_;  // the chunked body's trailer lines, as the decoder keeps them
};

}  // namespace vela::http::detail
