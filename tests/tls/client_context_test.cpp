// tls::ClientContext and tls::Stream in client mode: real handshakes between a client stream
// (ClientContext::new_session()) and a server stream (tls::Context, or a hand-made SSL_CTX that
// asks for a client certificate), both net::Transports on one Loop over a socketpair, with the
// certificates from tests/tls/make-certs. The session cache is also checked on its own.

#include "vela/tls/client_context.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "tls/certs.hpp"
#include "tls/session_cache.hpp"
#include "vela/net/transport.hpp"
#include "vela/tls/context.hpp"
#include "vela/tls/stream.hpp"

namespace vela::tls {
namespace {

using namespace std::chrono_literals;
using test::test_certs;

std::array<int, 2> socket_pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0) {
        throw std::runtime_error("socketpair failed");
    }
    return {fds[0], fds[1]};
}

// Runs `loop` until `done()` holds, checking every millisecond, for at most `limit`.
bool run_loop_until(Loop& loop, const std::function<bool()>& done,
                    std::chrono::milliseconds limit = 5s) {
    const auto give_up = std::chrono::steady_clock::now() + limit;
    std::function<void()> check;
    check = [&] {
        if (done() || std::chrono::steady_clock::now() > give_up) {
            loop.stop();
        } else {
            loop.call_after(1ms, check);
        }
    };
    loop.post(check);
    loop.run();
    return done();
}

// One end of a connection: a transport with a TLS stream over `fd`, and a driver that keeps
// what it reads and records the handshake and the end.
struct End final : StreamOwner {
    net::Transport t;
    int handshakes = 0;
    std::string alpn;
    std::string received;
    ssize_t end = 1;  // the on_read(n <= 0) that ended it: 0 EOF, -errno (1: none yet)

    End(Loop& loop, int fd, SSL* ssl)
        : t(loop, fd, std::make_unique<Stream>(ssl, loop.buffers(), loop.io()), false) {
        t.attach(*this, this, [](TimerWheel::Entry*) {});
        t.add();
        t.read();
    }
    Stream& stream() { return *t.tls; }
    SSL* ssl() { return t.tls->ssl(); }
    std::pair<Failure, std::string> failure() {
        return handshake_failure(ssl(), t.tls->last_error());
    }
    void send(std::string_view s) {
        iovec v{const_cast<char*>(s.data()), s.size()};
        ASSERT_EQ(t.send(&v, 1), static_cast<ssize_t>(s.size()));
    }

    Buffer& read_buffer() override { return t.input(); }
    bool on_read(ssize_t n) override {
        if (n <= 0) {
            end = n;
            t.stop_reading();
            return false;
        }
        received += t.in.view();
        t.in.clear();
        t.keep_input();
        return true;
    }
    bool on_handshake(std::string_view a) override {
        ++handshakes;
        alpn = a;
        return true;
    }
};

// A client stream and a server stream joined by a socketpair; the constructor sends the
// ClientHello.
struct Link {
    Loop& loop;
    End client;
    End server;

    Link(Loop& l, SSL* client_ssl, SSL* server_ssl)
        : Link(l, client_ssl, server_ssl, socket_pair()) {}
    Link(Loop& l, SSL* client_ssl, SSL* server_ssl, std::array<int, 2> fds)
        : loop(l), client(l, fds[0], client_ssl), server(l, fds[1], server_ssl) {
        EXPECT_TRUE(client.stream().start());
    }
    bool connected() const { return client.handshakes == 1 && server.handshakes == 1; }
    bool failed() const { return client.end < 0 && server.end < 0; }
    // Runs the handshake until both sides finished or both failed.
    bool settle() {
        return run_loop_until(loop, [&] { return connected() || failed(); });
    }
    // The server sends a byte and the client reads it (and, before it, a TLS 1.3 ticket).
    bool exchange() {
        const std::size_t had = client.received.size();
        server.send("x");
        return run_loop_until(loop, [&] { return client.received.size() > had; });
    }
};

