// Tests for src/ws/frame.cpp and src/ws/utf8.cpp (RFC 6455 sections 5, 7 and 8.1): every
// framing rule with exact bytes, the same events whatever the split of the input, the
// zero-copy single frame, the limits at and one past the edge, UTF-8 tables, the close
// payload and the writers read back by the reader.
#include "vela/ws/frame.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace vela::ws {
namespace {

using namespace std::literals;
using Kind = Event::Kind;

// What one event said, copied out of the reader's views.
struct Got {
    Kind kind = Kind::need_more;
    Opcode opcode = Opcode::text;
    std::string payload;
    std::uint16_t code = 0;
    bool operator==(const Got&) const = default;
};

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::need_more:
            return "need_more";
        case Kind::message:
            return "message";
        case Kind::ping:
            return "ping";
        case Kind::pong:
            return "pong";
        case Kind::close:
            return "close";
        case Kind::error:
            return "error";
    }
    return "?";
}

void PrintTo(const Got& g, std::ostream* os) {
    *os << kind_name(g.kind) << "(op " << int(g.opcode) << ", code " << g.code << ", "
        << testing::PrintToString(g.payload) << ")";
}

Got got(const Event& e) {
    Got g{e.kind, Opcode::text, std::string(e.payload), e.code};
    if (e.kind == Kind::message) g.opcode = e.opcode;
    return g;
}

Got message(Opcode op, std::string_view payload) {
    return {Kind::message, op, std::string(payload)};
}
Got text(std::string_view payload) { return message(Opcode::text, payload); }
Got binary(std::string_view payload) { return message(Opcode::binary, payload); }
Got ping(std::string_view payload) { return {Kind::ping, Opcode::text, std::string(payload)}; }
Got pong(std::string_view payload) { return {Kind::pong, Opcode::text, std::string(payload)}; }
Got closed(std::uint16_t code, std::string_view reason = {}) {
    return {Kind::close, Opcode::text, std::string(reason), code};
}
Got error(std::uint16_t code) { return {Kind::error, Opcode::text, {}, code}; }

// A message inflater for tests: "inflates" to its input (or to each byte twice), or fails.
class FakeInflater final : public MessageInflater {
  public:
    enum class Mode { identity, doubling, failing };
    explicit FakeInflater(Mode m = Mode::identity) : mode_(m) {}

    std::uint16_t inflate(std::string_view in, bool last, std::string& out,
                          std::size_t limit) override {
        calls.push_back({std::string(in), last, limit, out.empty()});
        if (mode_ == Mode::failing) return close_code::invalid_payload;
        // Like zlib, output is produced as it goes and the limit is checked along the way.
        const std::size_t each = mode_ == Mode::doubling ? 2 : 1;
        for (char c : in) {
            if (out.size() + each > limit) return close_code::message_too_big;
            out.append(each, c);
        }
        return 0;
    }

    struct Call {
        std::string in;
        bool last;
        std::size_t limit;
        bool out_empty;
    };
    std::vector<Call> calls;

  private:
    Mode mode_;
};

// Delivers `input` the way a connection does: arrived bytes are appended to a buffer,
// next() is called until it needs more, and the consumed bytes are dropped from the front.
// Bytes arrive up to each of `cuts` (increasing input lengths), then the rest. After a
// close or an error it checks that later calls answer need_more or the same error.
std::vector<Got> run(std::string_view input, const std::vector<std::size_t>& cuts,
                     const ReaderOptions& opt = {}, MessageInflater* inflater = nullptr) {
    FrameReader r(opt);
    r.set_inflater(inflater);
    std::string buf;
    std::vector<Got> events;
    std::size_t given = 0;
    std::vector<std::size_t> arrivals = cuts;
    arrivals.push_back(input.size());
    for (std::size_t upto : arrivals) {
        buf.append(input.substr(given, upto - given));
        given = upto;
        for (;;) {
            std::size_t consumed = ~std::size_t{0};
            const Event e = r.next(buf.data(), buf.size(), consumed);
            EXPECT_LE(consumed, buf.size());
            if (e.kind != Kind::need_more) events.push_back(got(e));
            buf.erase(0, consumed);
            if (e.kind == Kind::error || e.kind == Kind::close) {
                buf.append(input.substr(given));
                const Event again = r.next(buf.data(), buf.size(), consumed);
                EXPECT_EQ(consumed, 0u);
                if (e.kind == Kind::close) {
                    EXPECT_EQ(again.kind, Kind::need_more);
                } else {
                    EXPECT_EQ(got(again), events.back());
                }
                return events;
            }
            if (e.kind == Kind::need_more) break;
        }
    }
    return events;
}

std::vector<Got> run_whole(std::string_view input, const ReaderOptions& opt = {},
                           MessageInflater* inflater = nullptr) {
    return run(input, {}, opt, inflater);
}

