#pragma once
// Declarative constraints on reflected members, checked after a value is read.
//
//     struct NewNote {
//         std::string title;
//         int rating = 0;
//         std::string email;
//         std::vector<std::string> tags;
//     };
//     VELA_REFLECT(NewNote, VELA_REQUIRED(title), rating, email, tags)
//     VELA_VALIDATE(NewNote,
//                   (title, vela::rule::length(1, 200)),
//                   (rating, vela::rule::range(0, 5)),
//                   (email, vela::rule::email),
//                   (tags, vela::rule::items(0, 10), vela::rule::each(vela::rule::length(1, 20))))
//
//     json::Violations v = json::validate(note);   // empty when every constraint holds
//
// VELA_VALIDATE goes at namespace scope beside VELA_REFLECT and lists, per member, the rules
// it must satisfy; members it does not name have none. Json<T>, Query<T> and Form<T> check
// the rules after reading (a violation is a 422 listing every violated member with its JSON
// Pointer), and the OpenAPI document states them in the schema (minLength, maximum, pattern,
// format, enum, minItems...). Nested reflected structs, and the elements of arrays, optionals
// and maps of them, are checked with their own rules. A type without rules, and without
// members that have some, costs nothing: the check compiles to nothing.
//
// The rules (namespace vela::rule):
//   length(min, max), min_length(n), max_length(n)   a string's length in characters (code
//                                                    points, as JSON Schema counts them)
//   range(lo, hi), minimum(x), maximum(x)            a number within the bounds (inclusive)
//   exclusive_minimum(x), exclusive_maximum(x)       a number beyond / below the bound
//   multiple_of(n)                                   an integer that n divides
//   pattern<"regex">                                 a string in which the ECMAScript regular
//                                                    expression finds a match (anchor it with
//                                                    ^...$ to match the whole string)
//   email, uri, uuid, date                           a string of that format
//   one_of(a, b, ...)                                a string or number among the values
//   items(min, max), min_items(n), max_items(n)      the number of elements of an array or map
//   unique_items                                     no two elements of an array equal
//   each(rules...)                                   the rules, on every element of an array or
//                                                    every value of a map
//   check(predicate, "message")                      a predicate of your own on the member
// A std::optional member is checked when it holds a value. A type may also check itself as a
// whole (e.g. start <= end): declare `void vela_json_validate(const T&, json::Violations&)`
// in its namespace and append what is wrong (see json::Violations::add).
//
// VELA_REJECT_UNKNOWN(Type) makes reading a Type refuse members it does not declare (JSON
// fields, query parameters, form fields), and its schema says additionalProperties: false.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "vela/json/codec.hpp"
#include "vela/json/reflect.hpp"
#include "vela/json/value.hpp"

// ---- Preprocessor plumbing (not for direct use) ------------------------------------------

#define VELA_JSON_RULE(T, p) VELA_JSON_RULE_(T, VELA_JSON_UNPAREN p)
#define VELA_JSON_RULE_(...) VELA_JSON_RULE__(__VA_ARGS__)
#define VELA_JSON_RULE__(T, m, ...) ::vela::json::detail::make_rules(&T::m, #m, __VA_ARGS__)

/// Lists the constraints of struct `Type`'s members: VELA_VALIDATE(Type, (member, rules...),
/// ...) (see validate.hpp).
#define VELA_VALIDATE(Type, ...)                                                       \
    [[maybe_unused]] constexpr auto vela_json_rules(const Type*) noexcept {            \
        return std::make_tuple(VELA_JSON_FOR_EACH(VELA_JSON_RULE, Type, __VA_ARGS__)); \
    }

namespace vela::json {

/// One constraint a value does not satisfy: where (an RFC 6901 JSON Pointer, "/tags/2";
/// "" for the value itself) and what ("must be at most 5").
struct Violation {
    /// The JSON Pointer of the member.
    std::string pointer;
    /// What it must be.
    std::string message;
};

/// The constraints a value does not satisfy, in member order.
struct Violations {
    /// Each violation.
    std::vector<Violation> items;

