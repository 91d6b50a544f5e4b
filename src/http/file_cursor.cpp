#include "vela/http/file_cursor.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace vela {

// Moves to the next stretch once the current one is exhausted (heads and stretches may be
// empty), and marks the end after the tail.
void FileCursor::step() noexcept {
    while (!done_) {
        if (part_ < body_.parts.size()) {
            const FileBody::Part& p = body_.parts[part_];
            if (in_head_) {
                if (off_ < p.head.size()) return;
                in_head_ = false;
                off_ = 0;
            }
            if (off_ < p.length) return;
            ++part_;
            in_head_ = true;
            off_ = 0;
            continue;
        }
        if (off_ < body_.tail.size()) return;
        done_ = true;
    }
}

ssize_t FileCursor::read(char* dst, std::size_t max) { return copy(dst, max, false); }

ssize_t FileCursor::copy(char* dst, std::size_t max, bool stop_at_span) {
    if (failed_) return -1;
    std::size_t n = 0;
    while (n < max && !done_) {
        if (stop_at_span && sendfile_span()) break;
        std::string_view from;
        if (part_ == body_.parts.size()) {
            from = std::string_view(body_.tail).substr(static_cast<std::size_t>(off_));
        } else if (in_head_) {
            from = std::string_view(body_.parts[part_].head).substr(static_cast<std::size_t>(off_));
        } else {
            const FileBody::Part& p = body_.parts[part_];
            const OpenFile& file = *body_.file;
            const std::size_t k =
                static_cast<std::size_t>(std::min<std::uint64_t>(max - n, p.length - off_));
            const std::uint64_t at = p.offset + off_;
            if (const std::string* mem = file.content()) {
                if (at + k > mem->size()) {  // ranges are checked against it: cannot happen
                    failed_ = true;
                    return -1;
                }
                std::memcpy(dst + n, mem->data() + at, k);
                n += k;
                off_ += k;
            } else {
                ssize_t got;
                do {
                    got = ::pread(file.fd(), dst + n, k, static_cast<off_t>(at));
                } while (got < 0 && errno == EINTR);
                if (got <= 0) {  // the file shrank or failed under us: the next call says so
                    failed_ = true;
                    return n ? static_cast<ssize_t>(n) : -1;
                }
                n += static_cast<std::size_t>(got);
                off_ += static_cast<std::uint64_t>(got);
            }
            step();
            continue;
        }
        const std::size_t k = std::min(max - n, from.size());
        std::memcpy(dst + n, from.data(), k);
        n += k;
        off_ += k;
        step();
    }
    return static_cast<ssize_t>(n);
}

ssize_t FileCursor::fill(Buffer& out, std::size_t max) {
    out.ensure_writable(max);
    const ssize_t n = copy(out.write_ptr(), max, !no_sendfile_);
    if (n > 0) out.commit(static_cast<std::size_t>(n));
    return n;
}

std::optional<FileCursor::Span> FileCursor::sendfile_span() const noexcept {
    // (step() leaves the cursor at a non-empty stretch: at file bytes, in_head_ is false)
    if (done_ || failed_ || no_sendfile_ || part_ >= body_.parts.size() || in_head_)
        return std::nullopt;
    const OpenFile& file = *body_.file;
    if (file.content()) return std::nullopt;
    const FileBody::Part& p = body_.parts[part_];
    return Span{file.fd(), p.offset + off_, p.length - off_};
}

void FileCursor::advance(std::uint64_t n) noexcept {
    off_ += n;
    step();
}

}  // namespace vela
