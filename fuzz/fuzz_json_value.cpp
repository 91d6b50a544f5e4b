// Reads arbitrary bytes as a json::Value (and as json::Raw): no crash; an accepted document
// writes back to text that reads into an equal Value and writes back to the same text, and
// Raw accepts exactly what Value accepts.

#include <cstdint>
#include <string>
#include <string_view>

#include "vela/json/json.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vela;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    json::Value v;
    const bool ok = !json::read(text, v);
    json::Raw raw;
    check(ok == !json::read(text, raw));
    if (!ok) return 0;
    std::string once;
    check(!json::write_to(once, v));  // what simdjson accepted is valid UTF-8
    json::Value again;
    check(!json::read(once, again));
    check(again == v);
    std::string twice;
    check(!json::write_to(twice, again));
    check(once == twice);
    json::Value from_raw;
    check(!json::read(raw.json, from_raw) && from_raw == v);
    return 0;
}
