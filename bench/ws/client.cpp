// vela_ws_load: a WebSocket load client for bench/ws/run (docs/benchmarks.md, "WebSocket").
//
// One thread, one epoll set, N connections to one server. Every connection does the RFC 6455
// handshake (no extension offered, so no permessage-deflate), then:
//
//   echo   each connection writes W masked messages of S bytes in one write, waits for the W
//          echoes (checking every byte and the order), then writes the next W: the shape of
//          wrk's HTTP pipelining (bench/wrk/pipeline.lua), W deep. Like wrk, a connection
//          builds its batch once and writes the same bytes every time.
//   bcast  N subscribers plus one publisher join the same room; the publisher writes W
//          messages in one write and waits until each of the N subscribers received all W
//          (in order, byte for byte) before it writes the next W. The server sends each
//          message to every member but its sender.
//
// With --h2 every connection is HTTP/2 with prior knowledge (h2c) and its session runs on one
// stream opened by an extended CONNECT (RFC 8441), once the server's SETTINGS announced it:
// the same frames, inside DATA frames under flow control, through vela's own HTTP/2 codec in
// its client role (vela/http/h2_session.hpp).
//
// Load runs for --duration seconds; then no new batch starts, the batches in flight drain,
// and every connection is closed with a close handshake. With --server-pid the client reads
// that process's utime+stime from /proc when the load starts and after the drain, so the
// server CPU it reports excludes connecting, handshakes and closing.
//
// Output: key=value lines on stdout (messages is echoes received, or deliveries to
// subscribers; errors counts refused handshakes, broken connections, wrong or missing
// messages). Exit status 0 when errors=0, 1 otherwise, 2 for a bad command line.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <vela/http/h2_session.hpp>
#include <vela/ws/frame.hpp>

namespace {

using Clock = std::chrono::steady_clock;
using vela::ws::Opcode;

constexpr std::string_view kUsage =
    "usage: vela_ws_load --port N [options]\n"
    "  --host ADDR        IPv4 address of the server (default 127.0.0.1)\n"
    "  --port N           server port\n"
    "  --port2 N          bcast: every other subscriber connects to this port instead (a second\n"
    "                     node sharing the room through a backplane; the publisher stays on\n"
    "                     --port)\n"
    "  --path P           request target (default /ws/echo, or /ws/room for bcast)\n"
    "  --mode M           echo or bcast (default echo)\n"
    "  --connections N    echo connections, or bcast subscribers (default 100)\n"
    "  --window W         messages per batch in flight per connection / publisher (default 16)\n"
    "  --size S           payload bytes, at least 16 (default 32)\n"
    "  --duration D       seconds of load (default 5)\n"
    "  --binary           binary messages (default text)\n"
    "  --h2               h2c, one session per connection on an extended CONNECT (RFC 8441)\n"
    "  --server-pid PIDS  report the CPU ticks over the load of these processes (comma-separated,\n"
    "                     summed)\n";

struct Options {
    std::string host = "127.0.0.1";
    unsigned port = 0;
    std::string path;
    bool bcast = false;
    unsigned connections = 100;
    unsigned window = 16;
    unsigned size = 32;
    double duration = 5;
    bool binary = false;
    bool h2 = false;
    unsigned port2 = 0;
    std::vector<long> server_pids;
};

[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr, "vela_ws_load: %s\n%s", message.c_str(), kUsage.data());
    std::exit(2);
}

