#pragma once
// Content codings: gzip (zlib), br (brotli) and zstd (zstd), as streaming encoders and
// bounded decoders, plus Accept-Encoding negotiation with q-values (RFC 9110 12.5.3).
//
// Encoders and decoders are single-threaded objects: one per response or request body, used by
// the thread that owns it. Their library state is allocated through counting hooks, so
// memory() reports what the codec really holds (the caller's output strings are not counted).
//
// Choices the callers rely on:
//  - gzip is zlib's deflate with the gzip wrapper (32 KiB window, memLevel 8); HTTP "deflate"
//    (the zlib wrapper) is not supported in either direction. A gzip stream with a second
//    member after the first is corrupt (HTTP encoders write one member, and ending at the first
//    keeps "bytes after the end" one rule for all three codings; `gzip -dc` would accept it).
//  - br: the default quality is 4 (about gzip -6's speed, smaller output). Encoders from
//    Encoder::create use a 512 KiB window (br lgwin 19, zstd windowLog at most 19) to bound
//    memory per open stream (measured in tests/compress, default levels and gzip 1: gzip
//    0.27 MB, br 1.9 MB after 1 MiB, zstd 2.1 MB); compress() knows the input size and uses
//    the libraries' defaults (br 4 MiB, zstd per level) for the best ratio.
//  - zstd frames carry a checksum; the decoder refuses windows above 8 MiB (RFC 9659 section
//    3: HTTP zstd decoders need not support more), which is reported as corrupt. A second
//    frame after the first is corrupt too. br has no checksum: corruption may go unnoticed.
//  - A decoder's memory follows the window the sender chose: up to 32 KiB for gzip, 8 MiB
//    for zstd and 16 MiB for br (libbrotlidec cannot cap it), plus small tables. Bound the
//    number of concurrent decoders, not only their output limit.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vela::compress {

/// A content coding vela can produce or read.
enum class Coding : std::uint8_t { identity, gzip, br, zstd };

/// The HTTP token of a coding ("identity", "gzip", "br", "zstd").
std::string_view name(Coding c) noexcept;
/// The coding named by a Content-Encoding / Accept-Encoding token (case-insensitive;
/// "x-gzip" is gzip); nullopt for one vela does not know.
std::optional<Coding> parse_coding(std::string_view token) noexcept;
/// The file-name suffix of a precompressed sibling (".gz", ".br", ".zst"; empty for identity).
std::string_view file_suffix(Coding c) noexcept;

/// An Accept-Encoding field value read into q-values (thousandths, 0..1000).
class AcceptEncoding {
  public:
    /// Reads `header` (absent field: pass `present = false`). Members with a malformed
    /// q-value or token are skipped; a repeated coding keeps its first q-value (and a repeated
    /// "q" parameter its first value); parameters other than "q" are ignored.
    explicit AcceptEncoding(std::string_view header, bool present = true) noexcept;
    /// The q-value the client gives `c`: its own, else "*"'s, else 0 (identity: 1000 unless
    /// excluded by "identity;q=0" or "*;q=0" without an identity member). With no field at
    /// all, every coding is acceptable (RFC 9110 12.5.3) but vela then sends identity.
    int quality(Coding c) const noexcept;
    /// True when the field was present.
    bool present() const noexcept { return present_; }
    /// True when the field names `c` itself (not only through "*").
    bool lists(Coding c) const noexcept { return q_[static_cast<int>(c)] >= 0; }

  private:
    bool present_;
    bool has_star_ = false;
    int star_ = 0;
    int q_[4] = {-1, -1, -1, -1};  // per Coding; -1: not listed
};

/// Picks the coding to send: among `preference` (the server's order, best first) the one
/// with the highest q-value above 0, ties going to the earlier; identity when none is
/// acceptable or the field is absent. The result may be identity even when quality(identity)
/// is 0: sending it anyway (RFC 9110 12.5.3 allows that) or a 406 is the caller's choice.
Coding negotiate(const AcceptEncoding& accept, std::span<const Coding> preference) noexcept;

/// A streaming compressor. Output is appended to the caller's string.
class Encoder {
  public:
    /// Frees the codec's state.
    virtual ~Encoder() = default;
    /// A new encoder for `c` (not identity) at `level` (the algorithm's own scale: gzip 1-9,
    /// br 0-11, zstd 1-19; -1 = the default: gzip 6, br 4, zstd 3). Throws std::invalid_argument
    /// for a level out of range or identity, std::runtime_error when the library fails (memory).
    static std::unique_ptr<Encoder> create(Coding c, int level = -1);
    /// Compresses `in`, appending output to `out`. With `flush`, everything written so far
    /// becomes decodable by the client now (for streamed bodies such as server-sent events).
    /// Throws std::logic_error after finish() until reset().
    virtual void write(std::string_view in, std::string& out, bool flush = false) = 0;
    /// Ends the stream, appending the remaining output and the trailer to `out` (a second call
    /// appends nothing).
    virtual void finish(std::string& out) = 0;
    /// Makes the encoder ready for a new stream at the same level (cheaper than a new one).
    virtual void reset() = 0;
    /// The coding.
    virtual Coding coding() const noexcept = 0;
    /// Bytes the compression library holds for this encoder now (its allocations, counted).
    virtual std::size_t memory() const noexcept = 0;
};

/// Compresses all of `in` with `c` at `level` in one call (identity: a copy of `in`).
std::string compress(Coding c, std::string_view in, int level = -1);

/// What a Decoder step found.
enum class DecodeResult : std::uint8_t {
    more,       ///< consumed everything; the stream is not finished yet
    done,       ///< the stream ended (trailing bytes after the end are an error: corrupt)
    too_large,  ///< the output would exceed the limit (a decompression bomb)
    corrupt,    ///< not valid data for the coding
};

/// A streaming decompressor whose output is bounded.
class Decoder {
  public:
    /// Frees the codec's state.
    virtual ~Decoder() = default;
    /// A new decoder for `c` (not identity: std::invalid_argument).
    static std::unique_ptr<Decoder> create(Coding c);
    /// Decompresses `in`, appending to `out`; stops with too_large before `out` would grow past
    /// `limit` bytes in total (the work done per call is bounded by the output it may produce:
    /// output is made in steps of at most 64 KiB, and one byte past `limit` shows that more
    /// remains; libbrotlidec alone may decode up to its window, at most 16 MiB, ahead of the
    /// output it hands over, and may then report invalid data found there as corrupt where
    /// smaller writes would have seen too_large). corrupt, too_large and
    /// done (followed by more input: corrupt) are final. Throws std::runtime_error when the
    /// library cannot allocate its state.
    virtual DecodeResult write(std::string_view in, std::string& out, std::size_t limit) = 0;
    /// Bytes the decompression library holds for this decoder now (its allocations, counted).
    virtual std::size_t memory() const noexcept = 0;
};

/// Decompresses all of `in` (a complete stream) into `out`, at most `limit` bytes; returns done
/// on success, too_large or corrupt otherwise (a truncated stream is corrupt). Identity copies,
/// up to the limit.
DecodeResult decompress(Coding c, std::string_view in, std::string& out, std::size_t limit);

}  // namespace vela::compress
