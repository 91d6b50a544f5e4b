#include "vela/client/url.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

#include "vela/base/ascii.hpp"
#include "vela/http/request.hpp"

namespace vela::http {

namespace {

[[noreturn]] void bad(std::string_view url, std::string_view why) {
    throw std::invalid_argument("bad URL \"" + std::string(url.substr(0, 200)) +
                                "\": " + std::string(why));
}

bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// unreserved / sub-delims of RFC 3986 2.2-2.3, what a reg-name may hold besides pct-encoded.
bool is_host_char(char c) noexcept {
    if (is_alpha(c) || is_digit(c)) return true;
    switch (c) {
        case '-':
        case '.':
        case '_':
        case '~':
        case '!':
        case '$':
        case '&':
        case '\'':
        case '(':
        case ')':
        case '*':
        case '+':
        case ',':
        case ';':
        case '=':
            return true;
        default:
            return false;
    }
}

// Percent-decodes `s`; false on a malformed escape.
bool pct_decode(std::string_view s, std::string& out) {
    out.clear();
    return percent_decode(s, out, false);
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = ascii::lower(c);
    return out;
}

// The path and query as a request line may carry them: control bytes are refused, a space
// and bytes past ASCII are percent-encoded (as browsers send them), the rest goes as written.
// True for the bytes check_target() refuses or encodes.
bool target_special(unsigned char c) noexcept {
    return c < 0x21 || c > 0x7E || c == '\\' || c == '"' || c == '<' || c == '>' || c == '^' ||
           c == '`' || c == '{' || c == '|' || c == '}';
}

void check_target(std::string_view url, std::string_view in, std::string& out) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    // Most targets need nothing done: copied at once.
    if (std::none_of(in.begin(), in.end(),
                     [](char ch) { return target_special(static_cast<unsigned char>(ch)); })) {
        out.assign(in);
        return;
    }
    out.clear();
    for (const char ch : in) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7F) bad(url, "control character in the path or query");
        if (c == '\\') bad(url, "backslash in the path (write '/')");
        if (c == ' ' || c > 0x7E || c == '"' || c == '<' || c == '>' || c == '^' || c == '`' ||
            c == '{' || c == '|' || c == '}') {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        } else {
            out += ch;
        }
    }
}

// RFC 3986 5.2.4: removes "." and ".." segments from an absolute path.
std::string remove_dot_segments(std::string_view path) {
    std::string out;
    while (!path.empty()) {
        if (path.starts_with("../")) {
            path.remove_prefix(3);
        } else if (path.starts_with("./")) {
            path.remove_prefix(2);
        } else if (path.starts_with("/./")) {
            path.remove_prefix(2);
        } else if (path == "/.") {
            path = "/";
        } else if (path.starts_with("/../") || path == "/..") {
            path = path.size() == 3 ? std::string_view("/") : path.substr(3);
            const std::size_t slash = out.rfind('/');
            out.erase(slash == std::string::npos ? 0 : slash);
        } else if (path == "." || path == "..") {
            path = {};
        } else {
            const std::size_t next = path.find('/', 1);
            const std::size_t n = next == std::string_view::npos ? path.size() : next;
            out.append(path.substr(0, n));
            path.remove_prefix(n);
        }
    }
    return out;
}

bool has_scheme(std::string_view ref) noexcept {
    if (ref.empty() || !is_alpha(ref[0])) return false;
    for (std::size_t i = 1; i < ref.size(); ++i) {
        const char c = ref[i];
        if (c == ':') return true;
        if (!is_alpha(c) && !is_digit(c) && c != '+' && c != '-' && c != '.') return false;
    }
    return false;
}

}  // namespace

std::uint16_t default_port(Scheme s) noexcept {
    switch (s) {
        case Scheme::http:
        case Scheme::ws:
            return 80;
        case Scheme::https:
        case Scheme::wss:
            return 443;
        case Scheme::http_unix:
            return 0;
    }
    return 0;
}

