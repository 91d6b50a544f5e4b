#pragma once
// Internals shared by the codec files: the counting allocator the C libraries allocate through,
// the output-growing helper and the bounded decode loop every decoder runs.

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "vela/compress/codec.hpp"

namespace vela::compress::detail {

// Counts the bytes a C library allocates through its hooks, so memory() is what the library
// asked for rather than an estimate from its documentation. Each block carries a 16-byte
// header holding its size (16 keeps malloc's alignment for the libraries' SIMD tables).
class Meter {
  public:
    std::size_t live() const noexcept { return live_; }

    void* allocate(std::size_t n) noexcept {
        if (n > std::size_t(-1) - kHeader) return nullptr;
        void* block = std::malloc(n + kHeader);
        if (!block) return nullptr;
        *static_cast<std::size_t*>(block) = n;
        live_ += n;
        return static_cast<char*>(block) + kHeader;
    }
    void release(void* p) noexcept {
        if (!p) return;
        char* block = static_cast<char*>(p) - kHeader;
        live_ -= *reinterpret_cast<std::size_t*>(block);
        std::free(block);
    }

    // The hooks in each library's signature; `self` is the Meter.
    static void* zlib_alloc(void* self, unsigned items, unsigned size) noexcept {
        return static_cast<Meter*>(self)->allocate(std::size_t(items) * size);
    }
    static void* c_alloc(void* self, std::size_t n) noexcept {
        return static_cast<Meter*>(self)->allocate(n);
    }
    static void c_free(void* self, void* p) noexcept { static_cast<Meter*>(self)->release(p); }

  private:
    static constexpr std::size_t kHeader = 16;
    std::size_t live_ = 0;
};

// Makes `want` bytes (or the string's spare capacity, when larger and under 64 KiB, which
// costs no reallocation) writable past the end of `out`; returns the first. The caller trims
// with out.resize(old size + bytes written).
inline char* open_room(std::string& out, std::size_t want, std::size_t& got) {
    const std::size_t old = out.size();
    const std::size_t spare = out.capacity() - old;
    got = spare > want && spare <= (std::size_t(64) << 10) ? spare : want;
    out.resize(old + got);
    return out.data() + old;
}

// The encoders' factories; `size_hint` (0: unknown) lets one-shot compression tell br and
// zstd the exact input size (smaller tables, and zstd records it in the frame).
std::unique_ptr<Encoder> make_gzip_encoder(int level);
std::unique_ptr<Encoder> make_brotli_encoder(int level, std::size_t size_hint);
std::unique_ptr<Encoder> make_zstd_encoder(int level, std::size_t size_hint);
std::unique_ptr<Decoder> make_gzip_decoder();
std::unique_ptr<Decoder> make_brotli_decoder();
std::unique_ptr<Decoder> make_zstd_decoder();

// What one call into a decompressor did.
enum class Step {
    progress,  // consumed input and/or wrote output; may be called again
    pending,   // the output space is full and the library holds more output
    end,       // the stream is complete
    error,     // invalid data
};

// Input and output windows of one step, advanced in place by the step.
struct Io {
    const char* in;
    std::size_t in_left;
    char* out;
    std::size_t out_left;
};

// The bounded loop shared by the decoders (codec.cpp): output in steps of at most 64 KiB up to
// the limit, then a one-byte probe to tell "ended exactly at the limit" from a bomb.
class BoundedDecoder : public Decoder {
  public:
    DecodeResult write(std::string_view in, std::string& out, std::size_t limit) final;

  protected:
    // Runs the library once over `io`.
    virtual Step step(Io& io) = 0;

  private:
    DecodeResult state_ = DecodeResult::more;
};

}  // namespace vela::compress::detail