    /// Appends a violation of member `pointer` (a JSON Pointer, "/end").
    void add(std::string pointer, std::string message) {
        items.push_back(Violation{std::move(pointer), std::move(message)});
    }
    /// True when there is none.
    bool empty() const noexcept { return items.empty(); }
    /// How many there are.
    std::size_t size() const noexcept { return items.size(); }
    /// The first one.
    auto begin() const noexcept { return items.begin(); }
    /// Past the last one.
    auto end() const noexcept { return items.end(); }
};

namespace detail {

// A compile-time string, for pattern<"...">.
template <std::size_t N>
struct Literal {
    char text[N]{};
    constexpr Literal(const char (&s)[N]) noexcept {  // NOLINT: implicit on purpose
        for (std::size_t i = 0; i < N; ++i) text[i] = s[i];
    }
    constexpr std::string_view view() const noexcept { return {text, N - 1}; }
};

// A numeric bound, kept exactly for integers.
struct Bound {
    bool integral = true;
    std::int64_t i = 0;
    double d = 0;
};

template <class N>
constexpr Bound make_bound(N n) noexcept {
    static_assert(std::is_arithmetic_v<N> && !std::is_same_v<N, bool>,
                  "vela::rule: numeric bounds must be numbers");
    if constexpr (std::is_integral_v<N>) {
        static_assert(sizeof(N) < 8 || std::is_signed_v<N>,
                      "vela::rule: use a signed bound (unsigned 64-bit bounds are not supported)");
        return Bound{true, static_cast<std::int64_t>(n), static_cast<double>(n)};
    } else {
        return Bound{false, 0, static_cast<double>(n)};
    }
}

// -1, 0, 1 as v compares with b.
template <class V>
constexpr int compare(V v, const Bound& b) noexcept {
    if constexpr (std::is_integral_v<V>) {
        if (b.integral) return std::cmp_less(v, b.i) ? -1 : std::cmp_equal(v, b.i) ? 0 : 1;
        const long double x = static_cast<long double>(v);
        return x < b.d ? -1 : x == b.d ? 0 : 1;
    } else {
        const double x = static_cast<double>(v);
        const long double y = b.integral ? static_cast<long double>(b.i) : b.d;
        return x < y ? -1 : x == y ? 0 : 1;
    }
}

template <class T>
inline constexpr bool is_number_v = is_integer_v<T> || std::is_floating_point_v<T>;

template <class T>
inline constexpr bool is_sequence_v = is_vector<T>::value || is_array<T>::value;

// A string member (what the text rules apply to).
template <class M>
constexpr bool is_ruled_text_v =
    std::is_same_v<M, std::string> || std::is_same_v<M, std::string_view>;

// The cold parts: messages and the format checks (src/json/validate.cpp).
std::size_t utf8_length(std::string_view s) noexcept;
std::string length_message(std::size_t min, std::size_t max);
std::string number_message(int kind, const Bound& a, const Bound& b);  // kind: see NumberRule
std::string items_message(std::size_t min, std::size_t max);
std::string pattern_message(std::string_view pattern);
std::string one_of_message(const std::string_view* names, std::size_t n);
std::string one_of_message(const Bound* values, std::size_t n);
json::Value bound_value(const Bound& b);
bool is_email(std::string_view s) noexcept;
bool is_uri(std::string_view s) noexcept;
bool is_uuid(std::string_view s) noexcept;
bool is_date(std::string_view s) noexcept;
struct CompiledPattern;
const CompiledPattern* compile_pattern(std::string_view pattern);
bool matches(const CompiledPattern* p, std::string_view s);

// What a path to a member is while checking: built into a JSON Pointer only on a violation.
struct PathSegment {
    const PathSegment* parent = nullptr;
    std::string_view name;  // a member's JSON name, or empty for an index
    std::size_t index = 0;
};
std::string pointer_of(const PathSegment* p);

// One rule fails at `at` with `message`.
inline void violate(Violations& out, const PathSegment* at, std::string message) {
    out.add(pointer_of(at), std::move(message));
}

}  // namespace detail

// ---- The rules ------------------------------------------------------------------------------

namespace rule {

/// A string of `min` to `max` characters (code points).
struct Length {
    std::size_t min = 0;
    std::size_t max = static_cast<std::size_t>(-1);

