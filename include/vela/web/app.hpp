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
//
// App is routing and lifecycle. Configuration, metrics, health endpoints and the OpenAPI
// document are installed on it by free functions of the ops module (vela::load_config(app, path)
// in vela/ops/config.hpp, vela::metrics(app) in metrics.hpp, vela::health(app) in health.hpp,
// vela::openapi_spec(app) in openapi.hpp, vela::openapi_ui(app) in openapi_ui.hpp), through
// two extension points: detail::Extension
// (state the App owns, told when the app prepares to serve) and detail::Observer (sees every
// request dispatch handles; with none installed a request pays one predictable branch).

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
#include "vela/net/socket.hpp"
#include "vela/server/server.hpp"
#include "vela/server/websocket.hpp"
#include "vela/tls/context.hpp"
#include "vela/web/handler_traits.hpp"
#include "vela/web/middleware.hpp"
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

/// State a free function installs on an App (metrics, health, the OpenAPI document): owned
/// by the App, found again by its type (extension<T>), told when the app prepares to serve.
class Extension {
  public:
    virtual ~Extension() = default;
    /// The routes are final and no port is open yet (the first start(), run() or test
    /// client): build what depends on every route. What it throws stops the start, and it
    /// runs again at the next one.
    virtual void prepare(App&) {}
    /// run() or start() is about to make the server (not the in-process test client): the
    /// last check before ports open. `threads` is the caller's count (0: one per core); an
    /// extension may choose one when it is 0 (the configuration's server.threads). What it
    /// throws stops the start: run() logs it and returns 1, start() lets it through.
    virtual void starting(App&, unsigned& /*threads*/) {}
};

/// What an Observer keeps of one request between its hooks (dispatch carries it).
struct Observation {
    /// The observer's own; null: this request is not observed (the hooks are still called).
    void* context = nullptr;
    /// The route's number (registration order), or the observer's slot for unrouted requests.
    std::uint32_t route = 0;
    /// When the request was matched, as the observer measures time.
    std::uint64_t start_ns = 0;
};

/// Sees every request the App dispatches (metrics, the stall watchdog). One per App, set
/// with observe() before it starts; the hooks run on the request's loop and must not throw.
class Observer {
  public:
    /// The router has answered: `route` is the route's number (registration order), or -1
    /// when no route took the request (404, 405, automatic OPTIONS). Fills `o` (empty when
    /// called), which the other hooks get back.
    virtual void on_request(Observation& o, const Request& req, std::int32_t route) noexcept = 0;
    /// The handler suspended: the loop is free until something resumes it.
    virtual void on_suspend(Observation& o) noexcept = 0;
    /// The response is complete (after the middleware), `o` as on_request made it.
    virtual void on_response(Observation& o, const Request& req, const Response& r) noexcept = 0;

  protected:
    ~Observer() = default;
};

