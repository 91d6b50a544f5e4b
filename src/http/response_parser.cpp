#include "vela/http/response_parser.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "vela/base/ascii.hpp"
#include "vela/http/char_class.hpp"

namespace vela {

namespace {

using Result = HeadParse::Result;

bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// The largest Content-Length taken (RFC 9110 8.6 asks a recipient to guard against overflow).
constexpr std::uint64_t kMaxContentLength = std::numeric_limits<std::int64_t>::max();

// The framing and persistence fields seen so far (RFC 9112 6-9).
struct FramingFields {
    bool has_length = false;
    std::uint64_t length = 0;
    bool has_te = false;
    int chunked = 0;  // how many times chunked was applied
    bool chunked_last = false;
    bool close = false;
    bool keep_alive = false;
};

// RFC 9110 8.6: Content-Length = 1*DIGIT. A list or repeat of one value ("5, 5") is accepted;
// differing values, empty elements, and values over 2^63-1 are not. Returns the error, or null.
const char* add_content_length(std::string_view v, FramingFields& f) noexcept {
    for (;;) {
        const std::size_t comma = v.find(',');
        const std::string_view item = ascii::trim_ows(v.substr(0, comma));
        if (item.empty() || item.size() > 19) return "malformed Content-Length";
        std::uint64_t n = 0;
        for (char d : item) {
            if (!is_digit(d)) return "malformed Content-Length";
            n = n * 10 + static_cast<std::uint64_t>(d - '0');  // 19 digits fit in 64 bits
        }
        if (n > kMaxContentLength) return "malformed Content-Length";
        if (f.has_length && n != f.length) return "conflicting Content-Length values";
        f.has_length = true;
        f.length = n;
        if (comma == std::string_view::npos) return nullptr;
        v.remove_prefix(comma + 1);
    }
}

// RFC 9112 6.1: Transfer-Encoding = #transfer-coding, and RFC 9110 10.1.4: transfer-coding =
// token *( OWS ";" OWS transfer-parameter ). chunked takes no parameters (RFC 9112 7.1).
// Returns the error, or null.
const char* add_transfer_encoding(std::string_view v, FramingFields& f) noexcept {
    const char* error = nullptr;
    f.has_te = true;
    ascii::for_each_list_item(v, [&](std::string_view item) {
        const std::size_t semi = item.find(';');
        const std::string_view coding = ascii::trim_ows(item.substr(0, semi));
        bool token = !coding.empty();
        for (char c : coding) token = token && http::is_tchar(static_cast<unsigned char>(c));
        const bool chunked = ascii::iequals(coding, "chunked");
        if (!token || (chunked && semi != std::string_view::npos))
            error = "malformed Transfer-Encoding";
        f.chunked += chunked ? 1 : 0;
        f.chunked_last = chunked;
    });
    return error;
}

// RFC 9110 7.6.1: Connection = #connection-option; close and keep-alive matter here.
void add_connection(std::string_view v, FramingFields& f) noexcept {
    ascii::for_each_list_item(v, [&](std::string_view t) {
        if (ascii::iequals(t, "close")) f.close = true;
        if (ascii::iequals(t, "keep-alive")) f.keep_alive = true;
    });
}

// The reason for refusing a line: a bare CR in it (RFC 9112 2.2) is named as such.
const char* refuse(const char* line, std::size_t n, const char* otherwise) noexcept {
    return std::memchr(line, '\r', n) ? "bare CR in response head" : otherwise;
}

// Finds the end of the line that starts at p[pos], within p[0..n): `end` is where its content
// ends (before CRLF, or before a bare LF, RFC 9112 2.2), `next` where the next line starts.
// False when the line's LF has not arrived.
bool next_line(const char* p, std::size_t n, std::size_t pos, std::size_t& end,
               std::size_t& next) noexcept {
    if (pos >= n) return false;
    const void* lf = std::memchr(p + pos, '\n', n - pos);
    if (!lf) return false;
    const auto i = static_cast<std::size_t>(static_cast<const char*>(lf) - p);
    next = i + 1;
    end = (i > pos && p[i - 1] == '\r') ? i - 1 : i;
    return true;
}

}  // namespace

void ResponseHead::clear() noexcept {
    raw_.clear();
    fields_.clear();
    reason_off_ = reason_len_ = 0;
    status_ = minor_ = 0;
}

void ResponseHead::assign(int status) {
    clear();
    status_ = status;
    minor_ = 1;
}

void ResponseHead::add_field(std::string_view name, std::string_view value) {
    const auto at = static_cast<std::uint32_t>(raw_.size());
    raw_ += name;
    raw_ += ": ";
    raw_ += value;
    raw_ += "\r\n";
    fields_.push_back({at, static_cast<std::uint32_t>(name.size()),
                       static_cast<std::uint32_t>(at + name.size() + 2),
                       static_cast<std::uint32_t>(value.size())});
}

std::size_t ResponseHead::find(std::string_view name) const noexcept {
    std::size_t i = 0;
    while (i < fields_.size() && !ascii::iequals(this->name(i), name)) ++i;
    return i;
}

std::string_view ResponseHead::header(std::string_view name) const noexcept {
    const std::size_t i = find(name);
    return i < fields_.size() ? value(i) : std::string_view{};
}

std::vector<std::string_view> ResponseHead::header_values(std::string_view name) const {
    std::vector<std::string_view> out;
    for_each([&](std::string_view n, std::string_view v) {
        if (ascii::iequals(n, name)) out.push_back(v);
    });
    return out;
}

bool ResponseHead::has_header(std::string_view name) const noexcept {
    return find(name) < fields_.size();
}

HeadParse parse_response_head(std::string_view in, std::string_view request_method,
                              const ResponseLimits& limits, ResponseHead& head) {
    head.clear();
    HeadParse r;
    auto fail = [&](std::string why) {
        head.clear();
        r.result = Result::error;
        r.error = std::move(why);
        return r;
    };
    // Offsets are 32 bits: a head is at most 4 GiB whatever the limit says.
    const std::size_t limit =
        std::min<std::size_t>(limits.max_head_bytes, std::numeric_limits<std::uint32_t>::max());
    const char* const p = in.data();
    const std::size_t n = std::min(in.size(), limit);  // the head must end within these
    // The head is not complete within p[0..n): more bytes may complete it, unless the limit is
    // reached.
    auto incomplete = [&] {
        if (in.size() > limit)
            return fail("response head larger than " + std::to_string(limit) + " bytes");
        head.clear();
        return r;
    };

    // RFC 9112 4: status-line = HTTP-version SP status-code SP [ reason-phrase ], and 2.3:
    // HTTP-version = "HTTP/" DIGIT "." DIGIT (case-sensitive).
    std::size_t end = 0, next = 0;
    if (!next_line(p, n, 0, end, next)) {
        // Refuse a peer that is not speaking HTTP/1 (HTTP/0.9, TLS, noise) without waiting
        // for a whole line.
        if (n > 0 && std::memcmp(p, "HTTP/", std::min<std::size_t>(n, 5)) != 0)
            return fail("malformed status line");
        return incomplete();
    }
    const std::string_view line(p, end);
    if (line.size() < 8 || line.substr(0, 5) != "HTTP/" || !is_digit(line[5]) || line[6] != '.' ||
        !is_digit(line[7]))
        return fail("malformed status line");  // as when the first bytes told already
    if (line[5] != '1' || line[7] > '1') return fail("unsupported HTTP version");
    if (line.size() < 12 || line[8] != ' ' || !is_digit(line[9]) || !is_digit(line[10]) ||
        !is_digit(line[11]) || (line.size() > 12 && line[12] != ' '))
        return fail(refuse(p, end, "malformed status line"));
    // RFC 9110 15: the defined status codes are 100-599.
    const int status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    if (status < 100 || status > 599) return fail("status code out of range");
    // reason-phrase = 1*( HTAB / SP / VCHAR / obs-text ); "HTTP/1.1 200" has none.
    const std::size_t reason_off = line.size() > 12 ? 13 : 12;
    if (!http::is_field_value(p + reason_off, end - reason_off))
        return fail(refuse(p, end, "invalid byte in reason phrase"));
    const int minor = line[7] - '0';

    // RFC 9110 9.3.6: a client ignores Content-Length and Transfer-Encoding in a 2xx answer
    // to CONNECT (the connection becomes a tunnel).
    const bool tunnel = request_method == "CONNECT" && status >= 200 && status < 300;
    FramingFields f;
    std::size_t pos = next;
    if (head.fields_.capacity() < 16) head.fields_.reserve(16);  // one allocation, not five
    for (;;) {
        if (!next_line(p, n, pos, end, next)) return incomplete();
        if (end == pos) break;  // RFC 9112 2.1: the empty line ends the head
        // RFC 9112 5.2 (obs-fold) and 2.2 (whitespace before the first field line): refused.
        if (is_ows(p[pos])) return fail("obs-fold in response head");
        // RFC 9112 5: field-line = field-name ":" OWS field-value OWS; field-name is a token
        // (RFC 9110 5.1) and no whitespace may come before the colon (RFC 9112 5.1).
        std::size_t colon = pos;
        while (colon < end && http::is_tchar(static_cast<unsigned char>(p[colon]))) ++colon;
        if (colon == end || p[colon] != ':' || colon == pos) {
            std::size_t k = colon;
            while (k < end && is_ows(p[k])) ++k;
            const bool space = colon != pos && k != colon && k < end && p[k] == ':';
            return fail(
                refuse(p + pos, end - pos,
                       space ? "whitespace before a field's colon" : "malformed field name"));
        }
        std::size_t v = colon + 1;
        while (v < end && is_ows(p[v])) ++v;
        // RFC 9110 5.5: field-value bytes are VCHAR, obs-text, SP and HTAB.
        if (!http::is_field_value(p + v, end - v))
            return fail(refuse(p + pos, end - pos, "invalid byte in field value"));
        std::size_t e = end;
        while (e > v && is_ows(p[e - 1])) --e;
        if (head.fields_.size() >= limits.max_fields) return fail("too many header fields");
        head.fields_.push_back({static_cast<std::uint32_t>(pos),
                                static_cast<std::uint32_t>(colon - pos),
                                static_cast<std::uint32_t>(v), static_cast<std::uint32_t>(e - v)});
        const std::string_view name(p + pos, colon - pos);
        const std::string_view value(p + v, e - v);
        const char* error = nullptr;
        switch (name.size()) {
            case 10:
                if (ascii::iequals(name, "connection")) add_connection(value, f);
                break;
            case 14:
                if (!tunnel && ascii::iequals(name, "content-length"))
                    error = add_content_length(value, f);
                break;
            case 17:
                if (!tunnel && ascii::iequals(name, "transfer-encoding"))
                    error = add_transfer_encoding(value, f);
                break;
        }
        if (error) return fail(error);
        pos = next;
    }

    // RFC 9112 6.1 and 6.3 rule 3: framing fields that contradict each other.
    if (f.has_te && f.has_length) return fail("Content-Length and Transfer-Encoding together");
    if (f.has_te && minor == 0) return fail("Transfer-Encoding in an HTTP/1.0 response");
    if (f.chunked > 1 || (f.chunked == 1 && !f.chunked_last))
        return fail("chunked must be the final transfer coding, once");

    // RFC 9112 6.3: how the body is delimited.
    if (tunnel || request_method == "HEAD" || status < 200 || status == 204 || status == 304) {
        r.framing = BodyFraming::none;  // rules 1 and 2
    } else if (f.has_te) {
        r.framing = f.chunked ? BodyFraming::chunked : BodyFraming::until_close;  // rule 4
    } else if (f.has_length) {
        r.framing = BodyFraming::length;  // rule 6
        r.content_length = f.length;
    } else {
        r.framing = BodyFraming::until_close;  // rule 8
    }
    // RFC 9112 9.3: persistence. A tunnel, a switch of protocols, or a body that ends with
    // the connection leaves nothing for another request.
    if (tunnel || status == 101 || r.framing == BodyFraming::until_close)
        r.keep_alive = false;
    else
        r.keep_alive = minor == 1 ? !f.close : (f.keep_alive && !f.close);

    r.result = Result::done;
    r.consumed = next;
    head.raw_.assign(p, next);
    head.status_ = status;
    head.minor_ = minor;
    head.reason_off_ = static_cast<std::uint32_t>(reason_off);
    head.reason_len_ = static_cast<std::uint32_t>(line.size() - reason_off);
    return r;
}

}  // namespace vela
