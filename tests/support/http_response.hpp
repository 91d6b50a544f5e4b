#pragma once
// Reading HTTP/1.1 responses in tests: one response parsed from raw bytes (status line, headers,
// a body framed by Content-Length, chunked or the end of the connection), header lookup and
// counting by case-insensitive name, and splitting a head from what follows it.
//
// The parser is deliberately independent of vela's own code: the tests check the server's
// bytes against this reading of RFC 9112, not against itself. tests/support/support_test.cpp
// checks the parser, so a test that fails points at the server.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vela::test {

/// ASCII lower case; other bytes unchanged.
inline char lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? char(c + ('a' - 'A')) : c; }

/// Equal ignoring ASCII case (header names, tokens).
inline bool iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower_ascii(a[i]) != lower_ascii(b[i])) return false;
    return true;
}

/// Whether `hay` contains `needle`, ignoring ASCII case.
inline bool icontains(std::string_view hay, std::string_view needle) {
    if (needle.size() > hay.size()) return false;
    for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
        if (iequal(hay.substr(i, needle.size()), needle)) return true;
    return false;
}

/// One response as received.
struct HttpResponse {
    std::string version;  // "HTTP/1.1"
    int status = 0;
    std::string reason;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    bool chunked = false;  // the body came with Transfer-Encoding: chunked

    /// The first header named `name` (case-insensitive); empty if absent.
    std::string header(std::string_view name) const {
        for (const auto& [n, v] : headers)
            if (iequal(n, name)) return v;
        return {};
    }
    bool has_header(std::string_view name) const { return header_count(name) > 0; }
    std::size_t header_count(std::string_view name) const {
        std::size_t k = 0;
        for (const auto& h : headers)
            if (iequal(h.first, name)) ++k;
        return k;
    }
    /// True when the server announced it closes the connection.
    bool announces_close() const { return icontains(header("Connection"), "close"); }
};

/// Result of parsing bytes as one response.
enum class ParseStatus { complete, incomplete, malformed };

namespace detail {

inline bool parse_size(std::string_view s, std::uint64_t& out, int base) {
    if (s.empty() || s.size() > 16) return false;
    std::uint64_t v = 0;
    for (char c : s) {
        int d;
        if (c >= '0' && c <= '9') {
            d = c - '0';
        } else if (base == 16 && c >= 'a' && c <= 'f') {
            d = c - 'a' + 10;
        } else if (base == 16 && c >= 'A' && c <= 'F') {
            d = c - 'A' + 10;
        } else {
            return false;
        }
        v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    }
    out = v;
    return true;
}

// Decodes a chunked body starting at buf[pos]; on complete, `end` is one past the framing.
inline ParseStatus parse_chunked(std::string_view buf, std::size_t pos, std::string& body,
                                 std::size_t& end, std::string& why) {
    body.clear();
    for (;;) {
        std::size_t eol = buf.find("\r\n", pos);
        if (eol == std::string_view::npos) return ParseStatus::incomplete;
        std::string_view line = buf.substr(pos, eol - pos);
        std::string_view size = line.substr(0, line.find(';'));
        while (!size.empty() && (size.back() == ' ' || size.back() == '\t')) size.remove_suffix(1);
        std::uint64_t n = 0;
        if (!parse_size(size, n, 16)) {
            why = "bad chunk size line: " + std::string(line);
            return ParseStatus::malformed;
        }
        pos = eol + 2;
        if (n == 0) break;
        if (buf.size() < pos + n + 2) return ParseStatus::incomplete;
        body.append(buf.substr(pos, n));
        if (buf.substr(pos + n, 2) != "\r\n") {
            why = "chunk data not followed by CRLF";
            return ParseStatus::malformed;
        }
        pos += n + 2;
    }
    for (;;) {  // trailer section, ended by an empty line
        std::size_t eol = buf.find("\r\n", pos);
        if (eol == std::string_view::npos) return ParseStatus::incomplete;
        bool empty = eol == pos;
        pos = eol + 2;
        if (empty) break;
    }
    end = pos;
    return ParseStatus::complete;
}

}  // namespace detail