/// The error answer `app` gives for status `s` (with `detail` for the client, may be empty),
/// as its error_pages say; `req` may be nullptr.
Response error_answer(const App& app, Status s, const Request* req, std::string_view detail = {});
/// The answer to an exception that escaped a handler: an HttpError's status and detail,
/// anything else a logged 500 (its message shown only with debug_errors). Middleware sees
/// this answer (an access log logs it, CORS headers go on it).
Response exception_answer(const App& app, std::exception_ptr e, const Request& req);
/// Gives `r` the error body of its status when it is an error (>= 400) without a body (what
/// `return vela::Status::NotFound;` makes).
void complete_error(const App& app, const Request& req, Response& r);
/// Makes the routes and middleware final (as start() does) and returns the handler the
/// server calls for each request (vela::testing::Client calls it without a server).
HttpHandler& handler(App& app);
/// What each route says for the OpenAPI document, in registration order (never read while
/// serving).
const std::deque<openapi::RouteDoc>& route_docs(const App& app) noexcept;
/// The app's extension of type T, made (default-constructed) on first use. Throws
/// std::logic_error naming `what` once the app has started.
template <class T>
T& extension(App& app, const char* what);
/// The app's extension of type T, or nullptr when none was installed.
template <class T>
const T* find_extension(const App& app) noexcept;
/// Makes `o` the app's observer (it must outlive the app's serving; an Extension does).
/// Throws std::logic_error naming `what` once the app has started or when another observer
/// is installed.
void observe(App& app, Observer& o, const char* what);
/// One listener: where, and its TLS settings (null: plain).
struct Listener {
    net::Endpoint endpoint;
    std::shared_ptr<const TlsOptions> tls;
};
/// Replaces the listeners of earlier listen()/listen_tls() calls with `listeners` (what a
/// configuration naming its own does). Throws std::logic_error naming `what` once the app has
/// started.
void replace_listeners(App& app, const std::vector<Listener>& listeners, const char* what);

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
    bool streams_request_body = false;  // reads its request body as it arrives (streaming())
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
    /// Registers a handler at prefix + `pattern` that reads its request body as it arrives
    /// (see App::streaming); the group's middleware runs before it.
    template <class F>
    RouteRef<Group> streaming(Method method, std::string_view pattern, F&& f);
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
    /// Registers a WebSocket endpoint whose coroutine takes no request (see App::ws).
    Group& ws(std::string_view p, WsSessionHandler handler, WsOptions options = {});
    /// Serves the directory `dir` below `mount` (relative to the group; see App::static_files).
    Group& static_files(std::string_view mount, const std::string& dir, StaticOptions options = {});

  private:
    friend class App;
    Group(App* app, detail::GroupData* data) noexcept : app_(app), data_(data) {}
    template <class F>
    RouteRef<Group> add(Method method, std::string_view pattern, F&& f, bool streams_request_body);
    std::string prefix() const;  // the prefixes of this group and those around it
    std::string full_pattern(std::string_view pattern) const;
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
                                              root_, openapi::describer<F>(), false));
    }
    /// Registers a handler that reads its request body as it arrives
    /// (`co_await req.body_stream().read()`, see body_reader.hpp): it runs as soon as the
    /// head is in, and bodies up to limits.max_streamed_body pass in bounded memory.
    template <class F>
    RouteRef<App> streaming(Method method, std::string_view pattern, F&& f) {
        return RouteRef<App>(this, &add_route(method, pattern, make_handler(std::forward<F>(f)),
                                              root_, openapi::describer<F>(), true));
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
    /// The same for a coroutine that needs nothing of the upgrade request, `(WebSocket&)`: the
    /// session keeps none of it (about 1.3 KB less per connection).
    App& ws(std::string_view p, WsSessionHandler handler, WsOptions options = {});

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
    /// The error answers' format and renderer (error_pages()).
    const ErrorPages& error_pages() const noexcept { return error_pages_; }
    /// True from the moment a graceful stop begins (stop(), SIGINT/SIGTERM): vela::health's
    /// /ready says 503.
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
    /// Listens in cleartext for HTTP/2 with prior knowledge only (h2c, RFC 9113 3.3), on all
    /// IPv4 interfaces at `port`: an HTTP/1.1 request there is refused with GOAWAY.
    App& listen_h2c(std::uint16_t port);
    /// Listens for h2c only (as listen_h2c(port)) on an endpoint ("127.0.0.1:8082").
    App& listen_h2c(std::string_view endpoint);
    /// Re-reads every TLS listener's certificates and keys (SIGHUP does the same while run()
    /// runs): new handshakes use them, open connections go on. Throws TlsError and keeps the
    /// old ones when a file is bad. Thread-safe.
    void reload_tls();
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
    friend Response detail::error_answer(const App&, Status, const Request*, std::string_view);
    friend Response detail::exception_answer(const App&, std::exception_ptr, const Request&);
    friend void detail::complete_error(const App&, const Request&, Response&);
    friend HttpHandler& detail::handler(App&);
    friend const std::deque<openapi::RouteDoc>& detail::route_docs(const App&) noexcept;
    template <class T>
    friend T& detail::extension(App&, const char*);
    template <class T>
    friend const T* detail::find_extension(const App&) noexcept;
    friend void detail::observe(App&, detail::Observer&, const char*);
    friend void detail::replace_listeners(App&, const std::vector<detail::Listener>&, const char*);
    class Handler;
    openapi::RouteDoc& add_route(Method m, std::string_view pattern, HandlerFn h,
                                 detail::GroupData* g, openapi::Describe describe,
                                 bool streams_request_body);
    void freeze();
    void prepare();  // freeze() and the server-side error body
    detail::GroupData* new_group(std::string prefix, detail::GroupData* parent);
    // Throws std::logic_error once the app has started: the chains built at start hold
    // pointers into the middleware lists, and the loops read them without locks.
    void check_not_started(const char* what) const;
    unsigned start_extensions(unsigned threads);
    void make_server();
    bool dispatch(Request& req, Response& out, ResponseSink& sink);
    template <class Watch>  // Unobserved, or Observed (the observer's hooks)
    bool dispatch_with(Request& req, Response& out, ResponseSink& sink, Watch obs);
    bool streams_body(Request& req);
    Response answer_unrouted(const Request& req, const Router::Match& m) const;
    Response answer_unrouted(Request& req) const;
    const detail::Endpoint* fallback_for(Request& req, const Router::Match& m) const;
    void fill_error_body(const Request* req, Response& r, std::string_view detail) const;
    void complete_error_body(const Request* req, Response& r) const;

    ServerOptions options_;
    Router router_;
    std::deque<detail::Endpoint> endpoints_;
    std::deque<detail::GroupData> groups_;
    detail::GroupData* root_;
    std::vector<net::Endpoint> listen_;
    std::vector<std::shared_ptr<const TlsOptions>> listen_tls_;  // per listen_ entry; null: plain
    std::vector<bool> listen_h2c_;                               // per listen_ entry: listen_h2c()
    std::string listen_error_;  // the first malformed listen() spec, thrown by start()/run()
    std::unique_ptr<Handler> handler_;
    std::unique_ptr<Server> server_;
    std::mutex server_mu_;         // guards replacing server_ against stop() on other threads
    bool stop_requested_ = false;  // under server_mu_
    bool frozen_ = false;
    bool prepared_ = false;  // the extensions have prepared (routes final)
    ErrorPages error_pages_;
    std::deque<openapi::RouteDoc> route_docs_;  // per route, in registration order
    // What free functions installed (configuration, metrics, health, OpenAPI), in installation
    // order; the
    // observer, when one is set, is one of them.
    std::vector<std::unique_ptr<detail::Extension>> extensions_;
    detail::Observer* observer_ = nullptr;  // null: dispatch goes straight to the route
};