unsigned parse_unsigned(std::string_view opt, std::string_view v, unsigned min, unsigned max) {
    unsigned n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || n < min || n > max)
        usage_error("invalid value '" + std::string(v) + "' for " + std::string(opt));
    return n;
}

Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::fputs(kUsage.data(), stdout);
            std::exit(0);
        }
        if (arg == "--binary") {
            o.binary = true;
            continue;
        }
        if (arg == "--h2") {
            o.h2 = true;
            continue;
        }
        if (i + 1 >= argc) usage_error("missing value for " + std::string(arg));
        const std::string_view v = argv[++i];
        if (arg == "--host") {
            o.host = std::string(v);
        } else if (arg == "--port") {
            o.port = parse_unsigned(arg, v, 1, 65535);
        } else if (arg == "--path") {
            o.path = std::string(v);
        } else if (arg == "--mode") {
            if (v != "echo" && v != "bcast") usage_error("--mode is echo or bcast");
            o.bcast = v == "bcast";
        } else if (arg == "--connections") {
            o.connections = parse_unsigned(arg, v, 1, 100000);
        } else if (arg == "--window") {
            o.window = parse_unsigned(arg, v, 1, 4096);
        } else if (arg == "--size") {
            o.size = parse_unsigned(arg, v, 16, 16 << 20);
        } else if (arg == "--duration") {
            o.duration = std::atof(std::string(v).c_str());
            if (!(o.duration > 0)) usage_error("--duration must be positive");
        } else if (arg == "--port2") {
            o.port2 = parse_unsigned(arg, v, 1, 65535);
        } else if (arg == "--server-pid") {
            std::string_view rest = v;
            while (!rest.empty()) {
                const std::size_t comma = rest.find(',');
                o.server_pids.push_back(parse_unsigned(arg, rest.substr(0, comma), 1, 1u << 31));
                rest =
                    comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
            }
        } else {
            usage_error("unknown option '" + std::string(arg) + "'");
        }
    }
    if (o.port == 0) usage_error("--port is required");
    if (o.path.empty()) o.path = o.bcast ? "/ws/room" : "/ws/echo";
    return o;
}

// utime + stime of `pid` in clock ticks (fields 14 and 15 of /proc/PID/stat), -1 when
// unreadable.
long long process_ticks(long pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    const std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto paren = s.rfind(')');  // the command name may hold spaces and parentheses
    unsigned long long utime = 0, stime = 0;
    if (paren == std::string::npos ||
        std::sscanf(s.c_str() + paren + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                    &utime, &stime) != 2)
        return -1;
    return static_cast<long long>(utime + stime);
}

// The CPU ticks of all of `pids` (-1 when one is unreadable, or none are given).
long long processes_ticks(const std::vector<long>& pids) {
    if (pids.empty()) return -1;
    long long sum = 0;
    for (long p : pids) {
        const long long t = process_ticks(p);
        if (t < 0) return -1;
        sum += t;
    }
    return sum;
}

// The payload in slot `slot` of connection `id`'s batch: both as 8 hex digits, then letters
// (ASCII, so valid text). A connection sends the same batch again and again (built once, as
// wrk does), so the client's own work per message stays small; every byte received is
// checked against it, and so is the order within a batch.
void make_payload(std::string& out, unsigned id, unsigned slot, unsigned size) {
    out.resize(size);
    char head[17];
    std::snprintf(head, sizeof head, "%08x%08x", id, slot);
    std::memcpy(out.data(), head, 16);
    for (unsigned i = 16; i < size; ++i) out[i] = static_cast<char>('a' + i % 26);
}

class LoadClient;
struct Conn;

// An HTTP/2 connection's calls into the load client (--h2).
struct H2Link final : vela::h2::SessionHandler {
    H2Link(LoadClient& client, Conn& conn);
    void on_begin_headers(vela::h2::Stream&) override {}
    void on_field(vela::h2::Stream&, const vela::hpack::DecodedField& f) override {
        if (f.name == ":status") status = f.value;
    }
    void on_headers(vela::h2::Stream& s, const vela::h2::HeadersEnd& end) override;
    void on_data(vela::h2::Stream& s, std::string_view data, bool end_stream) override;
    void on_close(vela::h2::Stream& s, vela::h2::ErrorCode code, bool by_peer) override;
    void on_writable(vela::h2::Stream&) override { writable = true; }

    LoadClient& client;
    Conn& conn;
    vela::h2::Session session;
    vela::h2::Stream* stream = nullptr;
    std::string status;
    std::string raw;      // bytes read, not yet a whole frame
    std::string pending;  // WebSocket bytes waiting for the stream's window
    bool writable = false;
};

