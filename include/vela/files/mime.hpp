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
std::string_view mime_type(std::string_view file_name) noexcept;

/// User overrides: extension without the dot (lower case) -> Content-Type.
using MimeOverrides = std::unordered_map<std::string, std::string>;
/// mime_type() with `overrides` consulted first.
std::string_view mime_type(std::string_view file_name, const MimeOverrides& overrides) noexcept;

/// True when responses of this Content-Type are worth compressing (text/*, JSON, JavaScript,
/// XML, SVG, wasm, ... ; not images, audio, video, archives, fonts woff/woff2).
bool compressible(std::string_view content_type) noexcept;

/// A Content-Disposition value: `attachment` (or `inline`) with `filename` as an ASCII
/// fallback (non-ASCII, quotes, backslashes and controls replaced by '_') and, when the name
/// is not plain ASCII, `filename*=UTF-8''` with RFC 8187 percent-encoding. The name's
/// directory part is dropped.
std::string content_disposition(std::string_view filename, bool attachment = true);

}  // namespace vela::files
