// Feeds arbitrary bytes to permessage-deflate: the front of the input is a
// Sec-WebSocket-Extensions value for the negotiation, the rest compressed data inflated in
// pieces chosen by the input under a small limit. Checks that an answer is itself an
// acceptable offer, that the limit holds within one byte, that a failed inflater stays
// failed, and that compressing the data and inflating it gives it back.

#include <cstdint>
#include <string>
#include <string_view>

#include "vela/ws/deflate.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}

// Inflates `z` as one message in pieces of 1 + (byte % 61) bytes, the bytes taken from
// `cuts` in turn; checks the limit after each piece. Returns the close code or 0.
std::uint16_t inflate_pieces(vela::ws::Inflater& in, std::string_view z, std::string_view cuts,
                             std::string& out, std::size_t limit) {
    std::size_t k = 0;
    std::uint16_t rc = 0;
    do {
        const std::size_t n =
            cuts.empty() ? z.size() : 1 + std::uint8_t(cuts[k++ % cuts.size()]) % 61;
        const std::string_view piece = z.substr(0, n);
        z.remove_prefix(piece.size());
        rc = in.inflate(piece, z.empty(), out, limit);
        check(out.size() <= limit + 1);
    } while (!rc && !z.empty());
    return rc;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::string_view all(reinterpret_cast<const char*>(data), size);
    const std::size_t split = std::min<std::size_t>(data[0], size - 2);
    const std::uint8_t shape = data[1];
    const std::string_view offers = all.substr(2, split);
    const std::string_view body = all.substr(2 + split);

    vela::ws::DeflateOptions o;
    o.server_no_context_takeover = shape & 1;
    o.server_max_window_bits = 8 + (shape >> 1) % 8;
    o.client_max_window_bits = 8 + (shape >> 4) % 8;
    o.level = 1 + shape % 9;
    o.mem_level = 1 + (shape >> 3) % 9;
    std::string answer;
    const auto agreed = vela::ws::negotiate_deflate(offers, o, answer);
    vela::ws::DeflateParams p;
    if (agreed) {
        p = *agreed;
        check(answer.starts_with("permessage-deflate"));
        check(p.server_max_window_bits >= 9 && p.server_max_window_bits <= 15);
        check(p.client_max_window_bits >= 8 && p.client_max_window_bits <= 15);
        std::string again;
        check(vela::ws::negotiate_deflate(answer, o, again).has_value());
    }

    // Untrusted compressed data: twice, so a second message sees the first one's window.
    const std::size_t limit = 1 + (std::size_t(shape) << 4);
    vela::ws::Inflater in(p);
    std::string out;
    const std::uint16_t first = inflate_pieces(in, body, offers, out, limit);
    check(first == 0 || first == 1007 || first == 1009);
    out.clear();
    const std::uint16_t second = inflate_pieces(in, body, {}, out, limit);
    if (first) check(second == first);
    if (p.client_no_context_takeover && !second) check(in.memory() == 0);

    // Our own compression of the data, read back by a client's view of the same agreement.
    vela::ws::Deflater d(p, o);
    vela::ws::DeflateParams peer = p;
    peer.client_no_context_takeover = p.server_no_context_takeover;
    peer.client_max_window_bits = p.server_max_window_bits;
    vela::ws::Inflater back(peer);
    for (int m = 0; m < 2; ++m) {
        std::string z, plain;
        d.compress(body, z);
        check(inflate_pieces(back, z, offers, plain, body.size()) == 0);
        check(plain == body);
    }
    return 0;
}
