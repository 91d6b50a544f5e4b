#pragma once
// Request ids: one id per request, taken from the client (or the proxy in front) when it sent
// a valid one, generated otherwise; kept in the request for handlers and logs, and echoed in
// the response so a client can quote it in a bug report.
//
//     vela::App app;
//     app.use(vela::request_id());            // synchronous hooks: no coroutine, no allocation
//     app.get("/", [](vela::Request& req) {
//         vela::log::info("[{}] hello", vela::request_id(req));
//         return "hi";
//     });
//
// A RequestId converts to vela::Hooks (a before and an after hook), so routes stay on the
// synchronous path; `app.use(vela::request_id().onion())` installs the same work as one
// onion (a coroutine per request) instead.
//
// An incoming id is accepted when it is 1 to max_length characters of
// [A-Za-z0-9] and - . _ ~ : + / = @ (UUIDs, base64, "Root=1-5759e988-bd86..."-style ids);
// anything else (spaces, quotes, control characters, too long) is replaced by a fresh one, so
// an id never breaks a log line or a header. Generated ids are 16 base64url characters from
// 96 random bits (OpenSSL's CSPRNG, drawn in batches per thread): unique in practice and not
// guessable from other ids. A client can choose its own id: do not treat ids as secrets or
// as proof of anything (set trust_incoming = false when only your proxy's ids count, and let
// the proxy strip the client's).

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vela/async/task.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/web/middleware.hpp"

namespace vela {

/// How request_id() finds, makes and echoes ids.
struct RequestIdOptions {
    /// The header the id is read from and echoed in.
    std::string header = "X-Request-Id";
    /// Accept a valid id sent by the client (or a proxy); false: always generate one.
    bool trust_incoming = true;
    /// Longest incoming id accepted (1 to 1024).
    std::size_t max_length = 128;
    /// Echo the id in the response header (unless the handler set that header itself).
    bool echo = true;
    /// Makes ids instead of the built-in generator (called on the request's thread; an id
    /// valid_request_id() refuses makes the request fail with a 500).
    std::function<std::string()> generator{};
};

namespace detail {
struct RequestIdState;
}

/// The request id middleware (see above). Copies share their configuration.
class RequestId {
  public:
    /// Checks `options` (std::invalid_argument for an empty or malformed header name or a
    /// max_length out of range).
    explicit RequestId(RequestIdOptions options);

    /// Gives `req` its id (the before half).
    void start(Request& req) const;
    /// Echoes `req`'s id in `res` (the after half).
    void finish(const Request& req, Response& res) const;

    /// Both halves as one synchronous middleware (what App::use / Group::use install).
    operator Hooks() const {  // NOLINT: implicit on purpose (app.use(request_id()))
        return Hooks{[self = *this](Request& req) -> std::optional<Response> {
                         self.start(req);
                         return std::nullopt;
                     },
                     [self = *this](Request& req, Response& res) { self.finish(req, res); }};
    }
    /// The same work as one onion middleware (a coroutine per request), for app.use().
    auto onion() const {
        return [self = *this](Request& req, Next next) { return self.around(req, next); };
    }

  private:
    Task<Response> around(Request& req, Next next) const;
    std::shared_ptr<const detail::RequestIdState> state_;
};

/// The request id middleware with `options` (see above).
RequestId request_id(RequestIdOptions options = {});

/// The id request_id() gave `req`; empty when the middleware did not run for it.
std::string_view request_id(const Request& req) noexcept;

/// True when `id` would be accepted as an incoming id of at most `max_length` characters.
bool valid_request_id(std::string_view id, std::size_t max_length = 128) noexcept;

/// A fresh id: 16 base64url characters from 96 random bits.
std::string generate_request_id();

}  // namespace vela