TlsOptions server_options(const std::string& cert, const std::string& key) {
    TlsOptions o;
    o.cert = cert;
    o.key = key;
    return o;
}

TlsClientOptions trusting_test_ca() {
    TlsClientOptions o;
    o.ca_file = test_certs().ca;
    return o;
}

// ---- Successful handshakes

TEST(TlsClientContext, VerifiesTheServerByDnsNameWithSni) {
    auto server =
        Context::create(server_options(test_certs().server_ec_cert, test_certs().server_ec_key));
    auto client = ClientContext::create(trusting_test_ca());
    Loop loop;
    Link link(loop, client->new_session("localhost", 443), server->new_session());
    ASSERT_TRUE(link.settle());
    ASSERT_TRUE(link.connected()) << link.client.failure().second;
    EXPECT_EQ(SSL_get_verify_result(link.client.ssl()), X509_V_OK);
    EXPECT_EQ(SSL_is_server(link.client.ssl()), 0);
    const char* sni = SSL_get_servername(link.server.ssl(), TLSEXT_NAMETYPE_host_name);
    ASSERT_NE(sni, nullptr);
    EXPECT_STREQ(sni, "localhost");
    EXPECT_EQ(link.client.stream().last_error(), 0u);
    EXPECT_FALSE(session_resumed(link.client.ssl()));

    link.client.send("ping");
    ASSERT_TRUE(run_loop_until(loop, [&] { return link.server.received == "ping"; }));
    ASSERT_TRUE(link.exchange());
    EXPECT_EQ(link.client.received, "x");
}

TEST(TlsClientContext, VerifiesAnIpAddressWithoutSni) {
    auto server =
        Context::create(server_options(test_certs().server_ec_cert, test_certs().server_ec_key));
    auto client = ClientContext::create(trusting_test_ca());
    Loop loop;
    Link link(loop, client->new_session("127.0.0.1", 443), server->new_session());
    ASSERT_TRUE(link.settle());
    ASSERT_TRUE(link.connected()) << link.client.failure().second;
    EXPECT_EQ(SSL_get_verify_result(link.client.ssl()), X509_V_OK);
    EXPECT_EQ(SSL_get_servername(link.server.ssl(), TLSEXT_NAMETYPE_host_name), nullptr)
        << "RFC 6066 3: no SNI for an IP literal";
}

TEST(TlsClientContext, OffersAlpnInTheGivenOrder) {
    struct Case {
        bool server_h2;
        std::vector<std::string_view> offered;
        std::string_view chosen;
    };
    const Case cases[] = {
        {true, {"h2", "http/1.1"}, "h2"},
        {false, {"h2", "http/1.1"}, "http/1.1"},
        {true, {"http/1.1"}, "http/1.1"},
        {true, {}, ""},
    };
    auto client = ClientContext::create(trusting_test_ca());
    for (const Case& k : cases) {
        SCOPED_TRACE(testing::Message()
                     << "server h2 " << k.server_h2 << ", offered " << k.offered.size());
        auto o = server_options(test_certs().server_ec_cert, test_certs().server_ec_key);
        o.http2 = k.server_h2;
        auto server = Context::create(o);
        Loop loop;
        Link link(loop, client->new_session("localhost", 443, k.offered), server->new_session());
        ASSERT_TRUE(link.settle());
        ASSERT_TRUE(link.connected());
        EXPECT_EQ(link.client.alpn, k.chosen);
        EXPECT_EQ(alpn_protocol(link.client.ssl()), k.chosen);
    }
}

TEST(TlsClientContext, VerifyOffAcceptsAWrongHostAndASelfSignedCertificate) {
    auto server = Context::create(
        server_options(test_certs().self_signed_cert, test_certs().self_signed_key));
    TlsClientOptions o;
    o.verify = false;
    auto client = ClientContext::create(o);
    Loop loop;
    Link link(loop, client->new_session("example.test", 443), server->new_session());
    ASSERT_TRUE(link.settle());
    EXPECT_TRUE(link.connected());
}

// ---- Failed handshakes: the category and one line saying why

