// Differential HTTP/2 frame fuzzing: the same frames go to our FrameReader and to nghttp2's
// server session, fed one frame at a time (the frames are length-prefixed, so our reader's
// split is the only one). Input: the frames a client sends after its preface; nghttp2 first
// gets the preface and an empty SETTINGS frame, and so does our reader (the SETTINGS frame).
// After each frame, what nghttp2 queued is taken with mem_send and read by a FrameReader: a
// GOAWAY means nghttp2 ended the connection on that frame (its debug data names the cause),
// an RST_STREAM on the frame's stream that it refused the frame as a stream error.
//
// Our reader checks the frame layer only (RFC 9113 4 and 6); nghttp2's session also checks
// stream states, flow control and HPACK. So the comparison goes in the sound direction:
// (1) A connection error of ours (a refused frame, or check_settings() refusing a SETTINGS
//     frame) must end nghttp2's connection at that frame or before; when nghttp2 ends it on
//     that frame for a frame-layer cause (its debug data is one of kFrameLayerCauses, or empty
//     with FRAME_SIZE_ERROR), the GOAWAY's code must be ours.
// (2) A stream error of ours must end nghttp2's connection or reset that stream (with our code
//     when it resets it). Together with (1): a frame nghttp2 takes, we take.
// (3) When nghttp2 ends the connection on a frame for a frame-layer cause, we must refuse that
//     frame too (a missing rule of ours).
// (4) For frames both take, what nghttp2 reports must be what we read: each frame header it
//     begins (length, type, flags, stream), and per type the padding length, DATA's data, the
//     priority fields, RST_STREAM's and GOAWAY's codes, GOAWAY's last stream and debug data,
//     PING's opaque data, WINDOW_UPDATE's increment and the settings. nghttp2 joins HEADERS
//     and CONTINUATION into one frame: its flags, length, padding and priority are compared
//     with the block's first frame (the length summed over the block).
// The comparison stops where either side stops reading.
//
// Where nghttp2 differs by design, the comparison allows it (each is a case of RFC 9113
// leaving the choice, or nghttp2 skipping a check the RFC asks for on frames it discards):
// - A frame breaking two rules: the RFC orders no checks, so either code is right. Our reader
//   checks the stream id first, nghttp2 the sizes first (e.g. SETTINGS of 5 bytes on stream 1:
//   we say PROTOCOL_ERROR, 6.5; nghttp2 FRAME_SIZE_ERROR, 4.2). Allowed: the code our reader
//   gives for the same frame with the stream id made valid.
// - A PADDED frame too short for its Pad Length field, or PADDED HEADERS/PUSH_PROMISE too short
//   for the priority fields or promised stream id: we say FRAME_SIZE_ERROR ("too small to
//   contain mandatory frame data", 4.2); nghttp2 counts the fields as padding and says
//   PROTOCOL_ERROR (6.1, 6.2, 6.6).
// - DATA on a stream nghttp2 does not hold open (closed, reset by it, or idle below a stream
//   opened since, which 5.1.1 closes) is discarded unread, so padding that does not fit is not
//   seen (6.1 asks for a connection error). Not required.
// - nghttp2 checks SETTINGS_MAX_FRAME_SIZE on every frame but CONTINUATION (4.2 asks for
//   FRAME_SIZE_ERROR on any frame): a CONTINUATION over it is read on. Not required.
// - nghttp2 ignores WINDOW_UPDATE frames on closed streams and resets a stream only once, so an
//   increment of 0 on a stream it closed or reset (a stream error of ours, 6.9) brings no
//   RST_STREAM. Not required there (5.1 lets frames on a closed stream be ignored).
// - PRIORITY frames are skipped by nghttp2 once the client sent SETTINGS_NO_RFC7540_PRIORITIES
//   = 1 (RFC 9218 2.1), so a stream depending on itself (a stream error of ours, 5.3.1) is not
//   reset there. Not required after such a setting.
// - SETTINGS with an identifier given twice: nghttp2 checks the values in its own list, where
//   the identifier's last value takes its first place (see as_nghttp2_lists), so of two
//   invalid values it may name the later one; 6.5 says the values are processed in order,
//   as check_settings() does. Allowed: check_settings() on nghttp2's list giving its code.
//   Likewise an invalid value followed by a valid one for the same identifier is not seen by
//   nghttp2 at all (6.5.2 asks for a connection error): not required.
// - A PRIORITY frame of the wrong length or depending on itself is a stream error for us (6.3,
//   5.3.1) and a connection error for nghttp2 (5.4.1 lets an endpoint close instead).
// - HEADERS depending on itself: our reader returns the frame (the caller must decode the block
//   for HPACK's state, then reset the stream, 5.3.1); nghttp2 closes the connection.
// - nghttp2's policy limits (settings per frame, CONTINUATION frames per block) are raised so
//   that they do not end connections first.

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "vela/http/h2_frame.hpp"

