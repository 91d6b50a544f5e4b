// Tests for src/middleware/proxy.cpp: the trusted_proxies() before hook on hand-made Requests with
// a ConnectionInfo for the peer. Tables: spoofed headers from untrusted peers, X-Forwarded-*
// chains, IPv6, CIDR edges, malformed values, RFC 7239 Forwarded, option checks.
#include "vela/middleware/proxy.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vela {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// A request from `peer` (empty: a Unix socket) with `fields`, run through `hook`.
struct Req {
    ConnectionInfo info;
    Fields fields;
    Request req;
    Req(std::string_view peer, Fields f, bool tls = false) : fields(std::move(f)) {
        std::memcpy(info.ip, peer.data(), peer.size());
        info.ip_size = static_cast<std::uint8_t>(peer.size());
        info.port = peer.empty() ? 0 : 40000;
        info.secure = tls;
        req.set_connection(&info);
        req.set_method(Method::GET, "GET");
        req.set_host("internal:8080");
        for (const auto& [n, v] : fields) req.mutable_headers().push_back(Header{n, v});
    }
    Req(const Req&) = delete;
    Req& operator=(const Req&) = delete;
};

struct Case {
    const char* name;
    const char* peer;
    Fields fields;
    const char* ip;      // expected client_ip()
    const char* scheme;  // expected scheme()
    const char* host;    // expected host()
};

void run_table(const ProxyOptions& o, const std::vector<Case>& cases) {
    auto hook = trusted_proxies(o);
    for (const Case& c : cases) {
        Req r(c.peer, c.fields);
        EXPECT_FALSE(hook(r.req)) << c.name;  // never answers
        EXPECT_EQ(r.req.client_ip(), c.ip) << c.name;
        EXPECT_EQ(r.req.scheme(), c.scheme) << c.name;
        EXPECT_EQ(r.req.host(), c.host) << c.name;
        EXPECT_EQ(r.req.remote_ip(), c.peer) << c.name;  // the peer itself is never rewritten
    }
}

constexpr const char* kHost = "internal:8080";

