#pragma once
// Request: what a handler sees of an incoming request, whatever the protocol.
//
// Field values are views into the connection's read buffer, valid until the handler's
// response has been produced (the connection does not read into or move that buffer while a
// request is being handled). A connection reuses one Request object for all its requests,
// so its vectors keep their capacity and a steady-state request allocates nothing.

#include <array>
#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vela/http/body_reader.hpp"
#include "vela/http/method.hpp"
#include "vela/http/request_parser.hpp"

namespace vela {

namespace detail {
class Http1Connection;
class ServerWorker;
}  // namespace detail

/// One header field as received (name case preserved, value without surrounding whitespace).
struct Header {
    /// The field name, as received.
    std::string_view name;
    /// The field value, without leading or trailing whitespace.
    std::string_view value;
};

/// What a request knows of the connection that carried it (filled by the server at accept;
/// the connection owns it and outlives its requests).
struct ConnectionInfo {
    /// The peer's address as text ("127.0.0.1", "::1"); empty for a Unix socket.
    char ip[46] = {};
    /// Length of the text in `ip`.
    std::uint8_t ip_size = 0;
    /// The peer's port (0 for a Unix socket).
    std::uint16_t port = 0;
    /// True when the connection is TLS.
    bool secure = false;
    /// `ip` as a view.
    std::string_view ip_view() const noexcept { return {ip, ip_size}; }
};

/// An incoming request as a handler sees it; its fields are views (see above).
class Request {
  public:
    /// Maximum number of path parameters one route can bind.
    static constexpr std::size_t kMaxParams = 16;

    /// The method (Method::other for unknown tokens; see method_name()).
    Method method() const noexcept { return method_; }
    /// The method token as received.
    std::string_view method_name() const noexcept { return method_name_; }
    /// The request target as received ("/a%20b?x=1").
    std::string_view target() const noexcept { return target_; }
    /// The percent-decoded path ("/a b").
    std::string_view path() const noexcept { return path_; }
    /// The raw query string without '?' ("x=1"), empty if none.
    std::string_view query_string() const noexcept { return query_; }
    /// The first query parameter named `name`, percent- and '+'-decoded.
    std::optional<std::string> query(std::string_view name) const;
    /// HTTP version as major*10+minor: 10, 11 or 20.
    int version() const noexcept { return version_; }
    /// The Host (or :authority, or the absolute-form target's authority).
    std::string_view host() const noexcept { return host_; }

    /// First header named `name` (case-insensitive), empty view if absent.
    std::string_view header(std::string_view name) const noexcept;
    /// True if a header named `name` is present.
    bool has_header(std::string_view name) const noexcept;
    /// All header fields in arrival order.
    const std::vector<Header>& headers() const noexcept { return headers_; }

    /// The decoded body (de-chunked if it came chunked).
    std::string_view body() const noexcept { return body_; }

    /// The path parameter `name` bound by the router, empty if absent.
    std::string_view param(std::string_view name) const noexcept;
    /// The path parameter `name` parsed as an integer, nullopt if absent or not a number.
    std::optional<long long> param_int(std::string_view name) const noexcept;

    /// Stores a per-request attribute (middleware passes data to handlers with it).
    void set_attribute(std::string_view key, std::string_view value);
    /// Reads a per-request attribute, nullopt if never set.
    std::optional<std::string_view> attribute(std::string_view key) const noexcept;

    /// The :protocol of an HTTP/2 extended CONNECT (RFC 8441), e.g. "websocket"; empty
    /// otherwise.
    std::string_view protocol() const noexcept { return protocol_; }

    /// True when the connection stays open after this request (HTTP/1.x keep-alive rules).
    bool keep_alive() const noexcept { return keep_alive_; }

    /// The value of the cookie `name` from the Cookie header fields (RFC 6265bis 5.7; HTTP/2
    /// may split them into several fields), without surrounding quotes; nullopt if absent.
    /// The first of several cookies with the same name wins (the most specific path).
    std::optional<std::string_view> cookie(std::string_view name) const noexcept;
    /// Every cookie as (name, value) pairs in the order received (malformed pairs skipped).
    std::vector<std::pair<std::string_view, std::string_view>> cookies() const;

