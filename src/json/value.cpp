// json::Value: accessors, builders, and reading/writing through Reader and Writer.

#include "vela/json/value.hpp"

#include <stdexcept>
#include <unordered_map>

namespace vela::json {

namespace {

[[noreturn]] void wrong_kind(const char* wanted) {
    throw std::logic_error(std::string("json::Value is not ") + wanted);
}

const Value& null_value() noexcept {
    static const Value v;
    return v;
}

// Keeps the first position of each key with the last value given for it. Linear for small
// objects, hashed for big ones, so a hostile document cannot make this quadratic.
void drop_repeated_keys(Value::Object& members) {
    const std::size_t n = members.size();
    if (n <= 16) {  // the common case: check without allocating
        bool repeated = false;
        for (std::size_t i = 1; i < n && !repeated; ++i)
            for (std::size_t j = 0; j < i && !repeated; ++j)
                repeated = members[j].first == members[i].first;
        if (!repeated) return;
    }
    std::vector<bool> drop(n, false);
    bool any = false;
    std::unordered_map<std::string_view, std::size_t> first;
    first.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        auto [it, fresh] = first.try_emplace(members[i].first, i);
        if (!fresh) {
            members[it->second].second = std::move(members[i].second);
            drop[i] = any = true;
        }
    }
    if (!any) return;
    std::size_t out = 0;
    for (std::size_t i = 0; i < n; ++i)
        if (!drop[i]) {
            if (out != i) members[out] = std::move(members[i]);
            ++out;
        }
    members.resize(out);
}

}  // namespace

Value Value::object(std::initializer_list<Member> members) {
    Value v{Object{}};
    for (const Member& m : members) v.set(m.first, m.second);
    return v;
}

bool Value::as_bool() const {
    if (const bool* b = std::get_if<bool>(&v_)) return *b;
    wrong_kind("a boolean");
}

std::int64_t Value::as_int64() const {
    if (const auto* i = std::get_if<std::int64_t>(&v_)) return *i;
    if (const auto* u = std::get_if<std::uint64_t>(&v_); u && *u <= INT64_MAX)
        return static_cast<std::int64_t>(*u);
    wrong_kind("an integer in the int64 range");
}

std::uint64_t Value::as_uint64() const {
    if (const auto* u = std::get_if<std::uint64_t>(&v_)) return *u;
    if (const auto* i = std::get_if<std::int64_t>(&v_); i && *i >= 0)
        return static_cast<std::uint64_t>(*i);
    wrong_kind("an integer in the uint64 range");
}

double Value::as_double() const {
    switch (type()) {
        case Type::int64:
            return static_cast<double>(std::get<std::int64_t>(v_));
        case Type::uint64:
            return static_cast<double>(std::get<std::uint64_t>(v_));
        case Type::float64:
            return std::get<double>(v_);
        default:
            wrong_kind("a number");
    }
}

const std::string& Value::as_string() const {
    if (const auto* s = std::get_if<std::string>(&v_)) return *s;
    wrong_kind("a string");
}

const Value::Array& Value::as_array() const {
    if (const auto* a = std::get_if<Array>(&v_)) return *a;
    wrong_kind("an array");
}

Value::Array& Value::as_array() {
    if (auto* a = std::get_if<Array>(&v_)) return *a;
    wrong_kind("an array");
}

const Value::Object& Value::as_object() const {
    if (const auto* o = std::get_if<Object>(&v_)) return *o;
    wrong_kind("an object");
}

Value::Object& Value::as_object() {
    if (auto* o = std::get_if<Object>(&v_)) return *o;
    wrong_kind("an object");
}

const Value* Value::find(std::string_view key) const noexcept {
    if (const auto* o = std::get_if<Object>(&v_))
        for (const Member& m : *o)
            if (m.first == key) return &m.second;
    return nullptr;
}

Value* Value::find(std::string_view key) noexcept {
    return const_cast<Value*>(static_cast<const Value&>(*this).find(key));
}

const Value& Value::operator[](std::string_view key) const noexcept {
    const Value* v = find(key);
    return v ? *v : null_value();
}

