// Response serialization into a connection buffer.

#include <benchmark/benchmark.h>

#include "vela/base/buffer.hpp"
#include "vela/base/date_cache.hpp"
#include "vela/http/response_writer.hpp"

namespace {

// Serializes `r` into a reused buffer once per iteration.
void serialize(benchmark::State& state, const vela::Response& r) {
    vela::DateCache date;
    vela::Buffer out(16 * 1024);
    std::int64_t bytes = 0;
    for (auto _ : state) {
        vela::write_response(out, r, vela::WriteOptions{date.get(), true, false, false});
        benchmark::DoNotOptimize(out.data());
        bytes += static_cast<std::int64_t>(out.size());
        out.clear();
    }
    state.SetBytesProcessed(bytes);
    state.SetItemsProcessed(state.iterations());
}

void BM_SerializeHello(benchmark::State& state) {
    serialize(state, vela::Response("Hello, World!"));
}

void BM_SerializeJsonWithHeaders(benchmark::State& state) {
    vela::Response r = vela::Response::json(R"({"status":"running","framework":"vela"})");
    r.add_header("X-Request-Id", "5f2c9a1e");
    r.add_header("Cache-Control", "no-store");
    serialize(state, r);
}

}  // namespace

BENCHMARK(BM_SerializeHello);
BENCHMARK(BM_SerializeJsonWithHeaders);
