// pg::listen against a real server (scripts/db-servers): NOTIFY and pg_notify() from other
// sessions, several channels and odd names, bursts, the queue bound, UNLISTEN on destruction
// and reconnection after a server restart.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "db/pg_test_util.hpp"
#include "db/servers.hpp"
#include "vela/db/db.hpp"
#include "vela/db/postgres.hpp"

namespace vela::db {
namespace {

using namespace std::chrono_literals;
using test::run_on_loop;

// A channel name unique to this process (tests may run in parallel against one server).
std::string channel(const char* base) { return test::table(base); }

// True once the server has no session with process ID `pid` (polls for up to 5 s).
Task<bool> session_gone(Database& db, int pid) {
    co_return co_await test::poll_until(
        [&]() -> Task<bool> {
            co_return co_await db.query_one<std::int64_t>(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid) == 0;
        },
        5s, 20ms);
}

TEST(PostgresListen, NotifyAndPgNotifyArriveInOrderWithPayloadsAndSender) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string ch = channel("orders");
    run_on_loop([&]() -> Task<void> {
        std::vector<std::string> channels{ch};
        pg::Subscription sub = co_await pg::listen(db, channels);
        EXPECT_TRUE(sub.listening());
        EXPECT_GT(sub.backend_pid(), 0);
        co_await db.execute(fmt::format("NOTIFY {}, 'one'", pg::quote_identifier(ch)));
        co_await db.execute("SELECT pg_notify($1, 'two')", ch);
        co_await db.execute(fmt::format("NOTIFY {}", pg::quote_identifier(ch)));  // no payload
        // The sender's process ID: a transaction keeps one session for both statements.
        int sender = 0;
        auto body = [&](Transaction& tx) -> Task<void> {
            sender = (co_await tx.query_one<int>("SELECT pg_backend_pid()")).value_or(0);
            co_await tx.execute("SELECT pg_notify($1, 'three')", ch);
        };
        co_await db.transaction(body);
        pg::Notification a = co_await sub.next();
        pg::Notification b = co_await sub.next();
        pg::Notification c = co_await sub.next();
        pg::Notification d = co_await sub.next();
        EXPECT_EQ(a.channel, ch);
        EXPECT_EQ(a.payload, "one");
        EXPECT_EQ(b.payload, "two");
        EXPECT_EQ(c.payload, "");
        EXPECT_EQ(d.payload, "three");
        EXPECT_EQ(d.sender_pid, sender);
        EXPECT_NE(d.sender_pid, sub.backend_pid());
        EXPECT_EQ(sub.queued(), 0u);
    });
}

TEST(PostgresListen, TwoChannelsAndAnOddNameQuotedAsAnIdentifier) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string users = channel("users");
    const std::string odd = fmt::format("Odd \"name\"; DROP TABLE x; --{}", channel(""));
    const std::string other = channel("other");
    run_on_loop([&]() -> Task<void> {
        pg::Subscription sub = co_await pg::listen(db, users, odd);
        EXPECT_EQ(sub.channels().size(), 2u);
        co_await db.execute("SELECT pg_notify($1, 'not listened')", other);
        co_await db.execute("SELECT pg_notify($1, 'o1')", odd);
        co_await db.execute("SELECT pg_notify($1, 'u1')", users);
        co_await db.execute(fmt::format("NOTIFY {}, 'o2'", pg::quote_identifier(odd)));
        pg::Notification n1 = co_await sub.next();
        pg::Notification n2 = co_await sub.next();
        pg::Notification n3 = co_await sub.next();
        EXPECT_EQ(n1.channel, odd);
        EXPECT_EQ(n1.payload, "o1");
        EXPECT_EQ(n2.channel, users);
        EXPECT_EQ(n2.payload, "u1");
        EXPECT_EQ(n3.channel, odd);
        EXPECT_EQ(n3.payload, "o2");

        // unlisten / listen while running: only the channels listened on arrive.
        co_await sub.unlisten(users);
        co_await sub.listen(other);
        co_await db.execute("SELECT pg_notify($1, 'u2')", users);
        co_await db.execute("SELECT pg_notify($1, 'x1')", other);
        pg::Notification n4 = co_await sub.next();
        EXPECT_EQ(n4.channel, other);
        EXPECT_EQ(n4.payload, "x1");
        std::vector<std::string> now = sub.channels();
        std::sort(now.begin(), now.end());
        std::vector<std::string> want{odd, other};
        std::sort(want.begin(), want.end());
        EXPECT_EQ(now, want);
    });
}

