// HPACK (RFC 7541): the examples of Appendix C byte for byte, every COMPRESSION_ERROR case,
// and random fields checked against nghttp2's inflater.

#include "vela/http/hpack.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace vela::hpack;

struct Got {
    std::string name;
    std::string value;
    bool never_indexed = false;
    bool operator==(const Got&) const = default;
};

std::string unhex(std::string_view hex) {
    std::string out;
    int hi = -1;
    for (char c : hex) {
        int v;
        if (c >= '0' && c <= '9') {
            v = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            v = c - 'a' + 10;
        } else {
            continue;  // spaces between groups, as the RFC prints them
        }
        if (hi < 0) {
            hi = v;
        } else {
            out.push_back(static_cast<char>(hi * 16 + v));
            hi = -1;
        }
    }
    return out;
}

std::string hex(std::string_view bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out.push_back(kDigits[c >> 4]);
        out.push_back(kDigits[c & 15]);
    }
    return out;
}

Error decode(Decoder& d, std::string_view block, std::vector<Got>& got) {
    got.clear();
    return d.decode(block, [&](const DecodedField& f) {
        got.push_back({std::string(f.name), std::string(f.value), f.never_indexed});
    });
}

std::vector<Got> table_of(const DynamicTable& t) {
    std::vector<Got> out;
    for (std::size_t i = 0; i < t.count(); ++i) {
        out.push_back({std::string(t.entry(i).name), std::string(t.entry(i).value), false});
    }
    return out;
}

// nghttp2's inflater, the oracle.
class Oracle {
  public:
    Oracle() { nghttp2_hd_inflate_new(&p_); }
    ~Oracle() { nghttp2_hd_inflate_del(p_); }
    Oracle(const Oracle&) = delete;
    Oracle& operator=(const Oracle&) = delete;

    bool inflate(std::string_view block, std::vector<Got>& got) {
        got.clear();
        const auto* in = reinterpret_cast<const std::uint8_t*>(block.data());
        std::size_t left = block.size();
        for (;;) {
            nghttp2_nv nv;
            int flags = 0;
            const auto rv = nghttp2_hd_inflate_hd2(p_, &nv, &flags, in, left, 1);
            if (rv < 0) return false;
            in += rv;
            left -= static_cast<std::size_t>(rv);
            if (flags & NGHTTP2_HD_INFLATE_EMIT) {
                got.push_back({std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
                               std::string(reinterpret_cast<char*>(nv.value), nv.valuelen),
                               (nv.flags & NGHTTP2_NV_FLAG_NO_INDEX) != 0});
            }
            if (flags & NGHTTP2_HD_INFLATE_FINAL) {
                nghttp2_hd_inflate_end_headers(p_);
                return true;
            }
            if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) return false;
        }
    }
    std::size_t table_size() const { return nghttp2_hd_inflate_get_dynamic_table_size(p_); }
    bool same_table_size(const DynamicTable& t) const { return table_size() == t.size(); }
    nghttp2_hd_inflater* raw() { return p_; }

  private:
    nghttp2_hd_inflater* p_ = nullptr;
};

// ---- C.1 integers ----

TEST(HpackInteger, AppendixC1) {
    std::string out;
    encode_integer(out, 0, 5, 10);
    EXPECT_EQ(hex(out), "0a");  // C.1.1
    out.clear();
    encode_integer(out, 0, 5, 1337);
    EXPECT_EQ(hex(out), "1f9a0a");  // C.1.2
    out.clear();
    encode_integer(out, 0, 8, 42);
    EXPECT_EQ(hex(out), "2a");  // C.1.3
}

TEST(HpackInteger, RoundTripsEdges) {
    for (unsigned prefix = 1; prefix <= 8; ++prefix) {
        const std::uint32_t mask = (1u << prefix) - 1;
        for (std::uint32_t v : {0u, 1u, mask - 1, mask, mask + 1, mask + 127, mask + 128, 16383u,
                                65535u, 1u << 28, UINT32_MAX - 1, UINT32_MAX}) {
            std::string out;
            encode_integer(out, 0, prefix, v);
            const auto* p = reinterpret_cast<const std::uint8_t*>(out.data());
            std::uint32_t got = 0;
            ASSERT_EQ(decode_integer(p, p + out.size(), prefix, got), Error::none) << v;
            EXPECT_EQ(got, v);
            EXPECT_EQ(p, reinterpret_cast<const std::uint8_t*>(out.data()) + out.size());
        }
    }
}

