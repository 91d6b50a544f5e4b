// The smallest useful vela app: plaintext, a path parameter and an async route.
//   hello [--port N] [--threads N] [--tls-cert FILE --tls-key FILE [--tls-port N]]
//
// Exit codes: 0 after a graceful shutdown (or --help), 1 when the server cannot start (the
// reason is logged as one line), 2 for a bad command line (one line on stderr).

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <vela/vela.hpp>

#include "cli.hpp"

using namespace std::chrono_literals;

namespace {

constexpr std::string_view kUsage =
    "usage: hello [options]\n"
    "  --port N          HTTP port, 0 to 65535 (default 8080; 0: any free port)\n"
    "  --threads N       event loops, 0 to 1024 (default 0: one per core)\n"
    "  --tls-cert FILE   TLS certificate chain (PEM); needs --tls-key\n"
    "  --tls-key FILE    TLS private key (PEM); needs --tls-cert\n"
    "  --tls-port N      HTTPS port, 0 to 65535 (default 8443)\n"
    "  -h, --help        print this text and exit\n";

struct Options {
    std::uint16_t port = 8080;
    unsigned threads = 0;
    example::TlsArgs tls;
};

Options parse_args(int argc, char** argv) {
    Options o;
    const example::CommandLine cl("hello", kUsage);
    cl.parse(argc, argv, [&](std::string_view arg, const auto& value) {
        if (arg == "--port") {
            o.port = static_cast<std::uint16_t>(cl.number(arg, value(), 65535));
        } else if (arg == "--threads") {
            o.threads = cl.number(arg, value(), 1024);
        } else {
            return o.tls.take(cl, arg, value);
        }
        return true;
    });
    o.tls.check(cl);
    return o;
}

// Serves HTTPS on `port` next to plain HTTP.
void add_tls(vela::App& app, std::uint16_t port, const std::string& cert, const std::string& key) {
    // The same routes over TLS, with HTTP/2 offered through ALPN.
    vela::TlsOptions tls;
    tls.cert = cert;
    tls.key = key;
    app.listen_tls(port, std::move(tls));
}

}  // namespace

int main(int argc, char** argv) {
    const Options opts = parse_args(argc, argv);

    vela::App app;
    app.get("/", [] { return "Hello, World!"; });
    app.get("/users/{id}", [](vela::Request& r) { return "User " + std::string(r.param("id")); });
    app.get("/slow", []() -> vela::Task<vela::Response> {
        co_await vela::sleep(10ms);
        co_return "done";
    });
    app.listen(opts.port);
    if (!opts.tls.cert.empty()) add_tls(app, opts.tls.port, opts.tls.cert, opts.tls.key);
    return app.run(opts.threads);  // 1, with the reason logged, when a port cannot be opened
}
