// The OpenAPI 3.1 document (openapi.hpp): schemas of C++ types, route patterns as path
// templates, and the document built from what registration recorded (route_doc.hpp).

#include "vela/ops/openapi.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "vela/http/status.hpp"

namespace vela::openapi {

namespace {

constexpr std::string_view kRefPrefix = "#/components/schemas/";

json::Value ref_to(std::string_view name) {
    std::string r(kRefPrefix);
    r += name;
    return json::Value::object({{"$ref", std::move(r)}});
}

// Component names must match ^[a-zA-Z0-9.\-_]+$ (OpenAPI 3.1, section 4.8.7.1).
std::string sanitized(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
            out += '.';
            ++i;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '.' || c == '-' || c == '_') {
            out += c;
        } else if (c != ' ' && (out.empty() || out.back() != '_')) {
            out += '_';
        }
    }
    while (out.size() > 1 && out.back() == '_') out.pop_back();
    return out.empty() ? std::string("_") : out;
}

std::string demangled(const std::type_info& type) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> p(
        abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
    std::string s = status == 0 && p ? std::string(p.get()) : std::string(type.name());
    for (std::size_t at; (at = s.find("(anonymous namespace)")) != std::string::npos;)
        s.replace(at, 21, "anonymous");
    return s;
}

// The last component of a qualified name, template arguments kept: "a::b::Box<a::X>" ->
// "Box<a::X>".
std::string_view unqualified(std::string_view s) {
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '<') ++depth;
        if (s[i] == '>') --depth;
        if (depth == 0 && s[i] == ':' && i + 1 < s.size() && s[i + 1] == ':') start = i + 2;
    }
    return s.substr(start);
}

// Rewrites every {"$ref": old} in `v` by `renames`.
void rewrite_refs(json::Value& v, const std::unordered_map<std::string, std::string>& renames) {
    if (v.is_array()) {
        for (json::Value& e : v.as_array()) rewrite_refs(e, renames);
    } else if (v.is_object()) {
        for (auto& [k, m] : v.as_object()) {
            if (k == "$ref" && m.is_string()) {
                auto it = renames.find(m.as_string());
                if (it != renames.end()) m = it->second;
            } else {
                rewrite_refs(m, renames);
            }
        }
    }
}

}  // namespace

// ---- Schemas -----------------------------------------------------------------------------

json::Value Schemas::component(const void* key, const std::type_info& type, std::string_view name,
                               Build build) {
    if (auto it = index_.find(key); it != index_.end()) return ref_to(entries_[it->second].name);
    std::string q = demangled(type);
    std::string n = name.empty() ? sanitized(unqualified(q)) : sanitized(name);
    return component(key, std::move(n), sanitized(q), build);
}

json::Value Schemas::component(const void* key, std::string name, std::string qualified,
                               Build build) {
    if (auto it = index_.find(key); it != index_.end()) return ref_to(entries_[it->second].name);
    const std::size_t i = entries_.size();
    index_.emplace(key, i);
    auto [first, fresh] = by_name_.emplace(name, i);
    entries_.push_back(Entry{key, std::move(name), std::move(qualified), {}, false});
    if (!fresh) {
        // Two types share a short name: both are known by their qualified names, and the
        // references already made to the first are rewritten at the end.
        Entry& other = entries_[first->second];
        if (!other.renamed) {
            renamed_.emplace_back(std::string(kRefPrefix) + other.name,
                                  std::string(kRefPrefix) + other.qualified);
            other.name = other.qualified;
            other.renamed = true;
        }
        entries_[i].name = entries_[i].qualified;
        entries_[i].renamed = true;
    }
    json::Value schema = build(*this);  // may come back here for the types it contains
    entries_[i].schema = std::move(schema);
    return ref_to(entries_[i].name);
}

json::Value Schemas::take() {
    json::Value::Object out;
    out.reserve(entries_.size());
    for (Entry& e : entries_) out.emplace_back(e.name, std::move(e.schema));
    return json::Value(std::move(out));
}

void Schemas::fix_refs(json::Value& doc) const {
    if (renamed_.empty()) return;
    std::unordered_map<std::string, std::string> renames(renamed_.begin(), renamed_.end());
    rewrite_refs(doc, renames);
}

// ---- Schema pieces -----------------------------------------------------------------------

json::Value integer_schema(bool is_signed, std::size_t bytes) {
    json::Value s = json::Value::object({{"type", "integer"}});
    if (bytes <= 4 && (is_signed || bytes < 4))
        s.set("format", "int32");
    else
        s.set("format", "int64");
    if (!is_signed) s.set("minimum", 0);
    return s;
}

