// /health and /ready over real sockets: checks passing, failing, throwing and hanging, the
// cache, custom paths, and readiness during a graceful stop (ServerOptions::drain_delay).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

#include "e2e/client.hpp"
#include "vela/json/codec.hpp"
#include "vela/json/value.hpp"
#include "vela/ops/health.hpp"

namespace vela::e2e {
namespace {

HttpResponse fetch(std::uint16_t port, std::string_view path, bool head = false) {
    Client c = Client::tcp(port);
    const std::string req =
        head ? "HEAD " + std::string(path) + " HTTP/1.1\r\nHost: x\r\n\r\n" : get_request(path);
    EXPECT_TRUE(c.send(req));
    auto r = c.read_response(head);
    EXPECT_TRUE(r) << path << ": " << c.error();
    return r ? *r : HttpResponse{};
}

json::Value body_of(const HttpResponse& r) {
    try {
        return json::parse<json::Value>(r.body);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not JSON (" << e.what() << "): " << r.body;
        return {};
    }
}

// A check the test holds until it lets go (a hung database, without leaking a sleeping frame
// at the end of the test).
struct Gate {
    std::atomic<bool> open{false};
    std::atomic<int> started{0};
    ReadyCheck check() {
        return [this]() -> Task<bool> {
            started.fetch_add(1);
            while (!open.load()) co_await vela::sleep(Ms{10});
            co_return true;
        };
    }
};

class HealthE2E : public ::testing::Test {
  protected:
    void SetUp() override { quick_options(app.options()); }
    App app;
};

TEST_F(HealthE2E, LivenessIs200WithoutRunningChecks) {
    std::atomic<int> runs{0};
    vela::health(app);
    vela::ready_check(app, "counted", [&runs]() -> Task<bool> {
        runs.fetch_add(1);
        co_return true;
    });
    start_app(app);
    const HttpResponse r = fetch(app.port(), "/health");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(body_of(r)["status"].as_string(), "alive");
    EXPECT_EQ(r.header("Cache-Control"), "no-store");
    EXPECT_EQ(r.header("Content-Type").substr(0, 16), "application/json");
    EXPECT_EQ(runs.load(), 0) << "liveness ran a readiness check";
    const HttpResponse h = fetch(app.port(), "/health", /*head=*/true);
    EXPECT_EQ(h.status, 200);
    EXPECT_TRUE(h.body.empty());
}

TEST_F(HealthE2E, ReadyIs200WhenEveryCheckPasses) {
    vela::ready_check(app, "sync",
                      []() -> Task<bool> { co_return true; });  // added before health()
    vela::health(app);
    vela::ready_check(app, "slow", []() -> Task<bool> {
        co_await vela::sleep(Ms{30});
        co_return true;
    });
    start_app(app);
    const HttpResponse r = fetch(app.port(), "/ready");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("Cache-Control"), "no-store");
    const json::Value v = body_of(r);
    EXPECT_EQ(v["status"].as_string(), "ready");
    ASSERT_EQ(v["checks"].size(), 2u) << r.body;
    EXPECT_TRUE(v["checks"]["sync"]["ok"].as_bool());
    EXPECT_TRUE(v["checks"]["slow"]["ok"].as_bool());
    EXPECT_GE(v["checks"]["slow"]["ms"].as_double(), 25.0) << r.body;
    EXPECT_EQ(v["checks"]["slow"].find("error"), nullptr);
}

TEST_F(HealthE2E, ReadyWithoutChecksIs200) {
    vela::health(app);
    start_app(app);
    const HttpResponse r = fetch(app.port(), "/ready");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, R"({"status":"ready","checks":{}})");
}

TEST_F(HealthE2E, ACheckReturningFalseIs503) {
    vela::health(app);
    vela::ready_check(app, "ok", []() -> Task<bool> { co_return true; });
    vela::ready_check(app, "db", []() -> Task<bool> {
        co_await vela::sleep(Ms{5});
        co_return false;
    });
    start_app(app);
    const HttpResponse r = fetch(app.port(), "/ready");
    EXPECT_EQ(r.status, 503) << r.body;
    const json::Value v = body_of(r);
    EXPECT_EQ(v["status"].as_string(), "not ready");
    EXPECT_TRUE(v["checks"]["ok"]["ok"].as_bool());
    EXPECT_FALSE(v["checks"]["db"]["ok"].as_bool());
    EXPECT_EQ(v["checks"]["db"]["error"].as_string(), "check returned false");
}

