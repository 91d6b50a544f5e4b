#pragma once
// App: routes, middleware and the server, wired together.
//
//     vela::App app;
//     app.get("/", [] { return "Hello, World!"; });
//     app.get("/users/{id:int}", [](vela::Request& r) { return std::string(r.param("id")); });
//     auto api = app.group("/api").use(my_auth);
//     api.get("/slow", [](vela::Request&) -> vela::Task<vela::Response> {
//         co_await vela::sleep(10ms);
//         co_return "done";
//     });
//     return app.listen(8080).run();   // one loop per core; SIGTERM drains gracefully
//
// Routes and middleware are registered before run(); afterwards the App is read-only and
// shared by all loops. Requests are answered 404 when no route matches, 405 with an Allow
// header when the path exists for other methods, 501 for unknown methods; HEAD is served by
// GET routes and OPTIONS is answered automatically. An exception escaping a handler or a
// middleware becomes a 500 (its message is only shown with debug_errors) and is logged.

#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "vela/files/static_files.hpp"
#include "vela/server/server.hpp"
#include "vela/server/websocket.hpp"
#include "vela/tls/context.hpp"
#include "vela/web/config.hpp"
#include "vela/web/handler_traits.hpp"
#include "vela/web/health.hpp"
#include "vela/web/metrics.hpp"
#include "vela/web/middleware.hpp"
#include "vela/web/openapi_ui.hpp"
#include "vela/web/route_doc.hpp"
#include "vela/web/router.hpp"

namespace vela {

class App;

/// The body format of the error answers the framework writes (404, 405, 413, 500...) and of
/// error statuses a handler returns bare (`return vela::Status::NotFound;`).
enum class ErrorFormat : std::uint8_t {
    text,          ///< the reason phrase as text/plain ("Not Found"), the default
    problem_json,  ///< RFC 9457 application/problem+json {"type","title","status"[,"detail"]}
    html,          ///< a minimal text/html page with the status and reason phrase
};

/// How error answers look (App::error_pages).
struct ErrorPages {
    /// The built-in format.
    ErrorFormat format = ErrorFormat::text;
    /// When set, writes every error answer's body instead: called with the request (nullptr
    /// when the server could not read one), a Response holding the status and headers
    /// (Allow, Retry-After...) and the detail meant for the client (an HttpError's message,
    /// often empty); set its body and Content-Type. Left bare, `format` applies.
    std::function<void(const Request*, Response&, std::string_view detail)> render{};
};

namespace detail {

struct Endpoint;
class AppMetrics;

struct GroupData {
    std::string prefix;
    GroupData* parent = nullptr;
    std::vector<Middleware> middleware;
    Endpoint* fallback = nullptr;  // answers unrouted requests through this group's chain
};

struct Endpoint {
    HandlerFn handler;
    GroupData* group = nullptr;
    const App* app = nullptr;              // set when the app starts
    std::vector<const Middleware*> chain;  // resolved when the app starts
    bool all_sync = true;
    bool stream_body = false;  // reads its request body as it arrives (App::streaming)
};

template <class F>
Middleware make_middleware(F&& f) {
    Middleware m{};
    if constexpr (std::is_convertible_v<F&&, Hooks>) {
        Hooks h = std::forward<F>(f);
        m.kind = Middleware::Kind::hooks;
        m.before = std::move(h.before);
        m.after = std::move(h.after);
    } else if constexpr (std::is_invocable_v<F&, Request&, Next>) {
        m.kind = Middleware::Kind::onion;
        m.onion = std::forward<F>(f);
    } else if constexpr (std::is_invocable_v<F&, Request&, Response&>) {
        m.kind = Middleware::Kind::after;
        m.after = std::forward<F>(f);
    } else {
        static_assert(std::is_invocable_v<F&, Request&>,
                      "middleware must take (Request&, Next), (Request&) or (Request&, Response&)");
        m.kind = Middleware::Kind::before;
        if constexpr (std::is_void_v<std::invoke_result_t<F&, Request&>>) {
            m.before = [fn = std::forward<F>(f)](Request& r) mutable -> std::optional<Response> {
                fn(r);
                return std::nullopt;
            };
        } else {
            m.before = std::forward<F>(f);
        }
    }
    return m;
}

}  // namespace detail

/// A set of routes under a common prefix with its own middleware. A cheap handle: copies
/// refer to the same group.
class Group {
  public:
    /// Adds middleware (onion, before or after; see middleware.hpp) to this group, before run().
    template <class F>
    Group& use(F&& f);
    /// A nested group under this one.
    Group group(std::string_view prefix);
    /// Registers a handler for `method` at prefix + `pattern`.
    template <class F>
    RouteRef<Group> route(Method method, std::string_view pattern, F&& f);
    /// Registers a GET handler at prefix + `p`.
    template <class F>
    RouteRef<Group> get(std::string_view p, F&& f) {
        return route(Method::GET, p, std::forward<F>(f));
    }
    /// Registers a POST handler at prefix + `p`.
    template <class F>
    RouteRef<Group> post(std::string_view p, F&& f) {
        return route(Method::POST, p, std::forward<F>(f));
    }
    /// Registers a PUT handler at prefix + `p`.
    template <class F>
    RouteRef<Group> put(std::string_view p, F&& f) {
        return route(Method::PUT, p, std::forward<F>(f));
    }
    /// Registers a PATCH handler at prefix + `p`.
    template <class F>
    RouteRef<Group> patch(std::string_view p, F&& f) {
        return route(Method::PATCH, p, std::forward<F>(f));
    }
    /// Registers a DELETE handler at prefix + `p`.
    template <class F>
    RouteRef<Group> del(std::string_view p, F&& f) {
        return route(Method::DELETE, p, std::forward<F>(f));
    }
    /// Registers an OPTIONS handler at prefix + `p` (instead of the automatic answer).
    template <class F>
    RouteRef<Group> options(std::string_view p, F&& f) {
        return route(Method::OPTIONS, p, std::forward<F>(f));
    }
    /// Registers a HEAD handler at prefix + `p` (GET routes already serve HEAD).
    template <class F>
    RouteRef<Group> head(std::string_view p, F&& f) {
        return route(Method::HEAD, p, std::forward<F>(f));
    }
    /// Registers a WebSocket endpoint at prefix + `p` (see App::ws).
    Group& ws(std::string_view p, WsHandler handler, WsOptions options = {});
    /// Serves the directory `dir` below `mount` (relative to the group; see App::static_files).
    Group& static_files(std::string_view mount, const std::string& dir, StaticOptions options = {});

