#pragma once
// Content types for file names, from a built-in table with per-mount overrides, and the
// Content-Disposition value for downloads.

#include <string>
#include <string_view>
#include <unordered_map>

namespace vela::files {

/// The built-in Content-Type for a file name's extension (case-insensitive, the last dot's),
/// text types with "; charset=utf-8"; "application/octet-stream" when unknown. The table
/// covers the web's common types: html, css, js/mjs, json, map, txt, csv, xml, svg, wasm,
/// images (png, jpg/jpeg, gif, webp, avif, ico, bmp), fonts (woff, woff2, ttf, otf), audio
/// and video (mp3, ogg, wav, mp4, webm), pdf, zip, gz, tar, md, webmanifest, and more.
/// "; charset=utf-8" is on every text/* type and on JSON, JavaScript and XML (including
/// +json, +xml and SVG), never on binary types. Only the last path segment counts (after '/'
/// or '\\'); a leading dot alone (".bashrc"), a trailing dot or an extension longer than 15
/// bytes means no extension. Does not allocate; the result points into a static table.
std::string_view mime_type(std::string_view file_name) noexcept;

/// User overrides: extension without the dot (lower case) -> Content-Type.
using MimeOverrides = std::unordered_map<std::string, std::string>;
/// mime_type() with `overrides` consulted first (keyed by the lower-cased extension); an
/// overridden result points into `overrides`. Does not allocate for extensions up to 15 bytes.
std::string_view mime_type(std::string_view file_name, const MimeOverrides& overrides) noexcept;

/// True when responses of this Content-Type are worth compressing (text/*, JSON, JavaScript,
/// XML, SVG, wasm, ... ; not images, audio, video, archives, fonts woff/woff2). Parameters
/// after ';' are ignored and the match is case-insensitive. Besides the text/*, +json and +xml
/// families: ttf, otf, eot, ico, bmp, YAML, TOML and SubRip.
bool compressible(std::string_view content_type) noexcept;

/// A Content-Disposition value: `attachment` (or `inline`) with `filename` as an ASCII
/// fallback (one '_' per non-ASCII character, '_' for quotes, backslashes, '%' and controls)
/// and, when the fallback differs from the name, `filename*=UTF-8''` with RFC 8187
/// percent-encoding. The name's directory part (up to the last '/' or '\\') is dropped; an
/// empty name gives the bare disposition type. The value never holds CR, LF, NUL or non-ASCII.
std::string content_disposition(std::string_view filename, bool attachment = true);

}  // namespace vela::files