TEST(TrustedProxies, XForwardedFor) {
    run_table(
        {.proxies = {"10.0.0.0/8"}},
        {
            // Untrusted peers: every forwarding header is ignored.
            {"spoofed from untrusted",
             "203.0.113.9",
             {{"X-Forwarded-For", "1.2.3.4"},
              {"X-Forwarded-Proto", "https"},
              {"X-Forwarded-Host", "evil.example"}},
             "203.0.113.9",
             "http",
             kHost},
            {"untrusted neighbour of the range",
             "11.0.0.1",
             {{"X-Forwarded-For", "1.2.3.4"}},
             "11.0.0.1",
             "http",
             kHost},
            // Trusted peer.
            {"one hop", "10.0.0.1", {{"X-Forwarded-For", "1.2.3.4"}}, "1.2.3.4", "http", kHost},
            {"chain through a trusted proxy",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.1.1.1, 10.0.0.2"}},
             "1.1.1.1",
             "http",
             kHost},
            {"client-supplied entries left of the client are ignored",
             "10.0.0.1",
             {{"X-Forwarded-For", "6.6.6.6, 7.7.7.7, 1.1.1.1, 10.0.0.2"}},
             "1.1.1.1",
             "http",
             kHost},
            {"spoofed trusted address left of the client",
             "10.0.0.1",
             {{"X-Forwarded-For", "10.9.9.9, 1.1.1.1"}},
             "1.1.1.1",
             "http",
             kHost},
            {"every entry trusted: the leftmost",
             "10.0.0.1",
             {{"X-Forwarded-For", "10.0.0.3, 10.0.0.2"}},
             "10.0.0.3",
             "http",
             kHost},
            {"several fields are one list",
             "10.0.0.1",
             {{"X-Forwarded-For", "6.6.6.6, 1.1.1.1"}, {"X-Forwarded-For", "10.0.0.2"}},
             "1.1.1.1",
             "http",
             kHost},
            {"header name case",
             "10.0.0.1",
             {{"x-forwarded-for", "1.2.3.4"}},
             "1.2.3.4",
             "http",
             kHost},
            {"IPv4 with port",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.2.3.4:5678"}},
             "1.2.3.4",
             "http",
             kHost},
            {"IPv6",
             "10.0.0.1",
             {{"X-Forwarded-For", "2001:db8::1"}},
             "2001:db8::1",
             "http",
             kHost},
            {"IPv6 bracketed with port",
             "10.0.0.1",
             {{"X-Forwarded-For", "[2001:db8::1]:443"}},
             "2001:db8::1",
             "http",
             kHost},
            {"IPv6 canonical form",
             "10.0.0.1",
             {{"X-Forwarded-For", "2001:0DB8:0000::0001"}},
             "2001:db8::1",
             "http",
             kHost},
            {"IPv4-mapped IPv6 entry",
             "10.0.0.1",
             {{"X-Forwarded-For", "::ffff:1.2.3.4"}},
             "::ffff:1.2.3.4",
             "http",
             kHost},
            {"mapped trusted proxy entry is skipped",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.2.3.4, ::ffff:10.0.0.2"}},
             "1.2.3.4",
             "http",
             kHost},
            {"empty elements",
             "10.0.0.1",
             {{"X-Forwarded-For", " , 1.2.3.4 ,, "}},
             "1.2.3.4",
             "http",
             kHost},
            // Malformed entries stop the walk.
            {"garbage rightmost",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.2.3.4, garbage"}},
             "10.0.0.1",
             "http",
             kHost},
            {"garbage after a trusted hop",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.2.3.4, garbage, 10.0.0.2"}},
             "10.0.0.2",
             "http",
             kHost},
            {"unknown", "10.0.0.1", {{"X-Forwarded-For", "unknown"}}, "10.0.0.1", "http", kHost},
            {"leading zeros",
             "10.0.0.1",
             {{"X-Forwarded-For", "01.2.3.4"}},
             "10.0.0.1",
             "http",
             kHost},
            {"octet too big",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.2.3.256"}},
             "10.0.0.1",
             "http",
             kHost},
            {"port too big",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.2.3.4:65536"}},
             "10.0.0.1",
             "http",
             kHost},
            {"zone id",
             "10.0.0.1",
             {{"X-Forwarded-For", "fe80::1%eth0"}},
             "10.0.0.1",
             "http",
             kHost},
            {"IPv4 in brackets",
             "10.0.0.1",
             {{"X-Forwarded-For", "[1.2.3.4]"}},
             "10.0.0.1",
             "http",
             kHost},
            {"unterminated bracket",
             "10.0.0.1",
             {{"X-Forwarded-For", "[::1"}},
             "10.0.0.1",
             "http",
             kHost},
            {"hostname",
             "10.0.0.1",
             {{"X-Forwarded-For", "client.example"}},
             "10.0.0.1",
             "http",
             kHost},
        });
}

