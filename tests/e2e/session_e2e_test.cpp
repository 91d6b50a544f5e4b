// Sessions end to end: vela::sessions() on an App. curl with a cookie jar plays the browser
// over loopback sockets (it keeps and sends back what Set-Cookie says); vela::testing::Client
// in process checks the exact Set-Cookie fields and sends forged or replayed cookies (raw
// Cookie fields, its own jar off); many clients on several loops use real sockets.
// Idle and absolute expiry run on an injected clock, so no test sleeps.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "client.hpp"
#include "process.hpp"
#include "session_routes.hpp"
#include "tls/certs.hpp"
#include "vela/crypto/crypto.hpp"
#include "vela/middleware/session.hpp"
#include "vela/testing/client.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {
namespace {

using namespace std::chrono_literals;
using SysClock = std::chrono::system_clock;

struct FakeClock {
    std::shared_ptr<std::atomic<std::int64_t>> secs =
        std::make_shared<std::atomic<std::int64_t>>(1'700'000'000);
    SessionClock fn() const {
        return [s = secs] { return SysClock::time_point(std::chrono::seconds(s->load())); };
    }
    void advance(std::chrono::seconds d) { *secs += d.count(); }
    SessionTime now() const { return SessionTime(std::chrono::seconds(secs->load())); }
};

struct Server {
    App app;
    std::uint16_t port = 0;
    std::optional<testing::Client> client;  // in process; cookies only as each test sends them
    explicit Server(SessionOptions o, unsigned threads = 1) {
        quick_options(app.options());
        app.use(sessions(std::move(o)));
        add_session_routes(app);
        testing::ClientOptions co;
        co.cookie_jar = false;
        client.emplace(app, co);
        start_app(app, threads);
        port = app.port();
    }
};

HttpResponse request(std::uint16_t port, const std::string& raw) {
    Client c = Client::tcp(port);
    EXPECT_TRUE(c.connected());
    EXPECT_TRUE(c.send(raw));
    std::optional<HttpResponse> r = c.read_response();
    EXPECT_TRUE(r) << c.error();
    return r ? *r : HttpResponse{};
}

HttpResponse get(std::uint16_t port, std::string_view path, std::string_view cookie = {}) {
    std::string extra;
    if (!cookie.empty()) extra = "Cookie: " + std::string(cookie) + "\r\n";
    return request(port, get_request(path, extra));
}

HttpResponse post(std::uint16_t port, std::string_view path, std::string_view body,
                  std::string_view cookie = {}) {
    std::string extra;
    if (!cookie.empty()) extra = "Cookie: " + std::string(cookie) + "\r\n";
    return request(port, request_with_body("POST", path, body, extra));
}

// The same requests in process, through the server's App.
testing::TestResponse request(Server& s, const std::string& raw) {
    return s.client->raw(raw).get();
}

testing::TestResponse get(Server& s, std::string_view path, std::string_view cookie = {}) {
    std::string extra;
    if (!cookie.empty()) extra = "Cookie: " + std::string(cookie) + "\r\n";
    return request(s, get_request(path, extra));
}

testing::TestResponse post(Server& s, std::string_view path, std::string_view body,
                           std::string_view cookie = {}) {
    std::string extra;
    if (!cookie.empty()) extra = "Cookie: " + std::string(cookie) + "\r\n";
    return request(s, request_with_body("POST", path, body, extra));
}

// The value the response's Set-Cookie gives `name` ("" if it sets none for it).
// (A response read in process or from a socket.)
template <class R>
std::string set_value(const R& r, std::string_view name = "vela.sid") {
    const auto& headers = [&]() -> const auto& {
        if constexpr (requires { r.headers(); })
            return r.headers();
        else
            return r.headers;
    }
    ();
    for (const auto& [n, v] : headers) {
        if (!iequal(n, "Set-Cookie")) continue;
        const std::string prefix = std::string(name) + "=";
        if (v.rfind(prefix, 0) != 0) continue;
        const std::size_t end = v.find(';');
        return v.substr(prefix.size(),
                        end == std::string::npos ? std::string::npos : end - prefix.size());
    }
    return {};
}

std::string cookie_of(std::string_view value, std::string_view name = "vela.sid") {
    return std::string(name) + "=" + std::string(value);
}

// ---- curl with a cookie jar -------------------------------------------------------------

class Jar {
  public:
    Jar() {
        char templ[] = "/tmp/vela-session-jar-XXXXXX";
        int fd = ::mkstemp(templ);
        if (fd >= 0) ::close(fd);
        path_ = templ;
    }
    ~Jar() { std::filesystem::remove(path_); }
    Jar(const Jar&) = delete;
    Jar& operator=(const Jar&) = delete;