// The input read whole, byte by byte and in every 2-piece split gives the same events.
std::vector<Got> run_every_split(std::string_view input, const ReaderOptions& opt = {},
                                 MessageInflater* inflater = nullptr) {
    const std::vector<Got> whole = run_whole(input, opt, inflater);
    std::vector<std::size_t> bytes;
    for (std::size_t k = 1; k < input.size(); ++k) bytes.push_back(k);
    EXPECT_EQ(run(input, bytes, opt, inflater), whole) << "byte by byte";
    for (std::size_t k = 1; k < input.size() && !testing::Test::HasFailure(); ++k)
        EXPECT_EQ(run(input, {k}, opt, inflater), whole) << "split at " << k;
    return whole;
}

constexpr std::uint32_t kMask = 0x37FA213D;  // the key of RFC 6455 5.7's examples

std::string frame(Opcode op, std::string_view payload, bool fin = true, bool rsv1 = false) {
    std::string out;
    append_client_frame(out, op, payload, kMask, fin, rsv1);
    return out;
}

ReaderOptions unmasked_allowed() {
    ReaderOptions o;
    o.require_mask = false;
    return o;
}

// --- RFC 6455 5.7 examples, exact bytes -------------------------------------------------

TEST(WsFrameReader, Rfc6455MaskedHello) {
    EXPECT_EQ(run_every_split("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58"sv),
              std::vector<Got>{text("Hello")});
}

TEST(WsFrameReader, Rfc6455UnmaskedFragmentsWhenMaskIsNotRequired) {
    EXPECT_EQ(run_every_split("\x01\x03Hel\x80\x02lo"sv, unmasked_allowed()),
              std::vector<Got>{text("Hello")});
}

TEST(WsFrameReader, Rfc6455PingAndMaskedPong) {
    EXPECT_EQ(run_every_split("\x89\x05Hello\x8a\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58"sv,
                              unmasked_allowed()),
              (std::vector<Got>{ping("Hello"), pong("Hello")}));
}

TEST(WsFrameReader, Rfc6455SixteenAndSixtyFourBitLengths) {
    const std::string k256(256, 'x');
    EXPECT_EQ(run_whole("\x82\x7E\x01\x00"s + k256, unmasked_allowed()),
              std::vector<Got>{binary(k256)});
    const std::string k64(65536, 'y');
    EXPECT_EQ(run_whole("\x82\x7F\x00\x00\x00\x00\x00\x01\x00\x00"s + k64, unmasked_allowed()),
              std::vector<Got>{binary(k64)});
}

// --- lengths, masking, zero copy --------------------------------------------------------

TEST(WsFrameReader, SevenSixteenAndSixtyFourBitLengthsAtTheirEdges) {
    for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 125u, 126u, 127u, 65535u, 65536u, 70001u}) {
        const std::string payload(n, 'a');
        std::string in = frame(Opcode::binary, payload);
        const std::size_t header = n < 126 ? 6 : n < 65536 ? 8 : 14;
        EXPECT_EQ(in.size(), header + n) << n;
        EXPECT_EQ(run_whole(in), std::vector<Got>{binary(payload)}) << n;
        // In pieces of 1000 bytes (the mask key lines up differently in each).
        std::vector<std::size_t> cuts;
        for (std::size_t k = 3; k < in.size(); k += 1000) cuts.push_back(k);
        EXPECT_EQ(run(in, cuts), std::vector<Got>{binary(payload)}) << n;
    }
}

TEST(WsFrameReader, UnmasksEveryOffsetOfTheKey) {
    std::string payload;
    for (int i = 0; i < 40; ++i) payload.push_back(static_cast<char>('A' + i));
    for (std::size_t n = 0; n <= payload.size(); ++n) {
        const std::string in = frame(Opcode::binary, payload.substr(0, n));
        EXPECT_EQ(run_every_split(in), std::vector<Got>{binary(payload.substr(0, n))}) << n;
    }
}

TEST(WsFrameReader, SingleFrameMessageIsAViewIntoTheCallersBuffer) {
    std::string buf = frame(Opcode::text, "zero copy, please");
    buf += frame(Opcode::binary, "second");
    ReaderOptions opt;
    FrameReader r(opt);
    std::size_t consumed = 0;
    Event e = r.next(buf.data(), buf.size(), consumed);
    ASSERT_EQ(e.kind, Kind::message);
    EXPECT_EQ(e.payload, "zero copy, please");
    EXPECT_EQ(e.payload.data(), buf.data() + 6);  // unmasked in place, after the header
    EXPECT_EQ(consumed, 6 + e.payload.size());
    EXPECT_EQ(r.buffered(), 0u);
    // The next frame, from the bytes after the consumed ones, without dropping them.
    const std::size_t first = consumed;
    e = r.next(buf.data() + first, buf.size() - first, consumed);
    ASSERT_EQ(e.kind, Kind::message);
    EXPECT_EQ(e.opcode, Opcode::binary);
    EXPECT_EQ(e.payload.data(), buf.data() + first + 6);
    EXPECT_EQ(r.next(buf.data(), 0, consumed).kind, Kind::need_more);
    EXPECT_EQ(consumed, 0u);
}

