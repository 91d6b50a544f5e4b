#pragma once
// Hexadecimal text for bytes (RFC 4648 section 8, "base16"): lower-case digits out, either
// case in, two digits per byte. One codec for the framework (PostgreSQL bytea cells, the access
// log's \xhh escapes, test vectors). Not for numbers (a chunk size, an ETag: std::to_chars
// base 16) nor for percent-encoding, whose digit lookups sit on the request path.

#include <optional>
#include <string>
#include <string_view>

namespace vela {

/// The two lower-case hex digits of `c` written at `out`; returns one past them. Inline, for
/// escapers writing into a buffer they sized already.
inline char* hex_byte(char* out, unsigned char c) noexcept {
    static constexpr char kDigits[] = "0123456789abcdef";
    out[0] = kDigits[c >> 4];
    out[1] = kDigits[c & 15];
    return out + 2;
}

/// Appends `data` to `out` as lower-case hex (two digits per byte).
void hex_append(std::string& out, std::string_view data);
/// `data` as lower-case hex (two digits per byte).
std::string hex_encode(std::string_view data);
/// The bytes spelt by `text` (digits of either case, two per byte); nullopt on an odd length
/// or any other character.
std::optional<std::string> hex_decode(std::string_view text);

}  // namespace vela
