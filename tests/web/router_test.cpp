// Tests for src/web/router.cpp: literal, parameter, typed and wildcard segments, 405 masks.
#include "vela/web/router.hpp"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace vela {
namespace {

using Kind = Router::Match::Kind;

std::uint16_t bit(Method m) { return static_cast<std::uint16_t>(1u << static_cast<unsigned>(m)); }

struct Matched {
    Kind kind;
    std::int32_t endpoint;
    std::uint16_t allowed;
    Request req;
};

Matched match(const Router& r, Method m, std::string_view path) {
    Matched out;
    Router::Match mm = r.match(m, path, out.req);
    out.kind = mm.kind;
    out.endpoint = mm.endpoint;
    out.allowed = mm.allowed;
    return out;
}

TEST(Router, StaticHit) {
    Router r;
    r.add(Method::GET, "/", 1);
    r.add(Method::GET, "/users/me", 2);
    r.add(Method::POST, "/users/me", 3);
    EXPECT_EQ(match(r, Method::GET, "/").endpoint, 1);
    EXPECT_EQ(match(r, Method::GET, "/users/me").endpoint, 2);
    EXPECT_EQ(match(r, Method::POST, "/users/me").endpoint, 3);
    EXPECT_EQ(match(r, Method::GET, "/users/me").kind, Kind::found);
    EXPECT_EQ(match(r, Method::GET, "/users").kind, Kind::not_found);
    EXPECT_EQ(match(r, Method::GET, "/users/me/").kind, Kind::not_found);
    EXPECT_EQ(match(r, Method::GET, "/USERS/ME").kind, Kind::not_found);
}

TEST(Router, ParametersBindSegments) {
    Router r;
    r.add(Method::GET, "/users/{id}", 1);
    r.add(Method::GET, "/users/{id}/posts/{post}", 2);
    Matched a = match(r, Method::GET, "/users/42");
    ASSERT_EQ(a.kind, Kind::found);
    EXPECT_EQ(a.endpoint, 1);
    EXPECT_EQ(a.req.param("id"), "42");
    EXPECT_EQ(a.req.param_int("id"), 42);
    Matched b = match(r, Method::GET, "/users/ada/posts/hello-world");
    ASSERT_EQ(b.endpoint, 2);
    EXPECT_EQ(b.req.param("id"), "ada");
    EXPECT_EQ(b.req.param("post"), "hello-world");
    EXPECT_EQ(b.req.param_count(), 2u);
    // A parameter never matches an empty segment.
    EXPECT_EQ(match(r, Method::GET, "/users/").kind, Kind::not_found);
    EXPECT_EQ(match(r, Method::GET, "/users//posts/x").kind, Kind::not_found);
}

TEST(Router, TypedIntRejectsOtherSegmentsWith404) {
    Router r;
    r.add(Method::GET, "/items/{id:int}", 1);
    EXPECT_EQ(match(r, Method::GET, "/items/17").endpoint, 1);
    EXPECT_EQ(match(r, Method::GET, "/items/-17").endpoint, 1);
    for (const char* bad : {"/items/abc", "/items/1.5", "/items/12x", "/items/-", "/items/+1",
                            "/items/99999999999999999999"}) {
        Matched m = match(r, Method::GET, bad);
        EXPECT_EQ(m.kind, Kind::not_found) << bad;
        EXPECT_EQ(m.allowed, 0) << bad;
        EXPECT_EQ(m.req.param_count(), 0u) << bad;
    }
}

// Regression (found by fuzz_router): {id:int} took any 19-digit number, so a value beyond
// the 64-bit range matched and the handler's param_int() then had no value.
TEST(Router, TypedIntMatchesOnlyValuesParamIntCanRead) {
    Router r;
    r.add(Method::GET, "/items/{id:int}", 1);
    for (const char* bad : {"/items/9411717280547280541", "/items/9223372036854775808",
                            "/items/-9223372036854775809", "/items/-9999999999999999999"}) {
        EXPECT_EQ(match(r, Method::GET, bad).kind, Kind::not_found) << bad;
    }
    Matched max = match(r, Method::GET, "/items/9223372036854775807");
    ASSERT_EQ(max.endpoint, 1);
    EXPECT_EQ(max.req.param_int("id"), 9223372036854775807LL);
    Matched min = match(r, Method::GET, "/items/-9223372036854775808");
    ASSERT_EQ(min.endpoint, 1);
    EXPECT_EQ(min.req.param_int("id"), -9223372036854775807LL - 1);
}

TEST(Router, TypedUintUuidAlphaFloat) {
    Router r;
    r.add(Method::GET, "/u/{v:uint}", 1);
    r.add(Method::GET, "/id/{v:uuid}", 2);
    r.add(Method::GET, "/a/{v:alpha}", 3);
    r.add(Method::GET, "/f/{v:float}", 4);
    EXPECT_EQ(match(r, Method::GET, "/u/0").endpoint, 1);
    EXPECT_EQ(match(r, Method::GET, "/u/-1").kind, Kind::not_found);
    EXPECT_EQ(match(r, Method::GET, "/id/123e4567-e89b-12d3-A456-426614174000").endpoint, 2);
    EXPECT_EQ(match(r, Method::GET, "/id/123e4567-e89b-12d3-a456-42661417400").kind,
              Kind::not_found);
    EXPECT_EQ(match(r, Method::GET, "/id/123e4567xe89b-12d3-a456-426614174000").kind,
              Kind::not_found);
    EXPECT_EQ(match(r, Method::GET, "/id/g23e4567-e89b-12d3-a456-426614174000").kind,
              Kind::not_found);
    EXPECT_EQ(match(r, Method::GET, "/a/Hello").endpoint, 3);
    EXPECT_EQ(match(r, Method::GET, "/a/hello1").kind, Kind::not_found);
    EXPECT_EQ(match(r, Method::GET, "/f/1.5").endpoint, 4);
    EXPECT_EQ(match(r, Method::GET, "/f/-2").endpoint, 4);
    EXPECT_EQ(match(r, Method::GET, "/f/1e3").endpoint, 4);
    EXPECT_EQ(match(r, Method::GET, "/f/1.5x").kind, Kind::not_found);
    EXPECT_EQ(match(r, Method::GET, "/f/abc").kind, Kind::not_found);
}

TEST(Router, TypedParameterPreferredOverPlainOne) {
    Router r;
    r.add(Method::GET, "/p/{name}", 1);
    r.add(Method::GET, "/p/{id:int}", 2);
    Matched n = match(r, Method::GET, "/p/7");
    EXPECT_EQ(n.endpoint, 2);
    EXPECT_EQ(n.req.param("id"), "7");
    EXPECT_EQ(n.req.param("name"), "");
    Matched s = match(r, Method::GET, "/p/seven");
    EXPECT_EQ(s.endpoint, 1);
    EXPECT_EQ(s.req.param("name"), "seven");
}

TEST(Router, WildcardTakesTheRestIncludingNothing) {
    Router r;
    r.add(Method::GET, "/static/{*path}", 1);
    Matched deep = match(r, Method::GET, "/static/css/site/main.css");
    ASSERT_EQ(deep.endpoint, 1);
    EXPECT_EQ(deep.req.param("path"), "css/site/main.css");
    Matched slash = match(r, Method::GET, "/static/");
    ASSERT_EQ(slash.kind, Kind::found);
    EXPECT_EQ(slash.req.param("path"), "");
    Matched bare = match(r, Method::GET, "/static");
    ASSERT_EQ(bare.kind, Kind::found);
    EXPECT_EQ(bare.req.param("path"), "");
    EXPECT_EQ(match(r, Method::GET, "/statics/x").kind, Kind::not_found);
}

TEST(Router, WildcardIsTheLastResort) {
    Router r;
    r.add(Method::GET, "/files/{*rest}", 1);
    r.add(Method::GET, "/files/{name}", 2);
    r.add(Method::GET, "/files/readme", 3);
    r.add(Method::GET, "/files/{dir}/index", 4);
    EXPECT_EQ(match(r, Method::GET, "/files/readme").endpoint, 3);
    EXPECT_EQ(match(r, Method::GET, "/files/a").endpoint, 2);
    EXPECT_EQ(match(r, Method::GET, "/files/a/index").endpoint, 4);
    Matched w = match(r, Method::GET, "/files/a/b");
    EXPECT_EQ(w.endpoint, 1);
    EXPECT_EQ(w.req.param("rest"), "a/b");
    EXPECT_EQ(w.req.param("dir"), "");  // bound while trying "/files/{dir}/index", then dropped
}

TEST(Router, RootWildcard) {
    Router r;
    r.add(Method::GET, "/{*all}", 1);
    EXPECT_EQ(match(r, Method::GET, "/").req.param("all"), "");
    EXPECT_EQ(match(r, Method::GET, "/x/y").req.param("all"), "x/y");
}

TEST(Router, LiteralPreferredWithBacktracking) {
    Router r;
    r.add(Method::GET, "/a/{x}/c", 1);
    r.add(Method::GET, "/a/b/d", 2);  // fully literal
    r.add(Method::GET, "/a/b/{y:int}", 3);
    EXPECT_EQ(match(r, Method::GET, "/a/b/d").endpoint, 2);
    Matched m = match(r, Method::GET, "/a/b/c");  // "/a/b/..." is tried first, then given up
    ASSERT_EQ(m.kind, Kind::found);
    EXPECT_EQ(m.endpoint, 1);
    EXPECT_EQ(m.req.param("x"), "b");
    EXPECT_EQ(m.req.param("y"), "");
    EXPECT_EQ(m.req.param_count(), 1u);
    Matched n = match(r, Method::GET, "/a/b/9");
    EXPECT_EQ(n.endpoint, 3);
    EXPECT_EQ(n.req.param("y"), "9");
    EXPECT_EQ(n.req.param("x"), "");
}

TEST(Router, BacktrackingDropsParametersOfAbandonedBranches) {
    Router r;
    r.add(Method::GET, "/{a}/{b}/x", 1);
    r.add(Method::GET, "/{c}/y/{d}", 2);
    Matched m = match(r, Method::GET, "/1/y/2");
    ASSERT_EQ(m.endpoint, 2);
    EXPECT_EQ(m.req.param_count(), 2u);
    EXPECT_EQ(m.req.param("c"), "1");
    EXPECT_EQ(m.req.param("d"), "2");
    EXPECT_EQ(m.req.param("a"), "");
    EXPECT_EQ(m.req.param("b"), "");
}

TEST(Router, MethodNotAllowedCarriesTheAllowedMask) {
    Router r;
    r.add(Method::GET, "/things/{id}", 1);
    r.add(Method::PUT, "/things/{id}", 2);
    r.add(Method::DELETE, "/things/{id}", 3);
    r.add(Method::POST, "/things", 4);
    Matched m = match(r, Method::PATCH, "/things/5");
    EXPECT_EQ(m.kind, Kind::method_not_allowed);
    EXPECT_EQ(m.allowed, bit(Method::GET) | bit(Method::PUT) | bit(Method::DELETE));
    EXPECT_EQ(m.endpoint, Router::kNone);
    Matched s = match(r, Method::GET, "/things");
    EXPECT_EQ(s.kind, Kind::method_not_allowed);
    EXPECT_EQ(s.allowed, bit(Method::POST));
    EXPECT_EQ(Router::allow_header(s.allowed), "POST, OPTIONS");
    EXPECT_EQ(match(r, Method::GET, "/nothing").kind, Kind::not_found);
}

TEST(Router, MethodNotAllowedMergesEveryRouteMatchingThePath) {
    Router r;
    r.add(Method::GET, "/users/me", 1);
    r.add(Method::POST, "/users/{id}", 2);
    EXPECT_EQ(match(r, Method::POST, "/users/me").endpoint, 2);
    Matched m = match(r, Method::DELETE, "/users/me");
    EXPECT_EQ(m.kind, Kind::method_not_allowed);
    EXPECT_EQ(m.allowed, bit(Method::GET) | bit(Method::POST));
}

TEST(Router, HeadFallsBackToGet) {
    Router r;
    r.add(Method::GET, "/s", 1);
    r.add(Method::GET, "/p/{x}", 2);
    r.add(Method::GET, "/h", 3);
    r.add(Method::HEAD, "/h", 4);
    EXPECT_EQ(match(r, Method::HEAD, "/s").endpoint, 1);
    EXPECT_EQ(match(r, Method::HEAD, "/p/1").endpoint, 2);
    EXPECT_EQ(match(r, Method::HEAD, "/h").endpoint, 4);
    r.add(Method::POST, "/post-only", 5);
    Matched m = match(r, Method::HEAD, "/post-only");
    EXPECT_EQ(m.kind, Kind::method_not_allowed);
    EXPECT_EQ(m.allowed, bit(Method::POST));
}

TEST(Router, OtherMethodNeverMatches) {
    Router r;
    r.add(Method::GET, "/", 1);
    EXPECT_EQ(match(r, Method::other, "/").kind, Kind::not_found);
    EXPECT_THROW(r.add(Method::other, "/x", 2), std::invalid_argument);
}

TEST(Router, DuplicateRouteThrows) {
    Router r;
    r.add(Method::GET, "/a", 1);
    r.add(Method::GET, "/b/{id}", 2);
    r.add(Method::GET, "/c/{*rest}", 3);
    EXPECT_THROW(r.add(Method::GET, "/a", 9), std::invalid_argument);
    EXPECT_THROW(r.add(Method::GET, "/b/{id}", 9), std::invalid_argument);
    EXPECT_THROW(r.add(Method::GET, "/c/{*rest}", 9), std::invalid_argument);
    EXPECT_NO_THROW(r.add(Method::POST, "/a", 4));
    EXPECT_NO_THROW(r.add(Method::GET, "/b/{id:int}", 5));  // a different pattern
    EXPECT_EQ(match(r, Method::GET, "/a").endpoint, 1);     // the first one stays
}

// "/b/{id}" and "/b/{name}" match exactly the same paths: the second can never be reached,
// so it is a duplicate whatever the parameter is called (router.hpp: "equivalent pattern").
TEST(Router, DuplicateRouteWithRenamedParameterThrows) {
    Router r;
    r.add(Method::GET, "/b/{id}", 1);
    EXPECT_THROW(r.add(Method::GET, "/b/{name}", 2), std::invalid_argument);
    r.add(Method::GET, "/t/{id:int}/x", 3);
    EXPECT_THROW(r.add(Method::GET, "/t/{n:int}/x", 4), std::invalid_argument);
}

// A rejected duplicate wildcard must leave the router as it was.
TEST(Router, RejectedDuplicateWildcardKeepsTheOriginalName) {
    Router r;
    r.add(Method::GET, "/s/{*path}", 1);
    EXPECT_THROW(r.add(Method::GET, "/s/{*other}", 2), std::invalid_argument);
    Matched m = match(r, Method::GET, "/s/a/b");
    ASSERT_EQ(m.endpoint, 1);
    EXPECT_EQ(m.req.param("path"), "a/b");
}

// Each route binds the wildcard name it was registered with: adding POST "/w/{*rest}" must
// not rename the parameter of GET "/w/{*path}".
TEST(Router, WildcardNamesArePerRoute) {
    Router r;
    r.add(Method::GET, "/w/{*path}", 1);
    r.add(Method::POST, "/w/{*rest}", 2);
    Matched get = match(r, Method::GET, "/w/a/b");
    ASSERT_EQ(get.endpoint, 1);
    EXPECT_EQ(get.req.param("path"), "a/b");
    Matched post = match(r, Method::POST, "/w/a/b");
    ASSERT_EQ(post.endpoint, 2);
    EXPECT_EQ(post.req.param("rest"), "a/b");
}

TEST(Router, MalformedPatternsThrow) {
    for (const char* bad : {"", "no-slash", "/a/{", "/a/{}", "/a/{id", "/a/{id}x", "/a/x{id}",
                            "/a/{*rest}/more", "/a/{id:bogus}", "/a/{:int}", "/a/{id:}x"}) {
        Router r;
        EXPECT_THROW(r.add(Method::GET, bad, 1), std::invalid_argument) << '"' << bad << '"';
    }
}

// A brace in a literal segment is rejected when the pattern also has a parameter; a lone
// '}' in an otherwise literal pattern must be rejected the same way (no request target can
// hold '}', so such a route could never match).
TEST(Router, StrayClosingBraceInLiteralPatternThrows) {
    Router r;
    EXPECT_THROW(r.add(Method::GET, "/a/x}/{id}", 1), std::invalid_argument);
    EXPECT_THROW(r.add(Method::GET, "/a/id}", 2), std::invalid_argument);
}

TEST(Router, AllowHeaderText) {
    EXPECT_EQ(Router::allow_header(0), "OPTIONS");
    EXPECT_EQ(Router::allow_header(bit(Method::GET)), "GET, HEAD, OPTIONS");
    EXPECT_EQ(Router::allow_header(bit(Method::POST) | bit(Method::GET)),
              "GET, HEAD, POST, OPTIONS");
    EXPECT_EQ(Router::allow_header(bit(Method::DELETE) | bit(Method::PATCH) | bit(Method::PUT)),
              "PUT, DELETE, OPTIONS, PATCH");
    EXPECT_EQ(Router::allow_header(bit(Method::other)), "OPTIONS");
}

TEST(Router, AllMethodsCollectsEveryRegisteredMethod) {
    Router r;
    EXPECT_EQ(r.all_methods(), 0);
    r.add(Method::GET, "/a", 1);
    r.add(Method::DELETE, "/b/{x}", 2);
    EXPECT_EQ(r.all_methods(), bit(Method::GET) | bit(Method::DELETE));
}

TEST(Router, StaleParametersAreClearedBetweenMatches) {
    Router r;
    r.add(Method::GET, "/u/{id}", 1);
    r.add(Method::GET, "/plain", 2);
    Request req;
    ASSERT_EQ(r.match(Method::GET, "/u/1", req).endpoint, 1);
    EXPECT_EQ(req.param("id"), "1");
    ASSERT_EQ(r.match(Method::GET, "/plain", req).endpoint, 2);
    EXPECT_EQ(req.param_count(), 0u);
    ASSERT_EQ(r.match(Method::GET, "/nope", req).kind, Kind::not_found);
    EXPECT_EQ(req.param_count(), 0u);
}

TEST(Router, MoveKeepsRoutes) {
    Router a;
    a.add(Method::GET, "/x/{id}", 7);
    Router b = std::move(a);
    EXPECT_EQ(match(b, Method::GET, "/x/1").endpoint, 7);
}

// Two hundred routes of every kind side by side; each request must find its own.
TEST(Router, TwoHundredMixedRoutes) {
    Router r;
    struct Case {
        Method method;
        std::string path;
        std::int32_t endpoint;
        std::map<std::string, std::string> params;
    };
    std::vector<Case> cases;
    std::int32_t id = 0;
    for (int i = 0; i < 50; ++i) {
        const std::string n = std::to_string(i);
        r.add(Method::GET, "/static/" + n, id);
        cases.push_back({Method::GET, "/static/" + n, id++, {}});
        r.add(Method::GET, "/r" + n + "/{id:int}", id);
        cases.push_back({Method::GET,
                         "/r" + n + "/" + std::to_string(i * 7),
                         id++,
                         {{"id", std::to_string(i * 7)}}});
        r.add(Method::POST, "/r" + n + "/{name}/items/{item}", id);
        cases.push_back({Method::POST,
                         "/r" + n + "/x" + n + "/items/y",
                         id++,
                         {{"name", "x" + n}, {"item", "y"}}});
        r.add(Method::PUT, "/files" + n + "/{*rest}", id);
        cases.push_back({Method::PUT, "/files" + n + "/a/b/" + n, id++, {{"rest", "a/b/" + n}}});
    }
    ASSERT_EQ(id, 200);
    for (const Case& c : cases) {
        Matched m = match(r, c.method, c.path);
        ASSERT_EQ(m.kind, Kind::found) << c.path;
        EXPECT_EQ(m.endpoint, c.endpoint) << c.path;
        EXPECT_EQ(m.req.param_count(), c.params.size()) << c.path;
        for (const auto& [k, v] : c.params) EXPECT_EQ(m.req.param(k), v) << c.path << " " << k;
    }
    EXPECT_EQ(match(r, Method::GET, "/r3/notanint").kind, Kind::not_found);
    EXPECT_EQ(match(r, Method::DELETE, "/r3/5").kind, Kind::method_not_allowed);
    EXPECT_EQ(match(r, Method::GET, "/static/50").kind, Kind::not_found);
}

}  // namespace
}  // namespace vela
