// Static files end to end: App::static_files and Response::send_file on a real server, driven
// over raw sockets (what an attacker would send) and by curl (what a real client does with
// ETag, Range, Accept-Encoding, HTTP/2 and TLS). Every test builds its own directory tree
// under /tmp (removed at the end), so what is served is known byte for byte.
//
// The bodies are checked against the files, not against vela's own reading of them: multipart
// parts are parsed here, precompressed bodies are decoded with the gzip, brotli and zstd CLIs.

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "e2e/client.hpp"
#include "e2e/process.hpp"
#include "e2e/sound.hpp"
#include "support/curl.hpp"
#include "tls/certs.hpp"
#include "vela/files/file_cache.hpp"
#include "vela/files/static_files.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * 1024;

// Byte i of every generated file: not periodic in any power of two, so a lost, repeated or
// misplaced block shows.
char pattern(std::uint64_t i) { return static_cast<char>('a' + (i % 251) % 26); }

std::string pattern_string(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = pattern(i);
    return s;
}

bool contains(std::string_view hay, std::string_view needle) {
    return hay.find(needle) != std::string_view::npos;
}

// ---- A directory tree per test -------------------------------------------------------------

// mkdtemp'd base directory with the served root at base/www; everything is removed at the end.
class TempTree {
  public:
    TempTree() {
        std::string templ = "/tmp/vela-static-e2e-XXXXXX";
        if (::mkdtemp(templ.data()) != nullptr) base_ = templ;
        fs::create_directories(root());
    }
    ~TempTree() {
        std::error_code ec;
        if (!base_.empty()) fs::remove_all(base_, ec);
    }
    TempTree(const TempTree&) = delete;
    TempTree& operator=(const TempTree&) = delete;

    bool ok() const { return !base_.empty(); }
    const std::string& base() const { return base_; }
    std::string root() const { return base_ + "/www"; }
    // A path relative to the base directory (not the root).
    std::string at(std::string_view rel) const { return base_ + "/" + std::string(rel); }
    // A path relative to the served root.
    std::string in_root(std::string_view rel) const { return root() + "/" + std::string(rel); }

    // Writes `data` to base/rel (parents created) and returns the full path.
    std::string write(std::string_view rel, std::string_view data) const {
        const std::string p = at(rel);
        fs::create_directories(fs::path(p).parent_path());
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out.write(data.data(), static_cast<std::streamsize>(data.size()));
        return p;
    }
    // Writes into the served root.
    std::string put(std::string_view rel, std::string_view data) const {
        return write("www/" + std::string(rel), data);
    }
    void mkdir(std::string_view rel) const { fs::create_directories(in_root(rel)); }
    // A symbolic link at root/rel whose target is `target` verbatim.
    void symlink(const std::string& target, std::string_view rel) const {
        ASSERT_EQ(::symlink(target.c_str(), in_root(rel).c_str()), 0) << rel;
    }
    void fifo(std::string_view rel) const {
        ASSERT_EQ(::mkfifo(in_root(rel).c_str(), 0644), 0) << rel;
    }
    // A sparse file of `size` zero bytes made with ftruncate.
    void sparse(std::string_view rel, std::uint64_t size) const {
        const int fd = ::open(in_root(rel).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
        ::close(fd);
    }
    // Sets the modification time (seconds since the epoch) of root/rel.
    void set_mtime(std::string_view rel, std::int64_t seconds) const {
        timespec ts[2]{};
        ts[0].tv_sec = ts[1].tv_sec = static_cast<time_t>(seconds);
        ASSERT_EQ(::utimensat(AT_FDCWD, in_root(rel).c_str(), ts, 0), 0);
    }

  private:
    std::string base_;
};

// ---- External programs ---------------------------------------------------------------------

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Single-quotes `s` for sh.
std::string sh_quote(std::string_view s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out.push_back(c);
        }
    }
    out += '\'';
    return out;
}

using Reply = test::CurlReply;

// `curl -s -i <options> [-H h]... <url>`.
Reply curl(const std::string& url, const std::vector<std::string>& headers = {},
           const std::string& options = {}) {
    std::string cmd = "timeout 30 curl -s -i " + options;
    for (const std::string& h : headers) cmd += " -H " + sh_quote(h);
    cmd += " " + sh_quote(url);
    return test::parse_curl_i(run_command(cmd).out, 2048);
}

std::string http_url(std::uint16_t port, std::string_view path) {
    return "http://127.0.0.1:" + std::to_string(port) + std::string(path);
}

// Decodes `data` with `tool -dc` (gzip, brotli, zstd) through a file in `t`.
std::string decode(const TempTree& t, const std::string& tool, const std::string& data) {
    const std::string p = t.write("decode.in", data);
    return run_command("timeout 20 " + tool + " -dc " + sh_quote(p) + " 2>/dev/null").out;
}

// ---- multipart/byteranges ------------------------------------------------------------------

struct Part {
    std::string content_type;
    std::string content_range;
    std::string data;
};

// The boundary parameter of a multipart Content-Type (quotes removed); empty when absent.
std::string boundary_of(const std::string& content_type) {
    const std::size_t p = content_type.find("boundary=");
    if (p == std::string::npos) return {};
    std::string b = content_type.substr(p + 9);
    const std::size_t semi = b.find(';');
    if (semi != std::string::npos) b.resize(semi);
    if (b.size() >= 2 && b.front() == '"' && b.back() == '"') b = b.substr(1, b.size() - 2);
    return b;
}

// Parses a multipart body (RFC 2046 5.1); false with `why` when it is malformed.
bool parse_multipart(const std::string& body, const std::string& boundary, std::vector<Part>& out,
                     std::string& why) {
    out.clear();
    const std::string delim = "--" + boundary;
    if (body.compare(0, delim.size() + 2, delim + "\r\n") != 0) {
        why = "body does not start with the boundary";
        return false;
    }
    std::size_t pos = delim.size() + 2;
    for (;;) {
        const std::size_t head_end = body.find("\r\n\r\n", pos);
        if (head_end == std::string::npos) {
            why = "part head not terminated";
            return false;
        }
        Part part;
        std::istringstream head(body.substr(pos, head_end - pos));
        for (std::string line; std::getline(head, line);) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            const std::size_t colon = line.find(':');
            if (colon == std::string::npos) continue;
            std::string name = line.substr(0, colon);
            for (char& c : name) c = lower_ascii(c);
            std::string value = line.substr(colon + 1);
            while (!value.empty() && value.front() == ' ') value.erase(0, 1);
            if (name == "content-type") part.content_type = value;
            if (name == "content-range") part.content_range = value;
        }
        const std::size_t data_start = head_end + 4;
        const std::size_t next = body.find("\r\n" + delim, data_start);
        if (next == std::string::npos) {
            why = "part not followed by a boundary";
            return false;
        }
        part.data = body.substr(data_start, next - data_start);
        out.push_back(std::move(part));
        pos = next + 2 + delim.size();
        if (body.compare(pos, 4, "--\r\n") == 0) {
            if (pos + 4 != body.size()) {
                why = "bytes after the closing boundary";
                return false;
            }
            return true;
        }
        if (body.compare(pos, 2, "\r\n") != 0) {
            why = "boundary not followed by CRLF or --";
            return false;
        }
        pos += 2;
    }
}

// ---- Raw requests --------------------------------------------------------------------------

// One request on a fresh connection; nullopt (with the client's error) when no response came.
std::optional<HttpResponse> raw_request(std::uint16_t port, const std::string& bytes,
                                        bool head = false, std::string* error = nullptr) {
    Client c = Client::tcp(port);
    if (!c.connected() || !c.send(bytes)) {
        if (error) *error = "connect/send failed";
        return std::nullopt;
    }
    auto r = c.read_response(head);
    if (!r && error) *error = c.error();
    return r;
}

std::optional<HttpResponse> raw_get(std::uint16_t port, std::string_view target,
                                    std::string_view extra = {}) {
    return raw_request(port, get_request(target, extra));
}

// Restores the FileCache tuning when a test that changed it ends (even on a failed ASSERT).
class FileCacheOptionsGuard {
  public:
    FileCacheOptionsGuard() : saved_(files::FileCache::options()) {}
    ~FileCacheOptionsGuard() { files::FileCache::configure(saved_); }
    FileCacheOptionsGuard(const FileCacheOptionsGuard&) = delete;
    FileCacheOptionsGuard& operator=(const FileCacheOptionsGuard&) = delete;

  private:
    files::FileCacheOptions saved_;
};

// =============================================================================================
// 1. Safety: traversal, encodings, symbolic links, special files, directories.
// =============================================================================================