TEST(TlsClientContext, ExplainsEachVerificationFailure) {
    const auto& c = test_certs();
    struct Case {
        const char* what;
        std::string cert, key, host;
        bool trust_test_ca;
        Failure failure;
        std::string message;
    };
    const Case cases[] = {
        {"expired", c.expired_cert, c.expired_key, "localhost", true, Failure::expired,
         "certificate verify failed: certificate has expired (notAfter 2020-02-01 00:00:00 UTC)"},
        {"not yet valid", c.not_yet_valid_cert, c.not_yet_valid_key, "localhost", true,
         Failure::not_yet_valid,
         "certificate verify failed: certificate is not yet valid (notBefore 2099-01-01 "
         "00:00:00 UTC)"},
        {"wrong DNS name", c.server_ec_cert, c.server_ec_key, "example.test", true,
         Failure::wrong_host,
         "certificate verify failed: the certificate is for localhost, 127.0.0.1, not "
         "example.test"},
        {"wrong IP address", c.server_ec_cert, c.server_ec_key, "127.0.0.2", true,
         Failure::wrong_host,
         "certificate verify failed: the certificate is for localhost, 127.0.0.1, not "
         "127.0.0.2"},
        {"unknown CA (the system store)", c.server_ec_cert, c.server_ec_key, "localhost", false,
         Failure::unknown_ca,
         "certificate verify failed: unknown CA: unable to get local issuer certificate (trust "
         "the CA with ca_file)"},
        {"self-signed", c.self_signed_cert, c.self_signed_key, "localhost", true,
         Failure::self_signed,
         "certificate verify failed: self-signed certificate (if it is the one you expect, "
         "trust it with ca_file)"},
    };
    auto trusting = ClientContext::create(trusting_test_ca());
    auto system_store = ClientContext::create({});
    for (const Case& k : cases) {
        SCOPED_TRACE(k.what);
        auto server = Context::create(server_options(k.cert, k.key));
        auto& client = k.trust_test_ca ? trusting : system_store;
        Loop loop;
        Link link(loop, client->new_session(k.host, 443), server->new_session());
        ASSERT_TRUE(link.settle());
        EXPECT_EQ(link.client.handshakes, 0);
        EXPECT_EQ(link.client.end, -EPROTO);
        EXPECT_EQ(link.server.end, -EPROTO) << "the client's alert ends the server's side";
        const auto [failure, why] = link.client.failure();
        EXPECT_EQ(failure, k.failure);
        EXPECT_EQ(why, k.message);
        EXPECT_EQ(ERR_peek_error(), 0u) << "an OpenSSL error was left queued";
    }
}

// The first bytes a TLS record header announces: 5 + its length.
std::size_t record_size(const std::string& header) {
    return 5 + ((static_cast<std::size_t>(static_cast<unsigned char>(header[3])) << 8) |
                static_cast<unsigned char>(header[4]));
}

// Reads exactly `n` bytes from a non-blocking socket, waiting at most 5 s for each.
std::string read_exactly(int fd, std::size_t n) {
    std::string got;
    while (got.size() < n) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) != 1) break;
        char buf[4096];
        const ssize_t r = ::read(fd, buf, std::min(sizeof buf, n - got.size()));
        if (r <= 0) break;
        got.append(buf, static_cast<std::size_t>(r));
    }
    return got;
}

TEST(TlsClientContext, PlaintextServerFailsTheHandshakeAndGetsNothingBack) {
    auto client = ClientContext::create(trusting_test_ca());
    Loop loop;
    auto fds = socket_pair();
    End end(loop, fds[0], client->new_session("localhost", 80));
    ASSERT_TRUE(end.stream().start());
    const int server = fds[1];
    const std::string header = read_exactly(server, 5);
    ASSERT_EQ(header.size(), 5u);
    EXPECT_EQ(header[0], 0x16) << "a handshake record: the ClientHello";
    EXPECT_EQ(read_exactly(server, record_size(header) - 5).size(), record_size(header) - 5);

    const std::string_view answer =
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nBad Request";
    ASSERT_EQ(::write(server, answer.data(), answer.size()), static_cast<ssize_t>(answer.size()));
    ASSERT_TRUE(run_loop_until(loop, [&] { return end.end <= 0; }));
    EXPECT_EQ(end.end, -EPROTO);
    EXPECT_EQ(end.handshakes, 0);
    const auto [failure, why] = end.failure();
    EXPECT_EQ(failure, Failure::protocol);
    EXPECT_EQ(why,
              "protocol error: wrong version number (the server did not answer in TLS: is this "
              "port plain HTTP?)");

    end.t.close();  // with the close_notify attempt a driver makes
    char c;
    pollfd p{server, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1);
    EXPECT_EQ(::read(server, &c, 1), 0) << "no 400, no alert: only the end of the connection";
    ::close(server);
}

