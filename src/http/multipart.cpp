#include "vela/http/multipart.hpp"

#include <cstring>
#include <stdexcept>
#include <utility>

#include "vela/base/ascii.hpp"
#include "vela/base/field_cursor.hpp"
#include "vela/http/char_class.hpp"

namespace vela {

namespace {

// RFC 2046 5.1.1 bchars (without the space, which bcharsnospace excludes).
bool is_bchar_nospace(char c) noexcept {
    return ascii::is_alnum(static_cast<unsigned char>(c)) ||
           std::string_view("'()+_,-./:=?").find(c) != std::string_view::npos;
}

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Decodes one UTF-8 sequence at s[i]: its code point and length, or -1 when it is not a
// valid, shortest-form sequence of a scalar value (RFC 3629 section 4).
long utf8_decode(std::string_view s, std::size_t i, std::size_t& len) noexcept {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) return len = 1, b0;
    std::size_t n;
    long cp, min;
    if ((b0 & 0xe0) == 0xc0) {
        n = 2, cp = b0 & 0x1f, min = 0x80;
    } else if ((b0 & 0xf0) == 0xe0) {
        n = 3, cp = b0 & 0x0f, min = 0x800;
    } else if ((b0 & 0xf8) == 0xf0) {
        n = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
        return -1;
    }
    if (i + n > s.size()) return -1;
    for (std::size_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xc0) != 0x80) return -1;
        cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
    len = n;
    return cp;
}

bool valid_utf8(std::string_view s) noexcept {
    for (std::size_t i = 0, len = 0; i < s.size(); i += len)
        if (utf8_decode(s, i, len) < 0) return false;
    return true;
}

// Characters a file name shown to people must not carry: C0/C1 controls, DEL, and the
// bidirectional overrides and isolates that make "txt.exe" look like "exe.txt".
bool unwanted_in_filename(long cp) noexcept {
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

// A quoted-string at c.s[c.i] (RFC 9110 5.6.4) with the escapes browsers produce: a backslash
// escapes only '"' and '\' and is kept before anything else, so the unescaped Windows path
// "C:\dir\a.txt" that some clients send keeps its separators.
bool read_quoted(ascii::FieldCursor& c, std::string& v) {
    for (++c.i; c.i < c.s.size();) {
        char ch = c.s[c.i++];
        if (ch == '"') return true;
        if (ch == '\\' && c.i < c.s.size() && (c.s[c.i] == '"' || c.s[c.i] == '\\'))
            ch = c.s[c.i++];
        v.push_back(ch);
    }
    return false;
}

// Reads "; name=value" parameters (RFC 9110 5.6.6) after a media or disposition type,
// calling f(name, value) for each; false when they are malformed or f refuses one.
template <class F>
bool read_params(ascii::FieldCursor& c, bool lenient_tokens, F&& f) {
    for (;;) {
        c.ows();
        if (c.end()) return true;
        if (!c.at(';')) return false;
        ++c.i;
        c.ows();
        if (c.end()) return true;  // a trailing ';'
        const std::string_view name = c.token();
        if (name.empty()) return false;
        c.ows();
        if (!c.at('=')) return false;
        ++c.i;
        c.ows();
        std::string value;
        if (c.at('"')) {
            if (!read_quoted(c, value)) return false;
        } else if (lenient_tokens) {
            // Some clients leave a boundary with '=' or '/' unquoted: take it up to ';'.
            const std::size_t b = c.i;
            while (!c.end() && !c.at(';') && !c.at(' ') && !c.at('\t')) ++c.i;
            value.assign(c.s.substr(b, c.i - b));
        } else {
            value.assign(c.token());
        }
        if (value.empty() && !c.end() && !c.at(';') && !c.at(' ') && !c.at('\t')) return false;
        if (!f(name, std::move(value))) return false;
    }
}

void append_utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
        out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
}

}  // namespace

// ---- Content-Type, boundaries, file names -----------------------------------------------

bool MultipartParser::valid_boundary(std::string_view b) noexcept {
    if (b.empty() || b.size() > 70 || b.back() == ' ') return false;  // RFC 2046 5.1.1
    for (char c : b)
        if (c != ' ' && !is_bchar_nospace(c)) return false;
    return true;
}

