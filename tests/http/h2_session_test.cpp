// The HTTP/2 state machine (RFC 9113): every rule sent as bytes with the answer checked
// (GOAWAY or RST_STREAM and its code, the events the driver sees), flow control both ways,
// the defences, and conversations with nghttp2 in the other role (the oracle).

#include "vela/http/h2_session.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace vela::h2;
using vela::hpack::DecodedField;
using vela::hpack::EncoderField;

// What the driver saw.
struct Recorder : SessionHandler {
    struct Message {
        std::vector<std::pair<std::string, std::string>> fields;
        std::string body;
        std::vector<HeadersEnd> ends;
        bool closed = false;
        ErrorCode code = ErrorCode::no_error;
        bool by_peer = false;
    };
    std::map<std::uint32_t, Message> streams;
    std::vector<std::string> log;
    std::vector<std::uint32_t> writable;
    Session* session = nullptr;
    bool auto_consume = true;
    std::uint32_t goaway_last = 0;
    ErrorCode goaway_code = ErrorCode::no_error;
    std::string ping_ack;

    void on_begin_headers(Stream& s) override { log.push_back("begin " + std::to_string(s.id)); }
    void on_field(Stream& s, const DecodedField& f) override {
        streams[s.id].fields.emplace_back(std::string(f.name), std::string(f.value));
    }
    void on_headers(Stream& s, const HeadersEnd& end) override {
        streams[s.id].ends.push_back(end);
        log.push_back("headers " + std::to_string(s.id));
    }
    void on_data(Stream& s, std::string_view data, bool end_stream) override {
        streams[s.id].body.append(data);
        if (auto_consume) session->consume(s, data.size());
        if (end_stream) log.push_back("end " + std::to_string(s.id));
    }
    void on_close(Stream& s, ErrorCode code, bool by_peer) override {
        Message& m = streams[s.id];
        m.closed = true;
        m.code = code;
        m.by_peer = by_peer;
        log.push_back("close " + std::to_string(s.id));
    }
    void on_writable(Stream& s) override { writable.push_back(s.id); }
    void on_goaway(std::uint32_t last, ErrorCode code, std::string_view) override {
        goaway_last = last;
        goaway_code = code;
    }
    void on_ping_ack(std::string_view opaque) override { ping_ack = opaque; }
};

struct Out {
    FrameType type;
    std::uint32_t stream;
    std::uint8_t flags;
    ErrorCode code;       // RST_STREAM, GOAWAY
    std::uint32_t value;  // WINDOW_UPDATE increment, GOAWAY last stream id
    std::string data;
};

// The frames of `bytes` (a session's output).
std::vector<Out> frames_of(std::string_view bytes) {
    std::vector<Out> out;
    if (bytes.substr(0, client_preface.size()) == client_preface) {
        bytes.remove_prefix(client_preface.size());
    }
    FrameReader r(max_max_frame_size);
    Frame f;
    while (!bytes.empty()) {
        const ReadResult res = r.read(bytes, f);
        EXPECT_EQ(res.status, ReadStatus::frame);
        if (res.status != ReadStatus::frame) break;
        out.push_back({f.type, f.stream_id, f.flags, f.error_code,
                       f.type == FrameType::window_update ? f.increment : f.last_stream_id,
                       std::string(f.data)});
        bytes.remove_prefix(res.consumed);
    }
    return out;
}

// A peer written by hand: frames built with our writers and HPACK encoder.
struct Peer {
    vela::hpack::Encoder enc;
    std::string bytes;

    Peer& preface() {
        bytes += client_preface;
        return *this;
    }
    Peer& settings(std::vector<Setting> s = {}) {
        append_settings(bytes, s);
        return *this;
    }
    Peer& headers(std::uint32_t id, std::vector<EncoderField> fields, bool end_stream) {
        std::string block;
        enc.encode(fields, block);
        append_headers(bytes, id, block, end_stream, default_max_frame_size);
        return *this;
    }
    Peer& get(std::uint32_t id, std::string_view path = "/") {
        return headers(
            id, {{":method", "GET"}, {":scheme", "http"}, {":path", path}, {":authority", "a"}},
            true);
    }
    // DATA frames of at most 16,384 bytes.
    Peer& data(std::uint32_t id, std::string_view d, bool end_stream) {
        do {
            const std::string_view part = d.substr(0, default_max_frame_size);
            d.remove_prefix(part.size());
            append_data(bytes, id, part, end_stream && d.empty());
        } while (!d.empty());
        return *this;
    }
    Peer& raw(std::string_view r) {
        bytes += r;
        return *this;
    }
    std::string take() { return std::exchange(bytes, {}); }
};

struct ServerFixture {
    Recorder rec;
    Session session;
    explicit ServerFixture(SessionOptions o = {}) : session(rec, o) {
        rec.session = &session;
        session.start();
        session.output().clear();
    }
    // Feeds everything; returns the frames the session wrote.
    std::vector<Out> feed(std::string_view bytes, std::uint64_t now = 0) {
        const std::size_t used = session.receive(bytes, now);
        EXPECT_EQ(used, bytes.size());
        return frames_of(std::exchange(session.output(), {}));
    }
};

const Out* find_frame(const std::vector<Out>& frames, FrameType t) {
    for (const Out& o : frames)
        if (o.type == t) return &o;
    return nullptr;
}

// Expects a GOAWAY with `code` and the session over.
void expect_goaway(ServerFixture& fx, const std::vector<Out>& frames, ErrorCode code,
                   const char* what) {
    const Out* g = find_frame(frames, FrameType::goaway);
    ASSERT_NE(g, nullptr) << what;
    EXPECT_EQ(g->code, code) << what << ": " << fx.session.error_reason();
    EXPECT_TRUE(fx.session.closed()) << what;
    EXPECT_FALSE(g->data.empty()) << what;  // the reason, as debug data
}

// Expects RST_STREAM on `id` with `code`, and the session still going.
void expect_rst(ServerFixture& fx, const std::vector<Out>& frames, std::uint32_t id, ErrorCode code,
                const char* what) {
    const Out* r = find_frame(frames, FrameType::rst_stream);
    ASSERT_NE(r, nullptr) << what;
    EXPECT_EQ(r->stream, id) << what;
    EXPECT_EQ(r->code, code) << what << ": " << fx.session.error_reason();
    EXPECT_EQ(find_frame(frames, FrameType::goaway), nullptr) << what;
    EXPECT_FALSE(fx.session.closed()) << what;
    // Still sound: a new request goes through.
    const std::uint32_t next =
        fx.session.last_peer_stream() + (fx.session.last_peer_stream() ? 2 : 1);
    Peer p;
    fx.feed(p.get(next).take());
    EXPECT_EQ(fx.rec.streams[next].ends.size(), 1u) << what;
}

TEST(H2Session, StartsWithSettingsAndConnectionWindow) {
    Recorder rec;
    SessionOptions o;
    o.max_concurrent_streams = 50;
    Session s(rec, o);
    s.start();
    const auto f = frames_of(s.output());
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].type, FrameType::settings);
    EXPECT_EQ(f[1].type, FrameType::window_update);
    EXPECT_EQ(f[1].value, o.connection_window_size - 65535);

    Recorder crec;
    SessionOptions co;
    co.role = Role::client;
    Session c(crec, co);
    c.start();
    EXPECT_EQ(c.output().substr(0, client_preface.size()), client_preface);
}

