#pragma once
// HTTP cookies (RFC 6265bis): the Set-Cookie fields a response sends and the Cookie fields a
// request carries.
//
//     res.set_cookie({.name = "theme", .value = "dark", .max_age = std::chrono::days(30),
//                     .http_only = true, .same_site = vela::SameSite::lax});
//     res.clear_cookie("theme");
//     std::optional<std::string_view> theme = req.cookie("theme");
//
// set_cookie checks what it is given and throws std::invalid_argument rather than send a
// field a browser would drop or misread; two attributes are forced on instead of refused:
// SameSite=None and Partitioned each need Secure, so they set it. The cookie prefixes are
// enforced: "__Secure-" needs Secure, "__Host-" needs Secure, Path=/ and no Domain.
// Reading is allocation-free (Request::cookie) and lenient: malformed pairs are skipped.
// Signed and encrypted cookies are in vela/web/cookies.hpp.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace vela {

/// The SameSite attribute (RFC 6265bis 5.6.7); `unset` sends none (browsers then use Lax).
enum class SameSite { unset, strict, lax, none };

/// A cookie to send with Response::set_cookie. Fields in the order designated initializers
/// need: `{.name = "id", .value = v, .secure = true}`. Every member has a default member
/// initializer, so leaving some out does not trip -Wmissing-field-initializers.
struct Cookie {
    /// The name: an RFC 9110 token (letters, digits and !#$%&'*+-.^_`|~).
    std::string name{};
    /// The value: cookie-octets (printable ASCII except space, '"', ',', ';' and '\'), may be
    /// wrapped in one pair of '"'. Encode anything else (e.g. with vela::base64url_encode).
    std::string value{};
    /// Expires: an absolute expiry time, sent as an IMF-fixdate.
    std::optional<std::chrono::system_clock::time_point> expires{};
    /// Max-Age: seconds until expiry (0 or less deletes it); wins over `expires` in browsers.
    std::optional<std::chrono::seconds> max_age{};
    /// Domain: empty sends none (a host-only cookie, the safer choice).
    std::string domain{};
    /// Path; defaults to "/" (the whole site). Empty sends none (the browser then uses the
    /// request path's directory).
    std::string path = "/";
    /// Secure: sent back only over HTTPS (forced on by SameSite=None, Partitioned and the
    /// "__Secure-"/"__Host-" prefixes' rules).
    bool secure = false;
    /// HttpOnly: not visible to JavaScript (document.cookie).
    bool http_only = false;
    /// Partitioned (CHIPS): stored per top-level site; forces Secure.
    bool partitioned = false;
    /// SameSite; SameSite::none forces Secure.
    SameSite same_site = SameSite::unset;
};

/// The Set-Cookie field value for `c` ("name=value; Path=/; ..."), with Secure forced on where
/// SameSite=None or Partitioned need it. Throws std::invalid_argument with the reason when
/// the name, value, domain or path may not be sent or a prefix's rules are broken.
std::string format_set_cookie(const Cookie& c);

/// Reads the next cookie-pair from a Cookie field value, advancing `field` past it. Pairs are
/// separated by ';'; spaces and tabs around names and values are dropped, as is one pair of
/// '"' around a value; pieces without '=' or with an empty name are skipped. Returns false
/// when no pair is left. Pure and allocation-free (the fuzzer drives it).
bool next_cookie(std::string_view& field, std::string_view& name, std::string_view& value) noexcept;

}  // namespace vela
