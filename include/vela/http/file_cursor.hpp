#pragma once
// One way through a file body for every protocol driver: part heads, the file's bytes (from
// memory when the file is kept there, pread otherwise, or sendfile spans on plain sockets),
// then the tail. HTTP/1.1 fills its output buffer or hands the kernel a sendfile span; HTTP/2
// fills DATA frames; both learn of a failure the same way (a file that shrank or failed while
// sent: the announced length is a lie now, so the response is abandoned, never padded).

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "vela/base/buffer.hpp"
#include "vela/http/file_body.hpp"

namespace vela {

/// The position in a FileBody being sent (see above).
class FileCursor {
  public:
    /// File bytes to hand to sendfile(2): `length` bytes of `fd` from `offset`.
    struct Span {
        int fd;
        std::uint64_t offset;
        std::uint64_t length;
    };

    /// Starts at the first byte of `body`.
    explicit FileCursor(FileBody body) noexcept : body_(std::move(body)) { step(); }

    /// True once every byte was handed out.
    bool done() const noexcept { return done_; }
    /// True after the file ended early or failed (read() and fill() return -1 from then on).
    bool failed() const noexcept { return failed_; }
    /// Copies up to `max` of the next bytes to `dst`. Returns the bytes copied (0 only when
    /// done) or -1 when the file ended early or failed.
    ssize_t read(char* dst, std::size_t max);
    /// Appends up to `max` of the next bytes to `out` (reading the file straight into it),
    /// stopping where a sendfile span begins (unless no_sendfile()). Returns as read().
    ssize_t fill(Buffer& out, std::size_t max);
    /// At file bytes that are not kept in memory: the run to give to sendfile(2) (the
    /// caller's advance() then says how much went). Otherwise (a head, the tail, a file kept in
    /// memory, or after no_sendfile()) none: read() or fill() hands those bytes out.
    std::optional<Span> sendfile_span() const noexcept;
    /// Moves past `n` bytes of the current sendfile span.
    void advance(std::uint64_t n) noexcept;
    /// sendfile refused this file (a file system without splice support): read it instead.
    void no_sendfile() noexcept { no_sendfile_ = true; }
    /// The file body (its path-free description, for messages).
    const FileBody& body() const noexcept { return body_; }

  private:
    void step() noexcept;
    ssize_t copy(char* dst, std::size_t max, bool stop_at_span);

    FileBody body_;
    std::size_t part_ = 0;
    std::uint64_t off_ = 0;  // within the current head, file stretch or the tail
    bool in_head_ = true;
    bool done_ = false;
    bool failed_ = false;
    bool no_sendfile_ = false;
};

}  // namespace vela
