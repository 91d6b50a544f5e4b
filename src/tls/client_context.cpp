// Client TLS configuration (include/vela/tls/client_context.hpp): the trusted CAs, the client
// certificate, per-connection names and ALPN, the session cache, and the reading of a failed
// handshake.
//
// Lifetime. The session cache hangs off the SSL_CTX as ex_data (freed with it), and each SSL
// carries its "host:port" key as ex_data (freed with the SSL): a ticket that arrives on a
// connection outliving its ClientContext still finds both.

#include "vela/tls/client_context.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cerrno>
#include <new>
#include <system_error>
#include <vector>

#include "load.hpp"
#include "session_cache.hpp"

namespace vela::tls {
namespace {

struct SslFree {
    void operator()(SSL* s) const noexcept { SSL_free(s); }
};

void free_cache(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
    delete static_cast<SessionCache*>(ptr);
}

void free_key(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
    delete static_cast<std::string*>(ptr);
}

// The SSL_CTX's session cache (null without session resumption).
int cache_index() {
    static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, free_cache);
    return index;
}

// The SSL's "host:port".
int key_index() {
    static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, free_key);
    return index;
}

const std::string* key_of(const SSL* ssl) {
    return static_cast<const std::string*>(SSL_get_ex_data(ssl, key_index()));
}

// OpenSSL's new-session callback: a finished TLS 1.2 handshake, or a TLS 1.3 ticket.
int keep_session(SSL* ssl, SSL_SESSION* session) {
    auto* cache =
        static_cast<SessionCache*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), cache_index()));
    const std::string* key = key_of(ssl);
    if (cache == nullptr || key == nullptr) return 0;  // not ours to keep
    cache->store(*key, session);
    return 1;  // the cache took the reference
}

bool is_directory(const std::string& path, int& err) {
    struct stat st {};
    err = ::stat(path.c_str(), &st) == 0 ? (S_ISDIR(st.st_mode) ? 0 : ENOTDIR) : errno;
    return err == 0;
}

