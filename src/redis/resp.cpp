#include "resp.hpp"

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <charconv>
#include <new>

#include "vela/redis/client.hpp"

namespace vela::redis {

namespace {

Reply convert(const redisReply& r) {
    Reply out;
    switch (r.type) {
        case REDIS_REPLY_STRING:
            out.type = Reply::Type::string;
            out.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_STATUS:
            out.type = Reply::Type::status;
            out.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_ERROR:
            out.type = Reply::Type::error;
            out.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_INTEGER:
            out.type = Reply::Type::integer;
            out.integer = r.integer;
            break;
        case REDIS_REPLY_ARRAY:
            out.type = Reply::Type::array;
            out.elements.reserve(r.elements);
            for (std::size_t i = 0; i < r.elements; ++i)
                out.elements.push_back(convert(*r.element[i]));
            break;
        default:
            break;  // REDIS_REPLY_NIL
    }
    return out;
}

void append_bulk(std::string& out, std::string_view s) {
    char digits[24];
    auto res = std::to_chars(digits, digits + sizeof digits, s.size());
    out += '$';
    out.append(digits, res.ptr);
    out += "\r\n";
    out += s;
    out += "\r\n";
}

}  // namespace

namespace detail {

ReplyReader::ReplyReader() : r_(redisReaderCreate()) {
    if (!r_) throw std::bad_alloc();
}

ReplyReader::~ReplyReader() { redisReaderFree(r_); }

void ReplyReader::feed(std::string_view bytes) {
    if (bytes.empty()) return;
    if (redisReaderFeed(r_, bytes.data(), bytes.size()) != REDIS_OK) throw std::bad_alloc();
}

std::optional<Reply> ReplyReader::next() {
    void* raw = nullptr;
    if (redisReaderGetReply(r_, &raw) != REDIS_OK)
        throw ProtocolError(std::string("redis: malformed reply: ") + r_->errstr);
    if (!raw) return std::nullopt;
    auto* reply = static_cast<redisReply*>(raw);
    Reply out = convert(*reply);
    freeReplyObject(reply);
    return out;
}

}  // namespace detail

// ---- Reply ----------------------------------------------------------------------------------

std::string_view type_name(Reply::Type t) noexcept {
    switch (t) {
        case Reply::Type::nil:
            return "nil";
        case Reply::Type::integer:
            return "integer";
        case Reply::Type::status:
            return "status";
        case Reply::Type::string:
            return "string";
        case Reply::Type::array:
            return "array";
        case Reply::Type::error:
            return "error";
    }
    return "?";
}

namespace {
[[noreturn]] void wrong_type(const Reply& r, std::string_view wanted) {
    std::string m = "redis: expected a reply of type ";
    m += wanted;
    m += ", got ";
    m += r.to_debug_string();
    throw Error(m);
}
}  // namespace

const std::string& Reply::as_string() const {
    if (type != Type::string && type != Type::status) wrong_type(*this, "string");
    return str;
}

std::int64_t Reply::as_integer() const {
    if (type != Type::integer) wrong_type(*this, "integer");
    return integer;
}

const std::vector<Reply>& Reply::as_array() const {
    if (type != Type::array) wrong_type(*this, "array");
    return elements;
}

std::string Reply::to_debug_string() const {
    switch (type) {
        case Type::nil:
            return "(nil)";
        case Type::integer:
            return "(integer) " + std::to_string(integer);
        case Type::status:
            return str;
        case Type::string: {
            std::string s = "\"";
            s.append(str, 0, 64);
            if (str.size() > 64) s += "...";
            s += '"';
            return s;
        }
        case Type::error: {
            std::string s = "(error) ";
            s += str;
            return s;
        }
        case Type::array: {
            std::string s = "[";
            for (std::size_t i = 0; i < elements.size(); ++i) {
                if (i) s += ", ";
                s += elements[i].to_debug_string();
            }
            s += ']';
            return s;
        }
    }
    return {};
}

ServerError::ServerError(const std::string& message)
    : Error(message), code_(message.substr(0, message.find(' '))) {}

// ---- Arg and Command ------------------------------------------------------------------------

Arg::Arg(double v) noexcept : inline_(true) {
    auto r = std::to_chars(buf_, buf_ + sizeof buf_, v);
    n_ = static_cast<std::size_t>(r.ptr - buf_);
}

Arg::Arg(const Arg& o) noexcept : p_(o.p_), n_(o.n_), inline_(o.inline_) {
    if (inline_) std::copy(o.buf_, o.buf_ + n_, buf_);
}

Arg& Arg::operator=(const Arg& o) noexcept {
    p_ = o.p_;
    n_ = o.n_;
    inline_ = o.inline_;
    if (inline_) std::copy(o.buf_, o.buf_ + n_, buf_);
    return *this;
}

void Arg::set_signed(long long v) noexcept {
    inline_ = true;
    n_ = static_cast<std::size_t>(std::to_chars(buf_, buf_ + sizeof buf_, v).ptr - buf_);
}

void Arg::set_unsigned(unsigned long long v) noexcept {
    inline_ = true;
    n_ = static_cast<std::size_t>(std::to_chars(buf_, buf_ + sizeof buf_, v).ptr - buf_);
}

Command::Command(std::initializer_list<Arg> args)
    : Command(std::span<const Arg>(args.begin(), args.size())) {}

Command::Command(std::span<const Arg> args) {
    for (const Arg& a : args) arg(a);
}

Command::Command(const std::vector<std::string>& args) {
    for (const std::string& a : args) arg(a);
}

Command& Command::arg(const Arg& a) {
    append_bulk(body_, a.view());
    ++count_;
    return *this;
}

void Command::encode_to(std::string& out) const {
    char digits[24];
    auto res = std::to_chars(digits, digits + sizeof digits, count_);
    out += '*';
    out.append(digits, res.ptr);
    out += "\r\n";
    out += body_;
}

std::string Command::encoded() const {
    std::string s;
    encode_to(s);
    return s;
}

}  // namespace vela::redis