TEST(HpackInteger, Refusals) {
    struct Case {
        const char* hex;
        Error error;
    };
    const Case cases[] = {
        {"", Error::truncated},
        {"1f", Error::truncated},                     // prefix full, no continuation
        {"1f80", Error::truncated},                   // continuation bit, then nothing
        {"1fe1ffffff0f", Error::integer_overflow},    // 2^32: 31 + 0xffffffe1
        {"1f8080808080", Error::integer_overflow},    // a sixth continuation byte
        {"1f808080808000", Error::integer_overflow},  // zeros do not make it shorter
        {"1f8080808000", Error::none},                // five bytes: still accepted
        {"1fe0ffffff0f", Error::none},                // 2^32-1
    };
    for (const Case& c : cases) {
        const std::string in = unhex(c.hex);
        const auto* p = reinterpret_cast<const std::uint8_t*>(in.data());
        std::uint32_t v = 0;
        EXPECT_EQ(decode_integer(p, p + in.size(), 5, v), c.error) << c.hex;
    }
    std::string max;
    encode_integer(max, 0, 5, UINT32_MAX);
    EXPECT_EQ(hex(max), "1fe0ffffff0f");
}

// ---- Huffman ----

TEST(HpackHuffman, RoundTripsEveryByte) {
    std::string all;
    for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
    for (std::string s : {all, std::string("www.example.com"), std::string(), std::string("a")}) {
        std::string coded;
        huffman_encode(s, coded);
        EXPECT_EQ(coded.size(), huffman_size(s));
        std::string back;
        ASSERT_EQ(huffman_decode(coded, back), Error::none);
        EXPECT_EQ(back, s);
    }
    std::string coded;
    huffman_encode("www.example.com", coded);
    EXPECT_EQ(hex(coded), "f1e3c2e5f23a6ba0ab90f4ff");  // C.4.1
}

// Every symbol's code, each alone and all in one string, as nghttp2's decoder reads it; and
// codes printed in Appendix B.
TEST(HpackHuffman, EverySymbolAsTheOracleDecodesIt) {
    auto literal = [](std::string_view value) {
        std::string coded;
        huffman_encode(value, coded);
        std::string block("\x00\x01x", 3);  // literal without indexing, new name "x"
        EXPECT_LT(coded.size(), 127u);
        block.push_back(static_cast<char>(0x80 | coded.size()));  // H, length
        return block + coded;
    };
    Oracle oracle;
    std::vector<Got> got;
    std::string all;
    for (int i = 0; i < 256; ++i) {
        const std::string one(1, static_cast<char>(i));
        all += one;
        ASSERT_TRUE(oracle.inflate(literal(one), got)) << i;
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0].value, one) << i;
    }
    for (std::size_t at = 0; at < all.size(); at += 40) {
        ASSERT_TRUE(oracle.inflate(literal(all.substr(at, 40)), got)) << at;
        EXPECT_EQ(got[0].value, all.substr(at, 40));
    }
    // From Appendix B: (0) 1ff8 [13], (1) 7fffd8 [23], (9) ffffea [24], (10) 3ffffffc [30],
    // (22) 3ffffffe [30], ' ' 14 [6], '0' 0 [5], 'a' 3 [5], 'z' 7b [7], (255) 3ffffee [26].
    struct Printed {
        int sym;
        std::uint32_t code;
        int length;
    };
    const Printed printed[] = {{0, 0x1ff8, 13},      {1, 0x7fffd8, 23},    {9, 0xffffea, 24},
                               {10, 0x3ffffffc, 30}, {22, 0x3ffffffe, 30}, {' ', 0x14, 6},
                               {'0', 0x0, 5},        {'a', 0x3, 5},        {'z', 0x7b, 7},
                               {255, 0x3ffffee, 26}};
    for (const Printed& p : printed) {
        const std::string one(1, static_cast<char>(p.sym));
        EXPECT_EQ(huffman_size(one), static_cast<std::size_t>((p.length + 7) / 8)) << p.sym;
        std::string c;
        huffman_encode(one, c);
        std::uint64_t bits = 0;
        for (unsigned char b : c) bits = (bits << 8) | b;
        const int pad = static_cast<int>(c.size()) * 8 - p.length;
        EXPECT_EQ(bits >> pad, p.code) << p.sym;
        EXPECT_EQ(bits & ((std::uint64_t{1} << pad) - 1), (std::uint64_t{1} << pad) - 1) << p.sym;
    }
}

