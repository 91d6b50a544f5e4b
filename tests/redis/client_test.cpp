// The Redis client against a real server (scripts/db-servers; VELA_NEED_REDIS skips or fails
// without one). Each test uses keys of its own.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "db/servers.hpp"
#include "redis/run.hpp"
#include "vela/async/when_all.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/redis/client.hpp"

namespace vela::redis {
namespace {

using namespace std::chrono_literals;
using test::run_on_loop;
using S = std::optional<std::string>;

std::string unique_key(std::string_view what) {
    static std::atomic<int> n{0};
    return "vela-test:" + std::to_string(::getpid()) + ":" + std::string(what) + ":" +
           std::to_string(n++);
}

TEST(RedisClient, CommandsAndTypedReplies) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string k = unique_key("basic");
    run_on_loop([&]() -> Task<void> {
        Reply ok = co_await redis.command("SET", k, "hello", "EX", 30);
        EXPECT_EQ(ok.type, Reply::Type::status);
        EXPECT_EQ(ok.str, "OK");
        Reply v = co_await redis.command("GET", k);
        EXPECT_EQ(v.type, Reply::Type::string);
        EXPECT_EQ(v.str, "hello");
        Reply ttl = co_await redis.command("TTL", k);
        EXPECT_GT(ttl.as_integer(), 0);
        EXPECT_LE(ttl.as_integer(), 30);
        EXPECT_TRUE((co_await redis.command("GET", k + ":absent")).is_nil());
        co_await redis.command("RPUSH", k + ":l", "a", "b", 3);
        Reply list = co_await redis.command("LRANGE", k + ":l", 0, -1);
        VELA_CO_ASSERT(list.as_array().size() == 3u);
        EXPECT_EQ(list.elements[2].as_string(), "3");
        co_await redis.del(k, k + ":l");
    }());
}

TEST(RedisClient, BinarySafeValues) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string k = unique_key("binary");
    std::string value;
    for (int i = 0; i < 256; ++i) value += static_cast<char>(i);
    value += std::string(100'000, '\0');  // larger than one read buffer
    run_on_loop([&]() -> Task<void> {
        EXPECT_TRUE(co_await redis.set(k, value));
        std::optional<std::string> back = co_await redis.get(k);
        VELA_CO_ASSERT(back);
        EXPECT_EQ(*back, value);
        co_await redis.del(k);
    }());
}

TEST(RedisClient, ConvenienceCalls) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string k = unique_key("conv");
    run_on_loop([&]() -> Task<void> {
        EXPECT_FALSE(co_await redis.exists(k));
        EXPECT_EQ(co_await redis.get(k), std::nullopt);
        EXPECT_TRUE(co_await redis.set(k, "1", {.if_absent = true}));
        EXPECT_FALSE(co_await redis.set(k, "2", {.if_absent = true})) << "NX keeps the value";
        EXPECT_EQ(co_await redis.get(k), S("1"));
        EXPECT_FALSE(co_await redis.set(k + ":x", "v", {.if_present = true})) << "XX on no key";
        EXPECT_TRUE(co_await redis.exists(k));
        EXPECT_EQ(co_await redis.incr(k), 2);
        EXPECT_EQ(co_await redis.incr(k, 40), 42);
        EXPECT_TRUE(co_await redis.expire(k, 100s));
        EXPECT_FALSE(co_await redis.expire(k + ":none", 100s));
        EXPECT_TRUE(co_await redis.set(k + ":t", "v", {.ttl = 1500ms}));
        const std::int64_t pttl = (co_await redis.command("PTTL", k + ":t")).as_integer();
        EXPECT_GT(pttl, 0);
        EXPECT_LE(pttl, 1500);
        EXPECT_EQ(co_await redis.del(k, k + ":t", k + ":none"), 2);
        EXPECT_EQ(co_await redis.del(k), 0);
        EXPECT_EQ(co_await redis.publish(k + ":nobody", "x"), 0);
    }());
}