struct SafetyCase {
    SafetyCase(std::string t, std::vector<int> s, std::string body = {}, std::string loc = {},
               bool secret = false)
        : target(std::move(t)),
          statuses(std::move(s)),
          body_has(std::move(body)),
          location(std::move(loc)),
          secret_allowed(secret) {}
    std::string target;           // the request target, sent verbatim
    std::vector<int> statuses;    // acceptable statuses
    std::string body_has;         // the body must contain this (empty: not checked)
    std::string location;         // the Location must equal this (empty: not checked)
    bool secret_allowed = false;  // the response may carry the secret (follow_symlinks_outside)
};

TEST(StaticFilesSafety, TraversalEncodingsLinksAndSpecialFilesTable) {
    TempTree t;
    ASSERT_TRUE(t.ok());
    // Outside the root: base/secret.txt and a sibling directory base/outside/.
    t.write("secret.txt", "TOPSECRET in the parent directory\n");
    t.write("outside/secret.txt", "TOPSECRET in a sibling directory\n");
    t.put("index.html", "<h1>home</h1>\n");
    t.put("file.txt", "plain file\n");
    t.put("target.txt", "the link target inside\n");
    t.put("a/b.txt", "b inside a\n");
    t.put("CON", "a file named CON\n");
    t.put("nul.txt", "a file named nul.txt\n");
    t.put(".env", "DOTENV=1\n");
    t.put(".git/config", "[core]\n");
    t.put("docs/index.html", "docs index page\n");
    t.put("list/<b>.txt", "bold\n");
    t.put("list/x&y.txt", "amp\n");
    t.put("list/.hidden", "hidden\n");
    t.put("list/sub/z.txt", "z\n");
    t.mkdir("emptydir");
    t.symlink("../outside/secret.txt", "link_out");
    t.symlink(t.at("secret.txt"), "link_abs");
    t.symlink("../outside", "dirlink_out");
    t.symlink("target.txt", "link_in");
    t.symlink("a/b.txt", "link_in_sub");
    t.symlink("loop", "loop");
    t.fifo("fifo");
    t.put("d\xc3\xa9/index.html", "accented dir\n");
    t.put("my dir/index.html", "spaced dir\n");

    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.static_files("/", t.root());
    app.static_files("/mount", t.root());
    app.static_files("/follow", t.root(), {.follow_symlinks_outside = true});
    app.static_files("/dots", t.root(), {.dotfiles = true});
    app.static_files("/listed", t.root(), {.listing = true});
    start_app(app, 1);
    const std::uint16_t port = app.port();

    const std::vector<int> refused = {400, 404};
    const std::vector<int> link_refused = {403, 404};
    const std::vector<SafetyCase> cases = {
        // Traversal, plain and encoded.
        {"/../secret.txt", refused},
        {"/%2e%2e/secret.txt", refused},
        {"/%2E%2E%2Fsecret.txt", refused},
        {"/%2e%2e%2f%2e%2e%2fsecret.txt", refused},
        {"/a/%2e%2e/%2e%2e/secret.txt", refused},
        {"/a/../../secret.txt", refused},
        {"/%252e%252e/secret.txt", refused},          // double encoding: a literal "%2e%2e"
        {"/%c0%ae%c0%ae/secret.txt", refused},        // overlong UTF-8 for '.'
        {"/%e0%80%ae%e0%80%ae/secret.txt", refused},  // 3-byte overlong
        {"/..%5csecret.txt", refused},
        {"/..\\secret.txt", refused},
        {"/%5c..%5csecret.txt", refused},
        {"/%00", refused},
        {"/a%00.txt", refused},
        {"/file.txt%00.html", refused},
        {"//etc/passwd", refused},
        {"/./index.html", refused},
        {"/a/./b.txt", refused},
        {"http://x/../secret.txt", refused},
        {"http://x/%2e%2e/secret.txt", refused},
        {"/mount/../secret.txt", refused},
        {"/mount/%2e%2e/secret.txt", refused},
        {"/mount/..%2fsecret.txt", refused},
        {"/outside/secret.txt", {404}},
        // Symbolic links: out of the root refused, inside served, out allowed when asked.
        {"/link_out", link_refused},
        {"/link_abs", link_refused},
        {"/dirlink_out/secret.txt", link_refused},
        {"/link_in", {200}, "the link target inside"},
        {"/link_in_sub", {200}, "b inside a"},
        {"/follow/link_out", {200}, "TOPSECRET in a sibling directory", {}, true},
        {"/follow/link_abs", {200}, "TOPSECRET in the parent directory", {}, true},
        {"/follow/dirlink_out/secret.txt", {200}, "TOPSECRET in a sibling", {}, true},
        // Dotfiles hidden unless asked.
        {"/.env", {404}},
        {"/.git/config", {404}},
        {"/%2eenv", {404}},
        {"/mount/.env", {404}},
        {"/dots/.env", {200}, "DOTENV=1"},
        // Special files and directories.
        {"/fifo", {404}},
        {"/emptydir/", {404}},
        {"/emptydir", {301}, {}, "/emptydir/"},
        {"/CON", {200}, "a file named CON"},
        {"/nul.txt", {200}, "a file named nul.txt"},
        {"/docs", {301}, {}, "/docs/"},
        {"/docs/", {200}, "docs index page"},
        {"/mount/docs", {301}, {}, "/mount/docs/"},
        {"/mount/docs?x=1&y=%20", {301}, {}, "/mount/docs/?x=1&y=%20"},
        {"/mount", {301}, {}, "/mount/"},
        {"/mount?q=1", {301}, {}, "/mount/?q=1"},
        {"/mount/", {200}, "<h1>home</h1>"},
        {"/mount/docs/", {200}, "docs index page"},
        {"/mount/docs/index.html", {200}, "docs index page"},
        {"/list/", {404}},  // listing off by default
        {"/file.txt", {200}, "plain file"},
        {"/file.txt/", {404}},
        {"/mount/file.txt/", {404}},
        {"/nosuch.txt", {404}},
        {"/loop", {403, 404}},                           // a symbolic link to itself (ELOOP)
        {"/" + std::string(300, 'a'), {400, 404, 414}},  // longer than NAME_MAX
        {"/d%C3%A9", {301}, {}, "/d%C3%A9/"},
        {"/d%C3%A9/", {200}, "accented dir"},
        {"/my%20dir", {301}, {}, "/my%20dir/"},
        {"/mount/my%20dir?a=b", {301}, {}, "/mount/my%20dir/?a=b"},
    };
    for (const SafetyCase& c : cases) {
        std::string error;
        auto r = raw_request(port, "GET " + c.target + " HTTP/1.1\r\nHost: localhost\r\n\r\n",
                             false, &error);
        ASSERT_TRUE(r) << c.target << ": no response (" << error << ")";
        if (std::getenv("VELA_STATIC_TRACE"))
            std::fprintf(stderr, "%-40s -> %d\n", c.target.c_str(), r->status);
        bool status_ok = false;
        for (int s : c.statuses) status_ok = status_ok || r->status == s;
        EXPECT_TRUE(status_ok) << c.target << ": got " << r->status << "\n" << r->body;
        if (!c.secret_allowed) {
            EXPECT_FALSE(contains(r->body, "TOPSECRET")) << c.target << " leaked: " << r->body;
        }
        EXPECT_FALSE(contains(r->body, "root:")) << c.target << " leaked /etc/passwd";
        EXPECT_FALSE(contains(r->body, "DOTENV") && !contains(c.target, "/dots/"))
            << c.target << " leaked .env";
        if (!c.body_has.empty()) {
            EXPECT_TRUE(contains(r->body, c.body_has)) << c.target << ": body " << r->body;
        }
        if (!c.location.empty()) {
            EXPECT_EQ(r->header("Location"), c.location) << c.target;
        }
    }

    // Listing when switched on: names escaped, dotfiles left out, sub-directories marked.
    auto listing = raw_get(port, "/listed/list/");
    ASSERT_TRUE(listing);
    EXPECT_EQ(listing->status, 200);
    EXPECT_TRUE(contains(listing->header("Content-Type"), "text/html"))
        << listing->header("Content-Type");
    EXPECT_TRUE(contains(listing->body, "&lt;b&gt;.txt")) << listing->body;
    EXPECT_TRUE(contains(listing->body, "x&amp;y.txt")) << listing->body;
    EXPECT_TRUE(contains(listing->body, "sub/")) << listing->body;
    EXPECT_FALSE(contains(listing->body, "<b>")) << listing->body;
    EXPECT_FALSE(contains(listing->body, ".hidden")) << listing->body;
    auto empty_listing = raw_get(port, "/listed/emptydir/");
    ASSERT_TRUE(empty_listing);
    EXPECT_EQ(empty_listing->status, 200);
    // A directory with an index gets the index, not the listing.
    auto indexed = raw_get(port, "/listed/docs/");
    ASSERT_TRUE(indexed);
    EXPECT_EQ(indexed->body, "docs index page\n");
    // The listed file is reachable through its escaped link.
    auto bold = raw_get(port, "/listed/list/%3Cb%3E.txt");
    ASSERT_TRUE(bold);
    EXPECT_EQ(bold->status, 200);
    EXPECT_EQ(bold->body, "bold\n");

    // The server is still sound: a route and a file on fresh connections.
    expect_server_sound(app);
    auto file = raw_get(port, "/file.txt");
    ASSERT_TRUE(file);
    EXPECT_EQ(file->status, 200);
    EXPECT_EQ(file->body, "plain file\n");
}

