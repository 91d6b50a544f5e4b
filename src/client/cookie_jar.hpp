#pragma once
// The client's cookie jar (RFC 6265 5.3-5.4): Set-Cookie fields of responses are stored by
// domain, path and name; requests get the cookies whose domain and path match their URL, the
// Secure ones only over https, longest paths first. Shared by every loop of a Client (one
// mutex; a jar is touched once per response with Set-Cookie and once per request).
//
// Without a public-suffix list, a Domain attribute is accepted only when it is the request's
// own host or a parent of it with at least one dot ("example.com" from "a.example.com", never
// "com"), and never on an IP address.

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "vela/client/url.hpp"

namespace vela::http::detail {

/// The cookies a Client keeps (see above).
class CookieJar {
  public:
    /// Stores what the Set-Cookie field `value` (received from `url` at `now`, seconds since
    /// the epoch) says; malformed or foreign cookies are ignored.
    void store(const Url& url, std::string_view value, std::int64_t now);
    /// The Cookie field value for a request to `url` at `now` (empty: none).
    std::string header_for(const Url& url, std::int64_t now);
    /// Forgets every cookie.
    void clear();
    /// Cookies kept (expired ones may still be counted until the next lookup).
    std::size_t size();

  private:
    struct Cookie {
        std::string name, value, domain, path;
        std::int64_t expires = -1;  // -1: a session cookie
        bool host_only = true;
        bool secure = false;
        std::uint64_t order = 0;  // creation order (RFC 6265 5.4 step 2)
    };
    std::mutex mu_;
    std::vector<Cookie> cookies_;
    std::uint64_t next_order_ = 0;
};

}  // namespace vela::http::detail
