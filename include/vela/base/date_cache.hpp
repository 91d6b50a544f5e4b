#pragma once
// The HTTP Date header value (RFC 9110 5.6.7 IMF-fixdate), formatted at most once per
// second. Each loop owns one; it is refreshed once per loop iteration from the coarse
// realtime clock (a vDSO call, no syscall).

#include <ctime>
#include <string_view>

namespace vela {

/// One loop's cached Date header value (see above).
class DateCache {
  public:
    /// Reads the clock and formats the current time.
    DateCache() { refresh(); }
    /// Reads the clock and rewrites the text when the second changed; true when it did.
    bool refresh() noexcept;
    /// Formats `t` as the cached text, without reading the clock (for tests); see get().
    void set(std::time_t t) noexcept;
    /// "Sun, 06 Nov 1994 08:49:37 GMT" (29 bytes).
    std::string_view get() const noexcept { return {buf_, 29}; }

  private:
    std::time_t last_ = -1;
    char buf_[32] = {};
};

}  // namespace vela