    template <class M>
    void check(const M& v, json::Violations& out, const json::detail::PathSegment* at) const {
        static_assert(json::detail::is_ruled_text_v<M>,
                      "vela::rule::length applies to strings (use items() for arrays)");
        if (min == 0 && v.size() <= max) return;  // a code point takes at least a byte
        const std::size_t n = json::detail::utf8_length(std::string_view(v));
        if (n < min || n > max)
            json::detail::violate(out, at, json::detail::length_message(min, max));
    }
    void describe(json::Value& s) const {
        if (min > 0) s.set("minLength", static_cast<std::int64_t>(min));
        if (max != static_cast<std::size_t>(-1)) s.set("maxLength", static_cast<std::int64_t>(max));
    }
};

/// A string of `min` to `max` characters.
constexpr Length length(std::size_t min, std::size_t max) noexcept { return {min, max}; }
/// A string of at least `n` characters.
constexpr Length min_length(std::size_t n) noexcept { return {n, static_cast<std::size_t>(-1)}; }
/// A string of at most `n` characters.
constexpr Length max_length(std::size_t n) noexcept { return {0, n}; }

/// A number within bounds: kind 0 range [a, b], 1 >= a, 2 <= a, 3 > a, 4 < a, 5 multiple of a.
struct NumberRule {
    int kind = 0;
    json::detail::Bound a, b;

    template <class M>
    void check(const M& v, json::Violations& out, const json::detail::PathSegment* at) const {
        static_assert(json::detail::is_number_v<M>,
                      "vela::rule: range/minimum/maximum/multiple_of apply to numbers");
        using json::detail::compare;
        bool ok;
        switch (kind) {
            case 0:
                ok = compare(v, a) >= 0 && compare(v, b) <= 0;
                break;
            case 1:
                ok = compare(v, a) >= 0;
                break;
            case 2:
                ok = compare(v, a) <= 0;
                break;
            case 3:
                ok = compare(v, a) > 0;
                break;
            case 4:
                ok = compare(v, a) < 0;
                break;
            default:
                if constexpr (std::is_integral_v<M> && std::is_signed_v<M>)
                    ok = a.i == 0 || static_cast<std::int64_t>(v) % a.i == 0;
                else if constexpr (std::is_integral_v<M>)
                    ok = a.i <= 0 ||
                         static_cast<std::uint64_t>(v) % static_cast<std::uint64_t>(a.i) == 0;
                else
                    ok = a.i == 0 || std::fmod(static_cast<double>(v), a.d) == 0;
                break;
        }
        if (!ok) json::detail::violate(out, at, json::detail::number_message(kind, a, b));
    }
    void describe(json::Value& s) const {
        using json::detail::bound_value;
        switch (kind) {
            case 0:
                s.set("minimum", bound_value(a));
                s.set("maximum", bound_value(b));
                break;
            case 1:
                s.set("minimum", bound_value(a));
                break;
            case 2:
                s.set("maximum", bound_value(a));
                break;
            case 3:
                s.set("exclusiveMinimum", bound_value(a));
                break;
            case 4:
                s.set("exclusiveMaximum", bound_value(a));
                break;
            default:
                s.set("multipleOf", bound_value(a));
                break;
        }
    }
};

/// A number from `lo` to `hi`, both included.
template <class A, class B>
constexpr NumberRule range(A lo, B hi) noexcept {
    return {0, json::detail::make_bound(lo), json::detail::make_bound(hi)};
}
/// A number of at least `lo`.
template <class A>
constexpr NumberRule minimum(A lo) noexcept {
    return {1, json::detail::make_bound(lo), {}};
}
/// A number of at most `hi`.
template <class A>
constexpr NumberRule maximum(A hi) noexcept {
    return {2, json::detail::make_bound(hi), {}};
}
/// A number greater than `lo`.
template <class A>
constexpr NumberRule exclusive_minimum(A lo) noexcept {
    return {3, json::detail::make_bound(lo), {}};
}
/// A number less than `hi`.
template <class A>
constexpr NumberRule exclusive_maximum(A hi) noexcept {
    return {4, json::detail::make_bound(hi), {}};
}
/// An integer that `n` (an integer) divides.
template <class A>
constexpr NumberRule multiple_of(A n) noexcept {
    static_assert(std::is_integral_v<A>, "vela::rule::multiple_of takes an integer");
    return {5, json::detail::make_bound(n), {}};
}

/// A string in which the ECMAScript regular expression P finds a match.
template <json::detail::Literal P>
struct Pattern {
    template <class M>
    void check(const M& v, json::Violations& out, const json::detail::PathSegment* at) const {
        static_assert(json::detail::is_ruled_text_v<M>, "vela::rule::pattern applies to strings");
        static const json::detail::CompiledPattern* const re =
            json::detail::compile_pattern(P.view());
        if (!json::detail::matches(re, std::string_view(v)))
            json::detail::violate(out, at, json::detail::pattern_message(P.view()));
    }
    void describe(json::Value& s) const { s.set("pattern", P.view()); }
};

/// A string in which the ECMAScript regular expression finds a match (pattern<"^[a-z]+$">).
template <json::detail::Literal P>
inline constexpr Pattern<P> pattern{};

/// A string of a format OpenAPI names: 0 email, 1 uri, 2 uuid, 3 date.
struct Format {
    int kind = 0;

