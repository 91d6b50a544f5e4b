// vela::ws::connect: the client's opening handshake (RFC 6455 4.1, 4.2.2; RFC 7692 5-7), then
// the server's session code in client mode (server/ws_client_session.hpp).

#include "vela/wsclient/connect.hpp"

#include <openssl/rand.h>

#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "vela/base/ascii.hpp"
#include "vela/base/base64.hpp"
#include "vela/server/ws_client_session.hpp"

namespace vela::ws {

namespace {

bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7F ||
            std::string_view("()<>@,;:\\\"/[]?={}").find(c) != std::string_view::npos)
            return false;
    }
    return true;
}

// Fields the handshake sets itself.
bool handshake_field(std::string_view n) noexcept {
    return ascii::iequals(n, "upgrade") || ascii::iequals(n, "connection") ||
           (n.size() >= 14 && ascii::iequals(n.substr(0, 14), "sec-websocket-"));
}

// Sec-WebSocket-Key: 16 random bytes, base64 (RFC 6455 4.1).
std::string make_key() {
    unsigned char raw[16];
    if (RAND_bytes(raw, sizeof raw) != 1)
        throw std::runtime_error("vela::ws::connect: no random bytes for Sec-WebSocket-Key");
    return base64_encode(std::string_view(reinterpret_cast<const char*>(raw), sizeof raw));
}

std::string unquote(std::string_view v) {
    v = ascii::trim_ows(v);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return std::string(v);
}

// A window size parameter's value: 8 to 15, digits only (RFC 7692 7.1.2), else 0.
int window_bits(const std::string& v) noexcept {
    if (v.empty() || v.size() > 2 || v.find_first_not_of("0123456789") != std::string::npos ||
        v[0] == '0')
        return 0;
    const int n = std::stoi(v);
    return n >= 8 && n <= 15 ? n : 0;
}

// The server's answer to our offer "permessage-deflate; client_max_window_bits". Throws on
// anything not offered or malformed (RFC 7692 5.1: the client fails the connection).
DeflateParams accept_deflate(std::string_view answer, const std::string& where) {
    auto refuse = [&](const std::string& why) -> HandshakeError {
        return HandshakeError(HandshakeFailure::extension, 101,
                              where + ": the server's Sec-WebSocket-Extensions " + why);
    };
    std::optional<DeflateParams> got;
    std::string_view rest = answer;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view ext = ascii::trim_ows(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        if (ext.empty()) continue;
        std::string_view params = ext;
        const std::size_t semi = params.find(';');
        const std::string_view name = ascii::trim_ows(params.substr(0, semi));
        params = semi == std::string_view::npos ? std::string_view{} : params.substr(semi + 1);
        if (!ascii::iequals(name, "permessage-deflate"))
            throw refuse("names \"" + std::string(name) + "\", which was not offered");
        if (got) throw refuse("accepts permessage-deflate twice");
        DeflateParams p;
        p.server_no_context_takeover = false;
        bool seen_snct = false, seen_cnct = false, seen_smwb = false, seen_cmwb = false;
        while (!params.empty()) {
            const std::size_t s2 = params.find(';');
            const std::string_view param = ascii::trim_ows(params.substr(0, s2));
            params = s2 == std::string_view::npos ? std::string_view{} : params.substr(s2 + 1);
            const std::size_t eq = param.find('=');
            const std::string_view pname = ascii::trim_ows(param.substr(0, eq));
            const bool has_value = eq != std::string_view::npos;
            const std::string value = has_value ? unquote(param.substr(eq + 1)) : std::string();
            if (ascii::iequals(pname, "server_no_context_takeover") && !has_value && !seen_snct) {
                seen_snct = p.server_no_context_takeover = true;
            } else if (ascii::iequals(pname, "client_no_context_takeover") && !has_value &&
                       !seen_cnct) {
                seen_cnct = p.client_no_context_takeover = true;
            } else if (ascii::iequals(pname, "server_max_window_bits") && !seen_smwb &&
                       window_bits(value)) {
                seen_smwb = true;
                p.server_max_window_bits = window_bits(value);
            } else if (ascii::iequals(pname, "client_max_window_bits") && !seen_cmwb &&
                       window_bits(value)) {
                seen_cmwb = true;
                p.client_max_window_bits = window_bits(value);
            } else {
                throw refuse("has \"" + std::string(param) + "\", which was not offered");
            }
        }
        got = p;
    }
    if (!got) throw refuse("is empty");
    return *got;
}

}  // namespace

void Session::reset() noexcept {
    if (ws_) detail::ws_client_release(*std::exchange(ws_, nullptr));
}

// Made here, not by a default argument at the caller's co_await (see the header).
Task<Session> connect(std::string url) { return connect(std::move(url), ConnectOptions()); }

