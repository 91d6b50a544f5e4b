#pragma once
// Throw-away TLS certificates for tests. test_certs() runs tests/tls/make-certs once per process
// into a fresh temporary directory (removed at exit) and returns the paths, so no key is
// committed and every test binary gets its own files. Usage:
//
//     const auto& c = vela::test::test_certs();
//     vela::TlsOptions o;
//     o.cert = c.server_ec_cert;
//     o.key = c.server_ec_key;
//     // a client trusts c.ca and checks the name "localhost" (or 127.0.0.1)
//
// Needs the compile definition VELA_SOURCE_DIR (set by vela_test() in tests/CMakeLists.txt),
// bash and the openssl CLI.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#ifndef VELA_SOURCE_DIR
#error "tests/tls/certs.hpp needs VELA_SOURCE_DIR (see vela_test in tests/CMakeLists.txt)"
#endif

namespace vela::test {

/// Paths of the generated files. Every server certificate is for DNS:localhost and
/// IP:127.0.0.1 unless said otherwise, and everything chains to `ca`.
struct TestCerts {
    /// The directory holding everything (removed when the process exits).
    std::string dir;
    /// The root CA a client should trust (EC P-256, self-signed).
    std::string ca;
    /// The root CA's key (to sign more certificates in a test).
    std::string ca_key;
    /// ECDSA P-256 server certificate, signed by `ca`.
    std::string server_ec_cert;
    /// Key of server_ec_cert.
    std::string server_ec_key;
    /// RSA 2048 server certificate, signed by `ca`.
    std::string server_rsa_cert;
    /// Key of server_rsa_cert.
    std::string server_rsa_key;
    /// Chain file: a leaf signed by an intermediate CA, then that intermediate.
    std::string server_chain_cert;
    /// Key of the leaf in server_chain_cert.
    std::string server_chain_key;
    /// SNI certificate for DNS:a.test only.
    std::string sni_a_cert;
    /// Key of sni_a_cert.
    std::string sni_a_key;
    /// SNI certificate for DNS:*.b.test only (its CN, b.test, is not a SAN).
    std::string sni_wildcard_cert;
    /// Key of sni_wildcard_cert.
    std::string sni_wildcard_key;
    /// SNI certificate for DNS:w.b.test only (a name sni_wildcard_cert also covers).
    std::string sni_w_b_cert;
    /// Key of sni_w_b_cert.
    std::string sni_w_b_key;
    /// A certificate valid only in January 2020.
    std::string expired_cert;
    /// Key of expired_cert.
    std::string expired_key;
    /// A certificate valid only from 2099-01-01 to 2099-02-01.
    std::string not_yet_valid_cert;
    /// Key of not_yet_valid_cert.
    std::string not_yet_valid_key;
    /// An EC key that matches none of the certificates.
    std::string wrong_key;
    /// Client certificate (extendedKeyUsage clientAuth, CN "vela test client"), signed by `ca`.
    std::string client_cert;
    /// Key of client_cert.
    std::string client_key;
    /// Server certificate for localhost and 127.0.0.1 signed by its own key, not by `ca`.
    std::string self_signed_cert;
    /// Key of self_signed_cert.
    std::string self_signed_key;
    /// DER OCSP response ("good", signed by `ca`) for server_ec_cert.
    std::string server_ec_ocsp;
};

namespace detail {

// Runs make-certs into a new directory; throws with the script's output when it fails.
inline TestCerts make_test_certs() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/vela-certs-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + templ);
    TestCerts c;
    c.dir = templ;
    const std::string log = c.dir + "/make-certs.log";
    const std::string cmd =
        "bash '" VELA_SOURCE_DIR "/tests/tls/make-certs' '" + c.dir + "' >'" + log + "' 2>&1";
    if (std::system(cmd.c_str()) != 0) {
        std::ifstream in(log);
        std::stringstream out;
        out << in.rdbuf();
        std::error_code ec;
        std::filesystem::remove_all(c.dir, ec);
        throw std::runtime_error("tests/tls/make-certs failed: " + out.str());
    }
    auto f = [&](const char* name) { return c.dir + "/" + name; };
    c.ca = f("ca.pem");
    c.ca_key = f("ca.key");
    c.server_ec_cert = f("server-ec.pem");
    c.server_ec_key = f("server-ec.key");
    c.server_rsa_cert = f("server-rsa.pem");
    c.server_rsa_key = f("server-rsa.key");
    c.server_chain_cert = f("server-chain.pem");
    c.server_chain_key = f("server-chain.key");
    c.sni_a_cert = f("sni-a.pem");
    c.sni_a_key = f("sni-a.key");
    c.sni_wildcard_cert = f("sni-wildcard.pem");
    c.sni_wildcard_key = f("sni-wildcard.key");
    c.sni_w_b_cert = f("sni-w-b.pem");
    c.sni_w_b_key = f("sni-w-b.key");
    c.expired_cert = f("expired.pem");
    c.expired_key = f("expired.key");
    c.not_yet_valid_cert = f("not-yet-valid.pem");
    c.not_yet_valid_key = f("not-yet-valid.key");
    c.wrong_key = f("wrong.key");
    c.client_cert = f("client.pem");
    c.client_key = f("client.key");
    c.self_signed_cert = f("self-signed.pem");
    c.self_signed_key = f("self-signed.key");
    c.server_ec_ocsp = f("server-ec.ocsp.der");
    return c;
}

}  // namespace detail

/// The test certificates, made on first use (thread-safe; about 0.3 s) and shared by every
/// test in the process. Treat the files as read-only: copy one to change it.
inline const TestCerts& test_certs() {
    // Owns the directory, so it goes away at exit (and only once, whatever copies callers make).
    struct Owned {
        TestCerts certs = detail::make_test_certs();
        ~Owned() {
            std::error_code ec;
            std::filesystem::remove_all(certs.dir, ec);
        }
    };
    static const Owned owned;
    return owned.certs;
}

}  // namespace vela::test
