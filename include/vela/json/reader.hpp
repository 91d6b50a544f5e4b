#pragma once
// Reader: a forward-only cursor over one JSON document, backed by simdjson On-Demand.
//
// The codec (codec.hpp) drives it: each call consumes the current value or steps into and
// through an object or array, so a document goes straight into C++ objects without a DOM.
// simdjson stays behind this interface (its header is large and its types are internal), so
// each call is one out-of-line function call.
//
// Every method that can fail records the error, with the JSON path of the current value,
// and returns false; the first error stops the read and later calls keep failing. Strings
// and keys are views into the parser's buffers, valid until the document has been read.
//
// A Reader is only handed out by json::read() (detail::read_document): it is bound to the
// calling thread's parser and lives for one document.

#include <cstdint>
#include <string_view>

#include "vela/json/options.hpp"

namespace vela::json {

namespace detail {
struct ReaderState;
}

/// The kind of a JSON value.
enum class Kind : std::uint8_t { null, boolean, number, string, array, object };

/// A JSON number as written: a signed or unsigned integer when it is one, else a double.
struct Number {
    /// Which of the members below holds the value.
    enum class Type : std::uint8_t { int64, uint64, float64 } type = Type::int64;
    /// The value when type is int64.
    std::int64_t i = 0;
    /// The value when type is uint64.
    std::uint64_t u = 0;
    /// The value when type is float64.
    double d = 0;
};

/// A forward-only cursor over one JSON document (see above).
class Reader {
  public:
    /// Binds to one document's parser state (detail::read_document() makes Readers).
    explicit Reader(detail::ReaderState& s) noexcept : s_(&s) {}

    /// The options this document is read with.
    const ParseOptions& options() const noexcept;
    /// False once an error has been recorded.
    bool ok() const noexcept;

    /// The kind of the current value, without consuming it; false on a malformed value.
    bool peek(Kind& kind);
    /// Consumes the current value if it is null and returns true; false otherwise (then
    /// nothing is consumed, unless the value is malformed: check ok()).
    bool read_null();
    /// Reads a boolean.
    bool read_bool(bool& out);
    /// Reads an integer in [lo, hi].
    bool read_int(std::int64_t& out, std::int64_t lo = INT64_MIN, std::int64_t hi = INT64_MAX);
    /// Reads an integer in [0, hi].
    bool read_uint(std::uint64_t& out, std::uint64_t hi = UINT64_MAX);
    /// Reads any number as a double.
    bool read_double(double& out);
    /// Reads any number, keeping integers exact.
    bool read_number(Number& out);
    /// Reads a string (unescaped; a view valid until the document has been read).
    bool read_string(std::string_view& out);
    /// Reads any value (validated) and returns its JSON text as written.
    bool read_raw(std::string_view& out);
    /// Consumes the current value, whatever it is, checking that it is valid JSON.
    bool skip();

    /// Enters the current value, which must be an object.
    bool begin_object();
    /// Moves to the next field of the innermost object: sets `key` (unescaped) and makes the
    /// field's value current. False at the end of the object (which is then left) or on an
    /// error (check ok()).
    bool next_field(std::string_view& key);
    /// Enters the current value, which must be an array.
    bool begin_array();
    /// Moves to the next element of the innermost array and makes it current. False at the
    /// end of the array (which is then left) or on an error (check ok()).
    bool next_element();
    /// Index of the current element of the innermost array.
    std::uint32_t index() const noexcept;

    /// Records `message` as the error at the current value; returns false.
    bool fail(std::string_view message);
    /// Records "expected integer in [lo, hi]" at the current value; returns false.
    bool fail_range(std::int64_t lo, std::int64_t hi);
    /// Records "expected integer in [0, hi]" at the current value; returns false.
    bool fail_range(std::uint64_t hi);
    /// Records that the object just read lacks the required field `name`; returns false.
    bool fail_missing(std::string_view name);
    /// Records that the current field is not one the target declares; returns false.
    bool fail_unknown();

  private:
    detail::ReaderState* s_;
};

namespace detail {

/// Reads one document with the calling thread's parser: copies `json` into a padded buffer,
/// makes a Reader, calls fn(reader, ctx), then checks that nothing follows the value.
Error read_document(std::string_view json, const ParseOptions& opts, bool (*fn)(Reader&, void*),
                    void* ctx);

}  // namespace detail

}  // namespace vela::json
