#pragma once
// Absolute URLs as an HTTP client takes them (RFC 3986 3, with the http and https schemes of
// RFC 9110 4.2), and the origin a connection pool is keyed by.
//
//     http://host[:port][/path][?query]        https://user:pw@[::1]:8443/a?b=c
//     http+unix://%2Frun%2Fapp.sock/path       (a Unix socket, the path percent-encoded)
//     ws://, wss:// (WebSocket, RFC 6455 3), the same forms as http and https
//
// Parsing is strict where a lax reading would send a request somewhere else than the user
// meant (a host with spaces, a port past 65535, a backslash, an unknown scheme) and
// forgiving where it cannot (the path and query are sent as written, after checking that they
// hold no bytes a request line may not carry). A fragment is dropped (RFC 9110 4.2.4).

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vela::http {

/// A URL's scheme.
enum class Scheme : std::uint8_t { http, https, http_unix, ws, wss };

/// A URL broken into what a client needs (see above).
struct Url {
    /// The scheme.
    Scheme scheme = Scheme::http;
    /// Host name or address; an IPv6 address without its brackets; for http+unix the socket
    /// path, decoded.
    std::string host;
    /// The port (the scheme's default when the URL has none; 0 for http+unix).
    std::uint16_t port = 80;
    /// The request target: path and query ("/" when the URL has no path).
    std::string target = "/";
    /// User information before '@', percent-decoded (sent as Basic credentials), or empty.
    std::string user;
    /// The password of the user information, percent-decoded.
    std::string password;
    /// True when the URL carried user information.
    bool has_userinfo = false;

    /// Parses an absolute URL; throws std::invalid_argument with a one-line reason.
    static Url parse(std::string_view url);
    /// Resolves `reference` (a Location value: absolute, scheme-relative, absolute path or
    /// relative path, RFC 3986 5.2) against this URL.
    Url resolve(std::string_view reference) const;

    /// True for https and wss.
    bool secure() const noexcept { return scheme == Scheme::https || scheme == Scheme::wss; }
    /// True when the host is an IPv4 or IPv6 literal.
    bool host_is_ip() const noexcept;
    /// The Host field value: host[:port] (the port only when it is not the default; IPv6 in
    /// brackets; "localhost" for a Unix socket).
    std::string authority() const;
    /// The pool key: scheme, host and port ("https://example.com:443"); a ws URL shares its
    /// http counterpart's key.
    std::string origin() const;
    /// The URL written back (without the user information).
    std::string to_string() const;
};

/// The default port of a scheme (80, 443; 0 for http+unix).
std::uint16_t default_port(Scheme s) noexcept;

}  // namespace vela::http
