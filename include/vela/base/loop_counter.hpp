#pragma once
// LoopCounter: a statistic written by exactly one thread (its loop) and read by any.
//
// The owner adds with a relaxed load and a relaxed store (plain moves on x86-64 and AArch64:
// no locked instruction, no cache line bouncing between loops); readers load it relaxed and
// see a recent value, never a torn one. Two writers would lose updates: only the loop that
// owns the counter may call add()/sub()/set().

#include <atomic>
#include <cstdint>

namespace vela {

/// A single-writer counter or gauge (see above).
class LoopCounter {
  public:
    /// Adds `n` (owner thread only).
    void add(std::uint64_t n = 1) noexcept {
        v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    /// Subtracts `n` (owner thread only).
    void sub(std::uint64_t n = 1) noexcept {
        v_.store(v_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
    }
    /// Replaces the value (owner thread only).
    void set(std::uint64_t n) noexcept { v_.store(n, std::memory_order_relaxed); }
    /// The current value (any thread).
    std::uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

  private:
    std::atomic<std::uint64_t> v_{0};
};

}  // namespace vela
