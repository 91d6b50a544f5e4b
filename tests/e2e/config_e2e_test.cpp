// A server configured from a TOML file over a real socket: the listener, a limit that turns a
// large body into 413, a user section, the environment over the file, and a table nobody
// reads stopping start()/run() with one line.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "e2e/client.hpp"
#include "e2e/process.hpp"
#include "tls/certs.hpp"
#include "vela/ops/config.hpp"
#include "vela/ops/metrics.hpp"
#include "vela/web/app.hpp"

namespace vela::e2e {
namespace {

struct Greeter {
    std::string greeting = "hello";
    int repeat = 1;
};
VELA_REFLECT(Greeter, greeting, repeat)

// A configuration file in a fresh temporary directory, removed with it.
class ConfigFile {
  public:
    explicit ConfigFile(const std::string& text) {
        char dir[] = "/tmp/vela-config-XXXXXX";
        dir_ = ::mkdtemp(dir);
        path_ = dir_ + "/vela.toml";
        std::ofstream(path_) << text;
    }
    ~ConfigFile() {
        std::remove(path_.c_str());
        ::rmdir(dir_.c_str());
    }
    const std::string& path() const { return path_; }
    const std::string& dir() const { return dir_; }

  private:
    std::string dir_;
    std::string path_;
};

const char* kFile = R"(# the e2e test's server
[server]
listen = ["127.0.0.1:0"]
threads = 1

[limits]
max_body = "1KiB"

[timeouts]
idle = "5s"

[greeter]
greeting = "hi"
repeat = 2
)";

void add_routes(App& app, const Greeter& g) {
    app.post("/echo", [](Request& req) { return std::string(req.body()); });
    app.get("/greet", [g] {
        std::string out;
        for (int i = 0; i < g.repeat; ++i) out += g.greeting;
        return out;
    });
}

TEST(ConfigE2E, ServerFromAFileAppliesItsLimitOverARealSocket) {
    ConfigFile file(kFile);
    App app;
    load_config(app, file.path());
    add_routes(app, config<Greeter>(app, "greeter"));
    EXPECT_EQ(app.options().limits.max_body, 1024u);
    EXPECT_EQ(app.options().idle_timeout, std::chrono::seconds(5));
    app.start();
    ASSERT_NE(app.port(), 0);
    EXPECT_EQ(app.port(1), 0);  // one listener: the file's

    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(request_with_body("POST", "/echo", std::string(1024, 'a'))));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body.size(), 1024u);

    ASSERT_TRUE(c.send(get_request("/greet")));
    r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "hihi");

    Client big = Client::tcp(app.port());
    ASSERT_TRUE(big.send(request_with_body("POST", "/echo", std::string(1025, 'a'))));
    r = big.read_response();
    ASSERT_TRUE(r) << big.error();
    EXPECT_EQ(r->status, 413);
    app.stop();
    app.wait();
}

TEST(ConfigE2E, EnvironmentOverridesTheFile) {
    ConfigFile file(kFile);
    App app;
    apply_config(app, Config::load(file.path(), {{"VELA_LIMITS_MAX_BODY", "10"},
                                                 {"VELA_GREETER_GREETING", "yo"}}));
    add_routes(app, config<Greeter>(app, "greeter"));
    app.start();
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(request_with_body("POST", "/echo", "01234567890")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->status, 413);
    Client g = Client::tcp(app.port());
    ASSERT_TRUE(g.send(get_request("/greet")));
    r = g.read_response();
    ASSERT_TRUE(r) << g.error();
    EXPECT_EQ(r->body, "yoyo");
    app.stop();
    app.wait();
}

TEST(ConfigE2E, UnreadSectionStopsStartAndRunWithOneLine) {
    ConfigFile file(std::string(kFile) + "\n[greter]\nrepeat = 3\n");
    App app;
    load_config(app, file.path());
    add_routes(app, config<Greeter>(app, "greeter"));
    try {
        app.start();
        FAIL() << "started";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  file.path() +
                      ":16: [greter]: no section of that name is read (vela reads server, "
                      "timeouts, limits, http2, websocket, sse, log; the application read "
                      "greeter with vela::config<T>())");
    }
    EXPECT_EQ(app.run(), 1);  // logged, not thrown
}

