#pragma once
// A response body that comes from a file: the whole file, one range of it, or several ranges
// with part heads between them (multipart/byteranges). The server sends the file bytes with
// sendfile(2) on plain HTTP/1.1 connections and reads them in pieces elsewhere (TLS, HTTP/2),
// so a large file never sits in memory.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vela {

/// An open, read-only file shared by the responses that send it (closed with the last), with
/// the metadata read when it was opened. Small files may carry their bytes (read once), so
/// they are sent from memory.
class OpenFile {
  public:
    /// What was known about the file when it was opened.
    struct Meta {
        /// Inode number.
        std::uint64_t inode = 0;
        /// Modification time, nanoseconds since the epoch.
        std::int64_t mtime_ns = 0;
        /// Strong entity-tag from inode, size and modification time.
        std::string etag;
        /// Strong entity-tag from size and modification time only (equal on every machine a
        /// deployment copies the file to).
        std::string etag_no_inode;
        /// The modification time as an IMF-fixdate (the Last-Modified value).
        std::string last_modified;
    };

    /// Takes ownership of `fd` (a regular file of `size` bytes).
    OpenFile(int fd, std::uint64_t size) noexcept : fd_(fd), size_(size) {}
    /// Closes the descriptor.
    ~OpenFile();
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;

    /// The descriptor.
    int fd() const noexcept { return fd_; }
    /// The size in bytes when opened.
    std::uint64_t size() const noexcept { return size_; }
    /// The modification time in seconds since the epoch.
    std::int64_t mtime_s() const noexcept { return meta_.mtime_ns / 1'000'000'000; }
    /// The metadata.
    const Meta& meta() const noexcept { return meta_; }
    /// Sets the metadata (whoever opens the file does, once).
    void set_meta(Meta m) noexcept { meta_ = std::move(m); }
    /// The file's bytes when they are kept in memory (small files); otherwise nullptr.
    const std::string* content() const noexcept { return content_ ? &*content_ : nullptr; }
    /// Keeps `bytes` (the whole file) in memory.
    void set_content(std::string bytes) { content_ = std::move(bytes); }
    /// Closes the descriptor of a file kept in memory (fd() is -1 afterwards).
    void close_fd() noexcept;

  private:
    int fd_;
    std::uint64_t size_;
    Meta meta_;
    std::optional<std::string> content_;
};

/// What a response sends from a file.
struct FileBody {
    /// One stretch of the body: `head` bytes (a multipart part head; empty otherwise), then
    /// `length` bytes of the file from `offset`.
    struct Part {
        /// Bytes sent before the file bytes.
        std::string head;
        /// Offset in the file.
        std::uint64_t offset = 0;
        /// File bytes to send.
        std::uint64_t length = 0;
    };
    /// The file.
    std::shared_ptr<const OpenFile> file;
    /// The stretches, in order.
    std::vector<Part> parts;
    /// Bytes after the last part (a multipart body's closing boundary).
    std::string tail;
    /// Which entity-tag the response announces (and conditional requests compare with).
    enum class Etag : std::uint8_t { none, full, no_inode } etag_kind = Etag::full;
    /// Last-Modified is announced (and If-Modified-Since / If-Unmodified-Since compared).
    bool use_last_modified = true;
    /// Range requests are honoured (Accept-Ranges: bytes was announced).
    bool ranges = true;
    /// Conditional requests are evaluated against etag / last_modified.
    bool conditional = true;

    /// The announced entity-tag (empty: none).
    std::string_view etag() const noexcept {
        if (!file || etag_kind == Etag::none) return {};
        return etag_kind == Etag::full ? file->meta().etag : file->meta().etag_no_inode;
    }
    /// The announced modification time, if any.
    std::optional<std::int64_t> last_modified() const noexcept {
        if (!file || !use_last_modified) return std::nullopt;
        return file->mtime_s();
    }

    /// The body's length: every part head, file stretch and the tail.
    std::uint64_t length() const noexcept {
        std::uint64_t n = tail.size();
        for (const Part& p : parts) n += p.head.size() + p.length;
        return n;
    }
};

class Request;
class Response;

/// Evaluates `req`'s preconditions against `etag` / `last_modified` (RFC 9110 13.2.2) and,
/// when they stop the request, turns `res` into the answer: 304 without a body (its validators
/// kept), or 412 with a plain-text body (the file's Content-Type, Content-Encoding,
/// Accept-Ranges and Content-Disposition dropped). True when `res` was changed.
bool answer_preconditions(const Request& req, Response& res, std::string_view etag,
                          std::optional<std::int64_t> last_modified);

/// The HTTP semantics of a file body, applied by the server just before it sends a 200 whose
/// body is a file (so middleware sees the plain 200): preconditions (304, 412, RFC 9110 13),
/// then Range with If-Range (206 single or multipart/byteranges, 416; RFC 9110 14) for GET.
/// More than `max_ranges` range specs make the Range header ignored.
void apply_file_semantics(const Request& req, Response& res, std::size_t max_ranges);

}  // namespace vela
