#pragma once
// Shared gtest check for the end-to-end tables: the server still answers a fresh connection.

#include <gtest/gtest.h>

#include "e2e/client.hpp"

namespace vela::e2e {

/// A fresh connection to `app` still gets 200 "Hello, World!" on GET / (the server is sound
/// after whatever the test sent before). Needs add_basic_routes().
inline void expect_server_sound(App& app) {
    Client c = Client::tcp(app.port());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(get_request("/")));
    auto r = c.read_response();
    ASSERT_TRUE(r) << "server unresponsive: " << c.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "Hello, World!");
}

}  // namespace vela::e2e