namespace {

using namespace vela::h2;

void check(bool ok) {
    if (!ok) __builtin_trap();
}

// nghttp2's GOAWAY debug data for causes that are the frame layer's alone.
constexpr std::string_view kFrameLayerCauses[] = {
    "too large frame size",
    "CONTINUATION: unexpected",
    "unexpected non-CONTINUATION frame or stream_id is invalid",
    "DATA: stream_id == 0",
    "DATA: insufficient padding space",
    "DATA: invalid padding",
    "HEADERS: insufficient padding space",
    "HEADERS: invalid padding",
    "HEADERS: stream_id == 0",
    "request HEADERS: stream_id == 0",
    "PUSH_PROMISE: insufficient padding space",
    "PUSH_PROMISE: invalid padding",
    "PUSH_PROMISE: stream_id == 0",
    "PRIORITY: stream_id == 0",
    "RST_STREAM: stream_id == 0",
    "SETTINGS: ACK and payload != 0",
    "SETTINGS: stream_id != 0",
    "SETTINGS: invalid SETTINGS_ENBLE_PUSH",
    "SETTINGS: invalid SETTINGS_ENABLE_CONNECT_PROTOCOL",
    "SETTINGS: invalid SETTINGS_MAX_FRAME_SIZE",
    "SETTINGS: too large SETTINGS_INITIAL_WINDOW_SIZE",
    "PING: stream_id != 0",
    "GOAWAY: stream_id != 0",
    "WINDOW_UPDATE: window_size_increment == 0",
};

bool frame_layer_cause(std::string_view debug, std::uint32_t code) {
    if (debug.empty()) return code == static_cast<std::uint32_t>(ErrorCode::frame_size_error);
    return std::find(std::begin(kFrameLayerCauses), std::end(kFrameLayerCauses), debug) !=
           std::end(kFrameLayerCauses);
}

// What nghttp2 reported through its callbacks while reading one frame.
struct Received {
    nghttp2_frame_hd hd;
    std::size_t padlen = 0;
    nghttp2_priority_spec pri{};
    std::uint32_t code = 0;
    std::uint32_t last_stream_id = 0;
    std::uint32_t increment = 0;
    std::string opaque;  // PING's data, GOAWAY's debug data
    std::vector<Setting> settings;
};

struct Seen {
    std::vector<nghttp2_frame_hd> begun;
    std::vector<Received> received;
    std::string data;
    void clear() {
        begun.clear();
        received.clear();
        data.clear();
    }
};

int on_begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
    static_cast<Seen*>(user)->begun.push_back(*hd);
    return 0;
}

int on_frame_recv(nghttp2_session*, const nghttp2_frame* f, void* user) {
    Received r;
    r.hd = f->hd;
    switch (f->hd.type) {
        case NGHTTP2_DATA:
            r.padlen = f->data.padlen;
            break;
        case NGHTTP2_HEADERS:
            r.padlen = f->headers.padlen;
            r.pri = f->headers.pri_spec;
            break;
        case NGHTTP2_PRIORITY:
            r.pri = f->priority.pri_spec;
            break;
        case NGHTTP2_RST_STREAM:
            r.code = f->rst_stream.error_code;
            break;
        case NGHTTP2_SETTINGS:
            for (std::size_t i = 0; i < f->settings.niv; ++i) {
                r.settings.push_back({static_cast<std::uint16_t>(f->settings.iv[i].settings_id),
                                      f->settings.iv[i].value});
            }
            break;
        case NGHTTP2_PING:
            r.opaque.assign(reinterpret_cast<const char*>(f->ping.opaque_data), 8);
            break;
        case NGHTTP2_GOAWAY:
            r.last_stream_id = static_cast<std::uint32_t>(f->goaway.last_stream_id);
            r.code = f->goaway.error_code;
            r.opaque.assign(reinterpret_cast<const char*>(f->goaway.opaque_data),
                            f->goaway.opaque_data_len);
            break;
        case NGHTTP2_WINDOW_UPDATE:
            r.increment = static_cast<std::uint32_t>(f->window_update.window_size_increment);
            break;
        default:
            break;
    }
    static_cast<Seen*>(user)->received.push_back(std::move(r));
    return 0;
}

