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
// build/npm/swagger-ui and `cmake --install` copies to <prefix>/share/vela/swagger-ui.

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

/// The directory Swagger UI's files are taken from when OpenApiUiOptions::assets_dir is
/// empty: $VELA_SWAGGER_UI_DIR when set, else the installed share/vela/swagger-ui when it
/// holds the files, else the build tree's build/npm/swagger-ui. Throws std::runtime_error
/// (one line: where it looked and what to run) when none holds swagger-ui-bundle.js.
std::string swagger_ui_dir();

/// Serves Swagger UI at `path` ("/docs"): GET path and path/ (the page),
/// path/swagger-initializer.js and path/assets/... (the files). Before run(). Throws
/// std::runtime_error (one line) when the files are missing.
void openapi_ui(App& app, std::string_view path = "/docs", OpenApiUiOptions options = {});

}  // namespace vela
