#pragma once
// A move-only `void()` callable (std::function needs copyable targets; tasks are move-only).
// Targets up to kInline bytes are stored inline, larger ones on the heap.

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace vela {

/// A move-only `void()` callable; small targets are stored inline (see above).
class UniqueFunction {
  public:
    /// Largest target, in bytes, stored without a heap allocation.
    static constexpr std::size_t kInline = 48;

    /// An empty function (no target).
    UniqueFunction() noexcept = default;
    /// Wraps `f`: inline when it fits kInline and moves without throwing, else on the heap.
    template <class F>
    requires(!std::is_same_v<std::decay_t<F>, UniqueFunction> && std::is_invocable_v<F&>)
        UniqueFunction(F&& f) {  // NOLINT: implicit like std::function
        using T = std::decay_t<F>;
        if constexpr (sizeof(T) <= kInline && alignof(T) <= alignof(std::max_align_t) &&
                      std::is_nothrow_move_constructible_v<T>) {
            new (storage_) T(std::forward<F>(f));
            ops_ = &inline_ops<T>;
        } else {
            *reinterpret_cast<T**>(storage_) = new T(std::forward<F>(f));
            ops_ = &heap_ops<T>;
        }
    }
    /// Takes over `o`'s target, leaving `o` empty.
    UniqueFunction(UniqueFunction&& o) noexcept : ops_(o.ops_) {
        if (ops_) ops_->move(storage_, o.storage_);
        o.ops_ = nullptr;
    }
    /// Destroys the current target, then takes over `o`'s, leaving `o` empty.
    UniqueFunction& operator=(UniqueFunction&& o) noexcept {
        if (this != &o) {
            reset();
            ops_ = o.ops_;
            if (ops_) ops_->move(storage_, o.storage_);
            o.ops_ = nullptr;
        }
        return *this;
    }
    /// Destroys the target.
    ~UniqueFunction() { reset(); }

    /// Calls the target, which must be set (calling an empty function is undefined).
    void operator()() { ops_->call(storage_); }
    /// True when a target is set.
    explicit operator bool() const noexcept { return ops_ != nullptr; }
    /// Destroys the target.
    void reset() noexcept {
        if (ops_) ops_->destroy(storage_);
        ops_ = nullptr;
    }

  private:
    struct Ops {
        void (*call)(void*);
        void (*move)(void* dst, void* src) noexcept;
        void (*destroy)(void*) noexcept;
    };
    template <class T>
    static constexpr Ops inline_ops = {[](void* s) { (*static_cast<T*>(s))(); },
                                       [](void* d, void* s) noexcept {
                                           new (d) T(std::move(*static_cast<T*>(s)));
                                           static_cast<T*>(s)->~T();
                                       },
                                       [](void* s) noexcept { static_cast<T*>(s)->~T(); }};
    template <class T>
    static constexpr Ops heap_ops = {
        [](void* s) { (**static_cast<T**>(s))(); },
        [](void* d, void* s) noexcept { *static_cast<T**>(d) = *static_cast<T**>(s); },
        [](void* s) noexcept { delete *static_cast<T**>(s); }};

    const Ops* ops_ = nullptr;
    alignas(std::max_align_t) unsigned char storage_[kInline];
};

}  // namespace vela