    /// The peer's IP address as text ("127.0.0.1", "::1"); empty for a Unix socket.
    std::string_view remote_ip() const noexcept { return conn_->ip_view(); }
    /// The peer's port (0 for a Unix socket).
    std::uint16_t remote_port() const noexcept { return conn_->port; }
    /// True when the request arrived over TLS.
    bool secure() const noexcept { return conn_->secure; }
    /// The client's address: remote_ip(), or the address a trusted proxy reported
    /// (set_forwarded, see vela/middleware/proxy.hpp).
    std::string_view client_ip() const noexcept {
        return forwarded_ip_ ? std::string_view(fwd_ip_) : conn_->ip_view();
    }
    /// "https" or "http": how the client reached us (a trusted proxy may say so, see
    /// set_forwarded), else from the connection.
    std::string_view scheme() const noexcept {
        return forwarded_scheme_ ? std::string_view(fwd_scheme_)
                                 : (conn_->secure ? std::string_view("https") : "http");
    }
    /// Records what a trusted proxy reported: the client's address, the scheme and the host
    /// (empty arguments leave that part as it is). Copies are kept by the request.
    void set_forwarded(std::string_view client_ip, std::string_view scheme, std::string_view host);

    /// The value of type T a middleware stored for this request with set_local<T>(), or
    /// nullptr (typed per-request data: the session, JWT claims, a user).
    template <class T>
    T* local() noexcept {
        for (Local& l : locals_)
            if (l.key == local_key<T>()) return static_cast<T*>(l.value.get());
        return nullptr;
    }
    /// As local<T>(), read-only.
    template <class T>
    const T* local() const noexcept {
        for (const Local& l : locals_)
            if (l.key == local_key<T>()) return static_cast<const T*>(l.value.get());
        return nullptr;
    }
    /// Stores a T made from `args` for this request (replacing an earlier one) and returns it.
    template <class T, class... A>
    T& set_local(A&&... args) {
        auto v = std::make_shared<T>(std::forward<A>(args)...);
        T& ref = *v;
        extras_ = true;
        for (Local& l : locals_)
            if (l.key == local_key<T>()) {
                l.value = std::move(v);
                return ref;
            }
        locals_.push_back(Local{local_key<T>(), std::move(v)});
        return ref;
    }

