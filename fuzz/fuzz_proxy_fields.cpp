// Feeds arbitrary header lists to the reverse proxy's request-field rewriting
// (vela::proxy::request_fields). The first byte picks the options (X-Forwarded-*, Forwarded,
// Via, trusted or not, the request's version); the rest is split at '\n' into "name: value"
// fields, those a request parser would refuse (no name, CR, LF or NUL) left out. Whatever the
// fields, what goes upstream must hold: no hop-by-hop field and none that Connection names,
// no Host, Content-Length or Expect, exactly one X-Forwarded-For ending in the peer's address
// (only the peer's when the client is not trusted), one Via ending in ours (when on), no field
// without a name or with CR, LF or NUL, and a set_request_headers value once and as given.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vela/base/ascii.hpp"
#include "vela/proxy/reverse_proxy.hpp"

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

bool clean(std::string_view s) {
    for (const char c : s)
        if (c == '\r' || c == '\n' || c == '\0') return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const unsigned bits = data[0];
    const std::string input(reinterpret_cast<const char*>(data + 1), size - 1);

    std::vector<vela::Header> fields;
    std::string_view rest = input;
    while (!rest.empty() && fields.size() < 64) {
        const std::size_t nl = rest.find('\n');
        const std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
        const std::size_t colon = line.find(':');
        if (colon == 0 || colon == std::string_view::npos) continue;
        const std::string_view name = line.substr(0, colon);
        const std::string_view value = vela::ascii::trim_ows(line.substr(colon + 1));
        if (!clean(name) || !clean(value) || name.find(' ') != std::string_view::npos) continue;
        fields.push_back({name, value});
    }

    vela::ReverseProxyOptions o;
    o.x_forwarded = bits & 1;
    o.forwarded = bits & 2;
    if (bits & 4) o.via.clear();
    o.set_request_headers = {{"X-Set", "given"}};
    o.remove_request_headers = {"X-Remove"};
    const vela::proxy::ClientInfo client{(bits & 8) ? "::1" : "192.0.2.7",
                                         (bits & 16) ? "https" : "http", "front.example:8080",
                                         (bits & 32) != 0};
    const int version = (bits & 64) ? 20 : (bits & 128) ? 10 : 11;
    const std::vector<vela::proxy::Field> out =
        vela::proxy::request_fields(fields, client, version, o);

    std::vector<std::string_view> connection;
    for (const vela::Header& h : fields)
        if (vela::ascii::iequals(h.name, "connection")) connection.push_back(h.value);
    int xff = 0, via = 0, set = 0;
    for (const auto& [name, value] : out) {
        check(!name.empty() && clean(name) && clean(value));
        check(!vela::proxy::hop_by_hop(name));
        check(!vela::proxy::named_by_connection(connection, name) ||
              vela::ascii::iequals(name, "x-set") ||
              vela::ascii::iequals(name, "x-forwarded-for") ||
              vela::ascii::iequals(name, "x-forwarded-proto") ||
              vela::ascii::iequals(name, "x-forwarded-host") ||
              vela::ascii::iequals(name, "forwarded") || vela::ascii::iequals(name, "via"));
        for (const std::string_view own : {"host", "content-length", "expect", "x-remove"})
            check(!vela::ascii::iequals(name, own));
        if (vela::ascii::iequals(name, "x-forwarded-for")) {
            ++xff;
            check(value.ends_with(client.ip));
            if (!client.trusted) check(value == client.ip);
        }
        if (vela::ascii::iequals(name, "via") && !o.via.empty()) {
            ++via;
            check(value.ends_with(" vela"));
        }
        if (vela::ascii::iequals(name, "x-set")) {
            ++set;
            check(value == "given");
        }
        if (vela::ascii::iequals(name, "forwarded")) {
            check(o.forwarded);
            if (!client.trusted) check(value.starts_with("for="));
        }
    }
    check(xff == (o.x_forwarded ? 1 : 0));
    check(via == (o.via.empty() ? 0 : 1));  // with Via off, a client's passes untouched
    check(set == 1);
    return 0;
}
