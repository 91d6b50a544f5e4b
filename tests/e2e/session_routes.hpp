#pragma once
// Routes shared by the session tests of every store (tests/e2e/session_e2e_test.cpp,
// tests/redis/session_redis_e2e_test.cpp).
#include <stdexcept>
#include <string>

#include "vela/middleware/session.hpp"
#include "vela/vela.hpp"

namespace vela::e2e {

/// The routes of the session tests (memory, cookie and Redis stores): /count, /peek, /whoami,
/// POST /login (body = user), POST /logout, POST /big, /id, /count-then-fail.
inline void add_session_routes(App& app) {
    app.get("/count", [](Request& req) {
        Session& s = session(req);
        const int n = s.get<int>("count").value_or(0) + 1;
        s.set("count", n);
        return std::to_string(n);
    });
    app.get("/peek", [](Request& req) {  // reads only
        return std::to_string(session(req).get<int>("count").value_or(0));
    });
    app.get("/whoami", [](Request& req) {
        return session(req).get<std::string>("user").value_or("anonymous");
    });
    app.post("/login", [](Request& req) {
        Session& s = session(req);
        s.regenerate();
        s.set("user", std::string(req.body()));
        return "welcome";
    });
    app.post("/logout", [](Request& req) {
        session(req).destroy();
        return "bye";
    });
    app.post("/big", [](Request& req) {
        session(req).set("blob", std::string(req.body()));
        return "stored";
    });
    app.get("/id", [](Request& req) { return session(req).id(); });
    app.get("/count-then-fail", [](Request& req) -> Response {  // changes, then throws
        Session& s = session(req);
        s.set("count", s.get<int>("count").value_or(0) + 100);
        throw std::runtime_error("half done");
    });
}

}  // namespace vela::e2e