TEST(HpackHuffman, PaddingAndEos) {
    struct Case {
        const char* hex;
        Error error;
        const char* out;
    };
    const Case cases[] = {
        {"1f", Error::none, "a"},              // 'a' (00011), then 111 of EOS
        {"07", Error::none, "0"},              // '0' (00000), then 111
        {"ffffffff", Error::huffman_eos, ""},  // 30 ones: EOS
        {"fffffffc", Error::huffman_eos, ""},  // EOS, then two bits
        {"ff", Error::huffman_padding, ""},    // 8 bits of padding
        {"18", Error::huffman_padding, ""},    // 'a', then 000: not the bits of EOS
        {"1fff", Error::huffman_padding, ""},  // 'a', then 11 ones
    };
    for (const Case& c : cases) {
        std::string out;
        EXPECT_EQ(huffman_decode(unhex(c.hex), out), c.error) << c.hex;
        if (c.error == Error::none) {
            EXPECT_EQ(out, c.out);
        }
    }
}

// ---- Static table ----

TEST(HpackStatic, FindsEveryEntry) {
    for (std::size_t i = 1; i <= static_table_size; ++i) {
        const Field& f = static_entry(i);
        std::size_t name_index = 0;
        EXPECT_EQ(static_find(f.name, f.value, name_index), i) << f.name;
        std::size_t first = i;
        while (first > 1 && static_entry(first - 1).name == f.name) --first;
        EXPECT_EQ(name_index, first) << f.name;
    }
    std::size_t name_index = 7;
    EXPECT_EQ(static_find(":status", "201", name_index), 0u);
    EXPECT_EQ(name_index, 8u);
    EXPECT_EQ(static_find("x-unknown", "", name_index), 0u);
    EXPECT_EQ(name_index, 0u);
    EXPECT_EQ(static_find("", "", name_index), 0u);
    EXPECT_EQ(name_index, 0u);
}

// ---- Appendix C.2: one field, a fresh decoder each ----

TEST(HpackDecoder, AppendixC2) {
    struct Case {
        const char* hex;
        Got field;
        std::size_t table_size;
    };
    const Case cases[] = {
        {"400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
         {"custom-key", "custom-header", false},
         55},
        {"040c 2f73 616d 706c 652f 7061 7468", {":path", "/sample/path", false}, 0},
        {"1008 7061 7373 776f 7264 0673 6563 7265 74", {"password", "secret", true}, 0},
        {"82", {":method", "GET", false}, 0},
    };
    for (const Case& c : cases) {
        Decoder d;
        std::vector<Got> got;
        ASSERT_EQ(decode(d, unhex(c.hex), got), Error::none) << c.hex;
        EXPECT_EQ(got, std::vector<Got>{c.field});
        EXPECT_EQ(d.table().size(), c.table_size);
        Oracle o;
        std::vector<Got> want;
        ASSERT_TRUE(o.inflate(unhex(c.hex), want));
        EXPECT_EQ(got, want);
    }
}

// ---- Appendix C.3 to C.6: three blocks through one decoder ----

struct Block {
    const char* hex;
    std::vector<Got> fields;
    std::vector<Got> table;  // newest first
    std::size_t table_size;
};

