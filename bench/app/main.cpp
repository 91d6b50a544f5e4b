// vela's side of the benchmark scenarios (docs/benchmarks.md), with the payloads of the
// public C++ framework comparisons.
//   vela_bench_app [--port N] [--threads N] [--host ADDR]   (ADDR: listen there only)
//
// The json and echo scenarios use vela's JSON: reflected structs serialized per request, and
// the echo body parsed into a struct (simdjson) and written back.

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <vela/vela.hpp>

namespace {

// One async middleware layer: sets a request attribute on the way in and adds a response
// header on the way out.
vela::Task<vela::Response> async_layer(vela::Request& req, vela::Next next) {
    req.set_attribute("layer", "async");
    vela::Response res = co_await next();
    res.add_header("X-Layer", "async");
    co_return res;
}

// GET /api/status: fixed strings, so string_view members (written, never copied).
struct Status {
    std::string_view status;
    std::string_view framework;
};
VELA_REFLECT(Status, status, framework)

// POST /api/echo: {"name":"Alice","age":30,"email":"alice@example.com"}.
struct Person {
    std::string name;
    int age = 0;
    std::string email;
};
VELA_REFLECT(Person, name, age, email)

}  // namespace

int main(int argc, char** argv) {
    unsigned port = 8080, threads = 0;
    std::string host;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--port")) port = static_cast<unsigned>(std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--host")) host = argv[i + 1];
        if (!std::strcmp(argv[i], "--threads"))
            threads = static_cast<unsigned>(std::atoi(argv[i + 1]));
    }
    vela::log::set_level(vela::log::Level::warn);

    vela::App app;
    app.get("/", [] { return "Hello, World!"; });

    app.get("/api/status", [] { return Status{"running", "vela"}; });

    app.post("/api/echo", [](vela::Json<Person> body) { return body; });

    app.get("/users/{id}", [](vela::Request& req) {
        std::string_view id = req.param("id");
        std::string out;
        out.reserve(40 + 2 * id.size());
        out += "{\"userId\":\"";
        out += id;
        out += "\",\"name\":\"User ";
        out += id;
        out += "\"}";
        return vela::Response::json(std::move(out));
    });

    app.get("/middleware/0", [] { return vela::Response::json("{\"middleware_count\":0}"); });
    for (int n : {3, 10}) {
        auto g = app.group("/middleware/" + std::to_string(n));
        for (int i = 0; i < n; ++i) g.use(async_layer);
        std::string body = "{\"middleware_count\":" + std::to_string(n) + "}";
        g.get("", [body] { return vela::Response::json(body); });
    }
    for (int n : {3, 10}) {
        auto g = app.group("/sync-filter/" + std::to_string(n));
        for (int i = 0; i < n; ++i) {
            g.use([](vela::Request& req) { req.set_attribute("layer", "sync"); });
            g.use([](vela::Request&, vela::Response& res) { res.add_header("X-Layer", "sync"); });
        }
        std::string body = "{\"middleware_count\":" + std::to_string(n) + ",\"type\":\"sync\"}";
        g.get("", [body] { return vela::Response::json(body); });
    }

    if (host.empty()) {
        app.listen(static_cast<std::uint16_t>(port));
    } else {
        app.listen(host + ":" + std::to_string(port));
    }
    return app.run(threads);
}
