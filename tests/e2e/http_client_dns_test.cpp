// The client's name resolution (c-ares) against a scripted DNS server on loopback: answers
// kept for their records' TTL and no longer, ClientOptions::dns_ttl as the cap, NXDOMAIN and a
// silent server as typed errors, and the loop running while a lookup waits.

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "e2e/client.hpp"
#include "e2e/dns_server.hpp"
#include "vela/async/when_all.hpp"
#include "vela/client/client.hpp"
#include "vela/reactor/block_on.hpp"

namespace vela::e2e {
namespace {

using namespace std::chrono_literals;
using http::Client;
using http::ClientOptions;

template <class T>
T run(Task<T> t) {
    return block_on(std::move(t));
}

class HttpClientDns : public ::testing::Test {
  protected:
    void SetUp() override {
        add_basic_routes(app);
        start_app(app);
    }
    // A client that asks only `dns` and opens a new connection (a new lookup unless cached)
    // for every request.
    ClientOptions options() const {
        ClientOptions o;
        o.dns_servers = {dns.address()};
        o.max_idle_per_origin = 0;
        o.proxy_from_env = false;
        return o;
    }
    std::string url(const std::string& host) const {
        return "http://" + host + ":" + std::to_string(app.port()) + "/hello";
    }
    App app;
    DnsServer dns;
};

TEST_F(HttpClientDns, AnswersAreKeptForTheirRecordsTtl) {
    dns.set("svc.vela.test", {"127.0.0.1", 3});
    Client c(options());
    EXPECT_EQ(run(c.get(url("svc.vela.test"))).text(), "Hello, World!");
    EXPECT_EQ(run(c.get(url("svc.vela.test"))).status(), 200);
    EXPECT_EQ(dns.a_queries("svc.vela.test"), 1);
    EXPECT_EQ(c.stats().dns_lookups, 1u);
    EXPECT_EQ(c.stats().connections_opened, 2u);  // two connections, one lookup
    std::this_thread::sleep_for(3200ms);          // past the record's TTL
    EXPECT_EQ(run(c.get(url("svc.vela.test"))).status(), 200);
    EXPECT_EQ(dns.a_queries("svc.vela.test"), 2);
    EXPECT_EQ(c.stats().dns_lookups, 2u);
}

TEST_F(HttpClientDns, ZeroTtlIsNotKept) {
    dns.set("zero.vela.test", {"127.0.0.1", 0});
    Client c(options());
    for (int i = 0; i < 3; ++i) EXPECT_EQ(run(c.get(url("zero.vela.test"))).status(), 200);
    EXPECT_EQ(dns.a_queries("zero.vela.test"), 3);
}

TEST_F(HttpClientDns, DnsTtlCapsALongTtl) {
    dns.set("long.vela.test", {"127.0.0.1", 86400});
    ClientOptions o = options();
    o.dns_ttl = 3s;
    Client c(o);
    EXPECT_EQ(run(c.get(url("long.vela.test"))).status(), 200);
    EXPECT_EQ(run(c.get(url("long.vela.test"))).status(), 200);
    EXPECT_EQ(dns.a_queries("long.vela.test"), 1);
    std::this_thread::sleep_for(3200ms);
    EXPECT_EQ(run(c.get(url("long.vela.test"))).status(), 200);
    EXPECT_EQ(dns.a_queries("long.vela.test"), 2);
}

TEST_F(HttpClientDns, UnknownNameIsAConnectError) {
    Client c(options());
    try {
        run(c.get(url("nowhere.vela.test")));
        FAIL() << "no error";
    } catch (const http::ConnectError& e) {
        EXPECT_EQ(e.kind(), http::ErrorKind::connect);
        const std::string what = e.what();
        EXPECT_NE(what.find("cannot resolve \"nowhere.vela.test\""), std::string::npos) << what;
        EXPECT_NE(what.find("check the host name"), std::string::npos) << what;
    }
    // The failure was not kept: the name answers once it exists.
    dns.set("nowhere.vela.test", {"127.0.0.1", 60});
    EXPECT_EQ(run(c.get(url("nowhere.vela.test"))).status(), 200);
}

TEST_F(HttpClientDns, SilentServerTimesOutWhileTheLoopRuns) {
    dns.silence();
    ClientOptions o = options();
    o.connect_timeout = 600ms;
    o.retries = 0;
    Client c(o);
    // A timer on the same loop ticks while the lookup waits: counted when the lookup gives up.
    int ticks = 0, ticks_when_done = 0;
    bool done = false;
    auto ticker = [&]() -> Task<std::string> {
        while (!done) {
            co_await vela::sleep(20ms);
            ++ticks;
        }
        co_return "";
    };
    auto request = [&]() -> Task<std::string> {
        std::string what = "no error";
        try {
            co_await c.get(url("silent.vela.test"));
        } catch (const http::TimeoutError& e) {
            what = e.what();
        } catch (const std::exception& e) {
            what = std::string("another error: ") + e.what();
        }
        ticks_when_done = ticks;
        done = true;
        co_return what;
    };
    const auto start = std::chrono::steady_clock::now();
    auto both = [&]() -> Task<std::string> {
        std::vector<Task<std::string>> tasks;
        tasks.push_back(request());
        tasks.push_back(ticker());
        std::vector<std::string> out = co_await when_all(std::move(tasks));
        co_return out[0];
    };
    const std::string what = run(both());
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_NE(what.find("cannot resolve \"silent.vela.test\" within 600 ms"), std::string::npos)
        << what;
    // The loop kept running while the lookup waited (600 ms: some 30 ticks of 20 ms).
    EXPECT_GE(ticks_when_done, 10);
    EXPECT_GE(took, 550ms);
    EXPECT_LT(took, 5s);
    EXPECT_GE(dns.a_queries("silent.vela.test"), 1);
}

TEST(HttpClientDnsOptions, ABadServerIsAClearError) {
    for (const char* bad : {"dns.example", "10.0.0.1:99999", "[::1", "10.0.0.1:x", ""}) {
        ClientOptions o;
        o.dns_servers = {bad};
        try {
            Client c(o);
            FAIL() << bad;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("ClientOptions::dns_servers"), std::string::npos)
                << e.what();
        }
    }
    ClientOptions o;
    o.dns_servers = {"10.0.0.2", "127.0.0.1:5353", "::1", "[::1]:53"};
    EXPECT_NO_THROW(Client c(o));
}

}  // namespace
}  // namespace vela::e2e
