#include "vela/base/buffer.hpp"

#include <cstdlib>
#include <new>
#include <utility>

namespace vela {

Buffer::Buffer(std::size_t capacity) {
    // operator new rather than malloc: allocation-counting tests see buffers too.
    data_ = static_cast<char*>(::operator new(capacity));
    cap_ = capacity;
}

Buffer::~Buffer() { ::operator delete(data_); }

Buffer::Buffer(Buffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      cap_(std::exchange(o.cap_, 0)),
      begin_(std::exchange(o.begin_, 0)),
      end_(std::exchange(o.end_, 0)) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
    if (this != &o) {
        ::operator delete(data_);
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
    char* p = static_cast<char*>(::operator new(want));
    if (end_) std::memcpy(p, data_, end_);  // compacted above: the bytes start at 0
    ::operator delete(data_);
    data_ = p;
    cap_ = want;
}

void Buffer::reset() noexcept {
    ::operator delete(data_);
    data_ = nullptr;
    cap_ = begin_ = end_ = 0;
}

BufferPool::~BufferPool() {
    for (char* p : free_) ::operator delete(p);
}

std::size_t BufferPool::trim(std::size_t keep) noexcept {
    std::size_t freed = 0;
    while (free_.size() > keep) {
        ::operator delete(free_.back());
        free_.pop_back();
        freed += buffer_size_;
    }
    if (free_.capacity() > 64 && free_.size() <= 64) {
        try {  // the free list's own storage after a burst, too
            std::vector<char*> smaller;
            smaller.reserve(64);
            smaller.assign(free_.begin(), free_.end());
            free_.swap(smaller);
        } catch (...) {
        }
    }
    return freed;
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
