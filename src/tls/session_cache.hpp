#pragma once
// The client's TLS sessions by "host:port" (module-private; tls::ClientContext keeps one per
// SSL_CTX). Only the newest session of each peer is kept, and past `max` peers the one stored
// least recently is evicted.
//
// A TLS 1.2 session serves every connection to its peer until a newer one replaces it. A TLS
// 1.3 ticket is used once (RFC 8446 C.4): OpenSSL marks it unresumable when a connection
// resumes with it, and lookup() then drops it. A resumed connection usually brings a fresh
// ticket; vela's own server sends none (its ticket keys need no renewal), so there every
// other TLS 1.3 connection is a full handshake.
//
// Threading: every member may be called from any thread (one short lock each).

#include <openssl/ssl.h>

#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace vela::tls {

/// Newest resumable session per host:port, bounded (see above).
class SessionCache {
  public:
    /// Keeps at most `max` peers' sessions.
    explicit SessionCache(std::size_t max) : max_(max) {}
    /// Frees the sessions still kept.
    ~SessionCache() {
        for (auto& [key, session] : order_) SSL_SESSION_free(session);
    }
    SessionCache(const SessionCache&) = delete;
    SessionCache& operator=(const SessionCache&) = delete;

    /// Keeps `session` (taking over the caller's reference) as the newest for `key`.
    void store(std::string_view key, SSL_SESSION* session) {
        SSL_SESSION* dropped[2] = {nullptr, nullptr};
        {
            std::lock_guard lock(mu_);
            if (auto it = index_.find(key); it != index_.end()) {
                const auto node = it->second;
                dropped[0] = node->second;
                index_.erase(it);
                order_.erase(node);
            }
            order_.emplace_back(std::string(key), session);
            index_.emplace(order_.back().first, std::prev(order_.end()));
            if (order_.size() > max_) {
                dropped[1] = order_.front().second;
                index_.erase(order_.front().first);
                order_.pop_front();
            }
        }
        for (SSL_SESSION* s : dropped) SSL_SESSION_free(s);  // outside the lock; null is a no-op
    }

    /// A new reference to the session to resume for `key` (the caller frees it), or null.
    SSL_SESSION* lookup(std::string_view key) {
        SSL_SESSION* dropped = nullptr;
        {
            std::lock_guard lock(mu_);
            auto it = index_.find(key);
            if (it == index_.end()) return nullptr;
            const auto node = it->second;
            // OpenSSL marks the session of a connection that ended without close_notify.
            if (SSL_SESSION_is_resumable(node->second) == 1) {
                SSL_SESSION_up_ref(node->second);
                return node->second;
            }
            dropped = node->second;
            index_.erase(it);
            order_.erase(node);
        }
        SSL_SESSION_free(dropped);
        return nullptr;
    }

    /// Peers with a session kept.
    std::size_t size() const {
        std::lock_guard lock(mu_);
        return order_.size();
    }

  private:
    using Entry = std::pair<std::string, SSL_SESSION*>;
    mutable std::mutex mu_;
    const std::size_t max_;
    std::list<Entry> order_;  // least recently stored first
    // Keys view the strings in order_ (list nodes do not move).
    std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;
};

}  // namespace vela::tls
