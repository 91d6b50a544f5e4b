#pragma once
// Reading what `curl -i` prints: one or more response heads (interim ones such as the 101 of
// an h2c Upgrade or a 100 Continue, then the final one), then the body curl already decoded
// from its framing. Works for every protocol curl speaks ("HTTP/1.1 200", "HTTP/2 200"), which
// is why it is not tests/support/http_response.hpp's strict HTTP/1.1 parser.

#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "support/http_response.hpp"

namespace vela::test {

/// The final response curl printed.
struct CurlReply {
    int status = 0;
    std::string version;                         // "HTTP/1.1", "HTTP/2"
    std::map<std::string, std::string> headers;  // names lower-cased; the last of a repeated one
    std::string body;
    bool upgraded = false;  // a 101 came first
    std::string raw;        // curl's output (up to the limit given to parse_curl_i)

    /// The header named `name` (lower case); empty if absent.
    std::string header(const std::string& name) const {
        auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
    /// Whether the header named `name` (lower case) is present.
    bool has(const std::string& name) const { return headers.count(name) != 0; }
};

/// Parses `curl -i` output, skipping interim heads; keeps up to `keep_raw` bytes of it in raw
/// (for failure messages).
inline CurlReply parse_curl_i(std::string_view out, std::size_t keep_raw = std::string_view::npos) {
    CurlReply r;
    r.raw = std::string(out.substr(0, keep_raw));
    std::size_t pos = 0;
    while (out.substr(pos).starts_with("HTTP/")) {
        const std::size_t end = out.find("\r\n\r\n", pos);
        if (end == std::string_view::npos) return r;
        const std::string_view head = out.substr(pos, end - pos);
        const std::size_t sp = head.find(' ');
        r.version = std::string(head.substr(0, sp));
        r.status = sp == std::string_view::npos
                       ? 0
                       : std::atoi(std::string(head.substr(sp + 1, 3)).c_str());
        r.headers.clear();
        std::string_view rest = head.substr(std::min(head.size(), head.find("\r\n")));
        while (!rest.empty()) {
            rest.remove_prefix(2);  // the CRLF before each field line
            const std::size_t le = rest.find("\r\n");
            const std::string_view line = rest.substr(0, le);
            rest.remove_prefix(le == std::string_view::npos ? rest.size() : le);
            const std::size_t colon = line.find(':');
            if (colon == std::string_view::npos) continue;
            std::string name(line.substr(0, colon));
            for (char& c : name) c = lower_ascii(c);
            std::string_view value = line.substr(colon + 1);
            while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
                value.remove_prefix(1);
            while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
                value.remove_suffix(1);
            r.headers[name] = std::string(value);
        }
        pos = end + 4;
        if (r.status >= 200) break;
        if (r.status == 101) r.upgraded = true;
    }
    r.body = std::string(out.substr(pos));
    return r;
}

}  // namespace vela::test
