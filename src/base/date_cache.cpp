#include "vela/base/date_cache.hpp"

#include <time.h>

namespace vela {

bool DateCache::refresh() noexcept {
    timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (ts.tv_sec == last_) return false;
    set(ts.tv_sec);
    return true;
}

void DateCache::set(std::time_t t) noexcept {
    static constexpr char kDays[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr char kMonths[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    tm g;
    gmtime_r(&t, &g);
    last_ = t;
    char* p = buf_;
    auto put2 = [&p](int v) {
        *p++ = static_cast<char>('0' + v / 10);
        *p++ = static_cast<char>('0' + v % 10);
    };
    for (int i = 0; i < 3; ++i) *p++ = kDays[g.tm_wday][i];
    *p++ = ',';
    *p++ = ' ';
    put2(g.tm_mday);
    *p++ = ' ';
    for (int i = 0; i < 3; ++i) *p++ = kMonths[g.tm_mon][i];
    *p++ = ' ';
    int y = g.tm_year + 1900;
    put2(y / 100);
    put2(y % 100);
    *p++ = ' ';
    put2(g.tm_hour);
    *p++ = ':';
    put2(g.tm_min);
    *p++ = ':';
    put2(g.tm_sec);
    for (char c : {' ', 'G', 'M', 'T'}) *p++ = c;
}

}  // namespace vela
