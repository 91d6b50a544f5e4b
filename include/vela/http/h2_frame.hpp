#pragma once
// HTTP/2 frames (RFC 9113 sections 4 and 6): a pure codec, no sockets, for both roles.
//
// FrameReader::read() takes the bytes a connection has buffered and returns one frame at a
// time, in place: a frame's payload, DATA's data and a header block fragment are views into
// those bytes (padding stripped), valid while the bytes are. Every rule the frame layer can
// check on its own is checked here: the frame size against our SETTINGS_MAX_FRAME_SIZE, the
// fixed lengths (PRIORITY 5, RST_STREAM 4, PING 8, WINDOW_UPDATE 4, SETTINGS a multiple of 6
// and empty with ACK, GOAWAY at least 8), padding that does not fit, frames that need a
// stream and frames that must not have one, a stream depending on itself, a zero window
// increment, and the header block rule of 4.3 (after HEADERS or PUSH_PROMISE without
// END_HEADERS, only CONTINUATION frames of the same stream until END_HEADERS). Unknown frame
// types are returned as `unknown` for the caller to discard (4.1: ignored), except inside a
// header block; unknown flags and the reserved bit are ignored. What depends on stream states,
// windows and settings is the connection's.
//
// A refused frame is reported as a connection error (stream_id 0: send GOAWAY with the code
// and close) or a stream error (send RST_STREAM on stream_id; the frame is consumed and
// reading goes on), as section 5.4 and each frame's section say.
//
// The writers append whole frames to a std::string, header blocks split into HEADERS or
// PUSH_PROMISE plus CONTINUATION frames by the peer's SETTINGS_MAX_FRAME_SIZE.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace vela::h2 {

/// The client connection preface (3.4), sent before the client's first SETTINGS.
inline constexpr std::string_view client_preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Bytes of a frame header (4.1).
inline constexpr std::size_t frame_header_size = 9;
/// SETTINGS_MAX_FRAME_SIZE's initial value and lower bound (6.5.2).
inline constexpr std::uint32_t default_max_frame_size = 16384;
/// SETTINGS_MAX_FRAME_SIZE's upper bound (6.5.2).
inline constexpr std::uint32_t max_max_frame_size = (1u << 24) - 1;
/// The largest flow-control window (6.9.1).
inline constexpr std::uint32_t max_window_size = 0x7fffffffu;
/// SETTINGS_INITIAL_WINDOW_SIZE's initial value (6.5.2).
inline constexpr std::uint32_t default_initial_window_size = 65535;

/// Frame types (6, and 11.2's registry).
enum class FrameType : std::uint8_t {
    data = 0x0,
    headers = 0x1,
    priority = 0x2,
    rst_stream = 0x3,
    settings = 0x4,
    push_promise = 0x5,
    ping = 0x6,
    goaway = 0x7,
    window_update = 0x8,
    continuation = 0x9,
    unknown = 0xff,  // any type this codec does not know (returned for the caller to discard)
};

/// Frame flags (6).
namespace flag {
inline constexpr std::uint8_t end_stream = 0x1;   // DATA, HEADERS
inline constexpr std::uint8_t ack = 0x1;          // SETTINGS, PING
inline constexpr std::uint8_t end_headers = 0x4;  // HEADERS, PUSH_PROMISE, CONTINUATION
inline constexpr std::uint8_t padded = 0x8;       // DATA, HEADERS, PUSH_PROMISE
inline constexpr std::uint8_t priority = 0x20;    // HEADERS
}  // namespace flag

/// Error codes (7).
enum class ErrorCode : std::uint32_t {
    no_error = 0x0,
    protocol_error = 0x1,
    internal_error = 0x2,
    flow_control_error = 0x3,
    settings_timeout = 0x4,
    stream_closed = 0x5,
    frame_size_error = 0x6,
    refused_stream = 0x7,
    cancel = 0x8,
    compression_error = 0x9,
    connect_error = 0xa,
    enhance_your_calm = 0xb,
    inadequate_security = 0xc,
    http_1_1_required = 0xd,
};

/// The code's name as section 7 spells it ("PROTOCOL_ERROR"), or "UNKNOWN".
std::string_view error_code_name(ErrorCode code) noexcept;

/// Setting identifiers (6.5.2, and RFC 8441's extended CONNECT).
enum class SettingId : std::uint16_t {
    header_table_size = 0x1,
    enable_push = 0x2,
    max_concurrent_streams = 0x3,
    initial_window_size = 0x4,
    max_frame_size = 0x5,
    max_header_list_size = 0x6,
    enable_connect_protocol = 0x8,
};

/// One setting of a SETTINGS frame.
struct Setting {
    std::uint16_t id;
    std::uint32_t value;
};

/// Priority fields of HEADERS (with the PRIORITY flag) and PRIORITY frames (5.3, deprecated:
/// parsed for their rules, then ignored).
struct PriorityFields {
    std::uint32_t dependency = 0;
    std::uint8_t weight = 0;  // as sent: the weight minus one
    bool exclusive = false;
};

/// One frame, as read. Which members mean something depends on the type.
struct Frame {
    FrameType type = FrameType::unknown;
    std::uint8_t raw_type = 0;  // the type byte as received (for `unknown`)
    std::uint8_t flags = 0;
    std::uint32_t stream_id = 0;
    std::uint32_t length = 0;  // the payload's length, padding included (what DATA's flow
                               // control counts)
    std::string_view payload;  // the whole payload, padding included
    // DATA: the data; HEADERS, PUSH_PROMISE, CONTINUATION: the header block fragment; GOAWAY:
    // the debug data; PING: the 8 opaque bytes; SETTINGS: the settings (see settings()).
    std::string_view data;
    PriorityFields priority;                     // HEADERS with the PRIORITY flag, PRIORITY
    std::uint32_t promised_id = 0;               // PUSH_PROMISE
    std::uint32_t last_stream_id = 0;            // GOAWAY
    ErrorCode error_code = ErrorCode::no_error;  // RST_STREAM, GOAWAY
    std::uint32_t increment = 0;                 // WINDOW_UPDATE

