// Response serialization into a connection buffer.

#include <benchmark/benchmark.h>

#include "vela/base/buffer.hpp"
#include "vela/base/date_cache.hpp"
#include "vela/http/response_writer.hpp"

namespace {

void BM_SerializeHello(benchmark::State& state) {
    vela::DateCache date;
    vela::Buffer out(16 * 1024);
    vela::Response r("Hello, World!");
    for (auto _ : state) {
        vela::write_response(out, r, vela::WriteOptions{date.get(), true, false, false});
        benchmark::DoNotOptimize(out.data());
        state.SetBytesProcessed(state.bytes_processed() + static_cast<std::int64_t>(out.size()));
        out.clear();
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_SerializeJsonWithHeaders(benchmark::State& state) {
    vela::DateCache date;
    vela::Buffer out(16 * 1024);
    vela::Response r = vela::Response::json(R"({"status":"running","framework":"vela"})");
    r.add_header("X-Request-Id", "5f2c9a1e");
    r.add_header("Cache-Control", "no-store");
    for (auto _ : state) {
        vela::write_response(out, r, vela::WriteOptions{date.get(), true, false, false});
        benchmark::DoNotOptimize(out.data());
        state.SetBytesProcessed(state.bytes_processed() + static_cast<std::int64_t>(out.size()));
        out.clear();
    }
    state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(BM_SerializeHello);
BENCHMARK(BM_SerializeJsonWithHeaders);
