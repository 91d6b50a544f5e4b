// Feeds arbitrary bytes to the PostgreSQL text readers of src/db/pg_text.hpp (the cells of
// text-format results). A timestamp that parses must format back (in UTC) to a text that
// parses to the same instant; a bytea that decodes must re-encode to the same hex (case
// aside); an integer that parses must print back to the same text unless it had a '+' or
// leading zeros; nothing may crash.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../src/db/pg_text.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    using namespace vela::db::pg;
    if (auto us = parse_timestamp(in)) {
        std::string text;
        if (format_timestamp(*us, text)) check(parse_timestamp(text) == us);
    }
    if (auto bytes = decode_bytea(in)) {
        check(bytes->size() * 2 + 2 == in.size());
        static const char hex[] = "0123456789abcdef";
        for (std::size_t i = 0; i < bytes->size(); ++i) {
            auto b = static_cast<unsigned char>((*bytes)[i]);
            char hi = in[2 + 2 * i] | 0x20, lo = in[3 + 2 * i] | 0x20;  // lower case
            check(hi == hex[b >> 4] && lo == hex[b & 15]);
        }
    }
    if (auto v = parse_integer(in)) {
        char buf[24];
        auto r = std::to_chars(buf, buf + sizeof buf, *v);
        check(parse_integer(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf))) == v);
    }
    if (auto d = parse_real(in)) {
        std::string text;
        format_real(*d, text);
        auto back = parse_real(text);
        check(back.has_value());
        check(*back == *d || (*back != *back && *d != *d));  // NaN reads back as NaN
    }
    return 0;
}
