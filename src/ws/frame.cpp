// WebSocket framing, RFC 6455 section 5 (frames) and 7.4 (close codes); see frame.hpp.
//
// The reader is a loop over frames: a header is parsed only once all of it has arrived (it
// is at most 14 bytes, so the caller keeps it), then the payload is either handed out in
// place (a whole unfragmented message, the common case), waited for (a control frame, at
// most 125 bytes) or moved into message_ as it arrives (fragments, partial frames, deflated
// messages). Every rule is decided on bytes that precede the ones the next rule reads, so
// the events do not depend on how the input was split.

#include "vela/ws/frame.hpp"

#include <algorithm>
#include <cstring>

namespace vela::ws {

namespace {

constexpr std::uint8_t kFinBit = 0x80;
constexpr std::uint8_t kRsv1Bit = 0x40;
constexpr std::uint8_t kRsv23Bits = 0x30;
constexpr std::uint8_t kMaskBit = 0x80;
constexpr std::size_t kMaxControl = 125;  // 5.5: control payloads
constexpr std::size_t kMaxReason = kMaxControl - 2;

bool is_control(Opcode op) noexcept { return (static_cast<std::uint8_t>(op) & 0x8) != 0; }

// 5.2: 0x3-0x7 and 0xB-0xF are reserved.
bool known_opcode(unsigned op) noexcept { return op <= 0x2 || (op >= 0x8 && op <= 0xA); }

std::uint64_t load_be(const char* p, std::size_t n) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = v << 8 | static_cast<std::uint8_t>(p[i]);
    return v;
}

// 5.3: XORs p[0, n) with the key, starting at key byte `pos` (a frame's payload may be
// unmasked in several pieces); 8 bytes per step with the key rotated to line up.
void apply_mask(char* p, std::size_t n, const std::uint8_t key[4], std::uint8_t& pos) noexcept {
    unsigned char k[8];
    for (unsigned i = 0; i < 8; ++i) k[i] = key[(pos + i) & 3];
    std::uint64_t k64;
    std::memcpy(&k64, k, 8);
    std::size_t i = 0;
    // 64 bytes per step with 16-byte vectors (SSE2 on x86-64), then 8.
    using V16 = unsigned char __attribute__((vector_size(16)));
    V16 kv;
    std::memcpy(&kv, k, 8);
    std::memcpy(reinterpret_cast<char*>(&kv) + 8, k, 8);
    for (; i + 64 <= n; i += 64) {
        V16 a, b, c, d;
        std::memcpy(&a, p + i, 16);
        std::memcpy(&b, p + i + 16, 16);
        std::memcpy(&c, p + i + 32, 16);
        std::memcpy(&d, p + i + 48, 16);
        a ^= kv;
        b ^= kv;
        c ^= kv;
        d ^= kv;
        std::memcpy(p + i, &a, 16);
        std::memcpy(p + i + 16, &b, 16);
        std::memcpy(p + i + 32, &c, 16);
        std::memcpy(p + i + 48, &d, 16);
    }
    for (; i + 8 <= n; i += 8) {
        std::uint64_t v;
        std::memcpy(&v, p + i, 8);
        v ^= k64;
        std::memcpy(p + i, &v, 8);
    }
    for (; i < n; ++i) p[i] = static_cast<char>(p[i] ^ k[i & 7]);
    pos = static_cast<std::uint8_t>((pos + n) & 3);
}

Event make_event(Event::Kind kind, Opcode op, std::string_view payload,
                 std::uint16_t code = 0) noexcept {
    Event e;
    e.kind = kind;
    e.opcode = op;
    e.payload = payload;
    e.code = code;
    return e;
}

}  // namespace

