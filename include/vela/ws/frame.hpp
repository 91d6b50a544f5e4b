#pragma once
// WebSocket framing (RFC 6455 section 5), written for the server side and the hot path.
//
// FrameReader turns the bytes a client sent into events: whole messages (fragments joined,
// control frames interleaved between fragments delivered as they come), pings, pongs, a
// close, or the first protocol error with the close code to answer it with. It unmasks in
// place, validates UTF-8 of text messages as the fragments arrive (1007), enforces the
// frame and message limits (1009) and every framing rule (1002). A message that arrived as
// one frame is handed out as a view into the caller's buffer: no copy.
//
// The writers build server frames (never masked) and, for tests, load clients and fuzzers,
// client frames (masked).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vela::ws {

/// Frame opcodes (RFC 6455 5.2).
enum class Opcode : std::uint8_t {
    continuation = 0x0,
    text = 0x1,
    binary = 0x2,
    close = 0x8,
    ping = 0x9,
    pong = 0xA,
};

/// Close codes (RFC 6455 7.4.1).
namespace close_code {
inline constexpr std::uint16_t normal = 1000;               ///< done
inline constexpr std::uint16_t going_away = 1001;           ///< server shutting down
inline constexpr std::uint16_t protocol_error = 1002;       ///< framing rule broken
inline constexpr std::uint16_t unsupported_data = 1003;     ///< a type the endpoint refuses
inline constexpr std::uint16_t no_status = 1005;            ///< a close frame without a code
inline constexpr std::uint16_t abnormal = 1006;             ///< the connection ended without close
inline constexpr std::uint16_t invalid_payload = 1007;      ///< text that is not UTF-8
inline constexpr std::uint16_t policy_violation = 1008;     ///< e.g. a reader too slow
inline constexpr std::uint16_t message_too_big = 1009;      ///< over a frame or message limit
inline constexpr std::uint16_t mandatory_extension = 1010;  ///< client wanted an extension
inline constexpr std::uint16_t internal_error = 1011;       ///< the handler failed
inline constexpr std::uint16_t try_again_later = 1013;      ///< overloaded
}  // namespace close_code

/// True when a peer may send `code` in a close frame: 1000-1003, 1007-1014, 3000-4999.
bool close_code_valid(std::uint16_t code) noexcept;

/// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool utf8_valid(std::string_view s) noexcept;

/// Incremental UTF-8 check for text that arrives in pieces (a character may be split).
class Utf8Validator {
  public:
    /// Checks the next bytes; false once the text can no longer be valid (stays false).
    bool feed(const char* p, std::size_t n) noexcept;
    /// True when everything fed so far ends on a character boundary and was valid.
    bool complete() const noexcept;
    /// Starts over for a new message.
    void reset() noexcept;

  private:
    std::uint32_t state_ = 0;
};

/// Decompresses permessage-deflate messages for a FrameReader (ws::Inflater implements it).
class MessageInflater {
  public:
    /// Destroys the inflater.
    virtual ~MessageInflater() = default;
    /// Appends the inflation of `in` to `out`; `last` marks the message's final piece. Returns
    /// 0, close_code::message_too_big when this call would append more than `limit` bytes
    /// (checked while inflating, not after), or close_code::invalid_payload for data that does
    /// not inflate. FrameReader always passes an empty `out`, so both readings of the limit
    /// (bytes appended, size of `out`) agree.
    virtual std::uint16_t inflate(std::string_view in, bool last, std::string& out,
                                  std::size_t limit) = 0;
};

/// Limits and the negotiated options of one FrameReader.
struct ReaderOptions {
    /// Largest frame payload accepted (close 1009 above it).
    std::size_t max_frame = 16 * 1024 * 1024;
    /// Largest message accepted, all fragments together, after inflation (close 1009).
    std::size_t max_message = 16 * 1024 * 1024;
    /// Client frames must be masked (RFC 6455 5.1); a server keeps this true.
    bool require_mask = true;
    /// Server frames must not be masked (RFC 6455 5.1): a client sets this (1002 otherwise).
    bool reject_mask = false;
};

/// One thing FrameReader::next found.
struct Event {
    /// What was found.
    enum class Kind : std::uint8_t { need_more, message, ping, pong, close, error };
    /// need_more: everything complete was consumed; read more bytes.
    Kind kind = Kind::need_more;
    /// message: Opcode::text or Opcode::binary.
    Opcode opcode = Opcode::text;
    /// message, ping, pong: the payload (inflated, unmasked); close: the reason. Valid until
    /// the next call to next() or until the caller changes the buffer it passed.
    std::string_view payload;
    /// close: the peer's code (close_code::no_status when it sent none); error: the code to
    /// close with (1002, 1007, 1009).
    std::uint16_t code = 0;
    /// error: a short description for logs ("unmasked client frame", ...).
    const char* what = "";
};