TEST(WsFrameReader, ALargeFrameIsConsumedAsItArrivesSoTheCallersBufferStaysSmall) {
    const std::string payload(100000, 'q');
    const std::string in = frame(Opcode::binary, payload);
    ReaderOptions opt;
    FrameReader r(opt);
    std::string buf;
    std::size_t given = 0;
    Event e;
    while (given < in.size()) {
        const std::size_t n = std::min<std::size_t>(4096, in.size() - given);
        buf.append(in, given, n);
        given += n;
        std::size_t consumed = 0;
        e = r.next(buf.data(), buf.size(), consumed);
        buf.erase(0, consumed);
        EXPECT_LT(buf.size(), kMaxHeader);  // only a header may wait in the caller's buffer
        if (e.kind != Kind::need_more) break;
        EXPECT_EQ(r.buffered(), given - 14);
    }
    ASSERT_EQ(e.kind, Kind::message);
    EXPECT_EQ(e.payload, payload);
    r.shrink();
    EXPECT_EQ(r.buffered(), 0u);
}

TEST(WsFrameReader, ControlFrameWaitsUntilWhole) {
    const std::string in = frame(Opcode::ping, "abcdef");
    ReaderOptions opt;
    FrameReader r(opt);
    std::string buf = in.substr(0, in.size() - 1);
    std::size_t consumed = 1;
    EXPECT_EQ(r.next(buf.data(), buf.size(), consumed).kind, Kind::need_more);
    EXPECT_EQ(consumed, 0u);
    buf = in;
    const Event e = r.next(buf.data(), buf.size(), consumed);
    EXPECT_EQ(got(e), ping("abcdef"));
    EXPECT_EQ(e.payload.data(), buf.data() + 6);
    EXPECT_EQ(consumed, in.size());
}

// --- fragmentation ------------------------------------------------------------------------

TEST(WsFrameReader, FragmentsWithInterleavedControlFramesAtEverySplit) {
    const std::string in = frame(Opcode::text, "Hel", false) + frame(Opcode::ping, "p1") +
                           frame(Opcode::continuation, "lo", false) + frame(Opcode::pong, "") +
                           frame(Opcode::continuation, "", false) +
                           frame(Opcode::continuation, " w\xC3\xB6rld", true) +
                           frame(Opcode::binary, "\x00\xFF"s) +
                           frame(Opcode::close,
                                 "\x03\xE8"
                                 "bye"s);
    EXPECT_EQ(run_every_split(in),
              (std::vector<Got>{ping("p1"), pong(""), text("Hello w\xC3\xB6rld"),
                                binary("\x00\xFF"s), closed(1000, "bye")}));
}

TEST(WsFrameReader, ControlFrameInsideAFragmentedMessageLeavesItOpen) {
    const std::string first = frame(Opcode::binary, "ab", false);
    const std::string ping_frame = frame(Opcode::ping, "x");
    std::string buf = first + ping_frame;
    ReaderOptions opt;
    FrameReader r(opt);
    std::size_t consumed = 0;
    Event e = r.next(buf.data(), buf.size(), consumed);
    EXPECT_EQ(got(e), ping("x"));
    EXPECT_EQ(consumed, buf.size());
    EXPECT_EQ(r.buffered(), 2u);
    buf = frame(Opcode::continuation, "cd");
    e = r.next(buf.data(), buf.size(), consumed);
    EXPECT_EQ(got(e), binary("abcd"));
}

TEST(WsFrameReader, EmptyMessages) {
    EXPECT_EQ(run_every_split(frame(Opcode::text, "") + frame(Opcode::binary, "", false) +
                              frame(Opcode::continuation, "")),
              (std::vector<Got>{text(""), binary("")}));
}

// --- framing rules: exact bytes, mask key 00 00 00 00 unless said ----------------------

struct Bad {
    const char* name;
    std::string_view in;
    std::uint16_t code;
};