vela::h2::SessionOptions h2_client_options() {
    vela::h2::SessionOptions o;
    o.role = vela::h2::Role::client;
    return o;
}

struct Conn {
    explicit Conn(const vela::ws::ReaderOptions& ro) : reader(ro) {}
    int fd = -1;
    unsigned id = 0;
    enum class State { connecting, handshake, open, closing, done } state = State::connecting;
    bool publisher = false;
    bool want_write = false;
    std::vector<char> in;  // received, not yet parsed: in[0, in_len)
    std::size_t in_len = 0;
    std::string out;  // not yet written: out[out_off, size)
    std::size_t out_off = 0;
    vela::ws::FrameReader reader;
    std::string batch;           // the W frames this connection writes, masked, built once
    std::uint64_t received = 0;  // messages received
    unsigned in_flight = 0;      // echo: messages of the current batch not yet back
    std::unique_ptr<H2Link> h2;  // --h2
};

class LoadClient {
  public:
    explicit LoadClient(const Options& o) : opt_(o) {
        ropt_.require_mask = false;  // server frames are never masked
        ropt_.max_frame = ropt_.max_message = std::size_t{64} << 20;
        op_ = o.binary ? Opcode::binary : Opcode::text;
        make_payload(payload_, 0, 0, o.size);  // the letters every payload ends with
    }
    int run();

    // --h2 (H2Link's calls)
    void h2_response(Conn& c, const vela::h2::HeadersEnd& end);
    void h2_data(Conn& c, std::string_view data);
    void h2_closed(Conn& c);

  private:
    friend struct H2Link;
    bool connect_all();
    void ws_write(Conn& c, std::string_view frames);
    void h2_flush(Conn& c);
    void h2_read(Conn& c, std::string_view bytes);
    bool wait_until(Clock::time_point deadline, bool (LoadClient::*done)() const);
    bool all_open() const { return open_ + failed_ == conns_.size(); }
    bool drained() const;
    bool all_closed() const { return closed_ == conns_.size(); }
    bool never() const { return false; }
    void on_event(Conn& c, std::uint32_t events);
    void on_readable(Conn& c);
    bool parse_handshake(Conn& c);
    void parse_frames(Conn& c);
    void on_message(Conn& c, std::string_view payload);
    void send_batch(Conn& c);
    void send_bytes(Conn& c);
    void fail(Conn& c, const char* why);
    void finish(Conn& c);
    std::uint32_t next_mask() {
        rng_ ^= rng_ << 13;
        rng_ ^= rng_ >> 7;
        rng_ ^= rng_ << 17;
        return static_cast<std::uint32_t>(rng_);
    }

    const Options& opt_;
    vela::ws::ReaderOptions ropt_;
    Opcode op_;
    int ep_ = -1;
    std::vector<std::unique_ptr<Conn>> conns_;
    Conn* publisher_ = nullptr;
    std::size_t open_ = 0, failed_ = 0, closed_ = 0;
    bool loading_ = false;          // new batches may start
    std::uint64_t messages_ = 0;    // echoes / deliveries
    std::uint64_t broadcasts_ = 0;  // bcast: messages every subscriber received
    std::uint64_t batch_left_ = 0;  // bcast: deliveries still due for the current batch
    std::uint64_t errors_ = 0;
    std::uint64_t rng_ = 0x9e3779b97f4a7c15ULL;
    std::string payload_;
    Clock::time_point last_done_;
};

void LoadClient::fail(Conn& c, const char* why) {
    if (c.state == Conn::State::done) return;
    if (errors_ < 5) std::fprintf(stderr, "vela_ws_load: connection %u: %s\n", c.id, why);
    ++errors_;
    if (c.state == Conn::State::connecting || c.state == Conn::State::handshake) ++failed_;
    finish(c);
}

void LoadClient::finish(Conn& c) {
    if (c.state == Conn::State::done) return;
    if (c.state == Conn::State::open || c.state == Conn::State::closing) --open_;
    c.state = Conn::State::done;
    ::close(c.fd);
    ++closed_;
}