/// Parses the frames of one connection (client to server, or server to client).
class FrameReader {
  public:
    /// A reader enforcing `o`; it keeps a reference to `o`.
    explicit FrameReader(const ReaderOptions& o) noexcept : opt_(o) {}

    /// With an inflater, RSV1 on the first frame of a data message marks it compressed
    /// (permessage-deflate); without one, RSV1 is a protocol error. Not owned.
    void set_inflater(MessageInflater* inflater) noexcept { inflater_ = inflater; }

    /// Finds the next event in data[0, size) and sets `consumed` to the bytes the caller
    /// must drop from the front before the next call (payload views stay valid until then).
    /// Unmasks in place. After an error or a close every later call returns the same error
    /// or need_more; a reader is not reused after either.
    Event next(char* data, std::size_t size, std::size_t& consumed);

    /// Bytes held for a message still being assembled (fragments or partial frames).
    std::size_t buffered() const noexcept { return message_.size(); }
    /// Frees the assembly buffer's memory when no message is in progress.
    void shrink() noexcept;

  private:
    std::size_t parse_header(const char* p, std::size_t avail) noexcept;
    Event control_event(std::string_view payload) noexcept;
    bool take_piece(char* p, std::size_t n);
    std::uint16_t inflate_piece(std::string_view in, bool last);
    Event finish_message() noexcept;
    std::size_t reject(std::uint16_t code, const char* what) noexcept;
    Event failure() const noexcept;

    const ReaderOptions& opt_;
    MessageInflater* inflater_ = nullptr;
    std::string message_;           // fragments joined (inflated when compressed)
    std::string scratch_;           // one inflated piece before it joins message_
    Utf8Validator utf8_;            // text messages, checked as pieces arrive
    std::uint64_t frame_left_ = 0;  // payload bytes of the current frame still to come
    std::uint8_t mask_[4] = {};
    std::uint8_t mask_pos_ = 0;
    Opcode message_op_ = Opcode::text;
    Opcode frame_op_ = Opcode::text;
    bool in_message_ = false;  // a message is being assembled in message_
    bool in_frame_ = false;    // inside a frame's payload (it arrived in pieces)
    bool frame_fin_ = false;
    bool frame_masked_ = false;
    bool frame_rsv1_ = false;
    bool compressed_ = false;  // the open message is deflated
    bool failed_ = false;
    bool closed_ = false;
    std::uint16_t fail_code_ = 0;
    const char* fail_what_ = "";
};

/// Largest frame header: 2 bytes + 8 length bytes (+ 4 mask bytes for client frames).
inline constexpr std::size_t kMaxHeader = 14;

/// Writes a server frame header (unmasked) for `len` payload bytes to `out` (room for
/// kMaxHeader bytes); returns its size.
std::size_t write_header(char* out, Opcode op, std::uint64_t len, bool fin = true,
                         bool rsv1 = false) noexcept;

/// Writes a client frame header (MASK bit set, then the 4 bytes of `key`) for `len` payload
/// bytes to `out` (room for kMaxHeader bytes); returns its size.
std::size_t write_masked_header(char* out, Opcode op, std::uint64_t len, const std::uint8_t key[4],
                                bool fin = true, bool rsv1 = false) noexcept;

/// XORs p[0, n) with `key` from its first byte (RFC 6455 5.3): masks and unmasks.
void mask_payload(char* p, std::size_t n, const std::uint8_t key[4]) noexcept;

/// Appends a whole server frame (header and payload) to `out`.
void append_frame(std::string& out, Opcode op, std::string_view payload, bool fin = true,
                  bool rsv1 = false);

/// Appends a client frame masked with `mask` to `out` (tests, load clients, fuzzers).
void append_client_frame(std::string& out, Opcode op, std::string_view payload, std::uint32_t mask,
                         bool fin = true, bool rsv1 = false);

/// The payload of a close frame: the code in network order, then `reason` cut to fit 125
/// bytes at a character boundary. Code 1005 (no status) gives an empty payload.
std::string close_payload(std::uint16_t code, std::string_view reason);

}  // namespace vela::ws
