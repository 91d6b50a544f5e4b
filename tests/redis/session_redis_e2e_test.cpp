// Sessions in Redis end to end: an App on loopback with sessions({.store = RedisStore}),
// driven by real HTTP requests; the test looks into Redis with a client of its own.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "db/servers.hpp"
#include "e2e/client.hpp"
#include "e2e/session_routes.hpp"
#include "redis/run.hpp"
#include "vela/redis_store.hpp"
#include "vela/vela.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;
using e2e::HttpResponse;
using test::run_on_loop;

HttpResponse send(std::uint16_t port, const std::string& raw) {
    e2e::Client c = e2e::Client::tcp(port);
    EXPECT_TRUE(c.connected());
    EXPECT_TRUE(c.send(raw));
    std::optional<HttpResponse> r = c.read_response();
    EXPECT_TRUE(r) << c.error();
    return r ? *r : HttpResponse{};
}

std::string cookie_header(const std::string& sid) {
    return sid.empty() ? std::string() : "Cookie: vela.sid=" + sid + "\r\n";
}

HttpResponse get(std::uint16_t port, std::string_view path, const std::string& sid = {}) {
    return send(port, e2e::get_request(path, cookie_header(sid)));
}

HttpResponse post(std::uint16_t port, std::string_view path, std::string_view body,
                  const std::string& sid = {}) {
    return send(port, e2e::request_with_body("POST", path, body, cookie_header(sid)));
}

// The session id a response's Set-Cookie gives (empty when it sets none).
std::string sid_of(const HttpResponse& r) {
    for (const auto& [n, v] : r.headers) {
        if (!e2e::iequal(n, "Set-Cookie") || v.rfind("vela.sid=", 0) != 0) continue;
        return v.substr(9, v.find(';') - 9);
    }
    return {};
}

struct RedisSessionServer {
    App app;
    std::shared_ptr<redis::Client> redis;
    std::string prefix = "e2e:" + std::to_string(::getpid()) + ":";
    std::uint16_t port = 0;

    RedisSessionServer(const std::string& url, std::chrono::seconds idle, unsigned threads) {
        redis = std::make_shared<redis::Client>(url);
        e2e::quick_options(app.options());
        SessionOptions o;
        o.store = std::make_shared<RedisStore>(redis, RedisStoreOptions{.key_prefix = prefix});
        o.idle_timeout = idle;
        app.use(sessions(std::move(o)));
        e2e::add_session_routes(app);
        e2e::start_app(app, threads);
        port = app.port();
    }
};

// What Redis holds for session `sid` (nullopt: no key), read with a client of the test's own.
std::optional<std::string> stored(const std::string& url, const std::string& key) {
    redis::Client c(url);
    return run_on_loop(c.get(key));
}

TEST(RedisSessionE2E, LoginReadLogoutThroughHttpWithTheDataInRedis) {
    VELA_NEED_REDIS(url);
    RedisSessionServer s(url, 30min, 2);

    HttpResponse first = get(s.port, "/count");
    EXPECT_EQ(first.body, "1");
    const std::string anon = sid_of(first);
    ASSERT_FALSE(anon.empty());
    EXPECT_EQ(get(s.port, "/count", anon).body, "2");

    HttpResponse login = post(s.port, "/login", "alice", anon);
    EXPECT_EQ(login.body, "welcome");
    const std::string sid = sid_of(login);
    ASSERT_FALSE(sid.empty());
    EXPECT_NE(sid, anon) << "login regenerates the id";
    EXPECT_EQ(stored(url, s.prefix + anon), std::nullopt) << "the old id is erased";

    // The record in Redis: the session's values as JSON, with the idle timeout as TTL.
    std::optional<std::string> raw = stored(url, s.prefix + sid);
    ASSERT_TRUE(raw);
    std::optional<SessionRecord> rec = SessionRecord::decode(*raw);
    ASSERT_TRUE(rec);
    EXPECT_NE(rec->data.find(R"("user":"alice")"), std::string::npos) << rec->data;
    EXPECT_NE(rec->data.find(R"("count":2)"), std::string::npos) << rec->data;
    {
        redis::Client c(url);
        const std::int64_t ttl = run_on_loop(c.command("TTL", s.prefix + sid)).as_integer();
        EXPECT_GT(ttl, 1700);
        EXPECT_LE(ttl, 1800);
    }

    // Requests on both loops (two threads) see it.
    for (int i = 0; i < 6; ++i) EXPECT_EQ(get(s.port, "/whoami", sid).body, "alice");
    EXPECT_EQ(get(s.port, "/whoami").body, "anonymous");

    EXPECT_EQ(post(s.port, "/logout", "", sid).body, "bye");
    EXPECT_EQ(stored(url, s.prefix + sid), std::nullopt) << "logout erases the key";
    EXPECT_EQ(get(s.port, "/whoami", sid).body, "anonymous") << "the old cookie is worthless";
}

TEST(RedisSessionE2E, IdleSessionsExpireInRedis) {
    VELA_NEED_REDIS(url);
    RedisSessionServer s(url, 1s, 1);
    HttpResponse login = post(s.port, "/login", "bob");
    const std::string sid = sid_of(login);
    ASSERT_FALSE(sid.empty());
    EXPECT_EQ(get(s.port, "/whoami", sid).body, "bob");
    EXPECT_TRUE(stored(url, s.prefix + sid));
    std::this_thread::sleep_for(2200ms);  // Redis's TTL (1 s) runs out
    EXPECT_EQ(stored(url, s.prefix + sid), std::nullopt);
    EXPECT_EQ(get(s.port, "/whoami", sid).body, "anonymous");
}

TEST(RedisSessionE2E, AStoppedRedisIsA500AndSessionsComeBackWithIt) {
    VELA_NEED_REDIS(url);
    RedisSessionServer s(url, 30min, 1);
    const std::string sid = sid_of(post(s.port, "/login", "carol"));
    ASSERT_FALSE(sid.empty());
    ASSERT_TRUE(test::db_servers("redis-stop"));
    EXPECT_EQ(get(s.port, "/whoami", sid).status, 500);
    ASSERT_TRUE(test::db_servers("redis-start"));
    // The server keeps its data across the restart only if it saved it; a fresh login works.
    const std::string again = sid_of(post(s.port, "/login", "carol"));
    ASSERT_FALSE(again.empty());
    EXPECT_EQ(get(s.port, "/whoami", again).body, "carol");
}

}  // namespace
}  // namespace vela
