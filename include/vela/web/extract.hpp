#pragma once
// Typed handler parameters filled from the request, and RFC 9457 problem responses.
//
//     struct NewItem { std::string name; double price = 0; };
//     VELA_REFLECT(NewItem, VELA_REQUIRED(name), price)
//     struct Page { int limit = 10; std::optional<std::string> after; std::vector<int> tag; };
//     VELA_REFLECT(Page, limit, after, tag)
//
//     app.post("/items", [](vela::Json<NewItem> item) { return item; });
//     app.get("/items", [](vela::Request& r, vela::Query<Page> page) { ... page->limit ... });
//     app.post("/login", [](vela::Form<Login> f) { ... f->user ... });
//     app.post("/raw", [](vela::FormData f) { return std::string(f.get("a").value_or("")); });
//
// Json<T> reads the body as JSON into a T: a Content-Type other than application/json (or
// any */*+json) is answered 415, a body that is not JSON or does not fit T is answered 400
// with an application/problem+json body naming the path and the problem, before the handler
// runs. Query<T> fills a reflected struct from the query string, Form<T> from an
// application/x-www-form-urlencoded body (another Content-Type is a 415): each member is the
// parameter of its JSON name, converted to the member's type (bool, integers, floating
// point, strings, VELA_ENUM enums, RFC 3339 times; std::optional, std::vector for repeated
// ones); an unconvertible one is a 400. FormData is the same body as an ordered multimap.
//
// Required or defaulted, the same rule for Json, Query and Form: a member marked
// VELA_REQUIRED / VELA_REQUIRED_AS must be present (else 400 "missing required ..."); any
// other absent member keeps the value it has in a value-initialized T (its default member
// initializer, else zero / empty; std::optional nullopt, std::vector empty). In a query or a
// form an empty value (`?n=`) for a std::optional of a non-string type is nullopt, as an
// HTML form sends an empty number field; a repeated parameter fills a std::vector, and for
// other members the last one wins.
//
// Constraints (VELA_VALIDATE, see json/validate.hpp) are checked once the value is read: a
// value that breaks any is answered 422 with an application/problem+json body whose "errors"
// list every violation, each with its JSON Pointer ("pointer": "#/tags/2") or, for a query,
// its parameter. VELA_REJECT_UNKNOWN(T) makes an unknown member (field, parameter) a 400.
//
// Any type with `static std::optional<P> from_request(Request&, Response& error)` can be a
// handler parameter the same way (see handler_traits.hpp).

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
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
/// A 400 problem response for form field `name` (its "pointer" is `#/name`).
Response form_problem(std::string_view name, std::string_view message);
/// Where a checked value came from: its violations are named by JSON Pointer (a body) or by
/// parameter (a query).
enum class ValueSource : std::uint8_t { json_body, query, form };
/// "the JSON body breaks constraints: /title must be ...; /rating must be ...".
std::string violations_detail(const json::Violations& violations, ValueSource source);
/// The 422 problem response listing every violation of a value read from `source`.
Response validation_problem(const json::Violations& violations, ValueSource source);

/// Checks the constraints of `value` (VELA_VALIDATE); false with the 422 answer in `error`.
/// Compiles to nothing for a type without constraints.
template <class T>
bool check_constraints(const T& value, ValueSource source, Response& error) {
    if constexpr (json::has_rules_v<T>) {
        json::Violations v;
        if (json::validate(value, v)) return true;
        error = validation_problem(v, source);
        return false;
    } else {
        (void)value, (void)source, (void)error;
        return true;
    }
}

/// True for application/x-www-form-urlencoded, with or without parameters, any case.
bool is_form_media_type(std::string_view content_type) noexcept;
/// The 415 answer to a body that is not declared as a urlencoded form.
Response unsupported_form_media_type(std::string_view content_type);

/// Decoded name/value pairs, in order.
using UrlPairs = std::vector<std::pair<std::string, std::string>>;

/// What parse_urlencoded() found.
enum class UrlencodedStatus { ok, malformed, too_many };

