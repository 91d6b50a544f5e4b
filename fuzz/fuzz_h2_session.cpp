// Differential HTTP/2 session fuzzing: our Session (server role) and nghttp2's server session
// read the same client bytes, one frame at a time, and must agree on what each frame did.
//
// Input (structured, so that the fuzzer reaches deep states): a configuration byte (the max
// concurrent streams, 1, 2, 4 or 100, and the initial window, 65,535, 4,096, 16,384 or 1,000,
// both announce), then operations, each an opcode byte and its arguments (see build()).
// Client operations become frames: HEADERS (fields from kFields or given as bytes, encoded by
// our HPACK encoder; END_STREAM, PRIORITY with a chosen or its own stream, PADDED; split into
// up to 3 CONTINUATION frames at chosen points) on a new or a chosen stream, DATA of N bytes
// (END_STREAM, padding), RST_STREAM, WINDOW_UPDATE, PRIORITY, PING, SETTINGS with chosen
// entries, SETTINGS ACK, GOAWAY and raw frames of any type. Server operations act on both
// sessions between two frames: respond to a stream (:status 200 and a body of N bytes, sent as
// the windows allow; one body in flight at a time, as which of two blocked bodies goes first
// is scheduling), reset it, consume its body (flow control is given back only when the driver
// consumes, nghttp2 running with no_auto_window_update), shut down (GOAWAY NO_ERROR). The
// client bytes are built once; both sessions get the preface and an empty SETTINGS first.
// Both announce the same SETTINGS (the configuration's, header list 64 KiB) and have the same
// limits (32 settings per frame, 64 CONTINUATION frames, 1000 queued acknowledgements, resets
// 1000 then 33/s); both check messages (RFC 9113 8.2, 8.3; nghttp2 does by default). A
// response complete before its request ends the stream with RST_STREAM NO_ERROR on both (8.1:
// our Session does so, nghttp2 is made to by on_frame_send), except where our Session answers
// early (a small declared rest of the body that the windows let in: the stream half-closes,
// Stream::answered_early; 8.1 makes the reset optional): nghttp2 is then left to half-close
// too (its own default), and both read the rest of the body alike.
//
// Compared per frame (the run stops at the first connection error, after its check):
// (1) the verdict: the GOAWAY code of a connection error, else the RST_STREAM frames (stream
//     and code), else acceptance;
// (2) the header fields each side delivered for each header block both took;
// (3) the DATA bytes delivered per stream where neither side reset the stream;
// (4) the streams closed, with their codes; after a GOAWAY, that both are done (no stream
//     left: our drained(), nghttp2's want_read) at the same frame.
//
// Checked alike (no allowance needed): streams over the limit are refused with REFUSED_STREAM
// before the client acknowledged our SETTINGS and end the connection (PROTOCOL_ERROR) after;
// a request needs :authority or Host (nghttp2 asks for it on every scheme, see below);
// upper case and 8.2.1's forbidden characters in names are a stream error on both.
//
// Where the two differ by design, the comparison allows it; a stream one side still holds is
// then reset on it too (so that both count the same streams) and no longer compared. Each
// case, with the section of RFC 9113 (or RFC 9110, 9218) that leaves the choice:
// - Closed streams (5.1): nghttp2 forgets a stream once it closed and ignores most frames on
//   streams it does not hold; our Session remembers how the last 64 streams closed: frames
//   after the client's END_STREAM on a stream both ended are a connection error
//   STREAM_CLOSED, frames after the client's RST_STREAM a stream error STREAM_CLOSED (older
//   closed streams look unknown: a stream error STREAM_CLOSED, or PROTOCOL_ERROR for HEADERS
//   on a lower id, 5.1.1), frame-layer stream errors (WINDOW_UPDATE of 0, 6.9) are answered.
//   Allowed where nghttp2 does not hold the stream. DATA there is discarded unread by nghttp2,
//   so padding that does not fit goes unseen (6.1 asks for PROTOCOL_ERROR): allowed.
// - Frames on a stream we reset, after the client's END_STREAM: we ignore them (5.1 "MUST
//   ignore frames ... after it has sent a RST_STREAM"), nghttp2 ends the connection with
//   STREAM_CLOSED (5.1 closed: MAY). Allowed.
// - A stream error of ours made a connection error with the same code by nghttp2 (5.4.1:
//   allowed to any endpoint), e.g. DATA after the client's RST_STREAM. Allowed.
// - An unsolicited SETTINGS ACK: harmless for us (6.5.3 names no error), PROTOCOL_ERROR for
//   nghttp2. Allowed.
// - A stream depending on itself (5.3.1): a stream error PROTOCOL_ERROR for us, once the
//   header block is whole; nghttp2 ends the connection at the HEADERS or PRIORITY frame (on a
//   new stream), and does not check trailers' HEADERS. Allowed.
// - nghttp2 judges a header block's stream and fields as its frames come, we once the block
//   is whole: when nghttp2 resets or ends at a HEADERS or CONTINUATION frame without
//   END_HEADERS, ours goes on until the block's end and must then give the same code (5.4.1:
//   or reset the stream where nghttp2 ended the connection).
// - A frame breaking two rules (the RFC orders no checks): our frame layer (sizes, padding)
//   comes first, nghttp2 may look at the stream first; HPACK errors (COMPRESSION_ERROR) come
//   first for us on a header block; SETTINGS values are checked in nghttp2's own order (6.5:
//   in the order given), and an invalid value followed by a valid one for the same identifier
//   is not seen by nghttp2 (6.5.2 asks for a connection error). Allowed.
// - A GOAWAY naming a stream we could not have opened (an odd last stream id): nghttp2 ends the
//   connection PROTOCOL_ERROR, 6.8 names no error. Allowed.
// - A GOAWAY with an error from the client ends our session (the client closes, 5.4.1);
//   nghttp2 reads on. The run stops there.
// - After our GOAWAY (6.8): new streams are ignored by both, but nghttp2 still counts them
//   against the concurrency limit (a connection error), ignores frames on them without the
//   frame layer's checks (4.2, 6.2, 6.4 ask for connection errors) and ignores DATA on idle
//   streams (5.1: PROTOCOL_ERROR for us). Allowed.
// - SETTINGS_NO_RFC7540_PRIORITIES (RFC 9218 2.1) is unknown to us (6.5.2: ignored); nghttp2
//   checks its value and that it does not change. Allowed.
// - content-length on a CONNECT request: we hold the DATA to it (8.1.1 says so of every
//   request), nghttp2 leaves the tunnel's bytes (8.5) alone. Allowed.
// - The form of :path with a scheme other than http and https: we ask for an absolute path, or
//   * with OPTIONS, on every scheme, nghttp2 on http and https only (8.3.1 sets the rule for
//   those). Allowed.
// - Header blocks we take and nghttp2 refuses (see lenient()): content-length given twice with
//   the same value (RFC 9110 8.6 MAY), no :authority nor Host, or an empty :authority, with a
//   scheme other than http and https (8.3.1 asks for a non-empty one only where the scheme
//   has a mandatory authority), values with
//   control characters other than NUL, CR and LF (8.2.1; RFC 9110 5.5 lets recipients keep
//   them), names with characters outside RFC 9110's token that 8.2.1 allows (8.2.1 only
//   recommends the token check), content-length or Host in trailers (RFC 9110 6.5.1, 8.6:
//   trailer fields; nghttp2 holds the body to the one and checks the other), and a request
//   block with no field at all (8.3.1: malformed; nghttp2 1.52 passes it).
// - Our record of closed streams holds the last 64: HEADERS on a stream closed before them
//   reads as a new stream below the highest id (PROTOCOL_ERROR, which 5.1 allows for frames
//   arriving long after END_STREAM) where nghttp2 still knows it closed (STREAM_CLOSED).
//   Allowed.
// Not reached by this target (fuzz_h2_frame covers them): nghttp2 leaves CONTINUATION frames
// over SETTINGS_MAX_FRAME_SIZE unchecked (4.2).

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vela/http/h2_session.hpp"

