#pragma once
// A cursor over an HTTP field value with the grammar pieces of RFC 9110 5.6 (tokens, optional
// whitespace, quoted strings, list elements). Every reader stops at the first byte it does
// not accept and every loop step consumes a byte, so no input can make a parser using it
// loop; the list parsers of Accept-Encoding and Sec-WebSocket-Extensions share it.

#include <cstddef>
#include <string>
#include <string_view>

namespace vela::ascii {

/// tchar (RFC 9110 5.6.2): the bytes of a token.
constexpr bool is_tchar(char c) noexcept {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

/// A read position in a field value.
struct FieldCursor {
    /// The field value.
    std::string_view s;
    /// The next byte to read.
    std::size_t i = 0;

    /// True when every byte was read.
    bool end() const noexcept { return i >= s.size(); }
    /// True when the next byte is `c`.
    bool at(char c) const noexcept { return i < s.size() && s[i] == c; }
    /// Skips optional whitespace (spaces and tabs).
    void ows() noexcept {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    }
    /// Reads a token (possibly empty).
    std::string_view token() noexcept {
        const std::size_t b = i;
        while (i < s.size() && is_tchar(s[i])) ++i;
        return s.substr(b, i - b);
    }
    /// Reads a quoted-string (RFC 9110 5.6.4) starting at its quote, unescaped into `v` when
    /// given; false when it is not terminated.
    bool quoted(std::string* v = nullptr) {
        for (++i; i < s.size();) {
            char c = s[i++];
            if (c == '"') return true;
            if (c == '\\') {
                if (i == s.size()) return false;
                c = s[i++];
            }
            if (v) v->push_back(c);
        }
        return false;
    }
    /// Skips the rest of a malformed list element, past the next comma outside quotes.
    void skip_element() {
        while (i < s.size()) {
            if (s[i] == '"') {
                if (!quoted()) return;
            } else if (s[i++] == ',') {
                return;
            }
        }
    }
};

}  // namespace vela::ascii
