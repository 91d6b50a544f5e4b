#pragma once
// An example server (examples/*) run as its own process by an end-to-end test: started on a
// free loopback port, waited for until it accepts, stopped with SIGTERM (a graceful shutdown
// must exit with 0).

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "e2e/client.hpp"

namespace vela::e2e {

/// A port nobody listens on right now.
inline std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    ::close(fd);
    return ntohs(sa.sin_port);
}

/// One example server process; stopped (and its exit checked) when destroyed.
class ExampleProcess {
  public:
    ExampleProcess() = default;
    ExampleProcess(const ExampleProcess&) = delete;
    ExampleProcess& operator=(const ExampleProcess&) = delete;
    ~ExampleProcess() { stop(); }

    /// Runs `binary --port <free port> args...` with its stdout to /dev/null and waits up to
    /// 10 s until it accepts; a test failure when it exits or never listens.
    void start(const std::string& binary, std::vector<std::string> args) {
        port_ = free_port();
        args.insert(args.begin(), {binary, "--port", std::to_string(port_)});
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_ = ::fork();
        if (pid_ == 0) {
            const int null = ::open("/dev/null", O_WRONLY);
            ::dup2(null, 1);
            ::execv(binary.c_str(), argv.data());
            ::_exit(127);
        }
        for (int i = 0; i < 200; ++i) {
            Client c = Client::tcp(port_);
            if (c.connected()) return;
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                FAIL() << binary << " exited at start, status " << status;
            }
            std::this_thread::sleep_for(Ms{50});
        }
        FAIL() << binary << " did not start";
    }

    /// Stops it with SIGTERM; it must exit with 0 (a graceful shutdown).
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    }

    /// The port it listens on.
    std::uint16_t port() const noexcept { return port_; }
    /// "http://127.0.0.1:<port><path>".
    std::string url(std::string_view path) const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }

  private:
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
};

}  // namespace vela::e2e