bool LoadClient::connect_all() {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(opt_.port));
    if (inet_pton(AF_INET, opt_.host.c_str(), &sa.sin_addr) != 1) usage_error("bad --host");
    const unsigned total = opt_.connections + (opt_.bcast ? 1 : 0);
    for (unsigned i = 0; i < total; ++i) {
        auto c = std::make_unique<Conn>(ropt_);
        c->id = i;
        c->publisher = opt_.bcast && i == opt_.connections;
        sockaddr_in to = sa;  // half the subscribers on the second node, if there is one
        if (opt_.port2 && !c->publisher && i % 2 == 1)
            to.sin_port = htons(static_cast<std::uint16_t>(opt_.port2));
        c->in.resize(16 * 1024);
        c->fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0) {
            std::perror("vela_ws_load: socket");
            return false;
        }
        const int one = 1;
        ::setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (::connect(c->fd, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0 &&
            errno != EINPROGRESS) {
            std::perror("vela_ws_load: connect");
            return false;
        }
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.ptr = c.get();
        c->want_write = true;
        ::epoll_ctl(ep_, EPOLL_CTL_ADD, c->fd, &ev);
        conns_.push_back(std::move(c));
    }
    publisher_ = opt_.bcast ? conns_.back().get() : nullptr;
    return true;
}

// Runs the loop until `done` holds or `deadline` passes; false on the deadline.
bool LoadClient::wait_until(Clock::time_point deadline, bool (LoadClient::*done)() const) {
    epoll_event evs[256];
    while (!(this->*done)()) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return false;
        const int n =
            ::epoll_wait(ep_, evs, 256, static_cast<int>(std::min<long>(left.count(), 100)));
        for (int i = 0; i < n; ++i) on_event(*static_cast<Conn*>(evs[i].data.ptr), evs[i].events);
    }
    return true;
}

void LoadClient::on_event(Conn& c, std::uint32_t events) {
    if (c.state == Conn::State::done) return;
    if (c.state == Conn::State::connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) return fail(c, "connect failed");
        c.state = Conn::State::handshake;
        if (opt_.h2) {
            c.h2 = std::make_unique<H2Link>(*this, c);
            c.h2->session.start();
            h2_flush(c);
            return;
        }
        c.out = "GET " + opt_.path + " HTTP/1.1\r\nHost: " + opt_.host + ":" +
                std::to_string(opt_.port) +
                "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
        c.out_off = 0;
        send_bytes(c);
        return;
    }
    if (events & EPOLLOUT) send_bytes(c);
    if (c.state != Conn::State::done && (events & (EPOLLIN | EPOLLERR | EPOLLHUP))) on_readable(c);
}

void LoadClient::send_bytes(Conn& c) {
    while (c.out_off < c.out.size()) {
        const ssize_t n =
            ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN) break;
            return fail(c, "write failed");
        }
        c.out_off += static_cast<std::size_t>(n);
    }
    if (c.out_off == c.out.size()) {
        c.out.clear();
        c.out_off = 0;
    }
    const bool want = !c.out.empty();
    if (want != c.want_write) {
        c.want_write = want;
        epoll_event ev{};
        ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
        ev.data.ptr = &c;
        ::epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev);
    }
}

void LoadClient::on_readable(Conn& c) {
    if (c.h2) {
        // HTTP/2 frames: their DATA payloads go into c.in (h2_data), so they are read apart.
        static char frames[64 * 1024];
        const ssize_t n = ::recv(c.fd, frames, sizeof frames, 0);
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) {
            if (c.state == Conn::State::closing) return finish(c);
            return fail(c, n == 0 ? "closed by the server" : "read failed");
        }
        h2_read(c, std::string_view(frames, static_cast<std::size_t>(n)));
        return;
    }
    if (c.in.size() - c.in_len < 8 * 1024) c.in.resize(c.in.size() * 2);
    const ssize_t n = ::recv(c.fd, c.in.data() + c.in_len, c.in.size() - c.in_len, 0);
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
        if (c.state == Conn::State::closing) return finish(c);  // the server closed after its close
        return fail(c, n == 0 ? "closed by the server" : "read failed");
    }
    c.in_len += static_cast<std::size_t>(n);
    if (c.state == Conn::State::handshake && !parse_handshake(c)) return;
    if (c.state == Conn::State::open || c.state == Conn::State::closing) parse_frames(c);
}

