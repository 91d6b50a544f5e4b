#include "client/cookie_jar.hpp"

#include <algorithm>
#include <charconv>

#include "vela/base/ascii.hpp"
#include "vela/http/conditional.hpp"

namespace vela::http::detail {

namespace {

// The most cookies kept; past it the oldest go (RFC 6265 6.1 asks for at least 3,000).
constexpr std::size_t kMaxCookies = 3000;

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = ascii::lower(c);
    return out;
}

// RFC 6265 5.1.3: `host` domain-matches `domain`.
bool domain_match(std::string_view host, std::string_view domain) {
    if (host == domain) return true;
    return host.size() > domain.size() && host.ends_with(domain) &&
           host[host.size() - domain.size() - 1] == '.';
}

// RFC 6265 5.1.4: the default path is the request path's directory.
std::string default_path(std::string_view target) {
    std::string_view path = target.substr(0, target.find('?'));
    if (path.empty() || path[0] != '/') return "/";
    const std::size_t slash = path.rfind('/');
    if (slash == 0) return "/";
    return std::string(path.substr(0, slash));
}

// RFC 6265 5.1.4: the request path path-matches the cookie path.
bool path_match(std::string_view target, std::string_view cookie_path) {
    const std::string_view path = target.substr(0, target.find('?'));
    if (path == cookie_path) return true;
    if (!path.starts_with(cookie_path)) return false;
    return cookie_path.ends_with('/') || path[cookie_path.size()] == '/';
}

}  // namespace

void CookieJar::store(const Url& url, std::string_view value, std::int64_t now) {
    // RFC 6265 5.2: name=value, then ';'-separated attributes.
    const std::size_t semi = value.find(';');
    const std::string_view pair = ascii::trim_ows(value.substr(0, semi));
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) return;
    Cookie c;
    c.name = std::string(ascii::trim_ows(pair.substr(0, eq)));
    c.value = std::string(ascii::trim_ows(pair.substr(eq + 1)));
    if (c.name.empty()) return;
    for (const char ch : c.name + c.value)
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F) return;
    bool has_max_age = false;
    std::string_view attrs =
        semi == std::string_view::npos ? std::string_view() : value.substr(semi);
    while (!attrs.empty()) {
        attrs.remove_prefix(1);  // ';'
        const std::size_t next = attrs.find(';');
        const std::string_view av = attrs.substr(0, next);
        attrs = next == std::string_view::npos ? std::string_view() : attrs.substr(next);
        const std::size_t aeq = av.find('=');
        const std::string name = lower(ascii::trim_ows(av.substr(0, aeq)));
        const std::string_view v = aeq == std::string_view::npos
                                       ? std::string_view()
                                       : ascii::trim_ows(av.substr(aeq + 1));
        if (name == "max-age") {
            std::int64_t secs = 0;
            const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), secs);
            if (ec != std::errc() || p != v.data() + v.size()) continue;
            c.expires = secs <= 0 ? 0 : now + std::min<std::int64_t>(secs, 400ll * 86400);
            has_max_age = true;
        } else if (name == "expires" && !has_max_age) {
            if (auto t = parse_http_date(v)) c.expires = std::max<std::int64_t>(*t, 0);
        } else if (name == "domain") {
            std::string d = lower(v);
            while (!d.empty() && d[0] == '.') d.erase(0, 1);
            c.domain = std::move(d);
        } else if (name == "path") {
            if (!v.empty() && v[0] == '/') c.path = std::string(v);
        } else if (name == "secure") {
            c.secure = true;
        }
    }
    const std::string host = lower(url.host);
    if (!c.domain.empty() && c.domain != host) {
        // A parent domain: only of a name, never of an address, never a bare top-level name.
        if (url.host_is_ip() || !domain_match(host, c.domain) ||
            c.domain.find('.') == std::string::npos)
            return;
        c.host_only = false;
    } else {
        c.domain = host;
    }
    if (c.path.empty()) c.path = default_path(url.target);
    if (c.secure && !url.secure()) return;  // RFC 6265bis 5.7 step 8: only from https

    std::lock_guard lk(mu_);
    auto same = std::find_if(cookies_.begin(), cookies_.end(), [&](const Cookie& k) {
        return k.name == c.name && k.domain == c.domain && k.path == c.path;
    });
    if (same != cookies_.end()) {
        c.order = same->order;  // a replaced cookie keeps its creation time
        cookies_.erase(same);
    } else {
        c.order = next_order_++;
    }
    if (c.expires >= 0 && c.expires <= now) return;  // expired: a deletion
    if (cookies_.size() >= kMaxCookies) cookies_.erase(cookies_.begin());
    cookies_.push_back(std::move(c));
}

std::string CookieJar::header_for(const Url& url, std::int64_t now) {
    const std::string host = lower(url.host);
    std::lock_guard lk(mu_);
    std::erase_if(cookies_, [&](const Cookie& c) { return c.expires >= 0 && c.expires <= now; });
    std::vector<const Cookie*> out;
    for (const Cookie& c : cookies_) {
        if (c.host_only ? host != c.domain : !domain_match(host, c.domain)) continue;
        if (!path_match(url.target, c.path)) continue;
        if (c.secure && !url.secure()) continue;
        out.push_back(&c);
    }
    // RFC 6265 5.4 step 2: longer paths first, then earlier creation.
    std::sort(out.begin(), out.end(), [](const Cookie* a, const Cookie* b) {
        if (a->path.size() != b->path.size()) return a->path.size() > b->path.size();
        return a->order < b->order;
    });
    std::string h;
    for (const Cookie* c : out) {
        if (!h.empty()) h += "; ";
        h += c->name;
        h += '=';
        h += c->value;
    }
    return h;
}

void CookieJar::clear() {
    std::lock_guard lk(mu_);
    cookies_.clear();
}

std::size_t CookieJar::size() {
    std::lock_guard lk(mu_);
    return cookies_.size();
}

}  // namespace vela::http::detail
