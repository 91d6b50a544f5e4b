#pragma once
// Reports a vela::http::Client in vela::metrics (vela_http_client_*{client="name"}):
//
//     vela::http::Client http;
//     vela::MetricsOptions m;
//     m.clients.push_back(vela::client_source("upstream", http));
//     vela::metrics(app, std::move(m));
//
// Header-only, so vela's operations library does not depend on the client library; the
// program links both anyway.

#include <string>
#include <utility>

#include "vela/client/client.hpp"
#include "vela/ops/metrics.hpp"

namespace vela {

/// A ClientSource reading `client`'s counters; `client` must outlive the app's run.
inline ClientSource client_source(std::string name, const http::Client& client) {
    return ClientSource{std::move(name), [&client] {
                            const http::ClientStats s = client.stats();
                            ClientSample c;
                            c.requests = s.requests;
                            c.failures = s.failures;
                            c.retries = s.retries;
                            c.connections_opened = s.connections_opened;
                            c.connections_reused = s.connections_reused;
                            c.open = s.open;
                            c.idle = s.idle;
                            c.tls_resumed = s.tls_resumed;
                            c.dns_lookups = s.dns_lookups;
                            return c;
                        }};
}

}  // namespace vela
