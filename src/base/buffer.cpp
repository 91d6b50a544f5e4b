#include "vela/base/buffer.hpp"

#include <cstdlib>
#include <new>
#include <utility>

namespace vela {

Buffer::Buffer(std::size_t capacity) {
    data_ = static_cast<char*>(std::malloc(capacity));
    if (!data_) throw std::bad_alloc();
    cap_ = capacity;
}

Buffer::~Buffer() { std::free(data_); }

Buffer::Buffer(Buffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      cap_(std::exchange(o.cap_, 0)),
      begin_(std::exchange(o.begin_, 0)),
      end_(std::exchange(o.end_, 0)) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
    if (this != &o) {
        std::free(data_);
        data_ = std::exchange(o.data_, nullptr);
        cap_ = std::exchange(o.cap_, 0);
        begin_ = std::exchange(o.begin_, 0);
        end_ = std::exchange(o.end_, 0);
    }
    return *this;
}

void Buffer::compact() noexcept {
    if (begin_ == 0) return;
    std::size_t n = end_ - begin_;
    if (n) std::memmove(data_, data_ + begin_, n);
    begin_ = 0;
    end_ = n;
}

void Buffer::grow(std::size_t n) {
    compact();
    if (cap_ - end_ >= n) return;
    std::size_t want = cap_ ? cap_ : 4096;
    while (want - end_ < n) want *= 2;
    char* p = static_cast<char*>(std::realloc(data_, want));
    if (!p) throw std::bad_alloc();
    data_ = p;
    cap_ = want;
}

void Buffer::reset() noexcept {
    std::free(data_);
    data_ = nullptr;
    cap_ = begin_ = end_ = 0;
}

BufferPool::~BufferPool() {
    for (char* p : free_) std::free(p);
}

void BufferPool::release_slow(Buffer& b) noexcept {
    if (b.capacity() == buffer_size_ && free_.size() < max_free_) {
        try {
            free_.reserve(free_.capacity() * 2);
            free_.push_back(b.disown());
            return;
        } catch (...) {
        }
    }
    b.reset();
}

}  // namespace vela
