#pragma once
// Router: maps (method, path) to an endpoint number.
//
// Patterns are paths whose segments may be:
//   literal      /users/me
//   parameter    /users/{id}          any non-empty segment, bound as "id"
//   typed        /users/{id:int}      int, uint, float, alpha or uuid; a segment of the wrong
//                                     form does not match (so the request gets 404, not 500)
//   wildcard     /static/{*path}      the rest of the path (possibly empty), last only
// Fully literal patterns are found by one hash lookup; the others by walking a segment
// tree, preferring literal over typed over plain parameters over wildcards, with
// backtracking. The router is built before the server starts and only read afterwards,
// so any number of loops may match concurrently.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vela/http/method.hpp"
#include "vela/http/request.hpp"

namespace vela {

/// Maps (method, path) to an endpoint number (see above).
class Router {
  public:
    /// "No endpoint" (in Match::endpoint and Endpoints::by_method).
    static constexpr std::int32_t kNone = -1;

    /// The outcome of match().
    struct Match {
        /// Found; no route at the path; or routes at the path, but not for this method.
        enum class Kind : std::uint8_t {
            found,
            not_found,
            method_not_allowed
        } kind = Kind::not_found;
        /// The endpoint number registered with add() (kind == found).
        std::int32_t endpoint = kNone;
        /// Bit i set when Method(i) has an endpoint at the matched path.
        std::uint16_t allowed = 0;
    };

    /// The endpoints at one path, per method (internal; public for the matcher's helpers).
    struct Endpoints {
        /// The endpoint number per method, kNone where there is none.
        std::array<std::int32_t, kMethodCount> by_method;
        /// Parameter names in path order, per method: routes that share a tree position may
        /// name their parameters differently (GET /u/{id}, POST /u/{name}).
        std::array<std::vector<std::string>, kMethodCount> names;
        /// No endpoint for any method.
        Endpoints() { by_method.fill(kNone); }
    };

    /// An empty router.
    Router();
    /// Frees the routes.
    ~Router();
    /// Takes over another router's routes.
    Router(Router&&) noexcept;
    /// Replaces this router's routes with another's.
    Router& operator=(Router&&) noexcept;

    /// Registers `endpoint` for `method` at `pattern`. Throws std::invalid_argument on a
    /// malformed pattern or when that method is already registered at an equivalent pattern.
    void add(Method method, std::string_view pattern, std::int32_t endpoint);
    /// Matches `path` for `method`, binding parameters into `req` on success. HEAD falls back
    /// to GET.
    Match match(Method method, std::string_view path, Request& req) const;
    /// Methods registered anywhere (for OPTIONS *).
    std::uint16_t all_methods() const noexcept { return all_methods_; }

    /// Value of an Allow header for a method mask (adds HEAD with GET, and OPTIONS).
    static std::string allow_header(std::uint16_t mask);

  private:
    struct Node;
    bool match_node(const Node& n, std::string_view rest, Method method, Request& req,
                    Match& m) const;

    // Fully literal paths: an open-addressing table (power-of-two size, linear probing) keyed
    // by an inlined FNV-1a hash; the stored hash is compared before the string.
    struct StaticSlot {
        std::uint64_t hash = 0;
        std::string path;
        Endpoints* endpoints = nullptr;  // null: empty slot
    };
    static std::uint64_t hash_path(std::string_view s) noexcept {
        std::uint64_t h = 0xcbf29ce484222325ull;
        for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
        return h;
    }
    Endpoints& static_entry(const std::string& path);
    const Endpoints* find_static(std::string_view path) const noexcept;
    std::vector<StaticSlot> static_slots_;
    std::vector<std::unique_ptr<Endpoints>> static_endpoints_;
    std::unique_ptr<Node> root_;
    std::uint16_t all_methods_ = 0;
};

}  // namespace vela
