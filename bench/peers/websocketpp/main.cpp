// vela_peer_websocketpp: websocketpp serving bench/ws/run's two WebSocket endpoints, the
// peer vela is compared with (docs/benchmarks.md, "WebSocket").
//   vela_peer_websocketpp [--port N] [--host ADDR]
//
//   /ws/echo   every message goes back to its sender, same opcode
//   /ws/room   every message goes to every other connection of the room
//
// websocketpp 0.8 (Debian libwebsocketpp-dev) over standalone asio, no TLS, one thread
// (config::asio), logging off, permessage-deflate not configured (the config has none),
// TCP_NODELAY on every connection (vela sets it too).
// A broadcast passes the received message to every member's send(), the library's own
// broadcast idiom (each connection frames its copy).

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include <websocketpp/config/asio_no_tls.hpp>
#include <websocketpp/server.hpp>

namespace {

using Server = websocketpp::server<websocketpp::config::asio>;
using websocketpp::connection_hdl;

[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(
        stderr,
        "vela_peer_websocketpp: %s\nusage: vela_peer_websocketpp [--port N] [--host ADDR]\n",
        message.c_str());
    std::exit(2);
}

class BenchServer {
  public:
    BenchServer() {
        server_.clear_access_channels(websocketpp::log::alevel::all);
        server_.clear_error_channels(websocketpp::log::elevel::all);
        server_.init_asio();
        server_.set_reuse_addr(true);
        // Without TCP_NODELAY a second write while the first is unacknowledged waits for the
        // client's delayed ACK (40 ms): 16 pipelined echoes would cost a stall each batch.
        server_.set_tcp_post_init_handler([this](connection_hdl h) {
            asio::error_code ec;
            server_.get_con_from_hdl(h)->get_socket().set_option(asio::ip::tcp::no_delay(true), ec);
        });
        server_.set_open_handler([this](connection_hdl h) { on_open(h); });
        server_.set_close_handler([this](connection_hdl h) { room_.erase(h); });
        server_.set_fail_handler([this](connection_hdl h) { room_.erase(h); });
        server_.set_message_handler(
            [this](connection_hdl h, Server::message_ptr m) { on_message(h, m); });
    }

    void run(const std::string& host, const std::string& port) {
        server_.listen(host, port);
        server_.start_accept();
        server_.run();
    }

  private:
    void on_open(connection_hdl h) {
        if (server_.get_con_from_hdl(h)->get_resource() == "/ws/room") room_.insert(h);
    }

    void on_message(connection_hdl h, Server::message_ptr m) {
        websocketpp::lib::error_code ec;
        if (room_.count(h) == 0) {
            server_.send(h, m, ec);  // echo
            return;
        }
        for (const connection_hdl& member : room_) {
            if (!member.owner_before(h) && !h.owner_before(member)) continue;  // the sender
            server_.send(member, m, ec);
        }
    }

    Server server_;
    std::set<connection_hdl, std::owner_less<connection_hdl>> room_;
};

}  // namespace

int main(int argc, char** argv) {
    std::string host = "127.0.0.1", port = "8080";
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::puts("usage: vela_peer_websocketpp [--port N] [--host ADDR]");
            return 0;
        }
        if (i + 1 >= argc) usage_error("missing value for " + std::string(arg));
        if (arg == "--port") {
            port = argv[++i];
        } else if (arg == "--host") {
            host = argv[++i];
        } else {
            usage_error("unknown option '" + std::string(arg) + "'");
        }
    }
    try {
        BenchServer server;
        server.run(host, port);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vela_peer_websocketpp: %s\n", e.what());
        return 1;
    }
    return 0;
}