TEST(TrustedProxies, ProtoAndHost) {
    run_table(
        {.proxies = {"10.0.0.0/8"}},
        {
            {"proto https",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.2.3.4"}, {"X-Forwarded-Proto", "https"}},
             "1.2.3.4",
             "https",
             kHost},
            {"proto case",
             "10.0.0.1",
             {{"X-Forwarded-Proto", "HTTPS"}},
             "10.0.0.1",
             "https",
             kHost},
            {"proto without XFF",
             "10.0.0.1",
             {{"X-Forwarded-Proto", "https"}},
             "10.0.0.1",
             "https",
             kHost},
            {"proto other scheme ignored",
             "10.0.0.1",
             {{"X-Forwarded-Proto", "ftp"}},
             "10.0.0.1",
             "http",
             kHost},
            {"proto javascript ignored",
             "10.0.0.1",
             {{"X-Forwarded-Proto", "javascript"}},
             "10.0.0.1",
             "http",
             kHost},
            {"proto aligned with the client hop",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.1.1.1, 10.0.0.2"}, {"X-Forwarded-Proto", "https, http"}},
             "1.1.1.1",
             "https",
             kHost},
            {"proto shorter list: its leftmost",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.1.1.1, 10.0.0.2, 10.0.0.3"}, {"X-Forwarded-Proto", "https"}},
             "1.1.1.1",
             "https",
             kHost},
            {"host",
             "10.0.0.1",
             {{"X-Forwarded-Host", "shop.example.com"}},
             "10.0.0.1",
             "http",
             "shop.example.com"},
            {"host with port",
             "10.0.0.1",
             {{"X-Forwarded-Host", "shop.example.com:8443"}},
             "10.0.0.1",
             "http",
             "shop.example.com:8443"},
            {"host IPv6 literal",
             "10.0.0.1",
             {{"X-Forwarded-Host", "[2001:db8::1]:80"}},
             "10.0.0.1",
             "http",
             "[2001:db8::1]:80"},
            {"host with path ignored",
             "10.0.0.1",
             {{"X-Forwarded-Host", "evil.example/path"}},
             "10.0.0.1",
             "http",
             kHost},
            {"host with space ignored",
             "10.0.0.1",
             {{"X-Forwarded-Host", "a b"}},
             "10.0.0.1",
             "http",
             kHost},
            {"host with userinfo ignored",
             "10.0.0.1",
             {{"X-Forwarded-Host", "user@evil.example"}},
             "10.0.0.1",
             "http",
             kHost},
            {"host bad port ignored",
             "10.0.0.1",
             {{"X-Forwarded-Host", "a.example:99999"}},
             "10.0.0.1",
             "http",
             kHost},
            {"host empty port ignored",
             "10.0.0.1",
             {{"X-Forwarded-Host", "a.example:"}},
             "10.0.0.1",
             "http",
             kHost},
            {"host bad IPv6 ignored",
             "10.0.0.1",
             {{"X-Forwarded-Host", "[zz::1]"}},
             "10.0.0.1",
             "http",
             kHost},
            // Found by fuzz_forwarded: inet_pton stopped at the NUL and accepted "::".
            {"host with NUL in an IPv6 literal ignored",
             "10.0.0.1",
             {{"X-Forwarded-Host", std::string("[::\0\x07"
                                               "1]:80",
                                               10)}},
             "10.0.0.1",
             "http",
             kHost},
            {"address with NUL ignored",
             "10.0.0.1",
             {{"X-Forwarded-For", std::string("::1\0zz", 6)}},
             "10.0.0.1",
             "http",
             kHost},
            {"host aligned",
             "10.0.0.1",
             {{"X-Forwarded-For", "1.1.1.1, 10.0.0.2"},
              {"X-Forwarded-Host", "outer.example, inner.example"}},
             "1.1.1.1",
             "http",
             "outer.example"},
            {"untrusted peer: proto and host ignored",
             "192.0.2.1",
             {{"X-Forwarded-Proto", "https"}, {"X-Forwarded-Host", "evil.example"}},
             "192.0.2.1",
             "http",
             kHost},
        });
}

TEST(TrustedProxies, IPv6AndMappedPeers) {
    run_table(
        {.proxies = {"loopback", "fd00::/8"}},
        {
            {"::1 peer", "::1", {{"X-Forwarded-For", "2001:db8::7"}}, "2001:db8::7", "http", kHost},
            {"127.0.0.1 peer",
             "127.0.0.1",
             {{"X-Forwarded-For", "2001:db8::7"}},
             "2001:db8::7",
             "http",
             kHost},
            {"127.255.255.255 peer",
             "127.255.255.255",
             {{"X-Forwarded-For", "1.2.3.4"}},
             "1.2.3.4",
             "http",
             kHost},
            {"mapped loopback peer",
             "::ffff:127.0.0.1",
             {{"X-Forwarded-For", "1.2.3.4"}},
             "1.2.3.4",
             "http",
             kHost},
            {"fd00::/8 peer",
             "fdff:ffff::1",
             {{"X-Forwarded-For", "1.2.3.4"}},
             "1.2.3.4",
             "http",
             kHost},
            {"fe00:: not in fd00::/8",
             "fe00::1",
             {{"X-Forwarded-For", "1.2.3.4"}},
             "fe00::1",
             "http",
             kHost},
            {"::2 untrusted", "::2", {{"X-Forwarded-For", "1.2.3.4"}}, "::2", "http", kHost},
            {"chain of v6 proxies",
             "fd00::1",
             {{"X-Forwarded-For", "2001:db8::9, fd12::3, ::1"}},
             "2001:db8::9",
             "http",
             kHost},
        });
}

