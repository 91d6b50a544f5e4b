#include "vela/middleware/proxy.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "vela/base/ascii.hpp"
#include "vela/base/field_cursor.hpp"

namespace vela {

namespace {

[[noreturn]] void refuse(std::string_view what) {
    throw std::invalid_argument("vela::trusted_proxies: " + std::string(what));
}

// An address as 16 bytes: IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), so one range check
// serves both families and a mapped peer matches an IPv4 range.
struct Addr {
    std::array<std::uint8_t, 16> b{};
    bool v4 = false;  // written as IPv4 (printed back that way)
};

// Dotted-decimal IPv4 as inet_pton(AF_INET) reads it (four decimal octets, no leading
// zeros), without its copy and NUL terminator: addresses are parsed on every request.
bool parse_v4(std::string_view s, std::uint8_t* out) noexcept {
    std::size_t i = 0;
    for (int part = 0; part < 4; ++part) {
        if (part > 0) {
            if (i >= s.size() || s[i] != '.') return false;
            ++i;
        }
        const std::size_t start = i;
        unsigned v = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 3)
            v = v * 10 + static_cast<unsigned>(s[i++] - '0');
        if (i == start || v > 255 || (i - start > 1 && s[start] == '0')) return false;
        out[part] = static_cast<std::uint8_t>(v);
    }
    return i == s.size();
}

bool parse_ip(std::string_view s, Addr& out) noexcept {
    if (s.empty() || s.size() > 45) return false;
    if (s.find(':') == std::string_view::npos) {
        out.b = {};
        out.b[10] = out.b[11] = 0xff;
        out.v4 = true;
        return parse_v4(s, out.b.data() + 12);
    }
    for (char c : s)  // inet_pton would stop at an embedded NUL and accept the prefix
        if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return false;
    char buf[46];
    std::memcpy(buf, s.data(), s.size());
    buf[s.size()] = '\0';
    in6_addr v6{};
    if (::inet_pton(AF_INET6, buf, &v6) != 1) return false;
    std::memcpy(out.b.data(), &v6, 16);
    out.v4 = false;
    return true;
}

// The canonical text of `a` into `buf` (IPv4 by hand: inet_ntop formats it with sprintf).
std::string_view to_text(const Addr& a, char (&buf)[INET6_ADDRSTRLEN]) noexcept {
    if (a.v4) {
        char* p = buf;
        for (int i = 12; i < 16; ++i) {
            if (i > 12) *p++ = '.';
            const unsigned v = a.b[static_cast<std::size_t>(i)];
            if (v >= 100) *p++ = static_cast<char>('0' + v / 100);
            if (v >= 10) *p++ = static_cast<char>('0' + v / 10 % 10);
            *p++ = static_cast<char>('0' + v % 10);
        }
        return {buf, static_cast<std::size_t>(p - buf)};
    }
    const char* r = ::inet_ntop(AF_INET6, a.b.data(), buf, sizeof buf);
    return r ? std::string_view(buf) : std::string_view();
}

// A port after a node: digits (at most 65535), or an obfuscated port ("_abc", RFC 7239 6.3).
bool port_valid(std::string_view p) noexcept {
    if (p.empty()) return false;
    if (p[0] == '_') {
        for (char c : p.substr(1))
            if (!ascii::is_alnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
                return false;
        return p.size() > 1;
    }
    if (p.size() > 5) return false;
    unsigned v = 0;
    for (char c : p) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    return v <= 65535;
}

// One address from a forwarding header: "1.2.3.4", "1.2.3.4:80", "::1", "[::1]",
// "[::1]:80" (RFC 7239 6: an IPv6 node is bracketed; X-Forwarded-For writes it bare). False
// for anything else, "unknown" and obfuscated identifiers included.
bool parse_node(std::string_view s, Addr& out) noexcept {
    s = ascii::trim_ows(s);
    if (!s.empty() && s.front() == '[') {
        const std::size_t close = s.find(']');
        if (close == std::string_view::npos) return false;
        const std::string_view rest = s.substr(close + 1);
        if (!rest.empty() && (rest.front() != ':' || !port_valid(rest.substr(1)))) return false;
        return parse_ip(s.substr(1, close - 1), out) && !out.v4;
    }
    const std::size_t colon = s.find(':');
    if (colon != std::string_view::npos && s.find(':', colon + 1) == std::string_view::npos) {
        // Exactly one ':': an IPv4 address with a port.
        return port_valid(s.substr(colon + 1)) && parse_ip(s.substr(0, colon), out) && out.v4;
    }
    return parse_ip(s, out);
}

// A forwarded host: reg-name (letters, digits, '-', '.', '_') or a bracketed IPv6 literal,
// with an optional port; what a Host header may say, without percent-escapes.
bool host_valid(std::string_view h) noexcept {
    if (h.empty() || h.size() > 261) return false;
    std::size_t i = 0;
    if (h[0] == '[') {
        const std::size_t close = h.find(']');
        Addr a;
        if (close == std::string_view::npos || !parse_ip(h.substr(1, close - 1), a) || a.v4)
            return false;
        i = close + 1;
    } else {
        while (i < h.size() && (ascii::is_alnum(static_cast<unsigned char>(h[i])) || h[i] == '-' ||
                                h[i] == '.' || h[i] == '_'))
            ++i;
        if (i == 0) return false;
    }
    if (i == h.size()) return true;
    return h[i] == ':' && port_valid(h.substr(i + 1)) && h[i + 1] != '_';
}

struct Net {
    Addr addr;
    unsigned prefix;  // bits of the 16-byte form
};

bool in_net(const Addr& a, const Net& n) noexcept {
    const unsigned full = n.prefix / 8, rest = n.prefix % 8;
    if (std::memcmp(a.b.data(), n.addr.b.data(), full) != 0) return false;
    if (rest == 0) return true;
    const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
    return (a.b[full] & mask) == (n.addr.b[full] & mask);
}

void add_net(std::vector<Net>& nets, std::string_view spec) {
    std::string quoted(1, '"');  // (not "\"" + std::string: a GCC 12 -Wrestrict false positive)
    quoted.append(spec).push_back('"');
    std::string_view addr = spec;
    unsigned prefix = 128;
    bool has_prefix = false;
    if (const std::size_t slash = spec.find('/'); slash != std::string_view::npos) {
        const std::string_view p = spec.substr(slash + 1);
        if (p.empty() || p.size() > 3 ||
            !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }))
            refuse(quoted + " has an invalid prefix length");
        prefix = static_cast<unsigned>(std::stoul(std::string(p)));
        addr = spec.substr(0, slash);
        has_prefix = true;
    }
    if (addr.size() > 2 && addr.front() == '[' && addr.back() == ']')
        addr = addr.substr(1, addr.size() - 2);
    Net n;
    if (!parse_ip(addr, n.addr))
        refuse(quoted + " is not an IPv4 or IPv6 address or range (e.g. \"10.0.0.0/8\")");
    if (n.addr.v4) {
        if (has_prefix && prefix > 32) refuse(quoted + ": an IPv4 prefix is at most 32");
        prefix = has_prefix ? prefix + 96 : 128;
    } else if (prefix > 128) {
        refuse(quoted + ": an IPv6 prefix is at most 128");
    }
    n.prefix = prefix;
    for (unsigned bit = prefix; bit < 128; ++bit)
        if (n.addr.b[bit / 8] & (0x80 >> (bit % 8)))
            refuse(quoted +
                   " has bits set past its prefix length (did you mean the network "
                   "address?)");
    nets.push_back(n);
}

