#pragma once
// Response compression and request decompression, as middleware.
//
//     app.use(vela::compression());                          // gzip, br, zstd by Accept-Encoding
//     app.use(vela::compression({.gzip_level = 1}));         // cheaper gzip
//     app.use(vela::request_decompression());                // Content-Encoding on request bodies
//
// compression() is an after hook (synchronous: a route stays allocation-free when nothing is
// compressed). It picks the coding by the client's q-values and the server's preference,
// skips small bodies, types that do not compress (images, video, archives), responses that
// already have a Content-Encoding (a handler's own, or a precompressed static file) and
// "Cache-Control: no-transform"; it adds Vary: Accept-Encoding, makes the ETag of the
// compressed variant distinct ("abc" -> "abc-gzip"), and answers If-None-Match / If-Match
// for it (304 / 412; the handler only knows its own tag).
// Streamed bodies are compressed piece by piece and flushed after each piece, so server-sent
// events arrive at once. File bodies up to max_file_size are compressed whole (Content-Length
// kept); larger ones stream. Compressed responses do not honour Range (the whole is sent).

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vela/compress/codec.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {

/// How compression() compresses responses.
struct CompressionOptions {
    /// Codings offered, the server's preference first (among equal client q-values).
    std::vector<compress::Coding> preference = {compress::Coding::zstd, compress::Coding::br,
                                                compress::Coding::gzip};
    /// Codings offered for streamed bodies (stream_body, sse), preference first. Each stream
    /// keeps its own encoder for its lifetime (gzip about 270 KB, br 0.5-1.9 MB, zstd about
    /// 2 MB), so gzip leads here: many long-lived event streams stay affordable. Empty: streamed
    /// bodies are not compressed.
    std::vector<compress::Coding> stream_preference = {compress::Coding::gzip, compress::Coding::br,
                                                       compress::Coding::zstd};
    /// Bodies shorter than this are sent as they are (compression would not pay).
    std::size_t min_size = 1024;
    /// Content-Types compressed (compared without parameters; "text/*" matches the whole
    /// type). Empty: the built-in list (files::compressible: text, JSON, JavaScript, XML, SVG,
    /// wasm, ...).
    std::vector<std::string> types{};
    /// gzip level, 1 (fastest) to 9.
    int gzip_level = 6;
    /// brotli quality, 0 to 11 (above 5 is for precompressing, not per request).
    int br_level = 4;
    /// zstd level, 1 to 19.
    int zstd_level = 3;
    /// File bodies up to this size are compressed in memory with a Content-Length; larger
    /// ones are read and compressed as a stream.
    std::size_t max_file_size = 1024 * 1024;
};

/// The compression middleware (an after hook; see above). Throws std::invalid_argument for a
/// level out of range.
std::function<void(Request&, Response&)> compression(CompressionOptions options = {});

/// How request_decompression() reads compressed request bodies.
struct RequestDecompressionOptions {
    /// The largest decompressed body; more is answered 413 (a decompression bomb stops there,
    /// without inflating the rest). Keep it at or below limits.max_body.
    std::size_t max_size = 16 * 1024 * 1024;
    /// Codings accepted; another Content-Encoding is answered 415 with Accept-Encoding.
    std::vector<compress::Coding> codings = {compress::Coding::gzip, compress::Coding::br,
                                             compress::Coding::zstd};
};

/// Middleware (a before hook) that decompresses request bodies sent with Content-Encoding
/// gzip, br or zstd, so handlers read the plain body: 413 past max_size, 400 for corrupt data,
/// 415 for another coding. Streaming routes (App::streaming) get the body as sent.
std::function<std::optional<Response>(Request&)> request_decompression(
    RequestDecompressionOptions options = {});

}  // namespace vela
