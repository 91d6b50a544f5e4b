#pragma once
// Response: what a handler returns, whatever the protocol.
//
// Header fields are kept pre-formatted ("Name: value\r\n") in a small inline block that
// spills to the heap only past kInlineHeaderBytes, so adding a header or two allocates
// nothing. The body is a std::string (short bodies live in its small-string buffer).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vela/http/file_body.hpp"
#include "vela/http/status.hpp"

namespace vela {

/// Common Content-Type values.
namespace mime {
inline constexpr std::string_view text = "text/plain; charset=utf-8";
inline constexpr std::string_view html = "text/html; charset=utf-8";
inline constexpr std::string_view json = "application/json";
inline constexpr std::string_view problem_json = "application/problem+json";
inline constexpr std::string_view octet_stream = "application/octet-stream";
}  // namespace mime

/// What a 101 response switches its connection to (the server knows the kinds; App::ws
/// makes the WebSocket one).
class Upgrade {
  public:
    /// Destroys the upgrade.
    virtual ~Upgrade() = default;
};

struct Cookie;

/// How Response::send_file sends a file.
struct SendFileOptions {
    /// Content-Type; empty: from the file name's extension (vela/files/mime.hpp).
    std::string content_type{};
    /// Offer the file as a download (Content-Disposition: attachment) named `download_name`
    /// (empty: the file's own name).
    bool attachment = false;
    /// The name a download is saved as (implies attachment when not empty).
    std::string download_name{};
    /// Send a strong ETag (from inode, size and modification time) and evaluate If-Match /
    /// If-None-Match against it.
    bool etag = true;
    /// Send Last-Modified and evaluate If-Modified-Since / If-Unmodified-Since against it.
    bool last_modified = true;
    /// Honour Range requests (Accept-Ranges: bytes).
    bool ranges = true;
    /// A Cache-Control value to send (empty: none).
    std::string cache_control{};
};

/// An HTTP response: status, header fields, and a body held in a string, streamed, or taken
/// from a file.
class Response {
  public:
    /// Header bytes kept inside the object before they spill to the heap.
    static constexpr std::size_t kInlineHeaderBytes = 224;
    /// Header fields whose lengths are recorded (a response with more is walked by parsing).
    static constexpr std::size_t kInlineFields = 12;
    /// The longest header name, and the longest value, add_header takes.
    static constexpr std::size_t kMaxFieldPart = 0xffff;

    /// An empty 200 response.
    Response() noexcept = default;
    /// An empty response with status `s`.
    Response(Status s) noexcept : status_(s) {}  // NOLINT: implicit on purpose (return Status::X)
    /// A text/plain 200 response with `body`.
    Response(std::string body) noexcept : body_(std::move(body)), content_type_(mime::text) {}
    /// A text/plain 200 response with a copy of `body`.
    Response(std::string_view body) : body_(body), content_type_(mime::text) {}
    /// A text/plain 200 response with a copy of `body`.
    Response(const char* body) : body_(body), content_type_(mime::text) {}
    /// Moves status, headers and body (inline header bytes are copied).
    Response(Response&& o) noexcept;
    /// Move-assigns, as the move constructor.
    Response& operator=(Response&& o) noexcept;
    /// Copies status, headers, body and the streamed or file body (shared until one of the
    /// copies changes or takes it).
    Response(const Response& o);
    /// Copy-assigns, as the copy constructor.
    Response& operator=(const Response& o);
    /// Destroys the response.
    ~Response() = default;

    /// A response with `body` and Content-Type `content_type`.
    static Response with_body(Status s, std::string body, std::string_view content_type);
    /// A text/plain response.
    static Response text(std::string body, Status s = Status::OK) {
        return with_body(s, std::move(body), mime::text);
    }
    /// An application/json response (the body must already be JSON).
    static Response json(std::string body, Status s = Status::OK) {
        return with_body(s, std::move(body), mime::json);
    }
    /// A text/html response.
    static Response html(std::string body, Status s = Status::OK) {
        return with_body(s, std::move(body), mime::html);
    }

    /// The status code.
    Status status() const noexcept { return status_; }
    /// Sets the status code.
    Response& set_status(Status s) noexcept {
        status_ = s;
        return *this;
    }
    /// The body.
    const std::string& body() const noexcept { return body_; }
    /// Replaces the body.
    Response& set_body(std::string b) noexcept {
        body_ = std::move(b);
        return *this;
    }
    /// Mutable access to the body (to append in place).
    std::string& mutable_body() noexcept { return body_; }

