#pragma once
// ASCII helpers used by the protocol codecs (HTTP tokens are ASCII and case-insensitive).

#include <cstddef>
#include <string_view>

namespace vela::ascii {

/// Lower-cases one ASCII letter; other bytes are returned unchanged.
constexpr char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? char(c | 0x20) : c; }

/// True for an ASCII letter or digit.
constexpr bool is_alnum(unsigned char c) noexcept {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// Case-insensitive ASCII equality.
constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)  // folds case only where the bytes differ
        if (a[i] != b[i] && lower(a[i]) != lower(b[i])) return false;
    return true;
}

/// Strips spaces and horizontal tabs (HTTP optional whitespace) from both ends.
constexpr std::string_view trim_ows(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

/// Calls f(item) for each non-empty element of a comma-separated list (RFC 9110 5.6.1),
/// without surrounding whitespace.
template <class F>
constexpr void for_each_list_item(std::string_view v, F&& f) {
    while (!v.empty()) {
        const std::size_t comma = v.find(',');
        const std::string_view item = trim_ows(v.substr(0, comma));
        if (!item.empty()) f(item);
        if (comma == std::string_view::npos) break;
        v.remove_prefix(comma + 1);
    }
}

/// True when the comma-separated `list` has an element equal to `token` (case-insensitive).
constexpr bool list_has(std::string_view list, std::string_view token) noexcept {
    bool found = false;
    for_each_list_item(list, [&](std::string_view item) { found = found || iequals(item, token); });
    return found;
}

}  // namespace vela::ascii