  private:
    friend class App;
    Group(App* app, detail::GroupData* data) noexcept : app_(app), data_(data) {}
    App* app_;
    detail::GroupData* data_;
};

/// A web application: routes, middleware and the server that runs them (see above).
class App {
  public:
    /// An app without routes, with default options.
    App();
    /// Stops a started app and waits for it to finish.
    ~App();
    /// Not copyable (groups and routes refer to it).
    App(const App&) = delete;
    App& operator=(const App&) = delete;

    /// Adds global middleware (onion, before or after; see middleware.hpp), before run().
    template <class F>
    App& use(F&& f) {
        check_not_started("middleware");
        root_->middleware.push_back(detail::make_middleware(std::forward<F>(f)));
        return *this;
    }
    /// A group of routes under `prefix` ("/api").
    Group group(std::string_view prefix);

    /// Registers a handler for `method` at `pattern` (see router.hpp for the syntax).
    template <class F>
    RouteRef<App> route(Method method, std::string_view pattern, F&& f) {
        return RouteRef<App>(this, &add_route(method, pattern, make_handler(std::forward<F>(f)),
                                              root_, openapi::describer<F>()));
    }
    /// Registers a handler that reads its request body as it arrives
    /// (`co_await req.body_stream().read()`, see body_reader.hpp): it runs as soon as the
    /// head is in, and bodies up to limits.max_streamed_body pass in bounded memory.
    template <class F>
    RouteRef<App> streaming(Method method, std::string_view pattern, F&& f) {
        openapi::RouteDoc& doc = add_route(method, pattern, make_handler(std::forward<F>(f)), root_,
                                           openapi::describer<F>());
        endpoints_.back().stream_body = true;
        return RouteRef<App>(this, &doc);
    }
    /// Registers a GET handler at `p`.
    template <class F>
    RouteRef<App> get(std::string_view p, F&& f) {
        return route(Method::GET, p, std::forward<F>(f));
    }
    /// Registers a POST handler at `p`.
    template <class F>
    RouteRef<App> post(std::string_view p, F&& f) {
        return route(Method::POST, p, std::forward<F>(f));
    }
    /// Registers a PUT handler at `p`.
    template <class F>
    RouteRef<App> put(std::string_view p, F&& f) {
        return route(Method::PUT, p, std::forward<F>(f));
    }
    /// Registers a PATCH handler at `p`.
    template <class F>
    RouteRef<App> patch(std::string_view p, F&& f) {
        return route(Method::PATCH, p, std::forward<F>(f));
    }
    /// Registers a DELETE handler at `p`.
    template <class F>
    RouteRef<App> del(std::string_view p, F&& f) {
        return route(Method::DELETE, p, std::forward<F>(f));
    }
    /// Registers an OPTIONS handler at `p` (instead of the automatic answer).
    template <class F>
    RouteRef<App> options(std::string_view p, F&& f) {
        return route(Method::OPTIONS, p, std::forward<F>(f));
    }
    /// Registers a HEAD handler at `p` (GET routes already serve HEAD).
    template <class F>
    RouteRef<App> head(std::string_view p, F&& f) {
        return route(Method::HEAD, p, std::forward<F>(f));
    }

