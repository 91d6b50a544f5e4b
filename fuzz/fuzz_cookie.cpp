// Feeds arbitrary bytes to the cookie code. The input is a Cookie field value: next_cookie
// must give non-empty names without '=', ';' or surrounding whitespace, views inside the
// input, and the same pairs however the field is split into several Cookie fields (HTTP/2);
// Request::cookie must return the first pair of each name. The same bytes, split into a name
// and a value, go to format_set_cookie, which must either refuse them or produce a field
// whose name=value part reads back unchanged; and to CookieKeys::verify / decrypt, which
// must refuse them (no input is a valid signature by chance) without crashing.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vela/http/cookie.hpp"
#include "vela/http/request.hpp"
#include "vela/web/cookies.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}

using Pairs = std::vector<std::pair<std::string_view, std::string_view>>;

bool is_ows(char c) { return c == ' ' || c == '\t'; }

Pairs read_all(std::string_view field) {
    Pairs out;
    const char* begin = field.data();
    const char* end = field.data() + field.size();
    std::string_view n, v;
    while (vela::next_cookie(field, n, v)) {
        check(!n.empty());
        check(n.find('=') == std::string_view::npos && n.find(';') == std::string_view::npos);
        check(v.find(';') == std::string_view::npos);
        check(!is_ows(n.front()) && !is_ows(n.back()));
        check(n.data() >= begin && n.data() + n.size() <= end);
        check(v.empty() || (v.data() >= begin && v.data() + v.size() <= end));
        out.emplace_back(n, v);
    }
    check(field.empty());
    return out;
}

void check_set_cookie(std::string_view name, std::string_view value) {
    std::string formatted;
    try {
        formatted =
            vela::format_set_cookie({.name = std::string(name), .value = std::string(value)});
    } catch (const std::invalid_argument&) {
        return;
    }
    check(formatted.find_first_of("\r\n") == std::string::npos);
    std::string_view field = formatted, n, v;
    check(vela::next_cookie(field, n, v));
    check(n == name);
    std::string_view want = value;
    if (want.size() >= 2 && want.front() == '"' && want.back() == '"')
        want = want.substr(1, want.size() - 2);
    check(v == want);
}

const vela::CookieKeys& keys() {
    static const vela::CookieKeys k(std::string(32, 'k'));
    return k;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    const Pairs whole = read_all(in);

    // Split at a ';' chosen by the input into two Cookie fields: the same pairs come out.
    vela::Request req;
    const std::size_t cut = in.empty() ? std::string_view::npos
                                       : in.find(';', static_cast<unsigned char>(in[0]) % size);
    if (cut == std::string_view::npos) {
        req.mutable_headers().push_back({"Cookie", in});
    } else {
        req.mutable_headers().push_back({"cookie", in.substr(0, cut)});
        req.mutable_headers().push_back({"Host", "x"});
        req.mutable_headers().push_back({"COOKIE", in.substr(cut + 1)});
    }
    check(req.cookies() == whole);
    for (const auto& [n, v] : whole) {
        const auto got = req.cookie(n);
        check(got.has_value());
        for (const auto& [n2, v2] : whole)
            if (n2 == n) {
                check(*got == v2);
                break;
            }
    }

    const std::size_t eq = in.find('=');
    if (eq != std::string_view::npos) check_set_cookie(in.substr(0, eq), in.substr(eq + 1));

    check(!keys().verify("a", in));
    check(!keys().decrypt("a", in));
    if (!whole.empty()) {
        const auto& [n, v] = whole.front();
        check(!keys().verify(n, v));
        check(keys().verify(n, keys().sign(n, v)) == std::string(v));
        check(keys().decrypt(n, keys().encrypt(n, in)) == std::string(in));
    }
    return 0;
}
