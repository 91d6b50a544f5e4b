#include "vela/async/frame_pool.hpp"

#include <new>

namespace vela::async {

namespace {

constexpr std::size_t kGranule = 64;
constexpr std::size_t kClasses = 64;  // up to 4 KiB
constexpr std::size_t kMaxFreePerClass = 4096;

struct FreeNode {
    FreeNode* next;
};

struct ThreadPool {
    FreeNode* heads[kClasses] = {};
    std::size_t counts[kClasses] = {};
    std::uint64_t allocated = 0;

    ~ThreadPool() {
        for (auto*& h : heads) {
            while (h) {
                FreeNode* n = h->next;
                ::operator delete(h);
                h = n;
            }
        }
    }
};

thread_local ThreadPool t_pool;

std::size_t class_of(std::size_t size) noexcept { return (size + kGranule - 1) / kGranule - 1; }

}  // namespace

void* frame_alloc(std::size_t size) {
    ThreadPool& tp = t_pool;
    ++tp.allocated;
    std::size_t c = class_of(size);
    if (c < kClasses) {
        if (FreeNode* n = tp.heads[c]) {
            tp.heads[c] = n->next;
            --tp.counts[c];
            return n;
        }
        return ::operator new((c + 1) * kGranule);
    }
    return ::operator new(size);
}

void frame_free(void* p, std::size_t size) noexcept {
    ThreadPool& tp = t_pool;
    std::size_t c = class_of(size);
    if (c < kClasses && tp.counts[c] < kMaxFreePerClass) {
        auto* n = static_cast<FreeNode*>(p);
        n->next = tp.heads[c];
        tp.heads[c] = n;
        ++tp.counts[c];
        return;
    }
    ::operator delete(p);
}

std::uint64_t frames_allocated() noexcept { return t_pool.allocated; }

}  // namespace vela::async