namespace {

using namespace vela::h2;
using vela::hpack::DecodedField;
using vela::hpack::EncoderField;

// Reports the line of a failed comparison (the crash's stack names it too).
void check(bool ok, int line = __builtin_LINE()) {
    if (ok) return;
    std::fprintf(stderr, "fuzz_h2_session: check failed at line %d\n", line);
    __builtin_trap();
}

// H2_SESSION_TRACE=1 prints each step and what both sides did.
const bool kTrace = std::getenv("H2_SESSION_TRACE") != nullptr;

using Fields = std::vector<std::pair<std::string, std::string>>;

// What one side did while reading one frame (or during one server operation).
struct Events {
    bool goaway = false;
    std::uint32_t goaway_code = 0;
    std::string debug;
    std::map<std::uint32_t, std::uint32_t> resets;  // RST_STREAM sent: stream -> code
    std::map<std::uint32_t, Fields> blocks;         // header blocks delivered whole
    std::map<std::uint32_t, std::string> data;      // DATA bytes delivered
    std::map<std::uint32_t, std::uint32_t> closed;  // streams closed -> code
    void clear() { *this = Events{}; }

    void trace(const char* who) const {
        std::fprintf(stderr, "  %s:", who);
        if (goaway) std::fprintf(stderr, " GOAWAY %u (%s)", goaway_code, debug.c_str());
        for (const auto& [id, code] : resets) std::fprintf(stderr, " RST %u:%u", id, code);
        for (const auto& [id, f] : blocks) {
            std::fprintf(stderr, " block %u:", id);
            for (const auto& [n, v] : f) std::fprintf(stderr, " [%s: %s]", n.c_str(), v.c_str());
        }
        for (const auto& [id, d] : data) std::fprintf(stderr, " data %u:%zu", id, d.size());
        for (const auto& [id, code] : closed) std::fprintf(stderr, " close %u:%u", id, code);
        std::fprintf(stderr, "\n");
    }
};

// Reads the frames a session wrote into `ev`.
void read_output(std::string_view out, Events& ev) {
    FrameReader reader(max_max_frame_size);
    Frame f;
    while (!out.empty()) {
        const ReadResult r = reader.read(out, f);
        check(r.status == ReadStatus::frame);  // both write valid frames
        out.remove_prefix(r.consumed);
        if (f.type == FrameType::goaway && f.error_code != ErrorCode::no_error) {
            ev.goaway = true;
            ev.goaway_code = static_cast<std::uint32_t>(f.error_code);
            ev.debug.assign(f.data);
        } else if (f.type == FrameType::rst_stream && f.error_code != ErrorCode::no_error) {
            ev.resets.emplace(f.stream_id, static_cast<std::uint32_t>(f.error_code));
        }
    }
}

// ---- Our side ----

struct Ours : SessionHandler {
    Session session;
    Events ev;
    Fields fields;                                 // the block being delivered
    std::map<std::uint32_t, std::size_t> pending;  // response body bytes still to send
    std::map<std::uint32_t, std::uint64_t> held;   // body bytes delivered, not consumed
    std::string body;

    explicit Ours(const SessionOptions& o) : session(*this, o) {}

    void on_begin_headers(Stream&) override { fields.clear(); }
    void on_field(Stream&, const DecodedField& f) override {
        fields.emplace_back(std::string(f.name), std::string(f.value));
    }
    void on_headers(Stream& s, const HeadersEnd& end) override {
        if (end.list_too_large) fields.emplace_back(":too-large", "");
        ev.blocks[s.id] = fields;
    }
    void on_data(Stream& s, std::string_view data, bool) override {
        ev.data[s.id].append(data);
        held[s.id] += data.size();
    }
    void on_close(Stream& s, ErrorCode code, bool) override {
        ev.closed[s.id] = static_cast<std::uint32_t>(code);
        pending.erase(s.id);
        held.erase(s.id);
    }

    void pump() {
        for (auto it = pending.begin(); it != pending.end();) {
            const std::uint32_t id = it->first;
            Stream* s = session.find(id);
            if (s == nullptr) {
                it = pending.erase(it);
                continue;
            }
            if (body.size() < it->second) body.assign(it->second, 'x');
            const std::size_t n =
                session.send_data(*s, std::string_view(body).substr(0, it->second), true);
            // send_data() may close the stream (on_close erases the entry).
            auto again = pending.find(id);
            if (again == pending.end()) {
                it = pending.upper_bound(id);
                continue;
            }
            again->second -= n;
            if (again->second == 0) {
                it = pending.erase(again);
            } else {
                it = std::next(again);
            }
        }
    }
};

// ---- nghttp2's side ----

struct Theirs {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_option* opt = nullptr;
    nghttp2_session* s = nullptr;
    Events ev;
    std::map<std::uint32_t, Fields> building;
    std::map<std::uint32_t, std::size_t> pending;  // response body bytes still to send
    std::string out;
    bool failed = false;  // mem_recv or mem_send failed
    // Body bytes delivered and not consumed, per stream; those of a stream that closed are
    // given back to the connection window (no_auto_window_update leaves that to us, and our
    // Session does it when a stream closes).
    std::map<std::uint32_t, std::size_t> held;
    std::size_t released = 0;
    // Our session, which acts first at every step: where it answered a stream early, nghttp2
    // does not reset it either (see the top).
    Session* ours = nullptr;