struct Config {
    std::vector<Net> nets;
    bool any = false;
    bool unix_socket = false;
    bool x_forwarded = true;
    bool forwarded = false;
    std::size_t max_hops = 0;

    bool trusted(const Addr& a) const noexcept {
        if (any) return true;
        for (const Net& n : nets)
            if (in_net(a, n)) return true;
        return false;
    }
};

// One hop of a Forwarded field (RFC 7239 4): its for=, proto= and host= values (unquoted).
struct Element {
    std::string for_, proto, host;
    bool has_for = false, bad = false;
};

// Appends the elements of one Forwarded field value to `out` (reusing their storage).
// Forwarded = 1#forwarded-element; forwarded-element = [ pair ] *( ";" [ pair ] );
// pair = token "=" ( token / quoted-string ). A malformed element is kept, marked bad (the
// walk stops there); empty elements are dropped (RFC 9110 5.6.1).
void parse_forwarded(std::string_view v, std::vector<Element>& out, std::size_t& used) {
    ascii::FieldCursor c{v};
    std::string value;
    while (!c.end()) {
        if (used == out.size()) out.emplace_back();
        Element& e = out[used];
        e.for_.clear(), e.proto.clear(), e.host.clear();
        e.has_for = e.bad = false;
        unsigned seen = 0, pairs = 0;
        while (true) {
            c.ows();
            if (c.end()) break;
            if (c.at(',')) {
                ++c.i;
                break;
            }
            if (c.at(';')) {
                ++c.i;
                continue;
            }
            const std::string_view name = c.token();
            if (name.empty() || !c.at('=')) {
                e.bad = true;
                c.skip_element();
                break;
            }
            ++c.i;
            value.clear();
            if (c.at('"')) {
                if (!c.quoted(&value)) {
                    e.bad = true;
                    break;  // unterminated: the rest is consumed
                }
            } else {
                value = c.token();
            }
            unsigned bit = 0;
            std::string* slot = nullptr;
            if (ascii::iequals(name, "for")) {
                bit = 1, slot = &e.for_, e.has_for = true;
            } else if (ascii::iequals(name, "proto")) {
                bit = 2, slot = &e.proto;
            } else if (ascii::iequals(name, "host")) {
                bit = 4, slot = &e.host;
            } else if (ascii::iequals(name, "by")) {
                bit = 8;
            }
            ++pairs;
            if (value.empty() || (seen & bit)) e.bad = true;  // RFC 7239 4: each at most once
            seen |= bit;
            if (slot) *slot = value;
            c.ows();
            if (!c.end() && !c.at(';') && !c.at(',')) {
                e.bad = true;
                c.skip_element();
                break;
            }
        }
        if (pairs > 0 || e.bad) ++used;
    }
}

