#include "testing/response_reader.hpp"

#include <utility>

#include "vela/base/ascii.hpp"

namespace vela::testing::detail {

namespace {
// The largest head accepted: a server that sends more is broken, and a test should say so.
constexpr std::size_t kMaxHead = 64 * 1024;

// The chunked decoder's limits for response bodies: a test reads what the server sends.
const ParserLimits& response_limits() {
    static const ParserLimits limits = [] {
        ParserLimits l;
        l.max_body = std::size_t{1} << 40;
        l.max_header_bytes = kMaxHead;
        return l;
    }();
    return limits;
}
}  // namespace

ResponseReader::ResponseReader(bool head_request) : head_request_(head_request) {}

ResponseReader::Step ResponseReader::fail(std::string why) {
    phase_ = Phase::failed;
    error_ = std::move(why);
    return Step::error;
}

ResponseReader::Step ResponseReader::next(bool eof) {
    switch (phase_) {
        case Phase::head:
            return parse_head(eof);
        case Phase::length: {
            if (left_ == 0) {
                phase_ = Phase::done;
                return Step::done;
            }
            if (buf_.empty()) {
                if (eof) return fail("the connection ended inside the body");
                return Step::need_more;
            }
            const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>(left_, buf_.size()));
            piece_.assign(buf_, 0, n);
            buf_.erase(0, n);
            left_ -= n;
            return Step::piece;
        }
        case Phase::chunked: {
            if (buf_.empty()) {
                if (eof) return fail("the connection ended inside a chunked body");
                return Step::need_more;
            }
            const ChunkedDecoder::Result r = chunked_.feed(buf_.data(), buf_.size());
            if (r == ChunkedDecoder::Result::error) return fail("malformed chunked body");
            const std::size_t decoded = chunked_.decoded_size();
            const std::size_t raw = chunked_.raw_size();
            chunked_.drop();
            piece_.assign(buf_, 0, decoded);
            buf_.erase(0, raw);
            if (r == ChunkedDecoder::Result::done) {
                phase_ = Phase::done;
                if (piece_.empty()) return Step::done;
                return Step::piece;  // the next call says done
            }
            if (piece_.empty()) {
                // The decoder took all it could: at the end of input nothing more will come.
                if (eof) return fail("the connection ended inside a chunked body");
                return Step::need_more;
            }
            return Step::piece;
        }
        case Phase::until_eof:
            if (!buf_.empty()) {
                piece_ = std::move(buf_);
                buf_.clear();
                return Step::piece;
            }
            if (!eof) return Step::need_more;
            phase_ = Phase::done;
            return Step::done;
        case Phase::done:
            return Step::done;
        case Phase::failed:
            return Step::error;
    }
    return Step::error;
}

// The head is read by the http module's response parser (strict, RFC 9112 2-6): a test
// should fail loudly on a response a real client would refuse.
ResponseReader::Step ResponseReader::parse_head(bool eof) {
    const HeadParse p = parse_response_head(buf_, head_request_ ? "HEAD" : "GET",
                                            ResponseLimits{.max_head_bytes = kMaxHead}, parsed_);
    if (p.result == HeadParse::Result::error) return fail(p.error);
    if (p.result == HeadParse::Result::need_more) {
        if (eof)
            return fail(buf_.empty() ? "the connection ended before a response"
                                     : "the connection ended inside a response head");
        return Step::need_more;
    }
    head_ = TestResponse{};
    head_.set_status(parsed_.status(), std::string(parsed_.reason()));
    bool chunked = false;  // announced, even where the status or method means no body
    parsed_.for_each([&](std::string_view name, std::string_view value) {
        if (ascii::iequals(name, "Transfer-Encoding") && ascii::list_has(value, "chunked"))
            chunked = true;
        head_.add_header(std::string(name), std::string(value));
    });
    head_.set_chunked(chunked);
    buf_.erase(0, p.consumed);
    closes_ = !p.keep_alive;
    switch (p.framing) {
        case BodyFraming::none:
            phase_ = Phase::done;
            break;
        case BodyFraming::length:
            left_ = p.content_length;
            phase_ = Phase::length;
            break;
        case BodyFraming::chunked:
            chunked_.reset(&response_limits());
            chunked_.set_max_body(response_limits().max_body);
            phase_ = Phase::chunked;
            break;
        case BodyFraming::until_close:
            phase_ = Phase::until_eof;
            break;
    }
    return Step::head;
}

}  // namespace vela::testing::detail