    /// Registers a WebSocket endpoint at `p`: a GET route whose middleware runs first (and
    /// may refuse with an ordinary response); a valid upgrade (RFC 6455) becomes a session
    /// that runs `handler` (see websocket.hpp), anything else gets 400/403/426.
    App& ws(std::string_view p, WsHandler handler, WsOptions options = {});

    /// Serves the files of the directory `dir` below `mount` ("/assets"; "/" for the whole
    /// site) for GET and HEAD: safe paths, index files, MIME types, ETag/Last-Modified with
    /// 304/412, ranges, precompressed siblings, sendfile (vela/files/static_files.hpp). Several
    /// mounts may coexist; routes registered elsewhere win over a mount's wildcard. Throws
    /// std::runtime_error (one line) when `dir` cannot be opened.
    App& static_files(std::string_view mount, const std::string& dir, StaticOptions options = {});

    /// Chooses how error answers look: the framework's own (404, 405, 501, 500, and the
    /// server's 400/408/413/431...), handlers' bare error statuses and HttpError
    /// (vela/web/http_error.hpp) all get the same body. Before run().
    App& error_pages(ErrorPages pages);
    /// The error answer this app gives for status `s` (with `detail` for the client, may be
    /// empty), as its error_pages say; `req` may be nullptr.
    Response error_answer(Status s, const Request* req, std::string_view detail = {}) const;
    /// The answer to an exception that escaped a handler: an HttpError's status and detail,
    /// anything else a logged 500 (its message shown only with debug_errors). Middleware
    /// sees this answer (an access log logs it, CORS headers go on it).
    Response exception_answer(std::exception_ptr e, const Request& req) const;
    /// Gives `r` the error body of its status when it is an error (>= 400) without a body
    /// (what `return vela::Status::NotFound;` makes).
    void complete_error(const Request& req, Response& r) const {
        if (static_cast<int>(r.status()) >= 400 && r.is_bare()) [[unlikely]]
            fill_error_body(&req, r, {});
    }

    /// Makes the routes and middleware final (as start() does) and returns the handler the
    /// server calls for each request (vela::testing::Client calls it without a server).
    HttpHandler& handler();

