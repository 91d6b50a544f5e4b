// The compression middleware end to end: compression() on responses and
// request_decompression() on request bodies, over real sockets with real clients.
//
// Responses are read with the raw client of client.hpp (so the bytes on the wire are what is
// checked) or with curl (HTTP/2, TLS); every compressed body is decoded by the Debian
// command-line tools (`gzip -dc`, `brotli -dc`, `zstd -dc`), not by vela's own codec, and
// compared with what the handler produced. The event-stream test inflates with zlib as the
// bytes arrive, to show each event is decodable before the stream ends. Request bodies are
// compressed with the same command-line tools.

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "client.hpp"
#include "process.hpp"
#include "sound.hpp"
#include "tls/certs.hpp"
#include "vela/middleware/compression.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

using compress::Coding;

// ---- Files and processes ----------------------------------------------------------------

// A fresh directory under $TMPDIR, removed with everything in it.
class TempDir {
  public:
    TempDir() {
        const char* tmp = std::getenv("TMPDIR");
        std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/vela-compress-XXXXXX";
        if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
        path_ = templ;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const noexcept { return path_; }
    std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }
    /// A new file name in the directory each call.
    std::string fresh(std::string_view stem) { return file(stem) + "." + std::to_string(n_++); }

  private:
    std::string path_;
    int n_ = 0;
};

void write_file(const std::string& path, std::string_view bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

std::string decoder_cmd(Coding c) {
    switch (c) {
        case Coding::gzip:
            return "gzip -dc";
        case Coding::br:
            return "brotli -dc";
        case Coding::zstd:
            return "zstd -q -dc";
        default:
            return "cat";
    }
}

std::string encoder_cmd(Coding c) {
    switch (c) {
        case Coding::gzip:
            return "gzip -c";
        case Coding::br:
            return "brotli -c";
        case Coding::zstd:
            return "zstd -q -c";
        default:
            return "cat";
    }
}

// The body decoded by the Debian tool for `c`; nullopt (with the tool's complaint logged)
// when it refuses the bytes.
std::optional<std::string> cli_decode(TempDir& tmp, Coding c, std::string_view bytes) {
    const std::string in = tmp.fresh("body");
    write_file(in, bytes);
    Ran r = run_command("timeout 20 " + decoder_cmd(c) + " '" + in + "' 2>&1 >'" + in + ".out'");
    if (r.status != 0) {
        ADD_FAILURE() << decoder_cmd(c) << " failed (" << r.status << "): " << r.out;
        return std::nullopt;
    }
    return read_file(in + ".out");
}

// `plain` compressed by the Debian tool for `c` (`extra`: more options).
std::string cli_encode(TempDir& tmp, Coding c, std::string_view plain,
                       std::string_view extra = {}) {
    const std::string in = tmp.fresh("plain");
    write_file(in, plain);
    Ran r =
        run_command("timeout 60 " + encoder_cmd(c) + " " + std::string(extra) + " '" + in + "'");
    if (r.status != 0) throw std::runtime_error(encoder_cmd(c) + " failed");
    return r.out;
}

#define REQUIRE_TOOLS()                                                                       \
    if (!have("gzip") || !have("brotli") || !have("zstd") || !have("curl"))                   \
    GTEST_SKIP() << "needs gzip, brotli, zstd and curl (Debian packages gzip, brotli, zstd, " \
                    "curl)"

// ---- Bodies -------------------------------------------------------------------------------

// `n` bytes of text that compresses well but is not one repeated byte.
std::string text_body(std::size_t n, std::string_view tag = "line") {
    std::string s;
    s.reserve(n + 80);
    for (std::size_t i = 0; s.size() < n; ++i)
        s += std::string(tag) + " " + std::to_string(i) +
             ": the quick brown fox jumps over the lazy dog " + std::to_string(i * 7919 % 1009) +
             "\n";
    s.resize(n);
    return s;
}

// A JSON array of at least `n` bytes.
std::string json_body(std::size_t n) {
    std::string s = "[";
    for (std::size_t i = 0; s.size() < n; ++i) {
        if (i) s += ",";
        s += R"({"id":)" + std::to_string(i) + R"(,"name":"item )" + std::to_string(i) +
             R"(","tags":["alpha","beta"]})";
    }
    return s + "]";
}

