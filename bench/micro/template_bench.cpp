// Mustache rendering: the TechEmpower fortunes page (12 rows, one with a <script> to escape
// and one in Japanese) from a vector of reflected structs, from a json::Value, and written by
// hand with append_html_escaped as the floor; plus compiling the template.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "../fortunes.hpp"
#include "vela/base/html.hpp"
#include "vela/json/json.hpp"
#include "vela/template/template.hpp"

namespace bench {

FortunesPage page() {
    return {{
        {11, "<script>alert(\"This should not be displayed in a browser alert box.\");</script>"},
        {4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1"},
        {5, "A computer program does what you tell it to do, not what you want it to do."},
        {2, "A computer scientist is someone who fixes things that aren't broken."},
        {8, "A list is only as strong as its weakest link. \u2014 Donald Knuth"},
        {3, "After enough decimal places, nobody gives a damn."},
        {7, "Any program that runs right is obsolete."},
        {10, "Computers make very fast, very accurate mistakes."},
        {6, "Emacs is a nice operating system, but I prefer UNIX. \u2014 Tom Christaensen"},
        {9, "Feature: A bug with seniority."},
        {1, "fortune: No such file or directory"},
        {12,
         "\u30d5\u30ec\u30fc\u30e0\u30ef\u30fc\u30af\u306e\u30d9\u30f3\u30c1\u30de\u30fc\u30af"},
    }};
}

void BM_FortunesReflected(benchmark::State& state) {
    const auto t = vela::tmpl::Template::compile(kFortunes);
    const FortunesPage p = page();
    std::size_t bytes = 0;
    for (auto _ : state) {
        std::string html = t.render(p);
        bytes += html.size();
        benchmark::DoNotOptimize(html);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_FortunesReflected);

void BM_FortunesJsonValue(benchmark::State& state) {
    const auto t = vela::tmpl::Template::compile(kFortunes);
    const auto v = vela::json::parse<vela::json::Value>(vela::json::write(page()));
    std::size_t bytes = 0;
    for (auto _ : state) {
        std::string html = t.render(v);
        bytes += html.size();
        benchmark::DoNotOptimize(html);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_FortunesJsonValue);

// The same bytes appended by hand: what a template engine can at best approach.
void BM_FortunesByHand(benchmark::State& state) {
    const FortunesPage p = page();
    std::size_t bytes = 0;
    for (auto _ : state) {
        std::string html;
        html.reserve(1536);
        html += "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>";
        html += "<tr><th>id</th><th>message</th></tr>";
        for (const Fortune& f : p.fortunes) {
            html += "<tr><td>";
            html += std::to_string(f.id);
            html += "</td><td>";
            vela::append_html_escaped(html, f.message);
            html += "</td></tr>";
        }
        html += "</table></body></html>";
        bytes += html.size();
        benchmark::DoNotOptimize(html);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_FortunesByHand);

void BM_CompileFortunes(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(vela::tmpl::Template::compile(kFortunes));
}
BENCHMARK(BM_CompileFortunes);

}  // namespace bench
