#include "vela/ops/openapi_ui.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "vela/base/html.hpp"
#include "vela/json/codec.hpp"
#include "vela/web/app.hpp"

// Set by CMakeLists.txt: where `cmake --install` puts the files, where scripts/install-npm put
// them in the source tree this library was built from, and the way from the installed library
// directory and program directory to the installed files (relative paths: a moved prefix).
#ifndef VELA_SWAGGER_UI_INSTALL_DIR
#define VELA_SWAGGER_UI_INSTALL_DIR ""
#endif
#ifndef VELA_SWAGGER_UI_BUILD_DIR
#define VELA_SWAGGER_UI_BUILD_DIR ""
#endif
#ifndef VELA_SWAGGER_UI_FROM_LIBDIR
#define VELA_SWAGGER_UI_FROM_LIBDIR "../share/vela/swagger-ui"
#endif
#ifndef VELA_SWAGGER_UI_FROM_BINDIR
#define VELA_SWAGGER_UI_FROM_BINDIR "../share/vela/swagger-ui"
#endif

namespace vela {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kBundle = "swagger-ui-bundle.js";

bool has_files(const std::string& dir) {
    return !dir.empty() && ::access(fmt::format("{}/{}", dir, kBundle).c_str(), R_OK) == 0;
}

// `dir`/`relative`, normalised ("/opt/v/lib/../share/x" is "/opt/v/share/x"); "" without `dir`.
std::string beside(const fs::path& dir, std::string_view relative) {
    if (dir.empty()) return {};
    return (dir / relative).lexically_normal().string();
}

// The directory of the running program (/proc/self/exe, symbolic links resolved).
fs::path program_dir() {
    std::error_code ec;
    const fs::path exe = fs::canonical("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

// The directory of the shared library holding this code; empty when it is linked statically
// into the program (the program's directory stands for it then).
fs::path library_dir() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<const void*>(&has_files), &info) == 0 || !info.dli_fname ||
        !*info.dli_fname)
        return {};
    std::error_code ec;
    const fs::path lib = fs::canonical(info.dli_fname, ec);
    const fs::path exe = fs::canonical("/proc/self/exe", ec);
    if (lib.empty() || lib == exe) return {};
    return lib.parent_path();
}

// The directories detail::add_swagger_ui_dir() added (the program's static initialisers).
struct Added {
    std::mutex mu;
    std::vector<std::string> dirs;
};
Added& added() {
    static Added a;
    return a;
}

// Where swagger_ui_dir() looks, in order, when VELA_SWAGGER_UI_DIR is not set.
std::vector<std::string> candidates() {
    std::vector<std::string> all = {beside(library_dir(), VELA_SWAGGER_UI_FROM_LIBDIR),
                                    beside(program_dir(), VELA_SWAGGER_UI_FROM_BINDIR)};
    {
        std::lock_guard lock(added().mu);
        all.insert(all.end(), added().dirs.begin(), added().dirs.end());
    }
    all.emplace_back(VELA_SWAGGER_UI_INSTALL_DIR);
    all.emplace_back(VELA_SWAGGER_UI_BUILD_DIR);
    std::vector<std::string> dirs;
    for (std::string& d : all)
        if (!d.empty() && std::find(dirs.begin(), dirs.end(), d) == dirs.end())
            dirs.push_back(std::move(d));
    return dirs;
}

// Why no Swagger UI is served at `path`, and what to do (one line).
std::string missing(std::string_view path, std::string_view where) {
    const bool env = where.starts_with("VELA_SWAGGER_UI_DIR=");
    return fmt::format(
        "Swagger UI for {0} not found (no {1} in {2}): {3}", path.empty() ? "/" : path, kBundle,
        where,
        env ? "point VELA_SWAGGER_UI_DIR at a copy of the npm package swagger-ui-dist, or unset "
              "it to use vela's installed files"
            : "install vela with its Swagger UI files (scripts/install-npm before cmake "
              "--install, or the libvela-swagger-ui package), or set VELA_SWAGGER_UI_DIR to a "
              "copy of the npm package swagger-ui-dist");
}

// Where openapi_ui() looked without finding the files: reported when the app starts (run()
// logs it as one line and returns 1; start() throws it), not where the route is added.
class MissingSwaggerUi final : public detail::Extension {
  public:
    std::string error;  // the first openapi_ui() whose files were not found

    void starting(App&, unsigned&) override {
        if (!error.empty()) throw std::runtime_error(error);
    }
};

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

bool detail::add_swagger_ui_dir(const char* dir) noexcept {
    try {
        if (dir && *dir) {
            std::lock_guard lock(added().mu);
            added().dirs.push_back(fs::path(dir).lexically_normal().string());
        }
    } catch (...) {  // out of memory before main(): the other places are still searched
    }
    return true;
}

std::string swagger_ui_dir() {
    if (const char* env = std::getenv("VELA_SWAGGER_UI_DIR"); env && *env)
        return has_files(env) ? std::string(env) : std::string();
    for (const std::string& d : candidates())
        if (has_files(d)) return d;
    return {};
}

void openapi_ui(App& app, std::string_view path, OpenApiUiOptions options) {
    std::string base(path);
    while (!base.empty() && base.back() == '/') base.pop_back();
    std::string dir = options.assets_dir.empty() ? swagger_ui_dir() : options.assets_dir;
    if (!has_files(dir)) {
        std::string where = options.assets_dir;
        if (where.empty()) {
            if (const char* env = std::getenv("VELA_SWAGGER_UI_DIR"); env && *env) {
                where = fmt::format("VELA_SWAGGER_UI_DIR={}", env);
            } else {
                const std::vector<std::string> dirs = candidates();
                for (std::size_t i = 0; i < dirs.size(); ++i)
                    where.append(i == 0                 ? ""
                                 : i + 1 == dirs.size() ? " or "
                                                        : ", ")
                        .append(dirs[i]);
            }
        }
        MissingSwaggerUi& m = detail::extension<MissingSwaggerUi>(app, "Swagger UI");
        if (m.error.empty()) m.error = missing(base, where);
        dir.clear();
    }
    auto html = std::make_shared<const std::string>(page(base, options.title));
    auto script = std::make_shared<const std::string>(initializer(base, options.spec_url));
    // Hidden: the documentation is not part of the API it documents.
    auto serve_page = [html] { return text_response(html, mime::html); };
    app.get(base.empty() ? "/" : base, serve_page).hidden();
    if (!base.empty()) app.get(base + "/", serve_page).hidden();
    app.get(base + "/swagger-initializer.js",
            [script] { return text_response(script, "text/javascript; charset=utf-8"); })
        .hidden();
    if (!dir.empty()) app.static_files(base + "/assets", dir, {.index = {}});
}

}  // namespace vela
