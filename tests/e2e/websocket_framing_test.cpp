// WebSocket framing end to end (RFC 6455 section 5): every framing violation sent as raw
// bytes after a real handshake, one table row each, answered with the right close code
// (1002, 1007, 1009) and no echo of the bad input, then a check that the server still
// serves new connections; and the legal oddities (a character split across fragments, a
// ping between fragments). The server is tests/e2e/ws/ws_server.hpp.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "sound.hpp"
#include "vela/ws/deflate.hpp"
#include "ws/ws_client.hpp"
#include "ws/ws_server.hpp"

namespace vela::e2e {
namespace {

using ws::Opcode;
namespace cc = ws::close_code;

// ---- framing violations --------------------------------------------------------------------

// A frame header written by hand: `b0` (FIN, RSV, opcode), the mask bit set, `len_bytes`
// (the 7-bit length and any extended length), a zero mask, then `payload` as is.
std::string hand_frame(std::uint8_t b0, std::string_view len_bytes, std::string_view payload) {
    std::string f(1, static_cast<char>(b0));
    f += static_cast<char>(static_cast<std::uint8_t>(len_bytes[0]) | 0x80);
    f += len_bytes.substr(1);
    f += std::string(4, '\0');  // mask 0: the payload goes as written
    f += payload;
    return f;
}

std::string deflated(std::string_view msg) {
    ws::Deflater d(ws::DeflateParams{}, ws::DeflateOptions{});
    std::string z;
    d.compress(msg, z);
    return z;
}

struct Violation {
    const char* name;
    std::uint16_t code;  // the close code the server must answer with
    const char* path;
    std::function<std::string(WsClient&)> bytes;
    const char* extra = "";  // handshake header lines
};

std::string with_rsv(WsClient& c, std::uint8_t bits) {
    std::string f = c.frame(Opcode::text, "x");
    f[0] = static_cast<char>(f[0] | bits);
    return f;
}

// A close frame carrying `code` as is (close_payload turns 1005 into an empty payload).
std::function<std::string(WsClient&)> close_with_code(std::uint16_t code) {
    return [code](WsClient& c) {
        const char p[2] = {static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
        return c.frame(Opcode::close, std::string_view(p, 2));
    };
}

const Violation kViolations[] = {
    {"Unmasked", cc::protocol_error, "/echo", [](WsClient&) { return std::string("\x81\x02hi"); }},
    {"Rsv2", cc::protocol_error, "/echo", [](WsClient& c) { return with_rsv(c, 0x20); }},
    {"Rsv3", cc::protocol_error, "/echo", [](WsClient& c) { return with_rsv(c, 0x10); }},
    {"Rsv1WithoutDeflate", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::text, "x", true, true); }},
    {"Opcode3", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(static_cast<Opcode>(3), "x"); }},
    {"OpcodeB", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(static_cast<Opcode>(0xB), "x"); }},
    {"Ping126", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::ping, std::string(126, 'p')); }},
    {"FragmentedPing", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::ping, "p", false); }},
    {"ContinuationWithoutStart", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::continuation, "x"); }},
    {"TextInsideFragmentedMessage", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::text, "a", false) + c.frame(Opcode::text, "b"); }},
    {"Length64TopBit", cc::protocol_error, "/echo",
     [](WsClient&) { return hand_frame(0x82, std::string("\x7f\x80\0\0\0\0\0\0\x01", 9), ""); }},
    {"NonMinimalLength16", cc::protocol_error, "/echo",
     [](WsClient&) { return hand_frame(0x82, std::string("\x7e\0\x05", 3), "hello"); }},
    {"NonMinimalLength64", cc::protocol_error, "/echo",
     [](WsClient&) { return hand_frame(0x82, std::string("\x7f\0\0\0\0\0\0\0\x05", 9), "hello"); }},
    {"InvalidUtf8", cc::invalid_payload, "/echo",
     [](WsClient& c) { return c.frame(Opcode::text, "ok \xff\xfe"); }},
    {"InvalidUtf8AcrossFragments", cc::invalid_payload, "/echo",
     [](WsClient& c) {
         // U+20AC is E2 82 AC: the first fragment ends inside it, the next breaks it.
         return c.frame(Opcode::text, "euro \xe2\x82", false) +
                c.frame(Opcode::continuation, "\x28 end");
     }},
    {"InvalidUtf8InCloseReason", cc::invalid_payload, "/echo",
     [](WsClient& c) { return c.frame(Opcode::close, std::string("\x03\xe8\xc3\x28", 4)); }},
    {"ClosePayloadOneByte", cc::protocol_error, "/echo",
     [](WsClient& c) { return c.frame(Opcode::close, "\x03"); }},
    {"CloseCode1005", cc::protocol_error, "/echo", close_with_code(1005)},
    {"CloseCode999", cc::protocol_error, "/echo", close_with_code(999)},
    {"CloseCode1006", cc::protocol_error, "/echo", close_with_code(1006)},
    {"CloseCode2000", cc::protocol_error, "/echo", close_with_code(2000)},
    {"CloseCode5000", cc::protocol_error, "/echo", close_with_code(5000)},
    {"TextAfterTheViolationIsNotEchoed", cc::protocol_error, "/echo",
     [](WsClient& c) { return std::string("\x81\x02hi") + c.frame(Opcode::text, "after"); }},
    {"FrameOverMaxFrame", cc::message_too_big, "/small",
     [](WsClient& c) { return c.frame(Opcode::binary, std::string(kSmallFrame + 1, 'f')); }},
    {"MessageOverMaxMessageInFragments", cc::message_too_big, "/small",
     [](WsClient& c) {
         std::string out = c.frame(Opcode::binary, std::string(1000, 'm'), false);
         for (int i = 0; i < 4; ++i)
             out += c.frame(Opcode::continuation, std::string(1000, 'm'), i == 3);
         return out;
     }},
    {"DecompressionBomb", cc::message_too_big, "/small",
     [](WsClient& c) {
         const std::string z = deflated(std::string(512 * 1024, '\0'));
         EXPECT_LE(z.size(), kSmallFrame) << "the bomb must pass the frame limit";
         return c.frame(Opcode::binary, z, true, true);
     },
     "Sec-WebSocket-Extensions: permessage-deflate\r\n"},
};

