#include "vela/files/file_cache.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <list>
#include <mutex>
#include <unordered_map>

#include "vela/http/conditional.hpp"

namespace vela::files {

namespace {

std::mutex options_mutex;
FileCacheOptions shared_options;
std::atomic<std::uint64_t> options_version{0};

std::uint64_t now_ms() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1'000'000;
}

OpenStatus from_errno(int e) noexcept {
    switch (e) {
        case ENOENT:
        case ENOTDIR:
        case ENAMETOOLONG:
        case ELOOP:
            return OpenStatus::not_found;
        case EACCES:
        case EPERM:
            return OpenStatus::forbidden;
        case EXDEV:  // RESOLVE_BENEATH: the path would leave the root
            return OpenStatus::outside_root;
        default:
            return OpenStatus::error;
    }
}

int open_beneath(int root_fd, const char* rel, bool beneath) noexcept {
    // O_NONBLOCK: opening a FIFO must not block the loop (it is refused after fstat anyway).
    const int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    if (beneath) {
        static std::atomic<bool> no_openat2{false};
        if (!no_openat2.load(std::memory_order_relaxed)) {
            open_how how{};
            how.flags = static_cast<std::uint64_t>(flags);
            how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
            long fd;
            do {
                fd = syscall(SYS_openat2, root_fd, rel, &how, sizeof how);
            } while (fd < 0 && (errno == EINTR || errno == EAGAIN));
            if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
            no_openat2.store(true, std::memory_order_relaxed);
        }
        // A kernel before 5.6: open, then check where the descriptor really points.
        const int fd = ::openat(root_fd, rel, flags);
        if (fd < 0) return fd;
        char want[PATH_MAX], got[PATH_MAX], root_link[64];
        std::snprintf(root_link, sizeof root_link, "/proc/self/fd/%d", root_fd);
        ssize_t wn = ::readlink(root_link, want, sizeof want - 1);
        char link[64];
        std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t gn = ::readlink(link, got, sizeof got - 1);
        if (wn == 1) wn = 0;  // the root is "/": every path is below it
        if (wn < 0 || gn <= wn ||
            std::string_view(got, static_cast<std::size_t>(wn)) !=
                std::string_view(want, static_cast<std::size_t>(wn)) ||
            got[wn] != '/') {
            ::close(fd);
            errno = EXDEV;
            return -1;
        }
        return fd;
    }
    return ::openat(root_fd, rel, flags);
}

std::string hex_etag(std::uint64_t a, std::uint64_t b, std::uint64_t c, bool with_a) {
    char text[64];
    if (with_a) {
        std::snprintf(text, sizeof text, "\"%llx-%llx-%llx\"", static_cast<unsigned long long>(a),
                      static_cast<unsigned long long>(b), static_cast<unsigned long long>(c));
    } else {
        std::snprintf(text, sizeof text, "\"%llx-%llx\"", static_cast<unsigned long long>(b),
                      static_cast<unsigned long long>(c));
    }
    return text;
}

OpenFile::Meta describe(const struct stat& st) {
    OpenFile::Meta m;
    m.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    m.inode = static_cast<std::uint64_t>(st.st_ino);
    const auto size = static_cast<std::uint64_t>(st.st_size);
    const auto mtime = static_cast<std::uint64_t>(m.mtime_ns);
    m.etag = hex_etag(m.inode, size, mtime, true);
    m.etag_no_inode = hex_etag(0, size, mtime, false);
    m.last_modified = format_http_date(m.mtime_ns / 1'000'000'000);
    return m;
}

bool same_file(const struct stat& st, const OpenFile& f) noexcept {
    return static_cast<std::uint64_t>(st.st_ino) == f.meta().inode &&
           static_cast<std::uint64_t>(st.st_size) == f.size() &&
           static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec ==
               f.meta().mtime_ns;
}

}  // namespace

OpenStatus open_file(int root_fd, std::string_view rel, bool beneath, std::size_t content_max,
                     std::shared_ptr<const OpenFile>& out) {
    std::string name(rel.empty() ? std::string_view(".") : rel);
    const int fd = open_beneath(root_fd, name.c_str(), beneath);
    if (fd < 0) return from_errno(errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        return from_errno(e);
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        return OpenStatus::directory;
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return OpenStatus::not_regular;
    }
    auto file = std::make_shared<OpenFile>(fd, static_cast<std::uint64_t>(st.st_size));
    file->set_meta(describe(st));
    if (file->size() <= content_max) {
        std::string bytes(file->size(), '\0');
        std::size_t got = 0;
        while (got < bytes.size()) {
            const ssize_t n =
                ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        if (got == bytes.size()) {
            file->set_content(std::move(bytes));
            // Sent from memory from now on: the descriptor would only count against the
            // process's limit (changes are detected by path).
            file->close_fd();
        }
    }
    out = std::move(file);
    return OpenStatus::ok;
}

struct FileCache::Impl {
    struct Entry {
        std::string key;
        std::shared_ptr<const OpenFile> file;
        OpenStatus status = OpenStatus::not_found;
        std::uint64_t checked_ms = 0;
        std::uint64_t version = 0;  // options_version when opened
    };
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    using List = std::list<Entry>;
    List lru;  // most recently used first
    std::unordered_map<std::string, List::iterator, Hash, std::equal_to<>> index;
    std::string key;  // scratch for lookups (no allocation once grown)

    OpenStatus lookup(int root_fd, std::string_view root_key, std::string_view rel, bool beneath,
                      std::shared_ptr<const OpenFile>& out) {
        key.assign(root_key).push_back(beneath ? '\0' : '\1');
        key.append(rel);
        // The version first: a configure() in between then makes the entry refresh later.
        const std::uint64_t version = options_version.load(std::memory_order_acquire);
        const FileCacheOptions opt = FileCache::options();
        const std::uint64_t now = now_ms();
        auto it = index.find(std::string_view(key));
        if (it != index.end()) {
            Entry& e = *it->second;
            lru.splice(lru.begin(), lru, it->second);
            const auto interval = static_cast<std::uint64_t>(opt.check_interval.count());
            if (e.version == version && now - e.checked_ms < interval) return hand_out(e, out);
            // Due for a check: unchanged files keep their descriptor.
            struct stat st;
            const char* name = rel.empty() ? "." : key.c_str() + root_key.size() + 1;
            const bool exists = ::fstatat(root_fd, name, &st, 0) == 0;
            if (e.version == version &&
                ((e.status == OpenStatus::ok && exists && S_ISREG(st.st_mode) &&
                  same_file(st, *e.file)) ||
                 (e.status == OpenStatus::directory && exists && S_ISDIR(st.st_mode)) ||
                 (e.status == OpenStatus::not_found && !exists && errno == ENOENT))) {
                e.checked_ms = now;
                return hand_out(e, out);
            }
            e.file.reset();
            e.status = open_file(root_fd, rel, beneath, opt.content_max, e.file);
            e.checked_ms = now;
            e.version = version;
            return hand_out(e, out);
        }
        Entry e;
        e.status = open_file(root_fd, rel, beneath, opt.content_max, e.file);
        if (e.status == OpenStatus::error && (errno == EMFILE || errno == ENFILE) && !lru.empty()) {
            // Out of descriptors: give back the ones this cache holds (responses still sending
            // a file keep theirs) and try once more.
            index.clear();
            lru.clear();
            e.status = open_file(root_fd, rel, beneath, opt.content_max, e.file);
        }
        if (e.status == OpenStatus::error) return e.status;  // not remembered
        e.key = key;
        e.checked_ms = now;
        e.version = version;
        lru.push_front(std::move(e));
        index.emplace(lru.front().key, lru.begin());
        while (lru.size() > opt.max_entries && lru.size() > 1) {
            index.erase(lru.back().key);
            lru.pop_back();
        }
        return hand_out(lru.front(), out);
    }

    static OpenStatus hand_out(const Entry& e, std::shared_ptr<const OpenFile>& out) {
        if (e.status == OpenStatus::ok) out = e.file;
        return e.status;
    }
};

FileCache::FileCache() : impl_(std::make_unique<Impl>()) {}
FileCache::~FileCache() = default;

FileCache& FileCache::local() {
    thread_local FileCache cache;
    return cache;
}

void FileCache::configure(const FileCacheOptions& options) {
    std::lock_guard lock(options_mutex);
    shared_options = options;
    options_version.fetch_add(1, std::memory_order_relaxed);
}

FileCacheOptions FileCache::options() {
    // Read per lookup; the lock is uncontended (configure runs before the server starts).
    thread_local std::uint64_t seen = ~std::uint64_t{0};
    thread_local FileCacheOptions copy;
    const std::uint64_t v = options_version.load(std::memory_order_acquire);
    if (v != seen) {
        std::lock_guard lock(options_mutex);
        copy = shared_options;
        seen = v;
    }
    return copy;
}

OpenStatus FileCache::open_below(int root_fd, std::string_view root_key, std::string_view rel,
                                 bool beneath, std::shared_ptr<const OpenFile>& out) {
    return impl_->lookup(root_fd, root_key, rel, beneath, out);
}

OpenStatus FileCache::open_path(std::string_view path, std::shared_ptr<const OpenFile>& out) {
    return impl_->lookup(AT_FDCWD, std::string_view("\2"), path, false, out);
}

void FileCache::clear() noexcept {
    impl_->index.clear();
    impl_->lru.clear();
}

std::size_t FileCache::size() const noexcept { return impl_->lru.size(); }

}  // namespace vela::files
