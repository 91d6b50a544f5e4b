// HPACK's Huffman code (RFC 7541 5.2 and Appendix B): the encoder's code table, and the
// decoder's state machine built from it at compile time.
//
// The decoder walks the code tree four bits at a time. A state is an internal node of the
// tree (256 of them: 257 symbols are leaves); for each state and nibble the table gives the
// state reached, the symbol completed on the way (at most one: the shortest code has 5 bits),
// whether the walk reached EOS (an error), and whether the state reached may end the string:
// the bits since the last symbol are all ones and at most 7 of them (the only padding 5.2
// allows).

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "vela/http/hpack.hpp"

namespace vela::hpack {
namespace {

// Appendix B's code is canonical: codes of one length are consecutive binary numbers in
// symbol order, and each length's first code follows the last code of the length before,
// shifted left by the difference. So the lengths alone define it; the codes are computed
// below, and tests check them against values printed in Appendix B and, for every symbol,
// against nghttp2's decoder.
constexpr std::uint8_t kLength[257] = {
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,  // 0-15
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,  // 16-31
    6,  10, 10, 12, 13, 6,  8,  11, 10, 10, 8,  11, 8,  6,  6,  6,   // 32-47
    5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8,  15, 6,  12, 10,  // 48-63
    13, 6,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,   // 64-79
    7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8,  13, 19, 13, 14, 6,   // 80-95
    15, 5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5,   // 96-111
    6,  7,  6,  5,  5,  6,  7,  7,  7,  7,  7,  15, 11, 14, 13, 28,  // 112-127
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,  // 128-143
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,  // 144-159
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,  // 160-175
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,  // 176-191
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,  // 192-207
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,  // 208-223
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,  // 224-239
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,  // 240-255
    30,                                                              // 256
};

struct Code {
    std::uint32_t bits;  // right-aligned
    std::uint8_t length;
};

constexpr std::array<Code, 257> build_codes() {
    std::array<Code, 257> codes{};
    std::uint32_t next = 0;  // the next code of the current length
    int length = 0;
    for (int len = 1; len <= 30; ++len) {
        for (int sym = 0; sym < 257; ++sym) {
            if (kLength[sym] != len) continue;
            next <<= (len - length);
            length = len;
            codes[sym] = {next++, static_cast<std::uint8_t>(len)};
        }
    }
    return codes;
}

constexpr std::array<Code, 257> kCodes = build_codes();

// The code is complete (Kraft's sum is exactly one) and its longest code is EOS's 30 ones.
constexpr bool complete() {
    std::uint64_t sum = 0;
    for (int sym = 0; sym < 257; ++sym) sum += std::uint64_t{1} << (30 - kLength[sym]);
    return sum == (std::uint64_t{1} << 30);
}
static_assert(complete());
static_assert(kCodes[256].bits == 0x3fffffff && kCodes[256].length == 30);
static_assert(kCodes['0'].bits == 0 && kCodes['0'].length == 5);
static_assert(kCodes[0].bits == 0x1ff8 && kCodes[0].length == 13);

constexpr int kEos = 256;

struct Step {
    std::uint8_t state;
    std::uint8_t flags;
    std::uint8_t symbol;
};
constexpr std::uint8_t kEmit = 1;
constexpr std::uint8_t kFail = 2;
constexpr std::uint8_t kAccept = 4;

using Machine = std::array<std::array<Step, 16>, 256>;

constexpr Machine build_machine() {
    // The tree: child[node][bit] is an internal node (< 256) or 256 + symbol.
    std::array<std::array<std::uint16_t, 2>, 256> child{};
    int nodes = 1;
    for (int sym = 0; sym <= kEos; ++sym) {
        int node = 0;
        for (int i = kCodes[sym].length - 1; i > 0; --i) {
            const int bit = (kCodes[sym].bits >> i) & 1;
            if (child[node][bit] == 0) child[node][bit] = static_cast<std::uint16_t>(nodes++);
            node = child[node][bit];
        }
        child[node][kCodes[sym].bits & 1] = static_cast<std::uint16_t>(256 + sym);
    }
    // States that may end a string: the all-ones path from the root, 0 to 7 bits deep.
    std::array<bool, 256> accept{};
    for (int node = 0, depth = 0; depth <= 7; ++depth) {
        accept[node] = true;
        node = child[node][1];
    }
    Machine m{};
    for (int state = 0; state < 256; ++state) {
        for (int nibble = 0; nibble < 16; ++nibble) {
            Step step{};
            int node = state;
            for (int i = 3; i >= 0; --i) {
                const int next = child[node][(nibble >> i) & 1];
                if (next < 256) {
                    node = next;
                    continue;
                }
                if (next - 256 == kEos) {
                    step.flags = kFail;
                    break;
                }
                step.flags = kEmit;
                step.symbol = static_cast<std::uint8_t>(next - 256);
                node = 0;
            }
            if (step.flags != kFail) {
                step.state = static_cast<std::uint8_t>(node);
                if (accept[node]) step.flags |= kAccept;
            }
            m[state][nibble] = step;
        }
    }
    return m;
}

constexpr Machine kMachine = build_machine();

}  // namespace

std::size_t huffman_size(std::string_view s) noexcept {
    std::size_t bits = 0;
    for (unsigned char c : s) bits += kCodes[c].length;
    return (bits + 7) / 8;
}

void huffman_encode(std::string_view s, std::string& out) {
    huffman_encode(s, huffman_size(s), out);
}

void huffman_encode(std::string_view s, std::size_t size, std::string& out) {
    const std::size_t start = out.size();
    out.resize(start + size);
    char* w = out.data() + start;
    std::uint64_t acc = 0;  // pending bits, right-aligned
    unsigned pending = 0;
    for (unsigned char c : s) {
        acc = (acc << kCodes[c].length) | kCodes[c].bits;
        pending += kCodes[c].length;
        if (pending >= 32) {  // four bytes at a time (at most 31 + 30 bits pending)
            pending -= 32;
            const auto word = static_cast<std::uint32_t>(acc >> pending);
            w[0] = static_cast<char>(word >> 24);
            w[1] = static_cast<char>(word >> 16);
            w[2] = static_cast<char>(word >> 8);
            w[3] = static_cast<char>(word);
            w += 4;
        }
    }
    while (pending >= 8) {
        pending -= 8;
        *w++ = static_cast<char>(acc >> pending);
    }
    // Pad with the most significant bits of EOS (all ones).
    if (pending > 0) *w++ = static_cast<char>((acc << (8 - pending)) | (0xFFu >> pending));
}

Error huffman_decode(std::string_view in, char* out, std::size_t& n) noexcept {
    char* w = out;
    std::uint8_t state = 0;
    std::uint8_t flags = kAccept;
    for (unsigned char c : in) {
        const Step& hi = kMachine[state][c >> 4];
        if (hi.flags & kFail) return Error::huffman_eos;
        if (hi.flags & kEmit) *w++ = static_cast<char>(hi.symbol);
        const Step& lo = kMachine[hi.state][c & 15];
        if (lo.flags & kFail) return Error::huffman_eos;
        if (lo.flags & kEmit) *w++ = static_cast<char>(lo.symbol);
        state = lo.state;
        flags = lo.flags;
    }
    n = static_cast<std::size_t>(w - out);
    return (flags & kAccept) ? Error::none : Error::huffman_padding;
}

Error huffman_decode(std::string_view in, std::string& out) {
    const std::size_t start = out.size();
    out.resize(start + in.size() * 8 / 5 + 1);
    std::size_t n = 0;
    const Error e = huffman_decode(in, out.data() + start, n);
    out.resize(start + n);
    return e;
}

}  // namespace vela::hpack
