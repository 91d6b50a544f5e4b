#include "vela/middleware/cors.hpp"

#include <cctype>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "vela/base/ascii.hpp"
#include "vela/base/field_cursor.hpp"

namespace vela {

namespace {

[[noreturn]] void refuse(std::string_view what) {
    throw std::invalid_argument("vela::cors: " + std::string(what));
}

bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (char c : s)
        if (!ascii::is_tchar(c)) return false;
    return true;
}

// A comma-separated list of tokens (Access-Control-Request-Headers), safe to echo.
bool is_token_list(std::string_view s) noexcept {
    bool ok = !ascii::trim_ows(s).empty();
    ascii::for_each_list_item(s, [&](std::string_view item) { ok = ok && is_token(item); });
    // for_each_list_item skips empty elements; a stray byte between commas is caught above.
    for (char c : s)
        if (!ascii::is_tchar(c) && c != ',' && c != ' ' && c != '\t') return false;
    return ok;
}

// Visible ASCII only: what a serialized origin is made of (and safe to echo in a header).
bool is_visible(std::string_view s) noexcept {
    for (char c : s)
        if (c < 0x21 || c > 0x7e) return false;
    return !s.empty();
}

std::string lowered(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = ascii::lower(c);
    return out;
}

// A configured origin: "null", or scheme "://" host [":" port] with nothing after it (the
// serialization of an origin, RFC 6454 6.1). Returns why it is not one, or empty.
std::string origin_problem(std::string_view o) {
    if (o == "null") return {};
    const std::size_t sep = o.find("://");
    if (sep == std::string_view::npos || sep == 0)
        return "is not an origin (scheme://host[:port], e.g. \"https://example.com\")";
    for (std::size_t i = 0; i < sep; ++i) {
        const char c = o[i];
        const bool ok = ascii::is_alnum(static_cast<unsigned char>(c)) ||
                        (i > 0 && (c == '+' || c == '-' || c == '.'));
        if (!ok) return "has an invalid scheme";
    }
    std::string_view rest = o.substr(sep + 3);
    if (rest.find('*') != std::string_view::npos)
        return "has a wildcard (not supported: use origin_predicate)";
    if (rest.find_first_of("/?#") != std::string_view::npos)
        return "has a path (an origin is scheme://host[:port], without a trailing slash)";
    if (rest.find('@') != std::string_view::npos) return "has user information";
    std::string_view host = rest;
    std::string_view port;
    if (!rest.empty() && rest.front() == '[') {
        const std::size_t close = rest.find(']');
        if (close == std::string_view::npos || close == 1) return "has an invalid IPv6 literal";
        for (char c : rest.substr(1, close - 1))
            if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.')
                return "has an invalid IPv6 literal";
        host = rest.substr(0, close + 1);
        port = rest.substr(close + 1);
        if (!port.empty() && port.front() != ':') return "has bytes after its host";
    } else {
        const std::size_t colon = rest.find(':');
        host = rest.substr(0, colon);
        if (colon != std::string_view::npos) port = rest.substr(colon);
        for (char c : host)
            if (!ascii::is_alnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' &&
                c != '_' && c != '~')
                return "has an invalid host";
    }
    if (host.empty()) return "has no host";
    if (!port.empty()) {
        port.remove_prefix(1);  // ':'
        if (port.empty() || port.size() > 5) return "has an invalid port";
        unsigned v = 0;
        for (char c : port) {
            if (c < '0' || c > '9') return "has an invalid port";
            v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if (v > 65535) return "has an invalid port";
    }
    return {};
}

// A configured origin as browsers serialize it: lower case, without the scheme's default
// port ("https://A.example:443" -> "https://a.example"), which a browser never sends.
std::string normalized(std::string_view o) {
    std::string out = lowered(o);
    for (std::string_view suffix : {"http://:80", "ws://:80", "https://:443", "wss://:443"}) {
        const std::size_t sep = suffix.find("://") + 3;
        const std::string_view scheme = suffix.substr(0, sep), port = suffix.substr(sep);
        if (out.starts_with(scheme) && out.ends_with(port) &&
            out.size() > scheme.size() + port.size())
            out.resize(out.size() - port.size());
    }
    return out;
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& s : v) {
        if (!out.empty()) out += ", ";
        out += s;
    }
    return out;
}

bool is_star(const std::vector<std::string>& v) noexcept { return v.size() == 1 && v[0] == "*"; }

// What the response already says: an Access-Control-Allow-Origin, a Vary covering Origin.
struct Seen {
    bool acao = false;
    bool vary_origin = false;
};

Seen scan(const Response& res) noexcept {
    Seen s;
    res.for_each_header([&](std::string_view name, std::string_view v) {
        if (ascii::iequals(name, "Access-Control-Allow-Origin")) {
            s.acao = true;
        } else if (ascii::iequals(name, "Vary")) {
            if (ascii::list_has(v, "Origin") || ascii::list_has(v, "*")) s.vary_origin = true;
        }
    });
    return s;
}

}  // namespace

struct Cors::Policy {
    enum class Mode : std::uint8_t { any, list, predicate } mode = Mode::list;
    bool any_plain = false;  // any origin without credentials: "*" everywhere, no Vary
    bool credentials = false;
    bool any_method = false;
    bool mirror_headers = false;
    bool private_network = false;
    std::vector<std::string> origins;  // lower-cased
    std::function<bool(std::string_view)> predicate;
    std::string methods_value;
    std::string headers_value;
    std::string exposed_value;
    std::string max_age_value;
    std::string_view preflight_vary;  // Vary of a preflight answer
};

