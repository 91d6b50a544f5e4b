#pragma once
// Host name resolution for the client: c-ares (the hosts file, then DNS) on the blocking pool,
// answers cached for their records' TTL.

#include <sys/socket.h>

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/client/url.hpp"

namespace vela::http::detail {

/// One resolved address.
struct Address {
    sockaddr_storage sa{};
    socklen_t len = 0;
};

/// Host name resolution off the loop, cached for the records' TTL (see ClientOptions::dns_ttl
/// and ClientOptions::dns_servers).
class Resolver {
  public:
    /// Answers kept at most `max_ttl`; name servers `servers` ("host[:port]", empty: those of
    /// /etc/resolv.conf); a lookup given up after `timeout`. Throws std::invalid_argument for
    /// a server that is not an IP address.
    Resolver(std::chrono::seconds max_ttl, const std::vector<std::string>& servers,
             std::chrono::milliseconds timeout);
    /// The addresses of `url`'s host (numeric hosts and Unix paths without a lookup), in the
    /// order RFC 6724 sorts them, IPv6 and IPv4 both. Throws ConnectError, TimeoutError.
    Task<std::vector<Address>> resolve(const Url& url);
    /// Forgets `host` (its addresses all failed).
    void forget(const std::string& host);
    /// How many lookups went to the hosts file or the name servers (cache misses).
    std::uint64_t lookups() const;

  private:
    struct Entry {
        std::vector<Address> addrs;
        std::chrono::steady_clock::time_point expiry;
    };
    std::chrono::seconds max_ttl_;
    std::string servers_;  // c-ares's "host:port,..." form
    std::chrono::milliseconds timeout_;
    mutable std::mutex mu_;
    std::unordered_map<std::string, Entry> cache_;
    std::uint64_t lookups_ = 0;
};

}  // namespace vela::http::detail
