#include "vela/http/response.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "vela/base/ascii.hpp"

namespace vela {

namespace {
bool has_forbidden(std::string_view s) noexcept {
    for (char c : s)
        if (c == '\r' || c == '\n' || c == '\0') return true;
    return false;
}
}  // namespace

// Appends "name: value\r\n" and records the two lengths (for_each_header()).
[[gnu::always_inline]] inline void Response::append_field(std::string_view name,
                                                          std::string_view value) {
    if (field_count_ == 0xffff) throw std::invalid_argument("too many response header fields");
    const auto e = static_cast<std::uint32_t>(name.size() << 16 | value.size());
    if (field_count_ < kInlineFields) fields_[field_count_] = e;
    ++field_count_;
    append_header_bytes(name, ": ", value);
    append_header_bytes("\r\n", {}, {});
}

Response::Response(Response&& o) noexcept
    : status_(o.status_),
      close_(o.close_),
      custom_content_type_(o.custom_content_type_),
      inline_size_(o.inline_size_),
      body_(std::move(o.body_)),
      content_type_(o.content_type_) {
    if (!o.spilled_.empty()) spilled_ = std::move(o.spilled_);
    if (o.extra_) [[unlikely]]
        extra_ = std::move(o.extra_);
    if (inline_size_) std::memcpy(inline_, o.inline_, inline_size_);
    field_count_ = o.field_count_;
    if (field_count_) std::memcpy(fields_, o.fields_, sizeof fields_);  // (fixed size: a few moves)
}

Response& Response::operator=(Response&& o) noexcept {
    if (this != &o) {
        status_ = o.status_;
        close_ = o.close_;
        custom_content_type_ = o.custom_content_type_;
        inline_size_ = o.inline_size_;
        body_ = std::move(o.body_);
        content_type_ = o.content_type_;
        if (!o.spilled_.empty() || !spilled_.empty()) spilled_ = std::move(o.spilled_);
        if (o.extra_ || extra_) [[unlikely]]
            extra_ = std::move(o.extra_);
        if (inline_size_) std::memcpy(inline_, o.inline_, inline_size_);
        field_count_ = o.field_count_;
        if (field_count_)
            std::memcpy(fields_, o.fields_, sizeof fields_);  // (fixed size: a few moves)
    }
    return *this;
}

std::size_t Response::next_field(std::string_view block, std::size_t pos, std::string_view& name,
                                 std::string_view& value) noexcept {
    if (pos >= block.size()) return 0;
    const std::size_t eol = block.find("\r\n", pos);
    const std::string_view line = block.substr(pos, eol - pos);
    const std::size_t colon = line.find(": ");
    name = line.substr(0, colon);
    value = line.substr(colon + 2);
    return eol + 2;
}

void Response::copy_from(const Response& o) {
    status_ = o.status_;
    close_ = o.close_;
    custom_content_type_ = o.custom_content_type_;
    inline_size_ = o.inline_size_;
    body_ = o.body_;
    content_type_ = o.content_type_;
    spilled_ = o.spilled_;
    extra_ = o.extra_;
    if (inline_size_) std::memcpy(inline_, o.inline_, inline_size_);
    field_count_ = o.field_count_;
    std::memcpy(fields_, o.fields_, sizeof fields_);  // (fixed size: a few moves)
}

Response::Response(const Response& o) { copy_from(o); }

Response& Response::operator=(const Response& o) {
    if (this != &o) copy_from(o);
    return *this;
}

Response Response::with_body(Status s, std::string body, std::string_view content_type) {
    Response r(s);
    r.body_ = std::move(body);
    if (content_type == mime::text || content_type == mime::json || content_type == mime::html ||
        content_type == mime::problem_json || content_type == mime::octet_stream) {
        r.content_type_ = content_type;
    } else {
        r.set_content_type(content_type);
    }
    return r;
}

Response::Extra& Response::mutable_extra() {
    if (!extra_) {
        extra_ = std::make_shared<Extra>();
    } else if (extra_.use_count() > 1) {
        extra_ = std::make_shared<Extra>(*extra_);  // a copy shares it: change our own
    }
    return *extra_;
}

Response& Response::set_file_body(FileBody body) {
    mutable_extra().file = std::move(body);
    return *this;
}

// Rebuilds the header block without the fields `drop` picks (rare: remove_header, a second
// custom Content-Type), walking the recorded lengths.
void Response::drop_fields(bool (*drop)(std::string_view name, std::string_view arg),
                           std::string_view arg, std::size_t& dropped) {
    if (field_count_ == 0) return;
    std::vector<std::pair<std::string, std::string>> keep;
    keep.reserve(field_count_);
    for_each_header([&](std::string_view n, std::string_view v) {
        if (drop(n, arg))
            ++dropped;
        else
            keep.emplace_back(n, v);
    });
    inline_size_ = 0;
    spilled_.clear();
    field_count_ = 0;
    for (const auto& [n, v] : keep) append_field(n, v);
}

std::size_t Response::remove_header(std::string_view name) {
    std::size_t removed = 0;
    if (!custom_content_type_ && !content_type_.empty() && ascii::iequals(name, "Content-Type")) {
        content_type_ = {};  // a built-in type is not in the header block
        return 1;
    }
    drop_fields(
        [](std::string_view n, std::string_view wanted) { return ascii::iequals(n, wanted); }, name,
        removed);
    if (removed && ascii::iequals(name, "Content-Type")) custom_content_type_ = false;
    return removed;
}

std::string_view Response::content_type() const noexcept {
    if (custom_content_type_) return header("Content-Type");
    return content_type_;
}

Response& Response::set_content_type(std::string_view value) {
    if (has_forbidden(value) || value.size() > kMaxFieldPart)
        throw std::invalid_argument("invalid Content-Type value");
    content_type_ = {};
    if (custom_content_type_) {
        std::size_t dropped = 0;  // rare: the block without the old Content-Type field
        drop_fields(
            [](std::string_view n, std::string_view) { return ascii::iequals(n, "Content-Type"); },
            {}, dropped);
    }
    custom_content_type_ = true;
    append_field("Content-Type", value);
    return *this;
}

Response& Response::add_header(std::string_view name, std::string_view value) {
    if (name.empty() || has_forbidden(name) || has_forbidden(value) ||
        name.find(':') != std::string_view::npos)
        throw std::invalid_argument("invalid response header");
    if (name.size() > kMaxFieldPart || value.size() > kMaxFieldPart)
        throw std::invalid_argument("response header name or value over 64 KiB");
    switch (name.size()) {  // the names the server writes itself, by length first
        case 4:
        case 10:
        case 14:
        case 17:
            if (ascii::iequals(name, "Content-Length") ||
                ascii::iequals(name, "Transfer-Encoding") || ascii::iequals(name, "Date") ||
                ascii::iequals(name, "Connection"))
                throw std::invalid_argument("header is managed by the server");
            break;
        case 12:
            if (ascii::iequals(name, "Content-Type")) return set_content_type(value);
            break;
        default:
            break;
    }
    append_field(name, value);
    return *this;
}

void Response::append_header_bytes(std::string_view a, std::string_view b, std::string_view c) {
    std::size_t n = a.size() + b.size() + c.size();
    if (spilled_.empty() && inline_size_ + n <= kInlineHeaderBytes) {
        char* p = inline_ + inline_size_;
        for (std::string_view part : {a, b, c}) {
            if (part.empty()) continue;  // an empty view may have a null data()
            std::memcpy(p, part.data(), part.size());
            p += part.size();
        }
        inline_size_ = static_cast<std::uint16_t>(inline_size_ + n);
        return;
    }
    if (spilled_.empty()) spilled_.assign(inline_, inline_size_);
    spilled_.append(a).append(b).append(c);
}

std::string_view Response::header_block() const noexcept {
    if (!spilled_.empty()) return spilled_;
    return {inline_, inline_size_};
}

std::string_view Response::header(std::string_view name) const noexcept {
    std::string_view found;
    bool seen = false;
    for_each_header([&](std::string_view n, std::string_view v) {
        if (!seen && n.size() == name.size() && ascii::iequals(n, name)) {
            found = ascii::trim_ows(v);
            seen = true;
        }
    });
    return found;
}

namespace {
// One spare body per thread: a steady stream of responses built with body_string() then
// reuses a single allocation.
thread_local std::string spare_body;
}  // namespace

std::string body_string(std::size_t capacity) {
    if (spare_body.capacity() >= capacity) {
        std::string s = std::move(spare_body);  // leaves the spare empty (small-string state)
        s.clear();
        return s;
    }
    std::string s;
    s.reserve(capacity);
    return s;
}

void detail::keep_spare_body(std::string&& body) noexcept {
    const std::size_t cap = body.capacity();
    if (cap > spare_body.capacity() && cap <= kMaxRecycledBody) spare_body = std::move(body);
}

}  // namespace vela