TEST(TrustedProxies, CidrEdges) {
    struct Edge {
        const char* range;
        const char* inside;
        const char* outside;
    };
    const Edge edges[] = {
        {"10.0.0.0/31", "10.0.0.1", "10.0.0.2"},
        {"10.0.0.0/32", "10.0.0.0", "10.0.0.1"},
        {"172.16.0.0/12", "172.31.255.255", "172.32.0.0"},
        {"172.16.0.0/12", "172.16.0.0", "172.15.255.255"},
        {"192.168.1.128/25", "192.168.1.255", "192.168.1.127"},
        {"0.0.0.0/0", "255.255.255.255", "::1"},  // IPv4 ranges hold IPv4 addresses only
        {"::/0", "1.2.3.4", "1.2.3.4"},           // the outside case below is skipped
        {"2001:db8::/127", "2001:db8::1", "2001:db8::2"},
        {"2001:db8::/33", "2001:db8:7fff::1", "2001:db8:8000::"},
        {"fe80::/10", "febf::1", "fec0::1"},
        {"10.0.0.5", "10.0.0.5", "10.0.0.6"},
        {"::1", "::1", "::2"},
        {"[2001:db8::]/32", "2001:db8:ffff::", "2001:db9::"},
    };
    for (const Edge& e : edges) {
        auto hook = trusted_proxies({.proxies = {e.range}});
        {
            Req r(e.inside, {{"X-Forwarded-For", "203.0.113.1"}});
            hook(r.req);
            EXPECT_EQ(r.req.client_ip(), "203.0.113.1") << e.range << " should hold " << e.inside;
        }
        if (std::string_view(e.range) == "::/0") continue;
        Req r(e.outside, {{"X-Forwarded-For", "203.0.113.1"}});
        hook(r.req);
        EXPECT_EQ(r.req.client_ip(), e.outside) << e.range << " should not hold " << e.outside;
    }
}

TEST(TrustedProxies, NamedRanges) {
    auto priv = trusted_proxies({.proxies = {"private"}});
    auto link = trusted_proxies({.proxies = {"linklocal"}});
    for (const char* peer : {"10.1.2.3", "172.20.0.1", "192.168.0.10", "fc00::1", "fdab::1"}) {
        Req r(peer, {{"X-Forwarded-For", "203.0.113.1"}});
        priv(r.req);
        EXPECT_EQ(r.req.client_ip(), "203.0.113.1") << peer;
    }
    for (const char* peer : {"8.8.8.8", "127.0.0.1", "::1", "172.32.0.1", "fe80::1"}) {
        Req r(peer, {{"X-Forwarded-For", "203.0.113.1"}});
        priv(r.req);
        EXPECT_EQ(r.req.client_ip(), peer) << peer;
    }
    for (const char* peer : {"169.254.1.1", "fe80::1"}) {
        Req r(peer, {{"X-Forwarded-For", "203.0.113.1"}});
        link(r.req);
        EXPECT_EQ(r.req.client_ip(), "203.0.113.1") << peer;
    }
}

TEST(TrustedProxies, MaxHops) {
    run_table({.proxies = {"10.0.0.0/8"}, .max_hops = 1},
              {
                  {"one hop: the rightmost, even a trusted one",
                   "10.0.0.1",
                   {{"X-Forwarded-For", "1.1.1.1, 10.0.0.2"}},
                   "10.0.0.2",
                   "http",
                   kHost},
              });
    run_table({.proxies = {"10.0.0.0/8"}, .max_hops = 2},
              {
                  {"two hops",
                   "10.0.0.1",
                   {{"X-Forwarded-For", "1.1.1.1, 10.0.0.2"}},
                   "1.1.1.1",
                   "http",
                   kHost},
                  {"two hops at most",
                   "10.0.0.1",
                   {{"X-Forwarded-For", "1.1.1.1, 10.0.0.3, 10.0.0.2"}},
                   "10.0.0.3",
                   "http",
                   kHost},
                  {"stops earlier at an untrusted one",
                   "10.0.0.1",
                   {{"X-Forwarded-For", "1.1.1.1, 2.2.2.2"}},
                   "2.2.2.2",
                   "http",
                   kHost},
              });
    // "*": any peer, a fixed number of hops (platforms with unknown proxy addresses).
    run_table({.proxies = {"*"}, .max_hops = 1},
              {
                  {"any peer",
                   "198.51.100.7",
                   {{"X-Forwarded-For", "6.6.6.6, 1.2.3.4"}, {"X-Forwarded-Proto", "https"}},
                   "1.2.3.4",
                   "https",
                   kHost},
              });
}

TEST(TrustedProxies, UnixSocketPeer) {
    Fields f{{"X-Forwarded-For", "1.2.3.4"}, {"X-Forwarded-Proto", "https"}};
    {
        auto hook = trusted_proxies({.proxies = {"10.0.0.1"}});
        Req r("", f);
        hook(r.req);
        EXPECT_EQ(r.req.client_ip(), "");
        EXPECT_EQ(r.req.scheme(), "http");
    }
    {
        auto hook = trusted_proxies({.unix_socket = true});
        Req r("", f);
        hook(r.req);
        EXPECT_EQ(r.req.client_ip(), "1.2.3.4");
        EXPECT_EQ(r.req.scheme(), "https");
    }
}

