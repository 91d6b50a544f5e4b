#pragma once
// What the multi-node tests share: vela_cluster_node processes (tests/cluster/node.cpp) with
// their log in a file, curl for requests, free ports, and a scratch directory.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/example_process.hpp"
#include "e2e/process.hpp"

namespace vela::cluster {

using namespace std::chrono_literals;
using e2e::free_port;
using e2e::run_command;
using e2e::shell_quote;

/// A scratch directory removed at the end of the test.
class TempDir {
  public:
    TempDir() {
        char tmpl[] = "/tmp/vela-cluster-XXXXXX";
        path_ = ::mkdtemp(tmpl);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    /// The directory.
    const std::string& path() const { return path_; }
    /// A path inside it.
    std::string file(const std::string& name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

/// The whole content of a file ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

/// Makes this process the reaper of its orphaned descendants: a node's successor (started by
/// a hot restart) becomes our child when its predecessor exits, so the test can wait for it.
inline void adopt_orphans() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

/// Waits up to `timeout` for process `pid` (our child) to exit; its wait status, or -1.
inline int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        int status = 0;
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        if (r < 0) return -1;
        std::this_thread::sleep_for(20ms);
    }
    return -1;
}

/// curl's answer: the HTTP status (0: none) and the body.
struct Reply {
    int status = 0;
    std::string body;
};

/// GET (or `method`) http://127.0.0.1:port + path with curl, extra curl arguments in `args`.
inline Reply http(std::uint16_t port, const std::string& path, const std::string& args = "") {
    const e2e::Ran r = run_command("curl -s -m 10 -w '\\n%{http_code}' " + args + " " +
                                   shell_quote("http://127.0.0.1:" + std::to_string(port) + path));
    Reply out;
    const std::size_t nl = r.out.rfind('\n');
    if (nl == std::string::npos) return out;
    out.status = std::atoi(r.out.c_str() + nl + 1);
    out.body = r.out.substr(0, nl);
    return out;
}

/// Waits until something answers GET path on `port` with 200; false after `timeout`.
inline bool wait_ready(std::uint16_t port, const std::string& path = "/health",
                       std::chrono::milliseconds timeout = 10s) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        if (http(port, path).status == 200) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

/// One vela_cluster_node process, its stderr (the log) in a file; SIGTERMed and reaped when
/// destroyed.
class Node {
  public:
    Node() = default;
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    ~Node() { stop(); }

    /// Starts `binary` with `args` (its stdout and stderr to `log`), through /bin/sh when
    /// `env` is set (prepended as "VAR=value ... exec binary args").
    void start(const std::string& binary, const std::vector<std::string>& args,
               const std::string& log, const std::string& env = "") {
        log_ = log;
        std::string cmd = env.empty() ? "exec " : env + " exec ";
        cmd += shell_quote(binary);
        for (const std::string& a : args) cmd += " " + shell_quote(a);
        cmd += " >>" + shell_quote(log) + " 2>&1";
        pid_ = ::fork();
        if (pid_ == 0) {
            ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    /// The process (the first one: a hot restart's successor has its own pid).
    pid_t pid() const { return pid_; }
    /// Its log so far.
    std::string log() const { return read_file(log_); }
    /// Sends `sig`.
    void signal(int sig) const {
        if (pid_ > 0) ::kill(pid_, sig);
    }
    /// Waits for it to exit; its wait status (-1 if it did not within `timeout`).
    int wait(std::chrono::milliseconds timeout = 15s) {
        if (pid_ <= 0) return -1;
        const int s = wait_exit(pid_, timeout);
        if (s != -1) pid_ = -1;
        return s;
    }
    /// SIGTERM and wait (SIGKILL after 15 s).
    void stop() {
        if (pid_ <= 0) return;
        signal(SIGTERM);
        if (wait() == -1) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            pid_ = -1;
        }
    }
    /// Forgets the process (it was reaped elsewhere, or handed over).
    void release() { pid_ = -1; }
    /// Takes over process `pid` (a successor) with the same log.
    void adopt(pid_t pid) { pid_ = pid; }

  private:
    pid_t pid_ = -1;
    std::string log_;
};

/// True when the wait status says "exited with 0".
inline bool exited_cleanly(int status) {
    return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace vela::cluster
