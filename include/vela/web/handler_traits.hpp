#pragma once
// Turning what a user writes into the two handler shapes the App runs:
//   sync:  Response(Request&)          async: Task<Response>(Request&)
// A handler may take `Request&` or nothing, and return (or co_return) a Response, a
// std::string, a std::string_view, a C string, a Status or an int status code; or a
// VELA_REFLECT struct, a std::vector of JSON-writable values, a json::Value or a Json<T>,
// which become a 200 application/json response; or a std::optional of one of those, which
// answers 404 when empty (in the App's error format, App::error_pages).
//
// A Task<T> handler may also `co_return` a Status or an HttpError where T cannot be made from
// it (`co_return vela::Status::NotFound;` in a Task<Note>): the task ends without a value and
// the request is answered with that status, in the App's error format. (Inside, it travels as
// the exception it ends the task with: a helper Task<Note> that co_returns a status answers the
// handler that awaits it the same way.)
//
// A handler may also take typed parameters filled from the request (Json<T>, Query<T>, or
// any type with a static from_request, see extract.hpp), mixed with `Request&` in any
// order: `[](vela::Request& r, vela::Json<Item> item) {...}`. They are filled before the
// handler runs; the first that fails answers the request (400, 415) instead of it. Such a
// handler needs a deducible signature (no `auto` parameters).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "vela/async/task.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/json/json.hpp"
#include "vela/web/extract.hpp"
#include "vela/web/http_error.hpp"

namespace vela {

/// Converts a handler's result to a Response: a Response is passed through.
inline Response to_response(Response&& r) noexcept { return std::move(r); }
/// A copy of the Response.
inline Response to_response(const Response& r) { return r; }
/// A text/plain 200 response with body `s`.
inline Response to_response(std::string&& s) noexcept { return Response(std::move(s)); }
/// A text/plain 200 response with a copy of `s`.
inline Response to_response(const std::string& s) { return Response(std::string_view(s)); }
/// A text/plain 200 response with a copy of `s`.
inline Response to_response(std::string_view s) { return Response(s); }
/// A text/plain 200 response with a copy of `s`.
inline Response to_response(const char* s) { return Response(s); }
/// An empty response with status `s`.
inline Response to_response(Status s) noexcept { return Response(s); }
/// An empty response with the status code `status` (not range-checked).
inline Response to_response(int status) noexcept { return Response(static_cast<Status>(status)); }

namespace detail {
template <class T>
constexpr bool json_result() {
    if constexpr (json::Reflected<T> || std::is_same_v<T, json::Value>)
        return true;
    else if constexpr (json::detail::is_vector<T>::value)
        return json::is_writable<typename T::value_type>();
    else
        return false;
}
}  // namespace detail

/// Types a handler returns as a JSON body: reflected structs, json::Value, vectors of JSON.
template <class T>
concept JsonResult = detail::json_result<T>();

/// `v` as a JSON response with status `s`. The body is reserved from the size of the previous one
/// of the same type, in the storage the server recycled from an earlier body (body_string()), so a
/// steady stream of similar responses allocates nothing.
template <class T>
Response json_response(const T& v, Status s = Status::OK) {
    static thread_local std::size_t size_hint = 64;
    std::string body = body_string(size_hint);
    if (json::Error e = json::write_to(body, v)) throw json::WriteError(e.message);
    size_hint = std::min<std::size_t>(body.size() + 32, 64 * 1024);
    return Response::json(std::move(body), s);
}
/// `v` as a JSON response with the status code `status` (`json_response(note, 201)`; not
/// range-checked, as a handler's int result).
template <class T>
Response json_response(const T& v, int status) {
    return json_response(v, static_cast<Status>(status));
}

/// A JSON result as a 200 application/json response.
template <JsonResult T>
Response to_response(const T& v) {
    return json_response(v);
}
/// The T of a Json<T> as a 200 application/json response.
template <class T, json::ParseOptions O>
Response to_response(const Json<T, O>& v) {
    return json_response(v.value);
}

/// An optional result: the value's response when engaged; empty, a bare 404 (the App gives it
/// its error body, App::error_pages).
template <class T>
requires requires(T&& t) {
    { to_response(std::move(t)) } -> std::same_as<Response>;
}
Response to_response(std::optional<T>&& v) {
    if (!v) return Response(Status::NotFound);
    return to_response(std::move(*v));
}
/// An optional result (a copy of the value when engaged), as above.
template <class T>
requires requires(const T& t) {
    { to_response(t) } -> std::same_as<Response>;
}
Response to_response(const std::optional<T>& v) {
    if (!v) return Response(Status::NotFound);
    return to_response(*v);
}

/// A type a handler may return: one that to_response() turns into a Response.
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

// A handler's Task<T> as a Task<Response>. A status the task co_returned (an HttpError
// without detail, see task_return_error) becomes that bare status here (one rethrow), which
// the App gives its error body; an HttpError with a detail goes on to the App.
template <class T>
Task<Response> adapt_task(Task<T> t) {
    try {
        co_return to_response(co_await std::move(t));
    } catch (const HttpError& e) {
        if (*e.what() != '\0') throw;
        co_return Response(e.status());
    }
}

// A callable whose operator() cannot be named: a generic lambda (an `auto` parameter) or an
// overloaded call operator. Its parameters cannot be deduced, so it is refused with a message.
template <class F>
concept UndeducibleCallable = std::is_class_v<F> && !requires {
    &F::operator();
};

// ---- Handlers with typed parameters -------------------------------------------------------

template <class P>
concept FromRequest = requires(Request& r, Response& error) {
    { P::from_request(r, error) } -> std::same_as<std::optional<P>>;
};

template <class A>
concept HandlerParam = std::same_as<A, Request&> || FromRequest<std::remove_cvref_t<A>>;

template <class R, class... A>
struct signature {
    using type = signature;
    using result = R;
    static constexpr bool params_ok = (HandlerParam<A> && ...);
};

template <class F>
struct signature_of : signature_of<decltype(&F::operator())> {};
template <class R, class... A>
struct signature_of<R (*)(A...)> : signature<R, A...> {};
template <class R, class... A>
struct signature_of<R(A...)> : signature<R, A...> {};
template <class C, class R, class... A>
struct signature_of<R (C::*)(A...)> : signature<R, A...> {};
template <class C, class R, class... A>
struct signature_of<R (C::*)(A...) const> : signature<R, A...> {};
template <class C, class R, class... A>
struct signature_of<R (C::*)(A...) noexcept> : signature<R, A...> {};
template <class C, class R, class... A>
struct signature_of<R (C::*)(A...) const noexcept> : signature<R, A...> {};

template <class F>
concept Deducible = requires {
    typename signature_of<F>::result;
};

// Where one parameter lives while the handler runs: nothing for Request&, else the value.
template <class A>
using param_slot = std::conditional_t<std::same_as<A, Request&>, std::nullptr_t,
                                      std::optional<std::remove_cvref_t<A>>>;

template <class F, class Sig = typename signature_of<F>::type>
struct Extractor;

template <class F, class R, class... A>
struct Extractor<F, signature<R, A...>> {
    using Slots = std::tuple<param_slot<A>...>;