// clang-format off
const Bad kBad[] = {
    {"unmasked_text", "\x81\x05" "hello"sv, 1002},
    {"unmasked_header_alone", "\x81\x05"sv, 1002},
    {"rsv2", "\xA1\x80\0\0\0\0"sv, 1002},
    {"rsv3", "\x91\x80\0\0\0\0"sv, 1002},
    {"rsv1_without_inflater", "\xC1\x80\0\0\0\0"sv, 1002},
    {"ping_not_fin", "\x09\x80\0\0\0\0"sv, 1002},
    {"close_not_fin", "\x08\x80\0\0\0\0"sv, 1002},
    {"pong_not_fin", "\x0A\x80\0\0\0\0"sv, 1002},
    {"ping_126_bytes", "\x89\xFE\x00\x7E"sv, 1002},
    {"close_127_length_form", "\x88\xFF"sv, 1002},
    {"length64_top_bit", "\x82\xFF\x80\0\0\0\0\0\0\0"sv, 1002},
    {"length64_all_ones", "\x82\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"sv, 1002},
    {"length16_for_125", "\x82\xFE\x00\x7D"sv, 1002},
    {"length16_for_0", "\x82\xFE\x00\x00"sv, 1002},
    {"length64_for_65535", "\x82\xFF\0\0\0\0\0\0\xFF\xFF"sv, 1002},
    {"length64_for_126", "\x82\xFF\0\0\0\0\0\0\0\x7E"sv, 1002},
    {"continuation_first", "\x80\x80\0\0\0\0"sv, 1002},
    {"continuation_after_whole_message", "\x81\x80\0\0\0\0\x80\x80\0\0\0\0"sv, 1002},
    {"text_inside_fragmented", "\x01\x80\0\0\0\0\x81\x80\0\0\0\0"sv, 1002},
    {"binary_inside_fragmented", "\x02\x81\0\0\0\0" "a\x02\x80\0\0\0\0"sv, 1002},
    {"close_one_byte", "\x88\x81\0\0\0\0\x03"sv, 1002},
    {"close_code_0", "\x88\x82\0\0\0\0\0\0"sv, 1002},
    {"close_code_999", "\x88\x82\0\0\0\0\x03\xE7"sv, 1002},
    {"close_code_1004", "\x88\x82\0\0\0\0\x03\xEC"sv, 1002},
    {"close_code_1005", "\x88\x82\0\0\0\0\x03\xED"sv, 1002},
    {"close_code_1006", "\x88\x82\0\0\0\0\x03\xEE"sv, 1002},
    {"close_code_1015", "\x88\x82\0\0\0\0\x03\xF7"sv, 1002},
    {"close_code_1016", "\x88\x82\0\0\0\0\x03\xF8"sv, 1002},
    {"close_code_2999", "\x88\x82\0\0\0\0\x0B\xB7"sv, 1002},
    {"close_code_5000", "\x88\x82\0\0\0\0\x13\x88"sv, 1002},
    {"close_code_65535", "\x88\x82\0\0\0\0\xFF\xFF"sv, 1002},
    {"close_reason_not_utf8", "\x88\x84\0\0\0\0\x03\xE8\xC3\x28"sv, 1007},
    {"close_reason_truncated", "\x88\x83\0\0\0\0\x03\xE8\xC3"sv, 1007},
    {"text_not_utf8", "\x81\x82\0\0\0\0\xC3\x28"sv, 1007},
    {"text_surrogate", "\x81\x83\0\0\0\0\xED\xA0\x80"sv, 1007},
    {"text_ends_mid_character", "\x81\x81\0\0\0\0\xC3"sv, 1007},
    // Fail fast: the first fragment is refused before the rest arrives.
    {"first_fragment_not_utf8", "\x01\x82\0\0\0\0\xF8\x80"sv, 1007},
    {"char_split_over_fragments_bad", "\x01\x81\0\0\0\0\xE2\x80\x81\0\0\0\0\x28"sv, 1007},
    {"final_fragment_ends_mid_char", "\x01\x81\0\0\0\0" "a\x80\x81\0\0\0\0\xE2"sv, 1007},
    // The masked form of "\xC3\x28" under key 01 02 03 04.
    {"masked_text_not_utf8", "\x81\x82\x01\x02\x03\x04\xC2\x2A"sv, 1007},
    // After a good message, the error still comes.
    {"good_then_rsv2", "\x82\x81\0\0\0\0" "a\xA2\x80\0\0\0\0"sv, 1002},
};
// clang-format on

class WsFrameBad : public testing::TestWithParam<Bad> {};

TEST_P(WsFrameBad, IsRefusedWithItsCodeAtEverySplit) {
    const Bad& b = GetParam();
    const std::vector<Got> events = run_every_split(b.in);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back(), error(b.code));
}

INSTANTIATE_TEST_SUITE_P(Rfc6455, WsFrameBad, testing::ValuesIn(kBad),
                         [](const testing::TestParamInfo<Bad>& i) { return i.param.name; });

TEST(WsFrameReader, ReservedOpcodesAreRefused) {
    for (unsigned op : {3u, 4u, 5u, 6u, 7u, 0xBu, 0xCu, 0xDu, 0xEu, 0xFu}) {
        const std::string in = {static_cast<char>(0x80 | op), '\x80', 0, 0, 0, 0};
        EXPECT_EQ(run_every_split(in), std::vector<Got>{error(1002)}) << op;
    }
}

TEST(WsFrameReader, ErrorNamesTheRuleAndStays) {
    std::string buf = "\x81\x05hello"s;
    ReaderOptions opt;
    FrameReader r(opt);
    std::size_t consumed = 0;
    Event e = r.next(buf.data(), buf.size(), consumed);
    ASSERT_EQ(e.kind, Kind::error);
    EXPECT_EQ(e.code, close_code::protocol_error);
    EXPECT_STREQ(e.what, "unmasked client frame");
    buf = frame(Opcode::text, "fine");
    e = r.next(buf.data(), buf.size(), consumed);
    EXPECT_EQ(e.kind, Kind::error);
    EXPECT_EQ(e.code, close_code::protocol_error);
    EXPECT_EQ(consumed, 0u);
}

// --- the client side ---------------------------------------------------------------------

