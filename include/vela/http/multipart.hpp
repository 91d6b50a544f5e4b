#pragma once
// A streaming parser of multipart/form-data bodies (RFC 7578 over the multipart syntax of
// RFC 2046 section 5.1), fed the body in pieces of any size as they arrive.
//
//     std::string boundary, why;
//     if (parse_multipart_content_type(req.header("Content-Type"), boundary, why) != Status::OK)
//         ...;                                    // 415 (not multipart/form-data) or 400
//     struct Sink : vela::MultipartHandler {
//         bool on_part_begin(const vela::MultipartPart& p) override { ...; return true; }
//         bool on_part_data(std::string_view bytes) override { ...; return true; }
//         bool on_part_end() override { return true; }
//     } sink;
//     vela::MultipartParser parser(boundary);
//     for (each piece of the body)
//         if (parser.feed(piece, sink) == vela::MultipartParser::Result::error) ...;
//     if (parser.finish() != vela::MultipartParser::Result::done) ...;  // parser.error()
//
// The parser keeps no part body: each part's bytes are handed to on_part_data() as they are
// recognised (a delimiter split across pieces is held back, at most 74 bytes, and released
// when it turns out not to be one), so memory stays bounded by the part header limit however
// large the body. The preamble before the first delimiter and the epilogue after the close
// delimiter are ignored (but count towards max_total_size). A body that ends before the close
// delimiter is an error, and so is a delimiter followed by anything but "--", transport
// padding and CRLF ("\r\n--boundaryX" inside a part): RFC 2046 forbids the delimiter inside
// a part, and refusing it leaves no room for two parsers to split the body differently.
//
// Part headers: Content-Disposition must be `form-data` with a `name`; `filename` (a quoted
// string in which a backslash escapes only `"` and `\`, as browsers send Windows paths) and
// `filename*` (RFC 8187: UTF-8 or ISO-8859-1, percent-decoded; it wins over `filename`) make
// the part a file. Content-Type is kept as sent; other headers are ignored. Folded header
// lines (obs-fold) are unfolded; a line without a colon, a bad field name, or a control
// character in a value is malformed.
//
// File names are sanitized (sanitize_filename): only the last path component is kept (after
// the last '/' or '\'), control characters are removed, invalid UTF-8 becomes U+FFFD, "." and
// ".." become empty, and the result is at most 255 bytes; it is still the client's word, so
// never use it as a path without your own checks.
//
// Every violation stops the parser with a status: 413 for a limit (MultipartLimits), 400 for
// malformed input; error_message() says which, in one line.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "vela/http/status.hpp"

namespace vela {

/// Limits on one multipart body; exceeding one stops the parser with 413.
struct MultipartLimits {
    /// Most parts (fields and files together).
    std::size_t max_parts = 100;
    /// Largest header section of one part, including its final empty line.
    std::size_t max_part_header_bytes = 8 * 1024;
    /// Largest value of one non-file field.
    std::size_t max_field_size = 64 * 1024;
    /// Largest sum of all non-file field values (what is kept in memory).
    std::size_t max_fields_total_size = 1024 * 1024;
    /// Largest single file.
    std::uint64_t max_file_size = std::uint64_t{128} << 20;
    /// Largest whole body (preamble, delimiters, headers, data and epilogue).
    std::uint64_t max_total_size = std::uint64_t{256} << 20;
};

/// The headers of one part, given to MultipartHandler::on_part_begin.
struct MultipartPart {
    /// The form field name (Content-Disposition `name`).
    std::string name;
    /// The sanitized file name (see sanitize_filename); empty for a field or an unnamed file.
    std::string filename;
    /// The part's Content-Type as sent (trimmed); empty when absent.
    std::string content_type;
    /// True when the part carries `filename` or `filename*` (a file input), even if empty.
    bool is_file = false;
};

/// Receives the parts as the parser finds them; a false return stops the parser.
class MultipartHandler {
  public:
    /// Destroys the handler.
    virtual ~MultipartHandler() = default;
    /// A part starts (its headers were read).
    virtual bool on_part_begin(const MultipartPart& part) = 0;
    /// The next bytes of the current part's body (valid only during the call).
    virtual bool on_part_data(std::string_view data) = 0;
    /// The current part's body is complete.
    virtual bool on_part_end() = 0;
};

/// Parses one multipart/form-data body fed in pieces (see above).
class MultipartParser {
  public:
    /// What feed() and finish() found.
    enum class Result : std::uint8_t { need_more, done, error };