const std::vector<Got> kRequest1 = {
    {":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":authority", "www.example.com"}};
const std::vector<Got> kRequest2 = {{":method", "GET"},
                                    {":scheme", "http"},
                                    {":path", "/"},
                                    {":authority", "www.example.com"},
                                    {"cache-control", "no-cache"}};
const std::vector<Got> kRequest3 = {{":method", "GET"},
                                    {":scheme", "https"},
                                    {":path", "/index.html"},
                                    {":authority", "www.example.com"},
                                    {"custom-key", "custom-value"}};
const std::vector<Got> kRequestTable1 = {{":authority", "www.example.com"}};
const std::vector<Got> kRequestTable2 = {{"cache-control", "no-cache"},
                                         {":authority", "www.example.com"}};
const std::vector<Got> kRequestTable3 = {{"custom-key", "custom-value"},
                                         {"cache-control", "no-cache"},
                                         {":authority", "www.example.com"}};

const std::vector<Block> kC3 = {
    {"8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", kRequest1, kRequestTable1, 57},
    {"8286 84be 5808 6e6f 2d63 6163 6865", kRequest2, kRequestTable2, 110},
    {"8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65", kRequest3,
     kRequestTable3, 164},
};
const std::vector<Block> kC4 = {
    {"8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", kRequest1, kRequestTable1, 57},
    {"8286 84be 5886 a8eb 1064 9cbf", kRequest2, kRequestTable2, 110},
    {"8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf", kRequest3, kRequestTable3, 164},
};

const char kDate1[] = "Mon, 21 Oct 2013 20:13:21 GMT";
const char kDate2[] = "Mon, 21 Oct 2013 20:13:22 GMT";
const char kCookie[] = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const std::vector<Got> kResponse1 = {{":status", "302"},
                                     {"cache-control", "private"},
                                     {"date", kDate1},
                                     {"location", "https://www.example.com"}};
const std::vector<Got> kResponse2 = {{":status", "307"},
                                     {"cache-control", "private"},
                                     {"date", kDate1},
                                     {"location", "https://www.example.com"}};
const std::vector<Got> kResponse3 = {{":status", "200"},
                                     {"cache-control", "private"},
                                     {"date", kDate2},
                                     {"location", "https://www.example.com"},
                                     {"content-encoding", "gzip"},
                                     {"set-cookie", kCookie}};
const std::vector<Got> kResponseTable1 = {{"location", "https://www.example.com"},
                                          {"date", kDate1},
                                          {"cache-control", "private"},
                                          {":status", "302"}};
const std::vector<Got> kResponseTable2 = {{":status", "307"},
                                          {"location", "https://www.example.com"},
                                          {"date", kDate1},
                                          {"cache-control", "private"}};
const std::vector<Got> kResponseTable3 = {
    {"set-cookie", kCookie}, {"content-encoding", "gzip"}, {"date", kDate2}};

const std::vector<Block> kC5 = {
    {"4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a "
     "3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
     kResponse1, kResponseTable1, 222},
    {"4803 3330 37c1 c0bf", kResponse2, kResponseTable2, 222},
    {"88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 "
     "677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 "
     "553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
     kResponse3, kResponseTable3, 215},
};
const std::vector<Block> kC6 = {
    {"4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e "
     "919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
     kResponse1, kResponseTable1, 222},
    {"4883 640e ffc1 c0bf", kResponse2, kResponseTable2, 222},
    {"88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 "
     "821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed "
     "4ee5 b106 3d50 07",
     kResponse3, kResponseTable3, 215},
};

void check_sequence(const std::vector<Block>& blocks, std::uint32_t table_size) {
    Decoder d(DecoderLimits{.max_table_size = table_size});
    Oracle o;
    bool first = true;
    for (const Block& b : blocks) {
        const std::string bytes = unhex(b.hex);
        std::vector<Got> got;
        ASSERT_EQ(decode(d, bytes, got), Error::none) << b.hex;
        EXPECT_EQ(got, b.fields) << b.hex;
        EXPECT_EQ(table_of(d.table()), b.table) << b.hex;
        EXPECT_EQ(d.table().size(), b.table_size) << b.hex;
        // nghttp2 starts at 4096: the first block tells it the examples' size.
        std::string oracle_bytes = bytes;
        if (first && table_size != default_table_size) {
            std::string update;
            encode_integer(update, 0x20, 5, table_size);
            oracle_bytes = update + bytes;
        }
        first = false;
        std::vector<Got> want;
        ASSERT_TRUE(o.inflate(oracle_bytes, want)) << b.hex;
        EXPECT_EQ(got, want);
        EXPECT_EQ(o.table_size(), b.table_size);
    }
}

TEST(HpackDecoder, AppendixC3RequestsWithoutHuffman) { check_sequence(kC3, 4096); }
TEST(HpackDecoder, AppendixC4RequestsWithHuffman) { check_sequence(kC4, 4096); }
TEST(HpackDecoder, AppendixC5ResponsesWithoutHuffman) { check_sequence(kC5, 256); }
TEST(HpackDecoder, AppendixC6ResponsesWithHuffman) { check_sequence(kC6, 256); }

std::vector<EncoderField> fields_of(const std::vector<Got>& in) {
    std::vector<EncoderField> out;
    for (const Got& g : in) out.push_back({g.name, g.value});
    return out;
}

// The encoder's choices for these requests are the ones the examples show.
TEST(HpackEncoder, ReproducesAppendixC4) {
    Encoder e;
    for (const Block& b : kC4) {
        std::string out;
        e.encode(fields_of(b.fields), out);
        EXPECT_EQ(hex(out), hex(unhex(b.hex)));
        EXPECT_EQ(table_of(e.table()), b.table);
    }
}

// Likewise for the first response. Then two differences by policy: "307" stays raw (its
// Huffman coding is no shorter), and set-cookie is never indexed.
TEST(HpackEncoder, ReproducesAppendixC6AndRoundTrips) {
    Encoder e(256);
    Decoder d(DecoderLimits{.max_table_size = 256});
    Oracle o;
    for (std::size_t i = 0; i < kC6.size(); ++i) {
        const Block& b = kC6[i];
        std::string out;
        e.encode(fields_of(b.fields), out);
        if (i == 0) {
            // 256 is below the peer's initial 4096: the first block announces it.
            EXPECT_EQ(hex(out), "3fe101" + hex(unhex(b.hex)));
        } else if (i == 1) {
            EXPECT_EQ(hex(out), "4803333037c1c0bf");
        }
        std::vector<Got> got;
        ASSERT_EQ(decode(d, out, got), Error::none);
        std::vector<Got> want = b.fields;
        if (i == 2) want.back().never_indexed = true;
        EXPECT_EQ(got, want);
        std::vector<Got> oracle;
        ASSERT_TRUE(o.inflate(out, oracle));
        EXPECT_EQ(oracle, want);
        EXPECT_EQ(table_of(d.table()), table_of(e.table()));
    }
}

TEST(HpackEncoder, NeverIndexesCredentials) {
    Encoder e;
    const EncoderField fields[] = {
        {"authorization", "Bearer abc"},
        {"proxy-authorization", "Basic xyz"},
        {"set-cookie", "id=1; HttpOnly; a long enough value to be indexed otherwise"},
        {"cookie", "short=1"},
        {"cookie", "long=0123456789012345678901234567890"},
        {"x-secret", "marked", Indexing::never},
        {":status", "200"},
    };
    std::string out;
    e.encode(fields, out);
    Decoder d;
    std::vector<Got> got;
    ASSERT_EQ(decode(d, out, got), Error::none);
    ASSERT_EQ(got.size(), 7u);
    const bool never[] = {true, true, true, true, false, true, false};
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].never_indexed, never[i]) << got[i].name;
        EXPECT_EQ(got[i].value, fields[i].value);
    }
    // Only the long cookie went into the table.
    EXPECT_EQ(table_of(e.table()),
              (std::vector<Got>{{"cookie", "long=0123456789012345678901234567890"}}));
    EXPECT_EQ(table_of(d.table()), table_of(e.table()));
}

