// The Reader over simdjson On-Demand, and the per-thread parse state behind it.
//
// simdjson needs SIMDJSON_PADDING readable bytes after the document; request bodies are views
// into a connection's buffer with no such guarantee, so each document is copied into a
// per-thread padded buffer (one memcpy, far cheaper than the parse) that is reused, as is the
// parser and its frame stack: a steady state of similar documents allocates nothing here.

#include "vela/json/reader.hpp"

#include <simdjson.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace vela::json {

namespace od = simdjson::ondemand;

namespace detail {

struct Frame {
    bool is_object = false;
    bool started = false;
    std::uint32_t index = 0;
    std::string_view key;
    od::object_iterator fields;
    od::array_iterator elements;
};

struct ReaderState {
    od::parser parser;
    od::document doc;
    od::value cur;
    bool at_root = true;
    bool failed = false;
    bool busy = false;
    std::uint32_t max_depth = 128;
    const ParseOptions* opts = nullptr;
    Error* error = nullptr;
    std::vector<Frame> frames;
    std::unique_ptr<char[]> buf;
    std::size_t cap = 0;
    const char* text = nullptr;
    std::size_t text_len = 0;
};

namespace {

// Buffers past this are released after the document instead of being kept for the next one.
constexpr std::size_t kKeepBytes = std::size_t{8} << 20;

template <class Fn>
decltype(auto) on_current(ReaderState& s, Fn&& fn) {
    if (s.at_root) return fn(s.doc);
    return fn(s.cur);
}

bool is_identifier(std::string_view k) {
    if (k.empty() || (k[0] >= '0' && k[0] <= '9')) return false;
    for (char c : k) {
        const bool alnum =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && c != '_') return false;
    }
    return true;
}

void append_path_key(std::string& path, std::string& pointer, std::string_view key) {
    if (is_identifier(key)) {
        path += '.';
        path += key;
    } else {
        path += "['";
        for (char c : key) {
            if (c == '\'' || c == '\\') path += '\\';
            path += c;
        }
        path += "']";
    }
    pointer += '/';
    for (char c : key) {
        if (c == '~')
            pointer += "~0";
        else if (c == '/')
            pointer += "~1";
        else
            pointer += c;
    }
}

void render_path(const ReaderState& s, std::string& path, std::string& pointer) {
    path.assign(1, '$');  // not = "$": GCC 12 -Wrestrict false positive at -O3
    pointer.clear();
    for (const Frame& f : s.frames) {
        if (!f.started) continue;
        if (f.is_object) {
            append_path_key(path, pointer, f.key);
        } else {
            std::string i = std::to_string(f.index);
            path.append("[").append(i).append("]");
            pointer.append("/").append(i);
        }
    }
}

// Message for a simdjson error met while reading a value of the `expected` kind.
std::string describe(simdjson::error_code e, std::string_view expected) {
    using simdjson::error_code;
    switch (e) {
        case error_code::INCORRECT_TYPE:
            return std::string(expected);
        case error_code::NUMBER_ERROR:
            return "malformed number";
        case error_code::NUMBER_OUT_OF_RANGE:
            return "number out of range";
        case error_code::STRING_ERROR:
            return "invalid string escape";
        case error_code::UTF8_ERROR:
            return "invalid UTF-8";
        case error_code::UNCLOSED_STRING:
            return "unterminated string";
        case error_code::EMPTY:
            return "empty document";
        case error_code::T_ATOM_ERROR:
        case error_code::F_ATOM_ERROR:
        case error_code::N_ATOM_ERROR:
            return "malformed literal";
        case error_code::TRAILING_CONTENT:
            return "unexpected content after the value";
        case error_code::CAPACITY:
            return "document too large";
        case error_code::DEPTH_ERROR:
            return "nesting too deep";
        case error_code::INCOMPLETE_ARRAY_OR_OBJECT:
            return "unexpected end of input";
        case error_code::TAPE_ERROR:
            return "malformed JSON";
        default:
            return simdjson::error_message(e);
    }
}

bool fail_code(ReaderState& s, simdjson::error_code e, std::string_view expected) {
    Reader r(s);
    if (e == simdjson::TAPE_ERROR) {  // a structural error at the very end is a truncation
        const char* loc = nullptr;
        if (s.doc.current_location().get(loc) || loc + 1 >= s.text + s.text_len)
            return r.fail("unexpected end of input");
    }
    return r.fail(describe(e, expected));
}

// simdjson checks up front that a root object or array closes at the very end, so one
// error stands for both a truncated document and one with something after the value.
bool fail_container(ReaderState& s, simdjson::error_code e, std::string_view expected) {
    if (s.at_root && e == simdjson::INCOMPLETE_ARRAY_OR_OBJECT)
        return Reader(s).fail("unexpected end of input, or content after the value");
    return fail_code(s, e, expected);
}

// The first '"' or '\\' at or after p, eight bytes at a time. Reading past the key is safe:
// the document is followed by SIMDJSON_PADDING bytes.
const char* quote_or_backslash(const char* p) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ull;
    constexpr std::uint64_t high = 0x8080808080808080ull;
    if constexpr (std::endian::native == std::endian::little) {
        for (;; p += 8) {
            std::uint64_t x;
            std::memcpy(&x, p, 8);
            const std::uint64_t quote = x ^ (ones * '"');
            const std::uint64_t slash = x ^ (ones * '\\');
            const std::uint64_t m = (((quote - ones) & ~quote) | ((slash - ones) & ~slash)) & high;
            if (m) return p + (std::countr_zero(m) >> 3);
        }
    }
    while (*p != '"' && *p != '\\') ++p;
    return p;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// simdjson 3.0 accepts a few malformed root literals ("falsey"); the whole document must be
// exactly the literal.
bool root_is(const ReaderState& s, std::string_view literal) {
    std::string_view t(s.text, s.text_len);
    while (!t.empty() && is_space(t.front())) t.remove_prefix(1);
    while (!t.empty() && is_space(t.back())) t.remove_suffix(1);
    return t == literal;
}

// An integer literal (optional minus, digits) at the start of a token.
bool integer_token(std::string_view tok) {
    std::size_t i = !tok.empty() && tok[0] == '-';
    const std::size_t first = i;
    while (i < tok.size() && tok[i] >= '0' && tok[i] <= '9') ++i;
    return i > first &&
           (i == tok.size() || is_space(tok[i]) || tok[i] == ',' || tok[i] == '}' || tok[i] == ']');
}

std::string_view current_token(ReaderState& s) {
    if (s.at_root) {
        std::string_view t(s.text, s.text_len);
        while (!t.empty() && is_space(t.front())) t.remove_prefix(1);
        return t;
    }
    return s.cur.raw_json_token();
}

// Where the next token starts (after the value just consumed), or the end of the input.
const char* next_token(ReaderState& s) {
    const char* loc = nullptr;
    if (s.doc.current_location().get(loc)) return s.text + s.text_len;
    return loc;
}

// The slow path of next_field: a key with escapes.
[[gnu::noinline]] bool escaped_key(ReaderState& s, od::field& field, std::string_view& key) {
    if (auto e = field.unescaped_key().get(key)) return fail_code(s, e, "malformed key");
    s.frames.back().key = key;
    s.cur = std::move(field).value();
    return true;
}

// Steps into the current value as an object (or array): a new frame on the stack.
template <bool Object>
bool enter(ReaderState& s) {
    Reader r(s);
    const std::string_view expected = Object ? "expected object" : "expected array";
    if (s.failed) return false;
    if (s.frames.size() >= s.max_depth)
        return r.fail("nesting deeper than " + std::to_string(s.max_depth));
    using Container = std::conditional_t<Object, od::object, od::array>;
    Container c;
    simdjson::error_code e;
    if constexpr (Object)
        e = on_current(s, [](auto& v) { return v.get_object(); }).get(c);
    else
        e = on_current(s, [](auto& v) { return v.get_array(); }).get(c);
    if (e) return fail_container(s, e, expected);
    Frame& f = s.frames.emplace_back();
    f.is_object = Object;
    if constexpr (Object)
        e = c.begin().get(f.fields);
    else
        e = c.begin().get(f.elements);
    if (e) {
        s.frames.pop_back();
        return fail_code(s, e, expected);
    }
    s.at_root = false;
    return true;
}

}  // namespace

}  // namespace detail

