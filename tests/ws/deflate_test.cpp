// Tests for src/ws/deflate.cpp (RFC 7692): the negotiation as a table of offers and answers,
// round trips, context takeover, the RFC's worked examples, the decompression-bomb limit,
// corrupt input and the memory held.
#include "vela/ws/deflate.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace vela::ws {
namespace {

using namespace std::literals;

// ---- negotiation ----

struct NegotiationCase {
    const char* offers;
    const char* answer;  // nullptr: declined
    DeflateParams params{};
};

DeflateParams params(bool snct, bool cnct, int sbits, int cbits) {
    return DeflateParams{snct, cnct, sbits, cbits};
}

TEST(DeflateNegotiate, Table) {
    const NegotiationCase cases[] = {
        // RFC 7692 7.1 and 5.2 examples
        {"permessage-deflate", "permessage-deflate; server_no_context_takeover",
         params(true, false, 15, 15)},
        {"permessage-deflate; client_max_window_bits",
         "permessage-deflate; server_no_context_takeover", params(true, false, 15, 15)},
        {"permessage-deflate; client_max_window_bits; server_max_window_bits=10, "
         "permessage-deflate; client_max_window_bits",
         "permessage-deflate; server_no_context_takeover; server_max_window_bits=10",
         params(true, false, 10, 15)},
        {"permessage-deflate; server_max_window_bits=10, permessage-deflate",
         "permessage-deflate; server_no_context_takeover; server_max_window_bits=10",
         params(true, false, 10, 15)},
        {"permessage-deflate; client_no_context_takeover",
         "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
         params(true, true, 15, 15)},
        {"permessage-deflate; server_no_context_takeover",
         "permessage-deflate; server_no_context_takeover", params(true, false, 15, 15)},
        // the client's hint binds it once answered
        {"permessage-deflate; client_max_window_bits=10",
         "permessage-deflate; server_no_context_takeover; client_max_window_bits=10",
         params(true, false, 15, 10)},
        {"permessage-deflate; client_max_window_bits=8",
         "permessage-deflate; server_no_context_takeover; client_max_window_bits=8",
         params(true, false, 15, 8)},
        // 8 is answered as asked; zlib compresses with 9, whose matches stay within 256 bytes
        {"permessage-deflate; server_max_window_bits=8",
         "permessage-deflate; server_no_context_takeover; server_max_window_bits=8",
         params(true, false, 9, 15)},
        // quoted values, whitespace, case, other extensions, empty elements
        {"permessage-deflate; server_max_window_bits=\"12\"",
         "permessage-deflate; server_no_context_takeover; server_max_window_bits=12",
         params(true, false, 12, 15)},
        {"permessage-deflate; server_max_window_bits=\"1\\2\"",
         "permessage-deflate; server_no_context_takeover; server_max_window_bits=12",
         params(true, false, 12, 15)},
        {"  Permessage-Deflate\t;\tClient_No_Context_Takeover ; server_max_window_bits = 11 ",
         "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
         "server_max_window_bits=11",
         params(true, true, 11, 15)},
        {"x-webkit-deflate-frame; max_window_bits=10, , permessage-deflate",
         "permessage-deflate; server_no_context_takeover", params(true, false, 15, 15)},
        // a declined first offer, the second taken
        {"permessage-deflate; foo, permessage-deflate; client_no_context_takeover",
         "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
         params(true, true, 15, 15)},
        {"permessage-deflate; x=\"a, b; c\", permessage-deflate",
         "permessage-deflate; server_no_context_takeover", params(true, false, 15, 15)},
        {"permessage-deflate; server_no_context_takeover; server_no_context_takeover, "
         "permessage-deflate",
         "permessage-deflate; server_no_context_takeover", params(true, false, 15, 15)},
        {"permessage-deflate; server_max_window_bits=16, permessage-deflate; "
         "server_max_window_bits=9",
         "permessage-deflate; server_no_context_takeover; server_max_window_bits=9",
         params(true, false, 9, 15)},
        {"permessage-deflate;; server_no_context_takeover, permessage-deflate",
         "permessage-deflate; server_no_context_takeover", params(true, false, 15, 15)},
        // every offer declined
        {"", nullptr},
        {" , ,", nullptr},
        {"deflate-frame", nullptr},
        {"permessage-deflate; unknown", nullptr},
        {"permessage-deflate; server_max_window_bits", nullptr},
        {"permessage-deflate; server_max_window_bits=7", nullptr},
        {"permessage-deflate; server_max_window_bits=16", nullptr},
        {"permessage-deflate; server_max_window_bits=08", nullptr},
        {"permessage-deflate; server_max_window_bits=1a", nullptr},
        {"permessage-deflate; server_max_window_bits=", nullptr},
        {"permessage-deflate; server_max_window_bits=\"\"", nullptr},
        {"permessage-deflate; server_max_window_bits=\"10", nullptr},
        {"permessage-deflate; client_max_window_bits=0", nullptr},
        {"permessage-deflate; client_max_window_bits=16", nullptr},
        {"permessage-deflate; client_max_window_bits; client_max_window_bits=10", nullptr},
        {"permessage-deflate; server_no_context_takeover=1", nullptr},
        {"permessage-deflate; client_no_context_takeover=\"\"", nullptr},
        {"permessage-deflate server_no_context_takeover", nullptr},
        {"permessage-deflate; ; ", nullptr},
        {"\"permessage-deflate\"", nullptr},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.offers);
        std::string answer = "untouched";
        const auto p = negotiate_deflate(c.offers, DeflateOptions{}, answer);
        if (!c.answer) {
            EXPECT_FALSE(p);
            continue;
        }
        ASSERT_TRUE(p);
        EXPECT_EQ(answer, c.answer);
        EXPECT_EQ(p->server_no_context_takeover, c.params.server_no_context_takeover);
        EXPECT_EQ(p->client_no_context_takeover, c.params.client_no_context_takeover);
        EXPECT_EQ(p->server_max_window_bits, c.params.server_max_window_bits);
        EXPECT_EQ(p->client_max_window_bits, c.params.client_max_window_bits);
    }
}

