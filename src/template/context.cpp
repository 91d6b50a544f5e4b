// The non-template parts of context.hpp: number and text writers, json::Value's table.

#include "vela/template/context.hpp"

#include <charconv>

#include "vela/base/html.hpp"

namespace vela::tmpl::detail {

void write_text(std::string& out, std::string_view text, bool escape) {
    if (escape)
        append_html_escaped(out, text);
    else
        out.append(text);
}

namespace {

// The shortest decimal form std::to_chars gives (round-trips for floating point).
template <class N>
void append_number(std::string& out, N v) {
    char buf[40];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

}  // namespace

void write_int(std::string& out, std::int64_t v) { append_number(out, v); }
void write_uint(std::string& out, std::uint64_t v) { append_number(out, v); }
void write_double(std::string& out, double v) { append_number(out, v); }
void write_float(std::string& out, float v) { append_number(out, v); }

namespace {

using json::Type;
using json::Value;

Kind value_kind(const void* p) noexcept {
    switch (self<Value>(p).type()) {
        case Type::array:
            return Kind::list;
        case Type::object:
            return Kind::object;
        default:
            return Kind::scalar;
    }
}

bool value_truthy(const void* p) noexcept {
    const Value& v = self<Value>(p);
    switch (v.type()) {
        case Type::null:
            return false;
        case Type::boolean:
            return v.as_bool();
        case Type::int64:
            return v.as_int64() != 0;
        case Type::uint64:
            return v.as_uint64() != 0;
        case Type::float64: {
            const double d = v.as_double();
            return d != 0 && d == d;
        }
        case Type::string:
            return !v.as_string().empty();
        case Type::array:
            return v.size() != 0;
        case Type::object:
            return true;
    }
    return false;
}

void value_write(const void* p, std::string& out, bool escape) {
    const Value& v = self<Value>(p);
    switch (v.type()) {
        case Type::boolean:
            out += v.as_bool() ? "true" : "false";
            break;
        case Type::int64:
            write_int(out, v.as_int64());
            break;
        case Type::uint64:
            write_uint(out, v.as_uint64());
            break;
        case Type::float64:
            write_double(out, v.as_double());
            break;
        case Type::string:
            write_text(out, v.as_string(), escape);
            break;
        default:
            break;  // null, lists and objects write nothing
    }
}

bool value_find(const void* p, std::string_view key, ContextRef& out) {
    const Value* m = self<Value>(p).find(key);
    if (!m) return false;
    out = ContextRef(m, &json_value_vtable);
    return true;
}

std::size_t value_size(const void* p) noexcept {
    const Value& v = self<Value>(p);
    return v.is_array() ? v.size() : 0;
}

ContextRef value_at(const void* p, std::size_t i) {
    return ContextRef(&self<Value>(p).element(i), &json_value_vtable);
}

}  // namespace

const Vtable json_value_vtable{&value_kind, &value_truthy, &value_write,
                               &value_find, &value_size,   &value_at};

}  // namespace vela::tmpl::detail
