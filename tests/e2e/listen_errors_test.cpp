// Listeners that fail politely: a port someone else holds, a bad address or Unix path gives
// one clear line (net::ListenError from start(), logged by run(), which returns 1), leaves
// no fd or worker behind, and a second process on the same port is refused unless both ask
// to share it. Regression: `app.listen(p).run()` on a taken port used to abort with
// "terminate called after throwing std::system_error" and a core dump; and every listener
// used SO_REUSEPORT, so a second vela process silently took half of the first one's traffic.

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "e2e/client.hpp"

namespace vela::e2e {
namespace {

std::string in_use(const std::string& where) {
    return "cannot listen on " + where +
           ": address already in use (another process holds it; pick another port)";
}

// A plain listening socket on 127.0.0.1 (any free port unless given), as another program
// would hold it; SO_REUSEPORT when `reuse_port` (what vela itself used to set).
class PortHolder {
  public:
    explicit PortHolder(bool reuse_port = false, const char* host = "127.0.0.1",
                        std::uint16_t port = 0) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        if (reuse_port) ::setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(port);
        ::inet_pton(AF_INET, host, &sa.sin_addr);
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 || ::listen(fd_, 8) < 0) {
            ::close(fd_);
            fd_ = -1;
            return;
        }
        port_ = net::local_port(fd_);
    }
    ~PortHolder() {
        if (fd_ >= 0) ::close(fd_);
    }
    PortHolder(const PortHolder&) = delete;
    PortHolder& operator=(const PortHolder&) = delete;
    std::uint16_t port() const { return port_; }
    bool ok() const { return fd_ >= 0; }

  private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

// The ListenError that start() throws, or a failure naming what happened instead.
std::string start_error(App& app, unsigned threads = 1) {
    try {
        app.start(threads);
    } catch (const net::ListenError& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("unexpected exception type: ") + e.what();
    }
    return "started";
}

std::size_t open_fds() {
    std::size_t n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d)) ++n;
        ::closedir(d);
    }
    return n;
}

std::string temp_path(const std::string& tag) {
    return "/tmp/vela-listen-" + std::to_string(::getpid()) + "-" + tag;
}

// GET / on 127.0.0.1:port answers 200.
bool serves(std::uint16_t port) {
    Client c = Client::tcp(port);
    if (!c.connected() || !c.send(get_request("/"))) return false;
    auto r = c.read_response();
    return r && r->status == 200;
}

TEST(ListenErrorsTest, PortHeldByAnotherSocketThrowsOneLine) {
    PortHolder holder;
    ASSERT_TRUE(holder.ok());
    const std::string where = "127.0.0.1:" + std::to_string(holder.port());
    App app;
    add_basic_routes(app);
    app.listen(where);
    try {
        app.start(2);
        FAIL() << "started on a port another socket holds";
    } catch (const net::ListenError& e) {
        EXPECT_EQ(std::string(e.what()), in_use(where));
        EXPECT_EQ(e.code(), std::errc::address_in_use);
    }
    EXPECT_EQ(app.port(), 0);
}

TEST(ListenErrorsTest, RunReturnsOneInsteadOfAborting) {
    PortHolder holder;
    ASSERT_TRUE(holder.ok());
    App app;
    add_basic_routes(app);
    EXPECT_EQ(app.listen("127.0.0.1:" + std::to_string(holder.port())).run(2), 1);
    // The failed run must not leave SIGINT blocked for the rest of the program.
    sigset_t blocked;
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, nullptr, &blocked), 0);
    EXPECT_FALSE(::sigismember(&blocked, SIGINT));
}

// What vela used to set on every listener: SO_REUSEPORT alone must not make a port shared.
TEST(ListenErrorsTest, PortHeldWithReusePortIsStillRefused) {
    PortHolder holder(/*reuse_port=*/true);
    ASSERT_TRUE(holder.ok());
    App app;
    app.listen("127.0.0.1:" + std::to_string(holder.port()));
    EXPECT_EQ(start_error(app, 2), in_use("127.0.0.1:" + std::to_string(holder.port())));
}

