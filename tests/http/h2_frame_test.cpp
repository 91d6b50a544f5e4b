// HTTP/2 frames (RFC 9113 4 and 6): every writer read back, every refusal of the frame layer
// sent as bytes, and what we write read by nghttp2's session (the oracle).

#include "vela/http/h2_frame.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace vela::h2;

std::string header(std::uint32_t length, std::uint8_t type, std::uint8_t flags,
                   std::uint32_t stream) {
    std::string h(9, '\0');
    h[0] = static_cast<char>(length >> 16);
    h[1] = static_cast<char>(length >> 8);
    h[2] = static_cast<char>(length);
    h[3] = static_cast<char>(type);
    h[4] = static_cast<char>(flags);
    h[5] = static_cast<char>(stream >> 24);
    h[6] = static_cast<char>(stream >> 16);
    h[7] = static_cast<char>(stream >> 8);
    h[8] = static_cast<char>(stream);
    return h;
}

std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                  std::string_view payload) {
    return header(static_cast<std::uint32_t>(payload.size()), type, flags, stream) +
           std::string(payload);
}

std::string bytes(std::initializer_list<int> b) {
    std::string s;
    for (int c : b) s.push_back(static_cast<char>(c));
    return s;
}

// Reads every frame of `in`, which must hold whole frames only.
std::vector<Frame> read_all(FrameReader& r, std::string_view in) {
    std::vector<Frame> out;
    while (!in.empty()) {
        Frame f;
        const ReadResult res = r.read(in, f);
        EXPECT_EQ(res.status, ReadStatus::frame) << res.error.reason;
        if (res.status != ReadStatus::frame) break;
        out.push_back(f);
        in.remove_prefix(res.consumed);
    }
    return out;
}

TEST(H2Frame, WritersReadBack) {
    std::string out;
    append_data(out, 1, "hello", true);
    append_headers(out, 3, "block", false, default_max_frame_size);
    append_priority(out, 5, {3, 15, true});
    append_rst_stream(out, 7, ErrorCode::cancel);
    const std::array<Setting, 2> s{{{0x3, 100}, {0x4, 1 << 20}}};
    append_settings(out, s);
    append_settings_ack(out);
    append_push_promise(out, 1, 2, "pp", default_max_frame_size);
    append_ping(out, "12345678", true);
    append_goaway(out, 9, ErrorCode::enhance_your_calm, "calm");
    append_window_update(out, 0, 1000);
    out += frame(0x42, 0xff, 1, "unknown");

    FrameReader r;
    const std::vector<Frame> f = read_all(r, out);
    ASSERT_EQ(f.size(), 11u);
    EXPECT_EQ(f[0].type, FrameType::data);
    EXPECT_EQ(f[0].data, "hello");
    EXPECT_TRUE(f[0].end_stream());
    EXPECT_EQ(f[0].stream_id, 1u);
    EXPECT_EQ(f[1].type, FrameType::headers);
    EXPECT_EQ(f[1].data, "block");
    EXPECT_TRUE(f[1].end_headers());
    EXPECT_FALSE(f[1].end_stream());
    EXPECT_EQ(f[2].type, FrameType::priority);
    EXPECT_EQ(f[2].priority.dependency, 3u);
    EXPECT_EQ(f[2].priority.weight, 15);
    EXPECT_TRUE(f[2].priority.exclusive);
    EXPECT_EQ(f[3].type, FrameType::rst_stream);
    EXPECT_EQ(f[3].error_code, ErrorCode::cancel);
    EXPECT_EQ(f[4].type, FrameType::settings);
    ASSERT_EQ(f[4].setting_count(), 2u);
    EXPECT_EQ(f[4].setting(1).id, 0x4);
    EXPECT_EQ(f[4].setting(1).value, 1u << 20);
    EXPECT_FALSE(f[4].ack());
    EXPECT_TRUE(f[5].ack());
    EXPECT_EQ(f[6].type, FrameType::push_promise);
    EXPECT_EQ(f[6].promised_id, 2u);
    EXPECT_EQ(f[6].data, "pp");
    EXPECT_EQ(f[7].type, FrameType::ping);
    EXPECT_EQ(f[7].data, "12345678");
    EXPECT_TRUE(f[7].ack());
    EXPECT_EQ(f[8].type, FrameType::goaway);
    EXPECT_EQ(f[8].last_stream_id, 9u);
    EXPECT_EQ(f[8].error_code, ErrorCode::enhance_your_calm);
    EXPECT_EQ(f[8].data, "calm");
    EXPECT_EQ(f[9].type, FrameType::window_update);
    EXPECT_EQ(f[9].increment, 1000u);
    EXPECT_EQ(f[10].type, FrameType::unknown);
    EXPECT_EQ(f[10].raw_type, 0x42);
    EXPECT_EQ(f[10].payload, "unknown");
}