// =============================================================================================
// 2. MIME types.
// =============================================================================================

TEST(StaticFilesMime, TypesCharsetsAndOverrides) {
    TempTree t;
    ASSERT_TRUE(t.ok());
    t.put("index.html", "<p>x</p>");
    t.put("style.css", "p{}");
    t.put("app.js", "let x;");
    t.put("data.json", "{}");
    t.put("img.png", std::string("\x89PNG\r\n\x1a\n", 8));
    t.put("blob.unknownext", "??");
    t.put("noextension", "??");
    t.put("notes.txt", "text");
    t.put("UPPER.CSS", "p{}");

    App app;
    quick_options(app.options());
    app.static_files("/s", t.root());
    app.static_files(
        "/o", t.root(),
        {.mime = {{"unknownext", "application/x-custom"}, {"js", "application/x-js-mine"}}});
    start_app(app, 1);
    const std::uint16_t port = app.port();

    const std::vector<std::pair<std::string, std::string>> table = {
        {"/s/index.html", "text/html; charset=utf-8"},
        {"/s/style.css", "text/css; charset=utf-8"},
        {"/s/app.js", "text/javascript; charset=utf-8"},
        {"/s/data.json", "application/json; charset=utf-8"},
        {"/s/img.png", "image/png"},
        {"/s/blob.unknownext", "application/octet-stream"},
        {"/s/noextension", "application/octet-stream"},
        {"/s/notes.txt", "text/plain; charset=utf-8"},
        {"/s/UPPER.CSS", "text/css; charset=utf-8"},
        {"/o/blob.unknownext", "application/x-custom"},
        {"/o/app.js", "application/x-js-mine"},
        {"/o/style.css", "text/css; charset=utf-8"},  // not overridden
    };
    for (const auto& [path, type] : table) {
        auto r = raw_get(port, path);
        ASSERT_TRUE(r) << path;
        EXPECT_EQ(r->status, 200) << path;
        EXPECT_EQ(r->header("Content-Type"), type) << path;
        EXPECT_EQ(r->header_count("Content-Type"), 1u) << path;
    }
    auto png = raw_get(port, "/s/img.png");
    ASSERT_TRUE(png);
    EXPECT_EQ(png->body, std::string("\x89PNG\r\n\x1a\n", 8));
}

// =============================================================================================
// 3. Conditional requests (curl).
// =============================================================================================

constexpr std::int64_t kMtime = 1577836800;  // 2020-01-01 00:00:00 UTC
constexpr const char* kMtimeText = "Wed, 01 Jan 2020 00:00:00 GMT";
constexpr const char* kEarlier = "Tue, 31 Dec 2019 00:00:00 GMT";
constexpr const char* kLater = "Thu, 02 Jan 2020 00:00:00 GMT";

class StaticFilesConditional : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(t.ok());
        content = pattern_string(3000);
        t.put("page.txt", content);
        t.set_mtime("page.txt", kMtime);
        quick_options(app.options());
        add_basic_routes(app);
        app.static_files("/f", t.root());
        start_app(app, 1);
        port = app.port();
        Reply first = curl(http_url(port, "/f/page.txt"));
        ASSERT_EQ(first.status, 200) << first.raw;
        etag = first.header("etag");
    }
    Reply get(const std::vector<std::string>& headers, const std::string& options = {}) {
        return curl(http_url(port, "/f/page.txt"), headers, options);
    }

    TempTree t;
    App app;
    std::uint16_t port = 0;
    std::string content;
    std::string etag;
};

TEST_F(StaticFilesConditional, ValidatorsAreAStrongEtagAndLastModified) {
    Reply r = get({});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, content);
    ASSERT_GE(etag.size(), 3u) << etag;
    EXPECT_EQ(etag.front(), '"') << etag;
    EXPECT_EQ(etag.back(), '"') << etag;
    EXPECT_NE(etag.rfind("W/", 0), 0u) << "weak tag: " << etag;
    EXPECT_EQ(etag.find('"', 1), etag.size() - 1) << "quote inside the tag: " << etag;
    EXPECT_EQ(r.header("etag"), etag) << "ETag unstable between requests";
    EXPECT_EQ(r.header("last-modified"), kMtimeText);
    EXPECT_EQ(r.header("accept-ranges"), "bytes");
    EXPECT_EQ(r.header("content-length"), std::to_string(content.size()));
}

TEST_F(StaticFilesConditional, IfNoneMatch) {
    Reply match = get({"If-None-Match: " + etag});
    EXPECT_EQ(match.status, 304) << match.raw;
    EXPECT_TRUE(match.body.empty());
    EXPECT_EQ(match.header("etag"), etag);

    Reply star = get({"If-None-Match: *"});
    EXPECT_EQ(star.status, 304) << star.raw;
    EXPECT_TRUE(star.body.empty());

    // If-None-Match compares weakly: W/"x" matches "x".
    Reply weak = get({"If-None-Match: W/" + etag});
    EXPECT_EQ(weak.status, 304) << weak.raw;

    Reply in_list = get({"If-None-Match: \"other\", " + etag});
    EXPECT_EQ(in_list.status, 304) << in_list.raw;

    Reply other = get({"If-None-Match: \"other\""});
    EXPECT_EQ(other.status, 200);
    EXPECT_EQ(other.body, content);
}

TEST_F(StaticFilesConditional, IfMatch) {
    Reply mismatch = get({"If-Match: \"other\""});
    EXPECT_EQ(mismatch.status, 412) << mismatch.raw;
    EXPECT_NE(mismatch.body, content);

    Reply star = get({"If-Match: *"});
    EXPECT_EQ(star.status, 200);
    EXPECT_EQ(star.body, content);

    Reply match = get({"If-Match: " + etag});
    EXPECT_EQ(match.status, 200);
    EXPECT_EQ(match.body, content);

    // If-Match compares strongly: a weak tag never matches.
    Reply weak = get({"If-Match: W/" + etag});
    EXPECT_EQ(weak.status, 412) << weak.raw;
}

TEST_F(StaticFilesConditional, IfModifiedSinceAndIfUnmodifiedSince) {
    Reply equal = get({std::string("If-Modified-Since: ") + kMtimeText});
    EXPECT_EQ(equal.status, 304) << equal.raw;
    EXPECT_TRUE(equal.body.empty());
    Reply later = get({std::string("If-Modified-Since: ") + kLater});
    EXPECT_EQ(later.status, 304) << later.raw;
    Reply earlier = get({std::string("If-Modified-Since: ") + kEarlier});
    EXPECT_EQ(earlier.status, 200);
    EXPECT_EQ(earlier.body, content);
    Reply invalid = get({"If-Modified-Since: not a date"});
    EXPECT_EQ(invalid.status, 200);

    Reply unmod_earlier = get({std::string("If-Unmodified-Since: ") + kEarlier});
    EXPECT_EQ(unmod_earlier.status, 412) << unmod_earlier.raw;
    Reply unmod_equal = get({std::string("If-Unmodified-Since: ") + kMtimeText});
    EXPECT_EQ(unmod_equal.status, 200);
    EXPECT_EQ(unmod_equal.body, content);
}

TEST_F(StaticFilesConditional, IfNoneMatchTakesPrecedenceOverIfModifiedSince) {
    // A non-matching If-None-Match makes If-Modified-Since ignored (RFC 9110 13.1.3).
    Reply a = get({"If-None-Match: \"other\"", std::string("If-Modified-Since: ") + kMtimeText});
    EXPECT_EQ(a.status, 200) << a.raw;
    EXPECT_EQ(a.body, content);
    // A matching one answers 304 although the date says modified.
    Reply b = get({"If-None-Match: " + etag, std::string("If-Modified-Since: ") + kEarlier});
    EXPECT_EQ(b.status, 304) << b.raw;
    // If-Match is evaluated before If-Unmodified-Since (which is then ignored).
    Reply c = get({"If-Match: " + etag, std::string("If-Unmodified-Since: ") + kEarlier});
    EXPECT_EQ(c.status, 200) << c.raw;
    // A condition beats a Range: 304 rather than 206.
    Reply d = get({"If-None-Match: " + etag, "Range: bytes=0-9"});
    EXPECT_EQ(d.status, 304) << d.raw;
}