using detail::fail_code;

const ParseOptions& Reader::options() const noexcept { return *s_->opts; }
bool Reader::ok() const noexcept { return !s_->failed; }
std::uint32_t Reader::index() const noexcept {
    return s_->frames.empty() ? 0 : s_->frames.back().index;
}

bool Reader::peek(Kind& kind) {
    if (s_->failed) return false;
    od::json_type t{};
    if (auto e = detail::on_current(*s_, [](auto& v) { return v.type(); }).get(t))
        return fail_code(*s_, e, "malformed value");
    switch (t) {
        case od::json_type::array:
            kind = Kind::array;
            break;
        case od::json_type::object:
            kind = Kind::object;
            break;
        case od::json_type::number:
            kind = Kind::number;
            break;
        case od::json_type::string:
            kind = Kind::string;
            break;
        case od::json_type::boolean:
            kind = Kind::boolean;
            break;
        case od::json_type::null:
            kind = Kind::null;
            break;
    }
    return true;
}

bool Reader::read_null() {
    if (s_->failed) return false;
    bool is_null = false;
    if (auto e = detail::on_current(*s_, [](auto& v) { return v.is_null(); }).get(is_null)) {
        fail_code(*s_, e, "malformed literal");
        return false;
    }
    if (is_null && s_->at_root && !detail::root_is(*s_, "null")) return fail("malformed literal");
    return is_null;
}

