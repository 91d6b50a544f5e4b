// Feeds arbitrary bytes to check_path as a decoded request path (both dotfile settings) and
// checks that a name it accepts can only name something below the root: no "." or ".."
// segment, no empty segment, no leading or trailing '/', no NUL, backslash or control byte,
// valid UTF-8. The same bytes go through the MIME helpers, whose Content-Disposition value
// must stay a safe header value.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "vela/files/mime.hpp"
#include "vela/files/path.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}

// A second UTF-8 check written differently from the library's: decode each code point, then
// refuse overlong forms, surrogates and values past U+10FFFF by value.
bool valid_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t len;
        std::uint32_t cp;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > s.size()) return false;
        for (std::size_t k = 1; k < len; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

void check_name(std::string_view name) {
    check(name.empty() || (name.front() != '/' && name.back() != '/'));
    for (const char ch : name) {
        const auto c = static_cast<unsigned char>(ch);
        check(c >= 0x20 && c != 0x7F && c != '\\');
    }
    check(valid_utf8(name));
    if (name.empty()) return;
    std::size_t pos = 0;
    for (;;) {
        const std::size_t end = name.find('/', pos);
        const std::string_view seg =
            name.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
        check(!seg.empty() && seg != "." && seg != "..");
        if (end == std::string_view::npos) break;
        pos = end + 1;
    }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using vela::files::PathVerdict;
    const std::string_view in(reinterpret_cast<const char*>(data), size);

    std::string strict, loose;
    const PathVerdict vs = vela::files::check_path(in, strict, false);
    const PathVerdict vl = vela::files::check_path(in, loose, true);
    if (vs == PathVerdict::ok) {
        check_name(strict);
        check(strict.size() <= in.size());
        for (std::size_t i = 0; i < strict.size(); ++i)
            check(strict[i] != '.' || (i > 0 && strict[i - 1] != '/'));  // no hidden segment
    } else {
        check(strict.empty());
    }
    if (vl == PathVerdict::ok) check_name(loose);
    check(vl != PathVerdict::hidden);
    // The dotfile setting only turns hidden into ok: bad and ok do not depend on it.
    check(vs == PathVerdict::bad ? vl == PathVerdict::bad : vl == PathVerdict::ok);
    if (vs == PathVerdict::ok) check(strict == loose);

    // Reusing the output string gives the same answer.
    const PathVerdict again = vela::files::check_path(in, loose, true);
    check(again == vl);

    const std::string_view type = vela::files::mime_type(in);
    check(!type.empty());
    (void)vela::files::compressible(type);
    (void)vela::files::compressible(in);
    for (const bool attachment : {true, false}) {
        const std::string cd = vela::files::content_disposition(in, attachment);
        for (const char ch : cd) {
            const auto c = static_cast<unsigned char>(ch);
            check(c >= 0x20 && c < 0x7F);
        }
        check(cd.starts_with(attachment ? "attachment" : "inline"));
    }
    return 0;
}