Task<Session> connect(std::string url, ConnectOptions o) {
    const http::Url u = http::Url::parse(url);
    if (u.scheme != http::Scheme::ws && u.scheme != http::Scheme::wss)
        throw std::invalid_argument("vela::ws::connect: \"" + url +
                                    "\" is not a ws:// or wss:// URL");
    const std::string where = u.to_string();
    std::vector<http::Header> h;
    h.reserve(o.headers.size() + 6);
    for (auto& f : o.headers) {
        if (handshake_field(f.first))
            throw std::invalid_argument("vela::ws::connect: \"" + f.first +
                                        "\" is the handshake's own field");
    }
    const std::string key = make_key();
    h.emplace_back("Upgrade", "websocket");
    h.emplace_back("Connection", "Upgrade");
    h.emplace_back("Sec-WebSocket-Key", key);
    h.emplace_back("Sec-WebSocket-Version", "13");
    if (!o.subprotocols.empty()) {
        std::string list;
        for (const std::string& p : o.subprotocols) {
            if (!is_token(p))
                throw std::invalid_argument("vela::ws::connect: bad subprotocol \"" + p + "\"");
            if (!list.empty()) list += ", ";
            list += p;
        }
        h.emplace_back("Sec-WebSocket-Protocol", std::move(list));
    }
    if (o.deflate)
        h.emplace_back("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits");
    for (auto& f : o.headers) h.push_back(std::move(f));

    std::unique_ptr<http::Client> own;
    http::Client* client = o.client;
    if (!client) {
        http::ClientOptions co;
        co.connect_timeout = o.connect_timeout;
        co.tls_timeout = o.handshake_timeout;
        co.head_timeout = o.handshake_timeout;
        co.tls = o.tls;
        co.follow_redirects = false;
        co.decompress = false;
        own = std::make_unique<http::Client>(std::move(co));
        client = own.get();
    }
    http::Upgraded up = co_await client->upgrade(url, std::move(h), o.handshake_timeout);
    const ResponseHead& head = up.head;
    const int status = head.status();
    if (status != 101 || !up.transport) {
        std::string why = where + ": the server answered " + std::to_string(status);
        if (!head.reason().empty()) why += " " + std::string(head.reason());
        throw HandshakeError(HandshakeFailure::status, status,
                             why + " instead of 101 Switching Protocols");
    }
    if (!ascii::iequals(ascii::trim_ows(head.header("upgrade")), "websocket"))
        throw HandshakeError(HandshakeFailure::upgrade, status,
                             where + ": the 101 has Upgrade \"" +
                                 std::string(head.header("upgrade")) + "\", not websocket");
    bool conn_upgrade = false;
    for (const std::string_view v : head.header_values("connection"))
        conn_upgrade = conn_upgrade || ascii::list_has(v, "upgrade");
    if (!conn_upgrade)
        throw HandshakeError(HandshakeFailure::upgrade, status,
                             where + ": the 101 has no Connection: upgrade");
    const std::string_view accept = ascii::trim_ows(head.header("sec-websocket-accept"));
    if (accept != ws_accept_key(key))
        throw HandshakeError(HandshakeFailure::accept, status,
                             where + ": bad Sec-WebSocket-Accept \"" + std::string(accept) +
                                 "\" (the key's is " + ws_accept_key(key) + ")");
    detail::WsClientAgreement a;
    std::string extensions;
    for (const std::string_view v : head.header_values("sec-websocket-extensions")) {
        if (!extensions.empty()) extensions += ',';
        extensions += v;
    }
    if (!ascii::trim_ows(extensions).empty()) {
        if (!o.deflate)
            throw HandshakeError(HandshakeFailure::extension, status,
                                 where + ": the server chose extensions \"" + extensions +
                                     "\" but none were offered");
        a.deflate = accept_deflate(extensions, where);
    }
    const auto protocols = head.header_values("sec-websocket-protocol");
    if (!protocols.empty()) {
        const std::string_view pick = ascii::trim_ows(protocols.front());
        bool offered = false;
        for (const std::string& p : o.subprotocols) offered = offered || p == pick;
        if (protocols.size() != 1 || !offered)
            throw HandshakeError(HandshakeFailure::subprotocol, status,
                                 where + ": the server chose subprotocol \"" + std::string(pick) +
                                     "\", which was not offered");
        a.subprotocol = std::string(pick);
    }
    WsOptions& w = a.options;
    w.max_frame = o.max_frame;
    w.max_message = o.max_message;
    w.ping_interval = o.ping_interval;
    w.pong_timeout = o.pong_timeout;
    w.close_timeout = o.close_timeout;
    w.send_queue_max = o.send_queue_max;
    w.slow_client = o.slow;
    w.deflate.level = o.deflate_level;
    w.deflate.min_size = o.deflate_min_size;
    // zlib compresses with no less than a 9-bit window: asked for 8, we send uncompressed
    // messages (RSV1 is per message).
    if (a.deflate && a.deflate->client_max_window_bits < 9)
        w.deflate.min_size = std::numeric_limits<std::size_t>::max();
    a.url = where;
    co_return Session(detail::ws_client_start(std::move(*up.transport), std::move(a)));
}

}  // namespace vela::ws