bool Reader::read_bool(bool& out) {
    if (s_->failed) return false;
    if (auto e = detail::on_current(*s_, [](auto& v) { return v.get_bool(); }).get(out))
        return fail_code(*s_, e, "expected boolean");
    if (s_->at_root && !detail::root_is(*s_, out ? "true" : "false"))
        return fail("malformed literal");
    return true;
}

bool Reader::read_int(std::int64_t& out, std::int64_t lo, std::int64_t hi) {
    if (s_->failed) return false;
    if (auto e = detail::on_current(*s_, [](auto& v) { return v.get_int64(); }).get(out)) {
        if ((e == simdjson::NUMBER_OUT_OF_RANGE || e == simdjson::INCORRECT_TYPE) &&
            detail::integer_token(detail::current_token(*s_)))
            return fail_range(lo, hi);
        return fail_code(*s_, e, "expected integer");
    }
    return (out >= lo && out <= hi) || fail_range(lo, hi);
}

bool Reader::read_uint(std::uint64_t& out, std::uint64_t hi) {
    if (s_->failed) return false;
    if (auto e = detail::on_current(*s_, [](auto& v) { return v.get_uint64(); }).get(out)) {
        if ((e == simdjson::NUMBER_OUT_OF_RANGE || e == simdjson::INCORRECT_TYPE) &&
            detail::integer_token(detail::current_token(*s_)))
            return fail_range(hi);
        return fail_code(*s_, e, "expected integer");
    }
    return out <= hi || fail_range(hi);
}

bool Reader::read_double(double& out) {
    if (s_->failed) return false;
    if (auto e = detail::on_current(*s_, [](auto& v) { return v.get_double(); }).get(out))
        return fail_code(*s_, e, "expected number");
    return true;
}

