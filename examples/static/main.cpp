// A static file server: a directory (with index.html) behind vela, compressed on the fly.
//   static --root DIR [--port N] [--threads N] [--gzip-level N] [--listing]
//          [--cache-control VALUE] [--no-compress] [--tls-cert FILE --tls-key FILE [--tls-port N]]
//
// Files get ETag/Last-Modified (304, 412), ranges (206, 416), precompressed siblings
// (name.br, name.zst, name.gz) and sendfile; other text is compressed with zstd, br or gzip
// as the client prefers. Exit codes: 0 after a graceful shutdown, 1 when the server cannot
// start (reason logged in one line), 2 for a bad command line.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <vela/vela.hpp>

#include "cli.hpp"

namespace {

constexpr std::string_view kUsage =
    "usage: static --root DIR [options]\n"
    "  --root DIR            the directory to serve (required)\n"
    "  --port N              HTTP port, 0 to 65535 (default 8080; 0: any free port)\n"
    "  --threads N           event loops, 0 to 1024 (default 0: one per core)\n"
    "  --gzip-level N        gzip level for on-the-fly compression, 1 to 9 (default 6)\n"
    "  --no-compress         no on-the-fly compression (precompressed siblings still apply)\n"
    "  --listing             list directories that have no index.html\n"
    "  --cache-control V     Cache-Control for every file (hashed names get immutable)\n"
    "  --tls-cert FILE       TLS certificate chain (PEM); needs --tls-key\n"
    "  --tls-key FILE        TLS private key (PEM); needs --tls-cert\n"
    "  --tls-port N          HTTPS port, 0 to 65535 (default 8443)\n"
    "  -h, --help            print this text and exit\n";

struct Options {
    std::string root;
    std::uint16_t port = 8080;
    unsigned threads = 0;
    int gzip_level = 6;
    bool compress = true;
    bool listing = false;
    std::string cache_control;
    example::TlsArgs tls;
};

Options parse_args(int argc, char** argv) {
    Options o;
    const example::CommandLine cl("static", kUsage);
    cl.parse(argc, argv, [&](std::string_view arg, const auto& value) {
        if (arg == "--root") {
            o.root = std::string(value());
        } else if (arg == "--port") {
            o.port = static_cast<std::uint16_t>(cl.number(arg, value(), 65535));
        } else if (arg == "--threads") {
            o.threads = cl.number(arg, value(), 1024);
        } else if (arg == "--gzip-level") {
            o.gzip_level = static_cast<int>(cl.number(arg, value(), 9));
            if (o.gzip_level < 1) cl.error("invalid value for --gzip-level (expected 1 to 9)");
        } else if (arg == "--no-compress") {
            o.compress = false;
        } else if (arg == "--listing") {
            o.listing = true;
        } else if (arg == "--cache-control") {
            o.cache_control = std::string(value());
        } else {
            return o.tls.take(cl, arg, value);
        }
        return true;
    });
    if (o.root.empty()) cl.error("--root DIR is required");
    o.tls.check(cl);
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const Options opts = parse_args(argc, argv);

    vela::App app;
    if (opts.compress) {
        vela::CompressionOptions c;
        c.gzip_level = opts.gzip_level;
        app.use(vela::compression(c));
    }
    vela::StaticOptions files;
    files.listing = opts.listing;
    files.cache_control = opts.cache_control;
    files.immutable = vela::files::hashed_name;
    try {
        app.static_files("/", opts.root, files);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "static: %s\n", e.what());
        return 1;
    }
    app.listen(opts.port);
    if (!opts.tls.cert.empty()) {
        vela::TlsOptions tls;
        tls.cert = opts.tls.cert;
        tls.key = opts.tls.key;
        app.listen_tls(opts.tls.port, std::move(tls));
    }
    return app.run(opts.threads);
}
