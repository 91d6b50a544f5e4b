// Feeds arbitrary bytes to the multipart/form-data parser. The first byte picks the boundary
// length (its bytes follow) and small limits; the rest is the body. The body is parsed twice,
// whole and in pieces whose sizes come from the input, and both runs must agree exactly
// (result, status, every part and its bytes): a delimiter split across pieces is the
// parser's hardest case. Events must nest (begin, data, end), data is never empty, no part
// passes its limit. The same bytes go to the Content-Type reader, the RFC 8187 decoder and
// the file name sanitizer, whose output must be valid UTF-8 without separators or controls,
// and stable when sanitized again.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vela/http/multipart.hpp"

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

struct Part {
    std::string name, filename, type;
    bool file = false;
    std::string data;
    bool operator==(const Part&) const = default;
};

struct Recorder final : vela::MultipartHandler {
    const vela::MultipartLimits* limits = nullptr;
    std::vector<Part> parts;
    bool open = false;
    bool on_part_begin(const vela::MultipartPart& p) override {
        check(!open);
        check(parts.size() < limits->max_parts);
        open = true;
        parts.push_back({p.name, p.filename, p.content_type, p.is_file, {}});
        return true;
    }
    bool on_part_data(std::string_view d) override {
        check(open && !d.empty());
        Part& p = parts.back();
        p.data.append(d);
        check(p.data.size() <= (p.file ? limits->max_file_size : limits->max_field_size));
        return true;
    }
    bool on_part_end() override {
        check(open);
        open = false;
        return true;
    }
};

struct Run {
    vela::MultipartParser::Result result;
    vela::Status status;
    std::vector<Part> parts;
};

Run parse_body(std::string_view boundary, std::string_view body,
               const vela::MultipartLimits& limits, std::string_view sizes) {
    vela::MultipartParser p(boundary, limits);
    Recorder r;
    r.limits = &limits;
    auto res = vela::MultipartParser::Result::need_more;
    std::size_t at = 0, k = 0;
    while (at < body.size() && res != vela::MultipartParser::Result::error) {
        std::size_t n = body.size() - at;
        if (!sizes.empty())
            n = std::min<std::size_t>(
                n, 1 + static_cast<unsigned char>(sizes[k++ % sizes.size()]) % 97);
        res = p.feed(body.substr(at, n), r);
        at += n;
    }
    if (res != vela::MultipartParser::Result::error) res = p.finish();
    check(res != vela::MultipartParser::Result::need_more);
    check((res == vela::MultipartParser::Result::error) == !p.error_message().empty());
    check(res != vela::MultipartParser::Result::done || !r.open);
    return {res, p.error(), std::move(r.parts)};
}

bool valid_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = c < 0x80         ? 1
                        : (c >> 5) == 6  ? 2
                        : (c >> 4) == 14 ? 3
                        : (c >> 3) == 30 ? 4
                                         : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (std::size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
        i += n;
    }
    return true;
}

void check_filename(std::string_view in) {
    const std::string out = vela::sanitize_filename(in);
    check(out.size() <= 255 && valid_utf8(out));
    check(out.find('/') == std::string::npos && out.find('\\') == std::string::npos);
    for (unsigned char c : out) check(c >= 0x20 && c != 0x7f);
    check(out != "." && out != "..");
    check(vela::sanitize_filename(out) == out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::string_view in(reinterpret_cast<const char*>(data), size);

    // Side readers on the whole input.
    std::string boundary, why;
    const vela::Status ct = vela::parse_multipart_content_type(in, boundary, why);
    if (ct == vela::Status::OK)
        check(vela::MultipartParser::valid_boundary(boundary));
    else
        check(!why.empty());
    std::string decoded;
    if (vela::decode_ext_value(in, decoded)) check(valid_utf8(decoded));
    check_filename(in);

    // Boundary: 1..16 bytes mapped onto bchars; limits small enough to be reached.
    static constexpr std::string_view kBchars =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=?";
    const unsigned char first = static_cast<unsigned char>(in[0]);
    const std::size_t blen = 1 + (first & 0x0f);
    if (size < 1 + blen) return 0;
    std::string b;
    for (std::size_t i = 0; i < blen; ++i)
        b.push_back(kBchars[static_cast<unsigned char>(in[1 + i]) % kBchars.size()]);
    vela::MultipartLimits limits;
    if (first & 0x10) {
        limits.max_parts = 3;
        limits.max_part_header_bytes = 64;
        limits.max_field_size = 16;
        limits.max_fields_total_size = 24;
        limits.max_file_size = 32;
        limits.max_total_size = 512;
    }
    const std::string_view body = in.substr(1 + blen);
    const Run whole = parse_body(b, body, limits, {});
    const Run pieces = parse_body(b, body, limits, in.substr(0, 1 + blen));
    const Run bytes = parse_body(b, body, limits, std::string_view("\0", 1));
    // The same outcome however the body was split; on success the same parts too (after an
    // error, a piece delivered before a limit was passed may differ).
    check(whole.result == pieces.result && whole.status == pieces.status);
    check(whole.result == bytes.result && whole.status == bytes.status);
    if (whole.result == vela::MultipartParser::Result::done) {
        check(whole.parts == pieces.parts);
        check(whole.parts == bytes.parts);
    }
    return 0;
}