    /// A parser for `boundary` (throws std::invalid_argument unless valid_boundary()).
    explicit MultipartParser(std::string_view boundary, MultipartLimits limits = {});

    /// Parses the next piece of the body, calling `h` for what it completes. After done,
    /// further bytes are epilogue (ignored); after error, nothing is read.
    Result feed(std::string_view piece, MultipartHandler& h);
    /// The body ended: done if the close delimiter was seen, otherwise an error.
    Result finish();

    /// True once the close delimiter was seen.
    bool done() const noexcept { return state_ == State::epilogue; }
    /// The status for the error: 400 (malformed), 413 (a limit) or 500 (a handler stopped).
    Status error() const noexcept { return error_; }
    /// Why the parser stopped, in one line ("" when it did not).
    const std::string& error_message() const noexcept { return message_; }
    /// Body bytes fed so far.
    std::uint64_t total_bytes() const noexcept { return total_; }

    /// True for an RFC 2046 boundary: 1 to 70 bchars, not ending with a space.
    static bool valid_boundary(std::string_view b) noexcept;

  private:
    enum class State : std::uint8_t {
        preamble,     // looking for the first delimiter
        after_delim,  // just after "--boundary": "--", padding or CRLF
        after_dash,   // after "--boundary-": expects the second '-'
        padding,      // transport padding before CRLF
        padding_lf,   // after the CR ending the delimiter line
        headers,      // a part's header section
        body,         // a part's body, looking for the next delimiter
        epilogue,     // after the close delimiter
        failed
    };

    Result fail(Status s, std::string message);
    Result parse(std::string_view p, MultipartHandler& h);
    // Scans `p` from `i` for the delimiter; true when found (i is then past it).
    bool scan(std::string_view p, std::size_t& i, MultipartHandler* h);
    bool emit(std::string_view data, MultipartHandler& h);
    bool header_byte(char c, MultipartHandler& h);
    bool begin_part(MultipartHandler& h);

    std::string delim_;  // "\r\n--" + boundary
    MultipartLimits limits_;
    State state_ = State::preamble;
    Status error_ = Status::OK;
    std::string message_;
    std::size_t matched_ = 2;  // bytes of delim_ matched and held back (the body's start
                               // counts as a CRLF, so the first "--boundary" needs none)
    std::string header_;       // the current part's header section
    MultipartPart part_;
    std::size_t parts_ = 0;
    std::uint64_t part_size_ = 0;
    std::uint64_t fields_total_ = 0;
    std::uint64_t total_ = 0;
};

/// Reads the boundary of a multipart/form-data Content-Type value: OK, 415 when the media
/// type is another one, 400 when the boundary is missing or invalid (`why` says which).
Status parse_multipart_content_type(std::string_view content_type, std::string& boundary,
                                    std::string& why);

/// The file name a client sent, made safe to show (see above): the last path component,
/// without control characters, valid UTF-8, never "." or "..", at most 255 bytes.
std::string sanitize_filename(std::string_view name);

/// Decodes an RFC 8187 ext-value (`UTF-8''%e2%82%ac.txt`, or ISO-8859-1) into UTF-8; false
/// when it is malformed, in another charset, or not valid UTF-8.
bool decode_ext_value(std::string_view value, std::string& out);

}  // namespace vela
