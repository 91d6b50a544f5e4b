#include "vela/http/range.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include "vela/base/ascii.hpp"
#include "vela/http/conditional.hpp"

namespace vela {

namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// Reads 1*DIGIT. Overflow is reported separately from malformed input because the grammar
// allows any number of digits: what a too-large value means depends on its role (see below).
enum class Num : std::uint8_t { ok, overflow, bad };
Num read_digits(std::string_view s, std::uint64_t& v) noexcept {
    if (s.empty()) return Num::bad;
    v = 0;
    bool overflow = false;
    for (char c : s) {
        if (!is_digit(c)) return Num::bad;  // a bad byte after an overflow is still malformed
        const auto d = static_cast<std::uint64_t>(c - '0');
        if (v > (kMax - d) / 10) overflow = true;
        if (!overflow) v = v * 10 + d;
    }
    if (overflow) v = kMax;
    return overflow ? Num::overflow : Num::ok;
}

// One range-spec (RFC 9110 14.1.1) resolved against `size`.
enum class Spec : std::uint8_t { satisfiable, unsatisfiable, malformed };
Spec resolve_spec(std::string_view spec, std::uint64_t size, ByteRange& r) noexcept {
    const std::size_t dash = spec.find('-');
    if (dash == std::string_view::npos) return Spec::malformed;
    if (dash == 0) {
        // suffix-range: the last N bytes. A length beyond any size just means "everything",
        // so an overflowing suffix saturates instead of failing.
        std::uint64_t n = 0;
        if (read_digits(spec.substr(1), n) == Num::bad) return Spec::malformed;
        if (n == 0 || size == 0) return Spec::unsatisfiable;  // "-0" selects no byte at all
        r.first = n >= size ? 0 : size - n;
        r.last = size - 1;
        return Spec::satisfiable;
    }
    // int-range: a first-byte-pos that does not fit in 64 bits cannot be compared with
    // anything meaningfully, so it is malformed; a huge last-byte-pos is clamped to the end.
    std::uint64_t first = 0;
    if (read_digits(spec.substr(0, dash), first) != Num::ok) return Spec::malformed;
    std::uint64_t last = kMax;
    const std::string_view last_text = spec.substr(dash + 1);
    if (!last_text.empty() && read_digits(last_text, last) == Num::bad) return Spec::malformed;
    if (last < first) return Spec::malformed;  // RFC 9110 14.1.1: the whole set is invalid
    if (first >= size) return Spec::unsatisfiable;
    r.first = first;
    r.last = std::min(last, size - 1);
    return Spec::satisfiable;
}

// Sorts and merges ranges that overlap or touch: the response then never repeats a byte, and
// a flood of tiny adjacent ranges costs one part.
void coalesce(std::vector<ByteRange>& v) {
    std::sort(v.begin(), v.end(),
              [](const ByteRange& a, const ByteRange& b) { return a.first < b.first; });
    std::size_t n = 0;
    for (const ByteRange& r : v) {
        // last < size <= 2^64-1, so last + 1 cannot wrap.
        if (n > 0 && r.first <= v[n - 1].last + 1) {
            v[n - 1].last = std::max(v[n - 1].last, r.last);
        } else {
            v[n++] = r;
        }
    }
    v.resize(n);
}

void append_number(std::string& s, std::uint64_t v) {
    char buf[24];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, res.ptr);
}

bool is_weak_tag(std::string_view v) noexcept {
    return v.size() >= 2 && v[0] == 'W' && v[1] == '/';
}

}  // namespace

RangeResult parse_range(std::string_view header, std::uint64_t size, std::vector<ByteRange>& out,
                        const RangeLimits& limits) {
    out.clear();  // the vector doubles as scratch space, so its capacity is reused
    header = ascii::trim_ows(header);
    const std::size_t eq = header.find('=');
    if (eq == std::string_view::npos || !ascii::iequals(header.substr(0, eq), "bytes"))
        return RangeResult::none;  // malformed, or a unit we do not serve: send the whole

    // range-set = 1#range-spec, where the list rule lets empty elements in (",0-1,,").
    std::size_t specs = 0;
    bool malformed = false;
    ascii::for_each_list_item(header.substr(eq + 1), [&](std::string_view spec) {
        if (malformed) return;
        if (++specs > limits.max_ranges) {
            malformed = true;  // too many: ignoring the header is the cheap, allowed answer
            return;
        }
        ByteRange r;
        switch (resolve_spec(spec, size, r)) {
            case Spec::satisfiable:
                out.push_back(r);
                break;
            case Spec::unsatisfiable:
                break;
            case Spec::malformed:
                malformed = true;
                break;
        }
    });
    if (malformed || specs == 0) {
        out.clear();
        return RangeResult::none;
    }
    if (out.empty()) return RangeResult::unsatisfiable;
    coalesce(out);
    return RangeResult::partial;
}

bool if_range_matches(std::string_view if_range, std::string_view etag,
                      std::optional<std::int64_t> last_modified) noexcept {
    if_range = ascii::trim_ows(if_range);
    if (if_range.empty()) return false;
    // RFC 9110 13.1.5: a weak tag can never validate a range (the bytes may differ).
    if (is_weak_tag(if_range)) return false;
    if (if_range.front() == '"') return etag_equal(if_range, etag, /*weak=*/false);
    const std::optional<std::int64_t> date = parse_http_date(if_range);
    return date && last_modified && *date == *last_modified;
}

std::string content_range(const ByteRange& r, std::uint64_t size) {
    std::string s = "bytes ";
    append_number(s, r.first);
    s += '-';
    append_number(s, r.last);
    s += '/';
    append_number(s, size);
    return s;
}

std::string content_range_unsatisfied(std::uint64_t size) {
    std::string s = "bytes */";
    append_number(s, size);
    return s;
}

}  // namespace vela
