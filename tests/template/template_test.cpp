// Templates rendered from C++ data in place: reflected structs, maps, vectors, optionals,
// pointers and scalars, the TechEmpower fortunes page, compile errors with positions, and
// the partial depth limit.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fortunes.hpp"  // bench/fortunes.hpp
#include "vela/json/json.hpp"
#include "vela/template/template.hpp"

namespace template_test {

using namespace vela;
using bench::FortunesPage;
using tmpl::PartialMap;
using tmpl::Template;
using tmpl::TemplateError;

enum class Color { red, dark_blue };
VELA_ENUM(Color, red, VELA_AS(dark_blue, "dark-blue"))

struct Item {
    int id = 0;
    std::string name;
    std::optional<double> price;
    std::vector<std::string> tags;
    bool in_stock = false;
};
VELA_REFLECT(Item, id, name, price, tags, VELA_AS(in_stock, "inStock"))

struct Page {
    std::string title;
    std::vector<Item> items;
    std::map<std::string, int> counts;
    std::optional<std::string> note;
    Color color = Color::red;
    json::Value extra;
    const char* footer = nullptr;
    std::unique_ptr<Item> featured;
};
VELA_REFLECT(Page, title, items, counts, note, color, extra, footer, featured)

TEST(Template, ReflectedStructsNestedWithEveryKind) {
    Page page;
    page.title = "Shop <1>";
    page.items.push_back({1, "tea", 2.5, {"hot", "leaf"}, true});
    page.items.push_back({2, "ice", std::nullopt, {}, false});
    page.counts = {{"views", 7}, {"likes", 0}};
    page.color = Color::dark_blue;
    page.extra = json::parse<json::Value>(R"({"links":[{"href":"/a?x=1&y=2"}],"flag":true})");
    page.footer = "bye";
    page.featured = std::make_unique<Item>(Item{9, "gift", 1e21, {}, true});

    const Template t = Template::compile(
        "<h1>{{title}}</h1>\n"
        "{{#items}}\n"
        "<li id=\"{{id}}\">{{name}}{{#price}} {{.}}{{/price}}{{^price}} (no price){{/price}}"
        "{{#tags}}[{{.}}]{{/tags}}{{#inStock}} in stock{{/inStock}} of {{title}}</li>\n"
        "{{/items}}\n"
        "views={{counts.views}} likes={{counts.likes}}{{^counts.likes}} (none){{/counts.likes}}\n"
        "{{note}}{{^note}}no note{{/note}} {{color}}\n"
        "{{#extra.links}}<a href=\"{{href}}\">{{{href}}}</a>{{/extra.links}}"
        "{{#extra.flag}}!{{/extra.flag}}\n"
        "{{footer}} {{featured.name}} {{featured.price}}{{^missing}} ok{{/missing}}\n");
    EXPECT_EQ(t.render(page),
              "<h1>Shop &lt;1&gt;</h1>\n"
              "<li id=\"1\">tea 2.5[hot][leaf] in stock of Shop &lt;1&gt;</li>\n"
              "<li id=\"2\">ice (no price) of Shop &lt;1&gt;</li>\n"
              "views=7 likes=0 (none)\n"
              "no note dark-blue\n"
              "<a href=\"/a?x=1&amp;y=2\">/a?x=1&y=2</a>!\n"
              "bye gift 1e+21 ok\n");

    page.note = "it's";
    page.featured.reset();
    EXPECT_EQ(
        Template::compile("{{note}}|{{featured.name}}|{{#featured}}x{{/featured}}").render(page),
        "it&#39;s||");
}

TEST(Template, MapsVectorsAndScalarsAsRoots) {
    const std::map<std::string, std::string> m{{"a", "1"}, {"b", "<2>"}};
    EXPECT_EQ(Template::compile("{{a}},{{b}},{{{b}}},{{c}}").render(m), "1,&lt;2&gt;,<2>,");

    const std::unordered_map<std::string, std::vector<int>> u{{"xs", {1, 2, 3}}, {"none", {}}};
    EXPECT_EQ(Template::compile("{{#xs}}{{.}};{{/xs}}{{^none}}empty{{/none}}").render(u),
              "1;2;3;empty");

    const std::vector<std::vector<std::string>> nested{{"a", "b"}, {}, {"c"}};
    EXPECT_EQ(Template::compile("{{#.}}({{#.}}{{.}}{{/.}}){{/.}}").render(nested), "(ab)()(c)");

    const std::vector<bool> bits{true, false, true};
    EXPECT_EQ(Template::compile("{{#.}}{{.}} {{/.}}").render(bits), "true false true ");

    const int arr[3] = {4, 5, 6};
    EXPECT_EQ(Template::compile("{{#.}}{{.}}{{/.}}").render(arr), "456");

    EXPECT_EQ(Template::compile("{{.}}").render(std::string("x&y")), "x&amp;y");
    EXPECT_EQ(Template::compile("{{.}}").render(std::string_view("sv")), "sv");
    EXPECT_EQ(Template::compile("{{.}}").render("lit"), "lit");
    EXPECT_EQ(Template::compile("{{.}}").render(-42), "-42");
    EXPECT_EQ(Template::compile("{{.}}").render(18446744073709551615ull), "18446744073709551615");
    EXPECT_EQ(Template::compile("{{.}}").render(0.1f), "0.1");
    EXPECT_EQ(Template::compile("{{.}}").render(3.0), "3");
    EXPECT_EQ(Template::compile("{{.}}").render('<'), "&lt;");
    EXPECT_EQ(Template::compile("[{{.}}]").render(std::optional<int>{}), "[]");
    EXPECT_EQ(Template::compile("[{{.}}]").render(std::optional<int>{5}), "[5]");
}

TEST(Template, TruthinessFollowsMustacheJs) {
    const Template t = Template::compile("{{#.}}T{{/.}}{{^.}}F{{/.}}");
    EXPECT_EQ(t.render(0), "F");
    EXPECT_EQ(t.render(7), "T");
    EXPECT_EQ(t.render(0.0), "F");
    EXPECT_EQ(t.render(std::nan("")), "F");
    EXPECT_EQ(t.render(std::string()), "F");
    EXPECT_EQ(t.render(std::string("0")), "T");
    EXPECT_EQ(t.render(std::vector<int>{}), "F");
    EXPECT_EQ(t.render(std::map<std::string, int>{}), "T");  // an object, even empty
    EXPECT_EQ(t.render(json::Value()), "F");
    EXPECT_EQ(t.render(json::Value::object()), "T");
    EXPECT_EQ(t.render(json::Value::array()), "F");
    EXPECT_EQ(t.render(json::Value(0)), "F");
    EXPECT_EQ(t.render(json::Value("")), "F");
    const char* null_text = nullptr;
    EXPECT_EQ(t.render(null_text), "F");
    const int* no_int = nullptr;
    EXPECT_EQ(t.render(no_int), "F");
}

// The TechEmpower "fortunes" page: rows sorted by message, one added at request time.
TEST(Template, TechEmpowerFortunes) {
    FortunesPage page{{
        {11, "<script>alert(\"This should not be displayed in a browser alert box.\");</script>"},
        {4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1"},
        {5, "A computer program does what you tell it to do, not what you want it to do."},
        {2, "A computer scientist is someone who fixes things that aren't broken."},
        {8, "A list is only as strong as its weakest link. \u2014 Donald Knuth"},
        {0, "Additional fortune added at request time."},
        {3, "After enough decimal places, nobody gives a damn."},
        {7, "Any program that runs right is obsolete."},
        {10, "Computers make very fast, very accurate mistakes."},
        {6, "Emacs is a nice operating system, but I prefer UNIX. \u2014 Tom Christaensen"},
        {9, "Feature: A bug with seniority."},
        {1, "fortune: No such file or directory"},
        {12,
         "\u30d5\u30ec\u30fc\u30e0\u30ef\u30fc\u30af\u306e\u30d9\u30f3\u30c1\u30de\u30fc\u30af"},
    }};
    const Template t = Template::compile(
        "<!DOCTYPE html>\n"
        "<html>\n"
        "<head><title>Fortunes</title></head>\n"
        "<body>\n"
        "<table>\n"
        "<tr><th>id</th><th>message</th></tr>\n"
        "{{#fortunes}}\n"
        "<tr><td>{{id}}</td><td>{{message}}</td></tr>\n"
        "{{/fortunes}}\n"
        "</table>\n"
        "</body>\n"
        "</html>\n",
        "fortunes");
    const std::string expected =
        "<!DOCTYPE html>\n<html>\n<head><title>Fortunes</title></head>\n<body>\n<table>\n"
        "<tr><th>id</th><th>message</th></tr>\n"
        "<tr><td>11</td><td>&lt;script&gt;alert(&quot;This should not be displayed in a browser "
        "alert box.&quot;);&lt;/script&gt;</td></tr>\n"
        "<tr><td>4</td><td>A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, "
        "1</td></tr>\n"
        "<tr><td>5</td><td>A computer program does what you tell it to do, not what you want it "
        "to do.</td></tr>\n"
        "<tr><td>2</td><td>A computer scientist is someone who fixes things that aren&#39;t "
        "broken.</td></tr>\n"
        "<tr><td>8</td><td>A list is only as strong as its weakest link. \u2014 Donald "
        "Knuth</td></tr>\n"
        "<tr><td>0</td><td>Additional fortune added at request time.</td></tr>\n"
        "<tr><td>3</td><td>After enough decimal places, nobody gives a damn.</td></tr>\n"
        "<tr><td>7</td><td>Any program that runs right is obsolete.</td></tr>\n"
        "<tr><td>10</td><td>Computers make very fast, very accurate mistakes.</td></tr>\n"
        "<tr><td>6</td><td>Emacs is a nice operating system, but I prefer UNIX. \u2014 Tom "
        "Christaensen</td></tr>\n"
        "<tr><td>9</td><td>Feature: A bug with seniority.</td></tr>\n"
        "<tr><td>1</td><td>fortune: No such file or directory</td></tr>\n"
        "<tr><td>12</td><td>\u30d5\u30ec\u30fc\u30e0\u30ef\u30fc\u30af\u306e\u30d9\u30f3\u30c1"
        "\u30de\u30fc\u30af</td></tr>\n"
        "</table>\n</body>\n</html>\n";
    EXPECT_EQ(t.render(page), expected);
    // The same page from a json::Value gives the same bytes.
    EXPECT_EQ(t.render(json::parse<json::Value>(json::write(page))), expected);
}

TEST(Template, OneTemplateRenderedFromManyThreads) {
    const Template t = Template::compile("{{#items}}<{{name}}>{{/items}}");
    std::vector<std::thread> threads;
    std::vector<std::string> results(4);
    for (int k = 0; k < 4; ++k) {
        threads.emplace_back([&, k] {
            Page p;
            p.items.push_back({k, "n" + std::to_string(k), {}, {}, false});
            for (int i = 0; i < 200; ++i) results[static_cast<std::size_t>(k)] = t.render(p);
        });
    }
    for (auto& th : threads) th.join();
    for (int k = 0; k < 4; ++k)
        EXPECT_EQ(results[static_cast<std::size_t>(k)], "<n" + std::to_string(k) + ">");
}

struct ErrorCase {
    const char* tpl;
    std::size_t line;
    std::size_t column;
    const char* message_part;
};

TEST(Template, SyntaxErrorsNameLineAndColumn) {
    const ErrorCase cases[] = {
        {"abc {{name", 1, 5, "unclosed tag: no '}}' after '{{'"},
        {"a\n  {{{raw}}", 2, 3, "unclosed tag: no '}}}'"},
        {"{{#a}}\n{{/b}}", 2, 1, "{{/b}} does not close section 'a' (opened on line 1)"},
        {"x\n{{#list}}\nbody", 2, 1, "section 'list' is never closed"},
        {"{{/a}}", 1, 1, "{{/a}} closes no section"},
        {"ok {{}}", 1, 4, "empty tag"},
        {"{{a b}}", 1, 1, "the name 'a b' contains whitespace"},
        {"{{a..b}}", 1, 1, "has an empty part"},
        {"{{=<% %>=}}\n<%#x%>", 2, 1, "section 'x' is never closed (no <%/x%>)"},
        {"{{=<%=}}", 1, 1, "bad set-delimiter tag"},
        {"{{=a= b=}}", 1, 1, "bad set-delimiter tag"},
        {"\n\n  {{<parent}}{{/parent}}", 3, 3, "inheritance"},
        {"{{$block}}", 1, 1, "inheritance"},
    };
    std::string deep;
    for (int i = 0; i < 300; ++i) deep += "{{#a}}";
    try {
        Template::compile(deep, "page");
        ADD_FAILURE() << "compiled";
    } catch (const TemplateError& e) {
        EXPECT_EQ(e.column(), 256u * 6 + 1);
        EXPECT_NE(std::string(e.what()).find("sections nested deeper than 256"), std::string::npos);
    }
    for (const auto& c : cases) {
        SCOPED_TRACE(c.tpl);
        try {
            Template::compile(c.tpl, "page");
            ADD_FAILURE() << "compiled";
        } catch (const TemplateError& e) {
            EXPECT_EQ(e.line(), c.line);
            EXPECT_EQ(e.column(), c.column);
            EXPECT_EQ(e.template_name(), "page");
            EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << e.what();
            EXPECT_EQ(std::string(e.what()).rfind("template 'page', line ", 0), 0u) << e.what();
        }
    }
}

TEST(Template, PartialsIncludingThemselvesForeverStopWithAnError) {
    PartialMap partials;
    partials.add("loop", "x{{>loop}}");
    const Template t = Template::compile("{{>loop}}", "root");
    try {
        t.render(json::Value::object(), &partials);
        ADD_FAILURE() << "rendered";
    } catch (const tmpl::RenderError& e) {
        EXPECT_NE(std::string(e.what()).find("does 'loop' include itself?"), std::string::npos);
    }
    EXPECT_EQ(t.partial_names().size(), 1u);
    EXPECT_EQ(t.partial_names()[0], "loop");
}

TEST(Template, StandalonePartialIndentationNests) {
    PartialMap partials;
    partials.add("outer", "<ul>\n  {{>inner}}\n</ul>\n");
    partials.add("inner", "{{#xs}}\n<li>{{.}}</li>\n{{/xs}}\n");
    const auto data = json::parse<json::Value>(R"({"xs":["a","b"]})");
    EXPECT_EQ(Template::compile("<div>\n    {{>outer}}\n</div>\n").render(data, &partials),
              "<div>\n    <ul>\n      <li>a</li>\n      <li>b</li>\n    </ul>\n</div>\n");
}

TEST(Template, RenderToAppends) {
    const Template t = Template::compile("{{a}}");
    std::string out = "x=";
    t.render_to(out, std::map<std::string, int>{{"a", 1}});
    t.render_to(out, std::map<std::string, int>{{"a", 22}});
    EXPECT_EQ(out, "x=122");
}

}  // namespace template_test
