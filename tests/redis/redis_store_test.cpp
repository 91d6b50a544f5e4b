// RedisStore against the real server: each operation, and what it leaves in Redis.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "db/servers.hpp"
#include "redis/run.hpp"
#include "vela/redis_store.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;
using test::run_on_loop;

SessionRecord record(std::string data) {
    SessionRecord r;
    r.data = std::move(data);
    r.created = SessionTime(1'700'000'000s);
    r.accessed = SessionTime(1'700'000'100s);
    return r;
}

struct StoreTest : ::testing::Test {
    std::shared_ptr<redis::Client> client;
    std::unique_ptr<RedisStore> store;
    std::string id = "id-" + std::to_string(::getpid()) + "-" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();

    void make(const std::string& url) {
        client = std::make_shared<redis::Client>(url);
        store = std::make_unique<RedisStore>(client, RedisStoreOptions{.key_prefix = "test:sess:"});
    }
};

TEST_F(StoreTest, SaveThenLoadKeepsTheRecordUnderThePrefixWithItsTtl) {
    VELA_NEED_REDIS(url);
    make(url);
    EXPECT_EQ(store->key("abc"), "test:sess:abc");
    const SessionRecord r = record(R"({"user":"alice","n":3})");
    run_on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await store->load(id), std::nullopt);
        co_await store->save(id, r, 600s);
        EXPECT_EQ(co_await store->load(id), std::optional<SessionRecord>(r));
        // What Redis holds: the encoded record, expiring with the idle timeout.
        std::optional<std::string> raw = co_await client->get("test:sess:" + id);
        EXPECT_EQ(raw, std::optional<std::string>(r.encode()));
        const std::int64_t ttl = (co_await client->command("TTL", "test:sess:" + id)).as_integer();
        EXPECT_GT(ttl, 590);
        EXPECT_LE(ttl, 600);
        co_await store->erase(id);
    }());
}

TEST_F(StoreTest, UpdateOnlyWhileStoredAndRefreshesTheTtl) {
    VELA_NEED_REDIS(url);
    make(url);
    run_on_loop([&]() -> Task<void> {
        EXPECT_FALSE(co_await store->update(id, record("{}"), 60s));
        EXPECT_FALSE(co_await client->exists(store->key(id))) << "XX must not create the key";
        co_await store->save(id, record(R"({"v":1})"), 60s);
        EXPECT_TRUE(co_await store->update(id, record(R"({"v":2})"), 900s));
        std::optional<SessionRecord> back = co_await store->load(id);
        EXPECT_TRUE(back && back->data == R"({"v":2})");
        EXPECT_GT((co_await client->command("TTL", store->key(id))).as_integer(), 800);
        co_await store->erase(id);
        EXPECT_FALSE(co_await client->exists(store->key(id)));
        EXPECT_FALSE(co_await store->update(id, record(R"({"v":3})"), 60s))
            << "a late request cannot bring back an erased session";
        co_await store->erase(id);  // unknown: nothing happens
    }());
}

TEST_F(StoreTest, ForeignOrBrokenValuesAreUnknownSessions) {
    VELA_NEED_REDIS(url);
    make(url);
    run_on_loop([&]() -> Task<void> {
        co_await client->set(store->key(id), "not a session record", {.ttl = 60s});
        EXPECT_EQ(co_await store->load(id), std::nullopt);
        co_await store->erase(id);
    }());
}

TEST_F(StoreTest, RedisExpiresIdleSessions) {
    VELA_NEED_REDIS(url);
    make(url);
    run_on_loop([&]() -> Task<void> {
        co_await store->save(id, record("{}"), 0s);  // rounded up to one second
        EXPECT_TRUE(co_await store->load(id));
        co_await vela::sleep(1100ms);
        EXPECT_EQ(co_await store->load(id), std::nullopt);
    }());
}

TEST_F(StoreTest, ErrorsOfTheServerReachTheCaller) {
    // Nothing listens there: the store's tasks throw (the middleware turns that into a 500).
    client = std::make_shared<redis::Client>("redis://127.0.0.1:1");
    store = std::make_unique<RedisStore>(client);
    EXPECT_THROW(run_on_loop(store->load("x")), redis::ConnectionError);
    EXPECT_THROW(RedisStore(nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace vela
