// vela::testing::Client: requests, the cookie jar and the in-process exchange. The socket
// side (loopback mode, WebSocket) is in loopback.cpp.

#include "vela/testing/client.hpp"

#include <coroutine>
#include <cstdio>
#include <ctime>
#include <exception>
#include <utility>

#include "testing/loopback.hpp"
#include "testing/response_reader.hpp"
#include "vela/base/ascii.hpp"
#include "vela/base/buffer.hpp"
#include "vela/base/log.hpp"
#include "vela/http/conditional.hpp"
#include "vela/http/file_body.hpp"
#include "vela/http/request_parser.hpp"
#include "vela/http/response_writer.hpp"
#include "vela/server/body_pipe.hpp"
#include "vela/server/handler.hpp"
#include "vela/server/server.hpp"

namespace vela::testing {

// ---- TestResponse ---------------------------------------------------------------------------

std::string_view TestResponse::header(std::string_view name) const noexcept {
    for (const auto& [n, v] : headers_)
        if (ascii::iequals(n, name)) return v;
    return {};
}

std::vector<std::string_view> TestResponse::header_values(std::string_view name) const {
    std::vector<std::string_view> out;
    for (const auto& [n, v] : headers_)
        if (ascii::iequals(n, name)) out.emplace_back(v);
    return out;
}

bool TestResponse::has_header(std::string_view name) const noexcept {
    for (const auto& h : headers_)
        if (ascii::iequals(h.first, name)) return true;
    return false;
}

// ---- CookieJar ------------------------------------------------------------------------------

std::optional<std::string> CookieJar::get(std::string_view name) const {
    auto it = cookies_.find(name);
    if (it == cookies_.end()) return std::nullopt;
    return it->second;
}

void CookieJar::erase(std::string_view name) {
    auto it = cookies_.find(name);
    if (it != cookies_.end()) cookies_.erase(it);
}

std::string CookieJar::header_value() const {
    std::string out;
    for (const auto& [n, v] : cookies_) {
        if (!out.empty()) out += "; ";
        out.append(n).append("=").append(v);
    }
    return out;
}

namespace {
// True when a Set-Cookie's attributes delete the cookie: Max-Age <= 0, or an Expires in the
// past (vela's clear_cookie sends both).
bool deletes(std::string_view attributes) {
    std::optional<bool> by_max_age;  // Max-Age wins over Expires (RFC 6265bis 5.7)
    bool by_expires = false;
    std::size_t pos = 0;
    while (pos < attributes.size()) {
        std::size_t semi = attributes.find(';', pos);
        if (semi == std::string_view::npos) semi = attributes.size();
        const std::string_view attr = ascii::trim_ows(attributes.substr(pos, semi - pos));
        pos = semi + 1;
        const std::size_t eq = attr.find('=');
        const std::string_view key = ascii::trim_ows(attr.substr(0, eq));
        const std::string_view val = eq == std::string_view::npos
                                         ? std::string_view()
                                         : ascii::trim_ows(attr.substr(eq + 1));
        if (ascii::iequals(key, "Max-Age")) {
            by_max_age = !val.empty() && (val[0] == '-' || val.find_first_not_of('0') == val.npos);
        } else if (ascii::iequals(key, "Expires")) {
            const std::optional<std::int64_t> at = parse_http_date(val);
            by_expires = at && *at <= static_cast<std::int64_t>(std::time(nullptr));
        }
    }
    return by_max_age ? *by_max_age : by_expires;
}
}  // namespace

void CookieJar::update(const TestResponse& r) {
    for (std::string_view sc : r.header_values("Set-Cookie")) {
        const std::size_t semi = sc.find(';');
        const std::string_view pair = sc.substr(0, semi);
        const std::size_t eq = pair.find('=');
        if (eq == std::string_view::npos || eq == 0) continue;  // malformed: ignored (RFC 6265)
        std::string name(ascii::trim_ows(pair.substr(0, eq)));
        std::string value(ascii::trim_ows(pair.substr(eq + 1)));
        if (semi != std::string_view::npos && deletes(sc.substr(semi + 1)))
            erase(name);
        else
            cookies_[std::move(name)] = std::move(value);
    }
}

// ---- StreamedResponse -----------------------------------------------------------------------

Task<std::optional<std::string>> StreamedResponse::next() {
    if (!pending_.empty()) {
        std::string out = std::move(pending_);
        pending_.clear();
        co_return out;
    }
    if (ended_ || !source_) co_return std::nullopt;
    std::optional<std::string> piece = co_await source_->next();
    if (!piece) ended_ = true;
    co_return piece;
}

Task<std::optional<std::string>> StreamedResponse::read_until(std::string delimiter) {
    std::string got = std::move(pending_);
    pending_.clear();
    for (;;) {
        if (const std::size_t at = got.find(delimiter); at != std::string::npos) {
            pending_ = got.substr(at + delimiter.size());
            got.resize(at + delimiter.size());
            co_return got;
        }
        if (ended_ || !source_) break;
        std::optional<std::string> piece = co_await source_->next();
        if (!piece) {
            ended_ = true;
            break;
        }
        got += *piece;
    }
    pending_ = std::move(got);
    co_return std::nullopt;
}

Task<std::string> StreamedResponse::read_all() {
    std::string all = std::move(pending_);
    pending_.clear();
    while (!ended_ && source_) {
        std::optional<std::string> piece = co_await source_->next();
        if (!piece) break;
        all += *piece;
    }
    ended_ = true;
    co_return all;
}

// ---- The in-process exchange ----------------------------------------------------------------

namespace {

// Where the App's handler delivers an asynchronous response; resumes the awaiting request.
class Completion final : public ResponseSink {
  public:
    void complete(Response&& r) override {
        response = std::move(r);
        done = true;
        if (waiter) std::exchange(waiter, {}).resume();
    }
    void pending(std::coroutine_handle<> w) override {
        if (!done) work = w;
    }
    bool await_ready() const noexcept { return done; }
    void await_suspend(std::coroutine_handle<> h) noexcept { waiter = h; }
    void await_resume() const noexcept {}

