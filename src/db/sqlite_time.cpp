// Times in SQLite: the text they are stored as and the forms they are read from
// (include/vela/db/sqlite.hpp).
#include <fmt/format.h>

#include <chrono>
#include <cstdint>

#include "vela/db/sqlite.hpp"

namespace vela::db::sqlite {

namespace {

// Reads exactly `n` digits at `pos` into `out`; false when they are not all digits.
bool digits(std::string_view s, std::size_t& pos, std::size_t n, int& out) {
    if (pos + n > s.size()) return false;
    int v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const char c = s[pos + i];
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    pos += n;
    out = v;
    return true;
}

bool take(std::string_view s, std::size_t& pos, char c) {
    if (pos < s.size() && s[pos] == c) {
        ++pos;
        return true;
    }
    return false;
}

}  // namespace

bool in_range(std::int64_t micros) noexcept {
    using Period = TimePoint::duration::period;
    constexpr std::int64_t per_micro = Period::den / (Period::num * 1000000);  // 1000 for ns
    constexpr std::int64_t limit = INT64_MAX / (per_micro > 0 ? per_micro : 1);
    return micros <= limit && micros >= -limit;
}

std::string format_time(TimePoint t) {
    using namespace std::chrono;
    const auto us = floor<microseconds>(t);
    const auto day = floor<days>(us);
    const year_month_day ymd{day};
    const hh_mm_ss<microseconds> tod{us - day};
    return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}", static_cast<int>(ymd.year()),
                       static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                       tod.hours().count(), tod.minutes().count(), tod.seconds().count(),
                       tod.subseconds().count());
}

std::optional<TimePoint> parse_time(std::string_view s) {
    using namespace std::chrono;
    std::size_t pos = 0;
    int y = 0, mo = 0, d = 0;
    if (!digits(s, pos, 4, y) || !take(s, pos, '-') || !digits(s, pos, 2, mo) ||
        !take(s, pos, '-') || !digits(s, pos, 2, d))
        return std::nullopt;
    const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                             day{static_cast<unsigned>(d)}};
    if (!ymd.ok()) return std::nullopt;
    std::int64_t micros = 0;
    if (pos < s.size() && (s[pos] == 'T' || s[pos] == ' ')) {
        ++pos;
        int h = 0, mi = 0, sec = 0;
        if (!digits(s, pos, 2, h) || !take(s, pos, ':') || !digits(s, pos, 2, mi))
            return std::nullopt;
        if (take(s, pos, ':')) {
            if (!digits(s, pos, 2, sec)) return std::nullopt;
            if (take(s, pos, '.')) {
                std::size_t n = 0;
                std::int64_t frac = 0;
                for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, ++n)
                    if (n < 6) frac = frac * 10 + (s[pos] - '0');
                if (n == 0) return std::nullopt;
                for (; n < 6; ++n) frac *= 10;
                micros += frac;
            }
        }
        if (h > 23 || mi > 59 || sec > 59) return std::nullopt;
        micros += ((h * 60 + mi) * 60 + sec) * std::int64_t{1000000};
        if (take(s, pos, 'Z')) {
        } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
            const bool minus = s[pos++] == '-';
            int oh = 0, om = 0;
            if (!digits(s, pos, 2, oh) || !take(s, pos, ':') || !digits(s, pos, 2, om) || oh > 23 ||
                om > 59)
                return std::nullopt;
            const std::int64_t offset = (oh * 60 + om) * std::int64_t{60000000};
            micros += minus ? offset : -offset;  // local time minus offset is UTC
        }
    }
    if (pos != s.size()) return std::nullopt;
    micros += duration_cast<microseconds>(sys_days(ymd).time_since_epoch()).count();
    if (!in_range(micros)) return std::nullopt;  // beyond the time type (years 1678-2262)
    return TimePoint(duration_cast<TimePoint::duration>(microseconds(micros)));
}

}  // namespace vela::db::sqlite