// FNV-1a, 64-bit, as 16 hex digits: the handler and the test hash alike.
std::string fnv1a(std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

std::string digest(std::string_view s) { return std::to_string(s.size()) + " " + fnv1a(s); }

const std::string& big_text() {  // 16 KiB
    static const std::string s = text_body(16 * 1024);
    return s;
}
const std::string& small_text() {
    static const std::string s = text_body(100);
    return s;
}
const std::string& json_10k() {
    static const std::string s = json_body(10 * 1024);
    return s;
}
const std::string& page_text() {  // the 10 KiB static file
    static const std::string s = text_body(10 * 1024, "page");
    return s;
}
const std::string& large_text() {  // the 1 MiB static file
    static const std::string s = text_body(1024 * 1024, "large");
    return s;
}
// The precompressed sibling of /files/sib.txt: gzip level 1, so it differs from what the
// middleware would make at its default level.
const std::string& sibling_gz() {
    static const std::string s = compress::compress(Coding::gzip, page_text(), 1);
    return s;
}
const std::vector<std::string>& stream_pieces() {
    static const std::vector<std::string> v = {text_body(3000, "p0"), text_body(10, "p1"),
                                               text_body(5000, "p2"), text_body(1, "p3"),
                                               text_body(20000, "p4")};
    return v;
}
std::string stream_whole() {
    std::string s;
    for (const std::string& p : stream_pieces()) s += p;
    return s;
}

// ---- Responses ----------------------------------------------------------------------------

// All values of the header `name`, joined with ", ".
std::string all_values(const HttpResponse& r, std::string_view name) {
    std::string out;
    for (const auto& [n, v] : r.headers)
        if (iequal(n, name)) out += (out.empty() ? "" : ", ") + v;
    return out;
}

bool varies_on_accept_encoding(const HttpResponse& r) {
    return icontains(all_values(r, "Vary"), "Accept-Encoding");
}

// One request on a fresh connection; a failed read is a test failure (status 0 returned).
HttpResponse fetch(std::uint16_t port, const std::string& request, bool head = false,
                   Ms timeout = Ms{5000}) {
    Client c = Client::tcp(port, timeout);
    if (!c.connected()) {
        ADD_FAILURE() << "cannot connect to " << port;
        return {};
    }
    if (!c.send(request)) {
        ADD_FAILURE() << "send: " << c.error();
        return {};
    }
    auto r = c.read_response(head);
    if (!r) {
        ADD_FAILURE() << "no response: " << c.error();
        return {};
    }
    return *r;
}

HttpResponse get(std::uint16_t port, std::string_view path, std::string_view extra = {}) {
    return fetch(port, get_request(path, extra));
}

std::string ae(std::string_view value) { return "Accept-Encoding: " + std::string(value) + "\r\n"; }

// ---- The app under test -------------------------------------------------------------------

// An App with compression() and the routes below, plus a static-files mount at /files with
// page.txt (10 KiB) and large.txt (1 MiB) and no precompressed siblings.
class CompressionApp : public ::testing::Test {
  protected:
    void start(CompressionOptions options = {}, bool with_tls = false) {
        write_file(dir.file("page.txt"), page_text());
        write_file(dir.file("large.txt"), large_text());
        write_file(dir.file("sib.txt"), page_text());
        write_file(dir.file("sib.txt.gz"), sibling_gz());
        quick_options(app.options());
        app.use(compression(std::move(options)));
        add_basic_routes(app);
        app.get("/text", [] { return Response::text(big_text()); });
        app.get("/small", [] { return Response::text(small_text()); });
        app.get("/json", [] { return Response::json(json_10k()); });
        app.get("/png", [] { return Response::with_body(Status::OK, big_text(), "image/png"); });
        app.get("/csv", [] { return Response::with_body(Status::OK, big_text(), "text/csv"); });
        app.get("/own-gzip", [] {
            Response r = Response::text(compress::compress(Coding::gzip, big_text()));
            r.set_header("Content-Encoding", "gzip");
            return r;
        });
        app.get("/no-transform", [] {
            Response r = Response::text(big_text());
            r.set_header("Cache-Control", "public, no-transform");
            return r;
        });
        app.get("/etag", [] {
            Response r = Response::text(big_text());
            r.set_header("ETag", "\"v1\"");
            return r;
        });
        // Answers If-None-Match itself, as a handler with a cheap validator would.
        app.get("/etag-cond", [](Request& req) {
            if (req.header("If-None-Match") == "\"v1\"") {
                Response r;
                r.set_status(Status::NotModified);
                r.set_header("ETag", "\"v1\"");
                return r;
            }
            Response r = Response::text(big_text());
            r.set_header("ETag", "\"v1\"");
            return r;
        });
        app.get("/etag-weak", [] {
            Response r = Response::text(big_text());
            r.set_header("ETag", "W/\"v1\"");
            return r;
        });
        app.get("/stream", [](Request&) {
            Response r;
            r.set_content_type("text/plain");
            return stream_body(std::move(r), [](BodyWriter& w) -> Task<void> {
                for (std::size_t i = 0; i < stream_pieces().size(); ++i) {
                    if (i) co_await vela::sleep(Ms{40});
                    if (!co_await w.write(stream_pieces()[i])) co_return;
                }
            });
        });
        app.get("/stream-sized", [](Request&) {
            Response r;
            r.set_content_type("text/plain");
            Response s = stream_body(std::move(r), [](BodyWriter& w) -> Task<void> {
                for (const std::string& piece : stream_pieces())
                    if (!co_await w.write(piece)) co_return;
            });
            s.set_body_length(stream_whole().size());
            return s;
        });
        // One event, then nothing until the test lets it go on: the stream cannot have ended
        // while the test waits for the first event.
        app.get("/sse", [this](Request& req) {
            return sse(
                req,
                [this](SseStream& s) -> Task<void> {
                    if (!co_await s.send("first event")) co_return;
                    const auto deadline = SteadyClock::now() + Ms{8000};
                    while (!sse_release.load() && s.open() && SteadyClock::now() < deadline)
                        co_await vela::sleep(Ms{10});
                    co_await s.send("second event");
                    sse_done = true;
                },
                SseOptions{.heartbeat = Ms{0}});
        });
        app.static_files("/files", dir.path());
        start_app_with_tls(app, with_tls);
        port = app.port();
    }

    // Checks that `r` is a 200 carrying `plain` coded as `expected` (identity: no
    // Content-Encoding), with Vary: Accept-Encoding.
    void expect_coded(const HttpResponse& r, Coding expected, const std::string& plain) {
        EXPECT_EQ(r.status, 200);
        EXPECT_TRUE(varies_on_accept_encoding(r)) << "Vary: " << all_values(r, "Vary");
        if (expected == Coding::identity) {
            EXPECT_FALSE(r.has_header("Content-Encoding")) << r.header("Content-Encoding");
            EXPECT_EQ(r.body.size(), plain.size());
            EXPECT_TRUE(r.body == plain);
            return;
        }
        EXPECT_EQ(r.header_count("Content-Encoding"), 1u);
        EXPECT_EQ(r.header("Content-Encoding"), compress::name(expected));
        EXPECT_LT(r.body.size(), plain.size());
        const auto decoded = cli_decode(dir, expected, r.body);
        ASSERT_TRUE(decoded);
        EXPECT_EQ(decoded->size(), plain.size());
        EXPECT_TRUE(*decoded == plain) << "decoded body differs";
    }

    // Before the app: its producers read them while the app stops.
    std::atomic<bool> sse_release{false};
    std::atomic<bool> sse_done{false};
    TempDir dir;
    App app;
    std::uint16_t port = 0;
};

class CompressionNegotiation : public CompressionApp {};
class CompressionLevels : public CompressionApp {};
class CompressionEligibility : public CompressionApp {};
class CompressionEtag : public CompressionApp {};
class CompressionStreaming : public CompressionApp {};
class CompressionHead : public CompressionApp {};
class CompressionProtocols : public CompressionApp {};
class CompressionLargeFile : public CompressionApp {};

// ---- 1. Negotiation -------------------------------------------------------------------------

struct NegotiationCase {
    std::optional<std::string> accept;  // nullopt: no Accept-Encoding field at all
    Coding expected;
};

// The default preference is zstd, br, gzip.
const std::vector<NegotiationCase> kNegotiation = {
    {"gzip", Coding::gzip},
    {"br", Coding::br},
    {"zstd", Coding::zstd},
    {"gzip, br;q=0.9", Coding::gzip},
    {"br;q=0, gzip", Coding::gzip},
    {"*", Coding::zstd},
    {"identity", Coding::identity},
    {"gzip;q=0", Coding::identity},
    {std::nullopt, Coding::identity},
    {"", Coding::identity},
    {"gzip, br, zstd", Coding::zstd},                  // a tie: the server's order
    {"gzip, br", Coding::br},                          // a tie: the server's order
    {"gzip;q=0.5, br;q=0.5, zstd;q=0.4", Coding::br},  // highest q, then the order
    {"GZIP", Coding::gzip},                            // tokens are case-insensitive
    {"*;q=0", Coding::identity},                       // nothing but identity
    {"*, zstd;q=0", Coding::br},                       // "*" minus an excluded coding
    {"deflate, compress", Coding::identity},           // only codings vela lacks
};

TEST_F(CompressionNegotiation, AcceptEncodingPicksTheCodingAndTheBodyDecodes) {
    REQUIRE_TOOLS();
    start();
    for (const NegotiationCase& c : kNegotiation) {
        SCOPED_TRACE("Accept-Encoding: " + c.accept.value_or("(absent)"));
        for (const char* path : {"/text", "/json"}) {
            SCOPED_TRACE(path);
            HttpResponse r = get(port, path, c.accept ? ae(*c.accept) : "");
            expect_coded(r, c.expected, std::string(path) == "/text" ? big_text() : json_10k());
        }
    }
}

TEST_F(CompressionNegotiation, TheServerPreferenceBreaksTies) {
    REQUIRE_TOOLS();
    start({.preference = {Coding::gzip, Coding::br, Coding::zstd}});
    const std::vector<NegotiationCase> cases = {
        {"gzip, br, zstd", Coding::gzip},
        {"zstd, br, gzip", Coding::gzip},  // the client's listing order is no preference
        {"*", Coding::gzip},
        {"br, zstd", Coding::br},
        {"gzip;q=0.8, zstd", Coding::zstd},  // a higher q beats the server's order
    };
    for (const NegotiationCase& c : cases) {
        SCOPED_TRACE("Accept-Encoding: " + *c.accept);
        expect_coded(get(port, "/text", ae(*c.accept)), c.expected, big_text());
    }
}

TEST_F(CompressionNegotiation, CodingsOutsideThePreferenceAreNeverSent) {
    REQUIRE_TOOLS();
    start({.preference = {Coding::br}});
    expect_coded(get(port, "/text", ae("gzip")), Coding::identity, big_text());
    expect_coded(get(port, "/text", ae("gzip, zstd")), Coding::identity, big_text());
    expect_coded(get(port, "/text", ae("gzip, br;q=0.1")), Coding::br, big_text());
    expect_coded(get(port, "/text", ae("*")), Coding::br, big_text());
}

TEST_F(CompressionNegotiation, KeepAliveConnectionServesDifferentCodingsInTurn) {
    REQUIRE_TOOLS();
    start();
    Client c = Client::tcp(port);
    ASSERT_TRUE(c.connected());
    for (Coding want : {Coding::gzip, Coding::identity, Coding::zstd, Coding::br, Coding::gzip}) {
        SCOPED_TRACE(std::string(compress::name(want)));
        ASSERT_TRUE(c.send(get_request(
            "/text", want == Coding::identity ? ae("identity") : ae(compress::name(want)))));
        auto r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        expect_coded(*r, want, big_text());
    }
}

// ---- 2. Levels ----------------------------------------------------------------------------

TEST_F(CompressionLevels, GzipLevelOneAndNineBothDecodeAndAreApplied) {
    REQUIRE_TOOLS();
    std::string bodies[2];
    int k = 0;
    for (int level : {1, 9}) {
        SCOPED_TRACE("gzip_level " + std::to_string(level));
        App a;
        quick_options(a.options());
        a.use(compression({.gzip_level = level}));
        a.get("/text", [] { return Response::text(big_text()); });
        start_app(a);
        HttpResponse r = get(a.port(), "/text", ae("gzip"));
        expect_coded(r, Coding::gzip, big_text());
        // RFC 1952 XFL: zlib writes 4 for the fastest level, 2 for the best.
        ASSERT_GT(r.body.size(), 10u);
        EXPECT_EQ(static_cast<int>(static_cast<unsigned char>(r.body[8])), level == 1 ? 4 : 2);
        bodies[k++] = r.body;
    }
    EXPECT_LE(bodies[1].size(), bodies[0].size()) << "level 9 larger than level 1";
}

TEST_F(CompressionLevels, OutOfRangeLevelThrowsWhenTheMiddlewareIsMade) {
    EXPECT_THROW((void)compression({.gzip_level = 0}), std::invalid_argument);
    EXPECT_THROW((void)compression({.gzip_level = 10}), std::invalid_argument);
    EXPECT_THROW((void)compression({.gzip_level = -5}), std::invalid_argument);
    EXPECT_THROW((void)compression({.br_level = 12}), std::invalid_argument);
    EXPECT_THROW((void)compression({.zstd_level = 0}), std::invalid_argument);
    EXPECT_THROW((void)compression({.zstd_level = 20}), std::invalid_argument);
    EXPECT_NO_THROW((void)compression({.gzip_level = 1, .br_level = 0, .zstd_level = 1}));
    EXPECT_NO_THROW((void)compression({.gzip_level = 9, .br_level = 11, .zstd_level = 19}));
}

// ---- 3. What is compressed ----------------------------------------------------------------

TEST_F(CompressionEligibility, SmallBodiesAreSentAsTheyAreLargeJsonIsCompressed) {
    REQUIRE_TOOLS();
    start();
    HttpResponse small = get(port, "/small", ae("gzip, br, zstd"));
    EXPECT_EQ(small.status, 200);
    EXPECT_FALSE(small.has_header("Content-Encoding"));
    EXPECT_EQ(small.body, small_text());
    EXPECT_EQ(small.header("Content-Length"), "100");

    HttpResponse json = get(port, "/json", ae("gzip"));
    expect_coded(json, Coding::gzip, json_10k());
    EXPECT_TRUE(icontains(json.header("Content-Type"), "application/json"));
    EXPECT_EQ(json.header("Content-Length"), std::to_string(json.body.size()));
}

TEST_F(CompressionEligibility, MinSizeIsConfigurable) {
    REQUIRE_TOOLS();
    start({.min_size = 64 * 1024});
    HttpResponse r = get(port, "/text", ae("gzip"));  // 16 KiB, now under the minimum
    EXPECT_FALSE(r.has_header("Content-Encoding"));
    EXPECT_EQ(r.body, big_text());
}

TEST_F(CompressionEligibility, ImagesAreNotCompressed) {
    REQUIRE_TOOLS();
    start();
    HttpResponse r = get(port, "/png", ae("gzip, br, zstd"));
    EXPECT_EQ(r.status, 200);
    EXPECT_FALSE(r.has_header("Content-Encoding"));
    EXPECT_EQ(r.header("Content-Type"), "image/png");
    EXPECT_EQ(r.body, big_text());
}

TEST_F(CompressionEligibility, CustomTypeListIsHonoured) {
    REQUIRE_TOOLS();
    start({.types = {"text/*"}});
    expect_coded(get(port, "/csv", ae("gzip")), Coding::gzip, big_text());
    expect_coded(get(port, "/text", ae("br")), Coding::br, big_text());
    HttpResponse json = get(port, "/json", ae("gzip"));
    EXPECT_EQ(json.status, 200);
    EXPECT_FALSE(json.has_header("Content-Encoding"));
    EXPECT_EQ(json.body, json_10k());
}

// ---- 4. Never twice, and no-transform -----------------------------------------------------

TEST_F(CompressionEligibility, HandlersOwnContentEncodingPassesUnchanged) {
    REQUIRE_TOOLS();
    start();
    const std::string own = compress::compress(Coding::gzip, big_text());
    for (const char* accept : {"gzip", "br", "zstd", "gzip, br, zstd", "*"}) {
        SCOPED_TRACE(accept);
        HttpResponse r = get(port, "/own-gzip", ae(accept));
        EXPECT_EQ(r.status, 200);
        EXPECT_EQ(r.header_count("Content-Encoding"), 1u);
        EXPECT_EQ(r.header("Content-Encoding"), "gzip");
        EXPECT_TRUE(r.body == own) << "the handler's bytes were changed";
        const auto decoded = cli_decode(dir, Coding::gzip, r.body);
        ASSERT_TRUE(decoded);
        EXPECT_TRUE(*decoded == big_text());
    }
}

TEST_F(CompressionEligibility, CacheControlNoTransformIsRespected) {
    REQUIRE_TOOLS();
    start();
    HttpResponse r = get(port, "/no-transform", ae("gzip, br, zstd"));
    EXPECT_EQ(r.status, 200);
    EXPECT_FALSE(r.has_header("Content-Encoding"));
    EXPECT_EQ(r.header("Cache-Control"), "public, no-transform");
    EXPECT_EQ(r.body, big_text());
}

TEST_F(CompressionEligibility, PrecompressedSiblingIsSentAsItIs) {
    REQUIRE_TOOLS();
    start();
    HttpResponse r = get(port, "/files/sib.txt", ae("gzip"));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header_count("Content-Encoding"), 1u);
    EXPECT_EQ(r.header("Content-Encoding"), "gzip");
    EXPECT_TRUE(r.body == sibling_gz()) << "the sibling was not sent byte for byte";
    EXPECT_EQ(r.header_count("Vary"), 1u) << all_values(r, "Vary");
    EXPECT_TRUE(varies_on_accept_encoding(r));
    const auto decoded = cli_decode(dir, Coding::gzip, r.body);
    ASSERT_TRUE(decoded);
    EXPECT_TRUE(*decoded == page_text());
    // A coding the sibling does not have is made on the fly.
    expect_coded(get(port, "/files/sib.txt", ae("zstd")), Coding::zstd, page_text());
}

