#include "vela/http/conditional.hpp"

#include <chrono>

#include "vela/base/ascii.hpp"
#include "vela/http/request.hpp"

namespace vela {

namespace {

// --- Calendar arithmetic ------------------------------------------------------------------
// Howard Hinnant's days-from-civil algorithms (proleptic Gregorian): pure integer
// arithmetic, so there is no timegm/gmtime, no locale, no TZ lookup and no shared state.

constexpr std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);                 // [0, 399]
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;  // [0, 365]
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;            // [0, 146096]
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct Civil {
    std::int64_t year;
    unsigned month;  // 1..12
    unsigned day;    // 1..31
};

constexpr Civil civil_from_days(std::int64_t z) noexcept {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned d = doy - (153 * mp + 2) / 5 + 1;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    return {static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

static_assert(days_from_civil(1970, 1, 1) == 0);
static_assert(days_from_civil(2000, 3, 1) == 11017);
static_assert(civil_from_days(-1).year == 1969);

constexpr bool is_leap(std::int64_t y) noexcept {
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

constexpr unsigned days_in_month(std::int64_t y, unsigned m) noexcept {
    constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::string_view kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::string_view kLongDays[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                          "Thursday", "Friday", "Saturday"};

// --- Parsing pieces -----------------------------------------------------------------------
// HTTP-date is case-sensitive (RFC 9110 5.6.7), so names are compared exactly.

bool digit(char c) noexcept { return c >= '0' && c <= '9'; }

// Exactly `s.size()` digits; the callers pass at most 4, so no overflow is possible.
bool fixed_digits(std::string_view s, unsigned& v) noexcept {
    v = 0;
    for (char c : s) {
        if (!digit(c)) return false;
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    return !s.empty();
}

unsigned month_from(std::string_view s) noexcept {  // 1..12, 0 if unknown
    for (unsigned i = 0; i < 12; ++i)
        if (s == kMonths[i]) return i + 1;
    return 0;
}

// The weekday is only checked to be a name: a client's wrong weekday does not make the
// instant it names ambiguous, and cross-checking would reject dates for no gain.
template <std::size_t N>
bool is_one_of(std::string_view s, const std::string_view (&names)[N]) noexcept {
    for (std::string_view n : names)
        if (s == n) return true;
    return false;
}

struct Fields {
    std::int64_t year = 0;
    unsigned month = 0, day = 0, hour = 0, minute = 0, second = 0;
};

// "HH:MM:SS"
bool time_of_day(std::string_view s, Fields& f) noexcept {
    return s.size() == 8 && s[2] == ':' && s[5] == ':' && fixed_digits(s.substr(0, 2), f.hour) &&
           fixed_digits(s.substr(3, 2), f.minute) && fixed_digits(s.substr(6, 2), f.second);
}

std::optional<std::int64_t> to_seconds(const Fields& f) noexcept {
    if (f.month < 1 || f.month > 12) return std::nullopt;
    // Feb 30 and the like are rejected: such a date names no instant, so it cannot be
    // compared with Last-Modified truthfully.
    if (f.day < 1 || f.day > days_in_month(f.year, f.month)) return std::nullopt;
    if (f.hour > 23 || f.minute > 59 || f.second > 60) return std::nullopt;
    const unsigned second = f.second == 60 ? 59 : f.second;  // a leap second: POSIX time has none
    return days_from_civil(f.year, f.month, f.day) * 86400 + f.hour * 3600 + f.minute * 60 + second;
}

std::int64_t current_year() noexcept {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const std::int64_t secs = std::chrono::duration_cast<std::chrono::seconds>(now).count();
    return civil_from_days(secs >= 0 ? secs / 86400 : (secs - 86399) / 86400).year;
}

// RFC 9110 5.6.7: a two-digit year that appears more than 50 years in the future is the most
// recent past year with the same last two digits.
std::int64_t expand_two_digit_year(unsigned yy) noexcept {
    const std::int64_t now = current_year();
    std::int64_t y = now - now % 100 + 100 + yy;
    while (y > now + 50) y -= 100;
    return y;
}

// IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
std::optional<std::int64_t> parse_imf_fixdate(std::string_view s) noexcept {
    Fields f;
    unsigned year = 0;
    if (s.size() != 29 || !is_one_of(s.substr(0, 3), kDays) || s.substr(3, 2) != ", " ||
        !fixed_digits(s.substr(5, 2), f.day) || s[7] != ' ' ||
        (f.month = month_from(s.substr(8, 3))) == 0 || s[11] != ' ' ||
        !fixed_digits(s.substr(12, 4), year) || s[16] != ' ' || !time_of_day(s.substr(17, 8), f) ||
        s.substr(25) != " GMT")
        return std::nullopt;
    f.year = year;
    return to_seconds(f);
}

// rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT"
std::optional<std::int64_t> parse_rfc850(std::string_view s) noexcept {
    const std::size_t comma = s.find(',');
    if (comma == std::string_view::npos || !is_one_of(s.substr(0, comma), kLongDays))
        return std::nullopt;
    s.remove_prefix(comma);
    Fields f;
    unsigned yy = 0;
    if (s.size() != 24 || s.substr(0, 2) != ", " || !fixed_digits(s.substr(2, 2), f.day) ||
        s[4] != '-' || (f.month = month_from(s.substr(5, 3))) == 0 || s[8] != '-' ||
        !fixed_digits(s.substr(9, 2), yy) || s[11] != ' ' || !time_of_day(s.substr(12, 8), f) ||
        s.substr(20) != " GMT")
        return std::nullopt;
    f.year = expand_two_digit_year(yy);
    return to_seconds(f);
}

// asctime-date: "Sun Nov  6 08:49:37 1994" (day is 2DIGIT or SP DIGIT)
std::optional<std::int64_t> parse_asctime(std::string_view s) noexcept {
    Fields f;
    unsigned year = 0;
    if (s.size() != 24 || !is_one_of(s.substr(0, 3), kDays) || s[3] != ' ' ||
        (f.month = month_from(s.substr(4, 3))) == 0 || s[7] != ' ' || s[10] != ' ' ||
        !time_of_day(s.substr(11, 8), f) || s[19] != ' ' || !fixed_digits(s.substr(20, 4), year))
        return std::nullopt;
    const std::string_view day = s.substr(8, 2);
    if (day[0] == ' ' ? !fixed_digits(day.substr(1), f.day) : !fixed_digits(day, f.day))
        return std::nullopt;
    f.year = year;
    return to_seconds(f);
}

// --- Entity-tags --------------------------------------------------------------------------

// etagc = %x21 / %x23-7E / obs-text: any visible byte but DQUOTE, and bytes >= 0x80.
bool etagc(char c) noexcept {
    const auto u = static_cast<unsigned char>(c);
    return u == 0x21 || (u >= 0x23 && u != 0x7F);
}

// The opaque-tag's contents, or nullopt when `tag` is not an entity-tag.
struct Tag {
    std::string_view opaque;
    bool weak;
};
std::optional<Tag> split_tag(std::string_view tag) noexcept {
    const bool weak = tag.size() >= 2 && tag[0] == 'W' && tag[1] == '/';
    if (weak) tag.remove_prefix(2);
    if (tag.size() < 2 || tag.front() != '"' || tag.back() != '"') return std::nullopt;
    tag = tag.substr(1, tag.size() - 2);
    for (char c : tag)
        if (!etagc(c)) return std::nullopt;
    return Tag{tag, weak};
}

// Calls f(member) for each member of an If-Match / If-None-Match value. The list cannot be
// split at commas because an opaque-tag may contain one ("a,b" is a single valid tag), so the
// members are scanned quote to quote. A malformed member is skipped up to the next comma.
template <class F>
void for_each_tag(std::string_view v, F&& f) {
    std::size_t i = 0;
    while (i < v.size()) {
        const char c = v[i];
        if (c == ',' || c == ' ' || c == '\t') {
            ++i;
            continue;
        }
        std::size_t end = i;  // one past the member's last byte
        bool ok = false;
        const std::size_t quote = (c == 'W' && i + 1 < v.size() && v[i + 1] == '/') ? i + 2 : i;
        if (c == '*') {
            end = i + 1;
            ok = true;
        } else if (quote < v.size() && v[quote] == '"') {
            const std::size_t close = v.find('"', quote + 1);
            if (close == std::string_view::npos) return;  // unterminated: nothing more to read
            end = close + 1;
            ok = true;
        }
        // A member must end at OWS then a comma (or the end of the value).
        std::size_t j = end;
        while (j < v.size() && (v[j] == ' ' || v[j] == '\t')) ++j;
        if (!ok || (j < v.size() && v[j] != ',')) {
            const std::size_t comma = v.find(',', j);
            if (comma == std::string_view::npos) return;
            i = comma + 1;
            continue;
        }
        f(v.substr(i, end - i));
        i = j;
    }
}

// The matching fields' values, treated as one list (RFC 9110 5.3: repeated fields are one
// comma-joined value). A joined list matches exactly when one of its parts does, so each field
// is tested on its own and nothing is copied.
bool any_field_matches(const Request& req, std::string_view name, std::string_view etag, bool weak,
                       bool& present) {
    present = false;
    bool match = false;
    for (const Header& h : req.headers()) {
        if (!ascii::iequals(h.name, name)) continue;
        present = true;
        match = match || etag_list_matches(h.value, etag, weak);
    }
    return match;
}

// A date field's value when it appears exactly once and is valid; RFC 9110 13.1.3/13.1.4 have
// the recipient ignore it otherwise (several fields are "more than one member").
std::optional<std::int64_t> single_date(const Request& req, std::string_view name) noexcept {
    std::string_view value;
    int count = 0;
    for (const Header& h : req.headers()) {
        if (!ascii::iequals(h.name, name)) continue;
        if (++count > 1) return std::nullopt;
        value = h.value;
    }
    return count == 1 ? parse_http_date(value) : std::nullopt;
}

}  // namespace

std::optional<std::int64_t> parse_http_date(std::string_view text) noexcept {
    text = ascii::trim_ows(text);
    if (text.size() == 29 && text[3] == ',') return parse_imf_fixdate(text);
    if (text.size() == 24 && text[3] == ' ') return parse_asctime(text);
    return parse_rfc850(text);
}

std::string format_http_date(std::int64_t seconds) {
    // IMF-fixdate has a four-digit year, so out-of-range instants are clamped to the first
    // and last seconds it can say rather than printed as text no recipient could parse.
    constexpr std::int64_t kMin = days_from_civil(0, 1, 1) * 86400;
    constexpr std::int64_t kMax = days_from_civil(10000, 1, 1) * 86400 - 1;
    seconds = seconds < kMin ? kMin : seconds > kMax ? kMax : seconds;
    std::int64_t days = seconds / 86400;
    std::int64_t rem = seconds % 86400;
    if (rem < 0) {  // floor division for instants before 1970
        rem += 86400;
        --days;
    }
    const Civil c = civil_from_days(days);
    const std::string_view wday = kDays[((days % 7) + 11) % 7];  // 1970-01-01 was a Thursday
    const std::string_view month = kMonths[c.month - 1];
    const auto two = [](char* p, unsigned v) {
        p[0] = static_cast<char>('0' + v / 10);
        p[1] = static_cast<char>('0' + v % 10);
    };
    std::string s = "Sun, 00 Jan 0000 00:00:00 GMT";
    s.replace(0, 3, wday);
    two(&s[5], c.day);
    s.replace(8, 3, month);
    const auto y = static_cast<unsigned>(c.year);
    two(&s[12], y / 100);
    two(&s[14], y % 100);
    two(&s[17], static_cast<unsigned>(rem / 3600));
    two(&s[20], static_cast<unsigned>(rem / 60 % 60));
    two(&s[23], static_cast<unsigned>(rem % 60));
    return s;
}

bool valid_etag(std::string_view tag) noexcept { return split_tag(tag).has_value(); }

bool etag_equal(std::string_view a, std::string_view b, bool weak) noexcept {
    const std::optional<Tag> ta = split_tag(a), tb = split_tag(b);
    if (!ta || !tb) return false;
    if (!weak && (ta->weak || tb->weak)) return false;
    return ta->opaque == tb->opaque;
}

bool etag_list_matches(std::string_view list, std::string_view etag, bool weak,
                       bool exists) noexcept {
    bool match = false;
    // "*" is accepted as a member anywhere, not only alone: repeated fields joined into one
    // list ("*" in one, tags in another) must still honour it.
    for_each_tag(list, [&](std::string_view member) {
        if (match) return;
        match = member == "*" ? exists : !etag.empty() && etag_equal(member, etag, weak);
    });
    return match;
}

Precondition evaluate_preconditions(const Request& req, std::string_view etag,
                                    std::optional<std::int64_t> last_modified) {
    const bool get_or_head = req.method() == Method::GET || req.method() == Method::HEAD;
    bool present = false;

    // 1. If-Match uses the strong comparison (RFC 9110 13.1.1): a weak tag never matches.
    const bool if_match = any_field_matches(req, "If-Match", etag, /*weak=*/false, present);
    if (present) {
        if (!if_match) return Precondition::failed;
    } else if (last_modified) {
        // 2. If-Unmodified-Since, only without If-Match; ignored without a modification date.
        const std::optional<std::int64_t> since = single_date(req, "If-Unmodified-Since");
        if (since && *last_modified > *since) return Precondition::failed;
    }

    // 3. If-None-Match uses the weak comparison (RFC 9110 13.1.2).
    const bool none_match = any_field_matches(req, "If-None-Match", etag, /*weak=*/true, present);
    if (present) {
        if (none_match) return get_or_head ? Precondition::not_modified : Precondition::failed;
    } else if (get_or_head && last_modified) {
        // 4. If-Modified-Since, only for GET/HEAD and only without If-None-Match.
        const std::optional<std::int64_t> since = single_date(req, "If-Modified-Since");
        if (since && *last_modified <= *since) return Precondition::not_modified;
    }
    return Precondition::proceed;
}

}  // namespace vela
