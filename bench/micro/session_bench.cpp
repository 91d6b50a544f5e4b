// The session lookup cost: what the sessions() middleware pays per request that carries a
// session cookie, before the handler runs. MemoryStore: finding an existing session among
// many (directly, through the asynchronous SessionStore interface, and from two threads at
// once on distinct sessions); CookieStore: opening (base64url + AES-256-GCM) and sealing a
// typical session; and the first typed read, which parses the values from JSON.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "vela/crypto/crypto.hpp"
#include "vela/middleware/session.hpp"

namespace {

using namespace std::chrono_literals;
using vela::MemoryStore;
using vela::SessionRecord;

// A logged-in user's session: a name, a role list, a counter and a CSRF token (~110 bytes).
SessionRecord typical() {
    SessionRecord r;
    r.data = R"({"user":"alice@example.com","roles":["user","editor"],"count":42,"csrf":")" +
             vela::crypto::random_token(16) + R"("})";
    r.created = r.accessed =
        std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    return r;
}

// Runs a task that completes without suspending and returns its value.
template <class T>
T run_now(vela::Task<T> t) {
    auto h = t.release();
    h.resume();
    T v = h.promise().take();
    h.destroy();
    return v;
}

struct Populated {
    MemoryStore store{{.max_sessions = 2'000'000, .max_bytes = 0}};
    std::vector<std::string> ids;
    explicit Populated(std::size_t n) {
        const SessionRecord rec = typical();
        for (std::size_t i = 0; i < n; ++i) {
            ids.push_back(vela::crypto::random_token(32));
            store.put(ids.back(), rec, 3600s);
        }
    }
};

Populated& populated(std::size_t n) {
    static Populated small(1'000);
    static Populated large(100'000);
    return n <= 1'000 ? small : large;
}

void BM_MemoryStoreFind(benchmark::State& state) {
    Populated& p = populated(static_cast<std::size_t>(state.range(0)));
    std::size_t i = static_cast<std::size_t>(state.thread_index()) * 7919;
    for (auto _ : state) {
        auto r = p.store.find(p.ids[i++ % p.ids.size()]);
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_MemoryStoreFind)->Arg(1'000)->Arg(100'000);
BENCHMARK(BM_MemoryStoreFind)->Arg(100'000)->Threads(2)->UseRealTime();

void BM_MemoryStoreLoadTask(benchmark::State& state) {
    Populated& p = populated(static_cast<std::size_t>(state.range(0)));
    vela::SessionStore& store = p.store;
    std::size_t i = 0;
    for (auto _ : state) {
        auto r = run_now(store.load(p.ids[i++ % p.ids.size()]));
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_MemoryStoreLoadTask)->Arg(100'000);

void BM_MemoryStoreSave(benchmark::State& state) {
    Populated& p = populated(100'000);
    const SessionRecord rec = typical();
    std::size_t i = 0;
    for (auto _ : state) p.store.put(p.ids[i++ % p.ids.size()], rec, 3600s);
}
BENCHMARK(BM_MemoryStoreSave);

void BM_CookieStoreOpen(benchmark::State& state) {
    vela::CookieStore cs({vela::crypto::random_token()});
    const std::string value = cs.seal(vela::crypto::random_token(32), typical(), "vela.sid");
    state.counters["cookie_bytes"] = static_cast<double>(value.size());
    for (auto _ : state) {
        auto r = cs.open(value, "vela.sid");
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_CookieStoreOpen);

// After a key rotation, a cookie sealed under the older of two secrets: two GCM attempts.
void BM_CookieStoreOpenOldKey(benchmark::State& state) {
    const std::string k1 = vela::crypto::random_token(), k2 = vela::crypto::random_token();
    const std::string value =
        vela::CookieStore({k1}).seal(vela::crypto::random_token(32), typical(), "vela.sid");
    vela::CookieStore cs({k2, k1});
    for (auto _ : state) {
        auto r = cs.open(value, "vela.sid");
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_CookieStoreOpenOldKey);

void BM_CookieStoreSeal(benchmark::State& state) {
    vela::CookieStore cs({vela::crypto::random_token()});
    const SessionRecord rec = typical();
    const std::string id = vela::crypto::random_token(32);
    for (auto _ : state) {
        auto v = cs.seal(id, rec, "vela.sid");
        benchmark::DoNotOptimize(v);
    }
}
BENCHMARK(BM_CookieStoreSeal);

// A handler's first read parses the record's values (what Session does once, lazily)...
void BM_SessionParseValues(benchmark::State& state) {
    const SessionRecord rec = typical();
    for (auto _ : state) {
        vela::json::Value v;
        auto err = vela::json::read(rec.data, v);
        benchmark::DoNotOptimize(err);
        benchmark::DoNotOptimize(v);
    }
}
BENCHMARK(BM_SessionParseValues);

// ...then each get<T> converts one value (a number goes through its JSON text).
void BM_SessionGetInt(benchmark::State& state) {
    vela::Session s(typical().created);
    s.set("count", 42);
    for (auto _ : state) {
        auto n = s.get<int>("count");
        benchmark::DoNotOptimize(n);
    }
}
BENCHMARK(BM_SessionGetInt);

void BM_SessionGetString(benchmark::State& state) {
    vela::Session s(typical().created);
    s.set("user", std::string("alice@example.com"));
    for (auto _ : state) {
        auto u = s.get<std::string>("user");
        benchmark::DoNotOptimize(u);
    }
}
BENCHMARK(BM_SessionGetString);

}  // namespace
