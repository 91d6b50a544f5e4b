// Feeds arbitrary bytes, after the client preface, to the HTTP/2 driver (frames, HPACK,
// flow control, the request mapping and the response path), split where the input says.
// The driver writes to one end of a socketpair whose other end is drained and discarded;
// no network is involved. The handler answers in several ways (text, a streamed body, an
// exception, a WebSocket session over an extended CONNECT) so the response paths and the
// WebSocket link are reached too.

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "server/http2_connection.hpp"
#include "server/worker.hpp"
#include "vela/server/websocket.hpp"

namespace {

// An echo session for extended CONNECTs to /ws (RFC 8441): frames over a stream.
std::shared_ptr<const vela::WsEndpoint> ws_endpoint() {
    vela::WsOptions o;
    o.max_message = 64 * 1024;
    return std::make_shared<const vela::WsEndpoint>(
        vela::WsEndpoint{{},
                         [](vela::WebSocket& ws) -> vela::Task<void> {
                             for (;;) {
                                 vela::WsMessage m = co_await ws.receive();
                                 if (m.is_close()) co_return;
                                 if (m.data == "close") ws.close(4000, "asked");
                                 co_await ws.send(m.data, m.type);
                             }
                         },
                         o,
                         "/ws"});
}

struct Handler final : vela::HttpHandler {
    bool handle(vela::Request& req, vela::Response& out, vela::ResponseSink&) override {
        const std::string_view p = req.path();
        if (p == "/ws") {
            static const auto ep = ws_endpoint();
            out = vela::ws_accept(req, ep);
            return true;
        }
        if (p == "/throw") throw std::runtime_error("boom");
        if (p.starts_with("/stream")) {
            int n = 3;
            out.set_body_source([n]() mutable -> std::optional<std::string> {
                if (n-- == 0) return std::nullopt;
                return std::string(5000, 'x');
            });
            // Trailers after it, and an announced length: right, short and long.
            if (p == "/stream/trailers") {
                auto t = std::make_shared<vela::Response::TrailerFields>();
                t->emplace_back("X-Sum", " 15000 ");
                t->emplace_back("Content-Length", "1");  // refused as a trailer
                out.set_trailers(std::move(t));
            } else if (p == "/stream/sized") {
                out.set_body_length(15000);
            } else if (p == "/stream/short") {
                out.set_body_length(20000);
            } else if (p == "/stream/long") {
                out.set_body_length(7000);
            }
            return true;
        }
        out = vela::Response(std::string(req.body().size() % 3 ? "a" : "body of some length"));
        out.add_header("X-Path", std::string(p.substr(0, 32)));
        return true;
    }
};

vela::ServerOptions options() {
    vela::ServerOptions o;
    o.limits.max_body = 64 * 1024;
    o.http2.max_concurrent_streams = 16;
    o.http2.max_header_list_size = 4096;
    o.http2.max_control_frames = 200;
    return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Handler handler;
    static const vela::ServerOptions opts = options();
    static vela::detail::ServerWorker worker(handler, opts);
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) return 0;
    const int big = 4 << 20;
    ::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    vela::Loop& loop = worker.loop();
    loop.post([&] {
        vela::net::Transport t(loop, sv[0], nullptr, false);
        t.in.append(vela::detail::kH2Preface);
        auto* c = new vela::detail::Http2Connection(worker, std::move(t), nullptr, {});
        worker.add_connection(c);
        c->start();
        // The first byte chooses the piece size, so frames also arrive split.
        const std::size_t step = size ? 1 + data[0] % 64 : 1;
        const auto* p = reinterpret_cast<const char*>(data);
        for (std::size_t off = size ? 1 : 0; off < size; off += step) {
            c->receive(std::string_view(p + off, std::min(step, size - off)));
            char sink[65536];
            while (::read(sv[1], sink, sizeof sink) > 0) {
            }
        }
        c->force_close();
        loop.stop();
    });
    loop.run();
    ::close(sv[1]);
    return 0;
}