json::Value number_schema(std::size_t bytes) {
    return json::Value::object({{"type", "number"}, {"format", bytes <= 4 ? "float" : "double"}});
}

json::Value simple_schema(std::string_view type, std::string_view format) {
    json::Value s = json::Value::object({{"type", type}});
    if (!format.empty()) s.set("format", format);
    return s;
}

json::Value array_schema(json::Value items, std::size_t fixed) {
    json::Value s = json::Value::object({{"type", "array"}, {"items", std::move(items)}});
    if (fixed != 0) {
        s.set("minItems", fixed);
        s.set("maxItems", fixed);
    }
    return s;
}

json::Value map_schema(json::Value values) {
    return json::Value::object({{"type", "object"}, {"additionalProperties", std::move(values)}});
}

json::Value nullable(json::Value s) {
    if (json::Value* t = s.find("type")) {
        if (t->is_string()) {
            *t = json::Value::array({*t, "null"});
            return s;
        }
        if (t->is_array()) {
            for (const json::Value& e : t->as_array())
                if (e == json::Value("null")) return s;
            t->push_back("null");
            return s;
        }
    }
    if (s.is_object() && s.size() == 0) return s;  // any value already admits null
    return json::Value::object(
        {{"anyOf", json::Value::array({std::move(s), json::Value::object({{"type", "null"}})})}});
}

json::Value object_schema(json::Value properties, json::Value required) {
    json::Value s =
        json::Value::object({{"type", "object"}, {"properties", std::move(properties)}});
    if (required.size() != 0) s.set("required", std::move(required));
    return s;
}

json::Value enum_schema(json::Value names) {
    return json::Value::object({{"type", "string"}, {"enum", std::move(names)}});
}

json::Value content(std::string_view media_type, json::Value schema) {
    return json::Value::object(
        {{std::string(media_type), json::Value::object({{"schema", std::move(schema)}})}});
}

namespace detail {

void add_query_param(Operation& op, std::string_view name, bool required, json::Value schema) {
    json::Value p = json::Value::object({{"name", name}, {"in", "query"}});
    if (required) p.set("required", true);
    p.set("schema", std::move(schema));
    op.query.push_back(std::move(p));
}

void set_body(Operation& op, std::string_view media_type, json::Value schema) {
    op.reads_request = true;
    op.reads_body = true;
    op.request_body = json::Value::object(
        {{"required", true}, {"content", content(media_type, std::move(schema))}});
}

void add_bearer(Operation& op) { op.bearer = true; }

}  // namespace detail

// ---- The document ------------------------------------------------------------------------

namespace {

std::string_view operation_key(Method m) {
    switch (m) {
        case Method::GET:
            return "get";
        case Method::HEAD:
            return "head";
        case Method::POST:
            return "post";
        case Method::PUT:
            return "put";
        case Method::DELETE:
            return "delete";
        case Method::OPTIONS:
            return "options";
        case Method::TRACE:
            return "trace";
        case Method::PATCH:
            return "patch";
        default:
            return {};
    }
}

// The schema of a typed path parameter (router.hpp): what the router lets through.
json::Value path_param_schema(std::string_view type) {
    if (type == "int") return simple_schema("integer", "int64");
    if (type == "uint") {
        json::Value s = simple_schema("integer", "int64");
        s.set("minimum", 0);
        return s;
    }
    if (type == "float") return simple_schema("number", "double");
    if (type == "uuid") return simple_schema("string", "uuid");
    if (type == "alpha") {
        json::Value s = simple_schema("string");
        s.set("pattern", "^[A-Za-z]+$");
        return s;
    }
    return simple_schema("string");
}

struct PathTemplate {
    std::string path;  // "/items/{id}"
    json::Value params = json::Value::array();
};

// "/items/{id:int}/{*rest}" -> "/items/{id}/{rest}" with a parameter for each.
PathTemplate path_template(std::string_view pattern) {
    PathTemplate t;
    std::size_t i = 0;
    while (i < pattern.size()) {
        const std::size_t open = pattern.find('{', i);
        const std::size_t close = open == std::string_view::npos ? open : pattern.find('}', open);
        if (close == std::string_view::npos) {
            t.path.append(pattern.substr(i));
            break;
        }
        t.path.append(pattern.substr(i, open - i));
        std::string_view inner = pattern.substr(open + 1, close - open - 1);
        const bool rest = !inner.empty() && inner.front() == '*';
        if (rest) inner.remove_prefix(1);
        const std::size_t colon = inner.find(':');
        const std::string_view name = inner.substr(0, colon);
        const std::string_view type =
            colon == std::string_view::npos ? std::string_view{} : inner.substr(colon + 1);
        t.path.append("{").append(name).append("}");
        json::Value p = json::Value::object({{"name", name},
                                             {"in", "path"},
                                             {"required", true},
                                             {"schema", path_param_schema(type)}});
        if (rest) p.set("description", "The rest of the path (may contain '/', may be empty).");
        t.params.push_back(std::move(p));
        i = close + 1;
    }
    return t;
}

struct ProblemKey {};

json::Value problem_details_schema(Schemas&) {
    json::Value error = object_schema(json::Value::object({{"detail", simple_schema("string")},
                                                           {"pointer", simple_schema("string")},
                                                           {"parameter", simple_schema("string")}}),
                                      json::Value::array({"detail"}));
    json::Value props = json::Value::object({
        {"type", simple_schema("string", "uri-reference")},
        {"title", simple_schema("string")},
        {"status", integer_schema(true, 4)},
        {"detail", simple_schema("string")},
        {"instance", simple_schema("string", "uri-reference")},
        {"errors", nullable(array_schema(std::move(error)))},
    });
    json::Value s =
        object_schema(std::move(props), json::Value::array({"type", "title", "status"}));
    s.set("description", "An RFC 9457 problem details object.");
    return s;
}

// Builds one document; the state shared by its operations.
class Builder {
  public:
    Builder(const App& app, const Info& info) : app_(app), info_(info) {}