// ---- 5. Validators and ranges ---------------------------------------------------------------

TEST_F(CompressionEtag, CompressedVariantGetsItsOwnEtag) {
    REQUIRE_TOOLS();
    start();
    HttpResponse plain = get(port, "/etag");
    EXPECT_EQ(plain.header("ETag"), "\"v1\"");
    EXPECT_FALSE(plain.has_header("Content-Encoding"));
    for (Coding c : {Coding::gzip, Coding::br, Coding::zstd}) {
        SCOPED_TRACE(std::string(compress::name(c)));
        HttpResponse r = get(port, "/etag", ae(compress::name(c)));
        expect_coded(r, c, big_text());
        EXPECT_EQ(r.header_count("ETag"), 1u);
        EXPECT_EQ(r.header("ETag"), "\"v1-" + std::string(compress::name(c)) + "\"");
    }
    HttpResponse weak = get(port, "/etag-weak", ae("gzip"));
    expect_coded(weak, Coding::gzip, big_text());
    EXPECT_EQ(weak.header("ETag"), "W/\"v1-gzip\"");
}

// Regression: compression() renamed a handler's ETag ("v1" -> "v1-gzip") but answered
// preconditions for the renamed tag only for file bodies, so a client revalidating the gzip
// variant of a dynamic route (If-None-Match: "v1-gzip", which the handler cannot recognise)
// always got the whole body again (fixed in ce69df6).
TEST_F(CompressionEtag, HandlerEtagRevalidationOfCompressedVariantGets304) {
    REQUIRE_TOOLS();
    start();
    // Identity: the handler's own check works.
    HttpResponse id = get(port, "/etag-cond", "If-None-Match: \"v1\"\r\n");
    EXPECT_EQ(id.status, 304);
    EXPECT_TRUE(id.body.empty());
    // gzip: the client got "v1-gzip" and revalidates with it.
    HttpResponse first = get(port, "/etag-cond", ae("gzip"));
    expect_coded(first, Coding::gzip, big_text());
    ASSERT_EQ(first.header("ETag"), "\"v1-gzip\"");
    for (const char* path : {"/etag-cond", "/etag"}) {
        SCOPED_TRACE(path);
        HttpResponse r = get(port, path, ae("gzip") + "If-None-Match: \"v1-gzip\"\r\n");
        EXPECT_EQ(r.status, 304) << "body " << r.body.size() << " bytes, ETag " << r.header("ETag");
        EXPECT_TRUE(r.body.empty());
        EXPECT_EQ(r.header("ETag"), "\"v1-gzip\"");
    }
    // If-Match is answered for the variant too.
    EXPECT_EQ(get(port, "/etag", ae("gzip") + "If-Match: \"v1-gzip\"\r\n").status, 200);
    EXPECT_EQ(get(port, "/etag", ae("gzip") + "If-Match: \"v1-br\"\r\n").status, 412);
    // Another coding is another variant: no match.
    HttpResponse br = get(port, "/etag", ae("br") + "If-None-Match: \"v1-gzip\"\r\n");
    EXPECT_EQ(br.status, 200);
    EXPECT_EQ(br.header("ETag"), "\"v1-br\"");
}