// simdjson 3.0's get_number() does not consume the value, so classify it and then use the
// getter for its kind, which does.
bool Reader::read_number(Number& out) {
    if (s_->failed) return false;
    od::number_type t{};
    if (auto e = detail::on_current(*s_, [](auto& v) { return v.get_number_type(); }).get(t))
        return fail_code(*s_, e, "expected number");
    simdjson::error_code e = simdjson::SUCCESS;
    if (t == od::number_type::signed_integer) {
        out.type = Number::Type::int64;
        e = detail::on_current(*s_, [](auto& v) { return v.get_int64(); }).get(out.i);
    } else if (t == od::number_type::unsigned_integer) {
        out.type = Number::Type::uint64;
        e = detail::on_current(*s_, [](auto& v) { return v.get_uint64(); }).get(out.u);
    }
    // An integer past 64 bits is read as a double, as the JSON spec suggests.
    if (t == od::number_type::floating_point_number ||
        (e && e != simdjson::NUMBER_ERROR && e != simdjson::TAPE_ERROR)) {
        out.type = Number::Type::float64;
        e = detail::on_current(*s_, [](auto& v) { return v.get_double(); }).get(out.d);
    }
    if (e) return fail_code(*s_, e, "expected number");
    return true;
}

bool Reader::read_string(std::string_view& out) {
    if (s_->failed) return false;
    if (auto e = detail::on_current(*s_, [](auto& v) { return v.get_string(); }).get(out))
        return fail_code(*s_, e, "expected string");
    return true;
}

