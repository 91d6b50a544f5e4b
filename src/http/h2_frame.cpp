// HTTP/2 frames (RFC 9113 sections 4 and 6): see h2_frame.hpp.

#include "vela/http/h2_frame.hpp"

namespace vela::h2 {
namespace {

std::uint32_t u32(const char* p) noexcept {
    const auto* b = reinterpret_cast<const unsigned char*>(p);
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
           b[3];
}

std::uint32_t stream_of(const char* p) noexcept { return u32(p) & 0x7fffffffu; }

void put_u32(char* p, std::uint32_t v) noexcept {
    p[0] = static_cast<char>(v >> 24);
    p[1] = static_cast<char>(v >> 16);
    p[2] = static_cast<char>(v >> 8);
    p[3] = static_cast<char>(v);
}

ReadResult connection_error(ErrorCode code, std::string_view reason) noexcept {
    ReadResult r;
    r.status = ReadStatus::error;
    r.error = {code, 0, reason};
    return r;
}

ReadResult stream_error(std::size_t consumed, ErrorCode code, std::uint32_t stream,
                        std::string_view reason) noexcept {
    ReadResult r;
    r.status = ReadStatus::error;
    r.consumed = consumed;
    r.error = {code, stream, reason};
    return r;
}

// Strips the padding of a PADDED frame (6.1, 6.2, 6.6) from `body`, which starts at the Pad
// Length field; `fixed` is the fields between it and the data (priority, promised id).
// False when the padding or the fixed fields do not fit.
enum class Pad : std::uint8_t { ok, too_short, too_long };
Pad strip_padding(std::string_view& body, std::size_t fixed, std::string_view& fields) noexcept {
    if (body.empty()) return Pad::too_short;
    const std::size_t pad = static_cast<unsigned char>(body[0]);
    body.remove_prefix(1);
    if (body.size() < fixed) return Pad::too_short;
    fields = body.substr(0, fixed);
    body.remove_prefix(fixed);
    if (pad > body.size()) return Pad::too_long;
    body.remove_suffix(pad);
    return Pad::ok;
}

PriorityFields priority_of(const char* p) noexcept {
    const std::uint32_t dep = u32(p);
    return {dep & 0x7fffffffu, static_cast<std::uint8_t>(p[4]), (dep >> 31) != 0};
}

}  // namespace

std::string_view error_code_name(ErrorCode code) noexcept {
    switch (code) {
        case ErrorCode::no_error:
            return "NO_ERROR";
        case ErrorCode::protocol_error:
            return "PROTOCOL_ERROR";
        case ErrorCode::internal_error:
            return "INTERNAL_ERROR";
        case ErrorCode::flow_control_error:
            return "FLOW_CONTROL_ERROR";
        case ErrorCode::settings_timeout:
            return "SETTINGS_TIMEOUT";
        case ErrorCode::stream_closed:
            return "STREAM_CLOSED";
        case ErrorCode::frame_size_error:
            return "FRAME_SIZE_ERROR";
        case ErrorCode::refused_stream:
            return "REFUSED_STREAM";
        case ErrorCode::cancel:
            return "CANCEL";
        case ErrorCode::compression_error:
            return "COMPRESSION_ERROR";
        case ErrorCode::connect_error:
            return "CONNECT_ERROR";
        case ErrorCode::enhance_your_calm:
            return "ENHANCE_YOUR_CALM";
        case ErrorCode::inadequate_security:
            return "INADEQUATE_SECURITY";
        case ErrorCode::http_1_1_required:
            return "HTTP_1_1_REQUIRED";
    }
    return "UNKNOWN";
}

Setting Frame::setting(std::size_t i) const noexcept {
    const char* p = data.data() + i * 6;
    return {static_cast<std::uint16_t>((static_cast<unsigned char>(p[0]) << 8) |
                                       static_cast<unsigned char>(p[1])),
            u32(p + 2)};
}

ReadResult FrameReader::read(std::string_view in, Frame& f) noexcept {
    if (in.size() < frame_header_size) {
        ReadResult r;
        r.needed = frame_header_size;
        return r;
    }
    const char* h = in.data();
    const std::uint32_t length = (std::uint32_t{static_cast<unsigned char>(h[0])} << 16) |
                                 (std::uint32_t{static_cast<unsigned char>(h[1])} << 8) |
                                 static_cast<unsigned char>(h[2]);
    const std::uint8_t raw_type = static_cast<std::uint8_t>(h[3]);
    const std::uint8_t flags = static_cast<std::uint8_t>(h[4]);
    const std::uint32_t stream = stream_of(h + 5);

    // 4.3: a header block is one contiguous run of frames.
    if (continuation_stream_ != 0 &&
        (raw_type != static_cast<std::uint8_t>(FrameType::continuation) ||
         stream != continuation_stream_)) {
        return connection_error(ErrorCode::protocol_error,
                                "a frame other than CONTINUATION inside a header block");
    }
    // 4.2: too large for what we announced. A connection error for every type: a stream
    // error would need the whole frame buffered, and 5.4 lets a stream error end the
    // connection.
    if (length > max_frame_size_) {
        return connection_error(ErrorCode::frame_size_error,
                                "a frame larger than SETTINGS_MAX_FRAME_SIZE");
    }
    const std::size_t total = frame_header_size + length;
    if (in.size() < total) {
        ReadResult r;
        r.needed = total;
        return r;
    }

    f.raw_type = raw_type;
    f.flags = flags;
    f.stream_id = stream;
    f.length = length;
    f.payload = in.substr(frame_header_size, length);
    f.data = f.payload;
    f.priority = {};
    f.promised_id = 0;
    f.last_stream_id = 0;
    f.error_code = ErrorCode::no_error;
    f.increment = 0;

    ReadResult ok;
    ok.status = ReadStatus::frame;
    ok.consumed = total;
    const char* p = f.payload.data();
    std::string_view fields;

    switch (raw_type) {
        case static_cast<std::uint8_t>(FrameType::data):
            f.type = FrameType::data;
            if (stream == 0) return connection_error(ErrorCode::protocol_error, "DATA on stream 0");
            if (flags & flag::padded) {
                switch (strip_padding(f.data, 0, fields)) {
                    case Pad::ok:
                        break;
                    case Pad::too_short:
                        return connection_error(ErrorCode::frame_size_error,
                                                "DATA too short for PADDED");
                    case Pad::too_long:
                        return connection_error(ErrorCode::protocol_error,
                                                "DATA padding as long as its payload");
                }
            }
            return ok;

        case static_cast<std::uint8_t>(FrameType::headers): {
            f.type = FrameType::headers;
            if (stream == 0)
                return connection_error(ErrorCode::protocol_error, "HEADERS on stream 0");
            const std::size_t fixed = (flags & flag::priority) ? 5 : 0;
            if (flags & flag::padded) {
                switch (strip_padding(f.data, fixed, fields)) {
                    case Pad::ok:
                        break;
                    case Pad::too_short:
                        return connection_error(
                            ErrorCode::frame_size_error,
                            "HEADERS too short for its PADDED and PRIORITY fields");
                    case Pad::too_long:
                        return connection_error(ErrorCode::protocol_error,
                                                "HEADERS padding longer than the frame");
                }
            } else if (fixed != 0) {
                if (f.data.size() < fixed) {
                    return connection_error(ErrorCode::frame_size_error,
                                            "HEADERS too short for its PRIORITY fields");
                }
                fields = f.data.substr(0, fixed);
                f.data.remove_prefix(fixed);
            }
            if (!(flags & flag::end_headers)) {
                continuation_stream_ = stream;
            }
            if (fixed != 0) {
                f.priority = priority_of(fields.data());
                // 5.3.1: a stream error, but the header block must still be decoded (HPACK's
                // state), so the frame is returned and the caller resets the stream.
            }
            return ok;
        }

        case static_cast<std::uint8_t>(FrameType::priority):
            f.type = FrameType::priority;
            if (stream == 0)
                return connection_error(ErrorCode::protocol_error, "PRIORITY on stream 0");
            if (length != 5) {
                return stream_error(total, ErrorCode::frame_size_error, stream,
                                    "PRIORITY not 5 bytes long");
            }
            f.priority = priority_of(p);
            if (f.priority.dependency == stream) {
                return stream_error(total, ErrorCode::protocol_error, stream,
                                    "a stream depending on itself");
            }
            return ok;

        case static_cast<std::uint8_t>(FrameType::rst_stream):
            f.type = FrameType::rst_stream;
            if (stream == 0) {
                return connection_error(ErrorCode::protocol_error, "RST_STREAM on stream 0");
            }
            if (length != 4) {
                return connection_error(ErrorCode::frame_size_error, "RST_STREAM not 4 bytes long");
            }
            f.error_code = static_cast<ErrorCode>(u32(p));
            return ok;

        case static_cast<std::uint8_t>(FrameType::settings):
            f.type = FrameType::settings;
            if (stream != 0) {
                return connection_error(ErrorCode::protocol_error, "SETTINGS on a stream");
            }
            if ((flags & flag::ack) && length != 0) {
                return connection_error(ErrorCode::frame_size_error, "SETTINGS ACK with a payload");
            }
            if (length % 6 != 0) {
                return connection_error(ErrorCode::frame_size_error,
                                        "SETTINGS not a multiple of 6 bytes long");
            }
            return ok;

        case static_cast<std::uint8_t>(FrameType::push_promise):
            f.type = FrameType::push_promise;
            if (stream == 0) {
                return connection_error(ErrorCode::protocol_error, "PUSH_PROMISE on stream 0");
            }
            if (flags & flag::padded) {
                switch (strip_padding(f.data, 4, fields)) {
                    case Pad::ok:
                        break;
                    case Pad::too_short:
                        return connection_error(ErrorCode::frame_size_error,
                                                "PUSH_PROMISE too short for its fields");
                    case Pad::too_long:
                        return connection_error(ErrorCode::protocol_error,
                                                "PUSH_PROMISE padding longer than the frame");
                }
            } else {
                if (f.data.size() < 4) {
                    return connection_error(ErrorCode::frame_size_error,
                                            "PUSH_PROMISE too short for its fields");
                }
                fields = f.data.substr(0, 4);
                f.data.remove_prefix(4);
            }
            f.promised_id = stream_of(fields.data());
            if (!(flags & flag::end_headers)) {
                continuation_stream_ = stream;
            }
            return ok;

        case static_cast<std::uint8_t>(FrameType::ping):
            f.type = FrameType::ping;
            if (stream != 0) return connection_error(ErrorCode::protocol_error, "PING on a stream");
            if (length != 8) {
                return connection_error(ErrorCode::frame_size_error, "PING not 8 bytes long");
            }
            return ok;

        case static_cast<std::uint8_t>(FrameType::goaway):
            f.type = FrameType::goaway;
            if (stream != 0)
                return connection_error(ErrorCode::protocol_error, "GOAWAY on a stream");
            if (length < 8) {
                return connection_error(ErrorCode::frame_size_error, "GOAWAY shorter than 8 bytes");
            }
            f.last_stream_id = stream_of(p);
            f.error_code = static_cast<ErrorCode>(u32(p + 4));
            f.data = f.payload.substr(8);
            return ok;

        case static_cast<std::uint8_t>(FrameType::window_update):
            f.type = FrameType::window_update;
            if (length != 4) {
                return connection_error(ErrorCode::frame_size_error,
                                        "WINDOW_UPDATE not 4 bytes long");
            }
            f.increment = u32(p) & 0x7fffffffu;
            if (f.increment == 0) {
                if (stream == 0) {
                    return connection_error(ErrorCode::protocol_error,
                                            "WINDOW_UPDATE of 0 on the connection");
                }
                return stream_error(total, ErrorCode::protocol_error, stream, "WINDOW_UPDATE of 0");
            }
            return ok;

        case static_cast<std::uint8_t>(FrameType::continuation):
            f.type = FrameType::continuation;
            if (continuation_stream_ == 0) {
                return connection_error(ErrorCode::protocol_error,
                                        "CONTINUATION outside a header block");
            }
            if (flags & flag::end_headers) continuation_stream_ = 0;
            return ok;

        default:
            f.type = FrameType::unknown;
            return ok;
    }
}

FrameError check_settings(const Frame& s) noexcept {
    for (std::size_t i = 0; i < s.setting_count(); ++i) {
        const Setting st = s.setting(i);
        switch (static_cast<SettingId>(st.id)) {
            case SettingId::enable_push:
                if (st.value > 1)
                    return {ErrorCode::protocol_error, 0, "SETTINGS_ENABLE_PUSH not 0 or 1"};
                break;
            case SettingId::enable_connect_protocol:
                if (st.value > 1) {
                    return {ErrorCode::protocol_error, 0,
                            "SETTINGS_ENABLE_CONNECT_PROTOCOL not 0 or 1"};
                }
                break;
            case SettingId::initial_window_size:
                if (st.value > max_window_size) {
                    return {ErrorCode::flow_control_error, 0,
                            "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1"};
                }
                break;
            case SettingId::max_frame_size:
                if (st.value < default_max_frame_size || st.value > max_max_frame_size) {
                    return {ErrorCode::protocol_error, 0,
                            "SETTINGS_MAX_FRAME_SIZE outside 2^14 to 2^24-1"};
                }
                break;
            default:
                break;
        }
    }
    return {};
}

void write_frame_header(char* out, std::uint32_t length, FrameType type, std::uint8_t flags,
                        std::uint32_t stream_id) noexcept {
    out[0] = static_cast<char>(length >> 16);
    out[1] = static_cast<char>(length >> 8);
    out[2] = static_cast<char>(length);
    out[3] = static_cast<char>(type);
    out[4] = static_cast<char>(flags);
    put_u32(out + 5, stream_id & 0x7fffffffu);
}

void append_frame_header(std::string& out, std::uint32_t length, FrameType type, std::uint8_t flags,
                         std::uint32_t stream_id) {
    const std::size_t at = out.size();
    out.resize(at + frame_header_size);
    write_frame_header(out.data() + at, length, type, flags, stream_id);
}

void append_data(std::string& out, std::uint32_t stream_id, std::string_view data,
                 bool end_stream) {
    append_frame_header(out, static_cast<std::uint32_t>(data.size()), FrameType::data,
                        end_stream ? flag::end_stream : 0, stream_id);
    out.append(data);
}

namespace {

// The first frame (HEADERS or PUSH_PROMISE, with `fixed` bytes before the fragment) and as
// many CONTINUATION frames as the block needs.
void append_block(std::string& out, FrameType type, std::uint8_t flags, std::uint32_t stream_id,
                  std::string_view fixed, std::string_view block, std::uint32_t max_frame_size) {
    std::size_t room = max_frame_size - fixed.size();
    std::string_view first = block.substr(0, room);
    block.remove_prefix(first.size());
    if (block.empty()) flags |= flag::end_headers;
    append_frame_header(out, static_cast<std::uint32_t>(fixed.size() + first.size()), type, flags,
                        stream_id);
    out.append(fixed);
    out.append(first);
    while (!block.empty()) {
        const std::string_view part = block.substr(0, max_frame_size);
        block.remove_prefix(part.size());
        append_frame_header(out, static_cast<std::uint32_t>(part.size()), FrameType::continuation,
                            block.empty() ? flag::end_headers : 0, stream_id);
        out.append(part);
    }
}

}  // namespace

void append_headers(std::string& out, std::uint32_t stream_id, std::string_view block,
                    bool end_stream, std::uint32_t max_frame_size) {
    append_block(out, FrameType::headers, end_stream ? flag::end_stream : 0, stream_id, {}, block,
                 max_frame_size);
}

void append_push_promise(std::string& out, std::uint32_t stream_id, std::uint32_t promised_id,
                         std::string_view block, std::uint32_t max_frame_size) {
    char id[4];
    put_u32(id, promised_id & 0x7fffffffu);
    append_block(out, FrameType::push_promise, 0, stream_id, std::string_view(id, 4), block,
                 max_frame_size);
}

void append_priority(std::string& out, std::uint32_t stream_id, const PriorityFields& p) {
    append_frame_header(out, 5, FrameType::priority, 0, stream_id);
    char b[5];
    put_u32(b, (p.dependency & 0x7fffffffu) | (p.exclusive ? 0x80000000u : 0));
    b[4] = static_cast<char>(p.weight);
    out.append(b, 5);
}

void append_rst_stream(std::string& out, std::uint32_t stream_id, ErrorCode code) {
    append_frame_header(out, 4, FrameType::rst_stream, 0, stream_id);
    char b[4];
    put_u32(b, static_cast<std::uint32_t>(code));
    out.append(b, 4);
}

void append_settings(std::string& out, std::span<const Setting> settings) {
    append_frame_header(out, static_cast<std::uint32_t>(settings.size() * 6), FrameType::settings,
                        0, 0);
    for (const Setting& s : settings) {
        char b[6];
        b[0] = static_cast<char>(s.id >> 8);
        b[1] = static_cast<char>(s.id);
        put_u32(b + 2, s.value);
        out.append(b, 6);
    }
}

void append_settings_ack(std::string& out) {
    append_frame_header(out, 0, FrameType::settings, flag::ack, 0);
}

void append_ping(std::string& out, std::string_view opaque8, bool ack) {
    append_frame_header(out, 8, FrameType::ping, ack ? flag::ack : 0, 0);
    char b[8] = {};
    for (std::size_t i = 0; i < 8 && i < opaque8.size(); ++i) b[i] = opaque8[i];
    out.append(b, 8);
}

void append_goaway(std::string& out, std::uint32_t last_stream_id, ErrorCode code,
                   std::string_view debug) {
    append_frame_header(out, static_cast<std::uint32_t>(8 + debug.size()), FrameType::goaway, 0, 0);
    char b[8];
    put_u32(b, last_stream_id & 0x7fffffffu);
    put_u32(b + 4, static_cast<std::uint32_t>(code));
    out.append(b, 8);
    out.append(debug);
}

void append_window_update(std::string& out, std::uint32_t stream_id, std::uint32_t increment) {
    append_frame_header(out, 4, FrameType::window_update, 0, stream_id);
    char b[4];
    put_u32(b, increment & 0x7fffffffu);
    out.append(b, 4);
}

}  // namespace vela::h2