TEST(WsFrameReader, ClientRefusesMaskedServerFrames) {
    ReaderOptions opt;
    opt.require_mask = false;
    opt.reject_mask = true;
    EXPECT_EQ(run_every_split("\x81\x05hello"sv, opt), std::vector<Got>{text("hello")});
    std::string buf = frame(Opcode::text, "masked");
    FrameReader r(opt);
    std::size_t consumed = 0;
    const Event e = r.next(buf.data(), buf.size(), consumed);
    ASSERT_EQ(e.kind, Kind::error);
    EXPECT_EQ(e.code, close_code::protocol_error);
    EXPECT_STREQ(e.what, "masked server frame");
}

TEST(WsFrameWriter, MaskedHeaderAndPayloadMatchTheClientFrame) {
    const std::uint8_t key[4] = {0x37, 0xFA, 0x21, 0x3D};
    for (const std::size_t n : {0u, 5u, 125u, 126u, 65535u, 65536u}) {
        const std::string payload(n, 'p');
        char h[kMaxHeader];
        const std::size_t hn = write_masked_header(h, Opcode::binary, n, key, true, true);
        std::string out(h, hn);
        const std::size_t at = out.size();
        out += payload;
        mask_payload(out.data() + at, n, key);
        std::string want;
        append_client_frame(want, Opcode::binary, payload, kMask, true, true);
        EXPECT_EQ(out, want) << n;
    }
}

// --- close --------------------------------------------------------------------------------

TEST(WsFrameReader, ClosePayloads) {
    EXPECT_EQ(run_every_split("\x88\x80\0\0\0\0"sv), std::vector<Got>{closed(1005)});
    EXPECT_EQ(run_every_split("\x88\x82\0\0\0\0\x03\xE8"sv), std::vector<Got>{closed(1000)});
    EXPECT_EQ(run_every_split(frame(Opcode::close,
                                    "\x0F\xA0"
                                    "caf\xC3\xA9"s)),
              std::vector<Got>{closed(4000, "caf\xC3\xA9")});
    for (std::uint16_t code : {1000, 1001, 1002, 1003, 1007, 1010, 1011, 1014, 3000, 4999}) {
        EXPECT_EQ(run_whole(frame(Opcode::close, close_payload(code, "r"))),
                  std::vector<Got>{closed(code, "r")})
            << code;
    }
}

TEST(WsFrameReader, NothingIsReadAfterClose) {
    // run() checks the later call answers need_more with the ping still unread.
    EXPECT_EQ(run_whole(frame(Opcode::close, "") + frame(Opcode::ping, "late")),
              std::vector<Got>{closed(1005)});
}

TEST(WsCloseCode, ValidRanges) {
    for (unsigned c = 0; c <= 0xFFFF; ++c) {
        const bool want =
            (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) || (c >= 3000 && c <= 4999);
        EXPECT_EQ(close_code_valid(static_cast<std::uint16_t>(c)), want) << c;
    }
}

// --- limits -------------------------------------------------------------------------------

ReaderOptions limits(std::size_t frame, std::size_t message) {
    ReaderOptions o;
    o.max_frame = frame;
    o.max_message = message;
    return o;
}

TEST(WsFrameReader, FrameAtTheLimitIsAcceptedOneOverIsRefusedFromTheHeader) {
    EXPECT_EQ(run_every_split(frame(Opcode::binary, "0123456789"), limits(10, 100)),
              std::vector<Got>{binary("0123456789")});
    // Header alone (2 bytes of it): refused before the payload or the mask key arrives.
    EXPECT_EQ(run_whole("\x82\x8B"sv, limits(10, 100)), std::vector<Got>{error(1009)});
    EXPECT_EQ(run_whole("\x82\xFE\x01\x00"sv, limits(255, 1000)), std::vector<Got>{error(1009)});
    EXPECT_EQ(run_whole("\x82\xFF\0\0\0\x01\0\0\0\0"sv), std::vector<Got>{error(1009)});
    // Control frames too.
    EXPECT_EQ(run_whole(frame(Opcode::ping, "0123456789A"), limits(10, 100)),
              std::vector<Got>{error(1009)});
}

TEST(WsFrameReader, MessageAtTheLimitIsAcceptedOneOverIsRefused) {
    const std::string at = frame(Opcode::text, "01234", false) + frame(Opcode::ping, "p") +
                           frame(Opcode::continuation, "56789");
    EXPECT_EQ(run_every_split(at, limits(10, 10)),
              (std::vector<Got>{ping("p"), text("0123456789")}));
    const std::string over =
        frame(Opcode::text, "01234", false) + frame(Opcode::continuation, "56789A");
    EXPECT_EQ(run_every_split(over, limits(10, 10)), std::vector<Got>{error(1009)});
    // The second header alone is enough.
    EXPECT_EQ(run_whole(frame(Opcode::text, "01234", false) + "\x80\x86", limits(10, 10)),
              std::vector<Got>{error(1009)});
    EXPECT_EQ(run_whole(frame(Opcode::binary, "0123456789A"), limits(100, 10)),
              std::vector<Got>{error(1009)});
}