TEST(DeflateNegotiate, ServerOptions) {
    DeflateOptions o;
    o.server_no_context_takeover = false;
    o.server_max_window_bits = 11;
    o.client_max_window_bits = 10;
    std::string answer;
    auto p = negotiate_deflate("permessage-deflate", o, answer);
    ASSERT_TRUE(p);  // a smaller server window needs no announcement; the client's is unknown
    EXPECT_EQ(answer, "permessage-deflate");
    EXPECT_FALSE(p->server_no_context_takeover);
    EXPECT_EQ(p->server_max_window_bits, 11);
    EXPECT_EQ(p->client_max_window_bits, 15);

    p = negotiate_deflate(
        "permessage-deflate; server_no_context_takeover; client_max_window_bits; "
        "server_max_window_bits=13",
        o, answer);
    ASSERT_TRUE(p);
    EXPECT_EQ(answer,
              "permessage-deflate; server_no_context_takeover; server_max_window_bits=11; "
              "client_max_window_bits=10");
    EXPECT_TRUE(p->server_no_context_takeover);
    EXPECT_EQ(p->client_max_window_bits, 10);

    p = negotiate_deflate("permessage-deflate; client_max_window_bits=9", o, answer);
    ASSERT_TRUE(p);
    EXPECT_EQ(answer, "permessage-deflate; client_max_window_bits=9");
    EXPECT_EQ(p->client_max_window_bits, 9);

    o.server_max_window_bits = 8;
    p = negotiate_deflate("permessage-deflate; server_max_window_bits=12", o, answer);
    ASSERT_TRUE(p);
    EXPECT_EQ(answer, "permessage-deflate; server_max_window_bits=8");
    EXPECT_EQ(p->server_max_window_bits, 9);
}