    /// The flag is set.
    bool has(std::uint8_t f) const noexcept { return (flags & f) != 0; }
    /// DATA or HEADERS ending its stream.
    bool end_stream() const noexcept { return has(flag::end_stream); }
    /// HEADERS, PUSH_PROMISE or CONTINUATION ending its header block.
    bool end_headers() const noexcept { return has(flag::end_headers); }
    /// SETTINGS or PING acknowledging the peer's.
    bool ack() const noexcept { return has(flag::ack); }
    /// Number of settings of a SETTINGS frame.
    std::size_t setting_count() const noexcept { return data.size() / 6; }
    /// The i-th setting of a SETTINGS frame (i < setting_count()).
    Setting setting(std::size_t i) const noexcept;
};

/// Why a frame was refused: a connection error when stream_id is 0, else a stream error.
struct FrameError {
    ErrorCode code = ErrorCode::no_error;
    std::uint32_t stream_id = 0;
    std::string_view reason;  // one line, for logs and GOAWAY's debug data

    /// A connection error (GOAWAY and close), not a stream error (RST_STREAM).
    bool connection() const noexcept { return stream_id == 0; }
};

/// What read() found.
enum class ReadStatus : std::uint8_t {
    frame,       // `frame` is filled; `consumed` bytes were used
    incomplete,  // not a whole frame yet: `consumed` is 0 and `needed` says how many bytes
    error,       // `error` is filled; after a stream error `consumed` bytes were used and
                 // reading goes on, after a connection error the connection is over
};

/// The outcome of one read().
struct ReadResult {
    ReadStatus status = ReadStatus::incomplete;
    std::size_t consumed = 0;  // bytes of the input used
    std::size_t needed = 0;    // incomplete: bytes the whole frame takes (header included)
    FrameError error;
};

/// Reads frames (see the top of the file). One per connection, for frames from the peer.
class FrameReader {
  public:
    /// A reader refusing frames over `max_frame_size` (our SETTINGS_MAX_FRAME_SIZE).
    explicit FrameReader(std::uint32_t max_frame_size = default_max_frame_size) noexcept
        : max_frame_size_(max_frame_size) {}

    /// Our SETTINGS_MAX_FRAME_SIZE changed (call once the peer acknowledged it).
    void set_max_frame_size(std::uint32_t max) noexcept { max_frame_size_ = max; }
    /// Our SETTINGS_MAX_FRAME_SIZE in force.
    std::uint32_t max_frame_size() const noexcept { return max_frame_size_; }
    /// Reads the frame at the start of `in` into `frame`.
    ReadResult read(std::string_view in, Frame& frame) noexcept;
    /// The stream whose header block is open (a CONTINUATION is due), or 0.
    std::uint32_t open_header_block() const noexcept { return continuation_stream_; }

  private:
    std::uint32_t max_frame_size_;
    std::uint32_t continuation_stream_ = 0;
};

/// Checks a SETTINGS frame's values (6.5.2): ENABLE_PUSH and ENABLE_CONNECT_PROTOCOL 0 or 1
/// (PROTOCOL_ERROR), INITIAL_WINDOW_SIZE at most 2^31-1 (FLOW_CONTROL_ERROR), MAX_FRAME_SIZE
/// from 2^14 to 2^24-1 (PROTOCOL_ERROR). Unknown identifiers are fine (ignored).
FrameError check_settings(const Frame& settings) noexcept;

/// Writes a frame header (4.1) into `out` (9 bytes).
void write_frame_header(char* out, std::uint32_t length, FrameType type, std::uint8_t flags,
                        std::uint32_t stream_id) noexcept;
/// Appends a frame header.
void append_frame_header(std::string& out, std::uint32_t length, FrameType type, std::uint8_t flags,
                         std::uint32_t stream_id);
/// Appends a DATA frame (data.size() at most the peer's max frame size).
void append_data(std::string& out, std::uint32_t stream_id, std::string_view data, bool end_stream);
/// Appends a header block as HEADERS and CONTINUATION frames of at most `max_frame_size`.
void append_headers(std::string& out, std::uint32_t stream_id, std::string_view block,
                    bool end_stream, std::uint32_t max_frame_size);
/// Appends a header block as PUSH_PROMISE and CONTINUATION frames of at most `max_frame_size`.
void append_push_promise(std::string& out, std::uint32_t stream_id, std::uint32_t promised_id,
                         std::string_view block, std::uint32_t max_frame_size);
/// Appends a PRIORITY frame.
void append_priority(std::string& out, std::uint32_t stream_id, const PriorityFields& p);
/// Appends an RST_STREAM frame.
void append_rst_stream(std::string& out, std::uint32_t stream_id, ErrorCode code);
/// Appends a SETTINGS frame holding `settings`.
void append_settings(std::string& out, std::span<const Setting> settings);
/// Appends the SETTINGS frame acknowledging the peer's.
void append_settings_ack(std::string& out);
/// Appends a PING frame (8 opaque bytes), or its acknowledgement.
void append_ping(std::string& out, std::string_view opaque8, bool ack);
/// Appends a GOAWAY frame.
void append_goaway(std::string& out, std::uint32_t last_stream_id, ErrorCode code,
                   std::string_view debug = {});
/// Appends a WINDOW_UPDATE frame (increment 1 to 2^31-1).
void append_window_update(std::string& out, std::uint32_t stream_id, std::uint32_t increment);

}  // namespace vela::h2