Url Url::parse(std::string_view url) {
    Url u;
    const std::size_t colon = url.find("://");
    if (colon == std::string_view::npos || !has_scheme(url.substr(0, colon + 1)))
        bad(url, "not an absolute URL (write http://host/path)");
    const std::string_view scheme = url.substr(0, colon);
    if (ascii::iequals(scheme, "http"))
        u.scheme = Scheme::http;
    else if (ascii::iequals(scheme, "https"))
        u.scheme = Scheme::https;
    else if (ascii::iequals(scheme, "http+unix"))
        u.scheme = Scheme::http_unix;
    else if (ascii::iequals(scheme, "ws"))
        u.scheme = Scheme::ws;
    else if (ascii::iequals(scheme, "wss"))
        u.scheme = Scheme::wss;
    else
        bad(url, "unsupported scheme \"" + lower(scheme) + "\" (http, https, http+unix, ws, wss)");
    std::string_view rest = url.substr(colon + 3);
    if (const std::size_t hash = rest.find('#'); hash != std::string_view::npos)
        rest = rest.substr(0, hash);
    std::size_t auth_end = 0;  // the first '/' or '?' (find_first_of walks the set per byte)
    while (auth_end < rest.size() && rest[auth_end] != '/' && rest[auth_end] != '?') ++auth_end;
    if (auth_end == rest.size()) auth_end = std::string_view::npos;
    std::string_view authority = rest.substr(0, auth_end);
    const std::string_view target =
        auth_end == std::string_view::npos ? std::string_view() : rest.substr(auth_end);
    if (authority.find('\\') != std::string_view::npos) bad(url, "backslash in the host");
    if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
        const std::string_view info = authority.substr(0, at);
        authority = authority.substr(at + 1);
        const std::size_t c = info.find(':');
        if (!pct_decode(info.substr(0, c), u.user) ||
            (c != std::string_view::npos && !pct_decode(info.substr(c + 1), u.password)))
            bad(url, "malformed percent-escape in the user information");
        u.has_userinfo = true;
    }
    std::string_view port_text;
    if (u.scheme == Scheme::http_unix) {
        if (!pct_decode(authority, u.host) || u.host.empty() || u.host[0] != '/')
            bad(url,
                "http+unix needs the socket's absolute path, percent-encoded "
                "(http+unix://%2Frun%2Fapp.sock/path)");
        u.port = 0;
    } else if (!authority.empty() && authority[0] == '[') {
        const std::size_t close = authority.find(']');
        if (close == std::string_view::npos) bad(url, "unclosed '[' in the host");
        u.host = std::string(authority.substr(1, close - 1));
        in6_addr a6{};
        if (::inet_pton(AF_INET6, u.host.c_str(), &a6) != 1) bad(url, "malformed IPv6 address");
        const std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after[0] != ':') bad(url, "unexpected text after the IPv6 address");
            port_text = after.substr(1);
        }
    } else {
        const std::size_t c = authority.rfind(':');
        const std::string_view host = authority.substr(0, c);
        if (c != std::string_view::npos) port_text = authority.substr(c + 1);
        if (host.empty()) bad(url, "no host");
        if (host.find('%') == std::string_view::npos) {
            u.host.assign(host);
        } else if (!pct_decode(host, u.host)) {
            bad(url, "malformed percent-escape in the host");
        }
        for (char& ch : u.host) {
            if (!is_host_char(ch)) bad(url, "character not allowed in a host name");
            ch = ascii::lower(ch);
        }
    }
    if (u.scheme != Scheme::http_unix) {
        u.port = default_port(u.scheme);
        if (!port_text.empty()) {
            unsigned v = 0;
            const auto [p, ec] =
                std::from_chars(port_text.data(), port_text.data() + port_text.size(), v);
            if (ec != std::errc() || p != port_text.data() + port_text.size() || v == 0 ||
                v > 65535)
                bad(url, "malformed port");
            u.port = static_cast<std::uint16_t>(v);
        }
    }
    if (target.empty()) {
        u.target.assign(1, '/');
    } else if (target[0] == '?') {
        std::string t;
        check_target(url, target, t);
        u.target = "/" + t;
    } else {
        check_target(url, target, u.target);
    }
    return u;
}

