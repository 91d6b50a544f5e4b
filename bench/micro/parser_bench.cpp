// HTTP/1.1 request parser: ns per request and bytes per second.

#include <benchmark/benchmark.h>

#include <string>

#include "vela/http/request_parser.hpp"

namespace {

const std::string kSimple = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

const std::string kBrowser =
    "GET /api/v1/users/42/profile?fields=name,email&expand=true HTTP/1.1\r\n"
    "Host: www.example.com\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
    "Accept-Language: en-US,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Referer: https://www.example.com/users\r\n"
    "Connection: keep-alive\r\n"
    "Cookie: session=3f9a1c2b7d; theme=dark; lang=en\r\n"
    "Upgrade-Insecure-Requests: 1\r\n"
    "Sec-Fetch-Dest: document\r\n"
    "Sec-Fetch-Mode: navigate\r\n"
    "Cache-Control: max-age=0\r\n"
    "\r\n";

// Parses every request in `input` the way a connection does: parse, consume, reset.
void parse_all(benchmark::State& state, const std::string& input, int requests) {
    vela::ParserLimits limits;
    vela::RequestParser parser(&limits);
    vela::Request req;
    std::string buf = input;
    for (auto _ : state) {
        std::size_t off = 0;
        for (int i = 0; i < requests; ++i) {
            vela::ParseResult r = parser.parse(buf.data() + off, buf.size() - off, req);
            if (r != vela::ParseResult::complete) state.SkipWithError("parse failed");
            off += parser.consumed();
            parser.reset();
        }
        benchmark::DoNotOptimize(req.path().data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * buf.size()));
    state.SetItemsProcessed(state.iterations() * requests);
}

void BM_ParseSimpleGet(benchmark::State& state) { parse_all(state, kSimple, 1); }
void BM_ParseBrowserGet12Headers(benchmark::State& state) { parse_all(state, kBrowser, 1); }
void BM_ParsePipelined16(benchmark::State& state) {
    std::string in;
    for (int i = 0; i < 16; ++i) in += kSimple;
    parse_all(state, in, 16);
}

}  // namespace

BENCHMARK(BM_ParseSimpleGet);
BENCHMARK(BM_ParseBrowserGet12Headers);
BENCHMARK(BM_ParsePipelined16);