    static int on_begin_headers(nghttp2_session*, const nghttp2_frame* f, void* user) {
        static_cast<Theirs*>(user)->building[static_cast<std::uint32_t>(f->hd.stream_id)].clear();
        return 0;
    }
    static int on_header(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name,
                         std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                         std::uint8_t, void* user) {
        static_cast<Theirs*>(user)
            ->building[static_cast<std::uint32_t>(f->hd.stream_id)]
            .emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                          std::string(reinterpret_cast<const char*>(value), valuelen));
        return 0;
    }
    static int on_frame_recv(nghttp2_session*, const nghttp2_frame* f, void* user) {
        auto* t = static_cast<Theirs*>(user);
        if (f->hd.type == NGHTTP2_HEADERS) {
            const auto id = static_cast<std::uint32_t>(f->hd.stream_id);
            t->ev.blocks[id] = std::move(t->building[id]);
            t->building.erase(id);
        }
        return 0;
    }
    static int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* d,
                             std::size_t n, void* user) {
        auto* t = static_cast<Theirs*>(user);
        t->ev.data[static_cast<std::uint32_t>(id)].append(reinterpret_cast<const char*>(d), n);
        t->held[static_cast<std::uint32_t>(id)] += n;
        return 0;
    }
    static int on_stream_close(nghttp2_session*, std::int32_t id, std::uint32_t code, void* user) {
        auto* t = static_cast<Theirs*>(user);
        t->ev.closed[static_cast<std::uint32_t>(id)] = code;
        const auto h = t->held.find(static_cast<std::uint32_t>(id));
        if (h != t->held.end()) {
            t->released += h->second;
            t->held.erase(h);
        }
        t->pending.erase(static_cast<std::uint32_t>(id));
        t->building.erase(static_cast<std::uint32_t>(id));
        return 0;
    }
    // 8.1: a response complete before the request: RST_STREAM NO_ERROR, as our Session sends.
    static int on_frame_send(nghttp2_session* s, const nghttp2_frame* f, void* user) {
        if ((f->hd.type == NGHTTP2_DATA || f->hd.type == NGHTTP2_HEADERS) &&
            (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
            Session* o = static_cast<Theirs*>(user)->ours;
            const Stream* mine =
                o == nullptr ? nullptr : o->find(static_cast<std::uint32_t>(f->hd.stream_id));
            if (mine != nullptr && mine->answered_early) return 0;
            nghttp2_stream* st = nghttp2_session_find_stream(s, f->hd.stream_id);
            // (Called before the stream's state takes the END_STREAM in.)
            const auto state =
                st == nullptr ? NGHTTP2_STREAM_STATE_CLOSED : nghttp2_stream_get_state(st);
            if (state == NGHTTP2_STREAM_STATE_OPEN ||
                state == NGHTTP2_STREAM_STATE_HALF_CLOSED_LOCAL) {
                nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
            }
        }
        return 0;
    }
    static ssize_t read_body(nghttp2_session*, std::int32_t id, std::uint8_t* buf, std::size_t len,
                             std::uint32_t* flags, nghttp2_data_source*, void* user) {
        auto* t = static_cast<Theirs*>(user);
        auto it = t->pending.find(static_cast<std::uint32_t>(id));
        std::size_t left = it == t->pending.end() ? 0 : it->second;
        const std::size_t n = std::min(len, left);
        std::memset(buf, 'x', n);
        left -= n;
        if (it != t->pending.end()) it->second = left;
        if (left == 0) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            if (it != t->pending.end()) t->pending.erase(it);
        }
        return static_cast<ssize_t>(n);
    }

    Theirs(std::span<const nghttp2_settings_entry> settings) {
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
        nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
        nghttp2_option_new(&opt);
        nghttp2_option_set_no_auto_window_update(opt, 1);
        nghttp2_option_set_max_outbound_ack(opt, 1000);
        nghttp2_option_set_max_settings(opt, 32);
        nghttp2_option_set_max_continuations(opt, 64);
        nghttp2_option_set_stream_reset_rate_limit(opt, 1000, 33);
        nghttp2_session_server_new2(&s, cb, this, opt);
        nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
    }
    ~Theirs() {
        nghttp2_session_del(s);
        nghttp2_option_del(opt);
        nghttp2_session_callbacks_del(cb);
    }
    Theirs(const Theirs&) = delete;
    Theirs& operator=(const Theirs&) = delete;

    void send() {
        out.clear();
        for (;;) {
            for (;;) {
                const std::uint8_t* p = nullptr;
                const auto m = nghttp2_session_mem_send(s, &p);
                if (m < 0) failed = true;
                if (m <= 0) break;
                out.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(m));
            }
            if (released == 0 || failed) break;
            nghttp2_session_consume_connection(s, std::exchange(released, 0));
        }
        read_output(out, ev);
    }
    void receive(std::string_view bytes) {
        const auto n = nghttp2_session_mem_recv(
            s, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
        if (n < 0) {
            failed = true;
            return;
        }
        check(static_cast<std::size_t>(n) == bytes.size());
        send();
    }
    bool live(std::uint32_t id) {
        nghttp2_stream* st = nghttp2_session_find_stream(s, static_cast<std::int32_t>(id));
        if (st == nullptr) return false;
        const auto state = nghttp2_stream_get_state(st);
        return state != NGHTTP2_STREAM_STATE_IDLE && state != NGHTTP2_STREAM_STATE_CLOSED;
    }
};

// ---- The input ----

class Input {
  public:
    Input(const std::uint8_t* d, std::size_t n) : p_(d), end_(d + n) {}
    bool empty() const { return p_ == end_; }
    std::uint8_t u8() { return p_ == end_ ? 0 : *p_++; }
    std::uint16_t u16() { return static_cast<std::uint16_t>(u8() << 8 | u8()); }
    std::uint32_t u32() { return std::uint32_t{u16()} << 16 | u16(); }
    std::string_view bytes(std::size_t n) {
        n = std::min<std::size_t>(n, static_cast<std::size_t>(end_ - p_));
        std::string_view v(reinterpret_cast<const char*>(p_), n);
        p_ += n;
        return v;
    }

  private:
    const std::uint8_t* p_;
    const std::uint8_t* end_;
};

// Fields a request or trailers may hold, well-formed or not.
constexpr std::pair<std::string_view, std::string_view> kFields[] = {
    {":method", "GET"},
    {":method", "POST"},
    {":method", "HEAD"},
    {":method", "CONNECT"},
    {":method", "OPTIONS"},
    {":method", ""},
    {":scheme", "http"},
    {":scheme", "https"},
    {":scheme", "ftp"},
    {":scheme", ""},
    {":path", "/"},
    {":path", "/a?b"},
    {":path", "*"},
    {":path", ""},
    {":path", "x"},
    {":authority", "example.com"},
    {":authority", ""},
    {":protocol", "websocket"},
    {":status", "200"},
    {":foo", "bar"},
    {"host", "example.com"},
    {"content-length", "0"},
    {"content-length", "5"},
    {"content-length", "100"},
    {"content-length", "x"},
    {"te", "trailers"},
    {"te", "gzip"},
    {"connection", "close"},
    {"keep-alive", "1"},
    {"upgrade", "h2c"},
    {"transfer-encoding", "chunked"},
    {"proxy-connection", "x"},
    {"accept", "*/*"},
    {"user-agent", "fuzz"},
    {"cookie", "a=b"},
    {"cookie", "c=d"},
    {"X-Upper", "v"},
    {"x-sp", " lead"},
    {"x-sp", "trail "},
    {"x-nul", std::string_view("a\0b", 3)},
    {"x-crlf", "a\r\nb"},
    {"a b", "v"},
    {"", "empty-name"},
    {"grpc-status", "0"},
};
constexpr std::size_t kFieldCount = sizeof(kFields) / sizeof(kFields[0]);

// One step of a run: a frame from the client, or a server operation.
struct Step {
    enum class Kind : std::uint8_t { frame, respond, reset, consume, shutdown } kind;
    std::string frame;
    std::uint32_t stream = 0;
    std::uint32_t n = 0;
    bool self_dependency = false;  // a frame of a header block whose stream depends on itself
};