TEST_F(CompressionEtag, StaticFileCompressedOnTheFlyHasSuffixedEtagAndAnswers304) {
    REQUIRE_TOOLS();
    start();
    HttpResponse plain = get(port, "/files/page.txt");
    ASSERT_EQ(plain.status, 200);
    EXPECT_FALSE(plain.has_header("Content-Encoding"));
    EXPECT_EQ(plain.body, page_text());
    const std::string etag = plain.header("ETag");
    ASSERT_GE(etag.size(), 3u);
    ASSERT_EQ(etag.back(), '"');
    const std::string gz_etag = etag.substr(0, etag.size() - 1) + "-gzip\"";

    HttpResponse gz = get(port, "/files/page.txt", ae("gzip"));
    expect_coded(gz, Coding::gzip, page_text());
    EXPECT_EQ(gz.header("ETag"), gz_etag);
    EXPECT_EQ(gz.header("Content-Length"), std::to_string(gz.body.size()));

    // The compressed variant's own validator: 304 (and still the variant's headers).
    HttpResponse nm =
        get(port, "/files/page.txt", ae("gzip") + "If-None-Match: " + gz_etag + "\r\n");
    EXPECT_EQ(nm.status, 304);
    EXPECT_TRUE(nm.body.empty());
    EXPECT_EQ(nm.header("ETag"), gz_etag);

    // The identity validator does not match the gzip variant, and the reverse.
    HttpResponse other =
        get(port, "/files/page.txt", ae("gzip") + "If-None-Match: " + etag + "\r\n");
    EXPECT_EQ(other.status, 200);
    EXPECT_EQ(other.header("Content-Encoding"), "gzip");
    HttpResponse reverse = get(port, "/files/page.txt", "If-None-Match: " + gz_etag + "\r\n");
    EXPECT_EQ(reverse.status, 200);
    EXPECT_EQ(reverse.body, page_text());
    // Identity's own validator still gives 304 for identity.
    EXPECT_EQ(get(port, "/files/page.txt", "If-None-Match: " + etag + "\r\n").status, 304);
    // A different coding is a different variant.
    HttpResponse br = get(port, "/files/page.txt", ae("br") + "If-None-Match: " + gz_etag + "\r\n");
    EXPECT_EQ(br.status, 200);
    EXPECT_EQ(br.header("ETag"), etag.substr(0, etag.size() - 1) + "-br\"");
}

