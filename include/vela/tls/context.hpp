#pragma once
// TLS configuration: certificates, SNI, ALPN, protocol versions, session tickets, OCSP.
//
// Threading model. One Context is shared by every loop of a server: new_session() may be
// called from any loop thread at once (each call takes the current certificate set under a
// short lock; handshakes then run without it). reload() may run on any thread: it builds a
// complete new certificate set first and swaps it in only when everything loaded, so a bad
// file leaves the old certificates serving. Connections keep the SSL_CTX they started with
// (OpenSSL reference-counts it), so a reload never drops an open connection.

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

typedef struct ssl_st SSL;

namespace vela {

/// A certificate chain and its key (PEM files), and optionally a stapled OCSP response.
struct TlsCertificate {
    /// PEM file with the certificate first, then its intermediates.
    std::string cert_file;
    /// PEM file with the private key (RSA or EC, unencrypted).
    std::string key_file;
    /// DER-encoded OCSP response to staple (empty: none).
    std::string ocsp_file;
};

/// Settings of a TLS listener (app.listen_tls(port, {cert, key})).
struct TlsOptions {
    /// The default certificate chain (PEM).
    std::string cert;
    /// The default certificate's key (PEM).
    std::string key;
    /// DER-encoded OCSP response stapled with the default certificate (empty: none).
    std::string ocsp_file;
    /// More certificates, chosen by the client's SNI name against their DNS names
    /// (subjectAltName, wildcards one label deep); the default serves everything else.
    std::vector<TlsCertificate> sni;
    /// Offer HTTP/2 through ALPN ("h2"); http/1.1 is always offered.
    bool http2 = true;
    /// Lowest protocol version: "1.2" or "1.3".
    std::string min_version = "1.2";
    /// TLS 1.2 cipher list (OpenSSL syntax): ECDHE with AES-GCM or ChaCha20 only by default.
    std::string ciphers =
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
        "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
        "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
    /// TLS 1.3 cipher suites (OpenSSL syntax).
    std::string ciphersuites =
        "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
    /// Session resumption with tickets (stateless; keys shared by every loop).
    bool session_tickets = true;
    /// How long a ticket key encrypts new tickets; tickets from the previous key are still
    /// accepted (and renewed) for one more period.
    std::chrono::seconds ticket_key_rotation{3600};
};

/// A configuration error a user can cause (bad file, mismatched key): what() is one line that
/// names the file and what to do.
class TlsError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

namespace tls {

/// A loaded TLS configuration, shared by every loop of a server (see above).
class Context {
  public:
    /// Loads and checks every certificate and key; throws TlsError with a one-line message.
    /// Warnings (an expired or not yet valid certificate) are logged, not thrown.
    static std::shared_ptr<Context> create(TlsOptions options);
    /// Frees the context (connections still open keep what they use).
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    /// A new server-side SSL object for one connection, with the current certificates.
    /// Never null (throws std::bad_alloc when OpenSSL is out of memory).
    SSL* new_session();
    /// Re-reads every certificate, key and OCSP file named by the options. On success new
    /// handshakes use them; on failure throws TlsError and the old ones stay in use.
    void reload();
    /// The options this context was made from.
    const TlsOptions& options() const noexcept;

  private:
    struct State;
    explicit Context(std::unique_ptr<State> s);
    std::unique_ptr<State> state_;
};

/// The protocol ALPN selected on a finished handshake ("h2", "http/1.1", or empty).
std::string_view alpn_protocol(const SSL* ssl) noexcept;

}  // namespace tls
}  // namespace vela
