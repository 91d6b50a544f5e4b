// net::Transport on a real Loop: a test driver (a tls::StreamOwner, as the protocol drivers are)
// over one end of a socketpair, the test playing the peer on the other end. TLS runs against
// an OpenSSL client on its own thread with the certificates from tests/tls/make-certs.

#include "vela/net/transport.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tls/certs.hpp"
#include "vela/tls/context.hpp"

namespace vela::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// One end of a socketpair closed at the end of a test (unless the transport took it).
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// A connected pair: `ours` (non-blocking, for the transport) and `peer` (blocking, the test's).
struct Pair {
    int ours = -1;
    Fd peer;
    Pair() {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
        ::fcntl(sv[0], F_SETFL, ::fcntl(sv[0], F_GETFL) | O_NONBLOCK);
        ours = sv[0];
        peer.fd = sv[1];
    }
};

bool fd_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Waits up to `bound` for `fd` to be readable (or hung up).
bool wait_readable(int fd, std::chrono::milliseconds bound) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(bound.count())) == 1;
}

// Reads `n` bytes from the peer (less on EOF or after `bound` without bytes).
std::string peer_read(int fd, std::size_t n, std::chrono::milliseconds bound = 5s) {
    std::string got;
    char buf[64 * 1024];
    while (got.size() < n && wait_readable(fd, bound)) {
        const ssize_t r = ::read(fd, buf, std::min(sizeof buf, n - got.size()));
        if (r <= 0) break;
        got.append(buf, static_cast<std::size_t>(r));
    }
    return got;
}

// True when the peer reads EOF within `bound` (and no byte before it).
bool peer_reads_eof(int fd, std::chrono::milliseconds bound = 5s) {
    char c;
    return wait_readable(fd, bound) && ::read(fd, &c, 1) == 0;
}

void peer_write(int fd, std::string_view s) {
    ASSERT_EQ(::write(fd, s.data(), s.size()), static_cast<ssize_t>(s.size()));
}

// Runs `loop` until `done()` holds (checked every millisecond) or `bound` has passed; returns
// done(). Waits are bounded so that a failure is an assertion, never a hang.
bool run_until(Loop& loop, const std::function<bool()>& done,
               std::chrono::milliseconds bound = 5s) {
    const auto end = Clock::now() + bound;
    std::function<void()> check = [&] {
        if (done() || Clock::now() >= end)
            loop.stop();
        else
            loop.call_after(1ms, check);
    };
    loop.post(check);
    loop.run();
    return done();
}

// A protocol driver reduced to what the transport asks of one: it reads into the transport's
// input buffer and leaves the bytes there for the test to look at, and counts the callbacks.
struct Driver final : tls::StreamOwner {
    Transport t;
    int reads = 0;    // on_read calls with bytes
    ssize_t end = 1;  // the last on_read(n <= 0): 0 EOF, -errno (1: none yet)
    int write_ready = 0;
    int handshakes = 0;
    std::string alpn;
    std::vector<std::uint64_t> fired_at;  // loop.now_ms() at each timer firing
    std::function<void()> on_writable;    // run on on_write_ready
    std::function<void()> on_timer;       // run when the timer fires

    Driver(Loop& loop, int fd, std::unique_ptr<tls::Stream> tls = nullptr)
        : t(loop, fd, std::move(tls), false) {
        t.attach(*this, this, &Driver::fired);
    }
    // The next driver after a switch.
    explicit Driver(Transport&& moved) : t(std::move(moved)) {
        t.attach(*this, this, &Driver::fired);
    }

    Buffer& read_buffer() override { return t.input(); }
    bool on_read(ssize_t n) override {
        if (n > 0) {
            ++reads;
            return !t.closed() && t.reading();
        }
        end = n;
        t.stop_reading();
        return false;
    }
    void on_write_ready() override {
        ++write_ready;
        if (on_writable) on_writable();
    }
    bool on_handshake(std::string_view a) override {
        ++handshakes;
        alpn = a;
        return true;
    }
    static void fired(TimerWheel::Entry* e) {
        auto* d = static_cast<Driver*>(e->owner);
        d->fired_at.push_back(d->t.loop().now_ms());
        if (d->on_timer) d->on_timer();
    }
};

ssize_t send_text(Transport& t, std::string_view s) {
    iovec v{const_cast<char*>(s.data()), s.size()};
    return t.send(&v, 1);
}

