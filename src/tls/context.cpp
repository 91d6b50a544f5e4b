// TLS configuration (include/vela/tls/context.hpp): certificates loaded into SSL_CTXs, and the
// OpenSSL callbacks for ALPN, SNI, session tickets and OCSP stapling.
//
// Lifetime. What a callback reads (the ALPN choice, OCSP bytes, the SNI table, the ticket keys)
// hangs off its SSL_CTX as ex_data that is freed with the SSL_CTX, never off the Context: a
// connection that outlives a reload(), or the Context itself, keeps its SSL_CTX referenced and
// with it everything its handshake can still touch. The default SSL_CTX holds a reference to
// each SNI SSL_CTX for the same reason.

#include "vela/tls/context.hpp"

#include <fmt/format.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

#include "load.hpp"

namespace vela::tls {
namespace {

using Clock = std::chrono::steady_clock;

// ---- Session ticket keys ------------------------------------------------------------------

// One ticket key: the name a ticket carries, and the keys that encrypt and authenticate it.
struct TicketKey {
    unsigned char name[16];
    unsigned char aes[32];
    unsigned char hmac[32];
};

bool make_ticket_key(TicketKey& k) {
    return RAND_bytes(k.name, sizeof k.name) == 1 && RAND_bytes(k.aes, sizeof k.aes) == 1 &&
           RAND_bytes(k.hmac, sizeof k.hmac) == 1;
}

// The current and previous ticket keys, shared by every SSL_CTX of a Context (and across
// reloads) so a ticket from one loop or one certificate set resumes on any other. Rotation is
// lazy, done by whichever handshake first notices the period is over; the callback runs on
// several loop threads at once, hence the mutex (held for a copy of 80 bytes).
class TicketKeys {
  public:
    explicit TicketKeys(std::chrono::seconds period) : period_(period), rotated_(Clock::now()) {
        if (!make_ticket_key(current_)) throw std::bad_alloc();
    }
    ~TicketKeys() {
        OPENSSL_cleanse(&current_, sizeof current_);
        OPENSSL_cleanse(&previous_, sizeof previous_);
    }

    /// The key for new tickets.
    TicketKey current() {
        std::lock_guard lock(mu_);
        rotate_if_due();
        return current_;
    }
    /// The key named `name`: 1 when current, 2 when previous (renew the ticket), 0 when unknown.
    int find(const unsigned char* name, TicketKey& out) {
        std::lock_guard lock(mu_);
        rotate_if_due();
        if (std::memcmp(name, current_.name, sizeof current_.name) == 0) {
            out = current_;
            return 1;
        }
        if (has_previous_ && std::memcmp(name, previous_.name, sizeof previous_.name) == 0) {
            out = previous_;
            return 2;
        }
        return 0;
    }

  private:
    void rotate_if_due() {
        auto now = Clock::now();
        auto age = now - rotated_;
        if (age < period_) return;
        TicketKey next;
        if (!make_ticket_key(next)) return;  // keep the old key; the next handshake retries
        // Tickets are accepted for one period after their key stops encrypting. With no
        // handshake for two periods the current key stopped long ago, so it is dropped too.
        has_previous_ = age < 2 * period_;
        previous_ = current_;
        current_ = next;
        OPENSSL_cleanse(&next, sizeof next);
        rotated_ = now;
    }

    std::mutex mu_;
    const std::chrono::seconds period_;
    Clock::time_point rotated_;
    TicketKey current_{};
    TicketKey previous_{};
    bool has_previous_ = false;
};

// ---- Per-SSL_CTX data ---------------------------------------------------------------------

// SNI names (lower case, no trailing dot) to the SSL_CTX serving them. Wildcards are keyed by
// what follows "*.", so a lookup strips the client's first label and tries once: one label deep.
class SniTable {
  public:
    /// Adds a certificate name; the first certificate to claim a name keeps it.
    void add(const std::string& name, SSL_CTX* ctx) {
        if (name.size() > 2 && name.compare(0, 2, "*.") == 0) {
            wildcard_.emplace(name.substr(2), ctx);
        } else {
            exact_.emplace(name, ctx);
        }
    }
    /// The SSL_CTX for a normalised client name: exact names win over wildcards; null if none.
    SSL_CTX* find(const std::string& host) const {
        if (auto it = exact_.find(host); it != exact_.end()) return it->second;
        auto dot = host.find('.');
        if (dot == 0 || dot == std::string::npos) return nullptr;
        auto it = wildcard_.find(host.substr(dot + 1));
        return it != wildcard_.end() ? it->second : nullptr;
    }
    bool empty() const noexcept { return exact_.empty() && wildcard_.empty(); }

