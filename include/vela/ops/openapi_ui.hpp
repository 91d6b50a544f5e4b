#pragma once
// Swagger UI for an app's OpenAPI document, served by the app itself (no CDN).
//
//     vela::openapi_ui(app, "/docs");                       // reads /openapi.json
//     vela::openapi_ui(app, "/api/docs", {.spec_url = "/api/openapi.json", .title = "Todo"});
//
// The page at /docs (and /docs/) is ours; it loads swagger-ui-bundle.js and swagger-ui.css
// from /docs/assets/, a static mount of the swagger-ui-dist files (gzip and brotli siblings
// included), and a small script at /docs/swagger-initializer.js that points Swagger UI at the
// document. The page has no inline script, so a strict Content-Security-Policy
// (script-src 'self') keeps working.
//
// The files come from the npm package swagger-ui-dist, which scripts/install-npm installs into
// build/npm/swagger-ui and `cmake --install` copies to <prefix>/share/vela/swagger-ui. vela
// looks for swagger-ui-bundle.js in $VELA_SWAGGER_UI_DIR when it is set (there only), else in
// share/vela/swagger-ui found from where vela itself is, so a moved prefix still works: beside
// libvela.so's directory (the shared library), beside the program's (<exe dir>/../share: the
// static libraries linked into a program installed in <prefix>/bin), in the prefix
// find_package(vela) found (below), then in the prefix vela was configured for, then in the
// build tree it was built in. When they are missing the app
// does not start: run() logs one line saying what to do and returns 1 (start() throws it); the
// in-process test client still serves the page.

#include <string>
#include <string_view>

namespace vela {

class App;

/// What openapi_ui() serves.
struct OpenApiUiOptions {
    /// The URL of the OpenAPI document the page loads (absolute path or full URL).
    std::string spec_url = "/openapi.json";
    /// The page's <title>.
    std::string title = "API documentation";
    /// The directory holding swagger-ui-bundle.js and swagger-ui.css (empty: swagger_ui_dir()).
    std::string assets_dir{};
};

/// The directory where Swagger UI's files were found (see above), or "" when none has them.
std::string swagger_ui_dir();

namespace detail {
/// Adds `dir` to the places swagger_ui_dir() looks in, after those found from vela's own
/// location (see VELA_PACKAGE_SWAGGER_UI_DIR below). Returns true.
bool add_swagger_ui_dir(const char* dir) noexcept;
}  // namespace detail

/// Serves Swagger UI at `path` ("/docs"): GET path and path/ (the page),
/// path/swagger-initializer.js and path/assets/... (the files). Before run(). When the files
/// are missing (options.assets_dir or swagger_ui_dir()), starting the app fails with one line
/// naming where it looked and what to do: run() logs it and returns 1.
void openapi_ui(App& app, std::string_view path = "/docs", OpenApiUiOptions options = {});

}  // namespace vela

// find_package(vela) defines VELA_PACKAGE_SWAGGER_UI_DIR for the program's sources: the
// share/vela/swagger-ui of the prefix the package was found in, wherever that prefix was moved.
// The static libraries cannot tell where they were installed once linked into a program that
// lives elsewhere (./build/app); this tells them, before main().
#ifdef VELA_PACKAGE_SWAGGER_UI_DIR
namespace vela::detail {
[[maybe_unused]] static const bool package_swagger_ui_dir =
    add_swagger_ui_dir(VELA_PACKAGE_SWAGGER_UI_DIR);
}  // namespace vela::detail
#endif
