// Feeds arbitrary bytes to the Range parser (the first 8 bytes are the representation's
// length, the rest the header value) and checks the shape of every answer: ranges sorted,
// disjoint, non-adjacent, inside the representation, never more of them than the limit and
// never more bytes than the representation. The same bytes go to If-Range, the entity-tag
// list matcher and the HTTP-date parser, whose dates must survive a format/parse round trip.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "vela/http/conditional.hpp"
#include "vela/http/range.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}

void check_ranges(std::string_view header, std::uint64_t size, std::size_t max_ranges) {
    std::vector<vela::ByteRange> out;
    vela::RangeLimits limits;
    limits.max_ranges = max_ranges;
    const vela::RangeResult r = vela::parse_range(header, size, out, limits);
    if (r != vela::RangeResult::partial) {
        check(out.empty());
        return;
    }
    check(!out.empty() && out.size() <= max_ranges);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        check(out[i].first <= out[i].last && out[i].last < size);
        // Sorted, disjoint and not even touching the previous range (else it would be merged).
        if (i > 0) check(out[i].first > out[i - 1].last + 1);
        total += out[i].length();  // cannot wrap: the ranges are disjoint and below size
    }
    check(total <= size);
    // The Content-Range text is what the integer says.
    check(vela::content_range(out.front(), size)
              .starts_with("bytes " + std::to_string(out.front().first)));
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::uint64_t length = 0;
    const std::size_t head = size < 8 ? size : 8;
    std::memcpy(&length, data, head);
    const std::string_view text(reinterpret_cast<const char*>(data) + head, size - head);

    // The raw 64-bit length reaches the overflow edges; the small one makes ranges overlap.
    check_ranges(text, length, 16);
    check_ranges(text, length % 1024, 16);
    check_ranges(text, length % 64, 1 + length % 4);

    const std::string_view whole(reinterpret_cast<const char*>(data), size);
    const std::optional<std::int64_t> date = vela::parse_http_date(text);
    if (date) {
        const std::string formatted = vela::format_http_date(*date);
        check(formatted.size() == 29);
        check(vela::parse_http_date(formatted) == date);
        check(vela::if_range_matches(text, "\"x\"", date));  // a valid date matches itself
    }
    (void)vela::parse_http_date(whole);
    (void)vela::if_range_matches(whole, "\"abc\"", static_cast<std::int64_t>(length));

    // A list holding a valid tag matches it; the weak comparison accepts what the strong does.
    if (vela::valid_etag(text)) {
        check(vela::etag_list_matches(text, text, /*weak=*/true));
        check(vela::etag_equal(text, text, /*weak=*/true));
    }
    for (std::string_view tag : {std::string_view("\"abc\""), std::string_view("W/\"abc\"")}) {
        if (vela::etag_list_matches(text, tag, /*weak=*/false))
            check(vela::etag_list_matches(text, tag, /*weak=*/true));
    }
    return 0;
}
