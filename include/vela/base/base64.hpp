#pragma once
// Base64 (RFC 4648): the standard alphabet with padding (section 4) and the URL-safe one
// without (section 5), for cookies, JWT, session ids, PHC password strings, WebSocket keys
// and HTTP2-Settings. One codec for the whole framework: decoding is strict, so every byte
// string has exactly one accepted spelling (a signed value cannot be re-spelt to slip past a
// comparison of its text).

#include <optional>
#include <string>
#include <string_view>

namespace vela {

/// `data` as base64url (RFC 4648 section 5) without padding.
std::string base64url_encode(std::string_view data);
/// Decodes unpadded base64url (padding '=' also accepted at the end); nullopt on any other
/// character, an impossible length or non-zero leftover bits.
std::optional<std::string> base64url_decode(std::string_view text);
/// `data` as standard base64 with padding.
std::string base64_encode(std::string_view data);
/// Decodes standard base64 (padding required when the length needs it); nullopt if malformed.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace vela