  private:
    std::unordered_map<std::string, SSL_CTX*> exact_;
    std::unordered_map<std::string, SSL_CTX*> wildcard_;
};

// What the callbacks of one SSL_CTX read; owned by that SSL_CTX (ex_data).
struct CtxData {
    bool http2 = true;
    std::string ocsp;  // DER; empty: nothing to staple
    std::shared_ptr<TicketKeys> tickets;
    // Default SSL_CTX only: the SNI certificates and the references that keep them alive.
    SniTable sni;
    std::vector<CtxPtr> sni_contexts;
};

void free_ctx_data(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
    delete static_cast<CtxData*>(ptr);
}

int ctx_data_index() {
    static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, free_ctx_data);
    return index;
}

CtxData* data_of(const SSL_CTX* ctx) {
    return static_cast<CtxData*>(SSL_CTX_get_ex_data(ctx, ctx_data_index()));
}

// Lower case without a trailing dot: DNS names compare case-insensitively and "a.test." is
// "a.test".
std::string normalize_name(std::string_view name) {
    if (!name.empty() && name.back() == '.') name.remove_suffix(1);
    std::string out(name);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

// The names SNI is matched against: the DNS subjectAltNames, or the CN when there are none
// (as RFC 6125 has clients do).
std::vector<std::string> dns_names(X509* cert) {
    std::vector<std::string> names;
    auto* sans =
        static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
        const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
        if (g->type != GEN_DNS) continue;
        const ASN1_STRING* s = g->d.dNSName;
        names.push_back(normalize_name({reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                        static_cast<size_t>(ASN1_STRING_length(s))}));
    }
    GENERAL_NAMES_free(sans);
    if (!names.empty()) return names;
    X509_NAME* subject = X509_get_subject_name(cert);
    int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (i >= 0) {
        const ASN1_STRING* s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
        names.push_back(normalize_name({reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                        static_cast<size_t>(ASN1_STRING_length(s))}));
    }
    return names;
}

// ---- OpenSSL callbacks --------------------------------------------------------------------

// Server preference: h2 (when enabled) over http/1.1, whatever order the client lists them in;
// anything else proceeds without ALPN, as nginx does, rather than failing the handshake.
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void* arg) {
    const auto* data = static_cast<const CtxData*>(arg);
    const unsigned char* http11 = nullptr;
    for (unsigned int i = 0; i < inlen;) {
        unsigned int n = in[i];
        if (n == 0 || i + 1 + n > inlen) break;
        std::string_view proto(reinterpret_cast<const char*>(in + i + 1), n);
        if (proto == "h2" && data->http2) {
            *out = in + i + 1;
            *outlen = static_cast<unsigned char>(n);
            return SSL_TLSEXT_ERR_OK;
        }
        if (proto == "http/1.1" && http11 == nullptr) http11 = in + i + 1;
        i += 1 + n;
    }
    if (http11 == nullptr) return SSL_TLSEXT_ERR_NOACK;
    *out = http11;
    *outlen = 8;
    return SSL_TLSEXT_ERR_OK;
}