TEST_F(CompressionEtag, RangeOnCompressedResponseReturnsTheWhole) {
    REQUIRE_TOOLS();
    start();
    // Identity honours the range ...
    HttpResponse part = get(port, "/files/page.txt", "Range: bytes=0-99\r\n");
    EXPECT_EQ(part.status, 206);
    EXPECT_EQ(part.body, page_text().substr(0, 100));
    EXPECT_EQ(part.header("Accept-Ranges"), "bytes");
    // ... the compressed variant does not: 200, the whole, no Accept-Ranges.
    for (const char* range : {"bytes=0-99", "bytes=5000-", "bytes=-10"}) {
        SCOPED_TRACE(range);
        HttpResponse r = get(port, "/files/page.txt", ae("gzip") + "Range: " + range + "\r\n");
        expect_coded(r, Coding::gzip, page_text());
        EXPECT_FALSE(r.has_header("Accept-Ranges")) << r.header("Accept-Ranges");
        EXPECT_FALSE(r.has_header("Content-Range")) << r.header("Content-Range");
    }
    HttpResponse plain_gz = get(port, "/files/page.txt", ae("gzip"));
    EXPECT_FALSE(plain_gz.has_header("Accept-Ranges"));
}

// ---- 6. Streamed bodies ---------------------------------------------------------------------

TEST_F(CompressionStreaming, StreamBodyIsCompressedChunkedAndDecodes) {
    REQUIRE_TOOLS();
    start();
    for (Coding c : {Coding::gzip, Coding::br, Coding::zstd}) {
        SCOPED_TRACE(std::string(compress::name(c)));
        HttpResponse r = get(port, "/stream", ae(compress::name(c)));
        EXPECT_TRUE(r.chunked);
        EXPECT_FALSE(r.has_header("Content-Length"));
        expect_coded(r, c, stream_whole());
    }
    HttpResponse plain = get(port, "/stream");
    EXPECT_FALSE(plain.has_header("Content-Encoding"));
    EXPECT_TRUE(varies_on_accept_encoding(plain));
    EXPECT_EQ(plain.body, stream_whole());
    // A stream of a known length: compressed, its length is unknown again (chunked); sent
    // as it is, it keeps its Content-Length.
    HttpResponse coded = get(port, "/stream-sized", ae("gzip"));
    EXPECT_TRUE(coded.chunked);
    EXPECT_FALSE(coded.has_header("Content-Length"));
    expect_coded(coded, Coding::gzip, stream_whole());
    HttpResponse sized = get(port, "/stream-sized");
    EXPECT_FALSE(sized.chunked);
    EXPECT_EQ(sized.header("Content-Length"), std::to_string(stream_whole().size()));
    EXPECT_EQ(sized.body, stream_whole());
}

// Incremental reading of a chunked, gzip-coded response: each complete chunk is inflated
// with zlib as it arrives.
class ChunkedInflater {
  public:
    ChunkedInflater() { ok_ = inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK; }
    ~ChunkedInflater() { inflateEnd(&zs_); }
    ChunkedInflater(const ChunkedInflater&) = delete;
    ChunkedInflater& operator=(const ChunkedInflater&) = delete;

    /// Takes the bytes after the head; returns false on a framing or zlib error.
    bool feed(std::string_view bytes) {
        raw_.append(bytes);
        for (;;) {
            const std::size_t eol = raw_.find("\r\n", pos_);
            if (eol == std::string::npos || last_) return ok_;
            const std::size_t size = std::stoul(raw_.substr(pos_, eol - pos_), nullptr, 16);
            if (size == 0) {
                last_ = true;
                return ok_;
            }
            if (raw_.size() < eol + 2 + size + 2) return ok_;
            const std::string_view data = std::string_view(raw_).substr(eol + 2, size);
            wire_.append(data);
            inflate_more(data);
            pos_ = eol + 2 + size + 2;
        }
    }
    const std::string& plain() const noexcept { return plain_; }
    const std::string& wire() const noexcept { return wire_; }
    bool stream_end() const noexcept { return end_; }
    bool last_chunk() const noexcept { return last_; }
    bool ok() const noexcept { return ok_; }

