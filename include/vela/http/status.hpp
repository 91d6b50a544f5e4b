#pragma once
// HTTP status codes (RFC 9110 section 15).

#include <cstdint>
#include <string_view>

namespace vela {

/// A status code; any value 100-999 is allowed, the named ones are the common ones.
enum class Status : std::uint16_t {
    Continue = 100,
    SwitchingProtocols = 101,
    OK = 200,
    Created = 201,
    Accepted = 202,
    NoContent = 204,
    PartialContent = 206,
    MovedPermanently = 301,
    Found = 302,
    SeeOther = 303,
    NotModified = 304,
    TemporaryRedirect = 307,
    PermanentRedirect = 308,
    BadRequest = 400,
    Unauthorized = 401,
    Forbidden = 403,
    NotFound = 404,
    MethodNotAllowed = 405,
    NotAcceptable = 406,
    RequestTimeout = 408,
    Conflict = 409,
    Gone = 410,
    LengthRequired = 411,
    PreconditionFailed = 412,
    PayloadTooLarge = 413,
    UriTooLong = 414,
    UnsupportedMediaType = 415,
    RangeNotSatisfiable = 416,
    ExpectationFailed = 417,
    UnprocessableContent = 422,
    UpgradeRequired = 426,
    TooManyRequests = 429,
    RequestHeaderFieldsTooLarge = 431,
    InternalServerError = 500,
    NotImplemented = 501,
    BadGateway = 502,
    ServiceUnavailable = 503,
    GatewayTimeout = 504,
    HttpVersionNotSupported = 505,
};

/// The reason phrase for `s` ("OK", "Not Found", ...); "Unknown" when not known.
std::string_view reason_phrase(Status s) noexcept;

/// The numeric value of `s`.
constexpr int code(Status s) noexcept { return static_cast<int>(s); }

}  // namespace vela