    // --- Filled by protocol drivers and the router; handlers do not call these. ---
    /// The body as a stream (routes registered with App::streaming read large bodies as they
    /// arrive; elsewhere it hands out the buffered body() in one chunk).
    BodyReader& body_stream() noexcept {
        if (streamed_body_) return *streamed_body_;
        whole_body_.point_at(&body_);
        return whole_body_;
    }
    /// True when the body is being streamed (body() is then empty).
    bool body_streamed() const noexcept { return streamed_body_ != nullptr; }
    /// Attaches the driver's streaming reader (nullptr: the buffered body).
    void set_body_stream(BodyReader* r) noexcept { streamed_body_ = r; }
    /// Points every view that lies in [from, from + len) at the same offset from `to`
    /// instead (a driver that copies the request's bytes to keep them, e.g. WebSocket).
    void rebase(const char* from, std::size_t len, const char* to) noexcept;
    /// Clears every field for the next request (the vectors keep their capacity).
    void reset() noexcept;
    /// Drops the values set with set_local and set_forwarded now (the server does when it
    /// puts a Request back in its pool, so a session or claims are not kept until reuse).
    void clear_locals() noexcept {
        if (extras_) [[unlikely]]
            reset_extras();
    }
    /// Sets the method and its token as received.
    void set_method(Method m, std::string_view name) noexcept {
        method_ = m;
        method_name_ = name;
    }
    /// Sets the target as received and the path and query string taken from it.
    void set_target(std::string_view target, std::string_view path,
                    std::string_view query) noexcept {
        target_ = target;
        path_ = path;
        query_ = query;
    }
    /// Sets the path to a decoded copy kept inside the request.
    void set_decoded_path(std::string decoded);
    /// Sets the :protocol of an extended CONNECT (a view, like the other fields).
    void set_protocol(std::string_view p) noexcept {
        protocol_ = p;
        extras_ = true;
    }
    /// Sets the HTTP version (major*10+minor).
    void set_version(int v) noexcept { version_ = v; }
    /// Sets the host.
    void set_host(std::string_view h) noexcept { host_ = h; }
    /// Points at the connection's information (not null), which must outlive the request
    /// (the server does, whenever a connection borrows a Request).
    void set_connection(const ConnectionInfo* c) noexcept { conn_ = c; }
    /// Sets the decoded body.
    void set_body(std::string_view b) noexcept { body_ = b; }
    /// Replaces the body with `b`, kept by the request (e.g. a decompressed body).
    void set_owned_body(std::string b) noexcept {
        owned_body_ = std::move(b);
        body_ = owned_body_;
    }
    /// Sets whether the connection stays open after this request.
    void set_keep_alive(bool k) noexcept { keep_alive_ = k; }
    /// The header fields, for the protocol driver to fill.
    std::vector<Header>& mutable_headers() noexcept { return headers_; }
    /// Binds a path parameter; false if kMaxParams are bound already.
    bool add_param(std::string_view name, std::string_view value) noexcept;
    /// Unbinds every path parameter.
    void clear_params() noexcept { param_count_ = 0; }
    /// Names the bound parameters in order (the router learns names once a route matched).
    template <class Names>
    void name_params(const Names& names) noexcept {
        std::size_t i = 0;
        for (const auto& n : names) {
            if (i >= param_count_) break;
            params_[i++].name = n;
        }
    }
    /// Drops parameters bound after the first `n` (router backtracking).
    void truncate_params(std::size_t n) noexcept { param_count_ = static_cast<std::uint8_t>(n); }
    /// Number of bound path parameters.
    std::size_t param_count() const noexcept { return param_count_; }

  private:
    // The HTTP/1.1 driver's parse state for this request: pooled with it, so an idle
    // connection holds neither.
    friend class detail::Http1Connection;
    friend class detail::ServerWorker;
    RequestParser parser_{nullptr};

    struct Local {
        const void* key;
        std::shared_ptr<void> value;
    };
    template <class T>
    static const void* local_key() noexcept {
        static const char key = 0;
        return &key;
    }
    void reset_extras() noexcept;
    static const ConnectionInfo kNoConnection;

    struct Param {
        std::string_view name;
        std::string_view value;
    };
    struct Attribute {
        std::string key;
        std::string value;
    };

    Method method_ = Method::GET;
    std::string_view method_name_;
    std::string_view target_;
    std::string_view path_;
    std::string_view query_;
    std::string_view host_;
    std::string_view body_;
    int version_ = 11;
    bool keep_alive_ = true;
    bool extras_ = false;  // locals, forwarded values or a protocol to clear in reset()
    bool forwarded_ip_ = false;
    bool forwarded_scheme_ = false;
    std::uint8_t param_count_ = 0;
    std::uint8_t attr_count_ = 0;
    std::vector<Header> headers_;
    std::array<Param, kMaxParams> params_{};
    std::vector<Attribute> attributes_;  // slots are reused: size() is the high-water mark
    std::string decoded_path_;
    std::string owned_body_;  // set_owned_body
    BodyReader* streamed_body_ = nullptr;
    WholeBodyReader whole_body_;
    const ConnectionInfo* conn_ = &kNoConnection;
    std::vector<Local> locals_;
    std::string fwd_ip_, fwd_scheme_, fwd_host_;
    std::string_view protocol_;  // set_protocol (an extra: cleared by reset_extras)
};

/// Percent-decodes `in`; with `plus_is_space` '+' becomes ' ' (query strings). Returns
/// false on a malformed escape.
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space);

}  // namespace vela
