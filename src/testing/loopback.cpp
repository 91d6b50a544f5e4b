// vela::testing::Client in loopback mode: requests over a real TCP connection to the App
// started on 127.0.0.1, and WebSocket connections.

#include "testing/loopback.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "testing/response_reader.hpp"
#include "vela/net/readiness.hpp"
#include "vela/net/socket.hpp"
#include "vela/testing/client.hpp"

namespace vela::testing {

namespace detail {

Socket Socket::connect(std::uint16_t port) {
    const int fd = net::connect_tcp("127.0.0.1", port);
    if (fd < 0)
        throw std::runtime_error("vela::testing: cannot connect to 127.0.0.1:" +
                                 std::to_string(port));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    net::set_nodelay(fd);
    return Socket(fd);
}

Socket::~Socket() {
    if (fd_ >= 0) ::close(fd_);
}

Socket::Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}

Socket& Socket::operator=(Socket&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
}

int Socket::release() noexcept { return std::exchange(fd_, -1); }

Task<void> send_all(int fd, std::string bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (n < 0 && errno == EAGAIN) {
            co_await net::writable(fd);
        } else if (n < 0 && errno != EINTR) {
            throw std::runtime_error(std::string("vela::testing: send: ") + std::strerror(errno));
        }
    }
}

Task<bool> receive(int fd, std::string& into) {
    constexpr std::size_t kRead = 64 * 1024;
    for (;;) {
        const std::size_t had = into.size();
        into.resize(had + kRead);
        const ssize_t n = ::recv(fd, into.data() + had, kRead, 0);
        into.resize(had + (n > 0 ? static_cast<std::size_t>(n) : 0));
        if (n > 0) co_return true;
        if (n == 0) co_return false;
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
            co_await net::readable(fd);
            continue;
        }
        if (errno == ECONNRESET) co_return false;
        throw std::runtime_error(std::string("vela::testing: recv: ") + std::strerror(errno));
    }
}

namespace {

// Reads until the reader has the response's head; 1xx interim answers (100 Continue) are
// skipped, a 101 is returned. Returns false when the connection ended before any byte.
Task<bool> read_head(int fd, ResponseReader& reader, bool head_request) {
    bool eof = false;
    bool any = false;
    for (;;) {
        switch (reader.next(eof)) {
            case ResponseReader::Step::head:
                if (reader.head().status() < 200 && reader.head().status() != 101) {
                    std::string rest = reader.take_unread();
                    reader = ResponseReader(head_request);
                    reader.append(rest);
                    continue;
                }
                co_return true;
            case ResponseReader::Step::need_more: {
                std::string got;
                eof = !co_await receive(fd, got);
                any = any || !got.empty();
                reader.append(got);
                continue;
            }
            case ResponseReader::Step::error:
                if (eof && !any) co_return false;
                throw std::runtime_error("vela::testing: unreadable response: " + reader.error());
            default:
                throw std::runtime_error("vela::testing: unexpected response state");
        }
    }
}

// The body of a response read from its connection as it arrives; the connection goes back to
// the client's idle list once the body ended and the server keeps it open.
class SocketBody final : public StreamedResponse::Source {
  public:
    SocketBody(Socket s, ResponseReader reader, std::weak_ptr<ConnectionSlot> slot)
        : sock_(std::move(s)), reader_(std::move(reader)), slot_(std::move(slot)) {}
    Task<std::optional<std::string>> next() override {
        for (;;) {
            if (sock_.fd() < 0) co_return std::nullopt;
            switch (reader_.next(eof_)) {
                case ResponseReader::Step::piece:
                    co_return reader_.take_piece();
                case ResponseReader::Step::done:
                    if (!reader_.connection_closes() && reader_.take_unread().empty())
                        if (auto slot = slot_.lock()) slot->idle.push_back(std::move(sock_));
                    sock_ = Socket();
                    co_return std::nullopt;
                case ResponseReader::Step::need_more: {
                    std::string got;
                    eof_ = !co_await receive(sock_.fd(), got);
                    reader_.append(got);
                    continue;
                }
                default:
                    throw std::runtime_error("vela::testing: unreadable response body: " +
                                             reader_.error());
            }
        }
    }

  private:
    Socket sock_;
    ResponseReader reader_;
    std::weak_ptr<ConnectionSlot> slot_;
    bool eof_ = false;
};

}  // namespace

}  // namespace detail

// A kept-alive connection is used when there is one; if the server closed it meanwhile
// (nothing at all comes back), the request is sent once more on a fresh connection.
Task<StreamedResponse> Client::over_socket(Outgoing o) {
    for (int attempt = 0;; ++attempt) {
        detail::Socket s;
        bool reused = false;
        if (!conns_->idle.empty() && attempt == 0) {
            s = std::move(conns_->idle.back());
            conns_->idle.pop_back();
            reused = true;
        } else {
            s = detail::Socket::connect(port_);
        }
        detail::ResponseReader reader(o.head);
        bool answered = false;
        try {
            co_await detail::send_all(s.fd(), o.bytes);
            answered = co_await detail::read_head(s.fd(), reader, o.head);
        } catch (const std::runtime_error&) {
            if (!reused) throw;
        }
        if (!answered) {
            if (reused) continue;
            throw std::runtime_error(
                "vela::testing: the server closed the connection without an answer");
        }
        TestResponse head = reader.head();
        co_return StreamedResponse(std::move(head), std::make_unique<detail::SocketBody>(
                                                        std::move(s), std::move(reader), conns_));
    }
}

