// PostgreSQL text formats (see pg_text.hpp).
#include "pg_text.hpp"

#include <charconv>
#include <cmath>

#include "vela/base/hex.hpp"

namespace vela::db::pg {

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct Civil {
    std::int64_t y;
    unsigned m, d;
};
Civil civil_from_days(std::int64_t z) noexcept {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned d = doy - (153 * mp + 2) / 5 + 1;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    return {y + (m <= 2), m, d};
}

// Reads exactly `n` digits at `i`.
bool digits(std::string_view s, std::size_t& i, std::size_t n, unsigned& out) noexcept {
    if (i + n > s.size()) return false;
    unsigned v = 0;
    for (std::size_t k = 0; k < n; ++k) {
        char c = s[i + k];
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    i += n;
    out = v;
    return true;
}

bool is_leap(std::int64_t y) noexcept { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned month_days(std::int64_t y, unsigned m) noexcept {
    static constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

}  // namespace

std::optional<std::int64_t> parse_timestamp(std::string_view s) noexcept {
    // Year: four or five digits (PostgreSQL prints years above 9999 with more).
    std::size_t i = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i < 4 || i > 5) return std::nullopt;  // up to 99999: microseconds fit in 64 bits
    std::int64_t year = 0;
    for (std::size_t k = 0; k < i; ++k) year = year * 10 + (s[k] - '0');
    unsigned month = 0, day = 0, hour = 0, minute = 0, second = 0;
    if (i >= s.size() || s[i++] != '-' || !digits(s, i, 2, month) || i >= s.size() ||
        s[i++] != '-' || !digits(s, i, 2, day))
        return std::nullopt;
    if (month < 1 || month > 12 || day < 1 || day > month_days(year, month)) return std::nullopt;
    std::int64_t micros = 0;
    std::int64_t offset_s = 0;
    if (i < s.size()) {
        if (s[i] != ' ' && s[i] != 'T') return std::nullopt;
        ++i;
        if (!digits(s, i, 2, hour) || i >= s.size() || s[i++] != ':' || !digits(s, i, 2, minute) ||
            i >= s.size() || s[i++] != ':' || !digits(s, i, 2, second))
            return std::nullopt;
        if (hour > 24 || minute > 59 || second > 60) return std::nullopt;
        if (i < s.size() && s[i] == '.') {
            ++i;
            std::size_t n = 0;
            std::int64_t frac = 0;
            while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
                if (n < 6) frac = frac * 10 + (s[i] - '0');
                ++n;
                ++i;
            }
            if (n == 0) return std::nullopt;
            for (std::size_t k = n; k < 6; ++k) frac *= 10;
            micros = frac;
        }
        if (i < s.size()) {  // zone offset: +HH, +HH:MM or +HH:MM:SS
            if (s[i] != '+' && s[i] != '-') return std::nullopt;
            const bool neg = s[i++] == '-';
            unsigned oh = 0, om = 0, os = 0;
            if (!digits(s, i, 2, oh)) return std::nullopt;
            if (i < s.size() && s[i] == ':') {
                ++i;
                if (!digits(s, i, 2, om)) return std::nullopt;
                if (i < s.size() && s[i] == ':') {
                    ++i;
                    if (!digits(s, i, 2, os)) return std::nullopt;
                }
            }
            if (om > 59 || os > 59) return std::nullopt;
            offset_s = static_cast<std::int64_t>(oh) * 3600 + om * 60 + os;
            if (neg) offset_s = -offset_s;
        }
    }
    if (i != s.size()) return std::nullopt;
    const std::int64_t secs = days_from_civil(year, month, day) * 86400 +
                              static_cast<std::int64_t>(hour) * 3600 + minute * 60 + second -
                              offset_s;
    return secs * 1000000 + micros;
}

bool format_timestamp(std::int64_t micros, std::string& out) {
    std::int64_t secs = micros / 1000000, us = micros % 1000000;
    if (us < 0) {
        us += 1000000;
        --secs;
    }
    std::int64_t days = secs / 86400, sod = secs % 86400;
    if (sod < 0) {
        sod += 86400;
        --days;
    }
    const Civil c = civil_from_days(days);
    char buf[64];
    char* p = buf;
    auto put = [&](std::int64_t v, int width) {
        char tmp[24];
        auto r = std::to_chars(tmp, tmp + sizeof tmp, v < 0 ? -v : v);
        for (auto n = r.ptr - tmp; n < width; ++n) *p++ = '0';
        for (char* q = tmp; q < r.ptr; ++q) *p++ = *q;
    };
    if (c.y < 1) return false;  // PostgreSQL writes those with BC
    put(c.y, 4);
    *p++ = '-';
    put(c.m, 2);
    *p++ = '-';
    put(c.d, 2);
    *p++ = ' ';
    put(sod / 3600, 2);
    *p++ = ':';
    put(sod / 60 % 60, 2);
    *p++ = ':';
    put(sod % 60, 2);
    *p++ = '.';
    put(us, 6);
    *p++ = '+';
    *p++ = '0';
    *p++ = '0';
    out.append(buf, p);
    return true;
}

std::optional<std::string> decode_bytea(std::string_view s) {
    if (!s.starts_with("\\x")) return std::nullopt;
    return hex_decode(s.substr(2));
}

std::optional<std::int64_t> parse_integer(std::string_view s) noexcept {
    std::int64_t v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

std::optional<double> parse_real(std::string_view s) noexcept {
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return HUGE_VAL;
    if (s == "-Infinity") return -HUGE_VAL;
    double v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

void format_real(double v, std::string& out) {
    if (std::isnan(v)) return out.append("NaN"), void();
    if (std::isinf(v)) return out.append(v < 0 ? "-Infinity" : "Infinity"), void();
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

}  // namespace vela::db::pg
