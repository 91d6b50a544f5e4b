#pragma once
// Turning what a user writes into the two handler shapes the App runs:
//   sync:  Response(Request&)          async: Task<Response>(Request&)
// A handler may take `Request&` or nothing, and return (or co_return) a Response, a
// std::string, a std::string_view, a C string, a Status or an int status code.

#include <concepts>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "vela/async/task.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {

/// Converts a handler's result to a Response.
inline Response to_response(Response&& r) noexcept { return std::move(r); }
inline Response to_response(const Response& r) { return r; }
inline Response to_response(std::string&& s) noexcept { return Response(std::move(s)); }
inline Response to_response(const std::string& s) { return Response(std::string_view(s)); }
inline Response to_response(std::string_view s) { return Response(s); }
inline Response to_response(const char* s) { return Response(s); }
inline Response to_response(Status s) noexcept { return Response(s); }
inline Response to_response(int status) noexcept { return Response(static_cast<Status>(status)); }

template <class T>
concept ResponseLike = requires(T&& t) {
    { to_response(std::forward<T>(t)) } -> std::same_as<Response>;
};

namespace detail {

template <class T>
struct is_task : std::false_type {};
template <class T>
struct is_task<Task<T>> : std::true_type {
    using result = T;
};

template <class F>
decltype(auto) call_handler(F& f, Request& r) {
    if constexpr (std::is_invocable_v<F&, Request&>)
        return f(r);
    else
        return f();
}

template <class F>
using handler_result_t = decltype(call_handler(std::declval<F&>(), std::declval<Request&>()));

template <class F>
concept AsyncHandler = is_task<std::remove_cvref_t<handler_result_t<F>>>::value;

template <class F>
concept SyncHandler = !AsyncHandler<F> && ResponseLike<handler_result_t<F>>;

template <class T>
Task<Response> adapt_task(Task<T> t) {
    co_return to_response(co_await std::move(t));
}

}  // namespace detail

/// A handler in one of the two shapes.
struct HandlerFn {
    std::function<Response(Request&)> sync;
    std::function<Task<Response>(Request&)> async;
    bool is_async() const noexcept { return static_cast<bool>(async); }
};

/// Wraps a user callable as a HandlerFn.
template <class F>
HandlerFn make_handler(F&& f) {
    using Fn = std::decay_t<F>;
    HandlerFn h;
    if constexpr (detail::AsyncHandler<Fn>) {
        using Value =
            typename detail::is_task<std::remove_cvref_t<detail::handler_result_t<Fn>>>::result;
        if constexpr (std::is_same_v<Value, Response>) {
            h.async = [fn = Fn(std::forward<F>(f))](Request& r) mutable {
                return detail::call_handler(fn, r);
            };
        } else {
            h.async = [fn = Fn(std::forward<F>(f))](Request& r) mutable {
                return detail::adapt_task(detail::call_handler(fn, r));
            };
        }
    } else {
        static_assert(
            detail::SyncHandler<Fn>,
            "a handler takes (Request&) or () and returns Response, a string, a Status or "
            "Task<one of those>");
        h.sync = [fn = Fn(std::forward<F>(f))](Request& r) mutable {
            return to_response(detail::call_handler(fn, r));
        };
    }
    return h;
}

}  // namespace vela
