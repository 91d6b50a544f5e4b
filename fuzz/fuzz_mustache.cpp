// Compiles arbitrary bytes as a mustache template and renders it against a fixed nested
// context (reflected structs, a map, optionals, vectors and a json::Value) and fixed
// partials: no crash; a syntax error is a TemplateError; rendering twice gives the same
// bytes; a template without its opening delimiter renders as itself. (Every tree node has
// "children": a leaf without it would find its parent's list and recurse until the limit.)

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vela/json/json.hpp"
#include "vela/template/template.hpp"

namespace fuzz {

struct Row {
    int id = 0;
    std::string message;
    std::optional<double> score;
    std::vector<std::string> tags;
};
VELA_REFLECT(Row, id, message, score, tags)

struct Context {
    std::string title;
    std::vector<Row> rows;
    std::map<std::string, std::string> meta;
    bool flag = true;
    std::optional<int> none;
    vela::json::Value doc;
};
VELA_REFLECT(Context, title, rows, meta, flag, none, doc)

const Context& context() {
    static const Context c = [] {
        Context c;
        c.title = "<b>\"t\" & 'u'</b>";
        c.rows = {
            {1, "one", 0.5, {"a", "b"}}, {2, "", std::nullopt, {}}, {3, "\u30d9", -1e300, {"c"}}};
        c.meta = {{"k", "v"}, {"empty", ""}};
        c.doc = vela::json::parse<vela::json::Value>(
            R"({"name":"root","n":0,"children":[{"name":"a","children":[{"name":"a1","children":[]}]},)"
            R"({"name":"b","children":[]}],"list":[1,2.5,"x",null,true,[3]]})");
        return c;
    }();
    return c;
}

const vela::tmpl::PartialMap& partials() {
    static const vela::tmpl::PartialMap p = [] {
        vela::tmpl::PartialMap p;
        p.add("row", "<{{id}}:{{message}}{{#tags}},{{.}}{{/tags}}>\n");
        p.add("tree", "{{name}}(\n  {{#children}}\n  {{>tree}}\n  {{/children}}\n)");
        return p;
    }();
    return p;
}

}  // namespace fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view src(reinterpret_cast<const char*>(data), size);
    std::optional<vela::tmpl::Template> t;
    try {
        t = vela::tmpl::Template::compile(src, "fuzz");
    } catch (const vela::tmpl::TemplateError&) {
        return 0;
    }
    // Nested sections over lists multiply the work (3 rows in 3 rows in ...): keep it bounded.
    if (t->section_count() > 6) return 0;
    try {
        const std::string a = t->render(fuzz::context(), &fuzz::partials());
        if (t->render(fuzz::context(), &fuzz::partials()) != a) std::abort();
        (void)t->render(fuzz::context().doc, &fuzz::partials());
        if (src.find("{{") == std::string_view::npos && a != src) std::abort();
    } catch (const vela::tmpl::RenderError&) {
        // partials nested past the limit: the one error rendering may raise
    }
    return 0;
}
