// Matches arbitrary paths against a fixed route table and percent-decodes arbitrary input:
// no crash, bound parameters are views into the path, typed parameters hold their type.

#include <cstdint>
#include <string>
#include <string_view>

#include "vela/web/router.hpp"

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap();
}

vela::Router make_router() {
    vela::Router r;
    int id = 0;
    for (const char* p :
         {"/", "/users", "/users/{id:int}", "/users/{name}", "/users/{id:int}/posts/{post:uuid}",
          "/files/{*path}", "/a/{x}/c", "/a/b/d", "/v/{f:float}", "/al/{s:alpha}", "/u/{n:uint}"}) {
        r.add(vela::Method::GET, p, id++);
    }
    r.add(vela::Method::POST, "/users", id++);
    return r;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const vela::Router router = make_router();
    std::string path(reinterpret_cast<const char*>(data), size);
    vela::Request req;
    for (vela::Method m :
         {vela::Method::GET, vela::Method::POST, vela::Method::HEAD, vela::Method::DELETE}) {
        vela::Router::Match match = router.match(m, path, req);
        if (match.kind == vela::Router::Match::Kind::found) {
            check(match.endpoint >= 0);
            if (auto id = req.param("id"); !id.empty()) {
                check(id.data() >= path.data() &&
                      id.data() + id.size() <= path.data() + path.size());
                check(req.param_int("id").has_value());
            }
        }
    }
    std::string out;
    if (vela::percent_decode(path, out, true)) check(out.size() <= path.size());
    return 0;
}