TEST(ListenErrorsTest, WildcardClashesWithASpecificAddress) {
    PortHolder holder;
    ASSERT_TRUE(holder.ok());
    App app;
    app.listen(holder.port());
    EXPECT_EQ(start_error(app), in_use("0.0.0.0:" + std::to_string(holder.port())));
}

TEST(ListenErrorsTest, SecondServerOnTheSamePortFailsByDefault) {
    App first;
    quick_options(first.options());
    add_basic_routes(first);
    start_app(first, 2);
    const std::string where = "127.0.0.1:" + std::to_string(first.port());
    App second;
    add_basic_routes(second);
    second.listen(where);
    EXPECT_EQ(start_error(second, 2), in_use(where));
    EXPECT_TRUE(serves(first.port())) << "the first server was disturbed";
}

TEST(ListenErrorsTest, SecondServerSharesThePortWhenBothAskTo) {
    App first;
    quick_options(first.options());
    first.options().listen.share_port = true;
    add_basic_routes(first);
    start_app(first, 2);
    App second;
    quick_options(second.options());
    second.options().listen.share_port = true;
    add_basic_routes(second);
    second.listen("127.0.0.1:" + std::to_string(first.port()));
    EXPECT_EQ(start_error(second, 2), "started");
    EXPECT_EQ(second.port(), first.port());
    EXPECT_TRUE(serves(first.port()));
    second.stop();
    EXPECT_EQ(second.wait(), 0);
    EXPECT_TRUE(serves(first.port())) << "the first server lost the port with the second";
}

// Port 0 resolves once and every loop gets a listener on that port that accepts.
TEST(ListenErrorsTest, PortZeroWithTwoLoopsBothAccept) {
    App app;
    quick_options(app.options());
    app.get("/thread", [] {
        std::ostringstream os;
        os << std::this_thread::get_id();
        return os.str();
    });
    start_app(app, 2);
    ASSERT_NE(app.port(), 0);
    std::set<std::string> threads;
    // SO_REUSEPORT picks a listener by a hash of the client's address and port: with fresh
    // connections both loops show up after a few (a miss 64 times in a row is 2^-63).
    for (int i = 0; i < 64 && threads.size() < 2; ++i) {
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.connected());
        ASSERT_TRUE(c.send(get_request("/thread")));
        auto r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        threads.insert(r->body);
    }
    EXPECT_EQ(threads.size(), 2u) << "one loop never accepted";
}

TEST(ListenErrorsTest, AddressThatIsNotANumber) {
    App app;
    app.listen("localhost:8080");
    EXPECT_EQ(start_error(app),
              "cannot listen on localhost:8080: 'localhost' is not a numeric IPv4 address (host "
              "names are not looked up)");
}

// A spec listen() cannot parse is reported by start()/run(), not thrown from listen().
TEST(ListenErrorsTest, MalformedSpecIsReportedAtStart) {
    App app;
    app.listen("127.0.0.1:99999");
    EXPECT_EQ(start_error(app),
              "cannot listen on '127.0.0.1:99999': invalid port '99999' (expected 0 to 65535)");
    App other;
    EXPECT_EQ(other.listen("::1:80").run(1), 1);
}

TEST(ListenErrorsTest, AddressOfAnotherMachine) {
    App app;
    app.listen("192.0.2.1:0");  // TEST-NET-1: never assigned to this machine
    EXPECT_EQ(start_error(app),
              "cannot listen on 192.0.2.1:0: address not available (192.0.2.1 is not an "
              "address of this machine)");
}

TEST(ListenErrorsTest, PrivilegedPort) {
    if (::geteuid() == 0) GTEST_SKIP() << "running as root: every port may be bound";
    int start = 1024;
    std::ifstream("/proc/sys/net/ipv4/ip_unprivileged_port_start") >> start;
    if (start <= 80) GTEST_SKIP() << "ip_unprivileged_port_start is " << start;
    App app;
    app.listen("127.0.0.1:80");
    EXPECT_EQ(start_error(app),
              "cannot listen on 127.0.0.1:80: permission denied (ports below 1024 need root or "
              "CAP_NET_BIND_SERVICE)");
}

