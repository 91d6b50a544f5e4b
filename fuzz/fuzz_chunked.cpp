// Feeds arbitrary bytes to the in-place chunked decoder in pieces chosen by the input and
// checks that decoded bytes never overtake raw bytes and that the same input decodes the
// same way whole and in pieces.

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
};

Out decode(const std::uint8_t* data, std::size_t size, std::size_t step,
           const vela::ParserLimits& limits) {
    std::vector<char> buf(data, data + size);
    vela::ChunkedDecoder d;
    d.reset(&limits);
    Out o{vela::ChunkedDecoder::Result::need_more};
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
    }
    return o;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    vela::ParserLimits limits;
    limits.max_body = 8192;
    limits.max_header_bytes = 1024;
    Out whole = decode(data, size, 0, limits);
    Out pieces = decode(data, size, size ? 1 + data[0] % 7 : 1, limits);
    check(whole.r == pieces.r);
    if (whole.r == vela::ChunkedDecoder::Result::done)
        check(whole.body == pieces.body && whole.raw == pieces.raw);
    return 0;
}
