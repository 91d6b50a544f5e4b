// tls::Context: real handshakes in memory (a client SSL and a server SSL joined by a BIO pair,
// no sockets) against the certificates from tests/tls/make-certs.

#include "vela/tls/context.hpp"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>

#include "tls/certs.hpp"
#include "vela/base/log.hpp"

namespace vela::tls {
namespace {

namespace fs = std::filesystem;
using test::test_certs;

struct SslFree {
    void operator()(SSL* s) const noexcept { SSL_free(s); }
};
struct CtxFree {
    void operator()(SSL_CTX* c) const noexcept { SSL_CTX_free(c); }
};
struct SessionFree {
    void operator()(SSL_SESSION* s) const noexcept { SSL_SESSION_free(s); }
};
using SslPtr = std::unique_ptr<SSL, SslFree>;
using CtxPtr = std::unique_ptr<SSL_CTX, CtxFree>;
using SessionPtr = std::unique_ptr<SSL_SESSION, SessionFree>;

TlsOptions ec_options() {
    TlsOptions o;
    o.cert = test_certs().server_ec_cert;
    o.key = test_certs().server_ec_key;
    return o;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

// What the test client does in one handshake.
struct Client {
    std::string sni = "localhost";  // empty: no SNI
    std::string verify_host = "localhost";
    int max_version = 0;  // 0: TLS 1.3
    std::vector<std::string> alpn{};
    SSL_SESSION* session = nullptr;  // to resume
    bool request_ocsp = false;
};

struct Handshake {
    bool ok = false;        // both sides finished
    int server_reason = 0;  // ERR_GET_REASON of the server's first error
    SslPtr client;
    SslPtr server;
};

// A client trusting only the test CA and checking the server's name, as a browser would.
CtxPtr client_context(const Client& c) {
    CtxPtr ctx(SSL_CTX_new(TLS_client_method()));
    SSL_CTX_load_verify_locations(ctx.get(), test_certs().ca.c_str(), nullptr);
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    if (c.max_version != 0 && c.max_version < TLS1_2_VERSION) {
        // TLS 1.1 needs SHA-1 signatures, which security level 1 and up forbid client-side.
        SSL_CTX_set_security_level(ctx.get(), 0);
        SSL_CTX_set_cipher_list(ctx.get(), "DEFAULT:@SECLEVEL=0");
        SSL_CTX_set_min_proto_version(ctx.get(), TLS1_VERSION);
    }
    if (c.max_version != 0) SSL_CTX_set_max_proto_version(ctx.get(), c.max_version);
    return ctx;
}

// One step of one side; false once it has failed.
bool step(SSL* ssl, bool& done, int& reason) {
    int r = SSL_do_handshake(ssl);
    if (r == 1) {
        done = true;
        return true;
    }
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
    reason = ERR_GET_REASON(ERR_peek_error());
    ERR_clear_error();
    return false;
}

Handshake handshake(Context& server, const Client& c = {}) {
    Handshake h;
    CtxPtr cctx = client_context(c);
    h.client.reset(SSL_new(cctx.get()));
    h.server.reset(server.new_session());
    BIO* cbio = nullptr;
    BIO* sbio = nullptr;
    BIO_new_bio_pair(&cbio, 0, &sbio, 0);
    SSL_set_bio(h.client.get(), cbio, cbio);
    SSL_set_bio(h.server.get(), sbio, sbio);
    SSL* cl = h.client.get();
    SSL_set_connect_state(cl);
    if (!c.sni.empty()) SSL_set_tlsext_host_name(cl, c.sni.c_str());
    SSL_set1_host(cl, c.verify_host.c_str());
    if (c.session != nullptr) SSL_set_session(cl, c.session);
    if (c.request_ocsp) SSL_set_tlsext_status_type(cl, TLSEXT_STATUSTYPE_ocsp);
    std::string wire;
    for (const auto& p : c.alpn) wire += static_cast<char>(p.size()) + p;
    if (!wire.empty()) {
        SSL_set_alpn_protos(cl, reinterpret_cast<const unsigned char*>(wire.data()),
                            static_cast<unsigned>(wire.size()));
    }
    bool client_done = false, server_done = false, client_ok = true, server_ok = true;
    int client_reason = 0;
    // Enough rounds for any handshake; after a failure the rest let the alert reach the peer.
    for (int i = 0; i < 20 && !(client_done && server_done); ++i) {
        if (!client_done && client_ok) client_ok = step(cl, client_done, client_reason);
        if (!server_done && server_ok)
            server_ok = step(h.server.get(), server_done, h.server_reason);
    }
    h.ok = client_done && server_done;
    return h;
}

// The client's session after reading what followed the handshake (TLS 1.3 sends tickets then)
// and closing cleanly: OpenSSL marks the session of a connection freed without close_notify
// as not resumable.
SessionPtr session_of(const Handshake& h) {
    char byte;
    SSL_read(h.client.get(), &byte, 1);
    SSL_shutdown(h.client.get());
    ERR_clear_error();
    return SessionPtr(SSL_get1_session(h.client.get()));
}

// True when the client was shown the certificate in `file` (the first in it).
bool served(const Handshake& h, const std::string& file) {
    X509* peer = SSL_get0_peer_certificate(h.client.get());
    BIO* bio = BIO_new_file(file.c_str(), "r");
    X509* want = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    bool same = peer != nullptr && want != nullptr && X509_cmp(peer, want) == 0;
    X509_free(want);
    return same;
}

// A private directory for tests that change files.
struct TempDir {
    std::string path;
    TempDir() {
        path = (fs::temp_directory_path() / "vela-tls-XXXXXX").string();
        if (::mkdtemp(path.data()) == nullptr) throw std::runtime_error("mkdtemp");
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::string copy(const std::string& from, const std::string& name) const {
        auto to = path + "/" + name;
        fs::copy_file(from, to, fs::copy_options::overwrite_existing);
        return to;
    }
    std::string write(const std::string& name, const std::string& text) const {
        auto to = path + "/" + name;
        std::ofstream(to) << text;
        return to;
    }
};

// ---- Certificates and versions

TEST(TlsContext, HandshakesWithEcRsaAndChainCertificates) {
    const auto& c = test_certs();
    struct Case {
        std::string cert, key;
    };
    for (const Case& k :
         {Case{c.server_ec_cert, c.server_ec_key}, Case{c.server_rsa_cert, c.server_rsa_key},
          Case{c.server_chain_cert, c.server_chain_key}}) {
        SCOPED_TRACE(k.cert);
        TlsOptions o;
        o.cert = k.cert;
        o.key = k.key;
        auto ctx = Context::create(o);
        for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
            auto h = handshake(*ctx, {.max_version = version});
            ASSERT_TRUE(h.ok) << "server error reason " << h.server_reason;
            EXPECT_EQ(SSL_version(h.server.get()), version);
            EXPECT_EQ(SSL_get_verify_result(h.client.get()), X509_V_OK);
            EXPECT_TRUE(served(h, k.cert));
        }
    }
}

TEST(TlsContext, NewSessionIsAServerObject) {
    auto ctx = Context::create(ec_options());
    SslPtr ssl(ctx->new_session());
    ASSERT_NE(ssl, nullptr);
    EXPECT_EQ(SSL_is_server(ssl.get()), 1);
    EXPECT_EQ(ctx->options().cert, test_certs().server_ec_cert);
}

TEST(TlsContext, RefusesTls11) {
    auto ctx = Context::create(ec_options());
    auto h = handshake(*ctx, {.max_version = TLS1_1_VERSION});
    EXPECT_FALSE(h.ok);
    EXPECT_EQ(h.server_reason, SSL_R_UNSUPPORTED_PROTOCOL);
}

TEST(TlsContext, MinVersion13RefusesTls12) {
    auto o = ec_options();
    o.min_version = "1.3";
    auto ctx = Context::create(o);
    auto h = handshake(*ctx, {.max_version = TLS1_2_VERSION});
    EXPECT_FALSE(h.ok);
    EXPECT_EQ(h.server_reason, SSL_R_UNSUPPORTED_PROTOCOL);
    EXPECT_TRUE(handshake(*ctx).ok);
}

TEST(TlsContext, ExpiredAndNotYetValidCertificatesLoadWithAWarning) {
    const auto& c = test_certs();
    log::set_level(log::Level::info);
    struct Case {
        std::string cert, key, warning;
    };
    for (const Case& k :
         {Case{c.expired_cert, c.expired_key,
               "TLS certificate " + c.expired_cert + " expired on 2020-02-01 00:00:00 UTC"},
          Case{c.not_yet_valid_cert, c.not_yet_valid_key,
               "TLS certificate " + c.not_yet_valid_cert +
                   " is not valid until 2099-01-01 00:00:00 UTC"}}) {
        TlsOptions o;
        o.cert = k.cert;
        o.key = k.key;
        testing::internal::CaptureStdout();
        std::shared_ptr<Context> ctx;
        EXPECT_NO_THROW(ctx = Context::create(o));
        std::string out = testing::internal::GetCapturedStdout();
        EXPECT_NE(out.find(k.warning), std::string::npos) << out;
        EXPECT_EQ(ERR_peek_error(), 0u);
    }
}

// ---- Errors: one line naming the file and what to do

TEST(TlsContext, ErrorsNameTheFileAndTheProblem) {
    const auto& c = test_certs();
    TempDir dir;
    const std::string junk = dir.write("junk.pem", "this is not PEM\n");
    const std::string missing = dir.path + "/missing.pem";
    const std::string encrypted = dir.path + "/encrypted.key";
    ASSERT_EQ(std::system(("openssl pkey -in '" + c.server_ec_key +
                           "' -aes256 -passout pass:x -out '" + encrypted + "'")
                              .c_str()),
              0);
    struct Case {
        const char* what;
        std::function<void(TlsOptions&)> change;
        std::string message;  // what() starts with this
    };
    const Case cases[] = {
        {"missing cert", [&](TlsOptions& o) { o.cert = missing; },
         "cannot read TLS certificate " + missing + ": No such file or directory"},
        {"missing key", [&](TlsOptions& o) { o.key = missing; },
         "cannot read TLS key " + missing + ": No such file or directory"},
        {"directory as cert", [&](TlsOptions& o) { o.cert = dir.path; },
         "cannot read TLS certificate " + dir.path + ": Is a directory"},
        {"key of the same type that does not match", [&](TlsOptions& o) { o.key = c.wrong_key; },
         "TLS key " + c.wrong_key + " does not match certificate " + c.server_ec_cert},
        {"key of another type",
         [&](TlsOptions& o) {
             o.cert = c.server_rsa_cert;
             o.key = c.server_ec_key;
         },
         "TLS key " + c.server_ec_key + " does not match certificate " + c.server_rsa_cert},
        {"cert is not PEM", [&](TlsOptions& o) { o.cert = junk; },
         "TLS certificate " + junk + ": no PEM certificate found"},
        {"encrypted key", [&](TlsOptions& o) { o.key = encrypted; },
         "TLS key " + encrypted + " is encrypted: decrypt it"},
        {"key is a certificate", [&](TlsOptions& o) { o.key = c.ca; },
         "TLS key " + c.ca + ": no PEM private key found"},
        {"min_version", [](TlsOptions& o) { o.min_version = "1.1"; },
         "TLS option min_version \"1.1\" is not supported: use \"1.2\" or \"1.3\""},
        {"ciphers", [](TlsOptions& o) { o.ciphers = "NOPE"; },
         "TLS option ciphers \"NOPE\" selects no TLS 1.2 cipher"},
        {"ciphersuites", [](TlsOptions& o) { o.ciphersuites = "TLS_NOPE"; },
         "TLS option ciphersuites \"TLS_NOPE\" is not a list of TLS 1.3 suites"},
        {"missing OCSP", [&](TlsOptions& o) { o.ocsp_file = missing; },
         "cannot read OCSP response " + missing + ": No such file or directory"},
        {"OCSP not DER", [&](TlsOptions& o) { o.ocsp_file = junk; },
         "OCSP response " + junk + ": not a DER OCSP response"},
        {"missing SNI key",
         [&](TlsOptions& o) {
             o.sni.push_back({c.sni_a_cert, missing, ""});
         },
         "cannot read TLS key " + missing + ": No such file or directory"},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(k.what);
        auto o = ec_options();
        k.change(o);
        try {
            Context::create(o);
            ADD_FAILURE() << "no TlsError";
        } catch (const TlsError& e) {
            std::string what = e.what();
            EXPECT_EQ(what.substr(0, k.message.size()), k.message) << what;
            EXPECT_EQ(what.find('\n'), std::string::npos);
        }
        EXPECT_EQ(ERR_peek_error(), 0u) << "an OpenSSL error was left queued";
    }
}

// ---- ALPN

TEST(TlsContext, AlpnPrefersH2ThenHttp11ElseNone) {
    struct Case {
        bool http2;
        std::vector<std::string> offered;
        std::string_view chosen;
    };
    const Case cases[] = {
        {true, {"h2", "http/1.1"}, "h2"},
        {true, {"http/1.1", "h2"}, "h2"},  // the server's preference
        {true, {"http/1.1"}, "http/1.1"},
        {false, {"h2", "http/1.1"}, "http/1.1"},
        {false, {"h2"}, ""},
        {true, {"spdy/3", "acme-tls/1"}, ""},
        {true, {}, ""},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(testing::Message() << "http2=" << k.http2 << " offered " << k.offered.size());
        auto o = ec_options();
        o.http2 = k.http2;
        auto ctx = Context::create(o);
        auto h = handshake(*ctx, {.alpn = k.offered});
        ASSERT_TRUE(h.ok) << "no common protocol must not fail the handshake";
        EXPECT_EQ(alpn_protocol(h.server.get()), k.chosen);
        EXPECT_EQ(alpn_protocol(h.client.get()), k.chosen);
    }
}

// ---- SNI

TEST(TlsContext, SniChoosesByNameWithOneLabelWildcards) {
    const auto& c = test_certs();
    auto o = ec_options();
    // The wildcard comes first: the exact w.b.test must still win.
    o.sni = {{c.sni_wildcard_cert, c.sni_wildcard_key, ""},
             {c.sni_a_cert, c.sni_a_key, ""},
             {c.sni_w_b_cert, c.sni_w_b_key, ""}};
    auto ctx = Context::create(o);
    struct Case {
        std::string sni, verify_host, cert;
    };
    const Case cases[] = {
        {"a.test", "a.test", c.sni_a_cert},
        {"A.Test.", "a.test", c.sni_a_cert},
        {"x.b.test", "x.b.test", c.sni_wildcard_cert},
        {"w.b.test", "w.b.test", c.sni_w_b_cert},
        {"b.test", "localhost", c.server_ec_cert},      // a wildcard needs a label
        {"y.x.b.test", "localhost", c.server_ec_cert},  // and matches only one
        {"other.test", "localhost", c.server_ec_cert},
        {"localhost", "localhost", c.server_ec_cert},
        {"", "localhost", c.server_ec_cert},  // no SNI at all
    };
    for (const Case& k : cases) {
        SCOPED_TRACE("SNI " + k.sni);
        auto h = handshake(*ctx, {.sni = k.sni, .verify_host = k.verify_host});
        ASSERT_TRUE(h.ok);
        EXPECT_TRUE(served(h, k.cert));
    }
}

TEST(TlsContext, SniCertificateAlsoNegotiatesAlpn) {
    const auto& c = test_certs();
    auto o = ec_options();
    o.sni = {{c.sni_a_cert, c.sni_a_key, ""}};
    auto ctx = Context::create(o);
    auto h = handshake(*ctx, {.sni = "a.test", .verify_host = "a.test", .alpn = {"h2"}});
    ASSERT_TRUE(h.ok);
    EXPECT_EQ(alpn_protocol(h.server.get()), "h2");
}

// ---- Session tickets

TEST(TlsContext, ResumesWithATicketAcrossReload) {
    auto ctx = Context::create(ec_options());
    for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
        SCOPED_TRACE(version);
        auto first = handshake(*ctx, {.max_version = version});
        ASSERT_TRUE(first.ok);
        EXPECT_FALSE(SSL_session_reused(first.server.get()));
        auto session = session_of(first);
        ASSERT_TRUE(session && SSL_SESSION_is_resumable(session.get()));

        auto second = handshake(*ctx, {.max_version = version, .session = session.get()});
        ASSERT_TRUE(second.ok);
        EXPECT_TRUE(SSL_session_reused(second.server.get()));
        EXPECT_TRUE(SSL_session_reused(second.client.get()));

        ctx->reload();
        auto third = handshake(*ctx, {.max_version = version, .session = session.get()});
        ASSERT_TRUE(third.ok);
        EXPECT_TRUE(SSL_session_reused(third.server.get())) << "ticket keys must survive reload";
    }
}

TEST(TlsContext, NoResumptionWithoutTickets) {
    auto o = ec_options();
    o.session_tickets = false;
    auto ctx = Context::create(o);
    for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
        auto first = handshake(*ctx, {.max_version = version});
        ASSERT_TRUE(first.ok);
        auto session = session_of(first);
        auto second = handshake(*ctx, {.max_version = version, .session = session.get()});
        ASSERT_TRUE(second.ok);
        EXPECT_FALSE(SSL_session_reused(second.server.get()));
    }
}

// The rotation is lazy and wall-clock driven, so this test sleeps: one period (1 s) later the
// first key is the previous one and still accepted; two rotations later it is gone.
TEST(TlsContext, TicketFromPreviousKeyAcceptedButNotFromTwoRotationsAgo) {
    auto o = ec_options();
    o.ticket_key_rotation = std::chrono::seconds(1);
    auto ctx = Context::create(o);
    std::vector<SessionPtr> sessions;
    const int versions[] = {TLS1_2_VERSION, TLS1_3_VERSION};
    for (int version : versions) {
        auto h = handshake(*ctx, {.max_version = version});
        ASSERT_TRUE(h.ok);
        sessions.push_back(session_of(h));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    for (size_t i = 0; i < 2; ++i) {
        auto h = handshake(*ctx, {.max_version = versions[i], .session = sessions[i].get()});
        ASSERT_TRUE(h.ok);
        EXPECT_TRUE(SSL_session_reused(h.server.get())) << "previous key, version " << versions[i];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    for (size_t i = 0; i < 2; ++i) {
        auto h = handshake(*ctx, {.max_version = versions[i], .session = sessions[i].get()});
        ASSERT_TRUE(h.ok) << "an unknown ticket falls back to a full handshake";
        EXPECT_FALSE(SSL_session_reused(h.server.get())) << "version " << versions[i];
    }
}

// ---- OCSP stapling

TEST(TlsContext, StaplesTheOcspResponse) {
    const auto& c = test_certs();
    auto o = ec_options();
    o.ocsp_file = c.server_ec_ocsp;
    // An SNI certificate without a response staples nothing.
    o.sni = {{c.sni_a_cert, c.sni_a_key, ""}};
    auto ctx = Context::create(o);
    const std::string want = slurp(c.server_ec_ocsp);
    for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
        SCOPED_TRACE(version);
        auto h = handshake(*ctx, {.max_version = version, .request_ocsp = true});
        ASSERT_TRUE(h.ok);
        const unsigned char* resp = nullptr;
        long len = SSL_get_tlsext_status_ocsp_resp(h.client.get(), &resp);
        ASSERT_GT(len, 0);
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(resp), static_cast<size_t>(len)), want);

        auto sni = handshake(*ctx, {.sni = "a.test",
                                    .verify_host = "a.test",
                                    .max_version = version,
                                    .request_ocsp = true});
        ASSERT_TRUE(sni.ok);
        EXPECT_LE(SSL_get_tlsext_status_ocsp_resp(sni.client.get(), &resp), 0);
    }
}

