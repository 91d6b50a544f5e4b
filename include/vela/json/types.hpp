#pragma once
// Value types with a JSON meaning of their own: raw JSON passthrough and RFC 3339 times.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vela::json {

/// JSON text passed through untouched: read as the exact text of any valid value, written
/// as it is (the writer trusts it to be valid JSON; empty is written as null).
struct Raw {
    /// The JSON text; empty is written as null.
    std::string json;
    /// True when both hold the same text.
    bool operator==(const Raw&) const = default;
};

/// Room format_rfc3339() needs.
inline constexpr std::size_t kRfc3339MaxLength = 32;

/// Writes the instant `seconds` + `nanos` after the Unix epoch as an RFC 3339 UTC date-time
/// ("2024-05-01T12:30:00Z", with 3, 6 or 9 fraction digits when needed) into `out`, which
/// has room for kRfc3339MaxLength characters; returns its length, 0 outside years 0000-9999.
std::size_t format_rfc3339(std::int64_t seconds, std::uint32_t nanos, char* out) noexcept;

/// Parses an RFC 3339 date-time (section 5.6, any offset, fraction digits past 9 truncated)
/// into seconds and nanoseconds after the Unix epoch (UTC); false if `text` is not one.
bool parse_rfc3339(std::string_view text, std::int64_t& seconds, std::uint32_t& nanos) noexcept;

}  // namespace vela::json