struct Client {
    vela::hpack::Encoder encoder;
    std::vector<std::uint32_t> opened;  // stream ids used by HEADERS
    std::uint32_t next = 1;

    // A stream id: a new one, one opened already, one far ahead, or any.
    std::uint32_t pick(Input& in, bool opening) {
        const std::uint8_t b = in.u8();
        switch (b & 3) {
            case 0:
                if (opening || opened.empty()) return next;
                [[fallthrough]];
            case 1:
                if (!opened.empty()) return opened[(b >> 2) % opened.size()];
                return next;
            case 2:
                return next + 2 * (b >> 2);
            default:
                return b >> 2;  // 0, even ids, low odd ids
        }
    }
    void used(std::uint32_t id) {
        if (id == 0) return;
        if (std::find(opened.begin(), opened.end(), id) == opened.end()) opened.push_back(id);
        if ((id & 1) && id >= next) next = id + 2;
    }
};

// A header block we take and nghttp2 refuses, where the RFC leaves the choice:
// - content-length given twice with the same value (RFC 9110 8.6: a recipient MAY reject it
//   or take the single value; nghttp2 rejects it);
// - no :authority nor Host with a scheme other than http and https: nghttp2 asks for one on
//   every scheme, 8.3.1 on those with a mandatory authority;
// - a value with a control character other than NUL, CR and LF: 8.2.1 forbids only those,
//   RFC 9110 5.5 lets a recipient keep the others; nghttp2 refuses them;
// - a name with a character that is not a token's (RFC 9110 5.1) but that 8.2.1 allows: 8.2.1
//   asks for the minimal checks and recommends (SHOULD) the token rule, which nghttp2 applies;
// - content-length or Host in trailers: nghttp2 holds the body to the one and checks the
//   other as an authority; for us they are trailer fields like any other (RFC 9110 6.5.1,
//   8.6: the body's length is the header section's).
bool lenient(const Fields& fields) {
    const bool same_lengths = std::count_if(fields.begin(), fields.end(), [](const auto& fl) {
                                  return fl.first == "content-length";
                              }) > 1;
    const bool http_scheme = std::any_of(fields.begin(), fields.end(), [](const auto& fl) {
        return fl.first == ":scheme" && (fl.second == "http" || fl.second == "https");
    });
    const bool no_authority = std::none_of(fields.begin(), fields.end(), [](const auto& fl) {
        return fl.first == ":authority" || fl.first == "host";
    });
    const bool empty_authority = std::any_of(fields.begin(), fields.end(), [](const auto& fl) {
        return fl.first == ":authority" && fl.second.empty();
    });
    const bool other_scheme = !http_scheme && (no_authority || empty_authority);
    const bool control_char = std::any_of(fields.begin(), fields.end(), [](const auto& fl) {
        return std::any_of(fl.second.begin(), fl.second.end(), [](char ch) {
            const auto u = static_cast<unsigned char>(ch);
            return (u < 0x20 && u != '\t') || u == 0x7f;
        });
    });
    const bool not_token = std::any_of(fields.begin(), fields.end(), [](const auto& fl) {
        std::string_view n = fl.first;
        if (n.starts_with(':')) n.remove_prefix(1);
        return n.find_first_of("\"(),/:;<=>?@[\\]{}") != std::string_view::npos;
    });
    const bool trailers = std::none_of(fields.begin(), fields.end(),
                                       [](const auto& fl) { return fl.first.starts_with(':'); });
    const bool trailer_length =
        trailers && std::any_of(fields.begin(), fields.end(), [](const auto& fl) {
            return fl.first == "content-length" || fl.first == "host";
        });
    // Host or :authority with a byte outside RFC 3986's authority (obs-text, a space...):
    // nghttp2 holds both to that grammar; the session leaves them to the driver, which
    // compares Host with :authority (8.3.1) and routes by the host.
    const bool odd_authority = std::any_of(fields.begin(), fields.end(), [](const auto& fl) {
        return (fl.first == "host" || fl.first == ":authority") &&
               fl.second.find_first_not_of(
                   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                   "0123456789-._~!$&'()*+,;=:@[]%") != std::string::npos;
    });
    // An empty block: nghttp2 1.52 lets a request HEADERS with no field at all through where
    // 8.3.1 makes it malformed (no :method, :scheme or :path); ours resets the stream.
    return fields.empty() || same_lengths || other_scheme || control_char || not_token ||
           trailer_length || odd_authority;
}

// The connection error our frame layer alone gives `frame` (0 when it takes it).
std::uint32_t frame_layer_code(std::string_view frame) {
    FrameReader reader;
    Frame f;
    const ReadResult r = reader.read(frame, f);
    if (r.status != ReadStatus::error || !r.error.connection()) return 0;
    return static_cast<std::uint32_t>(r.error.code);
}

// A SETTINGS frame whose values pass check_settings() once each identifier keeps its last
// value (as nghttp2 reads them: it sees an invalid value followed by a valid one for the same
// identifier as the valid one).
bool last_values_valid(std::string_view frame) {
    FrameReader reader;
    Frame f;
    if (reader.read(frame, f).status != ReadStatus::frame || f.type != FrameType::settings) {
        return false;
    }
    std::map<std::uint16_t, std::uint32_t> last;
    for (std::size_t i = 0; i < f.setting_count(); ++i) last[f.setting(i).id] = f.setting(i).value;
    std::vector<Setting> list;
    for (const auto& [sid, v] : last) list.push_back({sid, v});
    std::string again;
    append_settings(again, list);
    reader = FrameReader();
    if (reader.read(again, f).status != ReadStatus::frame) return false;
    return check_settings(f).code == ErrorCode::no_error;
}

// A HEADERS frame (raw ones included) whose priority fields name its own stream.
bool depends_on_itself(std::string_view frame) {
    FrameReader reader;
    Frame f;
    const ReadResult r = reader.read(frame, f);
    return r.status == ReadStatus::frame && f.type == FrameType::headers && f.has(flag::priority) &&
           f.priority.dependency == f.stream_id;
}

// A SETTINGS frame holding an entry that check_settings() alone refuses with `code`.
bool some_setting_refused(std::string_view frame, std::uint32_t code) {
    FrameReader reader;
    Frame f;
    if (reader.read(frame, f).status != ReadStatus::frame || f.type != FrameType::settings) {
        return false;
    }
    for (std::size_t i = 0; i < f.setting_count(); ++i) {
        const Setting one[] = {f.setting(i)};
        std::string single;
        append_settings(single, one);
        FrameReader again;
        Frame g;
        if (again.read(single, g).status != ReadStatus::frame) continue;
        if (static_cast<std::uint32_t>(check_settings(g).code) == code) return true;
    }
    return false;
}

// A frame with optional padding: `fixed` (priority fields) after the Pad Length.
std::string padded_frame(FrameType type, std::uint8_t flags, std::uint32_t id,
                         std::string_view fixed, std::string_view body, int pad) {
    std::string payload;
    if (pad >= 0) {
        flags |= flag::padded;
        payload += static_cast<char>(pad);
    }
    payload += fixed;
    payload += body;
    if (pad > 0) payload.append(static_cast<std::size_t>(pad), '\0');
    std::string f;
    append_frame_header(f, static_cast<std::uint32_t>(payload.size()), type, flags, id);
    return f + payload;
}