    Response response;
    bool done = false;
    std::coroutine_handle<> waiter;
    std::coroutine_handle<> work;  // the handler's driving frame while it runs
};

// What one in-process request owns: its bytes (the Request's views point into them), the
// parsed Request, and the handler's work.
struct Exchange {
    explicit Exchange(const ParserLimits* limits) : parser(limits) {}
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;
    ~Exchange() {
        // The request was abandoned (a timeout) while its handler waited: abandon the handler
        // too, as the server does at its shutdown deadline.
        if (!sink.done && sink.work) sink.work.destroy();
    }
    std::string bytes;
    ConnectionInfo info;
    Request req;
    RequestParser parser;
    Completion sink;
};

// Waits for a coroutine producer (stream_body, sse) that has nothing yet.
struct ProducerWait {
    Response::BodySource& source;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
        return vela::detail::body_pending(source, [h] { h.resume(); });
    }
    void await_resume() const noexcept {}
};

// A streamed body pulled from the handler's BodySource, as the connection driver pulls it.
class InProcessBody final : public StreamedResponse::Source {
  public:
    InProcessBody(std::unique_ptr<Exchange> ex, Response::BodySource source)
        : ex_(std::move(ex)), source_(std::move(source)) {}
    ~InProcessBody() override {
        if (source_) vela::detail::body_dropped(source_);  // the producer learns we left
    }
    Task<std::optional<std::string>> next() override {
        while (source_) {
            std::optional<std::string> piece;
            try {
                piece = source_();
            } catch (const std::exception& e) {
                source_ = nullptr;  // on the wire: the connection closes, the body incomplete
                throw std::runtime_error(std::string("streamed body failed: ") + e.what());
            }
            if (!piece) {
                source_ = nullptr;
                break;
            }
            if (!piece->empty()) co_return piece;
            co_await ProducerWait{source_};
        }
        co_return std::nullopt;
    }