  private:
    void inflate_more(std::string_view data) {
        zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
        zs_.avail_in = static_cast<uInt>(data.size());
        while (ok_ && !end_) {
            unsigned char out[16 * 1024];
            zs_.next_out = out;
            zs_.avail_out = sizeof out;
            const int rc = inflate(&zs_, Z_SYNC_FLUSH);
            plain_.append(reinterpret_cast<char*>(out), sizeof out - zs_.avail_out);
            if (rc == Z_STREAM_END) {
                end_ = true;
            } else if (rc == Z_BUF_ERROR) {
                break;  // no progress without more input
            } else if (rc != Z_OK) {
                ok_ = false;
            } else if (zs_.avail_in == 0 && zs_.avail_out != 0) {
                break;
            }
        }
    }

    z_stream zs_{};
    std::string raw_, wire_, plain_;
    std::size_t pos_ = 0;
    bool ok_ = false, end_ = false, last_ = false;
};

TEST_F(CompressionStreaming, EventStreamIsFlushedPerEventSoTheFirstDecodesBeforeTheEnd) {
    REQUIRE_TOOLS();
    start();
    const int fd = connect_loopback(port);
    ASSERT_GE(fd, 0);
    Client guard(fd);  // closes the socket
    ASSERT_TRUE(guard.send(get_request("/sse", ae("gzip"))));

    std::string buf;
    ChunkedInflater inflater;
    bool have_head = false;
    std::string head;
    const auto deadline = SteadyClock::now() + Ms{5000};
    // Read until the first event is decodable; the producer is held until then.
    while (inflater.plain().find("data: first event\n\n") == std::string::npos) {
        const auto left = std::chrono::duration_cast<Ms>(deadline - SteadyClock::now()).count();
        pollfd pf{fd, POLLIN, 0};
        ASSERT_TRUE(left > 0 && ::poll(&pf, 1, static_cast<int>(left)) > 0)
            << "first event not decodable in time; head: " << head
            << " plain so far: " << inflater.plain() << " wire bytes: " << inflater.wire().size();
        char tmp[16 * 1024];
        const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
        ASSERT_GT(n, 0) << "connection ended before the first event";
        if (!have_head) {
            buf.append(tmp, static_cast<std::size_t>(n));
            const std::size_t end = buf.find("\r\n\r\n");
            if (end == std::string::npos) continue;
            head = buf.substr(0, end + 2);
            have_head = true;
            ASSERT_TRUE(inflater.feed(std::string_view(buf).substr(end + 4)));
        } else {
            ASSERT_TRUE(inflater.feed(std::string_view(tmp, static_cast<std::size_t>(n))));
        }
    }
    EXPECT_TRUE(icontains(head, "Content-Encoding: gzip")) << head;
    EXPECT_TRUE(icontains(head, "Transfer-Encoding: chunked")) << head;
    EXPECT_TRUE(icontains(head, "text/event-stream")) << head;
    EXPECT_TRUE(icontains(head, "Accept-Encoding")) << "no Vary: " << head;
    EXPECT_FALSE(inflater.stream_end());
    EXPECT_FALSE(inflater.last_chunk());
    EXPECT_FALSE(sse_done.load()) << "the producer ended before the test let it go";

    // Let the producer finish; the rest arrives and the gzip stream ends properly.
    sse_release = true;
    const auto deadline2 = SteadyClock::now() + Ms{5000};
    while (!inflater.last_chunk()) {
        const auto left = std::chrono::duration_cast<Ms>(deadline2 - SteadyClock::now()).count();
        pollfd pf{fd, POLLIN, 0};
        ASSERT_TRUE(left > 0 && ::poll(&pf, 1, static_cast<int>(left)) > 0) << "stream not ended";
        char tmp[16 * 1024];
        const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
        ASSERT_GT(n, 0);
        ASSERT_TRUE(inflater.feed(std::string_view(tmp, static_cast<std::size_t>(n))));
    }
    EXPECT_TRUE(inflater.ok());
    EXPECT_TRUE(inflater.stream_end()) << "the gzip trailer is missing";
    const std::size_t first = inflater.plain().find("data: first event\n\n");
    const std::size_t second = inflater.plain().find("data: second event\n\n");
    EXPECT_NE(first, std::string::npos);
    EXPECT_NE(second, std::string::npos);
    EXPECT_LT(first, second);
    // And the whole body is one valid gzip stream for gzip(1) too.
    const auto decoded = cli_decode(dir, Coding::gzip, inflater.wire());
    ASSERT_TRUE(decoded);
    EXPECT_EQ(*decoded, inflater.plain());
}

// ---- 7. HEAD --------------------------------------------------------------------------------

TEST_F(CompressionHead, HeadHasTheSameCodingAndLengthAsGetAndNoBody) {
    REQUIRE_TOOLS();
    start();
    for (const char* path : {"/text", "/json", "/files/page.txt"}) {
        for (Coding c : {Coding::gzip, Coding::br, Coding::zstd}) {
            SCOPED_TRACE(std::string(path) + " " + std::string(compress::name(c)));
            HttpResponse g = get(port, path, ae(compress::name(c)));
            ASSERT_EQ(g.status, 200);
            ASSERT_EQ(g.header("Content-Encoding"), compress::name(c));

            // HEAD, then GET /hello on the same connection: a body after the HEAD's head would
            // be read as the next response.
            Client cl = Client::tcp(port);
            ASSERT_TRUE(cl.connected());
            std::string head_req = get_request(path, ae(compress::name(c)));
            head_req.replace(0, 3, "HEAD");
            ASSERT_TRUE(cl.send(head_req + get_request("/hello")));
            auto h = cl.read_response(true);
            ASSERT_TRUE(h) << cl.error();
            EXPECT_EQ(h->status, 200);
            EXPECT_EQ(h->header("Content-Encoding"), g.header("Content-Encoding"));
            EXPECT_EQ(h->header("Content-Length"), g.header("Content-Length"));
            EXPECT_EQ(h->header("ETag"), g.header("ETag"));
            EXPECT_TRUE(varies_on_accept_encoding(*h));
            auto next = cl.read_response();
            ASSERT_TRUE(next) << cl.error();
            EXPECT_EQ(next->status, 200);
            EXPECT_EQ(next->body, "Hello, World!") << "bytes after the HEAD response";
        }
    }
}

