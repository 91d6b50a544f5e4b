#pragma once
// Settings and errors shared by the JSON reader and writer.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace vela::json {

/// How documents are read. A structural type, so it can be a template argument
/// (`vela::Json<T, json::ParseOptions{.reject_unknown_fields = true}>`).
struct ParseOptions {
    /// Objects and arrays nested deeper than this are an error, not a stack overflow.
    /// Values above kMaxDepthLimit are clamped to it.
    std::uint32_t max_depth = 128;
    /// An object field that the target struct does not declare is an error (default: skipped).
    bool reject_unknown_fields = false;
};

/// The hard ceiling for ParseOptions::max_depth (and the writer's nesting of json::Value).
inline constexpr std::uint32_t kMaxDepthLimit = 4096;

/// How values are written.
struct WriteOptions {
    /// Invalid UTF-8 in strings becomes U+FFFD instead of an error.
    bool replace_invalid_utf8 = false;
    /// Empty std::optional members are left out of objects (otherwise written as null).
    bool skip_null_members = true;
};

/// What went wrong reading or writing, and where. Converts to true when it holds an error,
/// like std::error_code: `if (auto err = json::read(text, out)) ...`.
struct Error {
    /// Where, as a JSONPath ("$.items[3].price"); "$" for the whole document.
    std::string path;
    /// The same place as an RFC 6901 JSON Pointer ("/items/3/price"; "" for the document).
    std::string pointer;
    /// What ("expected number"); empty when there is no error.
    std::string message;

    /// True when this holds an error.
    explicit operator bool() const noexcept { return !message.empty(); }
    /// "path: message" (just the message when there is no path), or "" without an error.
    std::string to_string() const;
};

/// Thrown by json::parse() with the Error that stopped it.
class ParseError : public std::runtime_error {
  public:
    /// Wraps `e`; what() is e.to_string().
    explicit ParseError(Error e) : std::runtime_error(e.to_string()), error_(std::move(e)) {}
    /// Where and what.
    const Error& error() const noexcept { return error_; }

  private:
    Error error_;
};

/// Thrown by json::write() when a value cannot be written (NaN, invalid UTF-8, ...).
class WriteError : public std::runtime_error {
  public:
    /// Constructs with a message, as std::runtime_error does.
    using std::runtime_error::runtime_error;
};

}  // namespace vela::json