    template <class M>
    void check(const M& v, json::Violations& out, const json::detail::PathSegment* at) const {
        static_assert(json::detail::is_ruled_text_v<M>,
                      "vela::rule::email/uri/uuid/date apply to strings");
        using namespace json::detail;
        const std::string_view s(v);
        const bool ok = kind == 0   ? is_email(s)
                        : kind == 1 ? is_uri(s)
                        : kind == 2 ? is_uuid(s)
                                    : is_date(s);
        if (!ok)
            violate(out, at,
                    kind == 0   ? "must be an e-mail address"
                    : kind == 1 ? "must be an absolute URI"
                    : kind == 2 ? "must be a UUID (8-4-4-4-12 hexadecimal digits)"
                                : "must be a date (YYYY-MM-DD)");
    }
    void describe(json::Value& s) const {
        s.set("format", kind == 0 ? "email" : kind == 1 ? "uri" : kind == 2 ? "uuid" : "date");
    }
};

/// An e-mail address (local@domain.example, the addr-spec most services accept).
inline constexpr Format email{0};
/// An absolute URI (RFC 3986: scheme ":" ...).
inline constexpr Format uri{1};
/// A UUID in its 8-4-4-4-12 hexadecimal form.
inline constexpr Format uuid{2};
/// A full date, YYYY-MM-DD (RFC 3339).
inline constexpr Format date{3};

/// A string among N names.
template <std::size_t N>
struct OneOfText {
    std::array<std::string_view, N> values;

    template <class M>
    void check(const M& v, json::Violations& out, const json::detail::PathSegment* at) const {
        static_assert(json::detail::is_ruled_text_v<M>,
                      "vela::rule::one_of with strings applies to strings");
        for (std::string_view x : values)
            if (x == std::string_view(v)) return;
        json::detail::violate(out, at, json::detail::one_of_message(values.data(), N));
    }
    void describe(json::Value& s) const {
        json::Value e = json::Value::array();
        for (std::string_view x : values) e.push_back(x);
        s.set("enum", std::move(e));
    }
};

/// A number among N values.
template <std::size_t N>
struct OneOfNumber {
    std::array<json::detail::Bound, N> values;

