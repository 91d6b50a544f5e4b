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
    std::string tls_cert;
    std::string tls_key;
    std::uint16_t tls_port = 8443;
};

// A command-line mistake: one line on stderr, exit code 2 (the usual "usage error").
[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr, "hello: %s (see --help)\n", message.c_str());
    std::exit(2);
}

// A whole decimal number in [0, max]; a sign, spaces or trailing junk are refused.
unsigned parse_number(std::string_view option, std::string_view value, unsigned max) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || v > max)
        usage_error("invalid value '" + std::string(value) + "' for " + std::string(option) +
                    " (expected 0 to " + std::to_string(max) + ")");
    return v;
}

// Accepts "--name value" and "--name=value".
Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::fputs(kUsage.data(), stdout);
            std::exit(0);
        }
        std::optional<std::string_view> inline_value;
        if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
            inline_value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
        }
        auto value = [&]() -> std::string_view {
            if (inline_value) return *inline_value;
            if (i + 1 >= argc) usage_error("missing value for " + std::string(arg));
            return argv[++i];
        };
        if (arg == "--port") {
            o.port = static_cast<std::uint16_t>(parse_number(arg, value(), 65535));
        } else if (arg == "--threads") {
            o.threads = parse_number(arg, value(), 1024);
        } else if (arg == "--tls-port") {
            o.tls_port = static_cast<std::uint16_t>(parse_number(arg, value(), 65535));
        } else if (arg == "--tls-cert" || arg == "--tls-key") {
            std::string_view v = value();
            if (v.empty()) usage_error("empty file name for " + std::string(arg));
            (arg == "--tls-cert" ? o.tls_cert : o.tls_key) = std::string(v);
        } else {
            usage_error("unknown option '" + std::string(argv[i]) + "'");
        }
    }
    if (o.tls_cert.empty() != o.tls_key.empty())
        usage_error(o.tls_cert.empty() ? "--tls-key needs --tls-cert"
                                       : "--tls-cert needs --tls-key");
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
    if (!opts.tls_cert.empty()) add_tls(app, opts.tls_port, opts.tls_cert, opts.tls_key);
    return app.run(opts.threads);  // 1, with the reason logged, when a port cannot be opened
}
