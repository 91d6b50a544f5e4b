// The RESP codec without a socket: commands encoded, replies decoded from any split.
#include <gtest/gtest.h>

#include <string>

#include "redis/resp.hpp"
#include "vela/redis/client.hpp"

namespace vela::redis {
namespace {

using namespace std::string_literals;

TEST(RedisCommand, EncodesArgumentsAsBulkStrings) {
    const std::string key = "k";
    EXPECT_EQ((Command{"SET", key, "v", "EX", 30}.encoded()),
              "*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nEX\r\n$2\r\n30\r\n");
    EXPECT_EQ((Command{"INCRBY", "n", -12LL}.encoded()),
              "*3\r\n$6\r\nINCRBY\r\n$1\r\nn\r\n$3\r\n-12\r\n");
    EXPECT_EQ((Command{"X", 18446744073709551615ULL}.encoded()),
              "*2\r\n$1\r\nX\r\n$20\r\n18446744073709551615\r\n");
    EXPECT_EQ((Command{"X", 1.5}.encoded()), "*2\r\n$1\r\nX\r\n$3\r\n1.5\r\n");
    EXPECT_EQ(Command{}.encoded(), "*0\r\n");
}

TEST(RedisCommand, IsBinarySafe) {
    const std::string bytes("a\0\r\nb", 5);
    const std::byte raw[] = {std::byte{0xff}, std::byte{0}};
    EXPECT_EQ((Command{"SET", bytes, std::span<const std::byte>(raw)}.encoded()),
              std::string("*3\r\n$3\r\nSET\r\n$5\r\na\0\r\nb\r\n$2\r\n\xff\0\r\n", 32));
}

TEST(RedisCommand, BuiltPieceByPieceOrFromStrings) {
    Command c;
    c.arg("DEL").arg("a").arg(std::string("b"));
    EXPECT_EQ(c.size(), 3u);
    EXPECT_EQ(c.encoded(), (Command{"DEL", "a", "b"}.encoded()));
    EXPECT_EQ(Command(std::vector<std::string>{"DEL", "a", "b"}).encoded(), c.encoded());
    Arg n = 42;  // a copy keeps its own digits
    Arg m = n;
    EXPECT_EQ(m.view(), "42");
}

TEST(RedisReplyReader, DecodesEveryTypeFromAnySplit) {
    const std::string wire =
        "+OK\r\n-ERR bad thing\r\n:-7\r\n$5\r\nab\0\r\n\r\n$-1\r\n*-1\r\n*2\r\n*1\r\n:1\r\n$0\r\n\r\n"s;
    const std::string bin("ab\0\r\n", 5);
    for (std::size_t step = 1; step <= wire.size(); ++step) {
        SCOPED_TRACE(step);
        detail::ReplyReader rr;
        std::vector<Reply> got;
        for (std::size_t i = 0; i < wire.size(); i += step) {
            rr.feed(std::string_view(wire).substr(i, step));
            while (auto r = rr.next()) got.push_back(std::move(*r));
        }
        ASSERT_EQ(got.size(), 7u);
        EXPECT_EQ(got[0], Reply::of_text(Reply::Type::status, "OK"));
        EXPECT_EQ(got[1], Reply::of_text(Reply::Type::error, "ERR bad thing"));
        EXPECT_EQ(got[2], Reply::of_integer(-7));
        EXPECT_EQ(got[3], Reply::of_text(Reply::Type::string, bin));
        EXPECT_TRUE(got[4].is_nil());
        EXPECT_TRUE(got[5].is_nil());
        ASSERT_EQ(got[6].type, Reply::Type::array);
        ASSERT_EQ(got[6].elements.size(), 2u);
        EXPECT_EQ(got[6].elements[0].as_array().at(0).as_integer(), 1);
        EXPECT_EQ(got[6].elements[1].as_string(), "");
    }
}

TEST(RedisReplyReader, RejectsWhatIsNotResp) {
    detail::ReplyReader rr;
    rr.feed("?what\r\n");
    EXPECT_THROW(rr.next(), ProtocolError);
}

TEST(RedisReply, AccessorsSayWhatTheyGot) {
    try {
        (void)Reply::of_integer(3).as_string();
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "redis: expected a reply of type string, got (integer) 3");
    }
    EXPECT_THROW((void)Reply::nil().as_integer(), Error);
    EXPECT_THROW((void)Reply::nil().as_array(), Error);
    EXPECT_EQ(ServerError("WRONGTYPE Operation against a key").code(), "WRONGTYPE");
    EXPECT_EQ(type_name(Reply::Type::array), "array");
}

}  // namespace
}  // namespace vela::redis
