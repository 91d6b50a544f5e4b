#include "activation.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>

#include "vela/base/log.hpp"

extern char** environ;

namespace vela::detail {
namespace {

constexpr int kFirstFd = 3;  // SD_LISTEN_FDS_START

std::mutex g_mutex;
bool g_taken = false;
std::vector<PassedSocket> g_pool;  // read, not yet served by a Server
int g_ready_fd = -1;               // VELA_RESTART_FD, until announce_ready() writes to it
bool g_successor = false;          // started by a predecessor's hot restart
std::atomic<bool> g_announced{false};

// A whole non-negative decimal number, or -1.
long parse_number(const char* s) {
    if (!s || !*s) return -1;
    long v = 0;
    const char* end = s + std::strlen(s);
    auto [p, ec] = std::from_chars(s, end, v);
    return ec == std::errc{} && p == end && v >= 0 ? v : -1;
}

// Where `fd` listens, false when it is not a listening stream socket.
bool describe(int fd, net::Endpoint& ep) {
    int type = 0, listening = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return false;
    len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
        return false;
    sockaddr_storage ss{};
    len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;
    char text[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
        ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
        ep = net::Endpoint{net::Endpoint::Kind::tcp4, text, ntohs(a.sin_port), {}};
        return true;
    }
    if (ss.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
        ::inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
        ep = net::Endpoint{net::Endpoint::Kind::tcp6, text, ntohs(a.sin6_port), {}};
        return true;
    }
    if (ss.ss_family == AF_UNIX) {
        const auto& a = reinterpret_cast<const sockaddr_un&>(ss);
        const std::size_t n =
            len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
        std::string path;
        if (n > 0 && a.sun_path[0] == '\0') {  // abstract: "@name", as systemd writes it
            path.assign(a.sun_path, n);
            path[0] = '@';
        } else {
            path.assign(a.sun_path, ::strnlen(a.sun_path, n));
        }
        ep = net::Endpoint{net::Endpoint::Kind::unix_path, {}, 0, std::move(path)};
        return true;
    }
    return false;
}

// The binary form of a numeric address, for comparing "127.0.0.1" with "127.000.0.1"...
bool same_address(int family, const std::string& a, const std::string& b) {
    unsigned char x[16] = {}, y[16] = {};
    if (::inet_pton(family, a.c_str(), x) != 1 || ::inet_pton(family, b.c_str(), y) != 1)
        return a == b;
    return std::memcmp(x, y, family == AF_INET ? 4 : 16) == 0;
}

// Writes `v` in decimal at `out` (async-signal-safe); returns the end.
char* put_number(char* out, long v) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (n > 0) *out++ = digits[--n];
    *out = '\0';
    return out;
}

bool is_handover_variable(const char* e) {
    for (const char* name : {"LISTEN_PID=", "LISTEN_FDS=", "LISTEN_FDNAMES=", "VELA_RESTART_FD="})
        if (std::strncmp(e, name, std::strlen(name)) == 0) return true;
    return false;
}

}  // namespace

std::vector<PassedSocket> take_passed_sockets() {
    std::lock_guard lock(g_mutex);
    std::vector<PassedSocket> out;
    if (g_taken) {
        out.swap(g_pool);
        return out;
    }
    g_taken = true;
    const long pid = parse_number(std::getenv("LISTEN_PID"));
    const long count = parse_number(std::getenv("LISTEN_FDS"));
    const char* names = std::getenv("LISTEN_FDNAMES");
    const long ready = parse_number(std::getenv("VELA_RESTART_FD"));
    const bool ours = pid == static_cast<long>(::getpid());
    if (ours && ready >= 0 && ::fcntl(static_cast<int>(ready), F_GETFD) >= 0) {
        g_ready_fd = static_cast<int>(ready);
        g_successor = true;
        ::fcntl(g_ready_fd, F_SETFD, FD_CLOEXEC);
    }
    if (ours && count > 0) {
        std::string_view rest = names ? names : "";
        for (long i = 0; i < count; ++i) {
            const int fd = kFirstFd + static_cast<int>(i);
            std::string name;
            if (!rest.empty() || names) {
                const std::size_t colon = rest.find(':');
                name = std::string(rest.substr(0, colon));
                rest =
                    colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
            }
            PassedSocket s;
            s.fd = fd;
            s.name = std::move(name);
            if (!describe(fd, s.where)) {
                log::warn("LISTEN_FDS: fd {} is not a listening stream socket; left alone", fd);
                continue;
            }
            ::fcntl(fd, F_SETFD, FD_CLOEXEC);
            ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
            out.push_back(std::move(s));
        }
    } else if (count > 0 && pid >= 0) {
        log::warn("LISTEN_FDS is set for process {}, not this one ({}); ignored", pid,
                  static_cast<long>(::getpid()));
    }
    // Not for our children (sd_listen_fds(3) with unset_environment). Only when set: the
    // environment is not written to by a process that was handed nothing.
    for (const char* v : {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "VELA_RESTART_FD"})
        if (std::getenv(v)) ::unsetenv(v);
    return out;
}

void return_passed_sockets(std::vector<PassedSocket> unused) {
    std::lock_guard lock(g_mutex);
    for (PassedSocket& s : unused) g_pool.push_back(std::move(s));
}

