// check_path: the second line of defence between a request path and the file system (the
// parser is the first, openat2(RESOLVE_BENEATH) the third). It never decodes: the path was
// percent-decoded once by the parser, so "%2e%2e" here is a literal file name.

#include "vela/files/path.hpp"

#include <cstddef>

namespace vela::files {
namespace {

bool is_continuation(unsigned char c) noexcept { return (c & 0xC0) == 0x80; }

// Length of the well-formed UTF-8 sequence at s[i], or 0 when it is ill-formed (Unicode
// Table 3-7: no overlong forms, no surrogates D800..DFFF, nothing above U+10FFFF, no
// truncated sequence). The second byte's range depends on the lead byte.
std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = at(i);
    if (c < 0x80) return 1;
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;  // below: overlong
        if (c == 0xED) hi = 0x9F;  // above: surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;  // below: overlong
        if (c == 0xF4) hi = 0x8F;  // above: beyond U+10FFFF
    } else {
        return 0;  // 80..C1 (continuation or overlong lead) and F5..FF
    }
    if (s.size() - i < len) return 0;
    if (at(i + 1) < lo || at(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < len; ++k)
        if (!is_continuation(at(i + k))) return 0;
    return len;
}

// Bytes no file name below a web root may hold: controls (NUL included), DEL, backslash
// (a separator on Windows and to some proxies) and ill-formed UTF-8.
bool valid_bytes(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7F || c == '\\') return false;
        const std::size_t n = utf8_sequence(s, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

}  // namespace

PathVerdict check_path(std::string_view rest, std::string& out, bool allow_dotfiles) {
    out.clear();
    if (!valid_bytes(rest)) return PathVerdict::bad;
    // The result is never longer than `rest`: one reserve at most, none when `out` is reused.
    out.reserve(rest.size());
    bool hidden = false;
    std::size_t pos = 0;
    while (pos <= rest.size()) {
        std::size_t end = rest.find('/', pos);
        if (end == std::string_view::npos) end = rest.size();
        const std::string_view seg = rest.substr(pos, end - pos);
        pos = end + 1;
        if (seg.empty()) continue;
        if (seg == "." || seg == "..") {
            out.clear();
            return PathVerdict::bad;
        }
        // Keep scanning after a hidden segment: a later ".." must still answer 400.
        if (seg.front() == '.' && !allow_dotfiles) hidden = true;
        if (!out.empty()) out.push_back('/');
        out.append(seg);
    }
    if (hidden) {
        out.clear();
        return PathVerdict::hidden;
    }
    return PathVerdict::ok;
}

}  // namespace vela::files
