#pragma once
// What a route says about itself for the OpenAPI document (vela/ops/openapi.hpp): the
// builder that App::get(...) returns, and the types its handler reads and returns, captured
// at registration.
//
//     app.get("/items/{id:int}", get_item)           // Item get_item(vela::Request&)
//         .summary("Get an item")
//         .tag("items")
//         .response(404, "No such item")
//         .security_bearer();
//
// The handler's signature is read at compile time: Json<T> and Form<T> become the request
// body, Query<T> the query parameters, the return type (Task<T> unwrapped) the 200 response;
// a function pointer that describes them is stored beside the route table. Nothing here is
// read while requests are served: the document is built from it once, at startup or at its
// first request.
//
// The builder also forwards the App's (or the Group's) own methods, so chains written before
// it existed (`app.get(...).get(...)`, `.use(...)`, `.listen(...)`) keep working.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vela/http/method.hpp"
#include "vela/json/json.hpp"
#include "vela/web/handler_traits.hpp"

namespace vela {

class App;
class Group;

namespace openapi {

/// Collects the named schemas (#/components/schemas/Name) while a document is built: each
/// type once, recursive types through their reference.
class Schemas {
  public:
    /// Builds the schema of a component (called once per type).
    using Build = json::Value (*)(Schemas&);

    /// A {"$ref": "#/components/schemas/Name"} to the component of the type `key` (`type`
    /// names it unless `name` is given), built with `build` the first time it is seen.
    json::Value component(const void* key, const std::type_info& type, std::string_view name,
                          Build build);
    /// component() with the name given, and the one used when another type takes it.
    json::Value component(const void* key, std::string name, std::string qualified, Build build);
    /// The components built so far, as the value of "components/schemas". Names are the
    /// types' unqualified names; two types with the same one both get their qualified name.
    json::Value take();
    /// Replaces, in `doc`, the references take() renamed (call after take()).
    void fix_refs(json::Value& doc) const;