int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t, const std::uint8_t* d,
                  std::size_t n, void* user) {
    static_cast<Seen*>(user)->data.append(reinterpret_cast<const char*>(d), n);
    return 0;
}

// What one frame did to nghttp2's session.
struct Fed {
    bool ended = false;  // a GOAWAY was queued, or mem_recv failed
    bool goaway = false;
    std::uint32_t goaway_code = 0;
    std::string debug;
    bool reset = false;  // an RST_STREAM on the frame's stream
    std::uint32_t reset_code = 0;
};

class Server {
  public:
    Server() {
        nghttp2_session_callbacks_new(&cb_);
        nghttp2_session_callbacks_set_on_begin_frame_callback(cb_, on_begin_frame);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb_, on_frame_recv);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb_, on_data_chunk);
        nghttp2_option_new(&opt_);
        nghttp2_option_set_no_http_messaging(opt_, 1);  // header fields are not frames
        nghttp2_option_set_max_settings(opt_, 1 << 16);
        nghttp2_option_set_max_continuations(opt_, 1 << 16);
        nghttp2_session_server_new2(&s_, cb_, &seen_, opt_);
        // Our SETTINGS, so that the client's ACK is expected.
        nghttp2_submit_settings(s_, NGHTTP2_FLAG_NONE, nullptr, 0);
    }
    ~Server() {
        nghttp2_session_del(s_);
        nghttp2_option_del(opt_);
        nghttp2_session_callbacks_del(cb_);
    }
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    nghttp2_session* get() { return s_; }
    Seen& seen() { return seen_; }
    bool reading() { return nghttp2_session_want_read(s_) != 0; }
    // The stream's state in nghttp2 (idle when it has none), closed once nghttp2 reset it.
    nghttp2_stream_proto_state state(std::uint32_t stream) {
        if (std::find(reset_.begin(), reset_.end(), stream) != reset_.end()) {
            return NGHTTP2_STREAM_STATE_CLOSED;
        }
        nghttp2_stream* st = nghttp2_session_find_stream(s_, static_cast<std::int32_t>(stream));
        return st == nullptr || stream == 0 ? NGHTTP2_STREAM_STATE_IDLE
                                            : nghttp2_stream_get_state(st);
    }

    Fed feed(std::string_view bytes, std::uint32_t stream) {
        seen_.clear();
        Fed fed;
        const auto n = nghttp2_session_mem_recv(
            s_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
        if (n < 0) {
            fed.ended = true;
            return fed;
        }
        check(static_cast<std::size_t>(n) == bytes.size());
        out_.clear();
        for (;;) {
            const std::uint8_t* p = nullptr;
            const auto m = nghttp2_session_mem_send(s_, &p);
            if (m <= 0) break;
            out_.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(m));
        }
        FrameReader reader;
        std::string_view out = out_;
        Frame f;
        while (!out.empty()) {
            const ReadResult r = reader.read(out, f);
            check(r.status == ReadStatus::frame);  // nghttp2 writes valid frames
            out.remove_prefix(r.consumed);
            if (f.type == FrameType::goaway) {
                fed.ended = fed.goaway = true;
                fed.goaway_code = static_cast<std::uint32_t>(f.error_code);
                fed.debug.assign(f.data);
            } else if (f.type == FrameType::rst_stream) {
                reset_.push_back(f.stream_id);
                if (f.stream_id == stream && !fed.reset) {
                    fed.reset = true;
                    fed.reset_code = static_cast<std::uint32_t>(f.error_code);
                }
            }
        }
        return fed;
    }

  private:
    nghttp2_session_callbacks* cb_ = nullptr;
    nghttp2_option* opt_ = nullptr;
    nghttp2_session* s_ = nullptr;
    Seen seen_;
    std::string out_;
    std::vector<std::uint32_t> reset_;  // streams nghttp2 reset
};

std::uint32_t header_length(std::string_view in) {
    return (std::uint32_t{static_cast<unsigned char>(in[0])} << 16) |
           (std::uint32_t{static_cast<unsigned char>(in[1])} << 8) |
           static_cast<unsigned char>(in[2]);
}