TEST(HpackEncoder, IndexesRepeatsNotPerMessageFields) {
    Encoder e;
    const EncoderField fields[] = {
        {":status", "200"}, {"content-type", "application/json"},
        {"server", "vela"}, {"content-length", "1234"},
        {"date", kDate1},
    };
    std::string first, second;
    e.encode(fields, first);
    e.encode(fields, second);
    // :status 200 is static; content-type, server and date come from the dynamic table the
    // second time, a byte each; content-length is a literal again (name 28, not indexed).
    EXPECT_EQ(hex(second.substr(0, 5)), "88c0bf0f0d");
    EXPECT_EQ(hex(second.substr(second.size() - 1)), "be");
    EXPECT_EQ(second.size(), 10u);  // "1234" Huffman-coded: 83 and three bytes
    EXPECT_EQ(e.table().count(), 3u);
}

TEST(HpackEncoder, SignalsTableSizeChanges) {
    Encoder e;
    std::string out;
    const EncoderField f[] = {{"server", "vela"}};
    e.encode(f, out);
    EXPECT_EQ(e.table().count(), 1u);
    // Lowered to 0 then raised to 1000 between blocks: both are signalled (4.2).
    e.set_peer_max_table_size(0);
    e.set_peer_max_table_size(1000);
    out.clear();
    e.encode(f, out);
    EXPECT_EQ(hex(out.substr(0, 4)), "203fc907");
    Decoder d;
    Oracle o;
    std::string first;
    Encoder e2;
    e2.encode(f, first);
    std::vector<Got> got;
    ASSERT_EQ(decode(d, first, got), Error::none);
    ASSERT_EQ(decode(d, out, got), Error::none);
    EXPECT_EQ(d.table().max_size(), 1000u);
    EXPECT_EQ(got, (std::vector<Got>{{"server", "vela"}}));
}

// ---- Decoder refusals ----

