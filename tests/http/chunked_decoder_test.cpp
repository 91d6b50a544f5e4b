// Tests for src/http/chunked_decoder.cpp (RFC 9112 7.1): in-place decoding whatever the
// split of the input, and the body (413) and trailer (431) limits.
#include "vela/http/chunked_decoder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace vela {

static void PrintTo(ChunkedDecoder::Result r, std::ostream* os) {
    *os << (r == ChunkedDecoder::Result::done    ? "done"
            : r == ChunkedDecoder::Result::error ? "error"
                                                 : "need_more");
}

namespace {

using namespace std::literals;
using Result = ChunkedDecoder::Result;

struct Outcome {
    Result result = Result::need_more;
    int status = 0;
    std::string body;
    std::size_t raw = 0;
};

// Feeds `input` (copied into one buffer) through the decoder, the caller choosing the
// growing lengths seen by each call; the last length is always input.size().
Outcome decode(std::string_view input, const ParserLimits& limits,
               const std::vector<std::size_t>& lengths) {
    std::vector<char> buf(input.begin(), input.end());
    ChunkedDecoder d;
    d.reset(&limits);
    Outcome o;
    std::vector<std::size_t> all = lengths;
    all.push_back(input.size());
    std::size_t decoded_before = 0;
    for (std::size_t n : all) {
        o.result = d.feed(buf.data(), n);
        // Decoded bytes only ever grow, and they are always a prefix of the final body.
        EXPECT_GE(d.decoded_size(), decoded_before);
        decoded_before = d.decoded_size();
        if (o.result != Result::need_more) break;
    }
    if (o.result == Result::error) o.status = code(d.error());
    o.body.assign(buf.data(), d.decoded_size());
    if (o.result == Result::done) o.raw = d.raw_size();
    return o;
}

Outcome decode_whole(std::string_view input, const ParserLimits& limits = {}) {
    return decode(input, limits, {});
}

struct Valid {
    const char* name;
    std::string_view raw;  // the chunked body, then possibly bytes that are not part of it
    std::string_view body;
    std::size_t raw_size;  // 0: all of `raw`
};

// clang-format off
const Valid kValid[] = {
    {"empty", "0\r\n\r\n", "", 0},
    {"one_chunk", "5\r\nhello\r\n0\r\n\r\n", "hello", 0},
    {"two_chunks", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world", 0},
    {"many_small_chunks", "1\r\na\r\n1\r\nb\r\n1\r\nc\r\n1\r\nd\r\n0\r\n\r\n", "abcd", 0},
    {"hex_sizes", "a\r\n0123456789\r\nB\r\nabcdefghijk\r\n0\r\n\r\n", "0123456789abcdefghijk", 0},
    {"leading_zeros", "0005\r\nhello\r\n000\r\n\r\n", "hello", 0},
    {"extensions", "5;a=b;c=\"d e\"\r\nhello\r\n0;x\r\n\r\n", "hello", 0},
    {"extension_bws", "5 \t;a\r\nhello\r\n0\r\n\r\n", "hello", 0},
    {"data_holding_framing", "7\r\n0\r\n\r\n\r\n\r\n0\r\n\r\n", "0\r\n\r\n\r\n", 0},
    {"trailers", "3\r\nabc\r\n0\r\nX-A: 1\r\nX-B:\r\n\r\n", "abc", 0},
    {"trailer_obs_text", "3\r\nabc\r\n0\r\nX: caf\xC3\xA9\r\n\r\n", "abc", 0},
    {"followed_by_next_request", "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n", "abc", 13},
};
// clang-format on

class ChunkedValid : public testing::TestWithParam<Valid> {};

TEST_P(ChunkedValid, Whole) {
    const Valid& v = GetParam();
    Outcome o = decode_whole(v.raw);
    ASSERT_EQ(o.result, Result::done);
    EXPECT_EQ(o.body, v.body);
    EXPECT_EQ(o.raw, v.raw_size ? v.raw_size : v.raw.size());
}

TEST_P(ChunkedValid, SplitInTwoAtEveryByte) {
    const Valid& v = GetParam();
    const std::size_t end = v.raw_size ? v.raw_size : v.raw.size();
    for (std::size_t k = 0; k < end && !HasFailure(); ++k) {
        SCOPED_TRACE("first feed sees " + std::to_string(k));
        Outcome o = decode(v.raw, {}, {k});
        ASSERT_EQ(o.result, Result::done);
        EXPECT_EQ(o.body, v.body);
        EXPECT_EQ(o.raw, end);
    }
}

TEST_P(ChunkedValid, ByteByByte) {
    const Valid& v = GetParam();
    std::vector<std::size_t> lengths;
    const std::size_t end = v.raw_size ? v.raw_size : v.raw.size();
    for (std::size_t k = 1; k < end; ++k) lengths.push_back(k);
    Outcome o = decode(v.raw, {}, lengths);
    ASSERT_EQ(o.result, Result::done);
    EXPECT_EQ(o.body, v.body);
    EXPECT_EQ(o.raw, end);
}

TEST_P(ChunkedValid, NeedsMoreUntilTheLastByte) {
    const Valid& v = GetParam();
    const std::size_t end = v.raw_size ? v.raw_size : v.raw.size();
    std::vector<char> buf(v.raw.begin(), v.raw.end());
    ChunkedDecoder d;
    ParserLimits limits;
    d.reset(&limits);
    for (std::size_t k = 1; k < end; ++k) ASSERT_EQ(d.feed(buf.data(), k), Result::need_more) << k;
    EXPECT_EQ(d.feed(buf.data(), end), Result::done);
}

INSTANTIATE_TEST_SUITE_P(Rfc9112, ChunkedValid, testing::ValuesIn(kValid),
                         [](const testing::TestParamInfo<Valid>& i) { return i.param.name; });

struct Invalid {
    const char* name;
    std::string_view raw;
    int status;
};

// clang-format off
const Invalid kInvalid[] = {
    {"no_size", "\r\nhello\r\n0\r\n\r\n", 400},
    {"size_not_hex", "x\r\nhello\r\n0\r\n\r\n", 400},
    {"negative_size", "-1\r\nh\r\n0\r\n\r\n", 400},
    {"plus_size", "+1\r\nh\r\n0\r\n\r\n", 400},
    {"size_overflow", "10000000000000000\r\n", 400},
    {"size_overflow_ffff", "FFFFFFFFFFFFFFFFF\r\n", 400},
    {"size_bare_lf", "5\nhello\r\n0\r\n\r\n", 400},
    {"size_bare_cr", "5\rhello\r\n0\r\n\r\n", 400},
    {"data_not_followed_by_crlf", "5\r\nhelloX\r\n0\r\n\r\n", 400},
    {"data_followed_by_bare_lf", "5\r\nhello\n0\r\n\r\n", 400},
    {"data_followed_by_cr_only", "5\r\nhello\rX0\r\n\r\n", 400},
    {"extension_control_byte", "5;a\x01\r\nhello\r\n0\r\n\r\n", 400},
    {"extension_bare_lf", "5;a\nhello\r\n0\r\n\r\n", 400},
    // Regression: any text after whitespace following the size was taken as an extension.
    {"size_then_text", "5 xyz\r\nhello\r\n0\r\n\r\n", 400},
    {"size_then_space", "5 \r\nhello\r\n0\r\n\r\n", 400},
    {"size_then_second_number", "5 6\r\nhello\r\n0\r\n\r\n", 400},
    {"trailer_obs_fold", "0\r\nX: a\r\n b\r\n\r\n", 400},
    {"trailer_without_colon", "0\r\nXYZ\r\n\r\n", 400},
    {"trailer_empty_name", "0\r\n: v\r\n\r\n", 400},
    {"trailer_space_before_colon", "0\r\nX : v\r\n\r\n", 400},
    {"trailer_nul", "0\r\nX: a\0b\r\n\r\n"sv, 400},
    {"trailer_bare_lf", "0\r\nX: a\n\r\n", 400},
    {"final_crlf_bare_cr", "0\r\n\rX", 400},
};
// clang-format on

class ChunkedInvalid : public testing::TestWithParam<Invalid> {};

TEST_P(ChunkedInvalid, WholeAndByteByByte) {
    const Invalid& v = GetParam();
    Outcome whole = decode_whole(v.raw);
    EXPECT_EQ(whole.result, Result::error);
    EXPECT_EQ(whole.status, v.status);
    std::vector<std::size_t> lengths;
    for (std::size_t k = 1; k < v.raw.size(); ++k) lengths.push_back(k);
    Outcome bytes = decode(v.raw, {}, lengths);
    EXPECT_EQ(bytes.result, Result::error);
    EXPECT_EQ(bytes.status, v.status);
}

INSTANTIATE_TEST_SUITE_P(Rfc9112, ChunkedInvalid, testing::ValuesIn(kInvalid),
                         [](const testing::TestParamInfo<Invalid>& i) { return i.param.name; });

ParserLimits with_body(std::size_t max) {
    ParserLimits l;
    l.max_body = max;
    return l;
}

TEST(ChunkedDecoder, BodyAtTheLimitIsAccepted) {
    Outcome o = decode_whole("2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n", with_body(5));
    EXPECT_EQ(o.result, Result::done);
    EXPECT_EQ(o.body, "hello");
}

TEST(ChunkedDecoder, OneChunkOverTheLimitIs413BeforeItsData) {
    // The size line alone is enough to refuse: the data need not arrive.
    Outcome o = decode_whole("6\r\n", with_body(5));
    EXPECT_EQ(o.result, Result::error);
    EXPECT_EQ(o.status, 413);
}

TEST(ChunkedDecoder, ChunksAddingUpOverTheLimitAre413) {
    Outcome o = decode_whole("3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", with_body(5));
    EXPECT_EQ(o.result, Result::error);
    EXPECT_EQ(o.status, 413);
}

TEST(ChunkedDecoder, HugeChunkSizeIs413NotOverflow) {
    Outcome o = decode_whole("FFFFFFFFFFFFFFFF\r\n");  // 2^64-1: fits, but over any limit
    EXPECT_EQ(o.result, Result::error);
    EXPECT_EQ(o.status, 413);
}

TEST(ChunkedDecoder, ChunkLineLimit) {
    ParserLimits l;
    l.max_chunk_line = 6;
    EXPECT_EQ(decode_whole("5;abcdefghijk\r\nhello\r\n0\r\n\r\n", l).status, 400);
    EXPECT_EQ(decode_whole("0000000000005\r\nhello\r\n0\r\n\r\n", l).status, 400);
}

// A line of exactly max_chunk_line characters (CRLF not counted, as for the request line's
// limit) is not "longer" than the limit.
TEST(ChunkedDecoder, ChunkLineOfExactlyTheLimitIsAccepted) {
    ParserLimits l;
    l.max_chunk_line = 6;
    Outcome o = decode_whole("5;abcd\r\nhello\r\n0\r\n\r\n", l);
    EXPECT_EQ(o.result, Result::done);
    EXPECT_EQ(o.body, "hello");
}

ParserLimits with_trailers(std::size_t bytes, std::size_t count = 100) {
    ParserLimits l;
    l.max_header_bytes = bytes;
    l.max_headers = count;
    return l;
}

TEST(ChunkedDecoder, TrailerSectionOverTheLimitIs431) {
    Outcome o = decode_whole("0\r\nX-Long: 0123456789012345678901234567890123456789\r\n\r\n",
                             with_trailers(32));
    EXPECT_EQ(o.result, Result::error);
    EXPECT_EQ(o.status, 431);
}

// The trailer section is counted like the header section: its field lines with their
// CRLFs. "X: 12345\r\n" is 10 bytes, so a limit of 10 admits it.
TEST(ChunkedDecoder, TrailerSectionOfExactlyTheLimitIsAccepted) {
    Outcome o = decode_whole("3\r\nabc\r\n0\r\nX: 12345\r\n\r\n", with_trailers(10));
    EXPECT_EQ(o.result, Result::done);
    EXPECT_EQ(o.body, "abc");
}

TEST(ChunkedDecoder, TooManyTrailerFieldsIs431) {
    EXPECT_EQ(decode_whole("0\r\nA: 1\r\nB: 2\r\n\r\n", with_trailers(1024, 2)).result,
              Result::done);
    Outcome o = decode_whole("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", with_trailers(1024, 2));
    EXPECT_EQ(o.result, Result::error);
    EXPECT_EQ(o.status, 431);
}

TEST(ChunkedDecoder, ManyTrailersAcrossByteByByteFeeds) {
    std::string raw = "1\r\nz\r\n0\r\n";
    for (int i = 0; i < 50; ++i) raw.append("T").append(std::to_string(i)).append(": v\r\n");
    raw += "\r\n";
    std::vector<std::size_t> lengths;
    for (std::size_t k = 1; k < raw.size(); ++k) lengths.push_back(k);
    Outcome o = decode(raw, {}, lengths);
    EXPECT_EQ(o.result, Result::done);
    EXPECT_EQ(o.body, "z");
    EXPECT_EQ(o.raw, raw.size());
}

TEST(ChunkedDecoder, DecodedPrefixIsUsableBeforeTheEnd) {
    std::string raw = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    std::vector<char> buf(raw.begin(), raw.end());
    ParserLimits limits;
    ChunkedDecoder d;
    d.reset(&limits);
    const std::size_t after_first = raw.find("6\r\n");
    ASSERT_EQ(d.feed(buf.data(), after_first), Result::need_more);
    EXPECT_EQ(std::string_view(buf.data(), d.decoded_size()), "hello");
    ASSERT_EQ(d.feed(buf.data(), after_first + 6), Result::need_more);  // "6\r\n wo"
    EXPECT_EQ(std::string_view(buf.data(), d.decoded_size()), "hello wo");
    ASSERT_EQ(d.feed(buf.data(), raw.size()), Result::done);
    EXPECT_EQ(std::string_view(buf.data(), d.decoded_size()), "hello world");
}

TEST(ChunkedDecoder, LargeBodyInUnevenPieces) {
    std::string raw, expect;
    for (int i = 1; i <= 40; ++i) {
        std::string chunk(static_cast<std::size_t>(i * 37), static_cast<char>('a' + i % 26));
        char size[16];
        std::snprintf(size, sizeof size, "%x", static_cast<unsigned>(chunk.size()));
        raw += std::string(size) + "\r\n" + chunk + "\r\n";
        expect += chunk;
    }
    raw += "0\r\n\r\n";
    std::vector<std::size_t> lengths;
    for (std::size_t k = 7; k < raw.size(); k += 13 + k % 17) lengths.push_back(k);
    Outcome o = decode(raw, {}, lengths);
    ASSERT_EQ(o.result, Result::done);
    EXPECT_EQ(o.body, expect);
    EXPECT_EQ(o.raw, raw.size());
}

TEST(ChunkedDecoder, ResetStartsAFreshBody) {
    ParserLimits limits;
    ChunkedDecoder d;
    d.reset(&limits);
    std::string bad = "zz\r\n";
    ASSERT_EQ(d.feed(bad.data(), bad.size()), Result::error);
    d.reset(&limits);
    std::string good = "2\r\nok\r\n0\r\n\r\n";
    ASSERT_EQ(d.feed(good.data(), good.size()), Result::done);
    EXPECT_EQ(std::string_view(good.data(), d.decoded_size()), "ok");
    EXPECT_EQ(d.raw_size(), good.size());
}

// The streaming use: decoded bytes handed out after each feed, the raw bytes read dropped
// from the buffer, decoding going on with what follows (a driver's streamed request body).
TEST(ChunkedDecoder, DropHandsOutPiecesAndCountsTheLimitAcrossThem) {
    ParserLimits limits;
    ChunkedDecoder d;
    d.reset(&limits);
    d.set_max_body(12);
    const std::string raw = "5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nT: v\r\n\r\n";
    for (std::size_t step : {1, 2, 3, 7, 64}) {
        d.reset(&limits);
        d.set_max_body(12);
        std::string buf, body;
        Result r = Result::need_more;
        for (std::size_t fed = 0; fed < raw.size() && r == Result::need_more;) {
            const std::size_t n = std::min(step, raw.size() - fed);
            buf.append(raw, fed, n);
            fed += n;
            r = d.feed(buf.data(), buf.size());
            body.append(buf.data(), d.decoded_size());
            buf.erase(0, d.raw_size());
            d.drop();
        }
        EXPECT_EQ(r, Result::done) << "step " << step;
        EXPECT_EQ(body, "hello world") << "step " << step;
        EXPECT_TRUE(buf.empty()) << "step " << step;
    }
    // 11 bytes went out before; a 2-byte chunk passes the 12-byte limit.
    d.reset(&limits);
    d.set_max_body(12);
    std::string a = "b\r\nhello world\r\n";
    ASSERT_EQ(d.feed(a.data(), a.size()), Result::need_more);
    d.drop();
    std::string b = "2\r\n";
    EXPECT_EQ(d.feed(b.data(), b.size()), Result::error);
    EXPECT_EQ(d.error(), Status::PayloadTooLarge);
}

TEST(ChunkedDecoder, KeptTrailersAreNameValueLinesWhateverTheSplit) {
    const std::string input = "3\r\nabc\r\n0\r\nX-A: 1\r\nX-B:\ttwo \r\n\r\n";
    for (std::size_t step = 1; step <= input.size(); ++step) {
        std::vector<char> buf(input.begin(), input.end());
        ParserLimits limits;
        ChunkedDecoder d;
        std::string trailers;
        d.reset(&limits);
        d.keep_trailers(&trailers);
        Result r = Result::need_more;
        for (std::size_t n = step; r == Result::need_more; n = std::min(n + step, input.size()))
            r = d.feed(buf.data(), n);
        ASSERT_EQ(r, Result::done) << step;
        EXPECT_EQ(trailers, "X-A: 1\nX-B:\ttwo \n") << step;
        EXPECT_EQ(std::string(buf.data(), d.decoded_size()), "abc");
    }
}

TEST(ChunkedDecoder, TrailersAreDiscardedUnlessKept) {
    ParserLimits limits;
    const Outcome o = decode_whole("0\r\nX-A: 1\r\n\r\n", limits);
    EXPECT_EQ(o.result, Result::done);
    EXPECT_EQ(o.body, "");
}

}  // namespace
}  // namespace vela
