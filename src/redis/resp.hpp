#pragma once
// RESP decoding with hiredis's reader (no socket: bytes in, Replies out).

#include <optional>
#include <string_view>

#include "vela/redis/reply.hpp"

struct redisReader;

namespace vela::redis::detail {

/// Decodes a stream of RESP2 replies fed in pieces of any size.
class ReplyReader {
  public:
    /// An empty reader.
    ReplyReader();
    /// Frees hiredis's reader.
    ~ReplyReader();
    ReplyReader(const ReplyReader&) = delete;
    ReplyReader& operator=(const ReplyReader&) = delete;

    /// Adds received bytes (copied).
    void feed(std::string_view bytes);
    /// The next complete reply, or nullopt when more bytes are needed; throws ProtocolError
    /// on bytes that are not RESP (the reader is unusable afterwards).
    std::optional<Reply> next();

  private:
    redisReader* r_;
};

}  // namespace vela::redis::detail
