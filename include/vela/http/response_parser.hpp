#pragma once
// HTTP/1.1 response-head parser for a client reading from untrusted servers (RFC 9112 2-6).
//
// Pure: bytes in, a ResponseHead and the body's framing out; no sockets. The caller hands
// parse_response_head() everything it holds from the start of a response, again each time
// more arrives; the answer is need_more, done (with the head's length) or an error with a
// one-line reason. The head is copied into the ResponseHead (its fields are offsets into that
// copy), so the caller's buffer may be reused as soon as the call returns.
//
// Choices where the RFC leaves one (each an error unless noted):
// - Only HTTP/1.0 and HTTP/1.1 (RFC 9110 2.5 would read HTTP/1.2 as 1.1; we refuse it).
// - Lines end with CRLF or a bare LF (RFC 9112 2.2 lets a recipient accept LF; accepted);
//   a CR not followed by LF is an error, and so is an empty line before the status line.
// - A status code outside 100-599 (RFC 9110 15); "HTTP/1.1 200" with no SP after the code
//   is read as an empty reason (accepted).
// - obs-fold (RFC 9112 5.2 lets a user agent replace it with SP; we refuse it), whitespace
//   before a field's colon (5.1), empty or non-token field names, and CTLs (NUL, CR, DEL...)
//   in field values or the reason phrase.
// - Framing fields are checked in every response but a 2xx answer to CONNECT (RFC 9110
//   9.3.6: ignored there), even when the status or method means no body: a legitimate
//   server never sends these, and a connection that got one is not to be trusted:
//   Content-Length with Transfer-Encoding (RFC 9112 6.3 rule 3 would let TE win),
//   Transfer-Encoding in HTTP/1.0 (6.1), chunked not last or repeated (6.3 rule 4 would read
//   to the end of the connection), a Content-Length that is not digits, has empty list
//   elements or is over 2^63-1, and differing Content-Length values (RFC 9110 8.6; a list
//   or repeat of one value is accepted).
// - Transfer-Encoding without chunked: the body runs to the end of the connection (RFC 9112
//   6.3 rule 4, accepted).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vela {

/// Limits for a response head read by a client.
struct ResponseLimits {
    /// Largest head: status line, field lines and the empty line (at most 4 GiB is used).
    std::size_t max_head_bytes = 64 * 1024;
    /// Most header fields.
    std::size_t max_fields = 128;
};

/// How the body after a response head is delimited (RFC 9112 6.3).
enum class BodyFraming : std::uint8_t { none, length, chunked, until_close };

/// What parse_response_head found.
struct HeadParse {
    /// More bytes are needed, the head is complete, or it is malformed.
    enum class Result : std::uint8_t { need_more, done, error };
    /// The outcome.
    Result result = Result::need_more;
    /// Bytes of the head including its empty line (when done): the body starts there.
    std::size_t consumed = 0;
    /// How the body is delimited (when done).
    BodyFraming framing = BodyFraming::none;
    /// The body's length when framing is `length`, else 0.
    std::uint64_t content_length = 0;
    /// The connection may carry another request after this response's body (when done).
    bool keep_alive = false;
    /// Why the head is malformed, one line (when error).
    std::string error;
};

class ResponseHead;

/// Parses the response head at the start of `in` (see above). `request_method`: the method of
/// the request answered (HEAD and CONNECT change the framing). Fills `head` when done (it is
/// left empty otherwise); its storage is reused from call to call.
HeadParse parse_response_head(std::string_view in, std::string_view request_method,
                              const ResponseLimits& limits, ResponseHead& head);

/// One response head, owning a copy of its bytes; fields are kept as offsets into it.
class ResponseHead {
  public:
    /// The status code (100-599; 0 before a head was parsed).
    int status() const noexcept { return status_; }
    /// The reason phrase (may be empty).
    std::string_view reason() const noexcept { return at(reason_off_, reason_len_); }
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    int version_minor() const noexcept { return minor_; }
    /// Number of header fields.
    std::size_t size() const noexcept { return fields_.size(); }
    /// The name of field `i` (as received; i < size()).
    std::string_view name(std::size_t i) const noexcept {
        return at(fields_[i].name_off, fields_[i].name_len);
    }
    /// The value of field `i`, without leading and trailing whitespace (i < size()).
    std::string_view value(std::size_t i) const noexcept {
        return at(fields_[i].value_off, fields_[i].value_len);
    }
    /// The value of the first field named `name` (case-insensitive); empty if none.
    std::string_view header(std::string_view name) const noexcept;
    /// The values of every field line named `name` (case-insensitive), in order.
    std::vector<std::string_view> header_values(std::string_view name) const;
    /// True when a field named `name` (case-insensitive) is present.
    bool has_header(std::string_view name) const noexcept;
    /// Calls f(name, value) for each field, in order.
    template <class F>
    void for_each(F&& f) const {
        for (const Field& x : fields_) f(at(x.name_off, x.name_len), at(x.value_off, x.value_len));
    }
    /// The head's bytes as received (status line to the empty line; field lines only for a
    /// head built with assign()).
    std::string_view raw() const noexcept { return raw_; }
    /// Starts a head built from fields instead of parsed (an HTTP/2 response): status
    /// `status`, no field yet, version_minor() 1.
    void assign(int status);
    /// Appends a field to a head begun with assign().
    void add_field(std::string_view name, std::string_view value);

  private:
    friend HeadParse parse_response_head(std::string_view, std::string_view, const ResponseLimits&,
                                         ResponseHead&);
    // Offsets into raw_ (a head is at most 4 GiB).
    struct Field {
        std::uint32_t name_off;
        std::uint32_t name_len;
        std::uint32_t value_off;
        std::uint32_t value_len;
    };

    std::string_view at(std::uint32_t off, std::uint32_t len) const noexcept {
        return std::string_view(raw_.data() + off, len);
    }
    std::size_t find(std::string_view name) const noexcept;
    void clear() noexcept;

    std::string raw_;
    std::vector<Field> fields_;
    std::uint32_t reason_off_ = 0;
    std::uint32_t reason_len_ = 0;
    int status_ = 0;
    int minor_ = 0;
};

}  // namespace vela