TEST(TrustedProxies, Forwarded) {
    const ProxyOptions o{.proxies = {"10.0.0.0/8"}, .forwarded = true};
    run_table(o, {
                     {"RFC 7239 example",
                      "10.0.0.1",
                      {{"Forwarded", "for=192.0.2.60;proto=https;by=203.0.113.43"}},
                      "192.0.2.60",
                      "https",
                      kHost},
                     {"quoted IPv6 with port",
                      "10.0.0.1",
                      {{"Forwarded", "For=\"[2001:db8:cafe::17]:4711\""}},
                      "2001:db8:cafe::17",
                      "http",
                      kHost},
                     {"quoted IPv4 with port",
                      "10.0.0.1",
                      {{"Forwarded", "for=\"192.0.2.43:47011\""}},
                      "192.0.2.43",
                      "http",
                      kHost},
                     {"chain",
                      "10.0.0.1",
                      {{"Forwarded",
                        "for=6.6.6.6, for=192.0.2.43;host=shop.example;proto=https, "
                        "for=10.0.0.2;proto=http"}},
                      "192.0.2.43",
                      "https",
                      "shop.example"},
                     {"several fields",
                      "10.0.0.1",
                      {{"Forwarded", "for=192.0.2.43;proto=https"}, {"Forwarded", "for=10.0.0.2"}},
                      "192.0.2.43",
                      "https",
                      kHost},
                     {"names case-insensitive",
                      "10.0.0.1",
                      {{"Forwarded", "FOR=192.0.2.1;PROTO=HTTPS"}},
                      "192.0.2.1",
                      "https",
                      kHost},
                     {"spaces around ';'",
                      "10.0.0.1",
                      {{"Forwarded", "for=192.0.2.1 ; proto=https"}},
                      "192.0.2.1",
                      "https",
                      kHost},
                     {"quoted-pair",
                      "10.0.0.1",
                      {{"Forwarded", "for=\"192.0.2.\\1\""}},
                      "192.0.2.1",
                      "http",
                      kHost},
                     {"empty elements dropped",
                      "10.0.0.1",
                      {{"Forwarded", ",, for=192.0.2.1 ,"}},
                      "192.0.2.1",
                      "http",
                      kHost},
                     {"unknown stops: the proxy itself",
                      "10.0.0.1",
                      {{"Forwarded", "for=192.0.2.1, for=unknown, for=10.0.0.2"}},
                      "10.0.0.2",
                      "http",
                      kHost},
                     {"unknown rightmost",
                      "10.0.0.1",
                      {{"Forwarded", "for=unknown;proto=https"}},
                      "10.0.0.1",
                      "https",
                      kHost},
                     {"obfuscated stops",
                      "10.0.0.1",
                      {{"Forwarded", "for=192.0.2.1, for=_hidden"}},
                      "10.0.0.1",
                      "http",
                      kHost},
                     {"obfuscated port is fine",
                      "10.0.0.1",
                      {{"Forwarded", "for=\"192.0.2.1:_p1\""}},
                      "192.0.2.1",
                      "http",
                      kHost},
                     {"no for= stops",
                      "10.0.0.1",
                      {{"Forwarded", "for=192.0.2.1, proto=https"}},
                      "10.0.0.1",
                      "https",
                      kHost},
                     {"unquoted IPv6 is malformed",
                      "10.0.0.1",
                      {{"Forwarded", "for=[2001:db8::1]"}},
                      "10.0.0.1",
                      "http",
                      kHost},
                     {"unterminated quote",
                      "10.0.0.1",
                      {{"Forwarded", "for=\"192.0.2.1"}},
                      "10.0.0.1",
                      "http",
                      kHost},
                     {"duplicate for",
                      "10.0.0.1",
                      {{"Forwarded", "for=192.0.2.1;for=192.0.2.2"}},
                      "10.0.0.1",
                      "http",
                      kHost},
                     {"space inside the pair",
                      "10.0.0.1",
                      {{"Forwarded", "for =192.0.2.1"}},
                      "10.0.0.1",
                      "http",
                      kHost},
                     {"bad host ignored",
                      "10.0.0.1",
                      {{"Forwarded", "for=192.0.2.1;host=\"a b\""}},
                      "192.0.2.1",
                      "http",
                      kHost},
                     {"malformed left of the client is harmless",
                      "10.0.0.1",
                      {{"Forwarded", "for==bad;proto=https, for=192.0.2.1"}},
                      "192.0.2.1",
                      "http",
                      kHost},
                     {"unterminated quote swallows the rest",
                      "10.0.0.1",
                      {{"Forwarded", "for=\"oops, for=192.0.2.1"}},
                      "10.0.0.1",
                      "http",
                      kHost},
                     {"Forwarded wins over X-Forwarded-*",
                      "10.0.0.1",
                      {{"X-Forwarded-For", "1.1.1.1"},
                       {"X-Forwarded-Proto", "http"},
                       {"Forwarded", "for=192.0.2.1;proto=https"}},
                      "192.0.2.1",
                      "https",
                      kHost},
                     {"X-Forwarded-* when no Forwarded",
                      "10.0.0.1",
                      {{"X-Forwarded-For", "1.1.1.1"}},
                      "1.1.1.1",
                      "http",
                      kHost},
                     {"untrusted peer",
                      "192.0.2.200",
                      {{"Forwarded", "for=1.2.3.4;proto=https"}},
                      "192.0.2.200",
                      "http",
                      kHost},
                 });
    // Off by default: a client's Forwarded passed on by a proxy that writes only XFF.
    run_table({.proxies = {"10.0.0.0/8"}},
              {
                  {"Forwarded ignored by default",
                   "10.0.0.1",
                   {{"Forwarded", "for=1.2.3.4;proto=https"}, {"X-Forwarded-For", "5.6.7.8"}},
                   "5.6.7.8",
                   "http",
                   kHost},
              });
    run_table({.proxies = {"10.0.0.0/8"}, .x_forwarded = false, .forwarded = true},
              {
                  {"X-Forwarded-* off",
                   "10.0.0.1",
                   {{"X-Forwarded-For", "1.2.3.4"}, {"X-Forwarded-Proto", "https"}},
                   "10.0.0.1",
                   "http",
                   kHost},
              });
}