// --- permessage-deflate plumbing (RSV1) ---------------------------------------------------

TEST(WsFrameReader, Rsv1MarksACompressedMessageWhenAnInflaterIsSet) {
    FakeInflater inflater;
    const std::string in = frame(Opcode::text, "abc", true, true) +
                           frame(Opcode::binary, "de", false, true) + frame(Opcode::ping, "") +
                           frame(Opcode::continuation, "f") + frame(Opcode::binary, "plain");
    EXPECT_EQ(run_every_split(in, {}, &inflater),
              (std::vector<Got>{text("abc"), ping(""), binary("def"), binary("plain")}));
    inflater.calls.clear();
    run_whole(in, {}, &inflater);
    ASSERT_EQ(inflater.calls.size(), 3u);
    EXPECT_TRUE(inflater.calls[0].last);
    EXPECT_FALSE(inflater.calls[1].last);
    EXPECT_TRUE(inflater.calls[2].last);
    for (const auto& c : inflater.calls) EXPECT_TRUE(c.out_empty);
}

TEST(WsFrameReader, Rsv1IsRefusedOnContinuationAndControlFrames) {
    FakeInflater inflater;
    EXPECT_EQ(run_every_split(frame(Opcode::text, "a", false, true) +
                                  frame(Opcode::continuation, "b", true, true),
                              {}, &inflater),
              std::vector<Got>{error(1002)});
    EXPECT_EQ(run_every_split(
                  frame(Opcode::text, "a", false) + frame(Opcode::continuation, "b", true, true),
                  {}, &inflater),
              std::vector<Got>{error(1002)});
    EXPECT_EQ(run_every_split(frame(Opcode::ping, "a", true, true), {}, &inflater),
              std::vector<Got>{error(1002)});
    EXPECT_EQ(run_every_split(frame(Opcode::close, "", true, true), {}, &inflater),
              std::vector<Got>{error(1002)});
}

TEST(WsFrameReader, InflaterErrorsAreTheCloseCode) {
    FakeInflater failing(FakeInflater::Mode::failing);
    EXPECT_EQ(run_every_split(frame(Opcode::binary, "zz", true, true), {}, &failing),
              std::vector<Got>{error(1007)});
}

TEST(WsFrameReader, CompressedTextIsValidatedAfterInflation) {
    FakeInflater doubling(FakeInflater::Mode::doubling);
    // Each byte doubled: "\xC3" becomes "\xC3\xC3", not UTF-8; "a\xA9" would be fine alone.
    EXPECT_EQ(run_every_split(frame(Opcode::text, "\xC3", true, true), {}, &doubling),
              std::vector<Got>{error(1007)});
    EXPECT_EQ(run_every_split(frame(Opcode::text, "ab", true, true), {}, &doubling),
              std::vector<Got>{text("aabb")});
}

TEST(WsFrameReader, InflaterGetsWhatIsLeftOfMaxMessage) {
    FakeInflater doubling(FakeInflater::Mode::doubling);
    const ReaderOptions opt = limits(100, 10);
    // 5 compressed bytes inflate to exactly 10: accepted; the raw size is not the limit.
    EXPECT_EQ(run_whole(frame(Opcode::binary, "abcde", true, true), opt, &doubling),
              std::vector<Got>{binary("aabbccddee")});
    EXPECT_EQ(run_whole(frame(Opcode::binary, "abcdef", true, true), opt, &doubling),
              std::vector<Got>{error(1009)});
    // Fragments: 3 bytes give 6, then the limit handed over is 4.
    doubling.calls.clear();
    EXPECT_EQ(run_every_split(
                  frame(Opcode::binary, "abc", false, true) + frame(Opcode::continuation, "de"),
                  opt, &doubling),
              std::vector<Got>{binary("aabbccddee")});
    doubling.calls.clear();
    EXPECT_EQ(
        run_whole(frame(Opcode::binary, "abc", false, true) + frame(Opcode::continuation, "def"),
                  opt, &doubling),
        std::vector<Got>{error(1009)});
    ASSERT_EQ(doubling.calls.size(), 2u);
    EXPECT_EQ(doubling.calls[0].limit, 10u);
    EXPECT_EQ(doubling.calls[1].limit, 4u);
    // A compressed frame is still held to max_frame from its header.
    EXPECT_EQ(run_whole(frame(Opcode::binary, std::string(101, 'x'), true, true), opt, &doubling),
              std::vector<Got>{error(1009)});
}

// Regression (found by fuzz_ws_frame): a compressed text message with bad UTF-8 early and too
// much output later was refused 1009 when it came whole but 1007 when it came in pieces; the
// output the inflater gave before it stopped is now checked first.
TEST(WsFrameReader, BadUtf8BeforeTheInflatedLimitIs1007AtEverySplit) {
    FakeInflater doubling(FakeInflater::Mode::doubling);
    EXPECT_EQ(run_every_split(frame(Opcode::text,
                                    "a\xFF"
                                    "bcdefgh",
                                    true, true),
                              limits(100, 10), &doubling),
              std::vector<Got>{error(1007)});
}

