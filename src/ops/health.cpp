#include "vela/ops/health.hpp"

#include <fmt/format.h>

#include <atomic>
#include <coroutine>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include "vela/async/when_all.hpp"
#include "vela/base/log.hpp"
#include "vela/files/mime.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/web/app.hpp"

namespace vela {

namespace detail {

namespace {

using SteadyClock = std::chrono::steady_clock;

struct Check {
    std::string name;
    ReadyCheck fn;
    std::chrono::milliseconds timeout{0};
    // Set while a run of this check is going on (possibly on another loop, past the timeout
    // of the probe that started it): the next probe reports it instead of starting another.
    std::atomic<bool> running{false};
};

}  // namespace

class HealthState {
  public:
    HealthOptions options;
    std::deque<Check> checks;  // a deque: runs in progress point at their check

    // The cached readiness answer (options.cache > 0).
    std::mutex mu;
    bool have_answer = false;    // under mu
    bool refreshing = false;     // under mu: a probe is running the checks
    Status status = Status::OK;  // under mu
    std::string body;            // under mu
    SteadyClock::time_point at;  // under mu
};

namespace {

std::chrono::microseconds since(SteadyClock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t0);
}

std::string message_of(std::exception_ptr e) {
    try {
        std::rethrow_exception(std::move(e));
    } catch (const std::exception& x) {
        return x.what()[0] ? std::string(x.what()) : std::string("exception without a message");
    } catch (...) {
        return "unknown exception";
    }
}

// What one run of a check and its timeout share: whichever comes first settles the result and
// resumes the probe; the other finds it settled and does nothing more.
struct CheckRace {
    ReadyCheckResult result;
    SteadyClock::time_point t0 = SteadyClock::now();
    std::coroutine_handle<> waiter;
    Loop* loop = nullptr;
    std::uint64_t timer = 0;
    bool timer_armed = false;
    bool suspended = false;  // the probe waits (else the check ended inside await_suspend)
    bool settled = false;

    void settle(bool ok, std::string error) {
        settled = true;
        result.ok = ok;
        result.error = std::move(error);
        result.took = since(t0);
    }
};

// Awaits one check against its timeout. Destroyed while the probe waits (its handler was
// abandoned), it cancels the timer and leaves the check to finish alone.
class CheckAwaiter {
  public:
    CheckAwaiter(std::shared_ptr<HealthState> state, Check& check, std::chrono::milliseconds t)
        : state_(std::move(state)), check_(check), timeout_(t) {}
    CheckAwaiter(const CheckAwaiter&) = delete;
    CheckAwaiter& operator=(const CheckAwaiter&) = delete;
    ~CheckAwaiter() {
        if (race_ && !race_->settled) {
            race_->settled = true;
            race_->waiter = nullptr;
            if (race_->timer_armed) race_->loop->cancel(race_->timer);
        }
    }

    bool await_ready() const noexcept { return false; }

    bool await_suspend(std::coroutine_handle<> h) {
        race_ = std::make_shared<CheckRace>();
        race_->result.name = check_.name;
        if (check_.running.exchange(true)) {
            race_->settle(false, "still running (an earlier run outlasted its timeout)");
            return false;
        }
        Task<bool> task;
        try {
            task = check_.fn();
        } catch (...) {
            check_.running.store(false);
            race_->settle(false, message_of(std::current_exception()));
            return false;
        }
        race_->waiter = h;
        start(std::move(task), [race = race_, state = state_, check = &check_](
                                   std::optional<bool> ok, std::exception_ptr e) {
            check->running.store(false);  // `state` keeps the check alive until here
            if (race->settled) return;
            if (e)
                race->settle(false, message_of(std::move(e)));
            else if (!ok.value_or(false))
                race->settle(false, "check returned false");
            else
                race->settle(true, {});
            if (race->timer_armed) race->loop->cancel(race->timer);
            if (race->suspended) race->waiter.resume();
        });
        if (race_->settled) return false;  // done without waiting
        race_->loop = Loop::current();
        if (race_->loop) {  // without a loop (nothing can wait on time) the check just runs
            race_->timer_armed = true;
            race_->timer = race_->loop->call_after(timeout_, [race = race_, ms = timeout_] {
                race->timer_armed = false;
                if (race->settled) return;
                race->settle(false, fmt::format("timed out after {} ms", ms.count()));
                race->waiter.resume();
            });
        }
        race_->suspended = true;
        return true;
    }

    ReadyCheckResult await_resume() { return std::move(race_->result); }

