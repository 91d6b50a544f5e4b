#pragma once
// Conditional requests (RFC 9110 section 13): HTTP dates, entity-tag comparison and the
// evaluation order of If-Match, If-Unmodified-Since, If-None-Match and If-Modified-Since.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vela/http/method.hpp"

namespace vela {

class Request;

/// Parses an HTTP-date (IMF-fixdate, and the obsolete RFC 850 and asctime forms RFC 9110 5.6.7
/// requires recipients to accept) into seconds since the epoch; nullopt when invalid.
std::optional<std::int64_t> parse_http_date(std::string_view text) noexcept;
/// Formats seconds since the epoch as an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT").
std::string format_http_date(std::int64_t seconds);

/// True for a syntactically valid entity-tag (`"xyz"` or `W/"xyz"`, RFC 9110 8.8.3).
bool valid_etag(std::string_view tag) noexcept;
/// Entity-tag comparison (RFC 9110 8.8.3.2): strong needs both tags strong and equal opaque
/// parts; weak compares the opaque parts only.
bool etag_equal(std::string_view a, std::string_view b, bool weak) noexcept;
/// True when the If-Match / If-None-Match field value `list` ("*" or a comma-separated list of
/// entity-tags) matches `etag` (empty `etag`: the representation has none, only "*" matches
/// when `exists`). Malformed members are skipped.
bool etag_list_matches(std::string_view list, std::string_view etag, bool weak,
                       bool exists = true) noexcept;

/// The outcome of evaluating a request's preconditions.
enum class Precondition : std::uint8_t {
    proceed,       ///< no condition stops the request
    not_modified,  ///< 304 (GET/HEAD whose If-None-Match / If-Modified-Since says unchanged)
    failed,        ///< 412 Precondition Failed
};

/// Evaluates the request's preconditions in the order of RFC 9110 13.2.2 against the selected
/// representation's `etag` (empty: none) and `last_modified` (seconds since the epoch; nullopt:
/// unknown):
///  1. If-Match present: false -> failed (if any header field repeats, all are joined).
///  2. else If-Unmodified-Since valid and last_modified later than it -> failed.
///  3. If-None-Match present: true -> not_modified for GET/HEAD, failed otherwise.
///  4. else for GET/HEAD, If-Modified-Since valid and last_modified not later -> not_modified.
/// An invalid date is ignored (as the RFC says).
Precondition evaluate_preconditions(const Request& req, std::string_view etag,
                                    std::optional<std::int64_t> last_modified);

}  // namespace vela