    /// What each route says for the OpenAPI document, in registration order (never read
    /// while serving).
    const std::deque<openapi::RouteDoc>& route_docs() const noexcept { return route_docs_; }
    /// The error answers' format and renderer (error_pages()).
    const ErrorPages& error_pages() const noexcept { return error_pages_; }
    /// Serves the OpenAPI 3.1 document of this app's routes at info.path (/openapi.json),
    /// built once when the app starts (a repeated operationId stops the start)
    /// (vela/web/openapi.hpp). Before run().
    App& openapi(openapi::Info info = {});
    /// Serves Swagger UI at `path` for the document at options.spec_url (/openapi.json; see
    /// vela/web/openapi_ui.hpp). Before run(). Throws std::runtime_error (one line saying what
    /// to run) when the Swagger UI files are missing.
    App& openapi_ui(std::string_view path = "/docs", OpenApiUiOptions options = {});

    /// Serves metrics in the Prometheus text format at options.path (GET; vela/web/metrics.hpp
    /// lists them): requests per route, latency histograms, bytes, connections, loop lag,
    /// pools. Off unless called; with it off the request path is unchanged. Before run().
    App& metrics(MetricsOptions options = {});
    /// Logs (log::warn, once) every handler that holds its loop longer than
    /// options.threshold, with its route template, method and the time held. Before run().
    App& stall_watchdog(WatchdogOptions options = {});
    /// The metrics text now (what GET /metrics answers); empty when metrics are off.
    std::string metrics_text() const;

    /// Serves liveness at options.live_path (/health) and readiness at options.ready_path
    /// (/ready), which runs the ready_check()s added before or after (vela/web/health.hpp).
    /// Once, before run().
    App& health(HealthOptions options = {});
    /// Adds a readiness check that /ready runs (timeout 0: the health options' timeout);
    /// health() serves it. Before run().
    App& ready_check(std::string name, ReadyCheck check, std::chrono::milliseconds timeout = {});
    /// True from the moment a graceful stop begins (stop(), SIGINT/SIGTERM): /ready says 503.
    bool stopping() const noexcept;

    /// Server settings (limits, timeouts, connection cap); change before run()/start().
    ServerOptions& options() noexcept { return options_; }
    /// Listens on all IPv4 interfaces at `port`.
    App& listen(std::uint16_t port);
    /// Listens on an endpoint ("127.0.0.1:8080", "[::1]:8080", "unix:/run/app.sock"); a
    /// malformed one is reported by run()/start(), so `app.listen(spec).run()` fails politely.
    App& listen(std::string_view endpoint);
    /// Listens with TLS on all IPv4 interfaces at `port` (HTTP/2 offered through ALPN unless
    /// options.http2 is false). Certificates are loaded by run()/start(), before any port opens.
    App& listen_tls(std::uint16_t port, TlsOptions options);
    /// Listens with TLS on an endpoint ("127.0.0.1:8443", "[::1]:8443").
    App& listen_tls(std::string_view endpoint, TlsOptions options);
    /// Re-reads every TLS listener's certificates and keys (SIGHUP does the same while run()
    /// runs): new handshakes use them, open connections go on. Throws TlsError and keeps the
    /// old ones when a file is bad. Thread-safe.
    void reload_tls();
    /// Reads the TOML file `path` with the VELA_* environment variables over it and applies it
    /// (see apply()). Throws ConfigError (one line: file, line, key); before run()/start().
    App& load_config(const std::string& path);
    /// Applies a configuration (vela/web/config.hpp): its server, limits, timeouts and http2
    /// keys over options(), its listeners instead of earlier listen() calls (when it names
    /// any), server.threads for run(0)/start(0), the log level. Keeps it for config<T>().
    App& apply(Config config);
    /// The table `section` of the applied configuration read into T, with VELA_<SECTION>_...
    /// variables over it (without one: the variables alone). Absent members keep their
    /// defaults, VELA_REQUIRED ones must be present, unknown keys are errors: throws
    /// ConfigError. Tables nobody reads make run()/start() fail, so a misspelt one is caught.
    template <json::Reflected T>
    T config(std::string_view section) {
        return claim_section(section).template section<T>(section);
    }
    /// The applied configuration; nullptr before load_config()/apply().
    const Config* config() const noexcept { return config_.get(); }
    /// Serves with `threads` loops (0: one per core) until SIGINT/SIGTERM; returns 0 after a
    /// graceful shutdown. When a listener cannot be opened or a certificate cannot be loaded
    /// it logs the one-line reason (log::error) and returns 1.
    int run(unsigned threads = 0);
    /// Starts serving in background threads and returns (tests, embedding). Throws
    /// net::ListenError or TlsError (what(): one line) when a listener cannot be opened.
    void start(unsigned threads = 0);
    /// Graceful stop of a started or running app. Thread-safe; if it comes before run() or
    /// start() has the server up, the app stops as soon as it is.
    void stop();
    /// Waits for a started app to finish.
    int wait();
    /// The bound TCP port (after start/run), useful with port 0.
    std::uint16_t port() const noexcept;
    /// The bound port of the `index`-th listen()/listen_tls() call, in call order (after
    /// start/run); 0 for a Unix socket or an index out of range.
    std::uint16_t port(std::size_t index) const noexcept;