TEST(HpackDecoder, Refusals) {
    struct Case {
        const char* name;
        std::string block;
        Error error;
    };
    const std::string big(100, 'x');
    std::string list_bomb;  // one 90-byte entry, then indexed repeats of it
    list_bomb += unhex("40 01 61");
    encode_integer(list_bomb, 0, 7, 90);
    list_bomb += std::string(90, 'v');
    for (int i = 0; i < 20; ++i) list_bomb += unhex("be");
    const Case cases[] = {
        {"index 0", unhex("80"), Error::index_zero},
        {"index past the static table", unhex("be"), Error::index_out_of_range},
        {"name index past the tables", unhex("7f00 0161"), Error::index_out_of_range},
        {"size update over the setting", unhex("3fe21f"), Error::table_size_too_large},
        {"size update after a field", unhex("82 20"), Error::table_size_update_late},
        {"Huffman EOS", unhex("4085 ffffffffff 0161"), Error::huffman_eos},
        {"Huffman padding of 8 bits", unhex("0081ff 0161"), Error::huffman_padding},
        {"Huffman padding of zeros", unhex("0081 18 0161"), Error::huffman_padding},
        {"string past the block", unhex("0005 616263"), Error::truncated},
        {"value missing", unhex("0001 61"), Error::truncated},
        {"integer overflow", unhex("ff 81ffffff0f"), Error::integer_overflow},
        {"too many continuation bytes", unhex("ff 808080808001"), Error::integer_overflow},
        {"index truncated", unhex("ff"), Error::truncated},
        {"string too long", unhex("00 7f ff ff 03") + std::string(65536 + 200, 'a'),
         Error::string_too_long},
        {"header list too large mid-block", list_bomb, Error::header_list_too_large},
    };
    for (const Case& c : cases) {
        Decoder d(DecoderLimits{.max_header_list_size = 1000});
        std::vector<Got> got;
        EXPECT_EQ(decode(d, c.block, got), c.error) << c.name;
        EXPECT_FALSE(error_message(c.error).empty());
        // Refused for good: the table is out of step with the peer's. A list too large is a
        // stream error: the block was read to its end and the next one decodes.
        EXPECT_EQ(decode(d, unhex("82"), got),
                  c.error == Error::header_list_too_large ? Error::none : c.error)
            << c.name;
        if (c.error != Error::header_list_too_large && c.error != Error::string_too_long) {
            Oracle o;
            std::vector<Got> want;
            EXPECT_FALSE(o.inflate(c.block, want)) << c.name;
        }
    }
    // The bomb stopped as soon as the list passed 1000 bytes: 123 per field, 8 fields.
    Decoder d(DecoderLimits{.max_header_list_size = 1000});
    std::vector<Got> got;
    EXPECT_EQ(decode(d, list_bomb, got), Error::header_list_too_large);
    EXPECT_EQ(got.size(), 8u);
    // The whole block's table changes were applied: the next block may refer to them.
    EXPECT_EQ(d.table().count(), 1u);
    EXPECT_EQ(decode(d, unhex("be 82"), got), Error::none);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].value, std::string(90, 'v'));
    // A list bomb whose tail is broken is a compression error all the same.
    Decoder broken(DecoderLimits{.max_header_list_size = 1000});
    EXPECT_EQ(decode(broken, list_bomb + unhex("80"), got), Error::index_zero);
    EXPECT_EQ(decode(broken, unhex("82"), got), Error::index_zero);
}

TEST(HpackDecoder, SizeUpdates) {
    std::vector<Got> got;
    {
        // Several at the start are fine; the table shrinks and regrows.
        Decoder d;
        ASSERT_EQ(decode(d, unhex("4001 61 0162"), got), Error::none);
        ASSERT_EQ(decode(d, unhex("20 3fe11f be"), got), Error::index_out_of_range);
    }
    {
        Decoder d;
        ASSERT_EQ(decode(d, unhex("4001 61 0162"), got), Error::none);
        ASSERT_EQ(decode(d, unhex("20 3f61 82"), got), Error::none);
        EXPECT_EQ(d.table().count(), 0u);
        EXPECT_EQ(d.table().max_size(), 128u);
    }
    {
        // We lowered our setting: the next block must confirm it.
        Decoder d;
        d.set_max_table_size(100);
        EXPECT_EQ(decode(d, unhex("82"), got), Error::table_size_update_missing);
    }
    {
        Decoder d;
        d.set_max_table_size(100);
        EXPECT_EQ(decode(d, unhex("3f45 82"), got), Error::none);
        EXPECT_EQ(decode(d, unhex("3f46 82"), got), Error::table_size_too_large);
    }
    {
        // A size update may be a whole block.
        Decoder d;
        EXPECT_EQ(decode(d, unhex("20"), got), Error::none);
        EXPECT_TRUE(got.empty());
    }
}

