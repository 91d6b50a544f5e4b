// Feeds arbitrary bytes to the Accept-Encoding reader as a field value and negotiates against
// a few server preference lists. Checks that every q-value is in 0..1000, that an absent field
// gives identity, that the choice is on the server's list (or identity) with a positive and
// maximal q-value, and that ties go to the earlier preference.

#include <cstdint>
#include <span>
#include <string_view>

#include "vela/compress/codec.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}

using vela::compress::AcceptEncoding;
using vela::compress::Coding;

constexpr Coding kAll[] = {Coding::identity, Coding::gzip, Coding::br, Coding::zstd};
constexpr Coding kZbg[] = {Coding::zstd, Coding::br, Coding::gzip};
constexpr Coding kGb[] = {Coding::gzip, Coding::br};
constexpr Coding kWithIdentity[] = {Coding::br, Coding::identity, Coding::gzip};

void check_choice(const AcceptEncoding& a, std::span<const Coding> pref) {
    const Coding got = vela::compress::negotiate(a, pref);
    if (!a.present()) {
        check(got == Coding::identity);
        return;
    }
    int best = 0;
    for (const Coding c : pref) best = a.quality(c) > best ? a.quality(c) : best;
    if (best == 0) {
        check(got == Coding::identity);
        return;
    }
    // The first preference with the best q-value.
    for (const Coding c : pref) {
        if (a.quality(c) == best) {
            check(got == c);
            return;
        }
    }
    check(false);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view header(reinterpret_cast<const char*>(data), size);
    for (const bool present : {true, false}) {
        const AcceptEncoding a(header, present);
        check(a.present() == present);
        for (const Coding c : kAll) {
            const int q = a.quality(c);
            check(q >= 0 && q <= 1000);
            if (!present) check(q == 1000);
        }
        check_choice(a, kZbg);
        check_choice(a, kGb);
        check_choice(a, kWithIdentity);
        check_choice(a, {});
    }
    // Reading is a pure function of the bytes.
    const AcceptEncoding x(header), y(header);
    for (const Coding c : kAll) check(x.quality(c) == y.quality(c));
    return 0;
}
