#pragma once
// permessage-deflate (RFC 7692) over zlib: the offer/answer negotiation and the per-message
// compressor and decompressor.
//
// Memory is what matters with many connections: zlib's state is allocated on first use, not
// per connection up front. The server answers with server_no_context_takeover by default,
// so one Deflater can compress for every connection of a loop (and a broadcast is compressed
// once for all its recipients); an Inflater holds a window only while the client keeps its
// context (no client_no_context_takeover).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vela/ws/frame.hpp"

namespace vela::ws {

/// What the server accepts and asks for.
struct DeflateOptions {
    /// Negotiate permessage-deflate at all.
    bool enabled = true;
    /// Reset the compressor after every message (lets one compressor serve all connections).
    bool server_no_context_takeover = true;
    /// Largest LZ77 window the server compresses with (8-15). zlib compresses with 9 for 8; its
    /// matches then reach back at most 250 bytes, so 8 is still what the client is told.
    int server_max_window_bits = 15;
    /// Largest client window accepted when the client offers client_max_window_bits (8-15).
    int client_max_window_bits = 15;
    /// zlib compression level (1-9).
    int level = 6;
    /// zlib memLevel of the compressor (1-9): memory against speed.
    int mem_level = 8;
    /// Messages shorter than this are sent uncompressed (RSV1 clear).
    std::size_t min_size = 64;
};

/// The parameters agreed with one client.
struct DeflateParams {
    /// The server resets its compressor after each message.
    bool server_no_context_takeover = true;
    /// The client resets its compressor after each message (so may our decompressor).
    bool client_no_context_takeover = false;
    /// Window of the server's compressor (9-15; 9 also when the answer said 8).
    int server_max_window_bits = 15;
    /// Window of the client's compressor (8-15).
    int client_max_window_bits = 15;
};

/// Reads the client's Sec-WebSocket-Extensions values (all of them, comma-joined) and picks
/// the first permessage-deflate offer it can accept. On success fills `answer` with the
/// extension value to send back and returns the agreed parameters; returns nullopt when
/// there is no acceptable offer (malformed offers, unknown or repeated parameters and
/// impossible window sizes are declined, never an error).
std::optional<DeflateParams> negotiate_deflate(std::string_view offers, const DeflateOptions& o,
                                               std::string& answer);

/// Decompresses one connection's messages; zlib state allocated on the first message and,
/// when the client keeps no context, released after each.
class Inflater final : public MessageInflater {
  public:
    /// An inflater for the agreed parameters.
    explicit Inflater(const DeflateParams& p) noexcept;
    /// Frees zlib's state.
    ~Inflater() override;
    Inflater(const Inflater&) = delete;
    Inflater& operator=(const Inflater&) = delete;

    /// See MessageInflater::inflate; throws std::bad_alloc when zlib cannot allocate.
    std::uint16_t inflate(std::string_view in, bool last, std::string& out,
                          std::size_t limit) override;
    /// Bytes of zlib state held now (0 between messages without context takeover).
    std::size_t memory() const noexcept;

  private:
    struct State;
    DeflateParams params_;
    std::unique_ptr<State> z_;
};

/// Compresses messages. With server_no_context_takeover it is reset after every message and
/// may be shared by all connections of one thread.
class Deflater {
  public:
    /// A compressor for the agreed parameters and the server's options.
    Deflater(const DeflateParams& p, const DeflateOptions& o) noexcept;
    /// Frees zlib's state.
    ~Deflater();
    Deflater(const Deflater&) = delete;
    Deflater& operator=(const Deflater&) = delete;

    /// Appends the compressed form of the whole message `msg` to `out` (RFC 7692 7.2.1: the
    /// final empty block's 00 00 FF FF removed). Throws std::bad_alloc when zlib cannot
    /// allocate its state.
    void compress(std::string_view msg, std::string& out);
    /// Bytes of zlib state held now.
    std::size_t memory() const noexcept;

  private:
    struct State;
    DeflateParams params_;
    int level_;
    int mem_level_;
    std::unique_ptr<State> z_;
};

}  // namespace vela::ws
