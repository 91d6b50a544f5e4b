#pragma once
// Reading and writing C++ values as JSON: the entry points and the per-type rules.
//
//     Status s = json::parse<Status>(text);           // throws json::ParseError
//     if (json::Error e = json::read(text, s)) ...     // or: no exception, e.path/e.message
//     std::string out = json::write(s);                // throws json::WriteError
//     json::write_to(buffer, s);                       // appends; returns json::Error
//
// Supported: bool; every integer type but plain char (range-checked when read); float and
// double; std::string (and std::string_view / const char*, written only); std::optional
// (null or absent); std::vector, std::array; std::map / std::unordered_map with string
// keys; structs with VELA_REFLECT; enums with VELA_ENUM (as strings); system_clock time
// points (RFC 3339); json::Raw; json::Value. Any other type can take part by declaring, in
// its namespace, `bool vela_json_read(json::Reader&, T&)` and/or
// `void vela_json_write(json::Writer&, const T&)`.
//
// Reading a struct: fields may come in any order; a member marked VELA_REQUIRED must be
// present (else "missing required field"); any other absent member takes the value it has in
// a value-initialized T (its default member initializer, else zero / empty / nullopt), also
// when reading into an object that held other values; unknown fields are skipped (or
// rejected, see ParseOptions and VELA_REJECT_UNKNOWN); a repeated field keeps its last value.
// Constraints (VELA_VALIDATE) are checked apart from reading: json::validate (validate.hpp).

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vela/json/options.hpp"
#include "vela/json/reader.hpp"
#include "vela/json/reflect.hpp"
#include "vela/json/types.hpp"
#include "vela/json/value.hpp"
#include "vela/json/writer.hpp"

namespace vela::json {

namespace detail {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};

template <class T>
struct is_array : std::false_type {};
template <class T, std::size_t N>
struct is_array<std::array<T, N>> : std::true_type {};

template <class T>
struct is_string_map : std::false_type {};
template <class V, class C, class A>
struct is_string_map<std::map<std::string, V, C, A>> : std::true_type {};
template <class V, class H, class E, class A>
struct is_string_map<std::unordered_map<std::string, V, H, E, A>> : std::true_type {};

template <class T>
struct is_sys_time : std::false_type {};
template <class D>
struct is_sys_time<std::chrono::time_point<std::chrono::system_clock, D>> : std::true_type {};

template <class T>
inline constexpr bool is_integer_v =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> &&
    !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t> &&
    !std::is_same_v<T, wchar_t>;

template <class T>
inline constexpr bool is_text_v = std::is_same_v<T, std::string> ||
                                  std::is_same_v<T, std::string_view> ||
                                  std::is_same_v<T, const char*> || std::is_same_v<T, char*> ||
                                  (std::is_array_v<T> &&
                                   std::is_same_v<std::remove_cv_t<std::remove_extent_t<T>>, char>);

template <class T>
concept CustomRead = requires(Reader& r, T& v) {
    { vela_json_read(r, v) } -> std::same_as<bool>;
};
template <class T>
concept CustomWrite = requires(Writer& w, const T& v) {
    vela_json_write(w, v);
};

template <class>
inline constexpr bool unsupported = false;

// "expected one of "a", "b"" for an enum read from an unknown string.
template <ReflectedEnum E>
std::string enum_expectation() {
    std::string s = "expected one of";
    for (const auto& e : enumerators_of<E>) s.append(" ").append(e.quoted).append(",");
    s.pop_back();
    return s;
}

}  // namespace detail

/// True for types json::write() accepts (struct members are checked when written).
template <class T>
constexpr bool is_writable() {
    using namespace detail;
    if constexpr (CustomWrite<T> || std::is_same_v<T, Value> || std::is_same_v<T, bool> ||
                  is_integer_v<T> || std::is_floating_point_v<T> || is_text_v<T> || Reflected<T> ||
                  ReflectedEnum<T> || std::is_same_v<T, Raw> || is_sys_time<T>::value)
        return true;
    else if constexpr (is_optional<T>::value || is_vector<T>::value || is_array<T>::value)
        return is_writable<typename T::value_type>();
    else if constexpr (is_string_map<T>::value)
        return is_writable<typename T::mapped_type>();
    else
        return false;
}

template <class T>
void write_value(Writer& w, const T& v);
template <class T>
bool read_value(Reader& r, T& v);

