// A client that goes away while its handler waits on PostgreSQL: with
// ServerOptions::cancel_on_disconnect the handler is abandoned and its statement is cancelled
// on the server; without it the statement runs to its end. Real server, real sockets.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "db/pg_test_util.hpp"
#include "db/servers.hpp"
#include "e2e/client.hpp"
#include "vela/db/db.hpp"
#include "vela/vela.hpp"

namespace vela::db {
namespace {

using namespace std::chrono_literals;

// How many backends run `marker` right now (asked on a connection of this test's own).
long running(const std::string& url, const std::string& marker) {
    long n = -1;
    test::run_on_loop([&]() -> Task<void> {
        Database probe(url);
        auto r = co_await probe.query_one<long>(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 "
            "AND pid <> pg_backend_pid()",
            "%" + marker + "%");
        n = r.value_or(-1);
    });
    return n;
}

// Starts an app whose GET /slow awaits pg_sleep(30) tagged with `marker`, sends the request
// on a raw socket, waits until the statement runs, closes the socket, and returns how many
// such statements still run 2 s later (polling).
long still_running_after_disconnect(const std::string& url, bool cancel, const std::string& marker,
                                    bool& handler_finished) {
    auto db = std::make_shared<Database>(url);
    App app;
    e2e::quick_options(app.options());
    app.options().cancel_on_disconnect = cancel;
    app.options().shutdown_timeout = 500ms;
    app.get("/", [] { return "Hello, World!"; });
    app.get("/slow", [db, marker, &handler_finished](Request&) -> Task<Response> {
        std::string sql = "SELECT pg_sleep(30) /* " + marker + " */";
        co_await db->query(sql);
        handler_finished = true;
        co_return Response("slept");
    });
    e2e::start_app(app);
    const std::uint16_t port = app.port();
    int fd = e2e::connect_loopback(port);
    EXPECT_GE(fd, 0);
    std::string req = "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (running(url, marker) < 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(50ms);
    EXPECT_EQ(running(url, marker), 1) << "the statement never started";
    ::close(fd);  // the client goes away
    long left = 1;
    deadline = std::chrono::steady_clock::now() + 2s;
    while ((left = running(url, marker)) > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(50ms);
    // The server is still sound.
    int fd2 = e2e::connect_loopback(port);
    std::string hello = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_EQ(::write(fd2, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
    char buf[256];
    ssize_t n = ::read(fd2, buf, sizeof buf);
    EXPECT_GT(n, 0);
    EXPECT_NE(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0).find("200 OK"),
              std::string::npos);
    ::close(fd2);
    app.stop();
    return left;
}

TEST(PostgresDisconnect, ClientGoneCancelsTheStatementWhenAsked) {
    VELA_NEED_PG(url);
    bool finished = false;
    const std::string marker = "vela_disconnect_on_" + std::to_string(::getpid());
    EXPECT_EQ(still_running_after_disconnect(url, true, marker, finished), 0)
        << "pg_sleep still runs after the client left";
    EXPECT_FALSE(finished) << "the abandoned handler went on";
}

TEST(PostgresDisconnect, WithoutTheOptionTheStatementRunsOn) {
    VELA_NEED_PG(url);
    bool finished = false;
    const std::string marker = "vela_disconnect_off_" + std::to_string(::getpid());
    EXPECT_EQ(still_running_after_disconnect(url, false, marker, finished), 1);
    // The server's shutdown deadline abandons the handler; its statement is cancelled then.
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (running(url, marker) > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(50ms);
    EXPECT_EQ(running(url, marker), 0);
}

}  // namespace
}  // namespace vela::db