    /// The Content-Type; empty when the response has none.
    std::string_view content_type() const noexcept;
    /// The Content-Type when it is one of the mime:: constants (not in header_block()).
    std::string_view builtin_content_type() const noexcept { return content_type_; }
    /// Sets the Content-Type (the value is copied).
    Response& set_content_type(std::string_view value);
    /// Appends a header field. Throws std::invalid_argument on CR, LF or NUL in either part
    /// (header injection) or an empty name. Content-Length, Transfer-Encoding, Date and
    /// Connection are written by the server and may not be set here.
    Response& add_header(std::string_view name, std::string_view value);
    /// Removes every header named `name` (case-insensitive) added with add_header; returns how
    /// many were removed.
    std::size_t remove_header(std::string_view name);
    /// Replaces the headers named `name` with one `name: value` (as remove + add).
    Response& set_header(std::string_view name, std::string_view value) {
        remove_header(name);
        return add_header(name, value);
    }
    /// Adds a Set-Cookie field for `c` (vela/http/cookie.hpp). Throws std::invalid_argument
    /// for a name, value or attribute that may not be sent (it is refused, never sent).
    Response& set_cookie(const Cookie& c);
    /// Adds a Set-Cookie field that deletes the cookie `name` set for `path` and `domain`.
    Response& clear_cookie(std::string_view name, std::string_view path = "/",
                           std::string_view domain = {});
    /// The first header named `name` (case-insensitive) added with add_header; empty if none.
    std::string_view header(std::string_view name) const noexcept;
    /// The added header fields, pre-formatted as "Name: value\r\n" lines.
    std::string_view header_block() const noexcept;
    /// Number of header fields in header_block().
    std::size_t header_count() const noexcept { return field_count_; }
    /// Calls `f(name, value)` for each field of header_block(), in order, from the lengths
    /// recorded when it was added (no parsing); names are as given.
    template <class F>
    void for_each_header(F&& f) const {
        const std::string_view block = header_block();
        if (field_count_ > kInlineFields) [[unlikely]] {
            std::string_view name, value;
            for (std::size_t pos = 0; (pos = next_field(block, pos, name, value)) != 0;)
                f(name, value);
            return;
        }
        const char* p = block.data();
        for (std::size_t i = 0; i < field_count_; ++i) {
            const std::size_t name = fields_[i] >> 16, value = fields_[i] & 0xffff;
            f(std::string_view(p, name), std::string_view(p + name + 2, value));
            p += name + value + 4;
        }
    }

    /// Produces a streamed body one piece at a time; std::nullopt ends it.
    using BodySource = std::function<std::optional<std::string>()>;
    /// Streams the body from `source` instead of body(): sent with chunked transfer coding
    /// (HTTP/1.1) or until the connection closes (HTTP/1.0). The server pulls pieces only as
    /// fast as the client reads them, so memory stays bounded.
    Response& set_body_source(BodySource source) {
        Extra& e = mutable_extra();
        e.source = std::move(source);
        e.length = -1;  // a new source: its length is unknown until said
        return *this;
    }
    /// Announces the streamed body's length (after set_body_source or stream_body): sent with
    /// Content-Length instead of chunked (HTTP/1.1) or with content-length (HTTP/2), so an
    /// HTTP/1.0 connection stays open too. A source that ends short of it or goes past it
    /// is an error: the connection closes (HTTP/1.1), the stream is reset (HTTP/2). A
    /// transformed body (compression) is announced as streamed again.
    Response& set_body_length(std::uint64_t n) {
        mutable_extra().length = static_cast<std::int64_t>(n);
        return *this;
    }
    /// The streamed body's announced length; -1 when not known.
    std::int64_t body_length() const noexcept { return extra_ ? extra_->length : -1; }
    /// Trailer fields sent after a streamed body: chunked HTTP/1.1's trailer section, HTTP/2's
    /// trailing HEADERS (RFC 9110 6.5). The list may be filled until the body ends (its
    /// producer holds it too); fields that may not be trailers (framing, routing, ...) and
    /// malformed ones are dropped; HTTP/1.0 and HEAD get none.
    using TrailerFields = std::vector<std::pair<std::string, std::string>>;
    /// Sends `trailers` after the streamed body.
    Response& set_trailers(std::shared_ptr<TrailerFields> trailers) {
        mutable_extra().trailers = std::move(trailers);
        return *this;
    }
    /// The trailer list set by set_trailers (or stream_body), null if none.
    const std::shared_ptr<TrailerFields>& trailers() const noexcept {
        static const std::shared_ptr<TrailerFields> none;
        return extra_ ? extra_->trailers : none;
    }
    /// True when the body is streamed from a BodySource.
    bool streaming() const noexcept { return extra_ && extra_->source; }
    /// Takes the body source (the server does, when it starts streaming).
    BodySource take_body_source() {
        return extra_ && extra_->source ? std::move(mutable_extra().source) : BodySource{};
    }