// A predecessor names its sockets "vela.<endpoint index>": that index must be `index` (so an
// endpoint on port 0 gets its own socket back); the address must match all the same, and the
// port too unless the endpoint asks for any.
bool passed_socket_matches(const PassedSocket& s, const net::Endpoint& ep, std::size_t index) {
    bool any_port = false;
    if (s.name.starts_with("vela.")) {
        std::size_t i = 0;
        const std::string_view n = std::string_view(s.name).substr(5);
        auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), i);
        if (ec == std::errc{} && p == n.data() + n.size()) {
            if (i != index) return false;
            any_port = ep.port == 0;
        }
    }
    if (ep.kind != net::Endpoint::Kind::unix_path && !any_port &&
        (ep.port == 0 || s.where.port != ep.port))
        return false;
    // systemd's "ListenStream=8080" is [::]:8080 taking IPv4 too: it serves 0.0.0.0:8080.
    if (ep.kind == net::Endpoint::Kind::tcp4 && s.where.kind == net::Endpoint::Kind::tcp6 &&
        same_address(AF_INET, ep.host, "0.0.0.0") && same_address(AF_INET6, s.where.host, "::")) {
        int v6only = 1;
        socklen_t len = sizeof v6only;
        return ::getsockopt(s.fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len) == 0 && !v6only;
    }
    if (s.where.kind != ep.kind) return false;
    if (ep.kind == net::Endpoint::Kind::unix_path) return s.where.path == ep.path;
    return same_address(ep.kind == net::Endpoint::Kind::tcp4 ? AF_INET : AF_INET6, ep.host,
                        s.where.host);
}

void notify_service_manager(std::string_view state) noexcept {
    const char* path = std::getenv("NOTIFY_SOCKET");
    if (!path || (path[0] != '/' && path[0] != '@')) return;
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    const std::size_t n = std::strlen(path);
    if (n >= sizeof sa.sun_path) return;
    std::memcpy(sa.sun_path, path, n);
    if (path[0] == '@') sa.sun_path[0] = '\0';  // abstract namespace
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n);
    if (::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&sa),
                 len) < 0)
        log::warn("NOTIFY_SOCKET {}: {}", path, std::strerror(errno));
    ::close(fd);
}

void announce_ready() {
    if (g_announced.exchange(true)) return;
    int fd = -1;
    bool successor = false;
    {
        std::lock_guard lock(g_mutex);
        fd = std::exchange(g_ready_fd, -1);
        successor = g_successor;
    }
    if (fd >= 0) {
        const char byte = 'R';
        if (::write(fd, &byte, 1) != 1)
            log::warn("hot restart: telling the predecessor failed: {}", std::strerror(errno));
        ::close(fd);
    }
    if (successor)
        notify_service_manager("MAINPID=" + std::to_string(::getpid()) + "\nREADY=1");
    else
        notify_service_manager("READY=1");
}

pid_t spawn_successor(const std::vector<int>& fds, const std::vector<std::string>& names,
                      int ready_fd) {
    // Everything the child needs is made here: between fork and exec only async-signal-safe
    // calls may run (other threads may hold the allocator's locks).
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) throw std::system_error(errno, std::generic_category(), "readlink /proc/self/exe");
    std::string path(exe, static_cast<std::size_t>(n));
    if (path.ends_with(" (deleted)")) path.resize(path.size() - 10);  // replaced by a deploy

    std::string cmdline;  // NUL-separated arguments
    if (const int f = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC); f >= 0) {
        char buf[4096];
        for (ssize_t r; (r = ::read(f, buf, sizeof buf)) > 0;)
            cmdline.append(buf, static_cast<std::size_t>(r));
        ::close(f);
    }
    std::vector<char*> argv;
    for (std::size_t i = 0; i < cmdline.size(); i += std::strlen(cmdline.data() + i) + 1)
        argv.push_back(cmdline.data() + i);
    if (argv.empty()) argv.push_back(path.data());
    argv.push_back(nullptr);

    const int count = static_cast<int>(fds.size());
    std::string joined;
    for (std::size_t i = 0; i < names.size(); ++i) joined += (i ? ":" : "") + names[i];
    std::vector<std::string> added = {"LISTEN_FDS=" + std::to_string(count),
                                      "LISTEN_FDNAMES=" + joined,
                                      "VELA_RESTART_FD=" + std::to_string(kFirstFd + count)};
    char pid_var[40] = "LISTEN_PID=";  // its number is written in the child
    std::vector<char*> envp;
    for (char** e = environ; e && *e; ++e)
        if (!is_handover_variable(*e)) envp.push_back(*e);
    for (std::string& a : added) envp.push_back(a.data());
    envp.push_back(pid_var);
    envp.push_back(nullptr);
    std::vector<int> sources = fds;
    sources.push_back(ready_fd);
    const int high = kFirstFd + count + 1;  // above every target: copies there clobber nothing

    const pid_t pid = ::fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
    if (pid > 0) return pid;
    // The child.
    for (int& fd : sources) {
        fd = ::fcntl(fd, F_DUPFD_CLOEXEC, high);
        if (fd < 0) ::_exit(126);
    }
    for (int i = 0; i <= count; ++i)  // dup2 clears close-on-exec on the copy
        if (::dup2(sources[static_cast<std::size_t>(i)], kFirstFd + i) < 0) ::_exit(126);
    put_number(pid_var + 11, static_cast<long>(::getpid()));
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the server blocks its signals for signalfd
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &dfl, nullptr);  // ignored by the server; the successor decides
    ::execve(path.c_str(), argv.data(), envp.data());
    ::_exit(127);
}

}  // namespace vela::detail
