// Running out of file descriptors must shed connections, not spin: a level-triggered
// listener with a pending connection it cannot accept would otherwise wake the loop forever.

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "vela/net/socket.hpp"
#include "vela/vela.hpp"

namespace {

// The highest open descriptor number (-1: none).
int highest_open_fd() {
    int highest = -1;
    DIR* d = ::opendir("/proc/self/fd");
    const int own = ::dirfd(d);
    while (const dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        const int fd = std::atoi(e->d_name);
        if (fd != own) highest = std::max(highest, fd);
    }
    ::closedir(d);
    return highest;
}

// Makes exactly `spare` descriptors available under RLIMIT_NOFILE. The limit bounds descriptor
// numbers, not how many are open, and earlier tests in the same process leave holes below
// their highest descriptor: each hole below the limit would be one more free descriptor. So
// every hole is filled with /dev/null first (open() takes the lowest free number), and the
// limit set just above the highest descriptor. `fillers` gets them, to close once the limit is
// lifted again. False when setrlimit fails.
bool leave_only_free_descriptors(int spare, std::vector<int>& fillers) {
    const int highest = highest_open_fd();
    for (;;) {
        const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) break;   // the limit is reached already: no hole left either
        if (fd > highest) {  // no hole below the highest descriptor any more
            ::close(fd);
            break;
        }
        fillers.push_back(fd);
    }
    rlimit low;
    getrlimit(RLIMIT_NOFILE, &low);
    low.rlim_cur = static_cast<rlim_t>(highest + 1 + spare);
    return setrlimit(RLIMIT_NOFILE, &low) == 0;
}

double process_cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Child side: raw syscalls only (the parent has threads). Opens `count` connections, sends a
// request on each and reports how many got a 200; then waits for the parent's go to exit.
[[noreturn]] void child(std::uint16_t port, int count, int report_fd, int go_fd) {
    rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int ok = 0;
    const char req[] = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
    for (int i = 0; i < count; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) continue;
        timeval tv{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::send(fd, req, sizeof req - 1, MSG_NOSIGNAL);
        char buf[512];
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 12 && std::memcmp(buf, "HTTP/1.1 200", 12) == 0) ++ok;
    }
    ::write(report_fd, &ok, sizeof ok);
    char go;
    ::read(go_fd, &go, 1);
    ::_exit(0);
}

TEST(Emfile, ShedsConnectionsWithoutSpinningAndRecovers) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    // The sanitizers' own checks need spare descriptors (UBSan's vptr check probes memory
    // through a pipe), so they misreport once the process is out of them.
    GTEST_SKIP() << "needs free file descriptors that a sanitizer runtime would take";
#endif
    vela::log::set_level(vela::log::Level::error);
    vela::App app;
    app.get("/", [] { return "ok"; });
    app.listen("127.0.0.1:0");
    app.start(1);
    const std::uint16_t port = app.port();

    int report[2], go[2];
    ASSERT_EQ(::pipe(report), 0);
    ASSERT_EQ(::pipe(go), 0);
    rlimit saved;
    getrlimit(RLIMIT_NOFILE, &saved);
    // Room for a few connections only, whatever descriptors earlier tests left open.
    std::vector<int> fillers;
    ASSERT_TRUE(leave_only_free_descriptors(6, fillers));

    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) child(port, 20, report[1], go[0]);

    int served = -1;
    ASSERT_EQ(::read(report[0], &served, sizeof served), static_cast<ssize_t>(sizeof served));
    EXPECT_GE(served, 1) << "some connections fit under the limit";
    EXPECT_LT(served, 20) << "the limit was reached";

    // The child keeps its connections open; the listener may still have pending ones.
    const double before = process_cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    const double used = process_cpu_seconds() - before;
    EXPECT_LT(used, 0.3) << "the loop spins while out of descriptors";

    ::write(go[1], "x", 1);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
    for (int fd : {report[0], report[1], go[0], go[1]}) ::close(fd);
    for (int fd : fillers) ::close(fd);

    // With descriptors back, the server answers again.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int fd = vela::net::connect_tcp("127.0.0.1", port);
    ASSERT_GE(fd, 0);
    const char req[] = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
    ASSERT_GT(::send(fd, req, sizeof req - 1, 0), 0);
    char buf[512];
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 12);
    EXPECT_EQ(std::memcmp(buf, "HTTP/1.1 200", 12), 0);
    ::close(fd);
    app.stop();
    app.wait();
}

}  // namespace
