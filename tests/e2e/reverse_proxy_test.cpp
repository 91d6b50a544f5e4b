// vela::reverse_proxy end to end: a gateway App forwarding to real upstreams on loopback (vela
// Apps, python3's http.server, raw-socket servers that misbehave), driven by vela's HTTP
// client, curl and raw sockets.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "e2e/client.hpp"
#include "e2e/example_process.hpp"
#include "e2e/process.hpp"
#include "e2e/python.hpp"
#include "e2e/raw_server.hpp"
#include "vela/async/when_all.hpp"
#include "vela/base/ascii.hpp"
#include "vela/client/client.hpp"
#include "vela/proxy/reverse_proxy.hpp"
#include "vela/reactor/block_on.hpp"

namespace vela::e2e {
namespace {

using http::ClientRequest;
using http::ClientResponse;

std::string base(const App& app, std::size_t index = 0) {
    return "http://127.0.0.1:" + std::to_string(app.port(index));
}

template <class T>
T run(Task<T> t) {
    return block_on(std::move(t));
}

// A port nothing listens on (bound, then closed).
std::string dead_url() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    const std::uint16_t port = net::local_port(fd);
    ::close(fd);
    return "http://127.0.0.1:" + std::to_string(port);
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = ascii::lower(c);
    return out;
}

// An upstream that tells what it received, and answers in several ways.
void upstream_routes(App& up, std::string name) {
    up.get("/name", [name] { return name; });
    up.get("/echo-head", [](Request& r) {
        std::string out = std::string(r.method_name()) + " " + std::string(r.target()) + "\n";
        for (const Header& h : r.headers())
            out += ascii_lower(h.name) + ": " + std::string(h.value) + "\n";
        return out;
    });
    up.route(Method::DELETE, "/echo-head", [](Request& r) { return std::string(r.method_name()); });
    up.post("/echo", [](Request& r) { return std::string(r.body()); });
    up.put("/echo", [](Request& r) { return std::string(r.body()); });
    up.get("/big", [](Request& r) {
        const auto n = std::stoul(r.query("n").value_or("0"));
        std::string s(n, 'x');
        for (std::size_t i = 0; i < n; i += 1000) s[i] = static_cast<char>('a' + (i / 1000) % 26);
        return s;
    });
    up.get("/hop", [] {
        Response r("hop");
        r.add_header("X-Secret", "internal");
        r.add_header("X-Up", "yes");
        r.add_header("Keep-Alive", "timeout=5");
        r.add_header("Set-Cookie", "a=1");
        r.add_header("Set-Cookie", "b=2");
        r.add_header("Via", "1.1 inner");
        return r;
    });
    up.get("/created", [] { return Response::json("{\"ok\":true}", Status::Created); });
    up.get("/nocontent", [] { return Status::NoContent; });
    up.get("/healthz", [] { return "ok"; });
    up.get("/version", [](Request& r) { return std::to_string(r.version()); });
}

ReverseProxyOptions to(std::vector<std::string> upstreams) {
    ReverseProxyOptions o;
    o.upstreams = std::move(upstreams);
    return o;
}

class ReverseProxyTest : public ::testing::Test {
  protected:
    void SetUp() override {
        upstream_routes(up, "one");
        quick_options(up.options());
        start_app(up);
    }
    void start_gateway(ReverseProxyOptions o, std::string_view prefix = "/api") {
        quick_options(gw.options());
        proxy = reverse_proxy(gw, prefix, std::move(o));
        gw.get("/local", [] { return "served here"; });
        start_app(gw);
    }
    ClientResponse get(std::string path, std::vector<http::Header> headers = {}) {
        return run(client.get(base(gw) + path, std::move(headers)));
    }

