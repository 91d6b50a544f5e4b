#pragma once
// Servers for the client and proxy end-to-end tests (the HTTP client, the WebSocket client,
// the reverse proxy) that no real server is: a raw socket that runs a script per connection
// (answers that break HTTP on purpose, the bytes a client really sent), a forward proxy, and
// python3's http.server as a real peer that is not vela.

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "e2e/client.hpp"
#include "e2e/example_process.hpp"
#include "vela/net/socket.hpp"

namespace vela::e2e {

/// A server on 127.0.0.1 that runs `script(fd)` for each connection it accepts, on its own
/// thread, one connection at a time (for answers no real server gives).
class RawServer {
  public:
    /// Listens on a free loopback port and serves each connection with `script`.
    explicit RawServer(std::function<void(int)> script) : script_(std::move(script)) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int one = 1;
        ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
        EXPECT_EQ(::listen(fd_, 64), 0);
        port_ = net::local_port(fd_);
        thread_ = std::thread([this] {
            while (!stop_) {
                pollfd p{fd_, POLLIN, 0};
                if (::poll(&p, 1, 50) <= 0) continue;
                const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
                if (c < 0) continue;
                ++accepted;
                script_(c);
                ::close(c);
            }
        });
    }
    /// Stops accepting and joins the thread.
    ~RawServer() {
        stop_ = true;
        thread_.join();
        ::close(fd_);
    }
    /// "http://127.0.0.1:<port><path>".
    std::string url(std::string_view path = "/") const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }
    /// Connections accepted so far.
    std::atomic<int> accepted{0};

  private:
    std::function<void(int)> script_;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

/// Reads one request head (up to the blank line) from `fd`; what came when the connection
/// ended or stayed silent for 3 s.
inline std::string read_head(int fd) {
    std::string got;
    char c;
    while (got.find("\r\n\r\n") == std::string::npos) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 3000) <= 0) return got;
        if (::read(fd, &c, 1) != 1) return got;
        got += c;
    }
    return got;
}

/// Writes all of `s` to `fd` (stops at an error).
inline void write_all(int fd, std::string_view s) {
    while (!s.empty()) {
        const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
        if (n <= 0) return;
        s.remove_prefix(static_cast<std::size_t>(n));
    }
}

/// python3 -m http.server serving a temporary directory holding file.txt (`content`) on a
/// free loopback port; stopped and removed when destroyed. The caller waits for it to listen.
class PythonHttpServer {
  public:
    /// Starts it.
    explicit PythonHttpServer(std::string_view content)
        : dir_(::testing::TempDir() + "vela-py-" + std::to_string(::getpid()) + "-" +
               std::to_string(next_id()++)),
          port_(free_port()) {
        std::filesystem::create_directories(dir_);
        std::ofstream(dir_ + "/file.txt") << content;
        pid_ = ::fork();
        if (pid_ == 0) {
            const std::string p = std::to_string(port_);
            ::execl("/usr/bin/python3", "python3", "-m", "http.server", "--bind", "127.0.0.1",
                    "--directory", dir_.c_str(), p.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    /// Stops it and removes its directory.
    ~PythonHttpServer() {
        ::kill(pid_, SIGTERM);
        ::waitpid(pid_, nullptr, 0);
        std::filesystem::remove_all(dir_);
    }
    PythonHttpServer(const PythonHttpServer&) = delete;
    PythonHttpServer& operator=(const PythonHttpServer&) = delete;
    /// "http://127.0.0.1:<port>".
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  private:
    static int& next_id() {
        static int id = 0;
        return id;
    }
    std::string dir_;
    std::uint16_t port_;
    pid_t pid_ = -1;
};

/// A forward proxy on 127.0.0.1: CONNECT opens a tunnel, an absolute-form request is passed
/// on to its host as it is; both are relayed byte for byte. It records each request line and
/// Proxy-Authorization, and answers 407 when `require_auth` is set and the header is absent.
class ForwardProxy {
  public:
    explicit ForwardProxy(bool require_auth = false)
        : server_([this, require_auth](int fd) { serve(fd, require_auth); }) {}
    std::string url() const {
        const std::string u = server_.url();
        return u.substr(0, u.size() - 1);
    }
    std::vector<std::string> lines() {
        std::lock_guard lk(mu_);
        return lines_;
    }
    std::vector<std::string> auths() {
        std::lock_guard lk(mu_);
        return auths_;
    }

  private:
    void serve(int fd, bool require_auth) {
        const std::string head = read_head(fd);
        if (head.empty()) return;
        const std::string line = head.substr(0, head.find("\r\n"));
        std::string auth;
        if (const auto at = head.find("Proxy-Authorization: "); at != std::string::npos)
            auth = head.substr(at + 21, head.find("\r\n", at) - at - 21);
        {
            std::lock_guard lk(mu_);
            lines_.push_back(line);
            auths_.push_back(auth);
        }
        if (require_auth && auth.empty()) {
            write_all(fd,
                      "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n");
            return;
        }
        // "CONNECT 127.0.0.1:port HTTP/1.1" or "GET http://127.0.0.1:port/path HTTP/1.1"
        const bool tunnel = line.starts_with("CONNECT ");
        std::string target = line.substr(line.find(' ') + 1);
        target = target.substr(0, target.find(' '));
        if (!tunnel) target = target.substr(7, target.find('/', 7) - 7);
        const std::uint16_t port =
            static_cast<std::uint16_t>(std::stoi(target.substr(target.rfind(':') + 1)));
        const int up = connect_loopback(port);
        if (up < 0) return;
        if (tunnel)
            write_all(fd, "HTTP/1.1 200 Connection established\r\n\r\n");
        else
            write_all(up, head);
        relay(fd, up);
        ::close(up);
    }
    static void relay(int a, int b) {
        char buf[16384];
        for (;;) {
            pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
            if (::poll(p, 2, 3000) <= 0) return;
            for (int i = 0; i < 2; ++i) {
                if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                const ssize_t n = ::read(p[i].fd, buf, sizeof buf);
                if (n <= 0) return;
                write_all(i ? a : b, std::string_view(buf, static_cast<std::size_t>(n)));
            }
        }
    }
    std::mutex mu_;
    std::vector<std::string> lines_, auths_;
    RawServer server_;
};

}  // namespace vela::e2e