/// Decodes `text` (name=value pairs joined by '&', '+' as space, %XX escapes) and appends
/// the pairs to `out`: empty pairs are skipped, a pair without '=' has an empty value.
/// Stops with too_many before storing pair `max_pairs + 1`; malformed for a bad escape.
UrlencodedStatus parse_urlencoded(std::string_view text, UrlPairs& out,
                                  std::size_t max_pairs = static_cast<std::size_t>(-1));

/// The decoded name/value pairs of a query string, in order.
struct QueryParams {
    UrlPairs items;
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
            constexpr auto max_secs = std::chrono::duration_cast<std::chrono::seconds>(D::max());
            constexpr auto min_secs = std::chrono::duration_cast<std::chrono::seconds>(D::min());
            if (secs >= max_secs.count() || secs <= min_secs.count()) {
                why = "date-time out of range";
                return false;
            }
            out = T(std::chrono::duration_cast<D>(std::chrono::seconds(secs)) +
                    std::chrono::duration_cast<D>(std::chrono::nanoseconds(nanos)));
            return true;
        }
        why = "expected an RFC 3339 date-time";
        return false;
    } else {
        static_assert(json::detail::unsupported<T>,
                      "Query<T> and Form<T> members must be scalars (bool, numbers, strings, "
                      "VELA_ENUM enums, time points), std::optional or std::vector of them");
        return false;
    }
}

// Fills one member from every pair named `name`. An absent member is left as it is (the
// caller's T is value-initialized) unless `required`, which sets `why`.
template <class M>
bool fill_query_member(const UrlPairs& items, std::string_view name, bool required, M& out,
                       std::string& why) {
    if constexpr (is_query_list<M>::value) {
        bool found = false;
        for (const auto& [k, v] : items) {
            if (k != name) continue;
            if (!found) out.clear(), found = true;
            if (!from_query_text(v, out.emplace_back(), why)) return false;
        }
        return found || !required || (why = "missing required parameter", false);
    } else {
        const std::string* text = nullptr;
        for (const auto& [k, v] : items)
            if (k == name) text = &v;  // the last one wins, as in JSON
        if (!text) return !required || (why = "missing required parameter", false);
        if constexpr (json::detail::is_optional<M>::value) {
            using V = typename M::value_type;
            if (text->empty() && !std::is_same_v<V, std::string>) return out.reset(), true;
            return from_query_text(*text, out.emplace(), why);
        } else {
            return from_query_text(*text, out, why);
        }
    }
}

// Fills the members of `out` (value-initialized) from `items`; on failure the JSON name of
// the member and the reason.
template <json::Reflected T>
bool fill_reflected(const UrlPairs& items, T& out, std::string_view& bad, std::string& why) {
    const auto fill = [&](const auto& f) {
        if (fill_query_member(items, f.name, json::detail::is_required(f), out.*(f.member), why))
            return true;
        bad = f.name;
        return false;
    };
    if (!std::apply([&](const auto&... f) { return (fill(f) && ...); }, json::fields_of<T>))
        return false;
    if constexpr (json::rejects_unknown<T>()) {  // VELA_REJECT_UNKNOWN
        for (const auto& pair : items) {
            const bool known =
                std::apply([&](const auto&... f) { return ((f.name == pair.first) || ...); },
                           json::fields_of<T>);
            if (!known) {
                bad = pair.first;
                why = "unknown parameter";
                return false;
            }
        }
    }
    return true;
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
        if (!detail::check_constraints(out->value, detail::ValueSource::json_body, error))
            return std::nullopt;
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
        std::string_view bad;
        std::string why;
        if (detail::fill_reflected(q.items, out->value, bad, why)) {
            if (!detail::check_constraints(out->value, detail::ValueSource::query, error))
                return std::nullopt;
            return out;
        }
        error = detail::query_problem(bad, why);
        return std::nullopt;
    }
};