TEST(RedisClient, ErrorReplyThrowsServerError) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string k = unique_key("err");
    run_on_loop([&]() -> Task<void> {
        co_await redis.command("RPUSH", k, "a");
        try {
            co_await redis.command("INCR", k);
            ADD_FAILURE() << "no error";
        } catch (const ServerError& e) {
            EXPECT_EQ(e.code(), "WRONGTYPE");
        }
        try {
            co_await redis.command("NOSUCHCOMMAND", 1);
            ADD_FAILURE() << "no error";
        } catch (const ServerError& e) {
            EXPECT_EQ(e.code(), "ERR");
        }
        try {
            (void)co_await redis.get(k);  // convenience calls throw too
            ADD_FAILURE() << "no error";
        } catch (const ServerError& e) {
            EXPECT_EQ(e.code(), "WRONGTYPE");
        }
        // The connection is still in step: the next reply is the next command's.
        EXPECT_EQ((co_await redis.command("ECHO", "still fine")).str, "still fine");
        co_await redis.del(k);
    }());
}

TEST(RedisClient, PipelineReturnsRepliesInOrderWithErrorsInPlace) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string a = unique_key("pa"), b = unique_key("pb");
    run_on_loop([&]() -> Task<void> {
        co_await redis.set(b, "bee");
        std::vector<Command> batch{
            {"INCR", a}, {"GET", b}, {"INCR", b}, {"INCR", a}, {"DEL", a, b}};
        std::vector<Reply> r = co_await redis.pipeline(std::move(batch));
        VELA_CO_ASSERT(r.size() == 5u);
        EXPECT_EQ(r[0].as_integer(), 1);
        EXPECT_EQ(r[1].as_string(), "bee");
        EXPECT_TRUE(r[2].is_error()) << r[2].to_debug_string();
        EXPECT_EQ(r[3].as_integer(), 2);
        EXPECT_EQ(r[4].as_integer(), 2);
        EXPECT_TRUE((co_await redis.pipeline(std::vector<Command>())).empty());
        // MULTI/EXEC in one pipeline: one connection, so a transaction.
        std::vector<Reply> tx =
            co_await redis.pipeline(Command("MULTI"), Command("INCR", a), Command("INCR", a),
                                    Command("EXEC"), Command("DEL", a));
        VELA_CO_ASSERT(tx.size() == 5u);
        VELA_CO_ASSERT(tx[3].as_array().size() == 2u);
        EXPECT_EQ(tx[3].elements[1].as_integer(), 2);
    }());
}

// Many commands at once on one loop: they are pipelined on the pool's connections, and each
// gets its own reply (a reply handed to the wrong command would show as a wrong number).
TEST(RedisClient, ConcurrentCommandsKeepTheirOrder) {
    VELA_NEED_REDIS(url);
    Client redis(url, Options{.connections_per_loop = 2});
    const std::string k = unique_key("order");
    constexpr int n = 2000;
    run_on_loop([&]() -> Task<void> {
        std::vector<Task<Reply>> tasks;
        for (int i = 0; i < n; ++i) tasks.push_back(redis.command("ECHO", i));
        std::vector<Reply> got = co_await when_all(std::move(tasks));
        for (int i = 0; i < n; ++i) VELA_CO_ASSERT(got[i].str == std::to_string(i));

        // INCR on one key: with one connection the replies are 1..n in issue order.
        Client single(url, Options{.connections_per_loop = 1});
        std::vector<Task<std::int64_t>> incrs;
        for (int i = 0; i < n; ++i) incrs.push_back(single.incr(k));
        std::vector<std::int64_t> seen = co_await when_all(std::move(incrs));
        for (int i = 0; i < n; ++i) VELA_CO_ASSERT(seen[i] == i + 1);
        co_await redis.del(k);
    }());
}

TEST(RedisClient, SeveralLoopsShareOneClient) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string k = unique_key("loops");
    constexpr int threads = 4, per = 300;
    std::vector<std::thread> ts;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t) {
        ts.emplace_back([&] {
            try {
                run_on_loop([&]() -> Task<void> {
                    std::vector<Task<std::int64_t>> incrs;
                    for (int i = 0; i < per; ++i) incrs.push_back(redis.incr(k));
                    co_await when_all(std::move(incrs));
                }());
            } catch (...) {
                ++failures;
            }
        });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(failures.load(), 0);
    run_on_loop([&]() -> Task<void> {
        EXPECT_EQ(co_await redis.get(k), S(std::to_string(threads * per)));
        co_await redis.del(k);
    }());
}