    // The body curl got for `method` `url`, keeping cookies in the jar.
    std::string curl(const std::string& url, const std::string& method = "GET",
                     const std::string& body = {}, const std::string& args = {}) {
        std::string cmd = "timeout 20 curl -sS -c '" + path_ + "' -b '" + path_ + "' -X " + method;
        if (!args.empty()) cmd += " " + args;
        if (method == "POST") cmd += " --data-binary '" + body + "'";  // a Content-Length
        cmd += " '" + url + "' 2>&1";
        return shell(cmd);
    }

  private:
    std::string path_;
};

#define REQUIRE_CURL() \
    if (!have("curl")) GTEST_SKIP() << "needs curl (Debian package curl)"

std::string base(const Server& s) { return "http://127.0.0.1:" + std::to_string(s.port); }

// ---- Tests ------------------------------------------------------------------------------

TEST(SessionE2E, CounterPersistsWithCurlCookieJar) {
    REQUIRE_CURL();
    Server s({});
    Jar jar;
    EXPECT_EQ(jar.curl(base(s) + "/count"), "1");
    EXPECT_EQ(jar.curl(base(s) + "/count"), "2");
    EXPECT_EQ(jar.curl(base(s) + "/count"), "3");
    EXPECT_EQ(jar.curl(base(s) + "/peek"), "3");
    Jar other;  // another browser: its own session
    EXPECT_EQ(other.curl(base(s) + "/count"), "1");
    EXPECT_EQ(jar.curl(base(s) + "/count"), "4");
}

TEST(SessionE2E, LoginLogoutWithCurl) {
    REQUIRE_CURL();
    Server s({});
    Jar jar;
    EXPECT_EQ(jar.curl(base(s) + "/whoami"), "anonymous");
    EXPECT_EQ(jar.curl(base(s) + "/count"), "1");
    EXPECT_EQ(jar.curl(base(s) + "/login", "POST", "alice"), "welcome");
    EXPECT_EQ(jar.curl(base(s) + "/whoami"), "alice");
    EXPECT_EQ(jar.curl(base(s) + "/count"), "2") << "values survive regenerate()";
    EXPECT_EQ(jar.curl(base(s) + "/logout", "POST"), "bye");
    EXPECT_EQ(jar.curl(base(s) + "/whoami"), "anonymous");
    EXPECT_EQ(jar.curl(base(s) + "/count"), "1");
}

// A cookie of the same name planted in front of the real one (a sibling subdomain with a
// longer Path) does not hide it.
TEST(SessionE2E, APlantedCookieDoesNotHideTheRealOne) {
    Server s({});
    const testing::TestResponse first = get(s, "/count");
    ASSERT_EQ(first.body(), "1");
    const std::string real = set_value(first);
    const std::string planted(43, 'A');  // well-formed, unknown to the store
    const testing::TestResponse r = get(s, "/count", cookie_of(planted) + "; " + cookie_of(real));
    EXPECT_EQ(r.body(), "2");
}

// sessions() twice on one route is a 500 with a clear log line, not a use-after-free.
TEST(SessionE2E, InstalledTwiceIsAnError) {
    App app;
    quick_options(app.options());
    app.use(sessions());
    auto g = app.group("/g");
    g.use(sessions());
    g.get("/x", [](Request& req) { return session(req).id(); });
    start_app(app);
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.send(get_request("/g/x")));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
}

// A handler that throws answers 500, and the changes it made before are not saved.
TEST(SessionE2E, AFailedRequestSavesNothing) {
    Server s({});
    const testing::TestResponse first = get(s, "/count");
    ASSERT_EQ(first.body(), "1");
    const std::string cookie = cookie_of(set_value(first));
    const testing::TestResponse failed = get(s, "/count-then-fail", cookie);
    EXPECT_EQ(failed.status(), 500);
    EXPECT_EQ(set_value(failed), "");
    EXPECT_EQ(get(s, "/peek", cookie).body(), "1");
}

TEST(SessionE2E, NothingSentUntilSomethingIsStored) {
    auto store = std::make_shared<MemoryStore>();
    Server s({.store = store});
    testing::TestResponse r = get(s, "/whoami");
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.body(), "anonymous");
    EXPECT_FALSE(r.has_header("Set-Cookie"));
    r = get(s, "/id");  // an id asked for, but nothing stored: still nothing sent
    EXPECT_FALSE(r.has_header("Set-Cookie"));
    EXPECT_EQ(store->size(), 0u);
}