// ---- Client certificates

// A server that insists on a client certificate from the test CA (tls::Context has no option
// for it), on TLS 1.3: it judges the certificate after the client has finished.
struct CtxFree {
    void operator()(SSL_CTX* c) const noexcept { SSL_CTX_free(c); }
};
std::unique_ptr<SSL_CTX, CtxFree> server_requiring_client_certificates() {
    const auto& c = test_certs();
    std::unique_ptr<SSL_CTX, CtxFree> ctx(SSL_CTX_new(TLS_server_method()));
    EXPECT_EQ(SSL_CTX_use_certificate_chain_file(ctx.get(), c.server_ec_cert.c_str()), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx.get(), c.server_ec_key.c_str(), SSL_FILETYPE_PEM), 1);
    EXPECT_EQ(SSL_CTX_load_verify_locations(ctx.get(), c.ca.c_str(), nullptr), 1);
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    return ctx;
}

SSL* server_session(SSL_CTX* ctx) {
    SSL* ssl = SSL_new(ctx);
    SSL_set_accept_state(ssl);
    return ssl;
}

TEST(TlsClientContext, SendsItsCertificateToAServerThatAsks) {
    auto server = server_requiring_client_certificates();
    auto o = trusting_test_ca();
    o.cert_file = test_certs().client_cert;
    o.key_file = test_certs().client_key;
    auto client = ClientContext::create(o);
    Loop loop;
    Link link(loop, client->new_session("localhost", 443), server_session(server.get()));
    ASSERT_TRUE(link.settle());
    ASSERT_TRUE(link.connected()) << link.client.failure().second;
    EXPECT_EQ(SSL_get_verify_result(link.server.ssl()), X509_V_OK);
    X509* peer = SSL_get0_peer_certificate(link.server.ssl());
    ASSERT_NE(peer, nullptr);
    char cn[64] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
    EXPECT_STREQ(cn, "vela test client");
}

TEST(TlsClientContext, WithoutACertificateTheServersRefusalIsExplained) {
    auto server = server_requiring_client_certificates();
    auto client = ClientContext::create(trusting_test_ca());
    Loop loop;
    Link link(loop, client->new_session("localhost", 443), server_session(server.get()));
    ASSERT_TRUE(link.settle());
    ASSERT_TRUE(link.failed());
    EXPECT_EQ(link.client.handshakes, 1) << "TLS 1.3: the client finished before the refusal";
    EXPECT_EQ(link.client.end, -EPROTO);
    const auto [failure, why] = link.client.failure();
    EXPECT_EQ(failure, Failure::protocol);
    EXPECT_EQ(why,
              "protocol error: tlsv13 alert certificate required (the server wants a client "
              "certificate: set cert_file and key_file)");
}

// ---- Session resumption

