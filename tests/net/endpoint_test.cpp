// Endpoint::parse: every accepted spelling, and the malformed ones refused at parse time
// (not later at bind time).

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "vela/net/socket.hpp"

namespace vela::net {
namespace {

TEST(Endpoint, ParsesIpv4HostAndPort) {
    Endpoint ep = Endpoint::parse("127.0.0.1:8080");
    EXPECT_EQ(ep.kind, Endpoint::Kind::tcp4);
    EXPECT_EQ(ep.host, "127.0.0.1");
    EXPECT_EQ(ep.port, 8080);
    EXPECT_EQ(ep.to_string(), "127.0.0.1:8080");
}

TEST(Endpoint, PortAloneMeansAllIpv4Interfaces) {
    for (const char* spec : {"8080", ":8080"}) {
        Endpoint ep = Endpoint::parse(spec);
        EXPECT_EQ(ep.kind, Endpoint::Kind::tcp4) << spec;
        EXPECT_EQ(ep.host, "0.0.0.0") << spec;
        EXPECT_EQ(ep.port, 8080) << spec;
    }
}

TEST(Endpoint, ParsesBracketedIpv6) {
    Endpoint ep = Endpoint::parse("[::1]:0");
    EXPECT_EQ(ep.kind, Endpoint::Kind::tcp6);
    EXPECT_EQ(ep.host, "::1");
    EXPECT_EQ(ep.port, 0);
    EXPECT_EQ(ep.to_string(), "[::1]:0");
}

TEST(Endpoint, ParsesUnixPaths) {
    Endpoint ep = Endpoint::parse("unix:/run/app.sock");
    EXPECT_EQ(ep.kind, Endpoint::Kind::unix_path);
    EXPECT_EQ(ep.path, "/run/app.sock");
    EXPECT_EQ(ep.to_string(), "unix:/run/app.sock");
}

TEST(Endpoint, RefusesMalformedSpecs) {
    for (const char* spec :
         {"::1:80", "fe80::1:443", "[::1]", "[::1]80", "[::1:80", "127.0.0.1:", "127.0.0.1:65536",
          "127.0.0.1:-1", "127.0.0.1:8o", "host:99999999999999999999", ""}) {
        EXPECT_THROW(Endpoint::parse(spec), std::invalid_argument) << spec;
    }
}

}  // namespace
}  // namespace vela::net