TEST(SessionE2E, CookieAttributes) {
    Server s({});
    testing::TestResponse r = get(s, "/count");
    ASSERT_EQ(r.header_values("Set-Cookie").size(), 1u);
    const std::string sc(r.header("Set-Cookie"));
    const std::string id = set_value(r);
    EXPECT_EQ(id.size(), 43u) << sc;
    EXPECT_TRUE(vela::base64url_decode(id)) << sc;
    EXPECT_TRUE(icontains(sc, "; Path=/")) << sc;
    EXPECT_TRUE(icontains(sc, "; HttpOnly")) << sc;
    EXPECT_TRUE(icontains(sc, "; SameSite=Lax")) << sc;
    EXPECT_FALSE(icontains(sc, "Secure")) << "plain HTTP: " << sc;
    EXPECT_FALSE(icontains(sc, "Max-Age")) << "a browser-session cookie: " << sc;
    EXPECT_FALSE(icontains(sc, "Domain")) << sc;

    // The same session again: unchanged id, so no new Set-Cookie.
    r = get(s, "/count", cookie_of(id));
    EXPECT_EQ(r.body(), "2");
    EXPECT_FALSE(r.has_header("Set-Cookie")) << r.header("Set-Cookie");
}

TEST(SessionE2E, ConfiguredCookie) {
    SessionOptions o;
    o.cookie_name = "__Host-sid";
    o.secure = true;
    o.same_site = SameSite::strict;
    o.persistent = true;
    o.idle_timeout = 600s;
    Server s(std::move(o));
    testing::TestResponse r = get(s, "/count");
    const std::string sc(r.header("Set-Cookie"));
    EXPECT_FALSE(set_value(r, "__Host-sid").empty()) << sc;
    EXPECT_TRUE(icontains(sc, "; Secure")) << sc;
    EXPECT_TRUE(icontains(sc, "; SameSite=Strict")) << sc;
    EXPECT_TRUE(icontains(sc, "Max-Age=600")) << sc;
}

// Over TLS the cookie is Secure without configuration; curl (trusting the test CA) keeps the
// session across requests and sends the Secure cookie back over https.
TEST(SessionE2E, SecureOverTls) {
    REQUIRE_CURL();
    App app;
    quick_options(app.options());
    app.use(sessions());
    add_session_routes(app);
    TlsOptions t;
    t.cert = test::test_certs().server_ec_cert;
    t.key = test::test_certs().server_ec_key;
    app.listen_tls("127.0.0.1:0", std::move(t));
    app.start(1);
    const std::string url = "https://localhost:" + std::to_string(app.port());
    const std::string resolve = "--cacert '" + test::test_certs().ca +
                                "' --resolve localhost:" + std::to_string(app.port()) +
                                ":127.0.0.1";
    Jar jar;
    EXPECT_EQ(jar.curl(url + "/count", "GET", {}, resolve), "1");
    EXPECT_EQ(jar.curl(url + "/count", "GET", {}, resolve), "2");
    const std::string head = jar.curl(url + "/count", "GET", {}, resolve + " -o /dev/null -D -");
    EXPECT_FALSE(icontains(head, "set-cookie")) << "an unchanged id is not resent: " << head;
    Jar fresh;
    const std::string first = fresh.curl(url + "/count", "GET", {}, resolve + " -o /dev/null -D -");
    EXPECT_TRUE(icontains(first, "; Secure")) << first;
    EXPECT_TRUE(icontains(first, "; HttpOnly")) << first;
}