namespace detail {

inline void complete_error(const App& app, const Request& req, Response& r) {
    if (static_cast<int>(r.status()) >= 400) [[unlikely]]
        app.complete_error_body(&req, r);
}

template <class T>
T& extension(App& app, const char* what) {
    static_assert(std::is_base_of_v<Extension, T>,
                  "an App extension derives from detail::Extension");
    app.check_not_started(what);
    for (const std::unique_ptr<Extension>& e : app.extensions_)
        if (T* t = dynamic_cast<T*>(e.get())) return *t;
    auto made = std::make_unique<T>();
    T& t = *made;
    app.extensions_.push_back(std::move(made));
    return t;
}

template <class T>
const T* find_extension(const App& app) noexcept {
    for (const std::unique_ptr<Extension>& e : app.extensions_)
        if (const T* t = dynamic_cast<const T*>(e.get())) return t;
    return nullptr;
}

}  // namespace detail

template <class F>
Group& Group::use(F&& f) {
    app_->check_not_started("middleware");
    data_->middleware.push_back(detail::make_middleware(std::forward<F>(f)));
    return *this;
}

template <class F>
RouteRef<Group> Group::route(Method method, std::string_view pattern, F&& f) {
    return add(method, pattern, std::forward<F>(f), false);
}

template <class F>
RouteRef<Group> Group::streaming(Method method, std::string_view pattern, F&& f) {
    return add(method, pattern, std::forward<F>(f), true);
}

template <class F>
RouteRef<Group> Group::add(Method method, std::string_view pattern, F&& f,
                           bool streams_request_body) {
    return RouteRef<Group>(
        *this, &app_->add_route(method, full_pattern(pattern), make_handler(std::forward<F>(f)),
                                data_, openapi::describer<F>(), streams_request_body));
}

}  // namespace vela
