// App's extension points (app.hpp): detail::Observer sees each request dispatch handles (the
// route's number, -1 for unrouted ones, the response after the middleware, the suspension of
// an asynchronous handler), one per app; detail::Extension is owned by the app, found again by
// type, refused once the app has started, and prepared once the routes are final (again
// after a prepare that threw).
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "vela/testing/client.hpp"
#include "vela/vela.hpp"

namespace vela {
namespace {

using namespace std::chrono_literals;
using testing::Client;

// Records every hook call as a line: "request <route> <path>", "suspend <route>",
// "response <route> <status>".
class Recorder final : public detail::Observer, public detail::Extension {
  public:
    std::vector<std::string> calls;

    void on_request(detail::Observation& o, const Request& req,
                    std::int32_t route) noexcept override {
        o.context = this;
        o.route = static_cast<std::uint32_t>(route);
        calls.push_back("request " + std::to_string(route) + " " + std::string(req.path()));
    }
    void on_suspend(detail::Observation& o) noexcept override {
        calls.push_back("suspend " + std::to_string(static_cast<std::int32_t>(o.route)));
    }
    void on_response(detail::Observation& o, const Request&, const Response& r) noexcept override {
        EXPECT_EQ(o.context, this);
        calls.push_back("response " + std::to_string(static_cast<std::int32_t>(o.route)) + " " +
                        std::to_string(static_cast<int>(r.status())));
    }
};

// Counts its prepare() calls and sees the final route count; throws while `fail` is set.
struct Counting final : detail::Extension {
    int prepared = 0;
    std::size_t routes_seen = 0;
    bool fail = false;
    void prepare(App& app) override {
        ++prepared;
        routes_seen = detail::route_docs(app).size();
        if (fail) throw std::logic_error("not yet");
    }
};

TEST(AppExtension, ObserverSeesRoutedUnroutedAndSuspendedRequests) {
    App app;
    app.get("/a", [] { return "a"; });         // route 0
    app.get("/slow", []() -> Task<Response> {  // route 1
        co_await vela::sleep(1ms);
        co_return "slow";
    });
    app.use([](Request&, Response& r) { r.set_status(Status::Accepted); });  // runs first
    Recorder& rec = detail::extension<Recorder>(app, "the recorder");
    detail::observe(app, rec, "the recorder");
    Client client(app);
    EXPECT_EQ(client.get("/a").get().status(), 202);
    EXPECT_EQ(client.get("/nowhere").get().status(), 202);  // the fallback chain ran
    EXPECT_EQ(client.post("/a", "x").get().status(), 202);  // 405 made 202 by the hook
    EXPECT_EQ(client.get("/slow").get().body(), "slow");
    const std::vector<std::string> want = {
        "request 0 /a",        "response 0 202",   //
        "request -1 /nowhere", "response -1 202",  //
        "request -1 /a",       "response -1 202",  //
        "request 1 /slow",     "suspend 1",       "response 1 202",
    };
    EXPECT_EQ(rec.calls, want);
}

TEST(AppExtension, OneObserverPerApp) {
    App app;
    Recorder& a = detail::extension<Recorder>(app, "a");
    detail::observe(app, a, "a");
    detail::observe(app, a, "a again");  // the same one: fine
    Recorder other;
    try {
        detail::observe(app, other, "the other");
        FAIL() << "a second observer was accepted";
    } catch (const std::logic_error& e) {
        EXPECT_STREQ(e.what(), "the other: the app already has an observer");
    }
    // Metrics and the watchdog share one observer, which is not the recorder.
    EXPECT_THROW(vela::metrics(app), std::logic_error);
}

TEST(AppExtension, ExtensionsAreFoundByTypeAndPreparedOnceTheRoutesAreFinal) {
    App app;
    EXPECT_EQ(detail::find_extension<Counting>(app), nullptr);
    Counting& c = detail::extension<Counting>(app, "counting");
    EXPECT_EQ(&detail::extension<Counting>(app, "counting"), &c);  // one per type
    EXPECT_EQ(detail::find_extension<Counting>(app), &c);
    app.get("/a", [] { return "a"; });
    app.get("/b", [] { return "b"; });
    c.fail = true;
    EXPECT_THROW(detail::handler(app), std::logic_error);
    EXPECT_EQ(c.prepared, 1);
    c.fail = false;
    detail::handler(app);  // prepared again: the last one threw
    detail::handler(app);  // not again
    EXPECT_EQ(c.prepared, 2);
    EXPECT_EQ(c.routes_seen, 2u);
    try {
        detail::extension<Counting>(app, "counting");
        FAIL() << "an extension was installed on a started app";
    } catch (const std::logic_error& e) {
        EXPECT_STREQ(e.what(), "counting must be added before the app starts");
    }
}

// The answers the framework writes are free functions of the app (not members users call).
TEST(AppExtension, ErrorAnswersFollowTheErrorPages) {
    App app;
    app.error_pages({.format = ErrorFormat::problem_json});
    Response r = detail::error_answer(app, Status::NotFound, nullptr, "no such item");
    EXPECT_EQ(r.status(), Status::NotFound);
    EXPECT_EQ(r.content_type(), "application/problem+json");
    EXPECT_NE(r.body().find("no such item"), std::string_view::npos);
    Request req;
    Response bare(Status::Conflict);
    detail::complete_error(app, req, bare);
    EXPECT_NE(bare.body().find("\"status\":409"), std::string_view::npos);
    Response ok("fine");
    detail::complete_error(app, req, ok);
    EXPECT_EQ(ok.body(), "fine");
    Response thrown = detail::exception_answer(
        app, std::make_exception_ptr(HttpError(Status::Gone, "gone away")), req);
    EXPECT_EQ(thrown.status(), Status::Gone);
    EXPECT_NE(thrown.body().find("gone away"), std::string_view::npos);
}

}  // namespace
}  // namespace vela
