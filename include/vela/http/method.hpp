#pragma once
// HTTP request methods (RFC 9110 section 9).

#include <cstdint>
#include <string_view>

namespace vela {

/// Request methods vela routes; anything else parses as Method::other (answered 501).
enum class Method : std::uint8_t {
    GET,
    HEAD,
    POST,
    PUT,
    DELETE,
    CONNECT,
    OPTIONS,
    TRACE,
    PATCH,
    other
};

/// Number of Method values, Method::other included (the size of per-method tables).
inline constexpr std::size_t kMethodCount = 10;

/// Method from its token (case-sensitive, as RFC 9110 9.1 requires).
constexpr Method method_from(std::string_view s) noexcept {
    switch (s.size()) {
        case 3:
            if (s == "GET") return Method::GET;
            if (s == "PUT") return Method::PUT;
            break;
        case 4:
            if (s == "POST") return Method::POST;
            if (s == "HEAD") return Method::HEAD;
            break;
        case 5:
            if (s == "PATCH") return Method::PATCH;
            if (s == "TRACE") return Method::TRACE;
            break;
        case 6:
            if (s == "DELETE") return Method::DELETE;
            break;
        case 7:
            if (s == "OPTIONS") return Method::OPTIONS;
            if (s == "CONNECT") return Method::CONNECT;
            break;
    }
    return Method::other;
}

/// The method's token ("GET", ...); "" for Method::other.
constexpr std::string_view method_name(Method m) noexcept {
    constexpr std::string_view names[] = {"GET",     "HEAD",    "POST",  "PUT",   "DELETE",
                                          "CONNECT", "OPTIONS", "TRACE", "PATCH", ""};
    return names[static_cast<int>(m)];
}

}  // namespace vela