// The CAs to trust: ca_file or else the system store (Debian's ca-certificates), and ca_dir.
void load_trust(SSL_CTX* ctx, const TlsClientOptions& o) {
    if (!o.ca_file.empty()) {
        read_file("CA file", o.ca_file);  // only for the errno message
        if (SSL_CTX_load_verify_file(ctx, o.ca_file.c_str()) != 1) {
            take_errors();
            throw TlsError(fmt::format(
                "CA file {}: no PEM certificate found: give the CA certificates to trust in PEM",
                o.ca_file));
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        take_errors();
        throw TlsError(
            "TLS client: cannot load the system's CA certificates: install ca-certificates or "
            "set ca_file");
    }
    if (o.ca_dir.empty()) return;
    int err = 0;
    if (!is_directory(o.ca_dir, err)) {
        throw TlsError(fmt::format("cannot use CA directory {}: {}", o.ca_dir,
                                   std::system_category().message(err)));
    }
    if (SSL_CTX_load_verify_dir(ctx, o.ca_dir.c_str()) != 1) {
        take_errors();
        throw TlsError(
            fmt::format("CA directory {}: cannot use it: give a directory hashed by "
                        "`openssl rehash`",
                        o.ca_dir));
    }
}

void load_client_certificate(SSL_CTX* ctx, const TlsClientOptions& o) {
    if (o.cert_file.empty() && o.key_file.empty()) return;
    if (o.key_file.empty()) {
        throw TlsError(fmt::format("TLS client certificate {} has no key: set key_file to its key",
                                   o.cert_file));
    }
    if (o.cert_file.empty()) {
        throw TlsError(fmt::format(
            "TLS client key {} has no certificate: set cert_file to its certificate", o.key_file));
    }
    load_certificate(ctx, {o.cert_file, o.key_file, ""}, true);
}

CtxPtr build(const TlsClientOptions& o) {
    const int min_version = parse_min_version(o.min_version);
    ErrorQueueGuard clear_errors;
    CtxPtr ctx(SSL_CTX_new(TLS_client_method()));
    if (!ctx) throw std::bad_alloc();
    SSL_CTX_set_min_proto_version(ctx.get(), min_version);
    SSL_CTX_set_max_proto_version(ctx.get(), TLS1_3_VERSION);
    SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    // As on the server side: an idle pooled connection then holds no OpenSSL buffers.
    SSL_CTX_set_mode(ctx.get(), SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_verify(ctx.get(), o.verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    load_trust(ctx.get(), o);
    load_client_certificate(ctx.get(), o);
    if (!o.session_resumption) {
        SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(ctx.get(), SSL_OP_NO_TICKET);
        return ctx;
    }
    auto* cache = new SessionCache(ClientContext::kMaxSessions);
    if (SSL_CTX_set_ex_data(ctx.get(), cache_index(), cache) != 1) {
        delete cache;
        throw std::bad_alloc();
    }
    // OpenSSL's own store is keyed by session id, useless to a client: the callback keeps them.
    SSL_CTX_set_session_cache_mode(ctx.get(),
                                   SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx.get(), keep_session);
    return ctx;
}

bool is_ip_literal(const std::string& host) {
    unsigned char addr[sizeof(in6_addr)];
    return ::inet_pton(AF_INET, host.c_str(), addr) == 1 ||
           ::inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

// ALPN's wire format: each name preceded by its length.
std::string alpn_wire(std::span<const std::string_view> protocols) {
    std::string wire;
    for (std::string_view p : protocols) {
        if (p.empty() || p.size() > 255) {
            throw TlsError(fmt::format(
                "TLS client: ALPN protocol \"{}\" is {} bytes long: names are 1 to 255 bytes", p,
                p.size()));
        }
        wire += static_cast<char>(p.size());
        wire += p;
    }
    return wire;
}

// Sets what one connection needs beyond the SSL_CTX; false when OpenSSL refused something.
bool configure_connection(SSL* ssl, const std::string& host, bool verify, const std::string& alpn) {
    SSL_set_connect_state(ssl);
    bool ok = true;
    if (is_ip_literal(host)) {  // no SNI for addresses (RFC 6066 3); IP SANs are checked
        ok = !verify || X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1;
    } else {
        ok = SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 &&
             (!verify || SSL_set1_host(ssl, host.c_str()) == 1);
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    }
    if (ok && !alpn.empty()) {  // (0 is success here)
        ok = SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(alpn.data()),
                                 static_cast<unsigned>(alpn.size())) == 0;
    }
    return ok;
}

// ---- Reading a failed handshake -----------------------------------------------------------

std::string asn1_text(const ASN1_STRING* s) {
    return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
            static_cast<std::size_t>(ASN1_STRING_length(s))};
}

// What the certificate covers: its DNS and IP subjectAltNames, or else its CN.
std::string covered_names(const X509* cert) {
    std::vector<std::string> names;
    auto* sans =
        static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
        const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
        if (g->type == GEN_DNS) names.push_back(asn1_text(g->d.dNSName));
        const int len = g->type == GEN_IPADD ? ASN1_STRING_length(g->d.iPAddress) : 0;
        if (len == 4 || len == 16) {
            char text[INET6_ADDRSTRLEN];
            if (::inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(g->d.iPAddress),
                            text, sizeof text) != nullptr) {
                names.emplace_back(text);
            }
        }
    }
    GENERAL_NAMES_free(sans);
    const X509_NAME* subject = X509_get_subject_name(cert);
    const int cn = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (names.empty() && cn >= 0) {
        names.push_back(asn1_text(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, cn))));
    }
    if (names.empty()) return "no host";
    constexpr std::size_t kShown = 4;
    std::string out = names.front();
    for (std::size_t i = 1; i < names.size() && i < kShown; ++i) out += ", " + names[i];
    if (names.size() > kShown) out += fmt::format(" (and {} more)", names.size() - kShown);
    return out;
}

// The first certificate of the chain (leaf first) whose date `pick` is on the wrong side of
// now (`sign`: the sign X509_cmp_current_time gives a date that fails).
std::string failing_date(const SSL* ssl, const ASN1_TIME* (*pick)(const X509*), int sign) {
    STACK_OF(X509)* chain = SSL_get0_verified_chain(ssl);
    if (chain == nullptr) chain = SSL_get_peer_cert_chain(ssl);
    for (int i = 0; chain != nullptr && i < sk_X509_num(chain); ++i) {
        const ASN1_TIME* t = pick(sk_X509_value(chain, i));
        if (X509_cmp_current_time(t) * sign > 0) return format_time(t);
    }
    return {};
}

std::pair<Failure, std::string> verify_failure(const SSL* ssl, long result) {
    const std::string why = X509_verify_cert_error_string(result);
    const std::string head = "certificate verify failed: ";
    switch (result) {
        case X509_V_ERR_CERT_HAS_EXPIRED: {
            const std::string date = failing_date(ssl, X509_get0_notAfter, -1);
            return {Failure::expired,
                    head + why + (date.empty() ? "" : " (notAfter " + date + ")")};
        }
        case X509_V_ERR_CERT_NOT_YET_VALID: {
            const std::string date = failing_date(ssl, X509_get0_notBefore, 1);
            return {Failure::not_yet_valid,
                    head + why + (date.empty() ? "" : " (notBefore " + date + ")")};
        }
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH: {
            // The peer certificate is recorded only once verified: take the received leaf.
            STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl);
            const X509* cert = sk_X509_num(chain) > 0 ? sk_X509_value(chain, 0) : nullptr;
            const std::string* key = key_of(ssl);
            const std::string host =
                key != nullptr ? key->substr(0, key->rfind(':')) : "the host dialled";
            if (cert == nullptr) return {Failure::wrong_host, head + "host name mismatch"};
            return {Failure::wrong_host,
                    head + "the certificate is for " + covered_names(cert) + ", not " + host};
        }
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            return {Failure::unknown_ca,
                    head + "unknown CA: " + why + " (trust the CA with ca_file)"};
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
            return {Failure::self_signed,
                    head + why + " (if it is the one you expect, trust it with ca_file)"};
        default:
            return {Failure::other, head + why};
    }
}