TEST(ListenErrorsTest, UnixPathInMissingDirectory) {
    const std::string dir = temp_path("no-such-dir");
    App app;
    app.listen("unix:" + dir + "/app.sock");
    EXPECT_EQ(start_error(app),
              "cannot listen on unix:" + dir + "/app.sock: directory " + dir + " does not exist");
}

TEST(ListenErrorsTest, UnixPathTooLong) {
    const std::string path = "/tmp/" + std::string(120, 'x');
    App app;
    app.listen("unix:" + path);
    EXPECT_EQ(start_error(app), "cannot listen on unix:" + path +
                                    ": socket path is 125 bytes long; the limit is 107");
}

TEST(ListenErrorsTest, RegularFileAtTheUnixPathIsNotReplaced) {
    const std::string path = temp_path("file.sock");
    {
        std::ofstream f(path);
        f << "precious";
    }
    App app;
    app.listen("unix:" + path);
    EXPECT_EQ(start_error(app), "cannot listen on unix:" + path + ": " + path +
                                    " exists and is not a socket (remove it or pick another path)");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << "the file was deleted";
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_size, 8);
    ::unlink(path.c_str());
}

TEST(ListenErrorsTest, LiveUnixServerIsNotTakenOver) {
    const std::string path = temp_path("live.sock");
    {
        App first;
        quick_options(first.options());
        add_basic_routes(first);
        start_app(first, 1, "unix:" + path);
        App second;
        second.listen("unix:" + path);
        EXPECT_EQ(start_error(second), "cannot listen on unix:" + path +
                                           ": a server is already listening on this socket");
        Client c = Client::unix_socket(path);
        EXPECT_TRUE(c.connected()) << "the live server lost its path";
    }
    ::unlink(path.c_str());
}

// The first endpoint opens (2 loops: 2 TCP sockets, a Unix socket and its dup), the last one
// fails: everything opened so far, and the workers' loops, are closed before start() throws.
TEST(ListenErrorsTest, NoFdLeakWhenALaterEndpointFails) {
    PortHolder holder;
    ASSERT_TRUE(holder.ok());
    const std::string path = temp_path("leak.sock");
    const std::size_t before = open_fds();
    {
        App app;
        add_basic_routes(app);
        app.listen("127.0.0.1:0");
        app.listen("unix:" + path);
        app.listen("127.0.0.1:" + std::to_string(holder.port()));
        EXPECT_EQ(start_error(app, 2), in_use("127.0.0.1:" + std::to_string(holder.port())));
        EXPECT_EQ(open_fds(), before) << "fds left open while the App lives on";
        EXPECT_EQ(app.wait(), 0);
    }
    EXPECT_EQ(open_fds(), before);
    ::unlink(path.c_str());
}

// After a failed start the same App starts fine once the port is free.
TEST(ListenErrorsTest, StartAgainAfterTheHolderLeaves) {
    auto holder = std::make_unique<PortHolder>();
    ASSERT_TRUE(holder->ok());
    const std::uint16_t port = holder->port();
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.listen("127.0.0.1:" + std::to_string(port));
    EXPECT_NE(start_error(app, 2), "started");
    holder.reset();
    EXPECT_EQ(start_error(app, 2), "started");
    EXPECT_EQ(app.port(), port);
    EXPECT_TRUE(serves(port));
}

// ---- The hello example's command line ----------------------------------------------------

#ifdef VELA_HELLO_BINARY

struct Outcome {
    int exit_code = -1;  // -1: killed (it ran past the deadline)
    std::string out, err;
};