// The value at position `k` from the right of `list`, or its leftmost when shorter.
std::string_view aligned(const std::vector<std::string_view>& list, std::size_t k) noexcept {
    if (list.empty()) return {};
    return list[list.size() - 1 - std::min(k, list.size() - 1)];
}

std::string_view scheme_of(std::string_view p) noexcept {
    p = ascii::trim_ows(p);
    if (ascii::iequals(p, "https")) return "https";
    if (ascii::iequals(p, "http")) return "http";
    return {};
}

void resolve(const Config& cfg, Request& req) {
    const std::string_view peer = req.remote_ip();
    if (peer.empty()) {
        if (!cfg.unix_socket) return;
    } else {
        Addr a;
        if (!parse_ip(peer, a) || !cfg.trusted(a)) return;
    }

    thread_local std::vector<std::string_view> fors, protos, hosts;
    thread_local std::vector<Element> elements;
    fors.clear(), protos.clear(), hosts.clear();
    std::size_t used = 0;
    bool any_header = false;
    for (const Header& h : req.headers()) {
        const std::string_view n = h.name;
        if (cfg.forwarded && ascii::iequals(n, "Forwarded")) {
            parse_forwarded(h.value, elements, used);
            any_header = true;
        } else if (cfg.x_forwarded && n.size() > 12 &&
                   ascii::iequals(n.substr(0, 12), "X-Forwarded-")) {
            const std::string_view rest = n.substr(12);
            std::vector<std::string_view>* list = ascii::iequals(rest, "For")     ? &fors
                                                  : ascii::iequals(rest, "Proto") ? &protos
                                                  : ascii::iequals(rest, "Host")  ? &hosts
                                                                                  : nullptr;
            if (!list) continue;
            ascii::for_each_list_item(h.value,
                                      [&](std::string_view item) { list->push_back(item); });
            any_header = true;
        }
    }
    if (!any_header) return;
    const bool use_forwarded = cfg.forwarded && used > 0;
    const std::size_t n = use_forwarded ? used : fors.size();

    // Walk from the right: each address a trusted proxy reports is believed; the first one
    // that is not itself a trusted proxy is the client.
    Addr client;
    bool found = false;
    std::size_t k = 0, chosen = 0;
    for (; k < n; ++k) {
        const std::size_t idx = n - 1 - k;
        Addr a;
        if (use_forwarded) {
            const Element& e = elements[idx];
            if (e.bad || !e.has_for || !parse_node(e.for_, a)) break;
        } else if (!parse_node(fors[idx], a)) {
            break;
        }
        client = a;
        found = true;
        chosen = k;
        if (cfg.max_hops != 0 && k + 1 >= cfg.max_hops) break;
        if (!cfg.trusted(a)) break;
    }

    std::string_view scheme, host;
    if (use_forwarded) {
        if (n > 0) {
            const Element& e = elements[n - 1 - chosen];
            if (!e.bad) {
                scheme = scheme_of(e.proto);
                host = e.host;
            }
        }
    } else {
        scheme = scheme_of(aligned(protos, chosen));
        host = ascii::trim_ows(aligned(hosts, chosen));
    }
    if (!host_valid(host)) host = {};
    char buf[INET6_ADDRSTRLEN];
    const std::string_view ip = found ? to_text(client, buf) : std::string_view();
    if (!ip.empty() || !scheme.empty() || !host.empty()) req.set_forwarded(ip, scheme, host);
}

}  // namespace

std::function<std::optional<Response>(Request&)> trusted_proxies(ProxyOptions o) {
    auto cfg = std::make_shared<Config>();
    if (o.proxies.empty() && !o.unix_socket)
        refuse("no proxy addresses (list the proxies' addresses or ranges, e.g. \"10.0.0.0/8\")");
    for (const std::string& spec : o.proxies) {
        const std::string_view s = ascii::trim_ows(spec);
        if (s == "*") {
            cfg->any = true;
        } else if (s == "loopback") {
            add_net(cfg->nets, "127.0.0.0/8");
            add_net(cfg->nets, "::1/128");
        } else if (s == "private") {
            for (std::string_view r : {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"})
                add_net(cfg->nets, r);
        } else if (s == "linklocal") {
            add_net(cfg->nets, "169.254.0.0/16");
            add_net(cfg->nets, "fe80::/10");
        } else {
            add_net(cfg->nets, s);
        }
    }
    if (cfg->any && o.max_hops == 0)
        refuse("\"*\" trusts every peer: set max_hops to the number of proxies in front");
    if (!o.x_forwarded && !o.forwarded) refuse("neither x_forwarded nor forwarded is enabled");
    cfg->unix_socket = o.unix_socket;
    cfg->x_forwarded = o.x_forwarded;
    cfg->forwarded = o.forwarded;
    cfg->max_hops = o.max_hops;
    return [cfg = std::shared_ptr<const Config>(std::move(cfg))](
               Request& req) -> std::optional<Response> {
        resolve(*cfg, req);
        return std::nullopt;
    };
}

}  // namespace vela