std::vector<Step> build(Input& in, Client& c) {
    std::vector<Step> steps;
    auto frame = [&](std::string f) { steps.push_back({Step::Kind::frame, std::move(f)}); };
    while (!in.empty() && steps.size() < 256) {
        const std::uint8_t op = in.u8();
        switch (op % 16) {
            case 0:    // request HEADERS (+ CONTINUATION)
            case 1: {  // HEADERS on a stream chosen freely (trailers and the like)
                const std::uint32_t id = c.pick(in, op % 16 == 0);
                const std::uint8_t how = in.u8();
                const std::uint8_t count = in.u8();
                std::vector<std::string> owned;
                std::vector<EncoderField> fields;
                if (how & 1) {
                    fields.push_back({":method", "GET"});
                    fields.push_back({":scheme", "https"});
                    fields.push_back({":path", "/"});
                    fields.push_back({":authority", "a"});
                }
                owned.reserve(2 * (count % 8));
                for (int i = 0; i < count % 8; ++i) {
                    const std::uint8_t k = in.u8();
                    const auto idx = static_cast<std::size_t>(k & 0x3f);
                    const auto ix = (k & 0x80) ? vela::hpack::Indexing::never
                                               : vela::hpack::Indexing::automatic;
                    if (idx < kFieldCount) {
                        fields.push_back({kFields[idx].first, kFields[idx].second, ix});
                    } else {
                        owned.emplace_back(in.bytes(in.u8() % 8));
                        owned.emplace_back(in.bytes(in.u8() % 8));
                        fields.push_back({owned[owned.size() - 2], owned.back(), ix});
                    }
                }
                std::string block;
                c.encoder.encode(fields, block);
                std::uint8_t flags = (how & 2) ? flag::end_stream : 0;
                std::string pri;
                if (how & 4) {
                    flags |= flag::priority;
                    const std::uint32_t dep = (how & 8) ? id : c.pick(in, false);
                    pri.push_back(static_cast<char>((dep >> 24) | ((how & 16) ? 0x80 : 0)));
                    pri.push_back(static_cast<char>(dep >> 16));
                    pri.push_back(static_cast<char>(dep >> 8));
                    pri.push_back(static_cast<char>(dep));
                    pri.push_back(static_cast<char>(in.u8()));
                }
                const int pad = (how & 32) ? in.u8() % 16 : -1;
                // Split points: up to 3 CONTINUATION frames.
                const int parts = (how >> 6) + 1;
                std::vector<std::string_view> chunks;
                std::string_view rest = block;
                for (int i = 1; i < parts; ++i) {
                    const std::size_t at = rest.empty() ? 0 : in.u8() % (rest.size() + 1);
                    chunks.push_back(rest.substr(0, at));
                    rest.remove_prefix(at);
                }
                chunks.push_back(rest);
                if (chunks.size() == 1) flags |= flag::end_headers;
                frame(padded_frame(FrameType::headers, flags, id, pri, chunks[0], pad));
                for (std::size_t i = 1; i < chunks.size(); ++i) {
                    std::string f;
                    append_frame_header(f, static_cast<std::uint32_t>(chunks[i].size()),
                                        FrameType::continuation,
                                        i + 1 == chunks.size() ? flag::end_headers : 0, id);
                    frame(f + std::string(chunks[i]));
                }
                if (!pri.empty()) {
                    const std::uint32_t dep =
                        (static_cast<std::uint32_t>(static_cast<unsigned char>(pri[0]) & 0x7f)
                         << 24) |
                        (static_cast<std::uint32_t>(static_cast<unsigned char>(pri[1])) << 16) |
                        (static_cast<std::uint32_t>(static_cast<unsigned char>(pri[2])) << 8) |
                        static_cast<unsigned char>(pri[3]);
                    for (std::size_t i = steps.size() - chunks.size(); i < steps.size(); ++i) {
                        steps[i].self_dependency = dep == id;
                    }
                }
                c.used(id);
                break;
            }
            case 2:  // DATA
            case 3: {
                const std::uint32_t id = c.pick(in, false);
                const std::uint8_t how = in.u8();
                std::size_t n = in.u8();
                if (how & 4) n = n * 64 + in.u8();  // up to 16 KiB
                n = std::min<std::size_t>(n, default_max_frame_size - 256);
                const int pad = (how & 2) ? in.u8() : -1;
                frame(padded_frame(FrameType::data, (how & 1) ? flag::end_stream : 0, id, {},
                                   std::string(n, 'd'), pad));
                break;
            }
            case 4: {  // RST_STREAM
                const std::uint32_t id = c.pick(in, false);
                std::string f;
                append_rst_stream(f, id, static_cast<ErrorCode>(in.u8() % 14));
                frame(std::move(f));
                break;
            }
            case 5: {  // WINDOW_UPDATE
                const std::uint8_t how = in.u8();
                const std::uint32_t id = (how & 1) ? 0 : c.pick(in, false);
                std::uint32_t inc = (how & 2) ? in.u32() & 0x7fffffffu : in.u16();
                std::string f;
                append_frame_header(f, 4, FrameType::window_update, 0, id);
                f.push_back(static_cast<char>(inc >> 24));
                f.push_back(static_cast<char>(inc >> 16));
                f.push_back(static_cast<char>(inc >> 8));
                f.push_back(static_cast<char>(inc));
                frame(std::move(f));
                break;
            }
            case 6: {  // PRIORITY
                const std::uint32_t id = c.pick(in, false);
                const std::uint8_t how = in.u8();
                PriorityFields p;
                p.dependency = (how & 1) ? id : c.pick(in, false);
                p.exclusive = (how & 2) != 0;
                p.weight = in.u8();
                std::string f;
                append_priority(f, id, p);
                frame(std::move(f));
                break;
            }
            case 7: {  // PING
                const std::uint8_t how = in.u8();
                std::string f;
                append_ping(f, "01234567", how & 1);
                frame(std::move(f));
                break;
            }
            case 8: {  // SETTINGS
                std::vector<Setting> s;
                const std::uint8_t count = in.u8() % 6;
                for (int i = 0; i < count; ++i) {
                    const std::uint8_t k = in.u8();
                    const std::uint16_t id = k % 10;
                    std::uint32_t v;
                    switch (k >> 6) {
                        case 0:
                            v = in.u8();
                            break;
                        case 1:
                            v = in.u16();
                            break;
                        case 2:
                            v = in.u32();
                            break;
                        default:
                            v = (k & 0x10) ? 0x7fffffffu : 16384;
                            break;
                    }
                    s.push_back({id, v});
                }
                std::string f;
                append_settings(f, s);
                frame(std::move(f));
                break;
            }
            case 9: {  // SETTINGS ACK
                std::string f;
                append_settings_ack(f);
                frame(std::move(f));
                break;
            }
            case 10: {  // GOAWAY
                const std::uint8_t how = in.u8();
                std::string f;
                append_goaway(f, c.pick(in, false), static_cast<ErrorCode>(how % 14));
                frame(std::move(f));
                break;
            }
            case 11: {  // a raw frame
                const std::uint8_t type = in.u8() % 12;
                const std::uint8_t flags = in.u8();
                const std::uint32_t id = c.pick(in, false);
                const std::string_view payload = in.bytes(in.u8() % 24);
                std::string f;
                append_frame_header(f, static_cast<std::uint32_t>(payload.size()),
                                    static_cast<FrameType>(type), flags, id);
                frame(f + std::string(payload));
                break;
            }
            case 12: {  // respond: headers and a body
                const std::uint32_t id = c.pick(in, false);
                const std::uint8_t how = in.u8();
                std::uint32_t n = (how & 1) ? std::uint32_t{in.u16()} * 2 : in.u8();
                steps.push_back({Step::Kind::respond, {}, id, n});
                break;
            }
            case 13: {  // reset
                const std::uint32_t id = c.pick(in, false);
                steps.push_back({Step::Kind::reset, {}, id, in.u8() % 14u});
                break;
            }
            case 14: {  // consume
                const std::uint32_t id = c.pick(in, false);
                steps.push_back({Step::Kind::consume, {}, id, std::uint32_t{in.u16()}});
                break;
            }
            default:
                steps.push_back({Step::Kind::shutdown, {}, 0, 0});
                break;
        }
    }
    return steps;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 8192) return 0;
    Input in(data, size);
    const std::uint8_t config = in.u8();
    constexpr std::uint32_t kStreams[] = {1, 2, 4, 100};
    constexpr std::uint32_t kWindows[] = {65535, 4096, 16384, 1000};
    SessionOptions o;
    o.max_concurrent_streams = kStreams[config & 3];
    o.initial_window_size = kWindows[(config >> 2) & 3];
    o.connection_window_size = 65535;
    o.max_frame_size = default_max_frame_size;
    o.max_header_list_size = 64 * 1024;
    const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, o.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, o.initial_window_size},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, o.max_header_list_size},
    };

    Client client;
    std::vector<Step> steps = build(in, client);

    Ours ours(o);
    Theirs theirs(settings);
    theirs.ours = &ours.session;
    ours.session.start();
    ours.session.output().clear();
    {
        std::string start(client_preface);
        append_settings(start, {});
        check(ours.session.receive(start) == start.size());
        ours.session.output().clear();
        theirs.receive(start);
        check(!theirs.failed && !ours.session.closed());
    }

    std::set<std::uint32_t> skip;      // streams no longer compared (see the top)
    bool acked = false;                // the client acknowledged our SETTINGS
    bool shut = false;                 // both sent GOAWAY (shutdown)
    std::set<std::uint32_t> we_reset;  // streams our session reset
    // nghttp2 refused a header block at one of its frames, we judge it at its end.
    std::map<std::uint32_t, std::uint32_t> early;  // stream -> nghttp2's RST_STREAM code
    std::uint32_t early_goaway = 0;                // nghttp2's GOAWAY code
    std::uint32_t early_stream = 0;
    bool in_block = false;            // the last frame left a header block open
    std::set<std::uint32_t> connect;  // streams of CONNECT requests
    for (const Step& step : steps) {
        // After a GOAWAY either way, once no stream is left both are done (6.8).
        const bool drained = ours.session.drained() || ours.session.closed();
        const bool reading = nghttp2_session_want_read(theirs.s) != 0;
        if (drained || !reading) {
            // (nghttp2 counts a stream from its HEADERS frame, we once its block is whole.)
            if (skip.empty() && early.empty() && !early_goaway && !in_block) {
                check(drained == !reading);
            }
            return 0;
        }
        ours.ev.clear();
        theirs.ev.clear();
        const bool skipped = skip.count(step.stream) != 0;
        if (step.kind != Step::Kind::frame) {
            Stream* s = ours.session.find(step.stream);
            const bool both = s != nullptr && theirs.live(step.stream) && !skipped;
            switch (step.kind) {
                case Step::Kind::respond:
                    // One body in flight at a time: which of two blocked bodies goes first when
                    // a window opens is each side's scheduling, not a rule of the RFC.
                    if (!both || !ours.pending.empty() || !theirs.pending.empty()) break;
                    {
                        const EncoderField f[] = {{":status", "200"}};
                        const nghttp2_nv nv[] = {
                            {(std::uint8_t*)":status", (std::uint8_t*)"200", 7, 3, 0}};
                        if (step.n > 0) ours.pending[step.stream] = step.n;
                        ours.session.send_headers(*s, f, step.n == 0);
                        ours.pump();
                        nghttp2_data_provider prd{};
                        prd.read_callback = Theirs::read_body;
                        if (step.n > 0) theirs.pending[step.stream] = step.n;
                        check(nghttp2_submit_response(theirs.s,
                                                      static_cast<std::int32_t>(step.stream), nv, 1,
                                                      step.n > 0 ? &prd : nullptr) == 0);
                    }
                    break;
                case Step::Kind::reset:
                    if (!both) break;
                    ours.session.reset(*s, static_cast<ErrorCode>(step.n));
                    we_reset.insert(step.stream);
                    check(nghttp2_submit_rst_stream(theirs.s, NGHTTP2_FLAG_NONE,
                                                    static_cast<std::int32_t>(step.stream),
                                                    step.n) == 0);
                    break;
                case Step::Kind::consume: {
                    if (!both) break;
                    const std::size_t n = std::min<std::uint64_t>(step.n, ours.held[step.stream]);
                    ours.session.consume(*s, n);
                    ours.held[step.stream] -= n;
                    check(nghttp2_session_consume(theirs.s, static_cast<std::int32_t>(step.stream),
                                                  n) == 0);
                    theirs.held[step.stream] -= std::min(theirs.held[step.stream], n);
                    break;
                }
                default:
                    shut = true;
                    ours.session.shutdown();
                    nghttp2_submit_goaway(theirs.s, NGHTTP2_FLAG_NONE,
                                          nghttp2_session_get_last_proc_stream_id(theirs.s),
                                          NGHTTP2_NO_ERROR, nullptr, 0);
                    break;
            }
            read_output(std::exchange(ours.session.output(), {}), ours.ev);
            for (const auto& r : ours.ev.resets) we_reset.insert(r.first);
            theirs.send();
            if (kTrace) {
                std::fprintf(stderr, "server op %d stream %u n %u\n", static_cast<int>(step.kind),
                             step.stream, step.n);
                ours.ev.trace("ours");
                theirs.ev.trace("nghttp2");
            }
            check(!ours.ev.goaway && !theirs.ev.goaway && !theirs.failed);
            for (const auto& [id, code] : ours.ev.closed) {
                if (skip.count(id)) continue;
                check(theirs.ev.closed.count(id) && theirs.ev.closed[id] == code);
            }
            continue;
        }

        // A client frame.
        const std::string_view f = step.frame;
        const std::uint32_t id = ((std::uint32_t{static_cast<unsigned char>(f[5])} << 24) |
                                  (std::uint32_t{static_cast<unsigned char>(f[6])} << 16) |
                                  (std::uint32_t{static_cast<unsigned char>(f[7])} << 8) |
                                  static_cast<unsigned char>(f[8])) &
                                 0x7fffffffu;
        const auto type = static_cast<std::uint8_t>(f[3]);
        const auto flags = static_cast<std::uint8_t>(f[4]);
        const bool acked_before = acked;
        const bool theirs_live = theirs.live(id);
        // A frame inside a header block (not its last one).
        const bool block_open = (type == 0x1 || type == 0x9) && !(flags & flag::end_headers);
        in_block = block_open;
        check(ours.session.receive(f) == f.size() || ours.session.closed());
        ours.pump();
        read_output(std::exchange(ours.session.output(), {}), ours.ev);
        for (const auto& r : ours.ev.resets) we_reset.insert(r.first);
        if (!early_goaway) theirs.receive(f);
        if (type == 0x4 && (flags & flag::ack)) acked = true;

        Events& a = ours.ev;
        Events& b = theirs.ev;
        if (kTrace) {
            std::fprintf(stderr, "frame type %u flags %#x stream %u length %zu\n", type, flags, id,
                         f.size() - frame_header_size);
            a.trace("ours");
            b.trace("nghttp2");
            if (ours.session.closed()) {
                std::fprintf(stderr, "  ours: %s\n", ours.session.error_reason().data());
            }
        }
        if (early_goaway) {
            // nghttp2 ended the connection inside a header block (see below): we must end it
            // with the same code, or reset the stream with it (5.4.1), once the block is whole.
            if (type != 0x9 || id != early_stream) return 0;  // the block broken off
            if (a.goaway) {
                check(a.goaway_code == early_goaway);
                return 0;
            }
            if (!a.resets.empty()) {
                check(a.resets.count(id) && a.resets[id] == early_goaway);
                return 0;
            }
            check(block_open);  // we took the block nghttp2 refused
            continue;
        }
        // A GOAWAY with an error from the client ends our session (the client closes the
        // connection after it, 5.4.1); nghttp2 reads on until the connection closes.
        if (type == 0x7 && ours.session.closed() && !a.goaway && !b.goaway) return 0;
        // (Either side's block: we may refuse at END_STREAM the block nghttp2 delivers.)
        for (const auto* blocks : {&a.blocks, &b.blocks}) {
            for (const auto& [sid, fl] : *blocks) {
                if (std::find(fl.begin(), fl.end(),
                              std::pair<std::string, std::string>(":method", "CONNECT")) !=
                    fl.end()) {
                    connect.insert(sid);
                }
            }
        }
        // (1) The verdict.
        constexpr auto kProtocol = static_cast<std::uint32_t>(ErrorCode::protocol_error);
        constexpr auto kStreamClosed = static_cast<std::uint32_t>(ErrorCode::stream_closed);
        const std::string_view why = ours.session.error_reason();
        if (a.goaway || b.goaway || theirs.failed) {
            check(!theirs.failed || a.goaway);
            // On a stream no longer compared, the states differ already.
            if (skip.count(id) && id != 0 && a.goaway != b.goaway) return 0;
            if (a.goaway && b.goaway) {
                // A frame breaking two rules: the RFC orders no checks. Our frame layer comes
                // first (sizes, padding), nghttp2 may look at the stream's state first.
                // Likewise a header block that breaks HPACK on a stream that cannot take it: we
                // decode first (COMPRESSION_ERROR), nghttp2 may judge the stream first.
                constexpr auto kCompression =
                    static_cast<std::uint32_t>(ErrorCode::compression_error);
                const bool hpack_first =
                    (type == 0x1 || type == 0x9) &&
                    (a.goaway_code == kCompression || b.goaway_code == kCompression);
                // SETTINGS with two invalid values: nghttp2 checks them in its own order (6.5
                // says in the order given).
                const bool settings_order = type == 0x4 && some_setting_refused(f, b.goaway_code);
                const bool rfc9218 =
                    b.debug.find("SETTINGS_NO_RFC7540_PRIORITIES") != std::string::npos;
                // HEADERS on a stream closed long ago: our record of 64 closed streams forgot
                // it, so it reads as a lower new stream id (PROTOCOL_ERROR, as 5.1 allows for
                // frames long after END_STREAM); nghttp2 remembers it (STREAM_CLOSED).
                const bool forgotten = a.goaway_code == kProtocol &&
                                       why == "HEADERS on a lower stream id" &&
                                       b.goaway_code == kStreamClosed;
                // DATA past the connection window on a stream nghttp2 takes for idle (PROTOCOL)
                // or half-closed (STREAM_CLOSED): both are connection errors; every DATA frame
                // counts against the connection window (6.9), which we check first, nghttp2
                // the stream's state.
                const bool window_first =
                    type == 0x0 &&
                    a.goaway_code == static_cast<std::uint32_t>(ErrorCode::flow_control_error) &&
                    (b.goaway_code == kProtocol || b.goaway_code == kStreamClosed);
                check(forgotten || a.goaway_code == b.goaway_code ||
                      frame_layer_code(f) == a.goaway_code || hpack_first || settings_order ||
                      rfc9218 || window_first);
            } else if (b.goaway) {
                // nghttp2 ends the connection where we go on: a stream error of ours made a
                // connection error (5.4.1), an unsolicited SETTINGS ACK, or a GOAWAY naming a
                // stream we could not have opened.
                const bool escalated = a.resets.count(id) && a.resets[id] == b.goaway_code;
                const bool stray_ack = type == 0x4 && (flags & flag::ack) && acked_before &&
                                       b.goaway_code == kProtocol;
                const bool goaway_id = type == 0x7 && b.debug == "GOAWAY: invalid last_stream_id";
                // A frame after the client's END_STREAM on a stream we reset: nghttp2 ends the
                // connection STREAM_CLOSED (5.1 closed: MAY), we ignore it (5.1: MUST ignore
                // frames on a stream after sending RST_STREAM).
                const bool after_our_reset = b.goaway_code == kStreamClosed && we_reset.count(id);
                // A stream depending on itself (5.3.1): nghttp2 ends the connection at the
                // HEADERS frame, we reset the stream once the header block is whole.
                const bool self_dependency =
                    b.goaway_code == kProtocol && b.debug.ends_with("depend on itself");
                // nghttp2 judges a header block's stream and fields as its frames come, we once
                // the block is whole (its last CONTINUATION frame): ours goes on alone until
                // then.
                if (block_open && !a.goaway && a.resets.empty() && !escalated) {
                    early_goaway = b.goaway_code;
                    early_stream = id;
                    continue;
                }
                // A new stream past our GOAWAY is ignored (6.8); nghttp2 still counts it
                // against the concurrency limit.
                const bool past_goaway =
                    shut && b.debug == "request HEADERS: max concurrent streams exceeded";
                // SETTINGS_NO_RFC7540_PRIORITIES (RFC 9218 2.1) is an unknown setting for us
                // (6.5.2: ignored); nghttp2 checks its value and that it does not change.
                const bool rfc9218 =
                    b.debug.find("SETTINGS_NO_RFC7540_PRIORITIES") != std::string::npos;
                // HEADERS on a stream closed long ago: our record of 64 closed streams forgot
                // it, so it reads as a lower new stream id (PROTOCOL_ERROR, as 5.1 allows for
                // frames long after END_STREAM); nghttp2 remembers it (STREAM_CLOSED).
                const bool forgotten = a.goaway_code == kProtocol &&
                                       why == "HEADERS on a lower stream id" &&
                                       b.goaway_code == kStreamClosed;
                check(forgotten || escalated || stray_ack || goaway_id || after_our_reset ||
                      self_dependency || past_goaway || rfc9218);
            } else if (a.goaway) {
                // We end the connection where nghttp2 goes on: a frame on a stream nghttp2 no
                // longer holds (5.1).
                const bool closed_stream =
                    !theirs_live && ((a.goaway_code == kStreamClosed) ||
                                     (a.goaway_code == kProtocol && (type == 0x1 || type == 0x9) &&
                                      why == "HEADERS on a lower stream id"));
                // Once nghttp2 sent GOAWAY, it ignores frames on new streams (HEADERS on stream
                // 0 too) without the frame layer's checks (4.2, 6.2, 6.4 ask for connection
                // errors).
                const bool after_goaway = shut && frame_layer_code(f) == a.goaway_code;
                const bool overridden = type == 0x4 && last_values_valid(f);
                // DATA on a stream nghttp2 does not hold open is discarded unread: padding that
                // does not fit is not seen (6.1 asks for PROTOCOL_ERROR).
                const bool unread_data =
                    type == 0x0 && !theirs_live && frame_layer_code(f) == a.goaway_code;
                // DATA on an idle stream past our GOAWAY: a connection error for us (5.1),
                // ignored by nghttp2 (6.8).
                const bool idle_past_goaway = shut && type == 0x0 && a.goaway_code == kProtocol &&
                                              why == "DATA on an idle stream";
                check(closed_stream || after_goaway || overridden || idle_past_goaway ||
                      unread_data);
            }
            return 0;
        }
        std::set<std::uint32_t> early_done;  // streams nghttp2 reset inside their block
        for (const auto& [sid, code] : b.resets) {
            if (skip.count(sid) || a.resets.count(sid)) continue;
            if (sid == id && block_open) {
                early[sid] = code;
                early_done.insert(sid);
            }
        }
        for (const auto& [sid, code] : a.resets) {
            if (skip.count(sid)) continue;
            if (b.resets.count(sid)) {
                check(b.resets[sid] == code);
                continue;
            }
            if (auto e = early.find(sid); e != early.end()) {
                check(e->second == code);
                early.erase(e);
                early_done.insert(sid);
                continue;
            }
            // nghttp2 ignores the frame: it no longer holds the stream (see the top).
            // (WINDOW_UPDATE of 0 or a bad PRIORITY frame on it: a stream error by 6.9, 6.3.)
            const bool closed_stream = sid == id && !theirs_live;
            // Trailers depending on their own stream: nghttp2 checks 5.3.1 on new streams only.
            const bool self_dependency =
                sid == id && code == kProtocol && (step.self_dependency || depends_on_itself(f));
            // The form of :path for a scheme other than http and https: 8.3.1 sets it for
            // those two only; we ask for an absolute path, or * with OPTIONS, on every scheme.
            const auto theirs_block = b.blocks.find(sid);
            const bool path_form =
                code == kProtocol && theirs_block != b.blocks.end() &&
                (why == "a :path of * on a method other than OPTIONS" ||
                 why == "a :path neither absolute nor *") &&
                std::none_of(theirs_block->second.begin(), theirs_block->second.end(),
                             [](const auto& fl) {
                                 return fl.first == ":scheme" &&
                                        (fl.second == "http" || fl.second == "https");
                             });
            // content-length on CONNECT: 8.1.1 holds every request's body to it, nghttp2 leaves
            // a tunnel's (8.5) alone.
            const bool connect_length =
                code == kProtocol && connect.count(sid) &&
                (why == "a body of another length than its content-length" ||
                 why == "a body shorter than its content-length");
            // A request block with no field at all: 8.3.1 makes it malformed, nghttp2 1.52
            // passes it.
            const bool empty_block =
                code == kProtocol && theirs_block != b.blocks.end() && theirs_block->second.empty();
            check(closed_stream || self_dependency || path_form || connect_length || empty_block);
            skip.insert(sid);
        }
        for (const auto& [sid, code] : b.resets) {
            if (skip.count(sid) || early_done.count(sid) || a.resets.count(sid)) continue;
            // SETTINGS_INITIAL_WINDOW_SIZE taking a window past 2^31-1 (6.9.2): nghttp2 also
            // moves the windows of closed streams it keeps (for priorities) and resets them;
            // a closed stream has no window for us.
            const bool closed_window =
                type == 0x4 && code == static_cast<std::uint32_t>(ErrorCode::flow_control_error) &&
                ours.session.find(sid) == nullptr;
            if (closed_window) {
                skip.insert(sid);
                continue;
            }
            const auto block = a.blocks.find(sid);
            check(block != a.blocks.end() && lenient(block->second));
            skip.insert(sid);
        }
        // (2) Header fields of blocks both delivered.
        for (const auto& [sid, fl] : a.blocks) {
            if (skip.count(sid)) continue;
            if (auto e = early.find(sid); e != early.end() && !b.blocks.count(sid)) {
                check(lenient(fl));  // nghttp2 refused the block at one of its frames
                early.erase(e);
                skip.insert(sid);
                continue;
            }
            check(b.blocks.count(sid) && b.blocks[sid] == fl);
        }
        for (const auto& [sid, fl] : b.blocks) {
            if (skip.count(sid) || a.resets.count(sid)) continue;
            check(a.blocks.count(sid));
        }
        // (3) DATA bytes.
        for (const auto& [sid, d] : a.data) {
            if (skip.count(sid) || b.resets.count(sid)) continue;
            check(b.data[sid] == d);
        }
        for (const auto& [sid, d] : b.data) {
            if (skip.count(sid) || a.resets.count(sid)) continue;
            check(a.data[sid] == d);
        }
        // (4) Closed streams.
        for (const auto& [sid, code] : a.closed) {
            if (skip.count(sid) || early_done.count(sid)) continue;
            check(b.closed.count(sid) && b.closed[sid] == code);
        }
        for (const auto& [sid, code] : b.closed) {
            if (skip.count(sid) || early_done.count(sid)) continue;
            check(a.closed.count(sid));
        }
        // A stream one side closed and the other kept (an allowed difference) is reset on the
        // other too, so that both count the same open streams.
        for (std::uint32_t sid : skip) {
            Stream* s = ours.session.find(sid);
            const bool live = theirs.live(sid);
            if (s != nullptr && !live) {
                ours.session.reset(*s, ErrorCode::cancel);
                we_reset.insert(sid);
            } else if (s == nullptr && live) {
                nghttp2_submit_rst_stream(theirs.s, NGHTTP2_FLAG_NONE,
                                          static_cast<std::int32_t>(sid), NGHTTP2_CANCEL);
            }
        }
        ours.session.output().clear();
        theirs.send();
    }
    return 0;
}