TEST(HpackDecoder, EntryLargerThanTableEmptiesIt) {
    Decoder d(DecoderLimits{.max_table_size = 64});
    std::vector<Got> got;
    ASSERT_EQ(decode(d, unhex("4001 61 0162"), got), Error::none);
    EXPECT_EQ(d.table().count(), 1u);
    std::string block = unhex("4001 63");
    encode_integer(block, 0, 7, 40);
    block += std::string(40, 'z');
    ASSERT_EQ(decode(d, block, got), Error::none);
    EXPECT_EQ(d.table().count(), 0u);
    EXPECT_EQ(got[0].value, std::string(40, 'z'));
}

TEST(HpackDecoder, NameFromAnEntryTheInsertEvicts) {
    // Table of 70: "a: b" (34), then a new entry named after it that needs the room.
    Decoder d(DecoderLimits{.max_table_size = 70});
    std::vector<Got> got;
    ASSERT_EQ(decode(d, unhex("4001 61 0162"), got), Error::none);
    std::string block = unhex("7e");  // indexed name 62, incremental indexing
    encode_integer(block, 0, 7, 37);
    block += std::string(37, 'q');
    ASSERT_EQ(decode(d, block, got), Error::none);
    EXPECT_EQ(got, (std::vector<Got>{{"a", std::string(37, 'q')}}));
    EXPECT_EQ(table_of(d.table()), got);
}

// ---- Random fields through our encoder, our decoder and nghttp2's ----

TEST(HpackProperty, RandomFieldsRoundTrip) {
    std::mt19937 rng(7541);
    const char* names[] = {":status",    "content-type", "server",        "date",  "cookie",
                           "set-cookie", "x-custom",     "authorization", ":path", "accept"};
    Encoder e(1024);
    Decoder d(DecoderLimits{.max_table_size = 4096});
    Oracle o;
    for (int block = 0; block < 500; ++block) {
        std::vector<std::string> storage;
        std::vector<Got> want;
        const int n = static_cast<int>(rng() % 12);
        for (int i = 0; i < n; ++i) {
            std::string name = (rng() % 4 == 0) ? std::string("x-") + std::to_string(rng() % 50)
                                                : names[rng() % std::size(names)];
            std::string value;
            const int len = static_cast<int>(rng() % 40);
            const bool binary = rng() % 5 == 0;
            for (int k = 0; k < len; ++k) {
                value.push_back(binary ? static_cast<char>(rng())
                                       : static_cast<char>('a' + rng() % 4));
            }
            if (rng() % 3 == 0) value = std::to_string(rng() % 5);  // repeats
            want.push_back({name, value, false});
        }
        std::vector<EncoderField> fields;
        for (const Got& g : want) {
            const bool mark = rng() % 10 == 0;
            fields.push_back({g.name, g.value, mark ? Indexing::never : Indexing::automatic});
        }
        if (block % 50 == 49) e.set_peer_max_table_size(static_cast<std::uint32_t>(rng() % 2000));
        std::string out;
        e.encode(fields, out);
        std::vector<Got> got;
        ASSERT_EQ(decode(d, out, got), Error::none) << block;
        std::vector<Got> oracle;
        ASSERT_TRUE(o.inflate(out, oracle)) << block;
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            EXPECT_EQ(got[i].name, want[i].name);
            EXPECT_EQ(got[i].value, want[i].value);
            if (fields[i].indexing == Indexing::never) {
                EXPECT_TRUE(got[i].never_indexed);
            }
        }
        EXPECT_EQ(got, oracle);
        EXPECT_EQ(table_of(d.table()), table_of(e.table()));
        EXPECT_EQ(o.table_size(), d.table().size());
    }
}

}  // namespace

