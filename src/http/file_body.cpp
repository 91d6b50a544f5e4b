#include "vela/http/file_body.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "vela/http/conditional.hpp"
#include "vela/http/range.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {

OpenFile::~OpenFile() { close_fd(); }

void OpenFile::close_fd() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

namespace {

// A boundary that cannot be guessed from outside and differs per response (RFC 2046 5.1.1:
// it must not occur in the parts; 64 random-looking bits make that practically certain).
std::string make_boundary() {
    static std::atomic<std::uint64_t> counter{0x9e3779b97f4a7c15ull};
    std::uint64_t x = counter.fetch_add(0x9e3779b97f4a7c15ull, std::memory_order_relaxed);
    x ^= reinterpret_cast<std::uintptr_t>(&x);  // differs per thread stack and run (ASLR)
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(x));
    return std::string("vela-") + text;
}

}  // namespace

bool answer_preconditions(const Request& req, Response& res, std::string_view etag,
                          std::optional<std::int64_t> last_modified) {
    switch (evaluate_preconditions(req, etag, last_modified)) {
        case Precondition::proceed:
            return false;
        case Precondition::not_modified:
            res.set_status(Status::NotModified);
            res.clear_file_body();
            res.mutable_body().clear();
            return true;
        case Precondition::failed:
            break;
    }
    res.set_status(Status::PreconditionFailed);
    res.clear_file_body();
    for (std::string_view name :
         {"Content-Type", "Accept-Ranges", "Content-Encoding", "Content-Disposition"})
        res.remove_header(name);  // they described the file; the text below is plain
    res.set_body("Precondition Failed");
    res.set_content_type(mime::text);
    return true;
}

void apply_file_semantics(const Request& req, Response& res, std::size_t max_ranges) {
    FileBody* fb = res.file_body();
    if (!fb || res.status() != Status::OK) return;  // another status: sent as the handler said
    if (fb->conditional && answer_preconditions(req, res, fb->etag(), fb->last_modified())) return;
    if (!fb->ranges || req.method() != Method::GET || fb->parts.size() != 1 ||
        !fb->parts[0].head.empty() || !fb->tail.empty())
        return;
    const std::string_view range = req.header("Range");
    if (range.empty()) return;
    if (const std::string_view ir = req.header("If-Range");
        !ir.empty() && !if_range_matches(ir, fb->etag(), fb->last_modified()))
        return;  // the representation changed: the whole of it, with 200
    const std::uint64_t base = fb->parts[0].offset;
    const std::uint64_t size = fb->parts[0].length;
    std::vector<ByteRange> ranges;
    switch (parse_range(range, size, ranges, RangeLimits{max_ranges})) {
        case RangeResult::none:
            return;
        case RangeResult::unsatisfiable:
            res.set_status(Status::RangeNotSatisfiable);
            res.clear_file_body();
            res.remove_header("Content-Type");
            res.remove_header("Content-Encoding");  // the text below is not encoded
            res.remove_header("Content-Disposition");
            res.set_header("Content-Range", content_range_unsatisfied(size));
            res.set_body("Range Not Satisfiable");
            res.set_content_type(mime::text);
            return;
        case RangeResult::partial:
            break;
    }
    res.set_status(Status::PartialContent);
    if (ranges.size() == 1) {
        fb->parts[0].offset = base + ranges[0].first;
        fb->parts[0].length = ranges[0].length();
        res.set_header("Content-Range", content_range(ranges[0], size));
        return;
    }
    // multipart/byteranges (RFC 9110 14.6): each part carries the type and its range.
    const std::string type(res.content_type());
    const std::string boundary = make_boundary();
    std::vector<FileBody::Part> parts;
    parts.reserve(ranges.size());
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        FileBody::Part p;
        p.head.append(i ? "\r\n--" : "--").append(boundary).append("\r\n");
        if (!type.empty()) p.head.append("Content-Type: ").append(type).append("\r\n");
        p.head.append("Content-Range: ").append(content_range(ranges[i], size)).append("\r\n\r\n");
        p.offset = base + ranges[i].first;
        p.length = ranges[i].length();
        parts.push_back(std::move(p));
    }
    fb->parts = std::move(parts);
    fb->tail = "\r\n--" + boundary + "--\r\n";
    res.set_content_type("multipart/byteranges; boundary=" + boundary);
}

}  // namespace vela
