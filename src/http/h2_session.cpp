// An HTTP/2 connection's state machine (RFC 9113): see h2_session.hpp.

#include "vela/http/h2_session.hpp"

#include <algorithm>
#include <array>

namespace vela::h2 {
namespace {

constexpr std::uint32_t kMaxStreamId = 0x7fffffffu;

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char c = a[i];
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
        if (c != b[i]) return false;
    }
    return true;
}

bool parse_length(std::string_view v, std::int64_t& out) noexcept {
    if (v.empty() || v.size() > 18) return false;
    std::int64_t n = 0;
    for (char c : v) {
        if (c < '0' || c > '9') return false;
        n = n * 10 + (c - '0');
    }
    out = n;
    return true;
}

// The checks of 8.2 and 8.3 over one header block, field by field, then as a whole.
struct BlockCheck {
    enum : std::uint8_t {
        kMethod = 1,
        kScheme = 2,
        kAuthority = 4,
        kPath = 8,
        kProtocol = 16,
        kStatus = 32,
    };
    Role role = Role::server;
    HeadersEnd::Kind kind = HeadersEnd::Kind::headers;  // or trailers (interim: by :status)
    bool connect_protocol = false;                      // we allow extended CONNECT
    std::uint8_t seen = 0;
    bool regular = false;
    bool connect = false;
    bool options = false;
    bool star = false;
    bool http_scheme = false;      // http or https: an authority is mandatory
    bool host = false;             // a Host field
    bool empty_authority = false;  // an empty :authority or Host

    int status = 0;
    std::int64_t content_length = -1;
    std::string_view why;

    bool fail(std::string_view w) noexcept {
        if (why.empty()) why = w;
        return false;
    }

    bool pseudo(std::string_view name, std::string_view value) noexcept {
        if (regular) return fail("a pseudo-field after a regular field");
        if (kind == HeadersEnd::Kind::trailers) return fail("a pseudo-field in trailers");
        std::uint8_t bit = 0;
        if (role == Role::server) {
            if (name == ":method") {
                bit = kMethod;
                connect = value == "CONNECT";
                options = value == "OPTIONS";
                if (value.empty()) return fail("an empty :method");
            } else if (name == ":scheme") {
                bit = kScheme;
                if (value.empty()) return fail("an empty :scheme");
                http_scheme = value == "http" || value == "https";
            } else if (name == ":authority") {
                bit = kAuthority;
                empty_authority = empty_authority || value.empty();
            } else if (name == ":path") {
                bit = kPath;
                if (value.empty()) return fail("an empty :path");
                star = value == "*";
                if (!star && value[0] != '/') return fail("a :path neither absolute nor *");
            } else if (name == ":protocol") {
                bit = kProtocol;
                if (!connect_protocol) return fail(":protocol without extended CONNECT");
            } else {
                return fail("an unknown request pseudo-field");
            }
        } else {
            if (name != ":status") return fail("an unknown response pseudo-field");
            bit = kStatus;
            if (value.size() != 3 || value[0] < '1' || value[0] > '9' || value[1] < '0' ||
                value[1] > '9' || value[2] < '0' || value[2] > '9') {
                return fail("a :status that is not three digits");
            }
            status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
        }
        if (seen & bit) return fail("a pseudo-field twice");
        seen |= bit;
        return true;
    }

    bool field(const hpack::DecodedField& f) noexcept {
        if (!f.name.empty() && f.name[0] == ':') {
            if (!f.valid) {
                if (!hpack::valid_name(f.name.substr(1))) {
                    return fail("a pseudo-field name with a bad character");
                }
                if (!hpack::valid_value(f.value)) return fail("a field value with a bad character");
            }
            return pseudo(f.name, f.value);
        }
        regular = true;
        if (!f.valid) {
            if (!hpack::valid_name(f.name)) {
                return fail("a field name with a bad character or upper case");
            }
            if (!hpack::valid_value(f.value)) return fail("a field value with a bad character");
        }
        switch (f.name.size()) {
            case 4:
                if (f.name == "host") {
                    // RFC 9110 7.2: a request with more than one Host field line is refused.
                    if (host) return fail("Host given twice");
                    host = true;
                    empty_authority = empty_authority || f.value.empty();
                }
                break;
            case 2:
                if (f.name == "te" && !iequals(f.value, "trailers")) {
                    return fail("TE other than trailers");
                }
                break;
            case 7:
                if (f.name == "upgrade") return fail("a connection-specific field");
                break;
            case 10:
                if (f.name == "connection" || f.name == "keep-alive") {
                    return fail("a connection-specific field");
                }
                break;
            case 14:
                if (f.name == "content-length") {
                    std::int64_t n = 0;
                    if (!parse_length(f.value, n))
                        return fail("a content-length that is not a number");
                    if (content_length >= 0 && content_length != n) {
                        return fail("content-length fields that differ");
                    }
                    content_length = n;
                }
                break;
            case 16:
                if (f.name == "proxy-connection") return fail("a connection-specific field");
                break;
            case 17:
                if (f.name == "transfer-encoding") return fail("a connection-specific field");
                break;
            default:
                break;
        }
        return true;
    }

