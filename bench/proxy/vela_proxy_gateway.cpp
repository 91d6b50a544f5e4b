// bench/proxy/run's vela proxy: one loop, every path forwarded to --upstream through
// vela::reverse_proxy (keep-alive pool, no access log, no active health checks).
//   vela_proxy_gateway --port N --upstream URL [--threads N] [--max-connections N]

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <vela/proxy/reverse_proxy.hpp>
#include <vela/web/app.hpp>

int main(int argc, char** argv) {
    unsigned port = 0, threads = 1, max_connections = 256;
    std::string upstream;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view a = argv[i];
        if (a == "--port") {
            port = static_cast<unsigned>(std::atoi(argv[i + 1]));
        } else if (a == "--threads") {
            threads = static_cast<unsigned>(std::atoi(argv[i + 1]));
        } else if (a == "--max-connections") {
            max_connections = static_cast<unsigned>(std::atoi(argv[i + 1]));
        } else if (a == "--upstream") {
            upstream = argv[i + 1];
        } else {
            std::fprintf(stderr, "vela_proxy_gateway: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (upstream.empty() || port == 0 || port > 65535) {
        std::fprintf(stderr,
                     "usage: vela_proxy_gateway --port N --upstream URL [--threads N] "
                     "[--max-connections N]\n");
        return 2;
    }
    vela::App app;
    vela::ReverseProxyOptions o;
    o.upstreams = {upstream};
    o.max_connections_per_upstream = max_connections == 0 ? 1 : max_connections;
    vela::reverse_proxy(app, "/", std::move(o));
    app.listen("127.0.0.1:" + std::to_string(port));
    return app.run(threads);
}
