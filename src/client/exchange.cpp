#include "client/exchange.hpp"

#include <cerrno>
#include <cstring>

#include "vela/base/ascii.hpp"

namespace vela::http::detail {

namespace {

// The chunked decoder's limits for response bodies: the body limit is checked by the
// exchange (after decoding), trailers are bounded like a head.
const ParserLimits& chunk_limits() {
    static const ParserLimits limits = [] {
        ParserLimits l;
        l.max_body = std::uint64_t{1} << 62;
        l.max_header_bytes = 64 * 1024;
        return l;
    }();
    return limits;
}

std::string errno_text(int e) { return e == EPROTO ? "TLS error" : std::strerror(e); }

}  // namespace

H1Exchange::H1Exchange(OriginPool& pool, Connection* c, bool reused, std::string url)
    : Exchange(std::move(url)), pool_(&pool), c_(c), reused_(reused) {}

H1Exchange::~H1Exchange() { release(false); }

void H1Exchange::release(bool reusable) noexcept {
    if (!c_) return;
    if (hold) {  // the caller keeps the connection, whatever happened
        c_ = nullptr;
        return;
    }
    Connection* c = c_;
    c_ = nullptr;
    c->set_deadline(0);
    if (c->lent) {
        c->lent = false;
        reusable = false;
    }
    if (c->pool) pool_->release(c, reusable);
}

void H1Exchange::fail_io(std::string_view during, bool before_response) {
    const std::string why = c_->error ? errno_text(c_->error) : "the server closed the connection";
    std::string msg = url_ + ": " + why + " while " + std::string(during);
    if (before_response && reused_) throw StaleConnection(msg + " (a reused connection)");
    throw ProtocolError(msg);
}

Task<void> H1Exchange::send(std::string bytes, const BodySource* source, bool chunked,
                            std::uint64_t request_deadline) {
    c_->set_deadline(request_deadline);
    std::string piece;
    bool last = source == nullptr;
    std::string_view left = bytes;
    for (;;) {
        while (!left.empty()) {
            iovec v{const_cast<char*>(left.data()), left.size()};
            const ssize_t n = c_->t.send(&v, 1);
            if (n < 0) {
                c_->error = static_cast<int>(-n);
                // A server may answer and close before reading all of a request (a 413):
                // what it sent is read as the response.
                if (!c_->t.in.empty()) {
                    send_cut_ = true;
                    co_return;
                }
                fail_io("sending the request", true);
            }
            left.remove_prefix(static_cast<std::size_t>(n));
            if (left.empty()) break;
            if (c_->timed_out)
                throw TimeoutError(TimeoutError::Phase::request,
                                   url_ + ": the request timed out while sending it");
            if (c_->error || c_->eof) {
                if (!c_->t.in.empty()) {
                    send_cut_ = true;
                    co_return;
                }
                fail_io("sending the request", true);
            }
            co_await c_->wait();
        }
        if (last) co_return;
        std::optional<std::string> next = co_await (*source)();
        piece.clear();
        if (!next) {
            last = true;
            if (chunked) piece = "0\r\n\r\n";
        } else if (next->empty()) {
            continue;  // an empty piece would end a chunked body
        } else if (chunked) {
            char size[24];
            const int k = std::snprintf(size, sizeof size, "%zx\r\n", next->size());
            piece.append(size, static_cast<std::size_t>(k));
            piece += *next;
            piece += "\r\n";
        } else {
            piece = std::move(*next);
        }
        bytes = std::move(piece);
        left = bytes;
    }
}

Task<void> H1Exchange::read_head(const std::string& method, ResponseHead& head,
                                 std::uint64_t head_deadline, std::uint64_t request_deadline) {
    const std::uint64_t deadline =
        request_deadline && request_deadline < head_deadline ? request_deadline : head_deadline;
    c_->set_deadline(deadline);
    c_->read_on();
    const ResponseLimits& limits = pool_->owner.impl.options.head_limits;
    for (;;) {
        Buffer& in = c_->t.in;
        const std::size_t had = in.size();
        if (had) {
            const HeadParse p =
                parse_response_head(std::string_view(in.data(), had), method, limits, head);
            if (p.result == HeadParse::Result::done) {
                in.consume(p.consumed);
                if (head.status() < 200 && head.status() != 101) continue;  // interim (1xx)
                framing_ = p.framing;
                left_ = p.content_length;
                keep_alive = p.keep_alive;
                version_minor = head.version_minor();
                if (framing_ == BodyFraming::chunked) {
                    chunked_.reset(&chunk_limits());
                    chunked_.keep_trailers(&trailer_text_);
                } else if (framing_ == BodyFraming::none ||
                           (framing_ == BodyFraming::length && left_ == 0)) {
                    finish();
                }
                co_return;
            }
            if (p.result == HeadParse::Result::error) {
                if (had > limits.max_head_bytes || p.error.find("too many") != std::string::npos)
                    throw TooLargeError(url_ + ": " + p.error);
                throw ProtocolError(url_ + ": malformed response: " + p.error);
            }
        }
        if (c_->error || c_->eof)
            fail_io(had ? "reading the response head" : "waiting for the response", !had);
        if (c_->timed_out) {
            if (request_deadline && pool_->owner.loop.now_ms() >= request_deadline)
                throw TimeoutError(TimeoutError::Phase::request,
                                   url_ + ": the request timed out (request_timeout)");
            throw TimeoutError(TimeoutError::Phase::head,
                               url_ + ": no response head in time (head_timeout)");
        }
        c_->read_on();
        if (in.size() != had) continue;
        co_await c_->wait();
    }
}

void H1Exchange::begin_read(std::uint64_t deadline) { c_->set_deadline(deadline); }

// The next raw piece of the body in the input buffer.
bool H1Exchange::raw_piece(std::string_view& piece) {
    Buffer& in = c_->t.in;
    switch (framing_) {
        case BodyFraming::length: {
            const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>(left_, in.size()));
            if (n == 0) return false;
            piece = std::string_view(in.data(), n);
            lent_raw_ = n;
            left_ -= n;
            if (left_ == 0) end_after_piece_ = true;
            return true;
        }
        case BodyFraming::chunked: {
            if (in.empty()) return false;
            const ChunkedDecoder::Result r = chunked_.feed(in.data(), in.size());
            if (r == ChunkedDecoder::Result::error) {
                if (chunked_.error() == Status::RequestHeaderFieldsTooLarge)
                    throw TooLargeError(
                        url_ +
                        ": the trailer section is larger than its limits (64 KiB, 100 fields)");
                throw ProtocolError(url_ + ": malformed chunked body");
            }
            const std::size_t dec = chunked_.decoded_size();
            if (r == ChunkedDecoder::Result::need_more && dec == 0) return false;
            piece = std::string_view(in.data(), dec);
            lent_raw_ = chunked_.raw_size();
            if (r == ChunkedDecoder::Result::done) end_after_piece_ = true;
            return true;
        }
        case BodyFraming::until_close:
            if (in.empty()) return false;
            piece = std::string_view(in.data(), in.size());
            lent_raw_ = in.size();
            return true;
        case BodyFraming::none:
            end_after_piece_ = true;
            return true;
    }
    return false;
}

