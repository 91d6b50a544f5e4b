// Router: static hit, parameter hit and miss among 200 routes.

#include <benchmark/benchmark.h>

#include <string>

#include "vela/web/router.hpp"

namespace {

vela::Router make_router() {
    vela::Router r;
    std::int32_t id = 0;
    for (int i = 0; i < 100; ++i)
        r.add(vela::Method::GET, "/static/path/number/" + std::to_string(i), id++);
    for (int i = 0; i < 100; ++i)
        r.add(vela::Method::GET, "/api/v" + std::to_string(i) + "/users/{id:int}/posts/{post}",
              id++);
    return r;
}

void run(benchmark::State& state, const std::string& path) {
    static const vela::Router router = make_router();
    vela::Request req;
    for (auto _ : state) {
        vela::Router::Match m = router.match(vela::Method::GET, path, req);
        benchmark::DoNotOptimize(m);
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_RouterStaticHit(benchmark::State& s) { run(s, "/static/path/number/57"); }
void BM_RouterParamHit(benchmark::State& s) { run(s, "/api/v57/users/42/posts/hello"); }
void BM_RouterMiss(benchmark::State& s) { run(s, "/api/v57/users/abc/posts/hello"); }

}  // namespace

BENCHMARK(BM_RouterStaticHit);
BENCHMARK(BM_RouterParamHit);
BENCHMARK(BM_RouterMiss);
