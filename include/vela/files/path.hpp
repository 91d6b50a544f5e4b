#pragma once
// Mapping a request path below a static-files mount onto a file name, safely.
//
// The request path arrives percent-decoded once (the HTTP parser already refused NUL and
// dot segments after decoding). This check is the second line: it works on the decoded
// remainder after the mount prefix and refuses anything that could name a file outside the
// root or a hidden one, whatever the parser let through. The third line is the kernel:
// files are opened below the root's directory descriptor with openat2(RESOLVE_BENEATH).

#include <cstdint>
#include <string>
#include <string_view>

namespace vela::files {

/// What check_path found.
enum class PathVerdict : std::uint8_t {
    ok,      ///< `out` holds a relative name ("a/b.txt"; "" for the root itself)
    bad,     ///< 400: ".." or "." segment, NUL, backslash, control byte, invalid or overlong UTF-8
    hidden,  ///< 404: a segment starts with '.' and dotfiles are not allowed
};

/// Checks `rest` (the decoded path after the mount prefix, e.g. "/css/site.css" or "" or "/")
/// and writes the relative name without leading, trailing or repeated slashes to `out`.
/// Windows device names (CON, NUL, ...) and "~" are ordinary names. `allow_dotfiles` lets
/// segments starting with '.' through ("." and ".." stay bad). A bad byte or segment anywhere
/// wins over a hidden one ("/.git/../x" is bad). Nothing is decoded again: "%2e%2e" is a name.
/// `out` is cleared first and left empty unless the verdict is ok; the call does not allocate
/// when `out.capacity() >= rest.size()` (reuse one string per connection for that fast path).
PathVerdict check_path(std::string_view rest, std::string& out, bool allow_dotfiles = false);

/// True when `rest` ends with '/' (a directory-style request).
inline bool ends_with_slash(std::string_view rest) noexcept {
    return !rest.empty() && rest.back() == '/';
}

}  // namespace vela::files
