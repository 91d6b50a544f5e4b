#pragma once
// TLS as a byte transform between the socket and a protocol driver.
//
// The backend reads ciphertext into this object's buffer (it is the IoHandle's sink), the
// transform decrypts every complete record straight into the driver's read buffer and calls
// the driver's on_read with the plaintext count, exactly as the backend would for a plain
// socket. Writes go the other way: the driver hands plaintext to write(), which encrypts it
// into a ciphertext buffer and sends that with the backend's write_from. OpenSSL sees only a
// BIO of ours that reads from and appends to those two buffers, never the socket, so the
// backend stays protocol-free (an io_uring backend carries TLS unchanged) and no driver knows
// whether its bytes were encrypted.
//
// Back-pressure: write() accepts new plaintext only while no ciphertext is waiting for the
// socket, so at most one batch of ciphertext is buffered per connection; the driver keeps the
// rest in its own output buffer and its high-water rules apply unchanged. When the socket
// drains, the driver's on_write_ready runs as it would for a plain socket.
//
// Roles: a server stream (an SSL from tls::Context) waits for the ClientHello and answers a
// plain HTTP request with a readable 400. A client stream (from tls::ClientContext) sends its
// ClientHello on start(); a server answering anything but TLS fails the handshake, and nothing
// is written back. Either way the owner learns of a failed handshake as on_read(-EPROTO), and
// last_error() keeps OpenSSL's reason for it (tls::handshake_failure() explains it).
//
// Threading: one Stream belongs to one connection on one loop.

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <string_view>

#include "vela/base/buffer.hpp"
#include "vela/reactor/io_backend.hpp"

typedef struct ssl_st SSL;
typedef struct bio_st BIO;

namespace vela::tls {

/// The protocol driver above a Stream: an IoSink that also hears about the handshake.
class StreamOwner : public IoSink {
  public:
    /// The handshake finished; `alpn` is the negotiated protocol (may be empty). Return false
    /// to stop delivering data for now (the driver is being replaced; see Stream::deliver()).
    virtual bool on_handshake(std::string_view alpn) = 0;
};

/// One connection's TLS transform (see above).
class Stream final : public IoSink {
  public:
    /// Takes ownership of `ssl` (from tls::Context::new_session()); buffers come from `pool`.
    Stream(SSL* ssl, BufferPool& pool, IoBackend& io);
    /// Frees the SSL object and returns the buffers.
    ~Stream() override;
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    /// Attaches the socket handle (whose sink must be this Stream) and the driver above.
    void bind(IoHandle& h, StreamOwner& owner) noexcept {
        h_ = &h;
        owner_ = &owner;
    }
    /// Client side: sends the ClientHello, once the socket is connected, bound and added to
    /// the backend. Returns false when that failed at once (the socket refused it): close.
    bool start();
    /// True once the handshake has finished.
    bool handshake_done() const noexcept { return handshake_done_; }
    /// Encrypts and sends plaintext. Returns the plaintext bytes taken (0 while earlier
    /// ciphertext still waits for the socket) or -errno; when it takes less than offered,
    /// the owner's on_write_ready runs once more can be written.
    ssize_t write(const iovec* iov, int iovcnt);
    /// Decrypts what is buffered and hands it to the owner (after a driver switch). Returns
    /// the owner's on_read result, or true when there was nothing to deliver.
    bool deliver();
    /// Sends close_notify. Returns true when all ciphertext has left (the socket's write
    /// side may then be shut down); otherwise it keeps sending as the socket drains.
    bool close_notify();
    /// True while ciphertext waits for the socket.
    bool output_pending() const noexcept { return !cout_.empty(); }
    /// Bytes this stream holds in buffers (for memory accounting in tests).
    std::size_t buffered() const noexcept { return cin_.capacity() + cout_.capacity(); }
    /// The OpenSSL error code (ERR_peek_last_error) of the failure that ended the handshake or
    /// the connection; 0 when there was none or no reason was queued.
    unsigned long last_error() const noexcept { return error_; }
    /// The connection's SSL object (owned by this stream).
    SSL* ssl() const noexcept { return ssl_; }

    // IoSink, called by the backend.
    Buffer& read_buffer() override;
    void on_read_none() override;
    bool on_read(ssize_t n) override;
    void on_write_ready() override;

  private:
    friend struct BioGlue;
    bool handshake();
    bool decrypt();
    ssize_t flush();
    void answer_plain_http();
    void release_idle_buffers() noexcept;
    void keep_error() noexcept;

    SSL* ssl_;
    BIO* bio_ = nullptr;
    BufferPool& pool_;
    IoBackend& io_;
    IoHandle* h_ = nullptr;
    StreamOwner* owner_ = nullptr;
    Buffer cin_;   // ciphertext read from the socket, not yet decrypted
    Buffer cout_;  // ciphertext made by OpenSSL, not yet written
    bool handshake_done_ = false;
    bool first_bytes_seen_ = false;
    bool owner_waits_ = false;  // the owner was refused bytes: tell it when the socket drains
    bool failed_ = false;
    // last_error(): OpenSSL 3 packs error codes into 32 bits, and these 4 bytes fill what
    // would be padding after the flags (the stream exists per server TLS connection).
    std::uint32_t error_ = 0;
};

}  // namespace vela::tls