bool close_code_valid(std::uint16_t code) noexcept {
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

std::size_t FrameReader::reject(std::uint16_t code, const char* what) noexcept {
    failed_ = true;
    fail_code_ = code;
    fail_what_ = what;
    return 0;
}

Event FrameReader::failure() const noexcept {
    Event e = make_event(Event::Kind::error, message_op_, {}, fail_code_);
    e.what = fail_what_;
    return e;
}

// Reads the header at p[0, avail) into the frame_* members and returns its size; 0 when it
// has not all arrived or breaks a rule (then failed_ is set).
std::size_t FrameReader::parse_header(const char* p, std::size_t avail) noexcept {
    using namespace close_code;
    if (avail < 2) return 0;
    const auto b0 = static_cast<std::uint8_t>(p[0]);
    const auto b1 = static_cast<std::uint8_t>(p[1]);
    const unsigned op = b0 & 0x0F;
    const bool fin = (b0 & kFinBit) != 0;
    const bool rsv1 = (b0 & kRsv1Bit) != 0;
    const bool control = (op & 0x8) != 0;
    // 5.2: RSV bits need an extension that defines them; permessage-deflate defines RSV1 only.
    if (b0 & kRsv23Bits) return reject(protocol_error, "RSV2 or RSV3 set");
    if (!known_opcode(op)) return reject(protocol_error, "reserved opcode");
    // RFC 7692 6: RSV1 marks the first frame of a compressed data message, nothing else.
    if (rsv1 && inflater_ == nullptr) return reject(protocol_error, "RSV1 without deflate");
    if (rsv1 && (control || op == 0)) return reject(protocol_error, "RSV1 on a non-first frame");
    // 5.5: control frames are never fragmented and carry at most 125 bytes.
    if (control && !fin) return reject(protocol_error, "fragmented control frame");
    if (control && (b1 & 0x7F) > kMaxControl) return reject(protocol_error, "control frame > 125");
    // 5.1: a server closes the connection on an unmasked client frame.
    const bool masked = (b1 & kMaskBit) != 0;
    // A client closes it on a masked server frame.
    if (masked ? opt_.reject_mask : opt_.require_mask) [[unlikely]]
        return reject(protocol_error, masked ? "masked server frame" : "unmasked client frame");
    // 5.4: continuations only inside a message; no new message inside one.
    if (op == 0 && !in_message_) return reject(protocol_error, "continuation without message");
    if (!control && op != 0 && in_message_)
        return reject(protocol_error, "new message inside a fragmented one");

    const unsigned len7 = b1 & 0x7F;
    const std::size_t ext = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
    if (avail < 2 + ext) return 0;
    const std::uint64_t len = ext ? load_be(p + 2, ext) : len7;
    // 5.2: a 64-bit length has its top bit clear, and every length uses its shortest form.
    if (ext == 8 && (len >> 63) != 0) return reject(protocol_error, "64-bit length top bit set");
    if ((ext == 2 && len < 126) || (ext == 8 && len < 65536))
        return reject(protocol_error, "length not minimally encoded");
    // The limits are decided before the payload arrives. A deflated message is held to
    // max_message after inflation, by the inflater.
    if (len > opt_.max_frame) return reject(message_too_big, "frame over max_frame");
    const bool deflated = op == 0 ? compressed_ : rsv1;
    if (!control && !deflated && len > opt_.max_message - message_.size())
        return reject(message_too_big, "message over max_message");

    const std::size_t size = 2 + ext + (masked ? 4 : 0);
    if (avail < size) return 0;
    if (masked) std::memcpy(mask_, p + 2 + ext, 4);
    frame_op_ = static_cast<Opcode>(op);
    frame_fin_ = fin;
    frame_rsv1_ = rsv1;
    frame_masked_ = masked;
    frame_left_ = len;
    mask_pos_ = 0;
    return size;
}

// A whole control frame, unmasked (5.5).
Event FrameReader::control_event(std::string_view payload) noexcept {
    using namespace close_code;
    if (frame_op_ == Opcode::ping) return make_event(Event::Kind::ping, frame_op_, payload);
    if (frame_op_ == Opcode::pong) return make_event(Event::Kind::pong, frame_op_, payload);
    // 5.5.1: an optional 2-byte code, then a UTF-8 reason.
    std::uint16_t code = no_status;
    if (payload.size() == 1) {
        reject(protocol_error, "close payload of 1 byte");
        return failure();
    }
    if (!payload.empty()) {
        code = static_cast<std::uint16_t>(load_be(payload.data(), 2));
        if (!close_code_valid(code)) {
            reject(protocol_error, "invalid close code");
            return failure();
        }
        payload.remove_prefix(2);
        if (!utf8_valid(payload)) {
            reject(invalid_payload, "close reason not UTF-8");
            return failure();
        }
    }
    closed_ = true;
    return make_event(Event::Kind::close, frame_op_, payload, code);
}

// Unmasks the next n payload bytes of the current data frame and adds them to the message.
bool FrameReader::take_piece(char* p, std::size_t n) {
    if (frame_masked_) apply_mask(p, n, mask_, mask_pos_);
    frame_left_ -= n;
    const std::size_t before = message_.size();
    std::uint16_t code = 0;
    if (compressed_) {
        const bool last = frame_fin_ && frame_left_ == 0;
        if (n != 0 || last) code = inflate_piece(std::string_view(p, n), last);
    } else {
        message_.append(p, n);
    }
    // What the inflater gave before it failed is checked first, as it would have been had
    // the input come in smaller pieces: the error must not depend on the split.
    if (message_op_ == Opcode::text &&
        !utf8_.feed(message_.data() + before, message_.size() - before)) {
        reject(close_code::invalid_payload, "text not UTF-8");
        return false;
    }
    if (code != 0) {
        reject(code, code == close_code::message_too_big ? "message over max_message"
                                                         : "deflated data does not inflate");
        return false;
    }
    return true;
}

// Inflates one piece of a deflated message onto message_, at most max_message in all, and
// returns the inflater's code. The inflater always gets an empty `out`, so its limit means
// the same whichever way it counts.
std::uint16_t FrameReader::inflate_piece(std::string_view in, bool last) {
    const std::size_t have = message_.size();
    const std::size_t limit = opt_.max_message > have ? opt_.max_message - have : 0;
    std::string& out = have == 0 ? message_ : scratch_;
    scratch_.clear();
    std::uint16_t code = inflater_->inflate(in, last, out, limit);
    if (&out == &scratch_) message_.append(scratch_);
    // An inflater that did not keep to the limit.
    if (code == 0 && message_.size() > opt_.max_message) code = close_code::message_too_big;
    return code;
}

// The final frame of an assembled message has been taken.
Event FrameReader::finish_message() noexcept {
    in_message_ = false;
    if (message_op_ == Opcode::text && !utf8_.complete()) {
        reject(close_code::invalid_payload, "text ends inside a character");
        return failure();
    }
    return make_event(Event::Kind::message, message_op_, message_);
}

Event FrameReader::next(char* data, std::size_t size, std::size_t& consumed) {
    consumed = 0;
    if (failed_) return failure();
    if (closed_) return {};
    if (!in_message_) message_.clear();  // the last message was handed out
    std::size_t pos = 0;
    for (;;) {
        if (in_frame_) {
            const auto take =
                static_cast<std::size_t>(std::min<std::uint64_t>(frame_left_, size - pos));
            const bool ok = take_piece(data + pos, take);
            consumed = pos += take;
            if (!ok) return failure();
            if (frame_left_ != 0) return {};
            in_frame_ = false;
            if (frame_fin_) return finish_message();
            continue;
        }
        consumed = pos;
        const std::size_t header = parse_header(data + pos, size - pos);
        if (header == 0) return failed_ ? failure() : Event{};
        char* payload = data + pos + header;
        const std::size_t avail = size - pos - header;
        const auto len = static_cast<std::size_t>(frame_left_);
        if (is_control(frame_op_)) {
            if (avail < len) return {};  // at most 125 bytes: wait for all of it
            if (frame_masked_) apply_mask(payload, len, mask_, mask_pos_);
            frame_left_ = 0;
            consumed = pos + header + len;
            return control_event(std::string_view(payload, len));
        }
        pos += header;
        if (frame_op_ != Opcode::continuation) {
            message_op_ = frame_op_;
            compressed_ = frame_rsv1_;
            utf8_.reset();
            if (frame_fin_ && !compressed_ && avail >= len) {
                // The whole message is here: unmask it in place and hand it out, no copy.
                if (frame_masked_) apply_mask(payload, len, mask_, mask_pos_);
                frame_left_ = 0;
                consumed = pos + len;
                const std::string_view text(payload, len);
                if (message_op_ == Opcode::text && !utf8_valid(text)) {
                    reject(close_code::invalid_payload, "text not UTF-8");
                    return failure();
                }
                return make_event(Event::Kind::message, message_op_, text);
            }
        }
        in_message_ = true;
        in_frame_ = true;
    }
}

void FrameReader::shrink() noexcept {
    if (in_message_) return;
    std::string().swap(message_);
    std::string().swap(scratch_);
}

std::size_t write_header(char* out, Opcode op, std::uint64_t len, bool fin, bool rsv1) noexcept {
    auto* o = reinterpret_cast<unsigned char*>(out);
    o[0] = static_cast<unsigned char>((fin ? kFinBit : 0) | (rsv1 ? kRsv1Bit : 0) |
                                      static_cast<std::uint8_t>(op));
    if (len < 126) {
        o[1] = static_cast<unsigned char>(len);
        return 2;
    }
    const std::size_t n = len < 65536 ? 2 : 8;
    o[1] = n == 2 ? 126 : 127;
    for (std::size_t i = 0; i < n; ++i)
        o[2 + i] = static_cast<unsigned char>(len >> (8 * (n - 1 - i)));
    return 2 + n;
}

std::size_t write_masked_header(char* out, Opcode op, std::uint64_t len, const std::uint8_t key[4],
                                bool fin, bool rsv1) noexcept {
    const std::size_t n = write_header(out, op, len, fin, rsv1);
    out[1] = static_cast<char>(out[1] | kMaskBit);
    std::memcpy(out + n, key, 4);
    return n + 4;
}

void mask_payload(char* p, std::size_t n, const std::uint8_t key[4]) noexcept {
    std::uint8_t pos = 0;
    apply_mask(p, n, key, pos);
}

void append_frame(std::string& out, Opcode op, std::string_view payload, bool fin, bool rsv1) {
    char header[kMaxHeader];
    out.append(header, write_header(header, op, payload.size(), fin, rsv1));
    out.append(payload);
}

void append_client_frame(std::string& out, Opcode op, std::string_view payload, std::uint32_t mask,
                         bool fin, bool rsv1) {
    char header[kMaxHeader];
    const std::size_t n = write_header(header, op, payload.size(), fin, rsv1);
    header[1] = static_cast<char>(header[1] | kMaskBit);
    const std::uint8_t key[4] = {
        static_cast<std::uint8_t>(mask >> 24), static_cast<std::uint8_t>(mask >> 16),
        static_cast<std::uint8_t>(mask >> 8), static_cast<std::uint8_t>(mask)};
    std::memcpy(header + n, key, 4);
    out.append(header, n + 4);
    const std::size_t at = out.size();
    out.append(payload);
    std::uint8_t pos = 0;
    apply_mask(out.data() + at, payload.size(), key, pos);
}

std::string close_payload(std::uint16_t code, std::string_view reason) {
    if (code == close_code::no_status) return {};
    if (reason.size() > kMaxReason) {
        std::size_t cut = kMaxReason;  // back up over continuation bytes to a lead byte
        while (cut > 0 && (static_cast<std::uint8_t>(reason[cut]) & 0xC0) == 0x80) --cut;
        reason = reason.substr(0, cut);
    }
    std::string out;
    out.reserve(2 + reason.size());
    out.push_back(static_cast<char>(code >> 8));
    out.push_back(static_cast<char>(code & 0xFF));
    out.append(reason);
    return out;
}

}  // namespace vela::ws
