// Documents that must be refused, and the path and message each error carries.

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vela/json/json.hpp"

namespace errors_test {

using namespace vela;

struct Item {
    std::string name;
    double price = 0;
    std::optional<int> qty;
};
VELA_REFLECT(Item, name, VELA_REQUIRED(price), qty)

struct Order {
    int id = 0;
    std::vector<Item> items;
    std::map<std::string, std::uint8_t> flags;
};
VELA_REFLECT(Order, VELA_REQUIRED(id), items, flags)

struct Case {
    const char* json;
    const char* error;  // Error::to_string()
};

// One line per case: the document read as an Order and the exact error.
const Case kOrderErrors[] = {
    {R"({"id":1,"items":[{"name":"a","price":1},{"name":"b","price":"x"}],"flags":{}})",
     "$.items[1].price: expected number"},
    {R"({"id":1,"items":[{"name":"a"}],"flags":{}})", "$.items[0].price: missing required field"},
    {R"({"items":[],"flags":{}})", "$.id: missing required field"},
    {R"({"id":"1","items":[],"flags":{}})", "$.id: expected integer"},
    {R"({"id":1.5,"items":[],"flags":{}})", "$.id: expected integer"},
    {R"({"id":3000000000,"items":[],"flags":{}})",
     "$.id: expected integer in [-2147483648, 2147483647]"},
    {R"({"id":99999999999999999999,"items":[],"flags":{}})",
     "$.id: expected integer in [-2147483648, 2147483647]"},
    {R"({"id":1,"items":{},"flags":{}})", "$.items: expected array"},
    {R"({"id":1,"items":[7],"flags":{}})", "$.items[0]: expected object"},
    {R"({"id":1,"items":[],"flags":{"on":256}})", "$.flags.on: expected integer in [0, 255]"},
    {R"({"id":1,"items":[],"flags":{"a b":-1}})", "$.flags['a b']: expected integer in [0, 255]"},
    {R"({"id":1,"items":[{"name":null,"price":1}],"flags":{}})",
     "$.items[0].name: expected string"},
    {R"({"id":1,"items":[{"name":"a","price":1,"qty":"2"}],"flags":{}})",
     "$.items[0].qty: expected integer"},
    {R"([1])", "$: expected object"},
    {R"()", "$: empty document"},
    {R"(   )", "$: empty document"},
    {R"({"id":1,"items":[],"flags":{}} {})", "$: unexpected content after the value"},
    {R"({"id":1,"items":[],"flags":{}} x)",
     "$: unexpected end of input, or content after the value"},
    {R"({"id":1,"items":[],"flags":{})", "$.flags: unexpected end of input"},
    {R"({"id":1,"items":[{"name":"a","price":1}],"flags":{}}])",
     "$: unexpected end of input, or content after the value"},
};

TEST(JsonErrors, PathAndMessage) {
    for (const Case& c : kOrderErrors) {
        Order o;
        json::Error e = json::read(c.json, o);
        EXPECT_EQ(e.to_string(), c.error) << c.json;
    }
}

TEST(JsonErrors, PointerMirrorsPath) {
    Order o;
    json::Error e = json::read(R"({"id":1,"items":[{"name":"a","price":true}],"flags":{}})", o);
    EXPECT_EQ(e.path, "$.items[0].price");
    EXPECT_EQ(e.pointer, "/items/0/price");
    EXPECT_EQ(e.message, "expected number");
    e = json::read(R"({"id":1,"items":[],"flags":{"a/b~":300}})", o);
    EXPECT_EQ(e.pointer, "/flags/a~1b~0");
}

TEST(JsonErrors, UnknownFieldsCanBeRejected) {
    json::ParseOptions strict;
    strict.reject_unknown_fields = true;
    Item it;
    EXPECT_FALSE(json::read(R"({"name":"a","price":1,"color":"red"})", it));
    EXPECT_EQ(json::read(R"({"name":"a","price":1,"color":"red"})", it, strict).to_string(),
              "$.color: unknown field");
}

// Truncations of a valid document at every byte, and classic garbage: all refused.
TEST(JsonErrors, TruncatedDocumentsAreRefused) {
    const std::string doc =
        R"({"id":12,"items":[{"name":"a\"b","price":1.5e2,"qty":null}],"flags":{"x":1}})";
    Order full;
    ASSERT_FALSE(json::read(doc, full));
    for (std::size_t n = 0; n < doc.size(); ++n) {
        Order o;
        EXPECT_TRUE(json::read(doc.substr(0, n), o)) << "accepted a prefix: " << doc.substr(0, n);
        json::Value v;
        EXPECT_TRUE(json::read(doc.substr(0, n), v)) << "accepted a prefix: " << doc.substr(0, n);
    }
}