    json::Value build() {
        json::Value::Object paths;
        std::unordered_map<std::string, std::size_t> path_index;
        for (const RouteDoc& r : vela::detail::route_docs(app_)) {
            if (r.hidden) continue;
            const std::string_view key = operation_key(r.method);
            if (key.empty()) continue;
            PathTemplate t = path_template(r.pattern);
            json::Value op = operation(r, t);
            auto [it, fresh] = path_index.emplace(t.path, paths.size());
            if (fresh) paths.emplace_back(t.path, json::Value::object());
            paths[it->second].second.set(key, std::move(op));
        }

        json::Value doc = json::Value::object({{"openapi", "3.1.0"}});
        json::Value inf = json::Value::object({{"title", info_.title}, {"version", info_.version}});
        if (!info_.description.empty()) inf.set("description", info_.description);
        doc.set("info", std::move(inf));
        if (!info_.servers.empty()) {
            json::Value servers = json::Value::array();
            for (const Server& s : info_.servers) {
                json::Value v = json::Value::object({{"url", s.url}});
                if (!s.description.empty()) v.set("description", s.description);
                servers.push_back(std::move(v));
            }
            doc.set("servers", std::move(servers));
        }
        doc.set("paths", json::Value(std::move(paths)));
        json::Value components = json::Value::object();
        json::Value schemas = schemas_.take();
        if (schemas.size() != 0) components.set("schemas", std::move(schemas));
        if (!security_schemes_.as_object().empty())
            components.set("securitySchemes", std::move(security_schemes_));
        if (components.size() != 0) doc.set("components", std::move(components));
        schemas_.fix_refs(doc);
        return doc;
    }

  private:
    json::Value operation(const RouteDoc& r, PathTemplate& t) {
        Operation found;
        if (r.describe) r.describe(found, schemas_);

        json::Value op = json::Value::object();
        if (!r.tags.empty()) {
            json::Value tags = json::Value::array();
            for (const std::string& tag : r.tags) tags.push_back(tag);
            op.set("tags", std::move(tags));
        }
        if (!r.summary.empty()) op.set("summary", r.summary);
        if (!r.description.empty()) op.set("description", r.description);
        if (!r.operation_id.empty()) {
            auto [it, fresh] = operation_ids_.emplace(r.operation_id, r.pattern);
            if (!fresh)
                throw std::logic_error("openapi: operationId '" + r.operation_id +
                                       "' is given to two routes (" + it->second + " and " +
                                       r.pattern + ")");
            op.set("operationId", r.operation_id);
        }
        json::Value params = std::move(t.params);
        for (json::Value& q : found.query.as_array()) params.push_back(std::move(q));
        if (params.size() != 0) op.set("parameters", std::move(params));
        if (!found.request_body.is_null()) op.set("requestBody", std::move(found.request_body));

        const bool secured = !r.security.empty() || found.bearer;
        op.set("responses", responses(r, found, t.path.find('{') != std::string::npos, secured));
        if (r.deprecated) op.set("deprecated", true);
        if (secured) op.set("security", security(r, found));
        return op;
    }