  private:
    struct Entry {
        const void* key;
        std::string name;       // the unqualified (or given) name
        std::string qualified;  // the demangled qualified name, for collisions
        json::Value schema;
        bool renamed = false;  // another type has `name`: known by `qualified`
    };
    std::vector<Entry> entries_;
    std::unordered_map<const void*, std::size_t> index_;
    std::unordered_map<std::string, std::size_t> by_name_;      // first entry with a name
    std::vector<std::pair<std::string, std::string>> renamed_;  // ref -> new ref
};

/// What a handler's signature says: filled by the describer captured at registration.
struct Operation {
    /// The "parameters" from Query<T> (path parameters come from the pattern).
    json::Value query = json::Value::array();
    /// The "requestBody" (null: none).
    json::Value request_body;
    /// The "content" of the 200 response (null: not known, e.g. a Response).
    json::Value content;
    /// Reads the query or the body, so a 400 can answer it.
    bool reads_request = false;
    /// Reads a typed body, so a 415 can answer it.
    bool reads_body = false;
    /// Reads a value with constraints (VELA_VALIDATE), so a 422 can answer it.
    bool validates = false;
    /// Takes vela::JwtClaims: bearer authentication, answered 401 without a token.
    bool bearer = false;
    /// Returns a std::optional (or a Task of one): an empty one is answered 404.
    bool may_not_find = false;
};

/// Fills an Operation from a handler type (one instantiation per handler type).
using Describe = void (*)(Operation&, Schemas&);
/// The "content" object of a response type (null when unknown).
using Content = json::Value (*)(Schemas&);

/// A security scheme a route requires (one of the alternatives).
struct Security {
    /// HTTP bearer (a JWT in Authorization), or an API key in a cookie.
    enum class Kind : std::uint8_t { bearer, cookie } kind = Kind::bearer;
    /// The cookie's name (kind == cookie).
    std::string cookie;
};

/// A documented response besides the ones the handler's types give.
struct Reply {
    /// The status code.
    int status = 200;
    /// Its description.
    std::string description;
    /// Its content (nullptr: none).
    Content content = nullptr;
};

/// Everything the document says about one route.
struct RouteDoc {
    /// The method.
    Method method = Method::GET;
    /// The full router pattern ("/api/items/{id:int}").
    std::string pattern;
    /// A short summary.
    std::string summary;
    /// A longer description (CommonMark).
    std::string description;
    /// The operationId (unique in the document).
    std::string operation_id;
    /// Tags grouping operations.
    std::vector<std::string> tags;
    /// Extra or replacing responses, in the order given.
    std::vector<Reply> responses;
    /// Accepted security schemes (any one of them).
    std::vector<Security> security;
    /// Marked deprecated.
    bool deprecated = false;
    /// Left out of the document (the document itself, static files, WebSockets).
    bool hidden = false;
    /// Describes the handler's parameters and result.
    Describe describe = nullptr;
};

/// A server the API is reached at.
struct Server {
    /// Its URL ("https://api.example.com", "/").
    std::string url;
    /// What it is ("production").
    std::string description{};
};

/// The document's "info" and where it is served (vela::openapi_spec, openapi::document).
struct Info {
    /// info.title.
    std::string title = "API";
    /// info.version (of the API, not of OpenAPI).
    std::string version = "1.0.0";
    /// info.description (CommonMark), left out when empty.
    std::string description{};
    /// "servers", left out when empty.
    std::vector<Server> servers{};
    /// Where vela::openapi_spec serves the document.
    std::string path = "/openapi.json";
};

// ---- Schemas of C++ types ---------------------------------------------------------------

/// {"type":"integer"} with a format and a minimum for unsigned types.
json::Value integer_schema(bool is_signed, std::size_t bytes);
/// {"type":"number", "format":"float"|"double"}.
json::Value number_schema(std::size_t bytes);
/// {"type": `type`}, with "format" when not empty.
json::Value simple_schema(std::string_view type, std::string_view format = {});
/// {"type":"array","items":items}, with minItems = maxItems = `fixed` when not 0.
json::Value array_schema(json::Value items, std::size_t fixed = 0);
/// {"type":"object","additionalProperties":values}.
json::Value map_schema(json::Value values);
/// `s` that also admits null: a type array (["integer","null"]) or an anyOf with a $ref.
json::Value nullable(json::Value s);
/// {"type":"object","properties":...,"required":[...]} (required left out when empty).
json::Value object_schema(json::Value properties, json::Value required);
/// {"type":"string","enum":[names...]}.
json::Value enum_schema(json::Value names);
/// {`media_type`: {"schema": schema}}.
json::Value content(std::string_view media_type, json::Value schema);

namespace detail {

template <class T>
inline constexpr char type_key = 0;

template <class T>
struct is_json_param : std::false_type {};
template <class T, json::ParseOptions O>
struct is_json_param<Json<T, O>> : std::true_type {
    using type = T;
};
template <class T>
struct is_query_param : std::false_type {};
template <class T>
struct is_query_param<Query<T>> : std::true_type {
    using type = T;
};
template <class T>
struct is_form_param : std::false_type {};
template <class T, std::size_t N>
struct is_form_param<Form<T, N>> : std::true_type {
    using type = T;
};

// A name the user chose for a type's schema: `constexpr std::string_view
// vela_schema_name(const T*) { return "Name"; }` in the type's namespace.
template <class T>
constexpr std::string_view schema_name() {
    if constexpr (requires(const T* p) {
                      { vela_schema_name(p) } -> std::convertible_to<std::string_view>;
                  })
        return vela_schema_name(static_cast<const T*>(nullptr));
    else
        return {};
}

}  // namespace detail

template <class T>
json::Value schema_of(Schemas& s);

namespace detail {

// The schema of a member: an optional one also admits null (written as null when empty).
template <class M>
json::Value member_schema(Schemas& s) {
    if constexpr (json::detail::is_optional<M>::value)
        return nullable(schema_of<typename M::value_type>(s));
    else
        return schema_of<M>(s);
}

// States rule `r` (VELA_VALIDATE) on the schema of a member of type M.
template <class M, class R>
void describe_rule(const R& r, json::Value& schema) {
    if constexpr (json::detail::is_optional<M>::value) {
        describe_rule<typename M::value_type>(r, schema);
    } else if constexpr (requires { r.rules; }) {  // each(...): the elements' schema
        json::Value* items =
            schema.find(json::detail::is_string_map<M>::value ? "additionalProperties" : "items");
        if (!items || !items->is_object()) return;
        if constexpr (json::detail::is_string_map<M>::value)
            std::apply(
                [&](const auto&... x) { (describe_rule<typename M::mapped_type>(x, *items), ...); },
                r.rules);
        else
            std::apply(
                [&](const auto&... x) { (describe_rule<typename M::value_type>(x, *items), ...); },
                r.rules);
    } else if constexpr (requires { r.template describe_for<M>(schema); }) {
        r.template describe_for<M>(schema);
    } else {
        r.describe(schema);
    }
}

// The schema of member `f`, with what its rules say.
template <class F>
json::Value field_schema(Schemas& s, const F& f) {
    using M = typename F::member_type;
    json::Value schema = member_schema<M>(s);
    json::for_each_rule(f, [&](const auto& r) { describe_rule<M>(r, schema); });
    return schema;
}

template <json::Reflected T>
json::Value struct_schema(Schemas& s) {
    json::Value props = json::Value::object();
    json::Value required = json::Value::array();
    const auto add = [&](const auto& f) {
        props.set(f.name, field_schema(s, f));
        if (json::detail::is_required(f)) required.push_back(f.name);
    };
    std::apply([&](const auto&... f) { (add(f), ...); }, json::fields_of<T>);
    json::Value out = object_schema(std::move(props), std::move(required));
    if constexpr (json::rejects_unknown<T>()) out.set("additionalProperties", false);
    return out;
}

template <json::ReflectedEnum E>
json::Value enum_names(Schemas&) {
    json::Value names = json::Value::array();
    for (const auto& e : json::enumerators_of<E>) names.push_back(e.name);
    return enum_schema(std::move(names));
}

}  // namespace detail

/// The JSON Schema of a C++ type the JSON codec reads or writes: reflected structs and
/// VELA_ENUM enums as components, containers inline, json::Value as any value ({}).
template <class T>
json::Value schema_of(Schemas& s) {
    using namespace json::detail;
    if constexpr (std::is_same_v<T, bool>) {
        return simple_schema("boolean");
    } else if constexpr (is_integer_v<T>) {
        return integer_schema(std::is_signed_v<T>, sizeof(T));
    } else if constexpr (std::is_floating_point_v<T>) {
        return number_schema(sizeof(T));
    } else if constexpr (is_text_v<T>) {
        return simple_schema("string");
    } else if constexpr (is_sys_time<T>::value) {
        return simple_schema("string", "date-time");
    } else if constexpr (json::Reflected<T>) {
        return s.component(&detail::type_key<T>, typeid(T), detail::schema_name<T>(),
                           &detail::struct_schema<T>);
    } else if constexpr (json::ReflectedEnum<T>) {
        return s.component(&detail::type_key<T>, typeid(T), detail::schema_name<T>(),
                           &detail::enum_names<T>);
    } else if constexpr (is_optional<T>::value) {
        return nullable(schema_of<typename T::value_type>(s));
    } else if constexpr (is_vector<T>::value) {
        return array_schema(schema_of<typename T::value_type>(s));
    } else if constexpr (is_array<T>::value) {
        return array_schema(schema_of<typename T::value_type>(s), std::tuple_size_v<T>);
    } else if constexpr (is_string_map<T>::value) {
        return map_schema(schema_of<typename T::mapped_type>(s));
    } else {
        return json::Value::object();  // json::Value, json::Raw, custom codecs: any value
    }
}

/// The "content" of a response of type T: application/json for JSON results, text/plain
/// for strings, null for a Response, a Status or a status code (nothing known); a
/// std::optional's is its value's (the empty one is a 404, see Operation::may_not_find).
template <class R>
json::Value content_of(Schemas& s) {
    using T = std::remove_cvref_t<R>;
    if constexpr (vela::detail::is_task<T>::value) {
        return content_of<typename vela::detail::is_task<T>::result>(s);
    } else if constexpr (json::detail::is_optional<T>::value) {
        return content_of<typename T::value_type>(s);
    } else if constexpr (detail::is_json_param<T>::value) {
        return content("application/json", schema_of<typename detail::is_json_param<T>::type>(s));
    } else if constexpr (json::detail::is_text_v<std::decay_t<T>>) {
        return content("text/plain", simple_schema("string"));
    } else if constexpr (JsonResult<T>) {
        return content("application/json", schema_of<T>(s));
    } else {
        return {};
    }
}

namespace detail {

/// Adds one query parameter per member of T (the readers' rule: only VELA_REQUIRED members
/// are required; a std::vector member is a repeated parameter).
template <json::Reflected T>
void add_query(Operation& op, Schemas& s);
/// Appends {"name","in":"query"[,"required":true],"schema"}.
void add_query_param(Operation& op, std::string_view name, bool required, json::Value schema);
/// Sets the request body: {"required":true,"content":{media_type:{"schema":schema}}}.
void set_body(Operation& op, std::string_view media_type, json::Value schema);
/// Records a JwtClaims parameter.
void add_bearer(Operation& op);

template <json::Reflected T>
void add_query(Operation& op, Schemas& s) {
    const auto add = [&](const auto& f) {
        using M = typename std::remove_cvref_t<decltype(f)>::member_type;
        if constexpr (json::detail::is_optional<M>::value) {  // ?n= is nullopt, not null
            json::Value schema = schema_of<typename M::value_type>(s);
            json::for_each_rule(f, [&](const auto& r) { describe_rule<M>(r, schema); });
            add_query_param(op, f.name, false, std::move(schema));
        } else {
            add_query_param(op, f.name, json::detail::is_required(f), field_schema(s, f));
        }
    };
    std::apply([&](const auto&... f) { (add(f), ...); }, json::fields_of<T>);
}

template <class A>
void describe_param(Operation& op, Schemas& s) {
    using P = std::remove_cvref_t<A>;
    if constexpr (is_json_param<P>::value) {
        op.validates |= json::has_rules_v<typename is_json_param<P>::type>;
        set_body(op, "application/json", schema_of<typename is_json_param<P>::type>(s));
    } else if constexpr (is_query_param<P>::value) {
        op.reads_request = true;
        op.validates |= json::has_rules_v<typename is_query_param<P>::type>;
        add_query<typename is_query_param<P>::type>(op, s);
    } else if constexpr (is_form_param<P>::value) {
        op.validates |= json::has_rules_v<typename is_form_param<P>::type>;
        set_body(op, "application/x-www-form-urlencoded",
                 schema_of<typename is_form_param<P>::type>(s));
    } else if constexpr (std::is_same_v<P, FormData>) {
        set_body(op, "application/x-www-form-urlencoded", map_schema(simple_schema("string")));
    } else if constexpr (requires(Operation & o, Schemas & sc) { P::describe_openapi(o, sc); }) {
        P::describe_openapi(op, s);  // a custom from_request type that documents itself
    }
}

// The result type R of a handler, a Task's unwrapped: a std::optional (answered 404 when
// empty).
template <class R>
constexpr bool optional_result() {
    using T = std::remove_cvref_t<R>;
    if constexpr (vela::detail::is_task<T>::value)
        return json::detail::is_optional<
            std::remove_cvref_t<typename vela::detail::is_task<T>::result>>::value;
    else
        return json::detail::is_optional<T>::value;
}

template <class R, class... A>
void describe_signature(Operation& op, Schemas& s, vela::detail::signature<R, A...>) {
    (describe_param<A>(op, s), ...);
    op.content = content_of<R>(s);
    op.may_not_find = optional_result<R>();
}

template <class Fn>
void describe_handler(Operation& op, Schemas& s) {
    if constexpr (vela::detail::UndeducibleCallable<Fn>) {
        // refused by make_handler's static_assert
    } else if constexpr (vela::detail::ExtractingHandler<Fn>) {
        describe_signature(op, s, typename vela::detail::signature_of<Fn>::type{});
    } else {
        op.content = content_of<vela::detail::handler_result_t<Fn>>(s);
        op.may_not_find = optional_result<vela::detail::handler_result_t<Fn>>();
    }
}

}  // namespace detail

/// The describer of a handler of type F (what App::route stores).
template <class F>
constexpr Describe describer() noexcept {
    return &detail::describe_handler<std::decay_t<F>>;
}

}  // namespace openapi

/// The route just registered: documents it (see above) and forwards the App's or Group's
/// methods, so registration chains go on. Valid while the App lives.
template <class Owner>
class RouteRef {
    using Handle = std::conditional_t<std::is_same_v<Owner, App>, App*, Owner>;

