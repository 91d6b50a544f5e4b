#include "vela/tls/stream.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "vela/tls/context.hpp"

namespace vela::tls {

namespace {
// Plaintext encrypted per batch: large enough for full 16 KiB records, small enough that
// one connection's ciphertext buffer stays bounded.
constexpr std::size_t kWriteBatch = 64 * 1024;
// TLS record content type of a handshake message (RFC 8446 5.1): a ClientHello starts with it.
constexpr unsigned char kHandshakeRecord = 0x16;
}  // namespace

// The BIO between OpenSSL and the two buffers: reads take ciphertext from cin_, writes append
// to cout_. No copy through OpenSSL's own memory BIOs, and no socket in sight.
struct BioGlue {
    static int write(BIO* b, const char* data, std::size_t len, std::size_t* written) {
        auto* s = static_cast<Stream*>(BIO_get_data(b));
        BIO_clear_retry_flags(b);
        if (s->cout_.capacity() == 0) s->pool_.acquire(s->cout_);
        s->cout_.append(data, len);
        *written = len;
        return 1;
    }
    static int read(BIO* b, char* out, std::size_t len, std::size_t* got) {
        auto* s = static_cast<Stream*>(BIO_get_data(b));
        BIO_clear_retry_flags(b);
        if (s->cin_.empty()) {
            BIO_set_retry_read(b);
            *got = 0;
            return 0;
        }
        const std::size_t n = std::min(len, s->cin_.size());
        std::memcpy(out, s->cin_.data(), n);
        s->cin_.consume(n);
        *got = n;
        return 1;
    }
    static long ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }
    static int create(BIO* b) {
        BIO_set_init(b, 1);
        return 1;
    }
    static const BIO_METHOD* method() {
        static const BIO_METHOD* m = [] {
            BIO_METHOD* bm = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "vela");
            if (!bm) throw std::bad_alloc();
            BIO_meth_set_write_ex(bm, &BioGlue::write);
            BIO_meth_set_read_ex(bm, &BioGlue::read);
            BIO_meth_set_ctrl(bm, &BioGlue::ctrl);
            BIO_meth_set_create(bm, &BioGlue::create);
            return bm;
        }();
        return m;
    }
};

Stream::Stream(SSL* ssl, BufferPool& pool, IoBackend& io) : ssl_(ssl), pool_(pool), io_(io) {
    bio_ = BIO_new(BioGlue::method());
    if (!bio_) {
        SSL_free(ssl_);
        throw std::bad_alloc();
    }
    BIO_set_data(bio_, this);
    SSL_set_bio(ssl_, bio_, bio_);  // one reference, owned by the SSL object
}

Stream::~Stream() {
    SSL_free(ssl_);
    if (cin_.capacity()) pool_.release(cin_);
    if (cout_.capacity()) pool_.release(cout_);
}

Buffer& Stream::read_buffer() {
    if (cin_.capacity() == 0) pool_.acquire(cin_);
    return cin_;
}

void Stream::on_read_none() {
    release_idle_buffers();
    if (handshake_done_ && owner_) owner_->on_read_none();
}

bool Stream::on_read(ssize_t n) {
    if (n <= 0 || failed_) return owner_->on_read(n <= 0 ? n : -EPROTO);
    if (!first_bytes_seen_) {
        first_bytes_seen_ = true;
        // A server judges a client that does not speak TLS; a client leaves the server's first
        // bytes to OpenSSL (an alert is a record too), which fails the handshake quietly.
        if (static_cast<unsigned char>(cin_.data()[0]) != kHandshakeRecord && SSL_is_server(ssl_)) {
            answer_plain_http();
            return false;
        }
    }
    if (!handshake_done_ && !handshake()) {
        if (failed_) {
            owner_->on_read(-EPROTO);
            return false;
        }
        return !handshake_done_;  // still shaking hands: read on; done: the owner said stop
    }
    return decrypt();
}

// Runs the handshake as far as the buffered bytes allow. Returns true once it finished and
// the owner wants the data that may follow.
bool Stream::handshake() {
    const int r = SSL_do_handshake(ssl_);
    if (r == 1) {
        handshake_done_ = true;
        if (flush() < 0) {
            failed_ = true;
            return false;
        }
        release_idle_buffers();
        const std::string_view alpn = alpn_protocol(ssl_);
        return owner_->on_handshake(alpn);
    }
    const int e = SSL_get_error(ssl_, r);
    if (e != SSL_ERROR_WANT_READ) {
        keep_error();
        ERR_clear_error();
    }
    // An alert for a failed handshake is in cout_ now: send what the socket takes.
    if (flush() < 0 || e != SSL_ERROR_WANT_READ) failed_ = true;
    release_idle_buffers();
    return false;
}

bool Stream::start() {
    handshake();  // a client's first step only writes the ClientHello (WANT_READ follows)
    return !failed_;
}

bool Stream::deliver() {
    if (!handshake_done_ || failed_) return true;
    if (cin_.empty() && SSL_pending(ssl_) == 0) return true;
    return decrypt();
}