// Switches the connection to the SNI certificate matching the client's name; no name or no
// match keeps the default certificate.
int select_certificate(SSL* ssl, int* alert, void* arg) {
    const auto* data = static_cast<const CtxData*>(arg);
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (name == nullptr || data->sni.empty()) return SSL_TLSEXT_ERR_OK;
    SSL_CTX* ctx = data->sni.find(normalize_name(name));
    if (ctx != nullptr && SSL_set_SSL_CTX(ssl, ctx) == nullptr) {
        *alert = SSL_AD_INTERNAL_ERROR;
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    return SSL_TLSEXT_ERR_OK;
}

// Encrypts new tickets with the current key; decrypts with the key the ticket names.
int ticket_key(SSL* ssl, unsigned char name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher,
               EVP_MAC_CTX* mac, int enc) {
    const CtxData* data = data_of(SSL_get_SSL_CTX(ssl));
    if (data == nullptr || !data->tickets) return -1;
    TicketKey key;
    int result = 1;
    if (enc != 0) {
        key = data->tickets->current();
        if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(EVP_aes_256_cbc())) != 1) return -1;
        std::memcpy(name, key.name, sizeof key.name);
    } else {
        result = data->tickets->find(name, key);
        if (result == 0) return 0;  // unknown or too old: a full handshake
    }
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key.hmac, sizeof key.hmac),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end()};
    bool ok = EVP_MAC_CTX_set_params(mac, params) == 1 &&
              EVP_CipherInit_ex(cipher, EVP_aes_256_cbc(), nullptr, key.aes, iv, enc) == 1;
    OPENSSL_cleanse(&key, sizeof key);
    return ok ? result : -1;
}

// OpenSSL frees the stapled response after each handshake, so every handshake gets a copy.
int staple_ocsp(SSL* ssl, void* arg) {
    const auto* data = static_cast<const CtxData*>(arg);
    if (data->ocsp.empty()) return SSL_TLSEXT_ERR_NOACK;
    void* copy = OPENSSL_memdup(data->ocsp.data(), data->ocsp.size());
    if (copy == nullptr) return SSL_TLSEXT_ERR_NOACK;  // handshake without a staple instead
    if (SSL_set_tlsext_status_ocsp_resp(ssl, static_cast<unsigned char*>(copy),
                                        static_cast<long>(data->ocsp.size())) != 1) {
        OPENSSL_free(copy);
        return SSL_TLSEXT_ERR_NOACK;
    }
    return SSL_TLSEXT_ERR_OK;
}

// ---- Building SSL_CTXs --------------------------------------------------------------------

// Settings that do not depend on the certificate.
void configure(SSL_CTX* ctx, const TlsOptions& o, CtxData* data) {
    SSL_CTX_set_min_proto_version(ctx, parse_min_version(o.min_version));
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    // Renegotiation is a DoS lever and a source of bugs; compression leaks secrets (CRIME).
    SSL_CTX_set_options(
        ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    // Idle keep-alive connections then hold no read/write buffers (~34 KiB each). It costs a
    // malloc/free pair per record (~1,400 instructions per keep-alive request in callgrind,
    // about 8% of a TLS hello); nginx makes the same choice.
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    if (SSL_CTX_set_cipher_list(ctx, o.ciphers.c_str()) != 1) {
        take_errors();
        throw TlsError(fmt::format(
            "TLS option ciphers \"{}\" selects no TLS 1.2 cipher: use OpenSSL cipher-list syntax "
            "(check it with `openssl ciphers -v '<list>'`)",
            o.ciphers));
    }
    if (SSL_CTX_set_ciphersuites(ctx, o.ciphersuites.c_str()) != 1) {
        take_errors();
        throw TlsError(fmt::format(
            "TLS option ciphersuites \"{}\" is not a list of TLS 1.3 suites: use names such as "
            "TLS_AES_128_GCM_SHA256, separated by ':'",
            o.ciphersuites));
    }
    if (SSL_CTX_set1_groups_list(ctx, "X25519:P-256:P-384") != 1) {
        throw TlsError("TLS: this OpenSSL lacks the key exchange groups X25519, P-256, P-384");
    }
    // Tickets carry resumption, so no per-process session cache (and its lock) is needed.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    if (o.session_tickets) {
        SSL_CTX_set_num_tickets(ctx, 1);
        SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_key);
    } else {
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(ctx, 0);
    }
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn, data);
}

std::string load_ocsp(const std::string& file) {
    std::string der = read_file("OCSP response", file);
    const auto* p = reinterpret_cast<const unsigned char*>(der.data());
    OCSP_RESPONSE* r = d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size()));
    if (r == nullptr) {
        take_errors();
        throw TlsError(fmt::format(
            "OCSP response {}: not a DER OCSP response (make it with `openssl ocsp ... -respout`)",
            file));
    }
    OCSP_RESPONSE_free(r);
    return der;
}

