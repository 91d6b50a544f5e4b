// Feeds arbitrary bytes to the in-place chunked decoder in pieces chosen by the input and
// checks that decoded bytes never overtake raw bytes and that the same input decodes the
// same way whole and in pieces.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "vela/http/chunked_decoder.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}

struct Out {
    vela::ChunkedDecoder::Result r;
    std::string body;
    std::size_t raw = 0;
    std::string trailers;  // kept trailer lines (decode() only)
};

Out decode(const std::uint8_t* data, std::size_t size, std::size_t step,
           const vela::ParserLimits& limits) {
    std::vector<char> buf(data, data + size);
    vela::ChunkedDecoder d;
    d.reset(&limits);
    Out o{vela::ChunkedDecoder::Result::need_more};
    d.keep_trailers(&o.trailers);
    for (std::size_t n = step ? step : size;; n += step ? step : size) {
        if (n > size) n = size;
        o.r = d.feed(buf.data(), n);
        check(d.decoded_size() <= n);
        if (o.r != vela::ChunkedDecoder::Result::need_more || n == size) break;
    }
    if (o.r == vela::ChunkedDecoder::Result::done) {
        o.body.assign(buf.data(), d.decoded_size());
        o.raw = d.raw_size();
        check(o.raw <= size);
        // Kept trailers are "name:value" lines: a colon in each, no CR, bounded by the limit.
        check(o.trailers.size() <= limits.max_header_bytes);
        check(o.trailers.find('\r') == std::string::npos);
        std::size_t start = 0;
        for (std::size_t nl; (nl = o.trailers.find('\n', start)) != std::string::npos;
             start = nl + 1)
            check(o.trailers.find(':', start) < nl);
        check(start == o.trailers.size());
    }
    return o;
}
}  // namespace

// The streaming use (a driver handing decoded bytes out as they come): after each feed the
// decoded bytes are taken and the raw bytes read are dropped from the front of the buffer.
Out decode_streaming(const std::uint8_t* data, std::size_t size, std::size_t step,
                     const vela::ParserLimits& limits) {
    std::vector<char> buf;  // unconsumed raw bytes only
    vela::ChunkedDecoder d;
    d.reset(&limits);
    Out o{vela::ChunkedDecoder::Result::need_more};
    std::size_t fed = 0;
    while (fed < size || !buf.empty()) {
        const std::size_t n = std::min(step ? step : size, size - fed);
        buf.insert(buf.end(), data + fed, data + fed + n);
        fed += n;
        o.r = d.feed(buf.data(), buf.size());
        check(d.decoded_size() <= d.raw_size() && d.raw_size() <= buf.size());
        o.body.append(buf.data(), d.decoded_size());
        o.raw += d.raw_size();
        buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(d.raw_size()));
        d.drop();
        if (o.r != vela::ChunkedDecoder::Result::need_more || (n == 0 && fed == size)) break;
    }
    return o;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    vela::ParserLimits limits;
    limits.max_body = 8192;
    limits.max_header_bytes = 1024;
    Out whole = decode(data, size, 0, limits);
    Out pieces = decode(data, size, size ? 1 + data[0] % 7 : 1, limits);
    check(whole.r == pieces.r);
    if (whole.r == vela::ChunkedDecoder::Result::done)
        check(whole.body == pieces.body && whole.raw == pieces.raw &&
              whole.trailers == pieces.trailers);
    Out streamed = decode_streaming(data, size, size ? 1 + data[size - 1] % 13 : 1, limits);
    check(whole.r == streamed.r);
    if (whole.r == vela::ChunkedDecoder::Result::done)
        check(whole.body == streamed.body && whole.raw == streamed.raw);
    return 0;
}