TEST(H2Session, ServesARequest) {
    ServerFixture fx;
    Peer p;
    auto out = fx.feed(p.preface().settings().get(1, "/hello").take());
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out[0].type, FrameType::settings);  // the ACK of the client's
    EXPECT_TRUE(out[0].flags & flag::ack);
    auto& m = fx.rec.streams[1];
    ASSERT_EQ(m.ends.size(), 1u);
    EXPECT_TRUE(m.ends[0].end_stream);
    EXPECT_EQ(m.ends[0].kind, HeadersEnd::Kind::headers);
    ASSERT_EQ(m.fields.size(), 4u);
    EXPECT_EQ(m.fields[2], std::make_pair(std::string(":path"), std::string("/hello")));

    Stream* st = fx.session.find(1);
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(st->state, StreamState::half_closed_remote);
    const std::vector<EncoderField> resp{{":status", "200"}, {"content-type", "text/plain"}};
    fx.session.send_headers(*st, resp, false);
    EXPECT_EQ(fx.session.send_data(*st, "hello", true), 5u);
    EXPECT_TRUE(m.closed);
    EXPECT_EQ(m.code, ErrorCode::no_error);
    EXPECT_EQ(fx.session.stream_count(), 0u);
    out = frames_of(std::exchange(fx.session.output(), {}));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].type, FrameType::headers);
    EXPECT_EQ(out[1].type, FrameType::data);
    EXPECT_EQ(out[1].data, "hello");
    EXPECT_TRUE(out[1].flags & flag::end_stream);
}

TEST(H2Session, RequestBodyWithContentLengthAndTrailers) {
    ServerFixture fx;
    Peer p;
    p.preface().settings().headers(1,
                                   {{":method", "POST"},
                                    {":scheme", "http"},
                                    {":path", "/up"},
                                    {":authority", "a"},
                                    {"content-length", "11"}},
                                   false);
    p.data(1, "hello ", false).data(1, "world", false).headers(1, {{"x-sum", "1"}}, true);
    fx.feed(p.take());
    auto& m = fx.rec.streams[1];
    EXPECT_EQ(m.body, "hello world");
    ASSERT_EQ(m.ends.size(), 2u);
    EXPECT_EQ(m.ends[1].kind, HeadersEnd::Kind::trailers);
    EXPECT_TRUE(m.ends[1].end_stream);
    EXPECT_FALSE(m.closed);
}

struct Malformed {
    const char* what;
    std::vector<EncoderField> fields;
};

