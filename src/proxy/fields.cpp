// The header rewriting of the reverse proxy (RFC 9110 7.6, RFC 7239): pure functions over
// field lists, driven by the handler and by fuzz/fuzz_proxy_fields.cpp.

#include <string>
#include <string_view>
#include <vector>

#include "vela/base/ascii.hpp"
#include "vela/http/char_class.hpp"
#include "vela/proxy/reverse_proxy.hpp"

namespace vela::proxy {

namespace {

// RFC 9110 7.6.1 and the fields of earlier practice that act the same (Keep-Alive,
// Proxy-Connection), plus the proxy credentials meant for us.
constexpr std::string_view kHopByHop[] = {
    "connection", "keep-alive",          "proxy-connection",  "te", "trailer", "transfer-encoding",
    "upgrade",    "proxy-authorization", "proxy-authenticate"};

bool in(std::string_view name, std::initializer_list<std::string_view> names) noexcept {
    for (const std::string_view n : names)
        if (ascii::iequals(name, n)) return true;
    return false;
}

// The request's forwarding fields, which only a trusted proxy's request keeps.
bool forwarding_field(std::string_view name) noexcept {
    return in(name, {"x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "forwarded"});
}

// RFC 7239 4: a node is an IPv4 address, a bracketed IPv6 address (quoted: ':' is no tchar),
// or "unknown".
std::string forwarded_node(std::string_view ip) {
    if (ip.empty()) return "unknown";
    if (ip.find(':') != std::string_view::npos) return "\"[" + std::string(ip) + "]\"";
    return std::string(ip);
}

// A parameter value: a token as is, anything else a quoted-string (RFC 9110 5.6.4).
std::string forwarded_value(std::string_view v) {
    bool token = !v.empty();
    for (const char c : v) token = token && http::is_tchar(static_cast<unsigned char>(c));
    if (token) return std::string(v);
    std::string out = "\"";
    for (const char c : v) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    out += '"';
    return out;
}

std::string_view version_text(int version) noexcept {
    return version == 20 ? "2" : version == 10 ? "1.0" : "1.1";
}

void set_field(std::vector<Field>& out, std::string_view name, std::string value) {
    std::erase_if(out, [&](const Field& f) { return ascii::iequals(f.first, name); });
    out.emplace_back(std::string(name), std::move(value));
}

// Appends `item` to the list field `name` (one comma-joined field: RFC 9110 5.3).
void append_list(std::vector<Field>& out, std::string_view name, std::string_view item) {
    std::string joined;
    for (const Field& f : out)
        if (ascii::iequals(f.first, name)) {
            if (!joined.empty()) joined += ", ";
            joined += f.second;
        }
    if (!joined.empty()) joined += ", ";
    joined += item;
    set_field(out, name, std::move(joined));
}

}  // namespace

bool hop_by_hop(std::string_view name) noexcept {
    for (const std::string_view h : kHopByHop)
        if (ascii::iequals(name, h)) return true;
    return false;
}

bool named_by_connection(const std::vector<std::string_view>& connection,
                         std::string_view name) noexcept {
    bool named = false;
    for (const std::string_view v : connection)
        ascii::for_each_list_item(v, [&](std::string_view item) {
            if (ascii::iequals(item, name)) named = true;
        });
    return named;
}

std::vector<Field> request_fields(const std::vector<Header>& fields, const ClientInfo& client,
                                  int version, const ReverseProxyOptions& o) {
    std::vector<std::string_view> connection;
    for (const Header& h : fields)
        if (ascii::iequals(h.name, "connection")) connection.push_back(h.value);
    std::vector<Field> out;
    out.reserve(fields.size() + 4);
    for (const Header& h : fields) {
        if (h.name.empty() || hop_by_hop(h.name) || named_by_connection(connection, h.name))
            continue;
        // The client writes the framing and Host; 100-continue was answered here already.
        if (in(h.name, {"host", "content-length", "expect"})) continue;
        if (h.name.front() == ':') continue;  // an HTTP/2 pseudo-field
        if (forwarding_field(h.name) && !(client.trusted && (o.x_forwarded || o.forwarded))) {
            // A client's own claim is dropped; a trusted proxy's is kept only for the families
            // this proxy writes (they are appended to below).
            continue;
        }
        out.emplace_back(std::string(h.name), std::string(h.value));
    }
    if (o.x_forwarded) {
        if (!client.ip.empty()) append_list(out, "X-Forwarded-For", client.ip);
        bool has_proto = false, has_host = false;
        for (const Field& f : out) {
            has_proto = has_proto || ascii::iequals(f.first, "x-forwarded-proto");
            has_host = has_host || ascii::iequals(f.first, "x-forwarded-host");
        }
        // A trusted proxy's values describe the original request: kept.
        if (!(client.trusted && has_proto))
            set_field(out, "X-Forwarded-Proto", std::string(client.scheme));
        if (!(client.trusted && has_host) && !client.host.empty())
            set_field(out, "X-Forwarded-Host", std::string(client.host));
    } else {
        std::erase_if(out, [](const Field& f) {
            return in(f.first, {"x-forwarded-for", "x-forwarded-proto", "x-forwarded-host"});
        });
    }
    if (o.forwarded) {
        std::string element = "for=" + forwarded_node(client.ip);
        if (!client.host.empty()) element += ";host=" + forwarded_value(client.host);
        element += ";proto=" + forwarded_value(client.scheme);
        append_list(out, "Forwarded", element);
    } else {
        std::erase_if(out, [](const Field& f) { return ascii::iequals(f.first, "forwarded"); });
    }
    if (!o.via.empty()) {
        std::string via(version_text(version));
        via += ' ';
        via += o.via;
        append_list(out, "Via", via);
    }
    for (const std::string& name : o.remove_request_headers)
        std::erase_if(out, [&](const Field& f) { return ascii::iequals(f.first, name); });
    for (const auto& [name, value] : o.set_request_headers) set_field(out, name, value);
    return out;
}

}  // namespace vela::proxy
