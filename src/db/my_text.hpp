#pragma once
// The text that goes to MySQL/MariaDB before any connection: the URL of a Database and the
// statements' placeholders ($1, $2 ... as ?). Pure functions on bytes (fuzzed by
// fuzz/fuzz_mysql_text.cpp).
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vela::db::my {

/// Where and how to connect (from a mysql:// or mariadb:// URL), plus timeouts.
struct ConnectParams {
    /// Host name or address ("" with a Unix socket).
    std::string host = "127.0.0.1";
    /// TCP port.
    unsigned port = 3306;
    /// Unix socket path ("" for TCP).
    std::string socket;
    /// User name.
    std::string user;
    /// Password ("" for none).
    std::string password;
    /// Database ("" for none).
    std::string database;
    /// Connection character set.
    std::string charset = "utf8mb4";
    /// TLS: "" (the connector's default: none), "required" or "verify" (certificate and name).
    std::string ssl_mode;
    /// verify: the CA file ("" for the system's).
    std::string ssl_ca;
    /// Connecting gives up after this.
    std::chrono::milliseconds connect_timeout{5000};
    /// A statement not answered by then is killed on the server (0: never).
    std::chrono::milliseconds query_timeout{0};
    /// Prepared statements kept per connection (0: none kept).
    std::size_t statement_cache = 256;
};

/// Parses `mysql://user:password@host:port/db?options` (also `mariadb://`; host `localhost`
/// or a percent-encoded path such as %2Frun%2Fmysqld%2Fmysqld.sock, or the option
/// socket=/path, for a Unix socket). Options: socket, charset, ssl-mode (disabled, required,
/// verify-identity), ssl-ca. Throws Error with one line on a malformed URL.
ConnectParams parse_url(std::string_view url);

/// `sql` with $1, $2 ... replaced by ? (outside quotes and comments); `order` gets, for each
/// ?, the 0-based index of the parameter it stands for. ? already in the text are kept and
/// take the parameters in order. Throws MappingError when $0 or both forms are used.
std::string translate_placeholders(std::string_view sql, std::vector<std::uint16_t>& order);

}  // namespace vela::db::my
