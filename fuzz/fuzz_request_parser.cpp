// Feeds arbitrary bytes to the HTTP/1.1 request parser, whole and split at a point chosen
// by the input, and checks the parser's promises: consumed bytes lie within the input, the
// body lies within the buffer, and a request parses (or fails with the same status) the same
// way however it is split.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "vela/http/request_parser.hpp"

namespace {

struct Outcome {
    vela::ParseResult result;
    vela::Status status = vela::Status::OK;
    std::size_t consumed = 0;
    std::string body, path;
};

void check(bool ok) {
    if (!ok) __builtin_trap();
}

Outcome run(const std::uint8_t* data, std::size_t size, std::size_t split,
            const vela::ParserLimits& limits) {
    std::vector<char> buf(data, data + size);
    vela::RequestParser parser(&limits);
    vela::Request req;
    Outcome o{vela::ParseResult::incomplete};
    if (split > 0 && split < size) {
        o.result = parser.parse(buf.data(), split, req);
        if (o.result != vela::ParseResult::incomplete)
            return Outcome{vela::ParseResult::incomplete};  // not comparable
        // Move the bytes, as a growing connection buffer does.
        std::vector<char> moved(buf);
        buf.swap(moved);
    }
    o.result = parser.parse(buf.data(), size, req);
    if (o.result == vela::ParseResult::complete) {
        o.consumed = parser.consumed();
        check(o.consumed <= size);
        check(req.body().empty() || (req.body().data() >= buf.data() &&
                                     req.body().data() + req.body().size() <= buf.data() + size));
        o.body = std::string(req.body());
        o.path = std::string(req.path());
        for (const auto& h : req.headers()) check(!h.name.empty());
    } else if (o.result == vela::ParseResult::error) {
        o.status = parser.error();
        int c = vela::code(o.status);
        check(c >= 400 && c < 600);
    }
    return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    vela::ParserLimits limits;
    limits.max_request_line = 512;
    limits.max_header_bytes = 2048;
    limits.max_headers = 20;
    limits.max_body = 4096;
    Outcome whole = run(data, size, 0, limits);
    if (size > 1) {
        // However the bytes arrive, the verdict is the same: a request, or the same status.
        Outcome split = run(data, size, data[0] % size, limits);
        if (split.result != vela::ParseResult::incomplete) {
            check(split.result == whole.result);
            if (whole.result == vela::ParseResult::complete)
                check(split.consumed == whole.consumed && split.body == whole.body &&
                      split.path == whole.path);
            if (whole.result == vela::ParseResult::error) check(split.status == whole.status);
        }
    }
    return 0;
}