TEST(H2Frame, PaddingStripped) {
    FrameReader r;
    // DATA: pad length 3, "ab", 3 bytes of padding; flow control counts all 6.
    std::string in =
        frame(0x0, flag::padded | flag::end_stream, 1, bytes({3}) + "ab" + std::string(3, '\0'));
    auto f = read_all(r, in);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].data, "ab");
    EXPECT_EQ(f[0].length, 6u);
    // DATA padding exactly the rest: empty data.
    in = frame(0x0, flag::padded, 1, bytes({2, 0, 0}));
    f = read_all(r, in);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_TRUE(f[0].data.empty());
    // HEADERS with padding and priority.
    in = frame(0x1, flag::padded | flag::priority | flag::end_headers, 3,
               bytes({1, 0x80, 0, 0, 1, 200}) + "hb" + bytes({0}));
    f = read_all(r, in);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].data, "hb");
    EXPECT_EQ(f[0].priority.dependency, 1u);
    EXPECT_TRUE(f[0].priority.exclusive);
    EXPECT_EQ(f[0].priority.weight, 200);
    // PUSH_PROMISE padded.
    in = frame(0x5, flag::padded | flag::end_headers, 1, bytes({1, 0, 0, 0, 2}) + "x" + bytes({0}));
    f = read_all(r, in);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].promised_id, 2u);
    EXPECT_EQ(f[0].data, "x");
}

TEST(H2Frame, IncompleteAsksForTheWholeFrame) {
    FrameReader r;
    Frame f;
    const std::string data = frame(0x0, 0, 1, "0123456789");
    for (std::size_t n = 0; n < data.size(); ++n) {
        const ReadResult res = r.read(std::string_view(data).substr(0, n), f);
        EXPECT_EQ(res.status, ReadStatus::incomplete);
        EXPECT_EQ(res.consumed, 0u);
        EXPECT_EQ(res.needed, n < 9 ? 9u : data.size());
    }
    EXPECT_EQ(r.read(data, f).status, ReadStatus::frame);
}

TEST(H2Frame, ReservedBitAndUnknownFlagsIgnored) {
    FrameReader r;
    const std::string in = header(2, 0x0, 0xf6, 0x80000001) + "ok";
    const auto f = read_all(r, in);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].stream_id, 1u);
    EXPECT_EQ(f[0].data, "ok");  // 0xf6 has neither PADDED nor END_STREAM
    EXPECT_FALSE(f[0].end_stream());
}

struct Refusal {
    const char* what;
    std::string bytes;
    ErrorCode code;
    bool connection;
};

