#pragma once
// The client side of a WebSocket session, for vela::ws::connect (module wsclient), which runs
// the opening handshake: after its 101 the connection becomes the same session the server
// runs (vela::WebSocket), in client mode: masked frames, unmasked ones expected, the roles of
// permessage-deflate swapped, the server's TCP close awaited. Applications use ws::connect.

#include <optional>
#include <string>

#include "vela/server/websocket.hpp"
#include "vela/ws/deflate.hpp"

namespace vela::net {
class Transport;
}

namespace vela::detail {

/// What the opening handshake agreed on, and the session's settings.
struct WsClientAgreement {
    /// Limits, ping and close timeouts, the send queue and its policy, deflate level and
    /// min_size (the negotiation fields are unused).
    WsOptions options;
    /// permessage-deflate as the server's answer stated it (nullopt: not negotiated).
    std::optional<ws::DeflateParams> deflate;
    /// The subprotocol the server chose (empty: none).
    std::string subprotocol;
    /// The URL, for log lines.
    std::string url;
};

/// Starts a client session over `t` (the connection a 101 switched, with the bytes read after
/// it), on t's loop; the caller owns it until ws_client_release().
WebSocket& ws_client_start(net::Transport&& t, WsClientAgreement a);

/// The owner lets go of a session from ws_client_start(): the closing handshake starts (1000)
/// unless it ran, and the session is freed once its socket is closed.
void ws_client_release(WebSocket& ws) noexcept;

}  // namespace vela::detail