TEST(RedisClient, SelectsTheUrlsDatabase) {
    VELA_NEED_REDIS(url);
    Client db0(url);
    Client db3(url + "/3");
    EXPECT_EQ(db3.url().db, 3);
    const std::string k = unique_key("db");
    run_on_loop([&]() -> Task<void> {
        co_await db3.set(k, "in three");
        EXPECT_EQ(co_await db0.get(k), std::nullopt);
        EXPECT_EQ(co_await db3.get(k), S("in three"));
        co_await db3.del(k);
    }());
}

TEST(RedisClient, FailedLoginIsAConnectionError) {
    VELA_NEED_REDIS(url);
    // The test server has no password: AUTH fails, and so does every command.
    Client redis("redis://:wrong@" + url.substr(std::string("redis://").size()));
    run_on_loop([&]() -> Task<void> {
        for (int i = 0; i < 2; ++i) {
            try {
                co_await redis.command("PING");
                ADD_FAILURE() << "no error";
            } catch (const ConnectionError& e) {
                EXPECT_NE(std::string(e.what()).find("login failed (AUTH/SELECT)"),
                          std::string::npos)
                    << e.what();
            }
        }
    }());
}

TEST(RedisClient, UnreachableServerFailsAndBacksOff) {
    // A port nobody listens on: connects are refused at once.
    Client redis("redis://127.0.0.1:1", Options{.reconnect_min = 100ms, .reconnect_max = 400ms});
    run_on_loop([&]() -> Task<void> {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 4; ++i) {
            try {
                co_await redis.command("PING");
                ADD_FAILURE() << "no error";
            } catch (const ConnectionError& e) {
                EXPECT_NE(std::string(e.what()).find("redis 127.0.0.1:1: cannot connect"),
                          std::string::npos)
                    << e.what();
            }
        }
        // Attempts 2, 3 and 4 waited 100, 200 and 400 ms.
        EXPECT_GE(std::chrono::steady_clock::now() - t0, 650ms);
    }());
}

TEST(RedisClient, CommandTimeoutDropsTheConnection) {
    VELA_NEED_REDIS(url);
    Client redis(url, Options{.connections_per_loop = 1, .command_timeout = 200ms});
    const std::string k = unique_key("blpop");
    run_on_loop([&]() -> Task<void> {
        const auto t0 = std::chrono::steady_clock::now();
        try {
            co_await redis.command("BLPOP", k, 5);  // blocks 5 s on an empty list
            ADD_FAILURE() << "no timeout";
        } catch (const TimeoutError& e) {
            EXPECT_NE(std::string(e.what()).find("no reply within 200 ms"), std::string::npos)
                << e.what();
        }
        const auto waited = std::chrono::steady_clock::now() - t0;
        EXPECT_GE(waited, 190ms);
        EXPECT_LT(waited, 2s);
        // A new connection: the late BLPOP reply cannot be taken for this PING's.
        EXPECT_EQ((co_await redis.command("PING")).str, "PONG");
    }());
}

// A coroutine destroyed while its command is in flight (a handler abandoned at the shutdown
// deadline): the reply is read and dropped, and the next command gets its own.
TEST(RedisClient, AbandonedCommandsReplyIsDropped) {
    VELA_NEED_REDIS(url);
    Client redis(url, Options{.connections_per_loop = 1});
    const std::string k = unique_key("abandon");
    bool finished = false;
    Task<void> waiting = [](Client& r, std::string key, bool& done) -> Task<void> {
        co_await r.command("BLPOP", key, 0.3);  // nil after 300 ms
        done = true;
    }(redis, k, finished);
    run_on_loop([&]() -> Task<void> {
        auto h = waiting.release();
        h.resume();  // sends BLPOP, then waits for its reply
        co_await vela::sleep(50ms);
        h.destroy();  // abandoned with the command in flight
        // Queued behind the BLPOP on the one connection: its reply comes after the nil.
        Reply echo = co_await redis.command("ECHO", "mine");
        EXPECT_EQ(echo.type, Reply::Type::string);
        EXPECT_EQ(echo.str, "mine");
    }());
    EXPECT_FALSE(finished);
}