TEST_F(StaticFilesConditional, OtherMethodsGet405AndHeadGetsHeadersOnly) {
    for (const std::string method : {"POST", "PUT", "DELETE", "PATCH"}) {
        Reply r = get({}, "-X " + method + " -d x");
        EXPECT_EQ(r.status, 405) << method << "\n" << r.raw;
        EXPECT_TRUE(contains(r.header("allow"), "GET")) << method << ": " << r.header("allow");
        EXPECT_NE(r.body, content) << method;
    }
    Reply head = get({}, "-I");
    EXPECT_EQ(head.status, 200) << head.raw;
    EXPECT_EQ(head.header("content-length"), std::to_string(content.size()));
    EXPECT_EQ(head.header("etag"), etag);
    EXPECT_TRUE(head.body.empty());

    // On the wire: a HEAD followed by a GET on one connection; a body leaked after the HEAD
    // would be read as the second response.
    Client c = Client::tcp(port);
    ASSERT_TRUE(c.send("HEAD /f/page.txt HTTP/1.1\r\nHost: x\r\n\r\n" + get_request("/hello")));
    auto h = c.read_response(true);
    ASSERT_TRUE(h) << c.error();
    EXPECT_EQ(h->status, 200);
    EXPECT_EQ(h->header("Content-Length"), std::to_string(content.size()));
    auto g = c.read_response();
    ASSERT_TRUE(g) << c.error();
    EXPECT_EQ(g->status, 200);
    EXPECT_EQ(g->body, "Hello, World!");
    // A conditional HEAD: 304 without a body as well.
    ASSERT_TRUE(c.send("HEAD /f/page.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: " + etag +
                       "\r\n\r\n" + get_request("/hello")));
    auto h304 = c.read_response(true);
    ASSERT_TRUE(h304) << c.error();
    EXPECT_EQ(h304->status, 304);
    auto g2 = c.read_response();
    ASSERT_TRUE(g2) << c.error();
    EXPECT_EQ(g2->body, "Hello, World!");
}

// =============================================================================================
// 4. Ranges (curl).
// =============================================================================================

class StaticFilesRange : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(t.ok());
        content = pattern_string(1000);
        t.put("r.txt", content);
        t.put("empty.txt", "");
        quick_options(app.options());
        app.static_files("/f", t.root());
        start_app(app, 1);
        port = app.port();
    }
    Reply get(const std::vector<std::string>& headers, const std::string& path = "/f/r.txt") {
        return curl(http_url(port, path), headers);
    }
    // Checks a multipart response against the expected [first, last] ranges.
    void expect_multipart(const Reply& r,
                          const std::vector<std::pair<std::size_t, std::size_t>>& ranges) {
        ASSERT_EQ(r.status, 206) << r.raw;
        const std::string type = r.header("content-type");
        ASSERT_EQ(type.rfind("multipart/byteranges", 0), 0u) << type;
        const std::string boundary = boundary_of(type);
        ASSERT_FALSE(boundary.empty()) << type;
        EXPECT_FALSE(r.has("content-range")) << "Content-Range on a multipart response";
        EXPECT_EQ(r.header("content-length"), std::to_string(r.body.size()));
        std::vector<Part> parts;
        std::string why;
        ASSERT_TRUE(parse_multipart(r.body, boundary, parts, why)) << why << "\n" << r.body;
        ASSERT_EQ(parts.size(), ranges.size());
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const auto [first, last] = ranges[i];
            EXPECT_EQ(parts[i].content_range, "bytes " + std::to_string(first) + "-" +
                                                  std::to_string(last) + "/" +
                                                  std::to_string(content.size()))
                << "part " << i;
            EXPECT_EQ(parts[i].content_type, "text/plain; charset=utf-8") << "part " << i;
            EXPECT_EQ(parts[i].data, content.substr(first, last - first + 1)) << "part " << i;
        }
    }

    TempTree t;
    App app;
    std::uint16_t port = 0;
    std::string content;
};

TEST_F(StaticFilesRange, SingleRanges) {
    struct Case {
        std::string range;
        std::size_t first, last;
    };
    for (const Case& c : std::vector<Case>{{"bytes=0-9", 0, 9},
                                           {"bytes=-5", 995, 999},
                                           {"bytes=10-", 10, 999},
                                           {"bytes=990-5000", 990, 999},
                                           {"bytes=999-999", 999, 999},
                                           {"bytes=0-9,5-14", 0, 14},   // overlapping: coalesced
                                           {"bytes=0-4,5-9", 0, 9},     // adjacent: coalesced
                                           {"bytes=5-9,0-6", 0, 9}}) {  // backwards, overlapping
        Reply r = get({"Range: " + c.range});
        ASSERT_EQ(r.status, 206) << c.range << "\n" << r.raw;
        EXPECT_EQ(r.header("content-range"),
                  "bytes " + std::to_string(c.first) + "-" + std::to_string(c.last) + "/1000")
            << c.range;
        EXPECT_EQ(r.header("content-length"), std::to_string(c.last - c.first + 1)) << c.range;
        EXPECT_EQ(r.body, content.substr(c.first, c.last - c.first + 1)) << c.range;
        EXPECT_EQ(r.header("content-type"), "text/plain; charset=utf-8") << c.range;
    }
}

TEST_F(StaticFilesRange, MultipleRangesAreMultipartByteranges) {
    expect_multipart(get({"Range: bytes=0-1,5-9,100-199"}), {{0, 1}, {5, 9}, {100, 199}});
    // Overlapping specs are coalesced before the parts are made.
    expect_multipart(get({"Range: bytes=0-9,5-14,50-59,55-60"}), {{0, 14}, {50, 60}});
    expect_multipart(get({"Range: bytes=-10,0-0"}), {{0, 0}, {990, 999}});
    // Each response gets its own boundary.
    Reply a = get({"Range: bytes=0-1,5-9"});
    Reply b = get({"Range: bytes=0-1,5-9"});
    EXPECT_NE(boundary_of(a.header("content-type")), boundary_of(b.header("content-type")));
}

TEST_F(StaticFilesRange, TooManyRangesGetTheWholeFile) {
    const std::size_t max = app.options().limits.max_ranges;
    auto specs = [](std::size_t n) {
        std::string s = "bytes=";
        for (std::size_t i = 0; i < n; ++i) {
            if (i) s += ",";
            s += std::to_string(i * 10) + "-" + std::to_string(i * 10 + 2);
        }
        return s;
    };
    Reply over = get({"Range: " + specs(max + 1)});
    EXPECT_EQ(over.status, 200) << over.raw;
    EXPECT_EQ(over.body, content);
    EXPECT_FALSE(over.has("content-range"));

    std::vector<std::pair<std::size_t, std::size_t>> expected;
    for (std::size_t i = 0; i < max; ++i) expected.emplace_back(i * 10, i * 10 + 2);
    expect_multipart(get({"Range: " + specs(max)}), expected);
}

TEST_F(StaticFilesRange, UnsatisfiableAndMalformed) {
    for (const std::string range : {"bytes=1000-", "bytes=5000-6000", "bytes=1000-1000"}) {
        Reply r = get({"Range: " + range});
        EXPECT_EQ(r.status, 416) << range << "\n" << r.raw;
        EXPECT_EQ(r.header("content-range"), "bytes */1000") << range;
        EXPECT_NE(r.body, content) << range;
    }
    // Not a usable Range: ignored, the whole file.
    for (const std::string range : {"bytes=9-0", "items=0-9", "bytes=abc", "bytes="}) {
        Reply r = get({"Range: " + range});
        EXPECT_EQ(r.status, 200) << range << "\n" << r.raw;
        EXPECT_EQ(r.body, content) << range;
    }
}

TEST_F(StaticFilesRange, IfRange) {
    Reply first = get({});
    ASSERT_EQ(first.status, 200);
    const std::string etag = first.header("etag");
    const std::string last_modified = first.header("last-modified");

    Reply current = get({"Range: bytes=0-9", "If-Range: " + etag});
    EXPECT_EQ(current.status, 206) << current.raw;
    EXPECT_EQ(current.body, content.substr(0, 10));

    Reply old = get({"Range: bytes=0-9", "If-Range: \"an-old-etag\""});
    EXPECT_EQ(old.status, 200) << old.raw;
    EXPECT_EQ(old.body, content);

    Reply weak = get({"Range: bytes=0-9", "If-Range: W/" + etag});
    EXPECT_EQ(weak.status, 200) << "a weak tag never matches If-Range\n" << weak.raw;

    Reply date = get({"Range: bytes=0-9", "If-Range: " + last_modified});
    EXPECT_EQ(date.status, 206) << date.raw;
    Reply old_date = get({"Range: bytes=0-9", std::string("If-Range: ") + kEarlier});
    EXPECT_EQ(old_date.status, 200) << old_date.raw;
}