// --- UTF-8 --------------------------------------------------------------------------------

struct Utf8Case {
    const char* name;
    std::string_view s;
    bool valid;
    bool prefix_ok;  // invalid only because it ends early (feed() stays true)
};

// clang-format off
const Utf8Case kUtf8[] = {
    {"empty", ""sv, true, true},
    {"ascii", "hello, world"sv, true, true},
    {"nul", "a\0b"sv, true, true},
    {"two_byte", "caf\xC3\xA9"sv, true, true},
    {"three_byte_euro", "\xE2\x82\xAC"sv, true, true},
    {"u0800", "\xE0\xA0\x80"sv, true, true},
    {"ud7ff", "\xED\x9F\xBF"sv, true, true},
    {"ue000", "\xEE\x80\x80"sv, true, true},
    {"uffff", "\xEF\xBF\xBF"sv, true, true},
    {"u10000", "\xF0\x90\x80\x80"sv, true, true},
    {"u10ffff", "\xF4\x8F\xBF\xBF"sv, true, true},
    {"ascii_run_then_multibyte", "0123456789abcdefghijklmnopqrstu\xC3\xA9vwxyz0123456789ABCDEF\xF0\x9F\x98\x80"sv, true, true},
    {"multibyte_across_16", "0123456789abcde\xE2\x82\xAC" "0123456789abcdef"sv, true, true},
    {"overlong_nul", "\xC0\x80"sv, false, false},
    {"overlong_c1", "\xC1\xBF"sv, false, false},
    {"overlong_3", "\xE0\x80\x80"sv, false, false},
    {"overlong_3_max", "\xE0\x9F\xBF"sv, false, false},
    {"overlong_4", "\xF0\x80\x80\x80"sv, false, false},
    {"overlong_4_max", "\xF0\x8F\xBF\xBF"sv, false, false},
    {"surrogate_d800", "\xED\xA0\x80"sv, false, false},
    {"surrogate_dfff", "\xED\xBF\xBF"sv, false, false},
    {"surrogate_pair", "\xED\xA0\x80\xED\xB0\x80"sv, false, false},
    {"above_10ffff", "\xF4\x90\x80\x80"sv, false, false},
    {"f5", "\xF5\x80\x80\x80"sv, false, false},
    {"ff", "\xFF"sv, false, false},
    {"fe", "\xFE"sv, false, false},
    {"lone_continuation", "\x80"sv, false, false},
    {"continuation_after_ascii", "abc\xBF"sv, false, false},
    {"missing_continuation", "\xC3\x28"sv, false, false},
    {"three_byte_bad_second", "\xE2\x28\xA1"sv, false, false},
    {"three_byte_bad_third", "\xE2\x82\x28"sv, false, false},
    {"four_byte_bad_fourth", "\xF0\x90\x80\x28"sv, false, false},
    {"high_byte_after_ascii_run", "0123456789abcdef0123\x80"sv, false, false},
    {"truncated_2", "\xC3"sv, false, true},
    {"truncated_3", "\xE2\x82"sv, false, true},
    {"truncated_4", "\xF0\x90\x80"sv, false, true},
    {"truncated_after_ascii", "0123456789abcdefgh\xF0\x9F"sv, false, true},
};
// clang-format on

class WsUtf8 : public testing::TestWithParam<Utf8Case> {};

TEST_P(WsUtf8, Whole) { EXPECT_EQ(utf8_valid(GetParam().s), GetParam().valid); }

TEST_P(WsUtf8, IncrementalAtEverySplit) {
    const Utf8Case& c = GetParam();
    for (std::size_t k = 0; k <= c.s.size(); ++k) {
        Utf8Validator v;
        const bool a = v.feed(c.s.data(), k);
        const bool b = v.feed(c.s.data() + k, c.s.size() - k);
        EXPECT_EQ(a && b, c.prefix_ok) << k;
        EXPECT_EQ(v.complete(), c.valid) << k;
    }
    Utf8Validator v;
    bool ok = true;
    for (char ch : c.s) ok = v.feed(&ch, 1) && ok;
    EXPECT_EQ(ok, c.prefix_ok);
    EXPECT_EQ(v.complete(), c.valid);
    v.reset();
    EXPECT_TRUE(v.complete());
    EXPECT_TRUE(v.feed("ok", 2));
}

TEST_P(WsUtf8, AsATextMessageSplitOverFragments) {
    const Utf8Case& c = GetParam();
    for (std::size_t k = 0; k <= c.s.size(); ++k) {
        const std::string in = frame(Opcode::text, c.s.substr(0, k), false) +
                               frame(Opcode::continuation, c.s.substr(k));
        const std::vector<Got> want{c.valid ? text(c.s) : error(1007)};
        EXPECT_EQ(run_whole(in), want) << k;
    }
}

INSTANTIATE_TEST_SUITE_P(Rfc3629, WsUtf8, testing::ValuesIn(kUtf8),
                         [](const testing::TestParamInfo<Utf8Case>& i) { return i.param.name; });

