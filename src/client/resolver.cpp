#include "client/resolver.hpp"

#include <ares.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>

#include "vela/client/client.hpp"
#include "vela/reactor/blocking.hpp"

namespace vela::http::detail {

namespace {

bool numeric(const std::string& host, Address& a, std::uint16_t port) {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&a.sa);
    if (::inet_pton(AF_INET, host.c_str(), &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        a.len = sizeof(sockaddr_in);
        return true;
    }
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.sa);
    if (::inet_pton(AF_INET6, host.c_str(), &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        a.len = sizeof(sockaddr_in6);
        return true;
    }
    return false;
}

void set_port(Address& a, std::uint16_t port) {
    if (a.sa.ss_family == AF_INET)
        reinterpret_cast<sockaddr_in*>(&a.sa)->sin_port = htons(port);
    else
        reinterpret_cast<sockaddr_in6*>(&a.sa)->sin6_port = htons(port);
}

// One c-ares channel: made per lookup on the thread that runs it (a channel is not shared
// between threads), with the client's name servers when it has its own.
class Channel {
  public:
    explicit Channel(const std::string& servers) {
        static const int library = ::ares_library_init(ARES_LIB_INIT_ALL);
        if (library != ARES_SUCCESS)
            throw ConnectError(std::string("cannot start c-ares: ") + ::ares_strerror(library));
        ares_options o{};
        const int rc = ::ares_init_options(&ch_, &o, 0);
        if (rc != ARES_SUCCESS) {
            throw ConnectError(std::string("cannot start the DNS resolver: ") +
                               ::ares_strerror(rc) + " (check /etc/resolv.conf)");
        }
        if (!servers.empty()) {
            const int set = ::ares_set_servers_ports_csv(ch_, servers.c_str());
            if (set != ARES_SUCCESS) {
                ::ares_destroy(ch_);
                throw std::invalid_argument("ClientOptions::dns_servers: " +
                                            std::string(::ares_strerror(set)));
            }
        }
    }
    ~Channel() { ::ares_destroy(ch_); }
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;
    ares_channel get() const { return ch_; }