/// The name/value pairs of an application/x-www-form-urlencoded text, in order: an ordered
/// multimap. As a handler parameter it reads the request body (415 for another Content-Type,
/// 400 for a malformed body or more than kMaxFields pairs); it can also be built from text
/// (FormData::parse) or pair by pair (add), e.g. from the text fields of a multipart body,
/// and fill a reflected struct with the same rules as Form<T> (to<T>).
class FormData {
  public:
    /// One decoded pair: the name and the value.
    using value_type = std::pair<std::string, std::string>;
    /// Iterates the pairs in the order they came.
    using const_iterator = detail::UrlPairs::const_iterator;

    /// The default bound on the number of pairs read from a body (more is a 400).
    static constexpr std::size_t kMaxFields = 1000;

    /// No pairs.
    FormData() = default;
    /// Decodes `urlencoded`; throws std::invalid_argument for a malformed percent escape or
    /// more than `max_fields` pairs.
    explicit FormData(std::string_view urlencoded, std::size_t max_fields = kMaxFields);

    /// Decodes `urlencoded` without throwing: nullopt with the reason in `why`.
    static std::optional<FormData> parse(std::string_view urlencoded, std::string& why,
                                         std::size_t max_fields = kMaxFields);

    /// Reads the body of `req` (see the class comment); nullopt with the 400/415 in `error`.
    static std::optional<FormData> from_request(Request& req, Response& error) {
        return from_body(req, error, kMaxFields);
    }
    /// from_request with another bound on the number of pairs (Form<T, MaxFields>).
    static std::optional<FormData> from_body(Request& req, Response& error, std::size_t max_fields);

    /// Appends a pair (e.g. a text field of a multipart body).
    void add(std::string name, std::string value) {
        items_.emplace_back(std::move(name), std::move(value));
    }

    /// The first value named `name`, or nullopt.
    std::optional<std::string_view> get(std::string_view name) const noexcept;
    /// Every value named `name`, in order.
    std::vector<std::string_view> all(std::string_view name) const;
    /// True when some pair is named `name`.
    bool contains(std::string_view name) const noexcept { return get(name).has_value(); }

    /// The number of pairs (repeated names count each time).
    std::size_t size() const noexcept { return items_.size(); }
    /// True when there are no pairs.
    bool empty() const noexcept { return items_.empty(); }
    /// The first pair.
    const_iterator begin() const noexcept { return items_.begin(); }
    /// Past the last pair.
    const_iterator end() const noexcept { return items_.end(); }
    /// The pairs, in order.
    const detail::UrlPairs& items() const noexcept { return items_; }

    /// A value-initialized T filled from the pairs (see Form<T>); nullopt with the 400 answer
    /// (naming the field) in `error`.
    template <json::Reflected T>
    std::optional<T> to(Response& error) const {
        std::optional<T> out(std::in_place);
        std::string_view bad;
        std::string why;
        if (detail::fill_reflected(items_, *out, bad, why)) {
            if (!detail::check_constraints(*out, detail::ValueSource::form, error))
                return std::nullopt;
            return out;
        }
        error = detail::form_problem(bad, why);
        return std::nullopt;
    }

  private:
    detail::UrlPairs items_;
};

/// A reflected struct filled from an application/x-www-form-urlencoded body (see above); a
/// body of more than MaxFields pairs is a 400.
template <json::Reflected T, std::size_t MaxFields = FormData::kMaxFields>
struct Form : detail::Holder<T> {
    /// Reads the body of `req`; on failure nullopt, with the 400/415 answer in `error`.
    static std::optional<Form> from_request(Request& req, Response& error) {
        const std::optional<FormData> data = FormData::from_body(req, error, MaxFields);
        if (!data) return std::nullopt;
        std::optional<Form> out(std::in_place);
        std::string_view bad;
        std::string why;
        if (detail::fill_reflected(data->items(), out->value, bad, why)) {
            if (!detail::check_constraints(out->value, detail::ValueSource::form, error))
                return std::nullopt;
            return out;
        }
        error = detail::form_problem(bad, why);
        return std::nullopt;
    }
};

}  // namespace vela
