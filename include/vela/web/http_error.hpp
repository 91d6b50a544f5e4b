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

#include <concepts>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

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

/// Lets a Task<T> (a typed handler's) `co_return vela::Status::NotFound;`: the task ends with
/// an HttpError without detail, answered with that status in the App's error format
/// (vela/async/task.hpp's TaskReturnError, found by argument-dependent lookup).
inline std::exception_ptr task_return_error(Status s) {
    return std::make_exception_ptr(HttpError(s, std::string()));
}
/// Lets a Task<T> `co_return vela::HttpError(status, detail);`: ended with that error, as if
/// thrown.
template <std::derived_from<HttpError> E>
std::exception_ptr task_return_error(E&& e) {
    return std::make_exception_ptr(std::forward<E>(e));
}

}  // namespace vela
