#pragma once
// The field names the reverse proxy treats specially, told apart by length first (one pass
// over a head costs a switch and at most two comparisons per field).

#include <cstdint>
#include <string_view>

namespace vela::proxy {

/// What a field name is to the proxy.
enum class FieldKind : std::uint8_t {
    other,
    hop,             ///< hop-by-hop (RFC 9110 7.6.1), Connection excepted
    connection,      ///< Connection (hop-by-hop, and names more)
    content_length,  ///< Content-Length
    content_type,    ///< Content-Type
    date,            ///< Date
    server,          ///< Server
    via,             ///< Via
    host,            ///< Host
    expect,          ///< Expect
    forwarding,      ///< X-Forwarded-For / -Proto / -Host, Forwarded
};

/// The kind of the field named `name` (case-insensitive).
FieldKind classify(std::string_view name) noexcept;

}  // namespace vela::proxy
