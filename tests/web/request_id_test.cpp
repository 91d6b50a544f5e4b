// Tests for src/middleware/request_id.cpp, calling the hooks directly on parsed requests: which
// incoming ids are accepted, the generated ids' shape and uniqueness, the echo, the options.
#include "vela/middleware/request_id.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "support/parsed_request.hpp"

namespace vela {
namespace {

// A GET with `headers` (lines ending in CRLF), parsed.
struct Parsed : test::ParsedRequest {
    explicit Parsed(std::string_view headers = {}) : ParsedRequest(test::request_head(headers)) {}
};

bool generated_shape(std::string_view id) {
    if (id.size() != 16) return false;
    for (char c : id)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    return true;
}

TEST(RequestIdValid, Table) {
    struct Case {
        std::string_view id;
        bool ok;
    };
    const std::string max(128, 'a');
    const std::string too_long(129, 'a');
    const Case cases[] = {
        {"abc", true},
        {"0f8fad5b-d9cb-469f-a165-70867728950e", true},  // UUID
        {"Root=1-5759e988-bd862e3fe1be46a994272793", true},
        {"a.b_c~d:e+f/g=h@i", true},
        {"x", true},
        {max, true},
        {"", false},
        {too_long, false},
        {"a b", false},
        {"a\"b", false},
        {"a\\b", false},
        {"a;b", false},
        {"a,b", false},
        {"a\tb", false},
        {"a\x7f", false},
        {"caf\xc3\xa9", false},
        {"a\nb", false},
    };
    for (const Case& c : cases) EXPECT_EQ(valid_request_id(c.id), c.ok) << c.id;
    EXPECT_FALSE(valid_request_id("abcd", 3));
    EXPECT_TRUE(valid_request_id("abc", 3));
}

TEST(RequestId, GeneratesWhenAbsentAndEchoes) {
    RequestId mw = request_id();
    Parsed p;
    EXPECT_EQ(request_id(p.req), "");  // not run yet
    mw.start(p.req);
    const std::string id(request_id(p.req));
    EXPECT_TRUE(generated_shape(id)) << id;
    Response res("hi");
    mw.finish(p.req, res);
    EXPECT_EQ(res.header("X-Request-Id"), id);
}

TEST(RequestId, AcceptsAValidIncomingId) {
    RequestId mw = request_id();
    Parsed p("x-request-id: 0f8fad5b-d9cb-469f-a165-70867728950e\r\n");
    mw.start(p.req);
    EXPECT_EQ(request_id(p.req), "0f8fad5b-d9cb-469f-a165-70867728950e");
    Response res;
    mw.finish(p.req, res);
    EXPECT_EQ(res.header("X-Request-Id"), "0f8fad5b-d9cb-469f-a165-70867728950e");
}

TEST(RequestId, ReplacesAnInvalidIncomingId) {
    RequestId mw = request_id();
    const std::string too_long(129, 'a');
    for (std::string bad : {std::string("has space"), std::string("q\"uote"), too_long}) {
        Parsed p("X-Request-Id: " + bad + "\r\n");
        mw.start(p.req);
        EXPECT_TRUE(generated_shape(request_id(p.req))) << bad << " -> " << request_id(p.req);
    }
}

TEST(RequestId, DistrustIncoming) {
    RequestId mw = request_id({.trust_incoming = false});
    Parsed p("X-Request-Id: client-chosen\r\n");
    mw.start(p.req);
    EXPECT_NE(request_id(p.req), "client-chosen");
    EXPECT_TRUE(generated_shape(request_id(p.req)));
}

TEST(RequestId, CustomHeaderAndLength) {
    RequestId mw = request_id({.header = "X-Correlation-Id", .max_length = 8});
    Parsed a("X-Correlation-Id: short\r\nX-Request-Id: other\r\n");
    mw.start(a.req);
    EXPECT_EQ(request_id(a.req), "short");
    Response res;
    mw.finish(a.req, res);
    EXPECT_EQ(res.header("X-Correlation-Id"), "short");
    EXPECT_EQ(res.header("X-Request-Id"), "");

    Parsed b("X-Correlation-Id: longer-than-8\r\n");
    mw.start(b.req);
    EXPECT_TRUE(generated_shape(request_id(b.req)));
}

TEST(RequestId, NoEcho) {
    RequestId mw = request_id({.echo = false});
    Parsed p;
    mw.start(p.req);
    Response res;
    mw.finish(p.req, res);
    EXPECT_EQ(res.header("X-Request-Id"), "");
    EXPECT_FALSE(request_id(p.req).empty());
}

TEST(RequestId, KeepsTheHandlersOwnHeader) {
    RequestId mw = request_id();
    Parsed p;
    mw.start(p.req);
    Response res;
    res.add_header("X-Request-Id", "set-by-handler");
    mw.finish(p.req, res);
    EXPECT_EQ(res.header("X-Request-Id"), "set-by-handler");
}

TEST(RequestId, CustomGenerator) {
    int n = 0;
    RequestId mw = request_id({.generator = [&n] { return "gen-" + std::to_string(++n); }});
    Parsed p;
    mw.start(p.req);
    EXPECT_EQ(request_id(p.req), "gen-1");

    RequestId bad = request_id({.generator = [] { return std::string("bad id\r\nX: y"); }});
    Parsed q;
    EXPECT_THROW(bad.start(q.req), std::runtime_error);
}

TEST(RequestId, BadOptionsAreRefused) {
    EXPECT_THROW(request_id({.header = ""}), std::invalid_argument);
    EXPECT_THROW(request_id({.header = "X Request"}), std::invalid_argument);
    EXPECT_THROW(request_id({.header = "X-Id:"}), std::invalid_argument);
    EXPECT_THROW(request_id({.max_length = 0}), std::invalid_argument);
    EXPECT_THROW(request_id({.max_length = 5000}), std::invalid_argument);
}

TEST(RequestId, ResetClearsTheId) {
    RequestId mw = request_id();
    Parsed p;
    mw.start(p.req);
    ASSERT_FALSE(request_id(p.req).empty());
    p.req.reset();
    EXPECT_EQ(request_id(p.req), "");
}

TEST(RequestIdGenerate, UniqueAcrossThreads) {
    constexpr int kThreads = 4;
    constexpr int kPerThread = 5000;  // crosses several random batches per thread
    std::vector<std::vector<std::string>> ids(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&ids, t] {
            for (int i = 0; i < kPerThread; ++i) ids[t].push_back(generate_request_id());
        });
    for (auto& th : threads) th.join();
    std::set<std::string> all;
    for (const auto& v : ids)
        for (const auto& id : v) {
            EXPECT_TRUE(generated_shape(id)) << id;
            all.insert(id);
        }
    EXPECT_EQ(all.size(), std::size_t{kThreads * kPerThread});
}

}  // namespace
}  // namespace vela