TEST(H2Session, MalformedRequestsAreStreamErrors) {
    const std::vector<Malformed> cases = {
        {"upper case",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"X-A", "1"}}},
        {"space in name",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"a b", "1"}}},
        {"colon in name",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"a:b", "1"}}},
        {"empty name",
         {{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}, {"", "1"}}},
        {"NUL in value",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"a", std::string_view("x\0y", 3)}}},
        {"CR in value",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"a", "x\ry"}}},
        {"leading space",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"a", " x"}}},
        {"trailing tab",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"a", "x\t"}}},
        {"connection",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"connection", "close"}}},
        {"keep-alive",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"keep-alive", "1"}}},
        {"proxy-connection",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"proxy-connection", "x"}}},
        {"transfer-encoding",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"transfer-encoding", "chunked"}}},
        {"upgrade",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"upgrade", "h2c"}}},
        {"te gzip",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"te", "gzip"}}},
        {"pseudo after regular",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {"a", "1"},
          {":path", "/"}}},
        {"unknown pseudo",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {":foo", "1"}}},
        {":status in a request",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {":status", "200"}}},
        {"duplicate :path",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {":path", "/"}}},
        {"missing :path", {{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}}},
        {"missing :method", {{":scheme", "http"}, {":authority", "a"}, {":path", "/"}}},
        {"missing :scheme", {{":method", "GET"}, {":path", "/"}}},
        {"no :authority nor Host", {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}}},
        // 8.3.1: ":authority" and Host, when present, "MUST NOT be empty".
        {"empty :authority",
         {{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {":authority", ""}}},
        {"empty Host", {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {"host", ""}}},
        {"CONNECT with an empty :authority", {{":method", "CONNECT"}, {":authority", ""}}},
        // RFC 9110 7.2: more than one Host field line.
        {"Host twice",
         {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {"host", "a"}, {"host", "a"}}},
        {"empty :path",
         {{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", ""}}},
        {"relative :path",
         {{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", "a/b"}}},
        {"* on GET",
         {{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", "*"}}},
        {"CONNECT without :authority", {{":method", "CONNECT"}}},
        {"CONNECT with :path", {{":method", "CONNECT"}, {":authority", "a:1"}, {":path", "/"}}},
        {":protocol not enabled",
         {{":method", "CONNECT"},
          {":protocol", "websocket"},
          {":scheme", "http"},
          {":path", "/"},
          {":authority", "a"}}},
        {"content-length not a number",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"content-length", "1x"}}},
        {"content-length with END_STREAM",
         {{":method", "POST"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"content-length", "3"}}},
        {"content-lengths that differ",
         {{":method", "POST"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"content-length", "0"},
          {"content-length", "1"}}},
    };
    for (const Malformed& c : cases) {
        ServerFixture fx;
        Peer p;
        fx.feed(p.preface().settings().take());
        const auto out = fx.feed(p.headers(1, c.fields, true).take());
        expect_rst(fx, out, 1, ErrorCode::protocol_error, c.what);
        EXPECT_TRUE(fx.rec.streams[1].closed) << c.what;
        EXPECT_TRUE(fx.rec.streams[1].ends.empty()) << c.what;  // never handed over
    }
}

TEST(H2Session, AcceptedRequestForms) {
    SessionOptions o;
    o.enable_connect_protocol = true;
    const std::vector<Malformed> cases = {
        {"OPTIONS *",
         {{":method", "OPTIONS"}, {":scheme", "http"}, {":authority", "a"}, {":path", "*"}}},
        {"CONNECT", {{":method", "CONNECT"}, {":authority", "a:443"}}},
        {"extended CONNECT",
         {{":method", "CONNECT"},
          {":protocol", "websocket"},
          {":scheme", "https"},
          {":path", "/chat"},
          {":authority", "a"}}},
        {"te trailers",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"te", "Trailers"}}},
        {"content-length 0",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"content-length", "0"}}},
        {"inner spaces",
         {{":method", "GET"},
          {":scheme", "http"},
          {":authority", "a"},
          {":path", "/"},
          {"a", "x y"}}},
        {"empty value",
         {{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}, {"a", ""}}},
    };
    for (const Malformed& c : cases) {
        ServerFixture fx(o);
        Peer p;
        const auto out = fx.feed(p.preface().settings().headers(1, c.fields, true).take());
        EXPECT_EQ(find_frame(out, FrameType::rst_stream), nullptr) << c.what;
        ASSERT_EQ(fx.rec.streams[1].ends.size(), 1u) << c.what;
    }
}

// RFC 8441: an extended CONNECT is a tunnel both ways. The server's END_STREAM first asks
// the client to stop (RST_STREAM NO_ERROR, 9113 8.1) unless the driver awaits the client's
// end (await_peer_end: a WebSocket that sent its closing frame waits for the client's).
TEST(H2Session, ExtendedConnectTunnelHalfClosedByTheServer) {
    SessionOptions o;
    o.enable_connect_protocol = true;
    const std::vector<EncoderField> connect{{":method", "CONNECT"},
                                            {":protocol", "websocket"},
                                            {":scheme", "https"},
                                            {":path", "/chat"},
                                            {":authority", "a"}};
    const std::vector<EncoderField> ok{{":status", "200"}};
    for (const bool await : {true, false}) {
        SCOPED_TRACE(await ? "awaiting the client's end" : "not awaiting");
        ServerFixture fx(o);
        Peer p;
        fx.feed(p.preface().settings().headers(1, connect, false).take());
        auto& m = fx.rec.streams[1];
        ASSERT_EQ(m.ends.size(), 1u);
        EXPECT_FALSE(m.ends[0].end_stream);
        Stream* st = fx.session.find(1);
        ASSERT_NE(st, nullptr);
        fx.session.send_headers(*st, ok, false);
        EXPECT_EQ(fx.session.send_data(*st, "frames", false), 6u);
        st->await_peer_end = await;
        fx.session.send_data(*st, {}, true);
        auto out = frames_of(std::exchange(fx.session.output(), {}));
        if (!await) {
            expect_rst(fx, out, 1, ErrorCode::no_error, "a response that ends first");
            EXPECT_TRUE(m.closed);
            continue;
        }
        EXPECT_EQ(find_frame(out, FrameType::rst_stream), nullptr);
        EXPECT_FALSE(m.closed);
        EXPECT_EQ(st->state, StreamState::half_closed_local);
        // The client's DATA still arrives, then its END_STREAM closes the stream.
        out = fx.feed(p.data(1, "answer", true).take());
        EXPECT_EQ(m.body, "answer");
        EXPECT_TRUE(m.closed);
        EXPECT_EQ(m.code, ErrorCode::no_error);
        EXPECT_FALSE(m.by_peer);
        EXPECT_EQ(find_frame(out, FrameType::rst_stream), nullptr);
        EXPECT_EQ(fx.session.stream_count(), 0u);
    }
}

// RFC 9113 8.1: a response complete before its request's body may be followed by RST_STREAM
// NO_ERROR; when the rest of a declared body (content-length) is at most 16 KiB and fits the
// stream's window, the stream half-closes instead and the body's last DATA closes it (curl
// 7.88 sends HEADERS and DATA in separate writes, and drops a response reset meanwhile).
struct EarlyAnswer {
    const char* what;
    long long content_length;  // negative: none declared
    std::size_t sent;          // body bytes sent before the response
    bool reset;                // RST_STREAM NO_ERROR expected
};

std::vector<EncoderField> post_with_length(const std::string& length) {
    std::vector<EncoderField> f{
        {":method", "POST"}, {":scheme", "http"}, {":path", "/up"}, {":authority", "a"}};
    if (!length.empty()) f.push_back({"content-length", length});
    return f;
}

// Sums the WINDOW_UPDATE increments for stream `id` among `frames`.
std::uint64_t window_credit(const std::vector<Out>& frames, std::uint32_t id) {
    std::uint64_t n = 0;
    for (const Out& o : frames)
        if (o.type == FrameType::window_update && o.stream == id) n += o.value;
    return n;
}

TEST(H2Session, ResponseBeforeASmallDeclaredBodyHalfClosesTheStream) {
    const std::vector<EarlyAnswer> cases{
        {"40 bytes declared, none sent", 40, 0, false},
        {"content-length 0 without END_STREAM", 0, 0, false},
        {"16,384 bytes declared", 16384, 0, false},
        {"16,000 bytes left of 36,000", 36000, 20000, false},
        {"16,385 bytes declared", 16385, 0, true},
        {"16,385 bytes left of 36,385", 36385, 20000, true},
        {"1 MB declared", 1 << 20, 0, true},
        {"no content-length", -1, 0, true},
        {"no content-length, 20,000 bytes sent", -1, 20000, true},
    };
    const std::vector<EncoderField> unauthorized{{":status", "401"}};
    for (const bool consume : {true, false}) {
        for (const EarlyAnswer& c : cases) {
            SCOPED_TRACE(std::string(c.what) + (consume ? ", consumed" : ", not consumed"));
            // Our connection window is 65,535: a WINDOW_UPDATE once 32,768 bytes came back.
            SessionOptions o;
            o.connection_window_size = 65535;
            ServerFixture fx(o);
            fx.rec.auto_consume = consume;
            Peer p;
            const std::string length =
                c.content_length < 0 ? std::string() : std::to_string(c.content_length);
            p.preface().settings().headers(1, post_with_length(length), false);
            if (c.sent) p.data(1, std::string(c.sent, 'a'), false);
            auto out = fx.feed(p.take());
            auto& m = fx.rec.streams[1];
            ASSERT_EQ(m.ends.size(), 1u);
            EXPECT_FALSE(m.ends[0].end_stream);
            EXPECT_EQ(m.body.size(), c.sent);
            Stream* st = fx.session.find(1);
            ASSERT_NE(st, nullptr);

            // The response (HEADERS with END_STREAM) before the rest of the body.
            fx.session.send_headers(*st, unauthorized, true);
            out = frames_of(std::exchange(fx.session.output(), {}));
            const Out* h = find_frame(out, FrameType::headers);
            ASSERT_NE(h, nullptr);
            EXPECT_TRUE(h->flags & flag::end_stream);
            if (c.reset) {
                expect_rst(fx, out, 1, ErrorCode::no_error, c.what);
                EXPECT_TRUE(m.closed);
                EXPECT_EQ(m.code, ErrorCode::no_error);
                EXPECT_FALSE(m.by_peer);
                continue;
            }
            EXPECT_EQ(find_frame(out, FrameType::rst_stream), nullptr);
            EXPECT_FALSE(m.closed);
            EXPECT_EQ(st->state, StreamState::half_closed_local);
            EXPECT_EQ(fx.session.stream_count(), 1u);

            // The rest of the body, with END_STREAM, closes the stream normally; every byte
            // of the body goes back to the connection's window, consumed or not.
            const std::size_t rest = static_cast<std::size_t>(c.content_length) - c.sent;
            out = fx.feed(p.data(1, std::string(rest, 'b'), true).take());
            EXPECT_EQ(find_frame(out, FrameType::rst_stream), nullptr);
            EXPECT_EQ(find_frame(out, FrameType::goaway), nullptr);
            EXPECT_FALSE(fx.session.closed()) << fx.session.error_reason();
            EXPECT_EQ(m.body.size(), static_cast<std::size_t>(c.content_length));
            EXPECT_TRUE(m.closed);
            EXPECT_EQ(m.code, ErrorCode::no_error);
            EXPECT_FALSE(m.by_peer);
            EXPECT_EQ(fx.session.stream_count(), 0u);
            if (c.content_length >= 32768) {
                EXPECT_EQ(window_credit(out, 0), static_cast<std::uint64_t>(c.content_length));
            }
            // The connection goes on.
            fx.feed(p.get(3).take());
            EXPECT_EQ(fx.rec.streams[3].ends.size(), 1u);
        }
    }
}

// The rest of a small declared body must also fit the stream's receive window (our smaller
// SETTINGS_INITIAL_WINDOW_SIZE, acknowledged): otherwise the client could not send it before
// a WINDOW_UPDATE the stream will never get, and the stream is reset as before.
TEST(H2Session, ResponseBeforeABodyPastTheStreamsWindowResetsIt) {
    SessionOptions o;
    o.initial_window_size = 1000;
    const std::vector<EncoderField> ok{{":status", "200"}};
    for (const int length : {1000, 1001, 5000}) {
        SCOPED_TRACE("content-length " + std::to_string(length));
        ServerFixture fx(o);
        Peer p;
        std::string ack;
        append_settings_ack(ack);
        p.preface().settings().raw(ack);
        fx.feed(p.headers(1, post_with_length(std::to_string(length)), false).take());
        Stream* st = fx.session.find(1);
        ASSERT_NE(st, nullptr);
        EXPECT_EQ(st->recv_window, 1000);
        fx.session.send_headers(*st, ok, true);
        auto out = frames_of(std::exchange(fx.session.output(), {}));
        if (length > 1000) {
            expect_rst(fx, out, 1, ErrorCode::no_error, "past the window");
            continue;
        }
        EXPECT_EQ(find_frame(out, FrameType::rst_stream), nullptr);
        out = fx.feed(p.data(1, std::string(1000, 'x'), true).take());
        EXPECT_EQ(find_frame(out, FrameType::rst_stream), nullptr) << fx.session.error_reason();
        EXPECT_TRUE(fx.rec.streams[1].closed);
        EXPECT_EQ(fx.session.stream_count(), 0u);
    }
}

TEST(H2Session, ConnectionErrors) {
    struct Case {
        const char* what;
        std::string bytes;  // after the preface and SETTINGS (unless noted)
        ErrorCode code;
    };
    Peer h;
    std::string late_headers = h.get(5).get(3).take();
    std::string idle_data;
    append_data(idle_data, 1, "x", false);
    std::string even;
    {
        Peer e;
        even = e.get(2).take();
    }
    std::string rst_idle;
    append_rst_stream(rst_idle, 1, ErrorCode::cancel);
    std::string wu_idle;
    append_window_update(wu_idle, 1, 10);
    std::string push;
    append_push_promise(push, 1, 2, "", default_max_frame_size);
    std::string wu_overflow;
    append_window_update(wu_overflow, 0, max_window_size);
    std::string big_initial;
    {
        Peer b;
        b.get(1);
        append_window_update(b.bytes, 1, max_window_size - 65535);
        const std::vector<Setting> s{{0x4, 65536}};
        b.settings(s);
        big_initial = b.take();
    }
    std::string over_conn_window;
    {
        Peer b;
        b.headers(1,
                  {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                  false);
        // 16 MiB connection window (start() raised it from 65,535): 1,025 frames of 16 KiB.
        const std::string chunk(16384, 'x');
        for (int i = 0; i < 1025; ++i) b.data(1, chunk, false);
        over_conn_window = b.take();
    }
    std::string ended_stream;
    {
        Peer b;
        b.get(1);
        ended_stream = b.take();
    }
    const Case cases[] = {
        {"HEADERS on a lower stream id", late_headers, ErrorCode::protocol_error},
        {"DATA on an idle stream", idle_data, ErrorCode::protocol_error},
        {"HEADERS on an even stream id", even, ErrorCode::protocol_error},
        {"RST_STREAM on an idle stream", rst_idle, ErrorCode::protocol_error},
        {"WINDOW_UPDATE on an idle stream", wu_idle, ErrorCode::protocol_error},
        {"PUSH_PROMISE from a client", push, ErrorCode::protocol_error},
        {"connection window over 2^31-1", wu_overflow, ErrorCode::flow_control_error},
        {"SETTINGS_INITIAL_WINDOW_SIZE overflowing a window", big_initial,
         ErrorCode::flow_control_error},
        {"frame-layer error", std::string("\0\0\x04\x06\0\0\0\0\0abcd", 13),
         ErrorCode::frame_size_error},
        {"HPACK error", std::string("\0\0\x01\x01\x05\0\0\0\x01\x80", 10),
         ErrorCode::compression_error},
        {"too many SETTINGS entries",
         [] {
             std::string s;
             std::vector<Setting> v(33, Setting{0x99, 1});
             append_settings(s, v);
             return s;
         }(),
         ErrorCode::enhance_your_calm},
        {"bad SETTINGS value",
         [] {
             std::string s;
             const std::vector<Setting> v{{0x2, 2}};
             append_settings(s, v);
             return s;
         }(),
         ErrorCode::protocol_error},
    };
    for (const Case& c : cases) {
        ServerFixture fx;
        Peer p;
        fx.feed(p.preface().settings().take());
        const auto out = fx.feed(c.bytes);
        expect_goaway(fx, out, c.code, c.what);
    }
    {
        // DATA beyond the connection window (stream windows larger than it).
        SessionOptions o;
        o.initial_window_size = max_window_size;
        ServerFixture fx(o);
        Peer p;
        fx.rec.auto_consume = false;
        fx.feed(p.preface().settings().take());
        SCOPED_TRACE("connection window");
        const auto out = fx.feed(over_conn_window);
        expect_goaway(fx, out, ErrorCode::flow_control_error, "DATA beyond the connection window");
    }
    {
        // A frame on a stream both sides ended.
        ServerFixture fx;
        Peer p;
        fx.feed(p.preface().settings().get(1).take());
        Stream* s = fx.session.find(1);
        ASSERT_NE(s, nullptr);
        fx.session.send_headers(*s, std::vector<EncoderField>{{":status", "204"}}, true);
        fx.session.output().clear();
        std::string d;
        append_data(d, 1, "x", false);
        expect_goaway(fx, fx.feed(d), ErrorCode::stream_closed, "DATA on a stream the peer ended");
    }
    {
        ServerFixture fx;
        const auto out = fx.feed("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n");
        expect_goaway(fx, out, ErrorCode::protocol_error, "not the preface");
    }
    {
        ServerFixture fx;
        Peer p;
        const auto out = fx.feed(p.preface().get(1).take());
        expect_goaway(fx, out, ErrorCode::protocol_error, "first frame not SETTINGS");
    }
}

TEST(H2Session, StreamErrors) {
    {
        // DATA after the client's END_STREAM on a stream still open our way (5.1).
        ServerFixture fx;
        Peer p;
        fx.feed(p.preface().settings().get(1).take());
        const auto out = fx.feed(p.data(1, "x", false).take());
        expect_goaway(fx, out, ErrorCode::stream_closed, "DATA after END_STREAM");
        EXPECT_TRUE(fx.rec.streams[1].closed);
    }
    {
        // DATA beyond the stream's window.
        SessionOptions o;
        o.initial_window_size = 65535;
        ServerFixture fx(o);
        fx.rec.auto_consume = false;
        Peer p;
        fx.feed(p.preface().settings().take());
        p.headers(1,
                  {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                  false);
        const std::string chunk(16384, 'x');
        for (int i = 0; i < 4; ++i) p.data(1, chunk, false);
        p.data(1, "overflow", false);
        const auto out = fx.feed(p.take());
        expect_rst(fx, out, 1, ErrorCode::flow_control_error, "DATA beyond the stream window");
    }
    {
        // A stream window over 2^31-1.
        ServerFixture fx;
        Peer p;
        fx.feed(p.preface().settings().get(1).take());
        std::string wu;
        append_window_update(wu, 1, max_window_size);
        const auto out = fx.feed(wu);
        expect_rst(fx, out, 1, ErrorCode::flow_control_error, "stream window overflow");
    }
    {
        // A frame on a stream the client reset: STREAM_CLOSED; one we reset: ignored.
        ServerFixture fx;
        Peer p;
        fx.feed(
            p.preface()
                .settings()
                .headers(
                    1,
                    {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                    false)
                .take());
        std::string rst;
        append_rst_stream(rst, 1, ErrorCode::cancel);
        fx.feed(rst);
        EXPECT_TRUE(fx.rec.streams[1].closed);
        EXPECT_TRUE(fx.rec.streams[1].by_peer);
        EXPECT_EQ(fx.rec.streams[1].code, ErrorCode::cancel);
        const auto out = fx.feed(p.data(1, "x", false).take());
        expect_rst(fx, out, 1, ErrorCode::stream_closed, "DATA after the client's RST_STREAM");

        fx.feed(
            p.headers(
                 7, {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                 false)
                .take());
        fx.session.reset(*fx.session.find(7), ErrorCode::cancel);
        fx.session.output().clear();
        const auto quiet = fx.feed(p.data(7, "late", true).take());
        EXPECT_TRUE(quiet.empty());  // ignored (its connection-window share comes back later)
    }
    {
        // A stream depending on itself, by PRIORITY and by HEADERS.
        ServerFixture fx;
        Peer p;
        fx.feed(p.preface().settings().take());
        std::string pr;
        append_priority(pr, 3, {3, 0, false});
        expect_rst(fx, fx.feed(pr), 3, ErrorCode::protocol_error, "PRIORITY on itself");
    }
}

TEST(H2Session, RefusesStreamsOverTheLimit) {
    SessionOptions o;
    o.max_concurrent_streams = 2;
    ServerFixture fx(o);
    Peer p;
    fx.feed(p.preface().settings().take());
    p.headers(1, {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
              false);
    p.headers(3, {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
              false);
    p.headers(5,
              {{":method", "POST"},
               {":scheme", "http"},
               {":authority", "a"},
               {":path", "/"},
               {"x-new", "v"}},
              false);
    const auto out = fx.feed(p.take());
    const Out* r = find_frame(out, FrameType::rst_stream);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->stream, 5u);
    EXPECT_EQ(r->code, ErrorCode::refused_stream);
    EXPECT_EQ(fx.session.stream_count(), 2u);
    EXPECT_EQ(fx.rec.streams.count(5), 0u);
    // Its block still went through HPACK: the next request may refer to "x-new".
    fx.session.reset(*fx.session.find(1), ErrorCode::cancel);
    fx.feed(p.headers(7,
                      {{":method", "GET"},
                       {":scheme", "http"},
                       {":authority", "a"},
                       {":path", "/"},
                       {"x-new", "v"}},
                      true)
                .take());
    ASSERT_EQ(fx.rec.streams[7].ends.size(), 1u);
    EXPECT_EQ(fx.rec.streams[7].fields.back().second, "v");
}

TEST(H2Session, StreamsOverTheAcknowledgedLimitEndTheConnection) {
    SessionOptions o;
    o.max_concurrent_streams = 1;
    ServerFixture fx(o);
    Peer p;
    fx.feed(p.preface().settings().take());
    std::string ack;
    append_settings_ack(ack);
    fx.feed(ack);
    p.headers(1, {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
              false);
    p.headers(3, {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
              false);
    expect_goaway(fx, fx.feed(p.take()), ErrorCode::protocol_error, "over the acknowledged limit");
}

TEST(H2Session, FlowControlBothWays) {
    SessionOptions o;
    o.initial_window_size = 65535;
    o.connection_window_size = 65535;
    ServerFixture fx(o);
    Peer p;
    fx.feed(p.preface()
                .settings()
                .headers(
                    1,
                    {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                    false)
                .take());
    // Receiving: WINDOW_UPDATE once half the window is consumed, for the stream and the
    // connection.
    auto out = fx.feed(p.data(1, std::string(30000, 'a'), false).take());
    EXPECT_EQ(find_frame(out, FrameType::window_update), nullptr);
    out = fx.feed(p.data(1, std::string(5000, 'a'), false).take());
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].type, FrameType::window_update);
    EXPECT_EQ(out[0].stream, 0u);
    EXPECT_EQ(out[0].value, 35000u);
    EXPECT_EQ(out[1].stream, 1u);
    EXPECT_EQ(out[1].value, 35000u);

    // Sending: the client's window is 65,535; the rest waits for its WINDOW_UPDATE.
    Stream* s = fx.session.find(1);
    fx.session.send_headers(*s, std::vector<EncoderField>{{":status", "200"}}, false);
    const std::string body(100000, 'b');
    EXPECT_EQ(fx.session.send_data(*s, body, true), 65535u);
    EXPECT_TRUE(s->blocked);
    out = frames_of(std::exchange(fx.session.output(), {}));
    std::size_t sent = 0;
    for (const Out& f : out) {
        if (f.type != FrameType::data) continue;
        EXPECT_LE(f.data.size(), 16384u);
        EXPECT_FALSE(f.flags & flag::end_stream);
        sent += f.data.size();
    }
    EXPECT_EQ(sent, 65535u);
    std::string wu;
    append_window_update(wu, 1, 50000);
    fx.feed(wu);
    EXPECT_TRUE(fx.rec.writable.empty());  // the connection window is still 0
    wu.clear();
    append_window_update(wu, 0, 50000);
    fx.feed(wu);
    ASSERT_EQ(fx.rec.writable.size(), 1u);
    EXPECT_EQ(fx.session.send_window(*s), 50000u);
    // A SETTINGS decrease can take a window below zero (6.9.2).
    const std::vector<Setting> smaller{{0x4, 0}};
    fx.feed(p.settings(smaller).take());
    EXPECT_EQ(s->send_window, 50000 - 65535);
    EXPECT_EQ(fx.session.send_window(*s), 0u);
}

// Our SETTINGS_INITIAL_WINDOW_SIZE made smaller takes effect with its ACK and can leave a
// stream's receive window below zero (6.9.2): an empty DATA frame is still allowed (6.9.1), a
// frame with any length is a stream error.
TEST(H2Session, EmptyDataOnANegativeReceiveWindow) {
    SessionOptions o;
    o.initial_window_size = 16384;
    ServerFixture fx(o);
    fx.rec.auto_consume = false;
    Peer p;
    fx.feed(p.preface()
                .settings()
                .headers(
                    1,
                    {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                    false)
                .take());
    // Before the ACK the window is the default 65,535.
    auto out = fx.feed(p.data(1, std::string(30000, 'a'), false).take());
    EXPECT_EQ(find_frame(out, FrameType::rst_stream), nullptr);
    std::string ack;
    append_settings_ack(ack);
    fx.feed(ack);
    Stream* s = fx.session.find(1);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->recv_window, 16384 - 30000);
    out = fx.feed(p.data(1, "", false).take());
    EXPECT_EQ(find_frame(out, FrameType::rst_stream), nullptr) << fx.session.error_reason();
    EXPECT_EQ(find_frame(out, FrameType::goaway), nullptr);
    out = fx.feed(p.data(1, "x", false).take());
    expect_rst(fx, out, 1, ErrorCode::flow_control_error, "DATA on a negative window");
}

// Bytes consumed before our smaller SETTINGS_INITIAL_WINDOW_SIZE took effect are announced
// with its ACK when they pass the new threshold: a window at zero or below with nothing left
// to consume would otherwise stall the stream for good.
TEST(H2Session, ConsumedBytesAreAnnouncedWhenOurWindowShrinks) {
    SessionOptions o;
    o.initial_window_size = 1000;
    ServerFixture fx(o);
    fx.rec.auto_consume = false;
    Peer p;
    fx.feed(p.preface()
                .settings()
                .headers(
                    1,
                    {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                    false)
                .take());
    fx.feed(p.data(1, std::string(1024, 'a'), false).take());
    Stream* s = fx.session.find(1);
    ASSERT_NE(s, nullptr);
    fx.session.consume(*s, 1024);
    auto out = frames_of(std::exchange(fx.session.output(), {}));
    for (const Out& f : out) EXPECT_FALSE(f.type == FrameType::window_update && f.stream == 1u);
    std::string ack;
    append_settings_ack(ack);
    out = fx.feed(ack);
    const Out* wu = nullptr;
    for (const Out& f : out)
        if (f.type == FrameType::window_update && f.stream == 1u) wu = &f;
    ASSERT_NE(wu, nullptr);
    EXPECT_EQ(wu->value, 1024u);
    EXPECT_EQ(s->recv_window, 1000);
    out = fx.feed(p.data(1, std::string(1000, 'b'), true).take());
    EXPECT_EQ(find_frame(out, FrameType::rst_stream), nullptr) << fx.session.error_reason();
}

TEST(H2Session, Defences) {
    {
        // CONTINUATION flood: empty CONTINUATION frames without end.
        ServerFixture fx;
        Peer p;
        fx.feed(p.preface().settings().take());
        std::string flood;
        append_frame_header(flood, 1, FrameType::headers, 0, 1);
        flood += '\x82';
        for (int i = 0; i < 100; ++i) append_frame_header(flood, 0, FrameType::continuation, 0, 1);
        expect_goaway(fx, fx.feed(flood), ErrorCode::enhance_your_calm, "CONTINUATION flood");
    }
    {
        // PING flood between requests.
        ServerFixture fx;
        Peer p;
        fx.feed(p.preface().settings().take());
        std::string flood;
        for (int i = 0; i < 1001; ++i) append_ping(flood, "12345678", false);
        expect_goaway(fx, fx.feed(flood), ErrorCode::enhance_your_calm, "PING flood");
    }
    {
        // Requests restore the control budget.
        ServerFixture fx;
        Peer p;
        fx.feed(p.preface().settings().take());
        for (std::uint32_t id = 1; id < 40; id += 2) {
            std::string pings;
            for (int i = 0; i < 100; ++i) append_ping(pings, "12345678", false);
            fx.feed(pings);
            fx.feed(p.get(id).take());
            fx.session.reset(*fx.session.find(id), ErrorCode::no_error);
            fx.session.output().clear();
        }
        EXPECT_FALSE(fx.session.closed());
    }
    {
        // Acknowledgements a peer does not read.
        SessionOptions o;
        o.max_queued_acks = 10;
        ServerFixture fx(o);
        Peer p;
        fx.feed(p.preface().settings().take());
        std::string flood;
        for (int i = 0; i < 11; ++i) append_ping(flood, "12345678", false);
        fx.session.receive(flood);
        EXPECT_TRUE(fx.session.closed());
        EXPECT_EQ(fx.session.error(), ErrorCode::enhance_your_calm);
    }
    {
        // Rapid reset: streams opened and reset at once, faster than the token bucket.
        SessionOptions o;
        o.reset_burst = 20;
        o.resets_per_second = 10;
        o.max_control_frames = 100000;
        ServerFixture fx(o);
        Peer p;
        fx.feed(p.preface().settings().take());
        std::uint32_t id = 1;
        for (int i = 0; i < 20; ++i, id += 2) {
            p.headers(
                id, {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                false);
            append_rst_stream(p.bytes, id, ErrorCode::cancel);
        }
        fx.feed(p.take(), 1000);
        EXPECT_FALSE(fx.session.closed());
        // One second later, 10 more are fine; the 11th is not.
        for (int i = 0; i < 10; ++i, id += 2) {
            p.headers(
                id, {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                false);
            append_rst_stream(p.bytes, id, ErrorCode::cancel);
        }
        fx.feed(p.take(), 2000);
        EXPECT_FALSE(fx.session.closed());
        p.headers(id,
                  {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                  false);
        append_rst_stream(p.bytes, id, ErrorCode::cancel);
        expect_goaway(fx, fx.feed(p.take(), 2000), ErrorCode::enhance_your_calm, "rapid reset");
    }
    {
        // The header list over the limit: fields stop, the stream is flagged, HPACK stays in
        // step and the connection goes on.
        SessionOptions o;
        o.max_header_list_size = 250;
        ServerFixture fx(o);
        Peer p;
        fx.feed(p.preface().settings().take());
        fx.feed(p.headers(1,
                          {{":method", "GET"},
                           {":scheme", "http"},
                           {":authority", "a"},
                           {":path", "/"},
                           {"x-big", std::string(150, 'v')},
                           {"x-after", "1"}},
                          true)
                    .take());
        auto& m = fx.rec.streams[1];
        ASSERT_EQ(m.ends.size(), 1u);
        EXPECT_TRUE(m.ends[0].list_too_large);
        EXPECT_EQ(m.fields.size(), 4u);  // the pseudo-fields, 166 bytes
        fx.session.reset(*fx.session.find(1), ErrorCode::no_error);
        fx.feed(p.headers(3,
                          {{":method", "GET"},
                           {":scheme", "http"},
                           {":authority", "a"},
                           {":path", "/"},
                           {"x-after", "1"}},
                          true)
                    .take());
        ASSERT_EQ(fx.rec.streams[3].ends.size(), 1u);
        EXPECT_FALSE(fx.rec.streams[3].ends[0].list_too_large);
        EXPECT_EQ(fx.rec.streams[3].fields.back().first, "x-after");
    }
    {
        // SETTINGS not acknowledged in time.
        Recorder rec;
        Session s(rec);
        s.start(1000);
        EXPECT_TRUE(s.tick(5000));
        EXPECT_FALSE(s.tick(11001));
        const auto out = frames_of(s.output());
        ASSERT_FALSE(out.empty());
        EXPECT_EQ(out.back().type, FrameType::goaway);
        EXPECT_EQ(out.back().code, ErrorCode::settings_timeout);
    }
}

TEST(H2Session, GracefulShutdown) {
    ServerFixture fx;
    Peer p;
    fx.feed(p.preface()
                .settings()
                .headers(
                    1,
                    {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                    false)
                .take());
    fx.session.shutdown();
    auto out = frames_of(std::exchange(fx.session.output(), {}));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].type, FrameType::goaway);
    EXPECT_EQ(out[0].value, 1u);
    EXPECT_EQ(out[0].code, ErrorCode::no_error);
    EXPECT_FALSE(fx.session.drained());
    // A newer stream is ignored; stream 1 finishes.
    fx.feed(p.get(3).data(1, "body", true).take());
    EXPECT_EQ(fx.rec.streams.count(3), 0u);
    EXPECT_EQ(fx.rec.streams[1].body, "body");
    fx.session.send_headers(*fx.session.find(1), std::vector<EncoderField>{{":status", "200"}},
                            true);
    EXPECT_TRUE(fx.session.drained());
}

TEST(H2Session, FramesPastOurGoawayAreIgnored) {
    // 6.8: after our GOAWAY, frames on the streams the client opened above its last stream id
    // (crossing the GOAWAY) are ignored; a stream it never opened is still idle (5.1).
    ServerFixture fx;
    Peer p;
    fx.feed(p.preface().settings().get(1).take());
    fx.session.shutdown();
    fx.session.output().clear();
    const std::string window_update("\x00\x00\x04\x08\x00\x00\x00\x00\x03\x00\x00\x00\x01", 13);
    const std::string rst("\x00\x00\x04\x03\x00\x00\x00\x00\x03\x00\x00\x00\x08", 13);
    auto out = fx.feed(
        p.headers(3,
                  {{":method", "POST"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}},
                  false)
            .data(3, "body", false)
            .raw(window_update)
            .raw(rst)
            .data(3, "more", true)
            .take());
    EXPECT_TRUE(out.empty());
    EXPECT_FALSE(fx.session.closed());
    EXPECT_EQ(fx.rec.streams.count(3), 0u);
    out = fx.feed(p.data(5, "idle", true).take());
    expect_goaway(fx, out, ErrorCode::protocol_error, "DATA on an idle stream past the GOAWAY");
}

TEST(H2Session, UpgradedStreamOne) {
    Recorder rec;
    Session s(rec);
    rec.session = &s;
    std::string settings_payload;
    {
        std::string f;
        const std::vector<Setting> v{{0x3, 10}, {0x4, 1000}};
        append_settings(f, v);
        settings_payload = f.substr(9);
    }
    ASSERT_TRUE(s.start_upgraded(settings_payload));
    EXPECT_EQ(s.peer_settings().initial_window_size, 1000u);
    Stream* one = s.find(1);
    ASSERT_NE(one, nullptr);
    EXPECT_EQ(one->state, StreamState::half_closed_remote);
    EXPECT_EQ(one->send_window, 1000);
    // No SETTINGS ACK for HTTP2-Settings.
    for (const Out& o : frames_of(s.output()))
        EXPECT_FALSE(o.type == FrameType::settings && (o.flags & flag::ack));

    Recorder rec2;
    Session bad(rec2);
    EXPECT_FALSE(bad.start_upgraded("12345"));
    EXPECT_TRUE(bad.closed());
}

// ---- Our client and our server ----

// Moves bytes between two sessions until neither has anything to say.
void pump(Session& a, Session& b) {
    for (int i = 0; i < 10000; ++i) {
        std::string ab = std::exchange(a.output(), {});
        std::string ba = std::exchange(b.output(), {});
        if (ab.empty() && ba.empty()) return;
        if (!ab.empty()) {
            EXPECT_EQ(b.receive(ab), ab.size());
        }
        if (!ba.empty()) {
            EXPECT_EQ(a.receive(ba), ba.size());
        }
    }
    ADD_FAILURE() << "the sessions never went quiet";
}

struct EchoServer : Recorder {
    void on_headers(Stream& s, const HeadersEnd& end) override {
        Recorder::on_headers(s, end);
        if (end.end_stream) answer(s);
    }
    void on_data(Stream& s, std::string_view data, bool end_stream) override {
        Recorder::on_data(s, data, false);
        if (end_stream) answer(s);
    }
    void answer(Stream& s) {
        session->send_headers(s, std::vector<EncoderField>{{":status", "200"}}, false);
        pending[s.id] = streams[s.id].body;
        on_writable(s);
    }
    void on_writable(Stream& s) override {
        std::string& left = pending[s.id];
        const std::size_t n = session->send_data(s, left, true);
        left.erase(0, n);
    }
    std::map<std::uint32_t, std::string> pending;
};

struct Client : Recorder {
    std::map<std::uint32_t, std::string> pending;
    void on_writable(Stream& s) override {
        std::string& left = pending[s.id];
        const std::size_t n = session->send_data(s, left, true);
        left.erase(0, n);
    }
};

TEST(H2Session, OurClientAndServerMoveLargeBodies) {
    EchoServer srv;
    SessionOptions so;
    so.initial_window_size = 65535;
    so.connection_window_size = 100000;
    Session server(srv, so);
    srv.session = &server;
    Client cli;
    SessionOptions co;
    co.role = Role::client;
    co.initial_window_size = 70000;
    Session client(cli, co);
    cli.session = &client;
    server.start();
    client.start();
    pump(client, server);

    std::vector<std::uint32_t> ids;
    for (int i = 0; i < 5; ++i) {
        const std::string body(300000 + i, static_cast<char>('a' + i));
        const std::vector<EncoderField> req{
            {":method", "POST"}, {":scheme", "http"}, {":path", "/echo"}, {":authority", "x"}};
        Stream* s = client.open_stream(req, false);
        ASSERT_NE(s, nullptr);
        ids.push_back(s->id);
        cli.pending[s->id] = body;
        cli.on_writable(*s);
    }
    pump(client, server);
    for (int i = 0; i < 5; ++i) {
        const auto& m = cli.streams[ids[static_cast<std::size_t>(i)]];
        EXPECT_EQ(m.body.size(), 300000u + static_cast<std::size_t>(i));
        EXPECT_EQ(m.body.find_first_not_of(static_cast<char>('a' + i)), std::string::npos);
        EXPECT_TRUE(m.closed);
        EXPECT_EQ(m.code, ErrorCode::no_error);
        ASSERT_EQ(m.ends.size(), 1u);
        EXPECT_EQ(m.fields[0].second, "200");
    }
    EXPECT_EQ(server.stream_count(), 0u);
    EXPECT_EQ(client.stream_count(), 0u);
    EXPECT_FALSE(server.closed());
    EXPECT_FALSE(client.closed());
    // Pings both ways.
    client.ping("abcdefgh");
    pump(client, server);
    EXPECT_EQ(cli.ping_ack, "abcdefgh");
    // A GOAWAY ends the client's new streams.
    server.shutdown();
    pump(client, server);
    EXPECT_EQ(cli.goaway_last, ids.back());
    const std::vector<EncoderField> req{
        {":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}};
    EXPECT_EQ(client.open_stream(req, true), nullptr);
}

TEST(H2Session, ClientChecksResponses) {
    struct Case {
        const char* what;
        std::vector<EncoderField> fields;
        bool end_stream;
        bool ok;
    };
    const Case cases[] = {
        {"200", {{":status", "200"}}, true, true},
        {"no :status", {{"a", "1"}}, true, false},
        {"two digits", {{":status", "20"}}, true, false},
        {"request pseudo", {{":status", "200"}, {":path", "/"}}, true, false},
        {"101", {{":status", "101"}}, false, false},
        {"1xx with END_STREAM", {{":status", "103"}}, true, false},
        {"content-length mismatch", {{":status", "200"}, {"content-length", "5"}}, true, false},
    };
    for (const Case& c : cases) {
        Recorder cli;
        SessionOptions co;
        co.role = Role::client;
        Session client(cli, co);
        cli.session = &client;
        client.start();
        Recorder srv;
        Session server(srv);
        srv.session = &server;
        server.start();
        pump(client, server);
        const std::vector<EncoderField> req{
            {":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}};
        Stream* s = client.open_stream(req, true);
        ASSERT_NE(s, nullptr);
        pump(client, server);
        Stream* ss = server.find(1);
        ASSERT_NE(ss, nullptr);
        server.send_headers(*ss, c.fields, c.end_stream);
        pump(client, server);
        const auto& m = cli.streams[1];
        if (c.ok) {
            EXPECT_EQ(m.ends.size(), 1u) << c.what;
            EXPECT_EQ(m.code, ErrorCode::no_error) << c.what;
        } else {
            EXPECT_TRUE(m.ends.empty()) << c.what;
            EXPECT_TRUE(m.closed) << c.what;
            EXPECT_EQ(m.code, ErrorCode::protocol_error) << c.what;
        }
    }
    // An interim response, then the final one.
    Recorder cli;
    SessionOptions co;
    co.role = Role::client;
    Session client(cli, co);
    cli.session = &client;
    client.start();
    Recorder srv;
    Session server(srv);
    srv.session = &server;
    server.start();
    const std::vector<EncoderField> req{
        {":method", "HEAD"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}};
    client.open_stream(req, true);
    pump(client, server);
    server.send_headers(*server.find(1),
                        std::vector<EncoderField>{{":status", "103"}, {"link", "</a>"}}, false);
    server.send_headers(*server.find(1),
                        std::vector<EncoderField>{{":status", "200"}, {"content-length", "100"}},
                        true);  // HEAD: content-length without a body
    pump(client, server);
    const auto& m = cli.streams[1];
    ASSERT_EQ(m.ends.size(), 2u);
    EXPECT_EQ(m.ends[0].kind, HeadersEnd::Kind::interim);
    EXPECT_EQ(m.ends[1].kind, HeadersEnd::Kind::headers);
    EXPECT_TRUE(m.closed);
    EXPECT_EQ(m.code, ErrorCode::no_error);
}

// ---- nghttp2 as the other end ----

struct NgPeer {
    nghttp2_session* s = nullptr;
    nghttp2_session_callbacks* cb = nullptr;
    std::map<std::int32_t, std::string> bodies;
    std::map<std::int32_t, std::vector<std::pair<std::string, std::string>>> headers;
    std::map<std::int32_t, std::uint32_t> closed;
    std::uint32_t goaway = 0xffffffff;

    explicit NgPeer(bool server) {
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_on_header_callback(
            cb, [](nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* n, std::size_t nl,
                   const std::uint8_t* v, std::size_t vl, std::uint8_t, void* u) {
                static_cast<NgPeer*>(u)->headers[f->hd.stream_id].emplace_back(
                    std::string(reinterpret_cast<const char*>(n), nl),
                    std::string(reinterpret_cast<const char*>(v), vl));
                return 0;
            });
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
            cb, [](nghttp2_session* s, std::uint8_t, std::int32_t id, const std::uint8_t* d,
                   std::size_t n, void* u) {
                static_cast<NgPeer*>(u)->bodies[id].append(reinterpret_cast<const char*>(d), n);
                nghttp2_session_consume(s, id, n);
                return 0;
            });
        nghttp2_session_callbacks_set_on_stream_close_callback(
            cb, [](nghttp2_session*, std::int32_t id, std::uint32_t code, void* u) {
                static_cast<NgPeer*>(u)->closed[id] = code;
                return 0;
            });
        nghttp2_session_callbacks_set_on_frame_recv_callback(
            cb, [](nghttp2_session*, const nghttp2_frame* f, void* u) {
                if (f->hd.type == NGHTTP2_GOAWAY) {
                    static_cast<NgPeer*>(u)->goaway = f->goaway.error_code;
                }
                return 0;
            });
        nghttp2_option* opt = nullptr;
        nghttp2_option_new(&opt);
        nghttp2_option_set_no_auto_window_update(opt, 1);
        if (server) {
            nghttp2_session_server_new2(&s, cb, this, opt);
        } else {
            nghttp2_session_client_new2(&s, cb, this, opt);
        }
        nghttp2_option_del(opt);
        nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, nullptr, 0);
    }
    ~NgPeer() {
        nghttp2_session_del(s);
        nghttp2_session_callbacks_del(cb);
    }
    std::string output() {
        std::string out;
        for (;;) {
            const std::uint8_t* p = nullptr;
            const auto n = nghttp2_session_mem_send(s, &p);
            if (n <= 0) break;
            out.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
        }
        return out;
    }
    bool input(std::string_view b) {
        const auto n =
            nghttp2_session_mem_recv(s, reinterpret_cast<const std::uint8_t*>(b.data()), b.size());
        return n >= 0 && static_cast<std::size_t>(n) == b.size();
    }
};

void pump(Session& ours, NgPeer& theirs) {
    for (int i = 0; i < 10000; ++i) {
        std::string a = std::exchange(ours.output(), {});
        std::string b = theirs.output();
        if (a.empty() && b.empty()) return;
        if (!a.empty()) {
            EXPECT_TRUE(theirs.input(a));
        }
        if (!b.empty()) {
            EXPECT_EQ(ours.receive(b), b.size());
        }
    }
    ADD_FAILURE() << "never quiet";
}

nghttp2_nv nv(const char* n, const char* v) {
    return {(std::uint8_t*)n, (std::uint8_t*)v, std::strlen(n), std::strlen(v),
            NGHTTP2_NV_FLAG_NONE};
}

TEST(H2Session, NghttpClientAgainstOurServer) {
    EchoServer srv;
    SessionOptions so;
    so.initial_window_size = 65535;
    Session server(srv, so);
    srv.session = &server;
    server.start();
    NgPeer client(false);
    // A POST with a 200,000-byte body, read by the data provider.
    struct Body {
        std::string data;
        std::size_t at = 0;
    } body{std::string(200000, 'z'), 0};
    nghttp2_data_provider prd;
    prd.source.ptr = &body;
    prd.read_callback = [](nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t len,
                           std::uint32_t* flags, nghttp2_data_source* src, void*) -> ssize_t {
        auto* b = static_cast<Body*>(src->ptr);
        const std::size_t n = std::min(len, b->data.size() - b->at);
        std::memcpy(buf, b->data.data() + b->at, n);
        b->at += n;
        if (b->at == b->data.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
        return static_cast<ssize_t>(n);
    };
    const nghttp2_nv req[] = {nv(":method", "POST"), nv(":scheme", "http"), nv(":path", "/e"),
                              nv(":authority", "a")};
    const std::int32_t id = nghttp2_submit_request(client.s, nullptr, req, 4, &prd, nullptr);
    ASSERT_EQ(id, 1);
    pump(server, client);
    EXPECT_EQ(client.bodies[1].size(), 200000u);
    ASSERT_TRUE(client.closed.count(1));
    EXPECT_EQ(client.closed[1], 0u);
    EXPECT_EQ(client.headers[1][0].second, "200");
    EXPECT_EQ(client.goaway, 0xffffffffu);
    EXPECT_FALSE(server.closed());
}

TEST(H2Session, OurClientAgainstNghttpServer) {
    Client cli;
    SessionOptions co;
    co.role = Role::client;
    co.initial_window_size = 65535;
    Session client(cli, co);
    cli.session = &client;
    client.start();
    NgPeer server(true);
    const std::vector<EncoderField> req{
        {":method", "PUT"}, {":scheme", "http"}, {":path", "/up"}, {":authority", "a"}};
    Stream* s = client.open_stream(req, false);
    ASSERT_NE(s, nullptr);
    cli.pending[s->id] = std::string(150000, 'q');
    cli.on_writable(*s);
    pump(client, server);
    EXPECT_EQ(server.bodies[1].size(), 150000u);
    ASSERT_FALSE(server.headers[1].empty());
    EXPECT_EQ(server.headers[1][0], std::make_pair(std::string(":method"), std::string("PUT")));
    // nghttp2 answers with a body of its own.
    struct Body {
        std::string data;
        std::size_t at = 0;
    } body{std::string(100000, 'r'), 0};
    nghttp2_data_provider prd;
    prd.source.ptr = &body;
    prd.read_callback = [](nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t len,
                           std::uint32_t* flags, nghttp2_data_source* src, void*) -> ssize_t {
        auto* b = static_cast<Body*>(src->ptr);
        const std::size_t n = std::min(len, b->data.size() - b->at);
        std::memcpy(buf, b->data.data() + b->at, n);
        b->at += n;
        if (b->at == b->data.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
        return static_cast<ssize_t>(n);
    };
    const nghttp2_nv resp[] = {nv(":status", "201"), nv("x-a", "b")};
    ASSERT_EQ(nghttp2_submit_response(server.s, 1, resp, 2, &prd), 0);
    pump(client, server);
    const auto& m = cli.streams[1];
    EXPECT_EQ(m.body.size(), 100000u);
    EXPECT_TRUE(m.closed);
    EXPECT_EQ(m.code, ErrorCode::no_error);
    ASSERT_EQ(m.fields.size(), 2u);
    EXPECT_EQ(m.fields[0].second, "201");
    EXPECT_EQ(server.goaway, 0xffffffffu);
}

}  // namespace