  private:
    ares_channel ch_ = nullptr;
};

struct Answer {
    std::vector<Address> addrs;
    std::chrono::seconds ttl{0};
};

struct Pending {
    bool done = false;
    int status = ARES_SUCCESS;
    Answer answer;
};

// c-ares's callback (a C frame above it: nothing may escape).
void on_addrinfo(void* arg, int status, int /*timeouts*/, ares_addrinfo* res) noexcept {
    const std::unique_ptr<ares_addrinfo, void (*)(ares_addrinfo*)> owned(res, ::ares_freeaddrinfo);
    auto* p = static_cast<Pending*>(arg);
    p->done = true;
    p->status = status;
    if (res == nullptr) return;
    try {
        std::int64_t ttl = std::numeric_limits<std::int32_t>::max();
        for (const ares_addrinfo_node* n = res->nodes; n; n = n->ai_next) {
            if (n->ai_family != AF_INET && n->ai_family != AF_INET6) continue;
            if (n->ai_addrlen > sizeof(sockaddr_storage)) continue;
            Address a;
            std::memcpy(&a.sa, n->ai_addr, n->ai_addrlen);
            a.len = n->ai_addrlen;
            p->answer.addrs.push_back(a);
            ttl = std::min<std::int64_t>(ttl, std::max(n->ai_ttl, 0));
        }
        // A CNAME on the way bounds the answer too (RFC 1034 3.6.2).
        for (const ares_addrinfo_cname* c = res->cnames; c; c = c->next)
            ttl = std::min<std::int64_t>(ttl, std::max(c->ttl, 0));
        p->answer.ttl = std::chrono::seconds(p->answer.addrs.empty() ? 0 : ttl);
    } catch (...) {  // out of memory: no answer
        p->status = ARES_ENOMEM;
        p->answer = Answer{};
    }
}

// True when the hosts file names `host` (its entries carry no TTL).
bool in_hosts_file(ares_channel ch, const std::string& host) {
    for (const int family : {AF_INET, AF_INET6}) {
        hostent* he = nullptr;
        if (::ares_gethostbyname_file(ch, host.c_str(), family, &he) == ARES_SUCCESS) {
            ::ares_free_hostent(he);
            return true;
        }
    }
    return false;
}

TimeoutError timed_out(const std::string& host, std::chrono::milliseconds timeout) {
    return TimeoutError(TimeoutError::Phase::connect,
                        "cannot resolve \"" + host + "\" within " +
                            std::to_string(timeout.count()) +
                            " ms (check the name servers: /etc/resolv.conf or "
                            "ClientOptions::dns_servers)");
}

// Resolves `host` (blocking this thread, at most `timeout`): the hosts file, then the name
// servers, IPv6 and IPv4 both (A and AAAA), sorted by RFC 6724.
Answer lookup(const std::string& host, const std::string& servers, std::chrono::seconds max_ttl,
              std::chrono::milliseconds timeout) {
    Pending p;  // before the channel: destroying it may still run the callback
    Channel ch(servers);
    ares_addrinfo_hints hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    ::ares_getaddrinfo(ch.get(), host.c_str(), nullptr, &hints, on_addrinfo, &p);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!p.done) {
        ares_socket_t socks[ARES_GETSOCK_MAXNUM];
        const int bits = ::ares_getsock(ch.get(), socks, ARES_GETSOCK_MAXNUM);
        pollfd fds[ARES_GETSOCK_MAXNUM];
        nfds_t n = 0;
        for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
            short ev = 0;
            if (ARES_GETSOCK_READABLE(bits, i)) ev |= POLLIN;
            if (ARES_GETSOCK_WRITABLE(bits, i)) ev |= POLLOUT;
            if (ev != 0) fds[n++] = pollfd{socks[i], ev, 0};
        }
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            // Runs the callback: ARES_ECANCELLED, or what already came (A without AAAA).
            ::ares_cancel(ch.get());
            if (p.status == ARES_SUCCESS && !p.answer.addrs.empty()) break;
            throw timed_out(host, timeout);
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
        timeval cap{static_cast<time_t>(left / 1000), static_cast<suseconds_t>(left % 1000 * 1000)};
        timeval tv{};
        const timeval* wait = ::ares_timeout(ch.get(), &cap, &tv);
        const int ms = static_cast<int>(wait->tv_sec * 1000 + (wait->tv_usec + 999) / 1000);
        const int ready = ::poll(fds, n, std::max(ms, 1));
        if (ready <= 0) {
            ::ares_process_fd(ch.get(), ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // retries, timeouts
            continue;
        }
        for (nfds_t i = 0; i < n; ++i) {
            const bool r = fds[i].revents & (POLLIN | POLLERR | POLLHUP);
            const bool w = fds[i].revents & (POLLOUT | POLLERR | POLLHUP);
            if (!r && !w) continue;
            ::ares_process_fd(ch.get(), r ? fds[i].fd : ARES_SOCKET_BAD,
                              w ? fds[i].fd : ARES_SOCKET_BAD);
        }
    }
    // c-ares's own tries (resolv.conf's timeout and attempts) can run out before ours.
    if (p.status == ARES_ETIMEOUT) throw timed_out(host, timeout);
    if (p.status != ARES_SUCCESS || p.answer.addrs.empty()) {
        std::string why = p.status == ARES_SUCCESS ? "no IPv4 or IPv6 address"
                                                   : std::string(::ares_strerror(p.status));
        if (p.status == ARES_ENOTFOUND || p.status == ARES_ENODATA) why += " (check the host name)";
        if (p.status == ARES_ECONNREFUSED || p.status == ARES_ESERVFAIL ||
            p.status == ARES_EREFUSED)
            why += " (check the name servers: /etc/resolv.conf or ClientOptions::dns_servers)";
        throw ConnectError("cannot resolve \"" + host + "\": " + why);
    }
    // A hosts-file name has no TTL (c-ares gives 0): it is kept the longest we keep anything.
    if (p.answer.ttl.count() == 0 && in_hosts_file(ch.get(), host)) p.answer.ttl = max_ttl;
    return std::move(p.answer);
}

// "10.0.0.1", "10.0.0.1:5353", "::1", "[::1]:5353" to c-ares's "host:port" form; throws
// std::invalid_argument for anything else.
std::string server_entry(const std::string& s) {
    auto bad = [&] {
        return std::invalid_argument("ClientOptions::dns_servers: \"" + s +
                                     "\" is not an IP address with an optional port (use "
                                     "\"10.0.0.2\", \"127.0.0.1:5353\" or \"[::1]:53\")");
    };
    std::string host = s;
    std::string port = "53";
    in6_addr a6{};
    in_addr a4{};
    if (!s.empty() && s.front() == '[') {
        const auto close = s.find(']');
        if (close == std::string::npos) throw bad();
        host = s.substr(1, close - 1);
        if (close + 1 != s.size()) {
            if (s[close + 1] != ':') throw bad();
            port = s.substr(close + 2);
        }
        if (::inet_pton(AF_INET6, host.c_str(), &a6) != 1) throw bad();
    } else if (::inet_pton(AF_INET6, s.c_str(), &a6) == 1) {
        host = s;
    } else {
        const auto colon = s.find(':');
        if (colon != std::string::npos) {
            host = s.substr(0, colon);
            port = s.substr(colon + 1);
        }
        if (::inet_pton(AF_INET, host.c_str(), &a4) != 1) throw bad();
    }
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoul(port) == 0 || std::stoul(port) > 65535)
        throw bad();
    return host.find(':') != std::string::npos ? "[" + host + "]:" + port : host + ":" + port;
}

}  // namespace