namespace detail {

template <class F, class T>
void write_field(Writer& w, const T& obj, const F& f, bool& first) {
    const auto& m = obj.*(f.member);
    if constexpr (is_optional<typename F::member_type>::value)
        if (!m && w.options().skip_null_members) return;
    w.raw(first ? f.key.substr(1) : f.key);
    first = false;
    write_value(w, m);
}

template <class T>
void write_struct(Writer& w, const T& obj) {
    if (!w.enter()) return;
    w.raw('{');
    bool first = true;
    std::apply([&](const auto&... f) { (write_field(w, obj, f, first), ...); }, fields_of<T>);
    w.raw('}');
    w.leave();
}

template <class C>
void write_sequence(Writer& w, const C& items) {
    if (!w.enter()) return;
    w.raw('[');
    bool first = true;
    for (const auto& e : items) {
        if (!first) w.raw(',');
        first = false;
        write_value(w, e);
    }
    w.raw(']');
    w.leave();
}

template <class M>
void write_map(Writer& w, const M& map) {
    if (!w.enter()) return;
    w.raw('{');
    bool first = true;
    for (const auto& [k, e] : map) {
        if (!first) w.raw(',');
        first = false;
        w.string(k);
        w.raw(':');
        write_value(w, e);
    }
    w.raw('}');
    w.leave();
}

template <class D>
void write_time(Writer& w, std::chrono::time_point<std::chrono::system_clock, D> tp) {
    using namespace std::chrono;
    const auto secs = floor<seconds>(tp);
    const auto nanos = duration_cast<nanoseconds>(tp - secs).count();
    char buf[kRfc3339MaxLength + 2];
    buf[0] = '"';
    const std::size_t n =
        format_rfc3339(secs.time_since_epoch().count(), static_cast<std::uint32_t>(nanos), buf + 1);
    if (n == 0) return w.fail("time point outside the years 0000-9999");
    buf[n + 1] = '"';
    w.raw(std::string_view(buf, n + 2));
}

// -1: no such field; 0: the field's value failed; 1: read.
template <class T, std::size_t N, std::size_t... I>
int read_field(Reader& r, T& obj, std::string_view key, std::array<bool, N>& seen,
               std::index_sequence<I...>) {
    int res = -1;
    (void)((key == std::get<I>(fields_of<T>).name
                ? (seen[I] = true, res = read_value(r, obj.*(std::get<I>(fields_of<T>).member)),
                   true)
                : false) ||
           ...);
    return res;
}

// After the object: an absent member marked VELA_REQUIRED is an error; any other absent
// member takes its value in a value-initialized T (`T{}`, made only when some member is
// absent), so reading into an object that held values gives what reading into a fresh T
// gives. A T that cannot be value-initialized has every non-optional member required.
template <class T, std::size_t N, std::size_t... I>
bool check_fields(Reader& r, T& obj, const std::array<bool, N>& seen, std::index_sequence<I...>) {
    if ((seen[I] && ...)) return true;
    std::optional<T> fresh;
    const auto check = [&](const auto& f, bool was_seen) {
        using M = typename std::remove_cvref_t<decltype(f)>::member_type;
        if (was_seen) return true;
        if (is_required(f)) return r.fail_missing(f.name);
        if constexpr (std::is_default_constructible_v<T>) {
            if (!fresh) fresh.emplace();
            obj.*(f.member) = std::move(*fresh.*(f.member));
            return true;
        } else if constexpr (is_optional<M>::value) {
            (obj.*(f.member)).reset();
            return true;
        } else {
            return r.fail_missing(f.name);
        }
    };
    return (check(std::get<I>(fields_of<T>), seen[I]) && ...);
}

template <class T>
bool read_struct(Reader& r, T& obj) {
    constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<decltype(fields_of<T>)>>;
    constexpr auto seq = std::make_index_sequence<n>{};
    if (!r.begin_object()) return false;
    std::array<bool, n> seen{};
    std::string_view key;
    while (r.next_field(key)) {
        const int res = read_field(r, obj, key, seen, seq);
        if (res > 0) continue;
        if (res == 0) return false;
        if (rejects_unknown<T>() || r.options().reject_unknown_fields) return r.fail_unknown();
        if (!r.skip()) return false;
    }
    return r.ok() && check_fields(r, obj, seen, seq);
}

template <class T>
bool read_integer(Reader& r, T& v) {
    using L = std::numeric_limits<T>;
    if constexpr (std::is_signed_v<T>) {
        std::int64_t x;
        if (!r.read_int(x, L::min(), L::max())) return false;
        v = static_cast<T>(x);
    } else {
        std::uint64_t x;
        if (!r.read_uint(x, L::max())) return false;
        v = static_cast<T>(x);
    }
    return true;
}

// Elements already in `v` are read into in place (their strings and vectors keep their
// memory), so reading into the same vector again allocates little.
template <class V>
bool read_vector(Reader& r, V& v) {
    if (!r.begin_array()) return false;
    std::size_t n = 0;
    for (; r.next_element(); ++n) {
        if constexpr (std::is_same_v<typename V::value_type, bool>) {
            bool b;
            if (!r.read_bool(b)) return false;
            n < v.size() ? void(v[n] = b) : v.push_back(b);
        } else if (!read_value(r, n < v.size() ? v[n] : v.emplace_back())) {
            return false;
        }
    }
    if (!r.ok()) return false;
    v.resize(n);
    return true;
}

template <class E, std::size_t N>
bool read_array(Reader& r, std::array<E, N>& v) {
    if (!r.begin_array()) return false;
    std::size_t i = 0;
    while (r.next_element()) {
        if (i == N || !read_value(r, v[i++]))
            return r.ok() && r.fail("expected an array of " + std::to_string(N) + " elements");
    }
    if (!r.ok()) return false;
    return i == N || r.fail("expected an array of " + std::to_string(N) + " elements");
}

template <class M>
bool read_map(Reader& r, M& map) {
    if (!r.begin_object()) return false;
    map.clear();
    std::string_view key;
    while (r.next_field(key))
        if (!read_value(r, map.try_emplace(std::string(key)).first->second)) return false;
    return r.ok();
}

template <class D>
bool read_time(Reader& r, std::chrono::time_point<std::chrono::system_clock, D>& tp) {
    using namespace std::chrono;
    constexpr std::string_view expected = "expected an RFC 3339 date-time string";
    Kind k;
    std::string_view s;
    std::int64_t secs;
    std::uint32_t nanos;
    if (!r.peek(k)) return false;
    if (k != Kind::string) return r.fail(expected);
    if (!r.read_string(s)) return false;
    if (!parse_rfc3339(s, secs, nanos)) return r.fail(expected);
    constexpr auto max_secs = duration_cast<seconds>(D::max()).count() - 1;
    constexpr auto min_secs = duration_cast<seconds>(D::min()).count() + 1;
    if (secs > max_secs || secs < min_secs) return r.fail("date-time out of range");
    tp = time_point<system_clock, D>(duration_cast<D>(seconds(secs)) +
                                     duration_cast<D>(nanoseconds(nanos)));
    return true;
}

}  // namespace detail