TEST(SessionE2E, LoginRegeneratesTheId) {
    auto store = std::make_shared<MemoryStore>();
    Server s({.store = store});
    const std::string before = set_value(get(s, "/count"));
    ASSERT_FALSE(before.empty());
    testing::TestResponse r = post(s, "/login", "alice", cookie_of(before));
    const std::string after = set_value(r);
    ASSERT_FALSE(after.empty()) << "login must send the new id";
    EXPECT_NE(after, before);
    EXPECT_FALSE(store->find(before)) << "the old id is erased from the store";
    EXPECT_TRUE(store->find(after));
    EXPECT_EQ(get(s, "/whoami", cookie_of(after)).body(), "alice");
    EXPECT_EQ(get(s, "/count", cookie_of(after)).body(), "2");
    // Whoever kept the old id (a fixated or stolen one) is nobody now.
    r = get(s, "/whoami", cookie_of(before));
    EXPECT_EQ(r.body(), "anonymous");
}

TEST(SessionE2E, LogoutDestroys) {
    auto store = std::make_shared<MemoryStore>();
    Server s({.store = store});
    const std::string id = set_value(post(s, "/login", "bob"));
    ASSERT_FALSE(id.empty());
    testing::TestResponse r = post(s, "/logout", "", cookie_of(id));
    EXPECT_EQ(r.body(), "bye");
    const std::string sc(r.header("Set-Cookie"));
    EXPECT_TRUE(icontains(sc, "vela.sid=;")) << sc;
    EXPECT_TRUE(icontains(sc, "Max-Age=0")) << sc;
    EXPECT_EQ(store->size(), 0u);
    EXPECT_EQ(get(s, "/whoami", cookie_of(id)).body(), "anonymous");
}

TEST(SessionE2E, UnknownOrForgedIdsGetAFreshSession) {
    auto store = std::make_shared<MemoryStore>();
    Server s({.store = store});
    const std::string forged = crypto::random_token(32);  // well-formed, but never issued
    testing::TestResponse r = get(s, "/count", cookie_of(forged));
    EXPECT_EQ(r.body(), "1");
    const std::string issued = set_value(r);
    ASSERT_FALSE(issued.empty());
    EXPECT_NE(issued, forged) << "an id the store does not know is never adopted";
    EXPECT_FALSE(store->find(forged));

    // Nothing to store: the stale cookie is expired instead.
    r = get(s, "/whoami", cookie_of(forged));
    EXPECT_EQ(r.body(), "anonymous");
    EXPECT_TRUE(icontains(r.header("Set-Cookie"), "Max-Age=0")) << r.header("Set-Cookie");

    // Malformed values are not even looked up.
    for (std::string bad : {std::string("x"), std::string(43, '!'), std::string(2000, 'A'),
                            issued + "A", std::string("\"") + issued + "\""}) {
        r = get(s, "/peek", cookie_of(bad));
        EXPECT_EQ(r.status(), 200) << bad;
        if (bad.front() == '"')
            EXPECT_EQ(r.body(), "1") << "quotes around a cookie value are not part of it";
        else
            EXPECT_EQ(r.body(), "0") << bad;
    }
    EXPECT_EQ(get(s, "/peek", cookie_of(issued)).body(), "1");
}

