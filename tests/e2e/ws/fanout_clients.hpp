#pragma once
// Thousands of WebSocket client sessions on one epoll, for the Hub fan-out load test, and a
// child process to run them in.
//
// Why a child process: 10,000 sessions over loopback need a socket on each side. In one
// process that is ~20,000 descriptors, above many machines' hard RLIMIT_NOFILE; with the
// clients in a child each side has its own descriptor table and needs ~10,000.
//
// The sessions only do what the fan-out test needs: a handshake (no extension offered, so
// frames arrive uncompressed), then every server frame must be the next text message of
// broadcast_text(0), broadcast_text(1), ... The server's bytes are read here with this
// file's own reading of RFC 6455 5.2, not vela's.

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "e2e/client.hpp"
#include "vela/ws/frame.hpp"

namespace vela::e2e {

/// The text of the `i`-th broadcast of the fan-out test.
inline std::string broadcast_text(int i) { return "broadcast " + std::to_string(i); }

/// Many sessions to one server path, driven by one epoll on the calling thread.
class FanoutClients {
  public:
    /// Sessions to 127.0.0.1:port that each expect `messages` broadcasts.
    FanoutClients(std::uint16_t port, int messages) : port_(port), messages_(messages) {
        ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    }
    ~FanoutClients() {
        for (Session& s : sessions_)
            if (s.fd >= 0) ::close(s.fd);
        if (ep_ >= 0) ::close(ep_);
    }
    FanoutClients(const FanoutClients&) = delete;
    FanoutClients& operator=(const FanoutClients&) = delete;

    /// Opens `n` sessions at `path`, at most kInFlight handshakes at a time (the listen
    /// backlog is not the thing under test). Empty, or the first failure.
    std::string open(std::string_view path, int n, SteadyClock::time_point deadline) {
        request_ = "GET " + std::string(path) +
                   " HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n";
        sessions_.reserve(static_cast<std::size_t>(n));
        while (upgraded_ < n && error_.empty()) {
            while (static_cast<int>(sessions_.size()) < n &&
                   static_cast<int>(sessions_.size()) - upgraded_ < kInFlight && error_.empty())
                start_session();
            if (!pump(deadline)) break;
        }
        return error_;
    }

    /// Reads until every session got all its messages, in order. Empty, or the first failure.
    std::string receive(SteadyClock::time_point deadline) {
        while (complete_ < static_cast<int>(sessions_.size()) && error_.empty())
            if (!pump(deadline)) break;
        return error_;
    }

    /// Sends every session a close frame, then closes the sockets.
    void close_all() {
        for (Session& s : sessions_) {
            if (s.fd < 0) continue;
            std::string f;
            ws::append_client_frame(f, ws::Opcode::close,
                                    ws::close_payload(ws::close_code::normal, {}), 0x1234abcdu);
            (void)::send(s.fd, f.data(), f.size(), MSG_NOSIGNAL);
            ::close(s.fd);
            s.fd = -1;
        }
    }

  private:
    static constexpr int kInFlight = 256;

    struct Session {
        int fd = -1;
        std::string in;
        int got = 0;  // messages received in order
        bool requested = false;
        bool upgraded = false;
    };

    void fail(std::size_t i, const std::string& what) {
        if (error_.empty()) error_ = "session " + std::to_string(i) + ": " + what;
    }