    /// Sends the file at `path` as the body: Content-Type from its extension, ETag,
    /// Last-Modified and Accept-Ranges, so the server answers conditional (304, 412) and range
    /// requests (206, 416) for it; the bytes leave with sendfile(2) where possible. A missing
    /// file, a directory or an unreadable one makes this a 404 or 403 instead. Open files and
    /// their metadata are cached per thread (checked for changes at most once a second).
    /// (Implemented by the files module, which vela::vela links.)
    Response& send_file(std::string_view path, const SendFileOptions& options = {});
    /// A response that sends the file at `path` (see send_file).
    static Response file(std::string_view path, const SendFileOptions& options = {}) {
        Response r;
        r.send_file(path, options);
        return r;
    }
    /// Makes `body` the body (the caller sets the headers that describe it).
    Response& set_file_body(FileBody body);
    /// The file body, if the body comes from a file (this response's own: a copy that shared
    /// it gets its own first).
    FileBody* file_body() { return extra_ && extra_->file ? &*mutable_extra().file : nullptr; }
    /// The file body, if the body comes from a file.
    const FileBody* file_body() const noexcept {
        return extra_ && extra_->file ? &*extra_->file : nullptr;
    }
    /// Drops a file body (the response then has its string body).
    void clear_file_body() {
        if (extra_ && extra_->file) mutable_extra().file.reset();
    }
    /// True when anything beyond status, headers and a string body is set (a streamed or file
    /// body, a protocol switch): one test for the server's rare paths.
    bool has_extra() const noexcept { return static_cast<bool>(extra_); }

    /// Makes this (101) response switch the connection to another protocol once sent.
    Response& set_upgrade(std::shared_ptr<Upgrade> u) {
        mutable_extra().upgrade = std::move(u);
        return *this;
    }
    /// True when a protocol switch is set (set_upgrade).
    bool has_upgrade() const noexcept { return extra_ && extra_->upgrade; }
    /// Takes the protocol switch set by set_upgrade (the server does, for a 101).
    std::shared_ptr<Upgrade> take_upgrade() {
        return extra_ && extra_->upgrade ? std::move(mutable_extra().upgrade) : nullptr;
    }

    /// Asks the server to close the connection after sending this response.
    Response& close_connection() noexcept {
        close_ = true;
        return *this;
    }
    /// True when the response has no body, no Content-Type and nothing streamed or sent from
    /// a file: what `return vela::Status::NotFound;` makes (the App gives error statuses
    /// like that its error body).
    bool is_bare() const noexcept {
        return body_.empty() && content_type_.empty() && !custom_content_type_ && !extra_;
    }
    /// True when close_connection() was called.
    bool wants_close() const noexcept { return close_; }

  private:
    // The rarely used parts, behind one pointer so that a plain response stays small and
    // cheap to move. Copies of a Response share them (and copy them before a change).
    struct Extra {
        BodySource source;
        std::int64_t length = -1;  // the streamed body's, when announced
        std::shared_ptr<TrailerFields> trailers;
        std::shared_ptr<Upgrade> upgrade;
        std::optional<FileBody> file;
    };
    Extra& mutable_extra();
    void append_field(std::string_view name, std::string_view value);
    void append_header_bytes(std::string_view a, std::string_view b, std::string_view c);
    void drop_fields(bool (*drop)(std::string_view name, std::string_view arg),
                     std::string_view arg, std::size_t& dropped);
    void copy_from(const Response& o);
    // The field of `block` at `pos`, and the position after it (0 at the end).
    static std::size_t next_field(std::string_view block, std::size_t pos, std::string_view& name,
                                  std::string_view& value) noexcept;

    Status status_ = Status::OK;
    bool close_ = false;
    bool custom_content_type_ = false;
    std::uint16_t inline_size_ = 0;
    std::uint16_t field_count_ = 0;  // fields in header_block()
    std::string body_;
    std::string_view content_type_;  // static text only; a custom value lives in the headers
    std::string spilled_;            // header bytes once they outgrow inline_
    std::shared_ptr<Extra> extra_;   // streamed or file body, protocol switch
    // Name length (high 16 bits) and value length (low 16) of the first kInlineFields fields.
    std::uint32_t fields_[kInlineFields];
    char inline_[kInlineHeaderBytes];
};

/// An empty string with at least `capacity` reserved for a response body, reusing the
/// storage of a body this thread recycled earlier when it is large enough (no allocation).
std::string body_string(std::size_t capacity);
/// The largest body capacity recycle_body() keeps.
inline constexpr std::size_t kMaxRecycledBody = 64 * 1024;
namespace detail {
void keep_spare_body(std::string&& body) noexcept;
}  // namespace detail
/// Keeps `body`'s storage for the next body_string() on this thread (one spare, at most
/// kMaxRecycledBody bytes); the server calls it once a body has been copied out.
inline void recycle_body(std::string&& body) noexcept {
    if (body.capacity() > std::string().capacity()) detail::keep_spare_body(std::move(body));
}

}  // namespace vela
