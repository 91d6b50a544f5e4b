#pragma once
// File uploads: a multipart/form-data body (RFC 7578) read into text fields and files
// streamed to a temporary directory.
//
//     struct Profile { std::string name; int age = 0; };
//     VELA_REFLECT(Profile, VELA_REQUIRED(name), age)
//
//     app.streaming(vela::Method::POST, "/profile", [](vela::Request& req)
//                                                     -> vela::Task<vela::Response> {
//         vela::MultipartForm form = co_await vela::read_multipart(req);   // 400/413/415
//         Profile p = form.bind<Profile>();                                // 400
//         if (vela::UploadedFile* photo = form.file("photo"))
//             photo->move_to("/srv/photos/" + std::to_string(next_id()));  // kept
//         co_return vela::Response::text("hello " + p.name);
//     });  // other uploaded files are removed with `form`
//
// read_multipart() reads the body through req.body_stream(): on a route registered with
// App::streaming it arrives piece by piece in bounded memory (a 1 GiB file never sits in
// memory), on an ordinary route it was buffered (limits.max_body) and is parsed the same way.
// Each file part is written, as it arrives, to a new file in UploadOptions::temp_dir (created
// with O_EXCL, mode 0600, an unpredictable name); text fields are kept in memory within the
// limits. An UploadedFile removes its temporary file when destroyed unless move_to() moved
// it, so files nobody kept disappear with the form at the end of the request.
//
// Failures throw HttpError, which the App answers with its status: 415 when the body is not
// multipart/form-data, 400 when it is malformed (bad boundary, part headers, no close
// delimiter, a field that does not convert in bind), 413 when a MultipartLimits bound is
// passed (or the server's own body limit), 507/500 when a file cannot be written (the
// reason is logged, not shown). The files written so far are removed.
//
// File writes are plain blocking write(2) calls on the event loop (a local disk's page cache
// absorbs them); keep temp_dir on a local file system.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/http/multipart.hpp"
#include "vela/http/request.hpp"
#include "vela/web/extract.hpp"
#include "vela/web/http_error.hpp"

namespace vela {

/// Where and how read_multipart() stores a body.
struct UploadOptions {
    /// Directory of the temporary files; empty: $TMPDIR, or /tmp when it is unset.
    std::string temp_dir;
    /// Bounds on parts, headers, fields and files (413 when passed).
    MultipartLimits limits;
};

/// One uploaded file, stored in a temporary file it owns (removed when destroyed unless
/// moved). Move-only.
class UploadedFile {
  public:
    /// Takes ownership of the file at `temp_path` (removed with this object).
    explicit UploadedFile(std::string temp_path) : path_(std::move(temp_path)) {}
    /// Takes over `o`'s file.
    UploadedFile(UploadedFile&& o) noexcept;
    /// Removes this object's file (unless moved), then takes over `o`'s.
    UploadedFile& operator=(UploadedFile&& o) noexcept;
    UploadedFile(const UploadedFile&) = delete;
    UploadedFile& operator=(const UploadedFile&) = delete;
    /// Removes the temporary file unless move_to() moved it.
    ~UploadedFile();

    /// The form field the file came in.
    std::string field;
    /// The client's file name, sanitized (see sanitize_filename); may be empty.
    std::string filename;
    /// The part's Content-Type, or application/octet-stream when it had none.
    std::string content_type;
    /// The file's size in bytes.
    std::uint64_t size = 0;

    /// Where the file is now: the temporary path, or the destination after move_to().
    const std::string& path() const noexcept { return path_; }
    /// True once move_to() moved the file (it is then no longer removed).
    bool moved() const noexcept { return moved_; }
    /// Moves the file to `dest` (replacing a file there): rename(2), or copy and remove
    /// across file systems. It keeps mode 0600. Throws std::system_error (one line) on
    /// failure, leaving the temporary file in place.
    void move_to(const std::string& dest);
    /// The file's contents (for small files; a std::system_error when it cannot be read).
    std::string read() const;

  private:
    std::string path_;
    bool moved_ = false;
};

/// The text fields and the files of a multipart/form-data body.
struct MultipartForm {
    /// The text fields, in order (an ordered multimap; see FormData in extract.hpp).
    FormData fields;
    /// The files, in order.
    std::vector<UploadedFile> files;

    /// The first value of text field `name`, or nullopt.
    std::optional<std::string_view> get(std::string_view name) const { return fields.get(name); }
    /// Every value of text field `name`, in order.
    std::vector<std::string_view> all(std::string_view name) const { return fields.all(name); }
    /// The first file of field `name`, or nullptr.
    UploadedFile* file(std::string_view name) noexcept;
    /// The first file of field `name`, or nullptr.
    const UploadedFile* file(std::string_view name) const noexcept;

    /// A value-initialized T filled from the text fields with the rules of Form<T> (members
    /// VELA_REQUIRED must be there, others keep their defaults); throws HttpError 400 naming
    /// the field, or 422 naming every constraint (VELA_VALIDATE) the value breaks.
    /// `fields.to<T>(error)` is the same without an exception.
    template <json::Reflected T>
    T bind() const {
        T out{};
        std::string_view bad;
        std::string why;
        if (!detail::fill_reflected(fields.items(), out, bad, why))
            throw HttpError(Status::BadRequest, "form field '" + std::string(bad) + "': " + why);
        if constexpr (json::has_rules_v<T>) {  // VELA_VALIDATE: a 422 naming every violation
            json::Violations v;
            if (!json::validate(out, v))
                throw HttpError(Status::UnprocessableContent,
                                detail::violations_detail(v, detail::ValueSource::form));
        }
        return out;
    }
};

/// Reads the multipart/form-data body of `req` with the default UploadOptions (see above);
/// throws HttpError 400, 413, 415, or 500/507 when a file cannot be stored.
Task<MultipartForm> read_multipart(Request& req);
/// read_multipart with `options`. Build them before the co_await (`UploadOptions up{...};
/// co_await read_multipart(req, up);`): g++ 12 mishandles an aggregate temporary such as
/// `{.temp_dir = d}` written inside a co_await expression.
Task<MultipartForm> read_multipart(Request& req, UploadOptions options);

/// The default directory for uploads: $TMPDIR, or /tmp.
std::string default_temp_dir();

}  // namespace vela
