// Round trips of every supported member type through json::write and json::read.

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "vela/json/json.hpp"

namespace codec_test {

using namespace vela;

enum class Color { red, green, dark_blue };
VELA_ENUM(Color, red, green, VELA_AS(dark_blue, "dark-blue"))

struct Point {
    int x = 0;
    int y = 0;
    bool operator==(const Point&) const = default;
};
VELA_REFLECT(Point, x, y)

struct Everything {
    bool flag = false;
    std::int8_t i8 = 0;
    std::uint8_t u8 = 0;
    std::int16_t i16 = 0;
    std::uint16_t u16 = 0;
    std::int32_t i32 = 0;
    std::uint32_t u32 = 0;
    std::int64_t i64 = 0;
    std::uint64_t u64 = 0;
    float f = 0;
    double d = 0;
    std::string text;
    std::optional<int> maybe;
    std::optional<std::string> absent;
    std::vector<Point> points;
    std::array<int, 3> triple{};
    std::map<std::string, int> counts;
    std::unordered_map<std::string, std::vector<int>> lists;
    Point origin;
    Color color = Color::red;
    std::chrono::system_clock::time_point when;
    json::Raw extra;
    json::Value any;
    bool operator==(const Everything&) const = default;
};
VELA_REFLECT(Everything, flag, i8, u8, i16, u16, i32, u32, i64, u64, f, d, text, maybe, absent,
             points, triple, counts, lists, origin, color, when, extra, VELA_AS(any, "dynamic"))

Everything sample() {
    using namespace std::chrono;
    Everything e;
    e.flag = true;
    e.i8 = -128;
    e.u8 = 255;
    e.i16 = -32768;
    e.u16 = 65535;
    e.i32 = std::numeric_limits<std::int32_t>::min();
    e.u32 = std::numeric_limits<std::uint32_t>::max();
    e.i64 = std::numeric_limits<std::int64_t>::min();
    e.u64 = std::numeric_limits<std::uint64_t>::max();
    e.f = 0.1f;
    e.d = 1e308;
    e.text = "h\xC3\xA9llo \"w\\orld\"\n\t\x01";
    e.maybe = 7;
    e.points = {{1, 2}, {-3, 4}};
    e.triple = {1, 2, 3};
    e.counts = {{"a", 1}, {"b", 2}};
    e.lists = {{"x", {1, 2}}, {"y", {}}};
    e.origin = {5, 6};
    e.color = Color::dark_blue;
    e.when = sys_days{2024y / May / 1} + 12h + 30min + 15s + 250ms;
    e.extra = json::Raw{R"({"k":[1,2,{"z":null}]})"};
    e.any =
        json::Value::object({{"n", 1}, {"s", "two"}, {"a", json::Value::array({true, nullptr})}});
    return e;
}

TEST(JsonCodec, EveryMemberTypeRoundTrips) {
    const Everything in = sample();
    const std::string text = json::write(in);
    Everything out;
    json::Error err = json::read(text, out);
    ASSERT_FALSE(err) << err.to_string() << "\n" << text;
    EXPECT_EQ(out, in) << text;
}

TEST(JsonCodec, WritesFieldsInDeclarationOrderWithRenames) {
    const std::string text = json::write(sample());
    EXPECT_EQ(text.rfind(R"({"flag":true,"i8":-128,"u8":255,)", 0), 0u) << text;
    EXPECT_NE(text.find(R"("color":"dark-blue")"), std::string::npos);
    EXPECT_NE(text.find(R"("when":"2024-05-01T12:30:15.250Z")"), std::string::npos) << text;
    EXPECT_NE(text.find(R"("extra":{"k":[1,2,{"z":null}]})"), std::string::npos);
    EXPECT_NE(text.find(R"("dynamic":{"n":1,"s":"two","a":[true,null]})"), std::string::npos);
    EXPECT_EQ(text.find("absent"), std::string::npos) << "empty optionals are left out";
}

TEST(JsonCodec, EmptyOptionalCanBeWrittenAsNull) {
    json::WriteOptions o;
    o.skip_null_members = false;
    EXPECT_NE(json::write(sample(), o).find(R"("absent":null)"), std::string::npos);
}

struct Opt {
    std::optional<int> a;
    std::optional<int> b;
    int c = 0;
};
VELA_REFLECT(Opt, a, b, c)

TEST(JsonCodec, OptionalNullOrAbsentIsEmpty) {
    Opt o{1, 2, 0};
    ASSERT_FALSE(json::read(R"({"a":null,"c":3})", o));
    EXPECT_FALSE(o.a);
    EXPECT_FALSE(o.b) << "absent optional fields are reset";
    EXPECT_EQ(o.c, 3);
}

TEST(JsonCodec, FieldsInAnyOrderUnknownSkipped) {
    auto p = json::parse<Point>(R"( {"extra":{"deep":[1,{"x":9}]},"y":2,"x":1} )");
    EXPECT_EQ(p, (Point{1, 2}));
}

TEST(JsonCodec, EscapedKeysMatch) {
    auto p = json::parse<Point>(R"({"\u0078":1,"y":2})");
    EXPECT_EQ(p, (Point{1, 2}));
}

TEST(JsonCodec, RepeatedFieldKeepsLast) {
    EXPECT_EQ(json::parse<Point>(R"({"x":1,"y":2,"x":3})"), (Point{3, 2}));
}

TEST(JsonCodec, VectorsOfStructsAndScalars) {
    std::vector<Point> pts = {{1, 2}, {3, 4}};
    EXPECT_EQ(json::write(pts), R"([{"x":1,"y":2},{"x":3,"y":4}])");
    EXPECT_EQ(json::parse<std::vector<Point>>(json::write(pts)), pts);
    std::vector<bool> bits = {true, false, true};
    EXPECT_EQ(json::write(bits), "[true,false,true]");
    EXPECT_EQ(json::parse<std::vector<bool>>("[true,false,true]"), bits);
    EXPECT_EQ(json::write(std::vector<int>{}), "[]");
}

struct View {
    std::string_view name;
    const char* label;
};
VELA_REFLECT(View, name, label)

TEST(JsonCodec, StringViewAndCStringAreWritable) {
    EXPECT_EQ(json::write(View{"vela", "x\\y"}), R"({"name":"vela","label":"x\\y"})");
    EXPECT_EQ(json::write(std::string_view("a\"b")), R"("a\"b")");
    EXPECT_EQ(json::write("c"), R"("c")");
}

TEST(JsonCodec, TopLevelScalars) {
    EXPECT_EQ(json::parse<int>(" 42 "), 42);
    EXPECT_EQ(json::parse<std::string>(R"("x\ny")"), "x\ny");
    EXPECT_EQ(json::parse<bool>("false"), false);
    EXPECT_EQ(json::parse<double>("2.5"), 2.5);
    EXPECT_EQ(json::parse<std::optional<int>>("null"), std::nullopt);
    EXPECT_EQ(json::parse<json::Raw>(" [1, 2] ").json, "[1, 2]");
    EXPECT_EQ(json::parse<json::Raw>(" 12 ").json, "12");
}

TEST(JsonCodec, RawKeepsTextAsWritten) {
    auto v = json::parse<std::map<std::string, json::Raw>>(R"({"a": [1, 2 ] ,"b":"s","c":-1.5e3})");
    EXPECT_EQ(v["a"].json, "[1, 2 ]");
    EXPECT_EQ(v["b"].json, R"("s")");
    EXPECT_EQ(v["c"].json, "-1.5e3");
}

TEST(JsonCodec, TimePointsRfc3339) {
    using namespace std::chrono;
    using tp = system_clock::time_point;
    EXPECT_EQ(json::write(tp{}), R"("1970-01-01T00:00:00Z")");
    const tp t = sys_days{2000y / February / 29} + 23h + 59min + 59s + 123456us;
    EXPECT_EQ(json::write(t), R"("2000-02-29T23:59:59.123456Z")");
    EXPECT_EQ(json::parse<tp>(R"("2000-02-29T23:59:59.123456Z")"), t);
    EXPECT_EQ(json::parse<tp>(R"("2000-03-01T01:59:59.123456+02:00")"), t);
    EXPECT_EQ(json::parse<tp>(R"("2000-02-29t18:29:59.123456789-05:30")"), t + 789ns);
    EXPECT_EQ(json::write(sys_seconds{seconds{-1}}), R"("1969-12-31T23:59:59Z")");
    EXPECT_TRUE(json::read(R"("2001-02-29T00:00:00Z")", *std::make_unique<tp>()));
    EXPECT_TRUE(json::read(R"("2001-01-01 00:00:00Z")", *std::make_unique<tp>()));
    EXPECT_TRUE(json::read(R"("2001-01-01T00:00:00")", *std::make_unique<tp>()));
    EXPECT_TRUE(json::read(R"("9999-12-31T23:59:59Z")", *std::make_unique<tp>()))
        << "outside the nanosecond clock's range";
    sys_seconds far;
    EXPECT_FALSE(json::read(R"("9999-12-31T23:59:59Z")", far));
    EXPECT_EQ(json::write(far), R"("9999-12-31T23:59:59Z")");
}

TEST(JsonCodec, EnumsAsStrings) {
    EXPECT_EQ(json::write(Color::green), R"("green")");
    EXPECT_EQ(json::parse<Color>(R"("dark-blue")"), Color::dark_blue);
    json::Error e = json::read(R"("blue")", *std::make_unique<Color>());
    EXPECT_EQ(e.to_string(), R"($: expected one of "red", "green", "dark-blue")");
    EXPECT_THROW(json::write(static_cast<Color>(42)), json::WriteError);
}

}  // namespace codec_test

namespace codec_test {

TEST(JsonCodec, ReadingIntoAFilledVectorReplacesItsContents) {
    std::vector<Opt> v(5, Opt{1, 2, 3});
    ASSERT_FALSE(vela::json::read(R"([{"c":7},{"a":1,"c":8}])", v));
    ASSERT_EQ(v.size(), 2u);
    EXPECT_FALSE(v[0].a);
    EXPECT_FALSE(v[0].b);
    EXPECT_EQ(v[0].c, 7);
    EXPECT_EQ(v[1].a, 1);
    EXPECT_FALSE(v[1].b);
    std::vector<bool> bits(4, true);
    ASSERT_FALSE(vela::json::read("[false]", bits));
    EXPECT_EQ(bits, std::vector<bool>{false});
    std::vector<int> grow = {1};
    ASSERT_FALSE(vela::json::read("[4,5,6]", grow));
    EXPECT_EQ(grow, (std::vector<int>{4, 5, 6}));
}

}  // namespace codec_test