  public:
    /// Refers to the route documented by `doc`, registered on `owner`.
    RouteRef(Handle owner, openapi::RouteDoc* doc) noexcept : owner_(owner), doc_(doc) {}

    /// A short summary of what the operation does.
    RouteRef& summary(std::string_view text) {
        doc_->summary = text;
        return *this;
    }
    /// A longer description (CommonMark).
    RouteRef& description(std::string_view text) {
        doc_->description = text;
        return *this;
    }
    /// The operationId (unique in the document; a duplicate fails the document build).
    RouteRef& operation_id(std::string_view id) {
        doc_->operation_id = id;
        return *this;
    }
    /// Adds a tag (operations are grouped by tag).
    RouteRef& tag(std::string_view name) {
        doc_->tags.emplace_back(name);
        return *this;
    }
    /// Marks the operation deprecated.
    RouteRef& deprecated(bool yes = true) {
        doc_->deprecated = yes;
        return *this;
    }
    /// Documents response `status` without a body ("204", "404"...). A 2xx one replaces the
    /// 200 the handler's return type gives.
    RouteRef& response(int status, std::string_view description) {
        doc_->responses.push_back(openapi::Reply{status, std::string(description), nullptr});
        return *this;
    }
    /// Documents response `status` with a body of type T (JSON for JSON results, text for
    /// strings): `.response<Item>(201, "Created")`.
    template <class T>
    RouteRef& response(int status, std::string_view description) {
        doc_->responses.push_back(
            openapi::Reply{status, std::string(description), &openapi::content_of<T>});
        return *this;
    }
    /// Requires a bearer token (a JWT in Authorization: Bearer); calls add alternatives.
    RouteRef& security_bearer() {
        doc_->security.push_back(openapi::Security{openapi::Security::Kind::bearer, {}});
        return *this;
    }
    /// Requires a session cookie named `name`; calls add alternatives.
    RouteRef& security_cookie(std::string_view name) {
        doc_->security.push_back(
            openapi::Security{openapi::Security::Kind::cookie, std::string(name)});
        return *this;
    }
    /// Leaves the route out of the document.
    RouteRef& hidden(bool yes = true) {
        doc_->hidden = yes;
        return *this;
    }
    /// What is recorded about the route.
    const openapi::RouteDoc& doc() const noexcept { return *doc_; }

