#pragma once
// Loading files into OpenSSL for the server and client contexts (module-private): every failure
// a user can cause is a TlsError whose what() is one line naming the file and what to do.
//
// Threading: these functions touch only their arguments and the calling thread's OpenSSL error
// queue; call them from any thread.

#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vela/tls/context.hpp"

namespace vela::tls {

/// Frees an SSL_CTX (for std::unique_ptr).
struct CtxFree {
    void operator()(SSL_CTX* c) const noexcept { SSL_CTX_free(c); }
};
/// An owned SSL_CTX reference.
using CtxPtr = std::unique_ptr<SSL_CTX, CtxFree>;

/// Empties this thread's OpenSSL error queue when a load ends, however it ends: a stale entry
/// would make the next SSL_get_error() on this thread misreport an unrelated connection.
struct ErrorQueueGuard {
    ~ErrorQueueGuard();
};

/// The codes of every queued OpenSSL error (oldest first), leaving the queue empty.
std::vector<unsigned long> take_errors();
/// True when one of `errors` has library `lib` and reason `reason`.
bool has_error(const std::vector<unsigned long>& errors, int lib, int reason);
/// The first error's text, for messages that have nothing better to say.
std::string first_reason(const std::vector<unsigned long>& errors);
/// Reads a whole file, or throws "cannot read <what> <path>: <errno text>".
std::string read_file(std::string_view what, const std::string& path);
/// "2020-02-01 00:00:00 UTC".
std::string format_time(const ASN1_TIME* t);
/// TLS1_2_VERSION or TLS1_3_VERSION for "1.2" or "1.3"; throws TlsError otherwise.
int parse_min_version(const std::string& v);
/// Loads the chain and key into `ctx` and checks they belong together (a certificate out of
/// its validity period loads with a warning); `client`: a client certificate, not a server's.
void load_certificate(SSL_CTX* ctx, const TlsCertificate& c, bool client = false);

}  // namespace vela::tls