    template <class M>
    void check(const M& v, json::Violations& out, const json::detail::PathSegment* at) const {
        static_assert(json::detail::is_number_v<M>,
                      "vela::rule::one_of with numbers applies to numbers");
        for (const auto& x : values)
            if (json::detail::compare(v, x) == 0) return;
        json::detail::violate(out, at, json::detail::one_of_message(values.data(), N));
    }
    void describe(json::Value& s) const {
        json::Value e = json::Value::array();
        for (const auto& x : values) e.push_back(json::detail::bound_value(x));
        s.set("enum", std::move(e));
    }
};

/// A value among the given strings or numbers: one_of("draft", "published"), one_of(1, 2, 4).
template <class First, class... Rest>
constexpr auto one_of(First first, Rest... rest) noexcept {
    if constexpr (std::is_convertible_v<First, std::string_view>)
        return OneOfText<1 + sizeof...(Rest)>{{std::string_view(first), std::string_view(rest)...}};
    else
        return OneOfNumber<1 + sizeof...(Rest)>{
            {json::detail::make_bound(first), json::detail::make_bound(rest)...}};
}

/// An array (or map) of `min` to `max` elements.
struct Items {
    std::size_t min = 0;
    std::size_t max = static_cast<std::size_t>(-1);

    template <class M>
    void check(const M& v, json::Violations& out, const json::detail::PathSegment* at) const {
        static_assert(json::detail::is_sequence_v<M> || json::detail::is_string_map<M>::value,
                      "vela::rule::items applies to arrays and maps (use length() for strings)");
        if (v.size() < min || v.size() > max)
            json::detail::violate(out, at, json::detail::items_message(min, max));
    }
    template <class M>
    void describe_for(json::Value& s) const {
        const bool map = json::detail::is_string_map<M>::value;
        if (min > 0) s.set(map ? "minProperties" : "minItems", static_cast<std::int64_t>(min));
        if (max != static_cast<std::size_t>(-1))
            s.set(map ? "maxProperties" : "maxItems", static_cast<std::int64_t>(max));
    }
};

/// An array or map of `min` to `max` elements.
constexpr Items items(std::size_t min, std::size_t max) noexcept { return {min, max}; }
/// An array or map of at least `n` elements.
constexpr Items min_items(std::size_t n) noexcept { return {n, static_cast<std::size_t>(-1)}; }
/// An array or map of at most `n` elements.
constexpr Items max_items(std::size_t n) noexcept { return {0, n}; }

/// An array without two equal elements.
struct UniqueItems {
    template <class M>
    void check(const M& v, json::Violations& out, const json::detail::PathSegment* at) const {
        static_assert(json::detail::is_sequence_v<M>, "vela::rule::unique_items applies to arrays");
        for (std::size_t i = 1; i < v.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (v[i] == v[j]) {
                    const json::detail::PathSegment el{at, {}, i};
                    return json::detail::violate(out, &el, "must not repeat an earlier element");
                }
    }
    void describe(json::Value& s) const { s.set("uniqueItems", true); }
};

/// An array without two equal elements.
inline constexpr UniqueItems unique_items{};

/// The rules R..., on every element of an array or every value of a map.
template <class... R>
struct Each {
    std::tuple<R...> rules;
};

/// Checks `rules` on every element of an array (or value of a map): each(length(1, 20)).
template <class... R>
constexpr Each<R...> each(R... rules) noexcept {
    return {std::tuple<R...>(rules...)};
}

/// A predicate of your own: check([](const std::string& s) { ... }, "must be ...").
template <class F>
struct Check {
    F predicate;
    std::string_view message;