    void start_session() {
        const std::size_t i = sessions_.size();
        sessions_.emplace_back();
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) return fail(i, std::string("socket: ") + std::strerror(errno));
        sessions_[i].fd = fd;
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(port_);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 && errno != EINPROGRESS)
            return fail(i, std::string("connect: ") + std::strerror(errno));
        epoll_event ev{};
        ev.events = EPOLLOUT | EPOLLIN;
        ev.data.u64 = i;
        if (::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) < 0)
            fail(i, std::string("epoll_ctl: ") + std::strerror(errno));
    }

    // One epoll_wait round; false once the deadline has passed.
    bool pump(SteadyClock::time_point deadline) {
        const auto left = std::chrono::duration_cast<Ms>(deadline - SteadyClock::now()).count();
        if (left <= 0) {
            error_ = "timeout: " + std::to_string(upgraded_) + " sessions open, " +
                     std::to_string(complete_) + " got every message";
            return false;
        }
        epoll_event evs[256];
        const int n = ::epoll_wait(ep_, evs, 256, static_cast<int>(std::min<long long>(left, 100)));
        for (int k = 0; k < n && error_.empty(); ++k)
            on_event(static_cast<std::size_t>(evs[k].data.u64), evs[k].events);
        return true;
    }

    void on_event(std::size_t i, std::uint32_t events) {
        Session& s = sessions_[i];
        if (!s.requested) {
            if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err != 0) return fail(i, std::string("connect: ") + std::strerror(err));
            // A fresh socket's buffer takes the whole request.
            if (::send(s.fd, request_.data(), request_.size(), MSG_NOSIGNAL) !=
                static_cast<ssize_t>(request_.size()))
                return fail(i, "handshake request not sent at once");
            s.requested = true;
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.u64 = i;
            ::epoll_ctl(ep_, EPOLL_CTL_MOD, s.fd, &ev);
            return;
        }
        char buf[16 * 1024];
        for (;;) {
            const ssize_t r = ::recv(s.fd, buf, sizeof buf, 0);
            if (r > 0) {
                s.in.append(buf, static_cast<std::size_t>(r));
                continue;
            }
            if (r < 0 && errno == EINTR) continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            return fail(i, r == 0 ? "connection ended" : std::strerror(errno));
        }
        parse(i);
    }

    void parse(std::size_t i) {
        Session& s = sessions_[i];
        if (!s.upgraded) {
            const std::size_t end = s.in.find("\r\n\r\n");
            if (end == std::string::npos) return;
            if (!s.in.starts_with("HTTP/1.1 101 "))
                return fail(i, "handshake answered " + s.in.substr(0, s.in.find('\r')));
            s.in.erase(0, end + 4);
            s.upgraded = true;
            ++upgraded_;
        }
        std::size_t pos = 0;
        for (;;) {
            const auto* p = reinterpret_cast<const unsigned char*>(s.in.data()) + pos;
            const std::size_t avail = s.in.size() - pos;
            if (avail < 2) break;
            std::size_t head = 2;
            std::size_t len = p[1] & 0x7F;
            if (len == 126) {
                if (avail < 4) break;
                len = (std::size_t{p[2]} << 8) | p[3];
                head = 4;
            } else if (len == 127 || (p[1] & 0x80)) {
                return fail(i, "unexpected frame header");
            }
            if (avail < head + len) break;
            if (p[0] != 0x81)  // FIN + text: nothing else is sent to these sessions
                return fail(i, "unexpected frame, first byte " + std::to_string(p[0]));
            const std::string_view payload(s.in.data() + pos + head, len);
            if (s.got >= messages_ || payload != broadcast_text(s.got))
                return fail(
                    i, "message " + std::to_string(s.got) + " is '" + std::string(payload) + "'");
            if (++s.got == messages_) ++complete_;
            pos += head + len;
        }
        s.in.erase(0, pos);
    }

    std::uint16_t port_;
    int messages_;
    int ep_ = -1;
    std::string request_;
    std::vector<Session> sessions_;
    int upgraded_ = 0;
    int complete_ = 0;
    std::string error_;
};

/// A child process talking to the test over two pipes, one line per message. Killed and
/// reaped when the handle goes, if it has not exited by then.
class ChildProcess {
  public:
    /// Forks; the child runs `body` with this handle (its side of the pipes), then _exits
    /// with what it returned (no atexit handlers, no gtest, no leak check in the child).
    explicit ChildProcess(const std::function<int(ChildProcess&)>& body) {
        int down[2], up[2];
        if (::pipe2(down, O_CLOEXEC) < 0) return;
        if (::pipe2(up, O_CLOEXEC) < 0) {
            ::close(down[0]);
            ::close(down[1]);
            return;
        }
        std::fflush(nullptr);  // nothing buffered is written twice
        pid_ = ::fork();
        if (pid_ == 0) {
            ::close(down[1]);
            ::close(up[0]);
            in_ = down[0];
            out_ = up[1];
            ::_exit(body(*this));
        }
        ::close(down[0]);
        ::close(up[1]);
        in_ = up[0];
        out_ = down[1];
        if (pid_ < 0) close_pipes();
    }
    ~ChildProcess() {
        close_pipes();
        if (pid_ > 0 && !reaped_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    /// True when the fork worked.
    bool started() const noexcept { return pid_ > 0 && in_ >= 0; }

    /// Sends one line to the other side.
    bool write_line(std::string line) {
        line += '\n';
        std::string_view rest = line;
        while (!rest.empty()) {
            const ssize_t n = ::write(out_, rest.data(), rest.size());
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            rest.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

    /// The next line from the other side (without '\n'); "timeout" or "eof" when none.
    std::string read_line(Ms within) {
        const auto deadline = SteadyClock::now() + within;
        for (;;) {
            if (const std::size_t nl = buf_.find('\n'); nl != std::string::npos) {
                std::string line = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                return line;
            }
            const auto left = std::chrono::duration_cast<Ms>(deadline - SteadyClock::now());
            pollfd p{in_, POLLIN, 0};
            const int r = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return "timeout";
            char tmp[512];
            const ssize_t n = ::read(in_, tmp, sizeof tmp);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return "eof";
            buf_.append(tmp, static_cast<std::size_t>(n));
        }
    }

    /// Waits for the child to exit; its exit status, or -1 (killed, or not within `within`).
    int wait_exit(Ms within) {
        const auto deadline = SteadyClock::now() + within;
        while (SteadyClock::now() < deadline) {
            int status = 0;
            const pid_t r = ::waitpid(pid_, &status, WNOHANG);
            if (r == pid_) {
                reaped_ = true;
                return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            }
            std::this_thread::sleep_for(Ms{10});
        }
        return -1;
    }

  private:
    void close_pipes() {
        if (in_ >= 0) ::close(in_);
        if (out_ >= 0) ::close(out_);
        in_ = out_ = -1;
    }

    pid_t pid_ = -1;
    int in_ = -1;
    int out_ = -1;
    bool reaped_ = false;
    std::string buf_;
};

}  // namespace vela::e2e