TEST(RedisClient, OutsideALoopIsRefused) {
    Client redis("redis://127.0.0.1:1");
    Task<Reply> t = redis.command("PING");
    std::exception_ptr err;
    start(std::move(t), [&](std::optional<Reply>, std::exception_ptr e) { err = e; });
    ASSERT_TRUE(err);
    EXPECT_THROW(std::rethrow_exception(err), std::logic_error);
}

TEST(RedisClient, UnresolvableHostIsAConnectionError) {
    EXPECT_THROW(Client("redis://no-such-host.invalid:6379"), ConnectionError);
    EXPECT_THROW(Client("http://x"), std::invalid_argument);
}

// ---- Pub/sub ------------------------------------------------------------------------------

TEST(RedisPubSub, ReceivesPublishedMessagesInOrder) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string ch = unique_key("chan");
    run_on_loop([&]() -> Task<void> {
        Subscription sub = co_await redis.subscribe(ch, ch + ":other");
        EXPECT_TRUE(sub.is_open());
        EXPECT_EQ(co_await redis.publish(ch, "one"), 1);
        EXPECT_EQ(co_await redis.publish(ch + ":other", std::string("t\0o", 3)), 1);
        co_await redis.publish(ch, "three");
        Message m1 = co_await sub.next();
        EXPECT_EQ(m1.channel, ch);
        EXPECT_EQ(m1.payload, "one");
        EXPECT_EQ(m1.pattern, "");
        Message m2 = co_await sub.next();
        EXPECT_EQ(m2.channel, ch + ":other");
        EXPECT_EQ(m2.payload, std::string("t\0o", 3));
        EXPECT_EQ((co_await sub.next()).payload, "three");
    }());
}

TEST(RedisPubSub, PatternSubscription) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string base = unique_key("news");
    run_on_loop([&]() -> Task<void> {
        Subscription sub = co_await redis.psubscribe(base + ".*");
        co_await redis.publish(base + ".sport", "goal");
        co_await redis.publish(base, "not matched");
        co_await redis.publish(base + ".weather", "rain");
        Message m = co_await sub.next();
        EXPECT_EQ(m.pattern, base + ".*");
        EXPECT_EQ(m.channel, base + ".sport");
        EXPECT_EQ(m.payload, "goal");
        EXPECT_EQ((co_await sub.next()).payload, "rain");
    }());
}

TEST(RedisPubSub, WaitingNextIsWokenByAPublishFromAnotherTask) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string ch = unique_key("wake");
    run_on_loop([&]() -> Task<void> {
        Subscription sub = co_await redis.subscribe(ch);
        // Parameters, not captures: the lambda is gone when the task resumes.
        Loop::current()->spawn([](Client& r, std::string c) -> Task<void> {
            co_await vela::sleep(50ms);
            co_await r.publish(c, "late");
        }(redis, ch));
        EXPECT_EQ((co_await sub.next()).payload, "late");
    }());
}

// How many receive a message on `ch`, once the server has noticed closed subscribers (it
// drops them when it reads the connection's end, a moment after the close).
Task<std::int64_t> subscribers_soon(Client& redis, std::string ch) {
    std::int64_t n = 0;
    for (int i = 0; i < 50; ++i) {
        n = co_await redis.publish(ch, "anyone?");
        if (n == 0) break;
        co_await vela::sleep(10ms);
    }
    co_return n;
}

