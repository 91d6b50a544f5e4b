// The header rewriting of the reverse proxy (RFC 9110 7.6, RFC 7239): pure functions over
// field lists, driven by the handler and by fuzz/fuzz_proxy_fields.cpp.

#include <string>
#include <string_view>
#include <vector>

#include "proxy/fields.hpp"
#include "vela/base/ascii.hpp"
#include "vela/http/char_class.hpp"
#include "vela/proxy/reverse_proxy.hpp"

namespace vela::proxy {

namespace {

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

FieldKind classify(std::string_view n) noexcept {
    using ascii::iequals;
    switch (n.size()) {
        case 2:
            return iequals(n, "te") ? FieldKind::hop : FieldKind::other;
        case 3:
            return iequals(n, "via") ? FieldKind::via : FieldKind::other;
        case 4:
            if (iequals(n, "date")) return FieldKind::date;
            return iequals(n, "host") ? FieldKind::host : FieldKind::other;
        case 6:
            if (iequals(n, "server")) return FieldKind::server;
            return iequals(n, "expect") ? FieldKind::expect : FieldKind::other;
        case 7:
            // (Trailer is end to end: it announces the trailers the proxy passes on.)
            return iequals(n, "upgrade") ? FieldKind::hop : FieldKind::other;
        case 9:
            return iequals(n, "forwarded") ? FieldKind::forwarding : FieldKind::other;
        case 10:
            if (iequals(n, "connection")) return FieldKind::connection;
            return iequals(n, "keep-alive") ? FieldKind::hop : FieldKind::other;
        case 12:
            return iequals(n, "content-type") ? FieldKind::content_type : FieldKind::other;
        case 14:
            return iequals(n, "content-length") ? FieldKind::content_length : FieldKind::other;
        case 15:
            return iequals(n, "x-forwarded-for") ? FieldKind::forwarding : FieldKind::other;
        case 16:
            if (iequals(n, "proxy-connection")) return FieldKind::hop;
            return iequals(n, "x-forwarded-host") ? FieldKind::forwarding : FieldKind::other;
        case 17:
            if (iequals(n, "transfer-encoding")) return FieldKind::hop;
            return iequals(n, "x-forwarded-proto") ? FieldKind::forwarding : FieldKind::other;
        case 18:
            return iequals(n, "proxy-authenticate") ? FieldKind::hop : FieldKind::other;
        case 19:
            return iequals(n, "proxy-authorization") ? FieldKind::hop : FieldKind::other;
        default:
            return FieldKind::other;
    }
}

bool hop_by_hop(std::string_view name) noexcept {
    const FieldKind k = classify(name);
    return k == FieldKind::hop || k == FieldKind::connection;
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
        if (h.name.size() == 10 && ascii::iequals(h.name, "connection"))
            connection.push_back(h.value);
    std::vector<Field> out;
    out.reserve(fields.size() + 6);  // what is added below, and the Host a caller puts first
    const bool keep_forwarding = client.trusted && (o.x_forwarded || o.forwarded);
    for (const Header& h : fields) {
        if (h.name.empty() || h.name.front() == ':') continue;  // ':': an HTTP/2 pseudo-field
        switch (classify(h.name)) {
            case FieldKind::hop:
            case FieldKind::connection:
            // The client writes the framing and Host; 100-continue was answered here already.
            case FieldKind::host:
            case FieldKind::content_length:
            case FieldKind::expect:
                continue;
            case FieldKind::forwarding:
                // A client's own claim is dropped; a trusted proxy's is kept only for the
                // families this proxy writes (they are appended to below).
                if (!keep_forwarding) continue;
                break;
            default:
                break;
        }
        if (!connection.empty() && named_by_connection(connection, h.name)) continue;
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
            return classify(f.first) == FieldKind::forwarding &&
                   !ascii::iequals(f.first, "forwarded");
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
