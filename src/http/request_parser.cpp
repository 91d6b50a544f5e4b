#include "vela/http/request_parser.hpp"

#include <array>
#include <cstring>
#include <string>

#include "vela/base/ascii.hpp"
#include "vela/http/char_class.hpp"

namespace vela {

using http::is_hex;
using http::is_host_char;
using http::is_target_char;
using http::is_tchar;

namespace {

bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

bool all_tchar(std::string_view s) noexcept {
    for (char c : s)
        if (!is_tchar(static_cast<unsigned char>(c))) return false;
    return !s.empty();
}

// RFC 3986 2.1: every '%' starts a complete escape.
bool escapes_valid(std::string_view s) noexcept {
    for (std::size_t i = s.find('%'); i != std::string_view::npos; i = s.find('%', i + 1)) {
        if (i + 2 >= s.size() || !is_hex(static_cast<unsigned char>(s[i + 1])) ||
            !is_hex(static_cast<unsigned char>(s[i + 2])))
            return false;
    }
    return true;
}

// A "." or ".." segment (after decoding) would let a path step outside its prefix.
bool has_dot_segment(std::string_view path) noexcept {
    if (path.find("/.") == std::string_view::npos) return false;
    std::size_t i = 0;
    while (i < path.size()) {
        std::size_t j = path.find('/', i);
        if (j == std::string_view::npos) j = path.size();
        std::string_view seg = path.substr(i, j - i);
        if (seg == "." || seg == "..") return true;
        i = j + 1;
    }
    return false;
}

// RFC 9112 3.2, RFC 3986 3.2.2-3.2.3: Host = uri-host [ ":" port ]. uri-host is a bracketed
// IPv6 literal, or a reg-name / IPv4 address (no ':' or brackets); port is digits. Strict
// choices: IPvFuture literals are refused, and so is a port without a host.
// reg-name characters except '%' (so the common Host needs no separate escape scan).
constexpr std::array<bool, 256> make_host_plain() {
    std::array<bool, 256> t{};
    for (int c = 0; c < 256; ++c)
        t[static_cast<std::size_t>(c)] =
            http::is_regname_char(static_cast<unsigned char>(c)) && c != '%';
    return t;
}
constexpr std::array<bool, 256> kHostPlain = make_host_plain();

bool host_valid(std::string_view h) noexcept {
    std::size_t i = 0;
    if (!h.empty() && h[0] == '[') {
        i = h.find(']');
        if (i == std::string_view::npos || i == 1) return false;
        for (std::size_t k = 1; k < i; ++k)
            if (!is_hex(static_cast<unsigned char>(h[k])) && h[k] != ':' && h[k] != '.')
                return false;
        ++i;
    } else {
        // One table lookup per byte, four to a step while all four pass; the loop stops at ':'
        // (port), at '%' or at an invalid byte. A percent-encoded reg-name (rare) is finished
        // and its escapes checked apart.
        const auto* p = reinterpret_cast<const unsigned char*>(h.data());
        auto plain = [p](std::size_t k) { return static_cast<unsigned>(kHostPlain[p[k]]); };
        while (i + 4 <= h.size() && (plain(i) & plain(i + 1) & plain(i + 2) & plain(i + 3))) i += 4;
        while (i < h.size() && kHostPlain[p[i]]) ++i;
        if (i < h.size() && h[i] == '%') [[unlikely]] {
            while (i < h.size() && http::is_regname_char(static_cast<unsigned char>(h[i]))) ++i;
            if (!escapes_valid(h.substr(0, i))) return false;
        }
        if (i == 0 && i < h.size()) return false;  // ":80"
    }
    if (i == h.size()) return true;
    if (h[i] != ':') return false;
    for (++i; i < h.size(); ++i)
        if (static_cast<unsigned char>(h[i] - '0') > 9) return false;
    return true;
}

// RFC 9112 3: the request line ends with SP HTTP-version ("HTTP/" DIGIT "." DIGIT).
bool ends_with_version(const char* p, std::size_t n) noexcept {
    if (n < 9) return false;
    p += n - 9;
    return p[0] == ' ' && std::memcmp(p + 1, "HTTP/", 5) == 0 && p[6] >= '0' && p[6] <= '9' &&
           p[7] == '.' && p[8] >= '0' && p[8] <= '9';
}

constexpr unsigned kSeenPercent = 1, kSeenQuery = 2, kSeenDot = 4;
constexpr std::array<unsigned char, 256> make_target_seen() {
    std::array<unsigned char, 256> t{};
    t['%'] = kSeenPercent;
    t['?'] = kSeenQuery;
    t['.'] = kSeenDot;
    return t;
}
constexpr std::array<unsigned char, 256> kTargetSeen = make_target_seen();

}  // namespace

void RequestParser::reset() noexcept {
    phase_ = Phase::head;
    error_ = Status::BadRequest;
    detail_ = {};
    last_data_ = nullptr;
    scan_ = start_ = line_start_ = line_end_ = head_end_ = consumed_ = 0;
    content_length_ = 0;
    expect_continue_ = false;
    upgrade_ = false;
}

ParseResult RequestParser::parse_target_only(std::string_view target, Request& req) {
    unsigned seen = 0;
    for (char ch : target) {
        const auto c = static_cast<unsigned char>(ch);
        if (!is_target_char(c)) return fail(Status::BadRequest, "invalid character in target");
        seen |= kTargetSeen[c];
    }
    if (target.empty()) return fail(Status::BadRequest, "empty request target");
    if (target[0] != '/' && target != "*") return fail(Status::BadRequest, "not origin-form");
    return parse_target(target, req, seen);
}

ParseResult RequestParser::parse(char* data, std::size_t n, Request& req) {
    switch (phase_) {
        case Phase::head: {
            ParseResult r = find_head_end(data, n);
            if (r != ParseResult::complete) return r;
            last_data_ = data;
            r = parse_head(data, req);
            if (r == ParseResult::error) return r;
            // The driver decides whether the route streams the body (a chunked body would be
            // decoded in place; one over max_body would be refused) before parsing goes on.
            if (pause_body_ && (body_too_large() || phase_ == Phase::body_chunked))
                return ParseResult::incomplete;
            break;
        }
        case Phase::body_length:
        case Phase::body_chunked:
            if (body_too_large()) return fail(Status::PayloadTooLarge, "body too large");
            if (data != last_data_) {
                // The buffer moved: the head's views point at the old bytes. Re-read it.
                // The decoder's progress (bytes already decoded in place) must survive.
                last_data_ = data;
                const Phase keep = phase_;
                const ChunkedDecoder decoder = chunked_;
                if (parse_head(data, req) == ParseResult::error) return ParseResult::error;
                phase_ = keep;
                chunked_ = decoder;
            }
            break;
        case Phase::done:
            return ParseResult::complete;
        case Phase::error:
            return ParseResult::error;
    }
    return parse_body(data, n, req);
}

// RFC 9112 2.2: the head is a sequence of CRLF-terminated lines ending with an empty line.
ParseResult RequestParser::find_head_end(const char* data, std::size_t n) {
    while (scan_ < n) {
        const void* hit = std::memchr(data + scan_, '\n', n - scan_);
        if (!hit) {
            scan_ = n;
            break;
        }
        std::size_t i = static_cast<std::size_t>(static_cast<const char*>(hit) - data);
        scan_ = i + 1;
        if (i == 0 || data[i - 1] != '\r') return fail(Status::BadRequest, "bare LF in head");
        if (i - 1 == line_start_) {
            if (line_end_ == 0) {  // empty line before the request line: ignored
                start_ = line_start_ = i + 1;
                if (start_ > limits_->max_request_line)
                    return fail(Status::BadRequest, "too many empty lines");
                continue;
            }
            head_end_ = i + 1;
            return ParseResult::complete;
        }
        if (line_end_ == 0) {
            line_end_ = i + 1;
            if (line_end_ - start_ - 2 > limits_->max_request_line)
                return fail(Status::UriTooLong, "request line too long");
            // Checked as soon as the line is complete: a line without a version (HTTP/0.9's
            // "GET /") is answered now, not after a header section that will never come.
            if (!ends_with_version(data + start_, i - 1 - start_))
                return fail(Status::BadRequest, "request line without HTTP version");
        } else if (i + 1 - line_end_ > limits_->max_header_bytes) {
            return fail(Status::RequestHeaderFieldsTooLarge, "header section too large");
        }
        line_start_ = i + 1;
    }
    // A CR at the very end is the first half of a CRLF, not content: don't count it.
    const std::size_t end = (n > 0 && data[n - 1] == '\r') ? n - 1 : n;
    if (line_end_ == 0) {
        // RFC 9112 3: a request line starts with a method token. Anything else (a TLS
        // ClientHello on a plain port, binary noise) is answered now, not at the header timeout.
        if (line_start_ < n && !is_tchar(static_cast<unsigned char>(data[line_start_])) &&
            data[line_start_] != '\r')
            return fail(Status::BadRequest, "request line does not start with a method");
        if (end - start_ > limits_->max_request_line)
            return fail(Status::UriTooLong, "request line too long");
    } else if (end - line_end_ > limits_->max_header_bytes) {
        return fail(Status::RequestHeaderFieldsTooLarge, "header section too large");
    }
    return ParseResult::incomplete;
}

ParseResult RequestParser::parse_head(char* data, Request& req) {
    req.reset();
    std::string_view line(data + start_, line_end_ - 2 - start_);
    if (parse_request_line(line, req) == ParseResult::error) return ParseResult::error;
    std::string_view fields(data + line_end_, head_end_ - 2 - line_end_);
    return parse_fields(fields, req);
}

// RFC 9112 3: request-line = method SP request-target SP HTTP-version
ParseResult RequestParser::parse_request_line(std::string_view line, Request& req) {
    std::size_t i = 0;
    while (i < line.size() && is_tchar(static_cast<unsigned char>(line[i]))) ++i;
    if (i == 0 || i == line.size() || line[i] != ' ')
        return fail(Status::BadRequest, "malformed method");
    std::string_view method = line.substr(0, i);
    std::size_t t = ++i;
    // Note which characters that need work later appear at all, so clean targets (most of
    // them) skip those scans.
    unsigned seen = 0;
    while (i < line.size() && is_target_char(static_cast<unsigned char>(line[i]))) {
        seen |= kTargetSeen[static_cast<unsigned char>(line[i])];
        ++i;
    }
    if (i == t) return fail(Status::BadRequest, "empty request target");
    if (i == line.size() || line[i] != ' ')
        return fail(Status::BadRequest, "invalid character in request target or no version");
    std::string_view target = line.substr(t, i - t);
    std::string_view version = line.substr(i + 1);
    // RFC 9112 2.3: HTTP-version = "HTTP" "/" DIGIT "." DIGIT, case-sensitive.
    if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[5] < '0' ||
        version[5] > '9' || version[6] != '.' || version[7] < '0' || version[7] > '9')
        return fail(Status::BadRequest, "malformed HTTP version");
    if (version[5] != '1') return fail(Status::HttpVersionNotSupported, "only HTTP/1.x here");
    req.set_version(version[7] == '0' ? 10 : 11);
    Method m = method_from(method);
    req.set_method(m, method);
    if (m == Method::CONNECT) return fail(Status::NotImplemented, "CONNECT is not supported");
    return parse_target(target, req, seen);
}