namespace {

// ---- The server's fast paths and RFC 9113 8.2.1's characters ----

TEST(HpackEncoder, KnownFieldsStatusAndUnindexed) {
    Encoder e;
    Oracle o;
    std::vector<Got> got;
    std::string block;
    e.begin_block(block);
    e.add_status(200, block);
    e.add_known(Known::server, "vela", block);
    e.add_known(Known::date, "Sat, 05 Dec 2026 18:00:00 GMT", block);
    e.add_known(Known::content_type, "text/plain", block);
    e.add_unindexed(28, "13", block);
    e.add_status(201, block);
    ASSERT_TRUE(o.inflate(block, got));
    const std::vector<Got> want{{":status", "200", false},
                                {"server", "vela", false},
                                {"date", "Sat, 05 Dec 2026 18:00:00 GMT", false},
                                {"content-type", "text/plain", false},
                                {"content-length", "13", false},
                                {":status", "201", false}};
    EXPECT_EQ(got, want);
    EXPECT_EQ(static_cast<unsigned char>(block[0]), 0x88);
    // server, date, content-type and :status 201; not content-length.
    EXPECT_EQ(e.table().count(), 4u);

    // The next response refers to the three entries: one byte each.
    block.clear();
    e.begin_block(block);
    e.add_known(Known::server, "vela", block);
    e.add_known(Known::date, "Sat, 05 Dec 2026 18:00:00 GMT", block);
    e.add_known(Known::content_type, "text/plain", block);
    EXPECT_EQ(block.size(), 3u);
    ASSERT_TRUE(o.inflate(block, got));
    EXPECT_EQ(got[1].value, "Sat, 05 Dec 2026 18:00:00 GMT");

    // A new date is added again; the old entry is not referred to.
    block.clear();
    e.begin_block(block);
    e.add_known(Known::date, "Sat, 05 Dec 2026 18:00:01 GMT", block);
    e.add_known(Known::server, "vela", block);
    ASSERT_TRUE(o.inflate(block, got));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].value, "Sat, 05 Dec 2026 18:00:01 GMT");
    EXPECT_EQ(got[1].value, "vela");
    EXPECT_TRUE(o.same_table_size(e.table()));

    // Entries evicted by a small table are added again.
    Encoder small(100);
    Oracle o2;
    ASSERT_EQ(nghttp2_hd_inflate_change_table_size(o2.raw(), 100), 0);
    for (int i = 0; i < 5; ++i) {
        block.clear();
        small.begin_block(block);
        small.add_known(Known::server, "vela", block);
        small.add_known(Known::content_type, i % 2 ? "text/html; charset=utf-8" : "a/b", block);
        ASSERT_TRUE(o2.inflate(block, got)) << i;
        ASSERT_EQ(got.size(), 2u);
        EXPECT_EQ(got[0].value, "vela");
        EXPECT_EQ(got[1].value, i % 2 ? "text/html; charset=utf-8" : "a/b");
    }
}

TEST(HpackChars, ValidFieldRules) {
    EXPECT_TRUE(valid_field("content-type", "text/plain"));
    EXPECT_TRUE(valid_field(":path", "/a b"));
    EXPECT_TRUE(valid_field("x", ""));
    EXPECT_TRUE(valid_field("x", std::string(100, 'v') + "\x80\xff"));
    EXPECT_FALSE(valid_field("", "v"));
    EXPECT_FALSE(valid_field(":", "v"));
    EXPECT_FALSE(valid_field("Content-Type", "v"));
    EXPECT_FALSE(valid_field("a:b", "v"));
    EXPECT_FALSE(valid_field("a b", "v"));
    EXPECT_FALSE(valid_field("a\x7f", "v"));
    EXPECT_FALSE(valid_field("x", " v"));
    EXPECT_FALSE(valid_field("x", "v\t"));
    // NUL, CR and LF at every position of a long value (the 8-byte steps and the tail).
    for (char bad : {'\0', '\r', '\n'}) {
        for (std::size_t at = 1; at < 20; ++at) {
            std::string v(21, 'v');
            v[at] = bad;
            EXPECT_FALSE(valid_value(v)) << int(bad) << " at " << at;
        }
    }
}

TEST(HpackDecoder, MarksValidFields) {
    Decoder d;
    std::vector<bool> valid;
    auto run = [&](std::string_view block) {
        valid.clear();
        return d.decode(block, [&](const DecodedField& f) { valid.push_back(f.valid); });
    };
    // Static :method GET; a literal added to the table ("x-a: 1"); a literal not added.
    std::string block = unhex("82");
    block += unhex("40 03") + "x-a" + unhex("01") + "1";
    block += unhex("00 03") + "x-b" + unhex("01") + "2";
    block += unhex("40 03") + "X-C" + unhex("01") + "3";  // upper case: added, not valid
    ASSERT_EQ(run(block), Error::none);
    EXPECT_EQ(valid, (std::vector<bool>{true, true, false, false}));
    // References to the two dynamic entries: newest (X-C) first.
    ASSERT_EQ(run(unhex("be bf")), Error::none);
    EXPECT_EQ(valid, (std::vector<bool>{false, true}));
}

}  // namespace
