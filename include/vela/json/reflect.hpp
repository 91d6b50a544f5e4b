#pragma once
// Compile-time descriptions of structs and enums for the JSON codec.
//
//     struct Item { int id; std::string name; double price_cents = 0; int qty = 1; };
//     VELA_REFLECT(Item, VELA_REQUIRED(id), name, VELA_AS(price_cents, "price"), qty)
//
//     enum class Color { red, dark_blue };
//     VELA_ENUM(Color, red, VELA_AS(dark_blue, "dark-blue"))
//
// Both macros go at namespace scope, in the namespace of the type (they define a constexpr
// function that argument-dependent lookup finds). VELA_REFLECT lists the members that are
// read and written, in the order they are written; VELA_AS(member, "name") gives one a
// different JSON name. VELA_REQUIRED(member) and VELA_REQUIRED_AS(member, "name") mark a
// member required: reading a struct (JSON body, Query<T>, Form<T>) fails when it is absent.
// Every other member is optional: when absent it takes the value it has in a value-initialized
// T (`T{}`: its default member initializer, else zero / empty / nullopt). VELA_ENUM lists the
// enumerators that have a JSON string; writing any other value is an error. Names must be string
// literals that need no JSON escaping (checked at compile time).
//
// Everything the codec needs is the tuple that vela_json_fields() returns, so a future
// C++26 reflection path can produce the same tuple without the macro.

#include <array>
#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>

// ---- Preprocessor plumbing (not for direct use) ------------------------------------------

#define VELA_JSON_CAT(a, b) VELA_JSON_CAT_(a, b)
#define VELA_JSON_CAT_(a, b) a##b
#define VELA_JSON_SECOND(a, b, ...) b
#define VELA_JSON_PROBE(...) ~, 1
#define VELA_JSON_IS_PAREN(x) VELA_JSON_IS_PAREN_(VELA_JSON_PROBE x)
#define VELA_JSON_IS_PAREN_(...) VELA_JSON_SECOND(__VA_ARGS__, 0, ~)
#define VELA_JSON_UNPAREN(...) __VA_ARGS__

// Applies m(T, x) to each x, comma-separated; up to 256 items.
#define VELA_JSON_PARENS ()
#define VELA_JSON_EXPAND(...) \
    VELA_JSON_EXPAND3(VELA_JSON_EXPAND3(VELA_JSON_EXPAND3(VELA_JSON_EXPAND3(__VA_ARGS__))))
#define VELA_JSON_EXPAND3(...) \
    VELA_JSON_EXPAND2(VELA_JSON_EXPAND2(VELA_JSON_EXPAND2(VELA_JSON_EXPAND2(__VA_ARGS__))))
#define VELA_JSON_EXPAND2(...) \
    VELA_JSON_EXPAND1(VELA_JSON_EXPAND1(VELA_JSON_EXPAND1(VELA_JSON_EXPAND1(__VA_ARGS__))))
#define VELA_JSON_EXPAND1(...) \
    VELA_JSON_EXPAND0(VELA_JSON_EXPAND0(VELA_JSON_EXPAND0(VELA_JSON_EXPAND0(__VA_ARGS__))))
#define VELA_JSON_EXPAND0(...) __VA_ARGS__
#define VELA_JSON_FOR_EACH(m, T, ...) \
    __VA_OPT__(VELA_JSON_EXPAND(VELA_JSON_FOR_EACH_(m, T, __VA_ARGS__)))
#define VELA_JSON_FOR_EACH_(m, T, x, ...) \
    m(T, x) __VA_OPT__(, VELA_JSON_FOR_EACH_AGAIN VELA_JSON_PARENS(m, T, __VA_ARGS__))
#define VELA_JSON_FOR_EACH_AGAIN() VELA_JSON_FOR_EACH_

// One field: a plain member name, the (member, "name") pair VELA_AS makes, or the
// (member, "name", 1) triple of VELA_REQUIRED / VELA_REQUIRED_AS.
#define VELA_JSON_FIELD(T, x) VELA_JSON_CAT(VELA_JSON_FIELD_, VELA_JSON_IS_PAREN(x))(T, x)
#define VELA_JSON_FIELD_0(T, m) ::vela::json::detail::make_field(&T::m, #m, ",\"" #m "\":")
#define VELA_JSON_FIELD_1(T, p) VELA_JSON_FIELD_AS(T, VELA_JSON_UNPAREN p)
#define VELA_JSON_FIELD_AS(...) VELA_JSON_FIELD_AS_(__VA_ARGS__)
#define VELA_JSON_FIELD_AS_(T, m, name, ...) \
    ::vela::json::detail::make_field(&T::m, name, ",\"" name "\":" __VA_OPT__(, true))

#define VELA_JSON_ENUMERATOR(E, x) VELA_JSON_CAT(VELA_JSON_ENUMERATOR_, VELA_JSON_IS_PAREN(x))(E, x)
#define VELA_JSON_ENUMERATOR_0(E, v) ::vela::json::detail::make_enumerator(E::v, #v, "\"" #v "\"")
#define VELA_JSON_ENUMERATOR_1(E, p) VELA_JSON_ENUMERATOR_AS(E, VELA_JSON_UNPAREN p)
#define VELA_JSON_ENUMERATOR_AS(...) VELA_JSON_ENUMERATOR_AS_(__VA_ARGS__)
#define VELA_JSON_ENUMERATOR_AS_(E, v, name) \
    ::vela::json::detail::make_enumerator(E::v, name, "\"" name "\"")

