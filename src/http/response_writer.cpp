#include "vela/http/response_writer.hpp"

#include <charconv>
#include <cstring>

namespace vela {

namespace {

struct Cursor {
    char* p;
    void put(std::string_view s) noexcept {
        std::memcpy(p, s.data(), s.size());
        p += s.size();
    }
};

}  // namespace

void write_response(Buffer& out, const Response& r, const WriteOptions& o) {
    const int status = code(r.status());
    const std::string_view reason = reason_phrase(r.status());
    const std::string_view ctype = r.builtin_content_type();
    const std::string_view block = r.header_block();
    // RFC 9110 8.6: no Content-Length in 1xx and 204 responses; 304 has no body.
    const bool bodiless = status < 200 || status == 204 || status == 304;
    const std::string_view body = (bodiless || o.head) ? std::string_view{} : r.body();

    std::size_t need = 9 + 4 + reason.size() + 2 + 14 + 6 + o.date.size() + 2 + block.size() +
                       2 + 24 + 26 + body.size();
    if (!ctype.empty()) need += 16 + ctype.size();
    out.ensure_writable(need);

    Cursor c{out.write_ptr()};
    c.put("HTTP/1.1 ");
    char digits[3] = {char('0' + status / 100 % 10), char('0' + status / 10 % 10), char('0' + status % 10)};
    c.put({digits, 3});
    *c.p++ = ' ';
    c.put(reason);
    c.put("\r\nServer: vela\r\nDate: ");
    c.put(o.date);
    c.put("\r\n");
    if (!ctype.empty()) {
        c.put("Content-Type: ");
        c.put(ctype);
        c.put("\r\n");
    }
    c.put(block);
    if (!bodiless) {
        c.put("Content-Length: ");
        char num[24];
        auto [end, ec] = std::to_chars(num, num + sizeof num, r.body().size());
        (void)ec;
        c.put({num, static_cast<std::size_t>(end - num)});
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

}  // namespace vela
