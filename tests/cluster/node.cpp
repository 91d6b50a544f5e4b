// One node of the multi-node tests (tests/cluster): a small vela service that keeps what must
// be shared across nodes in Redis when given --redis.
//
//   vela_cluster_node --listen 127.0.0.1:8081 [--threads N] [--redis URL] [--name NAME]
//                     [--drain-delay-ms N] [--rate N]
//
//   GET  /hello              "hello from NAME"
//   GET  /pid                this process's pid
//   GET  /slow?ms=N          answers after N ms
//   GET  /health, /ready     vela::health (503 while draining)
//   POST /session?v=TEXT     stores TEXT in the session (RedisStore with --redis)
//   GET  /session            the stored text, or 404
//   GET  /limited            rate-limited (RedisRateLimiter with --redis, else in-process):
//                            --rate requests per minute per client, keyed by X-Client
//   WS   /ws/{room}          says "welcome NAME", then relays messages to the room (a Hub,
//                            with a RedisBackplane under --redis)
//   GET  /count/{room}       the room's members (on every node under --redis)
//   GET  /events             server-sent events (a RedisEventStream under --redis)
//   POST /events?data=TEXT   publishes an event; answers its id
//   GET  /events/clients     event-stream clients this node serves now
//   GET  /metrics            vela::metrics, with the backplane's and the limiter's counters

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "vela/backplane/redis_backplane.hpp"
#include "vela/backplane/redis_event_stream.hpp"
#include "vela/redis_rate_limit.hpp"
#include "vela/redis_store.hpp"
#include "vela/vela.hpp"

namespace {

struct Options {
    std::string listen = "127.0.0.1:8080";
    unsigned threads = 2;
    std::string redis;
    std::string name = "node";
    unsigned drain_delay_ms = 0;
    unsigned rate = 0;
};

[[noreturn]] void usage_error(const std::string& what) {
    std::fprintf(stderr, "vela_cluster_node: %s\n", what.c_str());
    std::exit(2);
}

unsigned number(std::string_view s) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size())
        usage_error("not a number: " + std::string(s));
    return v;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (i + 1 >= argc) usage_error("missing value for " + std::string(a));
        const std::string_view v = argv[++i];
        if (a == "--listen")
            o.listen = v;
        else if (a == "--threads")
            o.threads = number(v);
        else if (a == "--redis")
            o.redis = v;
        else if (a == "--name")
            o.name = v;
        else if (a == "--drain-delay-ms")
            o.drain_delay_ms = number(v);
        else if (a == "--rate")
            o.rate = number(v);
        else
            usage_error("unknown option " + std::string(a));
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse(argc, argv);
    vela::App app;
    app.options().drain_delay = std::chrono::milliseconds(opt.drain_delay_ms);
    std::shared_ptr<vela::redis::Client> redis;
    if (!opt.redis.empty()) redis = std::make_shared<vela::redis::Client>(opt.redis);

    vela::Hub hub;
    std::unique_ptr<vela::RedisBackplane> backplane;
    std::unique_ptr<vela::RedisEventStream> events;
    vela::MetricsOptions metrics;
    if (redis) {
        vela::RedisBackplaneOptions bo;
        bo.node_id = opt.name;
        bo.presence_interval = std::chrono::milliseconds(500);
        bo.presence_ttl = std::chrono::milliseconds(2000);
        bo.reconnect_min = std::chrono::milliseconds(20);
        bo.reconnect_max = std::chrono::milliseconds(500);
        backplane = std::make_unique<vela::RedisBackplane>(hub, opt.redis, bo);
        metrics.counters = backplane->counters();
        vela::RedisEventStreamOptions eo;
        eo.block = std::chrono::milliseconds(1000);
        eo.reconnect_min = std::chrono::milliseconds(20);
        eo.reconnect_max = std::chrono::milliseconds(500);
        events = std::make_unique<vela::RedisEventStream>(opt.redis, "vela:test:events", eo);
        metrics.counters.push_back(events->counter());
    }

    app.ws("/ws/{room}",
           [&hub, name = opt.name](vela::WebSocket& ws, vela::Request& req) -> vela::Task<void> {
               vela::Hub::Room& room = hub.room(req.param("room"));
               room.join(ws);
               co_await ws.send("welcome " + name);
               for (;;) {
                   vela::WsMessage m = co_await ws.receive();
                   if (m.is_close()) break;
                   room.broadcast(m.data, m.type, &ws);
               }
               room.leave(ws);
           });
    app.get("/count/{room}", [&](vela::Request& req) -> vela::Task<vela::Response> {
        std::size_t n = hub.room(req.param("room")).count();
        if (backplane) n = co_await backplane->count(std::string(req.param("room")));
        co_return vela::Response(std::to_string(n));
    });
    app.get("/events", [&](const vela::Request& req) {
        if (events) return events->serve(req);
        return vela::Response(vela::Status::NotFound);
    });
    app.get("/events/clients",
            [&] { return std::to_string(events ? events->clients() : std::size_t{0}); });
    app.post("/events", [&](vela::Request& req) -> vela::Task<vela::Response> {
        if (!events) co_return vela::Response(vela::Status::NotFound);
        co_return vela::Response(co_await events->publish(req.query("data").value_or("")));
    });

    vela::health(app);
    const std::string hello = "hello from " + opt.name;
    app.get("/hello", [hello] { return hello; });
    app.get("/pid", [] { return std::to_string(::getpid()); });
    app.get("/slow", [](vela::Request& req) -> vela::Task<vela::Response> {
        unsigned ms = 0;
        const std::string q = req.query("ms").value_or("0");
        std::from_chars(q.data(), q.data() + q.size(), ms);
        co_await vela::sleep(std::chrono::milliseconds(ms));
        co_return vela::Response("slow");
    });

    vela::Group s = app.group("/session");
    if (redis)
        s.use(vela::sessions({.store = std::make_shared<vela::RedisStore>(redis)}));
    else
        s.use(vela::sessions());
    s.post("", [](vela::Request& req) {
        vela::session(req).set("v", req.query("v").value_or(""));
        return "stored";
    });
    s.get("", [](vela::Request& req) {
        std::optional<std::string> v = vela::session(req).get<std::string>("v");
        return v ? vela::Response(*v) : vela::Response(vela::Status::NotFound);
    });

    if (opt.rate > 0) {
        vela::RateLimitOptions limit;
        limit.rate = opt.rate;
        limit.key = vela::RateLimitKey::header("X-Client");
        vela::Group g = app.group("/limited");
        if (redis) {
            vela::RedisRateLimiter limiter(redis, {.limit = limit});
            metrics.counters.push_back(limiter.counter());
            g.use(limiter);
        } else {
            g.use(vela::rate_limit(limit));
        }
        g.get("", [] { return "ok"; });
    }

    vela::metrics(app, metrics);
    return app.listen(opt.listen).run(opt.threads);
}