// The code our reader gives for `bytes` read after `reader`'s state with the stream id made
// valid for the type (0 for SETTINGS, PING and GOAWAY, else 1 or the open block's stream),
// or no_error when it takes that frame.
ErrorCode code_with_valid_stream(const FrameReader& reader, std::string_view bytes) {
    std::string copy(bytes);
    const auto type = static_cast<std::uint8_t>(copy[3]);
    std::uint32_t stream = 1;
    if (type == static_cast<std::uint8_t>(FrameType::settings) ||
        type == static_cast<std::uint8_t>(FrameType::ping) ||
        type == static_cast<std::uint8_t>(FrameType::goaway)) {
        stream = 0;
    }
    if (reader.open_header_block() != 0) stream = reader.open_header_block();
    copy[5] = static_cast<char>(stream >> 24);
    copy[6] = static_cast<char>(stream >> 16);
    copy[7] = static_cast<char>(stream >> 8);
    copy[8] = static_cast<char>(stream);
    FrameReader again = reader;
    Frame f;
    const ReadResult r = again.read(copy, f);
    return r.status == ReadStatus::error ? r.error.code : ErrorCode::no_error;
}

// A PADDED frame whose payload cannot hold the Pad Length field and the fixed fields (see the
// top: nghttp2 calls that a padding error).
bool padded_fields_short(std::uint8_t raw_type, std::uint8_t flags, std::uint32_t length) {
    if (!(flags & flag::padded)) return false;
    std::size_t fixed = 0;
    if (raw_type == static_cast<std::uint8_t>(FrameType::headers)) {
        fixed = (flags & flag::priority) ? 5 : 0;
    } else if (raw_type == static_cast<std::uint8_t>(FrameType::push_promise)) {
        fixed = 4;
    } else if (raw_type != static_cast<std::uint8_t>(FrameType::data)) {
        return false;
    }
    return length < 1 + fixed;
}

// The flags nghttp2 keeps for each type (it clears the others before reporting a frame).
std::uint8_t kept_flags(std::uint8_t raw_type, std::uint8_t flags) {
    switch (raw_type) {
        case 0x0:
            return flags & (flag::end_stream | flag::padded);
        case 0x1:
            return flags & (flag::end_stream | flag::end_headers | flag::padded | flag::priority);
        case 0x2:
        case 0x3:
        case 0x7:
        case 0x8:
            return 0;
        case 0x4:
        case 0x6:
            return flags & flag::ack;
        case 0x5:
            return flags & (flag::end_headers | flag::padded);
        default:
            return flags;
    }
}

// The padding nghttp2 reports: the Pad Length field and the padding, or 0.
std::size_t padlen_of(const Frame& f) {
    if (!f.has(flag::padded)) return 0;
    std::size_t fixed = 0;
    if (f.type == FrameType::headers && f.has(flag::priority)) fixed = 5;
    if (f.type == FrameType::push_promise) fixed = 4;
    return f.length - fixed - f.data.size();
}

// nghttp2's settings list: a known identifier given twice keeps its first place and its last
// value; unknown identifiers are all kept. When HEADER_TABLE_SIZE went below its last value
// within the frame, its place holds the smallest value and the last one is appended (the
// HPACK encoder must see both, RFC 7541 4.2).
std::vector<Setting> as_nghttp2_lists(const Frame& f) {
    std::vector<Setting> out;
    std::uint32_t min_table = UINT32_MAX;
    for (std::size_t i = 0; i < f.setting_count(); ++i) {
        const Setting s = f.setting(i);
        const bool known = (s.id >= 1 && s.id <= 6) || s.id == 8 || s.id == 9;
        auto it =
            std::find_if(out.begin(), out.end(), [&](const Setting& o) { return o.id == s.id; });
        if (known && it != out.end()) {
            it->value = s.value;
        } else {
            out.push_back(s);
        }
        if (s.id == 1) min_table = std::min(min_table, s.value);
    }
    auto table = std::find_if(out.begin(), out.end(), [](const Setting& o) { return o.id == 1; });
    if (table != out.end() && table->value != min_table) {
        const Setting last = *table;
        table->value = min_table;
        out.push_back(last);
    }
    return out;
}

// check_settings() on the values in nghttp2's order (see as_nghttp2_lists).
ErrorCode code_in_nghttp2_order(const Frame& f) {
    std::string payload;
    for (const Setting& s : as_nghttp2_lists(f)) {
        const char b[6] = {static_cast<char>(s.id >> 8),     static_cast<char>(s.id),
                           static_cast<char>(s.value >> 24), static_cast<char>(s.value >> 16),
                           static_cast<char>(s.value >> 8),  static_cast<char>(s.value)};
        payload.append(b, 6);
    }
    Frame reordered = f;
    reordered.data = payload;
    return check_settings(reordered).code;
}