  private:
    std::shared_ptr<HealthState> state_;
    Check& check_;
    std::chrono::milliseconds timeout_;
    std::shared_ptr<CheckRace> race_;
};

Task<ReadyCheckResult> run_check(std::shared_ptr<HealthState> state, Check* check) {
    const std::chrono::milliseconds t =
        check->timeout.count() > 0 ? check->timeout : state->options.timeout;
    co_return co_await CheckAwaiter(state, *check, t);
}

Response health_answer(Status s, std::string body) {
    Response r = Response::json(std::move(body), s);
    r.set_header("Cache-Control", "no-store");
    return r;
}

std::string ready_body(const std::vector<ReadyCheckResult>& results, bool details, bool ready) {
    std::string body =
        ready ? R"({"status":"ready","checks":{)" : R"({"status":"not ready","checks":{)";
    bool first = true;
    for (const ReadyCheckResult& r : results) {
        if (!first) body += ',';
        first = false;
        log::append_json_string(body, r.name);
        fmt::format_to(std::back_inserter(body), R"(:{{"ok":{},"ms":{:.3f})", r.ok,
                       static_cast<double>(r.took.count()) / 1000.0);
        if (!r.ok && details) {
            body += R"(,"error":)";
            log::append_json_string(body, r.error);
        }
        body += '}';
    }
    body += "}}";
    return body;
}

// Clears `refreshing` when the probe that set it ends, however it ends (an abandoned handler
// must not leave the cache refreshing for ever).
struct RefreshGuard {
    HealthState* state = nullptr;
    RefreshGuard() = default;
    RefreshGuard(const RefreshGuard&) = delete;
    RefreshGuard& operator=(const RefreshGuard&) = delete;
    ~RefreshGuard() {
        if (!state) return;
        std::lock_guard lock(state->mu);
        state->refreshing = false;
    }
};

}  // namespace

}  // namespace detail

Health::Health(HealthOptions options) : state_(std::make_shared<detail::HealthState>()) {
    set_options(std::move(options));
}

void Health::set_options(HealthOptions options) {
    if (options.timeout.count() <= 0)
        throw std::invalid_argument("health: timeout must be positive");
    if (options.cache.count() < 0)
        throw std::invalid_argument("health: cache must not be negative");
    for (const std::string* p : {&options.live_path, &options.ready_path})
        if (!p->empty() && (*p)[0] != '/')
            throw std::invalid_argument("health: path '" + *p + "' must start with '/'");
    state_->options = std::move(options);
}

const HealthOptions& Health::options() const noexcept { return state_->options; }

Health& Health::check(std::string name, ReadyCheck fn, std::chrono::milliseconds timeout) {
    if (name.empty()) throw std::invalid_argument("ready_check: the name is empty");
    if (!fn) throw std::invalid_argument("ready_check '" + name + "': no function");
    if (timeout.count() < 0)
        throw std::invalid_argument("ready_check '" + name + "': negative timeout");
    for (const detail::Check& c : state_->checks)
        if (c.name == name) throw std::invalid_argument("ready_check '" + name + "' added twice");
    detail::Check& c = state_->checks.emplace_back();
    c.name = std::move(name);
    c.fn = std::move(fn);
    c.timeout = timeout;
    return *this;
}

Task<std::vector<ReadyCheckResult>> Health::run() const {
    std::shared_ptr<detail::HealthState> state = state_;
    std::vector<Task<ReadyCheckResult>> runs;
    runs.reserve(state->checks.size());
    for (detail::Check& c : state->checks) runs.push_back(detail::run_check(state, &c));
    co_return co_await when_all(std::move(runs));
}

Task<Response> Health::ready(bool draining) const {
    std::shared_ptr<detail::HealthState> state = state_;
    if (draining)
        co_return detail::health_answer(Status::ServiceUnavailable, R"({"status":"draining"})");
    detail::RefreshGuard guard;
    if (state->options.cache.count() > 0) {
        std::lock_guard lock(state->mu);
        const auto now = detail::SteadyClock::now();
        // Fresh, or another probe is refreshing it: the cached answer.
        if (state->have_answer && (now - state->at < state->options.cache || state->refreshing))
            co_return detail::health_answer(state->status, state->body);
        if (!state->refreshing) {
            state->refreshing = true;
            guard.state = state.get();
        }
    }
    const std::vector<ReadyCheckResult> results = co_await run();
    bool ready = true;
    for (const ReadyCheckResult& r : results) ready = ready && r.ok;
    const Status status = ready ? Status::OK : Status::ServiceUnavailable;
    std::string body = detail::ready_body(results, state->options.details, ready);
    if (guard.state) {
        std::lock_guard lock(state->mu);
        state->have_answer = true;
        state->status = status;
        state->body = body;
        state->at = detail::SteadyClock::now();
    }
    co_return detail::health_answer(status, std::move(body));
}

Response Health::live() const { return detail::health_answer(Status::OK, R"({"status":"alive"})"); }

// ---------------------------------------------------------------------------------------------
// Installing on an App

namespace {
// The app's Health: made by the first health() or ready_check(), routed by health().
struct AppHealth final : detail::Extension {
    Health health;
    bool routed = false;
};
}  // namespace

void health(App& app, HealthOptions options) {
    AppHealth& h = detail::extension<AppHealth>(app, "health()");
    if (h.routed) throw std::logic_error("health() called twice on one app");
    h.health.set_options(std::move(options));
    h.routed = true;
    const HealthOptions& o = h.health.options();
    // Operations endpoints: served, but not part of the API's OpenAPI document.
    if (!o.live_path.empty())
        app.get(o.live_path, [h = h.health](const Request&) { return h.live(); }).hidden();
    if (!o.ready_path.empty())
        app.get(o.ready_path,
                [h = h.health, &app](const Request&) { return h.ready(app.stopping()); })
            .hidden();
}

void ready_check(App& app, std::string name, ReadyCheck check, std::chrono::milliseconds timeout) {
    detail::extension<AppHealth>(app, "ready_check()")
        .health.check(std::move(name), std::move(check), timeout);
}

}  // namespace vela
