// /ready with a readiness check against the real PostgreSQL and MariaDB servers of the data
// tests: 200 while the server answers, 503 once it is stopped (scripts/db-servers pg-stop,
// my-stop), 200 again after a restart.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "db/servers.hpp"
#include "e2e/client.hpp"
#include "vela/db/db.hpp"
#include "vela/json/codec.hpp"
#include "vela/json/value.hpp"
#include "vela/ops/health.hpp"

namespace vela::e2e {
namespace {

// Restarts the server at the end of the test whatever happened (the other data tests need it).
struct Restart {
    std::string start;  // the db-servers command
    bool stopped = false;
    ~Restart() {
        if (stopped) {
            EXPECT_TRUE(test::db_servers(start));
        }
    }
};

HttpResponse probe(std::uint16_t port) {
    Client c = Client::tcp(port, Ms{10'000});
    EXPECT_TRUE(c.send(get_request("/ready")));
    auto r = c.read_response();
    EXPECT_TRUE(r) << c.error();
    return r ? *r : HttpResponse{};
}

// Probes until the status is `want` or `limit` passes; returns the last answer.
HttpResponse probe_until(std::uint16_t port, int want, Ms limit) {
    const auto t0 = SteadyClock::now();
    HttpResponse r = probe(port);
    while (r.status != want && ms_since(t0) < limit.count()) {
        std::this_thread::sleep_for(Ms{100});
        r = probe(port);
    }
    return r;
}

// The server of `url` (`name` in the checks) stopped and started with db-servers
// `<prefix>-stop` and `<prefix>-start`.
void ready_follows_the_server(const std::string& url, const std::string& name,
                              const std::string& prefix) {
    if (test::env_or_empty("VELA_TEST_DB_SCRIPT").empty()) {
        if (test::in_ci()) FAIL() << "VELA_TEST_DB_SCRIPT unset in CI";
        GTEST_SKIP() << "*** SKIPPED: needs scripts/db-servers (VELA_TEST_DB_SCRIPT) ***";
    }
    db::Options o;
    o.connect_timeout = Ms{1000};
    o.reconnect_backoff = Ms{50};
    o.reconnect_backoff_max = Ms{200};
    o.health_check_after = Ms{0};  // an idle connection is checked before each use
    db::Database database(url, o);
    Restart restart{prefix + "-start"};
    {
        App app;
        quick_options(app.options());
        vela::health(app, {.timeout = Ms{3000}});
        vela::ready_check(app, name, [&database]() -> Task<bool> {
            co_await database.query("SELECT 1");
            co_return true;
        });
        start_app(app, 1);
        const std::uint16_t port = app.port();

        HttpResponse r = probe(port);
        ASSERT_EQ(r.status, 200) << r.body;
        EXPECT_TRUE(json::parse<json::Value>(r.body)["checks"][name]["ok"].as_bool());

        ASSERT_TRUE(test::db_servers(prefix + "-stop"));
        restart.stopped = true;
        r = probe_until(port, 503, Ms{8000});
        ASSERT_EQ(r.status, 503) << r.body;
        const json::Value down = json::parse<json::Value>(r.body);
        EXPECT_EQ(down["status"].as_string(), "not ready");
        EXPECT_FALSE(down["checks"][name]["ok"].as_bool());
        EXPECT_FALSE(down["checks"][name]["error"].as_string().empty()) << r.body;
        // The server is gone, not slow: the check fails on its own error before the timeout.
        EXPECT_LT(down["checks"][name]["ms"].as_double(), 3000.0) << r.body;

        ASSERT_TRUE(test::db_servers(prefix + "-start"));
        restart.stopped = false;
        r = probe_until(port, 200, Ms{15000});
        EXPECT_EQ(r.status, 200) << r.body;
        app.stop();
        app.wait();
    }
}

TEST(HealthPostgres, ReadyFollowsTheRealServerDownAndBack) {
    VELA_NEED_PG(url);
    ready_follows_the_server(url, "postgres", "pg");
}

TEST(HealthMysql, ReadyFollowsTheRealServerDownAndBack) {
    VELA_NEED_MYSQL(url);
    ready_follows_the_server(url, "mysql", "my");
}

}  // namespace
}  // namespace vela::e2e
