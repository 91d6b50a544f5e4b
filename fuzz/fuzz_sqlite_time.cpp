// Feeds arbitrary bytes to vela::db::sqlite::parse_time, the reader of SQLite time text. A
// text it accepts must give a time whose stored form (format_time) reads back as the same
// time whenever it is the fixed 26-byte "YYYY-MM-DD HH:MM:SS.ffffff" (years 0000-9999; an
// offset may carry a time just outside them); anything else must be refused without crashing.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "vela/db/sqlite.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto t = vela::db::sqlite::parse_time(text);
    if (!t) return 0;
    const std::string stored = vela::db::sqlite::format_time(*t);
    if (stored.size() != 26 || stored[0] == '-') return 0;
    check(stored[4] == '-' && stored[10] == ' ' && stored[19] == '.');
    auto back = vela::db::sqlite::parse_time(stored);
    check(back.has_value() && *back == *t);
    return 0;
}