// True once the 101 has been checked (bytes after it stay in c.in for the frame reader).
bool LoadClient::parse_handshake(Conn& c) {
    const std::string_view head(c.in.data(), c.in_len);
    const auto end = head.find("\r\n\r\n");
    if (end == std::string_view::npos) {
        if (c.in_len > 8192) fail(c, "handshake answer too long");
        return false;
    }
    // Header names are case-insensitive; the accept value is not (RFC 6455 4.2.2 answer for
    // the key we send, from the RFC's own example).
    std::string lower(head.substr(0, end + 2));
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    constexpr std::string_view kAccept = "\r\nsec-websocket-accept: ";
    const auto at = lower.find(kAccept);
    if (!lower.starts_with("http/1.1 101 ") || at == std::string::npos ||
        head.substr(at + kAccept.size(), 30) != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") {
        fail(c, "handshake refused or wrong Sec-WebSocket-Accept");
        return false;
    }
    if (lower.find("\r\nsec-websocket-extensions:") != std::string::npos) {
        fail(c, "the server answered an extension nobody offered");
        return false;
    }
    const std::size_t used = end + 4;
    std::memmove(c.in.data(), c.in.data() + used, c.in_len - used);
    c.in_len -= used;
    c.state = Conn::State::open;
    ++open_;
    return true;
}

void LoadClient::parse_frames(Conn& c) {
    std::size_t off = 0;
    while (c.state == Conn::State::open || c.state == Conn::State::closing) {
        std::size_t used = 0;
        const vela::ws::Event e = c.reader.next(c.in.data() + off, c.in_len - off, used);
        off += used;
        using K = vela::ws::Event::Kind;
        if (e.kind == K::need_more) break;
        if (e.kind == K::message) {
            on_message(c, e.payload);
        } else if (e.kind == K::ping) {
            std::string pong;
            vela::ws::append_client_frame(pong, Opcode::pong, e.payload, next_mask());
            ws_write(c, pong);
        } else if (e.kind == K::close) {
            if (c.state == Conn::State::closing) {
                finish(c);
            } else {
                fail(c, "closed by the server during the load");
            }
        } else if (e.kind == K::error) {
            fail(c, e.what);
        }
    }
    if (c.state == Conn::State::done) return;
    std::memmove(c.in.data(), c.in.data() + off, c.in_len - off);
    c.in_len -= off;
}

void LoadClient::on_message(Conn& c, std::string_view payload) {
    if (c.state == Conn::State::closing) return;  // a broadcast that crossed our close
    if (c.publisher) return fail(c, "the publisher received its own broadcast");
    const unsigned from = opt_.bcast ? publisher_->id : c.id;
    char head[17];
    std::snprintf(head, sizeof head, "%08x%08x", from,
                  static_cast<unsigned>(c.received % opt_.window));
    if (payload.size() != payload_.size() || payload.substr(0, 16) != std::string_view(head, 16) ||
        payload.substr(16) != std::string_view(payload_).substr(16))
        return fail(c, "wrong or out-of-order payload");
    ++c.received;
    ++messages_;
    last_done_ = Clock::now();
    if (!opt_.bcast) {
        if (c.in_flight > 0 && --c.in_flight == 0 && loading_) send_batch(c);
        return;
    }
    if (batch_left_ > 0 && --batch_left_ == 0) {
        broadcasts_ += opt_.window;
        if (loading_) send_batch(*publisher_);
    }
}

// W messages in one write: the connection's next W (echo), or the publisher's next W.
void LoadClient::send_batch(Conn& c) {
    if (c.state != Conn::State::open) return;
    if (c.batch.empty()) {
        std::string p;
        for (unsigned i = 0; i < opt_.window; ++i) {
            make_payload(p, c.id, i, opt_.size);
            vela::ws::append_client_frame(c.batch, op_, p, next_mask());
        }
    }
    if (opt_.bcast) {
        batch_left_ = std::uint64_t{opt_.window} * opt_.connections;
    } else {
        c.in_flight = opt_.window;
    }
    ws_write(c, c.batch);
}

