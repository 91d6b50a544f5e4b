#include "vela/web/app.hpp"

#include "vela/tls/context.hpp"

#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "vela/base/html.hpp"
#include "vela/base/log.hpp"
#include "vela/web/extract.hpp"
#include "vela/web/http_error.hpp"

namespace vela {

namespace detail {

namespace {

// The handler at the end of an asynchronous chain: its exception becomes the error answer
// here, so the middleware around it sees a response.
Task<Response> handler_step(const Endpoint& ep, Request& req) {
    Response r;
    std::exception_ptr error;
    try {
        if (ep.handler.is_async())
            r = co_await ep.handler.async(req);
        else
            r = ep.handler.sync(req);
    } catch (...) {
        error = std::current_exception();
    }
    if (error) r = exception_answer(*ep.app, error, req);
    complete_error(*ep.app, req, r);
    co_return r;
}

Task<Response> before_step(const Middleware& mw, const Endpoint& ep, std::size_t i, Request& req) {
    if (std::optional<Response> r = mw.before(req)) {
        complete_error(*ep.app, req, *r);
        co_return std::move(*r);
    }
    co_return co_await run_chain(ep, i + 1, req);
}

// The rest of the chain for an after hook: whatever it throws (an onion middleware, a before
// hook) becomes the error answer, so the hook still sees a response.
Task<Response> after_step(const Middleware& mw, const Endpoint& ep, std::size_t i, Request& req) {
    Response r;
    std::exception_ptr error;
    try {
        r = co_await run_chain(ep, i + 1, req);
    } catch (...) {
        error = std::current_exception();
    }
    if (error) r = exception_answer(*ep.app, error, req);
    complete_error(*ep.app, req, r);
    mw.after(req, r);
    co_return r;
}

Task<Response> hooks_step(const Middleware& mw, const Endpoint& ep, std::size_t i, Request& req) {
    std::optional<Response> early;
    if (mw.before) early = mw.before(req);
    Response r;
    std::exception_ptr error;
    if (early) {
        r = std::move(*early);
    } else {
        try {
            r = co_await run_chain(ep, i + 1, req);  // (not in a ?: : GCC 12 miscompiles that)
        } catch (...) {
            error = std::current_exception();
        }
    }
    if (error) r = exception_answer(*ep.app, error, req);
    complete_error(*ep.app, req, r);
    if (mw.after) mw.after(req, r);
    co_return r;
}

// The synchronous path: plain calls, no frames. Before hooks in order (one may answer
// early), the handler, then the after hooks of the middleware that ran, innermost first.
void run_sync(const Endpoint& ep, Request& req, Response& out) {
    const std::size_t n = ep.chain.size();
    std::size_t ran = 0;
    bool answered = false;
    try {
        for (; ran < n; ++ran) {
            const Middleware& mw = *ep.chain[ran];
            if (mw.kind == Middleware::Kind::after || !mw.before) continue;
            if (std::optional<Response> r = mw.before(req)) {
                out = std::move(*r);
                answered = true;
                ++ran;  // its own after hook (Hooks) runs
                break;
            }
        }
        if (!answered) out = ep.handler.sync(req);
    } catch (...) {  // the after hooks of what ran see the error answer
        out = exception_answer(*ep.app, std::current_exception(), req);
    }
    complete_error(*ep.app, req, out);
    for (std::size_t j = ran; j-- > 0;) {
        const Middleware& mw = *ep.chain[j];
        if (mw.kind == Middleware::Kind::before || !mw.after) continue;
        try {
            mw.after(req, out);
        } catch (...) {  // the outer after hooks see the error answer
            out = exception_answer(*ep.app, std::current_exception(), req);
        }
    }
}

}  // namespace

// Runs the chain from middleware `index` on: each step is the middleware's own coroutine
// (onion) or a small step coroutine around a synchronous hook; the end is the handler.
Task<Response> run_chain(const Endpoint& ep, std::size_t index, Request& req) {
    if (index == ep.chain.size()) {
        if (ep.chain.empty() && ep.handler.is_async())
            return ep.handler.async(req);  // dispatch maps its errors
        return handler_step(ep, req);
    }
    const Middleware& mw = *ep.chain[index];
    switch (mw.kind) {
        case Middleware::Kind::onion:
            return mw.onion(req, Next(ep, index + 1, req));
        case Middleware::Kind::before:
            return before_step(mw, ep, index, req);
        case Middleware::Kind::hooks:
            return hooks_step(mw, ep, index, req);
        case Middleware::Kind::after:
            break;
    }
    return after_step(mw, ep, index, req);
}

}  // namespace detail

class App::Handler final : public HttpHandler {
  public:
    explicit Handler(App& app) : app_(app) {}
    bool handle(Request& req, Response& out, ResponseSink& sink) override {
        return app_.dispatch(req, out, sink);
    }
    bool streams_body(Request& req) override { return app_.streams_body(req); }