bool Reader::read_raw(std::string_view& out) {
    if (s_->failed) return false;
    const char* begin;
    if (s_->at_root) {
        begin = s_->text;
        while (*begin == ' ' || *begin == '\t' || *begin == '\n' || *begin == '\r') ++begin;
    } else {
        begin = s_->cur.raw_json_token().data();
    }
    if (!skip()) return false;
    const char* end = detail::next_token(*s_);
    while (end > begin && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
        --end;
    out = std::string_view(begin, static_cast<std::size_t>(end - begin));
    return true;
}

// Iterative, so skipping is bounded by max_depth and never recursion.
bool Reader::skip() {
    const std::size_t base = s_->frames.size();
    for (;;) {
        Kind k;
        if (!peek(k)) return false;
        bool good = true;
        switch (k) {
            case Kind::object:
                good = begin_object();
                break;
            case Kind::array:
                good = begin_array();
                break;
            case Kind::null:
                good = read_null() || fail("malformed literal");
                break;
            case Kind::boolean: {
                bool b;
                good = read_bool(b);
                break;
            }
            case Kind::number: {
                Number n;
                good = read_number(n);
                break;
            }
            case Kind::string: {
                std::string_view sv;
                good = read_string(sv);
                break;
            }
        }
        if (!good) return false;
        for (;;) {  // on to the next value still to skip, leaving finished containers
            if (s_->frames.size() == base) return true;
            std::string_view key;
            if (s_->frames.back().is_object ? next_field(key) : next_element()) break;
            if (!ok()) return false;
        }
    }
}

bool Reader::begin_object() { return detail::enter<true>(*s_); }
bool Reader::begin_array() { return detail::enter<false>(*s_); }

bool Reader::next_field(std::string_view& key) {
    detail::ReaderState& s = *s_;
    if (s.failed) [[unlikely]]
        return false;
    detail::Frame& f = s.frames.back();
    if (f.started)
        ++f.fields;
    else
        f.started = true;
    if (!(f.fields != f.fields)) {  // simdjson: != means "still open"
        s.frames.pop_back();
        return false;
    }
    auto field = *f.fields;
    if (field.error()) [[unlikely]]
        return fail_code(s, field.error(), "malformed object");
    // Keys without escapes are used in place; the rare escaped one is unescaped.
    const char* p = reinterpret_cast<const char*>(field.value_unsafe().key().raw());
    const char* q = detail::quote_or_backslash(p);
    if (*q != '"') [[unlikely]]
        return detail::escaped_key(s, field.value_unsafe(), key);
    key = f.key = std::string_view(p, static_cast<std::size_t>(q - p));
    s.cur = std::move(field.value_unsafe()).value();
    return true;
}

bool Reader::next_element() {
    detail::ReaderState& s = *s_;
    if (s.failed) return false;
    detail::Frame& f = s.frames.back();
    if (f.started) {
        ++f.elements;
        ++f.index;
    } else {
        f.started = true;
    }
    if (!(f.elements != f.elements)) {
        s.frames.pop_back();
        return false;
    }
    auto element = *f.elements;
    if (element.error()) [[unlikely]]
        return fail_code(s, element.error(), "malformed array");
    s.cur = std::move(element.value_unsafe());
    return true;
}

bool Reader::fail(std::string_view message) {
    detail::ReaderState& s = *s_;
    if (s.failed) return false;
    s.failed = true;
    detail::render_path(s, s.error->path, s.error->pointer);
    s.error->message = message;
    return false;
}

bool Reader::fail_range(std::int64_t lo, std::int64_t hi) {
    return fail("expected integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

bool Reader::fail_range(std::uint64_t hi) {
    return fail("expected integer in [0, " + std::to_string(hi) + "]");
}

bool Reader::fail_missing(std::string_view name) {
    detail::ReaderState& s = *s_;
    if (s.failed) return false;
    s.failed = true;
    detail::render_path(s, s.error->path, s.error->pointer);
    detail::append_path_key(s.error->path, s.error->pointer, name);
    s.error->message = "missing required field";
    return false;
}

bool Reader::fail_unknown() { return fail("unknown field"); }

namespace detail {

Error read_document(std::string_view json, const ParseOptions& opts, bool (*fn)(Reader&, void*),
                    void* ctx) {
    thread_local ReaderState tls;
    std::unique_ptr<ReaderState> own;  // a read nested inside a custom reader gets its own
    ReaderState* s = &tls;
    if (tls.busy) {
        own = std::make_unique<ReaderState>();
        s = own.get();
    }
    // Released on every exit, exceptions from custom readers included.
    struct Release {
        ReaderState* s;
        ~Release() {
            s->frames.clear();
            s->error = nullptr;
            s->busy = false;
            if (s->parser.capacity() > kKeepBytes) s->parser = od::parser{};
            if (s->cap > kKeepBytes) {
                s->buf.reset();
                s->cap = 0;
            }
        }
    } release{s};
    Error err;
    s->busy = true;
    s->failed = false;
    s->at_root = true;
    s->opts = &opts;
    s->error = &err;
    s->max_depth = std::min(opts.max_depth, kMaxDepthLimit);
    s->frames.clear();

    const std::size_t need = json.size() + simdjson::SIMDJSON_PADDING;
    if (s->cap < need) {
        s->cap = std::max(need, std::max<std::size_t>(2 * s->cap, 4096));
        s->buf = std::make_unique_for_overwrite<char[]>(s->cap);
    }
    if (!json.empty()) std::memcpy(s->buf.get(), json.data(), json.size());
    std::memset(s->buf.get() + json.size(), 0, simdjson::SIMDJSON_PADDING);
    s->text = s->buf.get();
    s->text_len = json.size();

    Reader reader(*s);
    if (auto e = s->parser.iterate(s->buf.get(), json.size(), s->cap).get(s->doc)) {
        fail_code(*s, e, "JSON");
    } else if (!fn(reader, ctx)) {
        if (!s->failed) reader.fail("invalid value");
    } else {
        const char* loc = nullptr;
        if (!s->doc.current_location().get(loc)) reader.fail("unexpected content after the value");
    }
    return err;
}

}  // namespace detail

std::string Error::to_string() const {
    if (message.empty()) return {};
    if (path.empty()) return message;
    return path + ": " + message;
}

}  // namespace vela::json
