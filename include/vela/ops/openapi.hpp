#pragma once
// The OpenAPI 3.1 document of an App, generated from its routes.
//
//     struct Item { std::int64_t id; std::string name; std::optional<std::string> note; };
//     VELA_REFLECT(Item, VELA_REQUIRED(id), VELA_REQUIRED(name), note)
//
//     vela::App app;
//     app.get("/items/{id:int}", [](vela::Request& r) -> Item { ... })
//         .summary("Get an item").tag("items").response(404, "No such item");
//     app.post("/items", [](vela::Json<Item> item) { return item; }).security_bearer();
//     vela::openapi_spec(app, {.title = "Items", .version = "1.2.0"});   // GET /openapi.json
//
// What the document says, per route (hidden routes, WebSockets and static files left out):
//   - path parameters from the pattern: {id:int} integer, {n:uint} integer >= 0, {x:float}
//     number, {u:uuid} string/uuid, {a:alpha} string [A-Za-z]+, {*rest} string;
//   - query parameters from Query<T>, a request body from Json<T> (application/json) or
//     Form<T> / FormData (application/x-www-form-urlencoded); `required` follows the readers'
//     rule: only VELA_REQUIRED members are required (a std::optional member also admits null);
//   - the 200 response from the return type (Task<T> unwrapped): reflected structs, vectors,
//     maps (additionalProperties), enums, time points (date-time) as application/json,
//     strings as text/plain, a Response or a Status as a 200 without a known body;
//   - the error answers the framework gives: 400 (a typed parameter failed) and 415 (a typed
//     body of another Content-Type) as application/problem+json; 404 for routes with path
//     parameters and 500 always, in the app's error_pages format;
//   - summary, description, tags, operationId, deprecated, extra responses and security
//     (bearer JWT, cookie session) from the route builder (route_doc.hpp).
// Reflected types and enums are components (#/components/schemas/Name), each once, named by
// their unqualified C++ name (or `vela_schema_name(const T*)` found by ADL); a recursive type
// refers to itself.
//
// Building costs nothing while requests are served: the document is made once, from what
// registration recorded beside the route table.

#include <string>

#include "vela/json/value.hpp"
#include "vela/web/app.hpp"
#include "vela/web/route_doc.hpp"

namespace vela::openapi {

/// The OpenAPI 3.1 document of `app`'s routes (call once the routes are registered). Throws
/// std::logic_error when two routes have the same operationId.
json::Value document(const App& app, const Info& info = {});

/// document() written as JSON text.
std::string document_json(const App& app, const Info& info = {});

}  // namespace vela::openapi

namespace vela {

/// Serves the OpenAPI 3.1 document of `app`'s routes at info.path (/openapi.json), built once
/// when the app starts (a repeated operationId stops the start). Before run(); throws
/// std::logic_error after. (Not `vela::openapi`: that is this header's namespace.)
void openapi_spec(App& app, openapi::Info info = {});

}  // namespace vela
