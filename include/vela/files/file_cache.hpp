#pragma once
// Open files and their metadata, cached per thread (so per loop: no lock, no sharing).
//
// A hot file then costs no open(2) or fstat(2) per request: the cache hands out the same
// OpenFile (and, for small files, the bytes read once) until the file changes. Whether it
// changed is checked with one stat at most once per check interval per file; a changed file
// (other inode, size or modification time) is opened again, so responses already sending
// the old one keep their descriptor. Misses are cached the same way, so a flood of requests
// for absent files (or for absent precompressed siblings) costs one lookup each.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "vela/http/file_body.hpp"

namespace vela::files {

/// The outcome of an open through the cache.
enum class OpenStatus : std::uint8_t {
    ok,            ///< a regular file
    not_found,     ///< no such file (or a path through a non-directory, or too long)
    forbidden,     ///< permission denied
    directory,     ///< a directory
    not_regular,   ///< a device, FIFO or socket: never served
    outside_root,  ///< a symbolic link (or ..) leads outside the root
    error,         ///< another error (too many open files, I/O error)
};

/// Tuning shared by every thread's cache (set before the server starts).
struct FileCacheOptions {
    /// Most files (and misses) one thread keeps.
    std::size_t max_entries = 1024;
    /// Files up to this size are also kept in memory (sent without a read).
    std::size_t content_max = 16 * 1024;
    /// How often a cached file is checked for changes.
    std::chrono::milliseconds check_interval{1000};
};

/// A per-thread cache of open files (see above).
class FileCache {
  public:
    /// This thread's cache.
    static FileCache& local();
    /// Sets the tuning for every thread's cache (applies to entries opened afterwards).
    static void configure(const FileCacheOptions& options);
    /// The current tuning.
    static FileCacheOptions options();

    /// Opens `rel` (a checked relative name, vela/files/path.hpp) below the directory `root_fd`,
    /// whose cache identity is `root_key`. With `beneath`, the kernel refuses any escape from
    /// the root (openat2 RESOLVE_BENEATH: "..", absolute symbolic links, links leading out);
    /// without it, symbolic links may lead anywhere. `out` is set on ok.
    OpenStatus open_below(int root_fd, std::string_view root_key, std::string_view rel,
                          bool beneath, std::shared_ptr<const OpenFile>& out);
    /// Opens the file at `path` (absolute, or relative to the working directory).
    OpenStatus open_path(std::string_view path, std::shared_ptr<const OpenFile>& out);

    /// Forgets every entry (their files close once no response sends them).
    void clear() noexcept;
    /// Entries held (files and misses).
    std::size_t size() const noexcept;

    FileCache();
    ~FileCache();
    FileCache(const FileCache&) = delete;
    FileCache& operator=(const FileCache&) = delete;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// The uncached open below a root used by FileCache (exposed for tests): a new OpenFile with
/// its metadata (and its bytes when at most `content_max`).
OpenStatus open_file(int root_fd, std::string_view rel, bool beneath, std::size_t content_max,
                     std::shared_ptr<const OpenFile>& out);

}  // namespace vela::files