TEST(H2Frame, EveryFrameLayerRefusal) {
    const Refusal cases[] = {
        {"oversize DATA", header(16385, 0x0, 0, 1), ErrorCode::frame_size_error, true},
        {"oversize unknown", header(16385, 0x42, 0, 1), ErrorCode::frame_size_error, true},
        {"DATA on 0", frame(0x0, 0, 0, "x"), ErrorCode::protocol_error, true},
        {"DATA padded empty", frame(0x0, flag::padded, 1, ""), ErrorCode::frame_size_error, true},
        {"DATA pad = length", frame(0x0, flag::padded, 1, bytes({3, 0, 0})),
         ErrorCode::protocol_error, true},
        {"HEADERS on 0", frame(0x1, flag::end_headers, 0, "x"), ErrorCode::protocol_error, true},
        {"HEADERS priority short", frame(0x1, flag::priority | flag::end_headers, 1, "abcd"),
         ErrorCode::frame_size_error, true},
        {"HEADERS padded priority short",
         frame(0x1, flag::padded | flag::priority | flag::end_headers, 1, bytes({0, 0, 0, 0, 3})),
         ErrorCode::frame_size_error, true},
        {"HEADERS pad too long", frame(0x1, flag::padded | flag::end_headers, 1, bytes({2, 'a'})),
         ErrorCode::protocol_error, true},
        {"PRIORITY on 0", frame(0x2, 0, 0, bytes({0, 0, 0, 1, 0})), ErrorCode::protocol_error,
         true},
        {"PRIORITY 4 bytes", frame(0x2, 0, 1, bytes({0, 0, 0, 3})), ErrorCode::frame_size_error,
         false},
        {"PRIORITY on itself", frame(0x2, 0, 5, bytes({0, 0, 0, 5, 0})), ErrorCode::protocol_error,
         false},
        {"RST_STREAM on 0", frame(0x3, 0, 0, bytes({0, 0, 0, 8})), ErrorCode::protocol_error, true},
        {"RST_STREAM 3 bytes", frame(0x3, 0, 1, bytes({0, 0, 8})), ErrorCode::frame_size_error,
         true},
        {"SETTINGS on 1", frame(0x4, 0, 1, ""), ErrorCode::protocol_error, true},
        {"SETTINGS ACK payload", frame(0x4, flag::ack, 0, bytes({0, 3, 0, 0, 0, 1})),
         ErrorCode::frame_size_error, true},
        {"SETTINGS 5 bytes", frame(0x4, 0, 0, bytes({0, 3, 0, 0, 0})), ErrorCode::frame_size_error,
         true},
        {"PUSH_PROMISE on 0", frame(0x5, flag::end_headers, 0, bytes({0, 0, 0, 2})),
         ErrorCode::protocol_error, true},
        {"PUSH_PROMISE short", frame(0x5, flag::end_headers, 1, bytes({0, 0, 2})),
         ErrorCode::frame_size_error, true},
        {"PUSH_PROMISE pad too long",
         frame(0x5, flag::padded | flag::end_headers, 1, bytes({1, 0, 0, 0, 2})),
         ErrorCode::protocol_error, true},
        {"PING on 1", frame(0x6, 0, 1, "12345678"), ErrorCode::protocol_error, true},
        {"PING 7 bytes", frame(0x6, 0, 0, "1234567"), ErrorCode::frame_size_error, true},
        {"GOAWAY on 1", frame(0x7, 0, 1, bytes({0, 0, 0, 0, 0, 0, 0, 0})),
         ErrorCode::protocol_error, true},
        {"GOAWAY 7 bytes", frame(0x7, 0, 0, bytes({0, 0, 0, 0, 0, 0, 0})),
         ErrorCode::frame_size_error, true},
        {"WINDOW_UPDATE 3 bytes", frame(0x8, 0, 1, bytes({0, 0, 1})), ErrorCode::frame_size_error,
         true},
        {"WINDOW_UPDATE 0 on 0", frame(0x8, 0, 0, bytes({0, 0, 0, 0})), ErrorCode::protocol_error,
         true},
        {"WINDOW_UPDATE 0 on 1", frame(0x8, 0, 1, bytes({0x80, 0, 0, 0})),
         ErrorCode::protocol_error, false},
        {"CONTINUATION alone", frame(0x9, flag::end_headers, 1, "x"), ErrorCode::protocol_error,
         true},
        {"DATA inside a block", frame(0x1, 0, 1, "a") + frame(0x0, 0, 1, "x"),
         ErrorCode::protocol_error, true},
        {"unknown inside a block", frame(0x1, 0, 1, "a") + frame(0x42, 0, 1, "x"),
         ErrorCode::protocol_error, true},
        {"CONTINUATION of another stream", frame(0x1, 0, 1, "a") + frame(0x9, 0, 3, "x"),
         ErrorCode::protocol_error, true},
        {"PING inside a push promise",
         frame(0x5, 0, 1, bytes({0, 0, 0, 2})) + frame(0x6, 0, 0, "12345678"),
         ErrorCode::protocol_error, true},
    };
    for (const Refusal& c : cases) {
        FrameReader r;
        std::string_view in = c.bytes;
        Frame f;
        ReadResult res;
        for (;;) {
            res = r.read(in, f);
            if (res.status != ReadStatus::frame) break;
            in.remove_prefix(res.consumed);
        }
        ASSERT_EQ(res.status, ReadStatus::error) << c.what;
        EXPECT_EQ(res.error.code, c.code) << c.what << ": " << res.error.reason;
        EXPECT_EQ(res.error.connection(), c.connection) << c.what;
        EXPECT_FALSE(res.error.reason.empty());
        if (!c.connection) {
            // A stream error consumes the frame; the next one reads.
            EXPECT_EQ(res.consumed, in.size()) << c.what;
            EXPECT_NE(res.error.stream_id, 0u);
            const std::string ping = frame(0x6, 0, 0, "12345678");
            EXPECT_EQ(r.read(ping, f).status, ReadStatus::frame) << c.what;
        }
    }
}

