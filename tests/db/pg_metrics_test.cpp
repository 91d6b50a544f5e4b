// vela::metrics with a PostgreSQL pool (vela/pg_metrics.hpp), against the real server: the
// pool gauges show a connection busy while a handler's statement runs, and idle afterwards.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "db/servers.hpp"
#include "e2e/client.hpp"
#include "vela/db/postgres.hpp"
#include "vela/pg_metrics.hpp"
#include "vela/vela.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;

// The value of the sample line that starts with `series` (followed by a space); -1 if none.
double sample(const std::string& text, const std::string& series) {
    const std::string key = "\n" + series + " ";
    const auto at = text.find(key);
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + key.size()));
}

TEST(PgMetrics, PoolGaugesFollowAStatementInFlight) {
    VELA_NEED_PG(url);
    db::Database db(url);
    App app;
    app.get("/slow", [&db](Request&) -> Task<Response> {
        auto v = co_await db.query_one<std::int64_t>("SELECT 7 FROM pg_sleep(0.6)");
        co_return std::to_string(v.value_or(-1));
    });
    MetricsOptions m;
    m.lag_interval = 20ms;
    m.pools.push_back(pg_pool_source("main", db));
    vela::metrics(app, std::move(m));
    app.listen("127.0.0.1:0");
    app.start(1);
    const std::uint16_t port = app.port();

    std::string slow_body;
    std::thread slow([&] {
        e2e::Client c = e2e::Client::tcp(port);
        c.send(e2e::get_request("/slow"));
        if (auto r = c.read_response()) slow_body = r->body;
    });
    auto scrape = [port] {
        e2e::Client c = e2e::Client::tcp(port);
        c.send(e2e::get_request("/metrics"));
        auto r = c.read_response();
        return r ? r->body : std::string();
    };
    std::string text;
    for (int i = 0; i < 100 && sample(text, "vela_db_pool_busy{pool=\"main\"}") != 1; ++i) {
        std::this_thread::sleep_for(10ms);
        text = scrape();
    }
    EXPECT_EQ(sample(text, "vela_db_pool_busy{pool=\"main\"}"), 1) << text;
    EXPECT_GE(sample(text, "vela_db_pool_connections{pool=\"main\"}"), 1) << text;
    EXPECT_EQ(sample(text, "vela_db_pool_waiting{pool=\"main\"}"), 0) << text;
    slow.join();
    EXPECT_EQ(slow_body, "7");
    for (int i = 0; i < 100 && sample(text, "vela_db_pool_busy{pool=\"main\"}") != 0; ++i) {
        std::this_thread::sleep_for(10ms);
        text = scrape();
    }
    EXPECT_EQ(sample(text, "vela_db_pool_busy{pool=\"main\"}"), 0) << text;
    EXPECT_GE(sample(text, "vela_db_pool_connections{pool=\"main\"}"), 1) << text;
    app.stop();
    app.wait();
}

}  // namespace
}  // namespace vela
