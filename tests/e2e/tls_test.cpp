// End-to-end TLS: a vela App started in-process on loopback, driven by real clients (curl,
// openssl s_client, Python's ssl module and the hello example), so what is checked is what a
// browser or a load balancer would see, not what vela's own TLS code believes it sent.
//
// Every external program runs with a deadline (Child kills it), so a server that stalls makes
// a test fail rather than hang. Certificates come from tests/tls/make-certs (test_certs()).

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "e2e/client.hpp"
#include "e2e/example_process.hpp"
#include "e2e/sound.hpp"
#include "tls/certs.hpp"
#include "vela/tls/context.hpp"

namespace vela::e2e {
namespace {

namespace fs = std::filesystem;

const test::TestCerts& certs() { return test::test_certs(); }

std::size_t count_of(std::string_view hay, std::string_view needle) {
    std::size_t n = 0;
    for (std::size_t p = hay.find(needle); p != std::string_view::npos;
         p = hay.find(needle, p + needle.size()))
        ++n;
    return n;
}

bool contains(std::string_view hay, std::string_view needle) {
    return hay.find(needle) != std::string_view::npos;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(const std::string& path, std::string_view data) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// A directory removed when the test ends (reload tests rewrite certificate files in it).
class TempDir {
  public:
    TempDir() {
        const char* tmp = std::getenv("TMPDIR");
        std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/vela-tls-e2e-XXXXXX";
        if (::mkdtemp(templ.data()) != nullptr) path_ = templ;
    }
    ~TempDir() {
        std::error_code ec;
        if (!path_.empty()) fs::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }
    // Copies `from` to `name` in the directory (replacing it) and returns the new path.
    std::string copy(const std::string& from, std::string_view name) const {
        const std::string to = file(name);
        write_file(to, read_file(from));
        return to;
    }

  private:
    std::string path_;
};

// A program run with stdin and stdout+stderr (merged) on pipes. Its output is read as it
// comes, so a test can wait for a line, answer, and wait again (s_client, python).
class Child {
  public:
    explicit Child(std::vector<std::string> args) {
        int in[2], out[2];
        if (::pipe2(in, O_CLOEXEC) < 0) return;
        if (::pipe2(out, O_CLOEXEC) < 0) {
            ::close(in[0]);
            ::close(in[1]);
            return;
        }
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_ = ::fork();
        if (pid_ == 0) {
            // The test process ignores SIGPIPE (ignored signals survive exec): undo that.
            ::signal(SIGPIPE, SIG_DFL);
            ::dup2(in[0], 0);
            ::dup2(out[1], 1);
            ::dup2(out[1], 2);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        in_ = in[1];
        out_ = out[0];
        if (pid_ < 0) {
            close_stdin();
            ::close(out_);
            out_ = -1;
        }
    }
    ~Child() {
        close_stdin();
        if (pid_ > 0 && !reaped_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        if (out_ >= 0) ::close(out_);
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    pid_t pid() const noexcept { return pid_; }
    const std::string& out() const noexcept { return out_buf_; }

    bool write(std::string_view data) {
        while (!data.empty() && in_ >= 0) {
            const ssize_t n = ::write(in_, data.data(), data.size());
            if (n < 0) {
                if (errno == EINTR) continue;
                return false;
            }
            data.remove_prefix(static_cast<std::size_t>(n));
        }
        return data.empty();
    }
    void close_stdin() {
        if (in_ >= 0) ::close(in_);
        in_ = -1;
    }
    // Reads until `needle` occurs `count` times in the output, the output ends, or `within`.
    bool wait_for(std::string_view needle, std::size_t count = 1, Ms within = Ms{5000}) {
        const auto deadline = SteadyClock::now() + within;
        while (count_of(out_buf_, needle) < count) {
            if (!read_some(deadline)) return count_of(out_buf_, needle) >= count;
        }
        return true;
    }
    // Closes stdin, reads to the end (killing the program after `within`) and returns its
    // exit code (-1: killed or not started).
    int finish(Ms within = Ms{10'000}) {
        close_stdin();
        const auto deadline = SteadyClock::now() + within;
        while (read_some(deadline)) {
        }
        if (pid_ <= 0) return -1;
        if (!reaped_) {
            if (!eof_) ::kill(pid_, SIGKILL);
            int status = 0;
            ::waitpid(pid_, &status, 0);
            reaped_ = true;
            code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        return code_;
    }

  private:
    // One read; false at end of output or past the deadline.
    bool read_some(SteadyClock::time_point deadline) {
        if (out_ < 0 || eof_) return false;
        for (;;) {
            const auto left = std::chrono::duration_cast<Ms>(deadline - SteadyClock::now());
            if (left.count() <= 0) return false;
            pollfd p{out_, POLLIN, 0};
            const int r = ::poll(&p, 1, static_cast<int>(left.count()));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return false;
            char buf[64 * 1024];
            const ssize_t n = ::read(out_, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                eof_ = true;
                return false;
            }
            out_buf_.append(buf, static_cast<std::size_t>(n));
            return true;
        }
    }

    pid_t pid_ = -1;
    int in_ = -1;
    int out_ = -1;
    std::string out_buf_;
    bool eof_ = false;
    bool reaped_ = false;
    int code_ = -1;
};

// Writes to a child that already quit must fail with EPIPE, not kill the test binary.
[[maybe_unused]] const bool kSigpipeIgnored = [] {
    ::signal(SIGPIPE, SIG_IGN);
    return true;
}();

struct Ran {
    int code = -1;
    std::string out;
};

Ran run(std::vector<std::string> args, std::string_view input = {}, Ms within = Ms{10'000}) {
    Child c(std::move(args));
    c.write(input);
    Ran r;
    r.code = c.finish(within);
    r.out = c.out();
    return r;
}

std::string port_str(std::uint16_t port) { return std::to_string(port); }

// openssl s_client against 127.0.0.1:port, trusting the test CA. Without `input` it closes
// right after the handshake (its output then holds the certificate, ALPN, protocol, ...).
std::vector<std::string> s_client_args(std::uint16_t port, std::vector<std::string> extra) {
    std::vector<std::string> a = {"/usr/bin/openssl", "s_client",
                                  "-connect",         "127.0.0.1:" + port_str(port),
                                  "-CAfile",          certs().ca};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
}

std::string s_client(std::uint16_t port, std::vector<std::string> extra,
                     std::string_view input = {}) {
    return run(s_client_args(port, std::move(extra)), input).out;
}

// One request that makes the server answer and close: s_client -ign_eof then ends by itself
// once the response (and any TLS 1.3 tickets before it) arrived.
const std::string kGetClose = get_request("/", "Connection: close\r\n");

std::vector<std::string> curl_args(std::vector<std::string> extra) {
    std::vector<std::string> a = {"/usr/bin/curl", "-sS",     "--max-time", "20",
                                  "--cacert",      certs().ca};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
}

std::string https(std::uint16_t port, std::string_view path) {
    return "https://localhost:" + port_str(port) + std::string(path);
}

std::string resolve(std::uint16_t port) { return "localhost:" + port_str(port) + ":127.0.0.1"; }

// tests/e2e/tls/client.py (close_notify, half records, timeouts; its docstring has the modes).
std::vector<std::string> python_args(std::string mode, std::uint16_t port) {
    return {"/usr/bin/python3", VELA_SOURCE_DIR "/tests/e2e/tls/client.py", std::move(mode),
            port_str(port), certs().ca};
}

// A pattern that shows a dropped, repeated or reordered block (not one repeated byte).
std::string big_body(std::size_t n) {
    std::string s(n, '\0');
    std::uint32_t x = 2463534242u;
    for (auto& c : s) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        c = static_cast<char>('a' + x % 26);
    }
    return s;
}

const std::string& five_mb() {
    static const std::string s = big_body(5 * 1024 * 1024);
    return s;
}

TlsOptions ec_options() {
    TlsOptions o;
    o.cert = certs().server_ec_cert;
    o.key = certs().server_ec_key;
    return o;
}

// An app with the basic routes and /big (5 MB) on a plain port (index 0, so
// expect_server_sound works) and a TLS port (index 1), one loop.
class TlsApp {
  public:
    explicit TlsApp(TlsOptions tls, const std::function<void(ServerOptions&)>& tweak = {}) {
        quick_options(app.options());
        app.options().limits.max_body = 8 * 1024 * 1024;
        if (tweak) tweak(app.options());
        add_basic_routes(app);
        app.get("/big", [] { return five_mb(); });
        app.listen("127.0.0.1:0");
        app.listen_tls("127.0.0.1:0", std::move(tls));
        app.start(1);
    }
    std::uint16_t plain() const { return app.port(0); }
    std::uint16_t tls() const { return app.port(1); }

    App app;
};

bool accepts(std::uint16_t port) {
    const int fd = connect_loopback(port);
    if (fd < 0) return false;
    ::close(fd);
    return true;
}

// Open file descriptors of this process: the app runs in-process, so a connection it never
// closes shows here.
std::size_t open_fds() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// The TCP socket with inode `inode` as "local port -> remote port state" (from /proc/net/tcp),
// so a failure message says which connection was left open and in which state.
std::string tcp_socket(const std::string& inode) {
    std::ifstream in("/proc/net/tcp");
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string sl, local, remote, state, queues, timer, retr, uid, timeout, ino;
        f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> ino;
        if (ino != inode) continue;
        auto port = [](const std::string& addr) {
            return std::to_string(std::stoul(addr.substr(addr.find(':') + 1), nullptr, 16));
        };
        return "tcp " + port(local) + "->" + port(remote) + " state 0x" + state;
    }
    return "socket " + inode;
}

// "fd -> target" for each open descriptor, to tell which connection was left open.
std::string fd_list() {
    std::string out;
    for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        std::string target = fs::read_symlink(e.path(), ec).string();
        if (target.rfind("socket:[", 0) == 0)
            target = tcp_socket(target.substr(8, target.size() - 9));
        out += e.path().filename().string() + "->" + target + "; ";
    }
    return out;
}

// Waits up to `within` for the descriptor count to come back to `baseline` (or below).
bool fds_back_to(std::size_t baseline, Ms within = Ms{3000}) {
    const auto t0 = SteadyClock::now();
    while (open_fds() > baseline) {
        if (ms_since(t0) > within.count()) return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

// Reads and drops whatever comes (an alert, say) until the peer closes; false if it is still
// open after `within`.
bool closed_after_any_data(int fd, Ms within = Ms{2000}) {
    const auto t0 = SteadyClock::now();
    for (;;) {
        const long long left = within.count() - ms_since(t0);
        if (left <= 0) return false;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
        char buf[4096];
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return true;
    }
}

// The subject line s_client prints for the server's certificate.
std::string subject(std::string_view out) {
    const std::size_t p = out.find("subject=");
    if (p == std::string_view::npos) return "(no certificate)";
    return std::string(out.substr(p, out.find('\n', p) - p));
}

// ---- 1. The same routes over TLS --------------------------------------------------------

TEST(TlsServingTest, SameRoutesOverHttp11AndH2WithAPlainPortBeside) {
    TlsApp s(ec_options());
    for (const char* proto : {"--http1.1", "--http2"}) {
        Ran r = run(curl_args({proto, "--resolve", resolve(s.tls()), "-w", "\n%{http_version}",
                               https(s.tls(), "/users/42")}));
        EXPECT_EQ(r.code, 0) << proto << ": " << r.out;
        EXPECT_EQ(r.out, std::string("42\n") + (proto == std::string("--http2") ? "2" : "1.1"))
            << proto;
    }
    Ran plain = run(curl_args(
        {"-w", "\n%{http_version}", "http://127.0.0.1:" + port_str(s.plain()) + "/hello"}));
    EXPECT_EQ(plain.out, "Hello, World!\n1.1");
    expect_server_sound(s.app);
}

TEST(TlsServingTest, FiveMegabyteBodiesIntactOverHttp11AndH2) {
    TlsApp s(ec_options());
    TempDir dir;
    const std::string upload = dir.file("upload");
    write_file(upload, five_mb());
    for (const char* proto : {"--http1.1", "--http2"}) {
        const std::string got = dir.file("got");
        Ran r = run(curl_args({proto, "--resolve", resolve(s.tls()), "-o", got, "-w",
                               "%{http_code} %{http_version}", https(s.tls(), "/big")}));
        EXPECT_EQ(r.code, 0) << proto << ": " << r.out;
        EXPECT_TRUE(read_file(got) == five_mb()) << proto << ": GET /big differs";
        const std::string echoed = dir.file("echoed");
        r = run(curl_args({proto, "--resolve", resolve(s.tls()), "--data-binary", "@" + upload,
                           "-H", "Content-Type: application/octet-stream", "-o", echoed, "-w",
                           "%{http_code} %{http_version}", https(s.tls(), "/echo")}));
        EXPECT_EQ(r.code, 0) << proto << ": " << r.out;
        EXPECT_TRUE(contains(r.out, "200")) << proto << ": " << r.out;
        EXPECT_TRUE(read_file(echoed) == five_mb()) << proto << ": POST /echo differs";
    }
    expect_server_sound(s.app);
}

TEST(TlsServingTest, SlowReaderGetsFiveMegabytesIntactOverHttp11AndH2) {
    TlsApp s(ec_options());
    TempDir dir;
    for (const char* proto : {"--http1.1", "--http2"}) {
        const std::string got = dir.file("got");
        Ran r = run(curl_args({proto, "--limit-rate", "8M", "--resolve", resolve(s.tls()), "-o",
                               got, https(s.tls(), "/big")}));
        EXPECT_EQ(r.code, 0) << proto << ": " << r.out;
        EXPECT_TRUE(read_file(got) == five_mb()) << proto << ": slow GET /big differs";
    }
    expect_server_sound(s.app);
}

TEST(TlsServingTest, PipelinedLargeResponsesOverTlsStayInOrder) {
    TlsApp s(ec_options());
    const std::string reqs = get_request("/big") + get_request("/users/middle") +
                             get_request("/big") +
                             get_request("/users/last", "Connection: close\r\n");
    Ran r = run(s_client_args(s.tls(), {"-quiet"}), reqs);
    EXPECT_EQ(count_of(r.out, "HTTP/1.1 200"), 4u) << r.out.substr(0, 300);
    const std::size_t big = r.out.find(five_mb());
    ASSERT_NE(big, std::string::npos) << "first /big not intact";
    const std::size_t middle = r.out.find("middle", big + five_mb().size());
    ASSERT_NE(middle, std::string::npos);
    const std::size_t big2 = r.out.find(five_mb(), middle);
    ASSERT_NE(big2, std::string::npos) << "second /big not intact";
    EXPECT_NE(r.out.find("last", big2 + five_mb().size()), std::string::npos);
}

// Regression: with the client's first HTTP/2 bytes in the same read as its TLS Finished,
// the connection answered them and then never read again (a second request hung until the
// idle timeout, and the client's close left the socket in CLOSE_WAIT). curl hits this on
// about one connection in three.
TEST(TlsServingTest, Http2OverTlsReadsOnWhenRequestsCameWithTheFinished) {
    TlsApp s(ec_options());
    for (const char* mode : {"apart", "together"}) {
        Ran r = run({"/usr/bin/python3", VELA_SOURCE_DIR "/tests/e2e/tls/h2_with_finished.py", mode,
                     port_str(s.tls()), certs().ca});
        EXPECT_TRUE(contains(r.out, "STREAM 1 OK")) << mode << ": " << r.out;
        EXPECT_TRUE(contains(r.out, "STREAM 3 OK")) << mode << ": " << r.out;
    }
    // The same through curl: connections closed by the client must all be freed.
    const std::size_t baseline = open_fds();
    for (int i = 0; i < 10; ++i) {
        Ran r = run(curl_args({"--http2", "--resolve", resolve(s.tls()), https(s.tls(), "/")}));
        EXPECT_EQ(r.out, "Hello, World!");
    }
    EXPECT_TRUE(fds_back_to(baseline, Ms{1000}))
        << open_fds() - baseline << " HTTP/2 connection(s) left open: " << fd_list();
}

TEST(TlsServingTest, PipelinedRequestsOverTlsAnsweredInOrder) {
    TlsApp s(ec_options());
    // -quiet implies -ign_eof: s_client sends both requests in one write and waits for close.
    const std::string both =
        get_request("/users/first") + get_request("/users/second", "Connection: close\r\n");
    Ran r = run(s_client_args(s.tls(), {"-quiet"}), both);
    EXPECT_EQ(count_of(r.out, "HTTP/1.1 200"), 2u) << r.out;
    const std::size_t first = r.out.find("first"), second = r.out.find("second");
    EXPECT_NE(first, std::string::npos) << r.out;
    EXPECT_NE(second, std::string::npos) << r.out;
    EXPECT_LT(first, second) << r.out;
}

// ---- 2. ALPN ------------------------------------------------------------------------------

TEST(TlsAlpnTest, ServerSelectsWhatTheClientOffers) {
    TlsApp s(ec_options());
    EXPECT_TRUE(contains(s_client(s.tls(), {"-alpn", "h2"}), "ALPN protocol: h2"));
    EXPECT_TRUE(contains(s_client(s.tls(), {"-alpn", "http/1.1"}), "ALPN protocol: http/1.1"));
    EXPECT_TRUE(contains(s_client(s.tls(), {"-alpn", "h2,http/1.1"}), "ALPN protocol: h2"));
    Ran none = run(s_client_args(s.tls(), {"-ign_eof"}), kGetClose);
    EXPECT_TRUE(contains(none.out, "No ALPN negotiated")) << none.out;
    EXPECT_TRUE(contains(none.out, "HTTP/1.1 200")) << none.out;
    EXPECT_TRUE(contains(none.out, "Hello, World!")) << none.out;
}

TEST(TlsAlpnTest, Http2OffNeverSelectsH2) {
    TlsOptions o = ec_options();
    o.http2 = false;
    TlsApp s(o);
    const std::string out = s_client(s.tls(), {"-alpn", "h2,http/1.1"});
    EXPECT_TRUE(contains(out, "ALPN protocol: http/1.1")) << out;
    Ran r = run(curl_args({"--http2", "--resolve", resolve(s.tls()), "-w", "\n%{http_version}",
                           https(s.tls(), "/hello")}));
    EXPECT_EQ(r.out, "Hello, World!\n1.1");
}

// ---- 3. Certificates ----------------------------------------------------------------------

TEST(TlsCertificateTest, EcdsaAndRsaCertificatesBothServe) {
    struct Case {
        std::string cert, key, bits;
    };
    for (const Case& c : {Case{certs().server_ec_cert, certs().server_ec_key, "256 bit"},
                          Case{certs().server_rsa_cert, certs().server_rsa_key, "2048 bit"}}) {
        TlsOptions o;
        o.cert = c.cert;
        o.key = c.key;
        TlsApp s(o);
        for (const char* v : {"-tls1_2", "-tls1_3"}) {
            const std::string out = s_client(s.tls(), {v, "-verify_return_error"});
            EXPECT_TRUE(contains(out, "Server public key is " + c.bits)) << v << out;
            EXPECT_TRUE(contains(out, "Verify return code: 0 (ok)")) << v << out;
        }
        Ran r = run(curl_args({"--resolve", resolve(s.tls()), https(s.tls(), "/hello")}));
        EXPECT_EQ(r.out, "Hello, World!") << c.cert;
    }
}

TEST(TlsCertificateTest, ChainFileSendsTheIntermediate) {
    TlsOptions o;
    o.cert = certs().server_chain_cert;
    o.key = certs().server_chain_key;
    TlsApp s(o);
    const std::string out = s_client(s.tls(), {"-verify_return_error", "-showcerts"});
    EXPECT_TRUE(contains(out, "Verify return code: 0 (ok)")) << out;
    EXPECT_TRUE(contains(out, "1 s:CN = vela test intermediate CA")) << out;
    Ran r = run(curl_args({"--resolve", resolve(s.tls()), https(s.tls(), "/hello")}));
    EXPECT_EQ(r.out, "Hello, World!");
}

TEST(TlsCertificateTest, SniPicksTheCertificateByName) {
    TlsOptions o = ec_options();
    o.sni.push_back({certs().sni_a_cert, certs().sni_a_key, ""});
    o.sni.push_back({certs().sni_wildcard_cert, certs().sni_wildcard_key, ""});
    o.sni.push_back({certs().sni_w_b_cert, certs().sni_w_b_key, ""});
    TlsApp s(o);
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"-servername", "a.test"}, "subject=CN = a.test"},
        {{"-servername", "x.b.test"}, "subject=CN = b.test"},
        {{"-servername", "w.b.test"}, "subject=CN = w.b.test"},  // exact beats the wildcard
        {{"-servername", "A.Test"}, "subject=CN = a.test"},      // DNS names ignore case
        {{"-servername", "X.B.TEST"}, "subject=CN = b.test"},
        {{"-servername", "b.test"}, "subject=CN = localhost"},      // the CN is not a name
        {{"-servername", "y.x.b.test"}, "subject=CN = localhost"},  // one label deep only
        {{"-servername", "other.test"}, "subject=CN = localhost"},
        {{"-noservername"}, "subject=CN = localhost"},
    };
    for (const auto& [args, want] : cases)
        EXPECT_EQ(subject(s_client(s.tls(), args)), want) << args.back();
}

// ---- 4. Protocol versions -----------------------------------------------------------------

TEST(TlsVersionTest, Tls11RefusedTls12And13Accepted) {
    TlsApp s(ec_options());
    // SECLEVEL=0 lets the client offer TLS 1.1 at all, so the refusal is the server's.
    const std::string old = s_client(s.tls(), {"-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"});
    EXPECT_TRUE(contains(old, "New, (NONE), Cipher is (NONE)")) << old;
    EXPECT_TRUE(contains(old, "alert protocol version")) << old;
    EXPECT_TRUE(contains(s_client(s.tls(), {"-tls1_2"}), "New, TLSv1.2, Cipher is ECDHE"));
    EXPECT_TRUE(contains(s_client(s.tls(), {"-tls1_3"}), "New, TLSv1.3, Cipher is TLS_"));
    expect_server_sound(s.app);
}

TEST(TlsVersionTest, MinVersion13RefusesTls12) {
    TlsOptions o = ec_options();
    o.min_version = "1.3";
    TlsApp s(o);
    const std::string out = s_client(s.tls(), {"-tls1_2"});
    EXPECT_TRUE(contains(out, "New, (NONE), Cipher is (NONE)")) << out;
    EXPECT_TRUE(contains(out, "alert protocol version")) << out;
    EXPECT_TRUE(contains(s_client(s.tls(), {"-tls1_3"}), "New, TLSv1.3, Cipher is TLS_"));
}

// ---- 5. Session resumption ----------------------------------------------------------------

// Runs a full handshake saving the session, then one resuming it; returns both outputs.
std::pair<std::string, std::string> resume(std::uint16_t port, const char* version,
                                           const std::string& file,
                                           const std::function<void()>& between = {}) {
    Ran first = run(s_client_args(port, {version, "-ign_eof", "-sess_out", file}), kGetClose);
    if (between) between();
    Ran second = run(s_client_args(port, {version, "-ign_eof", "-sess_in", file}), kGetClose);
    return {first.out, second.out};
}

TEST(TlsResumptionTest, TicketsResumeTls12And13) {
    TlsApp s(ec_options());
    TempDir dir;
    for (const char* v : {"-tls1_2", "-tls1_3"}) {
        auto [first, second] = resume(s.tls(), v, dir.file("session"));
        EXPECT_TRUE(contains(first, "New, TLSv1.")) << v << first;
        EXPECT_TRUE(contains(second, "Reused, TLSv1.")) << v << second;
        EXPECT_TRUE(contains(second, "Hello, World!")) << v << second;
    }
}

TEST(TlsResumptionTest, TicketsStillResumeAfterReload) {
    TlsApp s(ec_options());
    TempDir dir;
    for (const char* v : {"-tls1_2", "-tls1_3"}) {
        auto [first, second] = resume(s.tls(), v, dir.file("session"), [&] { s.app.reload_tls(); });
        EXPECT_TRUE(contains(first, "New, TLSv1.")) << v << first;
        EXPECT_TRUE(contains(second, "Reused, TLSv1.")) << v << second;
    }
}

// ---- 6. Reload ----------------------------------------------------------------------------

TEST(TlsReloadTest, OpenConnectionSurvivesReloadAndNewHandshakesGetTheNewCertificate) {
    TempDir dir;
    TlsOptions o;
    o.cert = dir.copy(certs().server_ec_cert, "cert.pem");
    o.key = dir.copy(certs().server_ec_key, "key.pem");
    TlsApp s(o);

    Child open(s_client_args(s.tls(), {"-quiet"}));
    ASSERT_TRUE(open.write(get_request("/users/before")));
    ASSERT_TRUE(open.wait_for("before")) << open.out();

    dir.copy(certs().server_rsa_cert, "cert.pem");
    dir.copy(certs().server_rsa_key, "key.pem");
    ASSERT_NO_THROW(s.app.reload_tls());

    ASSERT_TRUE(open.write(get_request("/users/after")));
    EXPECT_TRUE(open.wait_for("after")) << "open connection broke by the reload: " << open.out();
    EXPECT_EQ(count_of(open.out(), "HTTP/1.1 200"), 2u) << open.out();
    open.finish(Ms{500});

    EXPECT_TRUE(contains(s_client(s.tls(), {}), "Server public key is 2048 bit"));

    // A broken certificate file: reload throws, and the RSA certificate keeps serving.
    write_file(o.cert, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n");
    try {
        s.app.reload_tls();
        ADD_FAILURE() << "reload with a broken certificate did not throw";
    } catch (const TlsError& e) {
        EXPECT_TRUE(contains(e.what(), o.cert)) << e.what();
    }
    const std::string after = s_client(s.tls(), {"-verify_return_error"});
    EXPECT_TRUE(contains(after, "Server public key is 2048 bit")) << after;
    EXPECT_TRUE(contains(after, "Verify return code: 0 (ok)")) << after;
    expect_server_sound(s.app);
}

#ifdef VELA_HELLO_BINARY
TEST(TlsReloadTest, HelloReloadsCertificatesOnSighup) {
    TempDir dir;
    const std::string cert = dir.copy(certs().server_ec_cert, "cert.pem");
    const std::string key = dir.copy(certs().server_ec_key, "key.pem");
    const std::uint16_t port = free_port(), tls_port = free_port();
    Child hello({VELA_HELLO_BINARY, "--threads", "1", "--port", port_str(port), "--tls-port",
                 port_str(tls_port), "--tls-cert", cert, "--tls-key", key});
    // Ready once the TLS port accepts (hello logs after listening; poll the port to be sure).
    const auto t0 = SteadyClock::now();
    while (!accepts(tls_port) && ms_since(t0) < 5000) std::this_thread::sleep_for(20ms);
    ASSERT_TRUE(accepts(tls_port)) << hello.out();
    EXPECT_TRUE(contains(s_client(tls_port, {}), "Server public key is 256 bit"));

    dir.copy(certs().server_rsa_cert, "cert.pem");
    dir.copy(certs().server_rsa_key, "key.pem");
    ASSERT_EQ(::kill(hello.pid(), SIGHUP), 0);
    EXPECT_TRUE(hello.wait_for("reloaded", 1, Ms{3000})) << hello.out();
    const std::string out = s_client(tls_port, {"-verify_return_error"});
    EXPECT_TRUE(contains(out, "Server public key is 2048 bit")) << out;
    EXPECT_TRUE(contains(out, "Verify return code: 0 (ok)")) << out;

    // A broken file: SIGHUP logs the error, and the RSA certificate keeps serving.
    write_file(cert, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n");
    ASSERT_EQ(::kill(hello.pid(), SIGHUP), 0);
    EXPECT_TRUE(hello.wait_for("previous certificates stay in use", 1, Ms{3000})) << hello.out();
    EXPECT_TRUE(contains(s_client(tls_port, {}), "Server public key is 2048 bit"));

    ::kill(hello.pid(), SIGTERM);
    EXPECT_EQ(hello.finish(Ms{5000}), 0) << hello.out();
    EXPECT_FALSE(contains(hello.out(), "terminate called")) << hello.out();
}
#endif

// ---- 7. Start errors ----------------------------------------------------------------------

TEST(TlsStartErrorTest, BadCertificateOrKeyThrowsNamingTheFileAndOpensNoPort) {
    TempDir dir;
    const std::string missing = dir.file("missing.pem");
    fs::create_directory(dir.file("a-directory.key"));
    struct Case {
        std::string what, cert, key, named;
    };
    const std::vector<Case> cases = {
        {"missing cert", missing, certs().server_ec_key, missing},
        {"missing key", certs().server_ec_cert, missing, missing},
        {"key is a directory", certs().server_ec_cert, dir.file("a-directory.key"),
         dir.file("a-directory.key")},
        {"key does not match", certs().server_ec_cert, certs().wrong_key, certs().wrong_key},
    };
    for (const Case& c : cases) {
        const std::uint16_t plain = free_port(), tls = free_port();
        App app;
        add_basic_routes(app);
        app.listen("127.0.0.1:" + port_str(plain));
        TlsOptions o;
        o.cert = c.cert;
        o.key = c.key;
        app.listen_tls("127.0.0.1:" + port_str(tls), o);
        try {
            app.start(1);
            ADD_FAILURE() << c.what << ": start did not throw";
        } catch (const TlsError& e) {
            EXPECT_TRUE(contains(e.what(), c.named)) << c.what << ": " << e.what();
            EXPECT_FALSE(contains(e.what(), "\n")) << c.what << ": " << e.what();
        } catch (const std::exception& e) {
            ADD_FAILURE() << c.what << ": not a TlsError: " << e.what();
        }
        EXPECT_FALSE(accepts(plain)) << c.what << ": the plain port was opened";
        EXPECT_FALSE(accepts(tls)) << c.what << ": the TLS port was opened";
    }
}

TEST(TlsStartErrorTest, RunReturnsOneOnABadCertificate) {
    App app;
    add_basic_routes(app);
    TlsOptions o = ec_options();
    o.cert = certs().dir + "/no-such-cert.pem";
    app.listen_tls("127.0.0.1:0", o);
    EXPECT_EQ(app.run(1), 1);
}

#ifdef VELA_HELLO_BINARY
TEST(TlsStartErrorTest, HelloWithAMissingCertificateExitsOneWithOneLine) {
    const std::string missing = certs().dir + "/no-such-cert.pem";
    Child hello({VELA_HELLO_BINARY, "--threads", "1", "--port", port_str(free_port()), "--tls-port",
                 port_str(free_port()), "--tls-cert", missing, "--tls-key", certs().server_ec_key});
    EXPECT_EQ(hello.finish(Ms{5000}), 1) << hello.out();
    EXPECT_TRUE(contains(hello.out(), missing)) << hello.out();
    EXPECT_EQ(count_of(hello.out(), "\n"), 1u) << hello.out();
    EXPECT_FALSE(contains(hello.out(), "terminate called")) << hello.out();
}
#endif

#ifdef VELA_HELLO_BINARY
TEST(TlsStartErrorTest, HelloWithAnExpiredCertificateServesAndWarns) {
    const std::uint16_t tls_port = free_port();
    Child hello({VELA_HELLO_BINARY, "--threads", "1", "--port", port_str(free_port()), "--tls-port",
                 port_str(tls_port), "--tls-cert", certs().expired_cert, "--tls-key",
                 certs().expired_key});
    EXPECT_TRUE(hello.wait_for("listening on 0.0.0.0:" + port_str(tls_port))) << hello.out();
    EXPECT_TRUE(contains(hello.out(), "warn")) << hello.out();
    EXPECT_TRUE(contains(hello.out(), certs().expired_cert + " expired")) << hello.out();
    EXPECT_TRUE(contains(s_client(tls_port, {}), "certificate has expired"));
    ::kill(hello.pid(), SIGTERM);
    EXPECT_EQ(hello.finish(Ms{5000}), 0) << hello.out();
}
#endif

TEST(TlsStartErrorTest, ExpiredCertificateStartsWithAWarningOnly) {
    TlsOptions o;
    o.cert = certs().expired_cert;
    o.key = certs().expired_key;
    TlsApp s(o);
    const std::string out = s_client(s.tls(), {});
    EXPECT_TRUE(contains(out, "certificate has expired")) << out;
    expect_server_sound(s.app);
}

// ---- 8. Bad input -------------------------------------------------------------------------

TEST(TlsBadInputTest, PlainHttpOnTheTlsPortGets400InPlainTextAndClose) {
    TlsApp s(ec_options());
    Client c = Client::tcp(s.tls());
    ASSERT_TRUE(c.send(get_request("/")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->version, "HTTP/1.1");
    EXPECT_EQ(r->status, 400);
    EXPECT_TRUE(c.closed_by_peer()) << "still open after the 400";
    expect_server_sound(s.app);
}

TEST(TlsBadInputTest, ClientHelloOnThePlainPortGets400AtOnce) {
    TlsApp s(ec_options(), [](ServerOptions& o) { o.header_timeout = Ms{5000}; });
    // The start of a TLS 1.2 ClientHello record: handshake, version, length, then the hello.
    const std::string hello("\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03", 11);
    Client c = Client::tcp(s.plain());
    const auto t0 = SteadyClock::now();
    ASSERT_TRUE(c.send(hello + std::string(32, '\x5a')));
    auto r = c.read_response();
    const long long took = ms_since(t0);
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 400);
    EXPECT_LT(took, 1000) << "answered only after " << took << " ms (the header timeout?)";

    // And a real client's hello, through s_client: the plain-text answer is no TLS record
    // ("wrong version number"), and it comes at once.
    const auto t1 = SteadyClock::now();
    Ran sc = run(s_client_args(s.plain(), {}), {}, Ms{3000});
    EXPECT_LT(ms_since(t1), 1000) << sc.out;
    EXPECT_TRUE(contains(sc.out, "wrong version number")) << sc.out;
    expect_server_sound(s.app);
}

TEST(TlsBadInputTest, SilentOrHalfHelloClientClosedAfterHandshakeTimeout) {
    TlsApp s(ec_options(), [](ServerOptions& o) { o.handshake_timeout = Ms{300}; });
    const std::size_t baseline = open_fds();
    for (const bool half : {false, true}) {
        Client c = Client::tcp(s.tls());
        ASSERT_TRUE(c.connected());
        const auto t0 = SteadyClock::now();
        if (half) {
            ASSERT_TRUE(c.send(std::string("\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03", 10)));
        }
        EXPECT_TRUE(c.closed_by_peer(Ms{3000})) << (half ? "half hello" : "silent");
        const long long took = ms_since(t0);
        EXPECT_GE(took, 250) << (half ? "half hello" : "silent");
        EXPECT_LT(took, 2000) << (half ? "half hello" : "silent");
    }
    EXPECT_TRUE(fds_back_to(baseline)) << "the timed-out connections were not freed";
    expect_server_sound(s.app);
}

TEST(TlsBadInputTest, HandshakeCapMakesAThirdClientWaitForTheStalledOnes) {
    TlsApp s(ec_options(), [](ServerOptions& o) {
        o.handshake_timeout = Ms{1000};
        o.max_handshakes_per_loop = 2;
    });
    Client a = Client::tcp(s.tls()), b = Client::tcp(s.tls());
    ASSERT_TRUE(a.connected() && b.connected());
    std::this_thread::sleep_for(150ms);  // both accepted: the loop is at its cap
    const auto t0 = SteadyClock::now();
    Ran r = run(curl_args({"--resolve", resolve(s.tls()), https(s.tls(), "/hello")}));
    const long long took = ms_since(t0);
    EXPECT_EQ(r.out, "Hello, World!");
    EXPECT_GE(took, 600) << "the third handshake did not wait for the stalled ones";
    EXPECT_LT(took, 5000);
    EXPECT_TRUE(a.closed_by_peer(Ms{100}));
    EXPECT_TRUE(b.closed_by_peer(Ms{100}));
    // The cap is released: handshakes go through at once again.
    const auto t1 = SteadyClock::now();
    r = run(curl_args({"--resolve", resolve(s.tls()), https(s.tls(), "/hello")}));
    EXPECT_EQ(r.out, "Hello, World!");
    EXPECT_LT(ms_since(t1), 600);
    expect_server_sound(s.app);
}

// Every way a handshake can end badly must free its connection and give its slot back: with
// a cap of 1, each kind of failure twice on a fresh server, then a good handshake that must
// not wait.
TEST(TlsBadInputTest, FailedHandshakesFreeTheConnectionAndTheirSlot) {
    const std::vector<std::pair<std::string, std::function<void(std::uint16_t)>>> failures = {
        {"plain HTTP on the TLS port",
         [](std::uint16_t port) {
             Client c = Client::tcp(port);
             ASSERT_TRUE(c.send(get_request("/")));
             EXPECT_TRUE(c.read_response()) << c.error();
         }},
        {"a version the server refuses",
         [](std::uint16_t port) {
             s_client(port, {"-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"});
         }},
        {"a garbage hello",
         [](std::uint16_t port) {
             Client c = Client::tcp(port);
             ASSERT_TRUE(
                 c.send(std::string("\x16\x03\x01\x00\x08\x01\x00\x00\x04\xff\xff\xff\xff", 13)));
             EXPECT_TRUE(closed_after_any_data(c.fd())) << "still open";
         }},
        {"a client gone after half a hello",
         [](std::uint16_t port) {
             Client c = Client::tcp(port);
             ASSERT_TRUE(c.send(std::string("\x16\x03\x01\x00\xc8\x01\x00", 7)));
             std::this_thread::sleep_for(50ms);
         }},
        {"a client gone before its first byte",
         [](std::uint16_t port) {
             Client c = Client::tcp(port);
             std::this_thread::sleep_for(50ms);
         }},
    };
    for (const auto& [what, fail] : failures) {
        SCOPED_TRACE(what);
        TlsApp s(ec_options(), [](ServerOptions& o) {
            o.handshake_timeout = Ms{5000};
            o.max_handshakes_per_loop = 1;
        });
        const std::size_t baseline = open_fds();
        fail(s.tls());
        fail(s.tls());
        const auto t0 = SteadyClock::now();
        // HTTP/1.1: an HTTP/2 connection may be left open by another bug (see
        // Http2OverTlsReadsOnWhenRequestsCameWithTheFinished).
        Ran r = run(curl_args({"--http1.1", "--resolve", resolve(s.tls()), "-w",
                               "\ncurl port %{local_port}", https(s.tls(), "/hello")}),
                    {}, Ms{2000});
        EXPECT_TRUE(contains(r.out, "Hello, World!\ncurl port ")) << r.out;
        EXPECT_LT(ms_since(t0), 1000) << "a failed handshake kept its slot";
        EXPECT_TRUE(fds_back_to(baseline, Ms{1000}))
            << open_fds() - baseline << " connection(s) left open (TLS port " << s.tls() << ", "
            << r.out.substr(r.out.find('\n') + 1) << "): " << fd_list();
    }
}

TEST(TlsBadInputTest, HalfARecordAfterTheHandshakeThenGoneIsCleanedUp) {
    TlsApp s(ec_options());
    expect_server_sound(s.app);
    const std::size_t baseline = open_fds();
    for (int i = 0; i < 3; ++i) {
        Ran r = run(python_args("half", s.tls()));
        EXPECT_TRUE(contains(r.out, "SENT")) << r.out;
    }
    EXPECT_TRUE(fds_back_to(baseline))
        << open_fds() - baseline << " connections left open: " << fd_list();
    expect_server_sound(s.app);
    Ran r = run(curl_args({"--resolve", resolve(s.tls()), https(s.tls(), "/hello")}));
    EXPECT_EQ(r.out, "Hello, World!");
}

TEST(TlsBadInputTest, RenegotiationRefused) {
    TlsApp s(ec_options());
    Child c(s_client_args(s.tls(), {"-tls1_2"}));
    ASSERT_TRUE(c.wait_for("Verify return code")) << c.out();
    const std::size_t verified = count_of(c.out(), "verify return:");
    ASSERT_TRUE(c.write("R\n"));
    ASSERT_TRUE(c.wait_for("RENEGOTIATING")) << c.out();
    std::this_thread::sleep_for(300ms);
    c.write(get_request("/", "Connection: close\r\n"));
    c.finish(Ms{3000});
    EXPECT_TRUE(contains(c.out(), "no renegotiation")) << c.out();
    // A second handshake would verify the certificate chain again.
    EXPECT_EQ(count_of(c.out(), "verify return:"), verified) << c.out();
    expect_server_sound(s.app);
}

TEST(TlsBadInputTest, KeyUpdateFromTheClientKeepsTheConnectionWorking) {
    TlsApp s(ec_options());
    Child c(s_client_args(s.tls(), {"-tls1_3"}));
    ASSERT_TRUE(c.wait_for("Verify return code")) << c.out();
    ASSERT_TRUE(c.write("K\n"));  // KeyUpdate, asking the server to update its keys too
    ASSERT_TRUE(c.wait_for("KEYUPDATE")) << c.out();
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(c.write(get_request("/users/after-key-update")));
    EXPECT_TRUE(c.wait_for("after-key-update", 1, Ms{3000})) << c.out();
    c.finish(Ms{1000});
    expect_server_sound(s.app);
}

// ---- 9. close_notify ----------------------------------------------------------------------

TEST(TlsCloseNotifyTest, ConnectionCloseEndsWithCloseNotify) {
    TlsApp s(ec_options());
    Ran r = run(python_args("close", s.tls()));
    EXPECT_TRUE(contains(r.out, "STATUS HTTP/1.1 200")) << r.out;
    EXPECT_TRUE(contains(r.out, "CLEAN\n") && !contains(r.out, "UNCLEAN")) << r.out;
}

TEST(TlsCloseNotifyTest, StopSendsCloseNotifyToAnIdleKeepAliveConnection) {
    TlsApp s(ec_options());
    Child py(python_args("idle", s.tls()));
    ASSERT_TRUE(py.wait_for("READY HTTP/1.1 200")) << py.out();
    s.app.stop();
    s.app.wait();
    py.finish(Ms{5000});
    EXPECT_TRUE(contains(py.out(), "CLEAN\n") && !contains(py.out(), "UNCLEAN")) << py.out();
}

TEST(TlsCloseNotifyTest, IdleTimeoutEndsWithCloseNotify) {
    TlsApp s(ec_options(), [](ServerOptions& o) { o.idle_timeout = Ms{400}; });
    Ran r = run(python_args("idle", s.tls()));
    EXPECT_TRUE(contains(r.out, "READY HTTP/1.1 200")) << r.out;
    EXPECT_TRUE(contains(r.out, "CLEAN\n") && !contains(r.out, "UNCLEAN")) << r.out;
}

TEST(TlsCloseNotifyTest, HeaderTimeoutSends408OverTlsThenCloseNotify) {
    TlsApp s(ec_options(), [](ServerOptions& o) { o.header_timeout = Ms{400}; });
    const auto t0 = SteadyClock::now();
    Ran r = run(python_args("partial", s.tls()));
    EXPECT_TRUE(contains(r.out, "STATUS HTTP/1.1 408")) << r.out;
    EXPECT_TRUE(contains(r.out, "CLEAN\n") && !contains(r.out, "UNCLEAN")) << r.out;
    EXPECT_LT(ms_since(t0), 3000);
}

// ---- 10. OCSP stapling --------------------------------------------------------------------

TEST(TlsOcspTest, StapledResponseOnlyWhenConfigured) {
    {
        TlsOptions o = ec_options();
        o.ocsp_file = certs().server_ec_ocsp;
        TlsApp s(o);
        for (const char* v : {"-tls1_2", "-tls1_3"}) {
            const std::string out = s_client(s.tls(), {v, "-status"});
            EXPECT_TRUE(contains(out, "OCSP Response Status: successful")) << v << out;
        }
    }
    TlsApp s(ec_options());
    const std::string out = s_client(s.tls(), {"-status"});
    EXPECT_TRUE(contains(out, "OCSP response: no response sent")) << out;
}

}  // namespace
}  // namespace vela::e2e
