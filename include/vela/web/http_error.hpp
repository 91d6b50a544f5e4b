#pragma once
// An exception that carries the HTTP status to answer with.
//
//     app.post("/upload", [](vela::Request& req) -> vela::Task<vela::Response> {
//         vela::MultipartForm form = co_await vela::read_multipart(req);  // may throw 400/413/415
//         if (form.files.empty()) throw vela::HttpError(vela::Status::BadRequest, "no file");
//         ...
//     });
//
// Thrown from a handler or a middleware, it is answered with its status and the App's error
// body for that status (App::error_pages) carrying the message (what()) as its detail,
// instead of the 500 any other exception becomes. Use it for errors the client caused; the
// message is shown to the client, so it must not carry secrets.

#include <stdexcept>
#include <string>

#include "vela/http/status.hpp"

namespace vela {

/// An error answered with `status()` and the message as the problem's detail (see above).
class HttpError : public std::runtime_error {
  public:
    /// An error answered with `status` and `detail`.
    HttpError(Status status, const std::string& detail)
        : std::runtime_error(detail), status_(status) {}
    /// The status to answer with.
    Status status() const noexcept { return status_; }

  private:
    Status status_;
};

}  // namespace vela