Resolver::Resolver(std::chrono::seconds max_ttl, const std::vector<std::string>& servers,
                   std::chrono::milliseconds timeout)
    : max_ttl_(max_ttl), timeout_(timeout) {
    for (const std::string& s : servers) {
        if (!servers_.empty()) servers_ += ',';
        servers_ += server_entry(s);
    }
}

Task<std::vector<Address>> Resolver::resolve(const Url& url) {
    std::vector<Address> out;
    if (url.scheme == Scheme::http_unix) {
        Address a;
        auto* un = reinterpret_cast<sockaddr_un*>(&a.sa);
        if (url.host.size() >= sizeof un->sun_path)
            throw ConnectError("Unix socket path too long: " + url.host);
        un->sun_family = AF_UNIX;
        std::memcpy(un->sun_path, url.host.data(), url.host.size());
        a.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + url.host.size() + 1);
        out.push_back(a);
        co_return out;
    }
    Address a;
    if (numeric(url.host, a, url.port)) {
        out.push_back(a);
        co_return out;
    }
    {
        std::lock_guard lk(mu_);
        auto it = cache_.find(url.host);
        if (it != cache_.end() && it->second.expiry > std::chrono::steady_clock::now())
            out = it->second.addrs;
    }
    if (out.empty()) {
        auto work = [host = url.host, servers = servers_, max_ttl = max_ttl_, timeout = timeout_] {
            return lookup(host, servers, max_ttl, timeout);
        };
        {
            std::lock_guard lk(mu_);
            ++lookups_;  // failed ones too
        }
        Answer answer = co_await run_blocking(std::move(work));
        out = answer.addrs;
        std::lock_guard lk(mu_);
        // A TTL of 0 is "do not cache" (RFC 1035 3.2.1); max_ttl bounds the rest.
        const auto ttl = std::min(answer.ttl, max_ttl_);
        if (ttl.count() > 0) {
            if (cache_.size() > 10'000) cache_.clear();
            cache_[url.host] =
                Entry{std::move(answer.addrs), std::chrono::steady_clock::now() + ttl};
        }
    }
    for (Address& x : out) set_port(x, url.port);
    co_return out;
}

void Resolver::forget(const std::string& host) {
    std::lock_guard lk(mu_);
    cache_.erase(host);
}

std::uint64_t Resolver::lookups() const {
    std::lock_guard lk(mu_);
    return lookups_;
}

}  // namespace vela::http::detail
