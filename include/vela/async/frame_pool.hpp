#pragma once
// Coroutine frames come from a per-thread recycling pool.
//
// A frame is allocated when a coroutine function is called and freed when the coroutine
// is destroyed. Handlers that co_await do this once per request, so the pool turns the
// steady state into a free-list pop and push. Frames are grouped in 64-byte size classes up
// to 4 KiB; larger frames go to the global allocator. A frame freed on another thread
// (a task moved between loops) simply joins that thread's list.

#include <cstddef>
#include <cstdint>

namespace vela::async {

/// Allocates a coroutine frame of `size` bytes from this thread's pool.
void* frame_alloc(std::size_t size);
/// Returns a frame to this thread's pool.
void frame_free(void* p, std::size_t size) noexcept;
/// Number of frames allocated on this thread so far (tests use it to prove that a path
/// runs without coroutine frames).
std::uint64_t frames_allocated() noexcept;

}  // namespace vela::async
