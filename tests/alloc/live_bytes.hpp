#pragma once
// Live heap bytes for the memory-budget tests (tests/alloc/*_memory_test.cpp): operator new is
// replaced to keep the bytes live through it and, per size, how many blocks. Include it in
// exactly one file of a binary that shares it with no other tests (they would allocate freely
// in between).

#include <malloc.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <new>

namespace vela::test {

inline std::atomic<long long> g_live_bytes{0};
/// Live blocks per usable size, in 16-byte classes up to 64 KiB (the last class takes the rest).
inline constexpr std::size_t kClasses = 4097;
inline std::array<std::atomic<long long>, kClasses> g_live_by_size{};

inline std::size_t size_class(std::size_t usable) { return std::min(usable / 16, kClasses - 1); }

inline void* counted_alloc(std::size_t n) {
    void* p = std::malloc(n ? n : 1);
    if (!p) throw std::bad_alloc();
    const std::size_t u = malloc_usable_size(p);
    g_live_bytes.fetch_add(static_cast<long long>(u), std::memory_order_relaxed);
    g_live_by_size[size_class(u)].fetch_add(1, std::memory_order_relaxed);
    return p;
}

inline void counted_free(void* p) noexcept {
    if (!p) return;
    const std::size_t u = malloc_usable_size(p);
    g_live_bytes.fetch_sub(static_cast<long long>(u), std::memory_order_relaxed);
    g_live_by_size[size_class(u)].fetch_sub(1, std::memory_order_relaxed);
    std::free(p);
}

/// The live bytes at one moment.
struct Snapshot {
    long long live = 0;    // bytes through operator new
    long long malloc = 0;  // every malloc'd byte (nghttp2, zlib, OpenSSL and operator new)
    std::array<long long, kClasses> by_size{};
};

inline Snapshot snapshot() {
    Snapshot s;
    s.live = g_live_bytes.load();
    const struct mallinfo2 mi = ::mallinfo2();
    s.malloc = static_cast<long long>(mi.uordblks + mi.hblkhd);
    for (std::size_t i = 0; i < kClasses; ++i) s.by_size[i] = g_live_by_size[i].load();
    return s;
}

}  // namespace vela::test

// The replacements pair malloc with free on purpose.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) { return vela::test::counted_alloc(n); }
void* operator new[](std::size_t n) { return vela::test::counted_alloc(n); }
void operator delete(void* p) noexcept { vela::test::counted_free(p); }
void operator delete[](void* p) noexcept { vela::test::counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { vela::test::counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { vela::test::counted_free(p); }