    json::Value responses(const RouteDoc& r, Operation& found, bool has_params, bool secured) {
        std::vector<std::pair<int, json::Value>> out;
        const auto given = [&](int status) {
            return std::any_of(r.responses.begin(), r.responses.end(),
                               [&](const Reply& x) { return x.status == status; });
        };
        const bool success_given = std::any_of(r.responses.begin(), r.responses.end(),
                                               [](const Reply& x) { return x.status / 100 == 2; });
        if (!success_given) {
            json::Value ok = json::Value::object({{"description", "OK"}});
            if (!found.content.is_null()) ok.set("content", std::move(found.content));
            out.emplace_back(200, std::move(ok));
        }
        for (const Reply& x : r.responses) {
            json::Value v = json::Value::object({{"description", x.description}});
            if (x.content) {
                json::Value c = x.content(schemas_);
                if (!c.is_null()) v.set("content", std::move(c));
            }
            out.emplace_back(x.status, std::move(v));
        }
        const auto error = [&](int status, bool problem_json) {
            if (given(status)) return;
            const std::string_view phrase = reason_phrase(static_cast<Status>(status));
            json::Value v = json::Value::object({{"description", phrase}});
            json::Value c = problem_json ? problem_content() : error_content();
            if (!c.is_null()) v.set("content", std::move(c));
            out.emplace_back(status, std::move(v));
        };
        if (found.reads_request) error(400, true);  // the readers always answer problem+json
        if (secured) error(401, false);
        if (has_params || found.may_not_find) error(404, false);
        if (found.reads_body) error(415, true);
        if (found.validates) error(422, true);  // constraints (VELA_VALIDATE) broken
        error(500, false);
        std::stable_sort(out.begin(), out.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        json::Value::Object obj;
        for (auto& [status, v] : out) obj.emplace_back(std::to_string(status), std::move(v));
        return json::Value(std::move(obj));
    }

    json::Value problem_content() {
        static const char key = 0;
        return content("application/problem+json",
                       schemas_.component(&key, "ProblemDetails", "vela.ProblemDetails",
                                          &problem_details_schema));
    }

    // The framework's own error answers, in the app's error_pages format.
    json::Value error_content() {
        const ErrorPages& pages = app_.error_pages();
        if (pages.render) return {};  // the user's renderer: unknown
        switch (pages.format) {
            case ErrorFormat::problem_json:
                return problem_content();
            case ErrorFormat::html:
                return content("text/html", simple_schema("string"));
            case ErrorFormat::text:
                break;
        }
        return content("text/plain", simple_schema("string"));
    }

    json::Value security(const RouteDoc& r, const Operation& found) {
        json::Value list = json::Value::array();
        const auto require = [&](std::string name, json::Value scheme) {
            if (!security_schemes_.find(name)) security_schemes_.set(name, std::move(scheme));
            for (const json::Value& e : list.as_array())
                if (e.find(name)) return;
            list.push_back(json::Value::object({{std::move(name), json::Value::array()}}));
        };
        const auto bearer = [&] {
            require("bearerAuth",
                    json::Value::object(
                        {{"type", "http"}, {"scheme", "bearer"}, {"bearerFormat", "JWT"}}));
        };
        for (const Security& s : r.security) {
            if (s.kind == Security::Kind::bearer)
                bearer();
            else
                require("cookie_" + sanitized(s.cookie),
                        json::Value::object(
                            {{"type", "apiKey"}, {"in", "cookie"}, {"name", s.cookie}}));
        }
        if (found.bearer) bearer();
        return list;
    }

    const App& app_;
    const Info& info_;
    Schemas schemas_;
    json::Value security_schemes_ = json::Value::object();
    std::unordered_map<std::string, std::string> operation_ids_;  // id -> pattern
};

}  // namespace

json::Value document(const App& app, const Info& info) { return Builder(app, info).build(); }

std::string document_json(const App& app, const Info& info) {
    return json::write(document(app, info));
}

}  // namespace vela::openapi

namespace vela {

namespace {
// The documents openapi_spec() serves, built when the app prepares (every route registered).
struct OpenApiSpecs final : detail::Extension {
    struct Spec {
        openapi::Info info;
        std::once_flag once;
        std::string text;
    };
    std::deque<Spec> specs;  // stable addresses: the routes refer to them

    static void build(const App& app, Spec& s) {
        std::call_once(s.once, [&] { s.text = openapi::document_json(app, s.info); });
    }
    void prepare(App& app) override {
        for (Spec& s : specs) build(app, s);
    }
};
}  // namespace

void openapi_spec(App& app, openapi::Info info) {
    OpenApiSpecs& all = detail::extension<OpenApiSpecs>(app, "the OpenAPI document");
    const std::string path = info.path;
    OpenApiSpecs::Spec& spec = all.specs.emplace_back();
    spec.info = std::move(info);
    app.get(path,
            [&app, &spec](Request&) {
                OpenApiSpecs::build(app, spec);  // already built unless it runs without prepare()
                return Response::json(spec.text);
            })
        .hidden();
}

}  // namespace vela