// RFC 9112 3.2: origin-form, absolute-form, asterisk-form (authority-form is CONNECT only).
ParseResult RequestParser::parse_target(std::string_view target, Request& req, unsigned seen) {
    if ((seen & kSeenPercent) && !escapes_valid(target))
        return fail(Status::BadRequest, "malformed percent-encoding");
    std::string_view rest = target;
    if (target[0] != '/') {
        if (target == "*") {
            if (req.method() != Method::OPTIONS)
                return fail(Status::BadRequest, "asterisk-form is for OPTIONS only");
            req.set_target(target, target, {});
            return ParseResult::complete;
        }
        std::size_t scheme_len = 0;
        if (target.size() > 7 && ascii::iequals(target.substr(0, 7), "http://")) scheme_len = 7;
        if (target.size() > 8 && ascii::iequals(target.substr(0, 8), "https://")) scheme_len = 8;
        if (scheme_len == 0) return fail(Status::BadRequest, "malformed request target");
        std::string_view after = target.substr(scheme_len);
        std::size_t end = after.find_first_of("/?");
        std::string_view authority = after.substr(0, end);
        if (authority.empty() || !host_valid(authority))
            return fail(Status::BadRequest, "malformed authority");
        req.set_host(authority);  // RFC 9112 3.2.2: replaces the Host field
        rest = end == std::string_view::npos ? std::string_view("/") : after.substr(end);
        if (rest[0] == '?') return fail(Status::BadRequest, "absolute-form without path");
    }
    std::size_t q = (seen & kSeenQuery) ? rest.find('?') : std::string_view::npos;
    std::string_view path = rest.substr(0, q);
    std::string_view query = q == std::string_view::npos ? std::string_view{} : rest.substr(q + 1);
    req.set_target(target, path, query);
    if ((seen & kSeenPercent) && path.find('%') != std::string_view::npos) {
        std::string decoded;
        percent_decode(path, decoded, false);
        if (decoded.find('\0') != std::string::npos)
            return fail(Status::BadRequest, "NUL in decoded path");
        if (has_dot_segment(decoded)) return fail(Status::BadRequest, "dot segment in path");
        req.set_decoded_path(std::move(decoded));
    } else if ((seen & kSeenDot) && has_dot_segment(path)) {
        return fail(Status::BadRequest, "dot segment in path");
    }
    return ParseResult::complete;
}