Task<WebSocket> Client::open_websocket(Outgoing o) {
    detail::Socket s = detail::Socket::connect(port_);
    co_await detail::send_all(s.fd(), o.bytes);
    detail::ResponseReader reader(false);
    if (!co_await detail::read_head(s.fd(), reader, false))
        throw std::runtime_error("vela::testing: the server closed the WebSocket handshake");
    TestResponse head = reader.head();
    if (options_.cookie_jar) cookies_.update(head);
    if (head.status() != 101) {
        std::string body =
            co_await StreamedResponse(
                head, std::make_unique<detail::SocketBody>(std::move(s), std::move(reader),
                                                           std::weak_ptr<detail::ConnectionSlot>()))
                .read_all();
        throw std::runtime_error("vela::testing: WebSocket handshake answered " +
                                 std::to_string(head.status()) + ": " + body);
    }
    if (o.bytes.find(detail::kWsKey) != std::string::npos &&
        head.header("Sec-WebSocket-Accept") != detail::kWsAccept)
        throw std::runtime_error("vela::testing: wrong Sec-WebSocket-Accept in the handshake");
    co_return WebSocket(s.release(), std::move(head), reader.take_unread());
}

// ---- WebSocket ------------------------------------------------------------------------------

WebSocket::WebSocket(int fd, TestResponse handshake, std::string unread)
    : fd_(fd),
      handshake_(std::move(handshake)),
      in_(std::move(unread)),
      options_(std::make_unique<ws::ReaderOptions>()) {
    options_->require_mask = false;  // server frames are not masked (RFC 6455 5.1)
    reader_ = std::make_unique<ws::FrameReader>(*options_);
}

WebSocket::WebSocket(WebSocket&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      close_sent_(o.close_sent_),
      handshake_(std::move(o.handshake_)),
      in_(std::move(o.in_)),
      options_(std::move(o.options_)),
      reader_(std::move(o.reader_)),
      mask_(o.mask_) {}

WebSocket::~WebSocket() {
    if (fd_ >= 0) ::close(fd_);
}

Task<void> WebSocket::send_frame(ws::Opcode op, std::string payload) {
    if (fd_ < 0) throw std::logic_error("vela::testing: the WebSocket is closed");
    std::string frame;
    ws::append_client_frame(frame, op, payload, mask_);
    mask_ = mask_ * 1664525u + 1013904223u;  // a new mask per frame, as a client must
    co_await detail::send_all(fd_, std::move(frame));
}

Task<void> WebSocket::send_text(std::string text) {
    co_await send_frame(ws::Opcode::text, std::move(text));
}

Task<void> WebSocket::send_binary(std::string data) {
    co_await send_frame(ws::Opcode::binary, std::move(data));
}

Task<WebSocket::Message> WebSocket::receive() {
    if (fd_ < 0) throw std::logic_error("vela::testing: the WebSocket is closed");
    for (;;) {
        std::size_t consumed = 0;
        const ws::Event ev = reader_->next(in_.data(), in_.size(), consumed);
        Message m;
        m.opcode = ev.opcode;
        m.data.assign(ev.payload);
        m.close_code = ev.code;
        const char* what = ev.what;
        const ws::Event::Kind kind = ev.kind;
        in_.erase(0, consumed);
        switch (kind) {
            case ws::Event::Kind::message:
                m.close_code = 0;
                co_return m;
            case ws::Event::Kind::ping:
                co_await send_frame(ws::Opcode::pong, std::move(m.data));
                continue;
            case ws::Event::Kind::pong:
                continue;
            case ws::Event::Kind::close:
                m.opcode = ws::Opcode::close;
                if (!close_sent_) {  // echo it (RFC 6455 5.5.1)
                    close_sent_ = true;
                    co_await send_frame(ws::Opcode::close, ws::close_payload(m.close_code, {}));
                }
                co_return m;
            case ws::Event::Kind::error:
                throw std::runtime_error(std::string("vela::testing: bad frame from the server: ") +
                                         what);
            case ws::Event::Kind::need_more:
                break;
        }
        if (!co_await detail::receive(fd_, in_))
            throw std::runtime_error(
                "vela::testing: the WebSocket connection ended without a close frame");
    }
}

Task<WebSocket::Message> WebSocket::close(std::uint16_t code) {
    if (!close_sent_) {
        close_sent_ = true;
        co_await send_frame(ws::Opcode::close, ws::close_payload(code, {}));
    }
    for (;;) {
        Message m = co_await receive();
        if (m.opcode == ws::Opcode::close) co_return m;
    }
}

}  // namespace vela::testing