TEST(H2Frame, HeaderBlockAcrossContinuations) {
    std::string out;
    const std::string block(40000, 'b');
    append_headers(out, 1, block, true, default_max_frame_size);
    FrameReader r;
    const auto f = read_all(r, out);
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[0].type, FrameType::headers);
    EXPECT_TRUE(f[0].end_stream());
    EXPECT_FALSE(f[0].end_headers());
    EXPECT_EQ(f[0].data.size(), 16384u);
    EXPECT_EQ(f[1].type, FrameType::continuation);
    EXPECT_FALSE(f[1].end_headers());
    EXPECT_EQ(f[2].type, FrameType::continuation);
    EXPECT_TRUE(f[2].end_headers());
    EXPECT_EQ(f[2].data.size(), 40000u - 2 * 16384u);
    EXPECT_EQ(r.open_header_block(), 0u);

    // A push promise's first frame holds 4 bytes of promised id.
    out.clear();
    append_push_promise(out, 1, 2, std::string(16381, 'p'), default_max_frame_size);
    const auto p = read_all(r, out);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].length, 16384u);
    EXPECT_EQ(p[1].data.size(), 1u);
    EXPECT_TRUE(p[1].end_headers());
}

TEST(H2Frame, MaxFrameSizeFollowsOurSetting) {
    FrameReader r;
    const std::string big = frame(0x0, 0, 1, std::string(20000, 'x'));
    Frame f;
    EXPECT_EQ(r.read(big, f).status, ReadStatus::error);
    r.set_max_frame_size(1 << 20);
    EXPECT_EQ(r.read(big, f).status, ReadStatus::frame);
    EXPECT_EQ(f.data.size(), 20000u);
}

TEST(H2Frame, SettingsValues) {
    struct Case {
        std::uint16_t id;
        std::uint32_t value;
        ErrorCode code;
    };
    const Case cases[] = {
        {0x2, 0, ErrorCode::no_error},
        {0x2, 1, ErrorCode::no_error},
        {0x2, 2, ErrorCode::protocol_error},
        {0x8, 1, ErrorCode::no_error},
        {0x8, 2, ErrorCode::protocol_error},
        {0x4, 0x7fffffff, ErrorCode::no_error},
        {0x4, 0x80000000, ErrorCode::flow_control_error},
        {0x5, 16383, ErrorCode::protocol_error},
        {0x5, 16384, ErrorCode::no_error},
        {0x5, (1 << 24) - 1, ErrorCode::no_error},
        {0x5, 1 << 24, ErrorCode::protocol_error},
        {0x99, 0xffffffff, ErrorCode::no_error},  // unknown: ignored
        {0x1, 0xffffffff, ErrorCode::no_error},
    };
    for (const Case& c : cases) {
        std::string out;
        const Setting s{c.id, c.value};
        append_settings(out, std::span<const Setting>(&s, 1));
        FrameReader r;
        Frame f;
        ASSERT_EQ(r.read(out, f).status, ReadStatus::frame);
        const FrameError e = check_settings(f);
        EXPECT_EQ(e.code, c.code) << c.id << "=" << c.value;
        if (e.code != ErrorCode::no_error) {
            EXPECT_TRUE(e.connection());
        }
    }
}

