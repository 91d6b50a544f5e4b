// JSON: vela vs RapidJSON vs nlohmann::json, in one binary, struct in and struct out.
//
// Each library parses text into the same C++ structs and serializes those structs back to
// text, the way a handler uses JSON: RapidJSON through its DOM and its Writer, nlohmann
// through from_json/to_json. Two documents: a ~60-byte object (the echo body of the bench
// scenarios) and an array of 10,000 objects (~1 MB). bytes_per_second is the JSON text's size.
// RapidJSON and nlohmann are compiled in only when their headers are found.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "vela/json/json.hpp"

#ifdef VELA_HAVE_RAPIDJSON
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#endif
#ifdef VELA_HAVE_NLOHMANN
#include <nlohmann/json.hpp>
#endif

namespace bench {

struct Person {
    std::string name;
    int age = 0;
    std::string email;
};
VELA_REFLECT(Person, name, age, email)

struct Item {
    std::int64_t id = 0;
    std::string name;
    double price = 0;
    bool active = false;
    std::vector<std::string> tags;
    std::optional<int> stock;
};
VELA_REFLECT(Item, id, name, price, active, tags, stock)

#ifdef VELA_HAVE_NLOHMANN
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Person, name, age, email)
void to_json(nlohmann::json& j, const Item& i) {
    j = nlohmann::json{
        {"id", i.id}, {"name", i.name}, {"price", i.price}, {"active", i.active}, {"tags", i.tags}};
    if (i.stock) j["stock"] = *i.stock;
}
void from_json(const nlohmann::json& j, Item& i) {
    j.at("id").get_to(i.id);
    j.at("name").get_to(i.name);
    j.at("price").get_to(i.price);
    j.at("active").get_to(i.active);
    j.at("tags").get_to(i.tags);
    auto s = j.find("stock");
    if (s != j.end() && !s->is_null())
        i.stock = s->get<int>();
    else
        i.stock.reset();
}
#endif

const std::string kSmall = R"({"name":"Alice","age":30,"email":"alice@example.com"})";

std::vector<Item> make_items() {
    std::vector<Item> items(10000);
    const char* tags[] = {"red", "green", "large", "sale", "new"};
    for (std::size_t i = 0; i < items.size(); ++i) {
        Item& it = items[i];
        it.id = static_cast<std::int64_t>(100000 + i * 7);
        it.name = "Item number " + std::to_string(i) + " \"quoted\"";
        it.price = static_cast<double>(i % 1000) + 0.25 * static_cast<double>(i % 4);
        it.active = i % 3 != 0;
        it.tags = {tags[i % 5], tags[(i + 2) % 5]};
        if (i % 2) it.stock = static_cast<int>(i % 500);
    }
    return items;
}

const std::vector<Item>& items() {
    static const std::vector<Item> v = make_items();
    return v;
}

const std::string& large_text() {
    static const std::string s = vela::json::write(items());
    return s;
}

void count_bytes(benchmark::State& state, std::size_t bytes) {
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

// ---- vela ---------------------------------------------------------------------------------

template <class T>
void vela_parse(benchmark::State& state, const std::string& text) {
    T out{};
    for (auto _ : state) {
        if (vela::json::read(text, out)) state.SkipWithError("parse failed");
        benchmark::DoNotOptimize(out);
    }
    count_bytes(state, text.size());
}

template <class T>
void vela_write(benchmark::State& state, const T& value, std::size_t bytes) {
    std::string out;
    for (auto _ : state) {
        out.clear();
        if (vela::json::write_to(out, value)) state.SkipWithError("write failed");
        benchmark::DoNotOptimize(out.data());
    }
    count_bytes(state, bytes);
}

void BM_SmallParse_vela(benchmark::State& s) { vela_parse<Person>(s, kSmall); }
void BM_SmallWrite_vela(benchmark::State& s) {
    vela_write(s, vela::json::parse<Person>(kSmall), kSmall.size());
}
void BM_LargeParse_vela(benchmark::State& s) { vela_parse<std::vector<Item>>(s, large_text()); }
void BM_LargeWrite_vela(benchmark::State& s) { vela_write(s, items(), large_text().size()); }
BENCHMARK(BM_SmallParse_vela);
BENCHMARK(BM_SmallWrite_vela);
BENCHMARK(BM_LargeParse_vela)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LargeWrite_vela)->Unit(benchmark::kMicrosecond);

// ---- RapidJSON ----------------------------------------------------------------------------

#ifdef VELA_HAVE_RAPIDJSON
using RjValue = rapidjson::Value;

bool rj_read(const RjValue& v, Person& p) {
    if (!v.IsObject()) return false;
    auto n = v.FindMember("name"), a = v.FindMember("age"), e = v.FindMember("email");
    if (n == v.MemberEnd() || a == v.MemberEnd() || e == v.MemberEnd() || !n->value.IsString() ||
        !a->value.IsInt() || !e->value.IsString())
        return false;
    p.name.assign(n->value.GetString(), n->value.GetStringLength());
    p.age = a->value.GetInt();
    p.email.assign(e->value.GetString(), e->value.GetStringLength());
    return true;
}

