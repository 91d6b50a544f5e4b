// End-to-end: examples/chat as a user runs it. Its --ws-max-message option raises the
// WebSocket message limit of its routes, so a 16 MiB echo (Autobahn's largest case) goes
// through; without it the default 1 MiB limit closes with 1009. A bad value is one line on
// stderr and exit code 2.

#include <gtest/gtest.h>

#include <string>

#include "e2e/example_process.hpp"
#include "e2e/process.hpp"
#include "e2e/ws/ws_client.hpp"

#ifdef VELA_CHAT_BINARY

namespace vela::e2e {
namespace {

constexpr std::size_t k16MiB = 16 * 1024 * 1024;

WsClient open_echo(const ExampleProcess& chat) {
    WsClient c = WsClient::connect(chat.port(), Ms{20'000});
    auto r = c.handshake("/ws/echo");
    EXPECT_TRUE(r && c.open()) << c.error();
    return c;
}

std::string pattern(std::size_t n) {
    std::string s(n, 'a');
    for (std::size_t i = 0; i < n; i += 4093) s[i] = char('a' + (i / 4093) % 26);
    return s;
}

TEST(ChatExample, SixteenMebibyteEchoWithWsMaxMessage) {
    ExampleProcess chat;
    chat.start(VELA_CHAT_BINARY, {"--threads", "1", "--ws-max-message", std::to_string(k16MiB)});
    WsClient c = open_echo(chat);
    const std::string msg = pattern(k16MiB);
    ASSERT_TRUE(c.send_text(msg)) << c.error();  // one frame of 16 MiB
    auto m = c.read_message();
    ASSERT_TRUE(m) << c.error();
    EXPECT_EQ(m->payload.size(), msg.size());
    EXPECT_TRUE(m->payload == msg);
    // The same message in 16 fragments of 1 MiB.
    for (std::size_t i = 0; i < 16; ++i)
        ASSERT_TRUE(c.send_frame(i ? ws::Opcode::continuation : ws::Opcode::text,
                                 std::string_view(msg).substr(i << 20, 1 << 20), i == 15));
    m = c.read_message();
    ASSERT_TRUE(m) << c.error();
    EXPECT_TRUE(m->payload == msg);
    // One byte more is over the limit: 1009.
    ASSERT_TRUE(c.send_text(msg + "x"));
    auto close = c.read_close(Ms{20'000});
    ASSERT_TRUE(close) << c.error();
    EXPECT_EQ(close->close_code(), ws::close_code::message_too_big);
    // The server stays sound.
    WsClient d = open_echo(chat);
    ASSERT_TRUE(d.send_text("still here"));
    m = d.read_message();
    ASSERT_TRUE(m) << d.error();
    EXPECT_EQ(m->payload, "still here");
}

TEST(ChatExample, DefaultLimitIsOneMebibyte) {
    ExampleProcess chat;
    chat.start(VELA_CHAT_BINARY, {"--threads", "1"});
    WsClient c = open_echo(chat);
    const std::string msg = pattern(1 << 20);
    ASSERT_TRUE(c.send_text(msg));
    auto m = c.read_message();
    ASSERT_TRUE(m) << c.error();
    EXPECT_TRUE(m->payload == msg);
    ASSERT_TRUE(c.send_text(msg + "x"));
    auto close = c.read_close();
    ASSERT_TRUE(close) << c.error();
    EXPECT_EQ(close->close_code(), ws::close_code::message_too_big);
}

TEST(ChatExample, RoomBroadcastOfALargeMessageReachesEveryMember) {
    ExampleProcess chat;
    chat.start(VELA_CHAT_BINARY, {"--threads", "1", "--ws-max-message", std::to_string(4 << 20)});
    WsClient a = WsClient::connect(chat.port(), Ms{10'000});
    WsClient b = WsClient::connect(chat.port(), Ms{10'000});
    ASSERT_TRUE(a.handshake("/ws/chat/big") && a.open());
    ASSERT_TRUE(a.read_message());  // "* somebody joined (1 here)"
    ASSERT_TRUE(b.handshake("/ws/chat/big") && b.open());
    ASSERT_TRUE(a.read_message());  // (2 here)
    ASSERT_TRUE(b.read_message());
    const std::string msg = pattern(4 << 20);
    ASSERT_TRUE(a.send_text(msg));
    for (WsClient* c : {&a, &b}) {
        auto m = c->read_message();
        ASSERT_TRUE(m) << c->error();
        EXPECT_TRUE(m->payload == msg);
    }
}

TEST(ChatExample, BadWsMaxMessageIsOneLineAndExitCode2) {
    for (const char* bad : {"0", "-1", "16M", "", "1073741825"}) {
        const Ran r = run_command(std::string(VELA_CHAT_BINARY) + " --ws-max-message '" + bad +
                                  "' 2>&1 >/dev/null");
        EXPECT_EQ(r.status, 2) << bad;
        EXPECT_NE(r.out.find("--ws-max-message"), std::string::npos) << r.out;
        EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
    }
}

}  // namespace
}  // namespace vela::e2e

#endif  // VELA_CHAT_BINARY