// ---- reload()

TEST(TlsContext, ReloadFailureKeepsTheOldCertificates) {
    const auto& c = test_certs();
    TempDir dir;
    TlsOptions o;
    o.cert = dir.copy(c.server_ec_cert, "cert.pem");
    o.key = dir.copy(c.server_ec_key, "key.pem");
    auto ctx = Context::create(o);

    fs::remove(o.key);
    try {
        ctx->reload();
        ADD_FAILURE() << "reload() with a missing key succeeded";
    } catch (const TlsError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "cannot read TLS key " + o.key + ": No such file or directory");
    }
    auto h = handshake(*ctx);
    ASSERT_TRUE(h.ok);
    EXPECT_TRUE(served(h, c.server_ec_cert));

    // A connection made before a successful reload keeps its certificate set.
    SslPtr before(ctx->new_session());
    dir.copy(c.server_rsa_cert, "cert.pem");
    dir.copy(c.server_rsa_key, "key.pem");
    ctx->reload();
    h = handshake(*ctx);
    ASSERT_TRUE(h.ok);
    EXPECT_TRUE(served(h, c.server_rsa_cert));
    EXPECT_TRUE(SSL_CTX_get0_certificate(SSL_get_SSL_CTX(before.get())) != nullptr);
}

TEST(TlsContext, ConcurrentHandshakesWhileReloading) {
    const auto& c = test_certs();
    auto o = ec_options();
    o.sni = {{c.sni_a_cert, c.sni_a_key, ""}};
    auto ctx = Context::create(o);
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    std::thread reloader([&] {
        while (!stop.load()) ctx->reload();
    });
    auto worker = [&](std::string sni) {
        SessionPtr session;
        for (int i = 0; i < 25; ++i) {
            auto h = handshake(*ctx, {.sni = sni, .verify_host = sni, .session = session.get()});
            if (!h.ok) ++failures;
            if (h.ok) session = session_of(h);
        }
    };
    std::thread a(worker, "localhost");
    std::thread b(worker, "a.test");
    a.join();
    b.join();
    stop = true;
    reloader.join();
    EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace vela::tls
