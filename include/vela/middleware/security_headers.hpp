#pragma once
// Security response headers with safe defaults, as middleware (an after hook: synchronous).
//
//     app.use(vela::security_headers());                           // the defaults below
//     app.use(vela::security_headers({
//         .hsts_include_subdomains = true,
//         .frame = vela::FrameOptions::same_origin,
//         .content_security_policy = std::string(vela::csp::strict_site),
//     }));
//
// By default every response gets
//     Strict-Transport-Security: max-age=31536000     (only on https: req.scheme() == "https")
//     X-Content-Type-Options: nosniff
//     X-Frame-Options: DENY
//     Content-Security-Policy: frame-ancestors 'none'
//     Referrer-Policy: strict-origin-when-cross-origin
// No full Content-Security-Policy is sent unless one is set: a policy has to list the
// site's own script and style sources, and a wrong default breaks pages silently. The csp::
// presets are starting points. A header the handler (or an inner middleware) already set is
// never overwritten. Values are checked when the middleware is made (std::invalid_argument).

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {

/// Whether other sites may frame the pages (X-Frame-Options and CSP frame-ancestors).
enum class FrameOptions : std::uint8_t {
    deny,         ///< X-Frame-Options: DENY, frame-ancestors 'none'
    same_origin,  ///< X-Frame-Options: SAMEORIGIN, frame-ancestors 'self'
    off,          ///< neither header
};

/// Content-Security-Policy presets (starting points; test them against the site).
namespace csp {
/// For JSON APIs: nothing may load, nothing may frame.
inline constexpr std::string_view api = "default-src 'none'; frame-ancestors 'none'";
/// For a site serving only its own scripts, styles, images and fonts (no inline script).
inline constexpr std::string_view strict_site =
    "default-src 'self'; base-uri 'self'; object-src 'none'; form-action 'self'; "
    "frame-ancestors 'none'; img-src 'self' data:; upgrade-insecure-requests";
}  // namespace csp

/// What security_headers() sends (empty strings: that header is not sent).
struct SecurityHeadersOptions {
    /// Send Strict-Transport-Security on https requests (never over plain http).
    bool hsts = true;
    /// HSTS max-age (0 tells browsers to forget an earlier HSTS).
    std::chrono::seconds hsts_max_age = std::chrono::seconds(31536000);
    /// Add includeSubDomains (every subdomain must then serve https).
    bool hsts_include_subdomains = false;
    /// Add preload (requires includeSubDomains and max-age of at least a year; see
    /// hstspreload.org before turning it on: leaving the list takes months).
    bool hsts_preload = false;
    /// Send X-Content-Type-Options: nosniff.
    bool nosniff = true;
    /// Framing policy (X-Frame-Options plus CSP frame-ancestors).
    FrameOptions frame = FrameOptions::deny;
    /// Referrer-Policy (a policy token, or a comma-separated fallback list).
    std::string referrer_policy = "strict-origin-when-cross-origin";
    /// A Content-Security-Policy (see csp::); frame-ancestors is appended from `frame` when
    /// the policy has none. Empty: only frame-ancestors is sent.
    std::string content_security_policy{};
    /// Send content_security_policy as Content-Security-Policy-Report-Only (the
    /// frame-ancestors part stays enforced in its own Content-Security-Policy).
    bool csp_report_only = false;
    /// Cross-Origin-Opener-Policy (same-origin, same-origin-allow-popups,
    /// noopener-allow-popups, unsafe-none).
    std::string cross_origin_opener_policy{};
    /// Cross-Origin-Resource-Policy (same-origin, same-site, cross-origin).
    std::string cross_origin_resource_policy{};
    /// Cross-Origin-Embedder-Policy (require-corp, credentialless, unsafe-none).
    std::string cross_origin_embedder_policy{};
    /// Permissions-Policy, as written ("camera=(), geolocation=(self)").
    std::string permissions_policy{};
};

/// The security headers middleware (an after hook; see above). Throws std::invalid_argument
/// (one line) for a value that is not valid for its header.
std::function<void(Request&, Response&)> security_headers(SecurityHeadersOptions options = {});

}  // namespace vela