TEST(Transport, PeerBytesArriveThroughOnReadInTheInputBuffer) {
    Loop loop;
    Pair p;
    Driver d(loop, p.ours);
    peer_write(p.peer.fd, "hello");
    d.t.add();
    d.t.read();
    EXPECT_TRUE(d.t.reading());
    ASSERT_TRUE(run_until(loop, [&] { return d.t.in.size() >= 5; }));
    EXPECT_EQ(d.t.in.view(), "hello");
    EXPECT_GE(d.reads, 1);

    peer_write(p.peer.fd, " world");
    ASSERT_TRUE(run_until(loop, [&] { return d.t.in.size() >= 11; }));
    EXPECT_EQ(d.t.in.view(), "hello world");
    EXPECT_EQ(d.end, 1) << "no EOF or error reported";

    ::close(p.peer.fd);
    p.peer.fd = -1;
    ASSERT_TRUE(run_until(loop, [&] { return d.end <= 0; }));
    EXPECT_EQ(d.end, 0) << "the peer's close reads as EOF";
    EXPECT_FALSE(d.t.closed()) << "EOF is the driver's to act on";
}

TEST(Transport, SendAndWriteOutReachThePeer) {
    Loop loop;
    Pair p;
    Driver d(loop, p.ours);
    d.t.add();
    const std::string a = "first ", b = "second";
    iovec v[2] = {{const_cast<char*>(a.data()), a.size()}, {const_cast<char*>(b.data()), b.size()}};
    EXPECT_EQ(d.t.send(v, 2), static_cast<ssize_t>(a.size() + b.size()));
    EXPECT_EQ(peer_read(p.peer.fd, 12), "first second");

    d.t.output().append("queued bytes");
    EXPECT_EQ(d.t.write_out(), 1) << "all written";
    EXPECT_TRUE(d.t.out.empty());
    EXPECT_EQ(peer_read(p.peer.fd, 12), "queued bytes");
    d.t.output().append("more");
    EXPECT_EQ(d.t.write_out(true), 1) << "the MSG_MORE path writes too";
    EXPECT_EQ(peer_read(p.peer.fd, 4), "more");
    EXPECT_EQ(d.t.write_out(), 1) << "an empty buffer is done";
}

TEST(Transport, PartialWriteKeepsTheRestAndWriteReadyFollowsTheDrain) {
    Loop loop;
    Pair p;
    Driver d(loop, p.ours);
    d.t.add();
    std::string data(4 << 20, '\0');
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i % 251);
    d.t.output().append(data);
    ASSERT_EQ(d.t.write_out(), 0) << "a socket nobody reads cannot take 4 MiB";
    const std::size_t left = d.t.out.size();
    ASSERT_GT(left, 0u);
    ASSERT_LT(left, data.size());

    // Nobody reads: the loop has nothing to report.
    run_until(
        loop, [] { return false; }, 30ms);
    EXPECT_EQ(d.write_ready, 0);
    EXPECT_EQ(d.t.out.size(), left);

    // The driver writes on as the socket drains, as the protocol drivers do.
    int result = 0;
    d.on_writable = [&] { result = d.t.write_out(); };
    std::string got;
    std::thread reader([&] { got = peer_read(p.peer.fd, data.size()); });
    const bool drained = run_until(
        loop, [&] { return d.t.out.empty(); }, 10s);
    reader.join();
    EXPECT_TRUE(drained);
    EXPECT_GE(d.write_ready, 1);
    EXPECT_EQ(result, 1);
    EXPECT_TRUE(got == data) << "bytes in order, none lost or repeated (" << got.size() << ")";
}