TEST(DeflateNegotiate, Disabled) {
    DeflateOptions o;
    o.enabled = false;
    std::string answer;
    EXPECT_FALSE(negotiate_deflate("permessage-deflate", o, answer));
}

// ---- compression ----

std::string random_text(std::size_t n, unsigned seed) {
    static constexpr std::string_view words[] = {"socket ",  "frame ", "deflate ", "window ",
                                                 "message ", "vela ",  "zlib ",    "\n"};
    std::mt19937 rng(seed);
    std::string s;
    while (s.size() < n) s += words[rng() % std::size(words)];
    s.resize(n);
    return s;
}

std::string random_bytes(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (auto& c : s) c = char(rng());
    return s;
}

// Inflates a whole message in one piece; the code, or 0 with the text in `out`.
std::uint16_t inflate_all(Inflater& i, std::string_view in, std::string& out,
                          std::size_t limit = 64 << 20) {
    out.clear();
    return i.inflate(in, true, out, limit);
}

TEST(DeflateRoundTrip, SizesTextAndBinary) {
    DeflateParams p;
    p.server_no_context_takeover = false;
    DeflateOptions o;
    Deflater d(p, o);
    DeflateParams ip;  // what the peer's inflater agreed: the server's window is its client's
    ip.client_max_window_bits = p.server_max_window_bits;
    Inflater in(ip);
    const std::size_t sizes[] = {0, 1, 5, 100, 4096, 70000, (1 << 20) + 12345};
    for (std::size_t n : sizes) {
        for (const std::string& msg : {random_text(n, unsigned(n)), random_bytes(n, 7)}) {
            std::string z, back;
            d.compress(msg, z);
            ASSERT_EQ(inflate_all(in, z, back), 0) << n;
            ASSERT_EQ(back, msg) << n;
        }
    }
}

TEST(DeflateRoundTrip, EmptyMessageIsOneByte) {
    DeflateParams p;
    Deflater d(p, DeflateOptions{});
    std::string z;
    d.compress("", z);
    EXPECT_EQ(z, "\x00"sv);  // RFC 7692 7.2.3.6
    Inflater in(p);
    std::string back;
    EXPECT_EQ(inflate_all(in, z, back), 0);
    EXPECT_EQ(back, "");
    EXPECT_EQ(inflate_all(in, "", back), 0);  // no bytes at all: also empty
    EXPECT_EQ(back, "");
}

TEST(DeflateRoundTrip, AppendsToOutput) {
    DeflateParams p;
    Deflater d(p, DeflateOptions{});
    std::string z = "head";
    d.compress("Hello", z);
    EXPECT_EQ(z, "head\xf2\x48\xcd\xc9\xc9\x07\x00"sv);  // RFC 7692 7.2.3.1
    Inflater in(p);
    std::string out = "prefix:";
    EXPECT_EQ(in.inflate(std::string_view(z).substr(4), true, out, 100), 0);
    EXPECT_EQ(out, "prefix:Hello");
}

TEST(DeflateRoundTrip, SmallWindowsAndLevels) {
    for (int bits = 8; bits <= 15; ++bits) {
        DeflateOptions o;
        o.level = 1 + bits % 9;
        o.mem_level = 1 + bits % 9;
        o.server_max_window_bits = bits;
        std::string answer;
        const auto p = negotiate_deflate(
            "permessage-deflate; server_max_window_bits=15; client_max_window_bits", o, answer);
        ASSERT_TRUE(p);
        Deflater d(*p, o);
        DeflateParams ip;  // a peer decompressing with exactly the window announced
        ip.client_max_window_bits = bits;
        Inflater in(ip);
        const std::string msg = random_text(50000, unsigned(bits)) + random_bytes(3000, 1);
        std::string z, back;
        d.compress(msg, z);
        ASSERT_EQ(inflate_all(in, z, back), 0) << bits;
        EXPECT_EQ(back, msg) << bits;
    }
}

