// The WebSocket opening handshake, server side (RFC 6455 4.2).

#include <openssl/evp.h>

#include <array>
#include <string>

#include "vela/base/ascii.hpp"
#include "vela/base/base64.hpp"
#include "vela/server/websocket.hpp"
#include "ws_connection.hpp"

namespace vela {

namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
// A key is the base64 of 16 bytes: 22 characters of the alphabet, then "==" (the last
// character before the padding carries 2 bits, so it is one of A, Q, g, w).
bool key_valid(std::string_view k) noexcept {
    if (k.size() != 24 || k[22] != '=' || k[23] != '=') return false;
    for (std::size_t i = 0; i < 22; ++i) {
        const char c = k[i];
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                        (c >= '0' && c <= '9') || c == '+' || c == '/';
        if (!ok) return false;
    }
    return k[21] == 'A' || k[21] == 'Q' || k[21] == 'g' || k[21] == 'w';
}

Response refuse(Status s, std::string_view why) {
    return Response::text(std::string(why) + "\n", s);
}

}  // namespace

/// Sec-WebSocket-Accept for `key` (RFC 6455 4.2.2: base64 of SHA-1 of key + GUID).
std::string ws_accept_key(std::string_view key) {
    std::string in(key);
    in += kGuid;
    std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
    unsigned int len = 0;
    if (EVP_Digest(in.data(), in.size(), md.data(), &len, EVP_sha1(), nullptr) != 1)
        throw std::runtime_error("SHA-1 unavailable");
    return base64_encode({reinterpret_cast<const char*>(md.data()), len});
}

Response ws_accept(const Request& req, std::shared_ptr<const WsEndpoint> ep) {
    const WsOptions& o = ep->options;
    // RFC 8441: over HTTP/2 the handshake is an extended CONNECT with :protocol websocket,
    // answered 200; Upgrade, Connection, Sec-WebSocket-Key and -Accept are not used.
    const bool h2 = req.version() == 20;
    if (h2 && (req.method() != Method::CONNECT || req.protocol() != "websocket")) {
        return refuse(Status::BadRequest,
                      "WebSocket over HTTP/2 is an extended CONNECT with :protocol websocket "
                      "(RFC 8441)");
    }
    // RFC 6455 4.1: the handshake is HTTP/1.1 or later (HTTP/1.0 has no Upgrade).
    if (req.version() < 11) return refuse(Status::BadRequest, "WebSocket needs HTTP/1.1");
    bool upgrade = false, connection = false, version_ok = false, version_seen = false;
    int keys = 0;
    std::string_view key, origin;
    std::string protocols, extensions;
    for (const Header& h : req.headers()) {
        if (ascii::iequals(h.name, "upgrade")) {
            upgrade = upgrade || ascii::list_has(h.value, "websocket");
        } else if (ascii::iequals(h.name, "connection")) {
            connection = connection || ascii::list_has(h.value, "upgrade");
        } else if (ascii::iequals(h.name, "sec-websocket-key")) {
            ++keys;
            key = h.value;
        } else if (ascii::iequals(h.name, "sec-websocket-version")) {
            version_seen = true;
            version_ok = h.value == "13";
        } else if (ascii::iequals(h.name, "origin")) {
            origin = h.value;
        } else if (ascii::iequals(h.name, "sec-websocket-protocol")) {
            if (!protocols.empty()) protocols += ", ";
            protocols += h.value;
        } else if (ascii::iequals(h.name, "sec-websocket-extensions")) {
            if (!extensions.empty()) extensions += ", ";
            extensions += h.value;
        }
    }
    if (!h2 && (!upgrade || !connection)) {
        Response r =
            refuse(Status::UpgradeRequired, "This is a WebSocket endpoint: upgrade to websocket");
        r.add_header("Upgrade", "websocket");
        r.add_header("Sec-WebSocket-Version", "13");
        return r;
    }
    if (!h2 && req.method() != Method::GET)
        return refuse(Status::BadRequest, "WebSocket upgrade must be GET");
    if (!version_seen || !version_ok) {
        Response r = refuse(Status::UpgradeRequired, "Unsupported WebSocket version: use 13");
        r.add_header("Sec-WebSocket-Version", "13");
        return r;
    }
    if (!h2 && (keys != 1 || !key_valid(key)))
        return refuse(Status::BadRequest, "Missing or malformed Sec-WebSocket-Key");
    // Only browsers need the check (they send Origin and cannot forge it); other clients
    // could send any value, so a request without one is not refused.
    if (!o.origins.empty() && !origin.empty()) {
        bool allowed = false;
        for (const std::string& a : o.origins) allowed = allowed || ascii::iequals(a, origin);
        if (!allowed) return refuse(Status::Forbidden, "Origin not allowed");
    }
    auto up = std::make_shared<detail::WsUpgrade>();
    up->endpoint = ep;
    for (const std::string& p : o.subprotocols) {
        if (ascii::list_has(protocols, p)) {
            up->subprotocol = p;
            break;
        }
    }
    if (up->subprotocol.empty() && o.require_subprotocol)
        return refuse(Status::BadRequest, "No supported WebSocket subprotocol offered");
    std::string ext_answer;
    if (!extensions.empty()) up->deflate = ws::negotiate_deflate(extensions, o.deflate, ext_answer);

    Response r(h2 ? Status::OK : Status::SwitchingProtocols);
    if (!h2) {
        r.add_header("Upgrade", "websocket");
        r.add_header("Sec-WebSocket-Accept", ws_accept_key(key));
    }
    if (!up->subprotocol.empty()) r.add_header("Sec-WebSocket-Protocol", up->subprotocol);
    if (up->deflate) r.add_header("Sec-WebSocket-Extensions", ext_answer);
    r.set_upgrade(std::move(up));
    return r;
}

}  // namespace vela