TEST(TlsClientContext, ResumesTheSessionOfTheSameHostAndPort) {
    auto server =
        Context::create(server_options(test_certs().server_ec_cert, test_certs().server_ec_key));
    for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
        SCOPED_TRACE(version);
        auto client = ClientContext::create(trusting_test_ca());
        Loop loop;
        // Connects, reads a byte (a TLS 1.3 ticket arrives before it), closes cleanly (OpenSSL
        // will not resume the session of a connection cut without close_notify). Returns
        // whether the connection resumed a session.
        auto connect = [&](std::string_view host, std::uint16_t port) {
            SSL* s = server->new_session();
            SSL_set_max_proto_version(s, version);
            Link link(loop, client->new_session(host, port), s);
            EXPECT_TRUE(link.settle());
            EXPECT_TRUE(link.connected());
            EXPECT_EQ(SSL_version(link.client.ssl()), version);
            EXPECT_TRUE(link.exchange());
            const bool resumed = session_resumed(link.client.ssl());
            EXPECT_EQ(resumed, SSL_session_reused(link.server.ssl()) == 1);
            link.client.t.close();
            return resumed;
        };
        EXPECT_FALSE(connect("localhost", 443));
        EXPECT_EQ(client->cached_sessions(), 1u);
        EXPECT_TRUE(connect("localhost", 443));
        if (version == TLS1_3_VERSION) {
            // The ticket was used once, and vela's server sent no new one on resumption.
            EXPECT_FALSE(connect("localhost", 443));
        }
        EXPECT_TRUE(connect("localhost", 443)) << "1.2: the same session; 1.3: the last ticket";
        EXPECT_FALSE(connect("localhost", 8443)) << "another port is another server";
        EXPECT_FALSE(connect("127.0.0.1", 443)) << "another name is another server";
        EXPECT_EQ(client->cached_sessions(), 3u);
    }
}

TEST(TlsClientContext, NoResumptionWhenTurnedOff) {
    auto server =
        Context::create(server_options(test_certs().server_ec_cert, test_certs().server_ec_key));
    auto o = trusting_test_ca();
    o.session_resumption = false;
    auto client = ClientContext::create(o);
    Loop loop;
    for (int i = 0; i < 2; ++i) {
        Link link(loop, client->new_session("localhost", 443), server->new_session());
        ASSERT_TRUE(link.settle());
        ASSERT_TRUE(link.connected());
        ASSERT_TRUE(link.exchange());
        EXPECT_FALSE(session_resumed(link.client.ssl()));
        link.client.t.close();
    }
    EXPECT_EQ(client->cached_sessions(), 0u);
}

// A resumable session of `version` (an id is what makes it resumable to OpenSSL).
SSL_SESSION* session_of_version(int version) {
    SSL_SESSION* s = SSL_SESSION_new();
    static const unsigned char id[] = {1, 2, 3, 4};
    SSL_SESSION_set1_id(s, id, sizeof id);
    SSL_SESSION_set_protocol_version(s, version);
    return s;
}

TEST(TlsSessionCache, KeepsTheNewestSessionPerPeerAndEvictsTheOldestPeer) {
    SessionCache cache(2);
    EXPECT_EQ(cache.lookup("a:1"), nullptr);
    for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
        SSL_SESSION* s = session_of_version(version);
        cache.store("a:1", s);  // the newest replaces the one before
        for (int use = 0; use < 2; ++use) {
            SSL_SESSION* got = cache.lookup("a:1");
            EXPECT_EQ(got, s) << "version " << version << ", use " << use;
            SSL_SESSION_free(got);
        }
    }
    EXPECT_EQ(cache.size(), 1u);

    cache.store("b:1", session_of_version(TLS1_2_VERSION));
    cache.store("a:1", session_of_version(TLS1_2_VERSION));  // a is now the newer
    cache.store("c:1", session_of_version(TLS1_2_VERSION));
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(cache.lookup("b:1"), nullptr) << "the least recently stored peer went";
    for (const char* key : {"a:1", "c:1"}) {
        SSL_SESSION* got = cache.lookup(key);
        EXPECT_NE(got, nullptr) << key;
        SSL_SESSION_free(got);
    }

    cache.store("d:1", SSL_SESSION_new());  // no id, no ticket: not resumable
    EXPECT_EQ(cache.lookup("d:1"), nullptr);
    EXPECT_EQ(cache.size(), 1u) << "an unresumable session is dropped";
}

// ---- Configuration errors: one line naming the file and what to do

