// Feeds arbitrary bytes to the HTTP/1.1 response-head parser (src/http/response_parser.cpp)
// and checks its promises: what it consumes lies within the input, a parsed head holds only
// valid fields and a status in range, the framing agrees with the method and status, and a
// prefix of the input never disagrees with the whole (a head that arrives in pieces parses as
// it does at once).
//
// Input: the first byte chooses the request method (bits 0-1: GET, HEAD, CONNECT, GET) and,
// with bit 2, small limits (256 head bytes, 4 fields); the rest is the response.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "vela/base/ascii.hpp"
#include "vela/http/char_class.hpp"
#include "vela/http/response_parser.hpp"

namespace {

using Result = vela::HeadParse::Result;

void check(bool ok) {
    if (!ok) __builtin_trap();
}

// Parses bytes[0..n) from a buffer of exactly that size (so ASan sees reads past the end).
vela::HeadParse parse(std::string_view bytes, std::size_t n, std::string_view method,
                      const vela::ResponseLimits& limits, vela::ResponseHead& head) {
    const std::vector<char> buf(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    return vela::parse_response_head(std::string_view(buf.data(), buf.size()), method, limits,
                                     head);
}

// What a parsed head promises.
void check_head(const vela::HeadParse& p, const vela::ResponseHead& head, std::string_view in,
                std::string_view method, const vela::ResponseLimits& limits) {
    check(p.consumed > 0 && p.consumed <= in.size() && p.consumed <= limits.max_head_bytes);
    check(p.error.empty());
    check(head.raw() == in.substr(0, p.consumed));
    check(head.raw().ends_with("\n\n") || head.raw().ends_with("\n\r\n"));
    const int status = head.status();
    check(status >= 100 && status <= 599);
    check(head.version_minor() == 0 || head.version_minor() == 1);
    for (char c : head.reason()) check(c != '\r' && c != '\n' && c != '\0');
    check(head.size() <= limits.max_fields);
    std::size_t n = 0;
    head.for_each([&](std::string_view name, std::string_view value) {
        check(name == head.name(n) && value == head.value(n));
        check(!name.empty());
        for (char c : name) check(vela::http::is_tchar(static_cast<unsigned char>(c)));
        check(vela::http::is_field_value(value.data(), value.size()));
        check(value.empty() || (value.front() != ' ' && value.front() != '\t' &&
                                value.back() != ' ' && value.back() != '\t'));
        // header() finds the first field of that name.
        std::size_t first = 0;
        while (!vela::ascii::iequals(head.name(first), name)) ++first;
        check(head.has_header(name) && head.header(name) == head.value(first));
        ++n;
    });
    check(n == head.size());

    const bool tunnel = method == "CONNECT" && status >= 200 && status < 300;
    const bool bodiless =
        tunnel || method == "HEAD" || status < 200 || status == 204 || status == 304;
    check(bodiless == (p.framing == vela::BodyFraming::none));
    check(p.framing == vela::BodyFraming::length || p.content_length == 0);
    check(p.content_length <= std::uint64_t{INT64_MAX});
    if (p.framing == vela::BodyFraming::until_close || tunnel || status == 101)
        check(!p.keep_alive);
    if (p.framing == vela::BodyFraming::chunked) {
        check(head.version_minor() == 1);
        check(head.has_header("Transfer-Encoding") && !head.has_header("Content-Length"));
    }
}

// Parses in[0..k) and checks that it agrees with `whole`, the outcome for all of `in`.
void check_prefix(std::string_view in, std::size_t k, const vela::HeadParse& whole,
                  std::string_view method, const vela::ResponseLimits& limits) {
    vela::ResponseHead head;
    const vela::HeadParse p = parse(in, k, method, limits, head);
    switch (whole.result) {
        case Result::done:
            if (k < whole.consumed) {
                check(p.result == Result::need_more);
            } else {
                check(p.result == Result::done && p.consumed == whole.consumed);
            }
            break;
        case Result::error:
            check(p.result == Result::need_more ||
                  (p.result == Result::error && p.error == whole.error));
            break;
        case Result::need_more:
            check(p.result == Result::need_more);
            break;
    }
    if (p.result != Result::done) check(p.consumed == 0 && head.size() == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    static constexpr std::string_view kMethods[] = {"GET", "HEAD", "CONNECT", "GET"};
    const std::string_view method = kMethods[data[0] & 3];
    vela::ResponseLimits limits;
    if (data[0] & 4) limits = vela::ResponseLimits{.max_head_bytes = 256, .max_fields = 4};
    const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);

    vela::ResponseHead head;
    const vela::HeadParse whole = parse(in, in.size(), method, limits, head);
    if (whole.result == Result::done) {
        check_head(whole, head, in, method, limits);
    } else {
        check(whole.consumed == 0 && head.size() == 0 && head.status() == 0);
        check(whole.result == Result::need_more || !whole.error.empty());
    }

    // One split point chosen from the bytes (FNV-1a), and the byte before the head's end.
    std::uint32_t h = 2166136261u;
    for (char c : in) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    check_prefix(in, h % (in.size() + 1), whole, method, limits);
    if (whole.result == Result::done) check_prefix(in, whole.consumed - 1, whole, method, limits);

    // The same head object parses the same bytes the same way again (its storage reused).
    const vela::HeadParse again = parse(in, in.size(), method, limits, head);
    check(again.result == whole.result && again.consumed == whole.consumed &&
          again.error == whole.error);
    return 0;
}