    App up;
    App gw;
    std::optional<ReverseProxy> proxy;
    http::Client client{[] {
        http::ClientOptions o;
        o.follow_redirects = false;
        o.retries = 0;
        return o;
    }()};
};

TEST_F(ReverseProxyTest, ForwardsBelowThePrefixAndServesItsOwnRoutes) {
    auto o = to({base(up)});
    o.strip_prefix = true;
    start_gateway(std::move(o));
    EXPECT_EQ(get("/api/name").text(), "one");
    EXPECT_EQ(get("/local").text(), "served here");
    const ClientResponse r = get("/api/echo-head?x=1&y=%2F");
    EXPECT_EQ(r.status(), 200);
    EXPECT_TRUE(r.text().starts_with("GET /echo-head?x=1&y=%2F\n")) << r.text();
    EXPECT_EQ(get("/api/created").status(), 201);
    EXPECT_EQ(get("/api/created").header("content-type"), "application/json");
    EXPECT_EQ(get("/api/nocontent").status(), 204);
    EXPECT_EQ(get("/api/missing").status(), 404);  // the upstream's answer
    EXPECT_EQ(get("/elsewhere").status(), 404);    // the gateway's own
}

TEST_F(ReverseProxyTest, KeepsThePrefixUnlessStrippedAndRewrites) {
    auto o = to({base(up) + "/"});
    o.rewrite = [](std::string_view t) {
        std::string s(t);
        if (s.starts_with("/api/v1/")) s.replace(0, 8, "/");
        return s;
    };
    start_gateway(std::move(o));
    EXPECT_EQ(get("/api/v1/name").text(), "one");
    EXPECT_EQ(get("/api/name").status(), 404);  // sent as /api/name
}

TEST_F(ReverseProxyTest, UpstreamPathIsPutBeforeTheTarget) {
    App inner;
    inner.get("/v2/name", [] { return "v2"; });
    start_app(inner);
    auto o = to({base(inner) + "/v2"});
    o.strip_prefix = true;
    start_gateway(std::move(o));
    EXPECT_EQ(get("/api/name").text(), "v2");
}

TEST_F(ReverseProxyTest, HopByHopFieldsGoAndForwardingFieldsCome) {
    start_gateway(to({base(up)}), "/");
    Client raw = Client::tcp(gw.port());
    raw.send(
        "GET /echo-head HTTP/1.1\r\nHost: front.example\r\nConnection: keep-alive, X-Private\r\n"
        "X-Private: drop me\r\nKeep-Alive: timeout=9\r\nProxy-Authorization: Basic eDp5\r\n"
        "TE: deflate;q=0.5, trailers\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\n"
        "X-Kept: kept\r\nUser-Agent: test-agent\r\n\r\n");
    const std::optional<HttpResponse> r = raw.read_response();
    ASSERT_TRUE(r) << raw.error();
    ASSERT_EQ(r->status, 200) << r->body;
    const std::string& b = r->body;
    EXPECT_EQ(b.find("x-private"), std::string::npos) << b;
    EXPECT_EQ(b.find("keep-alive: timeout"), std::string::npos) << b;
    EXPECT_EQ(b.find("proxy-authorization"), std::string::npos) << b;
    // TE is hop-by-hop: only "trailers" goes up again, as the proxy's own.
    EXPECT_NE(b.find("\nte: trailers\n"), std::string::npos) << b;
    EXPECT_EQ(b.find("deflate"), std::string::npos) << b;
    EXPECT_EQ(b.find("6.6.6.6"), std::string::npos) << b;  // a client's claim is dropped
    EXPECT_NE(b.find("x-kept: kept\n"), std::string::npos) << b;
    EXPECT_NE(b.find("user-agent: test-agent\n"), std::string::npos) << b;
    EXPECT_NE(b.find("x-forwarded-for: 127.0.0.1\n"), std::string::npos) << b;
    EXPECT_NE(b.find("x-forwarded-proto: http\n"), std::string::npos) << b;
    EXPECT_NE(b.find("x-forwarded-host: front.example\n"), std::string::npos) << b;
    EXPECT_NE(b.find("via: 1.1 vela\n"), std::string::npos) << b;
    EXPECT_NE(b.find("host: 127.0.0.1:" + std::to_string(up.port()) + "\n"), std::string::npos)
        << b;
}

TEST_F(ReverseProxyTest, TrustedProxysForwardingFieldsAreAppendedTo) {
    gw.use(trusted_proxies({.proxies = {"loopback"}, .forwarded = true}));
    auto o = to({base(up)});
    o.forwarded = true;
    o.preserve_host = true;
    start_gateway(std::move(o), "/");
    const ClientResponse r = get("/echo-head", {{"X-Forwarded-For", "203.0.113.7"},
                                                {"X-Forwarded-Proto", "https"},
                                                {"X-Forwarded-Host", "shop.example"},
                                                {"Forwarded", "for=203.0.113.7;proto=https"},
                                                {"Via", "1.1 edge"}});
    const std::string& b = r.text();
    EXPECT_NE(b.find("x-forwarded-for: 203.0.113.7, 127.0.0.1\n"), std::string::npos) << b;
    EXPECT_NE(b.find("x-forwarded-proto: https\n"), std::string::npos) << b;
    EXPECT_NE(b.find("x-forwarded-host: shop.example\n"), std::string::npos) << b;
    EXPECT_NE(b.find("forwarded: for=203.0.113.7;proto=https, for=127.0.0.1;host="),
              std::string::npos)
        << b;
    EXPECT_NE(b.find("via: 1.1 edge, 1.1 vela\n"), std::string::npos) << b;
    // preserve_host: the client's Host goes upstream.
    EXPECT_NE(b.find("host: 127.0.0.1:" + std::to_string(gw.port()) + "\n"), std::string::npos)
        << b;
}

TEST_F(ReverseProxyTest, HostIsSentOnceAndFirst) {
    // The upstream's authority by default; set_request_headers' Host replaces it (a virtual
    // host behind the upstream's address), never beside it (two Hosts are a 400, RFC 9112 3.2).
    auto o = to({base(up)});
    o.set_request_headers = {{"Host", "virtual.example"}};
    start_gateway(std::move(o), "/");
    const ClientResponse e = get("/echo-head");
    ASSERT_EQ(e.status(), 200) << e.text();
    const std::string body = e.text();
    const std::string first = body.substr(body.find('\n') + 1);
    EXPECT_TRUE(first.starts_with("host: virtual.example\n")) << body;
    EXPECT_EQ(body.find("\nhost:", body.find("\nhost:") + 1), std::string::npos) << body;
}

TEST_F(ReverseProxyTest, DefaultHostIsTheUpstreamsAndFirst) {
    start_gateway(to({base(up)}), "/");
    const ClientResponse e = get("/echo-head", {{"Host", "client.example"}});
    ASSERT_EQ(e.status(), 200) << e.text();
    const std::string body = e.text();
    const std::string first = body.substr(body.find('\n') + 1);
    EXPECT_TRUE(first.starts_with("host: 127.0.0.1:" + std::to_string(up.port()) + "\n")) << body;
    EXPECT_EQ(body.find("\nhost:", body.find("\nhost:") + 1), std::string::npos) << body;
}

TEST_F(ReverseProxyTest, ResponseFieldsAreFilteredAndSet) {
    auto o = to({base(up)});
    o.remove_response_headers = {"X-Secret"};
    o.set_response_headers = {{"X-Gateway", "gw1"}};
    o.set_request_headers = {{"X-Api-Key", "k"}};
    o.remove_request_headers = {"X-Drop"};
    start_gateway(std::move(o), "/");
    Client raw = Client::tcp(gw.port());
    raw.send(get_request("/hop"));
    const std::optional<HttpResponse> r = raw.read_response();
    ASSERT_TRUE(r) << raw.error();
    ASSERT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hop");
    EXPECT_EQ(r->header("x-secret"), "");
    EXPECT_EQ(r->header("x-up"), "yes");
    EXPECT_EQ(r->header("x-gateway"), "gw1");
    EXPECT_EQ(r->header("keep-alive"), "");
    EXPECT_EQ(r->header("via"), "1.1 inner, 1.1 vela");
    EXPECT_EQ(r->header_count("server"), 1u);
    EXPECT_EQ(r->header_count("date"), 1u);
    EXPECT_EQ(r->header_count("set-cookie"), 2u);
    const ClientResponse e = get("/echo-head", {{"X-Drop", "1"}, {"X-Api-Key", "client's"}});
    EXPECT_EQ(e.text().find("x-drop"), std::string::npos) << e.text();
    EXPECT_NE(e.text().find("x-api-key: k\n"), std::string::npos) << e.text();
}

// edit_request_headers: per request, after set_request_headers and remove_request_headers, with
// what the request carries (its path; an attribute a before-hook set from a token). A client's
// field of the same name is removed first, so only the hook's goes up.
ReverseProxyOptions with_user_hook(ReverseProxyOptions o) {
    o.remove_request_headers = {"X-User-Id"};
    o.set_request_headers = {{"X-Set", "by options"}};
    o.edit_request_headers = [](const Request& req,
                                std::vector<std::pair<std::string, std::string>>& fields) {
        // The options were applied before: the client's X-User-Id is gone, X-Set is there.
        std::string seen = "none";
        for (const auto& [name, value] : fields) {
            if (ascii_lower(name) == "x-user-id") seen = "client's " + value;
            if (ascii_lower(name) == "x-set") seen = seen == "none" ? "set" : seen;
        }
        fields.emplace_back("X-Hook-Saw", seen);
        fields.emplace_back("X-Path", std::string(req.path()));
        if (const auto user = req.attribute("user")) fields.emplace_back("X-User-Id", *user);
        // Changing and removing fields the client sent.
        std::erase_if(fields, [](const auto& f) { return ascii_lower(f.first) == "x-drop-me"; });
        for (auto& [name, value] : fields)
            if (ascii_lower(name) == "x-shout") value = "LOUD";
    };
    return o;
}

// A before-hook that takes the user from "Authorization: Bearer <user>".
void user_from_bearer(App& gw) {
    gw.use([](Request& r) -> std::optional<Response> {
        const std::string_view auth = r.header("authorization");
        if (auth.starts_with("Bearer ")) r.set_attribute("user", auth.substr(7));
        return std::nullopt;
    });
}

// How many times `line` ("name: value\n") is in `body`.
std::size_t lines_of(const std::string& body, const std::string& line) {
    std::size_t n = 0;
    for (std::size_t at = body.find(line); at != std::string::npos; at = body.find(line, at + 1))
        if (at == 0 || body[at - 1] == '\n') ++n;
    return n;
}

TEST_F(ReverseProxyTest, EditRequestHeadersAddsFieldsFromTheRequest) {
    user_from_bearer(gw);
    start_gateway(with_user_hook(to({base(up)})), "/");
    ClientResponse e = get("/echo-head?q=1", {{"Authorization", "Bearer alice"},
                                              {"X-User-Id", "mallory"},
                                              {"X-Drop-Me", "1"},
                                              {"X-Shout", "quiet"}});
    ASSERT_EQ(e.status(), 200) << e.text();
    std::string b = e.text();
    EXPECT_EQ(lines_of(b, "x-user-id: alice\n"), 1u) << b;
    EXPECT_EQ(lines_of(b, "x-user-id:"), 1u) << b;
    EXPECT_EQ(b.find("mallory"), std::string::npos) << b;
    EXPECT_NE(b.find("\nx-path: /echo-head\n"), std::string::npos) << b;
    EXPECT_NE(b.find("\nx-hook-saw: set\n"), std::string::npos) << b;
    EXPECT_NE(b.find("\nx-set: by options\n"), std::string::npos) << b;
    EXPECT_EQ(b.find("x-drop-me"), std::string::npos) << b;
    EXPECT_NE(b.find("\nx-shout: LOUD\n"), std::string::npos) << b;
    // Per request: another user, another path; without a token, no X-User-Id at all (the
    // client's own is still removed).
    e = get("/echo-head", {{"Authorization", "Bearer bob"}});
    b = e.text();
    EXPECT_EQ(lines_of(b, "x-user-id: bob\n"), 1u) << b;
    EXPECT_EQ(b.find("alice"), std::string::npos) << b;
    e = get("/echo-head", {{"X-User-Id", "mallory"}});
    b = e.text();
    EXPECT_EQ(b.find("x-user-id"), std::string::npos) << b;
    EXPECT_NE(b.find("\nx-hook-saw: set\n"), std::string::npos) << b;
    // A request with a body goes through the hook as well.
    const ClientResponse post = run(client.post(base(gw) + "/echo", "the body", "text/plain"));
    EXPECT_EQ(post.status(), 200);
    EXPECT_EQ(post.text(), "the body");
}

TEST_F(ReverseProxyTest, EditRequestHeadersAppliesOverHttp2) {
    if (!have_curl_h2()) GTEST_SKIP() << "curl without HTTP/2";
    user_from_bearer(gw);
    start_gateway(with_user_hook(to({base(up)})), "/");
    auto [status, body] = curl_status(
        "--http2-prior-knowledge -H 'Authorization: Bearer carol' -H 'X-User-Id: mallory'",
        base(gw) + "/echo-head");
    EXPECT_EQ(status, 200) << body;
    EXPECT_EQ(lines_of(body, "x-user-id: carol\n"), 1u) << body;
    EXPECT_EQ(body.find("mallory"), std::string::npos) << body;
    EXPECT_NE(body.find("\nx-path: /echo-head\n"), std::string::npos) << body;
    EXPECT_NE(body.find("via: 2 vela\n"), std::string::npos) << body;
}

TEST_F(ReverseProxyTest, BodiesStreamBothWays) {
    start_gateway(to({base(up)}), "/");
    // A request body with a length, and one chunked (curl reads it from stdin).
    const std::string body(3 << 20, 'b');
    ClientResponse r = run(client.post(base(gw) + "/echo", body));
    EXPECT_EQ(r.status(), 200);
    EXPECT_EQ(r.text().size(), body.size());
    EXPECT_EQ(r.text(), body);
    // A chunked one.
    ClientRequest req;
    req.method = "PUT";
    req.url = base(gw) + "/echo";
    auto left = std::make_shared<int>(50);
    req.body_source = [left]() -> Task<std::optional<std::string>> {
        if ((*left)-- == 0) co_return std::nullopt;
        co_return std::string(2000, 'z');
    };
    r = run(client.request(std::move(req)));
    EXPECT_EQ(r.text(), std::string(100000, 'z'));
    // A response larger than buffer_below streams, intact, with the upstream's length.
    r = get("/big?n=5000000");
    EXPECT_EQ(r.status(), 200);
    ASSERT_EQ(r.text().size(), 5000000u);
    EXPECT_EQ(r.text()[1000], 'b');
    EXPECT_EQ(r.text()[25 * 1000], 'z');
    Client raw = Client::tcp(gw.port());
    raw.send(get_request("/big?n=100"));
    const std::optional<HttpResponse> small = raw.read_response();
    ASSERT_TRUE(small) << raw.error();
    EXPECT_EQ(small->header("content-length"), "100");  // small: passed with its length
    raw.send(get_request("/big?n=200000"));
    const std::optional<HttpResponse> large = raw.read_response();
    ASSERT_TRUE(large) << raw.error();
    EXPECT_EQ(large->header("content-length"), "200000");
    EXPECT_FALSE(large->has_header("transfer-encoding"));
    EXPECT_EQ(large->body.size(), 200000u);
}

TEST_F(ReverseProxyTest, CurlsExpect100ContinueUploadGoesThrough) {
    start_gateway(to({base(up)}), "/");
    const std::string file =
        ::testing::TempDir() + "vela-proxy-upload-" + std::to_string(::getpid());
    {
        std::ofstream f(file, std::ios::binary);
        f << std::string(2 << 20, 'u');
    }
    // curl sends Expect: 100-continue for a body this large and waits for the 100.
    const Ran r = run_command("curl -sS -v -X POST --data-binary @" + file + " " + base(gw) +
                              "/echo -o /dev/null -w '%{http_code} %{size_download}' 2>&1");
    EXPECT_NE(r.out.find("Expect: 100-continue"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("HTTP/1.1 100 Continue"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("200 2097152"), std::string::npos) << r.out;
    std::filesystem::remove(file);
}

TEST_F(ReverseProxyTest, HeadKeepsTheLength) {
    start_gateway(to({base(up)}), "/");
    Client raw = Client::tcp(gw.port());
    raw.send("HEAD /big?n=1234 HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::optional<HttpResponse> r = raw.read_response(/*head_request=*/true);
    ASSERT_TRUE(r) << raw.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("content-length"), "1234");
    EXPECT_TRUE(r->body.empty());
    raw.send(get_request("/name"));  // the connection is still in step
    const std::optional<HttpResponse> next = raw.read_response();
    ASSERT_TRUE(next) << raw.error();
    EXPECT_EQ(next->body, "one");
}

TEST_F(ReverseProxyTest, LargeBodiesHaveNoClientLimitAndHeadNeverSaysZero) {
    start_gateway(to({base(up)}), "/");
    // Past the HTTP client's own 64 MiB default for buffered bodies: streamed, no limit.
    // (The request and its body's reads on one loop: a client's pools are per loop.)
    http::ClientOptions unlimited;
    unlimited.max_body = 0;
    http::Client reader(unlimited);
    auto count = [&]() -> Task<std::uint64_t> {
        ClientRequest req;
        req.url = base(gw) + "/big?n=" + std::to_string((64 << 20) + 4096);
        req.stream = true;
        ClientResponse r = co_await reader.request(std::move(req));
        if (r.status() != 200) co_return 0;
        std::uint64_t n = 0;
        while (auto piece = co_await r.body().read()) n += piece->size();
        co_return n;
    };
    EXPECT_EQ(run(count()), (64u << 20) + 4096u);
    // HEAD of a large body: announced with its length, not as 0 bytes.
    Client raw = Client::tcp(gw.port());
    raw.send("HEAD /big?n=200000 HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::optional<HttpResponse> h = raw.read_response(/*head_request=*/true);
    ASSERT_TRUE(h) << raw.error();
    EXPECT_EQ(h->status, 200);
    EXPECT_EQ(h->header("content-length"), "200000");
    EXPECT_FALSE(h->has_header("transfer-encoding"));
    raw.send(get_request("/name"));  // still in step
    const std::optional<HttpResponse> next = raw.read_response();
    ASSERT_TRUE(next) << raw.error();
    EXPECT_EQ(next->body, "one");
}

TEST_F(ReverseProxyTest, OnlyAllowedUpgradesAreTunnelled) {
    start_gateway(to({base(up)}), "/");
    // A protocol not in `upgrades`: the request goes on as a plain one, without its Upgrade.
    // (h2c never reaches the proxy: the gateway's own server answers an h2c upgrade.)
    Client raw = Client::tcp(gw.port());
    raw.send(
        "GET /echo-head HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, X-Proto-Settings\r\n"
        "Upgrade: my-proto\r\nX-Proto-Settings: 1\r\n\r\n");
    const std::optional<HttpResponse> r = raw.read_response();
    ASSERT_TRUE(r) << raw.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body.find("upgrade"), std::string::npos) << r->body;
    EXPECT_EQ(r->body.find("x-proto-settings"), std::string::npos) << r->body;
    // An upgrade request with a body is refused.
    Client body = Client::tcp(gw.port());
    body.send(
        "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        "Content-Length: 3\r\n\r\nabc");
    const std::optional<HttpResponse> b = body.read_response();
    ASSERT_TRUE(b) << body.error();
    EXPECT_EQ(b->status, 400);
    auto h2c = to({base(up)});
    h2c.upgrades = {"websocket", "h2c"};
    EXPECT_THROW(ReverseProxy(std::move(h2c)), std::invalid_argument);
}

TEST_F(ReverseProxyTest, NoFreeConnectionIs503AndNotTheUpstreamsFault) {
    // The one connection is held by a body that takes 800 ms to come (its head comes at once).
    App slow;
    slow.get("/slow", [] {
        return stream_body(Response(), [](BodyWriter& w) -> Task<void> {
            for (int i = 0; i < 4; ++i) {
                co_await sleep(200ms);
                if (!co_await w.write("part;")) co_return;
            }
        });
    });
    start_app(slow);
    auto o = to({base(slow)});
    o.max_connections_per_upstream = 1;
    o.request_timeout = 300ms;
    o.max_fails = 1;
    start_gateway(std::move(o), "/");
    auto two = [&]() -> Task<std::vector<int>> {
        std::vector<Task<ClientResponse>> both;
        both.push_back(client.get(base(gw) + "/slow"));
        both.push_back(client.get(base(gw) + "/slow"));
        std::vector<int> codes;
        for (const ClientResponse& r : co_await when_all(std::move(both)))
            codes.push_back(r.status());
        co_return codes;
    };
    std::vector<int> codes = run(two());
    std::sort(codes.begin(), codes.end());
    ASSERT_EQ(codes.size(), 2u);
    EXPECT_EQ(codes[0], 200);
    EXPECT_EQ(codes[1], 503);  // waited for the one connection past request_timeout
    EXPECT_TRUE(proxy->upstreams()[0].healthy);  // our cap, not the upstream's failure
}

TEST_F(ReverseProxyTest, UnreachableUpstreamIs502WithTheAppsErrorBody) {
    gw.error_pages({.format = ErrorFormat::problem_json});
    auto o = to({dead_url()});
    o.max_fails = 0;
    start_gateway(std::move(o), "/");
    const ClientResponse r = get("/name");
    EXPECT_EQ(r.status(), 502);
    EXPECT_EQ(r.header("content-type"), "application/problem+json");
    EXPECT_NE(r.text().find("\"status\":502"), std::string::npos) << r.text();
    EXPECT_EQ(get("/local").text(), "served here");
}

TEST_F(ReverseProxyTest, StalledUpstreamIs504) {
    RawServer stall([](int fd) {
        read_head(fd);
        std::this_thread::sleep_for(800ms);
    });
    auto o = to({stall.url()});
    o.response_timeout = 300ms;
    start_gateway(std::move(o), "/");
    const auto t0 = SteadyClock::now();
    EXPECT_EQ(get("/slow").status(), 504);
    EXPECT_LT(ms_since(t0), 2000);
}

TEST_F(ReverseProxyTest, GarbageAndCutAnswersAre502) {
    RawServer bad([](int fd) {
        const std::string head = read_head(fd);
        if (head.find("/garbage") != std::string::npos)
            write_all(fd, "SMTP ready\r\n\r\n");
        else if (head.find("/both") != std::string::npos)
            write_all(fd,
                      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "5\r\nhello\r\n0\r\n\r\n");
        else if (head.find("/cut-small") != std::string::npos)
            write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
        else  // cut-large: more than buffer_below announced, then the connection ends
            write_all(
                fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + std::string(70000, 'c'));
    });
    auto o = to({bad.url()});
    o.max_fails = 0;
    start_gateway(std::move(o), "/");
    EXPECT_EQ(get("/garbage").status(), 502);
    EXPECT_EQ(get("/both").status(), 502);
    EXPECT_EQ(get("/cut-small").status(), 502);
    // Streamed already: the client sees the body cut (the connection closes early), never a
    // complete-looking answer.
    Client raw = Client::tcp(gw.port());
    raw.send(get_request("/cut-large"));
    EXPECT_FALSE(raw.read_response());
    EXPECT_NE(raw.error().find("eof"), std::string::npos) << raw.error();
    EXPECT_EQ(get("/local").text(), "served here");  // the gateway is sound
}

TEST_F(ReverseProxyTest, ConnectFailureOfAnIdempotentRequestTriesAnotherUpstream) {
    auto o = to({dead_url(), base(up)});
    o.max_fails = 0;
    start_gateway(std::move(o), "/");
    for (int i = 0; i < 4; ++i) EXPECT_EQ(get("/name").text(), "one");
    // POST is not sent twice: every other one meets the dead upstream.
    int bad = 0;
    for (int i = 0; i < 4; ++i) bad += run(client.post(base(gw) + "/echo", "x")).status() == 502;
    EXPECT_EQ(bad, 2);
}

TEST_F(ReverseProxyTest, PassiveEjectionLeavesAFailingUpstreamOut) {
    auto o = to({dead_url(), base(up)});
    o.max_fails = 1;
    o.retries = 0;
    o.fail_timeout = 60s;
    start_gateway(std::move(o), "/");
    int ok = 0;
    for (int i = 0; i < 6; ++i) ok += get("/name").status() == 200;
    EXPECT_GE(ok, 5);  // at most the first try meets it
    const std::vector<UpstreamStatus> s = proxy->upstreams();
    EXPECT_FALSE(s[0].healthy);
    EXPECT_TRUE(s[1].healthy);
}

TEST_F(ReverseProxyTest, NoHealthyUpstreamIs503) {
    auto o = to({dead_url()});
    o.max_fails = 1;
    o.retries = 0;
    o.fail_timeout = 60s;
    start_gateway(std::move(o), "/");
    EXPECT_EQ(get("/name").status(), 502);
    EXPECT_EQ(get("/name").status(), 503);
}

TEST_F(ReverseProxyTest, BalancingRoundRobinLeastConnectionsAndHash) {
    App two, three;
    upstream_routes(two, "two");
    upstream_routes(three, "three");
    start_app(two);
    start_app(three);
    auto o = to({base(up), base(two), base(three)});
    start_gateway(std::move(o), "/");
    std::map<std::string, int> seen;
    for (int i = 0; i < 30; ++i) ++seen[get("/name").text()];
    EXPECT_EQ(seen["one"], 10);
    EXPECT_EQ(seen["two"], 10);
    EXPECT_EQ(seen["three"], 10);
    gw.stop();

    App hashed;
    auto h = to({base(up), base(two), base(three)});
    h.balance = Balance::hash;
    h.hash_header = "X-User";
    h.hash_cookie = "uid";
    quick_options(hashed.options());
    reverse_proxy(hashed, "/", std::move(h));
    start_app(hashed);
    std::map<std::string, std::string> first;
    std::map<std::string, int> spread;
    for (int round = 0; round < 3; ++round)
        for (int u = 0; u < 30; ++u) {
            const std::string user = "user" + std::to_string(u);
            const std::string name =
                run(client.get(base(hashed) + "/name", {{"X-User", user}})).text();
            if (round == 0) {
                first[user] = name;
                ++spread[name];
            } else {
                EXPECT_EQ(first[user], name) << user;
            }
        }
    EXPECT_EQ(spread.size(), 3u);  // 30 keys over 3 upstreams
    // The cookie works as the key too.
    const std::string by_cookie =
        run(client.get(base(hashed) + "/name", {{"Cookie", "uid=user7"}})).text();
    EXPECT_EQ(by_cookie, first["user7"]);
    hashed.stop();

    // Least connections: a slow request holds one upstream; the next go to the others.
    App slow;
    slow.get("/name", []() -> Task<std::string> {
        co_await sleep(600ms);
        co_return "slow";
    });
    start_app(slow);
    App lc;
    auto l = to({base(slow), base(two)});
    l.balance = Balance::least_connections;
    quick_options(lc.options());
    reverse_proxy(lc, "/", std::move(l));
    start_app(lc);
    // The first request goes to the first upstream (all idle: in turn, from the first).
    auto slow_one = [&]() -> Task<std::vector<std::string>> {
        std::vector<std::string> one;
        one.push_back((co_await client.get(base(lc) + "/name")).text());
        co_return one;
    };
    auto four_more = [&]() -> Task<std::vector<std::string>> {
        co_await sleep(150ms);
        std::vector<std::string> names;
        for (int i = 0; i < 4; ++i)
            names.push_back((co_await client.get(base(lc) + "/name")).text());
        co_return names;
    };
    auto burst = [&]() -> Task<std::vector<std::string>> {
        std::vector<Task<std::vector<std::string>>> both;
        both.push_back(four_more());
        both.push_back(slow_one());
        std::vector<std::vector<std::string>> got = co_await when_all(std::move(both));
        got[0].push_back(got[1][0]);
        co_return got[0];
    };
    const std::vector<std::string> names = run(burst());
    ASSERT_EQ(names.size(), 5u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(names[i], "two");
    EXPECT_EQ(names[4], "slow");
}

TEST_F(ReverseProxyTest, ActiveHealthChecksTakeAnUpstreamOutAndBack) {
    App flaky;
    auto healthy = std::make_shared<std::atomic<bool>>(true);
    flaky.get("/healthz",
              [healthy] { return healthy->load() ? Status::OK : Status::InternalServerError; });
    flaky.get("/name", [] { return "flaky"; });
    start_app(flaky);
    auto o = to({base(up), base(flaky)});
    o.health.path = "/healthz";
    o.health.interval = 50ms;
    o.health.timeout = 500ms;
    start_gateway(std::move(o), "/");
    auto names = [&] {
        std::map<std::string, int> seen;
        for (int i = 0; i < 10; ++i) ++seen[get("/name").text()];
        return seen;
    };
    EXPECT_EQ(names()["flaky"], 5);
    healthy->store(false);
    auto wait_for = [&](bool want) {
        for (int i = 0; i < 100 && proxy->upstreams()[1].healthy != want; ++i)
            std::this_thread::sleep_for(20ms);
        return proxy->upstreams()[1].healthy == want;
    };
    ASSERT_TRUE(wait_for(false));
    EXPECT_EQ(names()["flaky"], 0);
    healthy->store(true);
    ASSERT_TRUE(wait_for(true));
    EXPECT_EQ(names()["flaky"], 5);
}

TEST_F(ReverseProxyTest, MiddlewareRunsInFront) {
    gw.use([](Request& r) -> std::optional<Response> {
        if (r.header("authorization") != "Bearer ok") return Response(Status::Unauthorized);
        return std::nullopt;
    });
    start_gateway(to({base(up)}), "/");
    EXPECT_EQ(get("/name").status(), 401);
    EXPECT_EQ(get("/name", {{"Authorization", "Bearer ok"}}).text(), "one");
}

TEST_F(ReverseProxyTest, GroupPrefixIsStripped) {
    auto api = gw.group("/api");
    auto o = to({base(up)});
    o.strip_prefix = true;
    reverse_proxy(api, "/svc", std::move(o));
    quick_options(gw.options());
    start_app(gw);
    EXPECT_EQ(get("/api/svc/name").text(), "one");
}

TEST_F(ReverseProxyTest, CurlThroughTheProxyOverHttp2AndTls) {
    if (!have_curl_h2()) GTEST_SKIP() << "curl without HTTP/2";
    quick_options(gw.options());
    reverse_proxy(gw, "/", to({base(up)}));
    start_app_with_tls(gw, true);
    const std::string url = "https://127.0.0.1:" + std::to_string(gw.port(1));
    const std::string ca = test::test_certs().ca;
    auto [status, body] =
        curl_status("--http2 --cacert " + ca + " -sS -H 'Host: localhost'", url + "/name");
    EXPECT_EQ(status, 200) << body;
    EXPECT_EQ(body, "one");
    // An HTTP/2 request body goes upstream as HTTP/1.1 (chunked, no length known upfront).
    std::tie(status, body) = curl_status(
        "--http2 --cacert " + ca + " -sS -H 'Host: localhost' --data-binary 'posted over h2'",
        url + "/echo");
    EXPECT_EQ(status, 200) << body;
    EXPECT_EQ(body, "posted over h2");
    std::tie(status, body) =
        curl_status("--http2 --cacert " + ca + " -sS -H 'Host: localhost'", url + "/echo-head");
    EXPECT_NE(body.find("x-forwarded-proto: https\n"), std::string::npos) << body;
    EXPECT_NE(body.find("via: 2 vela\n"), std::string::npos) << body;
}

TEST(ReverseProxyUpstreams, PythonHttpServerUpstream) {
    PythonHttpServer py("served by python");
    App gw;
    quick_options(gw.options());
    ReverseProxyOptions o = to({py.url()});
    o.max_fails = 0;
    reverse_proxy(gw, "/", std::move(o));
    start_app(gw);
    http::Client c;
    std::string body;
    for (int i = 0; i < 50 && body != "served by python"; ++i) {
        const ClientResponse r = run(c.get(base(gw) + "/file.txt"));
        if (r.status() == 200)
            body = r.text();
        else
            std::this_thread::sleep_for(100ms);  // python still starting
    }
    EXPECT_EQ(body, "served by python");
    // http.server answers HTTP/1.0 and closes: the proxy answers HTTP/1.1 with the length.
    const ClientResponse dirlist = run(c.get(base(gw) + "/"));
    EXPECT_EQ(dirlist.status(), 200);
    EXPECT_NE(dirlist.text().find("file.txt"), std::string::npos);
    EXPECT_EQ(run(c.get(base(gw) + "/nothing-here")).status(), 404);
    gw.stop();
}

TEST_F(ReverseProxyTest, Http2ToTheUpstream) {
    // h2c with prior knowledge to a plain upstream, and h2 through ALPN to a TLS one.
    App secure;
    upstream_routes(secure, "secure");
    TlsOptions t;
    t.cert = test::test_certs().server_ec_cert;
    t.key = test::test_certs().server_ec_key;
    secure.listen_tls("127.0.0.1:0", std::move(t));
    secure.start(1);
    auto o = to({base(up)});
    o.h2c = true;
    o.strip_prefix = true;
    reverse_proxy(gw, "/h2c", std::move(o));
    auto tls = to({"https://localhost:" + std::to_string(secure.port())});
    tls.tls.ca_file = test::test_certs().ca;
    tls.strip_prefix = true;
    reverse_proxy(gw, "/h2", std::move(tls));
    auto h1 = to({"https://localhost:" + std::to_string(secure.port())});
    h1.tls.ca_file = test::test_certs().ca;
    h1.http2 = false;
    h1.strip_prefix = true;
    reverse_proxy(gw, "/h1", std::move(h1));
    quick_options(gw.options());
    start_app(gw);
    EXPECT_EQ(get("/h2c/version").text(), "20");
    EXPECT_EQ(get("/h2/version").text(), "20");
    EXPECT_EQ(get("/h1/version").text(), "11");
    const ClientResponse r = get("/h2c/hop");
    EXPECT_EQ(r.header("via"), "1.1 inner, 2 vela");
    // Bodies both ways over the upstream's streams.
    const std::string body(1 << 20, 'q');
    const ClientResponse echoed = run(client.post(base(gw) + "/h2c/echo", body));
    EXPECT_EQ(echoed.text(), body);
    EXPECT_EQ(get("/h2/big?n=3000000").text().size(), 3000000u);
}

TEST_F(ReverseProxyTest, TlsAndUnixSocketUpstreams) {
    App secure;
    secure.get("/name", [] { return "secure"; });
    TlsOptions t;
    t.cert = test::test_certs().server_ec_cert;
    t.key = test::test_certs().server_ec_key;
    secure.listen_tls("127.0.0.1:0", std::move(t));
    secure.start(1);
    const std::string sock =
        ::testing::TempDir() + "vela-proxy-" + std::to_string(::getpid()) + ".sock";
    App local;
    local.get("/name", [] { return "unix"; });
    start_app(local, 1, "unix:" + sock);
    std::string enc;
    for (const char ch : sock) enc += ch == '/' ? std::string("%2F") : std::string(1, ch);

    App tls_gw;
    auto o = to({"https://localhost:" + std::to_string(secure.port())});
    o.tls.ca_file = test::test_certs().ca;
    o.strip_prefix = true;
    reverse_proxy(tls_gw, "/tls", std::move(o));
    auto u = to({"http+unix://" + enc});
    u.strip_prefix = true;
    reverse_proxy(tls_gw, "/unix", std::move(u));
    auto bad = to({"https://localhost:" + std::to_string(secure.port())});  // system store
    bad.strip_prefix = true;
    reverse_proxy(tls_gw, "/untrusted", std::move(bad));
    quick_options(tls_gw.options());
    start_app(tls_gw);
    EXPECT_EQ(run(client.get(base(tls_gw) + "/tls/name")).text(), "secure");
    EXPECT_EQ(run(client.get(base(tls_gw) + "/unix/name")).text(), "unix");
    EXPECT_EQ(run(client.get(base(tls_gw) + "/untrusted/name")).status(), 502);  // unknown CA
    tls_gw.stop();
    local.stop();
    ::unlink(sock.c_str());
}

#ifdef VELA_HELLO_BINARY
// examples/gateway, built beside hello.
std::string gateway_binary() {
    return (std::filesystem::path(VELA_HELLO_BINARY).parent_path() / "gateway").string();
}

TEST(GatewayExample, ProxiesAndMergesTwoApis) {
    App users, orders;
    users.get("/users/{id}", [](Request& r) {
        return Response::json("{\"id\":" + std::string(r.param("id")) + ",\"name\":\"ann\"}");
    });
    users.get("/name", [] { return "users"; });
    orders.get("/orders", [](Request& r) {
        return Response::json("[{\"user\":" + r.query("user").value_or("0") + ",\"total\":12}]");
    });
    orders.get("/name", [] { return "orders"; });
    start_app(users);
    start_app(orders);
    const std::string bin = gateway_binary();
    ExampleProcess gw;
    gw.start(bin, {"--upstream", base(users), "--upstream", base(orders), "--balance",
                   "round-robin", "--threads", "1"});
    http::Client c;
    std::map<std::string, int> seen;
    for (int i = 0; i < 4; ++i) ++seen[run(c.get(gw.url("/name"))).text()];
    EXPECT_EQ(seen["users"], 2);
    EXPECT_EQ(seen["orders"], 2);
    const ClientResponse merged = run(c.get(gw.url("/_gateway/merge?a=/users/7&b=/orders?user=7")));
    ASSERT_EQ(merged.status(), 200) << merged.text();
    const json::Value v = merged.json();
    EXPECT_EQ(v["a"]["name"].as_string(), "ann");
    EXPECT_EQ(v["a"]["id"].as_int64(), 7);
    EXPECT_EQ(v["b"][0]["user"].as_int64(), 7);
    EXPECT_EQ(run(c.get(gw.url("/_gateway/merge?a=/users/7&b=/name"))).status(), 502);  // not JSON
    EXPECT_EQ(run(c.get(gw.url("/_gateway/merge"))).status(), 400);
    const json::Value ups = run(c.get(gw.url("/_gateway/upstreams"))).json();
    ASSERT_EQ(ups.size(), 2u);
    EXPECT_TRUE(ups[0]["healthy"].as_bool());
    gw.stop();
    // A bad command line: one line, exit 2.
    const Ran r = run_command(bin + " --port 1 2>&1");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.out.find("--upstream"), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}
#endif  // VELA_HELLO_BINARY

// --- WebSocket upgrades, tunnelled ---

// tests/e2e/ws/client.py's key=value lines.
std::map<std::string, std::string> ws_client(const std::string& uri, const std::string& scenario) {
    const std::string out =
        run_command("timeout 30 " + std::string(debian_python()) + " " + VELA_SOURCE_DIR +
                    "/tests/e2e/ws/client.py '" + uri + "' " + scenario + " 2>&1")
            .out;
    std::map<std::string, std::string> kv;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        const auto eq = line.find('=');
        if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
    }
    kv["output"] = out;
    return kv;
}

TEST_F(ReverseProxyTest, WebSocketUpgradesAreTunnelled) {
    if (!succeeds(std::string(debian_python()) + " -c 'import websockets'"))
        GTEST_SKIP() << "python3-websockets is not installed";
    App echo;
    WsOptions big;
    big.max_message = 4 << 20;  // client.py sends 2 MB
    echo.ws(
        "/echo",
        [](WebSocket& ws, Request&) -> Task<void> {
            for (;;) {
                WsMessage m = co_await ws.receive();
                if (m.is_close()) co_return;
                if (!co_await ws.send(m.data, m.type)) co_return;
            }
        },
        big);
    quick_options(echo.options());
    start_app(echo);
    auto o = to({base(echo)});
    o.strip_prefix = true;
    start_gateway(std::move(o), "/live");
    const std::string uri = "ws://127.0.0.1:" + std::to_string(gw.port()) + "/live/echo";
    auto r = ws_client(uri, "echo");
    for (const char* key : {"text", "binary", "text_100k", "binary_2m", "fragmented", "pong"})
        EXPECT_EQ(r[key], "True") << key << "\n" << r["output"];
    EXPECT_EQ(r["close_code"], "1000") << r["output"];
    // permessage-deflate is the two ends' business: negotiated through the tunnel.
    r = ws_client(uri, "deflate");
    EXPECT_NE(r["extensions"].find("permessage-deflate"), std::string::npos) << r["output"];
    EXPECT_EQ(r["deflate_1m"], "True") << r["output"];
    // A refused upgrade comes back as the upstream's answer.
    Client raw = Client::tcp(gw.port());
    raw.send(
        "GET /live/nowhere HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
    const std::optional<HttpResponse> refused = raw.read_response();
    ASSERT_TRUE(refused) << raw.error();
    EXPECT_EQ(refused->status, 404);
    EXPECT_EQ(get("/local").text(), "served here");
    // An open tunnel is one of the upstream's active connections (least connections counts
    // it) until it closes.
    Client held = Client::tcp(gw.port());
    held.send(
        "GET /live/echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
    const std::optional<HttpResponse> switched = held.read_response();
    ASSERT_TRUE(switched) << held.error();
    EXPECT_EQ(switched->status, 101);
    EXPECT_EQ(proxy->upstreams()[0].active, 1);
    held.close();
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (proxy->upstreams()[0].active != 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(10ms);
    EXPECT_EQ(proxy->upstreams()[0].active, 0);
}

// The first WebSocket message the server sends on `c` after its 101 (a text frame under 126
// bytes, unmasked), or "" when none comes within 5 s.
std::string first_ws_text(Client& c) {
    std::string in = c.pending();
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (in.size() < 2 || in.size() < 2 + static_cast<std::size_t>(in[1] & 0x7f)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        pollfd p{c.fd(), POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return {};
        char buf[512];
        const ssize_t n = ::recv(c.fd(), buf, sizeof buf, 0);
        if (n <= 0) return {};
        in.append(buf, static_cast<std::size_t>(n));
    }
    EXPECT_EQ(static_cast<unsigned char>(in[0]), 0x81) << "a final text frame";
    return in.substr(2, static_cast<std::size_t>(in[1] & 0x7f));
}

TEST_F(ReverseProxyTest, EditRequestHeadersAppliesToTunnelledWebSockets) {
    // The WebSocket server says which X-User-Id fields (and X-Path) its upgrade carried.
    App who;
    who.ws("/who", [](WebSocket& ws, Request& req) -> Task<void> {
        std::string seen;
        for (const Header& h : req.headers())
            if (ascii_lower(h.name) == "x-user-id") seen += "[" + std::string(h.value) + "]";
        seen += " " + std::string(req.header("x-path"));
        co_await ws.send(seen);
        while (!(co_await ws.receive()).is_close()) {
        }
    });
    quick_options(who.options());
    start_app(who);
    user_from_bearer(gw);
    start_gateway(with_user_hook(to({base(who)})), "/");
    for (const char* user : {"dave", "erin"}) {
        Client raw = Client::tcp(gw.port());
        raw.send(
            "GET /who HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Authorization: Bearer " +
            std::string(user) + "\r\nX-User-Id: mallory\r\n\r\n");
        const std::optional<HttpResponse> r = raw.read_response();
        ASSERT_TRUE(r) << raw.error();
        ASSERT_EQ(r->status, 101) << r->body;
        EXPECT_EQ(first_ws_text(raw), "[" + std::string(user) + "] /who");
    }
}

TEST_F(ReverseProxyTest, UpgradeToAnUnreachableUpstreamIs502) {
    auto o = to({dead_url()});
    o.max_fails = 0;
    start_gateway(std::move(o), "/");
    Client raw = Client::tcp(gw.port());
    raw.send(
        "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
    const std::optional<HttpResponse> r = raw.read_response();
    ASSERT_TRUE(r) << raw.error();
    EXPECT_EQ(r->status, 502);
}

// Whether `app` offers WebSockets over HTTP/2: its SETTINGS on an h2c connection (prior
// knowledge) carry SETTINGS_ENABLE_CONNECT_PROTOCOL (0x8) = 1.
bool offers_extended_connect(const App& app) {
    Client c = Client::tcp(app.port());
    // The preface, then empty SETTINGS.
    c.send(std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\4\0\0\0\0\0", 9));
    std::string in;
    auto length = [&in]() -> std::size_t {
        return std::size_t{static_cast<unsigned char>(in[0])} << 16 |
               std::size_t{static_cast<unsigned char>(in[1])} << 8 |
               std::size_t{static_cast<unsigned char>(in[2])};
    };
    while (in.size() < 9 || in.size() < 9 + length()) {
        pollfd p{c.fd(), POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) break;
        char buf[512];
        const ssize_t n = ::recv(c.fd(), buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
    }
    EXPECT_GE(in.size(), 9u);
    if (in.size() < 9) return false;
    EXPECT_EQ(in[3], 4) << "the server's first frame is its SETTINGS";
    const std::size_t len = length();
    for (std::size_t at = 9; at + 6 <= 9 + len && at + 6 <= in.size(); at += 6) {
        const int id =
            static_cast<unsigned char>(in[at]) << 8 | static_cast<unsigned char>(in[at + 1]);
        const int value = static_cast<unsigned char>(in[at + 5]);
        if (id == 0x8 && value == 1) return true;
    }
    return false;
}

TEST(ReverseProxyWebSocket, BrowsersKeepTheOfferOfWebSocketsOverHttp2) {
    // An extended CONNECT (RFC 8441) is tunnelled (websocket_h2_test.cpp, WsOverH2ThroughProxy):
    // a gateway goes on offering it.
    App plain;
    plain.get("/", [] { return "own"; });
    start_app(plain);
    EXPECT_TRUE(offers_extended_connect(plain));
    App gw;
    reverse_proxy(gw, "/api", to({"http://127.0.0.1:1"}));
    start_app(gw);
    EXPECT_TRUE(gw.options().http2.websocket);
    EXPECT_TRUE(offers_extended_connect(gw));
    App none;
    auto o = to({"http://127.0.0.1:1"});
    o.upgrades.clear();
    reverse_proxy(none, "/api", std::move(o));
    start_app(none);
    EXPECT_TRUE(offers_extended_connect(none));
}

TEST(ReverseProxyOptionsCheck, BadOptionsAreOneLineErrors) {
    EXPECT_THROW(ReverseProxy(ReverseProxyOptions{}), std::invalid_argument);
    EXPECT_THROW(ReverseProxy(to({"ftp://x"})), std::invalid_argument);
    EXPECT_THROW(ReverseProxy(to({"http://x:99999"})), std::invalid_argument);
    auto h = to({"http://127.0.0.1:1"});
    h.balance = Balance::hash;
    EXPECT_THROW(ReverseProxy(std::move(h)), std::invalid_argument);
    try {
        ReverseProxy p(to({"http://a b"}));
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("reverse proxy"), std::string::npos);
    }
}

}  // namespace
}  // namespace vela::e2e
