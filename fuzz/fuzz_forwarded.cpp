// Feeds arbitrary bytes to trusted_proxies(). The first byte picks the options (Forwarded on
// or off, a hop limit, "*"); the rest is split at '\n' into header values given, in turn, to
// X-Forwarded-For, X-Forwarded-Proto, X-Forwarded-Host and Forwarded, from a trusted peer.
// Whatever the bytes, the hook must not crash and what it reports must be well formed: a
// client address that parses as IPv4 or IPv6 and prints back the same (canonical), a scheme
// of "http" or "https", a host of host characters only. From an untrusted peer nothing
// may change.

#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vela/http/request.hpp"
#include "vela/middleware/proxy.hpp"

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

bool canonical_ip(std::string_view s) {
    char buf[64] = {};
    if (s.empty() || s.size() >= sizeof buf) return false;
    s.copy(buf, s.size());
    unsigned char bin[16];
    char back[INET6_ADDRSTRLEN];
    if (inet_pton(AF_INET, buf, bin) == 1)
        return inet_ntop(AF_INET, bin, back, sizeof back) && s == back;
    if (inet_pton(AF_INET6, buf, bin) == 1)
        return inet_ntop(AF_INET6, bin, back, sizeof back) && s == back;
    return false;
}

bool host_chars(std::string_view h) {
    for (char c : h) {
        const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                        (c >= 'A' && c <= 'Z') || c == '-' || c == '.' || c == '_' || c == ':' ||
                        c == '[' || c == ']';
        if (!ok) return false;
    }
    return !h.empty();
}

using Hook = std::function<std::optional<vela::Response>(vela::Request&)>;

const Hook& hook(unsigned which) {
    static const Hook hooks[] = {
        vela::trusted_proxies({.proxies = {"10.0.0.0/8", "fd00::/8"}}),
        vela::trusted_proxies({.proxies = {"10.0.0.0/8", "fd00::/8"}, .forwarded = true}),
        vela::trusted_proxies(
            {.proxies = {"loopback", "private"}, .max_hops = 2, .forwarded = true}),
        vela::trusted_proxies(
            {.proxies = {"*"}, .max_hops = 1, .x_forwarded = false, .forwarded = true}),
    };
    return hooks[which % 4];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const unsigned options = data[0];
    const std::string input(reinterpret_cast<const char*>(data + 1), size - 1);

    static constexpr std::string_view names[] = {"X-Forwarded-For", "X-Forwarded-Proto",
                                                 "X-Forwarded-Host", "Forwarded"};
    std::vector<vela::Header> headers;
    std::string_view rest = input;
    for (std::size_t i = 0; !rest.empty() && i < 16; ++i) {
        const std::size_t nl = rest.find('\n');
        headers.push_back({names[i % 4], rest.substr(0, nl)});
        if (nl == std::string_view::npos) break;
        rest.remove_prefix(nl + 1);
    }

    for (const char* peer : {"10.1.2.3", "fd00::1", "203.0.113.1"}) {
        vela::ConnectionInfo info;
        const std::string_view p(peer);
        p.copy(info.ip, p.size());
        info.ip_size = static_cast<std::uint8_t>(p.size());
        vela::Request req;
        req.set_connection(&info);
        req.set_host("original.example");
        for (const vela::Header& h : headers) req.mutable_headers().push_back(h);
        check(!hook(options)(req));
        const bool changed = req.client_ip() != p;
        if (changed) check(canonical_ip(req.client_ip()));
        check(req.scheme() == "http" || req.scheme() == "https");
        check(host_chars(req.host()));
        if (p == "203.0.113.1" && (options % 4) != 3) {  // untrusted unless "*"
            check(!changed && req.scheme() == "http" && req.host() == "original.example");
        }
    }
    return 0;
}