void H1Exchange::settle() {
    if (!c_) return;
    if (lent_raw_) {
        c_->t.in.consume(lent_raw_);
        lent_raw_ = 0;
        if (framing_ == BodyFraming::chunked) chunked_.drop();
    }
    const bool was_lent = c_->lent;
    c_->lent = false;
    if (end_after_piece_) {
        finish();  // parking the connection reads on
    } else if (was_lent) {
        c_->read_on();
    }
}

void H1Exchange::finish() {
    done_ = true;
    end_after_piece_ = false;
    if (!trailer_text_.empty()) [[unlikely]] {
        // "name:value\n" lines, checked by the decoder; the value loses its OWS.
        std::string_view rest = trailer_text_;
        while (!rest.empty()) {
            const std::size_t nl = rest.find('\n');
            const std::string_view line = rest.substr(0, nl);
            rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
            const std::size_t colon = line.find(':');
            if (colon == std::string_view::npos) continue;
            trailers_.emplace_back(std::string(line.substr(0, colon)),
                                   std::string(ascii::trim_ows(line.substr(colon + 1))));
        }
        trailer_text_.clear();
    }
    // Bytes past the response on a connection that waits for the next request: the server
    // sent more than it framed, so the connection is not trusted again.
    const bool clean = c_ && keep_alive && framing_ != BodyFraming::until_close && lent_raw_ == 0 &&
                       c_->t.in.empty();
    release(clean);
}