    // 8.3.1 and 8.3.2, once the block is whole.
    bool finish() noexcept {
        if (!why.empty()) return false;
        if (kind == HeadersEnd::Kind::trailers) return true;
        if (role == Role::server) {
            if (seen & kProtocol) {
                // RFC 8441 4: extended CONNECT carries :scheme, :path and :authority.
                if (!connect) return fail(":protocol on a method other than CONNECT");
                if ((seen & (kScheme | kPath | kAuthority)) != (kScheme | kPath | kAuthority)) {
                    return fail("an extended CONNECT without :scheme, :path or :authority");
                }
                return true;
            }
            if (connect) {
                // 8.5: :authority only.
                if (!(seen & kAuthority)) return fail("a CONNECT without :authority");
                if (empty_authority) return fail("an empty :authority or Host");
                if (seen & (kScheme | kPath)) return fail("a CONNECT with :scheme or :path");
                return true;
            }
            if ((seen & (kMethod | kScheme | kPath)) != (kMethod | kScheme | kPath)) {
                return fail("a request without :method, :scheme or :path");
            }
            if (star && !options) return fail("a :path of * on a method other than OPTIONS");
            // 8.3.1: http and https carry their authority in :authority or Host.
            if (http_scheme && !(seen & kAuthority) && !host) {
                return fail("a request without :authority or Host");
            }
            // 8.3.1: "If these fields are present, they MUST NOT be empty."
            if (http_scheme && empty_authority) return fail("an empty :authority or Host");
            return true;
        }
        if (!(seen & kStatus)) return fail("a response without :status");
        return true;
    }
};

}  // namespace

// ---- Setup ----

Session::Session(SessionHandler& handler, const SessionOptions& options)
    : handler_(handler),
      opt_(options),
      // Until the peer acknowledges our SETTINGS it may go by the initial values: accept
      // frames up to the larger of the two.
      reader_(std::max(options.max_frame_size, default_max_frame_size)),
      decoder_(hpack::DecoderLimits{.max_table_size = hpack::default_table_size,
                                    .max_header_list_size = options.max_header_list_size,
                                    .max_string_length = options.max_header_list_size}),
      encoder_(options.encoder_table_size),
      next_local_stream_(options.role == Role::client ? 1 : 2),
      reset_tokens_(options.reset_burst) {
    if (opt_.role == Role::server) preface_left_ = static_cast<std::uint8_t>(client_preface.size());
}

Session::~Session() {
    for (Stream* s : streams_) delete s;
    for (Stream* s : spare_) delete s;
}

void Session::start(std::uint64_t now_ms) {
    if (started_) return;
    started_ = true;
    if (opt_.role == Role::client) out_.append(client_preface);
    std::array<Setting, 8> s{};
    std::size_t n = 0;
    if (opt_.header_table_size != hpack::default_table_size) {
        s[n++] = {static_cast<std::uint16_t>(SettingId::header_table_size), opt_.header_table_size};
    }
    if (opt_.role == Role::client) s[n++] = {static_cast<std::uint16_t>(SettingId::enable_push), 0};
    s[n++] = {static_cast<std::uint16_t>(SettingId::max_concurrent_streams),
              opt_.max_concurrent_streams};
    if (opt_.initial_window_size != default_initial_window_size) {
        s[n++] = {static_cast<std::uint16_t>(SettingId::initial_window_size),
                  opt_.initial_window_size};
    }
    if (opt_.max_frame_size != default_max_frame_size) {
        s[n++] = {static_cast<std::uint16_t>(SettingId::max_frame_size), opt_.max_frame_size};
    }
    s[n++] = {static_cast<std::uint16_t>(SettingId::max_header_list_size),
              opt_.max_header_list_size};
    if (opt_.role == Role::server && opt_.enable_connect_protocol) {
        s[n++] = {static_cast<std::uint16_t>(SettingId::enable_connect_protocol), 1};
    }
    append_settings(out_, std::span<const Setting>(s.data(), n));
    settings_unacked_ = 1;
    settings_sent_ms_ = now_ms;
    // Our stream windows beyond 65,535 hold as soon as we announce them (the peer may only
    // send less until it reads them); smaller ones once the peer acknowledged them.
    if (opt_.initial_window_size > local_initial_window_) {
        local_initial_window_ = opt_.initial_window_size;
    }
    if (opt_.connection_window_size > default_initial_window_size) {
        const std::uint32_t more = opt_.connection_window_size - default_initial_window_size;
        append_window_update(out_, 0, more);
        conn_recv_window_ += more;
    }
    conn_recv_target_ = std::max(opt_.connection_window_size, default_initial_window_size);
}

bool Session::start_upgraded(std::string_view http2_settings, std::uint64_t now_ms) {
    start(now_ms);
    // The HTTP2-Settings payload reads like a SETTINGS frame's (RFC 7540 3.2.1); it is not
    // acknowledged.
    std::string frame;
    append_frame_header(frame, static_cast<std::uint32_t>(http2_settings.size()),
                        FrameType::settings, 0, 0);
    frame.append(http2_settings);
    FrameReader r(max_max_frame_size);
    Frame f;
    const ReadResult res = r.read(frame, f);
    if (res.status != ReadStatus::frame) {
        return connection_error(res.error.code, "an HTTP2-Settings that is not SETTINGS");
    }
    if (FrameError e = check_settings(f); e.code != ErrorCode::no_error) {
        return connection_error(e.code, e.reason);
    }
    const std::size_t before = out_.size();
    if (!on_settings_frame(f)) return false;
    out_.resize(before);  // no SETTINGS ACK for these
    peer_settings_seen_ = false;
    queued_acks_ = 0;
    // Stream 1 carries the upgraded request, which has ended.
    last_peer_stream_ = last_processed_ = 1;
    Stream* s = new_stream(1);
    s->headers_done = true;
    s->state = StreamState::half_closed_remote;
    return true;
}