  private:
    friend class Group;
    class Handler;
    openapi::RouteDoc& add_route(Method m, std::string_view pattern, HandlerFn h,
                                 detail::GroupData* g, openapi::Describe describe);
    void freeze();
    void prepare();  // freeze() and the server-side error body
    detail::GroupData* new_group(std::string prefix, detail::GroupData* parent);
    // Throws std::logic_error once the app has started: the chains built at start hold
    // pointers into the middleware lists, and the loops read them without locks.
    void check_not_started(const char* what) const;
    void make_server();
    bool dispatch(Request& req, Response& out, ResponseSink& sink);
    template <class Observer>
    bool dispatch_with(Request& req, Response& out, ResponseSink& sink, Observer obs);
    bool dispatch_observed(Request& req, Response& out, ResponseSink& sink);
    bool streams_body(Request& req);
    Response answer_unrouted(const Request& req, const Router::Match& m) const;
    Response answer_unrouted(Request& req) const;
    const detail::Endpoint* fallback_for(Request& req, const Router::Match& m) const;
    void fill_error_body(const Request* req, Response& r, std::string_view detail) const;

    ServerOptions options_;
    Router router_;
    std::deque<detail::Endpoint> endpoints_;
    std::deque<detail::GroupData> groups_;
    detail::GroupData* root_;
    std::vector<net::Endpoint> listen_;
    std::vector<std::shared_ptr<const TlsOptions>> listen_tls_;  // per listen_ entry; null: plain
    std::string listen_error_;  // the first malformed listen() spec, thrown by start()/run()
    std::unique_ptr<Handler> handler_;
    std::unique_ptr<Server> server_;
    std::mutex server_mu_;         // guards replacing server_ against stop() on other threads
    bool stop_requested_ = false;  // under server_mu_
    bool frozen_ = false;
    ErrorPages error_pages_;
    // The applied configuration, the user sections read from it, and server.threads.
    const Config& claim_section(std::string_view section);
    void check_sections() const;
    std::unique_ptr<Config> config_;
    std::vector<std::string> claimed_;
    unsigned threads_ = 0;
    std::optional<Health> health_;  // health() / ready_check()
    bool health_routed_ = false;
    std::unique_ptr<detail::AppMetrics> metrics_;  // metrics or the watchdog is on
    bool observed_ = false;                        // requests go through dispatch_observed
    std::deque<openapi::RouteDoc> route_docs_;     // per route, in registration order
    std::function<void()> openapi_build_;          // openapi(): builds the document at prepare()
};

template <class F>
Group& Group::use(F&& f) {
    app_->check_not_started("middleware");
    data_->middleware.push_back(detail::make_middleware(std::forward<F>(f)));
    return *this;
}

template <class F>
RouteRef<Group> Group::route(Method method, std::string_view pattern, F&& f) {
    std::string full;
    for (detail::GroupData* g = data_; g; g = g->parent) full.insert(0, g->prefix);
    full += pattern;
    if (full.size() > 1 && full.back() == '/' && pattern.empty()) full.pop_back();
    return RouteRef<Group>(*this, &app_->add_route(method, full, make_handler(std::forward<F>(f)),
                                                   data_, openapi::describer<F>()));
}

}  // namespace vela