TEST(TrustedProxies, InvalidOptionsThrowOneLine) {
    struct Case {
        const char* name;
        ProxyOptions o;
        const char* fragment;
    };
    std::vector<Case> cases = {
        {"empty", {}, "no proxy addresses"},
        {"v4 prefix", {.proxies = {"10.0.0.0/33"}}, "at most 32"},
        {"v6 prefix", {.proxies = {"::/129"}}, "at most 128"},
        {"host bits", {.proxies = {"10.1.2.3/8"}}, "bits set"},
        {"v6 host bits", {.proxies = {"2001:db8::1/32"}}, "bits set"},
        {"zone", {.proxies = {"fe80::1%eth0"}}, "not an IPv4 or IPv6"},
        {"octet", {.proxies = {"300.1.1.1"}}, "not an IPv4 or IPv6"},
        {"name", {.proxies = {"proxy.internal"}}, "not an IPv4 or IPv6"},
        {"empty string", {.proxies = {""}}, "not an IPv4 or IPv6"},
        {"empty prefix", {.proxies = {"10.0.0.0/"}}, "prefix"},
        {"letter prefix", {.proxies = {"10.0.0.0/a"}}, "prefix"},
        {"star without hops", {.proxies = {"*"}}, "max_hops"},
        {"nothing read", {.proxies = {"10.0.0.1"}, .x_forwarded = false}, "neither"},
    };
    for (Case& c : cases) {
        try {
            trusted_proxies(std::move(c.o));
            ADD_FAILURE() << c.name << ": accepted";
        } catch (const std::invalid_argument& e) {
            const std::string msg = e.what();
            EXPECT_TRUE(msg.starts_with("vela::trusted_proxies: ")) << c.name << ": " << msg;
            EXPECT_NE(msg.find(c.fragment), std::string::npos) << c.name << ": " << msg;
            EXPECT_EQ(msg.find('\n'), std::string::npos) << c.name;
        }
    }
}

TEST(TrustedProxies, RequestReuseKeepsNothing) {
    // A connection reuses its Request: a forwarded value must not leak to the next request.
    auto hook = trusted_proxies({.proxies = {"10.0.0.0/8"}});
    Req r("10.0.0.1", {{"X-Forwarded-For", "1.2.3.4"}, {"X-Forwarded-Proto", "https"}});
    hook(r.req);
    EXPECT_EQ(r.req.client_ip(), "1.2.3.4");
    r.req.reset();
    r.req.set_connection(&r.info);
    hook(r.req);  // no headers now
    EXPECT_EQ(r.req.client_ip(), "10.0.0.1");
    EXPECT_EQ(r.req.scheme(), "http");
}

}  // namespace
}  // namespace vela