// ---- Receiving ----

std::size_t Session::receive(std::string_view bytes, std::uint64_t now_ms) {
    if (closed_) return bytes.size();
    now_ms_ = now_ms;
    std::size_t used = 0;
    if (preface_left_ > 0) {
        const std::size_t at = client_preface.size() - preface_left_;
        const std::size_t n = std::min<std::size_t>(preface_left_, bytes.size());
        if (bytes.substr(0, n) != client_preface.substr(at, n)) {
            connection_error(ErrorCode::protocol_error, "not the HTTP/2 client preface");
            return bytes.size();
        }
        preface_left_ = static_cast<std::uint8_t>(preface_left_ - n);
        used = n;
    }
    Frame f;
    while (used < bytes.size() && !closed_) {
        const ReadResult r = reader_.read(bytes.substr(used), f);
        if (r.status == ReadStatus::incomplete) break;
        if (r.status == ReadStatus::error) {
            if (r.error.connection()) {
                connection_error(r.error.code, r.error.reason);
                return bytes.size();
            }
            used += r.consumed;
            if (!peer_settings_seen_) {
                connection_error(ErrorCode::protocol_error, "the first frame is not SETTINGS");
                return bytes.size();
            }
            if (!count_control() || !stream_error(r.error.stream_id, r.error.code)) {
                return bytes.size();
            }
            continue;
        }
        used += r.consumed;
        if (!on_frame(f, now_ms)) return bytes.size();
    }
    return used;
}

bool Session::on_frame(const Frame& f, std::uint64_t now_ms) {
    (void)now_ms;
    // 3.4: the peer's first frame is its SETTINGS.
    if (!peer_settings_seen_ && (f.type != FrameType::settings || f.ack())) [[unlikely]] {
        return connection_error(ErrorCode::protocol_error, "the first frame is not SETTINGS");
    }
    switch (f.type) {
        case FrameType::data:
            return on_data_frame(f);
        case FrameType::headers:
            if (f.end_headers()) {
                return on_header_block(
                    f.stream_id, f.data, f.end_stream(),
                    f.has(flag::priority) && f.priority.dependency == f.stream_id);
            }
            block_.assign(f.data);
            block_stream_ = f.stream_id;
            block_frames_ = 1;
            block_end_stream_ = f.end_stream();
            block_priority_self_ = f.has(flag::priority) && f.priority.dependency == f.stream_id;
            return true;
        case FrameType::continuation:
            // The reader checked that a block is open on this stream.
            if (++block_frames_ > opt_.max_continuation_frames ||
                block_.size() + f.data.size() > max_block_size()) {
                return connection_error(ErrorCode::enhance_your_calm,
                                        "a header block over too many CONTINUATION frames");
            }
            block_.append(f.data);
            if (!f.end_headers()) return true;
            return on_header_block(block_stream_, block_, block_end_stream_, block_priority_self_);
        case FrameType::priority:
            return count_control();  // 5.3.2: parsed, then ignored
        case FrameType::rst_stream:
            return on_rst_stream(f, now_ms);
        case FrameType::settings:
            return on_settings_frame(f);
        case FrameType::push_promise:
            // 8.4: clients cannot push, and our clients announce ENABLE_PUSH 0 (6.6).
            return connection_error(ErrorCode::protocol_error,
                                    opt_.role == Role::server ? "PUSH_PROMISE from a client"
                                                              : "PUSH_PROMISE with push disabled");
        case FrameType::ping:
            if (!count_control()) return false;
            if (f.ack()) {
                handler_.on_ping_ack(f.data);
                return !closed_;
            }
            if (!queue_ack()) return false;
            append_ping(out_, f.data, true);
            return true;
        case FrameType::goaway:
            return on_goaway_frame(f);
        case FrameType::window_update:
            return on_window_update(f);
        case FrameType::unknown:
            return count_control();  // 5.5: ignored
    }
    return true;
}

// A header block is gathered whole before HPACK reads it: its encoded size is bounded well
// above what a header list within the limit needs, so that a larger list is still read (and
// answered 431) while memory stays bounded.
std::size_t Session::max_block_size() const noexcept {
    return std::max<std::size_t>(4 * std::size_t{opt_.max_header_list_size}, 64 * 1024);
}

bool Session::peer_initiated(std::uint32_t id) const noexcept {
    return ((id & 1) != 0) == (opt_.role == Role::server);
}

bool Session::idle_peer_id(std::uint32_t id) const noexcept {
    return peer_initiated(id) && id > last_peer_stream_;
}

bool Session::past_goaway(std::uint32_t id) const noexcept {
    // 6.8: once our GOAWAY is sent, frames on the streams the peer opened above the last
    // stream it named are ignored (no stream opens there, and last_processed_ stays what it
    // named). Streams the peer never opened are still idle (5.1).
    return goaway_sent_ && peer_initiated(id) && id > last_processed_ && id <= last_peer_stream_;
}