TEST(H2Frame, ErrorCodeNames) {
    EXPECT_EQ(error_code_name(ErrorCode::protocol_error), "PROTOCOL_ERROR");
    EXPECT_EQ(error_code_name(ErrorCode::http_1_1_required), "HTTP_1_1_REQUIRED");
    EXPECT_EQ(error_code_name(static_cast<ErrorCode>(0x99)), "UNKNOWN");
}

// ---- nghttp2 reads what we write ----

struct Seen {
    std::vector<std::pair<int, int>> frames;  // type, stream
    std::string data;
    int ping_acks = 0;
    int goaway_code = -1;
};

TEST(H2Frame, NghttpReadsOurFrames) {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_frame_recv_callback(
        cb, [](nghttp2_session*, const nghttp2_frame* f, void* user) {
            auto& s = *static_cast<Seen*>(user);
            s.frames.emplace_back(f->hd.type, f->hd.stream_id);
            if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK)) ++s.ping_acks;
            if (f->hd.type == NGHTTP2_GOAWAY)
                s.goaway_code = static_cast<int>(f->goaway.error_code);
            return 0;
        });
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
        cb, [](nghttp2_session*, std::uint8_t, std::int32_t, const std::uint8_t* d, std::size_t n,
               void* user) {
            static_cast<Seen*>(user)->data.append(reinterpret_cast<const char*>(d), n);
            return 0;
        });
    Seen seen;
    nghttp2_session* client = nullptr;
    ASSERT_EQ(nghttp2_session_client_new(&client, cb, &seen), 0);
    // The client opens stream 1 so that our response frames are valid.
    const nghttp2_nv nv[] = {
        {(std::uint8_t*)":method", (std::uint8_t*)"GET", 7, 3, 0},
        {(std::uint8_t*)":scheme", (std::uint8_t*)"http", 7, 4, 0},
        {(std::uint8_t*)":path", (std::uint8_t*)"/", 5, 1, 0},
        {(std::uint8_t*)":authority", (std::uint8_t*)"a", 10, 1, 0},
    };
    ASSERT_EQ(nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, nullptr, 0), 0);
    ASSERT_EQ(nghttp2_submit_request(client, nullptr, nv, 4, nullptr, nullptr), 1);
    const std::uint8_t* dummy = nullptr;
    while (nghttp2_session_mem_send(client, &dummy) > 0) {
    }

    std::string out;
    const std::array<Setting, 1> s{{{0x3, 100}}};
    append_settings(out, s);
    append_settings_ack(out);
    // :status 200 as the static table's index 8; a block split over three frames.
    std::string block = bytes({0x88});
    block += std::string("\x40\x01x\x0a", 4) + std::string(10, 'v');  // literal, indexed "x"
    append_headers(out, 1, block, false, 5);
    append_data(out, 1, "hello ", false);
    append_data(out, 1, "world", true);
    append_ping(out, "abcdefgh", true);
    append_window_update(out, 0, 100);
    append_goaway(out, 1, ErrorCode::no_error, "bye");
    const auto n = nghttp2_session_mem_recv(
        client, reinterpret_cast<const std::uint8_t*>(out.data()), out.size());
    EXPECT_EQ(static_cast<std::size_t>(n), out.size()) << nghttp2_strerror(static_cast<int>(n));
    EXPECT_EQ(seen.data, "hello world");
    EXPECT_EQ(seen.ping_acks, 1);
    EXPECT_EQ(seen.goaway_code, 0);
    // SETTINGS, SETTINGS ACK, HEADERS (CONTINUATIONs joined), DATA, DATA, PING, WINDOW_UPDATE,
    // GOAWAY.
    ASSERT_EQ(seen.frames.size(), 8u);
    EXPECT_EQ(seen.frames[2], std::make_pair(int{NGHTTP2_HEADERS}, 1));
    nghttp2_session_del(client);
    nghttp2_session_callbacks_del(cb);
}

}  // namespace
