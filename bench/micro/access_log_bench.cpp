// Per-request cost of request_id() and access_log(): their hooks called directly on a parsed
// request (what a route pays for installing them), the line formatting alone, and the id
// generators compared (batched CSPRNG bytes vs one crypto::random_token call per id).

#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <string_view>

#include "vela/crypto/crypto.hpp"
#include "vela/http/request_parser.hpp"
#include "vela/middleware/access_log.hpp"
#include "vela/middleware/request_id.hpp"

namespace {

// A request parsed once (its fields are views into `raw`).
struct Parsed {
    std::string raw;
    vela::ParserLimits limits;
    vela::RequestParser parser{&limits};
    vela::Request req;
    explicit Parsed(std::string extra)
        : raw("GET /api/users/42?fields=name HTTP/1.1\r\nHost: example.com\r\n"
              "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 "
              "Firefox/120.0\r\nAccept: */*\r\nReferer: https://example.com/start\r\n" +
              extra + "\r\n") {
        parser.parse(raw.data(), raw.size(), req);
    }
};

void BM_RequestIdGenerated(benchmark::State& state) {
    Parsed p("");
    vela::RequestId mw = vela::request_id();
    vela::Response res("Hello, World!");
    for (auto _ : state) {
        mw.start(p.req);
        mw.finish(p.req, res);
        res.remove_header("X-Request-Id");  // a fresh response each time
        benchmark::DoNotOptimize(vela::request_id(p.req).data());
    }
}
BENCHMARK(BM_RequestIdGenerated);

void BM_RequestIdAccepted(benchmark::State& state) {
    Parsed p("X-Request-Id: 0f8fad5b-d9cb-469f-a165-70867728950e\r\n");
    vela::RequestId mw = vela::request_id();
    vela::Response res("Hello, World!");
    for (auto _ : state) {
        mw.start(p.req);
        mw.finish(p.req, res);
        res.remove_header("X-Request-Id");
        benchmark::DoNotOptimize(vela::request_id(p.req).data());
    }
}
BENCHMARK(BM_RequestIdAccepted);

void BM_ResponseHeaderAddRemove(benchmark::State& state) {  // the baseline inside the two above
    vela::Response res("Hello, World!");
    for (auto _ : state) {
        res.add_header("X-Request-Id", "0123456789abcdef");
        res.remove_header("X-Request-Id");
    }
}
BENCHMARK(BM_ResponseHeaderAddRemove);

void BM_GenerateRequestId(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(vela::generate_request_id());
}
BENCHMARK(BM_GenerateRequestId);

void BM_CryptoRandomToken12(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(vela::crypto::random_token(12));
}
BENCHMARK(BM_CryptoRandomToken12);

void BM_SteadyClockNow(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}
BENCHMARK(BM_SteadyClockNow);

void format_only(benchmark::State& state, vela::AccessLogFormat f) {
    vela::AccessLogEntry e;
    e.time = std::chrono::system_clock::now();
    e.remote = "203.0.113.7";
    e.method = "GET";
    e.target = "/api/users/42?fields=name";
    e.status = 200;
    e.bytes = 13;
    e.latency_us = 42;
    e.request_id = "0f8fad5b-d9cb-469f";
    e.user_agent = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0";
    e.referer = "https://example.com/start";
    std::string out;
    for (auto _ : state) {
        out.clear();
        vela::format_access_log(e, f, true, out);
        benchmark::DoNotOptimize(out.data());
    }
}
void BM_FormatCommon(benchmark::State& s) { format_only(s, vela::AccessLogFormat::common); }
void BM_FormatCombined(benchmark::State& s) { format_only(s, vela::AccessLogFormat::combined); }
void BM_FormatJson(benchmark::State& s) { format_only(s, vela::AccessLogFormat::json); }
BENCHMARK(BM_FormatCommon);
BENCHMARK(BM_FormatCombined);
BENCHMARK(BM_FormatJson);

// The hooks with a logging thread that discards the lines: the request thread's whole cost.
void hooks(benchmark::State& state, vela::AccessLogFormat f) {
    Parsed p("X-Request-Id: 0f8fad5b-d9cb-469f-a165-70867728950e\r\n");
    vela::RequestId rid = vela::request_id();
    rid.start(p.req);
    vela::AccessLog log =
        vela::access_log({.format = f, .queue_size = 1 << 16, .writer = [](std::string_view) {}});
    const vela::Response res("Hello, World!");
    for (auto _ : state) {
        log.start(p.req);
        log.finish(p.req, res);
    }
    log.flush();
    state.counters["dropped"] = static_cast<double>(log.dropped());
}
void BM_AccessLogHooksCommon(benchmark::State& s) { hooks(s, vela::AccessLogFormat::common); }
void BM_AccessLogHooksCombined(benchmark::State& s) { hooks(s, vela::AccessLogFormat::combined); }
void BM_AccessLogHooksJson(benchmark::State& s) { hooks(s, vela::AccessLogFormat::json); }
BENCHMARK(BM_AccessLogHooksCommon);
BENCHMARK(BM_AccessLogHooksCombined);
BENCHMARK(BM_AccessLogHooksJson);

}  // namespace
