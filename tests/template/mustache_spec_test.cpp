// The official mustache spec (github.com/mustache/spec, specs/*.json) as a table: every case
// of interpolation, sections, inverted, comments, partials and delimiters, rendered from the
// case's data as a json::Value. Lambdas and inheritance are optional modules we leave out.

#include <gtest/gtest.h>

#include <string>

#include "vela/json/json.hpp"
#include "vela/template/template.hpp"

namespace mustache_spec_test {

using namespace vela;
using tmpl::PartialMap;
using tmpl::Template;

struct SpecCase {
    const char* file;
    const char* name;
    const char* data;  // JSON
    const char* tpl;
    const char* expected;
    const char* partials = nullptr;  // JSON object: name -> source
};

// clang-format off
const SpecCase kSpec[] = {
    {"interpolation", "No Interpolation", R"json({})json", "Hello from {Mustache}!\n", "Hello from {Mustache}!\n"},
    {"interpolation", "Basic Interpolation", R"json({"subject":"world"})json", "Hello, {{subject}}!\n", "Hello, world!\n"},
    {"interpolation", "HTML Escaping", R"json({"forbidden":"& \" < >"})json", "These characters should be HTML escaped: {{forbidden}}\n", "These characters should be HTML escaped: &amp; &quot; &lt; &gt;\n"},
    {"interpolation", "Triple Mustache", R"json({"forbidden":"& \" < >"})json", "These characters should not be HTML escaped: {{{forbidden}}}\n", "These characters should not be HTML escaped: & \" < >\n"},
    {"interpolation", "Ampersand", R"json({"forbidden":"& \" < >"})json", "These characters should not be HTML escaped: {{&forbidden}}\n", "These characters should not be HTML escaped: & \" < >\n"},
    {"interpolation", "Basic Integer Interpolation", R"json({"mph":85})json", "\"{{mph}} miles an hour!\"", "\"85 miles an hour!\""},
    {"interpolation", "Triple Mustache Integer Interpolation", R"json({"mph":85})json", "\"{{{mph}}} miles an hour!\"", "\"85 miles an hour!\""},
    {"interpolation", "Ampersand Integer Interpolation", R"json({"mph":85})json", "\"{{&mph}} miles an hour!\"", "\"85 miles an hour!\""},
    {"interpolation", "Basic Decimal Interpolation", R"json({"power":1.21})json", "\"{{power}} jiggawatts!\"", "\"1.21 jiggawatts!\""},
    {"interpolation", "Triple Mustache Decimal Interpolation", R"json({"power":1.21})json", "\"{{{power}}} jiggawatts!\"", "\"1.21 jiggawatts!\""},
    {"interpolation", "Ampersand Decimal Interpolation", R"json({"power":1.21})json", "\"{{&power}} jiggawatts!\"", "\"1.21 jiggawatts!\""},
    {"interpolation", "Basic Context Miss Interpolation", R"json({})json", "I ({{cannot}}) be seen!", "I () be seen!"},
    {"interpolation", "Triple Mustache Context Miss Interpolation", R"json({})json", "I ({{{cannot}}}) be seen!", "I () be seen!"},
    {"interpolation", "Ampersand Context Miss Interpolation", R"json({})json", "I ({{&cannot}}) be seen!", "I () be seen!"},
    {"interpolation", "Dotted Names - Basic Interpolation", R"json({"person":{"name":"Joe"}})json", "\"{{person.name}}\" == \"{{#person}}{{name}}{{/person}}\"", "\"Joe\" == \"Joe\""},
    {"interpolation", "Dotted Names - Triple Mustache Interpolation", R"json({"person":{"name":"Joe"}})json", "\"{{{person.name}}}\" == \"{{#person}}{{{name}}}{{/person}}\"", "\"Joe\" == \"Joe\""},
    {"interpolation", "Dotted Names - Ampersand Interpolation", R"json({"person":{"name":"Joe"}})json", "\"{{&person.name}}\" == \"{{#person}}{{&name}}{{/person}}\"", "\"Joe\" == \"Joe\""},
    {"interpolation", "Dotted Names - Arbitrary Depth", R"json({"a":{"b":{"c":{"d":{"e":{"name":"Phil"}}}}}})json", "\"{{a.b.c.d.e.name}}\" == \"Phil\"", "\"Phil\" == \"Phil\""},
    {"interpolation", "Dotted Names - Broken Chains", R"json({"a":{}})json", "\"{{a.b.c}}\" == \"\"", "\"\" == \"\""},
    {"interpolation", "Dotted Names - Broken Chain Resolution", R"json({"a":{"b":{}},"c":{"name":"Jim"}})json", "\"{{a.b.c.name}}\" == \"\"", "\"\" == \"\""},
    {"interpolation", "Dotted Names - Initial Resolution", R"json({"a":{"b":{"c":{"d":{"e":{"name":"Phil"}}}}},"b":{"c":{"d":{"e":{"name":"Wrong"}}}}})json", "\"{{#a}}{{b.c.d.e.name}}{{/a}}\" == \"Phil\"", "\"Phil\" == \"Phil\""},
    {"interpolation", "Dotted Names - Context Precedence", R"json({"a":{"b":{}},"b":{"c":"ERROR"}})json", "{{#a}}{{b.c}}{{/a}}", ""},
    {"interpolation", "Interpolation - Surrounding Whitespace", R"json({"string":"---"})json", "| {{string}} |", "| --- |"},
    {"interpolation", "Triple Mustache - Surrounding Whitespace", R"json({"string":"---"})json", "| {{{string}}} |", "| --- |"},
    {"interpolation", "Ampersand - Surrounding Whitespace", R"json({"string":"---"})json", "| {{&string}} |", "| --- |"},
    {"interpolation", "Interpolation - Standalone", R"json({"string":"---"})json", "  {{string}}\n", "  ---\n"},
    {"interpolation", "Triple Mustache - Standalone", R"json({"string":"---"})json", "  {{{string}}}\n", "  ---\n"},
    {"interpolation", "Ampersand - Standalone", R"json({"string":"---"})json", "  {{&string}}\n", "  ---\n"},
    {"interpolation", "Interpolation With Padding", R"json({"string":"---"})json", "|{{ string }}|", "|---|"},
    {"interpolation", "Triple Mustache With Padding", R"json({"string":"---"})json", "|{{{ string }}}|", "|---|"},
    {"interpolation", "Ampersand With Padding", R"json({"string":"---"})json", "|{{& string }}|", "|---|"},
    {"sections", "Truthy", R"json({"boolean":true})json", "\"{{#boolean}}This should be rendered.{{/boolean}}\"", "\"This should be rendered.\""},
    {"sections", "Falsey", R"json({"boolean":false})json", "\"{{#boolean}}This should not be rendered.{{/boolean}}\"", "\"\""},
    {"sections", "Null is falsey", R"json({"null":null})json", "\"{{#null}}This should not be rendered.{{/null}}\"", "\"\""},
    {"sections", "Context", R"json({"context":{"name":"Joe"}})json", "\"{{#context}}Hi {{name}}.{{/context}}\"", "\"Hi Joe.\""},
    {"sections", "Parent contexts", R"json({"a":"foo","b":"wrong","sec":{"b":"bar"},"c":{"d":"baz"}})json", "\"{{#sec}}{{a}}, {{b}}, {{c.d}}{{/sec}}\"", "\"foo, bar, baz\""},
    {"sections", "Variable test", R"json({"foo":"bar"})json", "\"{{#foo}}{{.}} is {{foo}}{{/foo}}\"", "\"bar is bar\""},
    {"sections", "List Contexts", R"json({"tops":[{"tname":{"upper":"A","lower":"a"},"middles":[{"mname":"1","bottoms":[{"bname":"x"},{"bname":"y"}]}]}]})json", "{{#tops}}{{#middles}}{{tname.lower}}{{mname}}.{{#bottoms}}{{tname.upper}}{{mname}}{{bname}}.{{/bottoms}}{{/middles}}{{/tops}}", "a1.A1x.A1y."},
    {"sections", "Deeply Nested Contexts", R"json({"a":{"one":1},"b":{"two":2},"c":{"three":3,"d":{"four":4,"five":5}}})json", "{{#a}}\n{{one}}\n{{#b}}\n{{one}}{{two}}{{one}}\n{{#c}}\n{{one}}{{two}}{{three}}{{two}}{{one}}\n{{#d}}\n{{one}}{{two}}{{three}}{{four}}{{three}}{{two}}{{one}}\n{{#five}}\n{{one}}{{two}}{{three}}{{four}}{{five}}{{four}}{{three}}{{two}}{{one}}\n{{one}}{{two}}{{three}}{{four}}{{.}}6{{.}}{{four}}{{three}}{{two}}{{one}}\n{{one}}{{two}}{{three}}{{four}}{{five}}{{four}}{{three}}{{two}}{{one}}\n{{/five}}\n{{one}}{{two}}{{three}}{{four}}{{three}}{{two}}{{one}}\n{{/d}}\n{{one}}{{two}}{{three}}{{two}}{{one}}\n{{/c}}\n{{one}}{{two}}{{one}}\n{{/b}}\n{{one}}\n{{/a}}\n", "1\n121\n12321\n1234321\n123454321\n12345654321\n123454321\n1234321\n12321\n121\n1\n"},
    {"sections", "List", R"json({"list":[{"item":1},{"item":2},{"item":3}]})json", "\"{{#list}}{{item}}{{/list}}\"", "\"123\""},
    {"sections", "Empty List", R"json({"list":[]})json", "\"{{#list}}Yay lists!{{/list}}\"", "\"\""},
    {"sections", "Doubled", R"json({"bool":true,"two":"second"})json", "{{#bool}}\n* first\n{{/bool}}\n* {{two}}\n{{#bool}}\n* third\n{{/bool}}\n", "* first\n* second\n* third\n"},
    {"sections", "Nested (Truthy)", R"json({"bool":true})json", "| A {{#bool}}B {{#bool}}C{{/bool}} D{{/bool}} E |", "| A B C D E |"},
    {"sections", "Nested (Falsey)", R"json({"bool":false})json", "| A {{#bool}}B {{#bool}}C{{/bool}} D{{/bool}} E |", "| A  E |"},
    {"sections", "Context Misses", R"json({})json", "[{{#missing}}Found key 'missing'!{{/missing}}]", "[]"},
    {"sections", "Implicit Iterator - String", R"json({"list":["a","b","c","d","e"]})json", "\"{{#list}}({{.}}){{/list}}\"", "\"(a)(b)(c)(d)(e)\""},
    {"sections", "Implicit Iterator - Integer", R"json({"list":[1,2,3,4,5]})json", "\"{{#list}}({{.}}){{/list}}\"", "\"(1)(2)(3)(4)(5)\""},
    {"sections", "Implicit Iterator - Decimal", R"json({"list":[1.1,2.2,3.3,4.4,5.5]})json", "\"{{#list}}({{.}}){{/list}}\"", "\"(1.1)(2.2)(3.3)(4.4)(5.5)\""},
    {"sections", "Implicit Iterator - Array", R"json({"list":[[1,2,3],["a","b","c"]]})json", "\"{{#list}}({{#.}}{{.}}{{/.}}){{/list}}\"", "\"(123)(abc)\""},
    {"sections", "Implicit Iterator - HTML Escaping", R"json({"list":["&","\"","<",">"]})json", "\"{{#list}}({{.}}){{/list}}\"", "\"(&amp;)(&quot;)(&lt;)(&gt;)\""},
    {"sections", "Implicit Iterator - Triple mustache", R"json({"list":["&","\"","<",">"]})json", "\"{{#list}}({{{.}}}){{/list}}\"", "\"(&)(\")(<)(>)\""},
    {"sections", "Implicit Iterator - Ampersand", R"json({"list":["&","\"","<",">"]})json", "\"{{#list}}({{&.}}){{/list}}\"", "\"(&)(\")(<)(>)\""},
    {"sections", "Dotted Names - Truthy", R"json({"a":{"b":{"c":true}}})json", "\"{{#a.b.c}}Here{{/a.b.c}}\" == \"Here\"", "\"Here\" == \"Here\""},
    {"sections", "Dotted Names - Falsey", R"json({"a":{"b":{"c":false}}})json", "\"{{#a.b.c}}Here{{/a.b.c}}\" == \"\"", "\"\" == \"\""},
    {"sections", "Dotted Names - Broken Chains", R"json({"a":{}})json", "\"{{#a.b.c}}Here{{/a.b.c}}\" == \"\"", "\"\" == \"\""},
    {"sections", "Surrounding Whitespace", R"json({"boolean":true})json", " | {{#boolean}}\t|\t{{/boolean}} | \n", " | \t|\t | \n"},
    {"sections", "Internal Whitespace", R"json({"boolean":true})json", " | {{#boolean}} {{! Important Whitespace }}\n {{/boolean}} | \n", " |  \n  | \n"},
    {"sections", "Indented Inline Sections", R"json({"boolean":true})json", " {{#boolean}}YES{{/boolean}}\n {{#boolean}}GOOD{{/boolean}}\n", " YES\n GOOD\n"},
    {"sections", "Standalone Lines", R"json({"boolean":true})json", "| This Is\n{{#boolean}}\n|\n{{/boolean}}\n| A Line\n", "| This Is\n|\n| A Line\n"},
    {"sections", "Indented Standalone Lines", R"json({"boolean":true})json", "| This Is\n  {{#boolean}}\n|\n  {{/boolean}}\n| A Line\n", "| This Is\n|\n| A Line\n"},
    {"sections", "Standalone Line Endings", R"json({"boolean":true})json", "|\r\n{{#boolean}}\r\n{{/boolean}}\r\n|", "|\r\n|"},
    {"sections", "Standalone Without Previous Line", R"json({"boolean":true})json", "  {{#boolean}}\n#{{/boolean}}\n/", "#\n/"},
    {"sections", "Standalone Without Newline", R"json({"boolean":true})json", "#{{#boolean}}\n/\n  {{/boolean}}", "#\n/\n"},
    {"sections", "Padding", R"json({"boolean":true})json", "|{{# boolean }}={{/ boolean }}|", "|=|"},
    {"inverted", "Falsey", R"json({"boolean":false})json", "\"{{^boolean}}This should be rendered.{{/boolean}}\"", "\"This should be rendered.\""},
    {"inverted", "Truthy", R"json({"boolean":true})json", "\"{{^boolean}}This should not be rendered.{{/boolean}}\"", "\"\""},
    {"inverted", "Context", R"json({"context":{"name":"Joe"}})json", "\"{{^context}}Hi {{name}}.{{/context}}\"", "\"\""},
    {"inverted", "List", R"json({"list":[{"n":1},{"n":2},{"n":3}]})json", "\"{{^list}}{{n}}{{/list}}\"", "\"\""},
    {"inverted", "Empty List", R"json({"list":[]})json", "\"{{^list}}Yay lists!{{/list}}\"", "\"Yay lists!\""},
    {"inverted", "Doubled", R"json({"bool":false,"two":"second"})json", "{{^bool}}\n* first\n{{/bool}}\n* {{two}}\n{{^bool}}\n* third\n{{/bool}}\n", "* first\n* second\n* third\n"},
    {"inverted", "Nested (Falsey)", R"json({"bool":false})json", "| A {{^bool}}B {{^bool}}C{{/bool}} D{{/bool}} E |", "| A B C D E |"},
    {"inverted", "Nested (Truthy)", R"json({"bool":true})json", "| A {{^bool}}B {{^bool}}C{{/bool}} D{{/bool}} E |", "| A  E |"},
    {"inverted", "Context Misses", R"json({})json", "[{{^missing}}Cannot find key 'missing'!{{/missing}}]", "[Cannot find key 'missing'!]"},
    {"inverted", "Dotted Names - Truthy", R"json({"a":{"b":{"c":true}}})json", "\"{{^a.b.c}}Not Here{{/a.b.c}}\" == \"\"", "\"\" == \"\""},
    {"inverted", "Dotted Names - Falsey", R"json({"a":{"b":{"c":false}}})json", "\"{{^a.b.c}}Not Here{{/a.b.c}}\" == \"Not Here\"", "\"Not Here\" == \"Not Here\""},
    {"inverted", "Dotted Names - Broken Chains", R"json({"a":{}})json", "\"{{^a.b.c}}Not Here{{/a.b.c}}\" == \"Not Here\"", "\"Not Here\" == \"Not Here\""},
    {"inverted", "Surrounding Whitespace", R"json({"boolean":false})json", " | {{^boolean}}\t|\t{{/boolean}} | \n", " | \t|\t | \n"},
    {"inverted", "Internal Whitespace", R"json({"boolean":false})json", " | {{^boolean}} {{! Important Whitespace }}\n {{/boolean}} | \n", " |  \n  | \n"},
    {"inverted", "Indented Inline Sections", R"json({"boolean":false})json", " {{^boolean}}NO{{/boolean}}\n {{^boolean}}WAY{{/boolean}}\n", " NO\n WAY\n"},
    {"inverted", "Standalone Lines", R"json({"boolean":false})json", "| This Is\n{{^boolean}}\n|\n{{/boolean}}\n| A Line\n", "| This Is\n|\n| A Line\n"},
    {"inverted", "Standalone Indented Lines", R"json({"boolean":false})json", "| This Is\n  {{^boolean}}\n|\n  {{/boolean}}\n| A Line\n", "| This Is\n|\n| A Line\n"},
    {"inverted", "Standalone Line Endings", R"json({"boolean":false})json", "|\r\n{{^boolean}}\r\n{{/boolean}}\r\n|", "|\r\n|"},
    {"inverted", "Standalone Without Previous Line", R"json({"boolean":false})json", "  {{^boolean}}\n^{{/boolean}}\n/", "^\n/"},
    {"inverted", "Standalone Without Newline", R"json({"boolean":false})json", "^{{^boolean}}\n/\n  {{/boolean}}", "^\n/\n"},
    {"inverted", "Padding", R"json({"boolean":false})json", "|{{^ boolean }}={{/ boolean }}|", "|=|"},
    {"comments", "Inline", R"json({})json", "12345{{! Comment Block! }}67890", "1234567890"},
    {"comments", "Multiline", R"json({})json", "12345{{!\n  This is a\n  multi-line comment...\n}}67890\n", "1234567890\n"},
    {"comments", "Standalone", R"json({})json", "Begin.\n{{! Comment Block! }}\nEnd.\n", "Begin.\nEnd.\n"},
    {"comments", "Indented Standalone", R"json({})json", "Begin.\n  {{! Indented Comment Block! }}\nEnd.\n", "Begin.\nEnd.\n"},
    {"comments", "Standalone Line Endings", R"json({})json", "|\r\n{{! Standalone Comment }}\r\n|", "|\r\n|"},
    {"comments", "Standalone Without Previous Line", R"json({})json", "  {{! I'm Still Standalone }}\n!", "!"},
    {"comments", "Standalone Without Newline", R"json({})json", "!\n  {{! I'm Still Standalone }}", "!\n"},
    {"comments", "Multiline Standalone", R"json({})json", "Begin.\n{{!\nSomething's going on here...\n}}\nEnd.\n", "Begin.\nEnd.\n"},
    {"comments", "Indented Multiline Standalone", R"json({})json", "Begin.\n  {{!\n    Something's going on here...\n  }}\nEnd.\n", "Begin.\nEnd.\n"},
    {"comments", "Indented Inline", R"json({})json", "  12 {{! 34 }}\n", "  12 \n"},
    {"comments", "Surrounding Whitespace", R"json({})json", "12345 {{! Comment Block! }} 67890", "12345  67890"},
    {"partials", "Basic Behavior", R"json({})json", "\"{{>text}}\"", "\"from partial\"", R"json({"text":"from partial"})json"},
    {"partials", "Failed Lookup", R"json({})json", "\"{{>text}}\"", "\"\"", R"json({})json"},
    {"partials", "Context", R"json({"text":"content"})json", "\"{{>partial}}\"", "\"*content*\"", R"json({"partial":"*{{text}}*"})json"},
    {"partials", "Recursion", R"json({"content":"X","nodes":[{"content":"Y","nodes":[]}]})json", "{{>node}}", "X<Y<>>", R"json({"node":"{{content}}<{{#nodes}}{{>node}}{{/nodes}}>"})json"},
    {"partials", "Surrounding Whitespace", R"json({})json", "| {{>partial}} |", "| \t|\t |", R"json({"partial":"\t|\t"})json"},
    {"partials", "Inline Indentation", R"json({"data":"|"})json", "  {{data}}  {{> partial}}\n", "  |  >\n>\n", R"json({"partial":">\n>"})json"},
    {"partials", "Standalone Line Endings", R"json({})json", "|\r\n{{>partial}}\r\n|", "|\r\n>|", R"json({"partial":">"})json"},
    {"partials", "Standalone Without Previous Line", R"json({})json", "  {{>partial}}\n>", "  >\n  >>", R"json({"partial":">\n>"})json"},
    {"partials", "Standalone Without Newline", R"json({})json", ">\n  {{>partial}}", ">\n  >\n  >", R"json({"partial":">\n>"})json"},
    {"partials", "Standalone Indentation", R"json({"content":"<\n->"})json", "\\\n {{>partial}}\n/\n", "\\\n |\n <\n->\n |\n/\n", R"json({"partial":"|\n{{{content}}}\n|\n"})json"},
    {"partials", "Padding Whitespace", R"json({"boolean":true})json", "|{{> partial }}|", "|[]|", R"json({"partial":"[]"})json"},
    {"delimiters", "Pair Behavior", R"json({"text":"Hey!"})json", "{{=<% %>=}}(<%text%>)", "(Hey!)"},
    {"delimiters", "Special Characters", R"json({"text":"It worked!"})json", "({{=[ ]=}}[text])", "(It worked!)"},
    {"delimiters", "Sections", R"json({"section":true,"data":"I got interpolated."})json", "[\n{{#section}}\n  {{data}}\n  |data|\n{{/section}}\n\n{{= | | =}}\n|#section|\n  {{data}}\n  |data|\n|/section|\n]\n", "[\n  I got interpolated.\n  |data|\n\n  {{data}}\n  I got interpolated.\n]\n"},
    {"delimiters", "Inverted Sections", R"json({"section":false,"data":"I got interpolated."})json", "[\n{{^section}}\n  {{data}}\n  |data|\n{{/section}}\n\n{{= | | =}}\n|^section|\n  {{data}}\n  |data|\n|/section|\n]\n", "[\n  I got interpolated.\n  |data|\n\n  {{data}}\n  I got interpolated.\n]\n"},
    {"delimiters", "Partial Inheritence", R"json({"value":"yes"})json", "[ {{>include}} ]\n{{= | | =}}\n[ |>include| ]\n", "[ .yes. ]\n[ .yes. ]\n", R"json({"include":".{{value}}."})json"},
    {"delimiters", "Post-Partial Behavior", R"json({"value":"yes"})json", "[ {{>include}} ]\n[ .{{value}}.  .|value|. ]\n", "[ .yes.  .yes. ]\n[ .yes.  .|value|. ]\n", R"json({"include":".{{value}}. {{= | | =}} .|value|."})json"},
    {"delimiters", "Surrounding Whitespace", R"json({})json", "| {{=@ @=}} |", "|  |"},
    {"delimiters", "Outlying Whitespace (Inline)", R"json({})json", " | {{=@ @=}}\n", " | \n"},
    {"delimiters", "Standalone Tag", R"json({})json", "Begin.\n{{=@ @=}}\nEnd.\n", "Begin.\nEnd.\n"},
    {"delimiters", "Indented Standalone Tag", R"json({})json", "Begin.\n  {{=@ @=}}\nEnd.\n", "Begin.\nEnd.\n"},
    {"delimiters", "Standalone Line Endings", R"json({})json", "|\r\n{{= @ @ =}}\r\n|", "|\r\n|"},
    {"delimiters", "Standalone Without Previous Line", R"json({})json", "  {{=@ @=}}\n=", "="},
    {"delimiters", "Standalone Without Newline", R"json({})json", "=\n  {{=@ @=}}", "=\n"},
    {"delimiters", "Pair with Padding", R"json({})json", "|{{= @   @ =}}|", "||"},
    // Cases added by later revisions of the spec (1.2-1.3).
    {"interpolation", "Null Interpolation", R"json({"cannot":null})json", "I ({{cannot}}) be seen!", "I () be seen!"},
    {"interpolation", "Dotted Names are never single keys", R"json({"a.b":"c"})json", "{{a.b}}", ""},
    {"interpolation", "Dotted Names - No Masking", R"json({"a.b":"c","a":{"b":"d"}})json", "{{a.b}}", "d"},
    {"interpolation", "Implicit Iterators - Basic Interpolation", R"json("world")json", "Hello, {{.}}!\n", "Hello, world!\n"},
    {"interpolation", "Implicit Iterators - HTML Escaping", R"json("& \" < >")json", "These characters should be HTML escaped: {{.}}\n", "These characters should be HTML escaped: &amp; &quot; &lt; &gt;\n"},
    {"interpolation", "Implicit Iterators - Triple Mustache", R"json("& \" < >")json", "These characters should not be HTML escaped: {{{.}}}\n", "These characters should not be HTML escaped: & \" < >\n"},
    {"interpolation", "Implicit Iterators - Basic Integer Interpolation", R"json(85)json", "\"{{.}} miles an hour!\"", "\"85 miles an hour!\""},
    {"sections", "Implicit Iterator - Root-level", R"json([{"value":"a"},{"value":"b"}])json", "\"{{#.}}({{value}}){{/.}}\"", "\"(a)(b)\""},
    {"comments", "Variable Name Collision", R"json({"! comment":1,"! comment ":2,"!comment":3,"comment":4})json", "comments never render, even if variable with same name exists {{! comment }}", "comments never render, even if variable with same name exists "},
    {"partials", "Nested", R"json({"a":"hello","b":"world"})json", "{{>outer}}", "*hello world!*", R"json({"outer":"*{{a}} {{>inner}}*","inner":"{{b}}!"})json"},
};
// clang-format on

void PrintTo(const SpecCase& c, std::ostream* os) { *os << c.file << ": " << c.name; }

class MustacheSpec : public ::testing::TestWithParam<SpecCase> {};

TEST_P(MustacheSpec, Renders) {
    const SpecCase& c = GetParam();
    SCOPED_TRACE(std::string(c.file) + ": " + c.name + "\ntemplate: " + c.tpl);
    const auto data = json::parse<json::Value>(c.data);
    PartialMap partials;
    if (c.partials) {
        const auto sources = json::parse<json::Value>(c.partials);
        for (const auto& [name, source] : sources.as_object())
            partials.add(name, source.as_string());
    }
    const Template t = Template::compile(c.tpl, c.name);
    EXPECT_EQ(t.render(data, &partials), c.expected);
    // Compiled once, rendered many times: a second render is the same.
    EXPECT_EQ(t.render(data, &partials), c.expected);
}

std::string case_name(const ::testing::TestParamInfo<SpecCase>& info) {
    std::string out = std::string(info.param.file) + "_";
    for (const char* p = info.param.name; *p; ++p)
        out += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
    return out + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Spec, MustacheSpec, ::testing::ValuesIn(kSpec), case_name);

}  // namespace mustache_spec_test
