#include "vela/web/upload.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <utility>

#include "vela/base/log.hpp"
#include "vela/crypto/crypto.hpp"
#include "vela/http/body_reader.hpp"

namespace vela {

namespace {

[[noreturn]] void throw_errno(int err, const std::string& what) {
    throw std::system_error(err, std::generic_category(), what);
}

bool write_all(int fd, std::string_view data) noexcept {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) errno = EIO;
        if (n <= 0) return false;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// Copies `from` to a new `to` (mode 0600), for move_to across file systems; errno on failure.
int copy_file(const std::string& from, const std::string& to) noexcept {
    const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) return errno;
    const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) {
        const int err = errno;
        ::close(in);
        return err;
    }
    int err = 0;
    char buf[64 * 1024];
    for (;;) {
        const ssize_t n = ::read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) err = errno;
        if (n <= 0) break;
        if (!write_all(out, std::string_view(buf, static_cast<std::size_t>(n)))) {
            err = errno;
            break;
        }
    }
    ::close(in);
    if (::close(out) != 0 && err == 0) err = errno;
    if (err != 0) ::unlink(to.c_str());
    return err;
}

// Receives the parts: text fields into the form, files into new temporary files.
class FormSink final : public MultipartHandler {
  public:
    FormSink(MultipartForm& form, std::string dir) : form_(form), dir_(std::move(dir)) {}
    ~FormSink() override {
        if (fd_ >= 0) ::close(fd_);
    }
    FormSink(const FormSink&) = delete;
    FormSink& operator=(const FormSink&) = delete;

    /// Set when the sink stopped the parser: the status and the client's message.
    Status status = Status::OK;
    std::string message;

    bool on_part_begin(const MultipartPart& part) override {
        name_ = part.name;
        value_.clear();
        file_ = part.is_file;
        if (!file_) return true;
        std::string path;
        for (int attempt = 0; fd_ < 0; ++attempt) {
            path = dir_ + "/vela-upload-" + crypto::random_token(18);
            fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (fd_ < 0 && (errno != EEXIST || attempt == 8)) return storage_failed("create");
        }
        UploadedFile& f = form_.files.emplace_back(std::move(path));
        f.field = part.name;
        f.filename = part.filename;
        f.content_type = part.content_type.empty() ? "application/octet-stream" : part.content_type;
        return true;
    }

    bool on_part_data(std::string_view data) override {
        if (!file_) {
            value_.append(data);
            return true;
        }
        if (!write_all(fd_, data)) return storage_failed("write");
        form_.files.back().size += data.size();
        return true;
    }

    bool on_part_end() override {
        if (!file_) {
            form_.fields.add(std::move(name_), std::move(value_));
            return true;
        }
        const int fd = std::exchange(fd_, -1);
        if (::close(fd) != 0) return storage_failed("write");
        return true;
    }

  private:
    // The reason goes to the log; the client learns only that the upload was not stored.
    bool storage_failed(const char* op) {
        const int err = errno ? errno : EIO;
        log::error("upload: cannot {} a temporary file in {}: {}", op, dir_, std::strerror(err));
        const bool full = err == ENOSPC || err == EDQUOT;
        status = full ? static_cast<Status>(507) : Status::InternalServerError;
        message = full ? "not enough space to store the upload" : "the upload could not be stored";
        return false;
    }

    MultipartForm& form_;
    std::string dir_;
    std::string name_;
    std::string value_;
    bool file_ = false;
    int fd_ = -1;
};

std::string body_error_message(Status s) {
    switch (s) {
        case Status::PayloadTooLarge:
            return "request body too large";
        case Status::RequestTimeout:
            return "the request body did not arrive in time";
        default:
            return "the request body could not be read";
    }
}

}  // namespace

// ---- UploadedFile ---------------------------------------------------------------------------

UploadedFile::UploadedFile(UploadedFile&& o) noexcept
    : field(std::move(o.field)),
      filename(std::move(o.filename)),
      content_type(std::move(o.content_type)),
      size(o.size),
      path_(std::move(o.path_)),
      moved_(o.moved_) {
    o.path_.clear();
}

UploadedFile& UploadedFile::operator=(UploadedFile&& o) noexcept {
    if (this != &o) {
        if (!moved_ && !path_.empty()) ::unlink(path_.c_str());
        field = std::move(o.field);
        filename = std::move(o.filename);
        content_type = std::move(o.content_type);
        size = o.size;
        path_ = std::move(o.path_);
        moved_ = o.moved_;
        o.path_.clear();
    }
    return *this;
}

UploadedFile::~UploadedFile() {
    if (!moved_ && !path_.empty()) ::unlink(path_.c_str());
}

void UploadedFile::move_to(const std::string& dest) {
    if (moved_ || path_.empty())
        throw std::system_error(std::make_error_code(std::errc::no_such_file_or_directory),
                                "move_to " + dest + ": the upload was already moved");
    if (::rename(path_.c_str(), dest.c_str()) != 0) {
        const int err = errno;
        if (err != EXDEV) throw_errno(err, "move_to " + dest);
        if (const int e = copy_file(path_, dest)) throw_errno(e, "move_to " + dest);
        ::unlink(path_.c_str());
    }
    path_ = dest;
    moved_ = true;
}

std::string UploadedFile::read() const {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_errno(errno, "read " + path_);
    std::string out;
    char buf[64 * 1024];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            throw_errno(err, "read " + path_);
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

// ---- MultipartForm ----------------------------------------------------------------------

UploadedFile* MultipartForm::file(std::string_view name) noexcept {
    for (UploadedFile& f : files)
        if (f.field == name) return &f;
    return nullptr;
}

const UploadedFile* MultipartForm::file(std::string_view name) const noexcept {
    for (const UploadedFile& f : files)
        if (f.field == name) return &f;
    return nullptr;
}

std::string default_temp_dir() {
    const char* t = std::getenv("TMPDIR");
    return t && *t ? std::string(t) : std::string("/tmp");
}

// ---- read_multipart -------------------------------------------------------------------------

// The form without options: a call `co_await read_multipart(req)` makes no temporary (g++ 12
// relocates an aggregate temporary such as a defaulted `UploadOptions{}` argument inside a
// co_await expression, and its std::string then frees a pointer into the coroutine frame).
Task<MultipartForm> read_multipart(Request& req) { return read_multipart(req, UploadOptions()); }

Task<MultipartForm> read_multipart(Request& req, UploadOptions options) {
    std::string boundary, why;
    const Status s = parse_multipart_content_type(req.header("Content-Type"), boundary, why);
    if (s != Status::OK) throw HttpError(s, why);
    MultipartForm form;  // declared before the sink: its files outlive the sink's descriptor
    FormSink sink(form, options.temp_dir.empty() ? default_temp_dir() : options.temp_dir);
    MultipartParser parser(boundary, options.limits);
    const auto failed = [&] {
        if (sink.status != Status::OK) return HttpError(sink.status, sink.message);
        return HttpError(parser.error(), parser.error_message());
    };
    for (;;) {
        const BodyChunk c = co_await req.body_stream().read();
        if (c.error != Status::OK) throw HttpError(c.error, body_error_message(c.error));
        if (parser.feed(c.data, sink) == MultipartParser::Result::error) throw failed();
        if (c.end) break;
    }
    if (parser.finish() == MultipartParser::Result::error) throw failed();
    co_return form;
}

}  // namespace vela
