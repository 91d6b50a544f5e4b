// The Writer's slow paths: growth, escaping and UTF-8 checking, floating point.

#include "vela/json/writer.hpp"

#include <algorithm>
#include <cmath>

namespace vela::json {

namespace {

// Length of the valid UTF-8 sequence at the start of `s` (RFC 3629 section 4), 0 if invalid.
std::size_t utf8_sequence(std::string_view s) noexcept {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
    const unsigned char c = b(0);
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (s.size() < 3 || !cont(1) || !cont(2)) return 0;
        if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
        if (c == 0xED && b(1) > 0x9F) return 0;  // UTF-16 surrogate
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (s.size() < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
        if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
        if (c == 0xF4 && b(1) > 0x8F) return 0;  // past U+10FFFF
        return 4;
    }
    return 0;
}

}  // namespace

void Writer::grow(std::size_t n) {
    // Use the string's spare capacity first (callers reserve): growing past it reallocates.
    const std::size_t want = std::max({len_ + n, 2 * cap_, out_.capacity(), std::size_t{64}});
    out_.resize(want);
    out_.resize(out_.capacity());  // use all of what was allocated
    buf_ = out_.data();
    cap_ = out_.size();
}

// Everything after the plain prefix: escapes, UTF-8 checks, the closing quote.
void Writer::string_tail(std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    std::size_t i = 0;
    while (i < s.size()) {
        const std::size_t n = detail::plain_prefix(s.data() + i, s.size() - i);
        if (n) {
            raw(s.substr(i, n));
            i += n;
            continue;
        }
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            const std::size_t len = utf8_sequence(s.substr(i));
            if (len) {
                raw(s.substr(i, len));
                i += len;
            } else {
                if (!opts_.replace_invalid_utf8) fail("invalid UTF-8 in a string");
                raw("\xEF\xBF\xBD");
                ++i;
            }
            continue;
        }
        char* p = reserve(6);
        p[0] = '\\';
        std::size_t w = 2;
        switch (c) {
            case '"':
                p[1] = '"';
                break;
            case '\\':
                p[1] = '\\';
                break;
            case '\b':
                p[1] = 'b';
                break;
            case '\f':
                p[1] = 'f';
                break;
            case '\n':
                p[1] = 'n';
                break;
            case '\r':
                p[1] = 'r';
                break;
            case '\t':
                p[1] = 't';
                break;
            default:
                std::memcpy(p + 1, "u00", 3);
                p[4] = hex[c >> 4];
                p[5] = hex[c & 0xF];
                w = 6;
                break;
        }
        len_ += w;
        ++i;
    }
    raw('"');
}

// Makes sure a number that came out as an integer ("2") reads back as a double ("2.0").
void Writer::finite_number(char* p, char* end) {
    for (char* q = p; q != end; ++q)
        if (*q == '.' || *q == 'e') {
            len_ += static_cast<std::size_t>(end - p);
            return;
        }
    end[0] = '.';
    end[1] = '0';
    len_ += static_cast<std::size_t>(end - p) + 2;
}

void Writer::number(double v) {
    if (!std::isfinite(v)) {
        fail("NaN and infinity cannot be written as JSON");
        return null();
    }
    char* p = reserve(32);
    finite_number(p, std::to_chars(p, p + 30, v).ptr);
}

void Writer::number(float v) {
    if (!std::isfinite(v)) {
        fail("NaN and infinity cannot be written as JSON");
        return null();
    }
    char* p = reserve(32);
    finite_number(p, std::to_chars(p, p + 30, v).ptr);
}

}  // namespace vela::json