Cors::Cors(CorsOptions o) {
    auto p = std::make_shared<Policy>();
    if (o.origins.empty() && !o.origin_predicate)
        refuse("no allowed origin (set origins, {\"*\"} for any, or origin_predicate)");
    if (!o.origins.empty() && o.origin_predicate)
        refuse("set origins or origin_predicate, not both");
    p->credentials = o.credentials;
    if (o.origin_predicate) {
        p->mode = Policy::Mode::predicate;
        p->predicate = std::move(o.origin_predicate);
    } else if (is_star(o.origins)) {
        p->mode = Policy::Mode::any;
        p->any_plain = !o.credentials;
    } else {
        for (const std::string& origin : o.origins) {
            if (origin == "*") refuse("\"*\" must be the only origin");
            if (std::string why = origin_problem(origin); !why.empty())
                refuse("origin \"" + origin + "\" " + why);
            p->origins.push_back(normalized(origin));
        }
    }

    if (o.methods.empty()) refuse("no allowed method");
    if (is_star(o.methods)) {
        p->any_method = true;
    } else {
        for (const std::string& m : o.methods)
            if (!is_token(m) || m == "*") refuse("method \"" + m + "\" is not a method token");
        p->methods_value = join(o.methods);
    }

    if (is_star(o.allowed_headers)) {
        p->mirror_headers = true;
    } else {
        for (const std::string& h : o.allowed_headers) {
            if (!is_token(h) || h == "*")
                refuse("allowed header \"" + h + "\" is not a header name");
        }
        p->headers_value = join(o.allowed_headers);
    }

    if (is_star(o.exposed_headers)) {
        if (o.credentials)
            refuse("exposed_headers {\"*\"} does not work with credentials; list the names");
    } else {
        for (const std::string& h : o.exposed_headers)
            if (!is_token(h) || h == "*")
                refuse("exposed header \"" + h + "\" is not a header name");
    }
    p->exposed_value = join(o.exposed_headers);

    if (o.max_age) {
        if (o.max_age->count() < 0) refuse("max_age is negative");
        p->max_age_value = std::to_string(o.max_age->count());
    }
    p->private_network = o.private_network;
    if (p->any_plain)
        p->preflight_vary = p->mirror_headers ? "Access-Control-Request-Headers" : "";
    else
        p->preflight_vary = p->mirror_headers ? "Origin, Access-Control-Request-Headers" : "Origin";
    p_ = std::move(p);
}

bool Cors::origin_allowed(std::string_view origin) const {
    switch (p_->mode) {
        case Policy::Mode::any:
            return is_visible(origin);
        case Policy::Mode::predicate:
            return is_visible(origin) && p_->predicate(origin);
        case Policy::Mode::list:
            break;
    }
    // The configured origins are validated and lower-case, as browsers send them: a byte
    // comparison usually decides, and a match is made of visible bytes only.
    for (const std::string& o : p_->origins)
        if (o.size() == origin.size() &&
            (std::memcmp(o.data(), origin.data(), o.size()) == 0 || ascii::iequals(o, origin)))
            return true;
    return false;
}

std::optional<Response> Cors::preflight(const Request& req) const {
    if (req.method() != Method::OPTIONS) return std::nullopt;
    const std::string_view origin = req.header("Origin");
    if (origin.empty() || !req.has_header("Access-Control-Request-Method")) return std::nullopt;
    const Policy& p = *p_;
    Response r(Status::NoContent);
    if (!p.preflight_vary.empty()) r.add_header("Vary", p.preflight_vary);
    if (!origin_allowed(origin)) return r;  // no CORS headers: the browser fails the preflight
    r.add_header("Access-Control-Allow-Origin", p.any_plain ? std::string_view("*") : origin);
    if (p.credentials) r.add_header("Access-Control-Allow-Credentials", "true");
    if (p.any_method) {
        const std::string_view m = req.header("Access-Control-Request-Method");
        if (is_token(m)) r.add_header("Access-Control-Allow-Methods", m);
    } else {
        r.add_header("Access-Control-Allow-Methods", p.methods_value);
    }
    if (p.mirror_headers) {
        const std::string_view h = req.header("Access-Control-Request-Headers");
        if (is_token_list(h)) r.add_header("Access-Control-Allow-Headers", ascii::trim_ows(h));
    } else if (!p.headers_value.empty()) {
        r.add_header("Access-Control-Allow-Headers", p.headers_value);
    }
    if (!p.max_age_value.empty()) r.add_header("Access-Control-Max-Age", p.max_age_value);
    if (p.private_network &&
        ascii::iequals(req.header("Access-Control-Request-Private-Network"), "true"))
        r.add_header("Access-Control-Allow-Private-Network", "true");
    return r;
}

void Cors::apply(const Request& req, Response& res) const {
    const Policy& p = *p_;
    const Seen seen = scan(res);
    if (p.any_plain) {
        if (seen.acao) return;
        res.add_header("Access-Control-Allow-Origin", "*");
        if (!p.exposed_value.empty())
            res.add_header("Access-Control-Expose-Headers", p.exposed_value);
        return;
    }
    if (!seen.vary_origin) res.add_header("Vary", "Origin");
    if (seen.acao) return;
    const std::string_view origin = req.header("Origin");
    if (origin.empty() || !origin_allowed(origin)) return;
    res.add_header("Access-Control-Allow-Origin", origin);
    if (p.credentials) res.add_header("Access-Control-Allow-Credentials", "true");
    if (!p.exposed_value.empty()) res.add_header("Access-Control-Expose-Headers", p.exposed_value);
}

Hooks Cors::hooks() const {
    return Hooks{[c = *this](Request& req) { return c.preflight(req); },
                 [c = *this](Request& req, Response& res) { c.apply(req, res); }};
}

Cors cors(CorsOptions options) { return Cors(std::move(options)); }

}  // namespace vela
