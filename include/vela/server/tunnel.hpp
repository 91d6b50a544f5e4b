#pragma once
// Tunnels: a 101 answer that joins the client's connection to another one byte for byte (a
// reverse proxy passing a WebSocket or any other upgraded protocol to its upstream).
//
//     // `upstream`: a connection that already switched protocols (http::Client::upgrade)
//     vela::Response r(vela::Status::SwitchingProtocols);
//     r.add_header("Upgrade", "websocket");
//     r.add_header("Sec-WebSocket-Accept", accept);
//     return vela::tunnel(std::move(r), std::move(upstream));
//
// Once the 101 is sent, the server hands the client's connection (its TLS transform and any
// bytes the client sent after its request) to a tunnel that copies what each side sends to
// the other: bounded buffering (a side that does not read holds the other back), an end of
// stream passed on as a half-close, an error or the idle timeout closing both. The tunnel is
// one of the loop's connections: a graceful shutdown closes it. HTTP/1.1 only (an HTTP/2
// stream has no 101).

#include <chrono>
#include <memory>

#include "vela/http/response.hpp"
#include "vela/net/transport.hpp"

namespace vela {

/// The protocol switch of a tunnel (see above; made by tunnel()).
class TunnelUpgrade final : public Upgrade {
  public:
    /// Joins the client to `other` (a detached transport on the request's loop).
    TunnelUpgrade(std::unique_ptr<net::Transport> other, std::chrono::milliseconds idle,
                  std::shared_ptr<void> hold = {})
        : other(std::move(other)), idle_timeout(idle), hold(std::move(hold)) {}
    /// The connection the client is joined to.
    std::unique_ptr<net::Transport> other;
    /// Both sides silent this long: the tunnel closes.
    std::chrono::milliseconds idle_timeout;
    /// Kept until the tunnel closes (or the 101 is never sent).
    std::shared_ptr<void> hold;
};

/// Makes the 101 response `r` join the client's connection to `other`, a connection already
/// switched (its transport detached, on the loop that serves the request), once it is sent.
/// `idle_timeout`: both directions silent this long close the tunnel. `hold` is kept until
/// the tunnel closes (a count of open tunnels, say, released by its destructor).
Response tunnel(Response r, std::unique_ptr<net::Transport> other,
                std::chrono::milliseconds idle_timeout = std::chrono::minutes(10),
                std::shared_ptr<void> hold = {});

}  // namespace vela
