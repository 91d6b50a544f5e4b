#include "vela/http/response_writer.hpp"

#include <charconv>
#include <cstring>
#include <string>

#include "vela/base/ascii.hpp"
#include "vela/http/char_class.hpp"

namespace vela {

namespace {

struct Cursor {
    char* p;
    void put(std::string_view s) noexcept {
        if (s.empty()) return;  // an empty view may have a null data()
        std::memcpy(p, s.data(), s.size());
        p += s.size();
    }
};

// "HTTP/1.1 200 OK\r\nServer: vela\r\nDate: " for every status code, formatted once.
struct StatusLines {
    std::string text[1000];
    StatusLines() {
        for (int c = 100; c < 1000; ++c) {
            const char digits[3] = {char('0' + c / 100), char('0' + c / 10 % 10),
                                    char('0' + c % 10)};
            text[c].append("HTTP/1.1 ").append(digits, 3).append(" ");
            text[c]
                .append(reason_phrase(static_cast<Status>(c)))
                .append("\r\nServer: vela\r\nDate: ");
        }
    }
};

std::string_view status_line(int status) {
    static const StatusLines lines;
    if (status < 100 || status > 999) status = 500;
    return lines.text[status];
}

// The whole "Content-Type: ...\r\n" line for the mime:: constants (one copy instead of three).
std::string_view content_type_line(std::string_view ct) noexcept {
    if (ct.data() == mime::text.data()) return "Content-Type: text/plain; charset=utf-8\r\n";
    if (ct.data() == mime::json.data()) return "Content-Type: application/json\r\n";
    if (ct.data() == mime::html.data()) return "Content-Type: text/html; charset=utf-8\r\n";
    return {};
}

}  // namespace

void write_response(Buffer& out, const Response& r, const WriteOptions& o) {
    const int status = wire_status(r.status());
    const std::string_view head = status_line(status);
    const std::string_view ctype = r.builtin_content_type();
    const std::string_view block = r.header_block();
    // RFC 9110 8.6: no Content-Length in 1xx and 204 responses; 304 has no body.
    const bool bodiless = !status_has_body(status);
    const std::string_view body =
        (bodiless || o.head || o.streamed) ? std::string_view{} : std::string_view(r.body());

    // Fixed parts: Date value + CRLF, Content-Type line framing, Content-Length line,
    // Connection line, final CRLF.
    const std::size_t need = head.size() + o.date.size() + 2 + (16 + ctype.size()) + block.size() +
                             (16 + 20 + 2) + 24 + 2 + body.size();
    out.ensure_writable(need);

    Cursor c{out.write_ptr()};
    c.put(head);
    c.put(o.date);
    c.put("\r\n");
    if (!ctype.empty()) {
        if (std::string_view line = content_type_line(ctype); !line.empty()) {
            c.put(line);
        } else {
            c.put("Content-Type: ");
            c.put(ctype);
            c.put("\r\n");
        }
    }
    c.put(block);
    if (o.streamed && !bodiless) {
        if (!o.http10) c.put("Transfer-Encoding: chunked\r\n");
    } else if (!bodiless) {
        c.put("Content-Length: ");
        auto [end, ec] = std::to_chars(
            c.p, c.p + 20, o.length < 0 ? r.body().size() : static_cast<std::uint64_t>(o.length));
        (void)ec;
        c.p = end;
        c.put("\r\n");
    }
    if (!o.keep_alive) {
        c.put("Connection: close\r\n");
    } else if (o.http10) {
        c.put("Connection: keep-alive\r\n");
    }
    c.put("\r\n");
    c.put(body);
    out.commit(static_cast<std::size_t>(c.p - out.write_ptr()));
}

void write_continue(Buffer& out) { out.append("HTTP/1.1 100 Continue\r\n\r\n"); }

void write_chunk(Buffer& out, std::string_view data, bool chunked) {
    if (data.empty()) return;  // an empty chunk would end the body
    if (!chunked) {
        out.append(data);
        return;
    }
    char size[20];
    auto [end, ec] = std::to_chars(size, size + sizeof size, data.size(), 16);
    (void)ec;
    out.ensure_writable(static_cast<std::size_t>(end - size) + data.size() + 4);
    out.append(size, static_cast<std::size_t>(end - size));
    out.append("\r\n");
    out.append(data);
    out.append("\r\n");
}

void write_last_chunk(Buffer& out) { out.append("0\r\n\r\n"); }

void write_last_chunk(Buffer& out, const Response::TrailerFields* trailers) {
    if (!trailers || trailers->empty()) return write_last_chunk(out);
    out.append("0\r\n");
    for (const auto& [name, value] : *trailers) {
        if (!trailer_field_allowed(name, value)) continue;
        out.append(name);
        out.append(": ");
        out.append(ascii::trim_ows(value));
        out.append("\r\n");
    }
    out.append("\r\n");
}

bool trailer_field_allowed(std::string_view name, std::string_view value) noexcept {
    if (name.empty()) return false;
    for (const char c : name)
        if (!http::is_tchar(static_cast<unsigned char>(c))) return false;
    for (const char c : value)
        if (!http::is_field_char(static_cast<unsigned char>(c))) return false;
    static constexpr std::string_view kRefused[] = {"age",
                                                    "authorization",
                                                    "cache-control",
                                                    "connection",
                                                    "content-encoding",
                                                    "content-length",
                                                    "content-range",
                                                    "content-type",
                                                    "cookie",
                                                    "date",
                                                    "expect",
                                                    "expires",
                                                    "host",
                                                    "keep-alive",
                                                    "location",
                                                    "max-forwards",
                                                    "pragma",
                                                    "proxy-authenticate",
                                                    "proxy-authorization",
                                                    "proxy-connection",
                                                    "range",
                                                    "retry-after",
                                                    "set-cookie",
                                                    "te",
                                                    "trailer",
                                                    "transfer-encoding",
                                                    "upgrade",
                                                    "vary",
                                                    "warning",
                                                    "www-authenticate"};
    for (const std::string_view r : kRefused)
        if (ascii::iequals(name, r)) return false;
    // Conditionals (If-Match, If-None-Match, If-Modified-Since, If-Range, ...).
    return !(name.size() > 3 && ascii::iequals(name.substr(0, 3), "if-"));
}

}  // namespace vela
