#pragma once
// Liveness and readiness endpoints for load balancers, Kubernetes probes and systemd.
//
//     vela::App app;
//     vela::health(app);                                   // GET /health and GET /ready
//     vela::ready_check(app, "db", [&db]() -> vela::Task<bool> {
//         co_await db.query("SELECT 1");                   // throws when the database is away
//         co_return true;
//     });
//     vela::ready_check(app, "cache", check_redis, 500ms); // its own timeout
//
// /health (liveness) answers 200 {"status":"alive"} while the process serves requests; it
// runs no check, so a slow database never gets a healthy process restarted. /ready
// (readiness) runs every check at once on the request's loop (vela::when_all) and answers
//   200 {"status":"ready","checks":{"db":{"ok":true,"ms":1.2},...}}      all passed
//   503 {"status":"not ready","checks":{"db":{"ok":false,"ms":2000.1,
//        "error":"timed out after 2000 ms"},...}}                         one did not
//   503 {"status":"draining"}        a graceful stop has begun (SIGTERM, App::stop())
// A check fails when it returns false, throws (its what() is the error, not a 500) or
// outlasts its timeout. A check that timed out is not abandoned (its coroutine may hold a
// database statement); it runs on to its end and is not started again before then: probes
// meanwhile report it as failed ("still running"), so a hung check never piles up.
//
// With `cache` above zero, an answer is reused for that long, and while one probe runs the
// checks, others get the previous answer instead of starting them again: a probe storm
// costs the database one round of checks per interval. Draining is never cached.
//
// While draining, /ready answers 503 only as long as the server still accepts: set
// ServerOptions::drain_delay (app.options().drain_delay = 5s) to keep serving that long
// after SIGTERM, so load balancers see the 503 and stop sending before the listeners close.
// Both answers carry Cache-Control: no-store; HEAD works as GET.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vela/async/task.hpp"
#include "vela/http/response.hpp"

namespace vela {

class App;

/// A readiness check: co_returns true when ready; false or an exception when not.
using ReadyCheck = std::function<Task<bool>()>;

/// Paths, timeouts and caching of the health endpoints (see above).
struct HealthOptions {
    /// The liveness path (empty: not served).
    std::string live_path = "/health";
    /// The readiness path (empty: not served).
    std::string ready_path = "/ready";
    /// Time each check may take unless it was given its own.
    std::chrono::milliseconds timeout{2000};
    /// How long a readiness answer is reused (0: the checks run for every probe).
    std::chrono::milliseconds cache{0};
    /// Put each failed check's error message in the body (turn off when /ready is public and
    /// exception messages could say too much).
    bool details = true;
};

/// The outcome of one readiness check.
struct ReadyCheckResult {
    /// The check's name.
    std::string name;
    /// True when it passed.
    bool ok = false;
    /// Why it failed (empty when it passed).
    std::string error;
    /// How long it ran (up to its timeout).
    std::chrono::microseconds took{0};
};

namespace detail {
class HealthState;
}

/// The checks and the answers of /health and /ready. A cheap handle: copies share the checks.
/// vela::health() and vela::ready_check() make and route one; use it directly to serve the
/// answers from routes of your own.
class Health {
  public:
    /// Health endpoints with `options` and no checks yet.
    explicit Health(HealthOptions options = {});

    /// Adds a check named `name` (timeout 0: options().timeout). Before serving. Throws
    /// std::invalid_argument for an empty or repeated name, an empty function or a negative
    /// timeout.
    Health& check(std::string name, ReadyCheck fn, std::chrono::milliseconds timeout = {});
    /// Replaces the options (paths, default timeout, cache), keeping the checks. Before serving.
    void set_options(HealthOptions options);
    /// The options in force.
    const HealthOptions& options() const noexcept;

    /// Runs every check at once, each against its timeout, on the current loop; results in
    /// the order the checks were added.
    Task<std::vector<ReadyCheckResult>> run() const;
    /// The /ready answer: 503 "draining" when `draining`, else the (cached) checks' answer.
    Task<Response> ready(bool draining) const;
    /// The /health answer (200).
    Response live() const;

  private:
    std::shared_ptr<detail::HealthState> state_;
};

/// Serves liveness at options.live_path (/health) and readiness at options.ready_path
/// (/ready) on `app`, which runs the ready_check()s added before or after. Once, before run():
/// throws std::logic_error after, or when called twice; std::invalid_argument for bad options.
void health(App& app, HealthOptions options = {});
/// Adds a readiness check that `app`'s /ready runs (timeout 0: the health options' timeout);
/// health() serves it. Before run(). Throws as Health::check does.
void ready_check(App& app, std::string name, ReadyCheck check,
                 std::chrono::milliseconds timeout = {});

}  // namespace vela
