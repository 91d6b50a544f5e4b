// Encoders and bounded decoders: round trips per coding, level and size; flushed prefixes that
// decode at once; reset(); corrupt, truncated and trailing input; bombs against the limit; and
// streams exchanged with Debian's gzip, brotli and zstd command-line tools in both directions.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "vela/compress/codec.hpp"

using vela::compress::Coding;
using vela::compress::compress;
using vela::compress::Decoder;
using vela::compress::DecodeResult;
using vela::compress::decompress;
using vela::compress::Encoder;

namespace {

constexpr Coding kCodings[] = {Coding::gzip, Coding::br, Coding::zstd};
constexpr std::size_t kMiB = std::size_t(1) << 20;

std::string random_bytes(std::size_t n, unsigned seed = 1) {
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (char& c : s) c = char(rng());
    return s;
}

// Compressible text with some variety: words picked by a fixed generator.
std::string text(std::size_t n, unsigned seed = 2) {
    static const char* const words[] = {"the ",   "server ", "sends ",   "compressed ", "bodies ",
                                        "event ", "data: ",  "{\"id\":", "42, ",        "\n",
                                        "vela ",  "stream ", "header ",  "value ",      "q=0.5 "};
    std::mt19937 rng(seed);
    std::string s;
    s.reserve(n + 16);
    while (s.size() < n) s += words[rng() % std::size(words)];
    s.resize(n);
    return s;
}

std::vector<int> levels(Coding c) {
    switch (c) {
        case Coding::gzip:
            return {-1, 1, 6, 9};
        case Coding::br:
            return {-1, 0, 4, 11};
        case Coding::zstd:
            return {-1, 1, 3, 19};
        default:
            return {};
    }
}

std::string decoded(Coding c, std::string_view z, std::size_t limit = 64 * kMiB) {
    std::string out;
    EXPECT_EQ(decompress(c, z, out, limit), DecodeResult::done) << name(c);
    return out;
}

TEST(Codec, RoundTripLevelsAndSizes) {
    const std::string inputs[] = {"", "x", random_bytes(100 << 10), text(kMiB)};
    for (const Coding c : kCodings) {
        for (const int level : levels(c)) {
            for (const std::string& in : inputs) {
                // Level 11 brotli on a MiB of text takes seconds and tests nothing new.
                if (c == Coding::br && level == 11 && in.size() == kMiB) continue;
                SCOPED_TRACE(std::string(name(c)) + " level " + std::to_string(level) + " size " +
                             std::to_string(in.size()));
                const std::string z = compress(c, in, level);
                EXPECT_EQ(decoded(c, z), in);
                if (in.size() == kMiB) {
                    EXPECT_LT(z.size(), in.size() / 3);
                }
            }
        }
    }
}

TEST(Codec, StreamingWritesAndTinyDecoderPieces) {
    const std::string in = text(300 << 10, 7);
    for (const Coding c : kCodings) {
        SCOPED_TRACE(name(c));
        auto e = Encoder::create(c);
        EXPECT_EQ(e->coding(), c);
        std::string z;
        for (std::size_t i = 0; i < in.size(); i += 1000) e->write(in.substr(i, 1000), z);
        e->finish(z);
        e->finish(z);  // a second finish adds nothing
        // One byte at a time: every state boundary of the decoder is crossed.
        auto d = Decoder::create(c);
        std::string out;
        for (std::size_t i = 0; i + 1 < z.size(); ++i)
            ASSERT_EQ(d->write(z.substr(i, 1), out, in.size()), DecodeResult::more) << i;
        EXPECT_EQ(d->write(z.substr(z.size() - 1), out, in.size()), DecodeResult::done);
        EXPECT_EQ(out, in);
        EXPECT_EQ(d->write("", out, in.size()), DecodeResult::done);
    }
}

// After each flushed write the output so far decodes to exactly the input so far, both with a
// fresh decoder over the whole prefix and with one decoder fed the new bytes.
TEST(Codec, FlushMakesEverythingDecodable) {
    for (const Coding c : kCodings) {
        for (const int level : levels(c)) {
            SCOPED_TRACE(std::string(name(c)) + " level " + std::to_string(level));
            auto e = Encoder::create(c, level);
            auto live = Decoder::create(c);
            std::string z, plain, live_out;
            std::size_t fed = 0;
            for (int event = 0; event < 40; ++event) {
                const std::string msg =
                    "event: tick\ndata: " + text(1 + event * 37, event) + "\n\n";
                plain += msg;
                e->write(msg, z, true);
                std::string prefix;
                ASSERT_EQ(Decoder::create(c)->write(z, prefix, kMiB), DecodeResult::more);
                ASSERT_EQ(prefix, plain) << "event " << event;
                ASSERT_EQ(live->write(std::string_view(z).substr(fed), live_out, kMiB),
                          DecodeResult::more);
                fed = z.size();
                ASSERT_EQ(live_out, plain);
                const std::size_t before = z.size();
                e->write("", z, true);  // a flush with nothing new stays decodable
                ASSERT_EQ(live->write(std::string_view(z).substr(before), live_out, kMiB),
                          DecodeResult::more);
                fed = z.size();
            }
            e->finish(z);
            EXPECT_EQ(live->write(std::string_view(z).substr(fed), live_out, kMiB),
                      DecodeResult::done);
            EXPECT_EQ(live_out, plain);
        }
    }
}

TEST(Codec, ResetStartsANewStream) {
    const std::string a = text(50000, 3), b = random_bytes(20000, 4) + text(30000, 5);
    for (const Coding c : kCodings) {
        SCOPED_TRACE(name(c));
        auto e = Encoder::create(c, 1);
        std::string za, zb, zc;
        e->write(a, za);
        e->finish(za);
        EXPECT_THROW(e->write("late", za), std::logic_error);
        e->reset();
        e->write(b, zb, true);
        e->finish(zb);
        e->reset();  // reset mid-stream abandons that stream (its output so far is garbage)
        std::string abandoned;
        e->write("dropped", abandoned);
        e->reset();
        e->finish(zc);
        EXPECT_EQ(decoded(c, za), a);
        EXPECT_EQ(decoded(c, zb), b);
        EXPECT_EQ(decoded(c, zc), "");
    }
}

TEST(Codec, BadLevelsAndIdentity) {
    EXPECT_THROW(Encoder::create(Coding::gzip, 0), std::invalid_argument);
    EXPECT_THROW(Encoder::create(Coding::gzip, 10), std::invalid_argument);
    EXPECT_THROW(Encoder::create(Coding::gzip, -2), std::invalid_argument);
    EXPECT_THROW(Encoder::create(Coding::br, 12), std::invalid_argument);
    EXPECT_THROW(Encoder::create(Coding::br, -2), std::invalid_argument);
    EXPECT_THROW(Encoder::create(Coding::zstd, 0), std::invalid_argument);
    EXPECT_THROW(Encoder::create(Coding::zstd, 20), std::invalid_argument);
    EXPECT_THROW(Encoder::create(Coding::zstd, -5), std::invalid_argument);
    EXPECT_THROW(compress(Coding::zstd, "x", 22), std::invalid_argument);
    EXPECT_THROW(Encoder::create(Coding::identity), std::invalid_argument);
    EXPECT_THROW(Decoder::create(Coding::identity), std::invalid_argument);
    EXPECT_NO_THROW(Encoder::create(Coding::br, 0));
    EXPECT_NO_THROW(Encoder::create(Coding::zstd, 19));

    EXPECT_EQ(compress(Coding::identity, "plain"), "plain");
    std::string out = "ab";
    EXPECT_EQ(decompress(Coding::identity, "cd", out, 4), DecodeResult::done);
    EXPECT_EQ(decompress(Coding::identity, "ef", out, 5), DecodeResult::too_large);
    EXPECT_EQ(out, "abcde");
}

TEST(Codec, CorruptTruncatedAndTrailing) {
    const std::string in = text(20000, 9);
    for (const Coding c : kCodings) {
        SCOPED_TRACE(name(c));
        const std::string z = compress(c, in);
        std::string out;
        EXPECT_EQ(decompress(c, random_bytes(1000, 11), out, kMiB), DecodeResult::corrupt);
        for (const std::size_t cut : {std::size_t(0), std::size_t(1), z.size() / 2, z.size() - 1}) {
            out.clear();
            EXPECT_EQ(decompress(c, z.substr(0, cut), out, kMiB), DecodeResult::corrupt) << cut;
            out.clear();
            EXPECT_EQ(Decoder::create(c)->write(z.substr(0, cut), out, kMiB), DecodeResult::more);
        }
        out.clear();
        EXPECT_EQ(decompress(c, z + "x", out, kMiB), DecodeResult::corrupt);
        // The same with the end and the garbage in separate writes; the error is final.
        auto d = Decoder::create(c);
        out.clear();
        EXPECT_EQ(d->write(z, out, kMiB), DecodeResult::done);
        EXPECT_EQ(out, in);
        EXPECT_EQ(d->write(std::string_view("\0", 1), out, kMiB), DecodeResult::corrupt);
        EXPECT_EQ(d->write("", out, kMiB), DecodeResult::corrupt);
        // A second complete stream after the first is not decoded (codec.hpp).
        out.clear();
        EXPECT_EQ(decompress(c, z + z, out, kMiB), DecodeResult::corrupt);
    }
    // gzip and zstd carry checksums: a flipped byte in the body is always caught. (A flipped
    // brotli byte may decode to other data: br has no checksum.)
    for (const Coding c : {Coding::gzip, Coding::zstd}) {
        std::string z = compress(c, in);
        z[z.size() / 2] ^= 0x10;
        std::string out;
        EXPECT_EQ(decompress(c, z, out, kMiB), DecodeResult::corrupt) << name(c);
    }
    // HTTP "deflate" (a zlib-wrapped stream) is not gzip.
    std::string out;
    EXPECT_EQ(
        decompress(Coding::gzip, std::string("\x78\x9c\x03\x00\x00\x00\x00\x01", 8), out, kMiB),
        DecodeResult::corrupt);
}

// What a Decoder says of `z` fed in pieces of `step` bytes, ended like decompress(): still
// wanting input at the end is a truncated body.
DecodeResult in_pieces(Coding c, std::string_view z, std::size_t step, std::string& out) {
    auto d = Decoder::create(c);
    DecodeResult r = DecodeResult::more;
    for (std::size_t i = 0; i < z.size(); i += step) r = d->write(z.substr(i, step), out, kMiB);
    return r == DecodeResult::more ? DecodeResult::corrupt : r;
}

// decompress() on the whole body and a Decoder fed it in pieces give the same answer and the
// same output, for every split.
void expect_whole_equals_pieces(Coding c, std::string_view z, DecodeResult want) {
    std::string whole;
    EXPECT_EQ(decompress(c, z, whole, kMiB), want);
    for (const std::size_t step : {1, 2, 3, 7, 64, 1000}) {
        std::string pieces;
        EXPECT_EQ(in_pieces(c, z, step, pieces), want) << "pieces of " << step;
        if (want == DecodeResult::done) {
            EXPECT_EQ(pieces, whole) << "pieces of " << step;
        }
    }
}

// fuzz_decompress found this zstd frame (its corpus keeps it as
// regression-zstd-rle-block-over-window): decompress() took it as an empty body while 1-byte
// pieces called it corrupt. It is single-segment and declares content size 0, so its window is
// 0, and its first block is RLE, whose one content byte is more than the window allows.
// libzstd's one-shot path accepted it and its block-by-block path did not; the decoder now
// always takes the second.
TEST(Codec, ZstdRleBlockOverAZeroWindowIsCorruptWholeAndInPieces) {
    const std::string frame(
        "\x28\xb5\x2f\xfd"   // magic
        "\x24\x00"           // single segment, checksum; content size 0
        "\x02\x00\x00\x00"   // RLE block of 0 bytes (content: one byte), not the last
        "\x01\x00\x00"       // last block: raw, 0 bytes
        "\x99\xe9\xd8\x51",  // checksum of the empty content
        17);
    expect_whole_equals_pieces(Coding::zstd, frame, DecodeResult::corrupt);
    // The same frame without the RLE block is a valid empty body, whole and in pieces.
    expect_whole_equals_pieces(Coding::zstd, frame.substr(0, 6) + frame.substr(10),
                               DecodeResult::done);
}

// For each coding, whole and piecewise decoding agree on valid, truncated, trailing-garbage and
// doubled bodies, empty or not.
TEST(Codec, WholeAndPiecewiseAgree) {
    for (const Coding c : kCodings) {
        SCOPED_TRACE(name(c));
        for (const std::string& in : {std::string(), std::string("a"), text(3000, 21)}) {
            SCOPED_TRACE(in.size());
            const std::string z = compress(c, in);
            expect_whole_equals_pieces(c, z, DecodeResult::done);
            expect_whole_equals_pieces(c, z.substr(0, z.size() - 1), DecodeResult::corrupt);
            expect_whole_equals_pieces(c, z + "x", DecodeResult::corrupt);
            expect_whole_equals_pieces(c, z + std::string(1, '\0'), DecodeResult::corrupt);
            expect_whole_equals_pieces(c, z + z, DecodeResult::corrupt);
        }
        expect_whole_equals_pieces(c, "", DecodeResult::corrupt);
    }
}

TEST(Codec, LimitExactlyReached) {
    const std::string in = text(200000, 12);
    for (const Coding c : kCodings) {
        SCOPED_TRACE(name(c));
        const std::string z = compress(c, in);
        std::string out;
        EXPECT_EQ(decompress(c, z, out, in.size()), DecodeResult::done);
        EXPECT_EQ(out, in);
        out.clear();
        EXPECT_EQ(decompress(c, z, out, in.size() - 1), DecodeResult::too_large);
        EXPECT_EQ(out.size(), in.size() - 1);
        // The limit counts what `out` held before.
        out = "12345";
        EXPECT_EQ(decompress(c, z, out, in.size()), DecodeResult::too_large);
        EXPECT_EQ(out.size(), in.size());
        // An empty stream fits a zero limit.
        out.clear();
        EXPECT_EQ(decompress(c, compress(c, ""), out, 0), DecodeResult::done);
        EXPECT_EQ(decompress(c, compress(c, "a"), out, 0), DecodeResult::too_large);
        EXPECT_TRUE(out.empty());
    }
}

// 100 MiB of zeros compresses to a few KiB; decoding it with a 1 MiB limit must stop at the
// limit, quickly, without `out` ever growing past it.
TEST(Codec, BombStopsAtTheLimit) {
    const std::string zeros(100 * kMiB, '\0');
    for (const Coding c : kCodings) {
        SCOPED_TRACE(name(c));
        const std::string z = compress(c, zeros);
        EXPECT_LT(z.size(), 200000u);
        const auto t0 = std::chrono::steady_clock::now();
        std::string out;
        EXPECT_EQ(decompress(c, z, out, kMiB), DecodeResult::too_large);
        EXPECT_LE(out.size(), kMiB);
        EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
        // Fed in small pieces, the bound holds after every write.
        auto d = Decoder::create(c);
        out.clear();
        DecodeResult r = DecodeResult::more;
        for (std::size_t i = 0; i < z.size() && r == DecodeResult::more; i += 97) {
            r = d->write(std::string_view(z).substr(i, 97), out, kMiB);
            ASSERT_LE(out.size(), kMiB);
        }
        EXPECT_EQ(r, DecodeResult::too_large);
        EXPECT_EQ(d->write("more", out, kMiB), DecodeResult::too_large);
    }
}

// Heap bytes each library holds for one stream. Reported (see the test log) so the cost per
// open compressed response is known; the bounds only catch a large regression.
TEST(Codec, MemoryPerStream) {
    struct Case {
        Coding c;
        int level;
        std::size_t bound;
    };
    const std::string chunk = text(16 << 10, 13);
    for (const Case k : {Case{Coding::gzip, 1, 300 << 10}, Case{Coding::br, -1, 3 * kMiB},
                         Case{Coding::zstd, -1, 3 * kMiB}}) {
        auto e = Encoder::create(k.c, k.level);
        const std::size_t fresh = e->memory();
        std::string z;
        e->write("data: hello\n\n", z, true);
        const std::size_t small = e->memory();
        for (int i = 0; i < 64; ++i) e->write(chunk, z, true);  // 1 MiB streamed
        const std::size_t big = e->memory();
        e->finish(z);
        e->reset();
        auto d = Decoder::create(k.c);
        std::string out;
        EXPECT_EQ(d->write(z, out, 2 * kMiB), DecodeResult::done);
        std::printf(
            "[ memory   ] %s level %d: encoder %zu B new, %zu B after 13 B, %zu B after "
            "1 MiB, %zu B after reset; decoder %zu B after 1 MiB\n",
            std::string(name(k.c)).c_str(), k.level, fresh, small, big, e->memory(), d->memory());
        RecordProperty(std::string(name(k.c)) + "_encoder_bytes_after_1MiB", std::to_string(big));
        EXPECT_GT(big, 0u);
        EXPECT_LE(big, k.bound);
    }
}

// ---- the Debian command-line tools (scripts/install-deps) ----

// False, with a failure naming the package, when `tool` is not on PATH.
bool have_tool(const char* tool, const char* package) {
    const std::string probe = std::string("command -v ") + tool + " >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return true;
    ADD_FAILURE() << tool << " is not installed: install the Debian package '" << package
                  << "' (scripts/install-deps)";
    return false;
}

struct Tool {
    Coding c;
    const char* binary;
    const char* package;
};
constexpr Tool kTools[] = {{Coding::gzip, "gzip", "gzip"},
                           {Coding::br, "brotli", "brotli"},
                           {Coding::zstd, "zstd", "zstd"}};

class TempFile {
  public:
    explicit TempFile(std::string_view bytes) {
        static int n = 0;
        path_ = std::filesystem::temp_directory_path() /
                ("vela-codec-" + std::to_string(getpid()) + "-" + std::to_string(n++));
        std::ofstream(path_, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    }
    ~TempFile() { std::filesystem::remove(path_); }
    std::string path() const { return path_.string(); }

  private:
    std::filesystem::path path_;
};

// Runs `cmd` with a shell and returns its standard output; a failure when it exits non-zero.
std::string run(const std::string& cmd) {
    std::string out;
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) {
        ADD_FAILURE() << "popen: " << cmd;
        return out;
    }
    char buf[1 << 16];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    EXPECT_EQ(pclose(f), 0) << cmd;
    return out;
}

TEST(Codec, DebianToolsDecodeOurStreams) {
    const std::string inputs[] = {"", "x", random_bytes(100 << 10, 21), text(kMiB, 22)};
    for (const Tool& t : kTools) {
        if (!have_tool(t.binary, t.package)) continue;
        for (const int level : levels(t.c)) {
            for (const std::string& in : inputs) {
                if (t.c == Coding::br && level == 11 && in.size() == kMiB) continue;
                SCOPED_TRACE(std::string(t.binary) + " level " + std::to_string(level) + " size " +
                             std::to_string(in.size()));
                const TempFile one_shot(compress(t.c, in, level));
                EXPECT_EQ(run(std::string(t.binary) + " -dc " + one_shot.path()), in);
            }
        }
        // A flushed, streamed body.
        auto e = Encoder::create(t.c);
        std::string z, plain;
        for (int i = 0; i < 50; ++i) {
            const std::string msg = "data: " + text(100 + i, i) + "\n\n";
            plain += msg;
            e->write(msg, z, true);
        }
        e->finish(z);
        const TempFile streamed(z);
        EXPECT_EQ(run(std::string(t.binary) + " -dc " + streamed.path()), plain) << t.binary;
    }
}

TEST(Codec, WeDecodeDebianToolsStreams) {
    const std::string inputs[] = {"", "x", random_bytes(100 << 10, 31), text(kMiB, 32)};
    for (const Tool& t : kTools) {
        if (!have_tool(t.binary, t.package)) continue;
        const std::vector<std::string> flags =
            t.c == Coding::gzip ? std::vector<std::string>{"-1", "-9", "-6 -n"}
            : t.c == Coding::br ? std::vector<std::string>{"-q 0", "-q 5", "-q 9 -w 24"}
                                : std::vector<std::string>{"-1 -q", "-19 -q", "-3 -q --no-check"};
        for (const std::string& flag : flags) {
            for (const std::string& in : inputs) {
                SCOPED_TRACE(std::string(t.binary) + " " + flag + " size " +
                             std::to_string(in.size()));
                const TempFile plain(in);
                // From a file (gzip records its name) and from a pipe (sizes unknown).
                for (const std::string& cmd :
                     {std::string(t.binary) + " " + flag + " -c " + plain.path(),
                      "cat " + plain.path() + " | " + t.binary + " " + flag + " -c"}) {
                    const std::string z = run(cmd);
                    std::string out;
                    EXPECT_EQ(decompress(t.c, z, out, 2 * kMiB), DecodeResult::done) << cmd;
                    EXPECT_EQ(out, in) << cmd;
                }
            }
        }
    }
}

}  // namespace