TEST(JsonErrors, GarbageIsRefused) {
    const char* bad[] = {
        "{",
        "}",
        "[1,]",
        "[,1]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{a:1}",
        "'x'",
        "[1 2]",
        "tru",
        "nul",
        "falsey",
        "01",
        "1.",
        "-",
        ".5",
        "1e",
        "+1",
        "\"\\x\"",
        "\"\x01\"",
        "\"\xff\"",
        "[\"\\ud800\"]",
        "{\"a\":[1}",
        "[{]}",
        "NaN",
        "Infinity",
        "[1]]",
        "\"abc",
        "{\"a\":1 \"b\":2}",
    };
    for (const char* b : bad) {
        json::Value v;
        EXPECT_TRUE(json::read(b, v)) << "accepted: " << b;
    }
}

TEST(JsonErrors, SkippedUnknownFieldsAreStillValidated) {
    Item it;
    EXPECT_TRUE(json::read(R"({"name":"a","price":1,"junk":[1,,2]})", it));
    EXPECT_TRUE(json::read(R"({"name":"a","price":1,"junk":tru})", it));
    EXPECT_TRUE(json::read(R"({"name":"a","price":1,"junk":{"x":[1}]}})", it));
    EXPECT_FALSE(json::read(R"({"name":"a","price":1,"junk":{"x":[1,{"y":null}]}})", it));
}

std::string nested(std::size_t depth, char open, char close) {
    return std::string(depth, open) + std::string(depth, close);
}

TEST(JsonErrors, NestingLimitIsAnErrorNotACrash) {
    json::Value v;
    EXPECT_FALSE(json::read(nested(128, '[', ']'), v));
    json::Error e = json::read(nested(129, '[', ']'), v);
    EXPECT_EQ(e.message, "nesting deeper than 128");
    EXPECT_TRUE(json::read(nested(100000, '[', ']'), v));
    json::ParseOptions shallow;
    shallow.max_depth = 4;
    EXPECT_TRUE(json::read(nested(5, '[', ']'), v, shallow));
    std::string objects;
    for (int i = 0; i < 200; ++i) objects += "{\"a\":";
    objects += "1" + std::string(200, '}');
    EXPECT_EQ(json::read(objects, v).message, "nesting deeper than 128");
    // Deep values in skipped fields count too.
    Item it;
    EXPECT_EQ(
        json::read(R"({"name":"a","price":1,"junk":)" + nested(300, '[', ']') + "}", it).message,
        "nesting deeper than 128");
}

TEST(JsonErrors, ParseThrowsWithTheError) {
    try {
        json::parse<Item>(R"({"name":1})");
        FAIL() << "no exception";
    } catch (const json::ParseError& e) {
        EXPECT_EQ(std::string(e.what()), "$.name: expected string");
        EXPECT_EQ(e.error().path, "$.name");
    }
}

TEST(JsonErrors, InvalidUtf8InDocument) {
    json::Value v;
    EXPECT_EQ(json::read("\"a\xC3\"", v).message, "invalid UTF-8");
    EXPECT_EQ(json::read("[\"\xED\xA0\x80\"]", v).message, "invalid UTF-8");
}

}  // namespace errors_test