Value& Value::operator[](std::string_view key) {
    if (is_null()) v_ = Object{};
    if (Value* v = find(key)) return *v;
    Object& o = as_object();
    o.emplace_back(std::string(key), Value{});
    return o.back().second;
}

const Value& Value::element(std::size_t i) const noexcept {
    if (const auto* a = std::get_if<Array>(&v_); a && i < a->size()) return (*a)[i];
    return null_value();
}

Value& Value::at(std::size_t i) { return as_array().at(i); }

Value& Value::set(std::string_view key, Value v) {
    (*this)[key] = std::move(v);
    return *this;
}

Value& Value::push_back(Value v) {
    if (is_null()) v_ = Array{};
    as_array().push_back(std::move(v));
    return *this;
}

std::size_t Value::size() const noexcept {
    if (const auto* a = std::get_if<Array>(&v_)) return a->size();
    if (const auto* o = std::get_if<Object>(&v_)) return o->size();
    return 0;
}

bool operator==(const Value& a, const Value& b) noexcept {
    const Type ta = a.type(), tb = b.type();
    const bool ia = ta == Type::int64 || ta == Type::uint64;
    const bool ib = tb == Type::int64 || tb == Type::uint64;
    if (ia && ib) {
        if (ta == tb) return a.v_ == b.v_;
        const Value& s = ta == Type::int64 ? a : b;  // the signed one
        const Value& u = ta == Type::int64 ? b : a;
        const std::int64_t i = std::get<std::int64_t>(s.v_);
        return i >= 0 && static_cast<std::uint64_t>(i) == std::get<std::uint64_t>(u.v_);
    }
    return a.v_ == b.v_;
}

// Recursion here is bounded by the Reader's depth limit.
bool read_dynamic(Reader& r, Value& out) {
    Kind k;
    if (!r.peek(k)) return false;
    switch (k) {
        case Kind::null:
            if (!r.read_null()) return r.fail("malformed literal");
            out = Value{};
            return true;
        case Kind::boolean: {
            bool b;
            if (!r.read_bool(b)) return false;
            out = Value(b);
            return true;
        }
        case Kind::number: {
            Number n;
            if (!r.read_number(n)) return false;
            if (n.type == Number::Type::int64)
                out = Value(n.i);
            else if (n.type == Number::Type::uint64)
                out = Value(n.u);
            else
                out = Value(n.d);
            return true;
        }
        case Kind::string: {
            std::string_view s;
            if (!r.read_string(s)) return false;
            out = Value(s);
            return true;
        }
        case Kind::array: {
            if (!r.begin_array()) return false;
            Value::Array items;
            while (r.next_element())
                if (!read_dynamic(r, items.emplace_back())) return false;
            if (!r.ok()) return false;
            out = Value(std::move(items));
            return true;
        }
        case Kind::object: {
            if (!r.begin_object()) return false;
            Value::Object members;
            std::string_view key;
            while (r.next_field(key)) {
                Value::Member& m = members.emplace_back(std::string(key), Value{});
                if (!read_dynamic(r, m.second)) return false;
            }
            if (!r.ok()) return false;
            drop_repeated_keys(members);
            out = Value(std::move(members));
            return true;
        }
    }
    return r.fail("malformed value");
}

void write_dynamic(Writer& w, const Value& v) {
    switch (v.type()) {
        case Type::null:
            return w.null();
        case Type::boolean:
            return w.boolean(v.as_bool());
        case Type::int64:
            return w.integer(v.as_int64());
        case Type::uint64:
            return w.integer(v.as_uint64());
        case Type::float64:
            return w.number(v.as_double());
        case Type::string:
            return w.string(v.as_string());
        case Type::array: {
            if (!w.enter()) return;
            w.raw('[');
            bool first = true;
            for (const Value& e : v.as_array()) {
                if (!first) w.raw(',');
                first = false;
                write_dynamic(w, e);
            }
            w.raw(']');
            return w.leave();
        }
        case Type::object: {
            if (!w.enter()) return;
            w.raw('{');
            bool first = true;
            for (const auto& [k, e] : v.as_object()) {
                if (!first) w.raw(',');
                first = false;
                w.string(k);
                w.raw(':');
                write_dynamic(w, e);
            }
            w.raw('}');
            return w.leave();
        }
    }
}

}  // namespace vela::json
