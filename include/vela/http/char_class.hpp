#pragma once
// Character classes of HTTP/1.1 syntax (RFC 9110 5.6.2, RFC 9112 2-5, RFC 3986 3.3-3.4).

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace vela::http {

namespace detail {
constexpr std::array<std::uint8_t, 256> make_classes() {
    std::array<std::uint8_t, 256> t{};
    // bit 0: tchar (RFC 9110 5.6.2)
    for (int c = 0; c < 256; ++c) {
        bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        bool tchar = alnum;
        for (char x : {'!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~'})
            if (c == x) tchar = true;
        if (tchar) t[c] |= 1;
        // bit 1: field-vchar / SP / HTAB / obs-text (allowed inside a field value)
        if (c == ' ' || c == '\t' || (c >= 0x21 && c <= 0x7e) || c >= 0x80) t[c] |= 2;
        // bit 2: request-target characters (RFC 3986 pchar, '/', '?', and '[' ']' for IPv6)
        bool target = alnum;
        for (char x : {'-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*',
                       '+', ',', ';', '=', ':', '@', '/', '?',  '%', '[', ']'})
            if (c == x) target = true;
        if (target) t[c] |= 4;
        // bit 3: hex digit
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) t[c] |= 8;
        // bit 4: uri-host / port characters for Host (reg-name, IP-literal, ':')
        bool host = alnum;
        for (char x : {'-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=',
                       ':', '%', '[', ']'})
            if (c == x) host = true;
        if (host) t[c] |= 16;
        // bit 5: reg-name characters (RFC 3986 3.2.2: unreserved, pct-encoded, sub-delims)
        if (host && c != ':' && c != '[' && c != ']') t[c] |= 32;
    }
    return t;
}
inline constexpr std::array<std::uint8_t, 256> kClasses = make_classes();
}  // namespace detail

/// RFC 9110 token character.
constexpr bool is_tchar(unsigned char c) noexcept { return detail::kClasses[c] & 1; }
/// Byte allowed in a field value (no CTL other than HTAB, no DEL).
constexpr bool is_field_char(unsigned char c) noexcept { return detail::kClasses[c] & 2; }
/// Byte allowed in a request target.
constexpr bool is_target_char(unsigned char c) noexcept { return detail::kClasses[c] & 4; }
/// Hexadecimal digit.
constexpr bool is_hex(unsigned char c) noexcept { return detail::kClasses[c] & 8; }
/// Byte allowed in a Host value.
constexpr bool is_host_char(unsigned char c) noexcept { return detail::kClasses[c] & 16; }
/// Byte allowed in a reg-name (a host name without port or IP-literal brackets).
constexpr bool is_regname_char(unsigned char c) noexcept { return detail::kClasses[c] & 32; }

/// True when every byte of p[0..n) is allowed in a field value (RFC 9110 5.5: no CTL but
/// HTAB, no DEL).
inline bool is_field_value(const char* p, std::size_t n) noexcept {
    // Eight bytes at a time: a byte below 0x20 or equal to 0x7F sends the rest to the byte loop.
    constexpr std::uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t x;
        std::memcpy(&x, p + i, 8);
        const std::uint64_t ctl = (x - ones * 0x20) & ~x & high;
        const std::uint64_t y = x ^ (ones * 0x7f);
        const std::uint64_t del = (y - ones) & ~y & high;
        if (ctl | del) break;
    }
    for (; i < n; ++i)
        if (!is_field_char(static_cast<unsigned char>(p[i]))) return false;
    return true;
}

}  // namespace vela::http