// RFC 9112 5: field-line = field-name ":" OWS field-value OWS
ParseResult RequestParser::parse_fields(std::string_view fields, Request& req) {
    auto& headers = req.mutable_headers();
    int host_count = 0;
    bool has_cl = false, has_te = false, te_chunked = false, te_last_chunked = false;
    bool te_other = false, te_bad = false, conn_close = false, conn_keep_alive = false;
    std::string_view host;
    const std::size_t n = fields.size();
    std::size_t pos = 0;
    while (pos < n) {
        const char* base = fields.data() + pos;
        // Every field line ends with CRLF inside `fields` (find_head_end saw to the LFs), so
        // the first CR of a line is its end unless it is a bare CR.
        const void* cr = std::memchr(base, '\r', n - pos);
        if (!cr) return fail(Status::BadRequest, "malformed field line");
        std::size_t len = static_cast<std::size_t>(static_cast<const char*>(cr) - base);
        if (pos + len + 1 >= n || base[len + 1] != '\n')
            return fail(Status::BadRequest, "bare CR in field line");
        std::string_view line(base, len);
        pos += len + 2;
        if (line.empty()) return fail(Status::BadRequest, "empty field line");
        if (is_ows(line[0])) return fail(Status::BadRequest, "obs-fold");
        std::size_t c = 0;
        while (c < line.size() && is_tchar(static_cast<unsigned char>(line[c]))) ++c;
        if (c == line.size() || line[c] != ':') {
            return fail(Status::BadRequest, c == 0 ? "empty field name" : "invalid field name");
        }
        if (c == 0) return fail(Status::BadRequest, "empty field name");
        std::string_view name = line.substr(0, c);
        std::size_t v = c + 1;
        while (v < line.size() && is_ows(line[v])) ++v;
        std::size_t e = line.size();
        // Host values are checked against the stricter Host characters below instead.
        const bool is_host = c == 4 && ascii::iequals(line.substr(0, 4), "host");
        if (!is_host && !http::is_field_value(line.data() + v, e - v))
            return fail(Status::BadRequest, "invalid byte in field value");
        while (e > v && is_ows(line[e - 1])) --e;
        std::string_view value = line.substr(v, e - v);
        if (headers.size() >= limits_->max_headers)
            return fail(Status::RequestHeaderFieldsTooLarge, "too many header fields");
        headers.push_back(Header{name, value});

        switch (name.size()) {
            case 4:
                if (is_host) {
                    ++host_count;
                    host = value;
                }
                break;
            case 6:
                if (ascii::iequals(name, "expect")) {
                    if (!ascii::iequals(value, "100-continue"))
                        return fail(Status::ExpectationFailed, "unsupported expectation");
                    expect_continue_ = req.version() == 11;  // RFC 9110 10.1.1: ignored in 1.0
                }
                break;
            case 7:
                if (ascii::iequals(name, "upgrade")) upgrade_ = true;
                break;
            case 10:
                if (ascii::iequals(name, "connection")) {
                    ascii::for_each_list_item(value, [&](std::string_view t) {
                        if (ascii::iequals(t, "close")) conn_close = true;
                        if (ascii::iequals(t, "keep-alive")) conn_keep_alive = true;
                    });
                }
                break;
            case 14:
                if (ascii::iequals(name, "content-length")) {
                    if (has_cl) return fail(Status::BadRequest, "repeated Content-Length");
                    has_cl = true;
                    if (value.empty() || value.size() > 19)
                        return fail(Status::BadRequest, "malformed Content-Length");
                    std::uint64_t cl = 0;
                    for (char d : value) {
                        if (d < '0' || d > '9')
                            return fail(Status::BadRequest, "malformed Content-Length");
                        cl = cl * 10 + std::uint64_t(d - '0');
                    }
                    content_length_ = cl;
                }
                break;
            case 17:
                if (ascii::iequals(name, "transfer-encoding")) {
                    has_te = true;
                    ascii::for_each_list_item(value, [&](std::string_view t) {
                        if (ascii::iequals(t, "chunked")) {
                            if (te_chunked) te_bad = true;  // chunked applied twice
                            te_chunked = te_last_chunked = true;
                        } else {
                            if (!all_tchar(t)) te_bad = true;
                            te_other = true;
                            te_last_chunked = false;
                        }
                    });
                }
                break;
        }
    }

    // RFC 9112 3.2: exactly one valid Host in HTTP/1.1, at most one in HTTP/1.0.
    if (host_count > 1) return fail(Status::BadRequest, "repeated Host");
    if (host_count == 0 && req.version() == 11) return fail(Status::BadRequest, "missing Host");
    if (!host_valid(host)) return fail(Status::BadRequest, "invalid Host");
    if (req.host().empty()) req.set_host(host);

    // RFC 9112 6.1-6.3: message body framing.
    if (has_te) {
        if (has_cl) return fail(Status::BadRequest, "Content-Length with Transfer-Encoding");
        if (req.version() == 10) return fail(Status::BadRequest, "Transfer-Encoding in HTTP/1.0");
        if (te_bad || !te_last_chunked)
            return fail(Status::BadRequest, "chunked must be the final transfer coding, once");
        if (te_other) return fail(Status::NotImplemented, "unsupported transfer coding");
        phase_ = Phase::body_chunked;
        chunked_.reset(limits_);
    } else if (has_cl) {
        // A body over max_body may still suit a streaming route: the driver decides once it
        // knows the route (body_too_large()); parsing it further here fails.
        if (content_length_ > limits_->max_body &&
            (!pause_body_ || content_length_ > limits_->max_streamed_body))
            return fail(Status::PayloadTooLarge, "body too large");
        phase_ = content_length_ ? Phase::body_length : Phase::done;
    } else {
        Method m = req.method();
        if (limits_->require_length_for_body_methods &&
            (m == Method::POST || m == Method::PUT || m == Method::PATCH))
            return fail(Status::LengthRequired, "Content-Length required");
        phase_ = Phase::done;
    }
    if (phase_ == Phase::done) expect_continue_ = false;

    // RFC 9112 9.3: persistence.
    req.set_keep_alive(req.version() == 11 ? !conn_close : (conn_keep_alive && !conn_close));
    return ParseResult::complete;
}

ParseResult RequestParser::parse_body(char* data, std::size_t n, Request& req) {
    switch (phase_) {
        case Phase::body_length: {
            std::size_t need = head_end_ + static_cast<std::size_t>(content_length_);
            if (n < need) return ParseResult::incomplete;
            req.set_body({data + head_end_, static_cast<std::size_t>(content_length_)});
            consumed_ = need;
            break;
        }
        case Phase::body_chunked: {
            switch (chunked_.feed(data + head_end_, n - head_end_)) {
                case ChunkedDecoder::Result::need_more:
                    return ParseResult::incomplete;
                case ChunkedDecoder::Result::error:
                    return fail(chunked_.error(), "malformed chunked body");
                case ChunkedDecoder::Result::done:
                    break;
            }
            req.set_body({data + head_end_, chunked_.decoded_size()});
            consumed_ = head_end_ + chunked_.raw_size();
            break;
        }
        default:
            consumed_ = head_end_;
            break;
    }
    phase_ = Phase::done;
    return ParseResult::complete;
}

}  // namespace vela