TEST(SessionE2E, IdleExpiryAndTouchCoalescing) {
    FakeClock clock;
    auto store = std::make_shared<MemoryStore>(MemoryStoreOptions{.clock = clock.fn()});
    SessionOptions o;
    o.store = store;
    o.clock = clock.fn();
    o.idle_timeout = 600s;
    o.touch_interval = 60s;
    Server s(std::move(o));
    const SessionTime t0 = clock.now();
    const std::string id = set_value(get(s, "/count"));
    ASSERT_FALSE(id.empty());
    EXPECT_EQ(store->find(id)->accessed, t0);

    clock.advance(30s);  // a read soon after the save: not rewritten
    EXPECT_EQ(get(s, "/peek", cookie_of(id)).body(), "1");
    EXPECT_EQ(store->find(id)->accessed, t0);

    clock.advance(40s);  // 70 s since the save: touched
    EXPECT_EQ(get(s, "/peek", cookie_of(id)).body(), "1");
    EXPECT_EQ(store->find(id)->accessed, t0 + 70s);

    clock.advance(590s);  // 590 s idle since the touch: alive
    EXPECT_EQ(get(s, "/peek", cookie_of(id)).body(), "1");
    clock.advance(600s);  // idle too long
    testing::TestResponse r = get(s, "/count", cookie_of(id));
    EXPECT_EQ(r.body(), "1") << "a fresh session";
    EXPECT_NE(set_value(r), id);
}

TEST(SessionE2E, AbsoluteExpiryEvenWhenBusy) {
    FakeClock clock;
    auto store = std::make_shared<MemoryStore>(MemoryStoreOptions{.clock = clock.fn()});
    SessionOptions o;
    o.store = store;
    o.clock = clock.fn();
    o.idle_timeout = 1800s;
    o.absolute_timeout = 3600s;
    Server s(std::move(o));
    const std::string id = set_value(get(s, "/count"));
    ASSERT_FALSE(id.empty());
    for (int i = 0; i < 5; ++i) {  // busy every 10 minutes
        clock.advance(600s);
        EXPECT_EQ(get(s, "/count", cookie_of(id)).body(), std::to_string(i + 2));
    }
    clock.advance(600s);  // 3600 s since creation
    EXPECT_EQ(get(s, "/count", cookie_of(id)).body(), "1");
    EXPECT_FALSE(store->find(id));
}