TEST(PostgresListen, ABurstOfAThousandArrivesWholeAndInOrder) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string ch = channel("burst");
    run_on_loop([&]() -> Task<void> {
        std::vector<std::string> channels{ch};
        pg::Subscription sub = co_await pg::listen(db, channels);
        // One statement: all 1000 are delivered at its commit, in one burst of ~40 KB (more
        // than libpq reads per call: the reader must drain the socket on one edge). The
        // payloads are padded so the burst also crosses libpq's 16 KB input buffer.
        co_await db.execute(
            "SELECT pg_notify($1, g::text || ':' || repeat('p', 20)) "
            "FROM generate_series(1, 1000) g",
            ch);
        const auto t0 = std::chrono::steady_clock::now();
        int in_order = 0;
        for (int i = 1; i <= 1000; ++i) {
            pg::Notification n = co_await sub.next();
            in_order += n.payload == fmt::format("{}:{}", i, std::string(20, 'p'));
        }
        EXPECT_EQ(in_order, 1000);
        EXPECT_LT(test::ms_since(t0), 5000);
        // And 1000 separate transactions (1000 deliveries), read afterwards.
        for (int i = 0; i < 1000; ++i) co_await db.execute("SELECT pg_notify($1, $2::text)", ch, i);
        in_order = 0;
        for (int i = 0; i < 1000; ++i) {
            pg::Notification n = co_await sub.next();
            in_order += n.payload == std::to_string(i);
        }
        EXPECT_EQ(in_order, 1000);
    });
}

TEST(PostgresListen, PastTheQueueBoundNotificationsAreDroppedAndReported) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string ch = channel("bound");
    run_on_loop([&]() -> Task<void> {
        std::vector<std::string> channels{ch};
        pg::ListenOptions lo;
        lo.max_queued = 10;
        pg::Subscription sub = co_await pg::listen(db, channels, lo);
        co_await db.execute("SELECT pg_notify($1, g::text) FROM generate_series(1, 25) g", ch);
        for (int i = 0; i < 250 && sub.queued() < 10; ++i) co_await vela::sleep(10ms);
        co_await vela::sleep(50ms);  // the other 15 arrive (and are dropped) too
        EXPECT_EQ(sub.queued(), 10u);
        for (int i = 1; i <= 10; ++i) EXPECT_EQ((co_await sub.next()).payload, std::to_string(i));
        try {
            co_await sub.next();
            ADD_FAILURE() << "no NotificationsLost after the bound";
        } catch (const pg::NotificationsLost& e) {
            EXPECT_EQ(e.dropped(), 15u);
            EXPECT_FALSE(e.reconnected());
            EXPECT_NE(std::string(e.what()).find("max_queued"), std::string::npos) << e.what();
        }
        // It goes on.
        co_await db.execute("SELECT pg_notify($1, 'after')", ch);
        EXPECT_EQ((co_await sub.next()).payload, "after");
    });
}

TEST(PostgresListen, DestroyingTheSubscriptionEndsItsSession) {
    VELA_NEED_PG(url);
    Database db(url);
    const std::string ch = channel("gone");
    run_on_loop([&]() -> Task<void> {
        int pid = 0;
        {
            std::vector<std::string> channels{ch};
            pg::Subscription sub = co_await pg::listen(db, channels);
            pid = sub.backend_pid();
            // The server lists it as a listener of the channel meanwhile.
            auto listening = co_await db.query_one<std::int64_t>(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid);
            EXPECT_EQ(listening, 1);
        }
        EXPECT_TRUE(co_await session_gone(db, pid));
        // Closed explicitly: next() fails with Error, not a hang.
        std::vector<std::string> channels{ch};
        pg::Subscription sub = co_await pg::listen(db, channels);
        sub.close();
        EXPECT_FALSE(sub.is_open());
        EXPECT_THROW(co_await sub.next(), Error);
    });
}