/// Writes one value of any supported type.
template <class T>
void write_value(Writer& w, const T& v) {
    using namespace detail;
    if constexpr (CustomWrite<T>) {
        vela_json_write(w, v);
    } else if constexpr (std::is_same_v<T, Value>) {
        write_dynamic(w, v);
    } else if constexpr (std::is_same_v<T, bool>) {
        w.boolean(v);
    } else if constexpr (is_integer_v<T> && std::is_signed_v<T>) {
        w.integer(static_cast<std::int64_t>(v));
    } else if constexpr (is_integer_v<T>) {
        w.integer(static_cast<std::uint64_t>(v));
    } else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
        w.number(v);
    } else if constexpr (is_text_v<T>) {
        w.string(std::string_view(v));
    } else if constexpr (is_optional<T>::value) {
        v ? write_value(w, *v) : w.null();
    } else if constexpr (is_vector<T>::value || is_array<T>::value) {
        write_sequence(w, v);
    } else if constexpr (is_string_map<T>::value) {
        write_map(w, v);
    } else if constexpr (Reflected<T>) {
        write_struct(w, v);
    } else if constexpr (ReflectedEnum<T>) {
        for (const auto& e : enumerators_of<T>)
            if (e.value == v) return w.raw(e.quoted);
        w.fail("an enum value that VELA_ENUM does not name");
    } else if constexpr (std::is_same_v<T, Raw>) {
        v.json.empty() ? w.null() : w.raw(v.json);
    } else if constexpr (is_sys_time<T>::value) {
        write_time(w, v);
    } else {
        static_assert(unsupported<T>,
                      "vela::json cannot write this type: see VELA_REFLECT, VELA_ENUM or "
                      "vela_json_write in docs/json.md");
    }
}