TEST(ConfigE2E, UnixSocketListenerAndLogSettings) {
    ConfigFile file("");
    const std::string sock = file.dir() + "/app.sock";
    std::ofstream(file.path()) << "[server]\nlisten = [\"127.0.0.1:0\", \"unix:" << sock
                               << "\"]\n[log]\nlevel = \"warn\"\nformat = \"json\"\n";
    const log::Format format_before = log::format();
    const bool info_before = log::enabled(log::Level::info);
    App app;
    load_config(app, file.path());
    EXPECT_EQ(log::format(), log::Format::json);
    EXPECT_FALSE(log::enabled(log::Level::info));
    EXPECT_TRUE(log::enabled(log::Level::warn));
    log::set_format(format_before);
    log::set_level(info_before ? log::Level::info : log::Level::warn);
    add_routes(app, config<Greeter>(app, "greeter"));
    app.start(1);
    EXPECT_NE(app.port(0), 0);
    EXPECT_EQ(app.port(1), 0);  // the Unix socket
    Client c = Client::unix_socket(sock);
    ASSERT_TRUE(c.send(get_request("/greet")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << c.error();
    EXPECT_EQ(r->body, "hello");
    app.stop();
    app.wait();
    std::remove(sock.c_str());
}

// A TLS listener with an SNI certificate from the file, checked with curl against the test CA:
// the default certificate for localhost, the SNI one for a.test.
TEST(ConfigE2E, TlsListenerWithSniFromTheFile) {
    const test::TestCerts& certs = test::test_certs();
    ConfigFile file(fmt::format(R"([[server.tls]]
listen = "127.0.0.1:0"
cert = "{}"
key = "{}"
[[server.tls.sni]]
cert = "{}"
key = "{}"
)",
                                certs.server_ec_cert, certs.server_ec_key, certs.sni_a_cert,
                                certs.sni_a_key));
    App app;
    load_config(app, file.path());
    add_routes(app, config<Greeter>(app, "greeter"));
    app.start(1);
    const std::string port = std::to_string(app.port());
    for (const std::string host : {"localhost", "a.test"}) {
        const Ran r =
            run_command("curl -sS --max-time 20 --cacert " + certs.ca + " --resolve " + host + ":" +
                        port + ":127.0.0.1 https://" + host + ":" + port + "/greet 2>&1");
        EXPECT_EQ(r.status, 0) << host << ": " << r.out;
        EXPECT_EQ(r.out, "hello") << host;
    }
    app.stop();
    app.wait();
}

// Metrics for metrics_text() alone.
MetricsOptions unrouted() {
    MetricsOptions o;
    o.path.clear();
    return o;
}

// The loops an app runs, as its metrics list them (each loop reports when it starts).
std::size_t loops_of(const App& app, std::size_t expected) {
    std::size_t n = 0;
    for (int i = 0; i < 200; ++i) {
        const std::string text = metrics_text(app);
        n = 0;
        for (std::size_t at = text.find("vela_loop_lag_seconds{loop="); at != std::string::npos;
             at = text.find("vela_loop_lag_seconds{loop=", at + 1))
            ++n;
        if (n >= expected) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return n;
}

// server.threads is what run(0)/start(0) use (the configuration's extension chooses it when the
// app starts); a count given to start() wins over it.
TEST(ConfigE2E, ServerThreadsChooseTheLoopsOfStartZeroOnly) {
    ConfigFile file("[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 3\n");
    {
        App app;
        load_config(app, file.path());
        metrics(app, unrouted());
        app.get("/", [] { return "ok"; });
        app.start();
        EXPECT_EQ(loops_of(app, 3), 3u);
        Client c = Client::tcp(app.port());
        ASSERT_TRUE(c.send(get_request("/")));
        auto r = c.read_response();
        ASSERT_TRUE(r) << c.error();
        EXPECT_EQ(r->body, "ok");
        app.stop();
        app.wait();
    }
    App app;
    load_config(app, file.path());
    metrics(app, unrouted());
    app.start(2);
    EXPECT_EQ(loops_of(app, 2), 2u);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(loops_of(app, 2), 2u);  // not a third one later
    app.stop();
    app.wait();
}

// The configuration is an App extension: found again by config(app), and like every extension
// refused once the app has started.
TEST(ConfigE2E, TheAppliedConfigurationIsFoundAgainAndFixedAtStart) {
    ConfigFile file(kFile);
    App app;
    EXPECT_EQ(config(app), nullptr);
    load_config(app, file.path());
    ASSERT_NE(config(app), nullptr);
    EXPECT_EQ(config(app)->threads(), 1u);
    EXPECT_EQ(app.options().limits.max_body, 1024u);
    add_routes(app, config<Greeter>(app, "greeter"));
    app.start();
    try {
        load_config(app, file.path());
        FAIL() << "applied after the start";
    } catch (const std::logic_error& e) {
        EXPECT_EQ(std::string(e.what()), "the configuration must be added before the app starts");
    }
    EXPECT_EQ(config(app)->threads(), 1u);  // the one applied before stays
    app.stop();
    app.wait();
}

TEST(ConfigE2E, BadValueInTheFileIsOneLine) {
    ConfigFile file("[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = \"two\"\n");
    App app;
    try {
        load_config(app, file.path());
        FAIL() << "loaded";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  file.path() + ":3: server.threads: expected an integer, got a string");
    }
}

}  // namespace
}  // namespace vela::e2e