// One SSL_CTX serving `cert`, with its data attached before anything can fail so that freeing
// the SSL_CTX frees the data.
CtxPtr make_ctx(const TlsOptions& o, const std::shared_ptr<TicketKeys>& tickets,
                const TlsCertificate& cert) {
    CtxPtr ctx(SSL_CTX_new(TLS_server_method()));
    if (!ctx) throw std::bad_alloc();
    auto* data = new CtxData;
    if (SSL_CTX_set_ex_data(ctx.get(), ctx_data_index(), data) != 1) {
        delete data;
        throw std::bad_alloc();
    }
    data->http2 = o.http2;
    data->tickets = tickets;
    configure(ctx.get(), o, data);
    load_certificate(ctx.get(), cert);
    if (!cert.ocsp_file.empty()) {
        data->ocsp = load_ocsp(cert.ocsp_file);
        SSL_CTX_set_tlsext_status_cb(ctx.get(), staple_ocsp);
        SSL_CTX_set_tlsext_status_arg(ctx.get(), data);
    }
    return ctx;
}

// The default SSL_CTX, holding the SNI ones; throws TlsError (nothing half-built survives).
CtxPtr build(const TlsOptions& o, const std::shared_ptr<TicketKeys>& tickets) {
    ErrorQueueGuard clear_errors;
    CtxPtr def = make_ctx(o, tickets, {o.cert, o.key, o.ocsp_file});
    CtxData* data = data_of(def.get());
    for (const TlsCertificate& c : o.sni) {
        CtxPtr ctx = make_ctx(o, tickets, c);
        auto names = dns_names(SSL_CTX_get0_certificate(ctx.get()));
        if (names.empty()) {
            throw TlsError(fmt::format(
                "TLS certificate {} has no DNS name (subjectAltName or CN) to match SNI against",
                c.cert_file));
        }
        for (const auto& n : names) data->sni.add(n, ctx.get());
        data->sni_contexts.push_back(std::move(ctx));
    }
    SSL_CTX_set_tlsext_servername_callback(def.get(), select_certificate);
    SSL_CTX_set_tlsext_servername_arg(def.get(), data);
    return def;
}

}  // namespace

struct Context::State {
    TlsOptions options;
    std::shared_ptr<TicketKeys> tickets;  // null without session tickets
    std::mutex mu;
    CtxPtr current;  // guarded by mu
};

std::shared_ptr<Context> Context::create(TlsOptions options) {
    parse_min_version(options.min_version);
    if (options.session_tickets && options.ticket_key_rotation.count() <= 0) {
        throw TlsError("TLS option ticket_key_rotation must be at least one second");
    }
    auto s = std::make_unique<State>();
    s->options = std::move(options);
    if (s->options.session_tickets) {
        s->tickets = std::make_shared<TicketKeys>(s->options.ticket_key_rotation);
    }
    s->current = build(s->options, s->tickets);
    return std::shared_ptr<Context>(new Context(std::move(s)));
}

Context::Context(std::unique_ptr<State> s) : state_(std::move(s)) {}

Context::~Context() = default;

SSL* Context::new_session() {
    SSL_CTX* ctx;
    {
        std::lock_guard lock(state_->mu);
        ctx = state_->current.get();
        SSL_CTX_up_ref(ctx);
    }
    CtxPtr ref(ctx);  // SSL_new takes its own reference
    SSL* ssl = SSL_new(ctx);
    if (ssl == nullptr) {
        ERR_clear_error();
        throw std::bad_alloc();
    }
    SSL_set_accept_state(ssl);
    return ssl;
}

void Context::reload() {
    CtxPtr next = build(state_->options, state_->tickets);
    {
        std::lock_guard lock(state_->mu);
        std::swap(state_->current, next);
    }
    // `next` now holds the old set; connections using it keep their own references.
}

const TlsOptions& Context::options() const noexcept { return state_->options; }

std::string_view alpn_protocol(const SSL* ssl) noexcept {
    const unsigned char* data = nullptr;
    unsigned int len = 0;
    SSL_get0_alpn_selected(ssl, &data, &len);
    if (data == nullptr) return {};
    return {reinterpret_cast<const char*>(data), len};
}

}  // namespace vela::tls