// Window 8 in the answer, 9 in zlib: a strict 256-byte-window decoder must read the output.
TEST(DeflateRoundTrip, WindowNineOutputFitsWindowEight) {
    DeflateOptions o;
    o.server_max_window_bits = 8;
    std::string answer;
    const auto p = negotiate_deflate("permessage-deflate; server_max_window_bits=8", o, answer);
    ASSERT_TRUE(p);
    Deflater d(*p, o);
    const std::string msg = random_text(200000, 3);
    std::string z;
    d.compress(msg, z);
    z += "\x00\x00\xff\xff"sv;
    z_stream s{};
    ASSERT_EQ(inflateInit2(&s, -8), Z_OK);
    std::string back(msg.size() + 16, '\0');
    s.next_in = reinterpret_cast<Bytef*>(z.data());
    s.avail_in = uInt(z.size());
    s.next_out = reinterpret_cast<Bytef*>(back.data());
    s.avail_out = uInt(back.size());
    EXPECT_EQ(inflate(&s, Z_SYNC_FLUSH), Z_OK);
    back.resize(back.size() - s.avail_out);
    inflateEnd(&s);
    EXPECT_EQ(back, msg);
}

TEST(DeflateContext, TakeoverShrinksARepeat) {
    DeflateParams p;
    p.server_no_context_takeover = false;
    Deflater d(p, DeflateOptions{});
    Inflater in(p);
    const std::string msg = random_bytes(2000, 9);  // incompressible alone
    std::string z1, z2, back;
    d.compress(msg, z1);
    d.compress(msg, z2);
    EXPECT_LT(z2.size() * 10, z1.size());
    ASSERT_EQ(inflate_all(in, z1, back), 0);
    EXPECT_EQ(back, msg);
    ASSERT_EQ(inflate_all(in, z2, back), 0);
    EXPECT_EQ(back, msg);

    Inflater fresh(p);  // the second message needs the first one's window
    EXPECT_EQ(inflate_all(fresh, z2, back), close_code::invalid_payload);
}

TEST(DeflateContext, NoTakeoverEachMessageAlone) {
    DeflateParams p;
    p.server_no_context_takeover = true;
    p.client_no_context_takeover = true;
    Deflater d(p, DeflateOptions{});
    const std::string msg = random_bytes(2000, 9);
    std::string z1, z2;
    d.compress(msg, z1);
    d.compress(msg, z2);
    EXPECT_EQ(z1, z2);
    Inflater in(p);
    std::string back;
    EXPECT_EQ(in.memory(), 0u);
    ASSERT_EQ(inflate_all(in, z2, back), 0);
    EXPECT_EQ(back, msg);
    EXPECT_EQ(in.memory(), 0u);  // released after the message
    ASSERT_EQ(inflate_all(in, z1, back), 0);
    EXPECT_EQ(back, msg);
}

// RFC 7692 7.2.3.2: the second "Hello" refers back into the first message.
TEST(DeflateVectors, SharedWindow) {
    DeflateParams p;
    p.client_no_context_takeover = false;
    Inflater in(p);
    std::string out;
    ASSERT_EQ(inflate_all(in, "\xf2\x48\xcd\xc9\xc9\x07\x00"sv, out), 0);
    EXPECT_EQ(out, "Hello");
    ASSERT_EQ(inflate_all(in, "\xf2\x00\x11\x00\x00"sv, out), 0);
    EXPECT_EQ(out, "Hello");
}

// RFC 7692 7.2.3.3 (a stored block) and 7.2.3.5 (two blocks in one message).
TEST(DeflateVectors, StoredAndTwoBlocks) {
    DeflateParams p;
    Inflater in(p);
    std::string out;
    ASSERT_EQ(inflate_all(in, "\x00\x05\x00\xfa\xff\x48\x65\x6c\x6c\x6f\x00"sv, out), 0);
    EXPECT_EQ(out, "Hello");
    ASSERT_EQ(inflate_all(in, "\xf2\x48\x05\x00\x00\x00\xff\xff\xca\xc9\xc9\x07\x00"sv, out), 0);
    EXPECT_EQ(out, "Hello");
}

