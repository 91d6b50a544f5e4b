#include "vela/web/router.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace vela {

namespace {

enum class ParamType : std::uint8_t { int_, uint_, float_, uuid, alpha, any };

ParamType param_type(std::string_view t) {
    if (t.empty()) return ParamType::any;
    if (t == "int") return ParamType::int_;
    if (t == "uint") return ParamType::uint_;
    if (t == "float") return ParamType::float_;
    if (t == "uuid") return ParamType::uuid;
    if (t == "alpha") return ParamType::alpha;
    throw std::invalid_argument("unknown parameter type '" + std::string(t) + "'");
}

bool digits(std::string_view s) noexcept {
    if (s.empty() || s.size() > 19) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

bool type_accepts(ParamType t, std::string_view s) noexcept {
    switch (t) {
        case ParamType::any:
            return true;
        case ParamType::int_: {  // what Request::param_int() can read back
            long long v;
            if (s.empty() || s[0] == '+') return false;
            auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            return ec == std::errc{} && p == s.data() + s.size();
        }
        case ParamType::uint_:
            return digits(s);
        case ParamType::float_: {
            double v;
            auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            return ec == std::errc{} && p == s.data() + s.size();
        }
        case ParamType::alpha:
            for (char c : s)
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
            return true;
        case ParamType::uuid:
            if (s.size() != 36) return false;
            for (std::size_t i = 0; i < 36; ++i) {
                char c = s[i];
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;
                if (dash ? c != '-'
                         : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                             (c >= 'A' && c <= 'F')))
                    return false;
            }
            return true;
    }
    return false;
}

std::uint16_t bit(Method m) noexcept {
    return static_cast<std::uint16_t>(1u << static_cast<unsigned>(m));
}

}  // namespace

struct Router::Node {
    struct Param {
        ParamType type;
        std::unique_ptr<Node> node;
    };
    std::vector<std::pair<std::string, std::unique_ptr<Node>>> literals;  // sorted by segment
    std::vector<Param> params;  // one per type, typed first, then untyped
    bool has_wildcard = false;
    Endpoints wildcard;
    Endpoints here;
    bool terminal = false;
};

Router::Router() : root_(std::make_unique<Node>()) {}
Router::~Router() = default;
Router::Router(Router&&) noexcept = default;
Router& Router::operator=(Router&&) noexcept = default;

void Router::add(Method method, std::string_view pattern, std::int32_t endpoint) {
    const std::string pat(pattern);
    if (pattern.empty() || pattern[0] != '/')
        throw std::invalid_argument("route pattern must start with '/': " + pat);
    if (method == Method::other) throw std::invalid_argument("cannot route Method::other");
    const auto mi = static_cast<std::size_t>(method);
    std::vector<std::string> names;
    auto set = [&](Endpoints& e) {
        if (e.by_method[mi] != kNone)
            throw std::invalid_argument("duplicate route: " + std::string(method_name(method)) +
                                        " " + pat);
        e.by_method[mi] = endpoint;
        e.names[mi] = std::move(names);
        all_methods_ |= bit(method);
    };
    if (pattern.find_first_of("{}") == std::string_view::npos) {
        set(static_entry(pat));
        return;
    }
    // Walk (creating) the tree first; nothing is registered until the whole pattern is valid.
    Node* n = root_.get();
    std::string_view rest = pattern;
    while (!rest.empty()) {
        rest.remove_prefix(1);  // '/'
        std::size_t slash = rest.find('/');
        std::string_view seg = rest.substr(0, slash);
        rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
        if (!seg.empty() && seg.front() == '{') {
            if (seg.back() != '}' || seg.size() < 3 ||
                seg.substr(1, seg.size() - 2).find_first_of("{}") != std::string_view::npos)
                throw std::invalid_argument("malformed parameter in " + pat);
            std::string_view inner = seg.substr(1, seg.size() - 2);
            if (inner[0] == '*') {
                if (!rest.empty()) throw std::invalid_argument("wildcard must be last: " + pat);
                if (inner.size() < 2) throw std::invalid_argument("unnamed wildcard in " + pat);
                names.emplace_back(inner.substr(1));
                n->has_wildcard = true;
                set(n->wildcard);
                return;
            }
            std::size_t colon = inner.find(':');
            std::string_view name = inner.substr(0, colon);
            ParamType type = param_type(colon == std::string_view::npos ? std::string_view{}
                                                                        : inner.substr(colon + 1));
            if (name.empty()) throw std::invalid_argument("unnamed parameter in " + pat);
            names.emplace_back(name);
            Node* next = nullptr;
            for (auto& p : n->params)
                if (p.type == type) next = p.node.get();
            if (!next) {
                Node::Param p{type, std::make_unique<Node>()};
                next = p.node.get();
                // Keep typed parameters ahead of untyped ones so the stricter match wins.
                auto it = n->params.begin();
                while (it != n->params.end() && it->type <= type) ++it;
                n->params.insert(it, std::move(p));
            }
            n = next;
        } else {
            if (seg.find_first_of("{}") != std::string_view::npos)
                throw std::invalid_argument("braces inside a literal segment: " + pat);
            // Literal children stay sorted so matching can binary-search them.
            auto it =
                std::lower_bound(n->literals.begin(), n->literals.end(), seg,
                                 [](const auto& e, std::string_view k) { return e.first < k; });
            if (it == n->literals.end() || it->first != seg)
                it = n->literals.emplace(it, std::string(seg), std::make_unique<Node>());
            n = it->second.get();
        }
    }
    set(n->here);
    n->terminal = true;
}

