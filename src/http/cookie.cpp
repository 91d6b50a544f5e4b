// Cookies (RFC 6265bis): Set-Cookie serialization with the checks of section 4.1.1 and the
// cookie prefixes (4.1.3), and the Cookie field reader behind Request::cookie (5.7, read
// the way servers meet it in practice: lenient, skipping what does not parse).
#include "vela/http/cookie.hpp"

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vela/base/ascii.hpp"
#include "vela/http/char_class.hpp"
#include "vela/http/conditional.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {

namespace {

// RFC 6265bis 5.6: user agents ignore a cookie whose name and value pass 4096 bytes, and an
// attribute value above 1024; refusing them here says so at the call instead.
constexpr std::size_t kMaxNameValue = 4096;
constexpr std::size_t kMaxAttribute = 1024;

[[noreturn]] void reject(std::string_view name, std::string_view why) {
    std::string m = "set_cookie(\"";
    // The name may be what is wrong with it; show it only when it is printable.
    for (char ch : name) m += (ch > 0x20 && ch < 0x7f) ? ch : '?';
    m += "\"): ";
    m += why;
    throw std::invalid_argument(m);
}

bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (char ch : s)
        if (!http::is_tchar(static_cast<unsigned char>(ch))) return false;
    return true;
}

// cookie-octet = %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E (RFC 6265bis 4.1.1).
constexpr bool is_cookie_octet(unsigned char c) noexcept {
    return c >= 0x21 && c <= 0x7e && c != '"' && c != ',' && c != ';' && c != '\\';
}

// cookie-value = *cookie-octet / ( DQUOTE *cookie-octet DQUOTE )
bool is_cookie_value(std::string_view v) noexcept {
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    for (char ch : v)
        if (!is_cookie_octet(static_cast<unsigned char>(ch))) return false;
    return true;
}

// av-octet: any CHAR except CTLs or ';' (RFC 6265bis 4.1.1), so US-ASCII 0x20-0x7E but ';'.
bool is_attribute_value(std::string_view v) noexcept {
    for (char ch : v) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c >= 0x7f || c == ';') return false;
    }
    return true;
}

// Prefixes are matched without regard to case (RFC 6265bis 4.1.3: a user agent does so, so a
// "__host-" cookie gets the same rules from the browser and must meet them here).
bool has_prefix(std::string_view name, std::string_view prefix) noexcept {
    return name.size() >= prefix.size() && ascii::iequals(name.substr(0, prefix.size()), prefix);
}

void check(const Cookie& c) {
    if (!is_token(c.name)) reject(c.name, "the name must be a non-empty RFC 9110 token");
    if (!is_cookie_value(c.value))
        reject(c.name,
               "the value may hold only printable ASCII without space, '\"', ',', ';' and '\\' "
               "(encode it, e.g. base64url)");
    if (c.name.size() + c.value.size() > kMaxNameValue)
        reject(c.name, "name and value together exceed 4096 bytes");
    if (!is_attribute_value(c.domain)) reject(c.name, "the domain has ';' or a control byte");
    if (!is_attribute_value(c.path)) reject(c.name, "the path has ';' or a control byte");
    if (c.domain.size() > kMaxAttribute || c.path.size() > kMaxAttribute)
        reject(c.name, "the domain or path exceeds 1024 bytes");
    if (!c.path.empty() && c.path.front() != '/') reject(c.name, "the path must start with '/'");
    const bool host = has_prefix(c.name, "__Host-");
    if ((host || has_prefix(c.name, "__Secure-")) && !c.secure)
        reject(c.name,
               host ? "a __Host- cookie must be Secure" : "a __Secure- cookie must be Secure");
    if (host && (!c.domain.empty() || c.path != "/"))
        reject(c.name, "a __Host- cookie must have Path=/ and no Domain");
}

void append_attribute(std::string& out, std::string_view name, std::string_view value = {}) {
    out += "; ";
    out += name;
    if (!value.empty()) {
        out += '=';
        out += value;
    }
}

}  // namespace

std::string format_set_cookie(const Cookie& c) {
    check(c);
    std::string out;
    out.reserve(c.name.size() + c.value.size() + c.domain.size() + c.path.size() + 96);
    out += c.name;
    out += '=';
    out += c.value;
    if (c.expires) {
        const auto s =
            std::chrono::duration_cast<std::chrono::seconds>(c.expires->time_since_epoch());
        append_attribute(out, "Expires", format_http_date(s.count()));
    }
    if (c.max_age) {
        const auto s = c.max_age->count();
        append_attribute(out, "Max-Age", s > 0 ? std::to_string(s) : "0");
    }
    if (!c.domain.empty()) append_attribute(out, "Domain", c.domain);
    if (!c.path.empty()) append_attribute(out, "Path", c.path);
    // SameSite=None and Partitioned are ignored by browsers without Secure; set it rather
    // than send a cookie that silently goes nowhere.
    if (c.secure || c.same_site == SameSite::none || c.partitioned) append_attribute(out, "Secure");
    if (c.http_only) append_attribute(out, "HttpOnly");
    switch (c.same_site) {
        case SameSite::unset:
            break;
        case SameSite::strict:
            append_attribute(out, "SameSite", "Strict");
            break;
        case SameSite::lax:
            append_attribute(out, "SameSite", "Lax");
            break;
        case SameSite::none:
            append_attribute(out, "SameSite", "None");
            break;
    }
    if (c.partitioned) append_attribute(out, "Partitioned");
    return out;
}

bool next_cookie(std::string_view& field, std::string_view& name,
                 std::string_view& value) noexcept {
    while (!field.empty()) {
        const std::size_t semi = field.find(';');
        std::string_view pair = field.substr(0, semi);
        field.remove_prefix(semi == std::string_view::npos ? field.size() : semi + 1);
        const std::size_t eq = pair.find('=');
        if (eq == std::string_view::npos) continue;
        name = ascii::trim_ows(pair.substr(0, eq));
        if (name.empty()) continue;
        value = ascii::trim_ows(pair.substr(eq + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
            value = value.substr(1, value.size() - 2);
        return true;
    }
    return false;
}

Response& Response::set_cookie(const Cookie& c) {
    const std::string v = format_set_cookie(c);
    return add_header("Set-Cookie", v);
}

Response& Response::clear_cookie(std::string_view name, std::string_view path,
                                 std::string_view domain) {
    Cookie c;
    c.name = name;
    c.domain = domain;
    c.path = path;
    c.max_age = std::chrono::seconds(0);
    // Some old clients know only Expires; the epoch is as past as it gets.
    c.expires = std::chrono::system_clock::time_point{};
    // A prefixed cookie is only replaced by one that meets the prefix's rules.
    c.secure = has_prefix(name, "__Secure-") || has_prefix(name, "__Host-");
    return set_cookie(c);
}

std::optional<std::string_view> Request::cookie(std::string_view name) const noexcept {
    for (const Header& h : headers_) {
        if (!ascii::iequals(h.name, "cookie")) continue;
        std::string_view field = h.value, n, v;
        while (next_cookie(field, n, v))
            if (n == name) return v;
    }
    return std::nullopt;
}

std::vector<std::pair<std::string_view, std::string_view>> Request::cookies() const {
    std::vector<std::pair<std::string_view, std::string_view>> out;
    for (const Header& h : headers_) {
        if (!ascii::iequals(h.name, "cookie")) continue;
        std::string_view field = h.value, n, v;
        while (next_cookie(field, n, v)) out.emplace_back(n, v);
    }
    return out;
}

}  // namespace vela