TEST_F(StaticFilesRange, EmptyFile) {
    Reply whole = get({}, "/f/empty.txt");
    EXPECT_EQ(whole.status, 200) << whole.raw;
    EXPECT_EQ(whole.header("content-length"), "0");
    EXPECT_TRUE(whole.body.empty());
    for (const std::string range : {"bytes=0-", "bytes=0-0", "bytes=-5"}) {
        Reply r = get({"Range: " + range}, "/f/empty.txt");
        EXPECT_EQ(r.status, 416) << range << "\n" << r.raw;
        EXPECT_EQ(r.header("content-range"), "bytes */0") << range;
    }
}

// =============================================================================================
// 5. Precompressed siblings and Cache-Control.
// =============================================================================================

class StaticFilesPrecompressed : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!have("gzip") || !have("brotli") || !have("zstd"))
            GTEST_SKIP() << "gzip, brotli and zstd CLIs needed";
        ASSERT_TRUE(t.ok());
        for (int i = 0; i < 300; ++i)
            js +=
                "function f" + std::to_string(i) + "() { return " + std::to_string(i * 7) + "; }\n";
        t.put("a.js", js);
        t.put("app.3f2a9c1b.js", js);
        t.put("plain.js", js);  // no siblings
        ASSERT_EQ(run_command("cd " + sh_quote(t.root()) +
                              " && gzip -k a.js && brotli -k a.js && zstd -q -k a.js && "
                              "gzip -k app.3f2a9c1b.js && echo ok")
                      .out,
                  "ok\n");
        quick_options(app.options());
        app.static_files("/assets", t.root(),
                         {.cache_control = "public, max-age=60", .immutable = files::hashed_name});
        app.static_files("/bare", t.root());
        start_app(app, 1);
        port = app.port();
    }

    // GET /assets/a.js with `accept` (empty: no Accept-Encoding) answers with `coding` (empty:
    // none) and a body that decodes to the original; returns the ETag.
    std::string expect_coding(const std::string& accept, const std::string& coding) {
        static const std::map<std::string, std::string> tool = {
            {"gzip", "gzip"}, {"br", "brotli"}, {"zstd", "zstd"}};
        std::vector<std::string> headers;
        if (!accept.empty()) headers.push_back("Accept-Encoding: " + accept);
        Reply r = curl(http_url(port, "/assets/a.js"), headers);
        EXPECT_EQ(r.status, 200) << accept << "\n" << r.raw;
        EXPECT_EQ(r.header("content-encoding"), coding) << "Accept-Encoding: " << accept;
        EXPECT_TRUE(contains(r.header("vary"), "Accept-Encoding")) << accept;
        EXPECT_EQ(r.header("content-type"), "text/javascript; charset=utf-8") << accept;
        EXPECT_EQ(r.header("cache-control"), "public, max-age=60") << accept;
        EXPECT_EQ(r.header("content-length"), std::to_string(r.body.size())) << accept;
        const std::string sent = r.header("content-encoding");
        if (sent.empty()) {
            EXPECT_TRUE(r.body == js) << accept << ": identity body differs";
        } else if (tool.count(sent)) {
            EXPECT_TRUE(r.body != js) << accept;
            EXPECT_TRUE(decode(t, tool.at(sent), r.body) == js)
                << accept << ": " << sent << " body does not decode to the file";
        } else {
            ADD_FAILURE() << accept << ": unexpected Content-Encoding " << sent;
        }
        return r.header("etag");
    }

    TempTree t;
    App app;
    std::uint16_t port = 0;
    std::string js;
};

TEST_F(StaticFilesPrecompressed, AcceptEncodingPicksTheSibling) {
    struct Case {
        std::string accept;
        std::string coding;
    };
    std::map<std::string, std::string> etags;
    for (const Case& c : std::vector<Case>{{"", ""},
                                           {"gzip", "gzip"},
                                           {"zstd", "zstd"},
                                           {"br", "br"},
                                           {"gzip, zstd;q=0.9", "gzip"},
                                           {"gzip;q=1, br;q=0.5", "gzip"},
                                           {"identity", ""},
                                           {"gzip;q=0", ""},
                                           {"deflate", ""}})
        etags[c.coding.empty() ? "identity" : c.coding] = expect_coding(c.accept, c.coding);
    // Each variant has its own entity-tag (a cache must not mix them).
    EXPECT_EQ(etags.size(), 4u);
    for (const auto& [a, ea] : etags)
        for (const auto& [b, eb] : etags)
            if (a != b) {
                EXPECT_NE(ea, eb) << a << " and " << b << " share an ETag";
            }

    // When the client's q-values tie, the server's order (br, zstd, gzip) decides.
    Reply tie = curl(http_url(port, "/assets/a.js"), {"Accept-Encoding: gzip, zstd, br"});
    EXPECT_EQ(tie.header("content-encoding"), "br");
    // A file without siblings is sent as it is, still with Vary.
    Reply plain = curl(http_url(port, "/assets/plain.js"), {"Accept-Encoding: gzip, br, zstd"});
    EXPECT_EQ(plain.status, 200);
    EXPECT_FALSE(plain.has("content-encoding"));
    EXPECT_TRUE(plain.body == js);
    EXPECT_TRUE(contains(plain.header("vary"), "Accept-Encoding"));

    // A hashed name is immutable; other files keep the mount's Cache-Control; another mount
    // without one sends none.
    Reply hashed = curl(http_url(port, "/assets/app.3f2a9c1b.js"), {"Accept-Encoding: gzip"});
    EXPECT_EQ(hashed.status, 200);
    EXPECT_EQ(hashed.header("cache-control"), std::string(kImmutableCacheControl));
    EXPECT_EQ(hashed.header("content-encoding"), "gzip");
    EXPECT_TRUE(decode(t, "gzip", hashed.body) == js);
    Reply bare = curl(http_url(port, "/bare/a.js"));
    EXPECT_EQ(bare.status, 200);
    EXPECT_FALSE(bare.has("cache-control")) << bare.header("cache-control");
    Reply bare_hashed = curl(http_url(port, "/bare/app.3f2a9c1b.js"));
    EXPECT_FALSE(bare_hashed.has("cache-control")) << bare_hashed.header("cache-control");

    // A range and a condition apply to the variant sent (its bytes, its tag).
    const std::string gz_file = read_file(t.in_root("a.js.gz"));
    Reply gz_range =
        curl(http_url(port, "/assets/a.js"), {"Accept-Encoding: gzip", "Range: bytes=0-9"});
    EXPECT_EQ(gz_range.status, 206) << gz_range.raw;
    EXPECT_EQ(gz_range.header("content-encoding"), "gzip");
    EXPECT_EQ(gz_range.header("content-range"), "bytes 0-9/" + std::to_string(gz_file.size()));
    EXPECT_EQ(gz_range.body, gz_file.substr(0, 10));
    Reply gz_304 = curl(http_url(port, "/assets/a.js"),
                        {"Accept-Encoding: gzip", "If-None-Match: " + etags["gzip"]});
    EXPECT_EQ(gz_304.status, 304) << gz_304.raw;
    Reply br_200 = curl(http_url(port, "/assets/a.js"),
                        {"Accept-Encoding: br", "If-None-Match: " + etags["gzip"]});
    EXPECT_EQ(br_200.status, 200) << "the gzip variant's tag matched the br variant";

    // The siblings themselves are ordinary files too.
    Reply gz = curl(http_url(port, "/assets/a.js.gz"));
    EXPECT_EQ(gz.status, 200);
    EXPECT_TRUE(decode(t, "gzip", gz.body) == js);
}

// Regression: a client listing codings only with q-values below 1 (identity unnamed) once got
// the uncompressed file, because an unlisted identity was ranked at q=1 against the siblings.
TEST_F(StaticFilesPrecompressed, QValuesBelowOneStillPickTheBestSibling) {
    expect_coding("br;q=0.5, gzip;q=0.8", "gzip");
    expect_coding("zstd;q=0.3", "zstd");
    // An explicit identity with a lower q-value than the sibling's.
    expect_coding("gzip;q=0.8, identity;q=0.5", "gzip");
    // identity named with a higher q-value than any sibling keeps the original.
    expect_coding("gzip;q=0.5, identity;q=0.9", "");
}

// =============================================================================================
// 6. Large files, sendfile, slow readers, pipelining.
// =============================================================================================

// "/f<n>.bin" (built by appending: GCC 12 at -O3 misreads `"f" + std::to_string(n)`).
std::string sized_name(std::size_t n) {
    std::string s = "/f";
    s.append(std::to_string(n)).append(".bin");
    return s;
}

