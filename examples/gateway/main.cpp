// A gateway: every path it does not serve itself goes to the upstreams through vela's reverse
// proxy, and one route asks two upstream APIs at once and merges their JSON.
//   gateway --upstream URL [--upstream URL ...] [--port N] [--threads N]
//           [--balance round-robin|least-connections|hash:HEADER] [--health PATH]
//           [--strip PREFIX]
//
//   GET /_gateway/merge?a=PATH&b=PATH   both paths fetched at once (the first from the first
//                                       upstream, the second from the next), answered as
//                                       {"a": <a's JSON>, "b": <b's JSON>}
//   GET /_gateway/upstreams             each upstream's state (healthy, in flight, counts)
//
// Exit codes: 0 after a graceful shutdown (or --help), 1 when the server cannot start (the
// reason is logged as one line), 2 for a bad command line (one line on stderr).

#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <vela/async/when_all.hpp>
#include <vela/proxy/reverse_proxy.hpp>
#include <vela/vela.hpp>

#include "cli.hpp"

namespace {

constexpr std::string_view kUsage =
    "usage: gateway --upstream URL [--upstream URL ...] [options]\n"
    "  --upstream URL    an upstream server (http://host:port, https://..., http+unix://...)\n"
    "  --port N          HTTP port, 0 to 65535 (default 8080; 0: any free port)\n"
    "  --threads N       event loops, 0 to 1024 (default 0: one per core)\n"
    "  --balance HOW     round-robin (default), least-connections, or hash:HEADER\n"
    "  --health PATH     probe PATH on each upstream every 5 s (default: no active checks)\n"
    "  --strip PREFIX    serve the upstreams below PREFIX only, without it (default: /)\n"
    "  -h, --help        print this text and exit\n";

struct Options {
    std::uint16_t port = 8080;
    unsigned threads = 0;
    std::string prefix = "/";
    vela::ReverseProxyOptions proxy;
};

Options parse_args(int argc, char** argv) {
    Options o;
    const example::CommandLine cl("gateway", kUsage);
    cl.parse(argc, argv, [&](std::string_view arg, const auto& value) {
        if (arg == "--port") {
            o.port = static_cast<std::uint16_t>(cl.number(arg, value(), 65535));
        } else if (arg == "--threads") {
            o.threads = cl.number(arg, value(), 1024);
        } else if (arg == "--upstream") {
            o.proxy.upstreams.emplace_back(value());
        } else if (arg == "--health") {
            o.proxy.health.path = std::string(value());
        } else if (arg == "--strip") {
            o.prefix = std::string(value());
            o.proxy.strip_prefix = true;
        } else if (arg == "--balance") {
            const std::string_view how = value();
            if (how == "round-robin") {
                o.proxy.balance = vela::Balance::round_robin;
            } else if (how == "least-connections") {
                o.proxy.balance = vela::Balance::least_connections;
            } else if (how.starts_with("hash:") && how.size() > 5) {
                o.proxy.balance = vela::Balance::hash;
                o.proxy.hash_header = std::string(how.substr(5));
            } else {
                cl.error("invalid value '" + std::string(how) +
                         "' for --balance (round-robin, least-connections or hash:HEADER)");
            }
        } else {
            return false;
        }
        return true;
    });
    if (o.proxy.upstreams.empty()) cl.error("at least one --upstream URL is needed");
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    Options opts = parse_args(argc, argv);
    const std::vector<std::string> upstreams = opts.proxy.upstreams;

    vela::http::ClientOptions client_options;
    client_options.max_connections_per_origin = 256;
    vela::http::Client http(client_options);  // the merge route's calls (the proxy has its own)
    vela::App app;

    // Two upstream calls at once; their JSON merged into one answer.
    app.get("/_gateway/merge", [&](vela::Request& req) -> vela::Task<vela::Response> {
        const std::optional<std::string> a = req.query("a"), b = req.query("b");
        if (!a || !b || !a->starts_with('/') || !b->starts_with('/'))
            co_return vela::Response::text("give ?a=/path&b=/path\n", vela::Status::BadRequest);
        std::vector<vela::Task<vela::http::ClientResponse>> calls;
        calls.push_back(http.get(upstreams[0] + *a));
        calls.push_back(http.get(upstreams[1 % upstreams.size()] + *b));
        std::vector<vela::http::ClientResponse> got;
        try {
            got = co_await vela::when_all(std::move(calls));
        } catch (const vela::http::ClientError& e) {
            vela::log::warn("gateway: {}", e.what());
            co_return vela::Status::BadGateway;
        }
        vela::json::Value merged;
        const char* names[] = {"a", "b"};
        for (std::size_t i = 0; i < got.size(); ++i) {
            if (!got[i].ok()) co_return vela::Status::BadGateway;
            try {
                merged.set(names[i], got[i].json());
            } catch (const std::exception&) {
                co_return vela::Status::BadGateway;  // not JSON
            }
        }
        co_return vela::Response::json(vela::json::write(merged));
    });

    std::optional<vela::ReverseProxy> proxy;
    try {
        proxy = vela::reverse_proxy(app, opts.prefix, std::move(opts.proxy));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gateway: %s (see --help)\n", e.what());
        return 2;
    }
    app.get("/_gateway/upstreams", [&proxy] {
        vela::json::Value list;
        for (const vela::UpstreamStatus& u : proxy->upstreams()) {
            vela::json::Value one;
            one.set("url", u.url);
            one.set("healthy", u.healthy);
            one.set("active", u.active);
            one.set("requests", u.requests);
            one.set("failures", u.failures);
            list.push_back(std::move(one));
        }
        return vela::Response::json(vela::json::write(list));
    });
    app.listen(opts.port);
    return app.run(opts.threads);  // 1, with the reason logged, when a port cannot be opened
}
