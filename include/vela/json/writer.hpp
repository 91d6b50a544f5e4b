#pragma once
// Writer: JSON text appended straight into a std::string, no DOM in between.
//
// The writer keeps a raw cursor into the string (grown by doubling, trimmed by finish() or
// the destructor), so writing a key or a number is a bounds check and a memcpy. Strings
// are scanned eight bytes at a time for the rare byte that needs work (a quote, a
// backslash, a control character or a non-ASCII byte whose UTF-8 must be checked).
//
// Errors (NaN, invalid UTF-8, nesting past kMaxDepthLimit, an enum value without a name)
// do not throw: the first one is kept in error() and the output is to be discarded.

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "vela/json/options.hpp"

namespace vela::json {

namespace detail {

// Length of the prefix of `s` that can be written between quotes as it is.
inline std::size_t plain_prefix(const char* d, std::size_t n) noexcept {
    std::size_t i = 0;
    if constexpr (std::endian::native == std::endian::little) {
        constexpr std::uint64_t ones = 0x0101010101010101ull;
        constexpr std::uint64_t high = 0x8080808080808080ull;
        for (; i + 8 <= n; i += 8) {
            std::uint64_t x;
            std::memcpy(&x, d + i, 8);
            const std::uint64_t quote = x ^ (ones * '"');
            const std::uint64_t slash = x ^ (ones * '\\');
            // Per byte: < 0x20, == '"', == '\\', or >= 0x80. The lowest flagged byte is exact.
            const std::uint64_t m =
                ((x - ones * 0x20) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash) | x) &
                high;
            if (m) return i + static_cast<std::size_t>(std::countr_zero(m) >> 3);
        }
    }
    for (; i < n; ++i) {
        const auto c = static_cast<unsigned char>(d[i]);
        if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
    }
    return i;
}

}  // namespace detail

/// Appends JSON text straight into a std::string (see above).
class Writer {
  public:
    /// Appends to `out` (which keeps what it already holds).
    explicit Writer(std::string& out, const WriteOptions& opts = {}) noexcept
        : out_(out), buf_(out.data()), len_(out.size()), cap_(out.size()), opts_(opts) {}
    /// Trims the string to what was written, as finish() does.
    ~Writer() { finish(); }
    /// Not copyable.
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    /// The options in force.
    const WriteOptions& options() const noexcept { return opts_; }
    /// True while no error has been recorded.
    bool ok() const noexcept { return error_ == nullptr; }
    /// The first error, or nullptr.
    const char* error() const noexcept { return error_; }
    /// Records `message` (a string literal) unless an error is already recorded.
    void fail(const char* message) noexcept {
        if (!error_) error_ = message;
    }

    /// Appends JSON text as it is.
    void raw(std::string_view s) {
        char* p = reserve(s.size());
        std::memcpy(p, s.data(), s.size());
        len_ += s.size();
    }
    /// Appends one character as it is.
    void raw(char c) {
        *reserve(1) = c;
        ++len_;
    }
    /// Writes null.
    void null() { raw(std::string_view("null", 4)); }
    /// Writes true or false.
    void boolean(bool b) {
        b ? raw(std::string_view("true", 4)) : raw(std::string_view("false", 5));
    }
    /// Writes a signed integer.
    void integer(std::int64_t v) {
        char* p = reserve(20);
        len_ += static_cast<std::size_t>(std::to_chars(p, p + 20, v).ptr - p);
    }
    /// Writes an unsigned integer.
    void integer(std::uint64_t v) {
        char* p = reserve(20);
        len_ += static_cast<std::size_t>(std::to_chars(p, p + 20, v).ptr - p);
    }
    /// Writes a double in its shortest round-trip form ("0.1", "1e+300", "2.0"); NaN and
    /// infinities are an error.
    void number(double v);
    /// Writes a float in its shortest round-trip form (as a float); NaN and infinities are an
    /// error.
    void number(float v);
    /// Writes a quoted, escaped string; invalid UTF-8 is an error or U+FFFD (options).
    void string(std::string_view s) {
        char* p = reserve(s.size() + 2);
        *p = '"';
        const std::size_t n = detail::plain_prefix(s.data(), s.size());
        std::memcpy(p + 1, s.data(), n);
        if (n == s.size()) [[likely]] {
            p[n + 1] = '"';
            len_ += n + 2;
            return;
        }
        len_ += n + 1;
        string_tail(s.substr(n));
    }

    /// Enters an object or array; false (and an error) past kMaxDepthLimit levels.
    bool enter() noexcept {
        if (++depth_ <= kMaxDepthLimit) return true;
        fail("nesting deeper than the writer's limit");
        return false;
    }
    /// Leaves what enter() entered.
    void leave() noexcept { --depth_; }

    /// Bytes in the string so far (including what it held before).
    std::size_t size() const noexcept { return len_; }
    /// Trims the string to what was written; also done by the destructor.
    void finish() {
        if (out_.size() != len_) out_.resize(len_);
        buf_ = out_.data();
        cap_ = len_;
    }

  private:
    char* reserve(std::size_t n) {
        if (cap_ - len_ < n) [[unlikely]]
            grow(n);
        return buf_ + len_;
    }
    void grow(std::size_t n);
    void string_tail(std::string_view s);
    void finite_number(char* p, char* end);

    std::string& out_;
    char* buf_;
    std::size_t len_;
    std::size_t cap_;
    WriteOptions opts_;
    std::uint32_t depth_ = 0;
    const char* error_ = nullptr;
};

}  // namespace vela::json