bool LoadClient::drained() const {
    if (opt_.bcast) return batch_left_ == 0 || publisher_->state != Conn::State::open;
    for (const auto& c : conns_)
        if (c->state == Conn::State::open && c->in_flight > 0) return false;
    return true;
}

int LoadClient::run() {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &rl);
    }
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0 || !connect_all()) return 1;
    const auto t_connect = Clock::now();
    if (!wait_until(t_connect + std::chrono::seconds(30), &LoadClient::all_open) || failed_ > 0) {
        std::fprintf(stderr, "vela_ws_load: %zu of %zu connections open after the handshakes\n",
                     open_, conns_.size());
        // Connections that failed are in errors_ already; add those still not open.
        std::printf("errors=%llu\n",
                    static_cast<unsigned long long>(errors_ + conns_.size() - open_ - failed_));
        return 1;
    }
    const double handshake_s = std::chrono::duration<double>(Clock::now() - t_connect).count();
    // Let the server finish what follows its 101 (joining the room) before any broadcast.
    // With a second node, its subscription to the room's channel must be in place too.
    if (opt_.bcast)
        wait_until(Clock::now() + std::chrono::milliseconds(opt_.port2 ? 1000 : 200),
                   &LoadClient::never);

    const long long ticks0 = processes_ticks(opt_.server_pids);
    const auto t0 = Clock::now();
    last_done_ = t0;
    loading_ = true;
    if (opt_.bcast) {
        send_batch(*publisher_);
    } else {
        for (auto& c : conns_) send_batch(*c);
    }
    const auto stop = t0 + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(opt_.duration));
    wait_until(stop, &LoadClient::all_closed);  // runs the load until the deadline
    loading_ = false;
    if (!wait_until(Clock::now() + std::chrono::seconds(10), &LoadClient::drained)) {
        std::fprintf(stderr, "vela_ws_load: messages still missing 10 s after the load\n");
        ++errors_;
    }
    const long long ticks1 = processes_ticks(opt_.server_pids);
    const double seconds = std::chrono::duration<double>(last_done_ - t0).count();

    // Close handshakes: ours, then the server's close (or its TCP close).
    for (auto& c : conns_) {
        if (c->state != Conn::State::open) continue;
        c->state = Conn::State::closing;
        std::string close;
        vela::ws::append_client_frame(close, Opcode::close,
                                      vela::ws::close_payload(vela::ws::close_code::normal, {}),
                                      next_mask());
        ws_write(*c, close);
    }
    if (!wait_until(Clock::now() + std::chrono::seconds(5), &LoadClient::all_closed)) {
        std::fprintf(stderr, "vela_ws_load: %zu connections not closed 5 s after our close\n",
                     conns_.size() - closed_);
        ++errors_;
    }

    auto line = [](const char* k, unsigned long long v) { std::printf("%s=%llu\n", k, v); };
    std::printf("mode=%s\n", opt_.bcast ? "bcast" : "echo");
    line("connections", opt_.connections);
    line("window", opt_.window);
    line("size", opt_.size);
    std::printf("type=%s\n", opt_.binary ? "binary" : "text");
    std::printf("transport=%s\n", opt_.h2 ? "h2c" : "http1.1");
    std::printf("handshake_seconds=%.3f\n", handshake_s);
    std::printf("seconds=%.3f\n", seconds);
    line("messages", messages_);
    if (opt_.bcast) line("broadcasts", broadcasts_);
    std::printf("rate=%.1f\n", seconds > 0 ? static_cast<double>(messages_) / seconds : 0.0);
    if (opt_.bcast)
        std::printf("broadcast_rate=%.1f\n",
                    seconds > 0 ? static_cast<double>(broadcasts_) / seconds : 0.0);
    if (ticks0 >= 0 && ticks1 >= 0)
        line("server_ticks", static_cast<unsigned long long>(ticks1 - ticks0));
    line("errors", errors_);
    return errors_ == 0 ? 0 : 1;
}

