// Graceful shutdown seen from clients: requests in flight finish, idle connections close,
// new connections are refused, and wait() returns promptly.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "e2e/client.hpp"

namespace vela::e2e {
namespace {

TEST(ShutdownTest, InFlightRequestCompletesAndIdleConnectionsClose) {
    std::atomic<bool> slow_started{false};
    App app;
    quick_options(app.options());
    app.options().shutdown_timeout = Ms{5000};
    add_basic_routes(app);
    app.get("/slow", [&slow_started](Request&) -> Task<Response> {
        slow_started = true;
        co_await vela::sleep(200ms);
        co_return "slow done";
    });
    start_app(app, 1);
    const std::uint16_t port = app.port();

    Client idle = Client::tcp(port);
    ASSERT_TRUE(idle.send(get_request("/hello")));
    auto r = idle.read_response();
    ASSERT_TRUE(r) << idle.error();
    ASSERT_FALSE(r->announces_close());

    Client slow = Client::tcp(port);
    ASSERT_TRUE(slow.send(get_request("/slow")));
    const auto wait_start = SteadyClock::now();
    while (!slow_started && ms_since(wait_start) < 2000) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(slow_started) << "the slow handler never started";

    const auto t0 = SteadyClock::now();
    app.stop();

    // The idle keep-alive connection is closed without a response (after linger_timeout: it
    // could have sent one more request meanwhile).
    EXPECT_EQ(idle.wait_end(1500ms), Client::End::eof) << "pending: " << idle.pending();

    // The request in flight completes, announcing the close.
    r = slow.read_response();
    ASSERT_TRUE(r) << slow.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "slow done");
    EXPECT_TRUE(r->announces_close());
    EXPECT_EQ(slow.wait_end(1500ms), Client::End::eof) << "pending: " << slow.pending();

    // The listener is gone: new connections are refused.
    EXPECT_LT(net::connect_tcp("127.0.0.1", port), 0) << "a connection was accepted after stop()";

    slow.close();
    idle.close();
    auto waited = std::async(std::launch::async, [&app] { return app.wait(); });
    ASSERT_EQ(waited.wait_for(2s), std::future_status::ready) << "wait() did not return promptly";
    EXPECT_EQ(waited.get(), 0);
    EXPECT_LT(ms_since(t0), 2000) << "shutdown took as long as the shutdown deadline";
}

// A client that sent its next request on a kept-alive connection just as the drain began must
// not see it fail: the request is answered, with Connection: close, then the connection ends.
TEST(ShutdownTest, AnIdleConnectionsNextRequestIsAnsweredThenClosed) {
    App app;
    quick_options(app.options());
    app.options().linger_timeout = Ms{1500};
    add_basic_routes(app);
    start_app(app, 1);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/hello")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    ASSERT_FALSE(r->announces_close());
    app.stop();
    std::this_thread::sleep_for(100ms);  // the drain has begun; the connection is still open
    ASSERT_TRUE(c.send(get_request("/hello")));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->announces_close());
    EXPECT_EQ(c.wait_end(1000ms), Client::End::eof) << "pending: " << c.pending();
    EXPECT_EQ(app.wait(), 0);
}

TEST(ShutdownTest, ShutdownDeadlineCutsOffAHandlerThatTakesTooLong) {
    std::atomic<bool> started{false};
    App app;
    quick_options(app.options());
    app.options().shutdown_timeout = Ms{300};
    app.get("/forever", [&started](Request&) -> Task<Response> {
        started = true;
        co_await vela::sleep(3000ms);
        co_return "too late";
    });
    start_app(app, 1);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/forever")));
    const auto wait_start = SteadyClock::now();
    while (!started && ms_since(wait_start) < 2000) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(started);
    const auto t0 = SteadyClock::now();
    app.stop();
    auto waited = std::async(std::launch::async, [&app] { return app.wait(); });
    ASSERT_EQ(waited.wait_for(2s), std::future_status::ready) << "wait() ignored shutdown_timeout";
    EXPECT_EQ(waited.get(), 0);
    EXPECT_GE(ms_since(t0), 250);
    EXPECT_TRUE(c.closed_by_peer(1s)) << "pending: " << c.pending();
    EXPECT_TRUE(c.pending().empty());
}

TEST(ShutdownTest, StopWithNoConnectionsReturnsAtOnce) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    start_app(app, 2);
    const auto t0 = SteadyClock::now();
    app.stop();
    EXPECT_EQ(app.wait(), 0);
    EXPECT_LT(ms_since(t0), 1000);
}

TEST(ShutdownTest, StopIsIdempotentAndSafeFromAnotherThread) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    start_app(app, 2);
    std::thread t([&app] { app.stop(); });
    app.stop();
    t.join();
    app.stop();
    EXPECT_EQ(app.wait(), 0);
}

// stop() from another thread racing with run() (a signal thread, a test harness) is never
// lost, whether it lands before the server exists, while it starts, or while it runs.
TEST(ShutdownTest, StopRacingRunIsNeverLost) {
    for (int delay_us : {0, 0, 0, 50, 200, 1000, 5000}) {
        App app;
        quick_options(app.options());
        add_basic_routes(app);
        app.listen("127.0.0.1:0");
        std::thread stopper([&app, delay_us] {
            if (delay_us) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
            app.stop();
        });
        auto ran = std::async(std::launch::async, [&app] { return app.run(2); });
        const bool returned = ran.wait_for(5s) == std::future_status::ready;
        stopper.join();
        if (!returned) {
            app.stop();  // unblock it so the test can fail instead of hanging
            ran.wait();
        }
        ASSERT_TRUE(returned) << "run() ignored a stop() issued after " << delay_us << " us";
        EXPECT_EQ(ran.get(), 0);
    }
}

TEST(ShutdownTest, StopBeforeStartStopsTheAppOnceStarted) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    app.stop();
    start_app(app, 2);
    auto waited = std::async(std::launch::async, [&app] { return app.wait(); });
    ASSERT_EQ(waited.wait_for(3s), std::future_status::ready) << "the early stop() was lost";
    EXPECT_EQ(waited.get(), 0);
}

TEST(ShutdownTest, PartialRequestDuringShutdownIsAnsweredThenClosed) {
    App app;
    quick_options(app.options());
    add_basic_routes(app);
    start_app(app, 1);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send("GET /users/9 HTTP/1.1\r\n"));
    std::this_thread::sleep_for(200ms);  // let the server read the start of the request
    app.stop();
    std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(c.send("Host: localhost\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "9");
    EXPECT_TRUE(r->announces_close());
    EXPECT_TRUE(c.closed_by_peer());
    c.close();
    EXPECT_EQ(app.wait(), 0);
}

}  // namespace
}  // namespace vela::e2e
