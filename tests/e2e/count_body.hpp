#pragma once
// A streaming route's handler for the body tests: counts the body's bytes and sums them (so
// every byte is checked), answering "<bytes> <sum>" or the body reader's error status.

#include <cstdint>
#include <string>

#include "vela/vela.hpp"

namespace vela::e2e {

inline Task<Response> count_body(Request& req) {
    std::uint64_t total = 0, sum = 0;
    for (;;) {
        BodyChunk c = co_await req.body_stream().read();
        if (c.error != Status::OK) co_return Response(c.error);
        for (unsigned char ch : c.data) sum += ch;
        total += c.data.size();
        if (c.end) break;
    }
    co_return Response::text(std::to_string(total) + " " + std::to_string(sum));
}

}  // namespace vela::e2e