    // ---- The owner's methods, so chains go on ----
    /// Owner::route.
    template <class... A>
    decltype(auto) route(A&&... a) {
        return owner().route(std::forward<A>(a)...);
    }
    /// Owner::get.
    template <class... A>
    decltype(auto) get(A&&... a) {
        return owner().get(std::forward<A>(a)...);
    }
    /// Owner::post.
    template <class... A>
    decltype(auto) post(A&&... a) {
        return owner().post(std::forward<A>(a)...);
    }
    /// Owner::put.
    template <class... A>
    decltype(auto) put(A&&... a) {
        return owner().put(std::forward<A>(a)...);
    }
    /// Owner::patch.
    template <class... A>
    decltype(auto) patch(A&&... a) {
        return owner().patch(std::forward<A>(a)...);
    }
    /// Owner::del.
    template <class... A>
    decltype(auto) del(A&&... a) {
        return owner().del(std::forward<A>(a)...);
    }
    /// Owner::head.
    template <class... A>
    decltype(auto) head(A&&... a) {
        return owner().head(std::forward<A>(a)...);
    }
    /// Owner::options (a route, or App's server options).
    template <class... A>
    decltype(auto) options(A&&... a) {
        return owner().options(std::forward<A>(a)...);
    }
    /// Owner::streaming.
    template <class... A>
    decltype(auto) streaming(A&&... a) {
        return owner().streaming(std::forward<A>(a)...);
    }
    /// Owner::use.
    template <class... A>
    decltype(auto) use(A&&... a) {
        return owner().use(std::forward<A>(a)...);
    }
    /// Owner::group.
    template <class... A>
    decltype(auto) group(A&&... a) {
        return owner().group(std::forward<A>(a)...);
    }
    /// Owner::ws.
    template <class... A>
    decltype(auto) ws(A&&... a) {
        return owner().ws(std::forward<A>(a)...);
    }
    /// Owner::static_files.
    template <class... A>
    decltype(auto) static_files(A&&... a) {
        return owner().static_files(std::forward<A>(a)...);
    }
    /// App::listen.
    template <class... A>
    decltype(auto) listen(A&&... a) {
        return owner().listen(std::forward<A>(a)...);
    }
    /// App::listen_tls.
    template <class... A>
    decltype(auto) listen_tls(A&&... a) {
        return owner().listen_tls(std::forward<A>(a)...);
    }
    /// App::error_pages.
    template <class... A>
    decltype(auto) error_pages(A&&... a) {
        return owner().error_pages(std::forward<A>(a)...);
    }
    /// App::run.
    template <class... A>
    decltype(auto) run(A&&... a) {
        return owner().run(std::forward<A>(a)...);
    }
    /// App::start.
    template <class... A>
    decltype(auto) start(A&&... a) {
        return owner().start(std::forward<A>(a)...);
    }
    /// The App (for an App's route).
    operator App&() const noexcept requires std::is_same_v<Owner, App> { return *owner_; }
    /// The Group (a handle; for a Group's route).
    template <class G>
    requires(std::is_same_v<G, Owner> && !std::is_same_v<Owner, App>) operator G() const noexcept {
        return owner_;
    }

  private:
    Owner& owner() noexcept {
        if constexpr (std::is_same_v<Owner, App>)
            return *owner_;
        else
            return owner_;
    }
    Handle owner_;
    openapi::RouteDoc* doc_;
};

}  // namespace vela