bool Session::idle_local_id(std::uint32_t id) const noexcept {
    return !peer_initiated(id) && id >= next_local_stream_;
}

void Session::discard_block(std::string_view block) {
    // The block still changes the dynamic table (4.3): decoded, its fields dropped.
    const hpack::Error e = decoder_.decode(block, [](const hpack::DecodedField&) {});
    if (e != hpack::Error::none && e != hpack::Error::header_list_too_large) {
        connection_error(ErrorCode::compression_error, hpack::error_message(e));
    }
}

bool Session::on_header_block(std::uint32_t id, std::string_view block, bool end_stream,
                              bool priority_self) {
    Stream* s = find(id);
    if (s == nullptr) {
        if (idle_peer_id(id)) {
            if (opt_.role == Role::client) {
                // A server opens streams only by PUSH_PROMISE, which we refuse.
                return connection_error(ErrorCode::protocol_error, "HEADERS on an idle stream");
            }
            last_peer_stream_ = id;  // 5.1.1: lower idle streams close with it
            if (goaway_sent_) {
                // 6.8: streams past our GOAWAY are ignored.
                discard_block(block);
                return !closed_;
            }
            if (priority_self || streams_.size() >= opt_.max_concurrent_streams) {
                // 5.3.1 (a stream depending on itself), 5.1.2 (over our limit: refused while
                // the peer may not know the limit yet, a connection error once it
                // acknowledged it, as 5.4 allows).
                discard_block(block);
                if (closed_) return false;
                if (!priority_self && settings_unacked_ == 0) {
                    return connection_error(
                        ErrorCode::protocol_error,
                        "more streams than the max concurrent streams acknowledged");
                }
                if (!count_control()) return false;
                if (!take_reset_token(now_ms_)) {
                    return connection_error(ErrorCode::enhance_your_calm, "streams reset too fast");
                }
                append_rst_stream(
                    out_, id,
                    priority_self ? ErrorCode::protocol_error : ErrorCode::refused_stream);
                remember(id, ClosedHow::reset_by_us);
                return true;
            }
            s = new_stream(id);
            last_processed_ = id;
            return deliver_block(*s, block, end_stream);
        }
        if (!peer_initiated(id) && idle_local_id(id)) {
            return connection_error(ErrorCode::protocol_error, "HEADERS on an idle stream");
        }
        if (!peer_initiated(id) && opt_.role == Role::server) {
            return connection_error(ErrorCode::protocol_error,
                                    "HEADERS on a stream id a client cannot use");
        }
        discard_block(block);
        if (closed_) return false;
        return frame_on_closed(id, FrameType::headers);
    }
    if (!s->remote_open()) {
        // 5.1: frames after the peer's END_STREAM (closed state: "any frames after receiving
        // a frame with the END_STREAM flag set") end the connection.
        discard_block(block);
        if (closed_) return false;
        return connection_error(ErrorCode::stream_closed, "HEADERS after the stream's END_STREAM");
    }
    if (priority_self) {
        discard_block(block);
        if (closed_) return false;
        return count_control() && stream_error(id, ErrorCode::protocol_error);
    }
    return deliver_block(*s, block, end_stream);
}

bool Session::deliver_block(Stream& s, std::string_view block, bool end_stream) {
    BlockCheck check;
    check.role = opt_.role;
    check.kind = s.headers_done ? HeadersEnd::Kind::trailers : HeadersEnd::Kind::headers;
    check.connect_protocol = opt_.role == Role::server && opt_.enable_connect_protocol;
    handler_.on_begin_headers(s);
    bool ok = true;
    const hpack::Error e = decoder_.decode(block, [&](const hpack::DecodedField& f) {
        if (!ok) return;
        if (!check.field(f)) {
            ok = false;
            return;
        }
        handler_.on_field(s, f);
    });
    if (e != hpack::Error::none && e != hpack::Error::header_list_too_large) {
        return connection_error(ErrorCode::compression_error, hpack::error_message(e));
    }
    if (closed_) return false;
    HeadersEnd end;
    end.kind = check.kind;
    end.end_stream = end_stream;
    end.list_too_large = e == hpack::Error::header_list_too_large;
    if (ok && !end.list_too_large) ok = check.finish();
    if (ok && end.kind == HeadersEnd::Kind::trailers && !end_stream) {
        ok = check.fail("trailers without END_STREAM");  // 8.1
    }
    if (ok && end.kind == HeadersEnd::Kind::headers && opt_.role == Role::client) {
        if (check.status >= 100 && check.status < 200) {
            // 8.1: interim responses; 101 does not exist in HTTP/2 (8.6).
            if (check.status == 101) ok = check.fail("a 101 response");
            if (end_stream) ok = check.fail("an interim response with END_STREAM");
            end.kind = HeadersEnd::Kind::interim;
        } else if (!s.head_request && check.status != 304) {
            s.content_length = check.content_length;
        }
    } else if (ok && end.kind == HeadersEnd::Kind::headers) {
        s.content_length = check.content_length;
    }
    // 8.1.1: a body of another length than content-length announced.
    if (ok && end_stream && s.content_length >= 0 &&
        static_cast<std::uint64_t>(s.content_length) != s.data_received) {
        ok = check.fail("a body shorter than its content-length");
    }
    if (!ok) {
        // 8.1.1: a malformed message is a stream error PROTOCOL_ERROR.
        reason_ = check.why;
        return count_control() && stream_error(s.id, ErrorCode::protocol_error);
    }
    if (end.kind != HeadersEnd::Kind::interim) s.headers_done = true;
    const std::uint32_t id = s.id;
    handler_.on_headers(s, end);
    if (closed_) return false;
    if (end_stream) remote_ended(id);
    return true;
}

