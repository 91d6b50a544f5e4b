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

struct Code {
    std::uint32_t bits;  // right-aligned
    std::uint8_t length;
};

// Appendix B, symbols 0 to 255 and EOS (256).
constexpr Code kCodes[257] = {
    {0x1ff8, 13},     {0x7fffd8, 23},   {0xfffffe2, 28},  {0xfffffe3, 28},  {0xfffffe4, 28},
    {0xfffffe5, 28},  {0xfffffe6, 28},  {0xfffffe7, 28},  {0xfffffe8, 28},  {0xffffea, 24},
    {0x3ffffffc, 30}, {0xfffffe9, 28},  {0xfffffea, 28},  {0x3ffffffd, 30}, {0xfffffeb, 28},
    {0xfffffec, 28},  {0xfffffed, 28},  {0xfffffee, 28},  {0xfffffef, 28},  {0xffffff0, 28},
    {0xffffff1, 28},  {0xffffff2, 28},  {0x3ffffffe, 30}, {0xffffff3, 28},  {0xffffff4, 28},
    {0xffffff5, 28},  {0xffffff6, 28},  {0xffffff7, 28},  {0xffffff8, 28},  {0xffffff9, 28},
    {0xffffffa, 28},  {0xffffffb, 28},  {0x14, 6},        {0x3f8, 10},      {0x3f9, 10},
    {0xffa, 12},      {0x1ff9, 13},     {0x15, 6},        {0xf8, 8},        {0x7fa, 11},
    {0x3fa, 10},      {0x3fb, 10},      {0xf9, 8},        {0x7fb, 11},      {0xfa, 8},
    {0x16, 6},        {0x17, 6},        {0x18, 6},        {0x0, 5},         {0x1, 5},
    {0x2, 5},         {0x19, 6},        {0x1a, 6},        {0x1b, 6},        {0x1c, 6},
    {0x1d, 6},        {0x1e, 6},        {0x1f, 6},        {0x5c, 7},        {0xfb, 8},
    {0x7ffc, 15},     {0x20, 6},        {0xffb, 12},      {0x3fc, 10},      {0x1ffa, 13},
    {0x21, 6},        {0x5d, 7},        {0x5e, 7},        {0x5f, 7},        {0x60, 7},
    {0x61, 7},        {0x62, 7},        {0x63, 7},        {0x64, 7},        {0x65, 7},
    {0x66, 7},        {0x67, 7},        {0x68, 7},        {0x69, 7},        {0x6a, 7},
    {0x6b, 7},        {0x6c, 7},        {0x6d, 7},        {0x6e, 7},        {0x6f, 7},
    {0x70, 7},        {0x71, 7},        {0x72, 7},        {0xfc, 8},        {0x73, 7},
    {0xfd, 8},        {0x1ffb, 13},     {0x7fff0, 19},    {0x1ffc, 13},     {0x3ffc, 14},
    {0x22, 6},        {0x7ffd, 15},     {0x3, 5},         {0x23, 6},        {0x4, 5},
    {0x24, 6},        {0x5, 5},         {0x25, 6},        {0x26, 6},        {0x27, 6},
    {0x6, 5},         {0x74, 7},        {0x75, 7},        {0x28, 6},        {0x29, 6},
    {0x2a, 6},        {0x7, 5},         {0x2b, 6},        {0x76, 7},        {0x2c, 6},
    {0x8, 5},         {0x9, 5},         {0x2d, 6},        {0x77, 7},        {0x78, 7},
    {0x79, 7},        {0x7a, 7},        {0x7b, 7},        {0x7ffe, 15},     {0x7fc, 11},
    {0x3ffd, 14},     {0x1ffd, 13},     {0xffffffc, 28},  {0xfffe6, 20},    {0x3fffd2, 22},
    {0xfffe7, 20},    {0xfffe8, 20},    {0x3fffd3, 22},   {0x3fffd4, 22},   {0x3fffd5, 22},
    {0x7fffd9, 23},   {0x3fffd6, 22},   {0x7fffda, 23},   {0x7fffdb, 23},   {0x7fffdc, 23},
    {0x7fffdd, 23},   {0x7fffde, 23},   {0xffffeb, 24},   {0x7fffdf, 23},   {0xffffec, 24},
    {0xffffed, 24},   {0x3fffd7, 22},   {0x7fffe0, 23},   {0xffffee, 24},   {0x7fffe1, 23},
    {0x7fffe2, 23},   {0x7fffe3, 23},   {0x7fffe4, 23},   {0x1fffdc, 21},   {0x3fffd8, 22},
    {0x7fffe5, 23},   {0x3fffd9, 22},   {0x7fffe6, 23},   {0x7fffe7, 23},   {0xffffef, 24},
    {0x3fffda, 22},   {0x1fffdd, 21},   {0xfffe9, 20},    {0x3fffdb, 22},   {0x3fffdc, 22},
    {0x7fffe8, 23},   {0x7fffe9, 23},   {0x1fffde, 21},   {0x7fffea, 23},   {0x3fffdd, 22},
    {0x3fffde, 22},   {0xfffff0, 24},   {0x1fffdf, 21},   {0x3fffdf, 22},   {0x7fffeb, 23},
    {0x7fffec, 23},   {0x1fffe0, 21},   {0x1fffe1, 21},   {0x3fffe0, 22},   {0x1fffe2, 21},
    {0x7fffed, 23},   {0x3fffe1, 22},   {0x7fffee, 23},   {0x7fffef, 23},   {0xfffea, 20},
    {0x3fffe2, 22},   {0x3fffe3, 22},   {0x3fffe4, 22},   {0x7ffff0, 23},   {0x3fffe5, 22},
    {0x3fffe6, 22},   {0x7ffff1, 23},   {0x3ffffe0, 26},  {0x3ffffe1, 26},  {0xfffeb, 20},
    {0x7fff1, 19},    {0x3fffe7, 22},   {0x7ffff2, 23},   {0x3fffe8, 22},   {0x1ffffec, 25},
    {0x3ffffe2, 26},  {0x3ffffe3, 26},  {0x3ffffe4, 26},  {0x7ffffde, 27},  {0x7ffffdf, 27},
    {0x3ffffe5, 26},  {0xfffff1, 24},   {0x1ffffed, 25},  {0x7fff2, 19},    {0x1fffe3, 21},
    {0x3ffffe6, 26},  {0x7ffffe0, 27},  {0x7ffffe1, 27},  {0x3ffffe7, 26},  {0x7ffffe2, 27},
    {0xfffff2, 24},   {0x1fffe4, 21},   {0x1fffe5, 21},   {0x3ffffe8, 26},  {0x3ffffe9, 26},
    {0xffffffd, 28},  {0x7ffffe3, 27},  {0x7ffffe4, 27},  {0x7ffffe5, 27},  {0xfffec, 20},
    {0xfffff3, 24},   {0xfffed, 20},    {0x1fffe6, 21},   {0x3fffe9, 22},   {0x1fffe7, 21},
    {0x1fffe8, 21},   {0x7ffff3, 23},   {0x3fffea, 22},   {0x3fffeb, 22},   {0x1ffffee, 25},
    {0x1ffffef, 25},  {0xfffff4, 24},   {0xfffff5, 24},   {0x3ffffea, 26},  {0x7ffff4, 23},
    {0x3ffffeb, 26},  {0x7ffffe6, 27},  {0x3ffffec, 26},  {0x3ffffed, 26},  {0x7ffffe7, 27},
    {0x7ffffe8, 27},  {0x7ffffe9, 27},  {0x7ffffea, 27},  {0x7ffffeb, 27},  {0xffffffe, 28},
    {0x7ffffec, 27},  {0x7ffffed, 27},  {0x7ffffee, 27},  {0x7ffffef, 27},  {0x7fffff0, 27},
    {0x3ffffee, 26},  {0x3fffffff, 30},
};

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
    const std::size_t start = out.size();
    out.resize(start + huffman_size(s));
    char* w = out.data() + start;
    std::uint64_t acc = 0;  // pending bits, right-aligned
    unsigned pending = 0;
    for (unsigned char c : s) {
        acc = (acc << kCodes[c].length) | kCodes[c].bits;
        pending += kCodes[c].length;
        while (pending >= 8) {
            pending -= 8;
            *w++ = static_cast<char>(acc >> pending);
        }
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
