#pragma once
// The real database servers of the data tests. scripts/test (and .ci/run through it) starts
// PostgreSQL, MariaDB and Redis with scripts/db-servers and exports their URLs
// (VELA_TEST_PG_URL, VELA_TEST_MYSQL_URL, VELA_TEST_REDIS_URL); a test that needs one starts
// with VELA_NEED_PG(url), VELA_NEED_MYSQL(url) or VELA_NEED_REDIS(url). Without the server it
// is skipped with a loud message when run by hand, and it fails in CI (VELA_CI set): CI never
// skips.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace vela::test {

/// The value of the environment variable `name`, or "" when unset.
inline std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

/// True when running in CI, where a missing server is a failure, not a skip.
inline bool in_ci() { return !env_or_empty("VELA_CI").empty(); }

/// Runs `scripts/db-servers <cmd> <dir>` (pg-kill, pg-start, pg-stop, redis-stop, redis-start)
/// on the servers the tests use; true when it succeeded.
inline bool db_servers(const std::string& cmd) {
    std::string script = env_or_empty("VELA_TEST_DB_SCRIPT");
    std::string dir = env_or_empty("VELA_TEST_DB_DIR");
    if (script.empty() || dir.empty()) return false;
    std::string line = "'" + script + "' " + cmd + " '" + dir + "'";
    return std::system(line.c_str()) == 0;
}

}  // namespace vela::test

// Declares `std::string var` holding the server's URL, or skips/fails the test without it.
#define VELA_NEED_SERVER_(var, env, what)                                                       \
    const std::string var = ::vela::test::env_or_empty(env);                                    \
    if (var.empty()) {                                                                          \
        if (::vela::test::in_ci()) FAIL() << env " is not set: CI must run the " what " tests"; \
        GTEST_SKIP() << "*** SKIPPED: no " what " server (" env                                 \
                        " unset); run scripts/test, "                                           \
                        "which starts one with scripts/db-servers ***";                         \
    }

/// `std::string var` = the PostgreSQL URL of the test server (or the test is skipped/failed).
#define VELA_NEED_PG(var) VELA_NEED_SERVER_(var, "VELA_TEST_PG_URL", "PostgreSQL")
/// `std::string var` = the MySQL/MariaDB URL of the test server (or the test is skipped/failed).
#define VELA_NEED_MYSQL(var) VELA_NEED_SERVER_(var, "VELA_TEST_MYSQL_URL", "MySQL")
/// `std::string var` = the Redis URL of the test server (or the test is skipped/failed).
#define VELA_NEED_REDIS(var) VELA_NEED_SERVER_(var, "VELA_TEST_REDIS_URL", "Redis")