namespace {
// The endpoint for `method` in `e`, with HEAD served by GET; on a hit, names the bound
// parameters. On a miss, adds the methods that are there to `allowed` (for 405 and OPTIONS).
std::int32_t pick(const Router::Endpoints& e, Method method, std::uint16_t& allowed, Request& req) {
    auto mi = static_cast<std::size_t>(method);
    if (e.by_method[mi] == Router::kNone && method == Method::HEAD)
        mi = static_cast<std::size_t>(Method::GET);
    const std::int32_t id = e.by_method[mi];
    if (id == Router::kNone) {
        for (std::size_t i = 0; i < kMethodCount; ++i)
            if (e.by_method[i] != Router::kNone) allowed |= static_cast<std::uint16_t>(1u << i);
        return id;
    }
    if (!e.names[mi].empty()) req.name_params(e.names[mi]);
    return id;
}
}  // namespace

bool Router::match_node(const Node& n, std::string_view rest, Method method, Request& req,
                        Match& m) const {
    if (rest.empty()) {
        if (n.terminal) {
            std::int32_t id = pick(n.here, method, m.allowed, req);
            if (id != kNone) {
                m.endpoint = id;
                return true;
            }
        }
    } else {
        std::string_view after = rest.substr(1);
        std::size_t slash = after.find('/');
        std::string_view seg = after.substr(0, slash);
        std::string_view remaining =
            slash == std::string_view::npos ? std::string_view{} : after.substr(slash);
        auto it = std::lower_bound(n.literals.begin(), n.literals.end(), seg,
                                   [](const auto& e, std::string_view k) { return e.first < k; });
        if (it != n.literals.end() && it->first == seg &&
            match_node(*it->second, remaining, method, req, m))
            return true;
        if (!seg.empty()) {
            const std::size_t mark = req.param_count();
            for (const auto& p : n.params) {
                if (!type_accepts(p.type, seg)) continue;
                req.add_param({}, seg);  // named by pick() once a route matches
                if (match_node(*p.node, remaining, method, req, m)) return true;
                req.truncate_params(mark);
            }
        }
    }
    if (n.has_wildcard) {
        const std::size_t mark = req.param_count();
        req.add_param({}, rest.empty() ? rest : rest.substr(1));
        std::int32_t id = pick(n.wildcard, method, m.allowed, req);
        if (id != kNone) {
            m.endpoint = id;
            return true;
        }
        req.truncate_params(mark);
    }
    return false;
}

Router::Endpoints& Router::static_entry(const std::string& path) {
    if (const Endpoints* e = find_static(path)) return const_cast<Endpoints&>(*e);
    // Keep the table at most half full.
    if ((static_endpoints_.size() + 1) * 2 > static_slots_.size()) {
        std::vector<StaticSlot> old = std::move(static_slots_);
        static_slots_.assign(old.empty() ? 16 : old.size() * 2, StaticSlot{});
        for (StaticSlot& s : old) {
            if (!s.endpoints) continue;
            std::size_t i = s.hash & (static_slots_.size() - 1);
            while (static_slots_[i].endpoints) i = (i + 1) & (static_slots_.size() - 1);
            static_slots_[i] = std::move(s);
        }
    }
    static_endpoints_.push_back(std::make_unique<Endpoints>());
    const std::uint64_t h = hash_path(path);
    std::size_t i = h & (static_slots_.size() - 1);
    while (static_slots_[i].endpoints) i = (i + 1) & (static_slots_.size() - 1);
    static_slots_[i] = StaticSlot{h, path, static_endpoints_.back().get()};
    return *static_endpoints_.back();
}

const Router::Endpoints* Router::find_static(std::string_view path) const noexcept {
    if (static_slots_.empty()) return nullptr;
    const std::uint64_t h = hash_path(path);
    const std::size_t mask = static_slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
        const StaticSlot& s = static_slots_[i];
        if (!s.endpoints) return nullptr;
        if (s.hash == h && s.path == path) return s.endpoints;
    }
}

Router::Match Router::match(Method method, std::string_view path, Request& req) const {
    Match m;
    if (method == Method::other) return m;
    req.clear_params();
    if (const Endpoints* e = find_static(path)) {
        std::int32_t id = pick(*e, method, m.allowed, req);
        if (id != kNone) {
            m.kind = Match::Kind::found;
            m.endpoint = id;
            return m;
        }
    }
    if (match_node(*root_, path, method, req, m)) {
        m.kind = Match::Kind::found;
        return m;
    }
    req.clear_params();
    m.kind = m.allowed ? Match::Kind::method_not_allowed : Match::Kind::not_found;
    return m;
}

std::string Router::allow_header(std::uint16_t mask) {
    if (mask & bit(Method::GET)) mask |= bit(Method::HEAD);
    mask |= bit(Method::OPTIONS);
    std::string out;
    for (std::size_t i = 0; i < kMethodCount - 1; ++i) {
        if (!(mask & (1u << i))) continue;
        if (!out.empty()) out += ", ";
        out += method_name(static_cast<Method>(i));
    }
    return out;
}

}  // namespace vela
