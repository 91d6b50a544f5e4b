#pragma once
// TLS configuration of outgoing connections (an HTTP client's https:// and wss://): whom to
// trust, an optional client certificate, and the sessions kept for resumption.
//
// Threading model. One ClientContext is shared by every loop: new_session() may be called from
// any loop thread at once. The settings are fixed at create(); the only shared state that
// changes is the session cache (one newest session per host:port), guarded by a short lock
// taken when a connection starts and when a server sends a session ticket. Connections keep
// the SSL_CTX they started with (OpenSSL reference-counts it, and the cache hangs off it), so
// they may outlive the ClientContext.
//
// Verification. With `verify` on, the server's chain must lead to a trusted CA (ca_file, or the
// system store when none is given, plus ca_dir) and its certificate must name the host that
// was dialled: a DNS name against its DNS subjectAltNames, an IP literal against its IP ones.
// A failed handshake is explained by handshake_failure(), from the SSL object and the error
// code the tls::Stream kept (Stream::ssl(), Stream::last_error()).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "vela/tls/context.hpp"

namespace vela {

/// Settings of outgoing TLS connections (an HTTP client's https:// and wss://).
struct TlsClientOptions {
    /// Verify the server's chain and its name. Off, any certificate is accepted: tests only.
    bool verify = true;
    /// PEM bundle of CAs to trust instead of the system store (empty: the system store).
    std::string ca_file;
    /// Hashed CA directory (c_rehash) trusted in addition (empty: none).
    std::string ca_dir;
    /// Client certificate chain (PEM), sent to servers that ask for one (empty: none).
    std::string cert_file;
    /// The client certificate's key (PEM, unencrypted).
    std::string key_file;
    /// Lowest protocol version: "1.2" or "1.3".
    std::string min_version = "1.2";
    /// Resume sessions (tickets) per host:port, saving a round trip and the signatures.
    bool session_resumption = true;
};

namespace tls {

/// Why a client handshake failed (for typed errors).
enum class Failure : std::uint8_t {
    /// No failure.
    none,
    /// A certificate of the chain has expired.
    expired,
    /// A certificate of the chain is not valid yet.
    not_yet_valid,
    /// The certificate does not name the host that was dialled.
    wrong_host,
    /// The chain does not lead to a trusted CA.
    unknown_ca,
    /// The certificate (or the chain's root) is self-signed and not trusted.
    self_signed,
    /// The peer did not speak TLS, or the protocol failed (alerts, versions, ciphers).
    protocol,
    /// Anything else (another verification error, a connection lost mid-handshake).
    other,
};

/// A loaded client TLS configuration, shared by every loop (see above).
class ClientContext {
  public:
    /// Loads the trusted CAs and the client certificate; throws TlsError with a one-line
    /// message naming the file and what to do (missing or bad CA file, certificate, key, a key
    /// that does not match, a bad min_version).
    static std::shared_ptr<ClientContext> create(TlsClientOptions options);
    /// Frees the context (connections still open keep what they use).
    ~ClientContext();
    ClientContext(const ClientContext&) = delete;
    ClientContext& operator=(const ClientContext&) = delete;

    /// A new client SSL object (connect state) for one connection to `host` (a DNS name, or an
    /// IP literal without brackets) on `port`: SNI for DNS names only (RFC 6066 3), the
    /// server's certificate checked against `host`, ALPN offering `alpn` in that order (empty:
    /// none), and the session cached for host:port resumed when there is one. Throws TlsError
    /// for an empty host or an ALPN name that is empty or longer than 255 bytes, and
    /// std::bad_alloc when OpenSSL is out of memory.
    SSL* new_session(std::string_view host, std::uint16_t port,
                     std::span<const std::string_view> alpn = {});
    /// The options this context was made from.
    const TlsClientOptions& options() const noexcept;
    /// Sessions kept for resumption (one per host:port, at most kMaxSessions).
    std::size_t cached_sessions() const;
    /// The most host:port sessions kept; storing another evicts the least recently stored.
    static constexpr std::size_t kMaxSessions = 1000;

  private:
    struct State;
    explicit ClientContext(std::unique_ptr<State> s);
    std::unique_ptr<State> state_;
};

/// After a failed client handshake on `ssl` (before it is freed), with the error code the
/// stream kept (Stream::last_error()): the category and one line saying why, such as
/// "certificate verify failed: certificate has expired (notAfter 2020-02-01 00:00:00 UTC)".
std::pair<Failure, std::string> handshake_failure(const SSL* ssl, unsigned long err_code);

/// True when `ssl` resumed a cached session instead of a full handshake.
bool session_resumed(const SSL* ssl) noexcept;

}  // namespace tls
}  // namespace vela