TEST(PostgresListen, BadChannelNamesOtherBackendsAndOtherLoopsAreRefused) {
    VELA_NEED_PG(url);
    Database db(url);
    Database lite("sqlite::memory:");
    run_on_loop([&]() -> Task<void> {
        std::vector<std::string> empty{""};
        std::vector<std::string> too_long{std::string(64, 'c')};
        std::vector<std::string> fine{std::string(63, 'c')};
        EXPECT_THROW(co_await pg::listen(db, empty), Error);
        EXPECT_THROW(co_await pg::listen(db, too_long), Error);
        EXPECT_THROW(co_await pg::listen(lite, fine), Error);
        pg::Subscription sub = co_await pg::listen(db, fine);
        EXPECT_TRUE(sub.listening());
        // Another loop may not await it, but may close it (the closing is posted here).
        std::string other_error;
        std::thread other([&] {
            run_on_loop([&]() -> Task<void> {
                try {
                    co_await sub.next();
                } catch (const Error& e) {
                    other_error = e.what();
                }
                sub.close();
            });
        });
        other.join();
        EXPECT_NE(other_error.find("loop that called listen()"), std::string::npos) << other_error;
        EXPECT_FALSE(sub.is_open());
        EXPECT_THROW(co_await sub.next(), Error);
    });
    // An unreachable server is a ConnectionError from listen() itself.
    Options o;
    o.connect_timeout = 2000ms;
    Database nowhere("postgres://vela@127.0.0.1:1/vela", o);
    run_on_loop([&]() -> Task<void> {
        std::vector<std::string> channels{"x"};
        EXPECT_THROW(co_await pg::listen(nowhere, channels), ConnectionError);
    });
}

TEST(PostgresListen, AfterAServerRestartItReconnectsReportsTheGapAndGoesOn) {
    VELA_NEED_PG(url);
    if (test::env_or_empty("VELA_TEST_DB_SCRIPT").empty())
        GTEST_SKIP() << "needs scripts/db-servers";
    Options o;
    o.reconnect_backoff = 50ms;
    o.reconnect_backoff_max = 400ms;
    Database db(url, o);
    const std::string ch = channel("restart");
    run_on_loop([&]() -> Task<void> {
        std::vector<std::string> channels{ch};
        pg::Subscription sub = co_await pg::listen(db, channels);
        const int pid = sub.backend_pid();
        co_await db.execute("SELECT pg_notify($1, 'before')", ch);
        for (int i = 0; i < 250 && sub.queued() == 0; ++i) co_await vela::sleep(10ms);
        EXPECT_TRUE(test::db_servers("pg-kill"));
        co_await vela::sleep(200ms);  // the loss is noticed; reconnecting fails meanwhile
        EXPECT_FALSE(sub.listening());
        EXPECT_TRUE(test::db_servers("pg-start"));
        // Queued before the loss: still delivered first.
        EXPECT_EQ((co_await sub.next()).payload, "before");
        try {
            co_await sub.next();
            ADD_FAILURE() << "no NotificationsLost after the restart";
        } catch (const pg::NotificationsLost& e) {
            EXPECT_TRUE(e.reconnected());
        }
        EXPECT_TRUE(sub.listening());
        EXPECT_NE(sub.backend_pid(), pid);
        // The pool reconnects too (its first attempts may still see the old failure).
        for (int i = 0;; ++i) {
            try {
                co_await db.execute("SELECT pg_notify($1, 'after')", ch);
                break;
            } catch (const ConnectionError&) {
                if (i == 50) throw;
            }
            co_await vela::sleep(100ms);
        }
        EXPECT_EQ((co_await sub.next()).payload, "after");
    });
}

}  // namespace
}  // namespace vela::db