TEST_F(HealthE2E, AThrowingCheckIs503WithItsMessageNot500) {
    vela::health(app);
    vela::ready_check(app, "after-await", []() -> Task<bool> {
        co_await vela::sleep(Ms{5});
        throw std::runtime_error("connection refused: \"db\"\n");
    });
    vela::ready_check(app, "at-once", []() -> Task<bool> {
        throw std::logic_error("thrown before the first suspension");
        co_return true;
    });
    vela::ready_check(app, "by-the-function", []() -> Task<bool> {
        throw std::runtime_error("no task at all");  // thrown when the check is called
    });
    start_app(app);
    const HttpResponse r = fetch(app.port(), "/ready");
    EXPECT_EQ(r.status, 503) << r.body;
    const json::Value v = body_of(r);
    EXPECT_EQ(v["checks"]["after-await"]["error"].as_string(), "connection refused: \"db\"\n");
    EXPECT_EQ(v["checks"]["at-once"]["error"].as_string(), "thrown before the first suspension");
    EXPECT_FALSE(v["checks"]["at-once"]["ok"].as_bool());
    EXPECT_EQ(v["checks"]["by-the-function"]["error"].as_string(), "no task at all");
}

TEST_F(HealthE2E, DetailsOffHidesErrorMessages) {
    vela::health(app, {.details = false});
    vela::ready_check(app, "db",
                      []() -> Task<bool> { throw std::runtime_error("password=hunter2"); });
    start_app(app);
    const HttpResponse r = fetch(app.port(), "/ready");
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.body.find("hunter2"), std::string::npos) << r.body;
    EXPECT_FALSE(body_of(r)["checks"]["db"]["ok"].as_bool());
}

TEST_F(HealthE2E, AHangingCheckTimesOutAndIsNotStartedTwice) {
    Gate gate;
    vela::health(app, {.timeout = Ms{2000}});
    vela::ready_check(app, "hung", gate.check(), Ms{150});
    vela::ready_check(app, "fine", []() -> Task<bool> { co_return true; });
    start_app(app);

    auto t0 = SteadyClock::now();
    HttpResponse r = fetch(app.port(), "/ready");
    const auto took = ms_since(t0);
    EXPECT_EQ(r.status, 503) << r.body;
    EXPECT_GE(took, 140);
    EXPECT_LT(took, 1500) << "the probe waited for the hung check";
    json::Value v = body_of(r);
    EXPECT_EQ(v["checks"]["hung"]["error"].as_string(), "timed out after 150 ms");
    EXPECT_GE(v["checks"]["hung"]["ms"].as_double(), 140.0);
    EXPECT_TRUE(v["checks"]["fine"]["ok"].as_bool());

    // The first run still hangs: the next probe reports it without starting another.
    r = fetch(app.port(), "/ready");
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(body_of(r)["checks"]["hung"]["error"].as_string(),
              "still running (an earlier run outlasted its timeout)");
    EXPECT_EQ(gate.started.load(), 1);

    gate.open = true;  // the database is back: the old run ends, the next probe passes
    t0 = SteadyClock::now();
    do {
        std::this_thread::sleep_for(Ms{20});
        r = fetch(app.port(), "/ready");
    } while (r.status != 200 && ms_since(t0) < 2000);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(gate.started.load(), 2);
}

TEST_F(HealthE2E, ChecksRunConcurrently) {
    vela::health(app);
    for (const char* name : {"a", "b", "c", "d"})
        vela::ready_check(app, name, []() -> Task<bool> {
            co_await vela::sleep(Ms{200});
            co_return true;
        });
    start_app(app);
    const auto t0 = SteadyClock::now();
    const HttpResponse r = fetch(app.port(), "/ready");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_LT(ms_since(t0), 600) << "four 200 ms checks ran one after another";
}

TEST_F(HealthE2E, CachedAnswersSpareTheChecks) {
    std::atomic<int> runs{0};
    std::atomic<bool> healthy{true};
    vela::health(app, {.cache = Ms{400}});
    vela::ready_check(app, "counted", [&]() -> Task<bool> {
        runs.fetch_add(1);
        co_await vela::sleep(Ms{5});
        co_return healthy.load();
    });
    start_app(app, 2);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(fetch(app.port(), "/ready").status, 200);
    EXPECT_EQ(runs.load(), 1) << "probes within the cache interval ran the checks again";
    healthy = false;
    EXPECT_EQ(fetch(app.port(), "/ready").status, 200) << "the cached answer was not used";
    std::this_thread::sleep_for(Ms{450});
    const HttpResponse r = fetch(app.port(), "/ready");
    EXPECT_EQ(r.status, 503) << r.body;
    EXPECT_EQ(runs.load(), 2);
}