// The first frame of an open header block, as nghttp2 will report the joined frame.
struct Block {
    bool open = false;
    std::uint32_t stream = 0;
    std::uint8_t flags = 0;
    std::size_t length = 0;
    std::size_t padlen = 0;
    PriorityFields priority;
};

void compare_received(const Received& got, const Frame& f, const Block& block) {
    if (got.hd.type == NGHTTP2_HEADERS) {
        // The joined block: reported while reading its last frame.
        check(block.stream == static_cast<std::uint32_t>(got.hd.stream_id));
        check(got.hd.length == block.length);
        check(got.hd.flags == (kept_flags(0x1, block.flags) | flag::end_headers));
        check(got.padlen == block.padlen);
        if (block.flags & flag::priority) {
            check(static_cast<std::uint32_t>(got.pri.stream_id) == block.priority.dependency);
            check(got.pri.weight == block.priority.weight + 1);
            check((got.pri.exclusive != 0) == block.priority.exclusive);
        }
        return;
    }
    check(got.hd.type == f.raw_type);
    check(static_cast<std::uint32_t>(got.hd.stream_id) == f.stream_id);
    check(got.hd.length == f.length);
    check(got.hd.flags == kept_flags(f.raw_type, f.flags));
    switch (f.type) {
        case FrameType::data:
            check(got.padlen == padlen_of(f));
            break;
        case FrameType::priority:
            check(static_cast<std::uint32_t>(got.pri.stream_id) == f.priority.dependency);
            check(got.pri.weight == f.priority.weight + 1);
            check((got.pri.exclusive != 0) == f.priority.exclusive);
            break;
        case FrameType::rst_stream:
            check(got.code == static_cast<std::uint32_t>(f.error_code));
            break;
        case FrameType::settings: {
            const std::vector<Setting> want = as_nghttp2_lists(f);
            check(got.settings.size() == want.size());
            for (std::size_t i = 0; i < want.size(); ++i) {
                check(got.settings[i].id == want[i].id && got.settings[i].value == want[i].value);
            }
            break;
        }
        case FrameType::ping:
            check(got.opaque == f.data);
            break;
        case FrameType::goaway:
            check(got.last_stream_id == f.last_stream_id);
            check(got.code == static_cast<std::uint32_t>(f.error_code));
            check(got.opaque == f.data);
            break;
        case FrameType::window_update:
            check(got.increment == f.increment);
            break;
        default:
            check(false);  // nghttp2 reports no other type by itself
    }
}