bool rj_read(const RjValue& v, Item& it) {
    if (!v.IsObject()) return false;
    auto id = v.FindMember("id"), name = v.FindMember("name"), price = v.FindMember("price"),
         active = v.FindMember("active"), tags = v.FindMember("tags");
    if (id == v.MemberEnd() || name == v.MemberEnd() || price == v.MemberEnd() ||
        active == v.MemberEnd() || tags == v.MemberEnd() || !id->value.IsInt64() ||
        !name->value.IsString() || !price->value.IsNumber() || !active->value.IsBool() ||
        !tags->value.IsArray())
        return false;
    it.id = id->value.GetInt64();
    it.name.assign(name->value.GetString(), name->value.GetStringLength());
    it.price = price->value.GetDouble();
    it.active = active->value.GetBool();
    std::size_t n = 0;
    for (const RjValue& t : tags->value.GetArray()) {
        if (!t.IsString()) return false;
        if (n < it.tags.size())
            it.tags[n].assign(t.GetString(), t.GetStringLength());
        else
            it.tags.emplace_back(t.GetString(), t.GetStringLength());
        ++n;
    }
    it.tags.resize(n);
    auto stock = v.FindMember("stock");
    if (stock != v.MemberEnd() && stock->value.IsInt())
        it.stock = stock->value.GetInt();
    else
        it.stock.reset();
    return true;
}

// Reuses the elements already there, as vela's reader does.
bool rj_read(const RjValue& v, std::vector<Item>& items) {
    if (!v.IsArray()) return false;
    std::size_t n = 0;
    for (const RjValue& e : v.GetArray()) {
        if (!rj_read(e, n < items.size() ? items[n] : items.emplace_back())) return false;
        ++n;
    }
    items.resize(n);
    return true;
}

template <class W>
void rj_write(W& w, const Person& p) {
    w.StartObject();
    w.Key("name");
    w.String(p.name.data(), static_cast<rapidjson::SizeType>(p.name.size()));
    w.Key("age");
    w.Int(p.age);
    w.Key("email");
    w.String(p.email.data(), static_cast<rapidjson::SizeType>(p.email.size()));
    w.EndObject();
}

template <class W>
void rj_write(W& w, const std::vector<Item>& items) {
    w.StartArray();
    for (const Item& it : items) {
        w.StartObject();
        w.Key("id");
        w.Int64(it.id);
        w.Key("name");
        w.String(it.name.data(), static_cast<rapidjson::SizeType>(it.name.size()));
        w.Key("price");
        w.Double(it.price);
        w.Key("active");
        w.Bool(it.active);
        w.Key("tags");
        w.StartArray();
        for (const std::string& t : it.tags)
            w.String(t.data(), static_cast<rapidjson::SizeType>(t.size()));
        w.EndArray();
        if (it.stock) {
            w.Key("stock");
            w.Int(*it.stock);
        }
        w.EndObject();
    }
    w.EndArray();
}

template <class T>
void rapidjson_parse(benchmark::State& state, const std::string& text) {
    T out{};
    for (auto _ : state) {
        rapidjson::Document d;
        d.Parse(text.data(), text.size());
        if (d.HasParseError() || !rj_read(d, out)) state.SkipWithError("parse failed");
        benchmark::DoNotOptimize(out);
    }
    count_bytes(state, text.size());
}

template <class T>
void rapidjson_write(benchmark::State& state, const T& value, std::size_t bytes) {
    rapidjson::StringBuffer buf;
    for (auto _ : state) {
        buf.Clear();
        rapidjson::Writer<rapidjson::StringBuffer> w(buf);
        rj_write(w, value);
        benchmark::DoNotOptimize(buf.GetString());
    }
    count_bytes(state, bytes);
}

void BM_SmallParse_rapidjson(benchmark::State& s) { rapidjson_parse<Person>(s, kSmall); }
void BM_SmallWrite_rapidjson(benchmark::State& s) {
    rapidjson_write(s, vela::json::parse<Person>(kSmall), kSmall.size());
}
void BM_LargeParse_rapidjson(benchmark::State& s) {
    rapidjson_parse<std::vector<Item>>(s, large_text());
}
void BM_LargeWrite_rapidjson(benchmark::State& s) {
    rapidjson_write(s, items(), large_text().size());
}
BENCHMARK(BM_SmallParse_rapidjson);
BENCHMARK(BM_SmallWrite_rapidjson);
BENCHMARK(BM_LargeParse_rapidjson)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LargeWrite_rapidjson)->Unit(benchmark::kMicrosecond);
#endif

// ---- nlohmann::json -----------------------------------------------------------------------

#ifdef VELA_HAVE_NLOHMANN
template <class T>
void nlohmann_parse(benchmark::State& state, const std::string& text) {
    T out{};
    for (auto _ : state) {
        nlohmann::json::parse(text).get_to(out);
        benchmark::DoNotOptimize(out);
    }
    count_bytes(state, text.size());
}

template <class T>
void nlohmann_write(benchmark::State& state, const T& value, std::size_t bytes) {
    for (auto _ : state) {
        std::string out = nlohmann::json(value).dump();
        benchmark::DoNotOptimize(out.data());
    }
    count_bytes(state, bytes);
}

void BM_SmallParse_nlohmann(benchmark::State& s) { nlohmann_parse<Person>(s, kSmall); }
void BM_SmallWrite_nlohmann(benchmark::State& s) {
    nlohmann_write(s, vela::json::parse<Person>(kSmall), kSmall.size());
}
void BM_LargeParse_nlohmann(benchmark::State& s) {
    nlohmann_parse<std::vector<Item>>(s, large_text());
}
void BM_LargeWrite_nlohmann(benchmark::State& s) {
    nlohmann_write(s, items(), large_text().size());
}
BENCHMARK(BM_SmallParse_nlohmann);
BENCHMARK(BM_SmallWrite_nlohmann);
BENCHMARK(BM_LargeParse_nlohmann)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LargeWrite_nlohmann)->Unit(benchmark::kMicrosecond);
#endif

// The documents really are the sizes claimed, and every library reads the same data back.
void BM_Sizes(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(large_text().size());
    state.counters["small_bytes"] = static_cast<double>(kSmall.size());
    state.counters["large_bytes"] = static_cast<double>(large_text().size());
}
BENCHMARK(BM_Sizes)->Iterations(1);

}  // namespace bench
