#pragma once
// A set of templates loaded from a folder, with partials resolved by name within the set.
//
//     vela::tmpl::Templates views{"templates/"};            // every templates/**/*.mustache
//     app.get("/fortunes", [&](vela::Request&) -> vela::Response {
//         return views.response("fortunes", Page{load_fortunes()});
//     });
//
// Names are paths relative to the folder without the extension ("fortunes",
// "mail/welcome"), and {{>name}} finds the template of that name in the same set.
//
// Threading: the constructor loads and compiles everything, so a syntax error, a bad folder
// or an include of a template that is not in the set fails at startup. Without reload the
// set never changes afterwards: every loop renders from it at once, without locks. With
// `reload` (development) each render first checks the files' modification times and sizes
// under a mutex and recompiles what changed; a render works on a snapshot of the set, so a
// reload on another thread never frees a template in use.

#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "vela/http/response.hpp"
#include "vela/template/template.hpp"

namespace vela::tmpl {

/// How a Templates set loads its files.
struct TemplatesOptions {
    /// Check the files before each render and recompile the changed ones (development).
    bool reload = false;
    /// The file name ending of a template.
    std::string extension = ".mustache";
};

/// A name that is not in the set, or a folder that cannot be read.
class TemplateNotFound : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// Templates compiled from the files of one folder (thread-safe; see above).
class Templates {
  public:
    /// Loads every `*<extension>` file under `dir`; throws TemplateError for a syntax error,
    /// TemplateNotFound for a bad folder or an include of a name that is not in the set.
    explicit Templates(std::filesystem::path dir, TemplatesOptions options = {});
    /// Destroys the set.
    ~Templates();
    /// Not copyable: share one set (by reference or pointer) between the loops.
    Templates(const Templates&) = delete;
    /// Not copyable.
    Templates& operator=(const Templates&) = delete;

    /// Renders template `name` with `data` as the root context; throws TemplateNotFound.
    template <class T>
    std::string render(std::string_view name, const T& data) const {
        std::string out;
        render_ref(out, name, make_ref(data));
        return out;
    }
    /// A text/html; charset=utf-8 response with template `name` rendered from `data`.
    template <class T>
    Response response(std::string_view name, const T& data, Status status = Status::OK) const {
        return Response::html(render(name, data), status);
    }
    /// Appends template `name` rendered from the type-erased `data` to `out`.
    void render_ref(std::string& out, std::string_view name, ContextRef data) const;

    /// The compiled template `name` (its partials resolve only through a render of the set).
    Template get(std::string_view name) const;
    /// The names of the templates in the set, sorted.
    std::vector<std::string> names() const;
    /// The folder the set loads from.
    const std::filesystem::path& directory() const noexcept { return dir_; }

  private:
    struct Set;
    std::shared_ptr<const Set> snapshot() const;

    std::filesystem::path dir_;
    TemplatesOptions options_;
    mutable std::mutex mutex_;  // reload only: guards set_ replacement
    mutable std::shared_ptr<const Set> set_;
};

}  // namespace vela::tmpl