// RFC 7692 7.2.3.4: a sender may end a message with a final block instead of a flush.
TEST(DeflateVectors, FinalBlock) {
    DeflateParams p;
    p.client_no_context_takeover = false;
    Inflater in(p);
    std::string out;
    ASSERT_EQ(inflate_all(in, "\xf3\x48\xcd\xc9\xc9\x07\x00\x00"sv, out), 0);
    EXPECT_EQ(out, "Hello");
    ASSERT_EQ(inflate_all(in, "\xf2\x00\x11\x00\x00"sv, out), 0);  // the window is kept
    EXPECT_EQ(out, "Hello");
    // without the 0x00 that lets the tail be appended (as zlib's Z_FINISH leaves it)
    ASSERT_EQ(inflate_all(in, "\xf3\x48\xcd\xc9\xc9\x07\x00"sv, out), 0);
    EXPECT_EQ(out, "Hello");
    ASSERT_EQ(inflate_all(in, "\xf3\x48\xcd\xc9\xc9\x07\x00"sv, out), 0);
    EXPECT_EQ(out, "Hello");
}

// RFC 7692 7.2.1 says to strip 00 00 ff ff; some senders keep it. Such a message once
// closed with 1007: the appended tail was read as a stored block of its own, cut short.
// Node's ws and Python's websockets inflate it, and so do we (context kept across messages,
// kept and stripped tails mixed, the tail split across pieces).
TEST(DeflateInflate, SenderKeptTheTail) {
    DeflateParams p;
    p.server_no_context_takeover = false;
    Deflater d(p, DeflateOptions{});
    DeflateParams ip;
    ip.client_max_window_bits = p.server_max_window_bits;
    Inflater in(ip);
    for (int m = 0; m < 6; ++m) {
        const std::string msg = random_text(5000 + std::size_t(m) * 777, unsigned(m));
        std::string z, back;
        d.compress(msg, z);
        const bool keep = m % 3 != 2;
        if (keep) z += "\x00\x00\xff\xff"sv;
        SCOPED_TRACE(::testing::Message() << "message " << m << (keep ? " kept" : " stripped"));
        if (m % 2) {  // in pieces, the last one inside the tail
            const std::size_t cut = z.size() - 2;
            ASSERT_EQ(in.inflate(std::string_view(z).substr(0, cut), false, back, 1 << 20), 0);
            ASSERT_EQ(in.inflate(std::string_view(z).substr(cut), true, back, 1 << 20), 0);
        } else {
            ASSERT_EQ(inflate_all(in, z, back), 0);
        }
        EXPECT_EQ(back, msg);
    }
    // The RFC's "Hello" with its tail kept, and the empty message's stored block whole.
    Inflater fresh(DeflateParams{});
    std::string out;
    ASSERT_EQ(inflate_all(fresh, "\xf2\x48\xcd\xc9\xc9\x07\x00\x00\x00\xff\xff"sv, out), 0);
    EXPECT_EQ(out, "Hello");
    ASSERT_EQ(inflate_all(fresh, "\x00\x00\x00\xff\xff"sv, out), 0);
    EXPECT_EQ(out, "");
}

// A kept tail does not excuse what follows it: a message cut inside a later block, or a
// wrong stored block after the tail, is still 1007.
TEST(DeflateInflate, SenderKeptTheTailThenBadBytes) {
    const std::string_view bad[] = {
        "\xf2\x48\xcd\xc9\xc9\x07\x00\x00\x00\xff\xff\xf2\x48"sv,  // cut after
        "\xf2\x48\xcd\xc9\xc9\x07\x00\x00\x00\xff\xff\x00\x05\x00\xfa\xfe"sv,
    };
    for (const auto z : bad) {
        Inflater in(DeflateParams{});
        std::string out;
        EXPECT_EQ(inflate_all(in, z, out), close_code::invalid_payload);
    }
}