// Runs hello with `args`; kills it after `deadline`.
Outcome run_hello(std::vector<std::string> args, Ms deadline = Ms{10'000}) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) < 0 || ::pipe2(err, O_CLOEXEC) < 0) return {};
    args.insert(args.begin(), VELA_HELLO_BINARY);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    Outcome o;
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    std::string* sink[2] = {&o.out, &o.err};
    const auto t0 = SteadyClock::now();
    int open = 2;
    bool killed = false;
    while (open > 0) {
        const long long left = deadline.count() - ms_since(t0);
        if (left <= 0 && !killed) {
            ::kill(pid, SIGKILL);
            killed = true;
        }
        if (::poll(fds, 2, left > 0 ? static_cast<int>(left) : 100) < 0) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
            char buf[4096];
            const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sink[i]->append(buf, static_cast<std::size_t>(n));
            } else {
                ::close(fds[i].fd);
                fds[i].fd = -1;
                --open;
            }
        }
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
    return o;
}

TEST(HelloCommandLineTest, HelpPrintsUsageAndExitsZero) {
    for (const char* flag : {"--help", "-h"}) {
        Outcome o = run_hello({flag});
        EXPECT_EQ(o.exit_code, 0) << flag;
        EXPECT_NE(o.out.find("usage: hello"), std::string::npos) << o.out;
        for (const char* opt : {"--port", "--threads", "--tls-cert", "--tls-key", "--tls-port"})
            EXPECT_NE(o.out.find(opt), std::string::npos) << "usage does not mention " << opt;
        EXPECT_EQ(o.err, "");
    }
}

TEST(HelloCommandLineTest, BadCommandLinesExitTwoWithOneLine) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--port", "99999"},
         "hello: invalid value '99999' for --port (expected 0 to 65535) (see --help)\n"},
        {{"--port", "abc"},
         "hello: invalid value 'abc' for --port (expected 0 to 65535) (see --help)\n"},
        {{"--port=8o"},
         "hello: invalid value '8o' for --port (expected 0 to 65535) (see --help)\n"},
        {{"--threads", "-1"},
         "hello: invalid value '-1' for --threads (expected 0 to 1024) (see --help)\n"},
        {{"--tls-port", ""},
         "hello: invalid value '' for --tls-port (expected 0 to 65535) (see --help)\n"},
        {{"--bogus"}, "hello: unknown option '--bogus' (see --help)\n"},
        {{"8080"}, "hello: unknown option '8080' (see --help)\n"},
        {{"--port"}, "hello: missing value for --port (see --help)\n"},
        {{"--threads", "2", "--tls-key"}, "hello: missing value for --tls-key (see --help)\n"},
        {{"--tls-cert", "cert.pem"}, "hello: --tls-cert needs --tls-key (see --help)\n"},
        {{"--tls-key", "key.pem"}, "hello: --tls-key needs --tls-cert (see --help)\n"},
    };
    for (const auto& [args, line] : cases) {
        std::string shown;
        for (const auto& a : args) shown += " '" + a + "'";
        Outcome o = run_hello(args);
        EXPECT_EQ(o.exit_code, 2) << shown;
        EXPECT_EQ(o.err, line) << shown;
        EXPECT_EQ(o.out, "") << shown;
    }
}

TEST(HelloCommandLineTest, TakenPortGivesOneLineAndExitsOne) {
    PortHolder holder(false, "0.0.0.0");
    ASSERT_TRUE(holder.ok());
    Outcome o = run_hello({"--port", std::to_string(holder.port()), "--threads", "1"});
    EXPECT_EQ(o.exit_code, 1) << "stdout: " << o.out << "\nstderr: " << o.err;
    const std::string all = o.out + o.err;  // vela::log writes to spdlog's default sink (stdout)
    const std::string line = in_use("0.0.0.0:" + std::to_string(holder.port()));
    EXPECT_NE(all.find(line), std::string::npos) << all;
    EXPECT_EQ(all.find(line), all.rfind(line)) << "reported twice: " << all;
    EXPECT_EQ(all.find("terminate called"), std::string::npos) << all;
    EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 1) << all;
}

#endif  // VELA_HELLO_BINARY

}  // namespace
}  // namespace vela::e2e