TEST_F(CompressionHead, HeadOfAStreamedCompressedFileHasNoBody) {
    REQUIRE_TOOLS();
    start({.max_file_size = 64 * 1024});
    Client cl = Client::tcp(port, Ms{10000});
    ASSERT_TRUE(cl.connected());
    std::string head_req = get_request("/files/large.txt", ae("gzip"));
    head_req.replace(0, 3, "HEAD");
    ASSERT_TRUE(cl.send(head_req + get_request("/hello")));
    auto h = cl.read_response(true);
    ASSERT_TRUE(h) << cl.error();
    EXPECT_EQ(h->status, 200);
    EXPECT_EQ(h->header("Content-Encoding"), "gzip");
    EXPECT_FALSE(h->has_header("Content-Length")) << h->header("Content-Length");
    auto next = cl.read_response();
    ASSERT_TRUE(next) << cl.error();
    EXPECT_EQ(next->status, 200);
    EXPECT_EQ(next->body, "Hello, World!") << "bytes after the HEAD response";
}

TEST_F(CompressionStreaming, Http10ClientGetsACloseDelimitedCompressedStream) {
    REQUIRE_TOOLS();
    start();
    HttpResponse r = fetch(port,
                           "GET /stream HTTP/1.0\r\nHost: localhost\r\nAccept-Encoding: "
                           "gzip\r\n\r\n");
    EXPECT_FALSE(r.chunked);
    expect_coded(r, Coding::gzip, stream_whole());
}

// ---- 8. HTTP/2 and TLS ----------------------------------------------------------------------

struct CurlReply {
    int exit = -1;
    std::string headers;  // the last head, as received (lower case names over HTTP/2)
    std::string body;
    std::string version;  // %{http_version}
};

CurlReply curl(TempDir& tmp, const std::string& args, const std::string& url) {
    const std::string head = tmp.fresh("head"), body = tmp.fresh("body");
    Ran r = run_command("timeout 20 curl -sS " + args + " -D '" + head + "' -o '" + body +
                        "' -w '%{http_version}' '" + url + "' 2>&1");
    CurlReply c;
    c.exit = r.status;
    c.version = r.out;
    c.headers = read_file(head);
    c.body = read_file(body);
    // Keep the final head only (an Upgrade's 101 comes first).
    const std::size_t last = c.headers.rfind("HTTP/");
    if (last != std::string::npos) c.headers.erase(0, last);
    return c;
}

// The value of header `name` in a curl head dump; empty if absent.
std::string curl_header(const std::string& head, std::string_view name) {
    std::istringstream in(head);
    std::string line;
    while (std::getline(in, line)) {
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos || !iequal(std::string_view(line).substr(0, colon), name))
            continue;
        std::string v = line.substr(colon + 1);
        while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.pop_back();
        while (!v.empty() && v.front() == ' ') v.erase(0, 1);
        return v;
    }
    return {};
}

TEST_F(CompressionProtocols, Http2AndTlsGiveTheSameDecodableResult) {
    REQUIRE_TOOLS();
    if (!have_curl_h2()) GTEST_SKIP() << "curl without HTTP/2";
    start({}, /*with_tls=*/true);
    const std::string h2c = "http://127.0.0.1:" + std::to_string(app.port(0));
    const std::string tls = "https://127.0.0.1:" + std::to_string(app.port(1));
    struct Mode {
        std::string args, base, version;
    };
    const std::vector<Mode> modes = {
        {"--http1.1", h2c, "1.1"},
        {"--http2-prior-knowledge", h2c, "2"},
        {"-k --http1.1", tls, "1.1"},
        {"-k --http2", tls, "2"},
    };
    struct Target {
        std::string path;
        const std::string* plain;
    };
    const std::string whole = stream_whole();
    const std::vector<Target> targets = {
        {"/text", &big_text()}, {"/files/page.txt", &page_text()}, {"/stream", &whole}};
    for (const Mode& m : modes) {
        for (const Target& t : targets) {
            for (Coding c : {Coding::gzip, Coding::br, Coding::zstd}) {
                const std::string coding(compress::name(c));
                SCOPED_TRACE(m.args + " " + m.base + t.path + " " + coding);
                CurlReply r =
                    curl(dir, m.args + " -H 'Accept-Encoding: " + coding + "'", m.base + t.path);
                ASSERT_EQ(r.exit, 0) << r.version;
                EXPECT_EQ(r.version, m.version);
                EXPECT_EQ(curl_header(r.headers, "content-encoding"), coding) << r.headers;
                EXPECT_TRUE(icontains(curl_header(r.headers, "vary"), "accept-encoding"))
                    << r.headers;
                const auto decoded = cli_decode(dir, c, r.body);
                ASSERT_TRUE(decoded);
                EXPECT_TRUE(*decoded == *t.plain) << "decoded " << decoded->size() << " bytes";
            }
            // curl's own decoder (--compressed) agrees.
            SCOPED_TRACE(m.args + " --compressed " + t.path);
            CurlReply r = curl(dir, m.args + " --compressed", m.base + t.path);
            ASSERT_EQ(r.exit, 0) << r.version;
            EXPECT_FALSE(curl_header(r.headers, "content-encoding").empty()) << r.headers;
            EXPECT_TRUE(r.body == *t.plain) << "got " << r.body.size() << " bytes";
        }
    }
}

// ---- 9. A large file is compressed as a stream ---------------------------------------------

TEST_F(CompressionLargeFile, FileAboveMaxFileSizeIsStreamedChunked) {
    REQUIRE_TOOLS();
    start({.max_file_size = 64 * 1024});
    HttpResponse plain = fetch(port, get_request("/files/large.txt"), false, Ms{10000});
    ASSERT_EQ(plain.status, 200);
    EXPECT_EQ(plain.body.size(), large_text().size());
    const std::string etag = plain.header("ETag");
    for (Coding c : {Coding::gzip, Coding::br, Coding::zstd}) {
        SCOPED_TRACE(std::string(compress::name(c)));
        HttpResponse r =
            fetch(port, get_request("/files/large.txt", ae(compress::name(c))), false, Ms{10000});
        EXPECT_TRUE(r.chunked);
        EXPECT_FALSE(r.has_header("Content-Length"));
        EXPECT_FALSE(r.has_header("Accept-Ranges"));
        EXPECT_EQ(r.header("ETag"),
                  etag.substr(0, etag.size() - 1) + "-" + std::string(compress::name(c)) + "\"");
        expect_coded(r, c, large_text());
    }
    // Below max_file_size the file is compressed whole, with a Content-Length.
    HttpResponse small = get(port, "/files/page.txt", ae("gzip"));
    EXPECT_FALSE(small.chunked);
    EXPECT_EQ(small.header("Content-Length"), std::to_string(small.body.size()));
    expect_coded(small, Coding::gzip, page_text());
}