  private:
    std::unique_ptr<Exchange> ex_;
    Response::BodySource source_;
};

// The file body's bytes as the server sends them: each part's head and file bytes, the tail.
void append_file_body(std::string& out, const FileBody& fb) {
    for (const FileBody::Part& p : fb.parts) {
        out += p.head;
        if (const std::string* mem = fb.file->content()) {
            out.append(*mem, static_cast<std::size_t>(p.offset),
                       static_cast<std::size_t>(p.length));
            continue;
        }
        std::string part(static_cast<std::size_t>(p.length), '\0');
        std::size_t got = 0;
        while (got < part.size()) {
            const ssize_t n = ::pread(fb.file->fd(), part.data() + got, part.size() - got,
                                      static_cast<off_t>(p.offset + got));
            if (n <= 0) throw std::runtime_error("file body ended early");
            got += static_cast<std::size_t>(n);
        }
        out += part;
    }
    out += fb.tail;
}

}  // namespace

// Parses the request bytes with the server's parser, runs the App's handler on this loop and
// writes the response with the server's writer, then reads it back as a client would.
Task<StreamedResponse> Client::in_process(Outgoing o) {
    const ServerOptions& opt = app_->options();
    auto ex = std::make_unique<Exchange>(&opt.limits);
    ex->bytes = std::move(o.bytes);
    const std::size_t ip_len = std::min(options_.remote_ip.size(), sizeof ex->info.ip - 1);
    options_.remote_ip.copy(ex->info.ip, ip_len);
    ex->info.ip_size = static_cast<std::uint8_t>(ip_len);
    Request& req = ex->req;
    req.set_connection(&ex->info);
    Response resp;
    bool request_ok = true;
    const ParseResult parsed = ex->parser.parse(ex->bytes.data(), ex->bytes.size(), req);
    if (parsed == ParseResult::incomplete)
        throw std::invalid_argument("vela::testing: the request bytes end before the request does");
    if (parsed == ParseResult::error) {
        request_ok = false;
        resp = server_error_response(opt, ex->parser.error(), nullptr);
        resp.close_connection();
    } else {
        bool ready;
        try {
            ready = vela::detail::handler(*app_).handle(req, ex->sink.response, ex->sink);
        } catch (const std::exception& e) {  // as the connection driver answers it
            log::error("handler for {} {} threw: {}", req.method_name(), req.path(), e.what());
            ex->sink.response = server_error_response(opt, Status::InternalServerError, &req);
            ready = true;
        } catch (...) {
            log::error("handler for {} {} threw a non-standard exception", req.method_name(),
                       req.path());
            ex->sink.response = server_error_response(opt, Status::InternalServerError, &req);
            ready = true;
        }
        if (!ready) co_await ex->sink;
        resp = std::move(ex->sink.response);
    }
    const bool head = request_ok && req.method() == Method::HEAD;
    const bool http10 = request_ok && req.version() == 10;
    bool streamed = false;
    const FileBody* file = nullptr;
    if (resp.has_extra()) {
        if (resp.status() == Status::SwitchingProtocols && resp.take_upgrade())
            throw std::logic_error(
                "vela::testing: a protocol switch (WebSocket) needs a socket: use "
                "Client::loopback(app) and client.websocket(...)");
        if (resp.file_body()) {
            apply_file_semantics(req, resp, opt.limits.max_ranges);
            rewrite_file_error(opt, req, resp);
        }
        streamed = resp.streaming();
        file = resp.file_body();
    }
    const bool keep =
        request_ok && req.keep_alive() && !resp.wants_close() && !(streamed && http10 && !head);
    Buffer out;
    std::string wire;
    if (file) {
        write_response(out, resp,
                       WriteOptions{loop_->http_date(), keep, http10, true, false,
                                    static_cast<std::int64_t>(file->length())});
        wire.assign(out.data(), out.size());
        if (!head && status_has_body(wire_status(resp.status()))) append_file_body(wire, *file);
    } else {
        write_response(out, resp, WriteOptions{loop_->http_date(), keep, http10, head, streamed});
        wire.assign(out.data(), out.size());
    }
    detail::ResponseReader reader(head);
    reader.append(wire);
    detail::ResponseReader::Step step = reader.next(true);
    if (step != detail::ResponseReader::Step::head)
        throw std::runtime_error("vela::testing: unreadable response: " + reader.error());
    if (streamed && !head) {
        Response::BodySource source = resp.take_body_source();
        co_return StreamedResponse(std::move(reader.head()), std::make_unique<InProcessBody>(
                                                                 std::move(ex), std::move(source)));
    }
    std::string body;
    for (;;) {
        step = reader.next(true);
        if (step == detail::ResponseReader::Step::piece) {
            body += reader.take_piece();
        } else if (step == detail::ResponseReader::Step::done) {
            break;
        } else {
            throw std::runtime_error("vela::testing: unreadable response body: " + reader.error());
        }
    }
    TestResponse r = std::move(reader.head());
    r.mutable_body() = std::move(body);
    co_return StreamedResponse(std::move(r), nullptr);
}

