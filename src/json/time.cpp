// RFC 3339 date-times (section 5.6) for std::chrono::system_clock time points.

#include <chrono>

#include "vela/json/types.hpp"

namespace vela::json {

namespace {

using namespace std::chrono;

constexpr std::int64_t kSecondsPerDay = 86400;

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) noexcept {
    if (pos + n > s.size()) return false;
    int v = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    out = v;
    return true;
}

void put2(char* p, unsigned v) noexcept {
    p[0] = static_cast<char>('0' + v / 10);
    p[1] = static_cast<char>('0' + v % 10);
}

}  // namespace

std::size_t format_rfc3339(std::int64_t seconds, std::uint32_t nanos, char* out) noexcept {
    std::int64_t days = seconds / kSecondsPerDay;
    std::int64_t rest = seconds % kSecondsPerDay;
    if (rest < 0) {
        rest += kSecondsPerDay;
        --days;
    }
    // 0000-01-01 and 9999-12-31 as days since the epoch.
    if (days < -719528 || days > 2932896 || nanos > 999'999'999) return 0;
    const year_month_day ymd{sys_days{std::chrono::days{days}}};
    const auto y = static_cast<unsigned>(static_cast<int>(ymd.year()));
    put2(out, y / 100);
    put2(out + 2, y % 100);
    out[4] = '-';
    put2(out + 5, static_cast<unsigned>(ymd.month()));
    out[7] = '-';
    put2(out + 8, static_cast<unsigned>(ymd.day()));
    out[10] = 'T';
    const auto r = static_cast<unsigned>(rest);
    put2(out + 11, r / 3600);
    out[13] = ':';
    put2(out + 14, r / 60 % 60);
    out[16] = ':';
    put2(out + 17, r % 60);
    std::size_t n = 19;
    if (nanos) {
        int width = 9;
        std::uint32_t f = nanos;
        while (width > 3 && f % 1000 == 0) {
            f /= 1000;
            width -= 3;
        }
        out[n++] = '.';
        for (int i = width - 1; i >= 0; --i) {
            out[n + static_cast<std::size_t>(i)] = static_cast<char>('0' + f % 10);
            f /= 10;
        }
        n += static_cast<std::size_t>(width);
    }
    out[n++] = 'Z';
    return n;
}

bool parse_rfc3339(std::string_view s, std::int64_t& seconds, std::uint32_t& nanos) noexcept {
    int y, mo, d, h, mi, sec;
    if (!digits(s, 0, 4, y) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, mo) ||
        s[7] != '-' || !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s, 11, 2, h) || s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' ||
        !digits(s, 17, 2, sec))
        return false;
    const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                             day{static_cast<unsigned>(d)}};
    if (!ymd.ok() || h > 23 || mi > 59 || sec > 60) return false;  // 60: a leap second
    std::size_t pos = 19;
    std::uint32_t frac = 0;
    if (s[pos] == '.') {
        std::size_t n = 0;
        for (++pos; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, ++n)
            if (n < 9) frac = frac * 10 + static_cast<std::uint32_t>(s[pos] - '0');
        if (n == 0) return false;
        for (; n < 9; ++n) frac *= 10;
    }
    std::int64_t offset = 0;
    if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
        ++pos;
    } else {
        int oh, om;
        if (pos + 6 != s.size() || (s[pos] != '+' && s[pos] != '-') || !digits(s, pos + 1, 2, oh) ||
            s[pos + 3] != ':' || !digits(s, pos + 4, 2, om) || oh > 23 || om > 59)
            return false;
        offset = (oh * 60 + om) * 60 * (s[pos] == '-' ? -1 : 1);
        pos += 6;
    }
    if (pos != s.size()) return false;
    const std::int64_t days = sys_days{ymd}.time_since_epoch().count();
    seconds = days * kSecondsPerDay + h * 3600 + mi * 60 + sec - offset;
    nanos = frac;
    return true;
}

}  // namespace vela::json
