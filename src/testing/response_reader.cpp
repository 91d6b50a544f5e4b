#include "testing/response_reader.hpp"

#include <charconv>
#include <utility>

#include "vela/base/ascii.hpp"

namespace vela::testing::detail {

namespace {
// The largest head accepted: a server that sends more is broken, and a test should say so.
constexpr std::size_t kMaxHead = 64 * 1024;

bool parse_decimal(std::string_view s, std::uint64_t& out) {
    if (s.empty() || s.size() > 19) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    std::from_chars(s.data(), s.data() + s.size(), out);
    return true;
}

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

// status-line = HTTP-version SP status-code SP [ reason-phrase ] CRLF, then field lines.
ResponseReader::Step ResponseReader::parse_head(bool eof) {
    const std::size_t end = buf_.find("\r\n\r\n");
    if (end == std::string::npos) {
        if (buf_.size() > kMaxHead) return fail("response head larger than 64 KiB");
        if (eof)
            return fail(buf_.empty() ? "the connection ended before a response"
                                     : "the connection ended inside a response head");
        return Step::need_more;
    }
    const std::string_view head(buf_.data(), end + 2);
    std::size_t eol = head.find("\r\n");
    const std::string_view line = head.substr(0, eol);
    if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ' ||
        (line.size() > 12 && line[12] != ' '))
        return fail("malformed status line: " + std::string(line));
    std::uint64_t code = 0;
    if (!parse_decimal(line.substr(9, 3), code) || code < 100)
        return fail("malformed status code: " + std::string(line));
    const bool http10 = line[7] == '0';
    head_ = TestResponse{};
    head_.set_status(static_cast<int>(code),
                     line.size() > 13 ? std::string(line.substr(13)) : std::string());
    std::size_t pos = eol + 2;
    int lengths = 0;
    std::uint64_t length = 0;
    bool chunked = false;
    closes_ = http10;
    while (pos < head.size()) {
        eol = head.find("\r\n", pos);
        const std::string_view field = head.substr(pos, eol - pos);
        pos = eol + 2;
        const std::size_t colon = field.find(':');
        if (colon == std::string_view::npos || colon == 0 || field.find_first_of(" \t") < colon)
            return fail("malformed header line: " + std::string(field));
        const std::string_view name = field.substr(0, colon);
        const std::string_view value = ascii::trim_ows(field.substr(colon + 1));
        if (ascii::iequals(name, "Content-Length")) {
            ++lengths;
            if (!parse_decimal(value, length))
                return fail("malformed Content-Length: " + std::string(value));
        } else if (ascii::iequals(name, "Transfer-Encoding")) {
            chunked = chunked || ascii::list_has(value, "chunked");
        } else if (ascii::iequals(name, "Connection")) {
            if (ascii::list_has(value, "close")) closes_ = true;
            if (ascii::list_has(value, "keep-alive")) closes_ = false;
        }
        head_.add_header(std::string(name), std::string(value));
    }
    buf_.erase(0, end + 4);
    head_.set_chunked(chunked);
    if (head_request_ || code < 200 || code == 204 || code == 304) {
        phase_ = Phase::done;
        return Step::head;
    }
    if (lengths > 1) return fail("repeated Content-Length in a response");
    if (chunked) {
        if (lengths) return fail("a response with both Content-Length and chunked");
        chunked_.reset(&response_limits());
        chunked_.set_max_body(response_limits().max_body);
        phase_ = Phase::chunked;
    } else if (lengths) {
        left_ = length;
        phase_ = Phase::length;
    } else {
        closes_ = true;  // RFC 9112 6.3 rule 8: the body runs to the end of the connection
        phase_ = Phase::until_eof;
    }
    return Step::head;
}

}  // namespace vela::testing::detail
