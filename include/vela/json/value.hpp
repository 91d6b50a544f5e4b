#pragma once
// Value: a JSON document without a struct, for when the shape is not known in advance.
//
//     json::Value v = json::Value::object({{"name", "vela"}, {"tags", json::Value::array({1,
//     2})}}); v["version"] = 2;                       // adds or replaces a member
//     v["tags"].push_back("three");
//     if (const json::Value* n = v.find("name")) use(n->as_string());
//     std::string text = json::write(v);      // {"name":"vela","tags":[1,2,"three"],"version":2}
//     json::Value back = json::parse<json::Value>(text);
//
// Numbers keep their kind: an integer that fits int64 (or uint64) stays exact, anything
// else is a double. Objects keep their members in insertion order (and lookup is a linear
// scan, which is what small objects want); a repeated key read from a document is kept once,
// with its last value.

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "vela/json/reader.hpp"
#include "vela/json/writer.hpp"

namespace vela::json {

class Value;

/// A Value's kind.
enum class Type : std::uint8_t { null, boolean, int64, uint64, float64, string, array, object };

/// A JSON value of any kind, built in code or read from a document (see above).
class Value {
  public:
    /// The elements of an array.
    using Array = std::vector<Value>;
    /// One member of an object: its key and its value.
    using Member = std::pair<std::string, Value>;
    /// The members of an object, in insertion order.
    using Object = std::vector<Member>;

    /// null.
    Value() noexcept = default;
    /// null.
    Value(std::nullptr_t) noexcept {}
    /// true or false.
    Value(bool b) noexcept : v_(b) {}
    /// A signed integer.
    template <class I>
    requires(std::is_integral_v<I>&& std::is_signed_v<I> && !std::is_same_v<I, char>) Value(I i)
    noexcept : v_(static_cast<std::int64_t>(i)) {}
    /// An unsigned integer.
    template <class U>
    requires(std::is_integral_v<U>&& std::is_unsigned_v<U> && !std::is_same_v<U, bool>) Value(U u)
    noexcept : v_(static_cast<std::uint64_t>(u)) {}
    /// A double.
    Value(double d) noexcept : v_(d) {}
    /// A string.
    Value(const char* s) : v_(std::string(s)) {}
    /// A string.
    Value(std::string s) noexcept : v_(std::move(s)) {}
    /// A string.
    Value(std::string_view s) : v_(std::string(s)) {}
    /// An array.
    Value(Array a) noexcept : v_(std::move(a)) {}
    /// An object.
    Value(Object o) noexcept : v_(std::move(o)) {}

    /// An array of `items`.
    static Value array(std::initializer_list<Value> items = {}) { return Value(Array(items)); }
    /// An object of `members` (later duplicates replace earlier ones).
    static Value object(std::initializer_list<Member> members = {});

    /// The kind.
    Type type() const noexcept { return static_cast<Type>(v_.index()); }
    /// True for null.
    bool is_null() const noexcept { return type() == Type::null; }
    /// True for true or false.
    bool is_bool() const noexcept { return type() == Type::boolean; }
    /// True for any number (int64, uint64 or double).
    bool is_number() const noexcept {
        return type() == Type::int64 || type() == Type::uint64 || type() == Type::float64;
    }
    /// True for a string.
    bool is_string() const noexcept { return type() == Type::string; }
    /// True for an array.
    bool is_array() const noexcept { return type() == Type::array; }
    /// True for an object.
    bool is_object() const noexcept { return type() == Type::object; }

    /// The boolean; throws std::logic_error for another kind.
    bool as_bool() const;
    /// The number as int64; throws std::logic_error unless it is an integer in range.
    std::int64_t as_int64() const;
    /// The number as uint64; throws std::logic_error unless it is an integer in range.
    std::uint64_t as_uint64() const;
    /// Any number as a double; throws std::logic_error for another kind.
    double as_double() const;
    /// The string; throws std::logic_error for another kind.
    const std::string& as_string() const;
    /// The elements; throws std::logic_error for another kind.
    const Array& as_array() const;
    /// The elements; throws std::logic_error for another kind.
    Array& as_array();
    /// The members; throws std::logic_error for another kind.
    const Object& as_object() const;
    /// The members; throws std::logic_error for another kind.
    Object& as_object();

    /// The member `key` of an object, nullptr when absent or not an object.
    const Value* find(std::string_view key) const noexcept;
    /// The member `key` of an object, nullptr when absent or not an object.
    Value* find(std::string_view key) noexcept;
    /// The member `key`, or a null Value when absent (so lookups chain: v["a"]["b"]).
    const Value& operator[](std::string_view key) const noexcept;
    /// The member `key`, added as null when absent; a null Value becomes an empty object
    /// first. Throws std::logic_error for another kind.
    Value& operator[](std::string_view key);
    /// Element `i`, or a null Value when out of range or not an array.
    template <std::integral I>
    const Value& operator[](I i) const noexcept {
        return element(static_cast<std::size_t>(i));
    }
    /// Element `i`; throws std::out_of_range past the end, std::logic_error if not an array.
    template <std::integral I>
    Value& operator[](I i) {
        return at(static_cast<std::size_t>(i));
    }
    /// Element `i`, or a null Value when out of range or not an array.
    const Value& element(std::size_t i) const noexcept;
    /// Element `i`; throws std::out_of_range past the end, std::logic_error if not an array.
    Value& at(std::size_t i);
    /// Sets member `key` to `v` (replacing an existing one); returns *this for chaining.
    Value& set(std::string_view key, Value v);
    /// Appends to an array (a null Value becomes an empty array first); returns *this.
    Value& push_back(Value v);
    /// Elements of an array or members of an object; 0 for anything else.
    std::size_t size() const noexcept;

    /// Same kind and contents; integers compare by value across int64 and uint64.
    friend bool operator==(const Value& a, const Value& b) noexcept;

  private:
    std::variant<std::nullptr_t, bool, std::int64_t, std::uint64_t, double, std::string, Array,
                 Object>
        v_;
};

/// Reads any JSON value into `out` (what the codec does for Value).
bool read_dynamic(Reader& r, Value& out);
/// Writes `v` (what the codec does for Value).
void write_dynamic(Writer& w, const Value& v);

}  // namespace vela::json