TEST(TlsClientContext, CreateErrorsNameTheFileAndWhatToDo) {
    const auto& c = test_certs();
    const std::string missing = c.dir + "/missing.pem";
    const std::string no_certificate = c.ca_key;  // PEM, but a key
    struct Case {
        const char* what;
        std::function<void(TlsClientOptions&)> change;
        std::string message;  // what() starts with this
    };
    const Case cases[] = {
        {"missing CA file", [&](TlsClientOptions& o) { o.ca_file = missing; },
         "cannot read CA file " + missing + ": No such file or directory"},
        {"CA file without a certificate", [&](TlsClientOptions& o) { o.ca_file = no_certificate; },
         "CA file " + no_certificate +
             ": no PEM certificate found: give the CA certificates to trust"},
        {"missing CA directory", [&](TlsClientOptions& o) { o.ca_dir = missing; },
         "cannot use CA directory " + missing + ": No such file or directory"},
        {"CA directory is a file", [&](TlsClientOptions& o) { o.ca_dir = c.ca; },
         "cannot use CA directory " + c.ca + ": Not a directory"},
        {"certificate without key", [&](TlsClientOptions& o) { o.cert_file = c.client_cert; },
         "TLS client certificate " + c.client_cert + " has no key: set key_file to its key"},
        {"key without certificate", [&](TlsClientOptions& o) { o.key_file = c.client_key; },
         "TLS client key " + c.client_key + " has no certificate: set cert_file"},
        {"key that does not match",
         [&](TlsClientOptions& o) {
             o.cert_file = c.client_cert;
             o.key_file = c.wrong_key;
         },
         "TLS key " + c.wrong_key + " does not match certificate " + c.client_cert},
        {"missing key",
         [&](TlsClientOptions& o) {
             o.cert_file = c.client_cert;
             o.key_file = missing;
         },
         "cannot read TLS key " + missing + ": No such file or directory"},
        {"min_version", [](TlsClientOptions& o) { o.min_version = "1.1"; },
         "TLS option min_version \"1.1\" is not supported: use \"1.2\" or \"1.3\""},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(k.what);
        auto o = trusting_test_ca();
        k.change(o);
        try {
            ClientContext::create(o);
            ADD_FAILURE() << "no TlsError";
        } catch (const TlsError& e) {
            const std::string what = e.what();
            EXPECT_EQ(what.substr(0, k.message.size()), k.message) << what;
            EXPECT_EQ(what.find('\n'), std::string::npos);
        }
        EXPECT_EQ(ERR_peek_error(), 0u) << "an OpenSSL error was left queued";
    }
}

TEST(TlsClientContext, NewSessionRefusesWhatCannotBeDialled) {
    auto client = ClientContext::create(trusting_test_ca());
    const std::string_view empty_name[] = {""};
    const std::string long_name(256, 'p');
    const std::string_view too_long[] = {long_name};
    struct Case {
        std::string_view host;
        std::span<const std::string_view> alpn;
        std::string message;
    };
    const Case cases[] = {
        {"", {}, "TLS client: no host to connect to"},
        {"[::1]", {}, "TLS client: host \"[::1]\": give an IPv6 address without the brackets"},
        {"localhost", empty_name, "TLS client: ALPN protocol \"\" is 0 bytes long"},
        {"localhost", too_long, "TLS client: ALPN protocol \"" + long_name + "\" is 256 bytes"},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(k.host);
        try {
            SSL_free(client->new_session(k.host, 443, k.alpn));
            ADD_FAILURE() << "no TlsError";
        } catch (const TlsError& e) {
            const std::string what = e.what();
            EXPECT_EQ(what.substr(0, k.message.size()), k.message) << what;
        }
    }
    SSL* ssl = client->new_session("::1", 443);
    EXPECT_EQ(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name), nullptr);
    EXPECT_EQ(SSL_is_server(ssl), 0);
    SSL_free(ssl);
    ssl = client->new_session("Example.Test.", 443);
    EXPECT_STREQ(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name), "Example.Test")
        << "SNI carries no trailing dot";
    SSL_free(ssl);
}

}  // namespace
}  // namespace vela::tls