// WebSocket frames toward the server: straight to the socket, or into DATA on the stream.
void LoadClient::ws_write(Conn& c, std::string_view frames) {
    if (!c.h2) {
        c.out.append(frames);
        send_bytes(c);
        return;
    }
    c.h2->pending.append(frames);
    h2_flush(c);
}

// What the windows allow of the pending WebSocket bytes, then the session's output to the
// socket.
void LoadClient::h2_flush(Conn& c) {
    H2Link& h = *c.h2;
    if (h.stream && !h.pending.empty()) {
        const std::size_t n = h.session.send_data(*h.stream, h.pending, false);
        h.pending.erase(0, n);
    }
    std::string& o = h.session.output();
    if (!o.empty()) {
        c.out.append(o);
        o.clear();
        send_bytes(c);
    }
}

void LoadClient::h2_read(Conn& c, std::string_view bytes) {
    H2Link& h = *c.h2;
    std::string_view in = bytes;
    if (!h.raw.empty()) {
        h.raw.append(bytes);
        in = h.raw;
    }
    const std::size_t used = h.session.receive(in);
    if (h.raw.empty()) {
        h.raw.assign(in.substr(used));
    } else {
        h.raw.erase(0, used);
    }
    if (c.state == Conn::State::done) return;
    if (h.session.closed()) return fail(c, "the HTTP/2 session ended");
    // The server's SETTINGS announced extended CONNECT: open the session's stream.
    if (c.state == Conn::State::handshake && !h.stream &&
        h.session.peer_settings().enable_connect_protocol) {
        const std::string authority = opt_.host + ":" + std::to_string(opt_.port);
        const vela::hpack::EncoderField fields[] = {
            {":method", "CONNECT"}, {":protocol", "websocket"}, {":scheme", "http"},
            {":path", opt_.path},   {":authority", authority},  {"sec-websocket-version", "13"}};
        h.stream = h.session.open_stream(fields, false, &c);
        if (!h.stream) return fail(c, "no stream for the extended CONNECT");
    }
    if (c.state == Conn::State::open || c.state == Conn::State::closing) parse_frames(c);
    if (c.state == Conn::State::done) return;
    h.writable = false;
    h2_flush(c);
}

void LoadClient::h2_response(Conn& c, const vela::h2::HeadersEnd& end) {
    if (c.state != Conn::State::handshake) return;
    if (c.h2->status != "200" || end.end_stream) {
        return fail(c, "extended CONNECT refused (is SETTINGS_ENABLE_CONNECT_PROTOCOL on?)");
    }
    c.state = Conn::State::open;
    ++open_;
}

void LoadClient::h2_data(Conn& c, std::string_view data) {
    if (c.in.size() - c.in_len < data.size())
        c.in.resize(std::max(c.in.size() * 2, c.in_len + data.size()));
    std::memcpy(c.in.data() + c.in_len, data.data(), data.size());
    c.in_len += data.size();
    c.h2->session.consume(*c.h2->stream, data.size());
}

void LoadClient::h2_closed(Conn& c) {
    c.h2->stream = nullptr;
    if (c.state == Conn::State::closing) return finish(c);  // after the closing handshake
    if (c.state != Conn::State::done) fail(c, "the server ended the stream");
}

H2Link::H2Link(LoadClient& cl, Conn& cn)
    : client(cl), conn(cn), session(*this, h2_client_options()) {}

void H2Link::on_headers(vela::h2::Stream&, const vela::h2::HeadersEnd& end) {
    client.h2_response(conn, end);
}

void H2Link::on_data(vela::h2::Stream&, std::string_view data, bool) { client.h2_data(conn, data); }

void H2Link::on_close(vela::h2::Stream&, vela::h2::ErrorCode, bool) { client.h2_closed(conn); }

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse_args(argc, argv);
    LoadClient client(opt);
    return client.run();
}