// A hint for the protocol failures a user can act on.
std::string_view protocol_hint(unsigned long err) {
    if (ERR_GET_LIB(err) != ERR_LIB_SSL) return {};
    switch (ERR_GET_REASON(err)) {
        case SSL_R_WRONG_VERSION_NUMBER:
            return " (the server did not answer in TLS: is this port plain HTTP?)";
        case SSL_R_UNSUPPORTED_PROTOCOL:
        case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
            return " (no TLS version in common: check min_version)";
        case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
            return " (the server wants a client certificate: set cert_file and key_file)";
        default:
            return {};
    }
}

}  // namespace

struct ClientContext::State {
    TlsClientOptions options;
    CtxPtr ctx;
    SessionCache* sessions = nullptr;  // owned by ctx; null without session resumption
};

std::shared_ptr<ClientContext> ClientContext::create(TlsClientOptions options) {
    auto s = std::make_unique<State>();
    s->options = std::move(options);
    s->ctx = build(s->options);
    s->sessions = static_cast<SessionCache*>(SSL_CTX_get_ex_data(s->ctx.get(), cache_index()));
    return std::shared_ptr<ClientContext>(new ClientContext(std::move(s)));
}

ClientContext::ClientContext(std::unique_ptr<State> s) : state_(std::move(s)) {}

ClientContext::~ClientContext() = default;

SSL* ClientContext::new_session(std::string_view host, std::uint16_t port,
                                std::span<const std::string_view> alpn) {
    // SNI carries no trailing dot (RFC 6066 3), and certificates name hosts without one.
    if (!host.empty() && host.back() == '.') host.remove_suffix(1);
    if (host.empty()) {
        throw TlsError(
            "TLS client: no host to connect to: give the server's DNS name or IP address");
    }
    if (host.front() == '[') {
        throw TlsError(fmt::format(
            "TLS client: host \"{}\": give an IPv6 address without the brackets", host));
    }
    const std::string wire = alpn_wire(alpn);
    const std::string name(host);
    std::unique_ptr<SSL, SslFree> ssl(SSL_new(state_->ctx.get()));
    if (!ssl) {
        ERR_clear_error();
        throw std::bad_alloc();
    }
    if (!configure_connection(ssl.get(), name, state_->options.verify, wire)) {
        ERR_clear_error();
        throw TlsError(fmt::format(
            "TLS client: cannot connect to \"{}\": give a DNS name (up to 255 bytes) or an IP "
            "address",
            name));
    }
    auto* key = new std::string(fmt::format("{}:{}", name, port));
    if (SSL_set_ex_data(ssl.get(), key_index(), key) != 1) {
        delete key;
        ERR_clear_error();
        throw std::bad_alloc();
    }
    if (state_->sessions != nullptr) {
        if (SSL_SESSION* session = state_->sessions->lookup(*key)) {
            SSL_set_session(ssl.get(), session);  // takes its own reference
            SSL_SESSION_free(session);
        }
    }
    return ssl.release();
}

const TlsClientOptions& ClientContext::options() const noexcept { return state_->options; }

std::size_t ClientContext::cached_sessions() const {
    return state_->sessions != nullptr ? state_->sessions->size() : 0;
}

std::pair<Failure, std::string> handshake_failure(const SSL* ssl, unsigned long err_code) {
    const long result = SSL_get_verify_result(ssl);
    if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) != 0 && result != X509_V_OK) {
        return verify_failure(ssl, result);
    }
    if (err_code != 0) {
        const char* reason = ERR_reason_error_string(err_code);
        return {Failure::protocol, fmt::format("protocol error: {}{}",
                                               reason != nullptr ? reason : "unknown OpenSSL error",
                                               protocol_hint(err_code))};
    }
    return {Failure::other, "the TLS handshake failed without a reason (the connection ended?)"};
}

bool session_resumed(const SSL* ssl) noexcept { return SSL_session_reused(ssl) == 1; }

}  // namespace vela::tls
