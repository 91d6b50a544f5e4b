#pragma once
// Byte buffers for the I/O path.
//
// A Buffer is a contiguous, growable byte region with a read cursor and a write cursor.
// Connections borrow Buffers from their loop's BufferPool only while they have bytes to
// hold, so an idle keep-alive connection owns no buffer at all. Buffers and pools are
// owned by one thread (the loop's); nothing here is thread-safe.

#include <cstddef>
#include <cstring>
#include <string_view>
#include <vector>

namespace vela {

/// A growable byte region with a read cursor and a write cursor (see above).
class Buffer {
  public:
    /// An empty buffer without an allocation.
    Buffer() = default;
    /// Creates an empty buffer with `capacity` bytes allocated.
    explicit Buffer(std::size_t capacity);
    /// Frees the allocation.
    ~Buffer();
    /// Takes over `o`'s allocation and contents, leaving `o` empty without an allocation.
    Buffer(Buffer&& o) noexcept;
    /// Frees this buffer's allocation, then takes over `o`'s as the move constructor does.
    Buffer& operator=(Buffer&& o) noexcept;
    /// Not copyable.
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    /// First unread byte.
    char* data() noexcept { return data_ + begin_; }
    /// First unread byte (read-only).
    const char* data() const noexcept { return data_ + begin_; }
    /// Number of unread bytes.
    std::size_t size() const noexcept { return end_ - begin_; }
    /// True when there are no unread bytes.
    bool empty() const noexcept { return begin_ == end_; }
    /// Unread bytes as a view (invalidated by any growth).
    std::string_view view() const noexcept { return {data_ + begin_, end_ - begin_}; }
    /// Start of the whole allocation; views into the buffer are relative to it.
    const char* base() const noexcept { return data_; }
    /// Size of the whole allocation in bytes.
    std::size_t capacity() const noexcept { return cap_; }

    /// Where the next bytes are written.
    char* write_ptr() noexcept { return data_ + end_; }
    /// Bytes that fit after the write cursor without growing.
    std::size_t writable() const noexcept { return cap_ - end_; }
    /// Marks `n` bytes after the write cursor as written.
    void commit(std::size_t n) noexcept { end_ += n; }
    /// Drops `n` bytes from the front; resets both cursors once empty.
    void consume(std::size_t n) noexcept {
        begin_ += n;
        if (begin_ == end_) begin_ = end_ = 0;
    }
    /// Drops everything.
    void clear() noexcept { begin_ = end_ = 0; }
    /// Makes room for `n` more bytes after the write cursor (compacts first, then grows).
    void ensure_writable(std::size_t n) {
        if (cap_ - end_ < n) grow(n);
    }
    /// Moves unread bytes to the front of the allocation.
    void compact() noexcept;
    /// Appends bytes, growing as needed.
    void append(const void* p, std::size_t n) {
        if (n == 0) return;  // data_ (and p) may be null then: memcpy would be undefined
        if (writable() < n) ensure_writable(n);
        std::memcpy(data_ + end_, p, n);
        end_ += n;
    }
    /// Appends the bytes of `s`, growing as needed.
    void append(std::string_view s) { append(s.data(), s.size()); }
    /// Releases the allocation.
    void reset() noexcept;
    /// Takes over an allocation of `capacity` bytes (empty contents); the buffer must hold none.
    void adopt(char* p, std::size_t capacity) noexcept {
        data_ = p;
        cap_ = capacity;
        begin_ = end_ = 0;
    }
    /// Gives up the allocation without freeing it.
    char* disown() noexcept {
        char* p = data_;
        data_ = nullptr;
        cap_ = begin_ = end_ = 0;
        return p;
    }

  private:
    void grow(std::size_t n);

    char* data_ = nullptr;
    std::size_t cap_ = 0;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
};

/// Per-loop free list of equally sized buffers: borrowing one is a pop, returning a push.
class BufferPool {
  public:
    /// `buffer_size` is the capacity of a fresh buffer; at most `max_free` are kept.
    explicit BufferPool(std::size_t buffer_size = 16 * 1024, std::size_t max_free = 1024)
        : buffer_size_(buffer_size), max_free_(max_free) {
        free_.reserve(64);
    }
    /// Frees the buffers held in the pool.
    ~BufferPool();
    /// Not copyable.
    BufferPool(const BufferPool&) = delete;
    BufferPool& operator=(const BufferPool&) = delete;

    /// Gives `b` (which must hold no allocation) an empty buffer of buffer_size() bytes.
    void acquire(Buffer& b) {
        if (!free_.empty()) {
            b.adopt(free_.back(), buffer_size_);
            free_.pop_back();
        } else {
            b = Buffer(buffer_size_);
        }
    }
    /// Takes `b`'s allocation back, leaving `b` empty; oversized ones (grown by large
    /// bodies) and those beyond max_free are freed instead.
    void release(Buffer& b) noexcept {
        if (b.capacity() == buffer_size_ && free_.size() < free_.capacity() &&
            free_.size() < max_free_) {
            free_.push_back(b.disown());
        } else {
            release_slow(b);
        }
    }
    /// Frees the buffers held in the pool beyond `keep` (memory a burst of load needed, given
    /// back once it passed: the loop calls this once a second); returns the bytes freed.
    std::size_t trim(std::size_t keep) noexcept;
    /// Capacity of the buffers this pool hands out.
    std::size_t buffer_size() const noexcept { return buffer_size_; }
    /// Number of buffers held in the pool, ready to hand out.
    std::size_t free_count() const noexcept { return free_.size(); }

  private:
    void release_slow(Buffer& b) noexcept;

    std::size_t buffer_size_;
    std::size_t max_free_;
    std::vector<char*> free_;
};

}  // namespace vela
