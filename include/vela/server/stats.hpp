#pragma once
// Per-loop statistics the server keeps when metrics are on (vela/ops/metrics.hpp reads them).
//
// Each loop writes its own LoopStats (LoopCounter: single writer, relaxed); a scrape on any
// thread reads every loop's and sums them. With metrics off no LoopStats exists and the
// server's only cost is a null pointer test per accepted or closed connection.

#include <cstddef>
#include <cstdint>

#include "vela/base/loop_counter.hpp"
#include "vela/reactor/io_backend.hpp"

namespace vela {

/// The protocol a server connection speaks (a connection may change it once: h2c, WebSocket).
enum class ConnectionProtocol : std::uint8_t {
    http1,      ///< HTTP/1.x
    http2,      ///< HTTP/2 (h2 over TLS, h2c)
    websocket,  ///< a WebSocket session (RFC 6455)
};

/// Number of ConnectionProtocol values.
inline constexpr std::size_t kConnectionProtocols = 3;

/// What one loop counts (see above).
struct LoopStats {
    /// Open connections by [protocol][tls ? 1 : 0].
    LoopCounter connections[kConnectionProtocols][2];
    /// Server-sent event streams open.
    LoopCounter sse_streams;
    /// Bytes read from and written to server connections (TLS: the encrypted bytes).
    IoCounters io;
};

namespace detail {
/// The LoopStats of the server loop running on this thread (nullptr: none, or metrics off).
LoopStats* current_loop_stats() noexcept;
/// Sets it (the server worker, when its loop starts and ends).
void set_current_loop_stats(LoopStats* s) noexcept;
}  // namespace detail

}  // namespace vela