// Decrypts every complete record into the owner's read buffer, then reports the plaintext.
bool Stream::decrypt() {
    Buffer& out = owner_->read_buffer();
    std::size_t total = 0;
    ssize_t end = 0;  // 0 after the peer's close_notify, -errno after an error
    bool more = true;
    while (more) {
        if (out.writable() < 4096) out.ensure_writable(16 * 1024);
        std::size_t got = 0;
        if (SSL_read_ex(ssl_, out.write_ptr(), out.writable(), &got) == 1) {
            out.commit(got);
            total += got;
            // Nothing buffered on either side: another SSL_read would only say WANT_READ,
            // and that answer costs as much as a record (~1,000 instructions).
            if (cin_.empty() && SSL_pending(ssl_) == 0) {
                end = 1;
                break;
            }
            continue;
        }
        more = false;
        switch (SSL_get_error(ssl_, 0)) {
            case SSL_ERROR_WANT_READ:
                end = 1;
                break;
            case SSL_ERROR_ZERO_RETURN:
                end = 0;
                break;
            default:
                end = -EPROTO;
                failed_ = true;
                keep_error();       // a TLS 1.3 server rejects a client's certificate only now
                ERR_clear_error();  // only after an error: it costs ~800 instructions a call
                break;
        }
    }
    if (flush() < 0) end = -EPIPE;  // post-handshake messages (tickets, key updates)
    release_idle_buffers();
    if (total && !owner_->on_read(static_cast<ssize_t>(total))) return false;
    if (end <= 0) return owner_->on_read(end) && false;
    if (!total) owner_->on_read_none();  // a partial record: the plaintext buffer goes back
    return true;
}

ssize_t Stream::write(const iovec* iov, int iovcnt) {
    if (failed_) return -EPIPE;
    if (!cout_.empty()) {
        if (flush() < 0) return -EPIPE;
        if (!cout_.empty()) {
            owner_waits_ = true;
            return 0;
        }
    }
    std::size_t taken = 0;
    for (int i = 0; i < iovcnt; ++i) {
        const char* p = static_cast<const char*>(iov[i].iov_base);
        std::size_t left = iov[i].iov_len;
        while (left) {
            const std::size_t n = std::min(left, kWriteBatch);
            std::size_t w = 0;
            if (SSL_write_ex(ssl_, p, n, &w) != 1) {
                ERR_clear_error();
                failed_ = true;
                return -EPROTO;
            }
            p += w;
            left -= w;
            taken += w;
            if (flush() < 0) return -EPIPE;
            if (!cout_.empty()) {  // the socket is full: the rest waits for on_write_ready
                owner_waits_ = true;
                return static_cast<ssize_t>(taken);
            }
        }
    }
    release_idle_buffers();
    return static_cast<ssize_t>(taken);
}

bool Stream::close_notify() {
    if (failed_ || !handshake_done_) return flush() >= 0 && cout_.empty();
    SSL_shutdown(ssl_);  // queues the alert in cout_; the peer's answer is not awaited
    ERR_clear_error();
    return flush() >= 0 && cout_.empty();
}

// Writes queued ciphertext; returns bytes written or -errno.
ssize_t Stream::flush() {
    if (cout_.empty()) return 0;
    iovec v{cout_.data(), cout_.size()};
    const ssize_t n = io_.write_from(*h_, &v, 1);
    if (n < 0) {
        failed_ = true;
        return n;
    }
    cout_.consume(static_cast<std::size_t>(n));
    return n;
}

void Stream::on_write_ready() {
    if (flush() < 0) {
        owner_->on_read(-EPIPE);
        return;
    }
    if (!cout_.empty()) return;
    release_idle_buffers();
    if (owner_waits_) {
        owner_waits_ = false;
        owner_->on_write_ready();
    }
}

// A plain HTTP request on a TLS port gets a readable 400 (as nginx answers) and the
// connection ends; anything else that is not a handshake just ends it.
void Stream::answer_plain_http() {
    const unsigned char c = static_cast<unsigned char>(cin_.data()[0]);
    failed_ = true;
    if (c >= 'A' && c <= 'Z') {
        static constexpr std::string_view kBody = "This is a TLS port: use https://\n";
        static constexpr std::string_view kHead =
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Connection: close\r\nContent-Length: ";
        std::string msg(kHead);
        msg += std::to_string(kBody.size());
        msg += "\r\n\r\n";
        msg += kBody;
        cout_.clear();
        if (cout_.capacity() == 0) pool_.acquire(cout_);
        cout_.append(msg);
        flush();
    }
    cin_.clear();
    owner_->on_read(-EPROTO);
}

void Stream::keep_error() noexcept {
    static_assert((ERR_SYSTEM_FLAG | ERR_PACK(ERR_LIB_MASK, 0, ERR_REASON_MASK)) <= UINT32_MAX,
                  "OpenSSL error codes must fit the 32 bits of Stream::error_");
    error_ = static_cast<std::uint32_t>(ERR_peek_last_error());
}

void Stream::release_idle_buffers() noexcept {
    if (cin_.empty() && cin_.capacity()) pool_.release(cin_);
    if (cout_.empty() && cout_.capacity()) pool_.release(cout_);
}

}  // namespace vela::tls