TEST_F(HealthE2E, PathsAreConfigurable) {
    vela::health(app, {.live_path = "/livez", .ready_path = "/readyz"});
    start_app(app);
    EXPECT_EQ(fetch(app.port(), "/livez").status, 200);
    EXPECT_EQ(fetch(app.port(), "/readyz").status, 200);
    EXPECT_EQ(fetch(app.port(), "/health").status, 404);
    EXPECT_EQ(fetch(app.port(), "/ready").status, 404);
}

TEST(HealthOptionsTest, MistakesAreOneLineErrors) {
    App app;
    EXPECT_THROW(vela::health(app, {.timeout = Ms{0}}), std::invalid_argument);
    EXPECT_THROW(vela::health(app, {.ready_path = "ready"}), std::invalid_argument);
    EXPECT_THROW(vela::ready_check(app, "", [] { return Task<bool>{}; }), std::invalid_argument);
    EXPECT_THROW(vela::ready_check(app, "x", nullptr), std::invalid_argument);
    vela::ready_check(app, "db", []() -> Task<bool> { co_return true; });
    try {
        vela::ready_check(app, "db", []() -> Task<bool> { co_return true; });
        ADD_FAILURE() << "a repeated name was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "ready_check 'db' added twice");
    }
    vela::health(app);
    EXPECT_THROW(vela::health(app), std::logic_error);
}

// A graceful stop with drain_delay: /ready says 503 "draining" at once while the listeners
// still accept, /health still says 200, the request in flight completes, and once the delay
// is over the listeners close (new connections are refused).
TEST_F(HealthE2E, ReadyIs503WhileDrainingAndHealthStillAnswers) {
    std::atomic<bool> slow_started{false};
    app.options().drain_delay = Ms{1000};
    vela::health(app);
    vela::ready_check(app, "db", []() -> Task<bool> { co_return true; });
    app.get("/slow", [&slow_started](Request&) -> Task<Response> {
        slow_started = true;
        co_await vela::sleep(Ms{300});
        co_return "slow done";
    });
    start_app(app, 2);
    const std::uint16_t port = app.port();
    EXPECT_EQ(fetch(port, "/ready").status, 200);
    EXPECT_FALSE(app.stopping());

    Client slow = Client::tcp(port);
    ASSERT_TRUE(slow.send(get_request("/slow")));
    const auto wait_start = SteadyClock::now();
    while (!slow_started && ms_since(wait_start) < 2000) std::this_thread::sleep_for(Ms{1});
    ASSERT_TRUE(slow_started);

    const auto t0 = SteadyClock::now();
    app.stop();
    EXPECT_TRUE(app.stopping());
    HttpResponse r = fetch(port, "/ready");
    EXPECT_EQ(r.status, 503) << r.body;
    EXPECT_EQ(r.body, R"({"status":"draining"})");
    EXPECT_EQ(fetch(port, "/health").status, 200);
    EXPECT_LT(ms_since(t0), 900) << "probes were not answered during the drain delay";

    auto done = slow.read_response();
    ASSERT_TRUE(done) << slow.error();
    EXPECT_EQ(done->status, 200);
    EXPECT_EQ(done->body, "slow done");

    // After the delay the drain proper runs: the listeners close.
    while (ms_since(t0) < 1500 && net::connect_tcp("127.0.0.1", port) >= 0)
        std::this_thread::sleep_for(Ms{20});
    const int fd = net::connect_tcp("127.0.0.1", port);
    EXPECT_LT(fd, 0) << "still accepting 1.5 s after stop() with a 1 s drain delay";
    if (fd >= 0) ::close(fd);
    auto waited = std::async(std::launch::async, [this] { return app.wait(); });
    ASSERT_EQ(waited.wait_for(std::chrono::seconds(3)), std::future_status::ready);
    EXPECT_GE(ms_since(t0), 950) << "the drain did not wait for drain_delay";
}

// Without drain_delay the drain begins at once: the listeners close, so a probe is refused
// (connection refused) rather than answered; a load balancer takes that as not ready too.
TEST_F(HealthE2E, WithoutDrainDelayProbesAreRefusedOnceStopped) {
    vela::health(app);
    start_app(app);
    const std::uint16_t port = app.port();
    EXPECT_EQ(fetch(port, "/ready").status, 200);
    app.stop();
    app.wait();
    EXPECT_LT(net::connect_tcp("127.0.0.1", port), 0);
}

}  // namespace
}  // namespace vela::e2e
