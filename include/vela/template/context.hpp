#pragma once
// The data a template renders, seen through one small type-erased reference.
//
// Rendering never converts the caller's data into a json::Value: a ContextRef is a pointer
// to the caller's object plus a table of functions generated once per C++ type (is it
// truthy, write it as text, look up a member, index a list). The renderer walks the
// caller's structs, maps and vectors in place.
//
// Types that work as a context, nested in any mix:
//   - structs described with VELA_REFLECT (members by their JSON names), enums with VELA_ENUM
//     (written as their JSON names), json::Value;
//   - std::map / std::unordered_map (any map whose key_type is std::string);
//   - std::vector, std::array, C arrays, std::span and other sized random-access ranges;
//   - std::optional, std::unique_ptr, std::shared_ptr and plain pointers (empty is null);
//   - bool, integers, floating point, std::string, std::string_view, const char*, char.
// Anything else fails to compile with a message naming vela::tmpl::Adapter, which a program
// can specialize for its own type (a static `ContextRef ref(const T&)`).
//
// Truthiness (sections and inverted sections) follows mustache.js: false, null/absent, 0,
// NaN, "" and empty lists are falsy; everything else, including an empty struct or object,
// is truthy.

#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "vela/json/codec.hpp"
#include "vela/json/reflect.hpp"
#include "vela/json/value.hpp"

namespace vela::tmpl {

struct Vtable;

/// A borrowed view of one value of the render data (null when the pointer table is null).
class ContextRef {
  public:
    /// The null value (what a missing name or an empty optional resolves to).
    constexpr ContextRef() noexcept = default;
    /// A view of the object at `data` through the function table `vtable`.
    constexpr ContextRef(const void* data, const Vtable* vtable) noexcept
        : data_(data), vtable_(vtable) {}
    /// True for the null value.
    constexpr bool is_null() const noexcept { return vtable_ == nullptr; }
    /// The object viewed.
    constexpr const void* data() const noexcept { return data_; }
    /// Its function table (nullptr for null).
    constexpr const Vtable* vtable() const noexcept { return vtable_; }