TEST(StaticFilesSendfile, SizesAroundTheThresholds) {
    TempTree t;
    ASSERT_TRUE(t.ok());
    const std::vector<std::size_t> sizes = {
        0, 1, 16 * kKiB - 1, 16 * kKiB, 16 * kKiB + 1, 64 * kKiB, kMiB + 3};
    for (std::size_t n : sizes) t.put(sized_name(n).substr(1), pattern_string(n));
    App app;
    quick_options(app.options());
    app.static_files("/", t.root());
    start_app(app, 1);
    Client c = Client::tcp(app.port());
    c.set_timeout(Ms{10000});
    // One connection for all of them: each body must end exactly where the next head starts.
    for (std::size_t n : sizes) {
        ASSERT_TRUE(c.send(get_request(sized_name(n))));
        auto r = c.read_response();
        ASSERT_TRUE(r) << n << ": " << c.error();
        EXPECT_EQ(r->status, 200) << n;
        EXPECT_EQ(r->header("Content-Length"), std::to_string(n));
        EXPECT_FALSE(r->chunked);
        EXPECT_EQ(r->body.size(), n);
        EXPECT_TRUE(r->body == pattern_string(n)) << "body of " << n << " bytes differs";
    }
    // HTTP/1.0: the same bytes, then the server closes.
    {
        Client old = Client::tcp(app.port());
        old.set_timeout(Ms{10000});
        ASSERT_TRUE(old.send("GET /f1048579.bin HTTP/1.0\r\n\r\n"));
        auto r10 = old.read_response();
        ASSERT_TRUE(r10) << old.error();
        EXPECT_EQ(r10->status, 200);
        EXPECT_TRUE(r10->body == pattern_string(kMiB + 3));
        EXPECT_TRUE(old.closed_by_peer());
    }
    // Ranges of a large file (sendfile from an offset).
    ASSERT_TRUE(c.send(get_request("/f1048579.bin", "Range: bytes=1000000-1048578\r\n")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 206);
    EXPECT_TRUE(r->body == pattern_string(kMiB + 3).substr(1000000));
    ASSERT_TRUE(c.send(get_request("/f1048579.bin", "Range: bytes=5-9,1048570-\r\n")));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 206);
    std::vector<Part> parts;
    std::string why;
    ASSERT_TRUE(parse_multipart(r->body, boundary_of(r->header("Content-Type")), parts, why))
        << why;
    ASSERT_EQ(parts.size(), 2u);
    const std::string big = pattern_string(kMiB + 3);
    EXPECT_EQ(parts[0].data, big.substr(5, 5));
    EXPECT_EQ(parts[1].data, big.substr(1048570));
    EXPECT_EQ(parts[1].content_range, "bytes 1048570-1048578/1048579");
}

TEST(StaticFilesSendfile, SparseGigabyteWithCurl) {
    TempTree t;
    ASSERT_TRUE(t.ok());
    constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
    t.sparse("huge.bin", kGiB);
    App app;
    quick_options(app.options());
    app.static_files("/", t.root());
    start_app(app, 1);
    const auto t0 = SteadyClock::now();
    Ran r = run_command("timeout 50 curl -s -o /dev/null -w '%{http_code} %{size_download}' " +
                        sh_quote(http_url(app.port(), "/huge.bin")));
    EXPECT_EQ(r.out, "200 1073741824") << "after " << ms_since(t0) << " ms";
    // The last bytes through a range: zeros, at an offset beyond 2^30 - 8.
    Reply tail = curl(http_url(app.port(), "/huge.bin"), {"Range: bytes=-8"});
    EXPECT_EQ(tail.status, 206);
    EXPECT_EQ(tail.header("content-range"), "bytes 1073741816-1073741823/1073741824");
    EXPECT_EQ(tail.body, std::string(8, '\0'));
}

// Waits up to `ms` for bytes, then reads at most `n`: >0 bytes, 0 end of stream, -1 timeout or
// error.
ssize_t recv_within(int fd, char* buf, std::size_t n, int ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return -1;
    return ::recv(fd, buf, n, 0);
}

TEST(StaticFilesSendfile, SlowReaderDoesNotHoldUpAnotherClient) {
    TempTree t;
    ASSERT_TRUE(t.ok());
    constexpr std::size_t kSize = 32 * kMiB;
    constexpr std::size_t kChunk = 64 * kKiB;
    t.put("big.bin", pattern_string(kSize));
    t.put("small.txt", "small and quick\n");
    App app;
    quick_options(app.options());
    app.static_files("/", t.root());
    start_app(app, 1);  // one loop: the slow reader and the other client share it
    const std::uint16_t port = app.port();

    const int fd = connect_loopback(port, 16 * kKiB);
    ASSERT_GE(fd, 0);
    Client slow(fd, Ms{10000});
    ASSERT_TRUE(slow.send(get_request("/big.bin")));
    std::vector<char> buf(kChunk);
    std::string head;
    while (head.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = recv_within(fd, buf.data(), buf.size(), 5000);
        ASSERT_GT(n, 0) << "no response head";
        head.append(buf.data(), static_cast<std::size_t>(n));
    }
    const std::size_t head_end = head.find("\r\n\r\n") + 4;
    const std::string early = head.substr(head_end);
    head.resize(head_end);
    ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
    EXPECT_TRUE(icontains(head, "\r\nContent-Length: 33554432\r\n")) << head;

    std::uint64_t got = 0;
    std::uint64_t first_bad = kSize;
    auto check = [&](const char* p, std::size_t n) {
        for (std::size_t i = 0; i < n && first_bad == kSize; ++i)
            if (p[i] != pattern(got + i)) first_bad = got + i;
        got += n;
    };
    ASSERT_LE(early.size(), kSize);
    check(early.data(), early.size());

    const auto deadline = SteadyClock::now() + std::chrono::seconds(40);
    std::size_t chunks = 0;
    long long worst_ms = 0;
    int probes = 0;
    while (got < kSize && SteadyClock::now() < deadline) {
        std::size_t in_chunk = 0;
        while (in_chunk < kChunk && got < kSize) {
            const std::size_t want = std::min<std::uint64_t>(kChunk - in_chunk, kSize - got);
            const ssize_t n = recv_within(fd, buf.data(), want, 5000);
            ASSERT_GT(n, 0) << "stalled after " << got << " bytes";
            check(buf.data(), static_cast<std::size_t>(n));
            in_chunk += static_cast<std::size_t>(n);
        }
        if (chunks++ % 64 == 3) {
            // Another client meanwhile: answered at once, not after the 32 MiB.
            const auto t0 = SteadyClock::now();
            auto r = raw_get(port, "/small.txt");
            worst_ms = std::max(worst_ms, ms_since(t0));
            ASSERT_TRUE(r) << "other client not served while the slow reader reads";
            EXPECT_EQ(r->status, 200);
            EXPECT_EQ(r->body, "small and quick\n");
            ++probes;
        }
        std::this_thread::sleep_for(2ms);
    }
    EXPECT_EQ(got, kSize);
    EXPECT_EQ(first_bad, kSize) << "first wrong byte at offset " << first_bad;
    EXPECT_GE(probes, 4);
    EXPECT_LT(worst_ms, 1000) << "another client waited " << worst_ms << " ms";
    // The slow connection is still usable.
    ASSERT_TRUE(slow.send(get_request("/small.txt")));
    auto again = slow.read_response();
    ASSERT_TRUE(again) << slow.error();
    EXPECT_EQ(again->body, "small and quick\n");
}

TEST(StaticFilesSendfile, PipelinedBigSmallBigArriveCompleteAndInOrder) {
    TempTree t;
    ASSERT_TRUE(t.ok());
    const std::string big = pattern_string(2 * kMiB + 5);
    std::string big2(3 * kMiB + 1, '\0');
    for (std::size_t i = 0; i < big2.size(); ++i) big2[i] = pattern(i * 3 + 1);
    t.put("big.bin", big);
    t.put("big2.bin", big2);
    t.put("small.txt", "between the big ones\n");
    App app;
    quick_options(app.options());
    app.static_files("/", t.root());
    start_app(app, 1);
    Client c = Client::tcp(app.port());
    c.set_timeout(Ms{15000});
    ASSERT_TRUE(c.send(get_request("/big.bin") + get_request("/small.txt") +
                       get_request("/big2.bin") +
                       get_request("/small.txt", "Range: bytes=8-10\r\n") +
                       get_request("/big.bin", "Range: bytes=0-3,2097150-\r\n")));
    auto r1 = c.read_response();
    ASSERT_TRUE(r1) << c.error();
    EXPECT_EQ(r1->status, 200);
    EXPECT_TRUE(r1->body == big) << "first big body differs (" << r1->body.size() << " bytes)";
    auto r2 = c.read_response();
    ASSERT_TRUE(r2) << c.error();
    EXPECT_EQ(r2->body, "between the big ones\n");
    auto r3 = c.read_response();
    ASSERT_TRUE(r3) << c.error();
    EXPECT_TRUE(r3->body == big2) << "second big body differs (" << r3->body.size() << " bytes)";
    auto r4 = c.read_response();
    ASSERT_TRUE(r4) << c.error();
    EXPECT_EQ(r4->status, 206);
    EXPECT_EQ(r4->body, "the");
    auto r5 = c.read_response();
    ASSERT_TRUE(r5) << c.error();
    EXPECT_EQ(r5->status, 206);
    std::vector<Part> parts;
    std::string why;
    ASSERT_TRUE(parse_multipart(r5->body, boundary_of(r5->header("Content-Type")), parts, why))
        << why;
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].data, big.substr(0, 4));
    EXPECT_EQ(parts[1].data, big.substr(2097150));
    EXPECT_TRUE(c.pending().empty()) << c.pending().size() << " stray bytes after the responses";
}

