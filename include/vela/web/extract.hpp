#pragma once
// Typed handler parameters filled from the request, and RFC 9457 problem responses.
//
//     struct NewItem { std::string name; double price; };
//     VELA_REFLECT(NewItem, name, price)
//     struct Page { int limit; std::optional<std::string> after; };
//     VELA_REFLECT(Page, limit, after)
//
//     app.post("/items", [](vela::Json<NewItem> item) { return item; });
//     app.get("/items", [](vela::Request& r, vela::Query<Page> page) { ... page->limit ... });
//
// Json<T> reads the body as JSON into a T: a Content-Type other than application/json (or
// any */*+json) is answered 415, a body that is not JSON or does not fit T is answered 400
// with an application/problem+json body naming the path and the problem, before the handler
// runs. Query<T> fills a reflected struct from the query string: each member is the
// parameter of its JSON name, converted to the member's type (bool, integers, floating
// point, strings, VELA_ENUM enums, RFC 3339 times; std::optional for parameters that may
// be absent, std::vector for repeated ones); a missing or unconvertible one is a 400.
//
// Any type with `static std::optional<P> from_request(Request&, Response& error)` can be a
// handler parameter the same way (see handler_traits.hpp).

#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/json/json.hpp"

namespace vela {

/// An RFC 9457 problem details response: {"type":"about:blank","title":...,"status":...,
/// "detail":...} as application/problem+json.
Response problem_response(Status status, std::string_view detail);
/// A 400 problem response for a JSON body error, with an "errors" member holding the
/// problem and its JSON Pointer ({"detail":"expected number","pointer":"#/items/3/price"}).
Response problem_response(const json::Error& error);

namespace detail {

/// True for application/json and any type/subtype+json, with or without parameters.
bool is_json_media_type(std::string_view content_type) noexcept;
/// The 415 answer to a body that is not declared as JSON.
Response unsupported_json_media_type(std::string_view content_type);
/// A 400 problem response for query parameter `name`.
Response query_problem(std::string_view name, std::string_view message);

/// The decoded name/value pairs of a query string, in order.
struct QueryParams {
    std::vector<std::pair<std::string, std::string>> items;
    bool malformed = false;  // a bad percent escape
    explicit QueryParams(std::string_view query);
};

template <class T>
struct is_query_list : std::false_type {};
template <class T, class A>
struct is_query_list<std::vector<T, A>> : std::true_type {};

// Converts one query parameter's text; on failure sets `why` ("expected integer").
template <class T>
bool from_query_text(std::string_view s, T& out, std::string& why) {
    if constexpr (std::is_same_v<T, bool>) {
        if (s == "true" || s == "1" || s == "on" || s == "yes") return out = true, true;
        if (s == "false" || s == "0" || s == "off" || s == "no") return out = false, true;
        why = "expected a boolean (true or false)";
        return false;
    } else if constexpr (json::detail::is_integer_v<T>) {
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
        if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return true;
        why = ec == std::errc::result_out_of_range
                  ? "expected integer in [" + std::to_string(std::numeric_limits<T>::min()) + ", " +
                        std::to_string(std::numeric_limits<T>::max()) + "]"
                  : "expected integer";
        return false;
    } else if constexpr (std::is_floating_point_v<T>) {
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
        if (ec == std::errc() && end == s.data() + s.size() && !s.empty() && std::isfinite(out))
            return true;
        why = "expected number";
        return false;
    } else if constexpr (std::is_same_v<T, std::string>) {
        out.assign(s);
        return true;
    } else if constexpr (json::ReflectedEnum<T>) {
        if (json::enum_from_name(s, out)) return true;
        why = json::detail::enum_expectation<T>();
        return false;
    } else if constexpr (json::detail::is_sys_time<T>::value) {
        std::int64_t secs;
        std::uint32_t nanos;
        if (json::parse_rfc3339(s, secs, nanos)) {
            using D = typename T::duration;
            out = T(std::chrono::duration_cast<D>(std::chrono::seconds(secs)) +
                    std::chrono::duration_cast<D>(std::chrono::nanoseconds(nanos)));
            return true;
        }
        why = "expected an RFC 3339 date-time";
        return false;
    } else {
        static_assert(json::detail::unsupported<T>,
                      "Query<T> members must be scalars (bool, numbers, strings, VELA_ENUM enums, "
                      "time points), std::optional or std::vector of them");
        return false;
    }
}

// Fills one member from every parameter named `name`.
template <class M>
bool fill_query_member(const QueryParams& q, std::string_view name, M& out, std::string& why) {
    if constexpr (is_query_list<M>::value) {
        out.clear();
        for (const auto& [k, v] : q.items)
            if (k == name && !from_query_text(v, out.emplace_back(), why)) return false;
        return true;
    } else {
        const std::string* text = nullptr;
        for (const auto& [k, v] : q.items)
            if (k == name) text = &v;  // the last one wins, as in JSON
        if constexpr (json::detail::is_optional<M>::value) {
            if (!text) return out.reset(), true;
            return from_query_text(*text, out.emplace(), why);
        } else {
            if (!text) return why = "missing required parameter", false;
            return from_query_text(*text, out, why);
        }
    }
}

/// The value a typed parameter carries, reached with * and ->.
template <class T>
struct Holder {
    T value;

    /// The value.
    T& operator*() noexcept { return value; }
    /// The value.
    const T& operator*() const noexcept { return value; }
    /// The value's members.
    T* operator->() noexcept { return &value; }
    /// The value's members.
    const T* operator->() const noexcept { return &value; }
};

}  // namespace detail

/// The request body read as JSON into a T (see above). Returning it from a handler writes
/// the T back as JSON.
template <class T, json::ParseOptions Options = json::ParseOptions{}>
struct Json : detail::Holder<T> {
    /// Reads the body of `req`; on failure nullopt, with the 400/415 answer in `error`.
    static std::optional<Json> from_request(Request& req, Response& error) {
        const std::string_view type = req.header("Content-Type");
        if (!detail::is_json_media_type(type)) {
            error = detail::unsupported_json_media_type(type);
            return std::nullopt;
        }
        std::optional<Json> out(std::in_place);
        if (json::Error e = json::read(req.body(), out->value, Options)) {
            error = problem_response(e);
            return std::nullopt;
        }
        return out;
    }
};

/// A reflected struct filled from the query string (see above).
template <json::Reflected T>
struct Query : detail::Holder<T> {
    /// Reads the query string of `req`; on failure nullopt, with the 400 answer in `error`.
    static std::optional<Query> from_request(Request& req, Response& error) {
        const detail::QueryParams q(req.query_string());
        if (q.malformed) {
            error = problem_response(Status::BadRequest, "malformed percent-encoding in the query");
            return std::nullopt;
        }
        std::optional<Query> out(std::in_place);
        std::string why;
        const auto fill = [&](const auto& f) {
            if (detail::fill_query_member(q, f.name, out->value.*(f.member), why)) return true;
            error = detail::query_problem(f.name, why);
            return false;
        };
        const bool ok =
            std::apply([&](const auto&... f) { return (fill(f) && ...); }, json::fields_of<T>);
        if (!ok) return std::nullopt;
        return out;
    }
};

}  // namespace vela