bool Session::on_data_frame(const Frame& f) {
    const std::uint32_t id = f.stream_id;
    // 6.9.1: the whole frame counts, padding included, whatever the stream's state.
    if (f.length > conn_recv_window_) {
        return connection_error(ErrorCode::flow_control_error,
                                "DATA beyond the connection's flow-control window");
    }
    conn_recv_window_ -= f.length;
    Stream* s = find(id);
    if (s == nullptr) {
        give_back(f.length);
        if (past_goaway(id)) return count_control();  // 6.8: ignored
        if (idle_peer_id(id) || idle_local_id(id)) {
            return connection_error(ErrorCode::protocol_error, "DATA on an idle stream");
        }
        return frame_on_closed(id, FrameType::data);
    }
    if (!s->remote_open()) {
        return connection_error(ErrorCode::stream_closed, "DATA after the stream's END_STREAM");
    }
    if (!s->headers_done) {
        // Client role: DATA before the final response's HEADERS is malformed.
        give_back(f.length);
        reason_ = "DATA before the response's HEADERS";
        return count_control() && stream_error(id, ErrorCode::protocol_error);
    }
    // A SETTINGS_INITIAL_WINDOW_SIZE made smaller can leave the window below zero (6.9.2);
    // a DATA frame of no length takes nothing from it and is always allowed (6.9.1).
    if (f.length != 0 && f.length > s->recv_window) {
        give_back(f.length);
        return count_control() && stream_error(id, ErrorCode::flow_control_error);
    }
    s->recv_window -= f.length;
    const std::size_t padding = f.length - f.data.size();
    if (padding != 0) {
        s->held += padding;
        consume(*s, padding);  // padding never reaches the driver
    }
    if (f.data.empty() && !f.end_stream() && !count_control()) return false;
    s->data_received += f.data.size();
    if (s->content_length >= 0 &&
        (s->data_received > static_cast<std::uint64_t>(s->content_length) ||
         (f.end_stream() && s->data_received != static_cast<std::uint64_t>(s->content_length)))) {
        give_back(f.data.size());
        reason_ = "a body of another length than its content-length";
        return count_control() && stream_error(id, ErrorCode::protocol_error);
    }
    s->held += f.data.size();
    handler_.on_data(*s, f.data, f.end_stream());
    if (closed_) return false;
    if (f.end_stream()) remote_ended(id);
    return true;
}

bool Session::on_settings_frame(const Frame& f) {
    if (!count_control()) return false;
    if (f.ack()) {
        // An acknowledgement of ours: what we announced is now in force.
        if (settings_unacked_ > 0) {
            --settings_unacked_;
            apply_local_settings();
        }
        return true;
    }
    if (f.setting_count() > opt_.max_settings_per_frame) {
        return connection_error(ErrorCode::enhance_your_calm, "too many SETTINGS entries");
    }
    if (FrameError e = check_settings(f); e.code != ErrorCode::no_error) {
        return connection_error(e.code, e.reason);
    }
    for (std::size_t i = 0; i < f.setting_count(); ++i) {
        const Setting st = f.setting(i);
        switch (static_cast<SettingId>(st.id)) {
            case SettingId::header_table_size:
                peer_.header_table_size = st.value;
                encoder_.set_peer_max_table_size(st.value);
                break;
            case SettingId::enable_push:
                // 6.5.2: a server announcing 1 is a connection error.
                if (opt_.role == Role::client && st.value == 1) {
                    return connection_error(ErrorCode::protocol_error,
                                            "SETTINGS_ENABLE_PUSH 1 from a server");
                }
                peer_.enable_push = st.value == 1;
                break;
            case SettingId::max_concurrent_streams:
                peer_.max_concurrent_streams = st.value;
                break;
            case SettingId::initial_window_size: {
                // 6.9.2: every stream's window moves by the difference.
                const std::int64_t delta =
                    static_cast<std::int64_t>(st.value) - peer_.initial_window_size;
                peer_.initial_window_size = st.value;
                for (Stream* s : streams_) {
                    s->send_window += delta;
                    if (s->send_window > max_window_size) {
                        return connection_error(ErrorCode::flow_control_error,
                                                "SETTINGS_INITIAL_WINDOW_SIZE takes a window over "
                                                "2^31-1");
                    }
                }
                break;
            }
            case SettingId::max_frame_size:
                peer_.max_frame_size = st.value;
                break;
            case SettingId::max_header_list_size:
                peer_.max_header_list_size = st.value;
                break;
            case SettingId::enable_connect_protocol:
                // RFC 8441 3: once 1, it stays 1.
                if (connect_protocol_seen_ && st.value == 0) {
                    return connection_error(ErrorCode::protocol_error,
                                            "SETTINGS_ENABLE_CONNECT_PROTOCOL back to 0");
                }
                connect_protocol_seen_ = connect_protocol_seen_ || st.value == 1;
                peer_.enable_connect_protocol = st.value == 1;
                break;
            default:
                break;  // 6.5.2: unknown settings are ignored
        }
    }
    peer_settings_seen_ = true;
    if (!queue_ack()) return false;
    append_settings_ack(out_);
    // A window that grew may let blocked streams go on.
    for (std::size_t i = 0; i < streams_.size() && !closed_; ++i) {
        Stream* s = streams_[i];
        if (s->blocked && send_window(*s) > 0) {
            s->blocked = false;
            handler_.on_writable(*s);
        }
    }
    return !closed_;
}

