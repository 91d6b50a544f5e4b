// UTF-8 validation (RFC 3629 section 4) for WebSocket text (RFC 6455 8.1): whole strings and
// text that arrives in pieces. ASCII runs are skipped 64 bytes per step; a multi-byte
// character is checked against the narrowed range of its second byte, which is what rules
// out overlongs (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and code points above
// U+10FFFF (F4 90..BF, F5..FF).

#include <cstring>

#include "vela/ws/frame.hpp"

namespace vela::ws {

namespace {

// The state between pieces: continuation bytes still due (low byte) and the range allowed
// for the next one (bits 8-15 and 16-23); 0 on a character boundary.
constexpr std::uint32_t kInvalid = 0xFFFFFFFF;

const unsigned char* skip_ascii(const unsigned char* s, const unsigned char* end) noexcept {
    constexpr std::uint64_t kHigh = 0x8080808080808080ull;
    // 64 bytes per step (four 16-byte vectors ORed together), then 16.
    using V16 = unsigned char __attribute__((vector_size(16)));
    while (end - s >= 64) {
        V16 a, b, c, d;
        std::memcpy(&a, s, 16);
        std::memcpy(&b, s + 16, 16);
        std::memcpy(&c, s + 32, 16);
        std::memcpy(&d, s + 48, 16);
        const V16 o = (a | b) | (c | d);
        std::uint64_t w[2];
        std::memcpy(w, &o, 16);
        if ((w[0] | w[1]) & kHigh) break;
        s += 64;
    }
    while (end - s >= 16) {
        std::uint64_t a, b;
        std::memcpy(&a, s, 8);
        std::memcpy(&b, s + 8, 8);
        if ((a | b) & kHigh) break;
        s += 16;
    }
    while (s != end && *s < 0x80) ++s;
    return s;
}

std::uint32_t run(const unsigned char* s, const unsigned char* end, std::uint32_t state) noexcept {
    unsigned need = state & 0xFF;
    unsigned lo = (state >> 8) & 0xFF;
    unsigned hi = (state >> 16) & 0xFF;
    for (;;) {
        for (; need != 0; --need, ++s) {
            if (s == end) return need | lo << 8 | hi << 16;
            if (*s < lo || *s > hi) return kInvalid;
            lo = 0x80;
            hi = 0xBF;
        }
        s = skip_ascii(s, end);
        if (s == end) return 0;
        const unsigned c = *s++;
        lo = 0x80;
        hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;  // C0, C1: overlong forms of ASCII
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;  // overlong below U+0800
            if (c == 0xED) hi = 0x9F;  // U+D800..DFFF, the surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90;  // overlong below U+10000
            if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
        } else {
            return kInvalid;  // a stray continuation byte, C0, C1, F5..FF
        }
    }
}

}  // namespace

bool utf8_valid(std::string_view s) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    return run(p, p + s.size(), 0) == 0;
}

bool Utf8Validator::feed(const char* p, std::size_t n) noexcept {
    if (state_ == kInvalid) return false;
    const auto* s = reinterpret_cast<const unsigned char*>(p);
    state_ = run(s, s + n, state_);
    return state_ != kInvalid;
}

bool Utf8Validator::complete() const noexcept { return state_ == 0; }

void Utf8Validator::reset() noexcept { state_ = 0; }

}  // namespace vela::ws
