// Real-time vela: WebSocket echo, chat rooms over a Hub, and a page that uses them.
//   chat [--port N] [--threads N] [--ws-max-message BYTES] [--redis URL]
//
//   /              a small HTML page (echo and chat in the browser)
//   /ws/echo       WebSocket: every message comes back as it was sent
//   /ws/chat/{room} WebSocket: every message goes to everybody in the room
//   /events        server-sent events: one per second with an increasing id, resuming after
//                  the Last-Event-ID a reconnecting client sends; with --redis instead, what
//                  was said in every room on every node (event "said", "room: text"), kept
//                  in a Redis Stream, resuming on any node
//
// With --redis, every chat started with the same URL is one: a room's messages reach its
// members on every node, the presence figures count them all (vela::RedisBackplane), and
// /events streams what was said everywhere (vela::RedisEventStream).
//
// Exit codes: 0 after a graceful shutdown (or --help), 1 when the server cannot start (the
// reason is logged as one line), 2 for a bad command line (one line on stderr).

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <vela/backplane/redis_backplane.hpp>
#include <vela/backplane/redis_event_stream.hpp>
#include <vela/vela.hpp>

#include "cli.hpp"

namespace {

constexpr std::string_view kUsage =
    "usage: chat [options]\n"
    "  --port N      HTTP port, 0 to 65535 (default 8080; 0: any free port)\n"
    "  --threads N   event loops, 0 to 1024 (default 0: one per core)\n"
    "  --ws-max-message BYTES\n"
    "                largest WebSocket message (and frame) a client may send, 1 to\n"
    "                1073741824 (default 1048576); a 16 MiB echo test needs 16777216\n"
    "  --redis URL   share rooms and presence with every chat started with the same\n"
    "                Redis server (redis://[[user]:password@]host[:port][/db])\n"
    "  -h, --help    print this text and exit\n";

constexpr std::string_view kPage = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>vela chat</title>
<style>body{font:15px system-ui;margin:2em;max-width:40em}#log{border:1px solid #ccc;
height:20em;overflow:auto;padding:.5em;white-space:pre-wrap}</style></head>
<body><h1>vela chat</h1>
<p>Room <input id="room" value="lobby" size="10"> <button id="join">join</button></p>
<div id="log"></div>
<p><input id="msg" size="40" placeholder="say something"> <button id="send">send</button></p>
<script>
let ws;
const log = t => { const l = document.getElementById('log'); l.textContent += t + '\n';
                   l.scrollTop = l.scrollHeight; };
document.getElementById('join').onclick = () => {
  if (ws) ws.close();
  const room = encodeURIComponent(document.getElementById('room').value);
  ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host +
                     '/ws/chat/' + room);
  ws.onopen = () => log('* joined ' + decodeURIComponent(room));
  ws.onmessage = e => log(e.data);
  ws.onclose = e => log('* closed (' + e.code + ')');
};
document.getElementById('send').onclick = () => {
  const m = document.getElementById('msg');
  if (ws && ws.readyState === 1) { ws.send(m.value); m.value = ''; }
};
</script></body></html>
)";

struct Options {
    std::uint16_t port = 8080;
    unsigned threads = 0;
    std::size_t ws_max_message = vela::WsOptions{}.max_message;
    std::string redis;
};

Options parse_args(int argc, char** argv) {
    Options o;
    const example::CommandLine cl("chat", kUsage);
    cl.parse(argc, argv, [&](std::string_view arg, const auto& value) {
        if (arg == "--port")
            o.port = static_cast<std::uint16_t>(cl.number(arg, value(), 65535));
        else if (arg == "--threads")
            o.threads = cl.number(arg, value(), 1024);
        else if (arg == "--ws-max-message") {
            o.ws_max_message = cl.number(arg, value(), 1u << 30);
            if (o.ws_max_message == 0) cl.error("--ws-max-message must be at least 1");
        } else if (arg == "--redis") {
            o.redis = value();
            try {
                (void)vela::redis::Url::parse(o.redis);
            } catch (const std::exception& e) {
                cl.error(std::string("--redis: ") + e.what());
            }
        } else
            return false;
        return true;
    });
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse_args(argc, argv);
    vela::App app;
    vela::Hub hub;  // outlives the server: run() returns before it is destroyed
    std::unique_ptr<vela::RedisBackplane> backplane;  // rooms across nodes (--redis)
    std::unique_ptr<vela::RedisEventStream> said;     // what was said, as an event stream
    if (!opt.redis.empty()) {
        try {
            backplane = std::make_unique<vela::RedisBackplane>(hub, opt.redis);
            said = std::make_unique<vela::RedisEventStream>(opt.redis, "chat:said");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "chat: --redis %s: %s\n", opt.redis.c_str(), e.what());
            return 1;
        }
        vela::MetricsOptions m;
        m.counters = backplane->counters();
        m.counters.push_back(said->counter());
        vela::metrics(app, m);
    }
    // Members of a room on every node (this node's without --redis); Redis unreachable: ours.
    auto here = [&backplane](vela::Hub::Room& room) -> vela::Task<std::size_t> {
        if (backplane) {
            try {
                co_return co_await backplane->count(room.name());
            } catch (const std::exception&) {
            }
        }
        co_return room.count();
    };

    app.get("/", [] { return vela::Response::html(std::string(kPage)); });

    // One limit for a whole message, in one frame or many. A room's broadcast of a message
    // that size must fit a member's send queue, or the Hub drops it for that member.
    vela::WsOptions ws_options;
    ws_options.max_frame = ws_options.max_message = opt.ws_max_message;
    ws_options.send_queue_max = std::max(ws_options.send_queue_max, opt.ws_max_message + 16);

    app.ws(
        "/ws/echo",
        [](vela::WebSocket& ws, vela::Request&) -> vela::Task<void> {
            for (;;) {
                vela::WsMessage m = co_await ws.receive();
                if (m.is_close()) co_return;
                co_await ws.send(m.data, m.type);
            }
        },
        ws_options);

    app.ws(
        "/ws/chat/{room}",
        [&hub, &here, &said](vela::WebSocket& ws, vela::Request& req) -> vela::Task<void> {
            vela::Hub::Room& room = hub.room(req.param("room"));
            room.join(ws);
            std::size_t n = co_await here(room);
            room.broadcast("* somebody joined (" + std::to_string(n) + " here)");
            for (;;) {
                vela::WsMessage m = co_await ws.receive();
                if (m.is_close()) break;
                room.broadcast(m.data, m.type);
                if (said && m.type == vela::WsType::text) {
                    try {  // the event stream keeps what was said (at most once, like the room)
                        std::string line = room.name() + ": " + std::string(m.data);
                        co_await said->publish(std::move(line), "said");
                    } catch (const std::exception&) {
                    }
                }
            }
            room.leave(ws);
            n = co_await here(room);
            room.broadcast("* somebody left (" + std::to_string(n) + " here)");
        },
        ws_options);

    app.get("/events", [&said](const vela::Request& req) {
        if (said) return said->serve(req);  // every node's, resumable on any node
        return vela::sse(req, [](vela::SseStream& s) -> vela::Task<void> {
            long id = 0;
            const std::string_view last = s.last_event_id();
            std::from_chars(last.data(), last.data() + last.size(), id);  // 0 when absent
            while (s.open()) {
                ++id;
                const std::string n = std::to_string(id);
                if (!co_await s.send({.data = "tick " + n, .event = "tick", .id = n})) break;
                co_await vela::sleep(std::chrono::seconds(1));
            }
        });
    });

    app.listen(opt.port);
    return app.run(opt.threads);
}
