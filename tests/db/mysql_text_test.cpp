// MySQL URLs and placeholders (src/db/my_text.hpp), no server needed: every URL form, the
// malformed ones with their one-line errors, and $N -> ? outside quotes and comments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "db/my_text.hpp"
#include "vela/db/db.hpp"

namespace vela::db::my {
namespace {

TEST(MysqlUrl, Forms) {
    ConnectParams p = parse_url("mysql://app:s%40cret@db.example:3307/shop");
    EXPECT_EQ(p.user, "app");
    EXPECT_EQ(p.password, "s@cret");
    EXPECT_EQ(p.host, "db.example");
    EXPECT_EQ(p.port, 3307u);
    EXPECT_EQ(p.database, "shop");
    EXPECT_EQ(p.socket, "");
    EXPECT_EQ(p.charset, "utf8mb4");

    p = parse_url("mariadb://root@127.0.0.1/x");
    EXPECT_EQ(p.user, "root");
    EXPECT_EQ(p.password, "");
    EXPECT_EQ(p.port, 3306u);
    EXPECT_EQ(p.database, "x");

    p = parse_url("mysql://app@%2Frun%2Fmysqld%2Fmysqld.sock/shop");
    EXPECT_EQ(p.socket, "/run/mysqld/mysqld.sock");
    EXPECT_EQ(p.host, "");
    EXPECT_EQ(p.database, "shop");

    p = parse_url("mysql://app@localhost/shop?socket=/tmp/my.sock&charset=latin1");
    EXPECT_EQ(p.socket, "/tmp/my.sock");
    EXPECT_EQ(p.charset, "latin1");

    p = parse_url("mysql://[::1]:3310/");
    EXPECT_EQ(p.host, "::1");
    EXPECT_EQ(p.port, 3310u);
    EXPECT_EQ(p.database, "");

    p = parse_url("mysql://u:p@h/d?ssl-mode=required");
    EXPECT_EQ(p.ssl_mode, "required");
    p = parse_url("mysql://u:p@h/d?ssl-mode=verify-identity&ssl-ca=/etc/ca.pem");
    EXPECT_EQ(p.ssl_mode, "verify");
    EXPECT_EQ(p.ssl_ca, "/etc/ca.pem");

    p = parse_url("mysql://u@/d");
    EXPECT_EQ(p.host, "localhost");  // the connector's default socket
}

TEST(MysqlUrl, Malformed) {
    for (const char* bad : {"mysqlx://u@h/d", "mysql://u@h:0/d", "mysql://u@h:70000/d",
                            "mysql://u@h:abc/d", "mysql://u@h:/d", "mysql://u%zz@h/d",
                            "mysql://u@h/d/e", "mysql://u@h/d?nope=1", "mysql://u@h/d?socket=rel",
                            "mysql://u@h/d?ssl-mode=maybe", "mysql://u@[::1/d", "mysql://u@h/d%"}) {
        try {
            parse_url(bad);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const Error& e) {
            const std::string m = e.what();
            EXPECT_TRUE(m.starts_with("MySQL URL: ")) << m;
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
        }
    }
    // Through the facade: an unknown scheme names the accepted ones.
    try {
        Database db("mysqlx://u@h/d");
        ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("mysql://"), std::string::npos) << e.what();
    }
}

TEST(MysqlPlaceholders, DollarToQuestionMark) {
    std::vector<std::uint16_t> order;
    EXPECT_EQ(translate_placeholders("SELECT $1, $2", order), "SELECT ?, ?");
    EXPECT_EQ(order, (std::vector<std::uint16_t>{0, 1}));
    EXPECT_EQ(translate_placeholders("SELECT $2 + $1 + $2", order), "SELECT ? + ? + ?");
    EXPECT_EQ(order, (std::vector<std::uint16_t>{1, 0, 1}));
    // Not in strings, identifiers or comments; not inside a word.
    EXPECT_EQ(translate_placeholders("SELECT '$1', \"$2\", `$3`, a$1 -- $4\n, $1 # $5", order),
              "SELECT '$1', \"$2\", `$3`, a$1 -- $4\n, ? # $5");
    EXPECT_EQ(order, (std::vector<std::uint16_t>{0}));
    EXPECT_EQ(translate_placeholders("SELECT /* $1 */ $1, 'it''s $2', 'a\\'$3'", order),
              "SELECT /* $1 */ ?, 'it''s $2', 'a\\'$3'");
    EXPECT_EQ(order, (std::vector<std::uint16_t>{0}));
    // "--" needs a space after it to start a comment.
    EXPECT_EQ(translate_placeholders("SELECT 1--$1", order), "SELECT 1--?");
    // ? kept, in order.
    EXPECT_EQ(translate_placeholders("SELECT ?, ?", order), "SELECT ?, ?");
    EXPECT_EQ(order, (std::vector<std::uint16_t>{0, 1}));
    EXPECT_THROW(translate_placeholders("SELECT $1, ?", order), MappingError);
    EXPECT_THROW(translate_placeholders("SELECT $0", order), MappingError);
    EXPECT_THROW(translate_placeholders("SELECT $99999", order), MappingError);
    // Unterminated quotes and comments end the text without reading past it.
    EXPECT_EQ(translate_placeholders("SELECT 'abc", order), "SELECT 'abc");
    EXPECT_EQ(translate_placeholders("SELECT /* x", order), "SELECT /* x");
}

}  // namespace
}  // namespace vela::db::my
