// The built-in Content-Type table, the compressibility rule and Content-Disposition.
//
// Charset rule: "; charset=utf-8" is added to every text/* type and to the JSON, JavaScript
// and XML families (application/json, +json, application/xml, +xml, image/svg+xml), whose
// bodies are text a browser decodes; never to binary types, nor to application/yaml and
// application/toml, whose registrations fix UTF-8 and define no charset parameter.

#include "vela/files/mime.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

namespace vela::files {
namespace {

using namespace std::literals;

constexpr std::string_view kOctetStream = "application/octet-stream";

struct Entry {
    std::string_view ext;  // lower case, without the dot
    std::string_view type;
};

// Sorted by extension (checked below) for a binary search.
constexpr std::array kTable = {
    Entry{"7z", "application/x-7z-compressed"},
    Entry{"aac", "audio/aac"},
    Entry{"apk", "application/vnd.android.package-archive"},
    Entry{"atom", "application/atom+xml; charset=utf-8"},
    Entry{"avi", "video/x-msvideo"},
    Entry{"avif", "image/avif"},
    Entry{"bin", kOctetStream},
    Entry{"bmp", "image/bmp"},
    Entry{"br", "application/x-brotli"},
    Entry{"bz2", "application/x-bzip2"},
    Entry{"c", "text/x-c; charset=utf-8"},
    Entry{"cjs", "text/javascript; charset=utf-8"},
    Entry{"cpp", "text/x-c++; charset=utf-8"},
    Entry{"css", "text/css; charset=utf-8"},
    Entry{"csv", "text/csv; charset=utf-8"},
    Entry{"dll", kOctetStream},
    Entry{"dmg", kOctetStream},
    Entry{"doc", "application/msword"},
    Entry{"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    Entry{"eot", "application/vnd.ms-fontobject"},
    Entry{"epub", "application/epub+zip"},
    Entry{"exe", kOctetStream},
    Entry{"flac", "audio/flac"},
    Entry{"gif", "image/gif"},
    Entry{"gz", "application/gzip"},
    Entry{"h", "text/x-c; charset=utf-8"},
    Entry{"htm", "text/html; charset=utf-8"},
    Entry{"html", "text/html; charset=utf-8"},
    Entry{"ico", "image/x-icon"},
    Entry{"ics", "text/calendar; charset=utf-8"},
    Entry{"ini", "text/plain; charset=utf-8"},
    Entry{"iso", kOctetStream},
    Entry{"jar", "application/java-archive"},
    Entry{"jpeg", "image/jpeg"},
    Entry{"jpg", "image/jpeg"},
    Entry{"js", "text/javascript; charset=utf-8"},  // RFC 9239
    Entry{"json", "application/json; charset=utf-8"},
    Entry{"jsonld", "application/ld+json; charset=utf-8"},
    Entry{"log", "text/plain; charset=utf-8"},
    Entry{"m4a", "audio/mp4"},
    Entry{"m4v", "video/mp4"},
    Entry{"map", "application/json; charset=utf-8"},  // source maps
    Entry{"md", "text/markdown; charset=utf-8"},
    Entry{"mjs", "text/javascript; charset=utf-8"},
    Entry{"mkv", "video/x-matroska"},
    Entry{"mov", "video/quicktime"},
    Entry{"mp3", "audio/mpeg"},
    Entry{"mp4", "video/mp4"},
    Entry{"odt", "application/vnd.oasis.opendocument.text"},
    Entry{"oga", "audio/ogg"},
    Entry{"ogg", "audio/ogg"},
    Entry{"ogv", "video/ogg"},
    Entry{"otf", "font/otf"},
    Entry{"pdf", "application/pdf"},
    Entry{"png", "image/png"},
    Entry{"ppt", "application/vnd.ms-powerpoint"},
    Entry{"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
    Entry{"py", "text/x-python; charset=utf-8"},
    Entry{"rar", "application/vnd.rar"},
    Entry{"rss", "application/rss+xml; charset=utf-8"},
    Entry{"sh", "text/x-shellscript; charset=utf-8"},
    Entry{"srt", "application/x-subrip"},
    Entry{"svg", "image/svg+xml; charset=utf-8"},
    Entry{"tar", "application/x-tar"},
    Entry{"tgz", "application/gzip"},
    Entry{"tif", "image/tiff"},
    Entry{"tiff", "image/tiff"},
    Entry{"toml", "application/toml"},
    Entry{"tsv", "text/tab-separated-values; charset=utf-8"},
    Entry{"ttf", "font/ttf"},
    Entry{"txt", "text/plain; charset=utf-8"},
    Entry{"vtt", "text/vtt; charset=utf-8"},
    Entry{"wasm", "application/wasm"},
    Entry{"wav", "audio/wav"},
    Entry{"webm", "video/webm"},
    Entry{"webmanifest", "application/manifest+json; charset=utf-8"},
    Entry{"webp", "image/webp"},
    Entry{"woff", "font/woff"},
    Entry{"woff2", "font/woff2"},
    Entry{"xls", "application/vnd.ms-excel"},
    Entry{"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    Entry{"xml", "application/xml; charset=utf-8"},
    Entry{"xz", "application/x-xz"},
    Entry{"yaml", "application/yaml"},
    Entry{"yml", "application/yaml"},
    Entry{"zip", "application/zip"},
    Entry{"zst", "application/zstd"},
};
static_assert(std::is_sorted(kTable.begin(), kTable.end(),
                             [](const Entry& a, const Entry& b) { return a.ext < b.ext; }));

constexpr char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

bool iends_with(std::string_view s, std::string_view suffix) noexcept {
    return s.size() >= suffix.size() && iequals(s.substr(s.size() - suffix.size()), suffix);
}

// Longest extension looked up. It keeps the lower-cased copy on the stack, and a std::string
// of it within libstdc++'s small-string buffer, so the override lookup does not allocate.
constexpr std::size_t kMaxExt = 15;

// The extension after the last dot of the name's last path segment, lower-cased into `buf`;
// empty when there is none: no dot, a leading dot only (".bashrc"), a trailing dot, or an
// extension longer than kMaxExt.
std::string_view extension(std::string_view file_name, std::array<char, kMaxExt>& buf) noexcept {
    const std::size_t slash = file_name.find_last_of("/\\");
    if (slash != std::string_view::npos) file_name.remove_prefix(slash + 1);
    const std::size_t dot = file_name.rfind('.');
    if (dot == std::string_view::npos || dot == 0) return {};
    const std::string_view ext = file_name.substr(dot + 1);
    if (ext.size() > kMaxExt) return {};
    for (std::size_t i = 0; i < ext.size(); ++i) buf[i] = lower(ext[i]);
    return {buf.data(), ext.size()};
}

std::string_view lookup(std::string_view ext) noexcept {
    if (ext.empty()) return kOctetStream;
    const auto it = std::lower_bound(kTable.begin(), kTable.end(), ext,
                                     [](const Entry& e, std::string_view x) { return e.ext < x; });
    return it != kTable.end() && it->ext == ext ? it->type : kOctetStream;
}

// RFC 8187 attr-char: sent as is in filename*; every other byte is percent-encoded.
bool attr_char(unsigned char c) noexcept {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return true;
    return "!#$&+-.^_`|~"sv.find(static_cast<char>(c)) != std::string_view::npos;
}

}  // namespace

std::string_view mime_type(std::string_view file_name) noexcept {
    std::array<char, kMaxExt> buf;
    return lookup(extension(file_name, buf));
}

std::string_view mime_type(std::string_view file_name, const MimeOverrides& overrides) noexcept {
    std::array<char, kMaxExt> buf;
    const std::string_view ext = extension(file_name, buf);
    if (!ext.empty() && !overrides.empty()) {
        const auto it = overrides.find(std::string(ext));
        if (it != overrides.end()) return it->second;
    }
    return lookup(ext);
}

bool compressible(std::string_view content_type) noexcept {
    std::string_view t = content_type.substr(0, content_type.find(';'));
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    if (t.size() > 5 && iequals(t.substr(0, 5), "text/")) return true;
    if (iends_with(t, "+json") || iends_with(t, "+xml")) return true;  // also image/svg+xml
    static constexpr std::string_view kTypes[] = {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/wasm",
        "application/yaml",
        "application/toml",
        "application/x-subrip",
        "font/ttf",
        "font/otf",
        "application/vnd.ms-fontobject",
        "image/x-icon",
        "image/vnd.microsoft.icon",
        "image/bmp",
    };
    return std::any_of(std::begin(kTypes), std::end(kTypes),
                       [&](std::string_view k) { return iequals(t, k); });
}

std::string content_disposition(std::string_view filename, bool attachment) {
    const std::size_t slash = filename.find_last_of("/\\");
    if (slash != std::string_view::npos) filename.remove_prefix(slash + 1);
    std::string out = attachment ? "attachment" : "inline";
    if (filename.empty()) return out;

    // The quoted fallback: printable ASCII only, one '_' per non-ASCII character (continuation
    // bytes after a high byte are skipped), '_' for '"', '\\', controls and '%' (which some
    // user agents would decode).
    std::string fallback;
    fallback.reserve(filename.size());
    bool prev_high = false;
    for (const char ch : filename) {
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x80) {
            if (!((c & 0xC0) == 0x80 && prev_high)) fallback.push_back('_');
            prev_high = true;
            continue;
        }
        prev_high = false;
        const bool plain = c >= 0x20 && c != 0x7F && c != '"' && c != '\\' && c != '%';
        fallback.push_back(plain ? ch : '_');
    }
    out += "; filename=\"";
    out += fallback;
    out += '"';
    if (fallback == filename) return out;

    // RFC 8187 ext-value. The bytes are sent as they are; a name that is not valid UTF-8
    // still yields a well-formed header value.
    static constexpr char kHex[] = "0123456789ABCDEF";
    out += "; filename*=UTF-8''";
    for (const char ch : filename) {
        const auto c = static_cast<unsigned char>(ch);
        if (attr_char(c)) {
            out.push_back(ch);
        } else {
            out.push_back('%');
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 0xF]);
        }
    }
    return out;
}

}  // namespace vela::files