constexpr std::string_view kEmptySettings{"\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 65536) return 0;
    Server server;
    FrameReader ours;
    {
        std::string start(client_preface);
        start += kEmptySettings;
        const Fed fed = server.feed(start, 0);
        check(!fed.ended);
        Frame f;
        check(ours.read(kEmptySettings, f).status == ReadStatus::frame);
    }

    std::string_view in(reinterpret_cast<const char*>(data), size);
    Block block;
    bool no_rfc7540_priorities = false;
    while (in.size() >= frame_header_size && server.reading()) {
        const FrameReader before = ours;
        Frame f;
        const ReadResult r = ours.read(in, f);
        if (r.status == ReadStatus::incomplete) break;
        const std::uint32_t length = header_length(in);
        const auto raw_type = static_cast<std::uint8_t>(in[3]);
        const auto flags = static_cast<std::uint8_t>(in[4]);
        const std::uint32_t stream = ((std::uint32_t{static_cast<unsigned char>(in[5])} << 24) |
                                      (std::uint32_t{static_cast<unsigned char>(in[6])} << 16) |
                                      (std::uint32_t{static_cast<unsigned char>(in[7])} << 8) |
                                      static_cast<unsigned char>(in[8])) &
                                     0x7fffffffu;
        // The whole frame, or what there is of it when our reader refused its header.
        const std::string_view bytes =
            in.substr(0, std::min<std::size_t>(in.size(), frame_header_size + length));
        // Whether nghttp2 reads DATA on the stream in full, and WINDOW_UPDATE frames at all.
        const nghttp2_stream_proto_state state = server.state(stream);
        const bool reads_data =
            state == NGHTTP2_STREAM_STATE_OPEN || state == NGHTTP2_STREAM_STATE_HALF_CLOSED_LOCAL;
        const bool reads_window_update =
            reads_data || state == NGHTTP2_STREAM_STATE_HALF_CLOSED_REMOTE;
        const Fed fed = server.feed(bytes, stream);
        const Seen& seen = server.seen();

        // Our verdict: the reader's, then check_settings() for a SETTINGS frame it took.
        bool refused = r.status == ReadStatus::error;
        FrameError error = r.error;
        if (!refused && f.type == FrameType::settings && !f.ack()) {
            error = check_settings(f);
            refused = error.code != ErrorCode::no_error;
        }
        const auto our_code = static_cast<std::uint32_t>(error.code);

        if (refused && error.connection()) {
            // (1) nghttp2 ends the connection here, unless it discards DATA unread or sees
            // only the last value of a setting.
            if (!fed.ended) {
                const bool unread_data = raw_type == static_cast<std::uint8_t>(FrameType::data) &&
                                         !reads_data && stream != 0 &&
                                         before.open_header_block() == 0;
                const bool overridden = r.status == ReadStatus::frame &&
                                        f.type == FrameType::settings &&
                                        code_in_nghttp2_order(f) == ErrorCode::no_error;
                const bool long_continuation =
                    raw_type == static_cast<std::uint8_t>(FrameType::continuation) &&
                    before.open_header_block() == stream && length > before.max_frame_size();
                check(unread_data || overridden || long_continuation);
            } else if (fed.goaway && frame_layer_cause(fed.debug, fed.goaway_code) &&
                       fed.goaway_code != our_code) {
                const bool two_rules = static_cast<std::uint32_t>(code_with_valid_stream(
                                           before, bytes)) == fed.goaway_code;
                const bool padded_short =
                    fed.goaway_code == static_cast<std::uint32_t>(ErrorCode::protocol_error) &&
                    error.code == ErrorCode::frame_size_error &&
                    padded_fields_short(raw_type, flags, length);
                const bool reordered =
                    r.status == ReadStatus::frame && f.type == FrameType::settings &&
                    static_cast<std::uint32_t>(code_in_nghttp2_order(f)) == fed.goaway_code;
                check(two_rules || padded_short || reordered);
            }
            break;
        }
        if (refused) {
            // (2) A stream error: nghttp2 closes, resets the stream, or discards the frame.
            check(error.stream_id == stream);
            if (fed.reset && !fed.ended) check(fed.reset_code == our_code);
            if (!fed.ended && !fed.reset) {
                const bool closed_window_update =
                    raw_type == static_cast<std::uint8_t>(FrameType::window_update) &&
                    !reads_window_update;
                const bool skipped_priority =
                    raw_type == static_cast<std::uint8_t>(FrameType::priority) &&
                    no_rfc7540_priorities;
                check(closed_window_update || skipped_priority);
            }
            if (fed.ended) break;
            in.remove_prefix(r.consumed);
            continue;
        }

        // (3) nghttp2 ended the connection for a frame-layer cause on a frame we took.
        if (fed.goaway && frame_layer_cause(fed.debug, fed.goaway_code)) {
            check(false);
        }

        // (4) The fields, for what nghttp2 read of the frame.
        for (const nghttp2_frame_hd& hd : seen.begun) {
            check(hd.length == f.length);
            check(hd.type == f.raw_type);
            check(static_cast<std::uint32_t>(hd.stream_id) == f.stream_id);
            check(hd.flags == kept_flags(f.raw_type, f.flags));
        }
        if (f.type == FrameType::headers) {
            block = {true, f.stream_id, f.flags, f.length, padlen_of(f), f.priority};
        } else if (f.type == FrameType::continuation) {
            block.length += f.length;
        }
        for (const Received& got : seen.received) compare_received(got, f, block);
        if (f.type == FrameType::data) {
            const bool reported = !seen.received.empty();
            if (reported) check(seen.data == f.data);
            check(f.data.starts_with(seen.data));
        }
        if (f.type == FrameType::settings && !f.ack()) {
            for (std::size_t i = 0; i < f.setting_count(); ++i) {
                const Setting s = f.setting(i);
                if (s.id == NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES && s.value == 1) {
                    no_rfc7540_priorities = true;
                }
            }
        }
        if (fed.ended) break;
        in.remove_prefix(r.consumed);
    }
    return 0;
}