// Regression: restarting after each final block once copied the 32 KB window out and back,
// so a message of 2-byte empty final blocks cost 16 KB of copying per input byte.
TEST(DeflateVectors, ManyFinalBlocksStayCheap) {
    std::string msg = "\xf3\x48\xcd\xc9\xc9\x07\x00"s;     // "Hello", final
    for (int i = 0; i < 500000; ++i) msg += "\x03\x00"sv;  // empty fixed-Huffman final block
    msg += "\xf2\x00\x11\x00\x00"sv;                       // "Hello" again, from the window
    Inflater in(DeflateParams{});
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(inflate_all(in, msg, out), 0);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    EXPECT_EQ(out, "HelloHello");
}

TEST(DeflateInflate, ManyPieces) {
    DeflateParams p;
    p.server_no_context_takeover = false;
    Deflater d(p, DeflateOptions{});
    Inflater in(p);
    for (int m = 0; m < 3; ++m) {
        const std::string msg = random_text(300000, unsigned(m)) + random_bytes(1000, 2);
        std::string z, out;
        d.compress(msg, z);
        std::mt19937 rng{unsigned(m)};
        std::size_t pos = 0;
        while (pos < z.size()) {
            const std::size_t n = std::min<std::size_t>(z.size() - pos, rng() % 40);
            ASSERT_EQ(in.inflate(std::string_view(z).substr(pos, n), false, out, 1 << 20), 0);
            pos += n;
        }
        ASSERT_EQ(in.inflate("", true, out, 1 << 20), 0);
        EXPECT_EQ(out, msg);
    }
}

// Raw deflate of `n` zero bytes, as a client would send it (sync flush, tail stripped).
std::string compressed_zeros(std::size_t n) {
    z_stream s{};
    EXPECT_EQ(deflateInit2(&s, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY), Z_OK);
    const std::string block(1 << 20, '\0');
    std::string z(n / 500 + 1024, '\0');
    s.next_out = reinterpret_cast<Bytef*>(z.data());
    s.avail_out = uInt(z.size());
    for (std::size_t left = n; left;) {
        const std::size_t k = std::min(left, block.size());
        left -= k;
        s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
        s.avail_in = uInt(k);
        EXPECT_EQ(deflate(&s, left ? Z_NO_FLUSH : Z_SYNC_FLUSH), Z_OK);
    }
    z.resize(z.size() - s.avail_out - 4);
    deflateEnd(&s);
    return z;
}

TEST(DeflateInflate, BombStopsAtLimit) {
    const std::string bomb = compressed_zeros(100 << 20);
    EXPECT_LT(bomb.size(), 200u * 1024);
    const std::size_t limit = 64 * 1024;
    Inflater in(DeflateParams{});
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(in.inflate(bomb, true, out, limit), close_code::message_too_big);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);  // 100 MB would take longer
    EXPECT_LE(out.size(), limit + 1);
    EXPECT_LE(out.capacity(), 4 * limit);
    // unusable afterwards, its state gone
    EXPECT_EQ(in.inflate("\x00"sv, true, out, limit), close_code::message_too_big);
    EXPECT_EQ(in.memory(), 0u);
}

TEST(DeflateInflate, BombInPiecesCountsWholeMessage) {
    const std::string bomb = compressed_zeros(10 << 20);
    const std::size_t limit = 1 << 20;
    Inflater in(DeflateParams{});
    std::string out;
    std::uint16_t rc = 0;
    for (std::size_t pos = 0; pos < bomb.size() && !rc; pos += 100)
        rc = in.inflate(std::string_view(bomb).substr(pos, 100), false, out, limit);
    EXPECT_EQ(rc, close_code::message_too_big);
    EXPECT_LE(out.size(), limit + 1);
}