// =============================================================================================
// 7. A file changing between requests.
// =============================================================================================

TEST(StaticFilesChange, AChangedFileIsServedAgainWithANewEtag) {
    FileCacheOptionsGuard restore;
    files::FileCacheOptions o = files::FileCache::options();
    o.check_interval = Ms{0};
    files::FileCache::configure(o);

    TempTree t;
    ASSERT_TRUE(t.ok());
    t.put("v.txt", "version one\n");
    t.put("same.txt", "AAAA");
    t.set_mtime("same.txt", kMtime);
    t.put("big.txt", pattern_string(20000));  // above content_max: not kept in memory
    App app;
    quick_options(app.options());
    app.static_files("/", t.root());
    start_app(app, 1);
    const std::uint16_t port = app.port();

    auto r1 = raw_get(port, "/v.txt");
    ASSERT_TRUE(r1);
    EXPECT_EQ(r1->body, "version one\n");
    const std::string etag1 = r1->header("ETag");

    // Overwritten in place with another size.
    t.put("v.txt", "version two, which is longer\n");
    auto r2 = raw_get(port, "/v.txt");
    ASSERT_TRUE(r2);
    EXPECT_EQ(r2->status, 200);
    EXPECT_EQ(r2->body, "version two, which is longer\n");
    EXPECT_EQ(r2->header("Content-Length"), "29");
    const std::string etag2 = r2->header("ETag");
    EXPECT_NE(etag2, etag1);
    // The old tag no longer matches; the new one does.
    auto r3 = raw_get(port, "/v.txt", "If-None-Match: " + etag1 + "\r\n");
    ASSERT_TRUE(r3);
    EXPECT_EQ(r3->status, 200);
    EXPECT_EQ(r3->body, "version two, which is longer\n");
    auto r4 = raw_get(port, "/v.txt", "If-None-Match: " + etag2 + "\r\n");
    ASSERT_TRUE(r4);
    EXPECT_EQ(r4->status, 304);

    // Replaced by a rename (a new inode).
    t.put("v.tmp", "v3\n");
    ASSERT_EQ(::rename(t.in_root("v.tmp").c_str(), t.in_root("v.txt").c_str()), 0);
    auto r5 = raw_get(port, "/v.txt");
    ASSERT_TRUE(r5);
    EXPECT_EQ(r5->body, "v3\n");
    EXPECT_NE(r5->header("ETag"), etag2);

    // Same size, another modification time.
    auto s1 = raw_get(port, "/same.txt");
    ASSERT_TRUE(s1);
    EXPECT_EQ(s1->body, "AAAA");
    t.put("same.txt", "BBBB");
    t.set_mtime("same.txt", kMtime + 10);
    auto s2 = raw_get(port, "/same.txt");
    ASSERT_TRUE(s2);
    EXPECT_EQ(s2->body, "BBBB");
    EXPECT_NE(s2->header("ETag"), s1->header("ETag"));
    EXPECT_EQ(s2->header("Last-Modified"), "Wed, 01 Jan 2020 00:00:10 GMT");

    // A large file (sent from the descriptor) changing size.
    auto b1 = raw_get(port, "/big.txt");
    ASSERT_TRUE(b1);
    EXPECT_EQ(b1->body.size(), 20000u);
    t.put("big.txt", std::string(30000, 'z'));
    auto b2 = raw_get(port, "/big.txt");
    ASSERT_TRUE(b2);
    EXPECT_EQ(b2->body, std::string(30000, 'z'));

    // A miss is not remembered past the interval: a file created after a 404 is served.
    auto n1 = raw_get(port, "/new.txt");
    ASSERT_TRUE(n1);
    EXPECT_EQ(n1->status, 404);
    t.put("new.txt", "new\n");
    auto n2 = raw_get(port, "/new.txt");
    ASSERT_TRUE(n2);
    EXPECT_EQ(n2->status, 200);
    EXPECT_EQ(n2->body, "new\n");
    // And a deleted file is gone.
    ASSERT_EQ(::unlink(t.in_root("new.txt").c_str()), 0);
    auto n3 = raw_get(port, "/new.txt");
    ASSERT_TRUE(n3);
    EXPECT_EQ(n3->status, 404);
}

// =============================================================================================
// 8. Response::send_file from a handler.
// =============================================================================================

TEST(StaticFilesHandler, SendFileDownloadNameAndMissingFile) {
    TempTree t;
    ASSERT_TRUE(t.ok());
    const std::string content = pattern_string(5000);
    const std::string path = t.write("files/report.bin", content);
    const std::string missing = t.at("files/nope.pdf");
    const std::string dir = t.at("files");
    App app;
    quick_options(app.options());
    app.get("/download", [path] { return Response::file(path, {.download_name = "résumé.pdf"}); });
    app.get("/attach", [path] { return Response::file(path, {.attachment = true}); });
    app.get("/typed", [path] { return Response::file(path, {.content_type = "application/pdf"}); });
    app.get("/missing", [missing] { return Response::file(missing); });
    app.get("/dir", [dir] { return Response::file(dir); });
    start_app(app, 1);
    const std::uint16_t port = app.port();

    auto r = raw_get(port, "/download");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->body == content);
    const std::string cd = r->header("Content-Disposition");
    EXPECT_EQ(cd.rfind("attachment", 0), 0u) << cd;
    EXPECT_TRUE(contains(cd, "filename*=UTF-8''r%C3%A9sum%C3%A9.pdf")) << cd;
    EXPECT_TRUE(contains(cd, "filename=\"")) << cd;
    for (unsigned char c : cd) EXPECT_LT(c, 0x80) << "raw non-ASCII in " << cd;
    EXPECT_FALSE(r->header("ETag").empty());
    EXPECT_EQ(r->header("Accept-Ranges"), "bytes");

    auto attach = raw_get(port, "/attach");
    ASSERT_TRUE(attach);
    EXPECT_EQ(attach->header("Content-Disposition"), "attachment; filename=\"report.bin\"");
    auto typed = raw_get(port, "/typed");
    ASSERT_TRUE(typed);
    EXPECT_EQ(typed->header("Content-Type"), "application/pdf");
    EXPECT_FALSE(typed->has_header("Content-Disposition"));

    // The server applies ranges and conditions to a handler's file as well.
    auto part = raw_get(port, "/download", "Range: bytes=4990-\r\n");
    ASSERT_TRUE(part);
    EXPECT_EQ(part->status, 206);
    EXPECT_EQ(part->body, content.substr(4990));
    auto not_modified = raw_get(port, "/download", "If-None-Match: " + r->header("ETag") + "\r\n");
    ASSERT_TRUE(not_modified);
    EXPECT_EQ(not_modified->status, 304);

    auto miss = raw_get(port, "/missing");
    ASSERT_TRUE(miss);
    EXPECT_EQ(miss->status, 404);
    EXPECT_FALSE(miss->has_header("Content-Disposition"));
    auto d = raw_get(port, "/dir");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->status, 404);
}

// =============================================================================================
// 9. HTTP/2 (h2c and h2 over TLS) and HTTP/1.1 over TLS.
// =============================================================================================