void Session::apply_local_settings() {
    decoder_.set_max_table_size(opt_.header_table_size);
    reader_.set_max_frame_size(opt_.max_frame_size);
    if (opt_.initial_window_size != local_initial_window_) {
        const std::int64_t delta =
            static_cast<std::int64_t>(opt_.initial_window_size) - local_initial_window_;
        local_initial_window_ = opt_.initial_window_size;
        for (Stream* s : streams_) {
            s->recv_window += delta;
            // Bytes consumed and not yet announced may now pass the smaller threshold: left
            // unannounced, a window taken to zero or below would stall the stream for good.
            if (s->remote_open() && s->unacked > 0 && s->unacked >= local_initial_window_ / 2) {
                append_window_update(out_, s->id, s->unacked);
                s->recv_window += s->unacked;
                s->unacked = 0;
            }
        }
    }
}

bool Session::on_window_update(const Frame& f) {
    if (!count_control()) return false;
    if (f.stream_id == 0) {
        conn_send_window_ += f.increment;
        if (conn_send_window_ > max_window_size) {
            return connection_error(ErrorCode::flow_control_error,
                                    "a connection window over 2^31-1");
        }
        if (conn_send_window_ > 0) {
            for (std::size_t i = 0; i < streams_.size() && !closed_; ++i) {
                Stream* s = streams_[i];
                if (s->blocked && s->send_window > 0) {
                    s->blocked = false;
                    handler_.on_writable(*s);
                }
            }
        }
        return !closed_;
    }
    Stream* s = find(f.stream_id);
    if (s == nullptr) {
        if (past_goaway(f.stream_id)) return true;  // 6.8: ignored
        if (idle_peer_id(f.stream_id) || idle_local_id(f.stream_id)) {
            return connection_error(ErrorCode::protocol_error, "WINDOW_UPDATE on an idle stream");
        }
        return true;  // 5.1: may arrive shortly after a stream closed
    }
    s->send_window += f.increment;
    if (s->send_window > max_window_size) {
        return stream_error(s->id, ErrorCode::flow_control_error);
    }
    if (s->blocked && s->send_window > 0 && conn_send_window_ > 0) {
        s->blocked = false;
        handler_.on_writable(*s);
    }
    return !closed_;
}

bool Session::on_rst_stream(const Frame& f, std::uint64_t now_ms) {
    if (!count_control()) return false;
    Stream* s = find(f.stream_id);
    if (s == nullptr) {
        if (past_goaway(f.stream_id)) return true;  // 6.8: ignored
        if (idle_peer_id(f.stream_id) || idle_local_id(f.stream_id)) {
            return connection_error(ErrorCode::protocol_error, "RST_STREAM on an idle stream");
        }
        return true;
    }
    if (peer_initiated(s->id) && !take_reset_token(now_ms)) {
        return connection_error(ErrorCode::enhance_your_calm, "streams reset too fast");
    }
    close_stream(*s, f.error_code, true, ClosedHow::reset_by_peer);
    return !closed_;
}

bool Session::on_goaway_frame(const Frame& f) {
    if (!count_control()) return false;
    goaway_received_ = true;
    goaway_last_ = std::min(goaway_last_, f.last_stream_id);
    handler_.on_goaway(f.last_stream_id, f.error_code, f.data);
    if (closed_) return false;
    // Our streams the peer did not process are refused (safe to retry elsewhere).
    for (std::size_t i = streams_.size(); i-- > 0 && !closed_;) {
        if (i >= streams_.size()) continue;
        Stream* s = streams_[i];
        if (!peer_initiated(s->id) && s->id > goaway_last_) {
            close_stream(*s, ErrorCode::refused_stream, true, ClosedHow::reset_by_peer);
        }
    }
    if (f.error_code != ErrorCode::no_error && !closed_) {
        // The peer ends the connection for an error: nothing more will be processed.
        error_ = f.error_code;
        reason_ = "GOAWAY from the peer";
        closed_ = true;
        while (!streams_.empty()) {
            close_stream(*streams_.back(), f.error_code, true, ClosedHow::reset_by_peer);
        }
        return false;
    }
    return !closed_;
}

// ---- Errors and defences ----

bool Session::stream_error(std::uint32_t id, ErrorCode code) {
    if (peer_initiated(id) && !take_reset_token(now_ms_)) {
        return connection_error(ErrorCode::enhance_your_calm, "streams reset too fast");
    }
    append_rst_stream(out_, id, code);
    if (Stream* s = find(id)) {
        close_stream(*s, code, false, ClosedHow::reset_by_us);
    } else {
        remember(id, ClosedHow::reset_by_us);
    }
    return !closed_;
}