// The piece points into the input buffer: no read may move it until the next call (reading
// stops now and starts again in settle()). A caller that copies it at once (read_all) needs
// no such pause.
void H1Exchange::lend() {
    c_->lent = true;
    if (c_->t.reading()) c_->t.stop_reading();
}

Task<bool> H1Exchange::more() {
    // A body that runs until the close ends with an orderly close (FIN); a reset may have cut
    // it short, and is an error like any other. Unless the server answered before it read
    // the whole request: closing with the request unread, it resets the connection itself.
    if (framing_ == BodyFraming::until_close &&
        ((c_->eof && !c_->error) || (send_cut_ && (c_->eof || c_->error)))) {
        finish();
        co_return false;
    }
    if (c_->error || c_->eof) fail_io("reading the body", false);
    if (c_->timed_out)
        throw TimeoutError(TimeoutError::Phase::request,
                           url_ + ": the response body did not arrive in time");
    const std::size_t had = c_->t.in.size();
    c_->read_on();
    if (c_->t.in.size() == had) co_await c_->wait();
    co_return true;
}

// --- Exchange ---

void Exchange::decode(compress::Coding coding, std::uint64_t max_body) {
    max_body_ = max_body;
    if (coding != compress::Coding::identity && !done_)
        decoder_ = compress::Decoder::create(coding);
}

Task<std::optional<std::string_view>> Exchange::read(std::uint64_t deadline) {
    return next(deadline, true);
}

Task<std::optional<std::string_view>> Exchange::next(std::uint64_t deadline, bool lending) {
    settle();
    if (done_) co_return std::nullopt;
    // Each wait gets the read timeout unless the whole body has a deadline.
    begin_read(deadline ? deadline : Loop::current()->now_ms() + read_timeout_ms);
    for (;;) {
        std::string_view piece;
        if (raw_piece(piece)) {
            if (decoder_) {
                decoded_.clear();
                const std::size_t room =
                    max_body_ ? static_cast<std::size_t>(max_body_ - total_) : std::size_t(-1);
                const compress::DecodeResult r = decoder_->write(piece, decoded_, room);
                settle();
                if (r == compress::DecodeResult::corrupt)
                    throw ProtocolError(url_ + ": the body is not valid for its Content-Encoding");
                if (r == compress::DecodeResult::too_large)
                    throw TooLargeError(url_ + ": the decoded body is larger than " +
                                        std::to_string(max_body_) + " bytes (max_body)");
                total_ += decoded_.size();
                if (!decoded_.empty()) co_return std::string_view(decoded_);
                if (done_) {
                    if (r != compress::DecodeResult::done)
                        throw ProtocolError(url_ + ": the compressed body ended early");
                    co_return std::nullopt;
                }
                continue;
            }
            if (piece.empty()) {
                settle();
                if (done_) co_return std::nullopt;
                continue;
            }
            total_ += piece.size();
            if (max_body_ && total_ > max_body_)
                throw TooLargeError(url_ + ": the body is larger than " +
                                    std::to_string(max_body_) + " bytes (max_body)");
            if (lending) lend();
            co_return piece;
        }
        if (!co_await more()) co_return std::nullopt;
    }
}

Task<void> Exchange::read_all(std::string& out, std::uint64_t limit, std::uint64_t deadline) {
    for (;;) {
        std::optional<std::string_view> piece = co_await next(deadline, false);
        if (!piece) break;
        if (out.size() + piece->size() > limit)
            throw TooLargeError(url_ + ": the body is larger than " + std::to_string(limit) +
                                " bytes");
        out.append(*piece);
        settle();
    }
}

}  // namespace vela::http::detail