TEST(RedisPubSub, ClosingUnsubscribes) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string ch = unique_key("close");
    run_on_loop([&]() -> Task<void> {
        {
            Subscription sub = co_await redis.subscribe(ch);
            EXPECT_EQ(co_await redis.publish(ch, "x"), 1);
            Subscription moved = std::move(sub);
            EXPECT_FALSE(sub.is_open());
            EXPECT_TRUE(moved.is_open());
            moved.close();
            EXPECT_FALSE(moved.is_open());
            EXPECT_THROW(co_await moved.next(), Error);  // closed: queued messages are dropped
        }
        // The server dropped the subscriber with the connection.
        EXPECT_EQ(co_await subscribers_soon(redis, ch), 0);
        {
            Subscription dropped = co_await redis.subscribe(ch);
            EXPECT_EQ(co_await redis.publish(ch, "w"), 1);
        }  // destroyed without close()
        EXPECT_EQ(co_await subscribers_soon(redis, ch), 0);
    }());
}

// A handler streaming messages is abandoned while it waits in next() (shutdown deadline):
// neither a later message nor closing the subscription may resume the destroyed frame.
TEST(RedisPubSub, AbandonedWaitIsNotResumed) {
    VELA_NEED_REDIS(url);
    Client redis(url);
    const std::string ch = unique_key("abandon");
    run_on_loop([&]() -> Task<void> {
        Subscription kept = co_await redis.subscribe(ch);
        bool got = false;
        Task<void> reader = [](Subscription& s, bool& g) -> Task<void> {
            (void)co_await s.next();
            g = true;
        }(kept, got);
        auto h = reader.release();
        h.resume();   // waits in next()
        h.destroy();  // abandoned
        EXPECT_EQ(co_await redis.publish(ch, "nobody reads this"), 1);
        co_await vela::sleep(20ms);  // the message arrives and is only queued
        EXPECT_FALSE(got);
        EXPECT_EQ((co_await kept.next()).payload, "nobody reads this");

        // The same with the Subscription itself inside the abandoned frame.
        Task<void> owner = [](Client& r, std::string c) -> Task<void> {
            Subscription mine = co_await r.subscribe(c);
            (void)co_await mine.next();
        }(redis, ch);
        auto o = owner.release();
        o.resume();
        co_await vela::sleep(20ms);  // subscribed by now, waiting in next()
        o.destroy();                 // closes the subscription from inside the destruction
        co_await redis.publish(ch, "after");
        co_await vela::sleep(20ms);
    }());
}

// ---- Reconnect (stops and restarts the real server) ----------------------------------------

TEST(RedisReconnect, InFlightCommandsFailAndLaterOnesReconnect) {
    VELA_NEED_REDIS(url);
    Client redis(url,
                 Options{.command_timeout = 10s, .reconnect_min = 20ms, .reconnect_max = 200ms});
    const std::string k = unique_key("reconnect");
    run_on_loop([&]() -> Task<void> {
        co_await redis.set(k, "before");
        Subscription sub = co_await redis.subscribe(k);
        // A command in flight (BLPOP waits on the server) when the server goes away.
        std::thread stopper([] {
            std::this_thread::sleep_for(200ms);
            EXPECT_TRUE(test::db_servers("redis-stop"));
        });
        try {
            co_await redis.command("BLPOP", k + ":list", 8);
            ADD_FAILURE() << "no error";
        } catch (const ConnectionError& e) {
            EXPECT_NE(std::string(e.what()).find("connection closed by the server"),
                      std::string::npos)
                << e.what();
        }
        stopper.join();
        try {
            (void)co_await sub.next();
            ADD_FAILURE() << "the subscription survived";
        } catch (const ConnectionError&) {
        }
        EXPECT_FALSE(sub.is_open());
        // While it is down: a clear error.
        try {
            co_await redis.command("PING");
            ADD_FAILURE() << "no error";
        } catch (const ConnectionError& e) {
            EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
        }
        EXPECT_TRUE(test::db_servers("redis-start"));
        // The next command waits out the backoff (at most 200 ms here) and connects.
        EXPECT_EQ((co_await redis.command("PING")).str, "PONG");
        co_await redis.set(k, "after");
        EXPECT_EQ(co_await redis.get(k), S("after"));
        co_await redis.del(k);
    }());
}

}  // namespace
}  // namespace vela::redis