bool Session::frame_on_closed(std::uint32_t id, FrameType type) {
    switch (closed_how(id)) {
        case ClosedHow::ended:
            // 5.1: frames after the peer's END_STREAM on a closed stream.
            return connection_error(ErrorCode::stream_closed, "a frame on a stream the peer ended");
        case ClosedHow::reset_by_us:
            // 5.1: ignored; they may have left before our RST_STREAM arrived.
            return true;
        case ClosedHow::reset_by_peer:
            break;  // 5.1: a stream error STREAM_CLOSED
        case ClosedHow::unknown:
            // 5.1.1: a peer's stream cannot open below one it opened already.
            if (type == FrameType::headers && peer_initiated(id)) {
                return connection_error(ErrorCode::protocol_error, "HEADERS on a lower stream id");
            }
            break;
    }
    return count_control() && stream_error(id, ErrorCode::stream_closed);
}

bool Session::connection_error(ErrorCode code, std::string_view reason) {
    if (closed_) return false;
    append_goaway(out_, last_processed_, code, reason);
    error_ = code;
    reason_ = reason;
    closed_ = true;
    goaway_sent_ = true;
    while (!streams_.empty()) {
        close_stream(*streams_.back(), code, false, ClosedHow::reset_by_us);
    }
    return false;
}

bool Session::count_control() {
    if (++control_frames_ <= opt_.max_control_frames) return true;
    return connection_error(ErrorCode::enhance_your_calm, "too many control frames");
}

bool Session::take_reset_token(std::uint64_t now_ms) {
    if (now_ms > reset_refill_ms_) {
        reset_tokens_ = std::min<double>(
            opt_.reset_burst, reset_tokens_ + static_cast<double>(now_ms - reset_refill_ms_) *
                                                  opt_.resets_per_second / 1000.0);
        reset_refill_ms_ = now_ms;
    }
    if (reset_tokens_ < 1) return false;
    reset_tokens_ -= 1;
    return true;
}

bool Session::queue_ack() {
    if (out_.empty()) queued_acks_ = 0;
    if (++queued_acks_ <= opt_.max_queued_acks) return true;
    // The peer does not read what we send: no GOAWAY either, it would not read it.
    error_ = ErrorCode::enhance_your_calm;
    reason_ = "acknowledgements the peer does not read";
    closed_ = true;
    while (!streams_.empty()) {
        close_stream(*streams_.back(), error_, false, ClosedHow::reset_by_us);
    }
    return false;
}

bool Session::tick(std::uint64_t now_ms) {
    now_ms_ = now_ms;
    if (closed_) return false;
    if (settings_unacked_ > 0 && now_ms - settings_sent_ms_ > opt_.settings_timeout_ms) {
        return connection_error(ErrorCode::settings_timeout, "SETTINGS not acknowledged");
    }
    return true;
}

// ---- Streams ----

Stream* Session::find(std::uint32_t id) noexcept {
    if (streams_.empty()) return nullptr;
    if (streams_.back()->id == id) return streams_.back();
    const auto it = std::lower_bound(streams_.begin(), streams_.end(), id,
                                     [](const Stream* s, std::uint32_t v) { return s->id < v; });
    return it != streams_.end() && (*it)->id == id ? *it : nullptr;
}

Stream* Session::new_stream(std::uint32_t id) {
    Stream* s;
    if (spare_.empty()) {
        s = new Stream;
    } else {
        s = spare_.back();
        spare_.pop_back();
        *s = Stream{};
    }
    s->id = id;
    s->send_window = peer_.initial_window_size;
    s->recv_window = local_initial_window_;
    if (streams_.empty() || streams_.back()->id < id) {
        streams_.push_back(s);
    } else {
        const auto it =
            std::lower_bound(streams_.begin(), streams_.end(), id,
                             [](const Stream* a, std::uint32_t v) { return a->id < v; });
        streams_.insert(it, s);
    }
    return s;
}

void Session::close_stream(Stream& s, ErrorCode code, bool by_peer, ClosedHow how) {
    const auto it = std::lower_bound(streams_.begin(), streams_.end(), s.id,
                                     [](const Stream* a, std::uint32_t v) { return a->id < v; });
    if (it == streams_.end() || *it != &s) return;
    streams_.erase(it);
    remember(s.id, how);
    // Body bytes the driver will not consume go back to the connection's window.
    if (s.held > 0 && !closed_) give_back(s.held);
    s.held = 0;
    handler_.on_close(s, code, by_peer);
    s.user = nullptr;
    spare_.push_back(&s);
}

// The peer's END_STREAM on stream `id`, once the driver saw it (and may have reset it).
void Session::remote_ended(std::uint32_t id) {
    Stream* s = find(id);
    if (s == nullptr) return;
    if (opt_.role == Role::server) control_frames_ = 0;  // a request: the budget restarts
    if (s->state == StreamState::half_closed_local) {
        close_stream(*s, ErrorCode::no_error, false, ClosedHow::ended);
    } else {
        s->state = StreamState::half_closed_remote;
    }
}

