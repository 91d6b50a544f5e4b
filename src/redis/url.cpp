// redis://[[user]:password@]host[:port][/db] (the IANA "redis" URI scheme, as Redis clients
// read it). User and password are percent-decoded; nothing else of the URL is.
#include <charconv>
#include <stdexcept>
#include <string>

#include "vela/redis/client.hpp"

namespace vela::redis {

namespace {

[[noreturn]] void bad(std::string_view url, std::string_view why) {
    std::string m = "invalid redis URL: ";
    m += why;
    m += " (expected redis://[[user]:password@]host[:port][/db])";
    (void)url;  // not echoed: it may hold a password
    throw std::invalid_argument(m);
}

int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string percent_decode(std::string_view url, std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) bad(url, "truncated %-escape in user or password");
        const int h = hex(s[i + 1]);
        const int l = hex(s[i + 2]);
        if (h < 0 || l < 0) bad(url, "bad %-escape in user or password");
        out += static_cast<char>(h * 16 + l);
        i += 2;
    }
    return out;
}

}  // namespace

Url Url::parse(std::string_view url) {
    Url u;
    constexpr std::string_view scheme = "redis://";
    if (url.size() >= 9 && url.substr(0, 9) == "rediss://")
        bad(url, "TLS (rediss://) is not supported");
    if (url.substr(0, scheme.size()) != scheme) bad(url, "it must start with redis://");
    std::string_view rest = url.substr(scheme.size());

    // Authority ends at the first '/' (or the end); a '?' or '#' is not supported.
    const std::size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path =
        slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (rest.find_first_of("?#") != std::string_view::npos)
        bad(url, "query and fragment are not supported");

    // The last '@' splits userinfo from the host (a password may contain '@' only escaped,
    // but being lenient costs nothing).
    const std::size_t at = authority.rfind('@');
    if (at != std::string_view::npos) {
        std::string_view info = authority.substr(0, at);
        authority = authority.substr(at + 1);
        const std::size_t colon = info.find(':');
        if (colon == std::string_view::npos) {
            // redis://secret@host: a lone userinfo is the password (as redis-cli reads it).
            u.password = percent_decode(url, info);
        } else {
            u.user = percent_decode(url, info.substr(0, colon));
            u.password = percent_decode(url, info.substr(colon + 1));
        }
        if (u.password.empty() && !u.user.empty()) bad(url, "a user needs a password");
    }

    std::string_view port;
    if (!authority.empty() && authority.front() == '[') {
        const std::size_t close = authority.find(']');
        if (close == std::string_view::npos) bad(url, "unclosed [ in an IPv6 host");
        u.host = std::string(authority.substr(1, close - 1));
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') bad(url, "junk after the IPv6 host");
            port = after.substr(1);
            if (port.empty()) bad(url, "empty port");
        }
    } else {
        const std::size_t colon = authority.find(':');
        u.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) {
            port = authority.substr(colon + 1);
            if (port.empty()) bad(url, "empty port");
        }
    }
    if (u.host.empty()) bad(url, "no host");
    for (char c : u.host) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' || c == ':' ||
                        c == '%';
        if (!ok) bad(url, "bad character in the host");
    }
    if (!port.empty()) {
        unsigned v = 0;
        auto r = std::from_chars(port.data(), port.data() + port.size(), v);
        if (r.ec != std::errc() || r.ptr != port.data() + port.size() || v == 0 || v > 65535)
            bad(url, "the port must be a number from 1 to 65535");
        u.port = static_cast<std::uint16_t>(v);
    }
    if (!path.empty()) {
        int db = 0;
        auto r = std::from_chars(path.data(), path.data() + path.size(), db);
        if (r.ec != std::errc() || r.ptr != path.data() + path.size() || db < 0)
            bad(url, "the path must be a database number");
        u.db = db;
    }
    return u;
}

std::string Url::address() const {
    std::string s;
    if (host.find(':') != std::string::npos) {
        s += '[';
        s += host;
        s += ']';
    } else {
        s += host;
    }
    s += ':';
    s += std::to_string(port);
    return s;
}

}  // namespace vela::redis
