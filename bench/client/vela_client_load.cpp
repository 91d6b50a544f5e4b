// vela_client_load: vela's HTTP client as a load generator, for bench/client/run
// (docs/benchmarks.md, "HTTP client").
//
// One vela::Loop on the calling thread (the runner pins the process with taskset), one
// vela::http::Client with max_connections_per_origin = --connections, decompression off and
// no User-Agent, and --connections coroutines on that loop, each doing
//
//     for (;;) co_await client.get(url);
//
// so every connection of the pool carries one request at a time, kept alive: the shape of
// `wrk -t1 -cN`. A response counts when its status is 200 and its body has --body-length
// bytes; any other status or length, and any exception, is an error. The window, the marks
// and the RESULT line are load_common.h's (the same code as vela_curl_multi_load's).
//
// With --h2c (before the other options) the client speaks HTTP/2 with prior knowledge: the
// --connections coroutines become that many concurrent streams on one shared connection,
// the shape of `h2load -t1 -c1 -mN`.

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <vela/async/task.hpp>
#include <vela/async/when_all.hpp>
#include <vela/client/client.hpp>
#include <vela/reactor/block_on.hpp>
#include <vela/reactor/loop.hpp>

#include "load_common.h"

namespace {

constexpr const char* kProg = "vela_client_load";

struct Run {
    Run(const load_options& o, vela::http::Client& c) : opt(o), client(c), url(o.url) {}

    const load_options& opt;
    vela::http::Client& client;
    const std::string url;
    load_counts counts{};
    bool stopping = false;
    load_mark first{}, second{};

    load_counts now() {
        counts.connects = client.stats().connections_opened;
        return counts;
    }

    void error(const char* what) {
        if (++counts.errors <= 5) std::fprintf(stderr, "%s: %s\n", kProg, what);
    }

    vela::Task<void> worker() {
        while (!stopping) {
            try {
                const vela::http::ClientResponse r = co_await client.get(url);
                if (r.status() != 200) {
                    error(("status " + std::to_string(r.status())).c_str());
                } else if (opt.body_length >= 0 &&
                           r.text().size() != static_cast<std::size_t>(opt.body_length)) {
                    error(("a body of " + std::to_string(r.text().size()) + " bytes").c_str());
                } else {
                    ++counts.responses;
                }
            } catch (const std::exception& e) {
                error(e.what());
            }
        }
    }

    // Marks the window's two ends on the loop, then lets the workers finish.
    vela::Task<void> clock() {
        using ms = std::chrono::milliseconds;
        co_await vela::sleep(ms(static_cast<long>(opt.warmup * 1000)));
        first = load_take_mark(&opt, now());
        co_await vela::sleep(ms(static_cast<long>(opt.duration * 1000)));
        second = load_take_mark(&opt, now());
        stopping = true;
    }

    vela::Task<void> all() {
        std::vector<vela::Task<void>> tasks;
        tasks.push_back(clock());
        for (long i = 0; i < opt.connections; ++i) tasks.push_back(worker());
        co_await vela::when_all(std::move(tasks));
    }
};

vela::http::ClientOptions client_options(const load_options& o, bool h2c) {
    vela::http::ClientOptions c;
    c.h2c = h2c;
    c.max_connections_per_origin = static_cast<std::size_t>(o.connections);
    c.max_idle_per_origin = static_cast<std::size_t>(o.connections);
    c.decompress = false;
    c.user_agent.clear();
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    const bool h2c = argc > 1 && std::string(argv[1]) == "--h2c";
    if (h2c) {
        argv[1] = argv[0];
        ++argv;
        --argc;
    }
    const load_options opt = load_parse(argc, argv, kProg);
    vela::http::Client client(client_options(opt, h2c));
    Run run(opt, client);
    try {
        vela::block_on(run.all());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", kProg, e.what());
        return 1;
    }
    return load_report(kProg, h2c ? "vela::http::Client (h2c)" : "vela::http::Client", &opt,
                       &run.first, &run.second, run.now());
}
