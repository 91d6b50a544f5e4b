#pragma once
// A coarse hashed timing wheel for connection timeouts (idle, header read, body read).
//
// Each connection embeds one TimerWheel::Entry; re-arming it is an unlink and a link, so a
// request costs no timer syscall and no allocation. Resolution is one tick (default
// 100 ms): timeouts fire up to one tick late, never early. Entries further away than
// one turn of the wheel stay in their slot until their tick comes round. One loop owns the
// wheel; it is not thread-safe.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vela {

/// Coarse per-loop timeouts (see above).
class TimerWheel {
  public:
    /// Intrusive list node; embed it, set `fire`, and schedule it.
    struct Entry {
        /// Previous node in its slot; null while not scheduled.
        Entry* prev = nullptr;
        /// Next node in its slot; null while not scheduled.
        Entry* next = nullptr;
        /// Tick at which it fires.
        std::uint64_t expiry = 0;
        /// Called with the entry when it fires (already unscheduled by then).
        void (*fire)(Entry*) = nullptr;
        /// For `fire` to find the object the entry is embedded in.
        void* owner = nullptr;
        /// True while scheduled.
        bool linked() const noexcept { return prev != nullptr; }
    };

    /// `tick_ms` is the resolution (0 is taken as 1), `slots` the wheel size (a power of two,
    /// else std::invalid_argument).
    explicit TimerWheel(std::uint64_t tick_ms = 100, std::size_t slots = 1024);
    /// Not copyable (scheduled entries point into the wheel).
    TimerWheel(const TimerWheel&) = delete;
    TimerWheel& operator=(const TimerWheel&) = delete;

    /// (Re)schedules `e` to fire `after_ms` from `now_ms` (rounded up to whole ticks).
    void schedule(Entry& e, std::uint64_t now_ms, std::uint64_t after_ms) noexcept;
    /// Unschedules `e` (no-op when not scheduled).
    void cancel(Entry& e) noexcept;
    /// Fires every entry whose tick has passed by `now_ms`.
    void advance(std::uint64_t now_ms);
    /// Milliseconds until the next tick to process, or -1 when nothing is scheduled.
    int next_timeout_ms(std::uint64_t now_ms) const noexcept;
    /// Number of scheduled entries.
    std::size_t size() const noexcept { return count_; }
    /// The resolution in milliseconds.
    std::uint64_t tick_ms() const noexcept { return tick_ms_; }

  private:
    std::uint64_t tick_ms_;
    std::size_t mask_;
    std::uint64_t current_ = 0;  // last processed tick
    bool started_ = false;
    std::size_t count_ = 0;
    std::vector<Entry> heads_;  // sentinel per slot
};

}  // namespace vela