// A request body whose rest the client declared (content-length), at most one frame, which
// the stream's window lets it send now: the response completed before it is not followed by
// RST_STREAM (8.1 makes it optional); the stream half-closes and the driver drops the bytes.
// Clients that send HEADERS and DATA in separate writes (curl 7.88) lose a response whose
// stream is reset while they upload, such as a 401 answered from the request's head.
bool Session::small_rest_of_body(const Stream& s) const noexcept {
    if (s.content_length < 0 || !s.remote_open()) return false;
    const auto declared = static_cast<std::uint64_t>(s.content_length);
    if (declared < s.data_received) return false;
    const std::uint64_t rest = declared - s.data_received;
    return rest <= 16 * 1024 && static_cast<std::int64_t>(rest) <= s.recv_window &&
           static_cast<std::int64_t>(rest) <= conn_recv_window_;
}

void Session::end_local(Stream& s) {
    if (s.state == StreamState::half_closed_remote) {
        close_stream(s, ErrorCode::no_error, false, ClosedHow::ended);
        return;
    }
    if (opt_.role == Role::server && !s.await_peer_end) {
        if (!small_rest_of_body(s)) {
            // 8.1: the response is complete before the request: ask the client to stop
            // sending with RST_STREAM NO_ERROR.
            append_rst_stream(out_, s.id, ErrorCode::no_error);
            close_stream(s, ErrorCode::no_error, false, ClosedHow::reset_by_us);
            return;
        }
        s.answered_early = true;
    }
    s.state = StreamState::half_closed_local;
}

void Session::remember(std::uint32_t id, ClosedHow how) noexcept {
    closed_streams_[closed_next_++ % kClosed] = {id, how};
}

Session::ClosedHow Session::closed_how(std::uint32_t id) const noexcept {
    for (const ClosedEntry& e : closed_streams_)
        if (e.id == id) return e.how;
    return ClosedHow::unknown;
}

// ---- Sending ----

Stream* Session::open_stream(std::span<const hpack::EncoderField> fields, bool end_stream,
                             void* user) {
    if (opt_.role != Role::client || closed_ || goaway_received_ || goaway_sent_) return nullptr;
    if (streams_.size() >= peer_.max_concurrent_streams) return nullptr;
    if (next_local_stream_ > kMaxStreamId) return nullptr;
    Stream* s = new_stream(next_local_stream_);
    next_local_stream_ += 2;
    s->user = user;
    for (const hpack::EncoderField& f : fields) {
        if (f.name == ":method") {
            s->head_request = f.value == "HEAD";
            break;
        }
    }
    send_headers(*s, fields, end_stream);
    return s;
}

void Session::send_headers(Stream& s, std::span<const hpack::EncoderField> fields,
                           bool end_stream) {
    std::string& block = begin_headers();
    encoder_.begin_block(block);
    for (const hpack::EncoderField& f : fields) encoder_.add(f, block);
    end_headers(s, end_stream);
}

std::string& Session::begin_headers() {
    scratch_.clear();
    return scratch_;
}

void Session::end_headers(Stream& s, bool end_stream) {
    append_headers(out_, s.id, scratch_, end_stream, peer_.max_frame_size);
    if (end_stream) end_local(s);
}

std::size_t Session::send_window(const Stream& s) const noexcept {
    const std::int64_t w = std::min(s.send_window, conn_send_window_);
    return w > 0 ? static_cast<std::size_t>(w) : 0;
}

std::size_t Session::send_data(Stream& s, std::string_view data, bool end_stream) {
    const std::size_t n = std::min(data.size(), send_window(s));
    std::size_t at = 0;
    const std::size_t frame = peer_.max_frame_size;
    while (at < n) {
        const std::size_t len = std::min(frame, n - at);
        at += len;
        append_data(out_, s.id, data.substr(at - len, len), end_stream && at == data.size());
    }
    s.send_window -= static_cast<std::int64_t>(n);
    conn_send_window_ -= static_cast<std::int64_t>(n);
    if (n < data.size()) {
        s.blocked = true;
        return n;
    }
    if (end_stream) {
        if (data.empty()) append_data(out_, s.id, {}, true);  // not flow-controlled
        end_local(s);
    }
    return n;
}

void Session::give_back(std::uint64_t n) {
    conn_unacked_ += static_cast<std::uint32_t>(n);
    if (conn_unacked_ >= conn_recv_target_ / 2) {
        append_window_update(out_, 0, conn_unacked_);
        conn_recv_window_ += conn_unacked_;
        conn_unacked_ = 0;
    }
}

void Session::consume(Stream& s, std::size_t n) {
    n = std::min<std::uint64_t>(n, s.held);
    if (n == 0) return;
    s.held -= n;
    give_back(n);
    if (!s.remote_open()) return;  // nothing more to receive on it
    s.unacked += static_cast<std::uint32_t>(n);
    if (s.unacked >= local_initial_window_ / 2) {
        append_window_update(out_, s.id, s.unacked);
        s.recv_window += s.unacked;
        s.unacked = 0;
    }
}

void Session::reset(Stream& s, ErrorCode code) {
    append_rst_stream(out_, s.id, code);
    close_stream(s, code, false, ClosedHow::reset_by_us);
}

void Session::ping(std::string_view opaque8) { append_ping(out_, opaque8, false); }

void Session::shutdown() {
    if (goaway_sent_ || closed_) return;
    goaway_sent_ = true;
    append_goaway(out_, last_processed_, ErrorCode::no_error);
}

void Session::terminate(ErrorCode code, std::string_view reason) { connection_error(code, reason); }

}  // namespace vela::h2