  private:
    App& app_;
};

App::App() : root_(new_group("", nullptr)), handler_(std::make_unique<Handler>(*this)) {}

App::~App() {
    if (server_) {
        server_->stop();
        server_->wait();
    }
}

detail::GroupData* App::new_group(std::string prefix, detail::GroupData* parent) {
    if (!prefix.empty() && prefix.front() != '/') prefix = std::string(1, '/').append(prefix);
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    if (prefix == "/") prefix.clear();
    groups_.push_back(detail::GroupData{std::move(prefix), parent, {}});
    return &groups_.back();
}

Group App::group(std::string_view prefix) {
    return Group(this, new_group(std::string(prefix), root_));
}

Group Group::group(std::string_view prefix) {
    return Group(app_, app_->new_group(std::string(prefix), data_));
}

std::string Group::prefix() const {
    std::string out;
    for (detail::GroupData* g = data_; g; g = g->parent) out.insert(0, g->prefix);
    return out;
}

std::string Group::full_pattern(std::string_view pattern) const {
    std::string full = prefix();
    full += pattern;
    if (full.size() > 1 && full.back() == '/' && pattern.empty()) full.pop_back();
    return full;
}

void App::check_not_started(const char* what) const {
    if (frozen_) throw std::logic_error(std::string(what) + " must be added before the app starts");
}

namespace {
// A WebSocket endpoint answers GET with an Upgrade (HTTP/1.1) and an extended CONNECT with
// :protocol websocket (HTTP/2, RFC 8441); both are left out of the OpenAPI document.
template <class Owner>
void ws_routes(Owner& owner, std::string_view p, std::shared_ptr<const WsEndpoint> ep) {
    owner.get(p, [ep](const Request& req) { return ws_accept(req, ep); }).hidden();
    owner.route(Method::CONNECT, p, [ep](const Request& req) { return ws_accept(req, ep); })
        .hidden();
}
}  // namespace

// WebSocket endpoints and static files are left out of the OpenAPI document (hidden).
App& App::ws(std::string_view p, WsHandler handler, WsOptions options) {
    auto ep = std::make_shared<const WsEndpoint>(
        WsEndpoint{std::move(handler), {}, std::move(options), std::string(p)});
    ws_routes(*this, p, std::move(ep));
    return *this;
}

App& App::ws(std::string_view p, WsSessionHandler handler, WsOptions options) {
    auto ep = std::make_shared<const WsEndpoint>(
        WsEndpoint{{}, std::move(handler), std::move(options), std::string(p)});
    ws_routes(*this, p, std::move(ep));
    return *this;
}

Group& Group::ws(std::string_view p, WsHandler handler, WsOptions options) {
    auto ep = std::make_shared<const WsEndpoint>(
        WsEndpoint{std::move(handler), {}, std::move(options), full_pattern(p)});
    ws_routes(*this, p, std::move(ep));
    return *this;
}

Group& Group::ws(std::string_view p, WsSessionHandler handler, WsOptions options) {
    auto ep = std::make_shared<const WsEndpoint>(
        WsEndpoint{{}, std::move(handler), std::move(options), full_pattern(p)});
    ws_routes(*this, p, std::move(ep));
    return *this;
}

namespace {
// A mount's error answer (400, 403, 404, 500: a reason phrase as text) made bare, so that the
// App gives it its error body like any other (App::error_pages).
Response bare_error(Response r) {
    if (static_cast<int>(r.status()) >= 400 && !r.file_body()) [[unlikely]]
        return Response(r.status());
    return r;
}

// Registers the mount (which redirects to its slash form) and everything below it.
template <class Target>
void add_static(Target& t, std::string prefix, std::string_view mount, const std::string& dir,
                StaticOptions options) {
    std::string full = prefix + std::string(mount);
    auto sf = std::make_shared<const files::StaticFiles>(full, dir, std::move(options));
    std::string local(mount);
    while (!local.empty() && local.back() == '/') local.pop_back();
    // The part below the mount is what the router's wildcard matched (the prefix may have
    // parameters of its own, so its length says nothing).
    if (!sf->mount().empty())
        t.get(local, [sf](const Request& req) { return bare_error(sf->serve(req, {})); }).hidden();
    t.get(local + "/{*vela_static_path}", [sf](const Request& req) {
         thread_local std::string rest;
         rest.assign("/").append(req.param("vela_static_path"));
         return bare_error(sf->serve(req, rest));
     }).hidden();
}
}  // namespace

App& App::static_files(std::string_view mount, const std::string& dir, StaticOptions options) {
    add_static(*this, "", mount, dir, std::move(options));
    return *this;
}

Group& Group::static_files(std::string_view mount, const std::string& dir, StaticOptions options) {
    add_static(*this, prefix(), mount, dir, std::move(options));
    return *this;
}

openapi::RouteDoc& App::add_route(Method m, std::string_view pattern, HandlerFn h,
                                  detail::GroupData* g, openapi::Describe describe,
                                  bool streams_request_body) {
    check_not_started("routes");
    auto id = static_cast<std::int32_t>(endpoints_.size());
    router_.add(m, pattern, id);
    endpoints_.push_back(detail::Endpoint{std::move(h), g, this, {}, true, streams_request_body});
    openapi::RouteDoc& doc = route_docs_.emplace_back();
    doc.method = m;
    doc.pattern = pattern;
    doc.describe = describe;
    return doc;
}

// Resolves each route's middleware chain: global first, then outer to inner groups.
void App::freeze() {
    if (frozen_) return;
    frozen_ = true;
    // Each group's fallback: its chain around the router's own answer (404, 405, OPTIONS).
    for (detail::GroupData& g : groups_) {
        HandlerFn h;
        h.sync = [this](Request& req) { return answer_unrouted(req); };
        endpoints_.push_back(detail::Endpoint{std::move(h), &g, this, {}, true});
        g.fallback = &endpoints_.back();
    }
    for (detail::Endpoint& ep : endpoints_) {
        std::vector<detail::GroupData*> path;
        for (detail::GroupData* g = ep.group; g; g = g->parent) path.insert(path.begin(), g);
        ep.chain.clear();
        ep.app = this;
        ep.all_sync = !ep.handler.is_async();
        for (detail::GroupData* g : path) {
            for (const Middleware& mw : g->middleware) {
                ep.chain.push_back(&mw);
                if (mw.kind == Middleware::Kind::onion) ep.all_sync = false;
            }
        }
    }
}

Response App::answer_unrouted(const Request& req, const Router::Match& m) const {
    if (req.method() == Method::other)
        return detail::error_answer(*this, Status::NotImplemented, &req);
    if (req.method() == Method::OPTIONS) {
        std::uint16_t mask = req.path() == "*" ? router_.all_methods() : m.allowed;
        if (mask || req.path() == "*") {
            Response r(Status::NoContent);
            r.add_header("Allow", Router::allow_header(mask));
            return r;
        }
    }
    if (m.kind == Router::Match::Kind::method_not_allowed) {
        Response r(Status::MethodNotAllowed);
        r.add_header("Allow", Router::allow_header(m.allowed));
        fill_error_body(&req, r, {});
        return r;
    }
    return detail::error_answer(*this, Status::NotFound, &req);
}

// The handler of the fallback endpoints: the router's answer, matched again (rare path).
Response App::answer_unrouted(Request& req) const {
    const Router::Match m = router_.match(req.method(), req.path(), req);
    return answer_unrouted(req, m);
}

// The endpoint whose chain answers an unrouted request: for a path that has routes for other
// methods, the fallback of one of those routes' group (so its CORS middleware sees the
// preflight); else the global one. Null when no middleware would run.
const detail::Endpoint* App::fallback_for(Request& req, const Router::Match& m) const {
    const detail::GroupData* g = root_;
    if (m.kind == Router::Match::Kind::method_not_allowed && m.allowed) {
        for (unsigned i = 0; i < kMethodCount; ++i) {
            if (!(m.allowed & (1u << i))) continue;
            const Router::Match other = router_.match(static_cast<Method>(i), req.path(), req);
            if (other.kind == Router::Match::Kind::found)
                g = endpoints_[static_cast<std::size_t>(other.endpoint)].group;
            break;
        }
        req.clear_params();
    }
    const detail::Endpoint* ep = g ? g->fallback : nullptr;
    return ep && !ep->chain.empty() ? ep : nullptr;
}

App& App::error_pages(ErrorPages pages) {
    check_not_started("error pages");
    error_pages_ = std::move(pages);
    return *this;
}

// Gives a bare error response its body: the user's renderer, else the chosen format.
void App::fill_error_body(const Request* req, Response& r, std::string_view detail) const {
    if (error_pages_.render) {
        try {
            error_pages_.render(req, r, detail);
        } catch (const std::exception& e) {
            log::error("error page renderer for {} threw: {}", static_cast<int>(r.status()),
                       e.what());
        } catch (...) {
            log::error("error page renderer for {} threw", static_cast<int>(r.status()));
        }
        if (!r.is_bare()) return;
    }
    const Status s = r.status();
    const std::string_view reason = reason_phrase(s);
    switch (error_pages_.format) {
        case ErrorFormat::text: {
            std::string body(reason);
            if (!detail.empty()) body.append(": ").append(detail);
            r.set_body(std::move(body));
            r.set_content_type(mime::text);
            break;
        }
        case ErrorFormat::problem_json: {
            Response p = problem_response(s, detail);
            r.set_body(std::move(p.mutable_body()));
            r.set_content_type(mime::problem_json);
            break;
        }
        case ErrorFormat::html: {
            const std::string title =
                std::to_string(static_cast<int>(s)) + " " + std::string(reason);
            std::string body = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" +
                               html_escape(title) + "</title></head><body><h1>" +
                               html_escape(title) + "</h1>";
            if (!detail.empty()) body += "<p>" + html_escape(detail) + "</p>";
            body += "</body></html>\n";
            r.set_body(std::move(body));
            r.set_content_type(mime::html);
            break;
        }
    }
}

// An error a handler returned: a bare one gets the app's error body; so does the files
// module's own answer for a file that cannot be sent (Response::file / send_file: the status's
// reason phrase as text/plain), unless that is already what the app's format gives.
void App::complete_error_body(const Request* req, Response& r) const {
    if (r.is_bare()) return fill_error_body(req, r, {});
    if (!error_pages_.render && error_pages_.format == ErrorFormat::text) return;
    if (r.file_body() || r.streaming() || r.has_upgrade() || r.content_type() != mime::text ||
        r.body() != reason_phrase(r.status()))
        return;
    Response bare(r.status());
    r.for_each_header(
        [&](std::string_view name, std::string_view value) { bare.add_header(name, value); });
    if (r.wants_close()) bare.close_connection();
    r = std::move(bare);
    fill_error_body(req, r, {});
}

namespace detail {

Response error_answer(const App& app, Status s, const Request* req, std::string_view detail) {
    Response r(s);
    app.fill_error_body(req, r, detail);
    return r;
}

// An exception that escaped a handler or a middleware: HttpError answers with its status,
// anything else is a logged 500 (its message shown only with debug_errors).
Response exception_answer(const App& app, std::exception_ptr e, const Request& req) {
    std::string what = "non-standard exception";
    try {
        std::rethrow_exception(e);
    } catch (const HttpError& h) {
        return error_answer(app, h.status(), &req, h.what());
    } catch (const std::exception& ex) {
        what = ex.what();
    } catch (...) {
    }
    // The target as received: the decoded path may hold CR/LF (%0d%0a) and fake log lines.
    const std::string_view id = req.attribute(kRequestIdAttribute).value_or(std::string_view());
    if (log::format() == log::Format::json)  // the request's parts as members of the line
        log::write(log::Level::error, "unhandled exception",
                   {{"method", req.method_name()},
                    {"target", req.target()},
                    {"request_id", id.empty() ? log::FieldValue(nullptr) : log::FieldValue(id)},
                    {"error", what}});
    else if (id.empty())
        log::error("{} {}: unhandled exception: {}", req.method_name(), req.target(), what);
    else
        log::error("{} {} (request {}): unhandled exception: {}", req.method_name(), req.target(),
                   id, what);
    return error_answer(app, Status::InternalServerError, &req,
                        app.options_.debug_errors ? std::string_view(what) : std::string_view());
}

HttpHandler& handler(App& app) {
    app.prepare();
    return *app.handler_;
}

const std::deque<openapi::RouteDoc>& route_docs(const App& app) noexcept { return app.route_docs_; }

void replace_listeners(App& app, const std::vector<Listener>& listeners, const char* what) {
    app.check_not_started(what);
    app.listen_.clear();
    app.listen_tls_.clear();
    app.listen_h2c_.clear();
    app.listen_error_.clear();
    for (const Listener& l : listeners) {
        app.listen_.push_back(l.endpoint);
        app.listen_tls_.push_back(l.tls);
        app.listen_h2c_.push_back(false);
    }
}

void observe(App& app, Observer& o, const char* what) {
    app.check_not_started(what);
    if (app.observer_ && app.observer_ != &o)
        throw std::logic_error(std::string(what) + ": the app already has an observer");
    app.observer_ = &o;
}

}  // namespace detail

bool App::streams_body(Request& req) {
    Router::Match m = router_.match(req.method(), req.path(), req);
    return m.kind == Router::Match::Kind::found &&
           endpoints_[static_cast<std::size_t>(m.endpoint)].streams_request_body;
}

namespace {
// dispatch_with's observer when none is installed (or the request is not observed): nothing,
// compiled away.
struct Unobserved {
    void matched(const Request&, std::int32_t) noexcept {}
    void answered(const Request&, const Response&) noexcept {}
    void left() noexcept {}
};

// With an observer: its hooks, and what it keeps of the request between them.
struct Observed {
    detail::Observer* observer;
    detail::Observation o{};

