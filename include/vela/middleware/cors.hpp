#pragma once
// CORS (the Fetch standard's CORS protocol) as middleware.
//
//     app.use(vela::cors({
//         .origins = {"https://app.example.com", "http://localhost:5173"},
//         .credentials = true,                       // cookies / Authorization from the browser
//         .max_age = std::chrono::hours(2),          // preflight cached by the browser
//     }));
//     api.use(vela::cors({.origins = {"*"}}));       // or on a group only
//
// cors() converts to vela::Hooks (a synchronous before/after pair: no coroutine frame, no
// allocation on the route). Installed with app.use() it also sees requests that match no
// route; installed on a group, the requests to that group's paths (405 and automatic OPTIONS
// answers included).
//
// A preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered by the
// middleware itself with 204, whether or not the route has an OPTIONS handler (the handler is
// never called for a preflight): with the Access-Control-Allow-* headers when the origin is
// allowed, and without any CORS header when it is not (what the Fetch standard reads as a
// failed preflight, and what ASP.NET Core and Express answer too). Other requests go to the
// handler; when their Origin is allowed the response gets Access-Control-Allow-Origin (and
// -Credentials, -Expose-Headers). `Vary: Origin` is added to every response whose headers
// depend on the Origin (all of them, except with origins {"*"} and no credentials, where
// every response says `Access-Control-Allow-Origin: *`). With credentials the answer never
// says `*`: origins {"*"} then echoes the request's Origin (any site may then make
// credentialed requests: use it only for deliberately public APIs).
//
// The options are checked when the middleware is made (std::invalid_argument, one line).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/web/middleware.hpp"

namespace vela {

/// What cors() allows. Set `origins` or `origin_predicate` (exactly one).
struct CorsOptions {
    /// Allowed origins as browsers send them: scheme, host and port if not the default
    /// ("https://app.example.com", "http://localhost:5173"), no path or trailing slash; compared
    /// case-insensitively. {"*"}: any origin. "null" (sandboxed documents, file: URLs) only
    /// when listed, which is rarely wise.
    std::vector<std::string> origins{};
    /// Decides per Origin value instead of `origins` (e.g. every subdomain of a site); called
    /// on every cross-origin request, from any loop thread at once.
    std::function<bool(std::string_view origin)> origin_predicate{};
    /// Methods a preflight may ask for (case-sensitive tokens); {"*"}: any (the requested
    /// method is echoed, so it also works with credentials).
    std::vector<std::string> methods = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};
    /// Request headers a preflight may ask for (case-insensitive); {"*"}: any (the request's
    /// Access-Control-Request-Headers is echoed, which unlike the Fetch wildcard also covers
    /// Authorization and works with credentials).
    std::vector<std::string> allowed_headers = {"Content-Type", "Authorization"};
    /// Response headers the browser lets scripts read beyond the CORS-safelisted ones
    /// (Access-Control-Expose-Headers). {"*"} is refused with credentials (browsers would
    /// read it as a header named "*").
    std::vector<std::string> exposed_headers{};
    /// Allows credentials (cookies, HTTP authentication, client certificates):
    /// Access-Control-Allow-Credentials: true.
    bool credentials = false;
    /// How long the browser may cache a preflight answer (Access-Control-Max-Age; browsers cap
    /// it, Chromium at 2 hours). Unset: the header is not sent (browsers then use 5 seconds).
    std::optional<std::chrono::seconds> max_age{};
    /// Answers Private Network Access preflights (Access-Control-Request-Private-Network:
    /// true) with Access-Control-Allow-Private-Network: true, letting public sites reach this
    /// server on a private address.
    bool private_network = false;
};

/// A CORS policy (see above), used as middleware through its conversion to Hooks.
/// Copies share the policy; it is read-only and safe to use from every loop.
class Cors {
  public:
    /// Checks `options` and builds the policy; throws std::invalid_argument (one line).
    explicit Cors(CorsOptions options);

    /// Answers a preflight (204, see above); nullopt for any other request.
    std::optional<Response> preflight(const Request& req) const;
    /// Adds the CORS headers and Vary to a response; leaves one that already has
    /// Access-Control-Allow-Origin (a preflight answer, or set by the handler) as it is.
    void apply(const Request& req, Response& res) const;
    /// True when `origin` (an Origin header value) is allowed.
    bool origin_allowed(std::string_view origin) const;

    /// The policy as a before/after hook pair for App::use / Group::use.
    Hooks hooks() const;
    /// As hooks(): `app.use(vela::cors(...))`.
    operator Hooks() const { return hooks(); }  // NOLINT: implicit on purpose

  private:
    struct Policy;
    std::shared_ptr<const Policy> p_;
};

/// A CORS policy from `options` (see Cors); throws std::invalid_argument (one line).
Cors cors(CorsOptions options);

}  // namespace vela
