#pragma once
// Byte ranges (RFC 9110 section 14): the Range header resolved against a representation's
// length, If-Range, and the Content-Range text.
//
// Defences against the range DoS (many small, overlapping or backwards ranges that make the
// server send a file many times over): more than RangeLimits::max_ranges specs ignore the
// header (the whole representation is sent, as RFC 9110 14.2 allows), and the satisfiable
// ranges are sorted and coalesced where they overlap or touch, so a response never carries a
// byte twice and never more bytes than the representation (plus part heads).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vela {

/// One satisfiable byte range, both ends inclusive and below the representation's length.
struct ByteRange {
    /// The first byte.
    std::uint64_t first = 0;
    /// The last byte (inclusive).
    std::uint64_t last = 0;
    /// Number of bytes in the range.
    std::uint64_t length() const noexcept { return last - first + 1; }
    /// Equality (for tests).
    bool operator==(const ByteRange&) const = default;
};

/// Caps applied while reading a Range header.
struct RangeLimits {
    /// More range specs than this (before coalescing) and the header is ignored.
    std::size_t max_ranges = 16;
};

/// What a Range header asks for.
enum class RangeResult : std::uint8_t {
    none,           ///< no usable Range (absent, another unit, malformed, too many): send all (200)
    partial,        ///< 206: `out` holds one or more sorted, disjoint ranges
    unsatisfiable,  ///< 416: no range overlaps the representation
};

/// Reads a Range header value (e.g. "bytes=0-99, -500, 1000-") against a representation of
/// `size` bytes. The unit is matched case-insensitively; whitespace around specs is allowed.
/// On `partial`, `out` is replaced by the coalesced ranges (ascending, disjoint, non-adjacent).
RangeResult parse_range(std::string_view header, std::uint64_t size, std::vector<ByteRange>& out,
                        const RangeLimits& limits = {});

/// If-Range (RFC 9110 13.1.5): true when the range request may be honoured, i.e. `if_range`
/// is an entity-tag that strongly matches `etag` (a weak tag never matches), or an HTTP-date
/// exactly equal to `last_modified` (seconds since the epoch; nullopt = unknown, no match).
bool if_range_matches(std::string_view if_range, std::string_view etag,
                      std::optional<std::int64_t> last_modified) noexcept;

/// "bytes first-last/size" (the value of Content-Range in a 206 or a part).
std::string content_range(const ByteRange& r, std::uint64_t size);
/// "bytes */size" (the value of Content-Range in a 416).
std::string content_range_unsatisfied(std::uint64_t size);

}  // namespace vela