Status parse_multipart_content_type(std::string_view content_type, std::string& boundary,
                                    std::string& why) {
    ascii::FieldCursor c{content_type};
    c.ows();
    const std::string_view type = c.token();
    const bool slash = c.at('/');
    if (slash) ++c.i;
    const std::string_view subtype = slash ? c.token() : std::string_view();
    if (!ascii::iequals(type, "multipart") || !ascii::iequals(subtype, "form-data")) {
        why = content_type.empty() ? "expected a multipart/form-data body (no Content-Type)"
                                   : "expected a multipart/form-data body, not " +
                                         std::string(content_type.substr(0, 100));
        return Status::UnsupportedMediaType;
    }
    boundary.clear();
    bool seen = false, duplicate = false;
    const bool ok = read_params(c, true, [&](std::string_view name, std::string value) {
        if (!ascii::iequals(name, "boundary")) return true;
        duplicate = duplicate || seen;
        seen = true;
        boundary = std::move(value);
        return true;
    });
    if (!ok) {
        why = "malformed Content-Type parameters";
        return Status::BadRequest;
    }
    if (!seen || duplicate) {
        why = seen ? "more than one boundary parameter" : "multipart/form-data without a boundary";
        return Status::BadRequest;
    }
    if (!MultipartParser::valid_boundary(boundary)) {
        why = "invalid multipart boundary (1 to 70 characters of RFC 2046 bchars)";
        return Status::BadRequest;
    }
    return Status::OK;
}

bool decode_ext_value(std::string_view value, std::string& out) {
    // ext-value = charset "'" [ language ] "'" value-chars (RFC 8187 3.2.1)
    const std::size_t q1 = value.find('\'');
    if (q1 == std::string_view::npos) return false;
    const std::size_t q2 = value.find('\'', q1 + 1);
    if (q2 == std::string_view::npos) return false;
    const std::string_view charset = value.substr(0, q1);
    const bool latin1 = ascii::iequals(charset, "ISO-8859-1");
    if (!latin1 && !ascii::iequals(charset, "UTF-8")) return false;
    const std::string_view chars = value.substr(q2 + 1);
    std::string bytes;
    for (std::size_t i = 0; i < chars.size(); ++i) {
        const char c = chars[i];
        if (c == '%') {
            if (i + 2 >= chars.size()) return false;
            const int hi = hex_value(chars[i + 1]), lo = hex_value(chars[i + 2]);
            if (hi < 0 || lo < 0) return false;
            bytes.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
            return false;
        } else {
            bytes.push_back(c);
        }
    }
    if (latin1) {
        out.clear();
        for (char c : bytes) append_utf8(out, static_cast<unsigned char>(c));
        return true;
    }
    if (!valid_utf8(bytes)) return false;
    out = std::move(bytes);
    return true;
}