    // Fills the slots in order; false (with the answer in `error`) at the first failure.
    static bool fill(Request& r, Response& error, Slots& slots) {
        return fill_each(r, error, slots, std::index_sequence_for<A...>{});
    }
    static decltype(auto) call(F& f, Request& r, Slots& slots) {
        return call_each(f, r, slots, std::index_sequence_for<A...>{});
    }

  private:
    template <std::size_t... I>
    static bool fill_each(Request& r, Response& error, Slots& slots, std::index_sequence<I...>) {
        return (fill_one<A>(r, error, std::get<I>(slots)) && ...);
    }
    template <class P>
    static bool fill_one(Request& r, Response& error, param_slot<P>& slot) {
        if constexpr (std::same_as<P, Request&>) {
            return true;
        } else {
            slot = std::remove_cvref_t<P>::from_request(r, error);
            return slot.has_value();
        }
    }
    template <std::size_t... I>
    static decltype(auto) call_each(F& f, Request& r, Slots& slots, std::index_sequence<I...>) {
        return f(pass<A>(r, std::get<I>(slots))...);
    }
    template <class P>
    static decltype(auto) pass(Request& r, param_slot<P>& slot) {
        if constexpr (std::same_as<P, Request&>)
            return (r);
        else
            return std::forward<P>(*slot);
    }
};

template <class F>
concept ExtractingHandler =
    Deducible<F> && signature_of<F>::params_ok && !std::is_invocable_v<F&, Request&> &&
    !std::is_invocable_v<F&>;

// The async form keeps the parameters in its own frame, so a handler coroutine may take
// them by reference.
template <class F>
Task<Response> run_extracting(F& fn, Request& r) {
    using E = Extractor<F>;
    typename E::Slots slots;
    Response error;
    if (!E::fill(r, error, slots)) co_return error;
    try {
        co_return to_response(co_await E::call(fn, r, slots));
    } catch (const HttpError& e) {  // a co_returned status, as adapt_task
        if (*e.what() != '\0') throw;
        co_return Response(e.status());
    }
}

}  // namespace detail

/// A handler in one of the two shapes.
struct HandlerFn {
    /// The synchronous shape (empty for an asynchronous handler).
    std::function<Response(Request&)> sync;
    /// The asynchronous shape (empty for a synchronous handler).
    std::function<Task<Response>(Request&)> async;
    /// True when the handler has the asynchronous shape.
    bool is_async() const noexcept { return static_cast<bool>(async); }
};

/// Wraps a user callable as a HandlerFn.
template <class F>
HandlerFn make_handler(F&& f) {
    using Fn = std::decay_t<F>;
    HandlerFn h;
    if constexpr (detail::UndeducibleCallable<Fn>) {
        static_assert(!detail::UndeducibleCallable<Fn>,
                      "a handler's parameters need their types written out: replace `auto` with "
                      "vela::Request&, vela::Json<T>, vela::Query<T> or another typed parameter "
                      "(and give the lambda a single, non-template operator())");
    } else if constexpr (detail::ExtractingHandler<Fn>) {
        using Result = typename detail::signature_of<Fn>::result;
        if constexpr (detail::is_task<std::remove_cvref_t<Result>>::value) {
            h.async = [fn = Fn(std::forward<F>(f))](Request& r) mutable {
                return detail::run_extracting(fn, r);
            };
        } else {
            static_assert(ResponseLike<Result>,
                          "a handler returns Response, a string, a Status, a JSON result or "
                          "Task<one of those>");
            h.sync = [fn = Fn(std::forward<F>(f))](Request& r) mutable -> Response {
                using E = detail::Extractor<Fn>;
                typename E::Slots slots;
                Response error;
                if (!E::fill(r, error, slots)) return error;
                return to_response(E::call(fn, r, slots));
            };
        }
    } else if constexpr (detail::AsyncHandler<Fn>) {
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
            "a handler takes (Request&), (), or Request& and typed parameters (Json<T>, "
            "Query<T>), and returns Response, a string, a Status, a JSON result or Task<one of "
            "those>");
        h.sync = [fn = Fn(std::forward<F>(f))](Request& r) mutable {
            return to_response(detail::call_handler(fn, r));
        };
    }
    return h;
}

}  // namespace vela
