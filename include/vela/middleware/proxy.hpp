#pragma once
// Trusted reverse proxies: the client's address, scheme and host as a proxy reports them, as
// middleware (a before hook: synchronous).
//
//     app.use(vela::trusted_proxies({.proxies = {"10.0.0.0/8", "fd00::/8"}}));
//     app.get("/ip", [](vela::Request& r) { return std::string(r.client_ip()); });
//
// Only when the connection's peer (req.remote_ip()) is a trusted proxy are the forwarding
// headers read; from any other peer they are ignored, so a client cannot claim an address.
//  * X-Forwarded-For is walked from the right (the entry the nearest proxy appended), past
//    entries that are themselves trusted proxies; the first untrusted address is the client.
//    A malformed entry stops the walk (the last trusted address found is then the client).
//  * X-Forwarded-Proto ("http" or "https") and X-Forwarded-Host (a valid host[:port]) are
//    taken from the same position from the right as the client's entry, or from their
//    leftmost entry when the list is shorter (a proxy that overwrites writes one value).
//  * RFC 7239 Forwarded (off by default, see ProxyOptions::forwarded) is walked the same way
//    by its elements' for= parameters (quoted IPv6 in brackets, ports dropped); for=unknown,
//    obfuscated identifiers ("_hidden") and a missing for= stop the walk like a malformed
//    entry. proto= and host= come from the client's element. When both families are enabled
//    and a request has a Forwarded field, Forwarded wins and X-Forwarded-* are ignored.
// The results reach req.client_ip(), req.scheme() and req.host() through req.set_forwarded()
// (addresses in canonical text form, so "::0001" and "::1" are one client).
// Install it first (before rate limits, access logs and security_headers, which read them).

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {

/// Which proxies trusted_proxies() believes.
struct ProxyOptions {
    /// Trusted proxy addresses and ranges: "10.0.0.5", "10.0.0.0/8", "::1", "fd00::/8";
    /// the names "loopback" (127.0.0.0/8, ::1), "private" (10/8, 172.16/12, 192.168/16,
    /// fc00::/7) and "linklocal" (169.254/16, fe80::/10); "*" trusts any peer and needs
    /// max_hops (for platforms whose proxy addresses are unknown but fixed in number).
    /// IPv4 ranges also match IPv4-mapped IPv6 peers (::ffff:10.0.0.5).
    std::vector<std::string> proxies{};
    /// At most this many addresses are taken from the header (0: no limit). With 1, the
    /// rightmost entry is the client whatever it is (one proxy in front, which appends).
    std::size_t max_hops = 0;
    /// Read X-Forwarded-For / -Proto / -Host (nginx, HAProxy, cloud load balancers).
    bool x_forwarded = true;
    /// Read RFC 7239 Forwarded. Enable only when the proxies write (and overwrite) it: a
    /// proxy that passes a client's Forwarded field on untouched lets the client choose it.
    bool forwarded = false;
    /// Trust a peer on a Unix domain socket (a local proxy; remote_ip() is then empty).
    bool unix_socket = false;
};

/// The trusted-proxy middleware (a before hook that never answers; see above). Throws
/// std::invalid_argument (one line) for an address or range that does not parse, an empty
/// list, or "*" without max_hops.
std::function<std::optional<Response>(Request&)> trusted_proxies(ProxyOptions options);

}  // namespace vela
