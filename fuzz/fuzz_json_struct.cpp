// Reads arbitrary bytes into a reflected struct that uses every kind of member: no crash,
// and whatever is accepted writes back to text that reads into an equal struct and writes
// back to the same text (up to the order of unordered_map members).

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vela/json/json.hpp"

namespace fuzz {

enum class Kind { a, b, long_name };
VELA_ENUM(Kind, a, b, VELA_AS(long_name, "long-name"))

struct Inner {
    std::int8_t i8 = 0;
    std::uint16_t u16 = 0;
    std::optional<std::string> note;
    std::vector<Inner> children;
    bool operator==(const Inner&) const = default;
};
VELA_REFLECT(Inner, i8, u16, note, children)

struct Doc {
    bool flag = false;
    std::int64_t i64 = 0;
    std::uint64_t u64 = 0;
    double d = 0;
    float f = 0;
    std::string s;
    std::optional<int> maybe;
    std::vector<int> ints;
    std::array<std::string, 2> pair;
    std::map<std::string, Inner> named;
    std::unordered_map<std::string, double> weights;
    Kind kind = Kind::a;
    std::chrono::system_clock::time_point when;
    vela::json::Raw raw;
    vela::json::Value any;
    bool operator==(const Doc&) const = default;
};
// raw is required: an absent Raw (empty) is written as null, which reads back as "null".
VELA_REFLECT(Doc, flag, i64, u64, d, f, s, maybe, ints, pair, named, weights, kind, when,
             VELA_REQUIRED(raw), VELA_AS(any, "dynamic"))

void check(bool ok) {
    if (!ok) __builtin_trap();
}

}  // namespace fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vela;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    json::ParseOptions opts;
    opts.max_depth = 64;
    fuzz::Doc doc;
    if (json::read(text, doc, opts)) return 0;
    std::string once;
    if (json::write_to(once, doc)) return 0;  // e.g. a read string that is not valid UTF-8
    fuzz::Doc again;
    fuzz::check(!json::read(once, again, opts));
    fuzz::check(again == doc);
    std::string twice;
    fuzz::check(!json::write_to(twice, again));
    fuzz::check(once == twice || doc.weights.size() > 1);  // unordered_map order may differ
    return 0;
}
