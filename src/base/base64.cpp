// The base64 codec of base64.hpp.
#include "vela/base/base64.hpp"

#include <cstdint>

namespace vela {

namespace {

// RFC 4648 alphabets (section 4 and section 5).
constexpr char kStd[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string encode(std::string_view data, const char* alphabet, bool pad) {
    std::string out;
    out.reserve((data.size() + 2) / 3 * 4);
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    std::size_t i = 0;
    for (; i + 3 <= data.size(); i += 3) {
        std::uint32_t v = (std::uint32_t{p[i]} << 16) | (std::uint32_t{p[i + 1]} << 8) | p[i + 2];
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        out += alphabet[v & 63];
    }
    std::size_t rest = data.size() - i;
    if (rest == 1) {
        std::uint32_t v = std::uint32_t{p[i]} << 16;
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        if (pad) out += "==";
    } else if (rest == 2) {
        std::uint32_t v = (std::uint32_t{p[i]} << 16) | (std::uint32_t{p[i + 1]} << 8);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        if (pad) out += '=';
    }
    return out;
}

int sextet(char c, bool url) noexcept {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == (url ? '-' : '+')) return 62;
    if (c == (url ? '_' : '/')) return 63;
    return -1;
}

// Decodes `text` (no padding left in it). Rejects a length that cannot come from whole bytes
// and non-zero leftover bits, so every byte string has exactly one accepted encoding: a
// signed value cannot be re-spelt to slip past a cache or a comparison of the text.
std::optional<std::string> decode(std::string_view text, bool url) {
    if (text.size() % 4 == 1) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3 + 2);
    std::uint32_t acc = 0;
    int bits = 0;
    for (char c : text) {
        int v = sextet(c, url);
        if (v < 0) return std::nullopt;
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xFF);
        }
    }
    if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;
    return out;
}

// Strips the '=' padding of a padded encoding; false if it is not the right amount.
bool strip_padding(std::string_view& text, bool required) {
    std::size_t n = 0;
    while (n < 2 && n < text.size() && text[text.size() - 1 - n] == '=') ++n;
    if (n == 0) return !required || text.size() % 4 == 0;
    if (text.size() % 4 != 0) return false;
    text.remove_suffix(n);
    return true;
}

}  // namespace

std::string base64url_encode(std::string_view data) { return encode(data, kUrl, false); }

std::optional<std::string> base64url_decode(std::string_view text) {
    if (!strip_padding(text, false)) return std::nullopt;
    return decode(text, true);
}

std::string base64_encode(std::string_view data) { return encode(data, kStd, true); }

std::optional<std::string> base64_decode(std::string_view text) {
    if (!strip_padding(text, true)) return std::nullopt;
    return decode(text, false);
}

}  // namespace vela