TEST(Transport, CloseClosesTheSocketOnceAndCancelsTheTimer) {
    Loop loop({.wheel_tick_ms = 5});
    Pair p;
    Driver d(loop, p.ours);
    d.t.add();
    d.t.read();
    d.t.arm(loop.now_ms() + 20);
    ASSERT_TRUE(d.t.timer.linked());
    ASSERT_EQ(loop.wheel().size(), 1u);
    const int fd = d.t.io.fd;

    d.t.close();
    EXPECT_TRUE(d.t.closed());
    EXPECT_EQ(d.t.io.fd, -1);
    EXPECT_FALSE(d.t.io.registered);
    EXPECT_FALSE(d.t.timer.linked());
    EXPECT_EQ(loop.wheel().size(), 0u);
    EXPECT_FALSE(fd_open(fd));
    EXPECT_TRUE(peer_reads_eof(p.peer.fd));

    // The number is free again: a second close must not close whatever takes it next.
    Fd reuse{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
    ASSERT_GE(reuse.fd, 0);
    d.t.close();
    EXPECT_TRUE(fd_open(reuse.fd));

    // The timer's deadline passes without a firing.
    run_until(
        loop, [] { return false; }, 60ms);
    EXPECT_TRUE(d.fired_at.empty());
    EXPECT_EQ(d.reads, 0);
}

TEST(Transport, ShutdownWriteSendsEofAndReadingGoesOn) {
    Loop loop;
    Pair p;
    Driver d(loop, p.ours);
    d.t.add();
    d.t.read();
    EXPECT_EQ(send_text(d.t, "last"), 4);
    d.t.shutdown_write();
    EXPECT_EQ(peer_read(p.peer.fd, 4), "last");
    EXPECT_TRUE(peer_reads_eof(p.peer.fd)) << "the write side is shut down";
    EXPECT_FALSE(d.t.closed());

    peer_write(p.peer.fd, "still talking");
    ASSERT_TRUE(run_until(loop, [&] { return d.t.in.size() >= 13; }));
    EXPECT_EQ(d.t.in.view(), "still talking");
    EXPECT_EQ(d.end, 1);
}

TEST(Transport, DetachAndMoveKeepUnreadInputQueuedOutputAndTheSocket) {
    Loop loop({.wheel_tick_ms = 5});
    Pair p;
    auto first = std::make_unique<Driver>(loop, p.ours);
    first->t.add();
    first->t.read();
    peer_write(p.peer.fd, "unread");
    ASSERT_TRUE(run_until(loop, [&] { return first->t.in.size() >= 6; }));
    first->t.output().append("queued");
    first->t.arm(loop.now_ms() + 20);
    const int fd = first->t.io.fd;

    first->t.detach();
    EXPECT_FALSE(first->t.io.registered);
    EXPECT_FALSE(first->t.timer.linked());
    EXPECT_EQ(loop.wheel().size(), 0u);
    Driver second(std::move(first->t));
    EXPECT_TRUE(first->t.closed());
    EXPECT_EQ(first->t.io.fd, -1);
    EXPECT_EQ(first->t.in.capacity(), 0u);
    EXPECT_EQ(first->t.out.capacity(), 0u);
    EXPECT_FALSE(second.t.closed());
    EXPECT_EQ(second.t.io.fd, fd);
    EXPECT_EQ(second.t.in.view(), "unread");
    EXPECT_EQ(second.t.out.view(), "queued");

    // The old driver goes; the socket stays with the new one.
    const std::size_t free_before = loop.buffers().free_count();
    first.reset();
    EXPECT_TRUE(fd_open(fd));
    EXPECT_FALSE(wait_readable(p.peer.fd, 0ms)) << "the peer saw no EOF";
    EXPECT_EQ(loop.buffers().free_count(), free_before) << "the moved buffers stay lent";

    second.t.add();
    second.t.read();
    EXPECT_EQ(second.t.write_out(), 1);
    EXPECT_EQ(peer_read(p.peer.fd, 6), "queued");
    peer_write(p.peer.fd, " then more");
    ASSERT_TRUE(run_until(loop, [&] { return second.t.in.size() >= 16; }));
    EXPECT_EQ(second.t.in.view(), "unread then more");
    EXPECT_GE(second.reads, 1);

    // The new driver's timer fires for it.
    second.t.arm(loop.now_ms() + 10);
    ASSERT_TRUE(run_until(loop, [&] { return !second.fired_at.empty(); }));
    EXPECT_EQ(second.fired_at.size(), 1u);
}

TEST(Transport, ReadLaterAsksItsPredicateAndSkipsAClosedTransport) {
    Loop loop;
    Pair p;
    Driver d(loop, p.ours);
    d.t.add();
    peer_write(p.peer.fd, "waiting");
    // Runs the loop until everything deferred so far (the read_later among it) has run.
    auto run_deferred = [&] {
        bool ran = false;
        loop.defer([&] { ran = true; });
        return run_until(loop, [&] { return ran; });
    };

    int asked = 0;
    d.t.read_later([&] {
        ++asked;
        return false;
    });
    EXPECT_EQ(d.reads, 0) << "not from the caller's frame";
    ASSERT_TRUE(run_deferred());
    EXPECT_EQ(asked, 1);
    EXPECT_FALSE(d.t.reading()) << "the predicate said no";
    EXPECT_TRUE(d.t.in.empty());

    d.t.read_later([&] {
        ++asked;
        return true;
    });
    EXPECT_TRUE(d.t.in.empty());
    ASSERT_TRUE(run_deferred());
    EXPECT_EQ(asked, 2);
    EXPECT_TRUE(d.t.reading());
    EXPECT_EQ(d.t.in.view(), "waiting");

    // Already reading: the predicate is not asked.
    d.t.read_later([&] {
        ++asked;
        return true;
    });
    ASSERT_TRUE(run_deferred());
    EXPECT_EQ(asked, 2);

    // Closed before the loop came round: no question, no read.
    d.t.stop_reading();
    peer_write(p.peer.fd, " more");
    d.t.read_later([&] {
        ++asked;
        return true;
    });
    d.t.close();
    ASSERT_TRUE(run_deferred());
    EXPECT_EQ(asked, 2);
    EXPECT_EQ(d.t.in.view(), "waiting");
    EXPECT_FALSE(d.t.reading());
}

// A driver on a loop with a fine wheel, and two deadlines far enough apart that a loaded
// machine still fires the first well before the second.
struct TransportTimer : testing::Test {
    static constexpr std::uint64_t kTick = 5;
    Loop loop{{.wheel_tick_ms = kTick}};
    Pair p;
    Driver d{loop, p.ours};
    const std::uint64_t t0 = loop.now_ms();
    const std::uint64_t near = t0 + 30, far = t0 + 300;
};

TEST_F(TransportTimer, ArmKeepsAnEarlierFiringAndDueReArmsForTheLaterDeadline) {
    std::vector<bool> due;
    d.on_timer = [&] { due.push_back(d.t.due(far)); };

    d.t.arm(near);
    const std::uint64_t expiry = d.t.timer.expiry;
    d.t.arm(far);  // later: a store in a real driver; the entry still fires at `near`
    EXPECT_EQ(d.t.timer.expiry, expiry);
    EXPECT_EQ(loop.wheel().size(), 1u);

    ASSERT_TRUE(run_until(loop, [&] { return due.size() == 2; }));
    ASSERT_EQ(d.fired_at.size(), 2u);
    EXPECT_FALSE(due[0]) << "fired early, at " << d.fired_at[0] - t0 << " ms";
    EXPECT_TRUE(due[1]);
    EXPECT_GE(d.fired_at[0], near) << "never before its deadline";
    EXPECT_LT(d.fired_at[0], far);
    EXPECT_GE(d.fired_at[1], far) << "the re-armed entry fires at the later deadline";
    EXPECT_LE(d.fired_at[1], far + kTick + 250) << "about a tick late at most";
    EXPECT_FALSE(d.t.timer.linked()) << "due() re-arms only before the deadline";
    EXPECT_EQ(loop.wheel().size(), 0u);
}

TEST_F(TransportTimer, ArmMovesAFiringEarlierAndScheduleReplacesIt) {
    d.t.arm(far);
    d.t.arm(near);  // earlier: the entry must fire no later than this
    ASSERT_TRUE(run_until(loop, [&] { return !d.fired_at.empty(); }));
    EXPECT_GE(d.fired_at[0], near);
    EXPECT_LT(d.fired_at[0], far);
    EXPECT_EQ(loop.wheel().size(), 0u);

    // schedule() replaces an earlier expiry with a later one.
    const std::uint64_t t1 = loop.now_ms();
    d.t.arm(t1 + 10);
    d.t.schedule(t1 + 60);
    ASSERT_TRUE(run_until(loop, [&] { return d.fired_at.size() == 2; }));
    EXPECT_GE(d.fired_at[1], t1 + 60);
    run_until(
        loop, [] { return false; }, 20ms);
    EXPECT_EQ(d.fired_at.size(), 2u) << "one firing per schedule";

    d.t.arm(loop.now_ms() + 10);
    d.t.disarm();
    EXPECT_EQ(loop.wheel().size(), 0u);
    run_until(
        loop, [] { return false; }, 40ms);
    EXPECT_EQ(d.fired_at.size(), 2u);
}

TEST(Transport, BuffersGoBackToTheLoopsPool) {
    Loop loop;
    Pair p;
    BufferPool& pool = loop.buffers();
    std::size_t lent = 0;  // free buffers while the transport holds two
    {
        Driver d(loop, p.ours);
        EXPECT_EQ(d.t.in.capacity(), 0u) << "a new transport borrows nothing";
        EXPECT_EQ(d.t.out.capacity(), 0u);
        d.t.input().append("x");
        d.t.output().append("y");
        EXPECT_EQ(d.t.in.capacity(), pool.buffer_size());
        EXPECT_EQ(d.t.out.capacity(), pool.buffer_size());
        lent = pool.free_count();

        d.t.release_input_if_empty();
        d.t.release_output_if_empty();
        EXPECT_EQ(pool.free_count(), lent) << "buffers holding bytes stay";
        EXPECT_EQ(d.t.in.view(), "x");

        d.t.in.clear();
        d.t.release_input_if_empty();
        EXPECT_EQ(d.t.in.capacity(), 0u);
        EXPECT_EQ(pool.free_count(), lent + 1);
        d.t.release_input_if_empty();  // holds none: nothing to give back twice
        EXPECT_EQ(pool.free_count(), lent + 1);

        d.t.close();
        EXPECT_EQ(d.t.out.view(), "y") << "close() keeps the buffers";
        d.t.release_buffers();
        EXPECT_EQ(d.t.out.capacity(), 0u);
        EXPECT_EQ(pool.free_count(), lent + 2) << "given back whatever it held";

        d.t.input();
        d.t.output();
        EXPECT_EQ(pool.free_count(), lent) << "borrowed again from the pool";
    }
    EXPECT_EQ(pool.free_count(), lent + 2) << "the destructor gives both back";
}

// The client end of a TLS test: blocking OpenSSL calls on its own thread, every read bounded.
struct TlsClientResult {
    bool connected = false;
    std::string reply;     // what the first SSL_read returned
    int end_ret = 1;       // the second SSL_read
    int end_error = 0;     // its SSL_get_error
    bool tcp_eof = false;  // recv() returned 0 after close_notify
    bool wrote_after = false;
};

TlsClientResult run_tls_client(int fd) {
    TlsClientResult r;
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx, test::test_certs().ca.c_str(), nullptr);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    SSL* ssl = SSL_new(ctx);
    SSL_set_tlsext_host_name(ssl, "localhost");
    SSL_set1_host(ssl, "localhost");
    static const unsigned char kAlpn[] = "\x08http/1.1";
    SSL_set_alpn_protos(ssl, kAlpn, sizeof kAlpn - 1);
    SSL_set_fd(ssl, fd);
    r.connected = SSL_connect(ssl) == 1;
    if (r.connected && SSL_write(ssl, "ping", 4) == 4) {
        char buf[256];
        const int n = SSL_read(ssl, buf, sizeof buf);
        if (n > 0) r.reply.assign(buf, static_cast<std::size_t>(n));
        r.end_ret = SSL_read(ssl, buf, sizeof buf);
        r.end_error = SSL_get_error(ssl, r.end_ret);
        r.tcp_eof = ::recv(fd, buf, 1, 0) == 0;
        // TLS 1.3 half-close: the server's close_notify ends only its direction.
        r.wrote_after = SSL_write(ssl, "after", 5) == 5;
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return r;
}

TEST(Transport, TlsHandshakeDeliversPlaintextAndShutdownWriteSendsCloseNotify) {
    TlsOptions o;
    o.cert = test::test_certs().server_ec_cert;
    o.key = test::test_certs().server_ec_key;
    auto ctx = tls::Context::create(o);
    Loop loop;
    Pair p;
    Driver d(loop, p.ours,
             std::make_unique<tls::Stream>(ctx->new_session(), loop.buffers(), loop.io()));
    EXPECT_TRUE(d.t.secure());
    d.t.add();
    d.t.read();

    TlsClientResult client;
    std::jthread peer([&] { client = run_tls_client(p.peer.fd); });
    const bool pinged = run_until(
        loop, [&] { return d.t.in.size() >= 4 || d.end <= 0; }, 10s);
    EXPECT_TRUE(pinged);
    EXPECT_EQ(d.handshakes, 1);
    EXPECT_EQ(d.alpn, "http/1.1");
    EXPECT_TRUE(d.t.tls->handshake_done());
    EXPECT_EQ(d.t.in.view(), "ping") << "the driver gets plaintext";

    EXPECT_EQ(send_text(d.t, "pong"), 4);
    d.t.shutdown_write();
    EXPECT_FALSE(d.t.tls->output_pending());
    const bool heard = run_until(
        loop, [&] { return d.t.in.size() >= 9 || d.end <= 0; }, 10s);
    peer.join();

    EXPECT_TRUE(client.connected);
    EXPECT_EQ(client.reply, "pong");
    EXPECT_EQ(client.end_ret, 0);
    EXPECT_EQ(client.end_error, SSL_ERROR_ZERO_RETURN) << "close_notify, not a cut connection";
    EXPECT_TRUE(client.tcp_eof) << "then the write side is shut down";
    EXPECT_TRUE(client.wrote_after);
    EXPECT_TRUE(heard);
    EXPECT_EQ(d.t.in.view(), "pingafter") << "reading goes on after shutdown_write";
    EXPECT_FALSE(d.t.closed());
}

}  // namespace
}  // namespace vela::net
