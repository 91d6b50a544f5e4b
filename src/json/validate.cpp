// The cold parts of json::validate: messages, the format checks, JSON Pointers.

#include "vela/json/validate.hpp"

#include <array>
#include <regex>

#include <fmt/format.h>

namespace vela::json::detail {

namespace {

std::string number_text(const Bound& b) {
    return b.integral ? std::to_string(b.i) : fmt::format("{}", b.d);
}

constexpr bool is_alnum(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

constexpr bool is_hex(char c) noexcept {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// RFC 5322's atext: the characters of a dot-atom besides '.'.
constexpr bool is_atext(char c) noexcept {
    if (is_alnum(c)) return true;
    for (char x : std::string_view("!#$%&'*+-/=?^_`{|}~"))
        if (c == x) return true;
    return false;
}

// A host name: dot-separated labels of letters, digits and '-' (not first or last), 1 to 63
// characters each, 253 in all, at least two labels; or a literal in brackets is refused.
bool is_domain(std::string_view d) noexcept {
    if (d.empty() || d.size() > 253) return false;
    std::size_t labels = 0;
    while (true) {
        const std::size_t dot = d.find('.');
        const std::string_view label = d.substr(0, dot);
        if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
            return false;
        for (char c : label)
            if (!is_alnum(c) && c != '-' && static_cast<unsigned char>(c) < 0x80) return false;
        ++labels;
        if (dot == std::string_view::npos) break;
        d.remove_prefix(dot + 1);
    }
    return labels >= 2;
}

}  // namespace

std::size_t utf8_length(std::string_view s) noexcept {
    std::size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

std::string length_message(std::size_t min, std::size_t max) {
    const auto chars = [](std::size_t n) { return n == 1 ? "character" : "characters"; };
    if (max == static_cast<std::size_t>(-1))
        return fmt::format("must be at least {} {} long", min, chars(min));
    if (min == 0) return fmt::format("must be at most {} {} long", max, chars(max));
    if (min == max) return fmt::format("must be exactly {} {} long", min, chars(min));
    return fmt::format("must be {} to {} characters long", min, max);
}

std::string number_message(int kind, const Bound& a, const Bound& b) {
    switch (kind) {
        case 0:
            return fmt::format("must be between {} and {}", number_text(a), number_text(b));
        case 1:
            return fmt::format("must be at least {}", number_text(a));
        case 2:
            return fmt::format("must be at most {}", number_text(a));
        case 3:
            return fmt::format("must be greater than {}", number_text(a));
        case 4:
            return fmt::format("must be less than {}", number_text(a));
        default:
            return fmt::format("must be a multiple of {}", number_text(a));
    }
}

std::string items_message(std::size_t min, std::size_t max) {
    const auto items = [](std::size_t n) { return n == 1 ? "item" : "items"; };
    if (max == static_cast<std::size_t>(-1))
        return fmt::format("must have at least {} {}", min, items(min));
    if (min == 0) return fmt::format("must have at most {} {}", max, items(max));
    if (min == max) return fmt::format("must have exactly {} {}", min, items(min));
    return fmt::format("must have {} to {} items", min, max);
}

std::string pattern_message(std::string_view pattern) {
    return fmt::format("must match the pattern {}", pattern);
}

std::string one_of_message(const std::string_view* names, std::size_t n) {
    std::string s = "must be one of";
    for (std::size_t i = 0; i < n; ++i) s.append(i ? ", \"" : " \"").append(names[i]).append("\"");
    return s;
}

std::string one_of_message(const Bound* values, std::size_t n) {
    std::string s = "must be one of";
    for (std::size_t i = 0; i < n; ++i) s.append(i ? ", " : " ").append(number_text(values[i]));
    return s;
}

json::Value bound_value(const Bound& b) { return b.integral ? json::Value(b.i) : json::Value(b.d); }

// local-part "@" domain, as most services accept addresses: a dot-atom local part (RFC 5322
// 3.4.1, no quoted strings or comments) of at most 64 octets, a host name domain; non-ASCII
// (RFC 6531) is allowed in both.
bool is_email(std::string_view s) noexcept {
    const std::size_t at = s.rfind('@');
    if (at == std::string_view::npos || at == 0 || at > 64 || s.size() > 254) return false;
    const std::string_view local = s.substr(0, at);
    if (local.front() == '.' || local.back() == '.') return false;
    char prev = 0;
    for (char c : local) {
        if (c == '.' && prev == '.') return false;
        if (c != '.' && !is_atext(c) && static_cast<unsigned char>(c) < 0x80) return false;
        prev = c;
    }
    return is_domain(s.substr(at + 1));
}

// RFC 3986's unreserved and reserved characters: what a URI holds besides '%' escapes.
constexpr auto kUriChars = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = is_alnum(static_cast<char>(c));
    for (char c : std::string_view("-._~:/?#[]@!$&'()*+,;="))
        t[static_cast<unsigned char>(c)] = true;
    return t;
}();

// RFC 3986 section 3: scheme ":" hier-part [ "?" query ] [ "#" fragment ], checked as a
// scheme followed by characters a URI may hold (unreserved, reserved, '%' HEXDIG HEXDIG).
bool is_uri(std::string_view s) noexcept {
    const std::size_t colon = s.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return false;
    for (char c : s.substr(0, colon))
        if (!is_alnum(c) && c != '+' && c != '-' && c != '.') return false;
    const std::string_view rest = s.substr(colon + 1);
    for (std::size_t i = 0; i < rest.size(); ++i) {
        const char c = rest[i];
        if (c == '%') {
            if (i + 2 >= rest.size() || !is_hex(rest[i + 1]) || !is_hex(rest[i + 2])) return false;
            i += 2;
            continue;
        }
        if (!kUriChars[static_cast<unsigned char>(c)]) return false;
    }
    // "//" starts an authority, which must name a host for the schemes that have one.
    if (rest.substr(0, 2) == "//") {
        const std::string_view auth = rest.substr(2, rest.find_first_of("/?#", 2) - 2);
        const std::size_t at = auth.rfind('@');
        const std::string_view host = at == std::string_view::npos ? auth : auth.substr(at + 1);
        if (host.empty() || host.front() == ':') return false;
    }
    return true;
}

bool is_uuid(std::string_view s) noexcept {
    if (s.size() != 36) return false;
    for (std::size_t i = 0; i < 36; ++i) {
        const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !is_hex(s[i])) return false;
    }
    return true;
}

// RFC 3339 full-date: YYYY-MM-DD with a day that exists in that month.
bool is_date(std::string_view s) noexcept {
    if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
    for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
        if (s[i] < '0' || s[i] > '9') return false;
    const auto num = [&](std::size_t at, std::size_t n) {
        int v = 0;
        for (std::size_t i = at; i < at + n; ++i) v = v * 10 + (s[i] - '0');
        return v;
    };
    const int y = num(0, 4), m = num(5, 2), d = num(8, 2);
    if (m < 1 || m > 12 || d < 1) return false;
    static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return d <= days[m - 1] + (m == 2 && leap);
}

struct CompiledPattern {
    std::regex re;
};

// Each pattern is compiled once per process, at its first check (a bad one throws
// std::regex_error there, which the framework answers 500 and logs); never freed.
const CompiledPattern* compile_pattern(std::string_view pattern) {
    return new CompiledPattern{
        std::regex(pattern.begin(), pattern.end(), std::regex::ECMAScript | std::regex::optimize)};
}

bool matches(const CompiledPattern* p, std::string_view s) {
    return std::regex_search(s.begin(), s.end(), p->re);
}

std::string pointer_of(const PathSegment* p) {
    if (!p) return {};
    std::string out = pointer_of(p->parent);
    out += '/';
    if (p->name.data() == nullptr) {
        out += std::to_string(p->index);
        return out;
    }
    for (char c : p->name) c == '~' ? out += "~0" : c == '/' ? out += "~1" : out += c;  // RFC 6901
    return out;
}

}  // namespace vela::json::detail