// ---- 10. request_decompression ---------------------------------------------------------------

class RequestDecompression : public ::testing::Test {
  protected:
    void start(RequestDecompressionOptions options = {}) {
        quick_options(app.options());
        app.use(request_decompression(std::move(options)));
        add_basic_routes(app);
        app.post("/digest", [this](Request& r) {
            calls.fetch_add(1);
            return digest(r.body());
        });
        start_app(app);
        port = app.port();
    }
    HttpResponse post(std::string_view body, std::string_view content_encoding) {
        std::string extra;
        if (!content_encoding.empty())
            extra = "Content-Encoding: " + std::string(content_encoding) + "\r\n";
        return fetch(port, request_with_body("POST", "/digest", body, extra));
    }

    std::atomic<int> calls{0};  // before the app, which its handler outlives
    TempDir dir;
    App app;
    std::uint16_t port = 0;
};

TEST_F(RequestDecompression, HandlerSeesThePlainBody) {
    REQUIRE_TOOLS();
    start();
    const std::string plain = text_body(300 * 1024, "upload") + std::string(1000, '\0') + "end";
    const std::string want = digest(plain);
    HttpResponse id = post(plain, "");
    EXPECT_EQ(id.status, 200);
    EXPECT_EQ(id.body, want);
    EXPECT_EQ(post(plain, "identity").body, want);
    for (Coding c : {Coding::gzip, Coding::br, Coding::zstd}) {
        SCOPED_TRACE(std::string(compress::name(c)));
        const std::string wire = cli_encode(dir, c, plain);
        ASSERT_LT(wire.size(), plain.size() / 4);
        HttpResponse r = post(wire, compress::name(c));
        EXPECT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.body, want);
    }
    // Tokens are case-insensitive; x-gzip is gzip.
    const std::string gz = cli_encode(dir, Coding::gzip, plain);
    EXPECT_EQ(post(gz, "GZIP").body, want);
    EXPECT_EQ(post(gz, "x-gzip").body, want);
    // A coding wrapped in identity is still one coding.
    EXPECT_EQ(post(gz, "identity, gzip").body, want);
}

TEST_F(RequestDecompression, UnknownOrStackedCodingsGet415WithAcceptEncoding) {
    REQUIRE_TOOLS();
    start();
    const std::string gz = cli_encode(dir, Coding::gzip, text_body(4096));
    for (const char* ce : {"compress", "deflate", "gzip, br", "gzip, gzip", "bogus"}) {
        SCOPED_TRACE(ce);
        HttpResponse r = post(gz, ce);
        EXPECT_EQ(r.status, 415) << r.body;
        const std::string accept = r.header("Accept-Encoding");
        EXPECT_TRUE(icontains(accept, "gzip")) << accept;
        EXPECT_TRUE(icontains(accept, "br")) << accept;
        EXPECT_TRUE(icontains(accept, "zstd")) << accept;
    }
    EXPECT_EQ(calls.load(), 0);
    expect_server_sound(app);
}

TEST_F(RequestDecompression, RestrictedCodingListIsAdvertised) {
    REQUIRE_TOOLS();
    start({.codings = {Coding::gzip}});
    const std::string plain = text_body(4096);
    HttpResponse r = post(cli_encode(dir, Coding::zstd, plain), "zstd");
    EXPECT_EQ(r.status, 415);
    EXPECT_EQ(r.header("Accept-Encoding"), "gzip");
    EXPECT_EQ(post(cli_encode(dir, Coding::gzip, plain), "gzip").body, digest(plain));
}

TEST_F(RequestDecompression, CorruptBodiesGet400) {
    REQUIRE_TOOLS();
    start();
    const std::string plain = text_body(64 * 1024);
    for (Coding c : {Coding::gzip, Coding::br, Coding::zstd}) {
        SCOPED_TRACE(std::string(compress::name(c)));
        const std::string good = cli_encode(dir, c, plain);
        std::string flipped = good;
        for (std::size_t i = good.size() / 3; i < good.size() / 3 + 16; ++i) flipped[i] ^= 0x5a;
        EXPECT_EQ(post(flipped, compress::name(c)).status, 400);
        EXPECT_EQ(post(good.substr(0, good.size() / 2), compress::name(c)).status, 400)
            << "truncated";
        EXPECT_EQ(post(good + "trailing", compress::name(c)).status, 400) << "bytes after the end";
        EXPECT_EQ(post("this is not compressed at all", compress::name(c)).status, 400);
    }
    EXPECT_EQ(calls.load(), 0);
    expect_server_sound(app);
}

TEST_F(RequestDecompression, DecompressionBombIsStoppedQuicklyWith413) {
    REQUIRE_TOOLS();
    start({.max_size = 1024 * 1024});
    const std::string zeros_gz = run_command("head -c 104857600 /dev/zero | gzip -c").out;
    const std::string zeros_zst = run_command("head -c 104857600 /dev/zero | zstd -q -c").out;
    ASSERT_GT(zeros_gz.size(), 50u * 1024);
    ASSERT_LT(zeros_gz.size(), 200u * 1024);
    ASSERT_GT(zeros_zst.size(), 0u);
    const std::vector<std::pair<Coding, std::string>> bombs = {{Coding::gzip, zeros_gz},
                                                               {Coding::zstd, zeros_zst}};
    for (const auto& [coding, wire] : bombs) {
        SCOPED_TRACE(std::string(compress::name(coding)) + ", " + std::to_string(wire.size()) +
                     " bytes on the wire");
        const auto t0 = SteadyClock::now();
        HttpResponse r = post(wire, compress::name(coding));
        const long long ms = ms_since(t0);
        EXPECT_EQ(r.status, 413) << r.body;
        EXPECT_LT(ms, 1000);
        expect_server_sound(app);
    }
    EXPECT_EQ(calls.load(), 0);
    // Just under the limit still passes.
    const std::string fits(1024 * 1024, '\0');
    EXPECT_EQ(post(cli_encode(dir, Coding::gzip, fits), "gzip").body, digest(fits));
    EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace vela::e2e
