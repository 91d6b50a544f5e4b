#pragma once
// Static files: a directory served below a mount point (App::static_files), safely and fast.
//
//     app.static_files("/assets", "./public", {.cache_control = "public, max-age=3600"});
//
// A request's path below the mount is checked (files/path.hpp), then opened below the root's
// directory descriptor with the kernel refusing escapes, through the per-thread FileCache.
// Directories redirect to their slash form and serve an index file; listings only when
// switched on. Precompressed siblings (name.br, name.zst, name.gz) are chosen by
// Accept-Encoding. The response is a file body: the server answers conditional and range
// requests for it and sends it with sendfile(2) where it can.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vela/compress/codec.hpp"
#include "vela/files/mime.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {

/// The Cache-Control value for file names that contain a content hash.
inline constexpr std::string_view kImmutableCacheControl = "public, max-age=31536000, immutable";

/// How a static-files mount behaves. Every default is the safe one.
struct StaticOptions {
    /// Index files tried, in order, for a directory request ending in '/'; empty: none.
    std::vector<std::string> index = {"index.html"};
    /// Generate an HTML listing for a directory without an index file (off: 404).
    bool listing = false;
    /// Serve names starting with '.' (.well-known, .env ...); hidden (404) by default.
    bool dotfiles = false;
    /// Follow symbolic links that lead outside the root (refused by default).
    bool follow_symlinks_outside = false;
    /// Send ETag and answer If-Match / If-None-Match.
    bool etag = true;
    /// Build the ETag from inode, size and modification time (false: size and modification
    /// time, equal across machines that received the same copy).
    bool etag_inode = true;
    /// Send Last-Modified and answer If-Modified-Since / If-Unmodified-Since.
    bool last_modified = true;
    /// Answer Range requests.
    bool ranges = true;
    /// Cache-Control for every file of the mount (empty: none).
    std::string cache_control{};
    /// Cache-Control for file names `immutable` accepts (hashed asset names).
    std::string immutable_cache_control = std::string(kImmutableCacheControl);
    /// Which names get immutable_cache_control (null: none). files::hashed_name is a ready one.
    std::function<bool(std::string_view name)> immutable{};
    /// Precompressed siblings looked for, in the server's order of preference (empty: off).
    std::vector<compress::Coding> precompressed = {compress::Coding::br, compress::Coding::zstd,
                                                   compress::Coding::gzip};
    /// Content-Type overrides by extension (lower case, without the dot).
    files::MimeOverrides mime{};
};

namespace files {

/// True for a file name with a content hash as one dot- or dash-separated part of at least
/// 8 hexadecimal or base-36 characters containing a digit ("app.3f2a9c1b.js", "main-B1x9ZK2q.css").
bool hashed_name(std::string_view name) noexcept;

/// One mount: answers GET and HEAD for paths below it.
class StaticFiles {
  public:
    /// Serves the directory `root` below `mount` ("/assets"; "" or "/" for the whole site).
    /// Throws std::runtime_error naming the directory when it cannot be opened.
    StaticFiles(std::string mount, const std::string& root, StaticOptions options);
    /// Closes the root directory.
    ~StaticFiles();
    StaticFiles(const StaticFiles&) = delete;
    StaticFiles& operator=(const StaticFiles&) = delete;

    /// Answers `req`, whose path below the mount is `rest` (decoded, e.g. "/css/a.css").
    Response serve(const Request& req, std::string_view rest) const;
    /// The mount point (without a trailing slash; "" for the root).
    const std::string& mount() const noexcept { return mount_; }

  private:
    Response serve_directory(const Request& req, const std::string& rel,
                             std::string_view rest) const;
    std::string mount_base(const Request& req, std::string_view rest) const;
    Response serve_file(const Request& req, const std::string& rel,
                        std::shared_ptr<const OpenFile> file) const;

    std::string mount_;
    std::string root_;
    std::string root_key_;
    int root_fd_ = -1;
    StaticOptions options_;
};

/// Makes `res` send `file` (opened through FileCache) named `name`: Content-Type, ETag,
/// Last-Modified, Accept-Ranges, Cache-Control and Content-Disposition as `options` say.
void describe_file(Response& res, std::shared_ptr<const OpenFile> file, std::string_view name,
                   const SendFileOptions& options, std::string_view content_type = {});

}  // namespace files
}  // namespace vela
