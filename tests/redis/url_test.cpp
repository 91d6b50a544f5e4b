// redis:// URLs as a table: what each form gives, and the message each bad one gets.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "vela/redis/client.hpp"

namespace vela::redis {
namespace {

struct Good {
    const char* url;
    const char* host;
    std::uint16_t port;
    const char* user;
    const char* password;
    int db;
};

TEST(RedisUrl, ParsesEveryForm) {
    const Good cases[] = {
        {"redis://127.0.0.1", "127.0.0.1", 6379, "", "", 0},
        {"redis://127.0.0.1:7000", "127.0.0.1", 7000, "", "", 0},
        {"redis://localhost:7000/3", "localhost", 7000, "", "", 3},
        {"redis://:secret@db.example:6380/15", "db.example", 6380, "", "secret", 15},
        {"redis://alice:s3cr3t@10.0.0.1/1", "10.0.0.1", 6379, "alice", "s3cr3t", 1},
        {"redis://secret@h", "h", 6379, "", "secret", 0},
        {"redis://:p%40ss%3Aw%2Fd@h", "h", 6379, "", "p@ss:w/d", 0},
        {"redis://[::1]:6390/2", "::1", 6390, "", "", 2},
        {"redis://[::1]", "::1", 6379, "", "", 0},
        {"redis://h:1/", "h", 1, "", "", 0},
        {"redis://h:65535/0", "h", 65535, "", "", 0},
    };
    for (const Good& c : cases) {
        SCOPED_TRACE(c.url);
        Url u = Url::parse(c.url);
        EXPECT_EQ(u.host, c.host);
        EXPECT_EQ(u.port, c.port);
        EXPECT_EQ(u.user, c.user);
        EXPECT_EQ(u.password, c.password);
        EXPECT_EQ(u.db, c.db);
    }
}

TEST(RedisUrl, RejectsBadOnesWithAReason) {
    const std::pair<const char*, const char*> cases[] = {
        {"http://h", "must start with redis://"},
        {"rediss://h", "TLS (rediss://) is not supported"},
        {"redis://", "no host"},
        {"redis://:pw@", "no host"},
        {"redis://h:", "empty port"},
        {"redis://h:0", "port must be a number from 1 to 65535"},
        {"redis://h:65536", "port must be a number from 1 to 65535"},
        {"redis://h:12x", "port must be a number from 1 to 65535"},
        {"redis://h/x", "path must be a database number"},
        {"redis://h/-1", "path must be a database number"},
        {"redis://h/1/2", "path must be a database number"},
        {"redis://h?db=1", "query and fragment are not supported"},
        {"redis://[::1", "unclosed ["},
        {"redis://[::1]x", "junk after the IPv6 host"},
        {"redis://:p%4@h", "truncated %-escape"},
        {"redis://:p%zz@h", "bad %-escape"},
        {"redis://alice:@h", "a user needs a password"},
        {"redis://h o/", "bad character in the host"},
    };
    for (const auto& [url, why] : cases) {
        SCOPED_TRACE(url);
        try {
            (void)Url::parse(url);
            ADD_FAILURE() << "accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    }
}

TEST(RedisUrl, MessagesNeverShowThePassword) {
    try {
        (void)Url::parse("redis://:hunter2@h:99999");
        ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    }
    EXPECT_EQ(Url::parse("redis://:hunter2@h:7").address(), "h:7");
    EXPECT_EQ(Url::parse("redis://[::1]:7").address(), "[::1]:7");
}

}  // namespace
}  // namespace vela::redis
