#include "vela/ops/openapi_ui.hpp"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "vela/base/html.hpp"
#include "vela/json/codec.hpp"
#include "vela/web/app.hpp"

// Set by CMakeLists.txt: where `cmake --install` puts the files, and where
// scripts/install-npm put them in the source tree this library was built from.
#ifndef VELA_SWAGGER_UI_INSTALL_DIR
#define VELA_SWAGGER_UI_INSTALL_DIR ""
#endif
#ifndef VELA_SWAGGER_UI_BUILD_DIR
#define VELA_SWAGGER_UI_BUILD_DIR ""
#endif

namespace vela {

namespace {

constexpr std::string_view kBundle = "swagger-ui-bundle.js";

bool has_files(const std::string& dir) {
    return !dir.empty() && ::access(fmt::format("{}/{}", dir, kBundle).c_str(), R_OK) == 0;
}

std::runtime_error missing(std::string_view where) {
    return std::runtime_error(fmt::format(
        "Swagger UI files not found ({} has no {}): run scripts/install-npm from the vela "
        "source tree, or point VELA_SWAGGER_UI_DIR at a copy of the npm package swagger-ui-dist",
        where, kBundle));
}

// The page: our own, so Swagger UI's sample index.html (the petstore) is never served.
std::string page(std::string_view base, std::string_view title) {
    const std::string t = html_escape(title);
    const std::string b = html_escape(base);
    return fmt::format(R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{0}</title>
<link rel="stylesheet" href="{1}/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="{1}/assets/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="{1}/assets/favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{1}/assets/swagger-ui-bundle.js"></script>
<script src="{1}/swagger-initializer.js"></script>
</body>
</html>
)",
                       t, b);
}

// Points Swagger UI at the document (a separate script: no inline code for a CSP to refuse).
std::string initializer(std::string_view base, std::string_view spec_url) {
    return fmt::format(R"(window.addEventListener("load", function () {{
  window.ui = SwaggerUIBundle({{
    url: {0},
    dom_id: "#swagger-ui",
    deepLinking: true,
    oauth2RedirectUrl: window.location.origin + {1},
    presets: [SwaggerUIBundle.presets.apis]
  }});
}});
)",
                       json::write(std::string(spec_url)),
                       json::write(fmt::format("{}/assets/oauth2-redirect.html", base)));
}

Response text_response(const std::shared_ptr<const std::string>& body, std::string_view type) {
    Response r;
    r.set_body(*body);
    r.set_content_type(type);
    // The page and script change with the app (a new spec URL, a new vela): revalidate.
    r.set_header("Cache-Control", "no-cache");
    return r;
}

}  // namespace

std::string swagger_ui_dir() {
    if (const char* env = std::getenv("VELA_SWAGGER_UI_DIR"); env && *env) {
        if (!has_files(env)) throw missing(fmt::format("VELA_SWAGGER_UI_DIR={}", env));
        return env;
    }
    if (has_files(VELA_SWAGGER_UI_INSTALL_DIR)) return VELA_SWAGGER_UI_INSTALL_DIR;
    if (has_files(VELA_SWAGGER_UI_BUILD_DIR)) return VELA_SWAGGER_UI_BUILD_DIR;
    throw missing(
        fmt::format("neither {} nor {}", VELA_SWAGGER_UI_INSTALL_DIR, VELA_SWAGGER_UI_BUILD_DIR));
}

void openapi_ui(App& app, std::string_view path, OpenApiUiOptions options) {
    std::string dir = options.assets_dir;
    if (dir.empty()) {
        dir = swagger_ui_dir();
    } else if (!has_files(dir)) {
        throw missing(dir);
    }
    std::string base(path);
    while (!base.empty() && base.back() == '/') base.pop_back();
    auto html = std::make_shared<const std::string>(page(base, options.title));
    auto script = std::make_shared<const std::string>(initializer(base, options.spec_url));
    // Hidden: the documentation is not part of the API it documents.
    auto serve_page = [html] { return text_response(html, mime::html); };
    app.get(base.empty() ? "/" : base, serve_page).hidden();
    if (!base.empty()) app.get(base + "/", serve_page).hidden();
    app.get(base + "/swagger-initializer.js",
            [script] { return text_response(script, "text/javascript; charset=utf-8"); })
        .hidden();
    app.static_files(base + "/assets", dir, {.index = {}});
}

}  // namespace vela