/// Reads one value of any supported type; false (with the error in `r`) on failure.
template <class T>
bool read_value(Reader& r, T& v) {
    using namespace detail;
    if constexpr (CustomRead<T>) {
        return vela_json_read(r, v);
    } else if constexpr (std::is_same_v<T, Value>) {
        return read_dynamic(r, v);
    } else if constexpr (std::is_same_v<T, bool>) {
        return r.read_bool(v);
    } else if constexpr (is_integer_v<T>) {
        return read_integer(r, v);
    } else if constexpr (std::is_same_v<T, double>) {
        return r.read_double(v);
    } else if constexpr (std::is_same_v<T, float>) {
        double d;
        if (!r.read_double(d)) return false;
        if (d > std::numeric_limits<float>::max() || d < std::numeric_limits<float>::lowest())
            return r.fail("expected a number in the float range");
        v = static_cast<float>(d);
        return true;
    } else if constexpr (std::is_same_v<T, std::string>) {
        std::string_view s;
        if (!r.read_string(s)) return false;
        v.clear();  // clear + append: cheaper than assign's overlap checks
        v.append(s.data(), s.size());
        return true;
    } else if constexpr (is_optional<T>::value) {
        if (r.read_null()) {
            v.reset();
            return true;
        }
        if (!r.ok()) return false;
        if (!v) v.emplace();
        return read_value(r, *v);
    } else if constexpr (is_vector<T>::value) {
        return read_vector(r, v);
    } else if constexpr (is_array<T>::value) {
        return read_array(r, v);
    } else if constexpr (is_string_map<T>::value) {
        return read_map(r, v);
    } else if constexpr (Reflected<T>) {
        return read_struct(r, v);
    } else if constexpr (ReflectedEnum<T>) {
        Kind k;
        std::string_view s;
        if (!r.peek(k)) return false;
        if (k != Kind::string) return r.fail(enum_expectation<T>());
        if (!r.read_string(s)) return false;
        return enum_from_name(s, v) || r.fail(enum_expectation<T>());
    } else if constexpr (std::is_same_v<T, Raw>) {
        std::string_view s;
        if (!r.read_raw(s)) return false;
        v.json.assign(s);
        return true;
    } else if constexpr (is_sys_time<T>::value) {
        return read_time(r, v);
    } else {
        static_assert(!std::is_same_v<T, std::string_view> && !std::is_pointer_v<T>,
                      "vela::json: string views and C strings can be written, not read: use "
                      "std::string");
        static_assert(unsupported<T>,
                      "vela::json cannot read this type: see VELA_REFLECT, VELA_ENUM or "
                      "vela_json_read in docs/json.md");
        return false;
    }
}

/// Reads the JSON document `json` into `out`; the returned Error is empty on success.
template <class T>
[[nodiscard]] Error read(std::string_view json, T& out, const ParseOptions& opts = {}) {
    return detail::read_document(
        json, opts, [](Reader& r, void* p) { return read_value(r, *static_cast<T*>(p)); }, &out);
}

/// Reads the JSON document `json` as a T; throws ParseError.
template <class T>
T parse(std::string_view json, const ParseOptions& opts = {}) {
    T out{};
    if (Error e = read(json, out, opts)) throw ParseError(std::move(e));
    return out;
}

/// Appends `v` as JSON to `out`; on error `out` is left as it was and the Error says why.
template <class T>
[[nodiscard]] Error write_to(std::string& out, const T& v, const WriteOptions& opts = {}) {
    const std::size_t before = out.size();
    const char* error;
    {
        Writer w(out, opts);
        write_value(w, v);
        error = w.error();
    }  // the writer trims `out` here
    if (!error) return {};
    out.resize(before);
    return Error{{}, {}, error};
}

/// `v` as JSON text; throws WriteError.
template <class T>
std::string write(const T& v, const WriteOptions& opts = {}) {
    std::string out;
    if (Error e = write_to(out, v, opts)) throw WriteError(e.message);
    return out;
}

}  // namespace vela::json
