#pragma once
// Middleware: code that runs around handlers.
//
// Three shapes, mixed freely, applied in the order they were added (global ones first,
// then each enclosing group's):
//
//  * Onion (asynchronous): `Task<Response>(Request&, Next)`. Work before `co_await next()`
//    runs on the way in, work after it on the way out; not calling next() short-circuits.
//
//        app.use([](vela::Request& req, vela::Next next) -> vela::Task<vela::Response> {
//            if (req.header("Authorization").empty())
//                co_return vela::Status::Unauthorized;       // short-circuit
//            req.set_attribute("user", "alice");              // before
//            vela::Response res = co_await next();            // the rest of the chain
//            res.add_header("X-Served-By", "vela");           // after
//            co_return res;
//        });
//
//  * Before hook (synchronous): `void(Request&)` or `std::optional<Response>(Request&)`;
//    returning a Response short-circuits.
//  * After hook (synchronous): `void(Request&, Response&)`.
//  * Hooks: a `vela::Hooks` with a before and an after hook installed as one middleware
//    (the after hook runs only when the before hook did; vela's own middleware such as
//    cors(), request_id() and access_log() converts to Hooks, so app.use(vela::cors(...))
//    keeps a route synchronous).
//
// When every middleware on a route and its handler are synchronous, the request runs as
// plain function calls: no coroutine frame, no allocation.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "vela/async/task.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {

namespace detail {
struct Endpoint;
Task<Response> run_chain(const Endpoint& ep, std::size_t index, Request& req);
}  // namespace detail

/// The rest of the middleware chain, ending in the handler.
class Next {
  public:
    /// The chain of `ep` from middleware `index` on, for `req` (the app makes these).
    Next(const detail::Endpoint& ep, std::size_t index, Request& req) noexcept
        : ep_(&ep), index_(index), req_(&req) {}
    /// Runs the rest of the chain and returns its response.
    Task<Response> operator()() const { return detail::run_chain(*ep_, index_, *req_); }

  private:
    const detail::Endpoint* ep_;
    std::size_t index_;
    Request* req_;
};

/// A before hook and an after hook that form one middleware (either may be empty).
struct Hooks {
    /// Runs on the way in; returning a Response short-circuits (the after hook still runs).
    std::function<std::optional<Response>(Request&)> before;
    /// Runs on the way out, on the response of the rest of the chain (or of `before`).
    std::function<void(Request&, Response&)> after;
};

/// One middleware of any of the shapes.
struct Middleware {
    /// The shape, which names the members below that are set (hooks: before and/or after).
    enum class Kind : std::uint8_t { onion, before, after, hooks } kind;
    /// The onion shape: runs around the rest of the chain.
    std::function<Task<Response>(Request&, Next)> onion;
    /// The before hook; returning a Response short-circuits.
    std::function<std::optional<Response>(Request&)> before;
    /// The after hook; it may change the response.
    std::function<void(Request&, Response&)> after;
};

/// The request attribute that holds the request's id (set by vela::request_id(),
/// vela/middleware/request_id.hpp): the App's own error log names it without depending on the
/// middleware (15 characters: kept inside std::string's own buffer).
inline constexpr std::string_view kRequestIdAttribute = "vela.request_id";

}  // namespace vela