/// Parses one response at the start of `buf`. `head_request`: the request was HEAD, so no
/// body follows whatever the headers say. `at_eof`: no more bytes will come (a response
/// without Content-Length or chunked framing then ends here). On complete, `consumed` is the
/// response's length.
inline ParseStatus parse_response(std::string_view buf, bool head_request, bool at_eof,
                                  HttpResponse& out, std::size_t& consumed, std::string& why) {
    std::size_t head_end = buf.find("\r\n\r\n");
    if (head_end == std::string_view::npos) {
        if (buf.size() > 64 * 1024) {
            why = "response head larger than 64 KiB";
            return ParseStatus::malformed;
        }
        return ParseStatus::incomplete;
    }
    out = HttpResponse{};
    std::string_view head = buf.substr(0, head_end + 2);
    std::size_t eol = head.find("\r\n");
    std::string_view status_line = head.substr(0, eol);
    // status-line = HTTP-version SP status-code SP [ reason-phrase ]
    if (status_line.size() < 12 || status_line.substr(0, 5) != "HTTP/" || status_line[8] != ' ' ||
        (status_line.size() > 12 && status_line[12] != ' ')) {
        why = "malformed status line: " + std::string(status_line);
        return ParseStatus::malformed;
    }
    out.version = std::string(status_line.substr(0, 8));
    std::uint64_t code = 0;
    if (!detail::parse_size(status_line.substr(9, 3), code, 10) || code < 100) {
        why = "malformed status code: " + std::string(status_line);
        return ParseStatus::malformed;
    }
    out.status = static_cast<int>(code);
    if (status_line.size() > 13) out.reason = std::string(status_line.substr(13));
    std::size_t pos = eol + 2;
    while (pos < head.size()) {
        std::size_t e = head.find("\r\n", pos);
        std::string_view line = head.substr(pos, e - pos);
        pos = e + 2;
        std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0 || line.find_first_of(" \t") < colon) {
            why = "malformed header line: " + std::string(line);
            return ParseStatus::malformed;
        }
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
            value.remove_suffix(1);
        out.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
    }
    const std::size_t body_start = head_end + 4;
    const bool no_body = head_request || out.status < 200 || out.status == 204 || out.status == 304;
    if (no_body) {
        consumed = body_start;
        return ParseStatus::complete;
    }
    if (out.header_count("Content-Length") > 1) {
        why = "repeated Content-Length in response";
        return ParseStatus::malformed;
    }
    if (icontains(out.header("Transfer-Encoding"), "chunked")) {
        if (out.has_header("Content-Length")) {
            why = "response has both Content-Length and chunked";
            return ParseStatus::malformed;
        }
        out.chunked = true;
        return detail::parse_chunked(buf, body_start, out.body, consumed, why);
    }
    if (out.has_header("Content-Length")) {
        std::uint64_t n = 0;
        if (!detail::parse_size(out.header("Content-Length"), n, 10)) {
            why = "malformed Content-Length: " + out.header("Content-Length");
            return ParseStatus::malformed;
        }
        if (buf.size() < body_start + n) return ParseStatus::incomplete;
        out.body = std::string(buf.substr(body_start, n));
        consumed = body_start + n;
        return ParseStatus::complete;
    }
    // No framing: the body runs to the end of the connection (RFC 9112 6.3 rule 8).
    if (!at_eof) return ParseStatus::incomplete;
    out.body = std::string(buf.substr(body_start));
    consumed = buf.size();
    return ParseStatus::complete;
}

/// How many lines of a CRLF-separated header block (as Response::header_block() gives, or a
/// response head without its status line) are named `name` (case-insensitive).
inline std::size_t count_header_lines(std::string_view block, std::string_view name) {
    std::size_t n = 0;
    while (!block.empty()) {
        const std::size_t eol = block.find("\r\n");
        const std::string_view line = block.substr(0, eol);
        block.remove_prefix(eol == std::string_view::npos ? block.size() : eol + 2);
        const std::size_t colon = line.find(':');
        if (colon == name.size() && iequal(line.substr(0, colon), name)) ++n;
    }
    return n;
}

/// Splits raw bytes at the first empty line: the head (its last CRLF kept) and everything
/// after it. Without an empty line, all of `raw` is the head and the rest is empty.
inline std::pair<std::string, std::string> split_head(std::string_view raw) {
    const std::size_t end = raw.find("\r\n\r\n");
    if (end == std::string_view::npos) return {std::string(raw), {}};
    return {std::string(raw.substr(0, end + 2)), std::string(raw.substr(end + 4))};
}

}  // namespace vela::test