    template <class M>
    void check(const M& v, json::Violations& out, const json::detail::PathSegment* at) const {
        static_assert(std::is_invocable_r_v<bool, const F&, const M&>,
                      "vela::rule::check: the predicate must take the member's type and return "
                      "bool");
        if (!predicate(v)) json::detail::violate(out, at, std::string(message));
    }
    void describe(json::Value&) const {}
};

/// A predicate of your own on the member (a captureless lambda) and what it must be.
template <class F>
constexpr Check<F> check(F predicate, std::string_view message) noexcept {
    return {predicate, message};
}

}  // namespace rule

namespace detail {

// The rules of one member: VELA_VALIDATE's (member, rules...) group.
template <class T, class M, class... R>
struct MemberRules {
    using owner_type = T;
    using member_type = M;
    M T::*member;
    std::string_view cpp_name;
    std::tuple<R...> rules;
};

template <class T, class M, class... R>
constexpr MemberRules<T, M, R...> make_rules(M T::*member, std::string_view name, R... rules) {
    return {member, name, std::tuple<R...>(rules...)};
}

template <class T>
concept HasOwnRules = std::is_class_v<T> && requires(const T* p) {
    vela_json_rules(p);
};

template <class T>
concept HasWholeCheck = requires(const T& v, Violations& out) {
    vela_json_validate(v, out);
};

template <class T>
constexpr auto rules_tuple() noexcept {
    if constexpr (HasOwnRules<T>)
        return vela_json_rules(static_cast<const T*>(nullptr));
    else
        return std::tuple<>{};
}

template <class T>
inline constexpr auto rules_of = rules_tuple<T>();

// True when checking a T can find something: its own rules, a whole-value check, or (to a
// bounded depth, for recursive types) a member, element or value that has some.
template <class T, int Depth = 6>
constexpr bool has_rules() noexcept {
    if constexpr (Depth == 0) {
        return false;
    } else if constexpr (is_optional<T>::value || is_vector<T>::value || is_array<T>::value) {
        return has_rules<typename T::value_type, Depth - 1>();
    } else if constexpr (is_string_map<T>::value) {
        return has_rules<typename T::mapped_type, Depth - 1>();
    } else if constexpr (Reflected<T>) {
        if constexpr (HasOwnRules<T> || HasWholeCheck<T>) {
            return true;
        } else {
            return std::apply(
                [](const auto&... f) {
                    return (has_rules<typename std::remove_cvref_t<decltype(f)>::member_type,
                                      Depth - 1>() ||
                            ... || false);
                },
                fields_of<T>);
        }
    } else {
        return HasWholeCheck<T>;
    }
}

// The JSON name of member `m` of T, or empty when VELA_REFLECT does not list it.
template <class T, class M>
constexpr std::string_view json_name_of(M T::*m) noexcept {
    std::string_view out;
    std::apply(
        [&](const auto&... f) {
            (
                [&] {
                    if constexpr (std::is_same_v<
                                      typename std::remove_cvref_t<decltype(f)>::member_type, M>)
                        if (f.member == m) out = f.name;
                }(),
                ...);
        },
        fields_of<T>);
    return out;
}

template <class T, std::size_t I>
constexpr bool rule_member_listed() noexcept {
    return !json_name_of<T>(std::get<I>(rules_of<T>).member).empty();
}

template <class T, std::size_t... I>
constexpr bool all_rule_members_listed(std::index_sequence<I...>) noexcept {
    return (rule_member_listed<T, I>() && ...);
}

template <class T>
void check_value(const T& v, Violations& out, const PathSegment* at);

// One rule on member value v (an optional one is checked when it holds a value).
template <class M, class R>
void apply_rule(const R& r, const M& v, Violations& out, const PathSegment* at) {
    if constexpr (is_optional<M>::value) {
        if (v) apply_rule(r, *v, out, at);
    } else if constexpr (requires { r.rules; }) {  // each(...)
        static_assert(is_sequence_v<M> || is_string_map<M>::value,
                      "vela::rule::each applies to arrays and maps");
        if constexpr (is_string_map<M>::value) {
            for (const auto& kv : v) {
                const PathSegment el{at, kv.first, 0};
                std::apply([&](const auto&... x) { (apply_rule(x, kv.second, out, &el), ...); },
                           r.rules);
            }
        } else {
            for (std::size_t i = 0; i < v.size(); ++i) {
                const PathSegment el{at, {}, i};
                std::apply([&](const auto&... x) { (apply_rule(x, v[i], out, &el), ...); },
                           r.rules);
            }
        }
    } else {
        r.check(v, out, at);
    }
}

// Calls fn(rule) for each rule VELA_VALIDATE gives member `field` of its owner.
template <class F, class Fn>
void for_each_member_rule(const F& field, Fn&& fn) {
    using T = typename F::owner_type;
    using M = typename F::member_type;
    if constexpr (HasOwnRules<T>) {
        std::apply(
            [&](const auto&... mr) {
                (
                    [&] {
                        using MR = std::remove_cvref_t<decltype(mr)>;
                        if constexpr (std::is_same_v<typename MR::member_type, M>)
                            if (mr.member == field.member)
                                std::apply([&](const auto&... r) { (fn(r), ...); }, mr.rules);
                    }(),
                    ...);
            },
            rules_of<T>);
    }
}

template <class T, class F>
void check_field(const T& obj, const F& f, Violations& out, const PathSegment* at) {
    using M = typename F::member_type;
    const PathSegment here{at, f.name, 0};
    const M& v = obj.*(f.member);
    for_each_member_rule(f, [&](const auto& r) { apply_rule(r, v, out, &here); });
    if constexpr (has_rules<M>()) check_value(v, out, &here);
}

// Checks the rules inside v (a reflected struct's members, a container's elements).
template <class T>
void check_value(const T& v, Violations& out, const PathSegment* at) {
    if constexpr (!has_rules<T>()) {
        return;
    } else if constexpr (is_optional<T>::value) {
        if (v) check_value(*v, out, at);
    } else if constexpr (is_vector<T>::value || is_array<T>::value) {
        for (std::size_t i = 0; i < v.size(); ++i) {
            const PathSegment el{at, {}, i};
            check_value(v[i], out, &el);
        }
    } else if constexpr (is_string_map<T>::value) {
        for (const auto& [k, e] : v) {
            const PathSegment el{at, k, 0};
            check_value(e, out, &el);
        }
    } else {
        if constexpr (Reflected<T>) {
            if constexpr (HasOwnRules<T>) {
                constexpr std::size_t n =
                    std::tuple_size_v<std::remove_cvref_t<decltype(rules_of<T>)>>;
                static_assert(all_rule_members_listed<T>(std::make_index_sequence<n>{}),
                              "VELA_VALIDATE names a member that VELA_REFLECT does not list");
            }
            std::apply([&](const auto&... f) { (check_field(v, f, out, at), ...); }, fields_of<T>);
        }
        if constexpr (HasWholeCheck<T>) {
            const std::size_t before = out.size();
            vela_json_validate(v, out);
            // Pointers the type gave are relative to it: put them under this value's.
            if (at)
                for (std::size_t i = before; i < out.items.size(); ++i)
                    out.items[i].pointer = pointer_of(at) + out.items[i].pointer;
        }
    }
}

}  // namespace detail

/// True when checking a T can find a violation (some rule applies to it or inside it).
template <class T>
inline constexpr bool has_rules_v = detail::has_rules<T>();

/// Appends to `out` every constraint `value` does not satisfy; true when there is none.
template <class T>
bool validate(const T& value, Violations& out) {
    if constexpr (!has_rules_v<T>) {
        return true;
    } else {
        const std::size_t before = out.size();
        detail::check_value(value, out, nullptr);
        return out.size() == before;
    }
}

/// Every constraint `value` does not satisfy (empty when it is valid).
template <class T>
Violations validate(const T& value) {
    Violations out;
    validate(value, out);
    return out;
}

/// Calls f(rule) for each rule VELA_VALIDATE gives member `field` of its owner (for schemas).
template <class F, class Fn>
void for_each_rule(const F& field, Fn&& fn) {
    detail::for_each_member_rule(field, std::forward<Fn>(fn));
}

}  // namespace vela::json

namespace vela {
/// The constraint rules of VELA_VALIDATE, as vela::rule::length(...).
namespace rule = json::rule;
}  // namespace vela
