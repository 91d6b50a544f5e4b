#include "vela/files/static_files.hpp"

#include "vela/base/html.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "vela/base/ascii.hpp"
#include "vela/files/file_cache.hpp"
#include "vela/files/path.hpp"

namespace vela {

namespace {

std::string_view base_name(std::string_view path) noexcept {
    const std::size_t slash = path.find_last_of('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

void fail(Response& res, Status s) {
    res.clear_file_body();
    res.set_status(s);
    res.remove_header("Content-Type");
    res.set_body(std::string(reason_phrase(s)));
    res.set_content_type(mime::text);
}

// Percent-encodes a path for a Location header: unreserved characters and '/' stay.
std::string encode_path(std::string_view path) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(path.size());
    for (unsigned char c : path) {
        if (ascii::is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

}  // namespace

Response& Response::send_file(std::string_view path, const SendFileOptions& options) {
    std::shared_ptr<const OpenFile> file;
    switch (files::FileCache::local().open_path(path, file)) {
        case files::OpenStatus::ok:
            files::describe_file(*this, std::move(file), path, options);
            return *this;
        case files::OpenStatus::forbidden:
            fail(*this, Status::Forbidden);
            return *this;
        case files::OpenStatus::error:
            fail(*this, Status::InternalServerError);
            return *this;
        default:
            fail(*this, Status::NotFound);
            return *this;
    }
}

namespace files {

void describe_file(Response& res, std::shared_ptr<const OpenFile> file, std::string_view name,
                   const SendFileOptions& o, std::string_view content_type) {
    if (!o.content_type.empty()) {
        res.set_content_type(o.content_type);
    } else {
        res.set_content_type(content_type.empty() ? mime_type(name) : content_type);
    }
    FileBody fb;
    fb.parts.push_back(FileBody::Part{{}, 0, file->size()});
    fb.etag_kind = o.etag ? FileBody::Etag::full : FileBody::Etag::none;
    fb.use_last_modified = o.last_modified;
    fb.ranges = o.ranges;
    if (o.etag) res.add_header("ETag", file->meta().etag);
    if (o.last_modified) res.add_header("Last-Modified", file->meta().last_modified);
    if (o.ranges) res.add_header("Accept-Ranges", "bytes");
    if (!o.cache_control.empty()) res.add_header("Cache-Control", o.cache_control);
    if (o.attachment || !o.download_name.empty())
        res.add_header(
            "Content-Disposition",
            content_disposition(o.download_name.empty() ? base_name(name)
                                                        : std::string_view(o.download_name)));
    fb.file = std::move(file);
    res.set_file_body(std::move(fb));
}

bool hashed_name(std::string_view name) noexcept {
    name = base_name(name);
    std::size_t start = 0;
    while (start < name.size()) {
        std::size_t end = name.find_first_of(".-_", start);
        if (end == std::string_view::npos) end = name.size();
        const std::string_view part = name.substr(start, end - start);
        // The extension itself is never the hash.
        if (end != name.size() && part.size() >= 8) {
            bool alnum = true, digit = false;
            for (char c : part) {
                alnum = alnum && ascii::is_alnum(static_cast<unsigned char>(c));
                digit = digit || (c >= '0' && c <= '9');
            }
            if (alnum && digit) return true;
        }
        start = end + 1;
    }
    return false;
}

StaticFiles::StaticFiles(std::string mount, const std::string& root, StaticOptions options)
    : mount_(std::move(mount)), root_(root), options_(std::move(options)) {
    while (!mount_.empty() && mount_.back() == '/') mount_.pop_back();
    root_fd_ = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd_ < 0)
        throw std::runtime_error("static files: cannot open directory '" + root +
                                 "': " + std::strerror(errno) + " (check the path)");
    // The cache tells roots apart by device and inode, not by the spelling of the path.
    struct stat st;
    ::fstat(root_fd_, &st);
    root_key_ =
        fmt::format("r{}:{}{}", st.st_dev, st.st_ino, options_.follow_symlinks_outside ? 'o' : 'b');
}

StaticFiles::~StaticFiles() {
    if (root_fd_ >= 0) ::close(root_fd_);
}

Response StaticFiles::serve(const Request& req, std::string_view rest) const {
    thread_local std::string rel;
    Response res;
    switch (check_path(rest, rel, options_.dotfiles)) {
        case PathVerdict::ok:
            break;
        case PathVerdict::bad:
            fail(res, Status::BadRequest);
            return res;
        case PathVerdict::hidden:
            fail(res, Status::NotFound);
            return res;
    }
    std::shared_ptr<const OpenFile> file;
    const bool beneath = !options_.follow_symlinks_outside;
    switch (FileCache::local().open_below(root_fd_, root_key_, rel, beneath, file)) {
        case OpenStatus::ok:
            if (ends_with_slash(rest)) break;  // "file.txt/": not a directory
            return serve_file(req, rel, std::move(file));
        case OpenStatus::directory:
            if ((!ends_with_slash(rest) && !rel.empty()) || (rest.empty() && !mount_.empty())) {
                // The slash form, so relative links inside the page resolve below it.
                res.set_status(Status::MovedPermanently);
                std::string location = encode_path(
                    fmt::format("{}/{}{}", mount_base(req, rest), rel, rel.empty() ? "" : "/"));
                if (!req.query_string().empty()) location.append("?").append(req.query_string());
                res.add_header("Location", location);
                return res;
            }
            return serve_directory(req, rel, rest);
        case OpenStatus::forbidden:
            fail(res, Status::Forbidden);
            return res;
        case OpenStatus::error:
            fail(res, Status::InternalServerError);
            return res;
        default:
            break;
    }
    fail(res, Status::NotFound);
    return res;
}

// Where the mount sits in this request's path (a group prefix may have had parameters), with
// repeated slashes collapsed: a Location starting with "//" would name another host.
std::string StaticFiles::mount_base(const Request& req, std::string_view rest) const {
    std::string_view path = req.path();
    path.remove_suffix(std::min(rest.size(), path.size()));
    std::string base;
    for (char c : path)
        if (c != '/' || base.empty() || base.back() != '/') base.push_back(c);
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base;
}

Response StaticFiles::serve_file(const Request& req, const std::string& rel,
                                 std::shared_ptr<const OpenFile> file) const {
    Response res;
    const std::string_view type = mime_type(rel, options_.mime);
    SendFileOptions o;
    o.etag = options_.etag;
    o.last_modified = options_.last_modified;
    o.ranges = options_.ranges;
    const bool immutable = options_.immutable && options_.immutable(base_name(rel));
    const std::string& cache_control =
        immutable ? options_.immutable_cache_control : options_.cache_control;
    if (!options_.precompressed.empty() && compressible(type)) {
        // The response depends on Accept-Encoding whichever variant is sent.
        res.add_header("Vary", "Accept-Encoding");
        const std::string_view accept = req.header("Accept-Encoding");
        if (!accept.empty()) {
            const compress::AcceptEncoding ae(accept);
            // The best acceptable sibling that exists: highest q first, then our order.
            compress::Coding best = compress::Coding::identity;
            int best_q = 0;
            std::shared_ptr<const OpenFile> best_file;
            thread_local std::string sibling;
            for (compress::Coding c : options_.precompressed) {
                const int q = ae.quality(c);
                if (q <= best_q) continue;
                sibling.assign(rel).append(compress::file_suffix(c));
                std::shared_ptr<const OpenFile> f;
                if (FileCache::local().open_below(root_fd_, root_key_, sibling,
                                                  !options_.follow_symlinks_outside,
                                                  f) == OpenStatus::ok) {
                    best = c;
                    best_q = q;
                    best_file = std::move(f);
                }
            }
            // Any acceptable sibling beats the original, unless the client ranks identity
            // higher by name (RFC 9110 12.5.3 gives an unlisted identity no rank of its own).
            if (best_file && (!ae.lists(compress::Coding::identity) ||
                              best_q >= ae.quality(compress::Coding::identity))) {
                res.add_header("Content-Encoding", compress::name(best));
                file = std::move(best_file);
            }
        }
    }
    if (!cache_control.empty()) o.cache_control = cache_control;
    describe_file(res, std::move(file), rel, o, type);
    if (!options_.etag_inode && options_.etag) {
        res.set_header("ETag", res.file_body()->file->meta().etag_no_inode);
        res.file_body()->etag_kind = FileBody::Etag::no_inode;
    }
    return res;
}

Response StaticFiles::serve_directory(const Request& req, const std::string& rel,
                                      std::string_view rest) const {
    Response res;
    thread_local std::string name;
    for (const std::string& index : options_.index) {
        name.assign(rel);
        if (!name.empty()) name.push_back('/');
        name.append(index);
        std::shared_ptr<const OpenFile> file;
        if (FileCache::local().open_below(root_fd_, root_key_, name,
                                          !options_.follow_symlinks_outside,
                                          file) == OpenStatus::ok)
            return serve_file(req, name, std::move(file));
    }
    if (!options_.listing) {
        fail(res, Status::NotFound);
        return res;
    }
    // A listing: opened below the root like a file, entries sorted, names escaped.
    open_how how{};
    how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    how.resolve = options_.follow_symlinks_outside ? 0 : (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
    const std::string dir_name = rel.empty() ? "." : rel;
    const long fd = syscall(SYS_openat2, root_fd_, dir_name.c_str(), &how, sizeof how);
    DIR* dir = fd >= 0 ? ::fdopendir(static_cast<int>(fd)) : nullptr;
    if (!dir) {
        if (fd >= 0) ::close(static_cast<int>(fd));
        fail(res, Status::NotFound);
        return res;
    }
    std::vector<std::pair<std::string, bool>> entries;
    while (dirent* e = ::readdir(dir)) {
        std::string_view n = e->d_name;
        if (n == "." || n == "..") continue;
        if (n.front() == '.' && !options_.dotfiles) continue;
        bool is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
            struct stat st;
            is_dir = ::fstatat(::dirfd(dir), e->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
        }
        entries.emplace_back(std::string(n), is_dir);
    }
    ::closedir(dir);
    std::sort(entries.begin(), entries.end());
    const std::string here =
        fmt::format("{}/{}{}", mount_base(req, rest), rel, rel.empty() ? "" : "/");
    std::string html = fmt::format(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of {0}</title></head>\n"
        "<body><h1>Index of {0}</h1>\n<ul>\n",
        html_escape(here));
    if (!rel.empty()) html += "<li><a href=\"../\">../</a></li>\n";
    for (const auto& [n, is_dir] : entries) {
        const std::string shown = fmt::format("{}{}", n, is_dir ? "/" : "");
        html += fmt::format("<li><a href=\"{}\">{}</a></li>\n", html_escape(encode_path(shown)),
                            html_escape(shown));
    }
    html += "</ul></body></html>\n";
    res = Response::html(std::move(html));
    return res;
}

}  // namespace files
}  // namespace vela