    void matched(const Request& req, std::int32_t route) noexcept {
        observer->on_request(o, req, route);
    }
    void answered(const Request& req, const Response& r) noexcept {
        observer->on_response(o, req, r);
    }
    void left() noexcept { observer->on_suspend(o); }
};
}  // namespace

bool App::dispatch(Request& req, Response& out, ResponseSink& sink) {
    if (observer_) [[unlikely]]
        return dispatch_with(req, out, sink, Observed{observer_});
    return dispatch_with(req, out, sink, Unobserved{});
}

template <class Watch>
bool App::dispatch_with(Request& req, Response& out, ResponseSink& sink, Watch obs) {
    Router::Match m = router_.match(req.method(), req.path(), req);
    const detail::Endpoint* ep;
    if (m.kind == Router::Match::Kind::found) [[likely]] {
        ep = &endpoints_[static_cast<std::size_t>(m.endpoint)];
        obs.matched(req, m.endpoint);
    } else {
        obs.matched(req, -1);
        ep = fallback_for(req, m);
        if (!ep) {
            out = answer_unrouted(req, m);
            obs.answered(req, out);
            return true;
        }
    }
    if (ep->all_sync) {
        try {
            detail::run_sync(*ep, req, out);
        } catch (...) {  // not expected: run_sync answers what its steps throw
            out = detail::exception_answer(*this, std::current_exception(), req);
        }
        obs.answered(req, out);
        return true;
    }
    std::coroutine_handle<> work;
    if constexpr (std::is_same_v<Watch, Unobserved>) {
        // (The answer is completed where it lies: a Response move is not free.)
        work = vela::start(detail::run_chain(*ep, 0, req),
                           [this, &sink, &req](std::optional<Response>&& v, std::exception_ptr e) {
                               if (e) v.emplace(detail::exception_answer(*this, e, req));
                               detail::complete_error(*this, req, *v);
                               sink.complete(std::move(*v));
                           });
    } else {
        work = vela::start(
            detail::run_chain(*ep, 0, req),
            [this, &sink, &req, obs](std::optional<Response>&& v, std::exception_ptr e) mutable {
                if (e) v.emplace(detail::exception_answer(*this, e, req));
                detail::complete_error(*this, req, *v);
                obs.answered(req, *v);
                sink.complete(std::move(*v));
            });
        obs.left();  // suspended: the loop is free (what resumes it later is not watched)
    }
    sink.pending(work);
    return false;
}

App& App::listen(std::uint16_t port) {
    listen_.push_back(net::Endpoint::any(port));
    listen_tls_.push_back(nullptr);
    listen_h2c_.push_back(false);
    return *this;
}

App& App::listen_h2c(std::uint16_t port) {
    listen(port);
    listen_h2c_.back() = true;
    return *this;
}

App& App::listen_h2c(std::string_view endpoint) {
    const std::size_t before = listen_.size();
    listen(endpoint);
    if (listen_.size() > before) listen_h2c_.back() = true;
    return *this;
}

App& App::listen_tls(std::uint16_t port, TlsOptions options) {
    listen(port);
    listen_tls_.back() = std::make_shared<const TlsOptions>(std::move(options));
    return *this;
}

App& App::listen_tls(std::string_view endpoint, TlsOptions options) {
    const std::size_t before = listen_.size();
    listen(endpoint);
    if (listen_.size() > before)
        listen_tls_.back() = std::make_shared<const TlsOptions>(std::move(options));
    return *this;
}

void App::reload_tls() {
    std::lock_guard lock(server_mu_);
    if (server_) server_->reload_tls();
}

// A malformed spec is kept until start()/run(), which report it like any other listener
// that cannot be opened, rather than thrown from the middle of a chained listen().run().
App& App::listen(std::string_view endpoint) {
    try {
        listen_.push_back(net::Endpoint::parse(endpoint));
        listen_tls_.push_back(nullptr);
        listen_h2c_.push_back(false);
    } catch (const std::invalid_argument& e) {
        if (listen_error_.empty())
            listen_error_ = "cannot listen on '" + std::string(endpoint) + "': " + e.what();
    }
    return *this;
}

// What starting does before a server exists: final routes, and the app's error pages for the
// errors the server answers itself.
void App::prepare() {
    freeze();
    // Extensions build what depends on every route before any port opens, so a mistake (a
    // repeated operationId) stops the start instead of a later request.
    if (!prepared_) {  // the routes are final: once is enough, unless an extension threw
        for (const std::unique_ptr<detail::Extension>& e : extensions_) e->prepare(*this);
        prepared_ = true;
    }
    if (error_pages_.render || error_pages_.format != ErrorFormat::text)
        options_.error_body = [this](const Request* req, Response& r) {
            fill_error_body(req, r, {});
        };
}

// Creates the server and publishes it to stop(), which may be racing on another thread.
// The mutex keeps a server alive while stop() uses it; the replaced one (a restart) is
// destroyed outside the lock.
void App::make_server() {
    if (!listen_error_.empty())
        throw net::ListenError(std::make_error_code(std::errc::invalid_argument), listen_error_);
    // Certificates first: a bad file is reported before any port is opened.
    std::vector<std::shared_ptr<tls::Context>> contexts;
    for (const auto& t : listen_tls_) contexts.push_back(t ? tls::Context::create(*t) : nullptr);
    prepare();
    auto fresh = std::make_unique<Server>(*handler_, options_);
    for (std::size_t i = 0; i < listen_.size(); ++i) {
        if (listen_h2c_[i])
            fresh->listen_h2c(listen_[i]);
        else
            fresh->listen(listen_[i], contexts[i]);
    }
    std::unique_ptr<Server> old;
    {
        std::lock_guard lock(server_mu_);
        old = std::exchange(server_, std::move(fresh));
        if (stop_requested_) server_->stop();  // Server::stop() before run() is kept
    }
}

// The extensions' last word before the server is made: the thread count they choose when the
// caller left it to them.
unsigned App::start_extensions(unsigned threads) {
    for (const std::unique_ptr<detail::Extension>& e : extensions_) e->starting(*this, threads);
    return threads;
}

int App::run(unsigned threads) {
    int rc = 1;
    bool extensions_ready = false;
    try {
        threads = start_extensions(threads);
        extensions_ready = true;
    } catch (const std::exception& e) {  // a configuration table nobody read, ...
        log::error("{}", e.what());
    }
    try {
        if (extensions_ready) {
            make_server();
            rc = server_->run(threads);
        }
    } catch (const net::ListenError& e) {  // a port in use, a bad path, ...: one line, no abort
        log::error("{}", e.what());
    } catch (const TlsError& e) {  // a missing certificate, a key that does not match, ...
        log::error("{}", e.what());
    } catch (const std::logic_error& e) {  // a bad option, a repeated operationId, ...
        log::error("{}", e.what());
    }
    std::lock_guard lock(server_mu_);
    stop_requested_ = false;  // a later run() starts afresh
    return rc;
}

void App::start(unsigned threads) {
    threads = start_extensions(threads);
    make_server();
    server_->start(threads);
}

void App::stop() {
    std::lock_guard lock(server_mu_);
    stop_requested_ = true;
    if (server_) server_->stop();
}

int App::wait() {
    const int rc = server_ ? server_->wait() : 0;
    std::lock_guard lock(server_mu_);
    stop_requested_ = false;
    return rc;
}

bool App::stopping() const noexcept { return server_ && server_->stopping(); }

std::uint16_t App::port() const noexcept { return server_ ? server_->port() : 0; }

std::uint16_t App::port(std::size_t index) const noexcept {
    return server_ ? server_->port(index) : 0;
}

}  // namespace vela
