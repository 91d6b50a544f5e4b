// json::Value: building, looking up, and reading/writing with the same reader and writer.

#include <gtest/gtest.h>

#include <string>

#include "vela/json/json.hpp"

namespace value_test {

using namespace vela;
using json::Value;

TEST(JsonValue, BuildAndWrite) {
    Value v = Value::object({{"name", "vela"}, {"tags", Value::array({1, 2})}});
    v["version"] = 2;
    v["tags"].push_back("three");
    v.set("ok", true).set("none", nullptr).set("pi", 3.5);
    EXPECT_EQ(json::write(v),
              R"({"name":"vela","tags":[1,2,"three"],"version":2,"ok":true,"none":null,"pi":3.5})");
    EXPECT_EQ(v.size(), 6u);
    EXPECT_EQ(json::write(Value{}), "null");
    EXPECT_EQ(json::write(Value::array()), "[]");
    EXPECT_EQ(json::write(Value::object()), "{}");
}

TEST(JsonValue, Lookup) {
    const Value v =
        json::parse<Value>(R"({"a":{"b":[10,{"c":"deep"}]},"n":-5,"u":18446744073709551615})");
    EXPECT_EQ(v["a"]["b"][1]["c"].as_string(), "deep");
    EXPECT_TRUE(v["missing"]["still missing"].is_null());
    EXPECT_TRUE(v["a"]["b"][7].is_null());
    ASSERT_NE(v.find("n"), nullptr);
    EXPECT_EQ(v.find("n")->as_int64(), -5);
    EXPECT_EQ(v.find("nope"), nullptr);
    EXPECT_EQ(v["u"].type(), json::Type::uint64);
    EXPECT_EQ(v["u"].as_uint64(), UINT64_MAX);
    EXPECT_THROW(v["u"].as_int64(), std::logic_error);
    EXPECT_THROW(v["n"].as_string(), std::logic_error);
    EXPECT_EQ(v["a"]["b"][0].as_double(), 10.0);
    Value m = v;
    EXPECT_THROW(m["a"]["b"][7], std::out_of_range);
    m["a"]["b"][0] = "changed";
    m["added"]["nested"] = 1;
    EXPECT_EQ(json::write(m["a"]["b"]), R"(["changed",{"c":"deep"}])");
    EXPECT_EQ(json::write(m["added"]), R"({"nested":1})");
}

TEST(JsonValue, NumbersKeepTheirKind) {
    Value v = json::parse<Value>("[1,-1,1.0,18446744073709551615,-9223372036854775808,1e2]");
    EXPECT_EQ(v[0].type(), json::Type::int64);
    EXPECT_EQ(v[1].type(), json::Type::int64);
    EXPECT_EQ(v[2].type(), json::Type::float64);
    EXPECT_EQ(v[3].type(), json::Type::uint64);
    EXPECT_EQ(v[4].as_int64(), INT64_MIN);
    EXPECT_EQ(v[5].type(), json::Type::float64);
    EXPECT_EQ(json::parse<Value>("18446744073709551616").type(), json::Type::float64);
    EXPECT_TRUE(json::read("[1e400]", v)) << "past the double range";
}

TEST(JsonValue, RoundTrips) {
    const char* docs[] = {
        "null",
        "true",
        "false",
        "0",
        "-0.0",
        "1.5",
        "\"s\"",
        "[]",
        "{}",
        R"({"a":[1,2.5,"x",null,true,{"b":{}}],"c":"\u00e9\n"})",
        "[18446744073709551615,-9223372036854775808,9223372036854775807]",
        "[1e+308,5e-324,-1.0]",
    };
    for (const char* d : docs) {
        Value v = json::parse<Value>(d);
        const std::string text = json::write(v);
        EXPECT_EQ(json::parse<Value>(text), v) << d << " -> " << text;
        EXPECT_EQ(json::write(json::parse<Value>(text)), text);
    }
}

TEST(JsonValue, RepeatedKeysKeepFirstPlaceLastValue) {
    Value v = json::parse<Value>(R"({"a":1,"b":2,"a":3})");
    EXPECT_EQ(json::write(v), R"({"a":3,"b":2})");
    std::string big = "{";
    for (int i = 0; i < 100; ++i)
        big += "\"k" + std::to_string(i % 50) + "\":" + std::to_string(i) + ",";
    big.back() = '}';
    Value w = json::parse<Value>(big);
    EXPECT_EQ(w.size(), 50u);
    EXPECT_EQ(w["k0"].as_int64(), 50);
    EXPECT_EQ(w.as_object()[49].first, "k49");
}

TEST(JsonValue, Equality) {
    EXPECT_EQ(Value(5), Value(5u));
    EXPECT_NE(Value(-1), Value(UINT64_MAX));
    EXPECT_NE(Value(1), Value(1.0));
    EXPECT_EQ(Value::array({1, "a"}), Value::array({1, "a"}));
    EXPECT_NE(Value::object({{"a", 1}}), Value::object({{"a", 2}}));
}

TEST(JsonValue, WriterRefusesExcessiveNesting) {
    Value v;
    Value* p = &v;
    for (int i = 0; i < 5000; ++i) p = &p->push_back(Value{}).as_array().back();
    std::string out;
    EXPECT_EQ(json::write_to(out, v).message, "nesting deeper than the writer's limit");
}

}  // namespace value_test
