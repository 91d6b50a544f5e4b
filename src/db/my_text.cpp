// MySQL URLs and placeholders (see my_text.hpp).
#include "my_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "vela/db/db.hpp"

namespace vela::db::my {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// %XX decoded; nullopt for a broken escape.
std::optional<std::string> decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out.push_back(s[i]);
            continue;
        }
        if (i + 2 >= s.size()) return std::nullopt;
        const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
    }
    return out;
}

[[noreturn]] void bad_url(std::string_view why) {
    throw Error(fmt::format(
        "MySQL URL: {}; use mysql://user:password@host:port/database (or mariadb://; a Unix "
        "socket as ?socket=/path or a %2F-encoded host)",
        why));
}

bool is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || static_cast<unsigned char>(c) >= 0x80;
}

}  // namespace

ConnectParams parse_url(std::string_view url) {
    ConnectParams p;
    std::string_view rest;
    if (url.starts_with("mysql://"))
        rest = url.substr(8);
    else if (url.starts_with("mariadb://"))
        rest = url.substr(10);
    else
        bad_url("the scheme must be mysql:// or mariadb://");
    std::string_view query;
    if (auto q = rest.find('?'); q != std::string_view::npos) {
        query = rest.substr(q + 1);
        rest = rest.substr(0, q);
    }
    std::string_view path;
    if (auto s = rest.find('/'); s != std::string_view::npos) {
        path = rest.substr(s + 1);
        rest = rest.substr(0, s);
    }
    if (auto at = rest.rfind('@'); at != std::string_view::npos) {
        std::string_view cred = rest.substr(0, at);
        rest = rest.substr(at + 1);
        std::string_view user = cred, pass;
        if (auto c = cred.find(':'); c != std::string_view::npos) {
            user = cred.substr(0, c);
            pass = cred.substr(c + 1);
        }
        auto u = decode(user), pw = decode(pass);
        if (!u || !pw) bad_url("a broken %-escape in the user or password");
        p.user = *u;
        p.password = *pw;
    }
    // host[:port], [v6]:port, or a %-encoded socket path.
    std::string_view host = rest, port;
    if (rest.starts_with('[')) {
        auto close = rest.find(']');
        if (close == std::string_view::npos) bad_url("an IPv6 host needs its closing ']'");
        host = rest.substr(1, close - 1);
        std::string_view after = rest.substr(close + 1);
        if (!after.empty()) {
            if (after[0] != ':') bad_url("unexpected text after the IPv6 host");
            port = after.substr(1);
        }
    } else if (auto c = rest.rfind(':'); c != std::string_view::npos) {
        host = rest.substr(0, c);
        port = rest.substr(c + 1);
    }
    auto h = decode(host);
    if (!h) bad_url("a broken %-escape in the host");
    if (h->starts_with('/'))
        p.socket = *h, p.host.clear();
    else
        p.host = *h;  // empty: the connector's default socket (below)
    if (!port.empty() || rest.ends_with(':')) {
        unsigned v = 0;
        auto r = std::from_chars(port.data(), port.data() + port.size(), v);
        if (port.empty() || r.ec != std::errc{} || r.ptr != port.data() + port.size() || v == 0 ||
            v > 65535)
            bad_url(fmt::format("the port '{}' is not a number from 1 to 65535", port));
        p.port = v;
    }
    auto db = decode(path);
    if (!db) bad_url("a broken %-escape in the database name");
    if (db->find('/') != std::string::npos) bad_url("the database name cannot contain '/'");
    p.database = *db;
    while (!query.empty()) {
        std::string_view kv = query.substr(0, query.find('&'));
        query.remove_prefix(std::min(query.size(), kv.size() + 1));
        if (kv.empty()) continue;
        std::string_view k = kv.substr(0, kv.find('=')), v;
        if (k.size() < kv.size()) v = kv.substr(k.size() + 1);
        auto val = decode(v);
        if (!val) bad_url(fmt::format("a broken %-escape in option '{}'", k));
        if (k == "socket") {
            if (val->empty() || (*val)[0] != '/') bad_url("socket must be an absolute path");
            p.socket = *val;
            p.host.clear();
        } else if (k == "charset") {
            if (val->empty()) bad_url("charset is empty");
            p.charset = *val;
        } else if (k == "ssl-mode" || k == "sslmode") {
            if (*val == "disabled" || *val == "disable")
                p.ssl_mode.clear();
            else if (*val == "required" || *val == "require")
                p.ssl_mode = "required";
            else if (*val == "verify-identity" || *val == "verify_identity" ||
                     *val == "verify-full")
                p.ssl_mode = "verify";
            else
                bad_url(
                    fmt::format("ssl-mode '{}': use disabled, required or verify-identity", *val));
        } else if (k == "ssl-ca" || k == "sslrootcert") {
            p.ssl_ca = *val;
        } else {
            bad_url(fmt::format("unknown option '{}' (socket, charset, ssl-mode, ssl-ca)", k));
        }
    }
    if (p.host.empty() && p.socket.empty()) p.host = "localhost";
    return p;
}

std::string translate_placeholders(std::string_view sql, std::vector<std::uint16_t>& order) {
    std::string out;
    out.reserve(sql.size());
    order.clear();
    std::size_t qmarks = 0;
    bool dollars = false;
    const std::size_t n = sql.size();
    for (std::size_t i = 0; i < n;) {
        const char c = sql[i];
        if (c == '\'' || c == '"' || c == '`') {
            // A quoted string or identifier: doubled quotes, and backslash escapes in strings.
            std::size_t j = i + 1;
            while (j < n) {
                if (sql[j] == '\\' && c != '`' && j + 1 < n) {
                    j += 2;
                    continue;
                }
                if (sql[j] == c) {
                    if (j + 1 < n && sql[j + 1] == c) {
                        j += 2;
                        continue;
                    }
                    ++j;
                    break;
                }
                ++j;
            }
            out.append(sql.substr(i, j - i));
            i = j;
        } else if (c == '#' || (c == '-' && i + 1 < n && sql[i + 1] == '-' &&
                                (i + 2 == n || static_cast<unsigned char>(sql[i + 2]) <= ' '))) {
            const std::size_t end = sql.find('\n', i);
            const std::size_t j = end == std::string_view::npos ? n : end;
            out.append(sql.substr(i, j - i));
            i = j;
        } else if (c == '/' && i + 1 < n && sql[i + 1] == '*') {
            const std::size_t end = sql.find("*/", i + 2);
            const std::size_t j = end == std::string_view::npos ? n : end + 2;
            out.append(sql.substr(i, j - i));
            i = j;
        } else if (c == '$' && i + 1 < n && sql[i + 1] >= '0' && sql[i + 1] <= '9' &&
                   (i == 0 || !is_word(sql[i - 1]))) {
            std::size_t j = i + 1;
            unsigned v = 0;
            while (j < n && sql[j] >= '0' && sql[j] <= '9' && v < 100000)
                v = v * 10 + (sql[j++] - '0');
            if (v == 0 || v > 65535)
                throw MappingError(
                    fmt::format("placeholder ${} is out of range ($1 to $65535)", v));
            order.push_back(static_cast<std::uint16_t>(v - 1));
            dollars = true;
            out.push_back('?');
            i = j;
        } else if (c == '?') {
            order.push_back(static_cast<std::uint16_t>(qmarks++));
            out.push_back('?');
            ++i;
        } else {
            out.push_back(c);
            ++i;
        }
    }
    if (dollars && qmarks > 0)
        throw MappingError("a statement uses both $N and ? placeholders: use one form");
    return out;
}

}  // namespace vela::db::my
