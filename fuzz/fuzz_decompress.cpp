// Feeds arbitrary bytes to the bounded decoders: the first byte picks the coding (low two
// bits), the piece size for a second, piecewise decode and the encoder level; the rest is
// decoded with a 1 MiB limit. Checks that the output never passes the limit, that decoding in
// pieces ends the same way (for br: succeeds or fails alike) with the same output, and that
// compressing the bytes with that coding (one-shot, and streamed with flushes) and decoding them
// gives them back.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "vela/compress/codec.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}

using vela::compress::Coding;
using vela::compress::Decoder;
using vela::compress::DecodeResult;
using vela::compress::Encoder;

constexpr std::size_t kLimit = std::size_t(1) << 20;
constexpr Coding kCodings[] = {Coding::gzip, Coding::br, Coding::zstd};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::uint8_t shape = data[0];
    const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    const Coding coding = kCodings[(shape & 3) % 3];

    // Untrusted compressed data, whole.
    std::string whole;
    const DecodeResult r = vela::compress::decompress(coding, body, whole, kLimit);
    check(whole.size() <= kLimit);
    check(r != DecodeResult::more);

    // The same in pieces of 1 + (shape >> 2) bytes: same end, same output.
    auto d = Decoder::create(coding);
    std::string pieces;
    const std::size_t step = 1 + (shape >> 2);
    DecodeResult p = DecodeResult::more;
    for (std::size_t i = 0; i < body.size(); i += step) {  // also past done: then corrupt
        p = d->write(body.substr(i, step), pieces, kLimit);
        check(pieces.size() <= kLimit);
    }
    if (p == DecodeResult::more) p = DecodeResult::corrupt;  // truncated
    // Which error is found can depend on the split: libbrotlidec decodes up to a window into
    // its ring buffer before handing output over, so with all the input at once it may meet
    // invalid data before the output that would have been too_large.
    check((p == DecodeResult::done) == (r == DecodeResult::done));
    if (r == DecodeResult::done) check(pieces == whole);
    if (coding != Coding::br) check(p == r);

    // Round trips of the bytes through the same coding's encoder (one coding per input keeps
    // the rate up: each encoder allocates and clears its tables), streamed in pieces of at
    // least 32 bytes with a flush after every other one.
    const int level = 1 + (shape >> 4) % 4;  // quick levels: 1-4 on every scale
    const std::size_t piece = 32 * step;
    {
        const Coding c = coding;
        const std::string z = vela::compress::compress(c, body, level);
        std::string back;
        check(vela::compress::decompress(c, z, back, body.size()) == DecodeResult::done);
        check(back == body);

        // Kept across inputs and reset() before each: reuse is what a server does.
        static std::unique_ptr<Encoder> encoders[3][4];
        auto& e = encoders[(shape & 3) % 3][level - 1];
        if (!e) e = Encoder::create(c, level);
        e->reset();
        auto live = Decoder::create(c);
        std::string zs, plain;
        std::size_t fed = 0;
        for (std::size_t i = 0; i < body.size(); i += piece) {
            e->write(body.substr(i, piece), zs, (i / piece) % 2 == 0);
            if ((i / piece) % 2 == 0) {  // flushed: everything so far decodes now
                check(live->write(std::string_view(zs).substr(fed), plain, body.size()) ==
                      DecodeResult::more);
                fed = zs.size();
                check(plain == body.substr(0, plain.size()) &&
                      plain.size() == std::min(body.size(), i + piece));
            }
        }
        e->finish(zs);
        check(live->write(std::string_view(zs).substr(fed), plain, body.size()) ==
              DecodeResult::done);
        check(plain == body);
    }
    return 0;
}
