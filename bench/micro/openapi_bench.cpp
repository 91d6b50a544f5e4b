// Building the OpenAPI document of an app with 1,000 routes (openapi::document_json): what
// the first request to /openapi.json costs (it is built once, then cached).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vela/ops/openapi.hpp"
#include "vela/vela.hpp"

namespace bench_oa {

enum class Kind { a, b, c };
VELA_ENUM(Kind, a, b, c)

struct Tree {
    std::string name;
    std::vector<Tree> children;
};
VELA_REFLECT(Tree, VELA_REQUIRED(name), children)

struct Item {
    std::int64_t id = 0;
    std::string name;
    std::optional<std::string> note;
    Kind kind = Kind::a;
    std::map<std::string, double> prices;
    std::chrono::system_clock::time_point at;
    std::vector<Tree> trees;
};
VELA_REFLECT(Item, VELA_REQUIRED(id), VELA_REQUIRED(name), note, kind, prices, at, trees)

struct Page {
    int limit = 10;
    std::optional<std::string> after;
    std::vector<std::string> tag;
    Kind kind = Kind::a;
};
VELA_REFLECT(Page, limit, after, tag, kind)

}  // namespace bench_oa

namespace {

using namespace bench_oa;

// 1,000 routes, a quarter of each shape: a typed body, a query, a path parameter, plain text.
void add_routes(vela::App& app) {
    for (int i = 0; i < 250; ++i) {
        const std::string base = "/r" + std::to_string(i);
        app.post(base + "/items", [](vela::Json<Item> it) { return it; })
            .summary("Create")
            .tag("items")
            .security_bearer();
        app.get(base + "/items", [](vela::Query<Page>) { return std::vector<Item>{}; })
            .tag("items");
        app.get(base + "/items/{id:int}", [](vela::Request&) { return Tree{}; })
            .operation_id("get" + std::to_string(i))
            .response(404, "No such item");
        app.get(base + "/text", [] { return "text"; });
    }
}

void BM_OpenApiDocument1000Routes(benchmark::State& state) {
    vela::App app;
    add_routes(app);
    std::size_t bytes = 0;
    for (auto _ : state) {
        std::string doc = vela::openapi::document_json(app, {.title = "Bench"});
        bytes = doc.size();
        benchmark::DoNotOptimize(doc);
    }
    state.counters["doc_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_OpenApiDocument1000Routes)->Unit(benchmark::kMillisecond);

}  // namespace
