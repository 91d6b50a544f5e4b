// The hex codec of hex.hpp.
#include "vela/base/hex.hpp"

namespace vela {

namespace {

// The value of a hex digit, or -1.
int digit_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

void hex_append(std::string& out, std::string_view data) {
    const std::size_t at = out.size();
    out.resize(at + 2 * data.size());
    char* p = out.data() + at;
    for (const char c : data) p = hex_byte(p, static_cast<unsigned char>(c));
}

std::string hex_encode(std::string_view data) {
    std::string out;
    hex_append(out, data);
    return out;
}

std::optional<std::string> hex_decode(std::string_view text) {
    if (text.size() % 2 != 0) return std::nullopt;
    std::string out(text.size() / 2, '\0');
    for (std::size_t i = 0; i < out.size(); ++i) {
        const int hi = digit_value(text[2 * i]);
        const int lo = digit_value(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = static_cast<char>(hi << 4 | lo);
    }
    return out;
}

}  // namespace vela