TEST(WsUtf8Validator, StaysInvalid) {
    Utf8Validator v;
    EXPECT_FALSE(v.feed("\xFF", 1));
    EXPECT_FALSE(v.feed("abc", 3));
    EXPECT_FALSE(v.complete());
}

TEST(WsUtf8Validator, FailsOnTheFirstBadByte) {
    Utf8Validator v;
    EXPECT_FALSE(v.feed("\xED\xA0", 2));  // a surrogate is known after its second byte
}

// --- writers ------------------------------------------------------------------------------

TEST(WsWriters, HeaderBytes) {
    char h[kMaxHeader];
    EXPECT_EQ(std::string(h, write_header(h, Opcode::text, 0)), "\x81\x00"sv);
    EXPECT_EQ(std::string(h, write_header(h, Opcode::binary, 125)), "\x82\x7D"sv);
    EXPECT_EQ(std::string(h, write_header(h, Opcode::binary, 126)), "\x82\x7E\x00\x7E"sv);
    EXPECT_EQ(std::string(h, write_header(h, Opcode::binary, 65535)), "\x82\x7E\xFF\xFF"sv);
    EXPECT_EQ(std::string(h, write_header(h, Opcode::binary, 65536)),
              "\x82\x7F\0\0\0\0\0\x01\0\0"sv);
    EXPECT_EQ(std::string(h, write_header(h, Opcode::text, 0x0102030405060708ull, false, true)),
              "\x41\x7F\x01\x02\x03\x04\x05\x06\x07\x08"sv);
    EXPECT_EQ(std::string(h, write_header(h, Opcode::close, 2)), "\x88\x02"sv);
}

TEST(WsWriters, ServerFrame) {
    std::string out;
    append_frame(out, Opcode::ping, "Hello");
    EXPECT_EQ(out, "\x89\x05Hello"sv);
    out.clear();
    append_frame(out, Opcode::text, "Hel", false);
    append_frame(out, Opcode::continuation, "lo");
    EXPECT_EQ(out, "\x01\x03Hel\x80\x02lo"sv);
}

TEST(WsWriters, ClientFrameMatchesRfcExample) {
    std::string out;
    append_client_frame(out, Opcode::text, "Hello", kMask);
    EXPECT_EQ(out, "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58"sv);
}

TEST(WsWriters, RoundTripThroughTheReader) {
    for (std::size_t n : {0u, 5u, 125u, 126u, 65535u, 65536u}) {
        std::string payload(n, '\0');
        for (std::size_t i = 0; i < n; ++i) payload[i] = static_cast<char>(i * 7 + 3);
        std::string client;
        append_client_frame(client, Opcode::binary, payload, 0xA1B2C3D4u);
        EXPECT_EQ(run_whole(client), std::vector<Got>{binary(payload)}) << n;
        std::string server;
        append_frame(server, Opcode::binary, payload);
        EXPECT_EQ(run_whole(server, unmasked_allowed()), std::vector<Got>{binary(payload)}) << n;
    }
}

TEST(WsWriters, ClosePayload) {
    EXPECT_EQ(close_payload(1000, ""), "\x03\xE8"sv);
    EXPECT_EQ(close_payload(4001, "bye"),
              "\x0F\xA1"
              "bye"sv);
    EXPECT_EQ(close_payload(close_code::no_status, "ignored"), "");
    const std::string long_ascii(200, 'a');
    EXPECT_EQ(close_payload(1001, long_ascii).size(), 125u);
    EXPECT_EQ(close_payload(1001, std::string(123, 'a')).size(), 125u);
    // 122 'a' then a 2-byte character that would end at byte 124: cut before it.
    const std::string straddling = std::string(122, 'a') + "\xC3\xA9" + "tail";
    EXPECT_EQ(close_payload(1001, straddling), "\x03\xE9" + std::string(122, 'a'));
    // 121 'a' then a 2-byte character ending exactly at 123: kept.
    const std::string fits = std::string(121, 'a') + "\xC3\xA9" + "tail";
    EXPECT_EQ(close_payload(1001, fits), "\x03\xE9" + std::string(121, 'a') + "\xC3\xA9");
    // A 4-byte character across the cut.
    const std::string emoji = std::string(121, 'a') + "\xF0\x9F\x98\x80";
    EXPECT_EQ(close_payload(1001, emoji), "\x03\xE9" + std::string(121, 'a'));
}

TEST(WsWriters, ClosePayloadRoundTrip) {
    const std::string reason = std::string(120, 'r') + "\xE2\x82\xAC\xE2\x82\xAC";
    const std::string payload = close_payload(1011, reason);
    EXPECT_TRUE(utf8_valid(std::string_view(payload).substr(2)));
    EXPECT_EQ(run_every_split(frame(Opcode::close, payload)),
              std::vector<Got>{closed(1011, std::string(120, 'r') + "\xE2\x82\xAC")});
}

}  // namespace
}  // namespace vela::ws