std::string sanitize_filename(std::string_view name) {
    const std::size_t sep = name.find_last_of("/\\");
    if (sep != std::string_view::npos) name.remove_prefix(sep + 1);
    std::string out;
    out.reserve(name.size());
    for (std::size_t i = 0, len = 0; i < name.size(); i += len) {
        const long cp = utf8_decode(name, i, len);
        if (cp < 0) {
            len = 1;
            out.append("\xef\xbf\xbd");  // U+FFFD for a byte that is not UTF-8
        } else if (!unwanted_in_filename(cp)) {
            out.append(name.substr(i, len));
        }
    }
    if (out.size() > 255) {  // a file system name's limit; cut at a character boundary
        std::size_t cut = 255;
        while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;
        out.resize(cut);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::size_t lead = 0;
    while (lead < out.size() && out[lead] == ' ') ++lead;
    out.erase(0, lead);
    if (out == "." || out == "..") out.clear();
    return out;
}

// ---- The parser -----------------------------------------------------------------------------

MultipartParser::MultipartParser(std::string_view boundary, MultipartLimits limits)
    : limits_(limits) {
    if (!valid_boundary(boundary))
        throw std::invalid_argument("invalid multipart boundary: " +
                                    std::string(boundary.substr(0, 80)));
    delim_.reserve(boundary.size() + 4);
    delim_.append("\r\n--").append(boundary);
}

MultipartParser::Result MultipartParser::fail(Status s, std::string message) {
    state_ = State::failed;
    error_ = s;
    message_ = std::move(message);
    return Result::error;
}

bool MultipartParser::emit(std::string_view data, MultipartHandler& h) {
    if (data.empty()) return true;
    part_size_ += data.size();
    if (part_.is_file) {
        if (part_size_ > limits_.max_file_size)
            return fail(Status::PayloadTooLarge,
                        "file '" + part_.name.substr(0, 100) + "' is larger than " +
                            std::to_string(limits_.max_file_size) + " bytes"),
                   false;
    } else {
        fields_total_ += data.size();
        if (part_size_ > limits_.max_field_size)
            return fail(Status::PayloadTooLarge,
                        "field '" + part_.name.substr(0, 100) + "' is larger than " +
                            std::to_string(limits_.max_field_size) + " bytes"),
                   false;
        if (fields_total_ > limits_.max_fields_total_size)
            return fail(Status::PayloadTooLarge, "form fields are larger than " +
                                                     std::to_string(limits_.max_fields_total_size) +
                                                     " bytes in total"),
                   false;
    }
    if (!h.on_part_data(data))
        return fail(Status::InternalServerError, "the part's data was refused"), false;
    return true;
}

// Looks for delim_ in p from i. The bytes before it are part data (passed to h, or dropped in
// the preamble when h is null); a prefix of delim_ at the end of p is held back in matched_.
// Only delim_[0] is a CR (a boundary has no CR), so a failed match can only restart at the
// byte that broke it, and the held bytes are known to equal delim_[0, matched_).
bool MultipartParser::scan(std::string_view p, std::size_t& i, MultipartHandler* h) {
    const std::size_t L = delim_.size();
    if (matched_ > 0) {
        while (matched_ < L && i < p.size() && p[i] == delim_[matched_]) ++matched_, ++i;
        if (matched_ == L) return matched_ = 0, true;
        if (i == p.size()) return false;
        const std::size_t held = matched_;
        matched_ = 0;
        if (h && !emit(std::string_view(delim_).substr(0, held), *h)) return false;
    }
    const std::size_t start = i;
    while (i < p.size()) {
        const void* cr = std::memchr(p.data() + i, '\r', p.size() - i);
        if (!cr) {
            i = p.size();
            break;
        }
        const std::size_t j = static_cast<std::size_t>(static_cast<const char*>(cr) - p.data());
        std::size_t k = 1;
        while (k < L && j + k < p.size() && p[j + k] == delim_[k]) ++k;
        if (k == L || j + k == p.size()) {
            if (h && !emit(p.substr(start, j - start), *h)) return false;
            i = j + k;
            if (k == L) return true;
            matched_ = k;
            return false;
        }
        i = j + k;
    }
    if (h) emit(p.substr(start, i - start), *h);
    return false;
}

MultipartParser::Result MultipartParser::feed(std::string_view p, MultipartHandler& h) {
    if (state_ == State::failed) return Result::error;
    // Bytes past max_total_size are refused after the ones before them are parsed, so the
    // outcome does not depend on how the body was split.
    const std::uint64_t room = limits_.max_total_size - total_;
    const bool over = p.size() > room;
    if (over) p = p.substr(0, static_cast<std::size_t>(room));
    total_ += p.size();
    const Result r = parse(p, h);
    if (over && r != Result::error)
        return fail(Status::PayloadTooLarge, "multipart body larger than " +
                                                 std::to_string(limits_.max_total_size) + " bytes");
    return r;
}

MultipartParser::Result MultipartParser::parse(std::string_view p, MultipartHandler& h) {
    std::size_t i = 0;
    while (i < p.size()) {
        switch (state_) {
            case State::preamble:
                if (!scan(p, i, nullptr)) return Result::need_more;
                state_ = State::after_delim;
                break;
            case State::body:
                if (!scan(p, i, &h))
                    return state_ == State::failed ? Result::error : Result::need_more;
                if (!h.on_part_end())
                    return fail(Status::InternalServerError, "the part's end was refused");
                state_ = State::after_delim;
                break;
            case State::after_delim:
            case State::padding: {
                const char c = p[i++];
                if (c == '-' && state_ == State::after_delim) {
                    state_ = State::after_dash;
                } else if (c == ' ' || c == '\t') {
                    state_ = State::padding;  // RFC 2046 transport-padding
                } else if (c == '\r') {
                    state_ = State::padding_lf;
                } else {
                    return fail(Status::BadRequest,
                                "malformed multipart body: text after a boundary delimiter");
                }
                break;
            }
            case State::after_dash:
                if (p[i++] != '-')
                    return fail(Status::BadRequest,
                                "malformed multipart body: text after a boundary delimiter");
                state_ = State::epilogue;
                break;
            case State::padding_lf:
                if (p[i++] != '\n')
                    return fail(Status::BadRequest,
                                "malformed multipart body: a boundary line not ended by CRLF");
                header_.clear();
                if (++parts_ > limits_.max_parts)
                    return fail(Status::PayloadTooLarge,
                                "more than " + std::to_string(limits_.max_parts) + " parts");
                state_ = State::headers;
                break;
            case State::headers:
                while (i < p.size() && state_ == State::headers)
                    if (!header_byte(p[i++], h)) return Result::error;
                break;
            case State::epilogue:
                i = p.size();
                break;
            case State::failed:
                return Result::error;
        }
    }
    return state_ == State::epilogue ? Result::done : Result::need_more;
}

MultipartParser::Result MultipartParser::finish() {
    switch (state_) {
        case State::epilogue:
            return Result::done;
        case State::failed:
            return Result::error;
        case State::preamble:
            return fail(Status::BadRequest, "no multipart boundary delimiter in the body");
        default:
            return fail(Status::BadRequest,
                        "truncated multipart body: it ends before the close delimiter");
    }
}

// Collects one byte of a part's header section; on its empty last line the part begins.
bool MultipartParser::header_byte(char c, MultipartHandler& h) {
    if (header_.size() >= limits_.max_part_header_bytes)
        return fail(Status::PayloadTooLarge, "part headers larger than " +
                                                 std::to_string(limits_.max_part_header_bytes) +
                                                 " bytes"),
               false;
    header_.push_back(c);
    if (c != '\n') return true;
    const std::size_t n = header_.size();
    if (n < 2 || header_[n - 2] != '\r')
        return fail(Status::BadRequest, "malformed part headers: a line ended by a bare LF"), false;
    if (n == 2 || (n >= 4 && header_[n - 4] == '\r' && header_[n - 3] == '\n'))
        return begin_part(h);
    return true;
}

namespace {

// Parses the part's Content-Disposition value into `part`; "" or why it is malformed.
const char* read_disposition(std::string_view value, MultipartPart& part) {
    ascii::FieldCursor c{value};
    if (!ascii::iequals(c.token(), "form-data"))
        return "a part's Content-Disposition is not form-data";
    bool name = false, filename = false, ext = false, dup = false;
    std::string plain, extended;
    const bool ok = read_params(c, false, [&](std::string_view n, std::string v) {
        bool* seen = nullptr;
        std::string* dest = nullptr;
        if (ascii::iequals(n, "name")) {
            seen = &name, dest = &part.name;
        } else if (ascii::iequals(n, "filename")) {
            seen = &filename, dest = &plain;
        } else if (ascii::iequals(n, "filename*")) {
            seen = &ext, dest = &extended;
        } else {
            return true;
        }
        dup = dup || *seen;
        *seen = true;
        *dest = std::move(v);
        return true;
    });
    if (!ok) return "malformed Content-Disposition parameters in a part";
    if (dup) return "a repeated Content-Disposition parameter in a part";
    if (!name) return "a part's Content-Disposition has no name";
    if (ext) {
        std::string decoded;
        if (!decode_ext_value(extended, decoded))
            return "malformed filename* in a part (RFC 8187, UTF-8 or ISO-8859-1)";
        plain = std::move(decoded);
    }
    part.is_file = filename || ext;
    if (part.is_file) part.filename = sanitize_filename(plain);
    return "";
}

}  // namespace

// Parses the header section in header_ (RFC 2046 5.1.1 body-part headers, RFC 7578 4).
bool MultipartParser::begin_part(MultipartHandler& h) {
    part_ = MultipartPart{};
    bool disposition = false, type = false;
    std::string_view rest(header_);
    rest.remove_suffix(2);  // the empty line
    std::string line;
    const auto field = [&]() -> const char* {
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos || colon == 0)
            return "malformed part headers: a line without a field name";
        const std::string_view name = std::string_view(line).substr(0, colon);
        for (char ch : name)
            if (!http::is_tchar(static_cast<unsigned char>(ch)))
                return "malformed part headers: a bad field name";
        const std::string_view value = ascii::trim_ows(std::string_view(line).substr(colon + 1));
        for (char ch : value)
            if (!http::is_field_char(static_cast<unsigned char>(ch)))
                return "malformed part headers: a control character in a value";
        if (ascii::iequals(name, "Content-Disposition")) {
            if (disposition) return "a part with two Content-Disposition fields";
            disposition = true;
            return read_disposition(value, part_);
        }
        if (ascii::iequals(name, "Content-Type")) {
            if (type) return "a part with two Content-Type fields";
            type = true;
            part_.content_type.assign(value);
        }
        return "";
    };
    while (!rest.empty()) {
        const std::size_t eol = rest.find("\r\n");
        const std::string_view l = rest.substr(0, eol);
        rest.remove_prefix(eol + 2);
        if (l.front() == ' ' || l.front() == '\t') {  // obs-fold: unfold into the field
            if (line.empty())
                return fail(Status::BadRequest,
                            "malformed part headers: a "
                            "continuation line first"),
                       false;
            line.push_back(' ');
            line.append(ascii::trim_ows(l));
            continue;
        }
        if (!line.empty()) {
            const char* why = field();
            if (*why) return fail(Status::BadRequest, why), false;
        }
        line.assign(l);
    }
    if (!line.empty()) {
        const char* why = field();
        if (*why) return fail(Status::BadRequest, why), false;
    }
    if (!disposition) return fail(Status::BadRequest, "a part without Content-Disposition"), false;
    header_.clear();
    part_size_ = 0;
    state_ = State::body;
    if (!h.on_part_begin(part_))
        return fail(Status::InternalServerError, "the part was refused"), false;
    return true;
}

}  // namespace vela