class WebSocketE2eFraming : public WsServer, public ::testing::WithParamInterface<Violation> {};

TEST_P(WebSocketE2eFraming, AnswersWithCloseCodeAndStaysSound) {
    const Violation& v = GetParam();
    WsClient c = open(v.path, v.extra);
    ASSERT_TRUE(c.open());
    ASSERT_TRUE(c.send_raw(v.bytes(c)));
    auto f = c.read_frame();  // the close comes first: nothing of the bad input is echoed
    ASSERT_TRUE(f) << "no close frame: " << c.error();
    ASSERT_TRUE(f->is(Opcode::close)) << "opcode " << int(f->opcode) << ": " << f->payload;
    EXPECT_EQ(f->close_code(), v.code) << "reason: " << f->close_reason();
    EXPECT_FALSE(f->masked);
    c.send_close(f->close_code());
    EXPECT_TRUE(c.closed_by_peer(2000ms));
    expect_server_sound(app);
}

INSTANTIATE_TEST_SUITE_P(WebSocketE2eRfc6455, WebSocketE2eFraming, ::testing::ValuesIn(kViolations),
                         [](const auto& info) { return std::string(info.param.name); });

using WebSocketE2eFrames = WsServer;

TEST_F(WebSocketE2eFrames, CharacterSplitAcrossFragmentsIsValid) {
    WsClient c = open("/echo");
    ASSERT_TRUE(c.send_raw(c.frame(Opcode::text, "euro \xe2\x82", false) +
                           c.frame(Opcode::continuation, "\xac end")));
    auto m = c.read_message();
    ASSERT_TRUE(m) << c.error();
    EXPECT_EQ(m->payload, "euro \xe2\x82\xac end");
}

TEST_F(WebSocketE2eFrames, PingInsideFragmentedMessageIsAnsweredAtOnce) {
    WsClient c = open("/echo");
    ASSERT_TRUE(c.send_raw(c.frame(Opcode::text, "frag", false) +
                           c.frame(Opcode::ping, "between fragments")));
    auto pong = c.read_frame();
    ASSERT_TRUE(pong) << c.error();
    EXPECT_TRUE(pong->is(Opcode::pong));
    EXPECT_EQ(pong->payload, "between fragments");
    ASSERT_TRUE(c.send_frame(Opcode::continuation, "ment"));
    auto m = c.read_message();
    ASSERT_TRUE(m) << c.error();
    EXPECT_EQ(m->payload, "fragment");
}

}  // namespace
}  // namespace vela::e2e