// ---- Client ---------------------------------------------------------------------------------

Client::Client(App& app, ClientOptions options) : Client(app, std::move(options), false) {}

Client::Client(App& app, ClientOptions options, bool loopback)
    : app_(&app),
      options_(std::move(options)),
      loopback_(loopback),
      loop_(std::make_unique<Loop>()),
      conns_(std::make_shared<detail::ConnectionSlot>()) {
    if (!loopback_) vela::detail::handler(*app_);  // routes final now, as at start
}

Client Client::loopback(App& app, ClientOptions options) {
    Client c(app, std::move(options), true);
    app.listen("127.0.0.1:0");
    app.start(c.options_.threads);
    c.port_ = app.port();
    return c;
}

Client::Client(Client&& o) noexcept
    : app_(o.app_),
      options_(std::move(o.options_)),
      loopback_(o.loopback_),
      port_(o.port_),
      loop_(std::move(o.loop_)),
      conns_(std::move(o.conns_)),
      cookies_(std::move(o.cookies_)) {
    o.app_ = nullptr;
}

Client::~Client() {
    conns_.reset();  // closes the kept connection before the server goes
    if (loopback_ && app_) {
        app_->stop();
        app_->wait();
    }
}

std::uint16_t Client::port() const noexcept { return port_; }

Client& Client::set_default_header(std::string name, std::string value) {
    options_.default_headers.emplace_back(std::move(name), std::move(value));
    return *this;
}