class StaticFilesProtocolBase : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!have_curl_h2()) GTEST_SKIP() << "curl with HTTP/2 support not installed";
        ASSERT_TRUE(t.ok());
        big = pattern_string(kMiB + 3);
        for (int i = 0; i < 200; ++i) js += "console.log(" + std::to_string(i) + ");\n";
        t.put("big.bin", big);
        t.put("empty.txt", "");
        t.put("a.js", js);
        ASSERT_EQ(run_command("cd " + sh_quote(t.root()) + " && gzip -k a.js && echo ok").out,
                  "ok\n");
        quick_options(app.options());
        add_basic_routes(app);
        app.static_files("/s", t.root());
        app.listen("127.0.0.1:0");
        TlsOptions tls;
        tls.cert = test::test_certs().server_ec_cert;
        tls.key = test::test_certs().server_ec_key;
        app.listen_tls("127.0.0.1:0", std::move(tls));
        app.start(2);
    }

    // The file checks through curl with `options` against `base` ("http://127.0.0.1:N").
    void check(const std::string& base, const std::string& options, const std::string& version) {
        Reply whole = curl(base + "/s/big.bin", {}, options);
        ASSERT_EQ(whole.status, 200) << whole.raw;
        EXPECT_EQ(whole.version, version);
        EXPECT_EQ(whole.body.size(), big.size());
        EXPECT_TRUE(whole.body == big) << "1 MiB + 3 body differs";
        const std::string etag = whole.header("etag");
        EXPECT_FALSE(etag.empty());

        Reply range = curl(base + "/s/big.bin", {"Range: bytes=1048000-1048100"}, options);
        EXPECT_EQ(range.status, 206) << range.raw;
        EXPECT_EQ(range.header("content-range"), "bytes 1048000-1048100/1048579");
        EXPECT_EQ(range.body, big.substr(1048000, 101));

        Reply multi = curl(base + "/s/big.bin", {"Range: bytes=0-9,-10"}, options);
        EXPECT_EQ(multi.status, 206) << multi.raw;
        std::vector<Part> parts;
        std::string why;
        EXPECT_TRUE(
            parse_multipart(multi.body, boundary_of(multi.header("content-type")), parts, why))
            << why;
        if (parts.size() == 2) {
            EXPECT_EQ(parts[0].data, big.substr(0, 10));
            EXPECT_EQ(parts[1].data, big.substr(big.size() - 10));
        } else {
            ADD_FAILURE() << parts.size() << " parts";
        }

        Reply not_modified = curl(base + "/s/big.bin", {"If-None-Match: " + etag}, options);
        EXPECT_EQ(not_modified.status, 304) << not_modified.raw;
        EXPECT_TRUE(not_modified.body.empty());
        EXPECT_EQ(not_modified.header("etag"), etag);

        Reply gz = curl(base + "/s/a.js", {"Accept-Encoding: gzip"}, options);
        EXPECT_EQ(gz.status, 200) << gz.raw;
        EXPECT_EQ(gz.header("content-encoding"), "gzip");
        EXPECT_TRUE(contains(gz.header("vary"), "Accept-Encoding"));
        EXPECT_EQ(decode(t, "gzip", gz.body), js);

        Reply head = curl(base + "/s/big.bin", {}, options + " -I");
        EXPECT_EQ(head.status, 200) << head.raw;
        EXPECT_EQ(head.header("content-length"), std::to_string(big.size()));
        EXPECT_TRUE(head.body.empty());

        Reply missing = curl(base + "/s/nope.bin", {}, options);
        EXPECT_EQ(missing.status, 404);

        Reply empty = curl(base + "/s/empty.txt", {}, options);
        EXPECT_EQ(empty.status, 200) << empty.raw;
        EXPECT_EQ(empty.header("content-length"), "0");
        EXPECT_TRUE(empty.body.empty());
        Reply unsatisfiable = curl(base + "/s/big.bin", {"Range: bytes=2000000-"}, options);
        EXPECT_EQ(unsatisfiable.status, 416) << unsatisfiable.raw;
        EXPECT_EQ(unsatisfiable.header("content-range"), "bytes */1048579");
    }

    // curl fetching `url` at `rate` bytes/s into `out` on a thread; `result` gets its exit
    // status and "<status> <bytes>" once the thread is joined.
    static std::thread slow_download(const std::string& url, const std::string& rate,
                                     const std::string& options, const std::string& out,
                                     Ran& result) {
        return std::thread([url, rate, options, out, &result] {
            result =
                run_command("timeout 30 curl -s --limit-rate " + rate + " -o " + sh_quote(out) +
                            " -w '%{http_code} %{size_download}' " + options + " " + sh_quote(url));
        });
    }

    // An 8 MiB file to a client reading at 8 MB/s (so the server waits on a full socket or
    // flow-control window many times) arrives whole, while other requests are answered.
    void check_rate_limited(const std::string& base, const std::string& options) {
        const std::string data = pattern_string(8 * kMiB);
        t.put("big8.bin", data);
        const std::string out = t.at("big8.out");
        Ran result;
        std::thread slow = slow_download(base + "/s/big8.bin", "8M", options, out, result);
        std::this_thread::sleep_for(100ms);
        long long worst_ms = 0;
        for (int i = 0; i < 5; ++i) {
            const auto t0 = SteadyClock::now();
            Reply r = curl(base + "/s/a.js", {}, options);
            worst_ms = std::max(worst_ms, ms_since(t0));
            EXPECT_EQ(r.status, 200) << r.raw;
            EXPECT_TRUE(r.body == js);
            std::this_thread::sleep_for(50ms);
        }
        slow.join();
        EXPECT_EQ(result.out, "200 8388608");
        EXPECT_TRUE(read_file(out) == data) << "8 MiB body differs";
        EXPECT_LT(worst_ms, 2000) << "another request waited " << worst_ms << " ms";
    }

    // A file cut short while it is sent (sendfile on plain HTTP/1.1, pread under TLS and in
    // HTTP/2 DATA frames): the announced length is a lie now, so the response is abandoned
    // (HTTP/1.1 closes the connection, HTTP/2 resets the stream), never padded or hung, and
    // the server goes on answering.
    void check_truncated(const std::string& base, const std::string& options) {
        const std::size_t size = 32 * kMiB;
        t.put("cut.bin", pattern_string(size));
        const std::string out = t.at("cut.out");
        Ran result;
        std::thread slow = slow_download(base + "/s/cut.bin", "4M", options, out, result);
        std::this_thread::sleep_for(400ms);
        ASSERT_EQ(::truncate(t.in_root("cut.bin").c_str(), static_cast<off_t>(kMiB)), 0);
        slow.join();
        EXPECT_NE(result.status, 0) << "curl saw a complete response: " << result.out;
        EXPECT_NE(result.status, 124) << "the transfer hung until the timeout";
        EXPECT_TRUE(result.out.rfind("200 ", 0) == 0) << result.out;
        const std::size_t got = read_file(out).size();
        EXPECT_LT(got, size) << "the body was padded to the announced length";
        Reply r = curl(base + "/s/a.js", {}, options);
        EXPECT_EQ(r.status, 200) << r.raw;
        EXPECT_TRUE(r.body == js);
        expect_server_sound(app);
    }

    TempTree t;
    App app;
    std::string big;
    std::string js;
};

class StaticFilesHttp1 : public StaticFilesProtocolBase {};

TEST_F(StaticFilesHttp1, AFileCutShortWhileSentClosesTheConnection) {
    check_truncated("http://127.0.0.1:" + std::to_string(app.port(0)), "--http1.1");
}

class StaticFilesH2 : public StaticFilesProtocolBase {};
class StaticFilesTls : public StaticFilesProtocolBase {};

TEST_F(StaticFilesH2, PriorKnowledgeCleartext) {
    check("http://127.0.0.1:" + std::to_string(app.port(0)), "--http2-prior-knowledge", "HTTP/2");
    expect_server_sound(app);
}

TEST_F(StaticFilesH2, RateLimitedLargeDownload) {
    check_rate_limited("http://127.0.0.1:" + std::to_string(app.port(0)),
                       "--http2-prior-knowledge");
}

TEST_F(StaticFilesTls, RateLimitedLargeDownloadHttp2) {
    check_rate_limited("https://127.0.0.1:" + std::to_string(app.port(1)), "-k --http2");
}

TEST_F(StaticFilesH2, AFileCutShortWhileSentResetsTheStream) {
    check_truncated("http://127.0.0.1:" + std::to_string(app.port(0)), "--http2-prior-knowledge");
}

TEST_F(StaticFilesTls, AFileCutShortWhileSentEndsTheResponseHttp11AndHttp2) {
    check_truncated("https://127.0.0.1:" + std::to_string(app.port(1)), "-k --http1.1");
    check_truncated("https://127.0.0.1:" + std::to_string(app.port(1)), "-k --http2");
}

TEST_F(StaticFilesTls, RateLimitedLargeDownloadHttp11) {
    check_rate_limited("https://127.0.0.1:" + std::to_string(app.port(1)), "-k --http1.1");
}

TEST_F(StaticFilesTls, Http2OverTls) {
    check("https://127.0.0.1:" + std::to_string(app.port(1)), "-k --http2", "HTTP/2");
    expect_server_sound(app);
}

TEST_F(StaticFilesTls, Http11OverTls) {
    check("https://127.0.0.1:" + std::to_string(app.port(1)), "-k --http1.1", "HTTP/1.1");
    expect_server_sound(app);
}

}  // namespace
}  // namespace vela::e2e
