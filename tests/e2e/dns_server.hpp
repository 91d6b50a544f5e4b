#pragma once
// A DNS server on 127.0.0.1 (UDP) for the client's resolution tests: answers A queries for
// the names it was given with their address and TTL, AAAA queries with no record (NODATA),
// and any other name with NXDOMAIN; or nothing at all, when silent. Counts the queries.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace vela::e2e {

/// A scripted DNS server (RFC 1035 messages over UDP) on a free loopback port.
class DnsServer {
  public:
    struct Record {
        std::string ipv4;  // "127.0.0.1"
        std::uint32_t ttl = 60;
    };

    DnsServer() {
        fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
        socklen_t len = sizeof sa;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
        port_ = ntohs(sa.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~DnsServer() {
        stop_ = true;
        thread_.join();
        ::close(fd_);
    }
    DnsServer(const DnsServer&) = delete;
    DnsServer& operator=(const DnsServer&) = delete;

    /// "127.0.0.1:port", for ClientOptions::dns_servers.
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    /// Answers `name` (lower case, no trailing dot) with `r` from now on.
    void set(const std::string& name, Record r) {
        std::lock_guard lk(mu_);
        records_[name] = std::move(r);
    }
    /// Stops answering (queries are still counted).
    void silence() { silent_ = true; }
    /// A queries received for `name`.
    int a_queries(const std::string& name) {
        std::lock_guard lk(mu_);
        return a_queries_[name];
    }

  private:
    void serve() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            unsigned char q[512];
            sockaddr_storage from{};
            socklen_t flen = sizeof from;
            const ssize_t n =
                ::recvfrom(fd_, q, sizeof q, 0, reinterpret_cast<sockaddr*>(&from), &flen);
            if (n < 12) continue;
            // The question: labels, then QTYPE and QCLASS.
            std::string name;
            std::size_t at = 12;
            while (at < static_cast<std::size_t>(n) && q[at] != 0) {
                const std::size_t l = q[at++];
                if (at + l > static_cast<std::size_t>(n)) break;
                if (!name.empty()) name += '.';
                for (std::size_t i = 0; i < l; ++i)
                    name += static_cast<char>(std::tolower(q[at + i]));
                at += l;
            }
            const std::size_t qend = at + 5;  // the root label, QTYPE, QCLASS
            if (qend > static_cast<std::size_t>(n)) continue;
            const int qtype = q[at + 1] << 8 | q[at + 2];
            Record r;
            bool known = false;
            {
                std::lock_guard lk(mu_);
                if (qtype == 1) ++a_queries_[name];
                const auto it = records_.find(name);
                if (it != records_.end()) {
                    r = it->second;
                    known = true;
                }
            }
            if (silent_) continue;
            std::string out(reinterpret_cast<const char*>(q), qend);
            out[2] = static_cast<char>(0x81 | (q[2] & 0x01));    // QR, opcode 0, RD copied
            out[3] = static_cast<char>(0x80 | (known ? 0 : 3));  // RA; NOERROR or NXDOMAIN
            out[4] = 0, out[5] = 1;                              // QDCOUNT 1
            const bool answer = known && qtype == 1;
            out[6] = 0, out[7] = answer ? 1 : 0;  // ANCOUNT
            out[8] = out[9] = out[10] = out[11] = 0;
            if (answer) {
                const unsigned char rr[] = {0xc0, 0x0c, 0, 1, 0, 1};  // the question's name, A, IN
                out.append(reinterpret_cast<const char*>(rr), sizeof rr);
                for (int s = 24; s >= 0; s -= 8) out += static_cast<char>(r.ttl >> s & 0xff);
                out += '\0', out += '\4';
                in_addr a{};
                ::inet_pton(AF_INET, r.ipv4.c_str(), &a);
                out.append(reinterpret_cast<const char*>(&a), 4);
            }
            ::sendto(fd_, out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&from), flen);
        }
    }

    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false}, silent_{false};
    std::mutex mu_;
    std::map<std::string, Record> records_;
    std::map<std::string, int> a_queries_;
    std::thread thread_;
};

}  // namespace vela::e2e