Url Url::resolve(std::string_view ref) const {
    if (const std::size_t hash = ref.find('#'); hash != std::string_view::npos)
        ref = ref.substr(0, hash);
    if (has_scheme(ref)) return parse(ref);
    if (ref.starts_with("//")) {
        const std::string s = to_string();
        return parse(std::string(s.substr(0, s.find("://") + 1)) + std::string(ref));
    }
    Url u = *this;
    u.user.clear();
    u.password.clear();
    u.has_userinfo = false;
    const std::string_view base_path =
        std::string_view(target).substr(0, std::string_view(target).find('?'));
    std::string raw;
    if (ref.empty()) {
        return u;
    } else if (ref[0] == '/') {
        const std::size_t q = ref.find('?');
        raw = remove_dot_segments(ref.substr(0, q));
        if (q != std::string_view::npos) raw += ref.substr(q);
    } else if (ref[0] == '?') {
        raw = std::string(base_path) + std::string(ref);
    } else {
        const std::size_t q = ref.find('?');
        std::string merged(base_path.substr(0, base_path.rfind('/') + 1));
        merged += ref.substr(0, q);
        raw = remove_dot_segments(merged);
        if (raw.empty() || raw[0] != '/') raw.insert(raw.begin(), '/');
        if (q != std::string_view::npos) raw += ref.substr(q);
    }
    check_target(ref, raw, u.target);
    return u;
}

bool Url::host_is_ip() const noexcept {
    if (scheme == Scheme::http_unix) return false;
    in6_addr a6{};
    in_addr a4{};
    return ::inet_pton(AF_INET, host.c_str(), &a4) == 1 ||
           ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

namespace {
// Appends host[:port] (an IPv6 host in brackets); the port only when `port_always` or it is not
// the scheme's default.
void append_authority(std::string& out, const Url& u, bool port_always) {
    const bool v6 = u.host.find(':') != std::string::npos;
    if (v6) out += '[';
    out += u.host;
    if (v6) out += ']';
    if (port_always || u.port != default_port(u.scheme)) {
        char digits[8];
        digits[0] = ':';
        const auto r = std::to_chars(digits + 1, digits + sizeof digits, u.port);
        out.append(digits, static_cast<std::size_t>(r.ptr - digits));
    }
}
}  // namespace

std::string Url::authority() const {
    if (scheme == Scheme::http_unix) return "localhost";
    std::string a;
    a.reserve(host.size() + 8);
    append_authority(a, *this, false);
    return a;
}

std::string Url::origin() const {
    std::string o;
    switch (scheme) {
        case Scheme::http:
        case Scheme::ws:
            o.reserve(host.size() + 16);
            o = "http://";
            break;
        case Scheme::https:
        case Scheme::wss:
            o.reserve(host.size() + 16);
            o = "https://";
            break;
        case Scheme::http_unix:
            return "http+unix://" + host;
    }
    append_authority(o, *this, true);
    return o;
}

std::string Url::to_string() const {
    static constexpr std::string_view kNames[] = {"http", "https", "http+unix", "ws", "wss"};
    std::string s;
    s.reserve(16 + host.size() + target.size());
    s += kNames[static_cast<int>(scheme)];
    s += "://";
    if (scheme == Scheme::http_unix) {
        for (const char c : host) {
            if (c == '/')
                s += "%2F";
            else
                s += c;
        }
    } else {
        append_authority(s, *this, false);
    }
    s += target;
    return s;
}

}  // namespace vela::http