  private:
    const void* data_ = nullptr;
    const Vtable* vtable_ = nullptr;
};

/// What a value is to the template: a scalar to write, a list to iterate, an object to look
/// names up in.
enum class Kind : std::uint8_t { scalar, list, object };

/// The functions behind a ContextRef, one table per C++ type.
struct Vtable {
    /// The value's kind.
    Kind (*kind)(const void* self) noexcept;
    /// Whether a section renders for it (see the truthiness rule above).
    bool (*truthy)(const void* self) noexcept;
    /// Appends it as text, HTML-escaped when `escape` (lists and objects write nothing).
    void (*write)(const void* self, std::string& out, bool escape);
    /// Looks up member `key`: sets `out` and returns true when the object has it.
    bool (*find)(const void* self, std::string_view key, ContextRef& out);
    /// The number of elements of a list (0 for anything else).
    std::size_t (*size)(const void* self) noexcept;
    /// Element `i` of a list (i < size).
    ContextRef (*at)(const void* self, std::size_t i);
};

/// Customization point: specialize with `static ContextRef ref(const T&)` to render type T.
template <class T>
struct Adapter {};

template <class T>
ContextRef make_ref(const T& value);

namespace detail {

/// Appends `text`, HTML-escaped (& < > " ') when `escape`.
void write_text(std::string& out, std::string_view text, bool escape);
/// Appends a signed integer in decimal.
void write_int(std::string& out, std::int64_t v);
/// Appends an unsigned integer in decimal.
void write_uint(std::string& out, std::uint64_t v);
/// Appends a double in the shortest form that reads back the same ("1.21", "5", "1e+21").
void write_double(std::string& out, double v);
/// Appends a float in the shortest form that reads back the same float ("0.1").
void write_float(std::string& out, float v);
/// The function table of json::Value.
extern const Vtable json_value_vtable;

template <class T>
const T& self(const void* p) noexcept {
    return *static_cast<const T*>(p);
}

// Defaults a scalar or an object adapter inherits.
struct NoFind {
    static bool find(const void*, std::string_view, ContextRef&) { return false; }
};
struct NoList {
    static std::size_t size(const void*) noexcept { return 0; }
    static ContextRef at(const void*, std::size_t) { return {}; }
};
struct NoWrite {
    static void write(const void*, std::string&, bool) {}
};
struct Scalar : NoFind, NoList {
    static Kind kind(const void*) noexcept { return Kind::scalar; }
};

template <class A>
inline constexpr Vtable vtable_of{&A::kind, &A::truthy, &A::write, &A::find, &A::size, &A::at};

struct BoolA : Scalar {
    static bool truthy(const void* p) noexcept { return self<bool>(p); }
    static void write(const void* p, std::string& out, bool) {
        out += self<bool>(p) ? "true" : "false";
    }
};

struct CharA : Scalar {
    static bool truthy(const void* p) noexcept { return self<char>(p) != '\0'; }
    static void write(const void* p, std::string& out, bool escape) {
        write_text(out, std::string_view(&self<char>(p), 1), escape);
    }
};

template <class I>
struct IntA : Scalar {
    static bool truthy(const void* p) noexcept { return self<I>(p) != 0; }
    static void write(const void* p, std::string& out, bool) {
        if constexpr (std::is_signed_v<I>)
            write_int(out, self<I>(p));
        else
            write_uint(out, self<I>(p));
    }
};

template <class F>
struct FloatA : Scalar {
    static bool truthy(const void* p) noexcept {
        const F v = self<F>(p);
        return v != 0 && !std::isnan(v);
    }
    static void write(const void* p, std::string& out, bool) {
        if constexpr (std::is_same_v<F, float>)
            write_float(out, self<F>(p));
        else
            write_double(out, static_cast<double>(self<F>(p)));
    }
};

// std::string, std::string_view and anything else convertible to std::string_view.
template <class S>
struct StringA : Scalar {
    static bool truthy(const void* p) noexcept { return !std::string_view(self<S>(p)).empty(); }
    static void write(const void* p, std::string& out, bool escape) {
        write_text(out, std::string_view(self<S>(p)), escape);
    }
};

struct CStringA : Scalar {
    static std::string_view view(const void* p) noexcept {
        const char* s = self<const char*>(p);
        return s ? std::string_view(s) : std::string_view();
    }
    static bool truthy(const void* p) noexcept { return !view(p).empty(); }
    static void write(const void* p, std::string& out, bool escape) {
        write_text(out, view(p), escape);
    }
};

// A char array member (char name[16]): the text up to the first NUL.
template <std::size_t N>
struct CharArrayA : Scalar {
    static std::string_view view(const void* p) noexcept {
        const char* s = static_cast<const char*>(p);
        std::size_t n = 0;
        while (n < N && s[n] != '\0') ++n;
        return {s, n};
    }
    static bool truthy(const void* p) noexcept { return !view(p).empty(); }
    static void write(const void* p, std::string& out, bool escape) {
        write_text(out, view(p), escape);
    }
};

template <class E>
struct EnumA : Scalar {
    static bool truthy(const void*) noexcept { return true; }
    static void write(const void* p, std::string& out, bool escape) {
        write_text(out, json::enum_name(self<E>(p)), escape);
    }
};

template <class T>
struct StructA : NoList, NoWrite {
    static Kind kind(const void*) noexcept { return Kind::object; }
    static bool truthy(const void*) noexcept { return true; }
    static bool find(const void* p, std::string_view key, ContextRef& out) {
        const T& obj = self<T>(p);
        return std::apply(
            [&](const auto&... f) {
                return ((f.name == key ? (out = make_ref(obj.*(f.member)), true) : false) || ...);
            },
            json::fields_of<T>);
    }
};

template <class M>
struct MapA : NoList, NoWrite {
    static Kind kind(const void*) noexcept { return Kind::object; }
    static bool truthy(const void*) noexcept { return true; }
    static bool find(const void* p, std::string_view key, ContextRef& out) {
        const M& m = self<M>(p);
        auto it = [&] {
            if constexpr (requires { m.find(key); })
                return m.find(key);  // a transparent comparator or hash
            else
                return m.find(typename M::key_type(key));
        }();
        if (it == m.end()) return false;
        out = make_ref(it->second);
        return true;
    }
};

template <class R>
struct ListA : NoFind, NoWrite {
    static Kind kind(const void*) noexcept { return Kind::list; }
    static std::size_t size(const void* p) noexcept {
        return static_cast<std::size_t>(std::ranges::size(self<R>(p)));
    }
    static bool truthy(const void* p) noexcept { return size(p) != 0; }
    static ContextRef at(const void* p, std::size_t i) {
        auto it = std::ranges::begin(self<R>(p)) + static_cast<std::ptrdiff_t>(i);
        if constexpr (std::is_lvalue_reference_v<std::ranges::range_reference_t<const R>>) {
            return make_ref(*it);
        } else {
            // std::vector<bool> and other proxy references: only bool has a stable stand-in.
            static_assert(std::is_convertible_v<std::ranges::range_reference_t<const R>, bool>,
                          "vela::tmpl: a list whose elements are proxies (not references) must "
                          "be of bool");
            static constexpr bool values[2] = {false, true};
            return make_ref(values[static_cast<bool>(*it) ? 1 : 0]);
        }
    }
};

template <class T>
inline constexpr bool always_false = false;

template <class T>
concept MapLike = requires {
    typename T::key_type;
    typename T::mapped_type;
}
&&std::is_same_v<typename T::key_type, std::string>;

template <class T>
concept StringLike = std::is_convertible_v<const T&, std::string_view> && !std::is_pointer_v<T> &&
                     !std::is_array_v<T>;

template <class T>
concept ListLike = std::ranges::random_access_range<const T> && std::ranges::sized_range<const T> &&
                   !StringLike<T> &&
                   !MapLike<T>;

template <class T>
struct IsSmartPtr : std::false_type {};
template <class T, class D>
struct IsSmartPtr<std::unique_ptr<T, D>> : std::true_type {};
template <class T>
struct IsSmartPtr<std::shared_ptr<T>> : std::true_type {};

}  // namespace detail

/// A ContextRef viewing `value` (borrowed: `value` must outlive the render).
template <class T>
ContextRef make_ref(const T& value) {
    using namespace detail;
    if constexpr (requires { Adapter<T>::ref(value); }) {
        return Adapter<T>::ref(value);
    } else if constexpr (std::is_same_v<T, ContextRef>) {
        return value;
    } else if constexpr (std::is_same_v<T, json::Value>) {
        return {&value, &json_value_vtable};
    } else if constexpr (std::is_same_v<T, bool>) {
        return {&value, &vtable_of<BoolA>};
    } else if constexpr (std::is_same_v<T, char>) {
        return {&value, &vtable_of<CharA>};
    } else if constexpr (std::is_integral_v<T>) {
        return {&value, &vtable_of<IntA<T>>};
    } else if constexpr (std::is_floating_point_v<T>) {
        return {&value, &vtable_of<FloatA<T>>};
    } else if constexpr (std::is_same_v<T, const char*> || std::is_same_v<T, char*>) {
        return {&value, &vtable_of<CStringA>};
    } else if constexpr (std::is_array_v<T> && std::is_same_v<std::remove_extent_t<T>, char>) {
        return {&value, &vtable_of<CharArrayA<std::extent_v<T>>>};
    } else if constexpr (StringLike<T>) {
        return {&value, &vtable_of<StringA<T>>};
    } else if constexpr (json::ReflectedEnum<T>) {
        return {&value, &vtable_of<EnumA<T>>};
    } else if constexpr (json::Reflected<T>) {
        return {&value, &vtable_of<StructA<T>>};
    } else if constexpr (json::detail::is_optional<T>::value) {
        return value ? make_ref(*value) : ContextRef{};
    } else if constexpr (IsSmartPtr<T>::value) {
        return value ? make_ref(*value) : ContextRef{};
    } else if constexpr (std::is_pointer_v<T>) {
        return value ? make_ref(*value) : ContextRef{};
    } else if constexpr (MapLike<T>) {
        return {&value, &vtable_of<MapA<T>>};
    } else if constexpr (ListLike<T>) {
        return {&value, &vtable_of<ListA<T>>};
    } else {
        static_assert(always_false<T>,
                      "vela::tmpl: this type cannot be rendered; describe it with VELA_REFLECT "
                      "or specialize vela::tmpl::Adapter<T>");
        return {};
    }
}

}  // namespace vela::tmpl