// ---- The macros --------------------------------------------------------------------------

/// Gives a member (in VELA_REFLECT) or an enumerator (in VELA_ENUM) another JSON name.
#define VELA_AS(member, json_name) (member, json_name)

/// Marks a member (in VELA_REFLECT) required: reading fails when it is absent.
#define VELA_REQUIRED(member) (member, #member, 1)

/// A required member (see VELA_REQUIRED) with another JSON name (see VELA_AS).
#define VELA_REQUIRED_AS(member, json_name) (member, json_name, 1)

/// Describes the JSON fields of struct `Type`: VELA_REFLECT(Type, member, VELA_AS(m, "n"), ...).
#define VELA_REFLECT(Type, ...)                                                         \
    [[maybe_unused]] constexpr auto vela_json_fields(const Type*) noexcept {            \
        return std::make_tuple(VELA_JSON_FOR_EACH(VELA_JSON_FIELD, Type, __VA_ARGS__)); \
    }

/// Makes reading a `Type` refuse members VELA_REFLECT does not list (JSON fields, query
/// parameters, form fields); its OpenAPI schema says additionalProperties: false.
#define VELA_REJECT_UNKNOWN(Type) \
    [[maybe_unused]] constexpr bool vela_json_reject_unknown(const Type*) noexcept { return true; }

/// Describes the JSON strings of enum `Type`: VELA_ENUM(Type, a, VELA_AS(b, "B"), ...).
#define VELA_ENUM(Type, ...)                                                            \
    [[maybe_unused]] constexpr auto vela_json_enum(const Type*) noexcept {              \
        return std::array{VELA_JSON_FOR_EACH(VELA_JSON_ENUMERATOR, Type, __VA_ARGS__)}; \
    }

namespace vela::json {

namespace detail {

// A name that can be written between quotes as it is. Not a constant expression otherwise,
// so a bad name in VELA_REFLECT/VELA_ENUM fails to compile.
constexpr std::string_view checked_name(std::string_view name) {
    if (name.empty()) throw "a JSON name must not be empty";
    for (char c : name)
        if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
            throw "a JSON name in VELA_REFLECT/VELA_ENUM must not need escaping";
    return name;
}

/// One reflected member: the pointer to it, its JSON name, `,"name":` ready to write, and
/// whether it is required (VELA_REQUIRED) or keeps its default when absent.
template <class T, class M>
struct Field {
    using owner_type = T;
    using member_type = M;
    M T::*member;
    std::string_view name;
    std::string_view key;   // ,"name":
    bool required = false;  // VELA_REQUIRED / VELA_REQUIRED_AS
};

template <class T, class M>
constexpr Field<T, M> make_field(M T::*member, std::string_view name, std::string_view key,
                                 bool required = false) {
    return Field<T, M>{member, checked_name(name), key, required};
}

/// True when the member must be present (VELA_REQUIRED); false when an absent one takes its
/// value in a value-initialized owner (what a schema generator states as "required").
template <class T, class M>
constexpr bool is_required(const Field<T, M>& f) noexcept {
    return f.required;
}

/// One enumerator with a JSON string: the value, its name and `"name"` ready to write.
template <class E>
struct Enumerator {
    E value;
    std::string_view name;
    std::string_view quoted;
};

template <class E>
constexpr Enumerator<E> make_enumerator(E value, std::string_view name, std::string_view quoted) {
    return Enumerator<E>{value, checked_name(name), quoted};
}

}  // namespace detail

/// A struct described with VELA_REFLECT.
template <class T>
concept Reflected = std::is_class_v<T> && requires(const T* p) {
    vela_json_fields(p);
};

/// An enum described with VELA_ENUM.
template <class T>
concept ReflectedEnum = std::is_enum_v<T> && requires(const T* p) {
    vela_json_enum(p);
};

/// True when VELA_REJECT_UNKNOWN(T) was declared: reading refuses members T does not list.
template <class T>
constexpr bool rejects_unknown() noexcept {
    if constexpr (requires(const T* p) { vela_json_reject_unknown(p); })
        return vela_json_reject_unknown(static_cast<const T*>(nullptr));
    else
        return false;
}

/// The field descriptors of a Reflected type, as a constexpr tuple.
template <Reflected T>
inline constexpr auto fields_of = vela_json_fields(static_cast<const T*>(nullptr));

/// The enumerators of a ReflectedEnum type, as a constexpr std::array.
template <ReflectedEnum E>
inline constexpr auto enumerators_of = vela_json_enum(static_cast<const E*>(nullptr));

/// The JSON name of `value`, or empty when VELA_ENUM does not list it.
template <ReflectedEnum E>
constexpr std::string_view enum_name(E value) noexcept {
    for (const auto& e : enumerators_of<E>)
        if (e.value == value) return e.name;
    return {};
}

/// Sets `out` to the enumerator named `name`; false when no enumerator has that name.
template <ReflectedEnum E>
constexpr bool enum_from_name(std::string_view name, E& out) noexcept {
    for (const auto& e : enumerators_of<E>) {
        if (e.name == name) {
            out = e.value;
            return true;
        }
    }
    return false;
}

}  // namespace vela::json
