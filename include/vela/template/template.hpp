#pragma once
// Mustache templates: compiled once, rendered many times.
//
//     auto page =
//     vela::tmpl::Template::compile("<h1>{{title}}</h1>{{#items}}<li>{{.}}</li>{{/items}}");
//     std::string html = page.render(my_struct);        // VELA_REFLECT struct, map, json::Value...
//
// compile() parses the source into a flat instruction list (text, interpolation, section
// jump, partial) and throws TemplateError with the line and column of a syntax error.
// A Template is immutable after compile(): copies share the compiled program, and any
// number of threads may render the same Template at once. Rendering walks the caller's
// data in place (see context.hpp) and appends to a std::string.
//
// Supported: the mustache spec's interpolation ({{x}} escaped, {{{x}}} and {{&x}} raw, dotted
// names, {{.}}), sections, inverted sections, comments, partials (standalone indentation),
// set delimiters and the standalone-line rules. Not supported: lambdas and inheritance
// ({{<parent}} / {{$block}} are a compile error). See docs/templates.md.

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "vela/template/context.hpp"

namespace vela::tmpl {

/// A syntax error in a template: the template's name, the 1-based line and column, and what.
class TemplateError : public std::runtime_error {
  public:
    /// An error in template `name` at `line`:`column` (what() gives all of it).
    TemplateError(std::string name, std::size_t line, std::size_t column,
                  const std::string& message);
    /// The template's name ("" when compiled without one).
    const std::string& template_name() const noexcept { return name_; }
    /// The 1-based line of the error.
    std::size_t line() const noexcept { return line_; }
    /// The 1-based column (in bytes) of the error.
    std::size_t column() const noexcept { return column_; }

  private:
    std::string name_;
    std::size_t line_;
    std::size_t column_;
};

/// An error while rendering (partials nested deeper than Template::kMaxPartialDepth).
class RenderError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class Template;

/// Where {{>name}} finds its partial (a missing one renders as nothing, as the spec says).
class PartialSource {
  public:
    /// Destroys the source.
    virtual ~PartialSource() = default;
    /// The partial called `name`, or nullptr; it must stay valid for the render.
    virtual const Template* find_partial(std::string_view name) const = 0;
};

namespace detail {
struct Program;
}

/// A compiled mustache template (immutable; cheap to copy; safe to render from any thread).
class Template {
  public:
    /// Partials nested deeper than this (a partial including itself forever) are a RenderError.
    static constexpr int kMaxPartialDepth = 64;
    /// Sections nested deeper than this are a TemplateError (rendering recurses per level).
    static constexpr std::size_t kMaxSectionDepth = 256;

    /// Compiles `source`; `name` appears in error messages. Throws TemplateError.
    static Template compile(std::string_view source, std::string_view name = {});

    /// Renders with `data` as the root context; partials come from `partials` (may be null).
    template <class T>
    std::string render(const T& data, const PartialSource* partials = nullptr) const {
        std::string out;
        render_ref(out, make_ref(data), partials);
        return out;
    }
    /// Appends the rendering with `data` as the root context to `out`.
    template <class T>
    void render_to(std::string& out, const T& data, const PartialSource* partials = nullptr) const {
        render_ref(out, make_ref(data), partials);
    }
    /// Appends the rendering with the type-erased root context `data` to `out`.
    void render_ref(std::string& out, ContextRef data, const PartialSource* partials) const;

    /// The name given to compile().
    const std::string& name() const noexcept;
    /// The names of the partials the template includes ({{>name}}), each once.
    std::span<const std::string> partial_names() const noexcept;
    /// The number of section and inverted-section tags (a measure for tools and fuzzers).
    std::size_t section_count() const noexcept;

  private:
    explicit Template(std::shared_ptr<const detail::Program> p) noexcept : program_(std::move(p)) {}
    friend struct Renderer;
    std::shared_ptr<const detail::Program> program_;
};

/// Partials held in memory by name (what a test or a program without files uses).
class PartialMap : public PartialSource {
  public:
    /// Compiles `source` as the partial `name` (replacing one of that name); throws TemplateError.
    PartialMap& add(std::string_view name, std::string_view source);
    /// Adds an already compiled template as the partial `name`.
    PartialMap& add(std::string_view name, Template tpl);
    /// The partial called `name`, or nullptr.
    const Template* find_partial(std::string_view name) const override;

  private:
    std::map<std::string, Template, std::less<>> partials_;
};

}  // namespace vela::tmpl