namespace {
bool has(const Headers& h, std::string_view name) {
    for (const auto& f : h)
        if (ascii::iequals(f.first, name)) return true;
    return false;
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
    out.append(name).append(": ").append(value).append("\r\n");
}

// application/x-www-form-urlencoded (the WHATWG URL standard's serializer): unreserved bytes
// as they are, space as '+', everything else percent-encoded.
void form_encode(std::string& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (unsigned char c : s) {
        if (ascii::is_alnum(c) || c == '*' || c == '-' || c == '.' || c == '_') {
            out += static_cast<char>(c);
        } else if (c == ' ') {
            out += '+';
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
}
}  // namespace

// The request as HTTP/1.1 bytes: request line, Host, the default and the request's own
// fields, the jar's cookies, Content-Length, the body.
Client::Outgoing Client::build(std::string_view method, std::string_view target,
                               const Headers& headers, const std::string& body) const {
    Outgoing o;
    o.head = method == "HEAD";
    std::string& b = o.bytes;
    b.reserve(128 + target.size() + body.size());
    b.append(method).append(" ").append(target.empty() ? "/" : target).append(" HTTP/1.1\r\n");
    if (!has(headers, "Host") && !has(options_.default_headers, "Host"))
        append_field(b, "Host", options_.host);
    std::string cookie = options_.cookie_jar ? cookies_.header_value() : std::string();
    auto add = [&](const Headers& hs) {
        for (const auto& [n, v] : hs) {
            if (ascii::iequals(n, "Cookie") && !cookie.empty()) {
                append_field(b, n, v + "; " + cookie);  // one Cookie field: theirs, then the jar
                cookie.clear();
                continue;
            }
            append_field(b, n, v);
        }
    };
    add(options_.default_headers);
    add(headers);
    if (!cookie.empty()) append_field(b, "Cookie", cookie);
    const bool carries_body = method == "POST" || method == "PUT" || method == "PATCH";
    if ((!body.empty() || carries_body) && !has(headers, "Content-Length") &&
        !has(headers, "Transfer-Encoding"))
        append_field(b, "Content-Length", std::to_string(body.size()));
    b.append("\r\n").append(body);
    return o;
}

Pending<TestResponse> Client::request(std::string_view method, std::string_view target,
                                      Headers headers, std::string body) {
    return Pending<TestResponse>(*this, exchange(build(method, target, headers, body)));
}

Pending<TestResponse> Client::with_json(std::string_view method, std::string_view target,
                                        std::string body, Headers headers) {
    if (!has(headers, "Content-Type")) headers.emplace_back("Content-Type", "application/json");
    return request(method, target, std::move(headers), std::move(body));
}

Pending<TestResponse> Client::post_form(std::string_view target, const FormFields& fields,
                                        Headers headers) {
    std::string body;
    for (const auto& [n, v] : fields) {
        if (!body.empty()) body += '&';
        form_encode(body, n);
        body += '=';
        form_encode(body, v);
    }
    if (!has(headers, "Content-Type"))
        headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    return request("POST", target, std::move(headers), std::move(body));
}

Pending<TestResponse> Client::raw(std::string bytes, bool head_request) {
    return Pending<TestResponse>(*this, exchange(Outgoing{std::move(bytes), head_request}));
}

Pending<StreamedResponse> Client::open(std::string_view method, std::string_view target,
                                       Headers headers, std::string body) {
    return Pending<StreamedResponse>(*this,
                                     exchange_streamed(build(method, target, headers, body)));
}

Pending<WebSocket> Client::websocket(std::string_view target, Headers headers) {
    if (!loopback_)
        throw std::logic_error(
            "vela::testing: WebSocket needs a socket: use Client::loopback(app)");
    if (!has(headers, "Sec-WebSocket-Key"))
        headers.emplace_back("Sec-WebSocket-Key", std::string(detail::kWsKey));
    if (!has(headers, "Sec-WebSocket-Version")) headers.emplace_back("Sec-WebSocket-Version", "13");
    headers.emplace_back("Upgrade", "websocket");
    headers.emplace_back("Connection", "Upgrade");
    return Pending<WebSocket>(*this, open_websocket(build("GET", target, headers, {})));
}

Task<StreamedResponse> Client::exchange_streamed(Outgoing o) {
    StreamedResponse r;
    if (loopback_)  // (not co_await inside ?: : GCC 12 miscompiles that)
        r = co_await over_socket(std::move(o));
    else
        r = co_await in_process(std::move(o));
    if (options_.cookie_jar) cookies_.update(r.head());
    co_return r;
}

Task<TestResponse> Client::exchange(Outgoing o) {
    StreamedResponse s = co_await exchange_streamed(std::move(o));
    std::string rest = co_await s.read_all();  // (the head holds a body read whole already)
    TestResponse r = s.head();
    r.mutable_body() += rest;
    co_return r;
}

// Runs the loop until `done` or the timeout (which stops it with `done` still false).
void Client::run_loop(bool& done) {
    bool timed_out = false;
    const std::uint64_t timer = loop_->call_after(options_.timeout, [&] {
        timed_out = true;
        loop_->stop();
    });
    while (!done && !timed_out) loop_->run();
    if (!timed_out) loop_->cancel(timer);
}

}  // namespace vela::testing