TEST(SessionE2E, ManyClientsOnSeveralLoops) {
    Server s({}, 2);
    constexpr int kClients = 8, kRequests = 25;
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < kClients; ++c)
        threads.emplace_back([&] {
            std::string id;
            for (int i = 1; i <= kRequests; ++i) {
                HttpResponse r = get(s.port, "/count", id.empty() ? "" : cookie_of(id));
                if (id.empty()) id = set_value(r);
                if (r.body != std::to_string(i)) ++wrong;
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(wrong.load(), 0);
}

// ---- The cookie store -------------------------------------------------------------------

SessionOptions cookie_options(std::shared_ptr<const CookieStore> cs,
                              const FakeClock* clock = nullptr) {
    SessionOptions o;
    o.cookie_store = std::move(cs);
    if (clock) o.clock = clock->fn();
    return o;
}

TEST(SessionE2E, CookieStoreWithCurl) {
    REQUIRE_CURL();
    Server s(cookie_options(std::make_shared<CookieStore>(std::vector{crypto::random_token()})));
    Jar jar;
    EXPECT_EQ(jar.curl(base(s) + "/count"), "1");
    EXPECT_EQ(jar.curl(base(s) + "/count"), "2");
    EXPECT_EQ(jar.curl(base(s) + "/login", "POST", "carol"), "welcome");
    EXPECT_EQ(jar.curl(base(s) + "/whoami"), "carol");
    EXPECT_EQ(jar.curl(base(s) + "/count"), "3");
    EXPECT_EQ(jar.curl(base(s) + "/logout", "POST"), "bye");
    EXPECT_EQ(jar.curl(base(s) + "/whoami"), "anonymous");
}

TEST(SessionE2E, CookieStoreRejectsTamperingAndOtherKeys) {
    auto cs = std::make_shared<CookieStore>(std::vector{crypto::random_token()});
    Server s(cookie_options(cs));
    std::string value = set_value(get(s.port, "/count"));
    ASSERT_GT(value.size(), 60u);
    EXPECT_EQ(get(s.port, "/peek", cookie_of(value)).body, "1");
    std::string tampered = value;
    tampered[30] = tampered[30] == 'A' ? 'B' : 'A';
    HttpResponse r = get(s.port, "/peek", cookie_of(tampered));
    EXPECT_EQ(r.body, "0");
    EXPECT_TRUE(icontains(r.header("Set-Cookie"), "Max-Age=0"));

    CookieStore stranger({crypto::random_token()});
    SessionRecord rec;
    rec.data = R"({"count":99,"user":"admin"})";
    rec.created = rec.accessed = std::chrono::floor<std::chrono::seconds>(SysClock::now());
    EXPECT_EQ(
        get(s.port, "/peek", cookie_of(stranger.seal(crypto::random_token(32), rec, "vela.sid")))
            .body,
        "0");
    // The same secret, sealed for another cookie name, does not open here either.
    EXPECT_EQ(
        get(s.port, "/peek", cookie_of(cs->seal(crypto::random_token(32), rec, "other"))).body,
        "0");
    EXPECT_EQ(
        get(s.port, "/peek", cookie_of(cs->seal(crypto::random_token(32), rec, "vela.sid"))).body,
        "99");
}

TEST(SessionE2E, CookieStoreKeyRotation) {
    const std::string k1 = crypto::random_token(), k2 = crypto::random_token();
    std::string value;
    {
        Server before(cookie_options(std::make_shared<CookieStore>(std::vector{k1})));
        value = set_value(get(before.port, "/count"));
    }
    Server after(cookie_options(std::make_shared<CookieStore>(std::vector{k2, k1})));
    HttpResponse r = get(after.port, "/count", cookie_of(value));
    EXPECT_EQ(r.body, "2") << "the old secret still opens";
    const std::string resealed = set_value(r);
    EXPECT_TRUE(CookieStore({k2}).open(resealed, "vela.sid")) << "resealed with the newest";
    EXPECT_FALSE(CookieStore({k1}).open(resealed, "vela.sid"));
}

TEST(SessionE2E, CookieStoreExpiryIsSealedIn) {
    FakeClock clock;
    auto cs = std::make_shared<CookieStore>(std::vector{crypto::random_token()});
    SessionOptions o = cookie_options(cs, &clock);
    o.idle_timeout = 1800s;
    o.absolute_timeout = 3600s;
    Server s(std::move(o));
    const std::string first = set_value(get(s.port, "/count"));
    std::string latest = first;
    for (int i = 0; i < 5; ++i) {
        clock.advance(600s);
        HttpResponse r = get(s.port, "/count", cookie_of(latest));
        EXPECT_EQ(r.body, std::to_string(i + 2));
        latest = set_value(r);
    }
    // A replay of the very first cookie, idle for 50 minutes: refused.
    EXPECT_EQ(get(s.port, "/peek", cookie_of(first)).body, "0");
    clock.advance(600s);  // an hour since creation: even the newest cookie is refused
    EXPECT_EQ(get(s.port, "/peek", cookie_of(latest)).body, "0");
}

TEST(SessionE2E, CookieStoreTooLargeIsNotSent) {
    Server s(cookie_options(std::make_shared<CookieStore>(std::vector{crypto::random_token()})));
    const std::string value = set_value(get(s.port, "/count"));
    ASSERT_FALSE(value.empty());
    HttpResponse r = post(s.port, "/big", std::string(2000, 'a'), cookie_of(value));
    EXPECT_EQ(r.status, 200);
    const std::string fits = set_value(r);
    EXPECT_FALSE(fits.empty()) << "2000 bytes of data fit in 4096";
    r = post(s.port, "/big", std::string(3500, 'a'), cookie_of(fits));
    EXPECT_EQ(r.status, 200) << "the handler's answer still goes out";
    EXPECT_FALSE(r.has_header("Set-Cookie")) << "a cookie over 4096 bytes is not sent";
    EXPECT_EQ(get(s.port, "/peek", cookie_of(fits)).body, "1") << "the previous cookie still works";
}

TEST(SessionE2E, MissingMiddlewareIsA500NotACrash) {
    App app;
    quick_options(app.options());
    app.get("/", [](Request& req) { return session(req).id(); });
    start_app(app);
    HttpResponse r = get(app.port(), "/");
    EXPECT_EQ(r.status, 500);
}

}  // namespace
}  // namespace vela::e2e
