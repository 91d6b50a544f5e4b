// Loading files into OpenSSL (src/tls/load.hpp), shared by tls::Context and tls::ClientContext.

#include "load.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <system_error>

#include "vela/base/log.hpp"

namespace vela::tls {
namespace {

// A certificate out of its validity period still loads: the server should come up (and serve
// the other certificates) while someone renews it, so this is a warning. `peers`: who checks
// it ("clients" of a server certificate).
void warn_if_out_of_date(X509* cert, const std::string& file, std::string_view peers) {
    if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
        log::warn("TLS certificate {} expired on {}: {} will reject it until it is renewed", file,
                  format_time(X509_get0_notAfter(cert)), peers);
    } else if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
        log::warn("TLS certificate {} is not valid until {}: {} will reject it until then", file,
                  format_time(X509_get0_notBefore(cert)), peers);
    }
}

}  // namespace

ErrorQueueGuard::~ErrorQueueGuard() { ERR_clear_error(); }

// The reasons of every queued OpenSSL error (oldest first), leaving the queue empty.
std::vector<unsigned long> take_errors() {
    std::vector<unsigned long> errors;
    while (unsigned long e = ERR_get_error()) errors.push_back(e);
    return errors;
}

bool has_error(const std::vector<unsigned long>& errors, int lib, int reason) {
    for (unsigned long e : errors) {
        if (ERR_GET_LIB(e) == lib && ERR_GET_REASON(e) == reason) return true;
    }
    return false;
}

// The first error's text, for messages that have nothing better to say.
std::string first_reason(const std::vector<unsigned long>& errors) {
    const char* s = errors.empty() ? nullptr : ERR_reason_error_string(errors.front());
    return s != nullptr ? s : "unknown OpenSSL error";
}

// Reads a whole file, or throws "cannot read <what> <path>: <errno text>". Reading it ourselves
// first is what lets the message say "No such file or directory" instead of OpenSSL's
// "system lib".
std::string read_file(std::string_view what, const std::string& path) {
    if (path.empty()) throw TlsError(fmt::format("no {} file given: set its path", what));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    int err = fd < 0 ? errno : 0;
    std::string data;
    while (err == 0) {
        char buf[16384];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) err = errno;
        if (n <= 0) break;
        data.append(buf, static_cast<size_t>(n));
    }
    if (fd >= 0) ::close(fd);
    if (err != 0) {
        throw TlsError(
            fmt::format("cannot read {} {}: {}", what, path, std::system_category().message(err)));
    }
    return data;
}

// "2020-02-01 00:00:00 UTC".
std::string format_time(const ASN1_TIME* t) {
    std::tm tm{};
    if (ASN1_TIME_to_tm(t, &tm) != 1) return "an unreadable date";
    return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC", tm.tm_year + 1900, tm.tm_mon + 1,
                       tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int parse_min_version(const std::string& v) {
    if (v == "1.2") return TLS1_2_VERSION;
    if (v == "1.3") return TLS1_3_VERSION;
    throw TlsError(
        fmt::format("TLS option min_version \"{}\" is not supported: use \"1.2\" or \"1.3\"", v));
}

// Loads the chain and key into `ctx` and checks they belong together.
void load_certificate(SSL_CTX* ctx, const TlsCertificate& c, bool client) {
    read_file("TLS certificate", c.cert_file);  // only for the errno message
    std::string key_pem = read_file("TLS key", c.key_file);
    if (SSL_CTX_use_certificate_chain_file(ctx, c.cert_file.c_str()) != 1) {
        auto errors = take_errors();
        if (has_error(errors, ERR_LIB_PEM, PEM_R_NO_START_LINE)) {
            throw TlsError(
                fmt::format("TLS certificate {}: no PEM certificate found", c.cert_file));
        }
        throw TlsError(
            fmt::format("TLS certificate {}: cannot load it ({}): give PEM certificates, "
                        "the {}'s first",
                        c.cert_file, first_reason(errors), client ? "client" : "server"));
    }
    warn_if_out_of_date(SSL_CTX_get0_certificate(ctx), c.cert_file, client ? "servers" : "clients");

    // PKCS#8 ("BEGIN ENCRYPTED PRIVATE KEY") or traditional ("Proc-Type: 4,ENCRYPTED").
    if (key_pem.find("-----BEGIN ENCRYPTED") != std::string::npos ||
        key_pem.find("4,ENCRYPTED") != std::string::npos) {
        throw TlsError(fmt::format(
            "TLS key {} is encrypted: decrypt it (openssl pkey -in KEY -out PLAIN) and restrict "
            "the file's permissions instead",
            c.key_file));
    }
    BIO* bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    // A null password callback would prompt on the terminal; this one refuses instead.
    EVP_PKEY* key = bio == nullptr
                        ? nullptr
                        : PEM_read_bio_PrivateKey(
                              bio, nullptr, [](char*, int, int, void*) { return 0; }, nullptr);
    BIO_free(bio);
    OPENSSL_cleanse(key_pem.data(), key_pem.size());
    if (key == nullptr) {
        take_errors();
        throw TlsError(fmt::format("TLS key {}: no PEM private key found", c.key_file));
    }
    bool used = SSL_CTX_use_PrivateKey(ctx, key) == 1;
    EVP_PKEY_free(key);
    auto errors = take_errors();
    // A key of the certificate's type that differs fails in use_PrivateKey; a key of another
    // type is stored in another slot and only check_private_key notices.
    if ((!used && has_error(errors, ERR_LIB_X509, X509_R_KEY_VALUES_MISMATCH)) ||
        (used && SSL_CTX_check_private_key(ctx) != 1)) {
        take_errors();
        throw TlsError(
            fmt::format("TLS key {} does not match certificate {}", c.key_file, c.cert_file));
    }
    if (!used) {
        throw TlsError(fmt::format("TLS key {}: unsupported key ({}): use an RSA or EC key",
                                   c.key_file, first_reason(errors)));
    }
}

}  // namespace vela::tls