TEST(DeflateInflate, ExactlyAtLimitFits) {
    DeflateParams p;
    Deflater d(p, DeflateOptions{});
    const std::string msg = random_text(10000, 5);
    std::string z, out;
    d.compress(msg, z);
    Inflater in(p);
    EXPECT_EQ(in.inflate(z, true, out, msg.size()), 0);
    EXPECT_EQ(out, msg);
    Inflater small(p);
    out.clear();
    EXPECT_EQ(small.inflate(z, true, out, msg.size() - 1), close_code::message_too_big);
}

TEST(DeflateInflate, CorruptInput) {
    const std::string_view bad[] = {
        "\xff\xff\xff\xff"sv,          // reserved block type 11
        "\xf2\x48\xcd\xc9\xc9"sv,      // cut inside a block
        "\x00\x05\x00\xfa\xfe"sv,      // stored block with a wrong NLEN
        "\xf2\x00\x11\x00\x00"sv,      // a reference before the start of the window
        "\x00\x02\x00\xfd\xff\x41"sv,  // a stored block missing a byte
    };
    for (const auto z : bad) {
        SCOPED_TRACE(::testing::PrintToString(std::string(z)));
        Inflater in(DeflateParams{});
        std::string out;
        EXPECT_EQ(inflate_all(in, z, out), close_code::invalid_payload);
        EXPECT_EQ(in.memory(), 0u);
        // stays unusable, even for a good message
        EXPECT_EQ(inflate_all(in, "\xf2\x48\xcd\xc9\xc9\x07\x00"sv, out),
                  close_code::invalid_payload);
    }
}

TEST(DeflateMemory, HeldOnlyWhileNeeded) {
    DeflateParams keep;
    keep.server_no_context_takeover = false;
    Deflater d(keep, DeflateOptions{});
    EXPECT_EQ(d.memory(), 0u);
    std::string z;
    d.compress(random_text(5000, 1), z);
    const std::size_t deflate15 = d.memory();
    EXPECT_GT(deflate15, 200u * 1024);  // window 2x32K, prev 64K, hash 64K, pending 64K
    EXPECT_LT(deflate15, 300u * 1024);

    Inflater in(keep);
    EXPECT_EQ(in.memory(), 0u);
    std::string out;
    ASSERT_EQ(inflate_all(in, z, out), 0);
    const std::size_t inflate15 = in.memory();
    EXPECT_GT(inflate15, 32u * 1024);  // its state and the 32K window
    EXPECT_LT(inflate15, 48u * 1024);

    DeflateOptions small;
    small.mem_level = 1;
    DeflateParams p9 = keep;
    p9.server_max_window_bits = 9;
    p9.client_max_window_bits = 9;
    Deflater d9(p9, small);
    z.clear();
    d9.compress(random_text(5000, 1), z);
    EXPECT_LT(d9.memory(), 16u * 1024);
    Inflater in9(p9);
    ASSERT_EQ(inflate_all(in9, z, out), 0);
    EXPECT_LT(in9.memory(), 10u * 1024);
    std::printf("memory: deflate w15/m8 %zu, w9/m1 %zu; inflate w15 %zu, w9 %zu\n", deflate15,
                d9.memory(), inflate15, in9.memory());
}

// server_no_context_takeover: one compression is read by every recipient, in any order.
TEST(DeflateMemory, SharedDeflaterBroadcasts) {
    DeflateParams p;
    p.client_no_context_takeover = false;
    Deflater shared(p, DeflateOptions{});
    Inflater a(p), b(p);
    for (int m = 0; m < 3; ++m) {
        const std::string msg = random_text(3000, unsigned(m % 2));
        std::string z, out;
        shared.compress(msg, z);
        ASSERT_EQ(inflate_all(m % 2 ? a : b, z, out), 0);
        EXPECT_EQ(out, msg);
        ASSERT_EQ(inflate_all(m % 2 ? b : a, z, out), 0);
        EXPECT_EQ(out, msg);
    }
}

}  // namespace
}  // namespace vela::ws
